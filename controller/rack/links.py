"""Link operations on any rack: set a link's shaping, reset it, show it, measure it end to end.

`set` changes the pipes of one link (both directions unless told otherwise) through its
bridge's driver, verifies the read-back, and logs before/after to the state dir. Fields
not given keep their current value. The change stays until the next `set` or `reset` (a
run restores to whatever it found, so a `set` is the state runs return to, and a
campaign's health check, which expects the inventory's baseline, pauses on it).

`reset` returns links to the inventory's baseline (`links.<name>.baseline`; unshaped
when the link has none), through the same driver path, verified and logged the same way.

`measure` calibrates a link from its endpoints: RTT and jitter by ping, throughput by one
iperf3 TCP flow, loss by a counted UDP stream below the link's rate, each next to the
configured value, so a researcher can check a link before a campaign.
"""
from __future__ import annotations

import asyncio
import json
import math
import time
from dataclasses import dataclass
from typing import Any

from bridges.base import Direction, PipeConfig, PipeKey, apply, read_state, shaper_class
from controller.commands import Command
from controller.errors import ParameterError, ScenarioError, TrafficError
from controller.inventory import Inventory
from controller.parsers import iperf3, ping
from controller.settings import state_dir
from controller.ssh import CommandLog, SSHPool
from controller.traffic.iperf3 import FlowSpec, TrafficRunner, iperf3_supports_mptcp
from controller.traffic.progress import StepNote
from controller.units import format_delay, format_probability, format_rate


def directions(which: str) -> list[Direction]:
    if which == "both":
        return list(Direction)
    try:
        return [Direction(which)]
    except ValueError:
        raise ParameterError(f"--dir: {which!r} is not forward, reverse or both") from None


def _shaper(inv: Inventory, link: str):
    if link not in inv.links:
        raise ScenarioError(f"unknown link {link!r} (links: {', '.join(sorted(inv.links)) or 'none'})")
    bridge = inv.links[link].bridge
    return bridge, shaper_class(inv.hosts[bridge].shaper.kind)(inv, bridge)  # type: ignore[union-attr]


def check_set(inv: Inventory, link: str, dirs: list[Direction], bw: str | None, delay: str | None,
              plr: str | None, queue: str | None, aqm: str | None = None) -> None:
    """Everything that can be refused before connecting: values, units, what the back-end can do."""
    if bw is None and delay is None and plr is None and queue is None and aqm is None:
        raise ParameterError("link set: nothing to change (give --bw, --delay, --loss, --queue and/or --red)")
    _bridge, shaper = _shaper(inv, link)
    probe = PipeConfig.from_args(bw, delay, plr, queue, aqm=aqm)
    shaper.validate({(link, d): probe for d in dirs})


async def link_set(inv: Inventory, link: str, dirs: list[Direction], bw: str | None, delay: str | None,
                   plr: str | None, queue: str | None, aqm: str | None = None) -> dict:
    bridge, shaper = _shaper(inv, link)
    log = CommandLog()
    pool = SSHPool(inv, log, [bridge])
    try:
        session = pool[bridge]
        before = await read_state(shaper, session)
        desired: dict[PipeKey, PipeConfig] = {}
        for d in dirs:
            base = before.pipes.get((link, d)) or PipeConfig()
            desired[(link, d)] = PipeConfig.from_args(bw, delay, plr, queue, base=base, aqm=aqm)
        _b, after = await apply(shaper, session, desired, before)
    finally:
        await pool.close()
    entry = _change_entry("set", inv, [link], bridge, shaper.kind, dirs, before, after, log)
    _log_change(entry)
    return entry


def _change_entry(action: str, inv: Inventory, links: list[str], bridge: str, kind: str, dirs: list[Direction],
                  before: Any, after: Any, log: Any) -> dict:
    """One line of the state dir's link-changes.jsonl (`set` keeps its one-link form: `link`)."""
    def pipes(st: Any) -> dict:
        return {f"{k[0]}.{k[1].value}": (v.to_json() if v else None) for k, v in st.pipes.items() if k[0] in links}
    entry: dict[str, Any] = {"t": time.time(), "action": action, "inventory": inv.name}
    entry.update({"link": links[0]} if len(links) == 1 else {"links": links})
    entry.update({"bridge": bridge, "kind": kind, "directions": [d.value for d in dirs],
                  "before": pipes(before), "after": pipes(after), "commands": [r.to_json() for r in log.entries]})
    return entry


def _log_change(entry: dict) -> None:
    path = state_dir() / "link-changes.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


# ---- reset -----------------------------------------------------------------------------

def baseline_config(inv: Inventory, link: str) -> PipeConfig:
    """The state a link returns to between runs: its inventory baseline, fields it does not
    set at their defaults (unlimited, no delay, no loss, the default queue)."""
    base = inv.links[link].baseline
    if base is None:
        return PipeConfig()
    return PipeConfig.from_args(base.bw, base.delay, base.plr, base.queue)


def reset_plan(inv: Inventory, links: list[str]) -> dict[str, dict[PipeKey, PipeConfig]]:
    """Per bridge, the baseline of every direction of the given links (pure; refuses an
    unknown link and what a back-end cannot do, before anything is touched)."""
    out: dict[str, dict[PipeKey, PipeConfig]] = {}
    for link in links:
        bridge, shaper = _shaper(inv, link)
        want = {(link, d): baseline_config(inv, link) for d in Direction}
        shaper.validate(want)
        out.setdefault(bridge, {}).update(want)
    return out


async def link_reset(inv: Inventory, links: list[str]) -> list[dict]:
    """Return `links` to the inventory baseline; one logged entry per bridge (read back, verified)."""
    plan = reset_plan(inv, links)
    log = CommandLog()
    pool = SSHPool(inv, log, list(plan))
    entries = []
    try:
        (await pool.connect_all()).raise_on_error()

        async def one(bridge: str) -> dict:
            shaper = shaper_class(inv.hosts[bridge].shaper.kind)(inv, bridge)  # type: ignore[union-attr]
            before, after = await apply(shaper, pool[bridge], plan[bridge])
            mine = sorted({k[0] for k in plan[bridge]})
            return _change_entry("reset", inv, mine, bridge, shaper.kind, list(Direction), before, after,
                                 _BridgeLog(log, bridge))
        entries = list(await asyncio.gather(*(one(b) for b in sorted(plan))))
    finally:
        await pool.close()
    for e in entries:
        _log_change(e)
    return entries


class _BridgeLog:
    """The commands of one bridge out of a shared CommandLog (for its link-changes entry)."""

    def __init__(self, log: CommandLog, host: str):
        self.entries = [r for r in log.entries if r.host == host]


def render_reset(entries: list[dict]) -> str:
    lines = []
    for e in entries:
        for key, cfg in sorted(e["after"].items()):
            was = e["before"].get(key)
            now = PipeConfig.from_json(cfg).describe() if cfg else "unshaped"
            before = PipeConfig.from_json(was).describe() if was else "unshaped"
            same = " (unchanged)" if was == cfg else f" (was {before})"
            lines.append(f"{key:<16} {e['bridge']:<7} {now}{same}")
    return "\n".join(lines)


async def link_show(inv: Inventory, links: list[str]) -> dict:
    by_bridge: dict[str, Any] = {}
    for l in links:
        bridge, shaper = _shaper(inv, l)
        by_bridge.setdefault(bridge, shaper)
    pool = SSHPool(inv, CommandLog(), list(by_bridge))
    out: dict[str, Any] = {}
    try:
        states = await asyncio.gather(*(read_state(s, pool[b]) for b, s in by_bridge.items()))
    finally:
        await pool.close()
    for (bridge, shaper), st in zip(by_bridge.items(), states):
        for l in links:
            if inv.links[l].bridge != bridge:
                continue
            out[l] = {"bridge": bridge, "kind": shaper.kind, "directions": {}}
            for d in Direction:
                cfg = st.pipes.get((l, d))
                out[l]["directions"][d.value] = {"shaped": cfg is not None,
                                                 "config": (cfg or PipeConfig()).to_json(),
                                                 "counters": st.counters.get((l, d), {})}
    return out


def render_show(data: dict) -> str:
    lines = [f"{'link':<8} {'dir':<8} {'bridge':<7} {'kind':<9} {'bw':>14} {'delay':>8} {'loss':>10} {'queue':>11}"
             f" {'tx pkts':>10} {'drops':>7} {'queue now/peak':>15}"]
    for l, v in data.items():
        for d, x in v["directions"].items():
            c = PipeConfig.from_json(x["config"])
            ctr = x["counters"]
            drops = ctr.get("drop_queue_pkts", 0) + ctr.get("drop_plr_pkts", 0) if ctr else None
            qp = f"{ctr.get('queue_pkts', '-')}/{ctr.get('queue_peak_pkts', '-')}" if ctr else "-"
            lines.append(f"{l:<8} {d:<8} {v['bridge']:<7} {v['kind']:<9} "
                         f"{format_rate(c.bw_bps) if x['shaped'] or c.bw_bps else 'unlimited':>14} "
                         f"{format_delay(c.delay_us):>8} {format_probability(c.plr):>10} {str(c.queue):>11} "
                         f"{ctr.get('tx_pkts', '-') if ctr else '-':>10} {drops if drops is not None else '-':>7} "
                         f"{qp:>15}")
            if c.red is not None:  # queue management on a line of its own, with what it did
                lines.append(f"{'':<8} {d:<8} {c.red.describe()} (thresholds in {'bytes' if c.queue.bytes else 'slots'})"
                             f": {ctr.get('marked_pkts', '-') if ctr else '-'} pkts marked CE, "
                             f"{ctr.get('red_drop_pkts', '-') if ctr else '-'} pkts dropped by RED")
    return "\n".join(lines)


# ---- measure ---------------------------------------------------------------------------

@dataclass
class MeasurePlan:
    client: str
    server: str
    client_addr: str
    server_addr: str


def measure_plan(inv: Inventory, link: str) -> MeasurePlan:
    if link not in inv.links:
        raise ScenarioError(f"unknown link {link!r}")
    a, b = inv.hosts_on(link, "a"), inv.hosts_on(link, "b")
    if not a or not b:
        raise ScenarioError(f"link {link}: needs an endpoint on each side to measure through it")
    ca = inv.interface_on(a[0], link).ip
    sb = inv.interface_on(b[0], link).ip
    assert ca and sb
    return MeasurePlan(a[0], b[0], ca, sb)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % confidence interval of a binomial proportion (Wilson score)."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


async def _wire_rate(session: Any, iface: str, start_s: float, end_s: float) -> float | None:
    """bit/s received on `iface` between start_s and end_s from now (two counter reads)."""
    cmd = Command(("cat", f"/sys/class/net/{iface}/statistics/rx_bytes"), timeout=10, note="wire rate")
    await asyncio.sleep(start_s)
    r0, t0 = await session.run(cmd), time.monotonic()
    await asyncio.sleep(max(0.5, end_s - start_s))
    r1, t1 = await session.run(cmd), time.monotonic()
    if not (r0.ok and r1.ok):
        return None
    return (int(r1.stdout) - int(r0.stdout)) * 8 / (t1 - t0)


async def link_measure(inv: Inventory, link: str, *, pings: int = 20, tcp_s: float = 8.0, udp_s: float = 5.0,
                       streams: int = 4, port: int = 5290, progress=lambda m: None) -> dict:
    mp = measure_plan(inv, link)
    shown = await link_show(inv, [link])
    fwd = PipeConfig.from_json(shown[link]["directions"]["forward"]["config"])
    rev = PipeConfig.from_json(shown[link]["directions"]["reverse"]["config"])
    log = CommandLog()
    pool = SSHPool(inv, log, [mp.client, mp.server])
    result: dict[str, Any] = {"link": link, "client": mp.client, "server": mp.server,
                              "configured": {"forward": fwd.to_json(), "reverse": rev.to_json()}}
    try:
        (await pool.connect_all()).raise_on_error()
        # Warm-up, not counted: the first packet after a quiet spell waits for neighbour (ARP)
        # resolution on both ends, which crosses the delayed link too (a 100 ms path shows
        # one 200 ms reply). Calibration measures the link, not the resolver.
        w = await pool[mp.client].run(Command(("ping", "-c", "2", "-i", "0.2", "-W", "5", mp.server_addr),
                                              timeout=40, check=False, note="warm-up (neighbour resolution)"))
        progress(StepNote(1, 3, f"RTT: {pings} pings {mp.client} -> {mp.server_addr}, 0.2 s apart", pings * 0.2))
        r = await pool[mp.client].run(Command(("ping", "-c", str(pings), "-i", "0.2", "-W", "5", mp.server_addr),
                                              timeout=pings * 0.2 + 30, check=False, note="RTT and jitter"))
        pr = ping.parse(r.stdout)
        expected_rtt = (fwd.delay_us + rev.delay_us) / 1000
        result["rtt"] = {"configured_ms": expected_rtt, "min_ms": pr.rtt_min_ms, "avg_ms": pr.rtt_avg_ms,
                         "max_ms": pr.rtt_max_ms, "mdev_ms": pr.rtt_mdev_ms,
                         "jitter_ms": pr.jitter_ms, "replies": pr.received, "sent": pr.transmitted,
                         "warmup_ms": [t for _, t in ping.parse(w.stdout).replies] if w.ok else []}
        native = iperf3_supports_mptcp((await pool[mp.client].run(Command(("iperf3", "--version"),
                                                                            check=False))).stdout)
        progress(StepNote(2, 3, f"throughput: {streams} TCP streams {mp.client} -> {mp.server} for {tcp_s:g} s",
                          tcp_s + 1.0))
        tcp = FlowSpec("measure-tcp", "tcp", mp.client, mp.server, mp.server_addr, port, client_addr=mp.client_addr,
                       duration_s=tcp_s, streams=streams)
        tr = TrafficRunner(pool, [tcp], {mp.client: native, mp.server: native})
        await tr.start_servers()
        # What the link delivers on the wire: the receiver interface's byte counter over the
        # saturated middle of the test (after slow start, before the end), frames as shaped.
        rx_if = inv.interface_on(mp.server, link).name
        wire = asyncio.ensure_future(_wire_rate(pool[mp.server], rx_if, 2.0, max(1.0, tcp_s - 2.5)))
        await tr.run_clients(tcp_s + 30)
        await tr.collect_servers()
        wire_bps = await wire
        res = iperf3.parse(tr.runs[0].client_json)
        if res.failure:
            raise TrafficError(f"iperf3 TCP: {res.failure}")
        result["throughput"] = {"configured_bps": fwd.bw_bps, "wire_bps": wire_bps, "streams": streams,
                                "tcp_receiver_bps": iperf3.receiver_throughput_bps(res),
                                "tcp_sender_bps": iperf3.sender_throughput_bps(res),
                                "congestion": res.end.sender_tcp_congestion if res.end else None,
                                "retransmits": res.end.sum_sent.retransmits if res.end and res.end.sum_sent else None}
        # Loss: a UDP stream well below the rate, so the queue never drops: what is lost is plr.
        rate = int(min((fwd.bw_bps or 10**9) * 0.5, 50_000_000))
        progress(StepNote(3, 3, f"loss: UDP at {format_rate(rate)} {mp.client} -> {mp.server} for {udp_s:g} s",
                          udp_s + 1.0))
        udp = FlowSpec("measure-udp", "udp", mp.client, mp.server, mp.server_addr, port + 1,
                       client_addr=mp.client_addr, duration_s=udp_s, udp_rate_bps=rate)
        tu = TrafficRunner(pool, [udp], {mp.client: native, mp.server: native})
        await tu.start_servers()
        await tu.run_clients(udp_s + 30)
        await tu.collect_servers()
        sres = iperf3.parse(tu.runs[0].server_json)
        total = sres.end.sum.packets if sres.end and sres.end.sum else None
        lost = sres.end.sum.lost_packets if sres.end and sres.end.sum else None
        if total is None or lost is None:
            s2 = sres.end.sum_received if sres.end else None
            total, lost = (s2.packets, s2.lost_packets) if s2 else (None, None)
        lo, hi = wilson(lost or 0, total or 0)
        result["loss"] = {"configured": fwd.plr, "packets": total, "lost": lost,
                          "measured": (lost / total) if total else None, "ci95": [lo, hi],
                          "consistent": (lo <= fwd.plr <= hi) if total else None, "udp_rate_bps": rate}
    finally:
        await pool.close()
    result["commands"] = len(log.entries)
    return result


def render_measure(m: dict) -> str:
    rtt, thr, loss = m["rtt"], m["throughput"], m["loss"]
    bw = thr["configured_bps"]
    rows = [
        ("RTT (ms)", f"{rtt['configured_ms']:.3f} (2 x delay)", f"avg {rtt['avg_ms']} min {rtt['min_ms']} "
                                                               f"max {rtt['max_ms']} mdev {rtt['mdev_ms']}"),
        ("jitter (ms)", "0", f"{rtt['jitter_ms']:.3f} (mean |dRTT|, 0.1 ms print resolution)"
         if rtt["jitter_ms"] is not None else "-"),
        ("throughput", format_rate(bw), f"{format_rate(thr['wire_bps'])} on the wire at the receiver; "
                                        f"{format_rate(thr['tcp_receiver_bps'])} TCP goodput ({thr['streams']} streams, "
                                        f"{thr['congestion']}, {thr['retransmits']} retransmits)"),
        ("loss", format_probability(loss["configured"]),
         f"{loss['lost']}/{loss['packets']} = {format_probability(loss['measured'] or 0)} "
         f"(95% CI {format_probability(loss['ci95'][0])}..{format_probability(loss['ci95'][1])})"),
    ]
    w = max(len(r[1]) for r in rows)
    out = [f"link {m['link']}: {m['client']} -> {m['server']}", f"{'':<12} {'configured':<{w}}  measured"]
    out += [f"{a:<12} {b:<{w}}  {c}" for a, b, c in rows]
    return "\n".join(out)
