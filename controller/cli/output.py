"""ctl's writes to stderr while it works, off the caller's thread (stdlib, and rich only on that thread).

A `Writer` is one thread per stream (`writer_for`) that writes what it is handed, in order: lines,
text as it is, a block of lines redrawn in place and a ticking renderable on a terminal (rich's Live).
Handing over never waits on the stream, so a terminal or pipe that stops reading (a paused `less`,
a full pipe buffer, Ctrl-S, a stalled SSH session) blocks only that thread, never a run's event
loop (its samplers, timers, restore). What waits behind such a stream is bounded (MAX_LINES lines,
the oldest dropped and counted, said in one line when flushed; the newest block frames), and the
interpreter's exit waits END_WAIT_S for the rest. The progress Console (controller/cli/console.py),
the campaign scheduler's console and ctl's log records (`WriterHandler`) all go through it.
"""
from __future__ import annotations

import atexit
import logging
import threading
from collections import deque
from typing import Any, TextIO

MAX_LINES = 2000             # lines waiting behind a stream that does not read (~200 kB)
END_WAIT_S = 3.0             # how long a flush at the end, and the interpreter's exit, wait for the stream


def make_live(stream: TextIO, renderable: Any, auto_refresh: bool) -> Any:
    """A rich Live region on `stream`, started (called on a Writer's thread only)."""
    from rich.console import Console as RichConsole
    from rich.live import Live
    live = Live(renderable, console=RichConsole(file=stream, highlight=False, markup=False),
                auto_refresh=auto_refresh, refresh_per_second=2, transient=True,
                redirect_stdout=False, redirect_stderr=False)
    live.start()
    return live


class Writer:
    """The one thread that writes a stream's output: lines, a block of lines redrawn in place (a run's
    live view) and a ticking renderable (a step's), in the order they were handed over. Handing over never
    waits on the stream: the caller (a run's event loop) appends to a queue under a lock that the
    thread holds only to take the next item, never while writing. A stream that does not read
    (a paused `less`, a full pipe, Ctrl-S) blocks only this thread.

    Bounds: more than MAX_PENDING_FRAMES frames waiting behind the stream drop the oldest waiting
    frame (the newest is always drawn); more than `max_lines` lines waiting drop the OLDEST waiting
    line, counted, so the last lines of a run (restore, the record's place) are the ones kept."""

    MAX_PENDING_FRAMES = 8
    MAX_LINES = MAX_LINES
    END_WAIT_S = END_WAIT_S

    def __init__(self, stream: TextIO, max_lines: int = MAX_LINES):
        self.stream = stream
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

    def frame(self, lines: list[str]) -> None:
        """A block of lines drawn in place at the bottom of the terminal (rich's Live), redrawn by the next."""
        self._put("frame", lines)

    def end_block(self) -> None:
        self._put("end-block", None)

    def ticker(self, renderable: Any) -> None:
        """A renderable redrawn twice a second until the next block, ticker or end_block."""
        self._put("ticker", renderable)

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
        live, ticking = None, False
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
                    live, ticking = make_live(self.stream, item, auto_refresh=True), True
                else:
                    from rich.console import Group
                    from rich.text import Text
                    r = Group(*(Text(l, no_wrap=True, overflow="ellipsis") for l in item))
                    if live is not None and ticking:
                        live, old = None, live      # a step's ticker gives way to a run's block
                        old.stop()
                    if live is None:
                        live, ticking = make_live(self.stream, r, auto_refresh=False), False
                    live.update(r, refresh=True)
            except Exception:   # output must never end a run: the block stops, lines still go out
                live = None


class _Raw(str):
    """Text handed to a `Writer` to be written as it is."""


def dropped_note(n: int) -> str:
    return (f"ctl: {n} progress line{'s' if n != 1 else ''} not shown: the output was not read while ctl went on "
            f"(the oldest waiting lines were dropped; a run's record keeps its phases, commands and warnings)")


_WRITERS: dict[int, Writer] = {}
_WRITERS_LOCK = threading.Lock()


def writer_for(stream: TextIO) -> Writer:
    """The one Writer of `stream` in this process (so that everything written to it keeps its order)."""
    with _WRITERS_LOCK:
        w = _WRITERS.get(id(stream))
        if w is None or w.stream is not stream:
            w = _WRITERS[id(stream)] = Writer(stream)
        return w


class WriterHandler(logging.Handler):
    """A logging handler that hands each formatted record to its stream's Writer (ctl's log records are
    written from the event loop too: asyncssh's, pysnmp's, ctl's own warnings)."""

    def __init__(self, stream: TextIO):
        super().__init__()
        self.stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        try:
            writer_for(self.stream).line(self.format(record))
        except Exception:
            self.handleError(record)

    def flush(self) -> None:
        w = _WRITERS.get(id(self.stream))
        if w is not None and w.stream is self.stream:
            w.flush(END_WAIT_S)
