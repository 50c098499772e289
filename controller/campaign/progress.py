"""Campaign progress: counts and ETA (pure over the store), and the `campaign` telemetry points.

ETAs follow the queue: the scheduler runs one campaign at a time (the one with a run in
progress first, then the lowest-numbered one that can start a run), so a campaign queued
behind others finishes after them, not as if it started now (`queue_schedule`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from controller.campaign.store import CampaignRow, CampaignStore, RUN_STATES
from controller.campaign.timing import Window, learned_overhead, local
from controller.telemetry.points import Point
from controller.telemetry.spool import InfluxSender, Spool, push_once


@dataclass(frozen=True)
class Progress:
    total: int
    done: int
    failed: int
    cancelled: int
    pending: int
    running: int
    eta_s: float | None        # seconds from now until the last run is expected to end
    finish_at: float | None


def progress_of(store: CampaignStore, c: CampaignRow, now: float | None = None) -> Progress:
    """Counts of `c`'s runs and its ETA in queue order (campaigns ahead of it run first)."""
    now = time.time() if now is None else now
    runs = store.runs(c.num)
    counts = {s: sum(1 for r in runs if r.state == s) for s in RUN_STATES}
    left = [r for r in runs if r.state in ("pending", "running")]
    eta: float | None = None
    finish: float | None = None
    if c.state in ("queued", "running") and left:
        span = queue_schedule(queue_entries(store, now), now).get(c.num)
        if span is not None:
            finish = span[1]
            eta = finish - now
    elif not left:
        eta = 0.0
    return Progress(len(runs), counts["done"], counts["failed"], counts["cancelled"], counts["pending"],
                    counts["running"], eta, finish)


# ==== the queue (pure) ============================================================================

@dataclass(frozen=True)
class QueueEntry:
    """What is left of one active campaign, for the queue simulation."""

    num: int
    runs_s: tuple[float, ...]          # each run still to do, set-up and restore included, in run order
    pause_s: float = 0.0
    window: Window | None = None
    not_before: float | None = None
    in_progress: bool = False          # a run of it is executing now (its remainder is runs_s[0])


def queue_schedule(entries: Sequence[QueueEntry], now: float) -> dict[int, tuple[float, float]]:
    """(start, finish) of every campaign with runs left, as the scheduler would run them.

    The scheduler keeps driving one campaign run after run (the pause between runs holds the
    rack) until it is done or must wait outside its window; it then takes the lowest-numbered
    campaign that can start a run, or waits for the earliest one that will. A campaign with
    a run in progress goes first. Retries and failures are not foreseen."""
    left = {e.num: list(e.runs_s) for e in entries if e.runs_s}
    by_num = {e.num: e for e in entries}
    out: dict[int, tuple[float, float]] = {}
    t = now
    cur = next((e.num for e in sorted(entries, key=lambda e: e.num) if e.in_progress and e.num in left), None)
    for _ in range(sum(len(v) for v in left.values()) * 4 + 10):   # bounded: each turn runs or jumps ahead
        if not left:
            break
        if cur is None:
            starts = {n: _earliest(by_num[n], runs[0], t) for n, runs in sorted(left.items())}
            ready = [n for n, s in starts.items() if s <= t]
            if not ready:
                t = min(starts.values())
                continue
            cur = ready[0]
        e = by_num[cur]
        d = left[cur][0]
        s = t if (e.in_progress and cur not in out) else _earliest(e, d, t)
        if s > t:                      # outside its window: the rack is free for the others meanwhile
            cur = None
            continue
        out.setdefault(cur, (t, t))
        t += d
        left[cur].pop(0)
        if left[cur]:
            t += e.pause_s
            out[cur] = (out[cur][0], t)
        else:
            out[cur] = (out[cur][0], t)
            del left[cur]
            cur = None
    return out


def _earliest(e: QueueEntry, run_s: float, t: float) -> float:
    s = max(t, e.not_before or t)
    if e.window is not None:
        s = e.window.start_for(local(s), run_s).timestamp()
    return s


def queue_entries(store: CampaignStore, now: float) -> list[QueueEntry]:
    """The queue as the store has it: every queued or running campaign and what is left of it
    (a run in progress counts only its remaining time, from its attempt's start)."""
    out = []
    for c in store.campaigns(("queued", "running")):
        spec = c.spec()
        overhead = learned_overhead(store.overhead_samples(c.scenario, c.inventory_name), spec.overhead_s)
        runs = [r for r in store.runs(c.num) if r.state in ("pending", "running")]
        started = {(a.seq, a.attempt): a.started for a in store.attempts(c.num)} if any(
            r.state == "running" for r in runs) else {}
        secs: list[float] = []
        in_progress = False
        for r in sorted(runs, key=lambda r: (r.state != "running", r.seq)):
            full = r.duration_s + overhead
            if r.state == "running":
                t0 = started.get((r.seq, r.attempts))
                secs.append(max(0.0, full - (now - t0)) if t0 is not None else full)
                in_progress = True
            else:
                secs.append(full)
        out.append(QueueEntry(c.num, tuple(secs), spec.pause_s, spec.window_obj(), c.not_before, in_progress))
    return out


class ProgressTelemetry:
    """`campaign` points (runs_done, runs_failed, runs_total, eta_s): appended to the campaign's
    own spool first, then pushed to InfluxDB exactly once (the run records' mechanism)."""

    def __init__(self, directory: Path, campaign_id: str, target: Any | None):
        self.dir = directory
        self.tags = {"campaign": campaign_id}
        self.spool = Spool(directory / "metrics.jsonl")
        self.target = target
        self.last_error: str | None = None

    def emit(self, p: Progress) -> None:
        fields: dict[str, int | float] = {"runs_done": p.done, "runs_failed": p.failed, "runs_total": p.total}
        if p.eta_s is not None:
            fields["eta_s"] = float(round(p.eta_s, 1))
        self.spool.append([Point("campaign", self.tags, fields, time.time_ns())])
        self.spool.sync()

    def push(self) -> None:
        """Best effort; what InfluxDB does not take now stays in the spool for the next push."""
        if self.target is None:
            return
        try:
            sender = InfluxSender(self.target)
            try:
                push_once(self.dir, sender)
                self.last_error = None
            finally:
                sender.close()
        except Exception as exc:  # InfluxDB down: the spool keeps the points
            self.last_error = f"{type(exc).__name__}: {str(exc)[:200]}"

    def close(self) -> None:
        self.spool.close()
