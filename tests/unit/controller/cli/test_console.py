"""The live block of `ctl run` and the ticking steps of `ctl link measure`: what they say
(pure lines), and how they are drawn: redrawn in place on a pseudo-terminal (rich's Live),
nothing but plain progress lines on a pipe or with --quiet."""
from __future__ import annotations

import io
import os
import pty
import re
import threading
import time

from controller.cli.console import Console, bar, status_lines, step_line
from controller.run.live import FlowLine, LiveStatus
from controller.telemetry.live import LinkRate
from controller.traffic.progress import StepNote, TrafficProgress, Unit


def status(elapsed: float, mptcp_bps: float = 34.58e6) -> LiveStatus:
    units = (Unit("mptcp", "running"), Unit("tcp-path1", "running"), Unit("tcp-path2", "running"))
    prog = TrafficProgress("3 iperf3 flows for 30 s", 0, 3, elapsed / 30, elapsed, 30 - elapsed, units=units)
    return LiveStatus("r1", prog, (FlowLine("mptcp", "running", mptcp_bps), FlowLine("tcp-path1", "running", 67.02e6),
                                   FlowLine("tcp-path2", "running", None)), 0,
                      (LinkRate("path1", 101.2e6, 2.1e6), LinkRate("path2", None, None)))


def test_bar():
    assert bar(0.5, 10) == "█████░░░░░" and bar(-1, 4) == "░░░░" and bar(2, 4) == "████"


def test_status_lines_of_concurrent_flows():
    lines = status_lines(status(12.0))
    assert lines[0] == "3 iperf3 flows for 30 s  " + bar(0.4) + "  40% 12 s elapsed, 18 s left"
    assert lines[1:5] == ["  flow            Mbit/s", "  mptcp            34.58", "  tcp-path1        67.02",
                          "  tcp-path2            -"]
    assert lines[5:] == ["  link          a->b Mbit/s  b->a Mbit/s", "  path1              101.20         2.10",
                         "  path2                   -            -"]


def test_status_lines_of_counted_downloads_say_what_they_wait_for():
    units = tuple(Unit(f"d{k}", "done") for k in range(14)) + (Unit("tcp-8", "running", "bt-tcp", "9.5 MiB of 20.0 MiB"),)
    prog = TrafficProgress("BitTorrent downloads", 14, 20, 0.72, 600.0, 230.0, "the tcp-8 seeder (port 6881) to "
                           "announce itself to the tracker (up to 3m00s)", "each up to 10m00s", units, True)
    s = LiveStatus("r", prog, (FlowLine("tcp-8", "running", 4.1e6, "9.5 MiB of 20.0 MiB"),), 0, ())
    lines = status_lines(s)
    assert lines[0].startswith("BitTorrent downloads  ") and "  14 of 20 done; 10m00s elapsed, about 3m50s left; " \
                                                             "each up to 10m00s" in lines[0]
    assert lines[1] == "  waiting for the tcp-8 seeder (port 6881) to announce itself to the tracker (up to 3m00s)"
    assert lines[3] == "  tcp-8             4.10  9.5 MiB of 20.0 MiB"


def test_step_line():
    n = StepNote(1, 3, "RTT: 20 pings a1 -> 10.1.0.21, 0.2 s apart", 4.0)
    assert step_line(n, 2.0) == "[1/3] RTT: 20 pings a1 -> 10.1.0.21, 0.2 s apart  " + bar(0.5) + " 2 s of about 4 s"
    assert step_line(n, 9.0).endswith("9 s of about 4 s, taking longer than expected")


def test_on_a_pipe_only_progress_lines():
    out = io.StringIO()
    c = Console(out)
    assert c.live_sink is None and not c.block
    c.log("traffic: 3 iperf3 flows for 30 s")
    c.live(status(3.0))                            # no terminal: nothing drawn
    c.log(StepNote(2, 3, "throughput", 9.0))
    c.end()
    text = out.getvalue()
    assert "\x1b" not in text and "Mbit/s" not in text
    assert re.fullmatch(r"\[\s+\d+\.\ds\] traffic: 3 iperf3 flows for 30 s\n"
                        r"\[\s+\d+\.\ds\] \[2/3\] throughput \(about 9 s\)\n", text), text
    q = io.StringIO()
    Console(q, quiet=True).log("x")
    assert q.getvalue() == ""


def _pty_console(**kw) -> tuple[Console, int, object]:
    master, slave = pty.openpty()
    stream = os.fdopen(slave, "w", encoding="utf-8")
    return Console(stream, **kw), master, stream


def _read(master: int) -> str:
    chunks = []
    os.set_blocking(master, False)
    while True:
        try:
            data = os.read(master, 65536)
        except BlockingIOError:
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode("utf-8", errors="replace")


def test_on_a_terminal_the_block_is_redrawn_in_place_and_taken_away(monkeypatch):
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    c, master, stream = _pty_console()
    assert c.live_sink is not None
    c.log("traffic: 3 iperf3 flows for 30 s")
    for k in range(3):
        c.live(status(1.0 + k, mptcp_bps=(30 + k) * 1e6))
    c.log("iperf3 test 1/3 mptcp: 30.00 Mbit/s at the receiver")    # printed above the block
    c.live(None)                                                      # traffic over: the block goes
    c.log("restoring")
    assert c.end()                                                    # all of it written
    text = _read(master)
    stream.close()
    os.close(master)
    # three frames, each after cursor movement that erases the previous one (a line printed
    # above the block and the end redraw the last frame once more)
    assert list(dict.fromkeys(re.findall(r"(\d+) s elapsed", text))) == ["1", "2", "3"], text
    assert list(dict.fromkeys(re.findall(r"mptcp\s+(\d+\.\d\d)", text))) == ["30.00", "31.00", "32.00"]
    assert text.count("\x1b[2K") >= 3 and "\x1b[1A" in text
    # after the block is taken away, the next lines are plain and whole
    tail = text[text.rindex("\x1b"):]
    assert "restoring" in tail and "Mbit/s" not in tail.split("restoring")[1]
    assert "iperf3 test 1/3 mptcp: 30.00 Mbit/s at the receiver" in text


def test_json_or_quiet_draw_no_block(monkeypatch):
    monkeypatch.setenv("TERM", "xterm-256color")
    for kw in ({"quiet": True}, {"block": False}):
        c, master, stream = _pty_console(**kw)
        assert c.live_sink is None
        c.live(status(1.0))
        stream.flush()
        assert "elapsed" not in _read(master)
        stream.close()
        os.close(master)


def test_a_step_ticks_on_a_terminal(monkeypatch):
    monkeypatch.setenv("TERM", "xterm-256color")
    c, master, stream = _pty_console()
    c.log(StepNote(1, 3, "RTT: 5 pings", 1.0))
    time.sleep(1.3)                                # the ticker redraws on its own (2 per second)
    c.log(StepNote(2, 3, "throughput", 2.0))
    c.end()
    stream.flush()
    text = _read(master)
    stream.close()
    os.close(master)
    assert "[1/3] RTT: 5 pings (about 1 s)" in text and "[2/3] throughput (about 2 s)" in text
    assert re.search(r"\[1/3\] RTT: 5 pings  [█░]+ 1 s of about 1 s", text), text


def test_a_terminal_that_does_not_read_never_blocks_the_run(monkeypatch):
    """Ctrl-S, a stalled SSH session: the terminal stops taking output. The block is drawn by a
    thread of its own, so the caller (the run's event loop: samplers, traffic clocks, restore) goes
    on; frames waiting behind the terminal are cut to the newest, lines are all kept."""
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    c, master, stream = _pty_console()

    def handed_over() -> None:            # far more than a pseudo-terminal's buffer holds (~100 kB)
        for k in range(400):
            c.live(status(k % 30, mptcp_bps=(k + 1) * 1e6))
            if k % 100 == 0:
                c.log(f"line {k}")
    caller = threading.Thread(target=handed_over, daemon=True)
    caller.start()
    caller.join(60)                       # a liveness bound (the caller would hang for ever), not a speed
    assert not caller.is_alive(), "the caller blocked on a terminal that does not read"
    # the terminal reads again: what was waiting comes out, the block goes, lines are whole
    chunks: list[bytes] = []
    done = threading.Event()

    def drain() -> None:
        os.set_blocking(master, False)
        while not done.is_set():
            try:
                chunks.append(os.read(master, 65536))
            except BlockingIOError:
                time.sleep(0.01)
            except OSError:
                return
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    c.live(None)
    c.log("restoring")
    assert c.end(30)                      # a liveness bound: what waited comes out once the terminal reads
    done.set()
    reader.join(5)
    text = b"".join(chunks).decode("utf-8", errors="replace") + _read(master)   # and what the reader left
    stream.close()
    os.close(master)
    assert all(f"line {k}" in text for k in (0, 100, 200, 300)), text[-2000:]
    drawn = re.findall(r"mptcp\s+(\d+)\.00", text)
    assert drawn and drawn[-1] == "400"                    # the newest frame was drawn
    assert len(set(drawn)) < 400                           # frames behind the blocked terminal were dropped
    assert "restoring" in text[text.rindex("\x1b"):]


def _drive_on_a_loop(c: Console, seconds: float, lines_per_s: float, width: int) -> dict:
    """An asyncio loop that logs `lines_per_s` lines of `width` characters for `seconds`, as a run's
    progress does, with the run's own loop-lag monitor beside it; returns the monitor's summary."""
    import asyncio
    from controller.run.looplag import LoopLagMonitor

    async def main() -> dict:
        mon = LoopLagMonitor()
        mon.start()
        n = int(seconds * lines_per_s)
        for k in range(n):
            c.log(f"line {k:05d} " + "x" * width)
            await asyncio.sleep(1 / lines_per_s)
        return await mon.stop(None)
    return asyncio.run(main())


def _late_reader(fd: int, start: threading.Event, bound_s: float) -> tuple[threading.Thread, list[bytes]]:
    """A reader that reads nothing until `start` is set (or `bound_s` passed: a liveness bound, so a
    loop that did block would come free and the test fail on its lag instead of hanging), then all."""
    chunks: list[bytes] = []

    def read() -> None:
        start.wait(bound_s)
        while True:
            data = os.read(fd, 65536)
            if not data:
                return
            chunks.append(data)
    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t, chunks


def test_a_pipe_nobody_reads_does_not_hold_up_the_event_loop():
    """Progress lines on a pipe (no block drawn) whose reader stops reading (a paused `less`, a full
    pipe buffer): 6 s of a run's loop logging 50 lines of 250 characters a second (~75 kB, more than
    a pipe's 64 kB buffer) while nobody reads. The loop's lag, as the run's own monitor measures it,
    stays far below the time nobody read (a loop blocked on the pipe would show about that time as
    one lag); once the reader reads, every line arrives whole and in order."""
    from controller.run.looplag import STALL_S
    r, w = os.pipe()
    stream = os.fdopen(w, "w", encoding="utf-8")
    c = Console(stream)
    start = threading.Event()
    reader, chunks = _late_reader(r, start, 40.0)
    lag = _drive_on_a_loop(c, 6.0, 50, 250)
    start.set()                                        # the reader reads again
    assert c.end(30), "the lines did not come out once the reader read"    # a liveness bound
    stream.close()
    reader.join(30)
    lines = b"".join(chunks).decode().splitlines()
    assert lag["all"]["samples"] > 0
    # 6 s unread: a blocked loop would lag by seconds; scheduling noise on a loaded machine stays
    # around STALL_S (0.25 s). 2 s separates the two without being a speed target.
    assert lag["all"]["max_s"] < max(8 * STALL_S, 2.0), lag
    assert len(lines) == 300 and c.dropped_lines == 0
    assert [re.fullmatch(r"\[\s+\d+\.\ds\] line (\d{5}) x{250}", l).group(1) for l in lines] == \
        [f"{k:05d}" for k in range(300)]


def test_lines_beyond_the_bound_drop_the_oldest_waiting_and_say_so_once_at_the_end():
    """Nobody reads and the lines waiting pass the bound (here 40): the oldest waiting lines are
    dropped and counted, the last lines of the run are kept, and one line at the end says how many
    were not shown."""
    r, w = os.pipe()
    stream = os.fdopen(w, "w", encoding="utf-8")
    c = Console(stream, max_pending_lines=40)
    start = threading.Event()
    reader, chunks = _late_reader(r, start, 40.0)
    _drive_on_a_loop(c, 3.0, 100, 1000)               # 300 lines of ~1 kB: the pipe takes ~64
    c.log("restoring the rack")
    c.log("record: runs/x")
    start.set()
    assert c.end(30)
    stream.close()
    reader.join(30)
    lines = b"".join(chunks).decode().splitlines()
    notes = [l for l in lines if l.startswith("ctl: ")]
    assert len(notes) == 1 and lines[-1] == notes[0], lines[-3:]
    n = int(re.match(r"ctl: (\d+) progress lines not shown", notes[0]).group(1))
    shown = [l for l in lines if " line " in l]
    assert n == c.dropped_lines and n > 0 and len(shown) + n == 300
    assert lines[-3].endswith("restoring the rack") and lines[-2].endswith("record: runs/x")
    nums = [int(re.search(r"line (\d{5})", l).group(1)) for l in shown]
    assert nums == sorted(nums) and nums[-1] == 299    # in order; the gap is in the middle


def test_the_campaign_scheduler_console_does_not_hold_up_its_loop_either():
    """`ctl campaign run` / the daemon log each run's progress from the scheduler's event loop through
    their own Console (ISO times, a bar line on a terminal): written by the same kind of thread, so a
    pipe nobody reads does not hold the loop up, and every line comes out once it is read."""
    from controller.cli.campaign import Console as CampaignConsole
    from controller.run.looplag import STALL_S
    r, w = os.pipe()
    stream = os.fdopen(w, "w", encoding="utf-8")
    c = CampaignConsole(stream)
    start = threading.Event()
    reader, chunks = _late_reader(r, start, 40.0)
    lag = _drive_on_a_loop(c, 4.0, 50, 400)            # 200 lines of ~450 bytes: more than the pipe holds
    start.set()
    c.end()
    stream.close()
    reader.join(30)
    lines = b"".join(chunks).decode().splitlines()
    assert lag["all"]["samples"] > 0 and lag["all"]["max_s"] < max(8 * STALL_S, 2.0), lag
    assert [re.fullmatch(r"\d{4}-\d\d-\d\dT\S+ line (\d{5}) x{400}", l).group(1) for l in lines] == \
        [f"{k:05d}" for k in range(200)]


def test_log_records_from_the_loop_go_through_the_writer_too():
    """ctl's log records (configure_logging: asyncssh's, pysnmp's, ctl's own warnings, at -v every SSH
    channel) are handed to stderr's writer thread (output.WriterHandler): 4 s of a loop logging into a pipe
    nobody reads keep its measured lag small, and every record comes out once the pipe is read."""
    import logging
    from controller.cli.output import WriterHandler, writer_for
    from controller.run.looplag import STALL_S
    r, w = os.pipe()
    stream = os.fdopen(w, "w", encoding="utf-8")
    handler = WriterHandler(stream)
    handler.setFormatter(logging.Formatter("ctl: %(levelname)s %(name)s: %(message)s"))
    log = logging.getLogger("ctl-test-writer-handler")
    log.propagate = False
    log.addHandler(handler)

    class Logged:                                     # _drive_on_a_loop's `log` is the logger's warning
        def log(self, msg: str) -> None:
            log.warning(msg)
    start = threading.Event()
    reader, chunks = _late_reader(r, start, 40.0)
    try:
        lag = _drive_on_a_loop(Logged(), 4.0, 50, 400)    # 200 records of ~450 bytes
    finally:
        log.removeHandler(handler)
    start.set()
    assert writer_for(stream).flush(30)
    stream.close()
    reader.join(30)
    lines = b"".join(chunks).decode().splitlines()
    assert lag["all"]["samples"] > 0 and lag["all"]["max_s"] < max(8 * STALL_S, 2.0), lag
    assert [re.fullmatch(r"ctl: WARNING ctl-test-writer-handler: line (\d{5}) x{400}", l).group(1) for l in lines] \
        == [f"{k:05d}" for k in range(200)]
