"""A host's clock against the controller's, over SSH: NTP-style offsets from a persistent echo
channel (ClockEcho, opened once per run and asked at its start and end), with `date` over exec
channels where a host has no python3. Used by runs, campaign health checks, field runs and the
inventory probe to align every host's samples on the controller's clock."""
from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Iterator

from controller.commands import Command
from controller.errors import SSHError
from controller.ssh import SSHSession


class QuietGate:
    """Keeps this process's clock exchanges and its figure drawing apart (issue 28). An exchange
    times each round trip on the event loop; a figure drawn in a thread of the same process
    (matplotlib holds the interpreter lock for milliseconds at a time) would delay the loop's
    reading of the answers and widen every round trip, i.e. the offset's uncertainty, and with it
    a campaign's health check could end "unclear". Exchanges run together; a drawing waits until
    none runs, and no exchange starts while one is drawn (the loop is never blocked: it polls).
    Where it still applies: a campaign draws its runs' figures in a worker process
    (controller/run/figworker.py), which holds no lock of the daemon's, and passes this gate only
    when no worker could be started (controller/campaign/figures.py draws in a thread then); `ctl
    run` alone draws after its run's last exchange, so the gate never waits there."""

    POLL_S = 0.005

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.exchanges = 0
        self.drawings = 0

    @contextlib.contextmanager
    def drawing(self) -> Iterator[None]:
        """In a drawing thread (never on the event loop: it blocks)."""
        with self._cond:
            self._cond.wait_for(lambda: self.exchanges == 0)
            self.drawings += 1
        try:
            yield
        finally:
            with self._cond:
                self.drawings -= 1
                self._cond.notify_all()

    @contextlib.asynccontextmanager
    async def exchange(self) -> AsyncIterator[None]:
        """On the event loop, around the round trips of a clock measurement."""
        while True:
            with self._cond:
                if self.drawings == 0:
                    self.exchanges += 1
                    break
            await asyncio.sleep(self.POLL_S)
        try:
            yield
        finally:
            with self._cond:
                self.exchanges -= 1
                self._cond.notify_all()


QUIET = QuietGate()


@dataclass
class ClockOffset:
    host: str
    offset_s: float      # host clock minus controller clock, as applied to the host's timestamps
    rtt_s: float         # round trip of the best exchange: the offset is known to +-rtt/2
    measured_s: float    # the raw estimate before the significance test
    method: str
    measured_at: float = field(default_factory=time.time)

    def to_json(self) -> dict:
        return dict(self.__dict__)


# A constant echo server: per line read, the line (a request's token) and one host timestamp
# (ns). Data never enters the script. The token: an answer left unread by an exchange that was
# cut short (a cancelled run) is never taken for the answer to a later request.
_MAX_STALE = 64                       # unread answers skipped before the echo is given up
_CLOCK_ECHO = "import sys, time\nfor line in sys.stdin:\n    print(line.strip(), time.time_ns(), flush=True)\n"


class ClockEcho:
    """A host's clock over one persistent channel: opened once, asked at a run's start and again
    at its end (starting python3 on a host costs 0.1-0.3 s; between exchanges the echo waits on
    its stdin). Without python3 on the host, `date` over separate exec channels."""

    def __init__(self, session: SSHSession, *, keep: bool = False):
        self.session = session
        self.proc: Any = None
        self.keep = keep                  # kept on the session's connection once open (see kept())
        self.reused = False               # opened before this use (by a health check or an earlier run)
        self._conn: Any = None            # the connection its channel lives on
        self._seq = 0                     # the last request's token
        self._tried = False

    @classmethod
    def kept(cls, session: SSHSession) -> "ClockEcho":
        """The echo kept open on this session's connection, else a new one kept there once open.
        A campaign keeps its connections between runs: its health check, the run after it and the
        next check ask the same python3 instead of starting one each (two python3 starts per host
        and run). A kept echo that no longer answers is replaced by a fresh one (offset())."""
        echo = getattr(session, "echo", None)
        if echo is None or echo.proc is None or echo._conn is None or echo._conn is not session._conn:
            return cls(session, keep=True)
        echo.session, echo.reused = session, True
        return echo

    async def open(self) -> None:
        """Start the echo (once); without python3 on the host, `offset` falls back to `date`."""
        if not self._tried:
            self._tried = True
            try:
                self.proc = await self.session.spawn(("python3", "-u", "-c", _CLOCK_ECHO), note="clock offset",
                                                     stdin_open=True)
            except SSHError:
                self.proc = None
            else:
                self._conn = getattr(self.session, "_conn", None)
                if self.keep:
                    self.session.echo = self

    async def offset(self, samples: int = 9) -> ClockOffset:
        await self.open()
        async with QUIET.exchange():
            best = await self._exchange(samples)
        if best is None and self.reused:              # the kept echo is gone: a fresh one, once
            self.reused, self._tried = False, False
            await self.open()
            async with QUIET.exchange():
                best = await self._exchange(samples)
        if best is None:
            return await _offset_by_date(self.session)
        return _offset_from(self.session, best, "python3 echo over a persistent channel")

    async def _exchange(self, samples: int) -> tuple[float, float] | None:
        """(offset, round trip) of the exchange with the smallest round trip; None (and the echo
        closed) when it does not answer."""
        if self.proc is None:
            return None
        best: tuple[float, float] | None = None
        try:
            for _ in range(samples):
                self._seq += 1
                token = str(self._seq)
                t0 = time.time()
                self.proc.send_line(token)
                for _stale in range(_MAX_STALE + 1):
                    got, _, stamp = (await self.proc.readline(5)).partition(" ")
                    if got == token:
                        break
                else:
                    raise ValueError("the clock echo answers other requests")
                t1 = time.time()
                host_t = int(stamp) / 1e9
                est = (host_t - (t0 + t1) / 2, t1 - t0)
                if best is None or est[1] < best[1]:
                    best = est
        except (ValueError, SSHError, OSError):
            await self.close()
            return None
        return best

    async def close(self) -> None:
        if getattr(self.session, "echo", None) is self:
            self.session.echo = None
        if self.proc is not None:
            proc, self.proc = self.proc, None
            proc.close_stdin()
            await proc.wait(5)


async def measure_clock_offset(session: SSHSession, samples: int = 9) -> ClockOffset:
    """NTP-style offset over a persistent channel (sub-millisecond round trips): the host's
    time against the midpoint of each exchange, keeping the exchange with the smallest
    round trip. An offset smaller than half that round trip is not distinguishable from 0
    and is applied as 0 (the estimate is recorded)."""
    echo = ClockEcho(session)
    try:
        return await echo.offset(samples)
    finally:
        await echo.close()


async def _offset_by_date(session: SSHSession) -> ClockOffset:
    best: tuple[float, float] | None = None
    method = "date over separate exec channels"
    for _ in range(5):
        t0 = time.time()
        r = await session.run(Command(("date", "+%s"), timeout=10, note="clock offset (no python3)"))
        t1 = time.time()
        if r.ok:
            # whole seconds only: the offset is known to +-0.5 s plus the round trip
            est = (float(r.stdout.strip()) + 0.5 - (t0 + t1) / 2, (t1 - t0) + 1.0)
            if best is None or est[1] < best[1]:
                best = est
    if best is None:
        raise SSHError(session.host, "could not read the host clock")
    return _offset_from(session, best, method)


def _offset_from(session: SSHSession, best: tuple[float, float], method: str) -> ClockOffset:
    measured, rtt = best
    applied = measured if abs(measured) > rtt / 2 else 0.0
    return ClockOffset(session.host, applied, rtt, measured, method)
