"""Tick arithmetic of the field logger (pure).

Tick k of a run is due at `start + k * interval` on the host's wall clock. The index is derived from
the clock, not counted, so a restarted or rebooted logger lands on the same grid: a sample's `seq` is
the second of the run it belongs to, and `--duration` is wall time from the run's start (a run of
600 s has ticks 0..599 whoever took them).

A seq is never used twice: a wall clock stepped backwards (NTP) must not produce a second point for a
seq already written, so the next seq is at least `last_seq + 1`.
"""
from __future__ import annotations

from typing import Optional

NS = 1_000_000_000


def due_ns(start_ns: int, interval_ns: int, seq: int) -> int:
    return start_ns + seq * interval_ns


def next_seq(now_ns: int, start_ns: int, interval_ns: int, last_seq: Optional[int],
             late_grace_ns: Optional[int] = None) -> int:
    """The tick to take next at `now_ns`.

    The current slot is still taken if we are at most `late_grace_ns` (default half an interval) past its
    due time -- a logger that wakes 20 ms late takes its tick; one that was suspended for a minute does
    not backfill the minute with samples it never measured, it moves on to the current slot.
    """
    grace = interval_ns // 2 if late_grace_ns is None else late_grace_ns
    if now_ns <= start_ns:
        k = 0
    else:
        k = (now_ns - start_ns) // interval_ns
        if now_ns - due_ns(start_ns, interval_ns, k) > grace:
            k += 1
    if last_seq is not None and k <= last_seq:
        k = last_seq + 1
    return k


def total_ticks(duration_s: Optional[float], interval_s: float) -> Optional[int]:
    """Number of ticks in a run of `duration_s` (None: unbounded)."""
    if duration_s is None:
        return None
    n = duration_s / interval_s
    whole = int(n)
    return whole if abs(n - whole) < 1e-9 else whole + 1


def finished(seq: int, duration_s: Optional[float], interval_s: float) -> bool:
    n = total_ticks(duration_s, interval_s)
    return n is not None and seq >= n


def missing_between(last_seq: Optional[int], next_one: int) -> Optional[tuple]:
    """(first, last) seq never taken between two runs of the logger, or None when there is no gap."""
    first = 0 if last_seq is None else last_seq + 1
    if next_one > first:
        return first, next_one - 1
    return None
