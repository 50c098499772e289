"""The run state machine: prepare -> configure -> measure -> collect -> restore -> summarize.

Whatever happens after the first change to the rack (a signal, a lost SSH connection, a
failed command, a bug), the `finally` path stops the traffic and the samplers by the
PIDs it started, restores every endpoint and bridge to the exact state it read before,
proves it by reading back, and writes the run record with every sample taken so far,
marked `aborted` or `failed`.

Bad parameters and shaping a back-end cannot do are refused before anything changes.
"""
from __future__ import annotations

import asyncio
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from bridges.base import (PipeConfig, PipeKey, Shaper, ShaperState, apply, read_state, restore, shaper_class,
                          shaper_fidelity)
from controller.commands import Command, CommandResult, DryRunSession, run_all
from controller.inventory import Inventory, Role, source_of
from controller.results.records import RunRecord, command_line, make_run_id
from controller.results.hystart import attach_own_hystart
from controller.results.summary import data_local_ports
from controller.run.congestion import CongestionStage, congestion_problems, subflow_congestion
from controller.run.live import LiveFeed, LiveSink, start_view, stop_view
from controller.run.late import FigureDrawing, RecordFigures, RunOutcome, jsonable, restore_problems
from controller.run import restoring
from controller.run.overlap import import_influx, preload_libraries, preload_snmp, together, when_started
from controller.run.looplag import LoopLagMonitor
from controller.run.looplag import warning as looplag_warning
from controller.run.drain import plan_hosts as drain_hosts, poll_command, wait_for_leftovers
from controller.run.neighbours import counter_hosts, warm_neighbours
from controller.run.partial import partial_summary, traffic_window
from controller.run.recovery import ProcessJournal, process_record
from controller.scenarios.base import RunData, RunPlan, Scenario
from controller.perhost import MultiResult, gather_hosts
from controller.clocksync import ClockEcho
from controller.ssh import CommandLog, SSHPool
from controller.telemetry.hosts import TelemetryHub, flow_points
from controller.telemetry.spool import InfluxTarget, InfluxWriter, pending_points
from controller.traffic.iperf3 import FlowRun, TrafficRunner, iperf3_supports_mptcp
from controller.units import counted
from nodes.base import EndpointDriver
from nodes.mptcp import EndpointState, MptcpEndpointDriver, metadata_commands
from controller.errors import CtlError, RestoreFailed, ResultInvalid, SSHError, TrafficError, VerifyError

RESTORE_RECONNECT_S = 30.0
CLIENTS_STARTED_WAIT_S = 2.0    # the `traffic_started` hook waits at most this long for the clients


class Run:
    def __init__(self, scenario: Scenario, params: dict[str, Any], given: dict[str, str], inv: Inventory,
                 plan: RunPlan, record: RunRecord, *, dry_run: bool = False, campaign: str | None = None,
                 influx: InfluxTarget | None = None, progress: Callable[[str], None] | None = None,
                 live: LiveSink | None = None, lender: SSHPool | None = None,
                 traffic_started: Callable[[], None] | None = None):
        self.scenario = scenario
        self.params = params
        self.given = given
        self.inv = inv
        self.plan = plan
        self.record = record
        self.dry_run = dry_run
        self.campaign = campaign
        self.influx = influx
        self.progress = progress or (lambda msg: None)
        self.live = live
        self.traffic_started = traffic_started
        self.log = CommandLog(None if dry_run else record.dir / "commands.jsonl", encode=command_line)
        # Every remote process is in the record the moment it starts: if this controller dies,
        # recovery ends exactly these, by PID.
        self.log.spawn_listeners.append(self._record_spawn)
        self._journal: ProcessJournal | None = None
        self._save_soon = False
        self.dry_log: list[CommandResult] = []
        hosts = self._hosts()
        if dry_run:
            self.sessions: dict[str, Any] = {h: DryRunSession(h, self.dry_log) for h in hosts}
            self.pool: SSHPool | None = None
        else:
            self.pool = SSHPool(inv, self.log, hosts)
            self.sessions = dict(self.pool.sessions)
        # A campaign's health check connected to these hosts moments ago: its connections are
        # taken over (and handed back at the end) instead of opened again.
        self.lender = lender if self.pool is not None else None
        if self.lender is not None and self.pool is not None:
            self.pool.borrow(self.lender)
        self.shapers: dict[str, Shaper] = {}
        self.shaper_before: dict[str, ShaperState] = {}
        # What configure read back and verified, per bridge: its restore plans from it (no read first).
        self.applied: dict[str, ShaperState] = {}
        self.endpoint_drivers: dict[str, EndpointDriver] = {}
        self.congestion = CongestionStage(record.id, inv, plan.endpoints, self.sessions, record.manifest,
                                          dry_run=dry_run, progress=self.progress)
        self.endpoint_before: dict[str, EndpointState] = {}
        self.changed: list[str] = []  # hosts ctl has changed, in order; restored in reverse
        self.traffic: TrafficRunner | None = None
        self.telemetry: TelemetryHub | None = None
        self.writer: InfluxWriter | None = None
        self.nstat: dict[str, list[str]] = {}
        self.monitor_text: dict[str, str] = {}
        self.window = (0.0, 0.0)
        self._servers_started = False
        self.clocks: dict[str, ClockEcho] = {}
        self._preload: threading.Thread | None = None
        self._writer_start: asyncio.Future | None = None
        self.traffic_t0: float | None = None   # the clients' start, also when the run is cut short
        self.traffic_t1: float | None = None
        self.loop_lag = LoopLagMonitor()       # how late the controller stamps its own times

    def _hosts(self) -> list[str]:
        hosts = set(self.plan.endpoints) | set(self.plan.sample_ifaces)
        for f in self.plan.flows:
            hosts |= {f.client, f.server}
        for (link, _d) in self.plan.links:
            hosts.add(self.inv.links[link].bridge)
        return sorted(h for h in hosts if self.inv.hosts[h].role is not Role.SWITCH)

    def snmp_hosts(self) -> list[str]:
        """The bridges and switches on this run's links that answer SNMP (the telemetry polls them)."""
        out = set()
        for (link, _d) in self.plan.links:
            l = self.inv.links[link]
            out |= {h for h in (l.bridge, l.switch) if h is not None and self.inv.hosts[h].snmp is not None}
        return sorted(out)

    def _bridges(self) -> list[str]:
        return sorted({self.inv.links[l].bridge for (l, _d) in self.plan.links})

    # ---- phases ----------------------------------------------------------------------------

    async def prepare(self) -> None:
        """Connect, read every state ctl may change, check it can do the plan. Changes nothing."""
        self.record.phase("prepare")
        if not self.dry_run and self.snmp_hosts():
            preload_snmp()
        self.progress("connecting to " + ", ".join(sorted(self.sessions)))
        if self.pool is not None:
            (await self.pool.connect_all()).raise_on_error()
        for b in self._bridges():
            kind = self.inv.hosts[b].shaper.kind  # type: ignore[union-attr]
            self.shapers[b] = shaper_class(kind)(self.inv, b)
        desired_by_bridge = self._desired_by_bridge()
        for b, shaper in self.shapers.items():
            shaper.validate(desired_by_bridge[b])
        for h in self.plan.endpoints:
            self.endpoint_drivers[h] = MptcpEndpointDriver(h, self.plan.endpoints[h].sysctls.keys())

        async def read_bridge(b: str) -> None:
            self.shaper_before[b] = await read_state(self.shapers[b], self.sessions[b])
            # planning raises here (before any change) if the bridge holds state ctl cannot restore
            self.shapers[b].plan(desired_by_bridge[b], self.shaper_before[b])

        async def read_endpoint(h: str) -> None:
            drv = self.endpoint_drivers[h]
            st = drv.parse_state(await run_all(self.sessions[h], drv.read_commands()))
            if not self.dry_run:  # a dry run has no real readings to check against
                drv.check(self.plan.endpoints[h], st)
            self.endpoint_before[h] = st

        # Every read at once, with the host metadata and the clock echoes of the measurement
        # (started now, idle until then: a python3 start per host off the run's path).
        if not self.dry_run:
            # In a campaign the echoes stay open on the connections handed back (ClockEcho.kept).
            self.clocks = {h: ClockEcho.kept(s) if self._keeps(h) else ClockEcho(s) for h, s in self.sessions.items()}
        await together(*(read_bridge(b) for b in self.shapers), *(read_endpoint(h) for h in self.endpoint_drivers),
                       self.congestion.prepare(), self._metadata(), *(c.open() for c in self.clocks.values()))
        self.record.manifest["shapers"] = {b: {"kind": s.kind, "before": self.shaper_before[b].to_json()}
                                           for b, s in self.shapers.items()}
        self.record.manifest["endpoints"] = {h: {"before": st.to_json()} for h, st in self.endpoint_before.items()}
        self.record.save()

    def _desired_by_bridge(self) -> dict[str, dict[PipeKey, PipeConfig]]:
        out: dict[str, dict[PipeKey, PipeConfig]] = {b: {} for b in self._bridges()}
        for key, cfg in self.plan.links.items():
            out[self.inv.links[key[0]].bridge][key] = cfg
        return out

    async def _metadata(self) -> None:
        async def one(h: str) -> None:
            host = self.inv.hosts[h]
            shaper = self.shapers.get(h)
            cmds = shaper.metadata_commands() if shaper is not None else None
            if cmds is None:
                ifaces = [i.name for i in host.interfaces]
                cmds = metadata_commands(ifaces) if host.os == "linux" else [Command(("uname", "-a"))]
            meta = {}
            # One round trip per host (run_all batches): none of them may fail the run.
            got = await run_all(self.sessions[h], [Command(c.argv, timeout=c.timeout, check=False, note=c.note,
                                                           assume=c.assume) for c in cmds])
            for c, r in zip(cmds, got):
                meta[" ".join(c.argv)] = {"exit_status": r.exit_status, "stdout": r.stdout, "stderr": r.stderr}
            session = self.sessions[h]
            target = getattr(session, "target", None)        # an SSH session (not a dry run)
            access = {"route": session.route, "sudo": target.sudo} if target is not None else None
            self.record.manifest["hosts"][h] = {"role": host.role.value, "os": host.os, "metadata": meta,
                                                "access": access}   # how ctl reached it: hops, sudo
        await asyncio.gather(*(one(h) for h in sorted(self.sessions)))

    async def configure(self) -> None:
        self.record.phase("configure")
        desired = self._desired_by_bridge()
        for b, shaper in self.shapers.items():
            self.progress(f"shaping on {b}: " + "; ".join(f"{k[0]} {k[1].value} {v.describe()}"
                                                           for k, v in desired[b].items()))
        # Mark first, then change: an interruption mid-apply still restores this host.
        self.changed += list(self.shapers)

        async def shape(b: str) -> None:
            _before, after = await apply(self.shapers[b], self.sessions[b], desired[b], self.shaper_before[b])
            self.applied[b] = after     # read back and verified (apply raises otherwise)
            self.record.manifest["shapers"][b]["applied"] = {f"{k[0]}.{k[1].value}": v.to_json()
                                                            for k, v in desired[b].items()}
            self.record.manifest["shapers"][b]["after"] = after.to_json()

        async def endpoint(h: str) -> None:
            drv = self.endpoint_drivers[h]
            want = self.plan.endpoints[h]
            todo = drv.plan(want, self.endpoint_before[h])
            await run_all(self.sessions[h], todo)
            # Read back after a change; with nothing to change, the state read in prepare is verified.
            st = drv.parse_state(await run_all(self.sessions[h], drv.read_commands())) if todo else \
                self.endpoint_before[h]
            diffs = drv.verify(want, st)
            if diffs and not self.dry_run:
                raise VerifyError(h, "MPTCP endpoint configuration", diffs)
            self.record.manifest["endpoints"][h]["applied"] = st.to_json()

        async def endpoints() -> None:
            # Congestion controls first: an endpoint may make one its default (the BitTorrent step).
            await self.congestion.configure()
            await asyncio.gather(*(endpoint(h) for h in self.endpoint_drivers))

        self.changed += list(self.endpoint_drivers) + self.congestion.hosts
        await asyncio.gather(*(shape(b) for b in self.shapers), endpoints())
        self.record.save()

    async def measure(self) -> None:
        self.record.phase("measure")
        if not self.dry_run:
            self.loop_lag.start()
        offsets = {}
        if not self.dry_run:
            # The echoes (opened in prepare) stay open, idle, until the offsets are measured again
            # after the traffic.
            res = await asyncio.gather(*(c.offset() for c in self.clocks.values()))
            offsets = {o.host: o for o in res}
            self.record.manifest["clock_offsets"]["start"] = [o.to_json() for o in res]
        common = {"run": self.record.id, "scenario": self.scenario.name}
        if self.campaign:
            common["campaign"] = self.campaign
        self.telemetry = TelemetryHub(self.inv, self.record, common, offsets, self.plan, self.shapers)
        self.writer = InfluxWriter(self.record.dir, self.influx)
        self.telemetry.spool.on_append(lambda: None)
        versions = await self._iperf3_versions()
        pool = self.pool if self.pool is not None else _DryPool(self.sessions)
        if self.plan.traffic_factory is not None:
            self.traffic = self.plan.traffic_factory(pool, self.plan, None if self.dry_run else self.record)
        else:
            self.traffic = TrafficRunner(pool, self.plan.flows, versions)
        # Samplers, SNMP, the MPTCP monitors (before any traffic: a monitor misses events of
        # connections older than itself), the neighbour warm-up followed by the counters before
        # traffic, and iperf3's servers start together, on every host at once.
        servers = [self.traffic.start_servers()] if self.plan.traffic_factory is None else []
        self._servers_started = bool(servers)
        async def warm_then_count() -> None:
            warmed = await warm_neighbours(self.inv, self.plan, self.sessions)
            if warmed is not None:
                self.record.manifest["neighbour_warmup"] = warmed
            # A previous run's connection still sending would share this run's paths: wait (bounded)
            # until its endpoints have none left (controller/run/drain.py). The first look (`ss`) goes
            # in the counters' round trip; after a wait the counters are read again.
            polled = [] if self.dry_run else sorted(drain_hosts(self.inv, self.plan))
            t, first = time.monotonic(), await self._nstat("before", polled)
            if polled:
                drained = await wait_for_leftovers(self.inv, self.plan, self.sessions, self.progress,
                                                   first_results=first, started=t)
                self.record.manifest["leftover_wait"] = drained
                if drained and drained["first"]:
                    await self._nstat("before")
        await together(self.telemetry.start(self.sessions), self.telemetry.start_snmp(),
                       *(self.telemetry.start_monitor(self.sessions[h], h) for h in self.plan.mptcp_hosts),
                       warm_then_count(), *servers)
        span = max((f.start_delay_s + (f.duration_s or self.plan.duration_s) for f in self.plan.flows), default=0.0)
        if hasattr(self.traffic, "on_event"):
            self.traffic.on_event = self.progress
        if self.plan.traffic_factory is not None and hasattr(self.traffic, "describe"):
            # e.g. "20 BitTorrent downloads of 20MiB (...), each up to 10m00s": what the step really does
            self.progress(f"traffic: {self.traffic.describe()}")
        elif span > self.plan.duration_s + 0.5:
            self.progress(f"traffic: {counted(len(self.plan.flows), 'flow')} of {self.plan.duration_s:g} s, staggered over "
                          f"{span:g} s")
        else:
            self.progress(f"traffic: {counted(len(self.plan.flows), 'flow')} for {self.plan.duration_s:g} s")
        view = self._start_live()
        try:
            await self._traffic()
        finally:
            await stop_view(view, self.live)
        t0, t1 = self.traffic_t0 or 0.0, self.traffic_t1 or 0.0
        self.window = (t0, t1)
        self.telemetry.stop_snmp_soon()     # no SNMP round after the traffic (it ends beside the collection)

        await together(self.traffic.collect_servers(), self._nstat("after"))
        for r in self.traffic.runs:
            self.telemetry.emit(flow_points(r))
        self.record.manifest["flows"] = [r.to_json() for r in self.traffic.runs]
        self.record.manifest["traffic_window"] = {"start": t0, "end": t1}
        self._check_congestion()
        failed = [r for r in self.traffic.runs if r.error]
        if failed and not self.dry_run:
            raise TrafficError("; ".join(f"{r.spec.name}: {r.error}" for r in failed))

    async def _start_writer(self) -> None:
        assert self.writer is not None
        if self.influx is not None:
            await asyncio.to_thread(import_influx)
        self.writer.start()

    async def finish_influx(self) -> tuple[bool, str | None]:
        """Push what the run's spool still holds (the writer started with the traffic, or now when
        the run ended before it): (all sent, error)."""
        assert self.writer is not None
        if self._writer_start is None:
            self._writer_start = asyncio.ensure_future(self._start_writer())
        await asyncio.gather(self._writer_start, return_exceptions=True)
        return await self.writer.finish()

    async def _iperf3_versions(self) -> dict[str, bool]:
        """Whether each traffic host's iperf3 speaks MPTCP, from `iperf3 --version` as the host
        metadata read it in this run (asked again only where it did not)."""
        out = {}
        for h in sorted({f.client for f in self.plan.flows} | {f.server for f in self.plan.flows}):
            seen = ((self.record.manifest["hosts"].get(h) or {}).get("metadata") or {}).get("iperf3 --version")
            if seen and seen.get("exit_status") == 0 and not self.dry_run:
                out[h] = iperf3_supports_mptcp(seen["stdout"])
                continue
            r = await self.sessions[h].run(Command(("iperf3", "--version"), timeout=10, check=False,
                                                   assume="iperf 3.12 (cJSON 1.7.15)"))
            out[h] = iperf3_supports_mptcp(r.stdout)
        return out

    async def _traffic(self) -> None:
        assert self.traffic is not None and self.telemetry is not None
        if not self._servers_started:
            await self.traffic.start_servers()
        self.traffic_t0 = time.time()
        if not self.dry_run:
            # While the traffic runs the controller mostly waits: the InfluxDB client and the
            # figures' matplotlib are imported then, in a thread, and the push into InfluxDB
            # starts (its spool keeps every point until then).
            self._preload = preload_libraries(self.influx is not None)
            self._writer_start = asyncio.ensure_future(self._start_writer())
        timeout = self.plan.duration_s + max((f.start_delay_s for f in self.plan.flows), default=0.0) + 30
        # A host lost while traffic runs (its sampler stream ends) aborts the run at once.
        clients = asyncio.ensure_future(self.traffic.run_clients(timeout))
        lost = asyncio.ensure_future(self.telemetry.wait_lost())
        hook = asyncio.ensure_future(self._when_clients_started()) \
            if self.traffic_started is not None and not self.dry_run else None
        try:
            done, _ = await asyncio.wait({clients, lost}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            clients.cancel()
            lost.cancel()
            raise
        finally:
            if hook is not None and not hook.done():
                hook.cancel()
        if clients not in done:
            clients.cancel()
            host, why = next(iter(self.telemetry.lost.items()))
            raise SSHError(host, f"lost during traffic: {why}")
        lost.cancel()
        clients.result()
        self.traffic_t1 = time.time()

    async def _when_clients_started(self) -> None:
        """`traffic_started()` once the clients are running (controller.run.overlap.when_started);
        a failing hook is said in the record, the run goes on."""
        assert self.traffic_started is not None
        problem = await when_started(getattr(self.traffic, "runs", []), self.traffic_started, CLIENTS_STARTED_WAIT_S)
        if problem:
            self.record.manifest["errors"].append({"t": time.time(), "error": problem})

    # ---- the live view (a terminal's redrawn block; nothing here prints) -------------------

    def _start_live(self) -> "asyncio.Task | None":
        if self.live is None or self.dry_run or self.telemetry is None or self.traffic is None:
            return None
        feed = LiveFeed(self.record.id, self.inv, self.plan, self.traffic, self.telemetry.points)
        return start_view(feed, self.live, self.record.manifest["errors"])

    def _check_congestion(self) -> None:
        """Every sampled subflow of a flow that asked for a congestion control ran exactly it."""
        if self.dry_run or self.telemetry is None:
            return
        flows = [f for f in self.plan.flows if getattr(f, "cc", None)]
        # iperf3 flows only: they name their data connections and set -C per socket. A
        # BitTorrent client opens many connections under the namespace default; it is not checked.
        runs = {r.spec.name: r for r in (self.traffic.runs if self.traffic else []) if isinstance(r, FlowRun)}
        unchecked = sorted(f.name for f in flows if f.name not in runs)
        flows = [f for f in flows if f.name in runs]
        observed = subflow_congestion(self.telemetry.points, flows,
                                      {name: data_local_ports(r) for name, r in runs.items()})
        problems = congestion_problems(observed, flows)
        self.record.manifest.setdefault("congestion", {})["subflows"] = {"observed": observed, "problems": problems,
                                                                        "not_checked": unchecked}
        if problems:
            raise ResultInvalid("congestion control not as asked: " + "; ".join(problems[:5]))

    async def _nstat(self, when: str, polled: Sequence[str] = ()) -> dict[str, CommandResult]:
        """Kernel counters (`nstat -asz`) of the MPTCP hosts and of every Linux client and server
        of the flows, all at once (one round trip for the run, not one per host). The MPTCP hosts'
        are required (the MPTCP verdict reads them); a sender's or receiver's that cannot be read
        is left out of the record (its summary then says "not recorded"). On the `polled` hosts the
        look for leftover connections goes first in the same round trip: its results, by host.
        Read "before" again, a host's earlier "before" is replaced."""
        required = set(self.plan.mptcp_hosts)
        hosts = sorted(h for h in counter_hosts(self.plan) if h in self.sessions
                       and (h in required or self.inv.hosts[h].os == "linux"))
        looked: dict[str, CommandResult] = {}

        async def one(h: str) -> None:
            c = Command(("nstat", "-asz"), timeout=10, check=h in required, note=f"counters {when} traffic")
            if h in polled:
                got = await self.sessions[h].run_batch([poll_command(), c])
                looked[h] = got[0]
                r = got[-1] if len(got) == 2 else await self.sessions[h].run(c)
            else:
                r = await self.sessions[h].run(c)
            if when == "before":
                self.nstat.pop(h, None)
            if r.exit_status != 0:
                # Never a failed read as counters: the verdict says "no MPTcpExt counters recorded", this why.
                if h in required:
                    why = "timed out" if r.exit_status is None else f"exit {r.exit_status}"
                    self.progress(f"warning: {h}: `nstat -asz` (counters {when} the traffic) failed ({why}): "
                                  f"its MPTCP counters are not recorded")
                return
            self.nstat.setdefault(h, []).append(r.stdout)
            if not self.dry_run:
                self.record.write_raw(h, f"nstat-{when}.txt", r.stdout)
        await asyncio.gather(*(one(h) for h in hosts))
        return looked

    async def reconnect(self) -> set[str]:
        """Hosts reachable for clean-up: lost connections are retried for RESTORE_RECONNECT_S."""
        if self.dry_run or self.pool is None:
            return set(self.sessions)
        pool = self.pool
        got = await gather_hosts(self.sessions, lambda h: pool[h].ensure_connected(RESTORE_RECONNECT_S))
        return {h for h, r in got.items() if r.value}

    async def stop_measuring(self, reachable: set[str] | None = None) -> None:
        """Stop traffic (abort path), monitors and samplers; keep what they produced."""
        skip = set(self.sessions) - (reachable if reachable is not None else set(self.sessions))
        if self.loop_lag.running:
            lag = await self.loop_lag.stop(self.window if self.window[1] else
                                           traffic_window(self.traffic_t0, self.traffic_t1))
            self.record.manifest["controller_loop"] = lag
            if msg := looplag_warning(lag):
                lag["warning"] = msg
                self.progress("warning: " + msg)
        if self.traffic is not None:
            await self.traffic.stop_all(skip)
            if not self.dry_run:
                for r in self.traffic.runs:
                    if r.client_json:
                        self.record.write_raw(r.spec.client, f"iperf3-{r.spec.name}.client.json", r.client_json)
                    if r.server_json:
                        self.record.write_raw(r.spec.server, f"iperf3-{r.spec.name}.server.json", r.server_json)
        if self.telemetry is not None:
            monitors = [self.telemetry.streams.get(f"{h}:monitor") for h in self.plan.mptcp_hosts if h not in skip]
            # Monitors (by PID) and samplers stop together; the hub waits for every stream's end.
            await asyncio.gather(*(m.proc.terminate(grace=1) for m in monitors if m is not None),
                                 self.telemetry.stop())
            for h in self.plan.mptcp_hosts:
                text = self.telemetry.monitor_text(h)
                self.monitor_text[h] = text
                if not self.dry_run:
                    self.record.write_raw(h, "mptcp-monitor.txt", text + ("\n" if text else ""))
        if not self.dry_run and self.window[1] and not skip:
            # Offsets again at the end (samplers stopped, so the controller is idle and the
            # estimate unbiased): the drift over the run says how far host stamps can be trusted.
            res = await asyncio.gather(*(c.offset() for c in self.clocks.values()))
            self.record.manifest["clock_offsets"]["end"] = [o.to_json() for o in res]
            start = {o["host"]: o["measured_s"] for o in self.record.manifest["clock_offsets"].get("start", [])}
            self.record.manifest["clock_offsets"]["drift_s"] = {o.host: o.measured_s - start.get(o.host, 0.0)
                                                                for o in res}
        await asyncio.gather(*(c.close() for h, c in self.clocks.items() if h not in skip and not self._keeps(h)),
                             return_exceptions=True)

    def _keeps(self, host: str) -> bool:
        """The connection to `host` goes back to a campaign's pool at the end (see close())."""
        return self.lender is not None and host in self.lender.sessions

    async def restore(self) -> MultiResult[None]:
        """Bring every changed host back to what it was. Per host: nothing, or a RestoreFailed
        naming each problem (the exception that caused it kept as its cause)."""
        self.record.phase("restore")

        async def ensure_connected(h: str) -> bool:
            if self.dry_run or self.pool is None:
                return True
            return await self.pool[h].ensure_connected(RESTORE_RECONNECT_S)

        async def restore_bridge(b: str, problems: list[str]) -> None:
            if not await ensure_connected(b):
                problems.append(f"{b}: unreachable, shaping NOT restored (expected {self.shaper_before[b].to_json()['pipes']})")
                return
            now = None
            if self.dry_run:
                # Nothing was applied, so reading would show the baseline: plan the restore from
                # what the apply would have left, so the listing shows every command of a real run.
                now = self.shapers[b].expected_state(self.shaper_before[b], self._desired_by_bridge()[b])
            after, basis = await restoring.restore_bridge(
                lambda now: restore(self.shapers[b], self.sessions[b], self.shaper_before[b], now),
                now if self.dry_run else self.applied.get(b))
            self.record.manifest["shapers"][b]["restored"] = after.to_json()
            if not self.dry_run:
                self.record.manifest["shapers"][b]["restore_basis"] = basis
            fidelity = shaper_fidelity(self.shaper_before[b].counters, after.counters)
            if fidelity:
                self.record.manifest["shapers"][b]["fidelity"] = fidelity

        async def restore_endpoint(h: str, problems: list[str]) -> None:
            if not await ensure_connected(h):
                problems.append(f"{h}: unreachable, MPTCP configuration NOT restored")
                return
            drv = self.endpoint_drivers[h]
            expected = drv.expected_state(self.endpoint_before[h], self.plan.endpoints[h]) if self.dry_run else None
            after, diffs = await restoring.restore_endpoint(drv, self.sessions[h], self.endpoint_before[h], expected)
            if diffs and not self.dry_run:
                problems.append(f"{h}: " + "; ".join(diffs))
            self.record.manifest["endpoints"][h]["restored"] = after.to_json()

        async def restore_congestion(h: str, problems: list[str]) -> None:
            if await ensure_connected(h):
                await self.congestion.restore_host(h, problems)
            else:
                problems.append(f"{h}: unreachable, congestion controls NOT left")

        async def restore_host(h: str) -> None:
            problems: list[str] = []
            cause: CtlError | None = None
            for owns, fn in ((h in self.shapers and h in self.shaper_before, restore_bridge),
                             (h in self.endpoint_drivers and h in self.endpoint_before, restore_endpoint),
                             (h in self.congestion.drivers, restore_congestion)):
                if not owns:
                    continue
                try:
                    await fn(h, problems)
                except CtlError as exc:
                    problems.append(f"{h}: restore failed: {exc.one_line()}")
                    cause = exc
            if problems:
                raise RestoreFailed(h, problems) from cause

        results = await gather_hosts(dict.fromkeys(reversed(self.changed)), restore_host)
        self.record.manifest["restore_problems"] = restore_problems(results)
        self.record.save()
        return results

    def run_data(self) -> RunData:
        points = self.telemetry.points if self.telemetry is not None else []
        nst = {h: (v[0], v[-1]) for h, v in self.nstat.items() if len(v) >= 2}
        window = self.window if self.window[1] else traffic_window(self.traffic_t0, self.traffic_t1)
        return RunData(self.inv, self.params, self.plan, self.traffic.runs if self.traffic else [], points, nst,
                       self.monitor_text, window, self.record.dir,
                       {h: dict(st.sysctls) for h, st in self.endpoint_before.items()})

    def _record_spawn(self, p: Any) -> None:
        """A remote process started: on disk at once in the record's journal (one appended line),
        and in the manifest once the event loop has handled what is ready now (one save for the
        processes of a burst, e.g. the samplers, monitors and servers starting together, not a
        save of the whole manifest each)."""
        entry = process_record(p)
        self.record.manifest["processes"].append(entry)
        if self.dry_run:
            return
        if self._journal is None:
            self._journal = ProcessJournal(self.record.dir)
        self._journal.add(entry)
        if not self._save_soon:
            self._save_soon = True
            asyncio.get_running_loop().call_soon(self._save_spawned)

    def _save_spawned(self) -> None:
        self._save_soon = False
        self.record.save()

    async def close(self) -> None:
        if self.pool is not None:
            if self.lender is not None:
                self.pool.give_back(self.lender)
            await self.pool.close()
        self.log.close()
        if self._journal is not None:
            self._journal.close()


class _DryPool:
    def __init__(self, sessions: dict[str, Any]):
        self.sessions = sessions

    def __getitem__(self, host: str) -> Any:
        return self.sessions[host]


# ---- the whole run ---------------------------------------------------------------------------

async def execute(scenario: Scenario, params: dict[str, Any], given: dict[str, str], inv: Inventory, plan: RunPlan,
                  *, runs_root: Path, dry_run: bool = False, campaign: str | None = None,
                  influx: InfluxTarget | None = None, progress: Callable[[str], None] | None = None,
                  run_id: str | None = None, live: LiveSink | None = None,
                  connections: SSHPool | None = None, startup: dict[str, float] | None = None,
                  figures_later: bool = False, figures_from_record: bool = False,
                  traffic_started: Callable[[], None] | None = None) -> RunOutcome:
    """Run `plan` on the rack and write its record. `progress` gets one line per step; `live`
    (a terminal's redrawn block) gets a LiveStatus about once a second while traffic runs,
    then None. `connections`: a pool whose open connections the run takes over and hands back.
    `startup`: when `ctl run`'s start-up steps ended (UTC seconds), kept in the record.
    The record is finished when the rack is restored and the summary written; the figures are put
    in after that (controller.run.late): before this returns, or with `figures_later` by the
    caller's `outcome.finish_figures()` once it has let the rack go. `figures_from_record`: none
    are drawn in this process; the outcome's `figures` (a RecordFigures) is drawn from the finished
    record by the caller (a campaign's figure worker, controller/campaign/figures.py).
    `traffic_started`: called on the event loop once the traffic's clients are running (not in a
    dry run, nor when the run ends before its traffic)."""
    rid = run_id or make_run_id(scenario.name, scenario.run_id_parts(given, params))
    tmp = None
    if dry_run:
        tmp = tempfile.TemporaryDirectory(prefix="ctl-dry-run-")
        root = Path(tmp.name)
    else:
        root = runs_root
    record = RunRecord(root, rid)
    record.start(scenario=scenario.name, parameters={"values": jsonable(params), "given": given,
                                                     "plan": plan.to_json()},
                 inventory=inv.snapshot(), inventory_file=str(source_of(inv) or ""), campaign=campaign,
                 dry_run=dry_run)
    # Every value changed on its way to the rack (what was asked, what is applied, why): `ctl run`
    # warned about each on stderr; here they stay with the run.
    record.manifest["conversions"] = [c.to_json() for c in plan.conversions]
    if startup:
        record.manifest["startup"] = dict(startup)
    run = Run(scenario, params, given, inv, plan, record, dry_run=dry_run, campaign=campaign, influx=influx,
              progress=progress, live=live, lender=connections, traffic_started=traffic_started)
    status, error, exit_code = "completed", None, 0
    error_type: str | None = None
    bug: BaseException | None = None
    summary: dict | None = None
    main = asyncio.current_task()
    received: list[int] = []
    late: dict[str, asyncio.Future] = {}      # work off the rack's path: the InfluxDB push, the summary
    drawing: list[FigureDrawing | RecordFigures] = []   # the figures, drawn in a thread once the summary is known

    async def summary_then_figures(data: RunData) -> dict:
        summary = await asyncio.to_thread(scenario.summarize, data)
        drawing.append(RecordFigures(record.dir) if figures_from_record else
                       FigureDrawing(scenario, data, summary, record.dir))
        return summary

    def on_signal(signum: int) -> None:
        if received:
            return  # restore is in progress: a second Ctrl-C must not leave the rack half restored
        received.append(signum)
        if progress:
            progress(f"{signal.Signals(signum).name}: stopping traffic and restoring the rack")
        if main is not None:
            main.cancel()

    loop = asyncio.get_running_loop()
    # The imports and figures that run in threads beside the event loop (preload_libraries,
    # the summary, the figures) hand the interpreter back every millisecond, not every 5: each round trip
    # of the run waits at most that long for it.
    switch = sys.getswitchinterval()
    sys.setswitchinterval(min(switch, 0.001))
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal, sig)
        except (NotImplementedError, RuntimeError):
            pass
    try:
        try:
            await run.prepare()
            await run.configure()
            await run.measure()
        except asyncio.CancelledError:
            sig = received[0] if received else signal.SIGINT
            status, error, exit_code = "aborted", f"interrupted by {signal.Signals(sig).name}", 128 + sig
        except SSHError as exc:
            status, error, exit_code, error_type = "aborted", f"lost a host: {exc.one_line()}", 1, type(exc).__name__
        except CtlError as exc:
            status, error, exit_code, error_type = "failed", exc.one_line(), exc.exit_code, type(exc).__name__
            if isinstance(exc, TrafficError):
                exit_code = 1
        except Exception as exc:  # a bug: the rack is still restored, the record says so, then it propagates
            import traceback
            status, error, exit_code, error_type = "error", f"{type(exc).__name__}: {exc}", 1, type(exc).__name__
            record.manifest["errors"].append({"t": time.time(), "traceback": traceback.format_exc()})
            bug = exc
        finally:
            # Everything below must run even if we were cancelled: shield it from a repeat cancel.
            # Once the traffic and samplers have stopped, the summary (pure, of what was measured)
            # is computed in a thread, then the figures in another, and the InfluxDB push drains,
            # while the hosts are restored: none waits for the others. The record is finished below,
            # once the restore, the summary and the push have ended; the figures go in after it.
            def off_rack() -> None:
                if not dry_run and run.writer is not None:
                    late["influx"] = asyncio.ensure_future(run.finish_influx())
                if status == "completed" and not dry_run:
                    late["summary"] = asyncio.ensure_future(summary_then_figures(run.run_data()))
            cleanup = asyncio.ensure_future(_cleanup(run, off_rack))
            try:
                problems = await asyncio.shield(cleanup)
            except asyncio.CancelledError:
                problems = await cleanup
        computed = late.get("summary")
        if problems:
            error = (error + "; " if error else "") + "RESTORE PROBLEMS: " + "; ".join(problems)
            if status == "completed":
                status = "failed"
            exit_code = exit_code or 1
        if computed is not None and status != "completed":
            await asyncio.gather(computed, return_exceptions=True)     # its files are replaced below
            if drawing:
                await asyncio.to_thread(drawing.pop().wait)
        if status == "completed" and not dry_run:
            try:
                summary = await (computed if computed is not None else summary_then_figures(run.run_data()))
                attach_own_hystart(summary, record.manifest.get("congestion"))   # read by the restore's unload
                record.write_summary(summary)
                if summary.get("valid") is False:
                    status, error_type = "invalid", "ResultInvalid"
                    error = "; ".join(summary.get("invalid_reasons", [])) or "result invalid"
                    exit_code = 4
            except CtlError as exc:
                status, error, exit_code, error_type = "invalid", exc.one_line(), 4, type(exc).__name__
        elif not dry_run:
            # Aborted / failed: keep and summarize what was measured, clearly marked partial
            # (the units that ran to their end, for scenarios whose units are independent).
            try:
                summary, figs = partial_summary(scenario, run.run_data(), status, error, record.dir,
                                                unit=getattr(run.traffic, "unit_name", "flows"))
                record.write_summary(summary)
                if figs:
                    record.manifest["figures"] = figs
            except Exception as exc:  # the record must still be closed
                record.manifest["errors"].append({"t": time.time(), "error": f"partial summary failed: {exc!r}"})
    finally:
        sys.setswitchinterval(switch)
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.remove_signal_handler(sig)
            except (NotImplementedError, RuntimeError):
                pass
        pending = 0
        if run.writer is not None and not dry_run:
            ok, err = await (late["influx"] if "influx" in late else run.finish_influx())
            pending = pending_points(record.dir)
            record.manifest["telemetry"]["influx"] = {"all_sent": ok, "pending": pending, "error": err,
                                                      "errors": run.writer.errors}
        record.manifest["exit_code"] = exit_code
        record.manifest["error_type"] = error_type
        if drawing:
            record.manifest["figures_drawn"] = None     # being drawn: put in after the record is finished
        record.finish(status, error)
        await run.close()
        if tmp is not None:
            tmp.cleanup()
    if bug is not None:
        raise bug
    outcome = RunOutcome(record.id, None if dry_run else record.dir, status, summary, exit_code, error,
                         run.dry_log, pending, error_type, drawing[0] if drawing else None, record)
    if not figures_later:
        await asyncio.to_thread(outcome.finish_figures)
    return outcome


async def _cleanup(run: Run, after_stop: Callable[[], None] | None = None) -> list[str]:
    """Stop what runs, restore every host; the problems, one line each (empty: all restored).
    `after_stop` is called once the traffic and samplers have stopped, before the restore."""
    reachable = await run.reconnect()
    try:
        await run.stop_measuring(reachable)
    except Exception as exc:
        run.record.manifest["errors"].append({"t": time.time(), "error": f"stopping measurement: {exc!r}"})
    if after_stop is not None:
        after_stop()
    results = await run.restore()
    for r in results.failed.values():
        if not isinstance(r.exception, CtlError):
            raise r.exception  # a bug in a restore path: the record says what was restored so far
    return restore_problems(results)
