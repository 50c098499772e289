"""A campaign's run figures put into their records while the next run goes on (issue 28).

`execute(..., figures_later=True, figures_from_record=True)` returns once the run's record is
finished: every host restored and verified, the summary written, the InfluxDB push drained, the
status final (controller.run.late). The scheduler then closes the run's attempt in the store (the
run is done) and hands the outcome to `LateFigures`, which has the figures drawn from the finished
record by the daemon's figure worker, a process of its own at a lower priority
(controller/run/figworker.py says why), while the scheduler claims, checks and starts the next
run; the daemon, the record's one writer, puts the names into the manifest. A record says
`figures_drawn: null` until they are in. If the worker dies or hangs (killed: figworker's
STALL_S and BOUND_S say when), the record stays complete with `figures_drawn: null` and an error line saying
that `ctl runs plot RUN` draws them, and the next run's figures get a new worker. If the daemon
dies in between, the record is complete, the attempt closed, nothing is recovered or repeated,
the worker ends with the daemon's end of its pipe, and `ctl runs plot RUN` draws the figures
from the record (`tests/integration/test_campaign_crash.py`). When no worker can be started the
figures are drawn from the record in a thread of the daemon (the clock gate, QuietGate, then
keeps them apart from the clock exchanges). An outcome whose figures are drawn in the run's own
process (FigureDrawing) is put in from a thread as before. `wait()` lets a scheduler end only
once every figure is in, then lets the worker go.

Held until the next run's traffic (issue 28): the scheduler hands a record's figures over with
`hold=True`; they wait, undrawn, until `release()`: the next run's clients have started (the
runner's `traffic_started` hook), or no run follows at once (the scheduler goes idle, waits, or
the run ended before its traffic). So the drawing never competes for the machine's cores with the
next run's health check, connections and set-up, only with its traffic, when the controller
mostly waits (the worker at its lower priority). Nothing is held that is not already safe: the
record is finished and the attempt closed before `add`, so a `kill -9` while figures are held
leaves exactly what a kill while they are drawn leaves (`figures_drawn: null`, `ctl runs plot`).
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

from controller.run.figworker import FigureWorker, WorkerLost
from controller.run.late import RecordFigures, put_figures


class LateFigures:
    """The figures of finished runs still being put into their records."""

    def __init__(self, log: Callable[[str], None], worker: Callable[[], FigureWorker] = FigureWorker):
        self.log = log
        self._pending: set[asyncio.Future[Any]] = set()
        self._held: list[tuple[Any, Callable[[], None]]] = []    # waiting for the next run's traffic
        self._new_worker = worker
        self.worker: FigureWorker | None = None      # started with the first figures from a record

    def add(self, outcome: Any, then: Callable[[], None] = lambda: None, *, hold: bool = False) -> None:
        """Put `outcome`'s figures (a controller.run.late.RunOutcome returned with figures_later)
        into its record off the event loop; `then()` runs on the loop once they are in, or once
        the record says why they are not (e.g. the record uploaded again). Nothing to put in:
        `then()` is not called. `hold`: figures to be drawn from the record wait for `release()`
        (the module says why)."""
        if getattr(outcome, "figures", None) is None:
            return
        if hold and isinstance(outcome.figures, RecordFigures) and outcome.record is not None:
            self._held.append((outcome, then))
            return
        self._start(outcome, then)

    def release(self) -> None:
        """Have the held figures drawn now (in the order their runs ended)."""
        held, self._held = self._held, []
        for outcome, then in held:
            self._start(outcome, then)

    @property
    def held(self) -> int:
        return len(self._held)

    def _start(self, outcome: Any, then: Callable[[], None]) -> None:
        if isinstance(outcome.figures, RecordFigures) and outcome.record is not None:
            outcome.figures = None       # handed over: never drawn twice
            fut = asyncio.ensure_future(self._from_record(outcome, then))
        else:
            fut = asyncio.ensure_future(self._finish(outcome, then))
        self._pending.add(fut)
        fut.add_done_callback(self._pending.discard)

    async def _finish(self, outcome: Any, then: Callable[[], None]) -> None:
        try:
            await asyncio.to_thread(outcome.finish_figures)
        except Exception as exc:   # the record is complete: it says the figures are missing
            self.log(f"run {outcome.run_id}: its figures were not put into the record ({type(exc).__name__}: "
                     f"{exc}); `ctl runs plot {outcome.run_id}` draws them")
            return
        self._then(outcome, then)

    async def _from_record(self, outcome: Any, then: Callable[[], None]) -> None:
        record, rid = outcome.record, outcome.run_id
        try:
            if self.worker is None:
                self.worker = self._new_worker()
            try:
                figures, error = await self.worker.draw(record.dir)
            except OSError as exc:     # no worker process: drawn here, kept apart from clock exchanges
                self.log(f"run {rid}: no figure worker could be started ({exc}): its figures are drawn in the "
                         "daemon's process")
                await asyncio.to_thread(RecordFigures(record.dir).put_in_record, record)
            except WorkerLost as exc:  # the record stays complete and says how to draw them
                line = f"figures not drawn: {exc}; `ctl runs plot {rid}` draws them"
                record.manifest["errors"].append({"t": time.time(), "error": line})
                await asyncio.to_thread(record.save)
                self.log(f"run {rid}: {line}")
            else:
                await asyncio.to_thread(put_figures, record, figures, error)
        except Exception as exc:   # the record is complete: it says the figures are missing
            self.log(f"run {rid}: its figures were not put into the record ({type(exc).__name__}: "
                     f"{exc}); `ctl runs plot {rid}` draws them")
            return
        self._then(outcome, then)

    def _then(self, outcome: Any, then: Callable[[], None]) -> None:
        try:
            then()
        except Exception as exc:   # best effort (an upload): the record on disk is the truth
            self.log(f"run {outcome.run_id}: after its figures went in: {type(exc).__name__}: {exc}")

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def wait(self) -> None:
        """Until every figure handed over so far, held ones included, is in its record (or failed,
        said in the log); then the worker is let go (the next figures would start another)."""
        self.release()
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)
        if self.worker is not None:
            worker, self.worker = self.worker, None
            await worker.close()
