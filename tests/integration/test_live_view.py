"""The live view of `ctl run` on a terminal (issue 16, "While it runs"), on the virtual rack:
the block is redrawn in place about once a second (elapsed and remaining with a bar, per-flow and
per-link rates from the run's own samplers) and leaves the final summary intact; on a pipe there
is no block, only the progress lines.

Lane A (tests/support/lanes.py: not listed as light): it asserts a cadence against the clock. In
lane B, beside lane A's traffic, a loaded suite run once drew no frame for 9 s of a 6 s run
(frames [0, 9, 10, 10]). The other "while it runs" tests stay in test_while_it_runs.py (lane B).
"""
from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PROJECT = Path(__file__).resolve().parents[2]
ESC = "\x1b"


def run_on_pty(rack, *args: str, timeout: float = 240) -> tuple[int, str]:
    """`ctl ARGS` with stdout and stderr on one pseudo-terminal, as a researcher sees it."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    env = rack.env(TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    p = subprocess.Popen([sys.executable, "-m", "controller", *args], cwd=PROJECT, env=env,
                         stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 1.0)
        if r:
            try:
                data = os.read(master, 65536)
            except OSError:          # EIO: the other side closed
                break
            if not data:
                break
            chunks.append(data)
        elif p.poll() is not None:
            break
    os.close(master)
    rc = p.wait(30)
    return rc, b"".join(chunks).decode("utf-8", errors="replace")


def test_live_progress_on_a_terminal_and_none_on_a_pipe(rack):
    rc, tty = run_on_pty(rack, "run", "distinct-bottleneck", "--link2", "20M", "--duration", "6")
    assert rc == 0, tty[-3000:]
    # frames redrawn in place, about once a second, elapsed growing
    elapsed = [int(x) for x in re.findall(r"(\d+) s elapsed, \d+ s left", tty)]
    assert len(set(elapsed)) >= 4 and sorted(set(elapsed)) == list(dict.fromkeys(elapsed)), elapsed
    assert "\x1b[1A" in tty and "\x1b[2K" in tty
    assert "3 iperf3 flows for 6 s  " in tty
    # the rates come from the run's samplers: every flow and link gets a real figure once running
    rates = {name: [float(v) for v in re.findall(rf"\n  {re.escape(name)}\s+(\d+\.\d\d)\s", tty)]
             for name in ("mptcp", "tcp-path1", "tcp-path2")}
    assert all(vs and max(vs) > 1.0 for vs in rates.values()), rates
    assert max(rates["tcp-path2"]) < 21.0                          # path2 is shaped to 20M
    links = re.findall(r"\n  path2\s+(\d+\.\d\d)\s+(\d+\.\d\d)", tty)
    assert links and max(float(f) for f, _r in links) > 10.0, links
    # the final summary comes after the last frame, whole and untouched by it
    tail = tty[tty.rindex(ESC):]
    for part in ("flow ", "Jain's fairness index", "MPTCP negotiated: yes", ": completed", "record: "):
        assert part in tail, (part, tail[-2000:])
    assert "elapsed" not in tail

    # on a pipe: the progress lines only, no block, no terminal control
    p = rack.ctl("run", "distinct-bottleneck", "--link2", "20M", "--duration", "3")
    assert p.returncode == 0, p.stderr[-2000:]
    assert ESC not in p.stderr and ESC not in p.stdout and "elapsed" not in p.stderr
    assert "] traffic: 3 flows for 3 s" in p.stderr and "Jain's fairness index" in p.stdout
