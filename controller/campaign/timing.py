"""Time in a campaign (pure): daily windows, `--at`, finish estimates, spans and bars."""
from __future__ import annotations

import datetime as dt
import math
import re
import statistics
from dataclasses import dataclass
from typing import Sequence

from controller.errors import ParameterError


_HHMM = re.compile(r"^\s*([01]?\d|2[0-3]):([0-5]\d)\s*$")


@dataclass(frozen=True)
class Window:
    """A daily stretch of local time, e.g. 22:00-07:00 (crossing midnight). Runs start only
    when they are expected to end inside the stretch they start in."""

    start_min: int
    end_min: int

    @property
    def length_s(self) -> float:
        return ((self.end_min - self.start_min) % 1440) * 60.0

    def text(self) -> str:
        return f"{self.start_min // 60:02d}:{self.start_min % 60:02d}-{self.end_min // 60:02d}:{self.end_min % 60:02d}"

    def _stretches(self, t: dt.datetime) -> list[tuple[dt.datetime, dt.datetime]]:
        day = t.replace(hour=0, minute=0, second=0, microsecond=0)
        out = []
        for d in (-1, 0, 1, 2):
            s = day + dt.timedelta(days=d, minutes=self.start_min)
            out.append((s, s + dt.timedelta(seconds=self.length_s)))
        return out

    def current(self, t: dt.datetime) -> tuple[dt.datetime, dt.datetime] | None:
        """The open stretch containing t (start inclusive, end exclusive), or None."""
        for s, e in self._stretches(t):
            if s <= t < e:
                return s, e
        return None

    def next_open(self, t: dt.datetime) -> dt.datetime:
        """The first stretch start after t."""
        return min(s for s, _e in self._stretches(t) if s > t)

    def start_for(self, t: dt.datetime, run_s: float) -> dt.datetime:
        """When a run of `run_s` seconds may start, at t or later (a run longer than the
        whole window starts at the window's opening: refusing it forever would stall)."""
        cur = self.current(t)
        if cur is not None and (t + dt.timedelta(seconds=run_s) <= cur[1] or
                                (run_s > self.length_s and t == cur[0])):
            return t
        return self.next_open(t)


def parse_window(text: str) -> Window:
    parts = str(text).split("-")
    if len(parts) != 2:
        raise ValueError(f"{text!r} is not a time window (example: 22:00-07:00)")
    mins = []
    for p in parts:
        m = _HHMM.match(p)
        if not m:
            raise ValueError(f"{text!r}: {p.strip()!r} is not a time of day HH:MM")
        mins.append(int(m.group(1)) * 60 + int(m.group(2)))
    if mins[0] == mins[1]:
        raise ValueError(f"{text!r}: an empty window (leave `window` out to run at any time)")
    return Window(mins[0], mins[1])


def parse_at(text: str, now: float) -> float:
    """`--at 22:00` (the next 22:00, local time) or `--at 2026-11-22T22:00` -> epoch seconds."""
    m = _HHMM.match(text)
    if m:
        t = dt.datetime.fromtimestamp(now)
        target = t.replace(hour=int(m.group(1)), minute=int(m.group(2)), second=0, microsecond=0)
        if target <= t:
            target += dt.timedelta(days=1)
        return target.timestamp()
    try:
        return dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise ParameterError(f"--at: {text!r} is neither HH:MM nor an ISO date and time") from None


def local(ts: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(ts)


# ==== estimates (pure) ============================================================================

def estimate_finish(now: float, run_seconds: Sequence[float], pause_s: float, window: Window | None,
                    not_before: float | None = None) -> float:
    """When the listed runs are done, starting at `now`, pausing between runs and waiting for
    the window where needed."""
    t = max(now, not_before or now)
    for i, d in enumerate(run_seconds):
        if i:
            t += pause_s
        if window is not None:
            t = window.start_for(local(t), d).timestamp()
        t += d
    return t


def learned_overhead(samples: Sequence[float], default_s: float) -> float:
    """Set-up + restore time per run: the median of what was observed (once there are a few)."""
    good = [s for s in samples if s >= 0 and math.isfinite(s)]
    return statistics.median(good) if len(good) >= 3 else default_s


def format_span(seconds: float) -> str:
    s = int(round(max(0.0, seconds)))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{h}h {m:02d}m"
    if m:
        return f"{m}m {sec:02d}s"
    return f"{sec}s"


def progress_bar(done: int, failed: int, total: int, width: int = 30) -> str:
    """`[#####xx.......]`: completed runs, runs given up, runs to go."""
    if total <= 0:
        return "[" + " " * width + "]"
    n_done = int(width * done / total)
    n_fail = int(width * (done + failed) / total) - n_done
    return "[" + "#" * n_done + "x" * n_fail + "." * (width - n_done - n_fail) + "]"
