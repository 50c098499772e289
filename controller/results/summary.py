"""Pure summary functions shared by scenarios: throughputs, fairness, MPTCP verdicts.

Definitions used in every summary (so a reader of `summary.json` knows what a number is):
- flow throughput: iperf3's receiver-side goodput (`end.sum_received`: bytes delivered to the
  application / test seconds), and the sender side (`end.sum_sent`) next to it;
- subflow throughput: the growth of the subflow's `bytes_acked` (sender) between the first
  and last sample of the traffic window, from `ss -tin` sampled at 10 Hz on the host;
- link throughput: bytes sent by the bridge port towards the receivers (`tx_bytes` of the
  b port for forward traffic) over the traffic window, from /proc/net/dev at 10 Hz: what
  crossed the bottleneck, including headers of every flow on it;
- Jain's fairness index J = (sum x)^2 / (n * sum x^2) over the flows' receiver throughputs.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from controller.errors import ParseError, ResultInvalid
from controller.inventory import Inventory
from controller.results.hystart import OWN_HYSTART_DEFINITION, own_hystart_text
from controller.results.window import Span
from controller.telemetry.points import Point
from nodes.congestion.catalog import ALGORITHMS


def jain_index(values: Sequence[float]) -> float | None:
    xs = [float(v) for v in values]
    if not xs or any(x < 0 or not math.isfinite(x) for x in xs):
        return None
    s2 = sum(x * x for x in xs)
    if s2 == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * s2)


def mbps(bps: float | None) -> float | None:
    return None if bps is None else round(bps / 1e6, 3)


@dataclass
class FlowThroughput:
    name: str
    protocol: str
    link: str | None
    receiver_bps: float | None
    sender_bps: float | None
    bytes_received: int | None
    seconds: float | None
    retransmits: int | None
    congestion: str | None
    error: str | None
    intervals: list[tuple[float, float, float]]  # (start s, end s, bit/s) of the sum, sender side

    def to_json(self) -> dict:
        return {"name": self.name, "protocol": self.protocol, "link": self.link,
                "receiver_mbps": mbps(self.receiver_bps), "sender_mbps": mbps(self.sender_bps),
                "bytes_received": self.bytes_received, "seconds": self.seconds, "retransmits": self.retransmits,
                "congestion": self.congestion, "error": self.error}


def flow_throughput(run: Any) -> FlowThroughput:
    """From a traffic FlowRun (client JSON preferred, server JSON as the receiver's own view)."""
    spec = run.spec
    err = run.error
    recv = sent = None
    nbytes = secs = retr = None
    cc = None
    intervals: list[tuple[float, float, float]] = []
    if run.client_json:
        from controller.parsers import iperf3   # the parsers when a run is summarized, not at start-up
        try:
            res = iperf3.parse(run.client_json)
        except ParseError as exc:
            res, err = None, err or f"client JSON unparseable: {exc}"
        if res is not None:
            if res.failure:
                err = err or res.failure
            elif res.end is not None:
                if res.end.sum_received is not None:
                    recv = res.end.sum_received.bits_per_second
                    nbytes = res.end.sum_received.bytes
                    secs = res.end.sum_received.seconds
                if res.end.sum_sent is not None:
                    sent = res.end.sum_sent.bits_per_second
                    retr = res.end.sum_sent.retransmits
                if res.end.sum is not None and recv is None:  # UDP
                    recv = res.end.sum.bits_per_second
                cc = res.end.sender_tcp_congestion
            for iv in res.intervals:
                s = iv.sum if iv.sum is not None else (iv.streams[0] if iv.streams else None)
                if s is not None:
                    intervals.append((s.start, s.end, s.bits_per_second))
    return FlowThroughput(spec.name, spec.protocol, spec.link, recv, sent, nbytes, secs, retr, cc, err, intervals)


def _window_points(points: Iterable[Point], measurement: str, window: tuple[float, float],
                   slack_s: float | tuple[float, float] = 0.0) -> list[Point]:
    before, after = slack_s if isinstance(slack_s, tuple) else (slack_s, slack_s)
    lo, hi = int((window[0] - before) * 1e9), int((window[1] + after) * 1e9)
    return [p for p in points if p.measurement == measurement and lo <= p.time_ns <= hi]


def counter_rate(samples: Sequence[tuple[int, int]]) -> float | None:
    """Mean rate (per second) of a monotonic counter from (t_ns, value) samples: last minus first."""
    if len(samples) < 2:
        return None
    (t0, v0), (t1, v1) = samples[0], samples[-1]
    if t1 <= t0 or v1 < v0:
        return None
    return (v1 - v0) / ((t1 - t0) / 1e9)


def link_throughput(points: Iterable[Point], inv: Inventory, window: tuple[float, float]) -> dict[str, dict]:
    """Per link and direction: bit/s leaving the bridge port towards that direction's receivers."""
    series: dict[tuple[str, str, str], list[tuple[int, int]]] = {}
    for p in _window_points(points, "iface", window):
        link = p.tags.get("link")
        host = p.tags.get("host")
        if not link or link not in inv.links or inv.links[link].bridge != host:
            continue
        series.setdefault((link, p.tags["iface"], "tx"), []).append((p.time_ns, int(p.fields["tx_bytes"])))
    out: dict[str, dict] = {}
    for lname, link in sorted(inv.links.items()):
        fwd = counter_rate(sorted(series.get((lname, link.b_port, "tx"), [])))
        rev = counter_rate(sorted(series.get((lname, link.a_port, "tx"), [])))
        if fwd is None and rev is None:
            continue
        out[lname] = {"forward_mbps": mbps(fwd * 8 if fwd is not None else None),
                      "reverse_mbps": mbps(rev * 8 if rev is not None else None),
                      "bridge": link.bridge}
    return out


def data_local_ports(run: Any) -> set[int]:
    """Client-side ports of a flow's data connections, as iperf3 reports them (not its control
    connection, which goes to the same server port and, under mptcpize, is MPTCP too)."""
    if not run.client_json:
        return set()
    from controller.parsers import iperf3
    try:
        res = iperf3.parse(run.client_json)
    except ParseError:
        return set()
    return {c.local_port for c in res.connected}


def _client_port(sub: str, role: str | None) -> int:
    """The client-side port of a socket `local:port-peer:port`: its own port on the client, the
    peer's on the server."""
    local, _, peer = sub.partition("-")
    return int((peer if role == "server" else local).rsplit(":", 1)[1])


def flow_sockets(points: Iterable[Point], flow: str, window: tuple[float, float], role: str | None = "client",
                 data_ports: set[int] | None = None, *, host: str | None = None,
                 slack_s: float | tuple[float, float] = 0.5) -> dict[str, list[Point]]:
    """The `subflow` points of `flow`'s sockets in the window (plus `slack_s` before/after),
    seen on its `role` host or on `host`, by socket, in time order. With `data_ports` (client
    ports of the data connections) only those connections' sockets are kept: an MPTCP
    connection's subflows share its token (the local token of the host that sampled them)."""
    by_sub: dict[str, list[Point]] = {}
    for p in _window_points(points, "subflow", window, slack_s=slack_s):
        if p.tags.get("flow") != flow:
            continue
        if (host is not None and p.tags.get("host") != host) or (role is not None and p.tags.get("role") != role):
            continue
        by_sub.setdefault(p.tags["subflow"], []).append(p)
    if data_ports is not None:
        tokens = {pts[-1].fields.get("mptcp_token") for sub, pts in by_sub.items()
                  if _client_port(sub, role) in data_ports}
        tokens.discard(None)
        tokens.discard("")
        by_sub = {sub: pts for sub, pts in by_sub.items()
                  if _client_port(sub, role) in data_ports or pts[-1].fields.get("mptcp_token") in tokens}
    for pts in by_sub.values():
        pts.sort(key=lambda p: p.time_ns)
    return dict(sorted(by_sub.items()))


def counter_growth(pts: Sequence[Point], key: str) -> tuple[int, float | None]:
    """(growth of counter `key` from a socket's first to its last sample, its mean rate per
    second over that time, None with fewer than two samples)."""
    samples = [(p.time_ns, int(p.fields[key])) for p in pts if key in p.fields]
    rate = counter_rate(samples)
    return (samples[-1][1] - samples[0][1] if len(samples) >= 2 else 0), rate


def subflow_throughput(points: Iterable[Point], flow: str, window: tuple[float, float],
                       role: str | None = "client", data_ports: set[int] | None = None, *,
                       host: str | None = None, counter: str | None = None,
                       slack_s: float | tuple[float, float] = 0.5) -> list[dict]:
    """Per subflow of `flow` (seen on its `role` host, or on `host`): mean rate of a byte
    counter across the window -- bytes_acked for a client (sender), bytes_received for a
    server, or `counter` -- its link and its MPTCP token. With `data_ports` (client ports of
    the data connections), only subflows of those connections are kept: an MPTCP
    connection's subflows share its token. Samples up to `slack_s` (before, after) beyond
    the window count (a socket's last sample may come after its client ended)."""
    key = counter or ("bytes_acked" if role == "client" else "bytes_received")
    out = []
    for sub, pts in flow_sockets(points, flow, window, role, data_ports, host=host, slack_s=slack_s).items():
        total, rate = counter_growth(pts, key)
        out.append({"subflow": sub, "link": pts[0].tags.get("link") or "?", "mbps": mbps(rate * 8 if rate else 0.0),
                    "bytes": total, "samples": sum(1 for p in pts if key in p.fields),
                    "mptcp_token": pts[-1].fields.get("mptcp_token") or None,
                    "initial": pts[-1].fields.get("mptcp_initial")})
    return out


# What a flow's numbers are over a part of the traffic window (flow_over), for the definitions.
WINDOWED_FLOW_DEFINITION = (
    "over the window, from the sockets of the flow's data connections (ss, 10 Hz): receiver = growth of "
    "bytes_received at the receiver (null when its sockets were not sampled), sender = growth of bytes_acked "
    "at the sender, retransmits = growth of the sender sockets' retrans_total (iperf3's totals are of the whole "
    "test, and its intervals count from its own start, seconds after the client started on a long path); a "
    "socket's rate is over its own samples in the window, summed over an MPTCP connection's subflows")


def flow_over(run: Any, points: Sequence[Point], span: Span) -> FlowThroughput:
    """A flow's numbers over `span`. Over the whole traffic window: iperf3's own totals
    (flow_throughput). Over a part of it, from the sockets of the flow's data connections,
    sampled by `ss` at 10 Hz (iperf3's totals are of the whole test, and its intervals count
    from its own start, seconds after the client was started on a long path): receiver =
    growth of bytes_received at the server (None if the server's sockets were not sampled),
    sender = growth of bytes_acked at the client, retransmits = growth of the client
    sockets' retrans_total (the counter iperf3 reports); each socket's rate is over its own
    samples in the window, summed over the connection's sockets."""
    whole = flow_throughput(run)
    if span.whole:
        return whole
    ports = data_local_ports(run)
    slack = span.slack(0.5)
    sent = flow_sockets(points, run.spec.name, span.bounds, "client", ports, host=run.spec.client, slack_s=slack)
    recv = flow_sockets(points, run.spec.name, span.bounds, "server", ports, host=run.spec.server, slack_s=slack)

    def total(socks: dict[str, list[Point]], key: str) -> tuple[int, float] | None:
        grown = [counter_growth(pts, key) for pts in socks.values()]
        grown = [(n, r) for n, r in grown if r is not None]
        return (sum(n for n, _ in grown), sum(r for _, r in grown) * 8) if grown else None
    r, s = total(recv, "bytes_received"), total(sent, "bytes_acked")
    retr = [counter_growth(pts, "retrans_total") for pts in sent.values()]
    retr = [n for n, rate in retr if rate is not None]
    return FlowThroughput(whole.name, whole.protocol, whole.link, r[1] if r else None, s[1] if s else None,
                          r[0] if r else None, round(span.seconds, 3), sum(retr) if retr else None, whole.congestion,
                          whole.error, whole.intervals)


def mptcp_verdict(inv: Inventory, flow: str, client: str, server: str, nstat_texts: Mapping[str, tuple[str, str]],
                  monitor_texts: Mapping[str, str], subflows: list[dict], expected_links: Sequence[str],
                  min_bytes: int = 64 * 1024, run_subflows: list[dict] | None = None) -> dict:
    """Was MPTCP really used, how many subflows per link, and did each expected link carry data
    (at least `min_bytes`: callers scale it to the link's capacity and the run's duration).
    `subflows` may be a window's; `run_subflows` (default: `subflows`) are the whole run's, whose
    tokens tell the flow's connections from others (iperf3's control connection) in the monitor's
    events: a window without subflow samples must not count the control connection."""
    from controller.parsers import ip_mptcp, nstat
    reasons: list[str] = []
    out: dict[str, Any] = {"flow": flow}
    if client in nstat_texts:
        before, after = nstat_texts[client]
        d = nstat.delta(nstat.parse(before), nstat.parse(after))
        s = nstat.mptcp_summary(d)
        out["client_counters"] = {"negotiated": s.mptcp_negotiated, "fell_back": s.fell_back,
                                  "joins_completed": s.joins_completed, "errors": s.nonzero_errors,
                                  "MPCapableSYNTX": s.negotiated.get("MPCapableSYNTX", 0),
                                  "MPCapableSYNACKRX": s.negotiated.get("MPCapableSYNACKRX", 0)}
        if not s.mptcp_negotiated:
            reasons.append(f"{client}: no MP_CAPABLE handshake completed (MPTcpExt counters)")
        if s.fell_back:
            reasons.append(f"{client}: a connection fell back to TCP ({s.fallbacks})")
    else:
        reasons.append(f"{client}: no MPTcpExt counters recorded")
    per_link_established: dict[str, int] = {l: 0 for l in expected_links}
    if client in monitor_texts:
        events = ip_mptcp.parse_monitor(monitor_texts[client])
        conns = ip_mptcp.count_subflows(events)
        tokens = {s.get("mptcp_token") for s in (subflows if run_subflows is None else run_subflows)
                  if s.get("mptcp_token")}
        out["monitor_connections"] = len(conns)
        for tok, c in conns.items():
            if tokens and tok not in tokens:
                continue  # e.g. iperf3's control connection
            for sf in ([c.initial] if c.initial else []) + list(c.established):
                link = inv.link_of_address(sf.saddr or "") or "?"
                per_link_established[link] = per_link_established.get(link, 0) + 1
    out["subflows_established_per_link"] = per_link_established
    carried = {l: sum(s["bytes"] for s in subflows if s["link"] == l) for l in expected_links}
    out["bytes_per_link"] = carried
    for l in expected_links:
        if per_link_established.get(l, 0) < 1:
            reasons.append(f"{flow}: no subflow established on {l}")
        if carried.get(l, 0) < min_bytes:
            reasons.append(f"{flow}: subflow on {l} carried {carried.get(l, 0)} bytes (< {min_bytes})")
    out["negotiated"] = client in nstat_texts and not any(
        "MP_CAPABLE" in r or "fell back" in r or "no MPTcpExt counters" in r for r in reasons)
    out["all_subflows_carried_data"] = all(carried.get(l, 0) >= min_bytes for l in expected_links)
    out["problems"] = reasons
    return out


# Slow-start and loss counters of a sending host: nstat's names, what each counts (Linux MIB
# counters of the host's network namespace). HyStart: net/ipv4/tcp_cubic.c, hystart_update(),
# which on a detection adds 1 to ...Detect and the congestion window (segments) to ...Cwnd and
# sets ssthresh = cwnd (ends slow start). Retransmissions: tcp_output.c tcp_xmit_retransmit_queue()
# counts TCPFastRetrans outside the Loss state and TCPSlowStartRetrans in it (after an RTO).
SENDER_COUNTERS: dict[str, str] = {
    "TcpExtTCPHystartTrainDetect": "slow starts ended by HyStart's ACK-train test (Cubic)",
    "TcpExtTCPHystartTrainCwnd": "sum of the congestion windows (segments) at those ends",
    "TcpExtTCPHystartDelayDetect": "slow starts ended by HyStart's delay test (RTT above its minimum + threshold)",
    "TcpExtTCPHystartDelayCwnd": "sum of the congestion windows (segments) at those ends",
    "TcpExtTCPTimeouts": "retransmission timeouts (RTO expiries; each puts the socket back into slow start)",
    "TcpExtTCPLossProbes": "tail loss probes sent (TLP)",
    "TcpExtTCPLossProbeRecovery": "losses repaired by a tail loss probe",
    "TcpRetransSegs": "segments retransmitted (all causes)",
    "TcpExtTCPFastRetrans": "segments retransmitted in fast recovery (not after an RTO)",
    "TcpExtTCPSlowStartRetrans": "segments retransmitted in the Loss state (after an RTO)",
    "TcpExtTCPSynRetrans": "SYN and SYN-ACK retransmissions",
}
SENDER_COUNTERS_DEFINITION = (
    "nstat -asz on each sending host right before and right after the traffic (whole run, never windowed): "
    "the growth of each counter; host-wide, so every TCP socket of the host counts (MPTCP subflows, iperf3's "
    "control connection and ctl's SSH session included). mean_cwnd_at_hystart_*: ...Cwnd / ...Detect, segments. "
    "The HyStart counters are Linux's tcp_cubic.c's own: only sockets running the kernel's cubic add to them. "
    "For a sender whose flows run Linux's cubic: no HyStart detection and retransmissions or timeouts means slow "
    "start ended by loss (or never ended). For a sender whose flows run one of ctl's BPF congestion controls "
    "(mcubic has its own HyStart, which no kernel counter counts) the HyStart counters are null and "
    "hystart_not_counted says why: they say nothing about how its slow start ended. " + OWN_HYSTART_DEFINITION)

HYSTART_COUNTERS = ("TcpExtTCPHystartTrainDetect", "TcpExtTCPHystartTrainCwnd", "TcpExtTCPHystartDelayDetect",
                    "TcpExtTCPHystartDelayCwnd")


def is_bpf_algorithm(name: str) -> bool:
    """One of ctl's BPF congestion controls (a run's name or a test build's `<short>_trace`)."""
    return name in ALGORITHMS or any(a.trace_name == name for a in ALGORITHMS.values())


def _own_hystart(name: str) -> bool:
    """ctl's mcubic builds with HyStart (all but mcubic_nohs: -DMC_NOHS)."""
    a = next((x for x in ALGORITHMS.values() if name in (x.name, x.trace_name)), None)
    return a is not None and a.source == "mcubic.bpf.c" and "MC_NOHS" not in a.defines


def congestion_by_host(flows: Iterable[tuple[str, str | None]]) -> dict[str, list[str]]:
    """(sending host, its flow's congestion control) pairs -> host: its algorithms, sorted."""
    out: dict[str, set[str]] = {}
    for host, cc in flows:
        if cc:
            out.setdefault(host, set()).add(cc)
    return {h: sorted(v) for h, v in out.items()}


def sender_counters(nstat_texts: Mapping[str, tuple[str, str]], hosts: Sequence[str],
                    congestion: Mapping[str, Sequence[str]] | None = None) -> dict[str, dict]:
    """Per sending host: the growth of SENDER_COUNTERS over the run and the mean congestion
    window at a HyStart exit; `recorded: False` for a host without both nstat readings (runs
    recorded before ctl read every sender's counters read only the MPTCP hosts').
    `congestion`: each host's flows' congestion controls. The HyStart counters are tcp_cubic.c's:
    a host none of whose flows runs Linux's cubic (ctl's BPF programs, mcubic with its own
    HyStart among them) gets them as None (not counted) with `hystart_not_counted` saying so,
    never a 0 that reads as "slow start ended by loss"; a host that runs cubic and another
    algorithm says which of its algorithms they leave out."""
    from controller.parsers import nstat
    out: dict[str, dict] = {}
    for h in hosts:
        if h not in nstat_texts:
            out[h] = {"recorded": False}
            continue
        before, after = nstat_texts[h]
        try:
            d = nstat.delta(nstat.parse(before), nstat.parse(after))
        except (ParseError, ResultInvalid) as exc:
            out[h] = {"recorded": False, "error": str(exc)[:200]}
            continue
        counters: dict[str, int | None] = {name: d.get(name, 0) for name in SENDER_COUNTERS}
        entry: dict[str, Any] = {"recorded": True, "counters": counters}
        algs = list((congestion or {}).get(h, ()))
        others = [a for a in algs if a != "cubic"]
        if others:
            entry["hystart_not_counted_for"] = others
            what = "; ".join(f"{a} ({'ctl BPF program' if is_bpf_algorithm(a) else 'kernel algorithm'}"
                             + (", with its own HyStart" if _own_hystart(a) else "")
                             + ")" for a in others)
            if len(others) == len(algs):
                for name in HYSTART_COUNTERS:
                    counters[name] = None
                entry["hystart_not_counted"] = (
                    f"{what}: not Linux's cubic; the HyStart counters are tcp_cubic.c's and never count another "
                    "algorithm's slow start (mcubic's own HyStart exits are not counted by any kernel counter)")
            else:
                entry["hystart_not_counted"] = (
                    f"{what}: not in the HyStart counters, which count only the host's sockets running Linux's "
                    "cubic (tcp_cubic.c)")
        for kind, det, cwnd in (("train", "TcpExtTCPHystartTrainDetect", "TcpExtTCPHystartTrainCwnd"),
                                ("delay", "TcpExtTCPHystartDelayDetect", "TcpExtTCPHystartDelayCwnd")):
            n, w = counters[det], counters[cwnd]
            entry[f"mean_cwnd_at_hystart_{kind}"] = round(w / n, 1) if n and w is not None else None
        out[h] = entry
    return out


def sender_counters_line(counters: Mapping[str, Mapping[str, Any]]) -> str:
    """One line for the terminal: HyStart exits, timeouts, probes, retransmitted segments per sender."""
    parts = []
    for h, e in counters.items():
        if not e.get("recorded"):
            parts.append(f"{h} not recorded")
            continue
        c = e["counters"]
        if c.get("TcpExtTCPHystartTrainDetect") is None:
            hystart = (f"HyStart not counted for {', '.join(e.get('hystart_not_counted_for') or ['its algorithm'])} "
                       "(nstat's HyStart counters are Linux cubic's)")
        else:
            hs = []
            for kind, det in (("train", "TcpExtTCPHystartTrainDetect"), ("delay", "TcpExtTCPHystartDelayDetect")):
                cw = e.get(f"mean_cwnd_at_hystart_{kind}")
                hs.append(f"{kind} {c[det]}" + (f" (cwnd {cw:g})" if cw is not None else ""))
            hystart = f"HyStart {', '.join(hs)}" + (
                f" (kernel cubic only, not {', '.join(e['hystart_not_counted_for'])})"
                if e.get("hystart_not_counted_for") else "")
        if e.get("own_hystart_exits"):
            hystart += "; " + own_hystart_text(e)
        parts.append(f"{h} {hystart}; RTO {c['TcpExtTCPTimeouts']}; TLP {c['TcpExtTCPLossProbes']}"
                     f"/{c['TcpExtTCPLossProbeRecovery']} recovered; retransmitted {c['TcpRetransSegs']} segments")
    return "sender counters (nstat, whole run): " + " | ".join(parts)


def series_stats(values: Sequence[float]) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "mean": statistics.fmean(values), "min": min(values), "max": max(values),
            "stdev": statistics.stdev(values) if len(values) > 1 else 0.0}


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> str:
    cells = [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = []
    if title:
        lines.append(title)
    lines.append("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths))))
    lines.append("  ".join("-" * w for w in widths))
    for r in cells:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(lines)


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 10 else f"{v:.2f}"
    return str(v)
