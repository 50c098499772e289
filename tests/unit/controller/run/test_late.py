"""The figures drawn after a run's record is finished (controller.run.late, issue 28): put into the
finished record with their time, a failed figure said in the record without losing the numbers,
and drawn from a copy of the summary, which the run goes on changing."""
from __future__ import annotations

import json
import threading

from controller.results.records import RunRecord
from controller.run.late import FigureDrawing, RunOutcome


class _Scenario:
    """A scenario's figures() only (FigureDrawing needs nothing else of it)."""

    def __init__(self, fail: bool = False, gate: threading.Event | None = None):
        self.fail = fail
        self.gate = gate
        self.seen: dict | None = None

    def figures(self, data, summary, out_dir, output=None):
        if self.gate is not None:
            self.gate.wait(10)
        self.seen = summary
        if self.fail:
            raise ValueError("no axes")
        (out_dir / "run.png").write_bytes(b"png")
        return ["run.png"]


def _finished(tmp_path) -> RunRecord:
    rec = RunRecord(tmp_path, "r1")
    rec.manifest = {"status": "running", "errors": [], "finished": None}
    rec.manifest["figures_drawn"] = None
    rec.finish("completed")
    return rec


def test_the_figures_go_into_the_finished_record_with_their_time(tmp_path):
    rec = _finished(tmp_path)
    summary = {"flows": {"f1": 1.0}}
    gate = threading.Event()
    scenario = _Scenario(gate=gate)
    outcome = RunOutcome("r1", rec.dir, "completed", summary, 0, figures=FigureDrawing(scenario, None, summary,
                                                                                           rec.dir), record=rec)
    summary["flows"]["f2"] = 2.0        # the run goes on with its own summary (e.g. the HyStart attribution)
    gate.set()
    outcome.finish_figures()
    m = json.loads((rec.dir / "manifest.json").read_text())
    assert m["figures"] == ["run.png"] and m["status"] == "completed"
    assert m["figures_drawn"] >= m["finished"]
    assert scenario.seen == {"flows": {"f1": 1.0}}
    assert outcome.figures is None
    outcome.finish_figures()            # once only: nothing happens the second time
    assert json.loads((rec.dir / "manifest.json").read_text())["figures_drawn"] == m["figures_drawn"]


def test_a_failed_figure_is_said_in_the_record_and_loses_nothing_else(tmp_path):
    rec = _finished(tmp_path)
    FigureDrawing(_Scenario(fail=True), None, {"x": 1}, rec.dir).put_in_record(rec)
    m = json.loads((rec.dir / "manifest.json").read_text())
    assert "figures" not in m and m["status"] == "completed" and m["figures_drawn"] is not None
    assert m["errors"][-1]["error"] == "figure failed: ValueError('no axes')"
