"""rtt-loss-sweep: BBRv3 emulation paper (Hong, KISTI), docs/experiments.md section 3.

One run is one case of the paper's sweep: a single TCP flow (iperf3) with congestion
control `--cc` over a dumbbell whose bottleneck is shaped to `--bw` (paper: 1 Gbit/s)
with a drop-tail buffer of one bandwidth-delay product, computed by ctl from `--bw` and
`--rtt` (within what the bridge's back-end can hold; a warning says so when it cannot),
plus the path's delay and random loss:

  - `--rtt`: half of it is added in each direction on the bottleneck link;
  - `--loss`: random loss on arrival at the bottleneck, data direction only (ACKs are not
    dropped), as one netem loss setting on the sender's side does.

The sweep itself (RTT 2, 20, 40, 60, 80, 100 ms x loss 0 %, 0.0046 %, 0.01 %, 0.025 %, 0.1 % x
cc bbr3, cubic -- the paper's «BBRv3, Cubic»; 10 x 60 s each) is the campaign
campaigns/rtt-loss-sweep.yaml; `ctl report rtt-loss RUN_OR_DIR...` draws the paper's heatmaps
(RTT x loss, one panel per algorithm) from any set of these runs. "bbr3", the default, is BBRv3
on any kernel: ctl's BPF program after the IETF draft (draft-ietf-ccwg-bbr-06;
nodes/congestion/bpf/bbr3.bpf.c lists how it differs from the draft), loaded for the run. "bbr"
is whatever BBR the endpoints' kernel has (upstream Linux: BBRv1; BBRv3 needs Google's v3
kernel): the run record names the kernel and which BBR its bbr is.

Socket buffers: ctl raises net.ipv4.tcp_rmem/tcp_wmem so that autotuning can reach
2 x (BDP + buffer) on both hosts, records them and restores them.

Summary: receiver goodput (`throughput_mbps`, the campaign report's headline metric) and
its share of the bottleneck rate, sender rate, retransmissions, what the bridge forwarded.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from bridges.base import Direction, PipeConfig
from controller import palette, plots
from controller.errors import ParameterError
from controller.inventory import Inventory, Role
from controller.results.foreign import check as foreign_check, render_line as foreign_line
from controller.results import series
from controller.results.figures import CaseData, heatmap_figures
from controller.results.stats import mean_ci
from controller.results.summary import (
    WINDOWED_FLOW_DEFINITION,
    flow_over,
    format_table,
    link_throughput,
)
from controller.results.window import Span, TrafficWindow, window_definitions, window_title
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
from controller.scenarios.common import (
    bdp_queue,
    buffer_conversion,
    paper_table,
    pipe_ends,
    pct,
    tcp_buffer_sysctls,
    window_need,
)
from controller.topology import iface_on, peer_in_subnet, sample_ifaces_for
from controller.traffic.iperf3 import FlowSpec
from controller.units import (
    Conversion,
    bdp_bytes,
    format_bytes,
    format_delay,
    format_probability,
    format_rate,
    parse_delay_us,
    parse_probability,
)
from nodes.mptcp import EndpointConfig

PARAMS = (
    Param("rtt", "delay", "40ms", "base round-trip time added on the bottleneck "
          "(paper: 2 ms, 20 ms, 40 ms, 60 ms, 80 ms, 100 ms)", min="0", max="2s"),
    Param("loss", "probability", "0%", "random loss on the data direction, as a percentage (0.01%) or a fraction "
          "in scientific notation (1e-4); a bare number is refused (paper: 0 %, 0.0046 %, 0.01 %, 0.025 %, 0.1 %)",
          max="50%"),
    cc_param("cc", "bbr3", "congestion control (paper: BBRv3 and cubic; bbr3 = ctl's BPF BBRv3 after the IETF "
             "draft, loaded for the run; bbr = the kernel's own, BBRv1 upstream)"),
    Param("bw", "rate", "1G", "bottleneck rate (each direction)", min="1M", max="10G"),
    queue_param(None, "bottleneck buffer; default: 1 BDP of --bw x --rtt, computed by ctl"),
    link_param("link", "path1", "inventory link used as the dumbbell's bottleneck"),
    role_param("client", "a1", "sender"),
    role_param("server", "b1", "receiver"),
    port_base_param("iperf3 port"),
    Param("duration", "duration", "60s", "iperf3 duration (paper: 60 s)", min=1, max=86400, in_run_id=False),
)


def plan(p: Mapping[str, Any], inv: Inventory) -> RunPlan:
    link = p["link"]
    require_link(inv, link, "rtt-loss-sweep")
    require_host(inv, p["client"], Role.ENDPOINT, "--client")
    require_host(inv, p["server"], Role.ENDPOINT, "--server")
    c_if = iface_on(inv, p["client"], link, "rtt-loss-sweep client")
    s_if = peer_in_subnet(inv, p["server"], c_if, "rtt-loss-sweep server")
    if c_if.side == s_if.side:
        raise ParameterError(f"rtt-loss-sweep: {p['client']} and {p['server']} are on the same side of {link}")
    bw, rtt = p["bw"], p["rtt"]
    notes: list[str] = []
    conversions: list[Conversion] = []
    bridge = inv.links[link].bridge
    queue = p["queue"] if p["queue"] is not None else bdp_queue(
        inv, bridge, bw, rtt, what=f"bottleneck queue of {link} (both directions)", conversions=conversions)
    fwd_delay = rtt // 2
    rev_delay = rtt - fwd_delay   # an odd number of microseconds still adds up to the RTT
    data_dir, ack_dir = directions(inv, p)
    links = {(link, data_dir): PipeConfig(bw_bps=bw, delay_us=fwd_delay, plr=p["loss"], queue=queue),
             (link, ack_dir): PipeConfig(bw_bps=bw, delay_us=rev_delay, queue=queue)}
    need = window_need(bw, rtt, queue)
    buffers = tcp_buffer_sysctls(need)
    conversions.append(buffer_conversion((p["client"], p["server"]), buffers, need))
    notes.append(f"bottleneck buffer {queue} for a BDP of {format_bytes(bdp_bytes(bw, rtt))} "
                 f"({format_rate(bw)} x {rtt / 1000:g} ms); socket buffers max "
                 f"{format_bytes(int(buffers['net.ipv4.tcp_rmem'].split()[-1]))}")
    flows = [FlowSpec("tcp", "tcp", p["client"], p["server"], s_if.ip, p["port_base"], client_addr=c_if.ip,
                      cc=p["cc"], duration_s=p["duration"], link=link)]
    endpoints = {p["client"]: EndpointConfig(mptcp=False, congestion_controls=frozenset({p["cc"]}), sysctls=buffers),
                 p["server"]: EndpointConfig(mptcp=False, sysctls=buffers)}
    return RunPlan(links=links, endpoints=endpoints, flows=flows,
                   sample_ifaces=sample_ifaces_for(inv, (p["client"], p["server"]), (link,)),
                   duration_s=p["duration"], notes=notes, conversions=conversions)


def directions(inv: Inventory, p: Mapping[str, Any]) -> tuple[Direction, Direction]:
    """(data, ACK) direction on the link: forward is a side -> b side."""
    c_if = iface_on(inv, p["client"], p["link"], "rtt-loss-sweep client")
    if c_if.side == "a":
        return Direction.FORWARD, Direction.REVERSE
    return Direction.REVERSE, Direction.FORWARD


# A forwarder busy this share of one core over the traffic window may have been the limit.
FORWARDER_BUSY_PCT = 90.0


def forwarder_cpu_pct(points: Any, bridge: str, link: str, direction: str, lo: float, hi: float) -> float | None:
    """The forwarder process's CPU over [lo, hi] in % of one core (pure): its CPU time (`proc_cpu_ns`,
    every thread, user and system; dnpipe's `watch`) between the first and last pipe samples that
    carry it, over the host time between them. None without two such samples (a shaper, or a
    forwarder, that does not report it)."""
    lo_ns, hi_ns = int(lo * 1e9), int(hi * 1e9)
    pts = sorted((p.time_ns, p.fields["proc_cpu_ns"]) for p in points
                 if p.measurement == "pipe" and p.tags.get("host") == bridge and p.tags.get("link") == link
                 and p.tags.get("direction") == direction and lo_ns <= p.time_ns <= hi_ns
                 and isinstance(p.fields.get("proc_cpu_ns"), int))
    if len(pts) < 2 or pts[-1][0] <= pts[0][0]:
        return None
    return round((pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0]) * 100, 1)


def forwarder_stats(points: Any, bridge: str, link: str, direction: str, lo: float, hi: float) -> dict | None:
    """What the bottleneck's forwarder recorded of the data direction over [lo, hi] (pure; shapers
    that stream pipe counters): frames the kernel dropped before the forwarder read them (its
    receive ring full: the forwarder, not the path, was the limit), its mean lateness, and its CPU
    in % of one core (at FORWARDER_BUSY_PCT or more it may have been the limit; None where it does
    not report it); None without two samples."""
    ends = pipe_ends(points, bridge, link, direction, lo, hi)
    if ends is None:
        return None
    a, b = ends
    try:
        drops = int(b.get("rx_kernel_drops") or 0) - int(a.get("rx_kernel_drops") or 0)
        sent = int(b["tx_pkts"]) - int(a["tx_pkts"])
        late = int(b.get("tx_late_ns_sum") or 0) - int(a.get("tx_late_ns_sum") or 0)
    except (KeyError, TypeError, ValueError):
        return None
    return {"kernel_drops": drops, "late_mean_us": round(late / sent / 1000, 1) if sent > 0 else None,
            "cpu_pct": forwarder_cpu_pct(points, bridge, link, direction, lo, hi)}


def summarize(data: Any, window: TrafficWindow | None = None) -> dict:
    """The run's summary over its traffic window, or over `window` of it (`ctl runs show
    --window`): then every number is over the window."""
    p = data.params
    span = Span.of(data.window, window)
    f = flow_over(data.flows[0], data.points, span)
    bw = p["bw"]
    link = p["link"]
    lt = link_throughput(data.points, data.inventory, span.bounds).get(link) or {}
    data_dir, _ = directions(data.inventory, p)
    at_bridge = lt.get("forward_mbps" if data_dir is Direction.FORWARD else "reverse_mbps")
    queue = data.plan.links[(link, data_dir)].queue
    thr = round(f.receiver_bps / 1e6, 3) if f.receiver_bps else None
    reasons = [f"tcp: {f.error}"] if f.error else []
    if thr is None and not reasons:
        reasons.append("tcp: no receiver throughput in the iperf3 output" if span.whole else
                       "tcp: no samples of the receiver's socket in the window")
    definitions = {"throughput_mbps": "iperf3 receiver goodput (end.sum_received) over the whole run",
                   "share_pct": "throughput_mbps / bottleneck rate x 100",
                   "bridge_forward_mbps": "frames the bottleneck bridge sent towards the receiver",
                   "forwarder": "the bottleneck forwarder's data direction: frames the kernel dropped before it "
                                "read them (above 0: the forwarder, not the path, was the limit), its mean "
                                "lateness (departure minus due time) and its process's CPU over the window in % "
                                f"of one core (cpu_pct; {FORWARDER_BUSY_PCT:g} or more: it may have been the "
                                "limit; null where the forwarder does not report it); null where the shaper "
                                "streams no counters",
                   "buffer": "drop-tail queue of the bottleneck, 1 BDP unless --queue was given",
                   "rtt": "added on the bottleneck, half in each direction"}
    if not span.whole:
        definitions["throughput_mbps"] = definitions["sender_mbps"] = definitions["retransmits"] = \
            WINDOWED_FLOW_DEFINITION
    definitions.update(window_definitions(span, whole_run=("parameters",)))
    out = {
        "scenario": "rtt-loss-sweep",
        # Canonical spellings: `ctl report rtt-loss` groups runs by them.
        "case": {"rtt": format_delay(p["rtt"]), "loss": format_probability(p["loss"]), "cc": p["cc"]},
        "parameters": {"rtt_ms": p["rtt"] / 1000, "loss_pct": p["loss"] * 100, "cc": p["cc"],
                       "bottleneck_mbps": bw / 1e6, "buffer": str(queue), "buffer_bdp_bytes": bdp_bytes(bw, p["rtt"]),
                       "duration_s": p["duration"], "link": link,
                       "socket_buffers": dict(data.plan.endpoints[p["client"]].sysctls)},
        "paper_table": paper_table(f"Fig. {1 if p['cc'] == 'cubic' else 2} cell: throughput (Mbit/s), {p['cc']}",
                                   ["RTT \\ loss", format_probability(p["loss"])], [[format_delay(p["rtt"]), thr]]),
        "throughput_mbps": thr,
        "share_pct": pct(thr, bw / 1e6),
        "sender_mbps": round(f.sender_bps / 1e6, 3) if f.sender_bps else None,
        "retransmits": f.retransmits,
        "congestion": f.congestion,
        "bridge_forward_mbps": at_bridge,
        "forwarder": forwarder_stats(data.points, data.inventory.links[link].bridge, link, data_dir.value,
                                     *span.bounds),
        "flows": [f.to_json()],
        "valid": not reasons, "invalid_reasons": reasons,
        "definitions": definitions,
    }
    if span.window is not None:
        out["window"] = span.to_json()
    return foreign_check(out, data, span.bounds)


def render(s: dict) -> str:
    par = s["parameters"]
    c = s["case"]
    title = (f"rtt-loss-sweep  {c['cc']}  RTT {c['rtt']}  loss {c['loss']}  bottleneck {par['bottleneck_mbps']:g} "
             f"Mbit/s, buffer {par['buffer']} (1 BDP = {format_bytes(par['buffer_bdp_bytes'])})  {par['duration_s']:g} s"
             + window_title(s))
    rows = [[c["cc"], c["rtt"], c["loss"], s["throughput_mbps"], s["share_pct"], s["sender_mbps"], s["retransmits"],
             s["bridge_forward_mbps"]]]
    out = [format_table(["cc", "RTT", "loss", "Mbit/s", "% of bottleneck", "sender Mbit/s", "retrans",
                         "at bridge Mbit/s"], rows, title=title),
           "paper (Fig. 1-2): BBRv3 keeps >= 70 % of the bottleneck in every case; Cubic collapses except at low "
           "loss or low RTT.  Heatmap over many runs: ctl report rtt-loss RUN_OR_DIR..."]
    note = palette.algorithm_note([c["cc"]])        # which BBR this row is: never the kernel's v1 as "BBRv3"
    if note:
        out.append(note)
    if foreign_line(s):
        out.append(foreign_line(s))
    if not s["valid"]:
        out.append("RESULT INVALID: " + "; ".join(s["invalid_reasons"]))
    return "\n\n".join(out)


def figures(data: Any, summary: dict, out_dir: Path, output: plots.Output | None = None) -> list[str]:
    c, par = summary["case"], summary["parameters"]
    path = series.throughput(
        data, Path(out_dir) / "throughput.png",
        f"rtt-loss-sweep: {palette.algorithm_style(c['cc']).name}, RTT {c['rtt']}, loss {c['loss']}: "
        f"{summary['throughput_mbps']} Mbit/s ({summary['share_pct']} % of the bottleneck)",
        flow_capacity={"bottleneck": par["bottleneck_mbps"] * 1e6}, output=output)
    return [path.name]


SCENARIO = Scenario(
    name="rtt-loss-sweep",
    title="One (RTT, loss, congestion control) case of the BBRv3 dumbbell sweep (Hong, Fig. 1-2)",
    reference="Hong: Measurement and Analysis of Throughput for BBRv3 on Emulation-Based Testbed; "
              "docs/experiments.md section 3",
    description=__doc__ or "",
    params=PARAMS,
    plan=plan,
    summarize=summarize,
    render=render,
    figures=figures,
    distinct=(("client", "server"),),
)


# ---- the heatmap over many runs (`ctl report rtt-loss`) ---------------------------------------

HEATMAP_METRICS = ("throughput_mbps", "share_pct")


def find_summaries(paths: list[Path]) -> list[tuple[Path, dict]]:
    """Every completed, valid rtt-loss-sweep summary under the given run records or directories."""
    import json
    seen: set[Path] = set()
    out: list[tuple[Path, dict]] = []
    for root in paths:
        root = Path(root)
        files = [root / "summary.json"] if (root / "summary.json").is_file() else sorted(root.rglob("summary.json"))
        for f in files:
            if f.resolve() in seen:
                continue
            seen.add(f.resolve())
            try:
                s = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(s, dict) and s.get("scenario") == "rtt-loss-sweep" and s.get("valid") \
                    and isinstance(s.get("case"), dict):
                out.append((f.parent, s))
    return out


def heatmap_grid(summaries: list[dict], metric: str = "throughput_mbps") -> dict:
    """Mean of `metric` per (cc, RTT, loss) over repetitions, axes in ascending numeric order (pure)."""
    cells: dict[tuple[str, str, str], list[float]] = {}
    for s in summaries:
        c = s["case"]
        v = s.get(metric)
        if isinstance(v, (int, float)):
            cells.setdefault((c["cc"], c["rtt"], c["loss"]), []).append(float(v))
    ccs = sorted({k[0] for k in cells})
    rtts = sorted({k[1] for k in cells}, key=parse_delay_us)
    losses = sorted({k[2] for k in cells}, key=parse_probability)
    grid = {cc: {r: {l: None for l in losses} for r in rtts} for cc in ccs}
    for (cc, r, l), vs in cells.items():
        st = mean_ci(vs)
        grid[cc][r][l] = {"mean": round(st.mean, 3) if st.mean is not None else None, "n": st.n,
                          "ci95": round(st.ci95, 3) if st.ci95 is not None else None}
    return {"metric": metric, "cc": ccs, "rtt": rtts, "loss": losses, "cells": grid}


def render_grid(g: dict) -> str:
    out = []
    for cc in g["cc"]:
        rows = []
        for r in g["rtt"]:
            row: list[Any] = [r]
            for l in g["loss"]:
                c = g["cells"][cc][r][l]
                row.append(None if c is None else (f"{c['mean']:.1f}" + (f" (n={c['n']})" if c["n"] > 1 else "")))
            rows.append(row)
        out.append(format_table([f"{cc}: RTT \\ loss"] + g["loss"], rows, title=f"{g['metric']} ({cc})"))
    return "\n\n".join(out)


def write_heatmap(summaries: list[dict], out_dir: Path, metric: str = "throughput_mbps",
                  title: str = "rtt-loss-sweep", output: plots.Output | None = None) -> Path | None:
    """The paper's figures: one heatmap panel (RTT x loss) per algorithm; missing cells blank;
    written in `output`'s formats (PNG alone by default); returns the first format's path."""
    g = heatmap_grid(summaries, metric)
    if not g["cc"]:
        return None
    by_case: dict[tuple[str, str, str], list[float]] = {}
    for s in summaries:
        c = s["case"]
        if isinstance(s.get(metric), (int, float)):
            by_case.setdefault((c["cc"], c["rtt"], c["loss"]), []).append(float(s[metric]))
    # One case per grid cell in ascending order (the report takes axis order from first appearance).
    cases = []
    for cc in g["cc"]:
        for r in g["rtt"]:
            for l in g["loss"]:
                cases.append(CaseData(len(cases), {"loss": l, "rtt": r, "cc": cc}, [],
                                      {metric: by_case.get((cc, r, l), [])}, []))
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    figs = heatmap_figures(cases, metric, ("loss", "rtt", "cc"), Path(out_dir),
                           f"{title}: mean {palette.label(metric)}", output)
    return figs[0][0] if figs else None
