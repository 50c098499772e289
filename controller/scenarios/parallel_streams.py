"""parallel-streams: parallel-socket interference (Kim, Huh, Hwang; GridFTP style), Fig. 4-8;
docs/experiments.md section 6.

Host x1 sends over `--base-streams` parallel TCP connections (paper: SC64) for the whole
run; `--start-after` seconds later host m0 starts `--streams` connections (paper: SC2,
SC16, SC32, SC64) and stops `--start-after` seconds before x1 does, so the two run together
for `--duration` - 2 x `--start-after`. Both cross one bottleneck (`--bw`, paper: 100
Mbit/s) to two different receivers. (The paper sent 200 MB per host; fixed times give a
well-defined period in which both run.)

Measured: each host's share of the bottleneck while both run: the receivers' interface
counters (frames, sampled at 10 Hz, like the paper's sniffer) over the overlap, skipping
the first `--settle` seconds of m0's slow start. The overlap starts when m0's data really
flows, read from its receiver's counters, not when its client was spawned: iperf3 opens its
connections one after the other before sending, and next to x1's 64 connections a lost SYN
costs each a 1 s retransmission timeout, so m0 can start sending seconds after its process
(5 s was seen at 100 Mbit/s with a 100-slot queue). A window from the spawn time holds x1
alone at 100 % for that long and inflates x1's share.

Diagnostics beside the shares (why a case deviates, see docs/howto/reproduce.md): each host's
connection set-up time, its connections that starved (carried under 10 % of its mean per
connection: stuck in retransmission-timeout back-off), Jain's index over its connections,
m0's share in 2 s steps, the bottleneck's drop rate over the overlap and the packets per
connection the path holds ((queue + BDP) / (V_k + A_n)): below ~4 a connection cannot see
three duplicate ACKs and recovers losses only by timeouts, where TCP stops sharing per
connection.

Model (the paper's eq. 2 and 4): a new application opening A_n connections next to V_k
existing ones gets BNA = B x A_n / (V_k + A_n); the existing ones keep IB = B x V_k /
(V_k + A_n). The summary puts each host's measured rate and share next to its prediction
(x1: IB, m0: BNA) and the prediction error (measured - predicted, in percentage points of
B and relative to the prediction).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from bridges.base import Direction, PipeConfig
from controller import palette, plots
from controller.errors import CtlError, ParameterError
from controller.inventory import Inventory, Role
from controller.parsers import iperf3
from controller.results.foreign import check as foreign_check, render_line as foreign_line
from controller.results.summary import flow_throughput, format_table
from controller.scenarios.base import (
    Param,
    RunPlan,
    Scenario,
    cc_param,
    link_param,
    port_base_param,
    queue_param,
    require_host,
    require_link,
    role_param,
)
from controller.scenarios.common import paper_table, pipe_window
from controller.topology import iface_on, peer_in_subnet, sample_ifaces_for
from controller.traffic.iperf3 import FlowSpec
from nodes.mptcp import EndpointConfig

PARAMS = (
    Param("base_streams", "int", "64", "x1's parallel TCP connections (V_k; paper: 64)", min=1, max=128),
    Param("streams", "int", "16", "m0's parallel TCP connections (A_n; paper: 2, 16, 32, 64)", min=1, max=128),
    Param("bw", "rate", "100M", "bottleneck rate B (paper: 100 Mbit/s)", min="1M", max="10G"),
    Param("delay", "delay", "5ms", "one-way delay on the bottleneck (paper: ~50 km over KOREN)", min="0", max="1s"),
    queue_param("100", "bottleneck queue per direction: slots or bytes"),
    cc_param("cc", "cubic", "congestion control of every connection"),
    Param("start_after", "duration", "5s", "m0 starts this long after x1 and stops this long before it",
          min="0.5s", max="1h", in_run_id=False),
    Param("settle", "duration", "2s", "first seconds of the overlap left out of the shares (m0's slow start)",
          min="0.1s", max="1h", in_run_id=False),
    link_param("link", "path1", "inventory link shared by both hosts"),
    role_param("x1", "a1", "existing sender (V_k connections)"),
    role_param("x1_receiver", "b1", "x1's receiver"),
    role_param("m0", "a2", "new sender (A_n connections)"),
    role_param("m0_receiver", "b2", "m0's receiver"),
    port_base_param(),
    Param("duration", "duration", "40s", "how long x1 sends", min=3, max=86400, in_run_id=False),
)

# The paper's measured shares (x1 %, m0 %) for SC64 + SCn (section 3.2); a sanity range.
PAPER_SHARES = {2: (96.0, 3.0), 16: (76.0, 28.0), 32: (58.0, 40.0), 64: (48.0, 50.0)}


def overlap(p: Mapping[str, Any]) -> tuple[float, float]:
    """(start, end) of m0's run relative to x1's start, seconds."""
    return p["start_after"], p["duration"] - p["start_after"]


def plan(p: Mapping[str, Any], inv: Inventory) -> RunPlan:
    link = p["link"]
    require_link(inv, link, "parallel-streams")
    for role in ("x1", "x1_receiver", "m0", "m0_receiver"):
        require_host(inv, p[role], Role.ENDPOINT, f"--{role.replace('_', '-')}")
    start, end = overlap(p)
    if end - start - p["settle"] < 1.0:
        raise ParameterError(f"parallel-streams: --duration {p['duration']:g}s leaves no overlap to measure "
                             f"(m0 runs {max(0.0, end - start):g} s, minus --settle {p['settle']:g} s); "
                             f"need --duration >= {2 * p['start_after'] + p['settle'] + 1:g}s")
    x_if = iface_on(inv, p["x1"], link, "x1")
    m_if = iface_on(inv, p["m0"], link, "m0")
    xr_if = peer_in_subnet(inv, p["x1_receiver"], x_if, "x1's receiver")
    mr_if = peer_in_subnet(inv, p["m0_receiver"], m_if, "m0's receiver")
    for who, a, b in (("x1", x_if, xr_if), ("m0", m_if, mr_if)):
        if a.side == b.side or b.link != link:
            raise ParameterError(f"parallel-streams: {who}'s receiver is not across {link}")
    pipe = PipeConfig(bw_bps=p["bw"], delay_us=p["delay"], queue=p["queue"])
    links = {(link, d): pipe for d in Direction}
    flows = [
        FlowSpec("x1", "tcp", p["x1"], p["x1_receiver"], xr_if.ip, p["port_base"], client_addr=x_if.ip, cc=p["cc"],
                 duration_s=p["duration"], streams=p["base_streams"], link=link),
        FlowSpec("m0", "tcp", p["m0"], p["m0_receiver"], mr_if.ip, p["port_base"] + 1, client_addr=m_if.ip,
                 cc=p["cc"], duration_s=end - start, streams=p["streams"], start_delay_s=start, link=link),
    ]
    endpoints = {h: EndpointConfig(mptcp=False, congestion_controls=frozenset({p["cc"]})) for h in (p["x1"], p["m0"])}
    return RunPlan(links=links, endpoints=endpoints, flows=flows,
                   sample_ifaces=sample_ifaces_for(inv, (p["x1"], p["m0"], p["x1_receiver"], p["m0_receiver"]),
                                                   (link,)),
                   duration_s=p["duration"],
                   notes=[f"x1: {p['base_streams']} connections for {p['duration']:g} s; m0: {p['streams']} "
                          f"connections from +{start:g} s to +{end:g} s"])


def predict(bw_bps: float, v_k: int, a_n: int) -> dict[str, float]:
    """The paper's model: BNA (the new application) and IB (the existing ones), bit/s."""
    return {"bna_bps": bw_bps * a_n / (v_k + a_n), "ib_bps": bw_bps * v_k / (v_k + a_n)}


def connections_needed(bw_bps: float, v_k: int, bna_bps: float) -> float:
    """Eq. 3: connections a new application needs for a wanted bandwidth next to V_k."""
    if not 0 < bna_bps < bw_bps:
        raise ParameterError("wanted bandwidth must be between 0 and the bottleneck rate")
    return v_k * bna_bps / (bw_bps - bna_bps)


def _receiver_iface(data: Any, host: str, link: str) -> str:
    return next(i.name for i in data.inventory.hosts[host].interfaces if i.link == link)


# A sender's data starts in the first sampling step (10 Hz) in which its receiver gets more than
# this share of B (at least 8 KiB): iperf3's control exchange and 64 handshakes are a few kB.
DATA_START_SHARE = 0.02
DATA_START_MIN_BYTES = 8192
# A connection "starved": it carried under this share of its host's mean per connection.
STARVED_SHARE = 0.10
TIMELINE_STEP_S = 2.0


def rx_samples(points: Any, host: str, iface: str) -> list[tuple[float, int]]:
    """(t s, rx_bytes) of a host's interface, in time order."""
    return sorted((p.time_ns / 1e9, int(p.fields["rx_bytes"])) for p in points
                  if p.measurement == "iface" and p.tags.get("host") == host and p.tags.get("iface") == iface
                  and "rx_bytes" in p.fields)


def data_start(samples: list[tuple[float, int]], after: float, bw_bps: float) -> float | None:
    """When a sender's data began to arrive (pure): the start of the first sampling step after
    `after` in which its receiver got more than DATA_START_SHARE of B (handshakes stay below)."""
    for (t0, v0), (t1, v1) in zip(samples, samples[1:]):
        if t0 < after or t1 <= t0:
            continue
        if v1 - v0 > max(DATA_START_MIN_BYTES, DATA_START_SHARE * bw_bps / 8 * (t1 - t0)):
            return t0
    return None


def window_rate(samples: list[tuple[float, int]], lo: float, hi: float) -> float | None:
    """bit/s of a byte counter across [lo, hi] (first and last sample inside)."""
    inside = [s for s in samples if lo <= s[0] <= hi]
    if len(inside) < 2 or inside[-1][0] <= inside[0][0] or inside[-1][1] < inside[0][1]:
        return None
    return (inside[-1][1] - inside[0][1]) * 8 / (inside[-1][0] - inside[0][0])


def packets_per_connection(bw_bps: float, delay_us: float, queue: Any, connections: int, mtu: int = 1500) -> float:
    """What the path holds per connection, in full-size packets: (queue + BDP) / connections.
    Below ~4 a connection's losses are recovered by timeouts (no three duplicate ACKs)."""
    q = queue.bytes / mtu if getattr(queue, "bytes", None) is not None else float(getattr(queue, "slots", 0) or 0)
    bdp = bw_bps * 2 * delay_us / 1e6 / 8 / mtu
    return round((q + bdp) / max(1, connections), 2)


def connection_stats(client_json: str) -> dict[str, Any] | None:
    """Per-connection goodput of one iperf3 client (its end.streams, receiver bytes): how many,
    how many starved, Jain's index over them. None without a parseable result."""
    try:
        res = iperf3.parse(client_json) if client_json else None
    except CtlError:
        return None
    if res is None or res.end is None or not res.end.streams:
        return None
    got = [float(st.receiver.bytes) for st in res.end.streams if st.receiver is not None and st.receiver.bytes is not None]
    if not got:
        return None
    mean = sum(got) / len(got)
    squares = sum(x * x for x in got)
    return {"connections": len(got), "starved": sum(1 for x in got if x < STARVED_SHARE * mean),
            "jain": round(sum(got) ** 2 / (len(got) * squares), 4) if squares else None,
            "bytes_min": int(min(got)), "bytes_median": int(sorted(got)[len(got) // 2]),
            "bytes_max": int(max(got))}


def pipe_drops(points: Any, bridge: str, link: str, direction: str, lo: float, hi: float) -> dict[str, Any] | None:
    """Arrivals and queue drops of the bottleneck's data direction over [lo, hi] (shapers that
    stream pipe counters: dnpipe, dummynet), or None."""
    pts = pipe_window(points, bridge, link, direction, lo, hi)
    if len(pts) < 2:
        return None
    a, b = pts[0], pts[-1]
    try:
        arrived = int(b["rx_pkts"]) - int(a["rx_pkts"])
        dropped = int(b["drop_queue_pkts"]) - int(a["drop_queue_pkts"])
    except (KeyError, TypeError, ValueError):
        return None
    peak = max((int(f.get("queue_peak_pkts") or 0) for f in pts), default=None)
    return {"arrived_pkts": arrived, "queue_drops_pkts": dropped,
            "drop_pct": round(100.0 * dropped / arrived, 3) if arrived > 0 else None, "queue_peak_pkts": peak}


def summarize(data: Any) -> dict:
    p = data.params
    link = p["link"]
    runs = {r.spec.name: r for r in data.flows}
    flows = {n: flow_throughput(r) for n, r in runs.items()}
    start, end = overlap(p)
    bw = p["bw"]
    reasons = [f"{n}: {f.error}" for n, f in flows.items() if f.error]
    samples = {name: rx_samples(data.points, p[f"{name}_receiver"],
                                _receiver_iface(data, p[f"{name}_receiver"], link)) for name in ("x1", "m0")}
    # When each sender's data really began (its receiver's counters), after its client was spawned.
    spawned = {n: runs[n].client_spawned or runs[n].client_started or data.window[0] + (start if n == "m0" else 0)
               for n in ("x1", "m0")}
    began = {n: data_start(samples[n], spawned[n], bw) for n in ("x1", "m0")}
    for n in ("x1", "m0"):
        if began[n] is None and samples[n]:
            reasons.append(f"{n}: its receiver never got data (no sampling step above "
                           f"{DATA_START_SHARE * 100:g} % of the bottleneck)")
    t_m0 = began["m0"] if began["m0"] is not None else spawned["m0"]
    t_x1 = began["x1"] if began["x1"] is not None else spawned["x1"]
    # The overlap: from m0's first data (+ settle) until m0's test ends (iperf3 -t counts from its
    # first data) or x1's does, whichever is first.
    lo = t_m0 + p["settle"]
    hi = min(t_m0 + (end - start), t_x1 + p["duration"])
    model = predict(bw, p["base_streams"], p["streams"])
    hosts = []
    for name, role, pred_key, streams in (("x1", "existing (IB)", "ib_bps", p["base_streams"]),
                                          ("m0", "new (BNA)", "bna_bps", p["streams"])):
        recv = p[f"{name}_receiver"]
        rate = window_rate(samples[name], lo, hi)
        pred = model[pred_key]
        if rate is None:
            reasons.append(f"{name}: no interface samples on {recv} during the overlap")
        hosts.append({
            "host": name, "sender": p[name], "receiver": recv, "connections": streams, "role": role,
            "measured_mbps": round(rate / 1e6, 3) if rate is not None else None,
            "measured_share_pct": round(100 * rate / bw, 2) if rate is not None else None,
            "predicted_mbps": round(pred / 1e6, 3), "predicted_share_pct": round(100 * pred / bw, 2),
            "error_pp": round(100 * (rate - pred) / bw, 2) if rate is not None else None,
            "error_rel_pct": round(100 * (rate - pred) / pred, 2) if rate is not None else None,
            "goodput_whole_run_mbps": round(flows[name].receiver_bps / 1e6, 3) if flows[name].receiver_bps else None,
            "setup_s": round(began[name] - spawned[name], 3) if began[name] is not None else None,
            "per_connection": connection_stats(runs[name].client_json or ""),
        })
    paper = PAPER_SHARES.get(p["streams"]) if p["base_streams"] == 64 else None
    total = sum(h["measured_mbps"] or 0 for h in hosts)
    timeline = []
    t = t_m0
    while t + TIMELINE_STEP_S <= hi + 1e-6:
        x, m = window_rate(samples["x1"], t, t + TIMELINE_STEP_S), window_rate(samples["m0"], t, t + TIMELINE_STEP_S)
        timeline.append({"t_s": round(t - t_m0, 1), "x1_pct": round(100 * x / bw, 1) if x is not None else None,
                         "m0_pct": round(100 * m / bw, 1) if m is not None else None})
        t += TIMELINE_STEP_S
    # The same model over the connections that carried data: a starved connection (stuck in
    # timeout back-off) takes no share, so the split follows the connections alive.
    alive = {h["host"]: h["connections"] - ((h["per_connection"] or {}).get("starved") or 0) for h in hosts}
    alive_model = predict(bw, alive["x1"], alive["m0"]) if alive["x1"] + alive["m0"] > 0 else None
    x_if = iface_on(data.inventory, p["x1"], link, "x1")
    direction = "forward" if x_if.side == "a" else "reverse"
    return foreign_check({
        "scenario": "parallel-streams",
        "parameters": {"base_streams": p["base_streams"], "streams": p["streams"], "bottleneck_mbps": bw / 1e6,
                       "delay_ms": p["delay"] / 1000, "queue": str(p["queue"]), "cc": p["cc"],
                       "duration_s": p["duration"], "start_after_s": p["start_after"], "settle_s": p["settle"]},
        "case": f"SC{p['base_streams']}+SC{p['streams']}",
        "overlap": {"start": lo, "end": hi, "seconds": round(max(0.0, hi - lo), 3),
                    "m0_data_start": began["m0"], "x1_data_start": began["x1"]},
        "hosts": hosts,
        "measured_total_mbps": round(total, 3),
        "paper_table": paper_table(
            f"Fig. 8: measured vs predicted bandwidth, SC{p['base_streams']}+SC{p['streams']}",
            ["host", "sockets", "measured Mbit/s", "measured %", "predicted Mbit/s", "predicted %", "error pp"],
            [[h["host"], h["connections"], h["measured_mbps"], h["measured_share_pct"], h["predicted_mbps"],
              h["predicted_share_pct"], h["error_pp"]] for h in hosts]),
        "x1_share_pct": hosts[0]["measured_share_pct"], "m0_share_pct": hosts[1]["measured_share_pct"],
        "x1_error_pp": hosts[0]["error_pp"], "m0_error_pp": hosts[1]["error_pp"],
        "m0_setup_s": hosts[1]["setup_s"],
        "paper_shares_pct": {"x1": paper[0], "m0": paper[1]} if paper else None,
        "diagnostics": {
            "packets_per_connection": packets_per_connection(bw, p["delay"], p["queue"],
                                                             p["base_streams"] + p["streams"]),
            "connections_alive": alive,
            "alive_model_share_pct": ({"x1": round(100 * alive_model["ib_bps"] / bw, 2),
                                       "m0": round(100 * alive_model["bna_bps"] / bw, 2)} if alive_model else None),
            "bottleneck": pipe_drops(data.points, data.inventory.links[link].bridge, link, direction, lo, hi),
            "share_timeline": timeline},
        "flows": [f.to_json() for f in flows.values()],
        "valid": not reasons, "invalid_reasons": reasons,
        "definitions": {
            "measured_mbps": "rx_bytes growth of the receiver's interface on the link (frames incl. headers, "
                             "10 Hz samples) over the overlap window, like the paper's sniffer",
            "overlap": "from m0's first data at its receiver + settle to m0's end (its first data + its iperf3 "
                       "duration) or x1's, whichever is first: both hosts sending",
            "setup_s": "from ctl's request to spawn the client (older records: the client seen running) to its "
                       "first data at the receiver (iperf3 connects its "
                       "streams one by one before sending; a lost SYN costs 1 s)",
            "predicted_mbps": "x1: IB = B*V_k/(V_k+A_n); m0: BNA = B*A_n/(V_k+A_n) (paper eq. 4 and 2)",
            "error_pp": "(measured - predicted) / B x 100, percentage points",
            "error_rel_pct": "(measured - predicted) / predicted x 100",
            "per_connection": "iperf3 receiver bytes per connection over the host's whole test; starved: under "
                              f"{STARVED_SHARE * 100:g} % of the host's mean; jain: Jain's index over them",
            "packets_per_connection": "(queue + bandwidth-delay product) / (V_k + A_n), full-size packets",
            "alive_model_share_pct": "BNA/IB over the connections that did not starve (V_k and A_n minus each "
                                     "host's starved connections)",
            "bottleneck": "the bottleneck pipe's data direction over the overlap: packets arrived, dropped by "
                          "the full queue, peak occupancy",
            "share_timeline": "each host's share of B in 2 s steps from m0's first data"},
    }, data)


def render(s: dict) -> str:
    par = s["parameters"]
    title = (f"parallel-streams  {s['case']}  bottleneck {par['bottleneck_mbps']:g} Mbit/s, {par['delay_ms']:g} ms "
             f"one-way, queue {par['queue']}  overlap {s['overlap']['seconds']:g} s")
    rows = [[h["host"], f"SC{h['connections']}", h["role"], h["measured_mbps"], h["measured_share_pct"],
             h["predicted_mbps"], h["predicted_share_pct"], h["error_pp"], h["error_rel_pct"]] for h in s["hosts"]]
    out = [format_table(["host", "sockets", "model", "measured Mbit/s", "measured %", "predicted Mbit/s",
                         "predicted %", "error pp", "error % of pred"], rows, title=title)]
    if s["paper_shares_pct"]:
        out.append(f"paper (SC64+SC{par['streams']}, measured): x1 {s['paper_shares_pct']['x1']:g} %, "
                   f"m0 {s['paper_shares_pct']['m0']:g} %")
    out.append(f"prediction error: x1 {s['x1_error_pp']} pp, m0 {s['m0_error_pp']} pp; measured total "
               f"{s['measured_total_mbps']} Mbit/s")
    out.append(diagnostics_text(s))
    if foreign_line(s):
        out.append(foreign_line(s))
    if not s["valid"]:
        out.append("RESULT INVALID: " + "; ".join(s["invalid_reasons"]))
    return "\n\n".join(out)


def diagnostics_text(s: dict) -> str:
    """Why a case may leave the model: set-up, starved connections, the queue per connection."""
    d = s.get("diagnostics") or {}
    parts = []
    for h in s["hosts"]:
        pc = h.get("per_connection") or {}
        setup = f"first data {h['setup_s']:g} s after its client started" if h.get("setup_s") is not None else \
            "no data seen"
        conn = (f"{pc['starved']} of {pc['connections']} connections starved, Jain over them {pc['jain']}"
                if pc else "no per-connection result")
        parts.append(f"{h['host']}: {setup}; {conn}")
    bn = d.get("bottleneck") or {}
    tail = f"path holds {d.get('packets_per_connection')} packets per connection (queue + BDP)"
    am = d.get("alive_model_share_pct")
    if am and any((h.get("per_connection") or {}).get("starved") for h in s["hosts"]):
        tail += f"; the model over the connections alive: x1 {am['x1']:g} %, m0 {am['m0']:g} %"
    if bn.get("drop_pct") is not None:
        tail += f"; bottleneck dropped {bn['drop_pct']:g} % of arrivals during the overlap"
    return "; ".join(parts) + "\n" + tail


def share_steps(samples: dict[str, list[tuple[float, int]]], t0: float,
                step_s: float) -> dict[str, list[tuple[float, float]]]:
    """Each host's share (%) of what both receivers got in consecutive steps of `step_s` from t0:
    its bytes over both hosts' bytes, so between 0 and 100 % by definition (headers and sampling
    jitter cannot push it past 100 % as a share of the nominal rate can). Steps in which neither
    receiver got anything are left out (pure)."""
    got: dict[int, dict[str, int]] = {}
    for host, pts in samples.items():
        for (ta, va), (tb, vb) in zip(pts, pts[1:]):
            if tb > ta and vb >= va:
                k = int(((ta + tb) / 2 - t0) // step_s)
                got.setdefault(k, {}).setdefault(host, 0)
                got[k][host] += vb - va
    out: dict[str, list[tuple[float, float]]] = {h: [] for h in samples}
    for k in sorted(got):
        total = sum(got[k].values())
        if total > 0:
            for h in samples:
                out[h].append(((k + 0.5) * step_s, 100.0 * got[k].get(h, 0) / total))
    return out


def figures(data: Any, summary: dict, out_dir: Path, output: plots.Output | None = None) -> list[str]:
    """Fig. 4-6 (each host's share over time) and Fig. 8 (measured vs predicted)."""
    plt = plots.pyplot()
    p = data.params
    bw = p["bw"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.6), gridspec_kw={"width_ratios": [1.7, 1]},
                                   layout="constrained")
    t0 = data.window[0]
    # 1 s steps at least: the two receivers are sampled apart, and a 0.1 s sample landing in the
    # next step would swing both shares
    step = max(1.0, plots.aligned_window(2 * p["delay"] / 1e6))
    samples = {h["host"]: rx_samples(data.points, h["receiver"], _receiver_iface(data, h["receiver"], p["link"]))
               for h in summary["hosts"]}
    shares = share_steps(samples, t0, step)
    ov = summary["overlap"]
    ax1.axvspan(ov["start"] - t0, ov["end"] - t0, color="0.85", alpha=0.5, lw=0, label="measured overlap")
    for h in summary["hosts"]:
        st = palette.role_style(h["host"])
        pts = shares[h["host"]]
        ax1.plot([t for t, _ in pts], [v for _, v in pts], color=st.color, marker=st.marker, markersize=3, lw=1.4,
                 label=f"{h['host']} (SC{h['connections']}), measured")
        ax1.plot([ov["start"] - t0, ov["end"] - t0], [h["predicted_share_pct"]] * 2, color=st.color, ls="--", lw=1.2,
                 label=f"{h['host']}, model ({'IB' if h['host'] == 'x1' else 'BNA'}) {h['predicted_share_pct']:g} %")
    ax1.set_ylim(0, 100)
    ax1.set_xlabel("time since x1 started (s)")
    ax1.set_ylabel(f"share of what both receivers got (%)\n(per {step:g} s step)")
    ax1.set_title(f"{summary['case']}: each host's share over time", fontsize=9)
    ax1.grid(alpha=0.3)
    plots.legend(ax1, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    hosts = summary["hosts"]
    xs = list(range(len(hosts)))
    for x, h in zip(xs, hosts, strict=True):
        st = palette.role_style(h["host"])
        ax2.bar([x], [h["measured_mbps"] or 0.0], color=st.color, hatch=st.hatch, edgecolor="black", lw=0.6,
                label=f"{h['host']} measured")
        if h["error_pp"] is not None:
            ax2.annotate(f"{h['error_pp']:+.1f} pp", (x, h["measured_mbps"] or 0.0), xytext=(0, 3),
                         textcoords="offset points", ha="center", va="bottom", fontsize=8)
    # predictions and the paper's values per host: marks, never a line between two categories
    ax2.plot(xs, [h["predicted_mbps"] for h in hosts], ls="none", marker=palette.MODEL.marker, mfc="white",
             mec="black", markersize=7, label="model (IB for x1, BNA for m0)")
    if summary["paper_shares_pct"]:
        ax2.plot(xs, [bw / 1e6 * summary["paper_shares_pct"][h["host"]] / 100 for h in hosts], ls="none",
                 marker=palette.PAPER.marker, color="black", markersize=22, mew=2.5, label="paper (measured)")
    plots.capacity_line(ax2, bw, "bottleneck")
    ax2.set_xticks(xs, [f"{h['host']} (SC{h['connections']})" for h in hosts])
    ax2.set_ylabel("rate at the receiver during the overlap (Mbit/s)")
    ax2.set_title("measured vs predicted (Fig. 8)", fontsize=9)
    ax2.grid(axis="y", alpha=0.3)
    plots.legend(ax2, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=1)
    out = output or plots.DEFAULT
    plots.titled(fig, f"parallel-streams {summary['case']}, bottleneck {bw / 1e6:g} Mbit/s",
                 plots.run_caption(out.run_id or Path(data.record_dir).name, t0))
    return [plots.save(fig, Path(out_dir) / "parallel-streams.png", out).name]


SCENARIO = Scenario(
    name="parallel-streams",
    title="Interference of parallel TCP connections and the BNA/IB model (Kim et al. Fig. 4-8)",
    reference="Kim, Huh, Hwang: Analysis of the Interference between Parallel Socket Connections and Predictions "
              "of the Bandwidth; docs/experiments.md section 6",
    description=__doc__ or "",
    params=PARAMS,
    plan=plan,
    summarize=summarize,
    render=render,
    figures=figures,
    distinct=(("x1", "x1_receiver", "m0", "m0_receiver"),),
)
