"""A part of a run's traffic window, and the span of time a summary covers (pure).

A window is written `START:END`, each a duration (`45s`, `10m`, `1.5min`) counted from the
start of the run's traffic window (the moment ctl started the first client); an empty START
is the traffic's start, an empty END its end: `45s:600s`, `:45s`, `300s:`, `0:10m`.

A `Span` is what a scenario's summary computes over: the whole traffic window (as every
run's own summary) or a window of it, in the points' clock (Unix seconds).
"""
from __future__ import annotations

from dataclasses import dataclass

from controller.errors import ParameterError
from controller.units import parse_duration

WHAT = "--window"
# An END written as the traffic's length in other units (1251ms for 1.251 s) may exceed it by
# the rounding of a unit conversion: up to this much is the traffic's end.
_ROUNDING_S = 1e-6


@dataclass(frozen=True)
class TrafficWindow:
    """[start_s, end_s] seconds of a traffic window that lasted traffic_s seconds."""

    start_s: float
    end_s: float
    traffic_s: float

    @property
    def whole(self) -> bool:
        return self.start_s <= 0 and self.end_s >= self.traffic_s

    @property
    def seconds(self) -> float:
        return self.end_s - self.start_s

    def to_json(self) -> dict:
        return {"start_s": round(self.start_s, 3), "end_s": round(self.end_s, 3),
                "traffic_s": round(self.traffic_s, 3), "of": "traffic"}

    def describe(self) -> str:
        return f"{self.start_s:g} s to {self.end_s:g} s of {self.traffic_s:.1f} s of traffic"


def parse_window(text: str, traffic_s: float, *, what: str = WHAT) -> TrafficWindow:
    """`START:END` of a run whose traffic lasted `traffic_s` seconds -> TrafficWindow.

    ParameterError (exit 2) for text that is not START:END, a bound that is not a duration,
    END not after START, or a bound beyond the traffic (the message says how long it was)."""
    length = f"the run's traffic lasted {traffic_s:.3f} s"
    if not isinstance(text, str) or text.count(":") != 1:
        shown = repr(text) if len(str(text)) <= 40 else repr(str(text)[:40]) + "..."
        raise ParameterError(f"{what}: {shown} is not START:END (durations from the traffic's start, e.g. "
                             f"45s:600s, :45s, 300s:; {length})")
    if traffic_s <= 0:
        raise ParameterError(f"{what}: the run has no traffic window to take a part of")
    lo_text, hi_text = (t.strip() for t in text.split(":"))
    try:
        start = parse_duration(lo_text, what=f"{what} START", allow_zero=True) if lo_text else 0.0
        end = parse_duration(hi_text, what=f"{what} END", allow_zero=True) if hi_text else traffic_s
    except ParameterError as exc:
        raise ParameterError(f"{exc.one_line()} ({length})") from None
    if start >= traffic_s:
        raise ParameterError(f"{what}: START {start:g} s is beyond the run's traffic ({length})")
    if end <= start:
        raise ParameterError(f"{what}: END {end:g} s is not after START {start:g} s ({length})")
    if end > traffic_s + _ROUNDING_S:
        raise ParameterError(f"{what}: END {end:g} s is beyond the run's traffic ({length}; "
                             f"`{lo_text}:` runs to its end)")
    return TrafficWindow(start, min(end, traffic_s), traffic_s)


def window_of(bounds: tuple[float | None, float | None], traffic_s: float, *, what: str = WHAT) -> TrafficWindow:
    """(start_s, end_s) in seconds, None for the traffic's start or end -> TrafficWindow, with
    the checks and messages of parse_window."""
    lo, hi = bounds
    return parse_window(f"{'' if lo is None else f'{float(lo)!r}s'}:{'' if hi is None else f'{float(hi)!r}s'}",
                        traffic_s, what=what)


@dataclass(frozen=True)
class Span:
    """The time a summary covers, in the points' clock: [lo, hi] Unix seconds, inside the
    run's traffic window `traffic`; `window` is None for the whole traffic window."""

    lo: float
    hi: float
    traffic: tuple[float, float]
    window: TrafficWindow | None = None

    @classmethod
    def of(cls, traffic: tuple[float, float], window: TrafficWindow | None = None) -> "Span":
        if window is None:
            return cls(traffic[0], traffic[1], traffic)
        return cls(traffic[0] + window.start_s, traffic[0] + window.end_s, traffic, window)

    @property
    def whole(self) -> bool:
        """The whole traffic window: numbers come from the same sources as the run's own summary."""
        return self.window is None or self.window.whole

    @property
    def bounds(self) -> tuple[float, float]:
        return (self.lo, self.hi)

    @property
    def seconds(self) -> float:
        return self.hi - self.lo

    def slack(self, slack_s: float) -> tuple[float, float]:
        """How far beyond each end samples may be taken: `slack_s` where this end is the traffic
        window's own (a socket's last sample comes after the client ended), none where it cuts
        the traffic (samples there belong to the neighbouring part)."""
        return (slack_s if self.lo <= self.traffic[0] else 0.0, slack_s if self.hi >= self.traffic[1] else 0.0)

    def to_json(self) -> dict | None:
        """The summary's `window` entry (None for the whole traffic window of a run's own summary)."""
        return self.window.to_json() if self.window is not None else None


def window_definitions(span: Span, whole_run: tuple[str, ...] = ()) -> dict[str, str]:
    """The `window` entry of a windowed summary's definitions ({} for the whole traffic window):
    which part of the traffic the numbers are over, and which ones stay whole-run."""
    if span.window is None:
        return {}
    w = span.window
    text = (f"every number is over seconds {w.start_s:g} to {w.end_s:g} of the traffic window ({w.traffic_s:.3f} s "
            "from the start of the first client to the end of the last), not over the whole run")
    if whole_run:
        text += "; except, over the whole run: " + "; ".join(whole_run)
    return {"window": text}


def window_title(summary: dict) -> str:
    """What a rendered title adds for a windowed summary ('' for a run's own)."""
    w = summary.get("window")
    if not w:
        return ""
    return f"  window {w['start_s']:g}-{w['end_s']:g} s of {w['traffic_s']:.1f} s of traffic"
