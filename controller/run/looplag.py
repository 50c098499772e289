"""How late the controller's event loop ran during a run: the quality of the times ctl stamps itself.

Most of a run's times come from the hosts (samplers, monitors: host clocks corrected by the
measured offset), but some are the controller's own reading of `time.time()` when it handles
something: iperf3's test start (the flow points are placed from it, bounded by the client's exit),
an SNMP poll's receipt, a progress line, the live view's frames. A controller whose event loop is
held up (a loaded machine, a long computation in the loop) stamps those late by as much: 0.7 s
was seen on the 2-core development machine with a test suite beside the run. The run measures
this instead of assuming it: a task asks to wake every `PERIOD_S` and records how late it woke.
The summary goes into the record (`controller_loop`), and a lag above `STALL_S` during the traffic
is a warning on the run, with when and how long.

`summarize` is pure; `LoopLagMonitor` is the task.
"""
from __future__ import annotations

import asyncio
import time
from array import array
from typing import Any

PERIOD_S = 0.1           # how often the monitor asks to wake
STALL_S = 0.25           # a lag above this is a stall worth a warning: coarser than a sampler's 0.1 s
_MAX_SAMPLES = 1 << 21   # ~58 h at PERIOD_S; beyond, only the running maximum and counts are kept


def summarize(times: Any, lags: Any, window: tuple[float, float] | None, *, period_s: float = PERIOD_S,
              stall_s: float = STALL_S, dropped: int = 0, max_dropped: float = 0.0) -> dict:
    """The lag statistics of samples (`times`: wake-up time, epoch s; `lags`: s late), over all of
    them and over the traffic `window` (start, end; epoch s): count, median, 99th percentile and
    maximum lag (s), when the worst was, and the stalls (lags above `stall_s`) in the window."""
    def stats(idx: list[int]) -> dict:
        if not idx:
            return {"samples": 0, "median_s": None, "p99_s": None, "max_s": None, "worst_at": None}
        vals = sorted(lags[i] for i in idx)
        worst = max(idx, key=lambda i: lags[i])
        return {"samples": len(idx), "median_s": round(vals[len(vals) // 2], 4),
                "p99_s": round(vals[min(len(vals) - 1, int(0.99 * len(vals)))], 4),
                "max_s": round(lags[worst], 4), "worst_at": times[worst]}
    every = list(range(len(lags)))
    out: dict[str, Any] = {"period_s": period_s, "stall_s": stall_s, "all": stats(every)}
    if dropped:
        out["all"]["samples"] += dropped
        out["all"]["max_s"] = round(max(out["all"]["max_s"] or 0.0, max_dropped), 4)
    if window is not None and window[1] > window[0]:
        inside = [i for i in every if window[0] <= times[i] <= window[1] + period_s]
        out["traffic"] = stats(inside)
        out["stalls"] = [{"at": times[i] - lags[i], "lag_s": round(lags[i], 4)} for i in inside if lags[i] > stall_s]
    return out


def warning(summary: dict) -> str | None:
    """One line for the run's progress and record when the loop stalled during the traffic."""
    stalls = summary.get("stalls") or []
    if not stalls:
        return None
    worst = max(s["lag_s"] for s in stalls)
    return (f"the controller's event loop stalled {len(stalls)} time(s) during the traffic, up to {worst:.2f} s "
            f"(a loaded controller): times ctl stamps itself (iperf3 test starts, SNMP polls, the live view) may be "
            f"off by that much; host-stamped samples are not affected (record: controller_loop)")


class LoopLagMonitor:
    """A task that wakes every `period_s` and keeps how late each wake-up was."""

    def __init__(self, period_s: float = PERIOD_S):
        self.period_s = period_s
        self.times = array("d")
        self.lags = array("d")
        self.dropped = 0
        self.max_dropped = 0.0
        self._task: asyncio.Task | None = None

    @property
    def running(self) -> bool:
        return self._task is not None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time()
            await asyncio.sleep(self.period_s)
            lag = max(0.0, loop.time() - asked - self.period_s)
            if len(self.lags) < _MAX_SAMPLES:
                self.times.append(time.time())
                self.lags.append(lag)
            else:
                self.dropped += 1
                self.max_dropped = max(self.max_dropped, lag)

    async def stop(self, window: tuple[float, float] | None) -> dict:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        return summarize(self.times, self.lags, window, period_s=self.period_s, dropped=self.dropped,
                         max_dropped=self.max_dropped)
