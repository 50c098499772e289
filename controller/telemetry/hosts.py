"""Host samplers -> points: one long-lived sampler process per host, streamed over SSH.

The sampler (nodes/agent/sampler.py) runs on the host and prints one JSON line per tick
with host timestamps. Here each line becomes points: interface counters and rates,
per-subflow TCP info from `ss` (parsed with the same tested parser as saved files),
and the shaper's queue/drop counters. Points go to the run's spool first; the InfluxDB
writer drains the spool. Drivers never talk to InfluxDB.
"""
from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from controller.errors import CtlError, SSHError
from controller.inventory import Inventory
from controller.parsers import ip_mptcp, iperf3, nstat, ss
from controller.telemetry.points import Point
from controller.telemetry.snmp.counters import Event
from controller.telemetry.snmp.poller import SnmpPoller
from controller.telemetry.snmp.threaded import ThreadedPoller
from controller.telemetry.spool import Spool
from controller.units import counted

SAMPLER_SOURCE = (Path(__file__).resolve().parents[2] / "nodes" / "agent" / "sampler.py").read_text()
INTERVAL_S = 0.1
IFACE_FIELDS = ("rx_bytes", "rx_packets", "rx_dropped", "tx_bytes", "tx_packets", "tx_dropped")


def iface_tags(inv: Inventory, host: str, iface: str) -> dict[str, str]:
    h = inv.hosts[host]
    tags = {"host": host, "iface": iface, "role": h.role.value}
    for i in h.interfaces:
        if i.name == iface and i.link:
            tags.update(link=i.link, side=i.side or "")
    for lname, link in inv.links.items():
        if link.bridge == host and iface in (link.a_port, link.b_port):
            tags.update(link=lname, side="a" if iface == link.a_port else "b")
    return tags


class HostStream:
    """The sampler of one host and the conversion of its lines into points."""

    def __init__(self, hub: "TelemetryHub", host: str, ifaces: list[str], probes: list[dict],
                 probe_parsers: Mapping[str, Callable[[str, int], list[Point]]], offset_ns: int):
        self.hub = hub
        self.host = host
        self.ifaces = ifaces
        self.probes = probes
        self.probe_parsers = probe_parsers
        self.offset_ns = offset_ns
        self.proc: Any = None
        self.task: asyncio.Task | None = None
        self.prev_if: dict[str, tuple[int, list[int]]] = {}
        self.samples = 0
        self.late = 0
        self.malformed = 0      # records that were JSON but not what the sampler writes
        self.error: str | None = None
        self.raw = None

    def config(self) -> dict:
        return {"interval": INTERVAL_S, "ifaces": self.ifaces, "probes": self.probes}

    async def start(self, session: Any) -> None:
        argv = ("python3", "-u", "-c", SAMPLER_SOURCE, json.dumps(self.config(), separators=(",", ":")))
        self.proc = await session.spawn(argv, note=f"sampler ({counted(len(self.ifaces), 'interface')}, "
                                                    f"{counted(len(self.probes), 'probe')}, {INTERVAL_S:g} s)",
                                        stdin_open=True)
        if not self.hub.dry_run:
            self.raw = open(self.hub.record.raw_path(self.host, "sampler.jsonl"), "a", buffering=1 << 16)
        self.task = asyncio.ensure_future(self._consume())

    async def _consume(self) -> None:
        try:
            async for line in self.proc.lines():
                if self.raw is not None:
                    self.raw.write(line + "\n")
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(rec, dict) or "hello" in rec:
                    continue
                try:
                    points = self.to_points(rec)
                except (KeyError, TypeError, ValueError, IndexError, OverflowError):
                    self.malformed += 1     # a record the sampler never writes: skipped, counted
                    continue
                self.hub.emit(points)
        except SSHError as exc:
            self.error = exc.one_line()
            self.hub.on_stream_lost(self.host, exc)
        finally:
            if self.raw is not None:
                self.raw.flush()

    def to_points(self, rec: dict) -> list[Point]:
        t = int(rec["t"]) - self.offset_ns
        self.samples += 1
        self.late = int(rec.get("late", self.late))
        out: list[Point] = []
        for name, vals in rec.get("if", {}).items():
            fields: dict[str, Any] = dict(zip(IFACE_FIELDS, vals))
            prev = self.prev_if.get(name)
            if prev is not None and t > prev[0]:
                dt = (t - prev[0]) / 1e9
                drx, dtx = vals[0] - prev[1][0], vals[3] - prev[1][3]
                if drx >= 0 and dtx >= 0:  # a counter that went back (interface reset) gives no rate
                    fields["rx_bps"] = drx * 8 / dt
                    fields["tx_bps"] = dtx * 8 / dt
            self.prev_if[name] = (t, vals)
            out.append(Point("iface", iface_tags(self.hub.inv, self.host, name), fields, t))
        for name, text in (rec.get("p") or {}).items():
            parser = self.probe_parsers.get(name)
            if parser is not None:
                try:
                    out += parser(text, t)
                except Exception as exc:  # one bad sample must not end the stream; it is counted
                    self.hub.parse_errors.append(f"{self.host} {name}: {exc!r}"[:300])
        return out

    async def stop(self) -> None:
        if self.proc is None:
            return
        if hasattr(self.proc, "close_stdin"):
            self.proc.close_stdin()
        try:
            if self.task is not None:
                await asyncio.wait_for(asyncio.shield(self.task), 3)
        except asyncio.TimeoutError:
            await self.proc.terminate(grace=1)
        except SSHError:
            pass
        await self.proc.wait(3)
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self.raw is not None:
            self.raw.close()


class SubflowTracker:
    """`ss -tinH` samples -> per-subflow points with rates from successive byte counters."""

    def __init__(self, inv: Inventory, host: str, flow_ports: Mapping[int, str]):
        self.inv = inv
        self.host = host
        self.flow_ports = flow_ports
        self.prev: dict[str, tuple[int, int | None, int | None]] = {}
        self._links: dict[tuple[str, str], str] = {}    # (local, peer) -> link: the inventory is frozen

    def __call__(self, text: str, t: int) -> list[Point]:
        out = []
        for sock in ss.parse(text, netid="tcp"):
            if sock.tcp is None:
                continue
            lp, pp = sock.local.port, sock.peer.port
            if pp in self.flow_ports:
                flow, role = self.flow_ports[pp], "client"
            elif lp in self.flow_ports:
                flow, role = self.flow_ports[lp], "server"
            else:
                continue
            local, peer = sock.local.normalized_host, sock.peer.normalized_host
            sub = f"{local}:{lp}-{peer}:{pp}"
            link = self._links.get((local, peer))
            if link is None:
                link = self._links[(local, peer)] = (self.inv.link_of_address(local)
                                                     or self.inv.link_of_address(peer) or "")
            ti = sock.tcp
            fields: dict[str, Any] = {}
            for src, dst in (("cwnd", "cwnd_pkts"), ("rtt_ms", "rtt_ms"), ("rttvar_ms", "rttvar_ms"),
                             ("bytes_acked", "bytes_acked"), ("bytes_sent", "bytes_sent"),
                             ("bytes_received", "bytes_received"), ("bytes_retrans", "bytes_retrans"),
                             ("delivery_rate_bps", "delivery_rate_bps"), ("mss", "mss_bytes")):
                v = getattr(ti, src, None)
                if v is not None:
                    fields[dst] = v
            if ti.retrans is not None:
                fields["retrans_total"] = ti.retrans[1]
            if ti.congestion:
                fields["cc"] = ti.congestion          # the algorithm the kernel runs on this subflow
            if ti.mptcp is not None:
                fields["mptcp_token"] = ti.mptcp.local_token or ""
                fields["mptcp_initial"] = bool(ti.mptcp.mp_capable_local or ti.mptcp.mp_capable_remote)
            prev = self.prev.get(sub)
            if prev is not None and t > prev[0]:
                dt = (t - prev[0]) / 1e9
                if ti.bytes_acked is not None and prev[1] is not None and ti.bytes_acked >= prev[1]:
                    fields["acked_bps"] = (ti.bytes_acked - prev[1]) * 8 / dt
                if ti.bytes_received is not None and prev[2] is not None and ti.bytes_received >= prev[2]:
                    fields["received_bps"] = (ti.bytes_received - prev[2]) * 8 / dt
            self.prev[sub] = (t, ti.bytes_acked, ti.bytes_received)
            out.append(Point("subflow", {"host": self.host, "flow": flow, "subflow": sub, "link": link,
                                         "role": role}, fields, t))
        return out


class MptcpConnTracker:
    """`ss -MinH` -> one `mptcp_conn` point per MPTCP connection of a flow (subflows, addresses)."""

    def __init__(self, host: str, flow_ports: Mapping[int, str]):
        self.host = host
        self.flow_ports = flow_ports

    def __call__(self, text: str, t: int) -> list[Point]:
        out = []
        for sock in ss.parse(text, netid="mptcp", allow_empty=True):
            m = sock.mptcp
            if m is None:
                continue
            lp, pp = sock.local.port, sock.peer.port
            flow = self.flow_ports.get(pp) or self.flow_ports.get(lp)
            if flow is None:
                continue
            fields: dict[str, Any] = {"subflows_added": m.subflows, "add_addr_signal": m.add_addr_signal,
                                      "add_addr_accepted": m.add_addr_accepted, "fallback": m.fallback,
                                      "remote_key": m.remote_key}
            out.append(Point("mptcp_conn", {"host": self.host, "flow": flow, "token": m.token or "",
                                            "role": "client" if pp in self.flow_ports else "server"}, fields, t))
        return out


class CounterDeltas:
    """`nstat -asz MPTcp*` -> one `mptcp_counters` point: every counter's growth since the first sample."""

    def __init__(self, host: str):
        self.host = host
        self.first: dict[str, int] | None = None

    def __call__(self, text: str, t: int) -> list[Point]:
        values = {k.removeprefix("MPTcpExt"): v for k, v in nstat.parse(text).values.items()}
        if self.first is None:
            self.first = values
        fields = {k: v - self.first.get(k, 0) for k, v in values.items()}
        return [Point("mptcp_counters", {"host": self.host}, fields, t)] if fields else []


class TelemetryHub:
    """Starts the samplers of a run, collects their points, spools them."""

    def __init__(self, inv: Inventory, record: Any, common_tags: Mapping[str, str], offsets: Mapping[str, Any],
                 plan: Any, shapers: Mapping[str, Any]):
        self.inv = inv
        self.record = record
        self.common = dict(common_tags)
        self.offsets = offsets
        self.plan = plan
        self.shapers = shapers
        self.dry_run = bool(record.manifest.get("dry_run"))
        self.spool = Spool(record.dir / "metrics.jsonl")
        self.points: list[Point] = []
        self.streams: dict[str, HostStream] = {}
        self.parse_errors: list[str] = []
        self.lost: dict[str, str] = {}
        self.monitor_lines: dict[str, list[str]] = {}
        self.snmp: Any = None
        self._snmp_stopping: asyncio.Future | None = None
        self.snmp_events: list[dict] = []
        self.snmp_late_datagrams = 0
        self._sessions: Mapping[str, Any] = {}
        self._lost_event = asyncio.Event()

    def emit(self, points: list[Point]) -> None:
        if not points:
            return
        tagged = [p.with_tags(self.common) for p in points]
        self.spool.append(tagged)
        self.points.extend(tagged)

    def on_stream_lost(self, host: str, exc: Exception) -> None:
        self.lost[host] = str(exc)
        self._lost_event.set()

    async def wait_lost(self) -> None:
        await self._lost_event.wait()

    async def start(self, sessions: Mapping[str, Any]) -> None:
        self._sessions = sessions
        flow_ports = {f.port: f.name for f in self.plan.flows}
        traffic_hosts = {f.client for f in self.plan.flows} | {f.server for f in self.plan.flows}
        for host, ifaces in sorted(self.plan.sample_ifaces.items()):
            if self.inv.hosts[host].os != "linux":
                # The host sampler needs Linux (/proc, python3). A FreeBSD bridge is sampled by its
                # shaper's own counter loop (below) and its ports by SNMP.
                continue
            probes: list[dict] = []
            parsers: dict[str, Callable[[str, int], list[Point]]] = {}
            if host in traffic_hosts:
                probes.append({"name": "ss", "argv": ["ss", "-tinH"], "every": 1, "timeout": 2})
                parsers["ss"] = SubflowTracker(self.inv, host, flow_ports)
            if host in self.plan.mptcp_hosts:
                # MPTCP connection-level info and the MPTcpExt counters, once a second.
                every = max(1, round(1.0 / INTERVAL_S))
                probes.append({"name": "ssM", "argv": ["ss", "-MinH"], "every": every, "timeout": 2})
                parsers["ssM"] = MptcpConnTracker(host, flow_ports)
                probes.append({"name": "nstat", "argv": ["nstat", "-asz", "MPTcp*"], "every": every, "timeout": 2})
                parsers["nstat"] = CounterDeltas(host)
            shaper = self.shapers.get(host)
            if shaper is not None:
                for pr in shaper.counters_probe():
                    probes.append({**pr, "every": 1, "timeout": 2})
                    parsers[pr["name"]] = self._pipe_parser(host, shaper, pr["name"])
            off = self.offsets.get(host)
            offset_ns = int(off.offset_s * 1e9) if off is not None else 0
            self.streams[host] = HostStream(self, host, ifaces, probes, parsers, offset_ns)
        starts = [s.start(sessions[h]) for h, s in self.streams.items() if s.proc is None and ":" not in h]
        for host, shaper in sorted(self.shapers.items()):
            if host not in sessions:
                continue
            starts += [self._start_counter_stream(host, stream.argv, stream.parse_line, stream.name)
                       for stream in shaper.counter_streams(INTERVAL_S)]
        # Every host's sampler at once (each spawn is a round trip); all have started, or
        # failed, before this returns.
        results = await asyncio.gather(*starts, return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException):
                raise r

    async def start_monitor(self, session: Any, host: str) -> None:
        """`ip mptcp monitor` on a host: events become `mptcp_event` points as they arrive
        (stamped on arrival at the controller: the monitor prints no time of its own)."""
        proc = await session.spawn(("ip", "mptcp", "monitor"), note="MPTCP events")
        lines = self.monitor_lines.setdefault(host, [])

        async def consume() -> None:
            try:
                async for line in proc.lines():
                    lines.append(line)
                    try:
                        events = ip_mptcp.parse_monitor(line)
                    except Exception as exc:
                        self.parse_errors.append(f"{host} monitor: {exc!r}"[:300])
                        continue
                    t = time.time_ns()
                    for ev in events:
                        fields = {k: v for k, v in (("saddr", ev.saddr_norm), ("daddr", ev.daddr_norm),
                                                    ("sport", ev.sport), ("dport", ev.dport), ("locid", ev.locid),
                                                    ("remid", ev.remid), ("backup", ev.backup),
                                                    ("error", ev.error)) if v is not None}
                        fields["line"] = line.strip()
                        self.emit([Point("mptcp_event", {"host": host, "event": ev.event, "token": ev.token or ""},
                                         fields, t)])
            except SSHError as exc:
                self.on_stream_lost(host, exc)
        stream = HostStream(self, host, [], [], {}, 0)
        stream.proc = proc
        stream.task = asyncio.ensure_future(consume())
        self.streams[f"{host}:monitor"] = stream

    async def start_snmp(self) -> None:
        """Poll, once a second, the SNMP agents of the bridges and switches this run's links cross."""
        if self.dry_run:
            return
        hosts: set[str] = set()
        for (link, _d) in self.plan.links:
            l = self.inv.links[link]
            for h in (l.bridge, l.switch):
                if h is not None and self.inv.hosts[h].snmp is not None:
                    hosts.add(h)
        if not hosts:
            return

        def deliver(item: Any) -> None:        # on this loop, in the poller's order
            if isinstance(item, Event):
                self.snmp_events.append(item.to_dict())
                item = item.to_point()
            self.emit([Point(item.measurement, item.tags, item.fields, item.time_ns)])

        def on_loop_error(context: dict) -> bool:
            exc = context.get("exception")
            if exc is not None and type(exc).__name__ == "CarrierError" and "Unregistered transport" in str(exc):
                # A reply that arrived after the poller closed its socket (a timed-out agent
                # answering late): harmless, counted, not a traceback on the terminal.
                self.snmp_late_datagrams += 1
                return True
            return False

        # The poller runs on a loop and thread of its own (controller/telemetry/snmp/threaded.py:
        # a busy sampler loop delayed its replies by seconds).
        self.snmp = ThreadedPoller(
            lambda sink: SnmpPoller.from_inventory(self.inv, sink, hosts=sorted(hosts), interval_s=1.0),
            deliver, on_loop_error)
        try:
            await self.snmp.start()
        except CtlError as exc:  # no SNMP is a gap in the record, not a reason to stop the run
            self.snmp_events.append({"kind": "poller_failed", "message": exc.one_line()})
            self.snmp = None
            return

    def monitor_text(self, host: str) -> str:
        return "\n".join(self.monitor_lines.get(host, []))

    def _pipe_parser(self, host: str, shaper: Any, probe: str) -> Callable[[str, int], list[Point]]:
        def parse(text: str, t: int) -> list[Point]:
            out = []
            for (link, direction), ctrs in shaper.parse_counters(probe, text).items():
                out.append(Point("pipe", {"host": host, "link": link, "direction": direction.value},
                                 dict(ctrs), t))
            return out
        return parse

    async def _start_counter_stream(self, host: str, argv: Any, parse_line: Any, name: str) -> None:
        """A shaper's own counter stream (dnpipe watch, ipfw loop): long-lived, one line per sample."""
        session = self._sessions[host]
        proc = await session.spawn(argv, note="shaper counters", stdin_open=True)
        off = self.offsets.get(host)
        offset_ns = int(off.offset_s * 1e9) if off is not None else 0

        async def consume() -> None:
            raw = None if self.dry_run else open(self.record.raw_path(host, f"{name}-counters.txt"), "a")
            try:
                async for line in proc.lines():
                    if raw is not None:
                        raw.write(line + "\n")
                    for sample in parse_line(line):
                        link, direction = sample.key
                        self.emit([Point("pipe", {"host": host, "link": link, "direction": direction.value},
                                         dict(sample.counters),
                                         sample.t_ns - (offset_ns if sample.host_clock else 0))])
            except SSHError as exc:
                self.on_stream_lost(host, exc)
            finally:
                if raw is not None:
                    raw.close()
        stream = HostStream(self, host, [], [], {}, offset_ns)
        stream.proc = proc
        stream.task = asyncio.ensure_future(consume())
        self.streams[f"{host}:{name}"] = stream

    def stop_snmp_soon(self) -> None:
        """End the SNMP rounds now (the traffic is over: no round starts after it, the one under
        way finishes) while the run goes on; stop() waits for it (issue 28: a round due at the
        traffic's end held the samplers' stop and the restore back by up to 0.3 s)."""
        if self.snmp is not None and self._snmp_stopping is None:
            self._snmp_stopping = asyncio.ensure_future(self.snmp.stop(10))

    async def stop(self) -> None:
        self.stop_snmp_soon()      # beside the streams' stop, not after it
        await asyncio.gather(*(s.stop() for s in self.streams.values()), return_exceptions=True)
        if self._snmp_stopping is not None:
            problem = await self._snmp_stopping
            if problem is not None:
                self.snmp_events.append({"kind": "poller_stopped", "message": problem})
            self.snmp = self._snmp_stopping = None
        self.spool.close()
        self.record.manifest["telemetry"].update({
            "points": len(self.points),
            "samples": {h: s.samples for h, s in self.streams.items() if ":" not in h},  # host samplers
            "other_streams": sorted(h for h in self.streams if ":" in h),
            "late_ticks": {h: s.late for h, s in self.streams.items() if s.late},
            "parse_errors": self.parse_errors[:50],
            "lost_streams": self.lost,
            "snmp_events": self.snmp_events[:200],
            "snmp_late_datagrams": self.snmp_late_datagrams,
            "interval_s": INTERVAL_S,
        })


def flow_points(run: Any) -> list[Point]:
    """iperf3's per-interval report of a flow as `flow` points (sender side, stream sum).

    iperf3 reports seconds since its own test start; the points are placed at that start as
    the flow's run estimates it on the controller's clock (`FlowRun.test_start`: the client seen
    running, never later than its exit minus the test's length) plus the interval's end."""
    if not run.client_json or run.client_started is None:
        return []
    try:
        res = iperf3.parse(run.client_json)
    except Exception:
        return []
    ends = [s.end for iv in res.intervals for s in ([iv.sum] if iv.sum is not None else iv.streams[:1])]
    start = run.test_start(max(ends, default=None))
    out = []
    for iv in res.intervals:
        s = iv.sum if iv.sum is not None else (iv.streams[0] if iv.streams else None)
        if s is None:
            continue
        fields: dict[str, Any] = {"throughput_bps": float(s.bits_per_second), "bytes": int(s.bytes),
                                  "interval_s": float(s.seconds)}
        if s.retransmits is not None:
            fields["retransmits"] = int(s.retransmits)
        cwnds = [x.snd_cwnd for x in iv.streams if x.snd_cwnd is not None]
        rtts = [x.rtt_us for x in iv.streams if x.rtt_us is not None]
        if cwnds:
            fields["snd_cwnd_bytes"] = int(sum(cwnds))
        if rtts:
            fields["rtt_ms"] = sum(rtts) / len(rtts) / 1000.0
        t = int((start + s.end) * 1e9)
        out.append(Point("flow", {"host": run.spec.client, "flow": run.spec.name}, fields, t))
    return out
