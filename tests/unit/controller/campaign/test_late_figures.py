"""A campaign run's figures go into its record while the next run goes on
(controller/campaign/figures.py, issue 28).

Contract: the scheduler hands a finished run's outcome over and goes on at once; the figures are
put into the (already finished) record by a worker thread, then `then()` runs on the event loop
(a shared store's upload again); a failure is said in the log with the command that draws them
and leaves the record saying `figures_drawn: null`; `wait()` returns only when every figure
handed over is in; an outcome without figures is left alone. Two runs' figures are never drawn at
once (matplotlib's pyplot is not thread-safe; controller.run.late.FIGURES_LOCK).
"""
from __future__ import annotations

import asyncio
import json
import threading

from controller.campaign.figures import LateFigures
from controller.results.records import RunRecord
from controller.run.late import FigureDrawing, RunOutcome


class _Scenario:
    def __init__(self, gate: threading.Event | None = None, inside: list | None = None):
        self.gate, self.inside, self.most = gate, inside if inside is not None else [], 0

    def figures(self, data, summary, out_dir, output=None):
        self.inside.append(1)
        self.most = max(self.most, len(self.inside))
        try:
            if self.gate is not None:
                assert self.gate.wait(10)
            (out_dir / "run.png").write_bytes(b"png")
            return ["run.png"]
        finally:
            self.inside.pop()


def _outcome(tmp_path, rid: str, scenario) -> RunOutcome:
    rec = RunRecord(tmp_path, rid)
    rec.manifest = {"status": "running", "errors": [], "finished": None, "figures_drawn": None}
    rec.finish("completed")
    return RunOutcome(rid, rec.dir, "completed", {}, 0, figures=FigureDrawing(scenario, None, {}, rec.dir), record=rec)


def _manifest(outcome: RunOutcome) -> dict:
    return json.loads((outcome.record_dir / "manifest.json").read_text())


def test_the_scheduler_goes_on_while_the_figures_go_in(tmp_path):
    gate = threading.Event()
    outcome = _outcome(tmp_path, "r1", _Scenario(gate))
    log: list[str] = []
    after: list[str] = []

    async def main():
        late = LateFigures(log.append)
        late.add(outcome, lambda: after.append(_manifest(outcome)["figures"][0]))
        await asyncio.sleep(0.05)           # the next run would be going on here
        assert late.pending == 1 and _manifest(outcome)["figures_drawn"] is None and after == []
        gate.set()
        await late.wait()
        assert late.pending == 0
    asyncio.run(main())
    m = _manifest(outcome)
    assert m["figures"] == ["run.png"] and m["figures_drawn"] >= m["finished"] and m["status"] == "completed"
    assert after == ["run.png"] and log == []


def test_figures_that_cannot_go_in_are_said_with_the_command_that_draws_them(tmp_path):
    outcome = _outcome(tmp_path, "r2", _Scenario())
    outcome.record.dir = tmp_path / "gone" / "r2"        # the record's directory cannot be written

    async def main():
        late = LateFigures(log.append)
        late.add(outcome, lambda: after.append(1))
        await late.wait()
    log: list[str] = []
    after: list[int] = []
    asyncio.run(main())
    assert after == [] and len(log) == 1
    assert log[0].startswith("run r2: its figures were not put into the record") and "`ctl runs plot r2`" in log[0]
    assert _manifest(outcome)["figures_drawn"] is None


def test_an_outcome_without_figures_is_left_alone(tmp_path):
    async def main():
        late = LateFigures(lambda m: None)
        late.add(RunOutcome("r3", None, "failed", None, 1), lambda: called.append(1))
        await late.wait()
        return late.pending
    called: list[int] = []
    assert asyncio.run(main()) == 0 and called == []


def test_two_runs_figures_are_never_drawn_at_once(tmp_path):
    gate = threading.Event()
    inside: list = []
    first, second = _Scenario(gate, inside), _Scenario(None, inside)
    a = _outcome(tmp_path, "a", first)
    b = _outcome(tmp_path, "b", second)      # started while a's are drawn: waits for them
    b.figures._thread.join(0.3)              # ample time to enter, were it not kept out
    assert len(inside) == 1 and b.figures._thread.is_alive()
    gate.set()
    a.finish_figures()
    b.finish_figures()
    assert first.most == 1 and second.most == 1
    assert _manifest(a)["figures"] == _manifest(b)["figures"] == ["run.png"]
