"""distinct-bottleneck: MCubic paper, Fig. 2 and Table 1 (docs/experiments.md section 1).

One MPTCP connection whose two subflows take path 1 and path 2, and one single-path TCP
flow on each path, all started together: each bottleneck is shared by one subflow and one
TCP flow. Link 1 is 100 Mbit/s, link 2 is varied (`--link2 10M|20M|30M|40M|50M`).

The paper states no delay for these paths, so by default ctl adds none (`--delay 0`: the
rack's own round trip). `--delay D` adds a one-way delay D on each link, in both directions,
after its queue (dummynet's order: queue, rate, delay line), so every flow's RTT grows by
2 x D; ctl then raises the socket buffers of the four hosts to what both paths can hold
(maximum = 2 x (BDP of link 1 + BDP of link 2 at that RTT + two queues)), records them in
the plan and restores them. A deviation experiment (controller/reproduce/hypotheses.py,
mcubic-t1-path-delay) uses it; `--delay 0` plans exactly what ctl planned before it existed.

Roles (hosts are parameters, defaults fit both shipped inventories): the MPTCP client
and server are dual-homed endpoints on both links; the TCP flows run between a second
dual-homed pair, one over each link's addresses.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from bridges.base import Direction, PipeConfig
from controller import plots
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
    jain_index,
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
    address_on,
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
    tcp_buffer_sysctls,
    window_need,
)
from controller.traffic.iperf3 import FlowSpec
from nodes.mptcp import EndpointConfig, MptcpEndpoint

PARAMS = (
    Param("link1", "rate", "100M", "bandwidth of link 1 (each direction)", min="1k", max="10G"),
    Param("link2", "rate", "20M", "bandwidth of link 2 (paper: 10 Mbit/s, 20 Mbit/s, 30 or 40 Mbit/s, 50 Mbit/s)",
          min="1k", max="10G"),
    queue_param("50"),
    Param("delay", "delay", "0", "one-way delay added on each link, in both directions (the RTT grows by twice "
          "it; the paper's section 4.2.1 states none: 0 adds nothing, the rack's own RTT)", min="0", max="5s"),
    cc_param(),
    cc_param("tcp_cc", "cubic", "congestion control of the single-path TCP flows"),
    link_param("path1", "path1", "inventory link used as path 1"),
    link_param("path2", "path2", "inventory link used as path 2"),
    role_param("mptcp_client", "a1", "MPTCP sender (dual-homed endpoint)"),
    role_param("mptcp_server", "b1", "MPTCP receiver (dual-homed endpoint)"),
    role_param("tcp_client", "a2", "single-path TCP sender (on both paths)"),
    role_param("tcp_server", "b2", "single-path TCP receiver (on both paths)"),
    port_base_param(),
)


def plan(p: Mapping[str, Any], inv: Inventory) -> RunPlan:
    l1, l2 = p["path1"], p["path2"]
    for l in (l1, l2):
        require_link(inv, l, "distinct-bottleneck")
    for role in ("mptcp_client", "mptcp_server", "tcp_client", "tcp_server"):
        require_host(inv, p[role], Role.ENDPOINT, f"--{role.replace('_', '-')}")
    mc, ms, tc, ts = p["mptcp_client"], p["mptcp_server"], p["tcp_client"], p["tcp_server"]
    mc1, _ = address_on(inv, mc, l1, "MPTCP client")
    address_on(inv, mc, l2, "MPTCP client")
    ms1, _ = address_on(inv, ms, l1, "MPTCP server")
    ms2, ms2_if = address_on(inv, ms, l2, "MPTCP server")
    port = p["port_base"]
    duration = p["duration"]
    flows = [
        FlowSpec("mptcp", "mptcp", mc, ms, ms1, port, client_addr=mc1, cc=p["cc"], duration_s=duration),
        FlowSpec(f"tcp-{l1}", "tcp", tc, ts, address_on(inv, ts, l1, "TCP server")[0], port + 1,
                 client_addr=address_on(inv, tc, l1, "TCP client")[0], cc=p["tcp_cc"], duration_s=duration,
                 link=l1),
        FlowSpec(f"tcp-{l2}", "tcp", tc, ts, address_on(inv, ts, l2, "TCP server")[0], port + 2,
                 client_addr=address_on(inv, tc, l2, "TCP client")[0], cc=p["tcp_cc"], duration_s=duration,
                 link=l2),
    ]
    delay = p["delay"]
    links = {}
    for lname, bw in ((l1, p["link1"]), (l2, p["link2"])):
        for d in Direction:
            links[(lname, d)] = PipeConfig(bw_bps=bw, queue=p["queue"], delay_us=delay)
    ccs = {p["cc"], p["tcp_cc"]}
    # An added delay needs socket buffers of the paths' BDP (the MPTCP connection's buffer holds
    # both subflows'); without one nothing changes on the hosts, as before --delay existed.
    rtt = 2 * delay
    need = window_need(p["link1"], rtt, p["queue"]) + window_need(p["link2"], rtt, p["queue"])
    buffers = tcp_buffer_sysctls(need) if delay else {}
    client_sysctls = {**buffers, **mptcp_long_path_sysctls(rtt)}
    endpoints = {
        # Exactly one subflow per path: the server announces its path-2 address, the client
        # accepts it; no `subflow` endpoints (both at once would make a third subflow).
        mc: EndpointConfig(subflows=2, add_addr_accepted=2, congestion_controls=frozenset(ccs),
                           sysctls=client_sysctls, optional_sysctls=frozenset(LONG_PATH_KEYS if delay else ())),
        ms: EndpointConfig(subflows=2, add_addr_accepted=2,
                           endpoints=(MptcpEndpoint(ms2, ms2_if, ("signal",)),), sysctls=buffers),
    }
    if tc not in endpoints:
        endpoints[tc] = EndpointConfig(mptcp=False, congestion_controls=frozenset({p["tcp_cc"]}), sysctls=buffers)
    if delay:
        endpoints.setdefault(ts, EndpointConfig(mptcp=False, sysctls=buffers))
    notes, conversions = [], []
    if delay:
        notes.append(f"delay: {delay / 1000:g} ms one way on {l1} and {l2} (RTT + {rtt / 1000:g} ms); socket "
                     f"buffers: tcp_rmem/tcp_wmem max {buffers['net.ipv4.tcp_rmem'].split()[-1]} bytes on "
                     f"{', '.join(sorted(endpoints))} (need {need} bytes: BDP of both links x {rtt / 1000:g} ms + "
                     "their queues)")
        conversions = [buffer_conversion(sorted(endpoints), buffers, need), *long_path_conversions(mc, rtt)]
    sample: dict[str, list[str]] = {}
    for h in {mc, ms, tc, ts}:
        sample[h] = [i.name for i in inv.hosts[h].interfaces if i.link in (l1, l2)]
    for l in (l1, l2):
        link = inv.links[l]
        sample.setdefault(link.bridge, []).extend([link.a_port, link.b_port])
    return RunPlan(links=links, endpoints=endpoints, flows=flows, sample_ifaces=sample, duration_s=duration,
                   notes=notes, mptcp_hosts=sorted({mc, ms}), conversions=conversions)


def summarize(data: Any, window: TrafficWindow | None = None) -> dict:
    """The run's summary over its traffic window, or over `window` of it (`ctl runs show
    --window`): then every number is over the window except those `definitions.window` names."""
    p = data.params
    span = Span.of(data.window, window)
    l1, l2 = p["path1"], p["path2"]
    flows = {r.spec.name: flow_over(r, data.points, span) for r in data.flows}
    mptcp_run = next(r for r in data.flows if r.spec.name == "mptcp")
    subs = subflow_throughput(data.points, "mptcp", span.bounds, role="client",
                              data_ports=data_local_ports(mptcp_run), slack_s=span.slack(0.5))
    run_subs = subs if span.whole else subflow_throughput(
        data.points, "mptcp", Span.of(data.window).bounds, role="client", data_ports=data_local_ports(mptcp_run),
        slack_s=Span.of(data.window).slack(0.5))
    links = link_throughput(data.points, data.inventory, span.bounds)
    # "Carried data": at least 1 % of what the slower link can carry in the run (>= 64 KiB),
    # or in the window.
    seconds = p["duration"] if span.whole else span.seconds
    min_bytes = max(64 * 1024, int(min(p["link1"], p["link2"]) * seconds / 8 * 0.01))
    verdict = mptcp_verdict(data.inventory, "mptcp", p["mptcp_client"], p["mptcp_server"], data.nstat,
                            data.monitor, subs, [l1, l2], min_bytes=min_bytes, run_subflows=run_subs)
    names = ["mptcp", f"tcp-{l1}", f"tcp-{l2}"]
    thr = [flows[n].receiver_bps for n in names]
    jain = jain_index([t for t in thr if t is not None]) if all(t is not None for t in thr) else None
    per_link_flows = {}
    for l in (l1, l2):
        sub_mbps = sum(s["mbps"] or 0 for s in subs if s["link"] == l)
        tcp = flows[f"tcp-{l}"].receiver_bps
        per_link_flows[l] = {"mptcp_subflow_mbps": round(sub_mbps, 3),
                             "tcp_mbps": round(tcp / 1e6, 3) if tcp else None,
                             "flows_total_mbps": round(sub_mbps + (tcp or 0) / 1e6, 3),
                             "bridge_forward_mbps": (links.get(l) or {}).get("forward_mbps"),
                             "capacity_mbps": round(p["link1" if l == l1 else "link2"] / 1e6, 3)}
    reasons = list(verdict["problems"])
    for f in flows.values():
        if f.error:
            reasons.append(f"{f.name}: {f.error}")
    definitions = {"flow": "iperf3 receiver goodput (end.sum_received)",
                   "subflow": "growth of bytes_acked on the sender (ss, 10 Hz) over the traffic window",
                   "link": "bytes sent by the bridge's b port (forward) over the traffic window",
                   "jain_index": "(sum x)^2 / (n sum x^2) over the flows' receiver goodput",
                   "sender_counters": SENDER_COUNTERS_DEFINITION}
    if not span.whole:
        definitions["flow"] = WINDOWED_FLOW_DEFINITION
        for k in ("subflow", "link"):
            definitions[k] = definitions[k].replace("the traffic window", "the window")
    definitions.update(window_definitions(span, whole_run=(
        "mptcp.negotiated, mptcp.subflows_established_per_link and mptcp.client_counters (the run's MPTcpExt "
        "counters and `ip mptcp monitor` events)", "sender_counters", "parameters")))
    out = {
        "scenario": "distinct-bottleneck",
        "parameters": {"link1_mbps": p["link1"] / 1e6, "link2_mbps": p["link2"] / 1e6, "cc": p["cc"],
                       "tcp_cc": p["tcp_cc"], "queue": str(p["queue"]), "duration_s": p["duration"],
                       "delay_ms": (p.get("delay") or 0) / 1000},
        "flows": [f.to_json() for f in flows.values()],
        "subflows": subs,
        "links": per_link_flows,
        "jain_index": round(jain, 4) if jain is not None else None,
        "jain_over": names,
        "mptcp": verdict,
        "sender_counters": sender_counters(data.nstat, [p["mptcp_client"], p["tcp_client"]], congestion_by_host(
            [(p["mptcp_client"], p["cc"]), (p["tcp_client"], p["tcp_cc"])])),
        "valid": not reasons,
        "invalid_reasons": reasons,
        "definitions": definitions,
    }
    if span.window is not None:
        out["window"] = span.to_json()
    return foreign_check(out, data, span.bounds)


def render(s: dict) -> str:
    rows = [[f["name"], f["protocol"], f["link"] or "both", f["congestion"] or "", f["receiver_mbps"],
             f["sender_mbps"], f["retransmits"]] for f in s["flows"]]
    out = [format_table(["flow", "proto", "link", "cc", "recv Mbit/s", "sent Mbit/s", "retrans"], rows,
                        title=f"distinct-bottleneck  link1 {s['parameters']['link1_mbps']:g} Mbit/s  "
                              f"link2 {s['parameters']['link2_mbps']:g} Mbit/s  {s['parameters']['duration_s']:g} s"
                              + window_title(s))]
    srows = [[x["subflow"], x["link"], x["mbps"], x["bytes"], "initial" if x.get("initial") else "joined"]
             for x in s["subflows"]]
    out.append(format_table(["MPTCP subflow", "link", "Mbit/s", "bytes", "kind"], srows))
    lrows = [[l, v["capacity_mbps"], v["mptcp_subflow_mbps"], v["tcp_mbps"], v["flows_total_mbps"],
              v["bridge_forward_mbps"]] for l, v in s["links"].items()]
    out.append(format_table(["link", "capacity Mbit/s", "MPTCP sub Mbit/s", "TCP Mbit/s", "flows total Mbit/s",
                             "at bridge Mbit/s"], lrows))
    m = s["mptcp"]
    out.append(f"Jain's fairness index over {', '.join(s['jain_over'])}: "
               f"{s['jain_index'] if s['jain_index'] is not None else '-'}")
    out.append(f"MPTCP negotiated: {'yes' if m['negotiated'] else 'NO'}; subflows per link: "
               + ", ".join(f"{k} {v}" for k, v in m["subflows_established_per_link"].items()))
    if s.get("sender_counters"):
        out.append(sender_counters_line(s["sender_counters"]))
    if foreign_line(s):
        out.append(foreign_line(s))
    if not s["valid"]:
        out.append("RESULT INVALID: " + "; ".join(s["invalid_reasons"]))
    return "\n\n".join(out)


def figures(data: Any, summary: dict, out_dir: Path, output: plots.Output | None = None) -> list[str]:
    par = summary["parameters"]
    path = series.throughput(
        data, Path(out_dir) / "throughput.png",
        f"distinct-bottleneck: link 1 {par['link1_mbps']:g} Mbit/s, link 2 {par['link2_mbps']:g} Mbit/s; "
        f"Jain's index {summary['jain_index']}", mptcp_flows=["mptcp"],
        only={s["subflow"] for s in summary["subflows"]}, output=output)
    return [path.name]


SCENARIO = Scenario(
    name="distinct-bottleneck",
    title="MPTCP vs one TCP flow per path, separate bottlenecks (MCubic paper Fig. 2, Table 1)",
    reference="Ro, Ryu, Choe: Design and Implementation of MCubic, section 4.2.1; docs/experiments.md section 1",
    description=__doc__ or "",
    params=PARAMS,
    plan=plan,
    summarize=summarize,
    render=render,
    figures=figures,
    distinct=(("path1", "path2"), ("mptcp_client", "mptcp_server", "tcp_client", "tcp_server")),
)
