"""Campaign progress: counts and ETA (pure over the store), and the `campaign` telemetry points."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.campaign.store import CampaignRow, CampaignStore, RUN_STATES
from controller.campaign.timing import estimate_finish, learned_overhead
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
    now = time.time() if now is None else now
    runs = store.runs(c.num)
    counts = {s: sum(1 for r in runs if r.state == s) for s in RUN_STATES}
    spec = c.spec()
    overhead = learned_overhead(store.overhead_samples(c.scenario, c.inventory_name), spec.overhead_s)
    left = [r.duration_s + overhead for r in runs if r.state in ("pending", "running")]
    eta: float | None = None
    finish: float | None = None
    if c.state in ("queued", "running") and left:
        finish = estimate_finish(now, left, spec.pause_s, spec.window_obj(), c.not_before)
        eta = finish - now
    elif not left:
        eta = 0.0
    return Progress(len(runs), counts["done"], counts["failed"], counts["cancelled"], counts["pending"],
                    counts["running"], eta, finish)


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
