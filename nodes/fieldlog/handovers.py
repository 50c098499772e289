"""Handover detection while the bus drives: nodes.modem.handover applied to a sliding window.

`detect_handovers` is a batch function over a series. On the host it runs every tick over the last
`window_s` seconds, and an event is written only once it is SETTLED: its time is at least `settle_s`
in the past (a dip is only an event once it has recovered, within max_dip_s; a dip can be attached to
an identity change up to attach_s later), so a written event is never revised. Events close to the
window's left edge are not trusted (the baseline median needs history, and an outage that began before
the window would look like a fresh dip), so only events at least `margin_s` after the window start are
taken; with the defaults every event is taken long before it reaches that margin.

Each event is written once: its key (kind, time) is remembered, and after a restart the logger seeds
the window from the raw radio log and the keys from the spool (see logger.py). The report recomputes
events over the whole run with the same function (the authoritative list); the two agree by
construction except right at a restart.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Deque, Dict, Iterable, List, Optional, Set, Tuple

from nodes.modem.handover import HandoverConfig, HandoverEvent, detect_handovers

NS = 1_000_000_000


class OnlineHandovers:
    def __init__(self, config: HandoverConfig = HandoverConfig(), window_s: float = 120.0,
                 settle_s: Optional[float] = None, margin_s: Optional[float] = None):
        self.config = config
        self.window_s = window_s
        self.settle_s = config.max_dip_s + config.attach_s + 1.0 if settle_s is None else settle_s
        self.margin_s = config.baseline_window_s + config.max_dip_s if margin_s is None else margin_s
        self.series: Deque[Tuple[int, Any]] = deque()        # (t ns, RadioSample | None)
        self.emitted: Set[Tuple[str, int]] = set()
        self.truncated = False       # samples before the window's start exist but are not in it

    def seed(self, history: Iterable[Tuple[int, Any]], emitted: Iterable[Tuple[str, int]] = (),
             *, from_run_start: bool = False) -> None:
        """Restore the window after a restart (history: the raw radio log's tail, oldest first)."""
        for t, s in history:
            self.series.append((t, s))
        self.emitted.update(emitted)
        self.truncated = not from_run_start

    def feed(self, t_ns: int, sample: Any) -> List[Tuple[int, HandoverEvent]]:
        """Add this tick's sample (None: modem silent); returns newly settled events with their time ns."""
        self.series.append((t_ns, sample))
        while self.series and self.series[0][0] < t_ns - int(self.window_s * NS):
            self.series.popleft()
            self.truncated = True
        if len(self.series) < 2:
            return []
        # Seconds as floats for the thresholds; exact ns recovered through this map (event times are
        # always sample times).
        by_s: Dict[float, int] = {}
        ser = []
        for t, s in self.series:
            ts = t / NS
            by_s[ts] = t
            ser.append((ts, s))
        start_s = ser[0][0]
        now_s = t_ns / NS
        out = []
        for ev in detect_handovers(ser, self.config):
            if ev.time > now_s - self.settle_s:
                continue
            if self.truncated and ev.time < start_s + self.margin_s:
                continue       # too close to a cut-off left edge to be trusted
            t_ev = by_s.get(ev.time)
            if t_ev is None:
                continue
            key = (ev.kind, t_ev)
            if key in self.emitted:
                continue
            self.emitted.add(key)
            out.append((t_ev, ev))
        return out
