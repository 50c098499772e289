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
run's own bytes are the same growth summed over the run's sockets, and per flow (x_i, the `flow`
tag). Above the run's limit (`limit_bytes`, below) the run is invalid; any foreign byte below it
is a warning.

The limit, derived. A scenario reports ratios of its flows' throughputs (MPTCP / TCP) and Jain's
index over them, J = S^2 / (n Q) with S = sum x_i, Q = sum x_i^2. At worst every foreign byte
crossed the run's bottleneck and displaced a byte of one of the run's flows. F bytes moved into or
out of flow i change

- any ratio of flows' bytes by at most |dR| / R <= F / x_min (numerator: F / x_i; denominator:
  F / (x_j + F)), x_min the run's smallest flow;
- Jain's index, to first order, by |d ln J| <= 2 F max_i |1/S - x_i/Q| (d ln J / dx_i = 2/S - 2 x_i/Q;
  0 when all flows are equal).

Foreign bytes are allowed to move neither by more than SPREAD_FRACTION (a tenth) of that
quantity's run-to-run coefficient of variation CV (standard deviation / mean over repetitions of
one configuration):

    limit_bytes = min(q CV_ratio x_min,  q CV_jain / (2 max_i |1/S - x_i/Q|)),   q = 0.1

A shift of a tenth of the spread is a fifth of the standard error of a mean of three runs (the
campaigns' repetitions), not measurable there. CV_ratio and CV_jain are the smallest CVs in the
recorded campaigns (bench/results/reproduce-*.json of 2026-11-26/27, n = 3 runs per cell):
RATIO_CV = 0.0215 over 69 ratio cells (median 0.155; the smallest: dev-mcubic-run-length, lia,
45-600 s) and JAIN_CV = 0.0031 over 59 Jain cells (jain_index, jain_link1/2, jain_four; median
0.025; the smallest: dev-mcubic-t1-run-length, cubic, 0-300 s). An sd from 3 values is uncertain
by about +-50 % (relative standard error 1/sqrt(2 (n-1))), and the smallest of many such estimates
errs low, which makes the limit stricter, not laxer. Over 25 runs of one configuration
(distinct-bottleneck, link 2 at 20 Mbit/s, 10 s, 2026-11-27, runs/ of this checkout) the MPTCP /
TCP ratio's CV was 0.23 and Jain's 0.033, ten times these. With one flow only the ratio bound
applies (F <= q CV_ratio x). For two equal flows the limit is 0.11 % of the run's own bytes
(the 0.1 % used until 2026-11-27 came from nothing); for that 3-flow configuration, whose smallest
flow carries 10 % of the bytes, 0.02 %. `threshold_pct` is the limit as a share of the run's own
bytes, `limit_basis` says which bound set it.

What it cannot see (the summary's `unseen`): only sockets the senders' samplers report are
judged: connections to the run's servers' ports on its sending endpoints. Not seen: traffic to
other ports or from other hosts crossing the same links or bridges (a leftover connection the
start-up's wait found on another port is in the record's `leftover_wait`, not here), a
connection that began and ended between two samples (0.1 s), UDP, a sender whose sampler
delivered no socket sample (named per run), and on a receiver only what its sender's ss shows.
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
# The limit's inputs (derivation in the module's docstring): the smallest run-to-run coefficients
# of variation in the recorded campaigns, and the fraction of them foreign bytes may move a result.
RATIO_CV = 0.0215
JAIN_CV = 0.0031
SPREAD_FRACTION = 0.1
UNSEEN = ("traffic to other ports or from other hosts on the same links or bridges (the start-up's leftover "
          "wait sees other ports of the run's endpoints: leftover_wait in the record)",
          "a connection that began and ended between two samples (0.1 s)", "UDP")

DEFINITION = (
    "bytes acknowledged inside the traffic window (growth of bytes_acked, ss at 10 Hz on the run's senders) of "
    "connections that are not this run's: first sampled more than %.1f s before the window began (a previous "
    "run's connection still draining), or, where the run's data connections are known, none of them and more "
    "than %d KiB; share_pct = those bytes / the run's own bytes acked in the window x 100; invalid above "
    "limit_bytes = min(%g x %g x the smallest flow's bytes, %g x %g / (2 max_i |1/S - x_i/Q|)), the bytes "
    "that can move an MPTCP/TCP ratio or Jain's index by at most %g of its smallest recorded run-to-run "
    "coefficient of variation (threshold_pct: that as a share of the run's own bytes); below it a warning; "
    "unseen: what the check cannot see" % (EARLY_S, CONTROL_BYTES // 1024, SPREAD_FRACTION, RATIO_CV,
                                          SPREAD_FRACTION, JAIN_CV, SPREAD_FRACTION))


def limit_bytes(flow_bytes: Iterable[int], *, ratio_cv: float = RATIO_CV, jain_cv: float = JAIN_CV,
                fraction: float = SPREAD_FRACTION) -> tuple[float, str]:
    """The most foreign bytes a run whose flows acknowledged `flow_bytes` (each flow's own bytes in
    the window) can carry without moving a ratio of its flows or their Jain's index by more than
    `fraction` of that quantity's run-to-run CV, and which bound set it ("ratio" or "jain"); (0,
    "no own bytes") for a run without bytes of its own (pure; derivation in the module's docstring)."""
    xs = [x for x in flow_bytes if x > 0]
    if not xs:
        return 0.0, "no own bytes"
    ratio = fraction * ratio_cv * min(xs)
    total, squares = sum(xs), sum(x * x for x in xs)
    slope = 2 * max(abs(1 / total - x / squares) for x in xs)      # |d ln J / dx_i|, per byte
    # (equal flows: 0 to first order; float noise below 1e-12 per byte is no sensitivity)
    if len(xs) > 1 and slope * total > 1e-12 and fraction * jain_cv / slope < ratio:
        return fraction * jain_cv / slope, "jain"
    return ratio, "ratio"


def _client_port(sub: str) -> int | None:
    local = sub.partition("-")[0]
    port = local.rpartition(":")[2]
    return int(port) if port.isdigit() and len(port) <= 5 else None


def foreign_traffic(points: Iterable[Any], window: tuple[float, float],
                    own_ports: Mapping[str, set[int]] | None = None, *, early_s: float = EARLY_S,
                    control_bytes: int = CONTROL_BYTES, invalid_share: float | None = None,
                    traffic_start: float | None = None) -> dict:
    """The foreign traffic of a run: {bytes, own_bytes, share_pct, connections: [{host, connection,
    flow, cc, bytes, why, first_seen_s, until_s}], own_bytes_per_flow, limit_bytes, limit_basis,
    threshold_pct, invalid}; `invalid_share` replaces the derived limit by a fixed share. `window` is the traffic
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
    own_by_flow: dict[str, int] = {}
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
            flow = str(i.get("flow") or "?")
            own_by_flow[flow] = own_by_flow.get(flow, 0) + grown
            continue
        conns.append({"host": host, "connection": sub, "flow": i.get("flow"), "cc": i.get("cc"), "bytes": grown,
                      "why": why, "first_seen_s": round((first[key] - lo_ns) / 1e9, 3),
                      "until_s": round((t1 - lo_ns) / 1e9, 3)})
    total = sum(c["bytes"] for c in conns)
    share = total / own if own > 0 else (None if total == 0 else float("inf"))
    if invalid_share is not None:       # a fixed share (the check before 2026-11-27), for comparison
        limit, basis = invalid_share * own, f"fixed share {invalid_share * 100:g} %"
    else:
        limit, basis = limit_bytes(own_by_flow.values())
    limit = round(limit)         # whole bytes: the verdict is the one the record's numbers give
    return {"bytes": total, "own_bytes": own,
            "share_pct": None if share is None else (round(share * 100, 3) if share != float("inf") else None),
            "connections": conns, "own_bytes_per_flow": dict(sorted(own_by_flow.items())),
            "limit_bytes": limit, "limit_basis": basis,
            "threshold_pct": round(limit / own * 100, 4) if own > 0 else 0.0,
            "invalid": total > 0 and (own == 0 or total > limit)}


def reason(ft: Mapping[str, Any]) -> str | None:
    """The one-line reason (invalid) or warning text of a foreign_traffic result; None if clean."""
    if not ft.get("bytes"):
        return None
    worst = max(ft["connections"], key=lambda c: c["bytes"])
    pct = ft.get("share_pct")
    # two decimals, or one significant digit below 0.01 % (a few KB in a long run is not "0.00 %")
    share = (f"{pct:.2f}" if pct >= 0.01 else f"{pct:.1g}") + " % of the run's own" if pct is not None \
        else "the run had none"
    limit = f"{ft['limit_bytes'] / 1e6:.3f} MB = " if isinstance(ft.get("limit_bytes"), (int, float)) else ""
    return (f"foreign traffic: {ft['bytes'] / 1e6:.2f} MB acknowledged in the traffic window ({share}, limit "
            f"{limit}{ft['threshold_pct']:g} %) by {len(ft['connections'])} connection(s) not of this run, largest "
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


def senders_of(data: Any) -> set[str]:
    """The hosts that send the run's flows (its plan's flow clients; its iperf3 runs' when no plan)."""
    plan = getattr(data, "plan", None)
    flows = getattr(plan, "flows", None) or [getattr(r, "spec", None) for r in getattr(data, "flows", None) or []]
    return {str(f.client) for f in flows if f is not None and getattr(f, "client", None)}


def unseen(points: Iterable[Any], senders: Iterable[str]) -> list[str]:
    """What the check could not judge in this run: each sending host of which no socket was sampled
    (none of its connections was judged), then what the samplers never see (UNSEEN) (pure)."""
    sampled = {p.tags.get("host") for p in points if p.measurement == "subflow" and p.tags.get("role") == "client"}
    return [f"{h}: no socket sampled, none of its connections judged" for h in sorted(set(senders) - sampled)] \
        + list(UNSEEN)


def check(summary: dict, data: Any, window: tuple[float, float] | None = None) -> dict:
    """Adds `foreign_traffic` (and its definition) to a scenario's summary over `window` (default:
    the traffic window). Above the limit the run becomes invalid with the reason; below it the
    text is `foreign_traffic.warning` (printed by `render_line`); `foreign_traffic.unseen` says what
    the check could not see. Returns the summary."""
    w = window if window is not None else tuple(data.window)
    ft = foreign_traffic(data.points, w, own_ports_of(data.flows), traffic_start=data.window[0])
    ft["unseen"] = unseen(data.points, senders_of(data))
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
