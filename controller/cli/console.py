"""What a command shows on stderr while it works: progress lines, and on a terminal one block
redrawn in place (the run's traffic: elapsed and remaining with a bar, per-flow and per-link
rates; a numbered step of `ctl link measure` ticking towards its expected length).

The block is drawn with `rich` (its Live display keeps one region at the bottom of the
terminal, prints log lines above it, follows the terminal's width and takes the region
away at the end, so the summary printed afterwards is intact). It is drawn only when
stderr is a terminal and the command is not `--quiet`/`--json`; on a pipe there are only
the progress lines, as before. What the block says is made by pure functions
(`status_lines`, `step_line`) that tests read without a terminal.

Nothing is written by the caller: every line, frame and ticker goes to the stream's writer thread
(controller/cli/output.py `Writer`), and the run's event loop only hands them over and goes on. A stream
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
import time
from typing import Any, TextIO

from controller.cli.output import END_WAIT_S, MAX_LINES, Writer, writer_for
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


class Console:
    """Progress on stderr for one command: `log` lines (`[  12.3s] text`), and on a terminal
    the live block (`live` for a run's LiveStatus, `step` for a numbered step). Everything is
    written by the stream's writer thread (output.Writer); `end` waits (bounded) until it is out."""

    MAX_PENDING_LINES = MAX_LINES
    END_WAIT_S = END_WAIT_S            # how long `end` (and the interpreter's exit) waits for the stream

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
            self._writer = writer_for(self.stream) if self.max_pending_lines == MAX_LINES else \
                Writer(self.stream, self.max_pending_lines)
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

    def live(self, status: LiveStatus | None) -> None:
        """Draw a run's status in place; None takes the block away (traffic is over). Never waits."""
        if not self.block:
            return
        if status is None:
            self._end_block()
            return
        self._block_shown = True
        self.writer.frame(status_lines(status))        # pure, a few lines: the drawing is the writer's

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
        self.writer.ticker(_Ticker(note))

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
