"""A host's clock against the controller's, over SSH: NTP-style offsets from a persistent echo
channel (ClockEcho, opened once per run and asked at its start and end), with `date` over exec
channels where a host has no python3. Used by runs, campaign health checks, field runs and the
inventory probe to align every host's samples on the controller's clock."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from controller.commands import Command
from controller.errors import SSHError
from controller.ssh import SSHSession


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


# A constant echo server: one host timestamp (ns) per line read. Data never enters the script.
_CLOCK_ECHO = "import sys, time\nfor _ in sys.stdin:\n    print(time.time_ns(), flush=True)\n"


class ClockEcho:
    """A host's clock over one persistent channel: opened once, asked at a run's start and again
    at its end (starting python3 on a host costs 0.1-0.3 s; between exchanges the echo waits on
    its stdin). Without python3 on the host, `date` over separate exec channels."""

    def __init__(self, session: SSHSession):
        self.session = session
        self.proc: Any = None
        self._tried = False

    async def open(self) -> None:
        """Start the echo (once); without python3 on the host, `offset` falls back to `date`."""
        if not self._tried:
            self._tried = True
            try:
                self.proc = await self.session.spawn(("python3", "-u", "-c", _CLOCK_ECHO), note="clock offset",
                                                     stdin_open=True)
            except SSHError:
                self.proc = None

    async def offset(self, samples: int = 9) -> ClockOffset:
        await self.open()
        best: tuple[float, float] | None = None
        method = "python3 echo over a persistent channel"
        if self.proc is not None:
            try:
                for _ in range(samples):
                    t0 = time.time()
                    self.proc.send_line("t")
                    line = await self.proc.readline(5)
                    t1 = time.time()
                    host_t = int(line) / 1e9
                    est = (host_t - (t0 + t1) / 2, t1 - t0)
                    if best is None or est[1] < best[1]:
                        best = est
            except (ValueError, SSHError, OSError):
                best = None
                await self.close()
        return _offset_from(self.session, best, method) if best is not None else await _offset_by_date(self.session)

    async def close(self) -> None:
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
