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
import shutil
import threading

from controller.campaign.figures import LateFigures
from controller.results.records import RunRecord
from controller.run.figworker import WorkerLost
from controller.run.late import FigureDrawing, RecordFigures, RunOutcome
from tests.support.shipped import no_state_dir, recorded_runs


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


# ---- figures drawn from the finished record by the daemon's worker process (figworker) ---------

class _Worker:
    """A FigureWorker's interface: what it was asked, and what it answers."""

    def __init__(self, answer=(["throughput.png"], None), raises: Exception | None = None):
        self.answer, self.raises, self.asked, self.closed = answer, raises, [], False

    async def draw(self, record_dir):
        self.asked.append(record_dir)
        if self.raises is not None:
            raise self.raises
        return self.answer

    async def close(self):
        self.closed = True


def _from_record(tmp_path, rid: str) -> RunOutcome:
    rec = RunRecord(tmp_path, rid)
    rec.manifest = {"status": "running", "errors": [], "finished": None, "figures_drawn": None}
    rec.finish("completed")
    return RunOutcome(rid, rec.dir, "completed", {}, 0, figures=RecordFigures(rec.dir), record=rec)


def _late(worker: _Worker, outcome: RunOutcome) -> tuple[list[str], list[str]]:
    log: list[str] = []
    after: list[str] = []

    async def main():
        late = LateFigures(log.append, worker=lambda: worker)
        late.add(outcome, lambda: after.append(json.dumps(_manifest(outcome).get("figures"))))
        assert outcome.figures is None          # handed over: never drawn a second time
        await late.wait()
        assert late.pending == 0 and late.worker is None
    asyncio.run(main())
    return log, after


def test_the_worker_draws_from_the_finished_record_and_the_daemon_puts_them_in(tmp_path):
    outcome = _from_record(tmp_path, "w1")
    worker = _Worker()
    log, after = _late(worker, outcome)
    m = _manifest(outcome)
    assert worker.asked == [outcome.record.dir] and worker.closed     # let go at the scheduler's end
    assert m["figures"] == ["throughput.png"] and m["figures_drawn"] >= m["finished"] and m["errors"] == []
    assert after == ['["throughput.png"]'] and log == []


def test_a_figure_the_worker_could_not_draw_is_said_as_in_the_runs_process(tmp_path):
    outcome = _from_record(tmp_path, "w2")
    log, after = _late(_Worker(answer=(None, "ValueError('no axes')")), outcome)
    m = _manifest(outcome)
    assert "figures" not in m and m["figures_drawn"] is not None
    assert m["errors"][-1]["error"] == "figure failed: ValueError('no axes')" and log == [] and after == ["null"]


def test_a_lost_worker_leaves_the_record_complete_saying_how_to_draw_them(tmp_path):
    outcome = _from_record(tmp_path, "w3")
    lost = WorkerLost("the figure worker (pid 42) was ended by SIGKILL while drawing them")
    log, after = _late(_Worker(raises=lost), outcome)
    m = _manifest(outcome)
    assert m["status"] == "completed" and m["figures_drawn"] is None and "figures" not in m
    line = m["errors"][-1]["error"]
    assert line == ("figures not drawn: the figure worker (pid 42) was ended by SIGKILL while drawing them; "
                    "`ctl runs plot w3` draws them")
    assert log == [f"run w3: {line}"] and after == ["null"]      # the record changed: a shared store gets it again


def test_without_a_worker_process_the_figures_are_drawn_from_the_record_in_the_daemon(tmp_path):
    run_dir = sorted(recorded_runs())[0]
    d = tmp_path / run_dir.name
    shutil.copytree(run_dir, d)
    rec = RunRecord.open(d)
    rec.manifest["figures_drawn"] = None
    outcome = RunOutcome(rec.id, d, "completed", {}, 0, figures=RecordFigures(d), record=rec)
    with no_state_dir():
        log, after = _late(_Worker(raises=OSError("fork: Resource temporarily unavailable")), outcome)
    m = _manifest(outcome)
    assert m["figures"] and all((d / f).read_bytes().startswith(b"\x89PNG") for f in m["figures"])
    assert m["figures_drawn"] is not None and len(log) == 1 and "drawn in the daemon's process" in log[0]


# ---- held until the next run's traffic (issue 28) ------------------------------------------------

def test_held_figures_wait_for_release_then_go_to_the_worker_in_order(tmp_path):
    first, second = _from_record(tmp_path, "h1"), _from_record(tmp_path, "h2")
    worker = _Worker()
    after: list[str] = []

    async def main():
        late = LateFigures(lambda m: None, worker=lambda: worker)
        late.add(first, lambda: after.append("h1"), hold=True)
        late.add(second, lambda: after.append("h2"), hold=True)
        await asyncio.sleep(0.05)             # the next run's health check and set-up would go on here
        assert late.held == 2 and late.pending == 0 and worker.asked == [] and late.worker is None
        assert _manifest(first)["figures_drawn"] is None and _manifest(second)["figures_drawn"] is None
        late.release()                        # the next run's clients have started
        assert late.held == 0 and late.pending == 2
        assert first.figures is None and second.figures is None      # handed over: never drawn twice
        late.release()                        # a second release hands nothing over again
        await late.wait()
    asyncio.run(main())
    # asked in the order the runs ended; each `then` once (their put-ins run in threads: any order)
    assert worker.asked == [first.record.dir, second.record.dir] and sorted(after) == ["h1", "h2"]
    assert _manifest(first)["figures"] == _manifest(second)["figures"] == ["throughput.png"]


def test_wait_draws_the_held_figures_too(tmp_path):
    outcome = _from_record(tmp_path, "h3")
    worker = _Worker()

    async def main():
        late = LateFigures(lambda m: None, worker=lambda: worker)
        late.add(outcome, hold=True)
        await late.wait()                     # the daemon's end: nothing follows, so they go in now
        assert late.held == 0 and late.pending == 0 and worker.closed
    asyncio.run(main())
    m = _manifest(outcome)
    assert worker.asked == [outcome.record.dir] and m["figures"] == ["throughput.png"] and m["figures_drawn"]


def test_figures_drawn_in_process_are_never_held(tmp_path):
    gate = threading.Event()
    outcome = _outcome(tmp_path, "h4", _Scenario(gate))      # a FigureDrawing: already being drawn

    async def main():
        late = LateFigures(lambda m: None)
        late.add(outcome, hold=True)
        assert late.held == 0 and late.pending == 1
        gate.set()
        await late.wait()
    asyncio.run(main())
    assert _manifest(outcome)["figures"] == ["run.png"]
