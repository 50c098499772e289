"""A campaign's run figures drawn in a process of their own, from the finished record (issue 28).

In a campaign daemon a done run's figures used to be drawn in a thread of the daemon: pyplot
holds the interpreter lock for milliseconds at a time, which widens the round trips of the next
run's clock exchange, so the exchange waited for the drawing (controller.clocksync.QuietGate)
and the next run's health check waited ~0.2 s a run for the previous figures. Drawn in another
process they hold no lock of the daemon's: the next run's health check, plan and start go on
beside them, and the worker only competes for a core, at a lower priority.

Choices made here, and why:

- **One persistent worker per daemon, started on first use** (`FigureWorker`), not one per run:
  importing matplotlib and ctl's scenarios costs ~0.5-1 s of CPU, paid once, and later figures
  start at once. It is a new interpreter (`python -m controller.run.figworker`, i.e. fork+exec,
  the spawn way): never a `fork()` of the daemon, a threaded asyncio process whose other
  threads' locks a forked child would inherit held. A plain child on two pipes rather than a
  multiprocessing context: spawn would re-import the daemon's `__main__` (the CLI) in the
  child, and nothing but a path and a list of names has to cross.
- **What crosses is the record's directory**, one JSON line each way: the worker draws from the
  record exactly as `ctl runs plot` does (`draw_record`: the record loaded with
  controller.run.replay.load_run, the scenario's summary made again, `scenario.figures`), into
  the record, with the output the run's own process uses (the same file names, PNG at the
  default resolution), and answers the file names; the daemon, the record's one writer, puts
  them into the manifest (`figures`, `figures_drawn`), as `FigureDrawing.put_in_record` does.
  tests/unit/controller/run/test_figworker.py checks that on recorded runs the files are
  byte-for-byte those drawn from the run's data in process.
- **Lower priority**: the worker lowers its own niceness by `NICE` (10: a nice-0 process that
  wakes, such as the clock echoes, sshd, the shapers and iperf3 of the next run, takes the core
  first; at 19 a loaded machine would starve the figures past the bound below).
- **Death and hangs**: a worker that dies while drawing, or is hung (then it is killed, by its
  PID), raises `WorkerLost`. Hung means: no answer and no CPU time used for `STALL_S` (blocked:
  a deadlock), or no answer within `BOUND_S` whatever it does (an endless loop). Not a plain
  wall-clock bound: at its lower priority on a loaded machine a worker that makes progress may
  take minutes (on this 2-core machine at load 17 a 10 s run's figures went in ~46 s after its
  record's end), and killing it would only lose figures. Where the CPU time cannot be read
  (no /proc) only `BOUND_S` applies. the record stays complete with
  `figures_drawn: null` and an error line saying that `ctl runs plot RUN` draws them
  (controller/campaign/figures.py), and the next figures get a new worker. A figure that fails
  to draw (an exception in the scenario's figures) is answered and recorded as in process.
- **No orphan**: the worker reads its requests on a thread of its own; end of file on its stdin
  (the daemon exited, or was killed -9: the kernel closes the pipe) ends it at once with
  `os._exit`, mid-figure if need be (a figure file is replaced whole, controller.safefs, so a
  record never holds half a figure). Not PR_SET_PDEATHSIG: it fires when the thread that
  started the child ends, not the process, and is Linux's own. The daemon's exit first waits for
  the figures handed over (LateFigures.wait), then closes the pipe. The worker runs in a session
  of its own (a Ctrl-C at the daemon's terminal never reaches it) and ignores SIGINT, SIGTERM
  and SIGHUP (a service manager's stop signals every process of the service): the daemon then
  still waits for its figures, and the pipe ends the worker.

Pure of the rack; only the worker's side (`draw_record`, `serve`) draws.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import queue
import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import IO, Callable

from controller import scenarios
from controller.errors import UsageError
from controller.results.records import load_manifest
from controller.run.replay import SUMMARIZED_STATUSES, load_run, summarize_run

DRAW = "controller.run.figworker:draw_record"
NICE = 10               # added to the daemon's niceness in the worker
STALL_S = 60.0          # no answer and no CPU time used this long: the worker is hung, killed
BOUND_S = 1800.0        # no answer this long, busy or not: hung (an endless loop), killed
POLL_S = 5.0            # how often a worker that has not answered is looked at
CLOSE_S = 10.0          # a worker let go that has not exited by then is killed
_REF = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
_ROOT = str(Path(__file__).resolve().parents[2])      # the tree this daemon's ctl runs from


def draw_record(record_dir: str | Path) -> list[str]:
    """The figures of a finished run whose traffic completed (status completed or invalid), drawn
    from its record into the record, as `ctl runs plot` draws them (controller/cli/runs_plot.py)
    and with the output the run's own process uses (controller.run.late.FigureDrawing). Returns
    the file names, the manifest's `figures`. The manifest is only read."""
    d = Path(record_dir)
    m = load_manifest(d)
    if m.get("status") not in SUMMARIZED_STATUSES:
        raise UsageError(f"run {m.get('run_id') or d.name} ended {m.get('status')!r}: its figures are drawn "
                         "with its partial summary, not from the record")
    scenario = scenarios.get(m["scenario"])
    data = load_run(d)
    return list(scenario.figures(data, summarize_run(scenario, data), d))


class WorkerLost(Exception):
    """The worker died or hung while drawing a record's figures (the message says which)."""


def request_line(n: int, record_dir: str | Path) -> bytes:
    return (json.dumps({"n": n, "record": str(record_dir)}) + "\n").encode()


def parse_request(line: bytes) -> tuple[int, str]:
    """(number, record directory) of one request line; ValueError for anything else."""
    req = json.loads(line)
    if not isinstance(req, dict) or set(req) != {"n", "record"} or type(req["n"]) is not int \
            or not isinstance(req["record"], str) or not req["record"]:
        raise ValueError(f"not a figure request: {line[:200]!r}")
    return req["n"], req["record"]


def answer(n: int, draw: Callable[[str], list[str]], record: str) -> dict:
    """The reply to request `n`: the figures drawn, or the drawing's exception (its repr, as the
    run's own process records it)."""
    try:
        return {"n": n, "figures": [str(f) for f in draw(record)]}
    except Exception as exc:     # a figure that fails is said in the record, never loses the numbers
        return {"n": n, "error": repr(exc)}


def parse_reply(line: bytes, n: int) -> tuple[list[str] | None, str | None]:
    """(figures, error) of the worker's reply to request `n`; ValueError for anything else."""
    rep = json.loads(line)
    if not isinstance(rep, dict) or rep.get("n") != n:
        raise ValueError(f"not the reply to figure request {n}: {line[:200]!r}")
    figs, err = rep.get("figures"), rep.get("error")
    if err is not None:
        return None, str(err)
    if not isinstance(figs, list) or not all(isinstance(f, str) for f in figs):
        raise ValueError(f"figure reply {n} without a list of names: {line[:200]!r}")
    return figs, None


def resolve(ref: str) -> Callable[[str], list[str]]:
    """`module:function` (the drawing; tests name one of their own)."""
    if not _REF.fullmatch(ref):
        raise UsageError(f"figure worker: {ref!r} is not module:function")
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


# ---- the worker's side -----------------------------------------------------------------------

def _read_requests(stream: IO[bytes], requests: "queue.Queue[tuple[int, str]]") -> None:
    try:
        for line in stream:
            requests.put(parse_request(line))
    except ValueError as exc:     # not the daemon talking: stop rather than guess
        print(f"figure worker: {exc}", file=sys.stderr, flush=True)
        os._exit(2)
    os._exit(0)     # end of file: the daemon is gone or let us go; never draw on into a record


def serve(draw_ref: str = DRAW, preload: bool = True) -> None:
    """The worker: answer each request with `draw_ref`'s figures, one at a time, until stdin ends."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):     # ended by its pipe (see the docstring)
        signal.signal(sig, signal.SIG_IGN)
    replies = os.fdopen(os.dup(1), "w", buffering=1)    # the replies on the pipe stdout was
    os.dup2(2, 1)                                         # a stray print goes to stderr, never into a reply
    with contextlib.suppress(OSError):
        os.nice(NICE)
    requests: queue.Queue[tuple[int, str]] = queue.Queue()
    threading.Thread(target=_read_requests, args=(sys.stdin.buffer, requests), name="requests", daemon=True).start()
    draw = resolve(draw_ref)
    if preload:     # matplotlib (~0.5 s of CPU) before the first figure is asked for
        from controller import plots
        with contextlib.suppress(Exception):     # if it fails, the drawing says why, as in the run's process
            plots.pyplot()
            for name in scenarios.available():
                scenarios.get(name)
    while True:
        n, record = requests.get()
        replies.write(json.dumps(answer(n, draw, record)) + "\n")


# ---- the daemon's side -----------------------------------------------------------------------

class FigureWorker:
    """The daemon's figure worker: started on the first `draw`, asked one record at a time,
    replaced after it died or hung. `draw` and `preload` are for tests."""

    def __init__(self, *, draw: str = DRAW, stall_s: float = STALL_S, bound_s: float = BOUND_S,
                 poll_s: float = POLL_S, preload: bool = True):
        if not _REF.fullmatch(draw):
            raise UsageError(f"figure worker: {draw!r} is not module:function")
        self.draw_ref, self.preload = draw, preload
        self.stall_s, self.bound_s, self.poll_s = stall_s, bound_s, poll_s
        self.proc: asyncio.subprocess.Process | None = None
        self.started = 0            # workers started so far
        self._n = 0
        self._lock = asyncio.Lock()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    async def _start(self) -> asyncio.subprocess.Process:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([_ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        argv = [sys.executable, "-m", "controller.run.figworker", "--draw", self.draw_ref]
        if not self.preload:
            argv.append("--no-preload")
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.PIPE, env=env, cwd=_ROOT,
                                                    start_new_session=True)
        self.started += 1
        return proc

    async def draw(self, record_dir: str | Path) -> tuple[list[str] | None, str | None]:
        """(figure names, None), or (None, the drawing's error) for a figure that failed.
        WorkerLost when the worker dies or does not answer within the bound (it is then killed);
        OSError when no worker can be started."""
        async with self._lock:
            if self.proc is None or self.proc.returncode is not None:
                self.proc = await self._start()
            proc = self.proc
            assert proc.stdin is not None and proc.stdout is not None
            self._n += 1
            try:
                proc.stdin.write(request_line(self._n, Path(record_dir).absolute()))
                await proc.stdin.drain()
                line = await self._answer(proc)
            except _Hung as exc:
                await self._end(proc, kill=True)
                raise WorkerLost(f"the figure worker (pid {proc.pid}) {exc} and was ended") from None
            except (OSError, ConnectionError):     # the pipe broke: the worker is gone
                line = b""
            except ValueError as exc:               # a line over the stream's limit: not a reply
                await self._end(proc, kill=True)
                raise WorkerLost(f"the figure worker (pid {proc.pid}) answered no reply ({exc}) and was "
                                 "ended") from None
            if not line:
                code = await self._end(proc, kill=False)
                raise WorkerLost(f"the figure worker (pid {proc.pid}) {_how(code)} while drawing them")
            try:
                return parse_reply(line, self._n)
            except ValueError as exc:
                await self._end(proc, kill=True)
                raise WorkerLost(f"the figure worker (pid {proc.pid}) answered out of turn ({exc}) and was "
                                 "ended") from None

    async def _answer(self, proc: asyncio.subprocess.Process) -> bytes:
        """The worker's next line (b"" at its end); _Hung when it is hung (see STALL_S, BOUND_S)."""
        assert proc.stdout is not None
        reading = asyncio.ensure_future(proc.stdout.readline())
        t0 = last = time.monotonic()
        cpu = cpu_seconds(proc.pid)
        try:
            while True:
                done, _ = await asyncio.wait({reading}, timeout=self.poll_s)
                if done:
                    return reading.result()
                now = time.monotonic()
                used = cpu_seconds(proc.pid)
                if used is not None and cpu is not None and used > cpu:
                    cpu, last = used, now
                if cpu is not None and now - last >= self.stall_s:
                    raise _Hung(f"did not answer and used no CPU time for {now - last:.0f} s")
                if now - t0 >= self.bound_s:
                    raise _Hung(f"did not answer within {now - t0:.0f} s")
        finally:
            if not reading.done():
                reading.cancel()

    async def _end(self, proc: asyncio.subprocess.Process, *, kill: bool) -> int | None:
        if self.proc is proc:
            self.proc = None
        if kill and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()          # our own child, by its PID
        try:
            return await asyncio.wait_for(proc.wait(), CLOSE_S)
        except asyncio.TimeoutError:
            return None

    async def close(self) -> None:
        """Let the worker go (its stdin closed: it exits at once); killed if it lingers."""
        async with self._lock:
            proc, self.proc = self.proc, None
            if proc is None:
                return
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), CLOSE_S)
            except asyncio.TimeoutError:
                await self._end(proc, kill=True)


class _Hung(Exception):
    pass


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) process `pid` has used, from /proc; None where it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _how(code: int | None) -> str:
    if code is None:
        return "stopped answering"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was ended by {signal.Signals(-code).name}"
        return f"was ended by signal {-code}"
    return f"exited with code {code}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m controller.run.figworker",
                                 description="ctl's figure worker (started by a campaign daemon; reads requests "
                                             "on stdin, exits at its end)")
    ap.add_argument("--draw", default=DRAW, help=argparse.SUPPRESS)
    ap.add_argument("--no-preload", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    serve(args.draw, preload=not args.no_preload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
