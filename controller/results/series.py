"""Time series of a run for its figures (pure): what each flow, subflow and link carried, named
for a reader and coloured by controller.palette.

- A flow's rate is what its sender's sockets had acknowledged (`ss` bytes_acked, 10 Hz, summed
  over the flow's sockets): the bytes the network delivered. iperf3's own 0.5 s intervals at the
  sender count what the application wrote into its socket buffer, which at long RTTs fills in
  one burst per round trip (a 0 <-> 20 Mbit/s square wave at 200 ms); they are used only for a
  flow `ss` did not sample, placed at the client's start.
- Every panel averages over the same window, a whole number of 0.5 s steps covering at least two
  round trips (plots.aligned_window), the RTT being the median `ss` RTT of the flows' senders
  (queueing included), else the planned one.
- Legends name a flow by its name and congestion control, a subflow by its flow and path
  (numbered when a path carries several), a link by its name and bridge: never an address or an
  ephemeral port. A link's capacity is its planned forward rate.
"""
from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from controller import plots
from controller.palette import Style, algorithm_style, role_style
from controller.plots import Series
from controller.results.summary import flow_throughput

_LINESTYLES = ("-", "--", ":", "-.")
_LINK_COLOURS = ("#000000", "#777777", "#BBBBBB", "#444444")


def flow_label(flow: str) -> str:
    return flow.upper() if flow.lower() in ("tcp", "mptcp") else flow


def _client_points(points: Iterable[Any], flows: Sequence[str], window: tuple[float, float]) -> list[Any]:
    lo, hi = int((window[0] - 1) * 1e9), int((window[1] + 1) * 1e9)
    return [p for p in points if p.measurement == "subflow" and p.tags.get("role") == "client"
            and p.tags.get("flow") in flows and lo <= p.time_ns <= hi]


def flow_algorithms(points: Iterable[Any], flows: Sequence[Any]) -> dict[str, str | None]:
    """Each flow's congestion control: the one `ss` saw on the sender's sockets that carried its
    data (weighted by their acked rate: iperf3's control connection runs the host's default and
    carries nothing), else what its spec asked for, else None (the host's default, unknown here)."""
    carried: dict[str, Counter] = {}
    names = [f.name for f in flows]
    for p in points:
        if p.measurement == "subflow" and p.tags.get("role") == "client" and p.tags.get("flow") in names \
                and p.fields.get("cc") and isinstance(p.fields.get("acked_bps"), (int, float)):
            carried.setdefault(p.tags["flow"], Counter())[str(p.fields["cc"])] += float(p.fields["acked_bps"])
    out: dict[str, str | None] = {}
    for f in flows:
        best = carried.get(f.name, Counter()).most_common(1)
        out[f.name] = best[0][0] if best and best[0][1] > 0 else f.cc
    return out


def flow_style(flow: str, protocol: str, cc: str | None) -> Style:
    return algorithm_style(cc) if cc else role_style(protocol)


def _name(flow: str, cc: str | None) -> str:
    return f"{flow_label(flow)} ({algorithm_style(cc).name})" if cc else flow_label(flow)


def _linestyles(styles: Sequence[Style]) -> list[str]:
    """Series of one colour get different line styles (two flows of the same algorithm)."""
    used: Counter = Counter()
    out = []
    for s in styles:
        out.append(_LINESTYLES[used[s.color] % len(_LINESTYLES)])
        used[s.color] += 1
    return out


def flow_series(points: Sequence[Any], flows: Sequence[Any], window: tuple[float, float]) -> list[Series]:
    """Per flow (FlowSpec-likes with name, protocol, cc): the sum over its sender's sockets of the
    rate of bytes acked, one point per `ss` sample."""
    ccs = flow_algorithms(points, flows)
    out: list[tuple[str, list[tuple[float, float]], Style]] = []
    for f in flows:
        by_t: dict[int, float] = {}
        for p in _client_points(points, [f.name], window):
            if "acked_bps" in p.fields:
                by_t[p.time_ns] = by_t.get(p.time_ns, 0.0) + float(p.fields["acked_bps"])
        if by_t:
            out.append((_name(f.name, ccs[f.name]), [(t / 1e9, v) for t, v in sorted(by_t.items())],
                        flow_style(f.name, str(f.protocol), ccs[f.name])))
    return [Series(n, pts, st, ls) for (n, pts, st), ls in zip(out, _linestyles([o[2] for o in out]), strict=True)]


def interval_series(runs: Sequence[Any], flow_throughputs: Mapping[str, Any], points: Sequence[Any],
                    flows_with_ss: set[str]) -> list[Series]:
    """iperf3's intervals (bit/s at the sender) for the flows `ss` did not sample, placed at their
    test's start as the flow's run estimates it (epoch s; see `flow_points`)."""
    specs = [r.spec for r in runs if r.spec.name not in flows_with_ss]
    ccs = flow_algorithms(points, specs)
    out = []
    for r in runs:
        name = r.spec.name
        if name in flows_with_ss or not r.client_started or name not in flow_throughputs:
            continue
        ivs = flow_throughputs[name].intervals
        t0 = r.test_start(max((e for _s, e, _b in ivs), default=None))
        out.append((_name(name, ccs.get(name)), [(t0 + (s + e) / 2, b) for s, e, b in ivs],
                    flow_style(name, str(r.spec.protocol), ccs.get(name))))
    return [Series(n, pts, st, ls) for (n, pts, st), ls in zip(out, _linestyles([o[2] for o in out]), strict=True)]


def subflow_series(points: Sequence[Any], flows: Sequence[Any], window: tuple[float, float],
                   only: set[str] | None = None) -> list[Series]:
    """Per socket of the given flows (MPTCP subflows; `only`: these socket ids), named by flow and
    path, in the colour of its flow's algorithm and a line style per path."""
    ccs = flow_algorithms(points, flows)
    protos = {f.name: str(f.protocol) for f in flows}
    socks: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for p in _client_points(points, [f.name for f in flows], window):
        if "acked_bps" not in p.fields or (only is not None and p.tags.get("subflow") not in only):
            continue
        key = (p.tags["flow"], p.tags.get("link") or "?", p.tags.get("subflow", ""))
        socks.setdefault(key, []).append((p.time_ns / 1e9, float(p.fields["acked_bps"])))
    links = sorted({k[1] for k in socks})
    per_path: Counter = Counter(k[:2] for k in socks)
    numbered: Counter = Counter()
    out = []
    for key in sorted(socks, key=lambda k: (k[0], k[1], min(t for t, _ in socks[k]))):
        flow, link, _sub = key
        numbered[(flow, link)] += 1
        n = f" #{numbered[(flow, link)]}" if per_path[(flow, link)] > 1 else ""
        out.append(Series(f"{flow_label(flow)} subflow via {link}{n}", sorted(socks[key]),
                          flow_style(flow, protos.get(flow, flow), ccs.get(flow)),
                          _LINESTYLES[links.index(link) % len(_LINESTYLES)]))
    return out


def link_series(points: Sequence[Any], inv: Any, plan: Any, window: tuple[float, float]
                ) -> tuple[list[Series], dict[str, float]]:
    """Forward (a -> b) rate of each link from its bridge's b-port transmit counter, and each
    link's planned forward capacity (bit/s) where the plan shapes it."""
    lo, hi = window[0] - 1, window[1] + 1
    pts: dict[str, list[tuple[float, float]]] = {}
    for p in points:
        if p.measurement != "iface" or "tx_bps" not in p.fields:
            continue
        link = p.tags.get("link")
        if not link or link not in inv.links:
            continue
        ln = inv.links[link]
        if p.tags.get("host") != ln.bridge or p.tags.get("iface") != ln.b_port:
            continue
        t = p.time_ns / 1e9
        if lo <= t <= hi:
            pts.setdefault(link, []).append((t, float(p.fields["tx_bps"])))
    series, caps = [], {}
    for i, link in enumerate(sorted(pts)):
        name = f"link {link} (bridge {inv.links[link].bridge})"
        series.append(Series(name, sorted(pts[link]), Style(_LINK_COLOURS[i % len(_LINK_COLOURS)], "", "", name),
                             _LINESTYLES[i // len(_LINK_COLOURS) % len(_LINESTYLES)]))
        pipe = _pipe(plan, link, "forward")
        if pipe is not None and pipe.bw_bps:
            caps[f"link {link}"] = float(pipe.bw_bps)
    return series, caps


def _pipe(plan: Any, link: str, direction: str) -> Any:
    """The plan's pipe of `link` in `direction` ("forward": a -> b, "reverse"), or None."""
    for (name, d), pipe in (plan.links.items() if plan is not None else ()):
        if name == link and getattr(d, "value", d) == direction:
            return pipe
    return None


def median_rtt_s(points: Sequence[Any], flows: Sequence[str], window: tuple[float, float]) -> float | None:
    """The median smoothed RTT `ss` reported for the flows' senders over the window (s)."""
    rtts = [float(p.fields["rtt_ms"]) for p in _client_points(points, flows, window)
            if isinstance(p.fields.get("rtt_ms"), (int, float)) and p.fields.get("acked_bps")]
    return statistics.median(rtts) / 1e3 if rtts else None


def planned_rtt_s(plan: Any, links: Sequence[str]) -> float | None:
    """The largest forward + reverse delay the plan sets on the given links (s)."""
    best = None
    for link in links:
        f, r = _pipe(plan, link, "forward"), _pipe(plan, link, "reverse")
        d = ((f.delay_us if f else 0) + (r.delay_us if r else 0)) / 1e6
        if d and (best is None or d > best):
            best = d
    return best


def throughput(data: Any, path: Path, title: str, *, mptcp_flows: Sequence[str] = (), only: set[str] | None = None,
               flow_capacity: Mapping[str, float] | None = None, output: plots.Output | None = None) -> Path:
    """A run's rates over time (plots.throughput_figure) from its RunData: flows, the subflows of
    `mptcp_flows` (`only`: these sockets), links with their capacities, one window for all."""
    specs = [r.spec for r in data.flows]
    fs = flow_series(data.points, specs, data.window)
    sampled = {p.tags.get("flow") for p in _client_points(data.points, [f.name for f in specs], data.window)
               if "acked_bps" in p.fields}
    ivs = interval_series(data.flows, {r.spec.name: flow_throughput(r) for r in data.flows
                                       if r.spec.name not in sampled}, data.points, sampled)
    subs = subflow_series(data.points, [f for f in specs if f.name in mptcp_flows], data.window, only)
    links, caps = link_series(data.points, data.inventory, data.plan, data.window)
    rtt = median_rtt_s(data.points, [f.name for f in specs], data.window)
    how = "median RTT the senders' ss saw"
    if rtt is None:
        rtt, how = planned_rtt_s(data.plan, [k[0] for k in data.plan.links]), "planned RTT"
    w = plots.aligned_window(rtt)
    note = f"mean over {w:g} s" + (f" (at least 2 x the {how}, {rtt * 1e3:.0f} ms)" if rtt else "")
    source = ("bytes acked at the sender (ss)" if not ivs else "iperf3 intervals at the sender" if not fs
              else "bytes acked (ss), iperf3 intervals where ss has none")
    out = output or plots.DEFAULT
    caption = plots.run_caption(out.run_id or Path(data.record_dir).name, data.window[0])
    return plots.throughput_figure(path, title, data.window[0], fs + ivs, subs, links, window_s=w, window_note=note,
                                   flow_source=source, flow_capacity=flow_capacity, link_capacity=caps,
                                   caption=caption, output=out)
