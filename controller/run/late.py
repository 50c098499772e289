"""What a run hands back, and its figure drawn after its rack time (issue 28).

A run's record is finished (status, `finished`, summary.json) once every host is restored and
verified, the samples are in the record and the summary is written: that is the end of the rack
time, and `ctl run` lets the rack go there. The run's figures are drawn in a thread of their own
(`FigureDrawing`), started as soon as the summary is known (beside the restore), and put into the
record after it is finished: the manifest says `figures_drawn: null` while they are drawn, then
the time they were put in (UTC seconds). A `kill -9` while they are drawn loses the figures only
(the record is complete and says `figures_drawn: null`); `ctl runs plot RUN` draws them again
from the record. Pure of the rack.

A campaign draws them in a worker process instead (`execute(..., figures_from_record=True)`
returns a `RecordFigures`; controller/campaign/figures.py hands the finished record to
controller/run/figworker.py), so the daemon's next run never shares its interpreter lock with a
drawing. Where a drawing stays in a process that measures clocks, `QUIET` keeps the two apart
(controller.clocksync.QuietGate): it waits only when a campaign draws in its own process because
no worker could be started; in `ctl run` alone the figures start after the run's last clock
exchange, so the gate never waits there.
"""
from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.clocksync import QUIET
from controller.commands import CommandResult
from controller.errors import RestoreFailed
from controller.perhost import MultiResult
from controller.results.records import RunRecord
from controller.scenarios.base import RunData, Scenario

# One run's figures at a time in a process: matplotlib's pyplot (which the scenarios' figures use)
# is not thread-safe, and in a campaign the next run's figures may be drawn while the previous
# run's are still going in (controller/campaign/figures.py); partial.py's figures take it too.
FIGURES_LOCK = threading.Lock()


class FigureDrawing:
    """A completed run's figures, drawn in a daemon thread from `data` and a copy of `summary`
    (the run goes on adding to its own summary, e.g. the HyStart attribution after the restore).
    `put_in_record()` waits for them and records them (or why they failed) in the finished record."""

    def __init__(self, scenario: Scenario, data: RunData, summary: dict, out_dir: Path):
        self._args = (data, copy.deepcopy(summary), out_dir)
        self._scenario = scenario
        self.figures: list[str] | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._draw, name="ctl-figures", daemon=True)
        self._thread.start()

    def _draw(self) -> None:
        try:
            with QUIET.drawing(), FIGURES_LOCK:     # never while a clock offset is measured
                self.figures = self._scenario.figures(*self._args)
        except Exception as exc:    # a plot must never lose the numbers: said in the record
            self.error = exc

    def wait(self) -> None:
        self._thread.join()

    def put_in_record(self, record: RunRecord) -> None:
        """Wait for the figures and save them in the (finished) record, with the time it happened."""
        self.wait()
        put_figures(record, self.figures, None if self.error is None else repr(self.error))


class RecordFigures:
    """A completed run's figures to be drawn from its finished record rather than from the run's
    data in this process: a campaign's figure worker draws them (controller/campaign/figures.py).
    `put_in_record()` draws them here instead, the same way (controller.run.figworker.draw_record)."""

    def __init__(self, record_dir: Path):
        self.record_dir = Path(record_dir)

    def wait(self) -> None:
        """Nothing is being drawn for it yet."""

    def put_in_record(self, record: RunRecord) -> None:
        # Imported here: the record's loader (controller.run.replay) is not needed by `ctl run`'s
        # start-up (~30 ms), only where figures are drawn from a record.
        from controller.run.figworker import draw_record
        try:
            with QUIET.drawing(), FIGURES_LOCK:     # never while a clock offset is measured
                figures, error = draw_record(record.dir), None
        except Exception as exc:    # a plot must never lose the numbers: said in the record
            figures, error = None, repr(exc)
        put_figures(record, figures, error)


def put_figures(record: RunRecord, figures: list[str] | None, error: str | None) -> None:
    """A finished record's figures (or `error`, the drawing's exception) saved in it with the
    time they were put in (`figures_drawn`)."""
    if error is None:
        record.manifest["figures"] = figures
    else:
        record.manifest["errors"].append({"t": time.time(), "error": f"figure failed: {error}"})
    record.manifest["figures_drawn"] = time.time()
    record.save()


@dataclass
class RunOutcome:
    run_id: str
    record_dir: Path | None
    status: str
    summary: dict | None
    exit_code: int
    error: str | None = None
    dry_run_log: list[CommandResult] = field(default_factory=list)
    influx_pending: int = 0
    error_type: str | None = None
    # The figures still being drawn when execute(..., figures_later=True) returned: the caller
    # lets the rack go, then calls `finish_figures()` (or, for RecordFigures, has them drawn).
    figures: FigureDrawing | RecordFigures | None = None
    record: RunRecord | None = None

    def finish_figures(self) -> None:
        """Put the figures drawn after the rack time into the record (nothing when there are none)."""
        drawing, self.figures = self.figures, None
        if drawing is not None and self.record is not None:
            drawing.put_in_record(self.record)


def restore_problems(results: MultiResult[None]) -> list[str]:
    """The run record's `restore_problems`: every problem of every host, one line each."""
    out: list[str] = []
    for r in results.failed.values():
        out += r.exception.problems if isinstance(r.exception, RestoreFailed) else [r.describe()]
    return out


def jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    if hasattr(v, "to_json"):
        return v.to_json()
    return v
