"""What a command shows on stderr while it works: progress lines, and on a terminal one block
redrawn in place (the run's traffic: elapsed and remaining with a bar, per-flow and per-link
rates; a numbered step of `ctl link measure` ticking towards its expected length).

The block is drawn with `rich` (its Live display keeps one region at the bottom of the
terminal, prints log lines above it, follows the terminal's width and takes the region
away at the end, so the summary printed afterwards is intact). It is drawn only when
stderr is a terminal and the command is not `--quiet`/`--json`; on a pipe there are only
the progress lines, as before. What the block says is made by pure functions
(`status_lines`, `step_line`) that tests read without a terminal.

A run's block is drawn by a thread of its own (`_Painter`), never by the caller: the run's event
loop hands it each status and line and goes on. A terminal that stops reading (Ctrl-S, a stalled
SSH session, a slow multiplexer) then blocks only that thread, not the samplers' streams, the
traffic's clocks or the restore; frames waiting behind a blocked terminal are dropped but the
newest (lines never are), and rich's import happens there too.
"""
from __future__ import annotations

import queue
import sys
import threading
import time
from typing import Any, TextIO

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


class _Painter:
    """The thread that draws a run's block: frames (a LiveStatus) and lines, in the order they were
    handed over; more than MAX_PENDING_FRAMES frames waiting (a terminal that does not read) are cut
    to the newest."""

    MAX_PENDING_FRAMES = 8
    END_WAIT_S = 3.0          # how long `end` waits for a terminal to take the last writes

    def __init__(self, console: "Console"):
        self.console = console
        self.q: queue.Queue = queue.Queue()
        self.frames = 0                       # frames queued, not drawn yet
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="ctl-live-view", daemon=True)
        self.thread.start()

    def frame(self, status: LiveStatus) -> None:
        with self.lock:
            self.frames += 1
        self.q.put(("frame", status))

    def line(self, text: str) -> None:
        self.q.put(("line", text))

    def end(self) -> None:
        self.q.put(("end", None))
        self.thread.join(self.END_WAIT_S)

    def _run(self) -> None:
        live = None
        while True:
            kind, item = self.q.get()
            if kind == "frame":
                with self.lock:
                    self.frames -= 1
                    skip = self.frames >= self.MAX_PENDING_FRAMES
                if skip:
                    continue
            try:
                if kind == "end":
                    if live is not None:
                        live.stop()
                    return
                if kind == "line":
                    if live is None:
                        print(item, file=self.console.stream, flush=True)
                    else:
                        from rich.text import Text
                        live.console.print(Text(item), soft_wrap=True)   # above the block, which stays
                    continue
                from rich.console import Group
                from rich.text import Text
                r = Group(*(Text(l, no_wrap=True, overflow="ellipsis") for l in status_lines(item)))
                if live is None:
                    live = self.console._new_live(r, auto_refresh=False)
                live.update(r, refresh=True)
            except Exception:   # a display must never end a run: the block stops, lines still go out
                live = None


class Console:
    """Progress on stderr for one command: `log` lines (`[  12.3s] text`), and on a terminal
    the live block (`live` for a run's LiveStatus, `step` for a numbered step)."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False, block: bool = True):
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.t0 = time.monotonic()
        try:
            tty = self.stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        self.block = block and tty and not quiet
        self._live: Any = None
        self._painter: _Painter | None = None

    # ---- lines ----------------------------------------------------------------------------------

    def log(self, msg: object) -> None:
        if isinstance(msg, StepNote):
            self.step(msg)
            return
        if self.quiet:
            return
        line = f"[{time.monotonic() - self.t0:6.1f}s] {msg}"
        if self._painter is not None:
            self._painter.line(line)
        elif self._live is not None:
            from rich.text import Text
            self._live.console.print(Text(line), soft_wrap=True)   # above the block, which stays
        else:
            print(line, file=self.stream, flush=True)

    # ---- the block ------------------------------------------------------------------------------

    @property
    def live_sink(self) -> Any:
        """The runner's `live` callback, or None when no block is drawn (no terminal, quiet)."""
        return self.live if self.block else None

    def _new_live(self, renderable: Any, auto_refresh: bool) -> Any:
        from rich.console import Console as RichConsole
        from rich.live import Live
        live = Live(renderable, console=RichConsole(file=self.stream, highlight=False, markup=False),
                    auto_refresh=auto_refresh, refresh_per_second=2, transient=True,
                    redirect_stdout=False, redirect_stderr=False)
        live.start()
        return live

    def _start(self, renderable: Any, auto_refresh: bool) -> None:
        self._live = self._new_live(renderable, auto_refresh)

    def live(self, status: LiveStatus | None) -> None:
        """Draw a run's status in place; None takes the block away (traffic is over)."""
        if not self.block:
            return
        if status is None:
            self.end()
            return
        if self._painter is None:
            self.end()                         # a step's ticker, if one was shown
            self._painter = _Painter(self)
        self._painter.frame(status)

    def step(self, note: StepNote) -> None:
        """A numbered step: a line on a pipe; on a terminal a line that ticks until the next step."""
        if self.quiet:
            return
        if not self.block:
            self.log(note.text())
            return
        self.end()
        self.log(note.text())
        self._start(_Ticker(note), auto_refresh=True)

    def end(self) -> None:
        if self._painter is not None:
            painter, self._painter = self._painter, None
            painter.end()
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()
