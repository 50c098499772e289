"""What a command shows on stderr while it works: progress lines, and on a terminal one block
redrawn in place (the run's traffic: elapsed and remaining with a bar, per-flow and per-link
rates; a numbered step of `ctl link measure` ticking towards its expected length).

The block is drawn with `rich` (its Live display keeps one region at the bottom of the
terminal, prints log lines above it, follows the terminal's width and takes the region
away at the end, so the summary printed afterwards is intact). It is drawn only when
stderr is a terminal and the command is not `--quiet`/`--json`; on a pipe there are only
the progress lines, as before. What the block says is made by pure functions
(`status_lines`, `step_line`) that tests read without a terminal.

Nothing is written by the caller: every line, frame and ticker goes to one thread of the
Console's own (`Writer`), and the run's event loop only hands them over and goes on. A stream
that stops reading (a paused `less`, a full pipe buffer, Ctrl-S, a stalled SSH session) then blocks
only that thread, not the samplers' streams, the traffic's clocks or the restore. What waits behind
it is bounded: frames are cut to the newest; lines beyond MAX_PENDING_LINES drop the oldest waiting
ones, counted and said in one line at the end; `end` (and the interpreter's exit) waits a bounded
time for the rest, so the last lines of a run come out once the reader reads again. rich's import
happens on that thread too.
"""
from __future__ import annotations

import atexit
import sys
import threading
import time
from collections import deque
from typing import Any, Callable, TextIO

from controller.run.live import LiveStatus
from controller.traffic.progress import StepNote, TrafficProgress, format_seconds

BAR_WIDTH = 24


def bar(fraction: float, width: int = BAR_WIDTH) -> str:
    """`█████░░░░░`: `fraction` of `width` cells filled."""
    n = int(round(max(0.0, min(1.0, fraction)) * width))
    return "█" * n + "░" * (width - n)


def mbit(bps: float | None) -> str:
    return "-" if bps is None else f"{bps / 1e6:.2f}"


def header_line(p: TrafficProgress) -> str:
    when = f"{format_seconds(p.elapsed_s)} elapsed"
    if p.remaining_s is not None:
        when += f", {'about ' if p.counted else ''}{format_seconds(p.remaining_s)} left"
    count = ""
    if p.counted:
        count = f"  {p.done} of {p.total} done" + (f" ({p.failed} failed)" if p.failed else "") + ";"
    limit = f"; {p.limit}" if p.limit else ""
    return f"{p.what}  {bar(p.fraction)} {p.fraction * 100:3.0f}%{count} {when}{limit}"


def status_lines(s: LiveStatus) -> list[str]:
    """The live block of a run, as plain lines (pure)."""
    p = s.traffic
    out = [header_line(p)]
    if p.waiting_for:
        out.append(f"  waiting for {p.waiting_for}")
    if s.flows:
        w = max(12, *(len(f.name) for f in s.flows))
        out.append(f"  {'flow':<{w}} {'Mbit/s':>9}")
        for f in s.flows:
            rate = mbit(f.rate_bps) if f.state == "running" else f.state
            out.append(f"  {f.name:<{w}} {rate:>9}" + (f"  {f.detail}" if f.detail else ""))
        if s.more_flows:
            out.append(f"  ... and {s.more_flows} more")
    if s.links:
        w = max(12, *(len(l.link) for l in s.links))
        out.append(f"  {'link':<{w}} {'a->b Mbit/s':>12} {'b->a Mbit/s':>12}")
        for l in s.links:
            out.append(f"  {l.link:<{w}} {mbit(l.forward_bps):>12} {mbit(l.reverse_bps):>12}")
    return out


def step_line(note: StepNote, elapsed_s: float) -> str:
    """A numbered step ticking towards its expected length (pure)."""
    frac = elapsed_s / note.expected_s if note.expected_s > 0 else 1.0
    over = "" if elapsed_s <= note.expected_s * 1.2 + 1 else ", taking longer than expected"
    return (f"[{note.index}/{note.total}] {note.what}  {bar(min(frac, 1.0))} "
            f"{format_seconds(elapsed_s)} of about {format_seconds(note.expected_s)}{over}")


class _Ticker:
    """A renderable that says how long the current step has run each time it is drawn."""

    def __init__(self, note: StepNote):
        self.note = note
        self.t0 = time.monotonic()

    def __rich__(self) -> Any:
        from rich.text import Text
        return Text(step_line(self.note, time.monotonic() - self.t0), no_wrap=True, overflow="ellipsis")


class Writer:
    """The one thread that writes a Console's output: progress lines, a run's block (frames of a
    LiveStatus) and a step's ticker, in the order they were handed over. Handing over never
    waits on the stream: the caller (a run's event loop) appends to a queue under a lock that the
    thread holds only to take the next item, never while writing. A stream that does not read
    (a paused `less`, a full pipe, Ctrl-S) blocks only this thread.

    Bounds: more than MAX_PENDING_FRAMES frames waiting behind the stream drop the oldest waiting
    frame (the newest is always drawn); more than `max_lines` lines waiting drop the OLDEST waiting
    line, counted, so the last lines of a run (restore, the record's place) are the ones kept."""

    MAX_PENDING_FRAMES = 8
    MAX_LINES = 2000             # lines waiting behind a stream that does not read (~200 kB)
    END_WAIT_S = 3.0             # how long `end` and the interpreter's exit wait for the stream

    def __init__(self, stream: TextIO, max_lines: int, new_live: Callable[[Any, bool], Any] | None = None):
        self.stream = stream
        self.new_live = new_live            # makes a rich Live region (a Console's block); None: lines only
        self.max_lines = max(1, max_lines)
        self.q: deque[list] = deque()       # items: [kind, payload]
        self.cond = threading.Condition()
        self.bounds = {"line": self.max_lines, "frame": self.MAX_PENDING_FRAMES}
        self.waiting = {"line": 0, "frame": 0}
        self.dropped = 0                    # lines dropped since the last note about it
        self.dropped_total = 0
        self.thread = threading.Thread(target=self._run, name="ctl-output", daemon=True)
        self.thread.start()
        atexit.register(self._at_exit)

    def _at_exit(self) -> None:
        if self.thread.is_alive():
            self.flush(self.END_WAIT_S)

    # ---- handing over (the caller's side: never waits on the stream) ---------------------------

    def _put(self, kind: str, payload: Any) -> None:
        with self.cond:
            self.q.append([kind, payload])
            if kind in self.waiting:
                self.waiting[kind] += 1
                if self.waiting[kind] > self.bounds[kind]:
                    self._drop_oldest(kind)
            self.cond.notify()

    def _drop_oldest(self, kind: str) -> None:
        for i, item in enumerate(self.q):   # linear in the waiting items, which are bounded
            if item[0] == kind:
                del self.q[i]
                self.waiting[kind] -= 1
                if kind == "line":
                    self.dropped += 1
                    self.dropped_total += 1
                return

    def line(self, text: str) -> None:
        self._put("line", text)

    def text(self, text: str) -> None:
        """Text written as it is (no newline added), bounded and counted like a line."""
        self._put("line", _Raw(text))

    def frame(self, status: LiveStatus) -> None:
        self._put("frame", status)

    def end_block(self) -> None:
        self._put("end-block", None)

    def ticker(self, note: StepNote) -> None:
        self._put("ticker", note)

    def flush(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for everything handed over so far to be written (True when it was);
        first one line saying how many lines were dropped, if any were."""
        with self.cond:
            if self.dropped:
                n, self.dropped = self.dropped, 0
                self.q.append(["line", dropped_note(n)])
                self.waiting["line"] += 1
        done = threading.Event()
        self._put("flush", done)
        return done.wait(timeout_s) if self.thread.is_alive() else False

    # ---- the thread -----------------------------------------------------------------------------

    def _run(self) -> None:
        live = None
        while True:
            with self.cond:
                while not self.q:
                    self.cond.wait()
                kind, item = self.q.popleft()
                if kind in self.waiting:
                    self.waiting[kind] -= 1
            if kind == "flush":
                try:
                    self.stream.flush()
                except (OSError, ValueError):
                    pass
                item.set()
                continue
            try:
                if kind == "line":
                    if isinstance(item, _Raw):
                        self.stream.write(item)
                        self.stream.flush()
                    elif live is None:
                        print(item, file=self.stream, flush=True)
                    else:
                        from rich.text import Text
                        live.console.print(Text(item), soft_wrap=True)   # above the block, which stays
                elif kind == "end-block":
                    if live is not None:
                        live, old = None, live
                        old.stop()
                elif kind == "ticker":
                    if live is not None:
                        live, old = None, live
                        old.stop()
                    live = self.new_live(_Ticker(item), auto_refresh=True)
                else:
                    from rich.console import Group
                    from rich.text import Text
                    r = Group(*(Text(l, no_wrap=True, overflow="ellipsis") for l in status_lines(item)))
                    if live is not None and isinstance(live.renderable, _Ticker):
                        live, old = None, live      # a step's ticker gives way to a run's block
                        old.stop()
                    if live is None:
                        live = self.new_live(r, auto_refresh=False)
                    live.update(r, refresh=True)
            except Exception:   # output must never end a run: the block stops, lines still go out
                live = None


class _Raw(str):
    """Text handed to a `Writer` to be written as it is."""


def dropped_note(n: int) -> str:
    return (f"ctl: {n} progress line{'s' if n != 1 else ''} not shown: the output was not read while the "
            f"run went on (the oldest waiting lines were dropped; the run record has the run's own log)")


class Console:
    """Progress on stderr for one command: `log` lines (`[  12.3s] text`), and on a terminal
    the live block (`live` for a run's LiveStatus, `step` for a numbered step). Everything is
    written by one thread of the Console's own (`Writer`); `end` waits (bounded) until it is out."""

    MAX_PENDING_LINES = Writer.MAX_LINES
    END_WAIT_S = Writer.END_WAIT_S     # how long `end` (and the interpreter's exit) waits for the stream

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False, block: bool = True,
                 max_pending_lines: int | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.t0 = time.monotonic()
        try:
            tty = self.stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        self.block = block and tty and not quiet
        self.max_pending_lines = max_pending_lines or self.MAX_PENDING_LINES
        self._writer: Writer | None = None
        self._block_shown = False         # a run's block or a step's ticker was handed over, not ended

    @property
    def writer(self) -> Writer:
        if self._writer is None:
            self._writer = Writer(self.stream, self.max_pending_lines, self._new_live)
            atexit.register(self._at_exit)
        return self._writer

    @property
    def dropped_lines(self) -> int:
        """Lines dropped so far because the stream did not take them."""
        return 0 if self._writer is None else self._writer.dropped_total

    # ---- lines ----------------------------------------------------------------------------------

    def log(self, msg: object) -> None:
        if isinstance(msg, StepNote):
            self.step(msg)
            return
        if self.quiet:
            return
        self.writer.line(f"[{time.monotonic() - self.t0:6.1f}s] {msg}")

    # ---- the block ------------------------------------------------------------------------------

    @property
    def live_sink(self) -> Any:
        """The runner's `live` callback, or None when no block is drawn (no terminal, quiet)."""
        return self.live if self.block else None

    def _new_live(self, renderable: Any, auto_refresh: bool) -> Any:
        """A rich Live region (called by the writer's thread only)."""
        from rich.console import Console as RichConsole
        from rich.live import Live
        live = Live(renderable, console=RichConsole(file=self.stream, highlight=False, markup=False),
                    auto_refresh=auto_refresh, refresh_per_second=2, transient=True,
                    redirect_stdout=False, redirect_stderr=False)
        live.start()
        return live

    def live(self, status: LiveStatus | None) -> None:
        """Draw a run's status in place; None takes the block away (traffic is over). Never waits."""
        if not self.block:
            return
        if status is None:
            self._end_block()
            return
        self._block_shown = True
        self.writer.frame(status)

    def step(self, note: StepNote) -> None:
        """A numbered step: a line on a pipe; on a terminal a line that ticks until the next step."""
        if self.quiet:
            return
        if not self.block:
            self.log(note.text())
            return
        self._end_block()
        self.log(note.text())
        self._block_shown = True
        self.writer.ticker(note)

    def _end_block(self) -> None:
        if self._block_shown:
            self._block_shown = False
            self.writer.end_block()

    def end(self, timeout_s: float | None = None) -> bool:
        """Take the block away and wait (at most `timeout_s`, default END_WAIT_S) until everything
        handed over is written, after one line saying how many lines were dropped if any were.
        True when all of it is out; False when the stream did not take it in time (it keeps going
        out in the background while the process lives, and once more at exit)."""
        self._end_block()
        if self._writer is None:
            return True
        return self._writer.flush(self.END_WAIT_S if timeout_s is None else timeout_s)

    def _at_exit(self) -> None:
        if self._writer is not None and self._writer.thread.is_alive():
            self.end()
