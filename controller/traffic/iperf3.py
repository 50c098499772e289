"""Traffic: flows as data, iperf3 command builders (pure), and synchronized execution.

A flow is one transport connection (TCP, or MPTCP with its subflows) or a group of
parallel ones (`streams`). MPTCP uses iperf3's native `-m` where the version has it
(3.19+), `mptcpize run` otherwise. Servers listen on every address (an MPTCP server
must accept joins on the addresses it announces); clients bind their path's address.
"""
from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Literal, Sequence

from controller.commands import Command
from controller.errors import SSHError, TrafficError
from controller.traffic.progress import TrafficProgress, Unit, format_seconds, timed_progress
from controller.units import counted
if TYPE_CHECKING:  # asyncssh is heavy to import; bad-input paths never need it
    from controller.ssh import SSHPool, SSHRemoteProcess

Protocol = Literal["tcp", "mptcp", "udp"]


@dataclass(frozen=True)
class FlowSpec:
    name: str
    protocol: Protocol
    client: str
    server: str
    server_addr: str
    port: int
    client_addr: str | None = None
    cc: str | None = None
    duration_s: float | None = None
    bytes: int | None = None
    streams: int = 1
    start_delay_s: float = 0.0
    udp_rate_bps: int | None = None
    link: str | None = None           # single-path flows: the link they cross
    interval_s: float = 0.5
    socket_buffer: int | None = None  # iperf3 -w (bytes)
    omit_s: float = 0.0

    def to_json(self) -> dict:
        return dict(self.__dict__)


def iperf3_supports_mptcp(version_text: str) -> bool:
    m = re.search(r"iperf (\d+)\.(\d+)", version_text)
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= (3, 19)


def server_argv(flow: FlowSpec, native_mptcp: bool) -> tuple[str, ...]:
    argv = ["iperf3", "-s", "-1", "-p", str(flow.port), "-J", "-i", f"{flow.interval_s:g}"]
    return _mptcp_wrap(argv, flow, native_mptcp)


def client_argv(flow: FlowSpec, native_mptcp: bool) -> tuple[str, ...]:
    argv = ["iperf3", "-c", flow.server_addr, "-p", str(flow.port), "-J", "-i", f"{flow.interval_s:g}",
            "--connect-timeout", "5000"]
    if flow.client_addr:
        argv += ["-B", flow.client_addr]
    if flow.bytes is not None:
        argv += ["-n", str(flow.bytes)]
    elif flow.duration_s is not None:
        argv += ["-t", f"{flow.duration_s:g}"]
    if flow.streams > 1:
        argv += ["-P", str(flow.streams)]
    if flow.cc and flow.protocol != "udp":
        argv += ["-C", flow.cc]
    if flow.protocol == "udp":
        argv += ["-u", "-b", str(flow.udp_rate_bps or 1_000_000)]
    if flow.socket_buffer:
        argv += ["-w", str(flow.socket_buffer)]
    if flow.omit_s:
        argv += ["-O", f"{flow.omit_s:g}"]
    return _mptcp_wrap(argv, flow, native_mptcp)


def _mptcp_wrap(argv: list[str], flow: FlowSpec, native: bool) -> tuple[str, ...]:
    if flow.protocol != "mptcp":
        return tuple(argv)
    if native:
        return tuple(argv[:1] + ["-m"] + argv[1:])
    return ("mptcpize", "run", *argv)


@dataclass
class FlowRun:
    spec: FlowSpec
    client_argv: tuple[str, ...]
    server_argv: tuple[str, ...]
    client_spawned: float | None = None      # controller time the client's start was asked for
    client_started: float | None = None      # controller time the client was seen running
    client_exited: float | None = None       # controller time the client's output ended
    client_json: str = ""
    server_json: str = ""
    client_status: int | None = None
    server_status: int | None = None
    error: str | None = None
    client_pid: int | None = None
    server_pid: int | None = None
    client_lines: list[str] = field(default_factory=list)

    @property
    def ended(self) -> bool:
        """The client ran to its own end (successfully or not), not cut short by an abort."""
        return self.client_status is not None

    @property
    def state(self) -> str:
        if self.client_status is not None:
            return "done" if self.error is None else "failed"
        return "running" if self.client_started is not None else "waiting"

    def test_start(self, test_length_s: float | None) -> float | None:
        """When iperf3's test began (controller clock), given how long it ran by its own report."""
        return estimate_test_start(self.client_spawned, self.client_started, self.client_exited, test_length_s)

    def to_json(self) -> dict:
        return {"name": self.spec.name, "spec": self.spec.to_json(), "client_argv": list(self.client_argv),
                "server_argv": list(self.server_argv), "client_spawned": self.client_spawned,
                "client_started": self.client_started, "client_exited": self.client_exited,
                "client_status": self.client_status, "server_status": self.server_status, "error": self.error,
                "client_pid": self.client_pid, "server_pid": self.server_pid}


def estimate_test_start(spawned: float | None, started: float | None, exited: float | None,
                        test_length_s: float | None) -> float | None:
    """When iperf3's test began on the controller's clock, for placing its intervals (pure).

    iperf3 reports its intervals in seconds since its own test start, which ctl does not see:
    - `spawned` (ctl asked the host to start the client) is a lower bound;
    - `exited - test_length_s` (ctl saw the client's output end; the test had run that long by
      then) is an upper bound: the client exits after its last interval and the results exchange;
    - `started` (ctl saw the client running: the spawn's first line) is the estimate, but it is
      late by however long the controller took to read that line (0.7 s was seen on a loaded
      controller), and early by iperf3's own set-up (connections: a few round trips).
    The estimate is `started` kept within the bounds: an interval is never placed after the
    client had already ended, nor before ctl asked for it. None without `started`."""
    if started is None:
        return None
    t = started
    if exited is not None and test_length_s is not None and test_length_s >= 0:
        t = min(t, exited - test_length_s)
    if spawned is not None:
        t = max(t, spawned)
    return t


class TrafficRunner:
    """Start servers, wait until they listen, start every client together, collect JSON."""

    def __init__(self, pool: SSHPool, flows: Sequence[FlowSpec], native_mptcp: dict[str, bool]):
        self.pool = pool
        self.runs = [FlowRun(f, client_argv(f, native_mptcp.get(f.client, False)),
                             server_argv(f, native_mptcp.get(f.server, False))) for f in flows]
        self._servers: dict[str, SSHRemoteProcess] = {}
        self._clients: dict[str, SSHRemoteProcess] = {}
        self.t0: float | None = None
        # One line per finished test when the tests run one after the other (the run's
        # progress lines on stderr); the run state machine sets it.
        self.on_event: Callable[[str], None] = lambda msg: None

    @property
    def staggered(self) -> bool:
        return len(self.runs) > 1 and any(r.spec.start_delay_s for r in self.runs)

    @property
    def unit_name(self) -> str:
        return "iperf3 tests" if self.staggered else "iperf3 flows"

    @property
    def span_s(self) -> float:
        """From the first client's start to the planned end of the last one."""
        return max((r.spec.start_delay_s + (r.spec.duration_s or 0.0) for r in self.runs), default=0.0)

    def describe(self) -> str:
        n = len(self.runs)
        if self.staggered:
            lengths = sorted({r.spec.duration_s for r in self.runs if r.spec.duration_s})
            each = f" of {lengths[0]:g} s" if len(lengths) == 1 else ""
            return f"{n} iperf3 tests{each} one after the other, {format_seconds(self.span_s)} in all"
        return f"{counted(n, 'iperf3 flow')} for {format_seconds(self.span_s)}"

    def progress(self, now: float) -> TrafficProgress:
        units = [Unit(r.spec.name, r.state, r.spec.name) for r in self.runs]
        if self.t0 is None:
            return timed_progress(self.describe(), units, 0.0, self.span_s, waiting_for="the iperf3 servers to listen",
                                  counted=self.staggered)
        elapsed = now - self.t0
        waiting = ""
        if self.staggered and not any(u.state == "running" for u in units):
            nxt = min((self.t0 + r.spec.start_delay_s for r in self.runs if r.state == "waiting"), default=None)
            if nxt is not None:
                waiting = f"the next test (in {format_seconds(nxt - now)})"
        return timed_progress(self.describe(), units, elapsed, self.span_s, waiting_for=waiting,
                              counted=self.staggered)

    async def start_servers(self) -> None:
        """Every server at once, then each one listening (all have started, or failed, before
        this returns: nothing is left starting behind an error)."""
        async def one(r: FlowRun) -> None:
            p = await self.pool[r.spec.server].spawn(r.server_argv, note=f"iperf3 server for {r.spec.name}")
            self._servers[r.spec.name] = p
            r.server_pid = p.pid
            await self._wait_listening(r.spec)
        results = await asyncio.gather(*(one(r) for r in self.runs), return_exceptions=True)
        for res in results:
            if isinstance(res, BaseException):
                raise res

    async def _wait_listening(self, spec: FlowSpec, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        session = self.pool[spec.server]
        while time.monotonic() < deadline:
            res = await session.run(Command(("ss", "-Hltn", "sport", "=", f":{spec.port}"), timeout=5,
                                            note=f"is the {spec.name} server listening?",
                                            assume=f"LISTEN 0 4096 *:{spec.port} *:*"))
            if res.ok and res.stdout.strip():
                return
            await asyncio.sleep(0.05)
        raise TrafficError(f"{spec.server}: iperf3 server for {spec.name} not listening on port {spec.port}")

    async def run_clients(self, timeout_s: float) -> None:
        """All clients start together (those with a start delay, that much later)."""
        self.t0 = time.time()

        async def one(r: FlowRun) -> None:
            if r.spec.start_delay_s and not getattr(self.pool[r.spec.client], "dry_run", False):
                await asyncio.sleep(max(0.0, self.t0 + r.spec.start_delay_s - time.time()))
            r.client_spawned = time.time()
            p = await self.pool[r.spec.client].spawn(r.client_argv, note=f"iperf3 client {r.spec.name}")
            r.client_started = time.time()
            r.client_pid = p.pid
            self._clients[r.spec.name] = p
            # Lines are kept as they arrive: an interrupted run still has what iperf3 printed.
            await asyncio.wait_for(_collect(p, r.client_lines), timeout_s + r.spec.start_delay_s)
            r.client_exited = time.time()
            text = "\n".join(r.client_lines)
            res = await p.wait(10, stdout=text)
            r.client_json, r.client_status = text, res.exit_status
            if res.exit_status != 0:
                r.error = _iperf_error(text) or res.stderr.strip()[:300] or f"exit {res.exit_status}"
            if self.staggered:
                done = sum(1 for x in self.runs if x.client_status is not None)
                self.on_event(f"iperf3 test {done}/{len(self.runs)} {r.spec.name}: "
                              + (f"failed: {r.error}" if r.error else _receiver_rate_text(text)))

        results = await asyncio.gather(*(one(r) for r in self.runs), return_exceptions=True)
        for r, res in zip(self.runs, results):
            if isinstance(res, asyncio.TimeoutError):
                r.error = f"did not finish within {timeout_s:.0f} s"
            elif isinstance(res, SSHError):
                raise res
            elif isinstance(res, BaseException):
                raise res

    async def collect_servers(self, timeout_s: float = 15.0) -> None:
        async def one(r: FlowRun) -> None:
            p = self._servers.get(r.spec.name)
            if p is None:
                return
            try:
                text = await asyncio.wait_for(p.read_all(), timeout_s)
            except asyncio.TimeoutError:
                await p.terminate()
                text = ""
            res = await p.wait(5, stdout=text)
            r.server_json, r.server_status = text, res.exit_status
        await asyncio.gather(*(one(r) for r in self.runs))

    async def stop_all(self, skip_hosts: set[str] = frozenset()) -> None:
        """Abort path: end every client and server we started, by PID, and keep what they printed
        (iperf3 prints its JSON, with the data so far, when it is terminated)."""
        for r in self.runs:
            p = self._clients.get(r.spec.name)
            if p is None or r.client_status is not None or r.spec.client in skip_hosts:
                continue
            try:
                await p.terminate(grace=2)
                await asyncio.wait_for(_collect(p, r.client_lines), 5)
                r.client_exited = time.time()
            except (asyncio.TimeoutError, SSHError):
                pass
            r.client_json = "\n".join(r.client_lines)
            r.error = r.error or "interrupted"
        procs = [p for n, p in list(self._clients.items()) + list(self._servers.items())
                 if p.host not in skip_hosts]
        await asyncio.gather(*(p.terminate(grace=2) for p in procs), return_exceptions=True)
        await asyncio.gather(*(p.wait(3) for p in procs), return_exceptions=True)


async def _collect(proc: SSHRemoteProcess, into: list[str]) -> None:
    async for line in proc.lines():
        into.append(line)


def _receiver_rate_text(text: str) -> str:
    # imported when a flow ends, not with the scenarios' FlowSpec at every start-up (issue 28)
    from controller.parsers import iperf3 as iperf3_parser
    try:
        bps = iperf3_parser.receiver_throughput_bps(iperf3_parser.parse(text))
    except Exception:  # a progress line must never fail the run
        bps = None
    return f"{bps / 1e6:.2f} Mbit/s at the receiver" if bps else "done"


def _iperf_error(text: str) -> str | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data.get("error") if isinstance(data, dict) else None


@dataclass
class FlowResult:
    name: str
    sender_bps: float | None = None
    receiver_bps: float | None = None
    bytes_received: int | None = None
    seconds: float | None = None
    retransmits: int | None = None
    error: str | None = None
    intervals: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d.pop("intervals")
        return d
