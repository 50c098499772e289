"""Traffic that is not the run's own, acknowledged inside its traffic window (pure).

A run's senders are sampled by `ss` (10 Hz, `subflow` points, role "client"). A socket sampled
there whose `bytes_acked` grows inside the traffic window is *foreign* when

- it was first sampled before the traffic window began (more than `EARLY_S`): a previous run's
  connection still sending (its application has exited, the kernel keeps draining the send
  buffer: with 32 MiB buffers at 800 ms that is tens of seconds), or
- the run's data connections on that host are known (iperf3's client ports, the subflows sharing
  their MPTCP token) and it is none of them and carried more than `CONTROL_BYTES` (so iperf3's
  own control connection, a few KiB, is not counted).

Its bytes are the growth of `bytes_acked` from its first to its last sample in the window; the
run's own bytes are the same growth summed over the run's sockets. A share above
`INVALID_SHARE` of the run's own bytes makes the run invalid; any foreign byte below that is a
warning. Only sockets the samplers report are seen (connections to the run's servers' ports on
its endpoints), not other traffic crossing the same links.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from controller.results.summary import data_local_ports

# A socket first sampled this long before the window began existed before the run's traffic:
# the run's own clients are spawned at the window's start, and their sockets were first sampled
# 0.02-0.3 s after it on the 45 runs of campaign t2-delays (2026-11-27); the samplers start
# 0.4-3.5 s before the window. 0.1 s covers a clock step between controller and host.
EARLY_S = 0.1
# Bytes a connection that is not one of the run's data connections may carry before it counts:
# iperf3's control connection (parameters, results as JSON: a few KiB).
CONTROL_BYTES = 64 * 1024
# Above this share of the run's own bytes the run is invalid (0.1 %: a tenth of the smallest
# leftover seen, 1.3 % of an 800 ms run; well below the ratios' run-to-run spread, so a run below
# it is not measurably disturbed, but it is still reported as a warning).
INVALID_SHARE = 0.001

DEFINITION = (
    "bytes acknowledged inside the traffic window (growth of bytes_acked, ss at 10 Hz on the run's senders) of "
    "connections that are not this run's: first sampled more than %.1f s before the window began (a previous "
    "run's connection still draining), or, where the run's data connections are known, none of them and more "
    "than %d KiB; share_pct = those bytes / the run's own bytes acked in the window x 100; above %.1f %% the "
    "run is invalid, below it a warning" % (EARLY_S, CONTROL_BYTES // 1024, INVALID_SHARE * 100))


def _client_port(sub: str) -> int | None:
    local = sub.partition("-")[0]
    port = local.rpartition(":")[2]
    return int(port) if port.isdigit() and len(port) <= 5 else None


def foreign_traffic(points: Iterable[Any], window: tuple[float, float],
                    own_ports: Mapping[str, set[int]] | None = None, *, early_s: float = EARLY_S,
                    control_bytes: int = CONTROL_BYTES, invalid_share: float = INVALID_SHARE,
                    traffic_start: float | None = None) -> dict:
    """The foreign traffic of a run: {bytes, own_bytes, share_pct, connections: [{host, connection,
    flow, cc, bytes, why, first_seen_s, until_s}], invalid, threshold_pct}. `window` is the traffic
    window (epoch seconds); `own_ports` maps a sending host to its data connections' client
    ports (None or a missing host: not known, only the "began before" test applies there);
    `traffic_start` is when the run's traffic began (default: the window's start; a summary over
    a part of the traffic passes the whole traffic's). Times in the result are seconds relative
    to the window's start. One pass over the points."""
    ws, we = window
    lo_ns, hi_ns = int(ws * 1e9), int(we * 1e9)
    start_ns = int((ws if traffic_start is None else traffic_start) * 1e9)
    first: dict[tuple[str, str], int] = {}
    span: dict[tuple[str, str], list] = {}     # key -> [t0, b0, t1, b1]
    info: dict[tuple[str, str], dict] = {}
    for p in points:
        if p.measurement != "subflow" or p.tags.get("role") != "client":
            continue
        key = (p.tags.get("host") or "?", p.tags.get("subflow") or "?")
        t = p.time_ns
        if key not in first or t < first[key]:
            first[key] = t
        f = p.fields
        tok = f.get("mptcp_token")
        if tok:
            info.setdefault(key, {})["token"] = tok
        cc = f.get("cc")
        if cc:
            info.setdefault(key, {})["cc"] = cc
        info.setdefault(key, {}).setdefault("flow", p.tags.get("flow"))
        b = f.get("bytes_acked")
        if not isinstance(b, int) or not lo_ns <= t <= hi_ns:
            continue
        s = span.get(key)
        if s is None:
            span[key] = [t, b, t, b]
        else:
            if t < s[0]:
                s[0], s[1] = t, b
            if t > s[2]:
                s[2], s[3] = t, b
    own_tokens: dict[str, set] = {}
    if own_ports is not None:
        for (host, sub), i in info.items():
            if _client_port(sub) in own_ports.get(host, ()) and i.get("token"):
                own_tokens.setdefault(host, set()).add(i["token"])
    own = 0
    conns = []
    early_ns = int(early_s * 1e9)
    for key, (t0, b0, t1, b1) in sorted(span.items()):
        grown = b1 - b0
        if grown <= 0:
            continue
        host, sub = key
        i = info.get(key, {})
        why = None
        if first[key] < start_ns - early_ns:
            why = "began before the run's traffic"
        elif own_ports is not None and host in own_ports:
            mine = _client_port(sub) in own_ports[host] or (i.get("token") in own_tokens.get(host, ()))
            if not mine and grown > control_bytes:
                why = "not one of the run's data connections"
        if why is None:
            own += grown
            continue
        conns.append({"host": host, "connection": sub, "flow": i.get("flow"), "cc": i.get("cc"), "bytes": grown,
                      "why": why, "first_seen_s": round((first[key] - lo_ns) / 1e9, 3),
                      "until_s": round((t1 - lo_ns) / 1e9, 3)})
    total = sum(c["bytes"] for c in conns)
    share = total / own if own > 0 else (None if total == 0 else float("inf"))
    return {"bytes": total, "own_bytes": own,
            "share_pct": None if share is None else (round(share * 100, 3) if share != float("inf") else None),
            "connections": conns, "threshold_pct": invalid_share * 100,
            "invalid": total > 0 and (own == 0 or total > invalid_share * own)}


def reason(ft: Mapping[str, Any]) -> str | None:
    """The one-line reason (invalid) or warning text of a foreign_traffic result; None if clean."""
    if not ft.get("bytes"):
        return None
    worst = max(ft["connections"], key=lambda c: c["bytes"])
    share = f"{ft['share_pct']:.2f} % of the run's own" if ft.get("share_pct") is not None else "the run had none"
    return (f"foreign traffic: {ft['bytes'] / 1e6:.2f} MB acknowledged in the traffic window ({share}, limit "
            f"{ft['threshold_pct']:g} %) by {len(ft['connections'])} connection(s) not of this run, largest "
            f"{worst['host']} {worst['connection']} ({worst['why']}, {worst['bytes'] / 1e6:.2f} MB until "
            f"+{worst['until_s']:.1f} s)")


def own_ports_of(flows: Iterable[Any]) -> dict[str, set[int]] | None:
    """Client ports of the run's iperf3 data connections by sending host; None when any flow's
    ports are unknown (no iperf3 JSON: e.g. a failed client or a non-iperf3 traffic)."""
    out: dict[str, set[int]] = {}
    for run in flows:
        spec = getattr(run, "spec", None)
        if spec is None or not getattr(run, "client_json", None):
            return None
        ports = data_local_ports(run)
        if not ports:
            return None
        out.setdefault(spec.client, set()).update(ports)
    return out


def check(summary: dict, data: Any, window: tuple[float, float] | None = None) -> dict:
    """Adds `foreign_traffic` (and its definition) to a scenario's summary over `window` (default:
    the traffic window). Above the limit the run becomes invalid with the reason; below it the
    text is `foreign_traffic.warning` (printed by `render_line`). Returns the summary."""
    w = window if window is not None else tuple(data.window)
    ft = foreign_traffic(data.points, w, own_ports_of(data.flows), traffic_start=data.window[0])
    text = reason(ft)
    if text is not None and not ft["invalid"]:
        ft["warning"] = text + " (below the limit: the run stays valid)"
    summary["foreign_traffic"] = ft
    summary.setdefault("definitions", {})["foreign_traffic"] = DEFINITION
    if text is not None and ft["invalid"]:
        summary.setdefault("invalid_reasons", []).append(text)
        summary["valid"] = False
    return summary


def render_line(summary: Mapping[str, Any]) -> str | None:
    """The warning line of a summary whose foreign traffic stayed below the limit (an invalid
    run says it in its RESULT INVALID line); None otherwise."""
    ft = summary.get("foreign_traffic")
    return f"WARNING: {ft['warning']}" if isinstance(ft, Mapping) and isinstance(ft.get("warning"), str) else None
