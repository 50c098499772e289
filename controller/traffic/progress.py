"""How far along the traffic of a run is, as data (pure): what a long step waits for, how many
of its units (iperf3 tests, BitTorrent downloads) are done, and the one running now.

Traffic runners answer `progress(now)` with a `TrafficProgress`; the run's live view on a
terminal draws it, and nothing here prints. `StepNote` is one numbered step of a short
sequence (`ctl link measure`: RTT, throughput, loss) with the time it is expected to take.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence


@dataclass(frozen=True)
class Unit:
    """One unit of work the traffic is made of, as the live view shows it."""

    name: str
    state: str                          # "waiting" | "running" | "done" | "failed"
    flow: str = ""                      # the flow tag its telemetry points carry (rates are looked up by it)
    detail: str = ""                    # e.g. "12.3 of 20.0 MiB, ETA 19 s"


@dataclass(frozen=True)
class TrafficProgress:
    """The state of a run's traffic at one instant.

    `fraction` is 0..1 of the whole step; `remaining_s` None when it cannot be estimated yet
    (e.g. before the first BitTorrent download ended); `waiting_for` says what the step is
    blocked on right now (a seeder's announce, a payload being generated), empty when it is
    simply moving data."""

    what: str                           # "3 iperf3 flows", "BitTorrent downloads"
    done: int
    total: int
    fraction: float
    elapsed_s: float
    remaining_s: float | None
    waiting_for: str = ""
    limit: str = ""                     # e.g. "each up to 600 s"
    units: tuple[Unit, ...] = field(default_factory=tuple)
    counted: bool = False               # units run one after the other: "n of N done" says how far

    @property
    def failed(self) -> int:
        return sum(1 for u in self.units if u.state == "failed")


@dataclass(frozen=True)
class StepNote:
    """Step `index` of `total` of a short fixed sequence, expected to take about `expected_s`."""

    index: int
    total: int
    what: str
    expected_s: float

    def text(self) -> str:
        return f"[{self.index}/{self.total}] {self.what} (about {format_seconds(self.expected_s)})"

    def __str__(self) -> str:
        return self.text()


def format_seconds(s: float | None) -> str:
    """`42 s`, `3m05s`, `1h02m`; `?` for None."""
    if s is None:
        return "?"
    s = max(0, int(round(s)))
    if s < 60:
        return f"{s} s"
    m, sec = divmod(s, 60)
    if m < 60:
        return f"{m}m{sec:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"


def timed_progress(what: str, units: Sequence[Unit], elapsed_s: float, span_s: float, *,
                   waiting_for: str = "", counted: bool = False) -> TrafficProgress:
    """Progress of traffic with a known length (iperf3 flows run for their duration)."""
    done = sum(1 for u in units if u.state in ("done", "failed"))
    span = max(span_s, 1e-9)
    frac = min(1.0, max(0.0, elapsed_s / span))
    if units and done == len(units):
        frac = 1.0
    return TrafficProgress(what, done, len(units), frac, elapsed_s, max(0.0, span_s - elapsed_s), waiting_for,
                           units=tuple(units), counted=counted)


def counted_progress(what: str, units: Sequence[Unit], elapsed_s: float, *, current_fraction: float = 0.0,
                     current_remaining_s: float | None = None, finished_durations: Sequence[float] = (),
                     waiting_for: str = "", limit: str = "") -> TrafficProgress:
    """Progress of traffic made of units of unknown length run one after the other
    (BitTorrent downloads): the done count plus the running unit's own fraction; the time
    left is the running unit's ETA plus the mean of the finished units for each one to go."""
    total = len(units)
    done = sum(1 for u in units if u.state in ("done", "failed"))
    running = any(u.state == "running" for u in units)
    frac = (done + (min(1.0, max(0.0, current_fraction)) if running else 0.0)) / total if total else 1.0
    remaining: float | None = None
    to_go = total - done - (1 if running else 0)
    if done == total:
        remaining = 0.0
    elif finished_durations:
        mean = sum(finished_durations) / len(finished_durations)
        cur = current_remaining_s if running and current_remaining_s is not None else (mean if running else 0.0)
        remaining = cur + to_go * mean
    elif running and current_remaining_s is not None and to_go == 0:
        remaining = current_remaining_s
    return TrafficProgress(what, done, total, frac, elapsed_s, remaining, waiting_for, limit, tuple(units), True)
