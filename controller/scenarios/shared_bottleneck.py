"""shared-bottleneck: MCubic paper, Fig. 4-6 and Tables 2-3 (docs/experiments.md section 2).

One MPTCP connection (two subflows) and one single-path TCP flow cross ONE shared
bottleneck (`--bw`, paper: 100 Mbit/s). Subflow 1 and the TCP flow take path 1, subflow 2
takes path 2; each path adds its own one-way delay on its own delay link before both meet
the bottleneck, so all three share its queue.

  case 1 (homogeneous, Table 2):   --delay 100ms|200ms|500ms|800ms   (both paths)
  case 2 (heterogeneous, Table 3): --delay1 100ms --delay2 300ms|400ms|500ms

A delay is one-way and applied in both directions of its delay link (RTT = 2 x delay).
From 500 ms of RTT on, ctl also stops the MPTCP client's kernel from giving up MPTCP on a
slow SYN (net.mptcp.syn_retrans_before_tcp_fallback = 6, blackhole_timeout = 0; Linux
6.12+ would otherwise fall back to TCP before a cold 800 ms path answers, and keep MPTCP off
for an hour).
The delay links add delay only; the bottleneck's rate and queue (`--queue`, dummynet's
default of 50 slots) are the only limits. Long paths need socket buffers of the
bandwidth-delay product: ctl raises net.ipv4.tcp_rmem/tcp_wmem (maximum = 2 x (BDP of the
slower path + queue)) on all four hosts, records them in the plan and restores them.

Summary (per connection, at the sender): bytes acknowledged per second (the sum of an
MPTCP connection's subflows; sampled with `ss` at 10 Hz over the traffic window), next
to iperf3's receiver goodput; the MPTCP / TCP ratio of the sender rates is the number of
Tables 2 and 3. The result is invalid unless MPTCP was negotiated and both subflows were
established and carried data.

Roles (defaults fit both shipped inventories): MPTCP sender sa1 (one interface on each
path's delay link), TCP sender sa2 (path 1), receivers sb1 (an address in each path's
subnet, behind the bottleneck) and sb2.
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
from controller.results.summary import (
    SENDER_COUNTERS_DEFINITION,
    WINDOWED_FLOW_DEFINITION,
    congestion_by_host,
    data_local_ports,
    flow_over,
    format_table,
    link_throughput,
    mptcp_verdict,
    sender_counters,
    sender_counters_line,
    subflow_throughput,
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
    LONG_PATH_KEYS,
    buffer_conversion,
    long_path_conversions,
    mptcp_long_path_sysctls,
    paper_table,
    pct,
    tcp_buffer_sysctls,
    window_need,
)
from controller.topology import iface_on, peer_in_subnet, sample_ifaces_for
from controller.traffic.iperf3 import FlowSpec
from controller.units import format_bytes, format_delay
from nodes.mptcp import EndpointConfig, MptcpEndpoint

PARAMS = (
    Param("delay", "delay", "100ms", "one-way delay of both paths (case 1; paper: 100 ms, 200 ms, 500 ms, 800 ms)",
          min="0", max="5s"),
    Param("delay1", "delay", None, "one-way delay of path 1: subflow 1 and the TCP flow (case 2; paper: 100 ms)",
          min="0", max="5s"),
    Param("delay2", "delay", None, "one-way delay of path 2: subflow 2 (case 2; paper: 300 ms, 400 ms, 500 ms)",
          min="0", max="5s"),
    Param("bw", "rate", "100M", "rate of the shared bottleneck (each direction)", min="1M", max="10G"),
    Param("subflows", "int", "2", "subflows of the MPTCP connection: 2 (one per path, the paper's) or 1 (path 1 "
          "only, a single-path MPTCP connection next to the TCP flow: the calibration of a coupled algorithm "
          "against its base)", min=1, max=2),
    queue_param("50"),
    cc_param(),
    cc_param("tcp_cc", "cubic", "congestion control of the single-path TCP flow"),
    link_param("path1", "sbd1", "inventory link adding path 1's delay"),
    link_param("path2", "sbd2", "inventory link adding path 2's delay"),
    link_param("bottleneck", "sbn", "inventory link shared by all flows"),
    role_param("mptcp_client", "sa1", "MPTCP sender (one interface on each path)"),
    role_param("mptcp_server", "sb1", "MPTCP receiver (an address in each path's subnet)"),
    role_param("tcp_client", "sa2", "single-path TCP sender (on path 1)"),
    role_param("tcp_server", "sb2", "single-path TCP receiver"),
    port_base_param(),
)

# The paper's measured MPTCP / TCP throughput ratios (sanity ranges, not targets).
TABLE2 = {"columns": ["100ms", "200ms", "500ms", "800ms"],
          "rows": {"LIA": [1.86, 0.8, 0.86, 0.75], "OLIA": [1.2, 0.5, 0.66, 0.54], "wVegas": [0.6, 0.6, 0.7, 0.54],
                   "MCubic": [1.95, 1.0, 1.0, 1.0]}}
TABLE3 = {"columns": ["100:300ms", "100:400ms", "100:500ms"],
          "rows": {"LIA": [0.56, 0.43, 0.35], "OLIA": [0.55, 0.40, 0.31], "wVegas": [0.32, 0.25, 0.21],
                   "MCubic": [0.74, 0.47, 0.42], "Cubic": [0.98, 0.52, 0.42]}}


def path_delays(p: Mapping[str, Any]) -> tuple[int, int]:
    """(path 1, path 2) one-way delay in us: --delay1/--delay2 where given, else --delay."""
    return (p["delay1"] if p["delay1"] is not None else p["delay"],
            p["delay2"] if p["delay2"] is not None else p["delay"])


def plan(p: Mapping[str, Any], inv: Inventory) -> RunPlan:
    l1, l2, bn = p["path1"], p["path2"], p["bottleneck"]
    for l in (l1, l2, bn):
        require_link(inv, l, "shared-bottleneck")
    for role in ("mptcp_client", "mptcp_server", "tcp_client", "tcp_server"):
        require_host(inv, p[role], Role.ENDPOINT, f"--{role.replace('_', '-')}")
    mc, ms, tc, ts = p["mptcp_client"], p["mptcp_server"], p["tcp_client"], p["tcp_server"]
    # The delay links must feed the bottleneck: their b side is its a side (a shared segment).
    for l in (l1, l2):
        if inv.link_segment(l, "b") != inv.link_segment(bn, "a"):
            raise ParameterError(f"shared-bottleneck: link {l} does not feed {bn} (its b side is segment "
                                 f"{inv.link_segment(l, 'b')}, {bn}'s a side is {inv.link_segment(bn, 'a')})")
    mc1 = iface_on(inv, mc, l1, "MPTCP client")
    mc2 = iface_on(inv, mc, l2, "MPTCP client")
    ms1 = peer_in_subnet(inv, ms, mc1, "MPTCP server")
    ms2 = peer_in_subnet(inv, ms, mc2, "MPTCP server")
    tc1 = iface_on(inv, tc, l1, "TCP client")
    ts1 = peer_in_subnet(inv, ts, tc1, "TCP server")
    for host, iface in ((ms, ms1), (ms, ms2), (ts, ts1)):
        if iface.link != bn or iface.side != "b":
            raise ParameterError(f"shared-bottleneck: {host} {iface.name} is not behind the bottleneck {bn}")
    d1, d2 = path_delays(p)
    bw, queue = p["bw"], p["queue"]
    links = {}
    for d in Direction:
        links[(l1, d)] = PipeConfig(delay_us=d1)
        links[(l2, d)] = PipeConfig(delay_us=d2)
        links[(bn, d)] = PipeConfig(bw_bps=bw, queue=queue)
    # Every flow can reach the slower path's BDP plus the queue: buffers for that on all hosts.
    need = window_need(bw, 2 * max(d1, d2), queue)
    buffers = tcp_buffer_sysctls(need)
    client_sysctls = {**buffers, **mptcp_long_path_sysctls(2 * max(d1, d2))}
    duration = p["duration"]
    port = p["port_base"]
    flows = [
        FlowSpec("mptcp", "mptcp", mc, ms, ms1.ip, port, client_addr=mc1.ip, cc=p["cc"], duration_s=duration),
        FlowSpec("tcp", "tcp", tc, ts, ts1.ip, port + 1, client_addr=tc1.ip, cc=p["tcp_cc"], duration_s=duration,
                 link=l1),
    ]
    endpoints = {
        # One subflow per path: the server announces its path-2 address, the client accepts it.
        mc: EndpointConfig(subflows=2, add_addr_accepted=2, congestion_controls=frozenset({p["cc"]}),
                           sysctls=client_sysctls, optional_sysctls=frozenset(LONG_PATH_KEYS)),
        # --subflows 1: the server announces nothing, so the connection stays on path 1.
        ms: EndpointConfig(subflows=2, add_addr_accepted=2,
                           endpoints=(MptcpEndpoint(ms2.ip, ms2.name, ("signal",)),) if p["subflows"] == 2 else (),
                           sysctls=buffers),
    }
    endpoints.setdefault(tc, EndpointConfig(mptcp=False, congestion_controls=frozenset({p["tcp_cc"]}), sysctls=buffers))
    endpoints.setdefault(ts, EndpointConfig(mptcp=False, sysctls=buffers))
    notes = [f"socket buffers: tcp_rmem/tcp_wmem max {buffers['net.ipv4.tcp_rmem'].split()[-1]} bytes on "
             f"{', '.join(sorted(endpoints))} (need {need} bytes: BDP of {bw / 1e6:g} Mbit/s x "
             f"{2 * max(d1, d2) / 1000:g} ms + queue)"]
    return RunPlan(links=links, endpoints=endpoints, flows=flows,
                   sample_ifaces=sample_ifaces_for(inv, (mc, ms, tc, ts), (l1, l2, bn)), duration_s=duration,
                   notes=notes, mptcp_hosts=sorted({mc, ms}),
                   conversions=[buffer_conversion(sorted(endpoints), buffers, need),
                                *long_path_conversions(mc, 2 * max(d1, d2))])


def case_of(d1_us: int, d2_us: int) -> dict:
    """Which table and column a run fills: case 1 (Table 2) with equal delays, else case 2 (Table 3)."""
    if d1_us == d2_us:
        col = format_delay(d1_us).replace(" ", "")
        return {"case": 1, "table": "Table 2", "column": col, "reference": TABLE2}
    col = f"{format_delay(d1_us).replace(' ', '').removesuffix('ms')}:{format_delay(d2_us).replace(' ', '')}"
    return {"case": 2, "table": "Table 3", "column": col, "reference": TABLE3}


def summarize(data: Any, window: TrafficWindow | None = None) -> dict:
    """The run's summary over its traffic window, or over `window` of it (`ctl runs show
    --window`): then every number is over the window except those `definitions.window` names."""
    p = data.params
    span = Span.of(data.window, window)
    l1, l2, bn = p["path1"], p["path2"], p["bottleneck"]
    d1, d2 = path_delays(p)
    runs = {r.spec.name: r for r in data.flows}
    flows = {n: flow_over(r, data.points, span) for n, r in runs.items()}
    slack = span.slack(0.5)
    subs = subflow_throughput(data.points, "mptcp", span.bounds, role="client",
                              data_ports=data_local_ports(runs["mptcp"]), slack_s=slack)
    run_subs = subs if span.whole else subflow_throughput(
        data.points, "mptcp", Span.of(data.window).bounds, role="client", data_ports=data_local_ports(runs["mptcp"]),
        slack_s=Span.of(data.window).slack(0.5))
    tcp_socks = subflow_throughput(data.points, "tcp", span.bounds, role="client",
                                   data_ports=data_local_ports(runs["tcp"]), slack_s=slack)
    links = link_throughput(data.points, data.inventory, span.bounds)
    # "Carried data": 64 KiB, a few segments beyond the handshakes. A capacity-scaled bound
    # would fail long paths unfairly: at 800 ms one-way a subflow joins after >3 s and slow
    # start needs ~11 RTTs (18 s) to fill the pipe.
    min_bytes = 64 * 1024
    verdict = mptcp_verdict(data.inventory, "mptcp", p["mptcp_client"], p["mptcp_server"], data.nstat,
                            data.monitor, subs, [l1, l2] if p["subflows"] == 2 else [l1], min_bytes=min_bytes,
                            run_subflows=run_subs)
    # A connection's rate is its bytes over the same time for both connections (the window), not the
    # sum of its sockets' rates each over its own life: a subflow that joins seconds late (a long
    # path) would otherwise count as if it had sent for the whole window (9 % on an 800 ms run).
    acked = {"mptcp": sum(x["bytes"] for x in subs) if subs else None,
             "tcp": sum(x["bytes"] for x in tcp_socks) if tcp_socks else None}
    secs = span.seconds
    sender = {n: (round(b * 8 / secs / 1e6, 3) if b is not None and secs > 0 else None) for n, b in acked.items()}
    recv = {n: (round(f.receiver_bps / 1e6, 3) if f.receiver_bps else None) for n, f in flows.items()}
    ratio = round(sender["mptcp"] / sender["tcp"], 3) if sender["mptcp"] and sender["tcp"] else None
    ratio_recv = round(recv["mptcp"] / recv["tcp"], 3) if recv.get("mptcp") and recv.get("tcp") else None
    case = case_of(d1, d2)
    ref = case["reference"]
    col = ref["columns"].index(case["column"]) if case["column"] in ref["columns"] else None
    reasons = list(verdict["problems"])
    for f in flows.values():
        if f.error:
            reasons.append(f"{f.name}: {f.error}")
    if sender["tcp"] is None:
        reasons.append("tcp: no acked-byte samples at the sender" + ("" if span.whole else " in the window"))
    bn_fwd = (links.get(bn) or {}).get("forward_mbps")
    paper_col = {name: vals[col] for name, vals in ref["rows"].items()} if col is not None else {}
    table = paper_table(f"{case['table']}: MPTCP / TCP throughput ratio (case {case['case']})",
                        ["algorithm", case["column"]],
                        [[f"{p['cc']} (this run)", ratio]] + [[f"{k} (paper)", v] for k, v in paper_col.items()])
    connections = []
    for name, path in (("mptcp", f"{l1}+{l2}"), ("tcp", l1)):
        f = flows[name]
        connections.append({"connection": name, "protocol": f.protocol, "paths": path,
                            "cc": f.congestion or (p["cc"] if name == "mptcp" else p["tcp_cc"]),
                            "sender_mbps": sender[name], "sender_bytes": acked[name], "receiver_mbps": recv[name],
                            "bottleneck_share_pct": pct(sender[name], p["bw"] / 1e6),
                            "retransmits": f.retransmits})
    definitions = {
        "sender_mbps": "sender_bytes x 8 / the length of the traffic window: the connection's throughput at the "
                       "sender (the paper's 'at the sender'), over the same time for both connections",
        "receiver_mbps": "iperf3 receiver goodput (end.sum_received)",
        "sender_bytes": "growth of bytes_acked of the connection's sockets at the sender (ss, 10 Hz), summed over "
                        "an MPTCP connection's subflows, over the traffic window",
        "subflows.mbps": "each socket's own rate, from its first to its last sample in the window (a subflow that "
                         "joins late is averaged over its own life)",
        "ratio": "MPTCP sender_mbps / TCP sender_mbps = the ratio of their bytes acked over the same window "
                 "(Tables 2 and 3)",
        "bottleneck_forward_mbps": "bytes the bottleneck bridge sent towards the receivers (frames)",
        "delay": "one-way, applied in both directions of the path's delay link (RTT = 2 x delay)",
        "sender_counters": SENDER_COUNTERS_DEFINITION}
    if not span.whole:
        definitions["receiver_mbps"] = definitions["retransmits"] = WINDOWED_FLOW_DEFINITION
        definitions["sender_mbps"] = definitions["sender_mbps"].replace("the traffic window", "the window")
    definitions.update(window_definitions(span, whole_run=(
        "mptcp.negotiated, mptcp.subflows_established_per_link and mptcp.client_counters (the run's MPTcpExt "
        "counters and `ip mptcp monitor` events)", "sender_counters", "parameters")))
    out = {
        "scenario": "shared-bottleneck",
        "parameters": {"case": case["case"], "delay1": format_delay(d1), "delay2": format_delay(d2),
                       "delay1_ms": d1 / 1000, "delay2_ms": d2 / 1000, "rtt1_ms": 2 * d1 / 1000,
                       "rtt2_ms": 2 * d2 / 1000, "bottleneck_mbps": p["bw"] / 1e6, "queue": str(p["queue"]),
                       "cc": p["cc"], "tcp_cc": p["tcp_cc"], "duration_s": p["duration"],
                       "socket_buffers": dict(data.plan.endpoints[p["mptcp_client"]].sysctls)},
        "table": case["table"], "column": case["column"],
        "ratio": ratio, "ratio_receiver": ratio_recv,
        "connections": connections,
        "mptcp_mbps": sender["mptcp"], "tcp_mbps": sender["tcp"],
        "subflows": subs,
        "bottleneck_forward_mbps": bn_fwd,
        "paper_column": paper_col,
        "paper_table": table,
        "flows": [f.to_json() for f in flows.values()],
        "mptcp": verdict,
        "sender_counters": sender_counters(data.nstat, [p["mptcp_client"], p["tcp_client"]], congestion_by_host(
            [(p["mptcp_client"], p["cc"]), (p["tcp_client"], p["tcp_cc"])])),
        "valid": not reasons, "invalid_reasons": reasons,
        "definitions": definitions,
    }
    if span.window is not None:
        out["window"] = span.to_json()
    return foreign_check(out, data, span.bounds)


def _mbps(v: float | None) -> str:
    """A rate of the summary with its unit, or `-` when the record (or the window) has none."""
    return "-" if v is None else f"{v} Mbit/s"


def _rmem_max(buffers: Mapping[str, str]) -> str:
    """The receive buffer's maximum the run set, as ctl prints byte counts: `32 MiB (33,554,432 B)`."""
    last = str(buffers.get("net.ipv4.tcp_rmem", "")).split()[-1:]
    return format_bytes(int(last[0])) if last and last[0].isdigit() else "-"


def render(s: dict) -> str:
    par = s["parameters"]
    title = (f"shared-bottleneck  case {par['case']}  delay path1 {par['delay1']} / path2 {par['delay2']}  "
             f"bottleneck {par['bottleneck_mbps']:g} Mbit/s, queue {par['queue']}  {par['duration_s']:g} s"
             + window_title(s))
    rows = [[c["connection"], c["cc"], c["paths"], c["sender_mbps"], c["receiver_mbps"], c["bottleneck_share_pct"],
             c["retransmits"]] for c in s["connections"]]
    out = [format_table(["connection", "cc", "paths", "sender Mbit/s", "recv Mbit/s", "% of bottleneck", "retrans"],
                        rows, title=title)]
    srows = [[x["subflow"], x["link"], x["mbps"], x["bytes"], "initial" if x.get("initial") else "joined"]
             for x in s["subflows"]]
    out.append(format_table(["MPTCP subflow (sender)", "path", "Mbit/s", "bytes acked", "kind"], srows))
    # The paper's table, this run's cell next to the paper's values of the same column.
    out.append(format_table([f"{s['table']}: MPTCP / TCP", s["column"]], s["paper_table"]["rows"]))
    m = s["mptcp"]
    out.append(f"MPTCP negotiated: {'yes' if m['negotiated'] else 'NO'}; subflows per path: "
               + ", ".join(f"{k} {v}" for k, v in m["subflows_established_per_link"].items())
               + f"; bottleneck carried {_mbps(s['bottleneck_forward_mbps'])}; socket buffers max "
               + _rmem_max(par["socket_buffers"]))
    if s.get("sender_counters"):
        out.append(sender_counters_line(s["sender_counters"]))
    if foreign_line(s):
        out.append(foreign_line(s))
    if not s["valid"]:
        out.append("RESULT INVALID: " + "; ".join(s["invalid_reasons"]))
    return "\n\n".join(out)


def figures(data: Any, summary: dict, out_dir: Path, output: plots.Output | None = None) -> list[str]:
    par = summary["parameters"]
    p1 = series.throughput(
        data, Path(out_dir) / "throughput.png",
        f"shared-bottleneck: one-way delay path 1 {par['delay1']}, path 2 {par['delay2']}; MPTCP / TCP "
        f"{summary['ratio']}", mptcp_flows=["mptcp"], only={s["subflow"] for s in summary["subflows"]},
        flow_capacity={"bottleneck": par["bottleneck_mbps"] * 1e6}, output=output)
    p2 = ratio_figure(Path(out_dir) / "ratio.png", summary, output,
                      plots.run_caption((output or plots.DEFAULT).run_id or Path(data.record_dir).name, data.window[0]))
    return [p1.name, p2.name]


def ratio_figure(path: Path, s: dict, output: plots.Output | None = None, caption: str | None = None) -> Path:
    """Fig. 5/6 style: sender throughput of MPTCP (stacked by subflow) and TCP; beside it the
    ratio of this run with the paper's ratios of the same delay column, each algorithm in its
    colour (controller.palette), the paper's bars hatched."""
    plt = plots.pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.4), gridspec_kw={"width_ratios": [1, 1.4]},
                                   layout="constrained")
    par = s["parameters"]
    mp, tcp = palette.algorithm_style(par["cc"]), palette.algorithm_style(par["tcp_cc"])
    bottom = 0.0
    for i, sub in enumerate(s["subflows"]):
        ax1.bar(["MPTCP"], [sub["mbps"] or 0.0], bottom=bottom, color=mp.color, edgecolor="black", lw=0.6,
                hatch=("", "//", "..", "xx")[i % 4], label=f"MPTCP ({mp.name}) subflow via {sub['link']}")
        bottom += sub["mbps"] or 0.0
    ax1.bar(["TCP"], [s["tcp_mbps"] or 0.0], color=tcp.color, edgecolor="black", lw=0.6, label=f"TCP ({tcp.name})")
    plots.capacity_line(ax1, par["bottleneck_mbps"] * 1e6, "bottleneck")
    ax1.set_ylabel("throughput at the sender (Mbit/s)")
    ax1.set_title(f"one-way delay {par['delay1']} / {par['delay2']}", fontsize=9)
    ax1.grid(axis="y", alpha=0.3)
    plots.legend(ax1, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=1)
    names = [f"{mp.name}\n(this run)"] + [f"{palette.algorithm_style(k).name}\n(paper)" for k in s["paper_column"]]
    vals = [s["ratio"] or 0.0] + list(s["paper_column"].values())
    styles = [mp] + [palette.algorithm_style(k) for k in s["paper_column"]]
    ax2.bar(names, vals, color=[st.color for st in styles], edgecolor="black", lw=0.6,
            hatch=[""] + ["//"] * len(s["paper_column"]))
    ax2.axhline(1.0, color="black", lw=0.8, ls="--")
    ax2.set_ylabel("MPTCP / TCP throughput at the sender")
    ax2.set_title(f"{s['table']}, column {s['column']} (hatched: the paper's values)", fontsize=9)
    ax2.tick_params(axis="x", labelsize=8)
    ax2.grid(axis="y", alpha=0.3)
    plots.titled(fig, "shared-bottleneck (MCubic paper Fig. 5/6, Tables 2/3)", caption)
    return plots.save(fig, path, output)


SCENARIO = Scenario(
    name="shared-bottleneck",
    title="MPTCP and one TCP flow across one shared bottleneck (MCubic paper Fig. 4-6, Tables 2-3)",
    reference="Ro, Ryu, Choe: Design and Implementation of MCubic, section 4.2.2; docs/experiments.md section 2",
    description=__doc__ or "",
    params=PARAMS,
    plan=plan,
    summarize=summarize,
    render=render,
    figures=figures,
    distinct=(("path1", "path2", "bottleneck"), ("mptcp_client", "mptcp_server", "tcp_client", "tcp_server")),
)
