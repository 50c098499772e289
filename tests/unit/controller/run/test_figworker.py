"""A campaign's run figures drawn in a worker process from the finished record
(controller.run.figworker, issue 28).

Contract: the worker draws a record's figures as `ctl runs plot` does, and they are the files the
run's own process draws (same names, same bytes: PNG); one JSON line crosses each way, anything
else is refused; the worker runs at a lower priority; a figure that fails is answered as the
drawing's error; a worker that dies or hangs (killed after the bound) is reported as lost and the
next figures get a new one; the worker ends with its parent's end of the pipe (a parent killed
-9 leaves no orphan drawing into a record).
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller import scenarios
from controller.errors import UsageError
from controller.run import figworker
from controller.run.figworker import FigureWorker, WorkerLost, answer, draw_record, parse_reply, parse_request
from controller.run.late import FigureDrawing
from tests.support.shipped import ROOT, no_state_dir, recorded_runs, summarized

FAKE = "tests.unit.controller.run.test_figworker:fake_draw"


def fake_draw(record: str) -> list[str]:
    """The worker's drawing in these tests: what to do is in the record's file `how`."""
    how = (Path(record) / "how").read_text().strip()
    if how == "fail":
        raise ValueError("no axes")
    if how == "die":
        os._exit(3)
    if how == "hang":
        (Path(record) / "started").write_text(str(os.getpid()))
        time.sleep(600)
    if how == "huge":
        return ["x" * 100_000]
    if how == "spin":
        while True:
            pass
    return [f"nice={os.nice(0)}", f"pid={os.getpid()}"]


def _record(tmp_path: Path, name: str, how: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "how").write_text(how)
    return d


def _gone(pid: int) -> bool:
    """The process has exited (a zombie nobody reaped counts as exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _wait_gone(pid: int, limit_s: float = 30) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.02)
    return False


# ---- the pure parts --------------------------------------------------------------------------

def test_a_request_is_one_line_of_a_number_and_a_path():
    line = figworker.request_line(7, Path("/runs/r1"))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert parse_request(line) == (7, "/runs/r1")
    for bad in (b'{"n": 1}', b'{"n": "1", "record": "/r"}', b'{"n": true, "record": "/r"}',
                b'{"n": 1, "record": ""}', b'{"n": 1, "record": "/r", "x": 2}', b"[1, 2]"):
        with pytest.raises(ValueError):
            parse_request(bad)
    with pytest.raises(ValueError):
        parse_request(b"not json")


def test_a_reply_is_the_figures_or_the_drawings_error_for_that_request():
    assert parse_reply(b'{"n": 3, "figures": ["throughput.png"]}', 3) == (["throughput.png"], None)
    assert parse_reply(b'{"n": 3, "error": "ValueError(\'no axes\')"}', 3) == (None, "ValueError('no axes')")
    for bad in (b'{"n": 2, "figures": []}', b'{"n": 3}', b'{"n": 3, "figures": [1]}', b'{"n": 3, "figures": "a"}'):
        with pytest.raises(ValueError):
            parse_reply(bad, 3)


def test_the_answer_carries_the_drawings_exception_as_the_run_records_it():
    def boom(record: str) -> list[str]:
        raise ValueError("no axes")
    assert answer(4, boom, "/r") == {"n": 4, "error": "ValueError('no axes')"}
    assert answer(5, lambda r: [Path(r) / "a.png"], "/r") == {"n": 5, "figures": ["/r/a.png"]}


def test_only_module_function_references_are_taken():
    assert figworker.resolve("controller.run.figworker:draw_record") is draw_record
    for bad in ("os.system", "a:b:c", "x; rm", ":f", "m:"):
        with pytest.raises(UsageError):
            figworker.resolve(bad)
        with pytest.raises(UsageError):
            FigureWorker(draw=bad)


# ---- the drawing: the same figures as the run's own process ------------------------------------

@pytest.mark.parametrize("run_dir", sorted(recorded_runs()), ids=lambda d: d.name)
def test_figures_from_the_record_are_the_ones_drawn_in_the_runs_process(run_dir, tmp_path):
    m = json.loads((run_dir / "manifest.json").read_text())
    scenario = scenarios.get(m["scenario"])
    from_record = tmp_path / "record" / run_dir.name      # the same name: a figure's caption names its run
    shutil.copytree(run_dir, from_record)
    in_process = tmp_path / "process" / run_dir.name
    in_process.mkdir(parents=True)
    with no_state_dir():
        names = draw_record(from_record)
        data, summary = summarized(scenario, run_dir)
    drawing = FigureDrawing(scenario, data, summary, in_process)
    drawing.wait()
    assert drawing.error is None and names == drawing.figures and names
    for n in names:
        a, b = (from_record / n).read_bytes(), (in_process / n).read_bytes()
        assert a.startswith(b"\x89PNG\r\n\x1a\n") and a == b, n
    assert json.loads((from_record / "manifest.json").read_text()) == m      # the record is only read


def test_a_run_cut_short_is_not_drawn_from_the_record(tmp_path):
    run_dir = sorted(recorded_runs())[0]
    d = tmp_path / run_dir.name
    shutil.copytree(run_dir, d)
    m = json.loads((d / "manifest.json").read_text())
    m["status"] = "aborted"
    (d / "manifest.json").write_text(json.dumps(m))
    with no_state_dir(), pytest.raises(UsageError, match="ended 'aborted'"):
        draw_record(d)


# ---- the worker process ----------------------------------------------------------------------

def test_the_worker_answers_in_turn_at_a_lower_priority_and_says_a_failed_figure(tmp_path):
    async def main():
        w = FigureWorker(draw=FAKE, preload=False)
        try:
            first = await w.draw(_record(tmp_path, "r1", "ok"))
            failed = await w.draw(_record(tmp_path, "r2", "fail"))
            again = await w.draw(_record(tmp_path, "r3", "ok"))
            return first, failed, again, w.started, w.pid
        finally:
            await w.close()
    first, failed, again, started, pid = asyncio.run(main())
    assert first[1] is None and first[0][0] == f"nice={min(19, os.nice(0) + figworker.NICE)}"
    assert failed == (None, "ValueError('no axes')")
    assert again[0] == first[0] and started == 1          # one worker for them all
    assert _gone(int(first[0][1].removeprefix("pid=")))     # let go by close()


def test_an_answer_over_the_streams_limit_is_no_reply_and_ends_the_worker(tmp_path):
    async def main():
        w = FigureWorker(draw=FAKE, preload=False)
        try:
            with pytest.raises(WorkerLost, match=r"answered no reply .* and was ended"):
                await w.draw(_record(tmp_path, "r1", "huge"))
            assert w.pid is None
            return await w.draw(_record(tmp_path, "r2", "ok")), w.started
        finally:
            await w.close()
    (figures, error), started = asyncio.run(main())
    assert error is None and figures[0].startswith("nice=") and started == 2


def test_a_ctrl_c_or_a_stop_of_the_daemons_group_leaves_the_worker_drawing(tmp_path):
    """SIGINT, SIGTERM and SIGHUP reach a process group; the daemon then still waits for its figures."""
    async def main():
        w = FigureWorker(draw=FAKE, preload=False)
        try:
            await w.draw(_record(tmp_path, "r1", "ok"))
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                os.kill(w.pid, sig)
            figures, error = await w.draw(_record(tmp_path, "r2", "ok"))
            return figures, error, w.started
        finally:
            await w.close()
    figures, error, started = asyncio.run(main())
    assert error is None and figures[0].startswith("nice=") and started == 1


def test_a_worker_that_dies_is_reported_and_the_next_figures_get_a_new_one(tmp_path):
    async def main():
        w = FigureWorker(draw=FAKE, preload=False)
        try:
            with pytest.raises(WorkerLost, match=r"the figure worker \(pid \d+\) exited with code 3 while drawing them"):
                await w.draw(_record(tmp_path, "r1", "die"))
            figures, error = await w.draw(_record(tmp_path, "r2", "ok"))
            return figures, error, w.started
        finally:
            await w.close()
    figures, error, started = asyncio.run(main())
    assert error is None and figures[0].startswith("nice=") and started == 2


@pytest.mark.parametrize("how, kw, said", [
    ("hang", {"stall_s": 1.0}, r"did not answer and used no CPU time for \d+ s and was ended"),
    ("spin", {"bound_s": 1.0}, r"did not answer within \d+ s and was ended")])
def test_a_hung_worker_is_killed(tmp_path, how, kw, said):
    """Blocked (no CPU time used) past STALL_S, or busy past BOUND_S without answering."""
    async def main():
        w = FigureWorker(draw=FAKE, preload=False, poll_s=0.1)
        try:
            figures, _ = await w.draw(_record(tmp_path, "r0", "ok"))      # started, with the usual bounds
            for k, v in kw.items():
                setattr(w, k, v)
            with pytest.raises(WorkerLost, match=r"the figure worker \(pid \d+\) " + said):
                await w.draw(_record(tmp_path, "r1", how))
            return int(figures[1].removeprefix("pid=")), w.pid
        finally:
            await w.close()
    pid, now = asyncio.run(main())
    assert now is None and _wait_gone(pid)


PARENT = """
import asyncio, sys
from controller.run.figworker import FigureWorker
async def main():
    w = FigureWorker(draw=sys.argv[1], preload=False)
    asyncio.ensure_future(w.draw(sys.argv[2]))
    while w.pid is None:
        await asyncio.sleep(0.01)
    print(w.pid, flush=True)
    await asyncio.sleep(600)
asyncio.run(main())
"""


def test_a_parent_killed_9_leaves_no_worker_drawing(tmp_path):
    """The daemon killed -9 while its worker draws: the worker ends with the pipe, at once."""
    rec = _record(tmp_path, "r1", "hang")
    parent = subprocess.Popen([sys.executable, "-c", PARENT, FAKE, str(rec)], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True)
    try:
        pid = int(parent.stdout.readline())
        deadline = time.monotonic() + 60
        while not (rec / "started").is_file() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (rec / "started").read_text() == str(pid) and not _gone(pid)    # drawing
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        assert _wait_gone(pid), f"worker {pid} still runs after its parent was killed"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(10)
