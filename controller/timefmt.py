"""Times as ctl shows them to a person: ISO 8601 with the zone, always (pure).

`iso_local` is the form of every time in ctl's text output (finish estimates, ETAs, a lock's
holder since when, a campaign's wait reasons): the controller's local time with its UTC offset,
`2026-11-26T21:01+01:00` -- local, because campaign windows and `--at` are local times of
day, and with the offset, so that a line copied into a mail or a log of another machine still
names one instant. `iso_utc` is the form of figures and reports (a paper's reader is
anywhere): `2026-11-26T20:01:00Z`. (`--json` output and records have their own wire form,
controller.results.wire: UTC with microseconds.)
"""
from __future__ import annotations

import datetime as dt
import math
from typing import Any

_SPECS = ("minutes", "seconds")


def _instant(t: Any) -> float | None:
    if t is None or isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
        return None
    return float(t)


def iso_local(t: Any, timespec: str = "seconds", unknown: str = "?") -> str:
    """Unix seconds as local ISO 8601 with the offset: `2026-11-26T21:01:07+01:00`
    (`timespec="minutes"`: `2026-11-26T21:01+01:00`); `unknown` for no time or a bad one."""
    if timespec not in _SPECS:
        raise ValueError(f"timespec {timespec!r}: one of {', '.join(_SPECS)}")
    s = _instant(t)
    if s is None:
        return unknown
    try:
        return dt.datetime.fromtimestamp(s).astimezone().isoformat(timespec=timespec)
    except (OverflowError, OSError, ValueError):
        return unknown


def iso_utc(t: Any, unknown: str = "-") -> str:
    """Unix seconds as ISO 8601 in UTC to the second, `2026-11-22T04:18:20Z`; `unknown` without
    a time."""
    s = _instant(t)
    if s is None:
        return unknown
    try:
        return dt.datetime.fromtimestamp(s, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return unknown


def iso_span(start: Any, end: Any, timespec: str = "minutes") -> str:
    """A stretch of time: `2026-11-26T21:00+01:00 to 2026-11-26T23:30+01:00`."""
    return f"{iso_local(start, timespec)} to {iso_local(end, timespec)}"
