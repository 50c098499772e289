"""Handover detection over a time series of RadioSample -- pure functions, no I/O.

Two signatures of a handover are detected (the WiBro paper marks handovers where CINR sits near 0 dB
while the base station changes, then recovers at once):

(a) identity change: the serving cell / base-station id changes ("cell-change"), the technology changes
    ("technology-change", e.g. LTE -> NR5G-NSA when the NR leg is added, or back), or the NR leg of an
    EN-DC connection moves to another PCI ("secondary-change");
(b) quality collapse with recovery ("signal-dip"): CINR (WiMAX) / SINR / SNR falls below `floor_db`, or
    more than `drop_db` below its rolling median, and comes back within `max_dip_s`.

A dip that overlaps an identity change (within `attach_s`) is the same event: its start, end, duration
and minimum are attached to the identity-change event instead of being reported twice. A dip that does
not recover within `max_dip_s` is not a handover (the signal simply got worse) and is not reported.

Missing data never creates an event: a None sample (modem silent / resetting) or a None field is skipped
and comparisons are made against the last KNOWN value, so "cell A, gap, cell A" is no handover and
"cell A, gap, cell B" is one handover whose `gap_s` shows the outage.
"""
from __future__ import annotations

import statistics
from collections import deque
from dataclasses import asdict, dataclass, replace
from typing import Any, Iterable, Sequence

from nodes.modem.radio import RadioSample


@dataclass(frozen=True)
class HandoverConfig:
    """Thresholds (documented defaults; tune per campaign).

    floor_db=1.0: "near 0 dB" CINR from the paper; the static WiBro host averaged 2.9 dB (sd 0.38), so 1 dB
      is ~5 sd below a poor-but-steady link. drop_db=10.0 below the median of the last baseline_window_s=30 s
      catches collapses on good links (bus: mean 12.4 dB, sd 7.4). max_dip_s=10.0: a handover interruption is
      seconds long; longer is coverage loss. attach_s=3.0 joins a dip to an id change that close to it.
    """

    metrics: tuple[str, ...] = ("cinr_db", "sinr_db", "snr_db")   # first present one is used per sample
    floor_db: float = 1.0
    drop_db: float = 10.0
    baseline_window_s: float = 30.0
    min_baseline_samples: int = 5
    max_dip_s: float = 10.0
    hysteresis_db: float = 1.0
    attach_s: float = 3.0


@dataclass(frozen=True)
class HandoverEvent:
    time: float                        # first sample showing the new state (id change) / dip start (dip)
    kind: str                          # "cell-change" | "technology-change" | "secondary-change" | "signal-dip"
    before_time: float | None          # last sample of the old state / last sample before the dip
    after_time: float | None           # first sample of the new state / first recovered sample
    before_technology: str | None
    after_technology: str | None
    before_cell_id: str | None
    after_cell_id: str | None
    before_pci: int | None
    after_pci: int | None
    before_rsrp_dbm: float | None
    after_rsrp_dbm: float | None
    metric: str | None                 # which quality value the dip fields refer to
    before_metric_db: float | None
    after_metric_db: float | None
    dip_start: float | None = None
    dip_end: float | None = None       # first recovered sample
    dip_duration_s: float | None = None
    dip_min_db: float | None = None
    gap_s: float | None = None         # time between the last old-state and first new-state sample

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Dip:
    start: float
    end: float | None                  # first recovered sample; None if it never recovered
    last_low: float
    min_db: float
    metric: str
    before: tuple[float, RadioSample] | None
    after: tuple[float, RadioSample] | None

    @property
    def recovered(self) -> bool:
        return self.end is not None


def metric_of(sample: RadioSample, metrics: Sequence[str]) -> tuple[str, float] | None:
    for m in metrics:
        v = getattr(sample, m, None)
        if v is not None:
            return m, float(v)
    return None


def find_dips(series: Sequence[tuple[float, RadioSample | None]], config: HandoverConfig) -> list[Dip]:
    """Quality dips (recovered or not). Samples without a metric value are skipped, not counted low."""
    dips: list[Dip] = []
    history: deque[tuple[float, float]] = deque()       # (t, value) of non-dip samples
    last_good: tuple[float, RadioSample] | None = None
    open_dip: dict[str, Any] | None = None
    for t, s in series:
        if s is None:
            continue
        mv = metric_of(s, config.metrics)
        if mv is None:
            continue
        name, v = mv
        while history and history[0][0] < t - config.baseline_window_s:
            history.popleft()
        if open_dip is not None:
            baseline = open_dip["baseline"]
            recovered = v >= config.floor_db + config.hysteresis_db and (
                baseline is None or v >= baseline - config.drop_db + config.hysteresis_db)
            if recovered:
                if t - open_dip["start"] <= config.max_dip_s:
                    dips.append(Dip(open_dip["start"], t, open_dip["last_low"], open_dip["min"],
                                    open_dip["metric"], open_dip["before"], (t, s)))
                    history.append((t, v))
                else:
                    # Came back, but later than a handover interruption lasts: coverage loss, not reported.
                    # The level before it says nothing about the level after it: restart the baseline.
                    dips.append(Dip(open_dip["start"], None, open_dip["last_low"], open_dip["min"],
                                    open_dip["metric"], open_dip["before"], None))
                    history.clear()
                    history.append((t, v))
                open_dip = None
                last_good = (t, s)
            else:
                open_dip["min"] = min(open_dip["min"], v)
                open_dip["last_low"] = t
                if t - open_dip["start"] > config.max_dip_s:
                    # Too long for a handover. Stay in this one (unreported) dip until the value is back
                    # over the floor -- re-opening dips here would report the end of an outage as a
                    # handover. A drop that was only relative ends at the floor too: the old median is stale.
                    open_dip["baseline"] = None
            continue
        baseline = statistics.median(x for _, x in history) if len(history) >= config.min_baseline_samples else None
        low = v < config.floor_db or (baseline is not None and v < baseline - config.drop_db)
        if low:
            open_dip = {"start": t, "last_low": t, "min": v, "baseline": baseline, "before": last_good,
                        "metric": name}
        else:
            history.append((t, v))
            last_good = (t, s)
    if open_dip is not None:        # series ended inside a dip: not recovered (yet)
        dips.append(Dip(open_dip["start"], None, open_dip["last_low"], open_dip["min"], open_dip["metric"],
                        open_dip["before"], None))
    return dips


def _leg_pci(s: RadioSample) -> int | None:
    return s.secondary[0].pci if s.secondary else None


def _event(kind: str, before: tuple[float, RadioSample] | None, after: tuple[float, RadioSample],
           config: HandoverConfig, time: float | None = None) -> HandoverEvent:
    b = before[1] if before else None
    a = after[1]
    bm = metric_of(b, config.metrics) if b else None
    am = metric_of(a, config.metrics)
    secondary = kind == "secondary-change"
    return HandoverEvent(
        time=after[0] if time is None else time, kind=kind,
        before_time=before[0] if before else None, after_time=after[0],
        before_technology=b.technology if b else None, after_technology=a.technology,
        before_cell_id=b.cell_id if b else None, after_cell_id=a.cell_id,
        before_pci=(_leg_pci(b) if secondary else b.pci) if b else None,
        after_pci=_leg_pci(a) if secondary else a.pci,
        before_rsrp_dbm=b.rsrp_dbm if b else None, after_rsrp_dbm=a.rsrp_dbm,
        metric=(am or bm or (None, None))[0], before_metric_db=bm[1] if bm else None,
        after_metric_db=am[1] if am else None,
        gap_s=(after[0] - before[0]) if before else None,
    )


def identity_changes(series: Sequence[tuple[float, RadioSample | None]],
                     config: HandoverConfig) -> list[HandoverEvent]:
    events: list[HandoverEvent] = []
    last_tech: tuple[float, RadioSample] | None = None
    last_cell: tuple[float, RadioSample] | None = None
    last_leg: tuple[float, RadioSample] | None = None
    for t, s in series:
        if s is None:
            continue
        tech_changed = (s.technology is not None and last_tech is not None
                        and last_tech[1].technology != s.technology)
        cell_changed = (s.cell_key() is not None and last_cell is not None
                        and last_cell[1].cell_key() != s.cell_key())
        leg_changed = (_leg_pci(s) is not None and last_leg is not None and _leg_pci(last_leg[1]) != _leg_pci(s)
                       and not tech_changed)
        if tech_changed:
            events.append(_event("technology-change", last_tech, (t, s), config))
        elif cell_changed:
            events.append(_event("cell-change", last_cell, (t, s), config))
        elif leg_changed:
            events.append(_event("secondary-change", last_leg, (t, s), config))
        if s.technology is not None:
            last_tech = (t, s)
        if s.cell_key() is not None:
            last_cell = (t, s)
        if _leg_pci(s) is not None:
            last_leg = (t, s)
        elif s.technology is not None and not s.technology.endswith("nsa"):
            last_leg = None          # leg gone: a later leg is an addition (technology change), not a move
    return events


def detect_handovers(series: Iterable[tuple[float, RadioSample | None]],
                     config: HandoverConfig = HandoverConfig()) -> list[HandoverEvent]:
    """Handover events in time order. `series` = (time in seconds, sample or None), ascending time."""
    ser = sorted(series, key=lambda x: x[0])
    changes = identity_changes(ser, config)
    dips = find_dips(ser, config)
    used: set[int] = set()
    events: list[HandoverEvent] = []
    for ev in changes:
        for i, d in enumerate(dips):
            if i in used:
                continue
            end = d.end if d.end is not None else d.last_low
            if d.start - config.attach_s <= ev.time <= end + config.attach_s:
                used.add(i)
                ev = replace(ev, dip_start=d.start, dip_end=d.end,
                             dip_duration_s=None if d.end is None else d.end - d.start, dip_min_db=d.min_db,
                             metric=d.metric)
                break
        events.append(ev)
    for i, d in enumerate(dips):
        if i in used or not d.recovered or d.after is None:
            continue
        ev = _event("signal-dip", d.before, d.after, config, time=d.start)
        events.append(replace(ev, metric=d.metric, dip_start=d.start, dip_end=d.end,
                              dip_duration_s=d.end - d.start if d.end is not None else None, dip_min_db=d.min_db,
                              gap_s=None))
    events.sort(key=lambda e: e.time)
    return events
