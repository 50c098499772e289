"""A campaign's run figures put into their records while the next run goes on (issue 28).

`execute(..., figures_later=True)` returns once the run's record is finished: every host restored
and verified, the summary written, the InfluxDB push drained, the status final
(controller.run.late). The scheduler then closes the run's attempt in the store (the run is done)
and hands the figures, drawn in a thread since the summary was known, to `LateFigures`: they are
put into the record by a worker thread while the scheduler claims, checks and starts the next
run. A record says `figures_drawn: null` until they are in; if the controller dies in between,
the record is complete, the attempt closed, nothing is recovered or repeated, and `ctl runs plot
RUN` draws the figures from the record (`tests/integration/test_campaign_crash.py`).
`wait()` lets a scheduler end only once every figure is in.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable


class LateFigures:
    """The figures of finished runs still being put into their records."""

    def __init__(self, log: Callable[[str], None]):
        self.log = log
        self._pending: set[asyncio.Future[Any]] = set()

    def add(self, outcome: Any, then: Callable[[], None] = lambda: None) -> None:
        """Put `outcome`'s figures (a controller.run.late.RunOutcome returned with figures_later)
        into its record off the event loop; `then()` runs on the loop once they are in (e.g. the
        record uploaded again). Nothing to put in: `then()` is not called."""
        if getattr(outcome, "figures", None) is None:
            return
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
        try:
            then()
        except Exception as exc:   # best effort (an upload): the record on disk is the truth
            self.log(f"run {outcome.run_id}: after its figures went in: {type(exc).__name__}: {exc}")

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def wait(self) -> None:
        """Until every figure handed over so far is in its record (or failed, said in the log)."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)
