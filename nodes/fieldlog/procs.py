"""Processes by identity: a PID plus its start time (a PID alone may be reused after a reboot or a crash).

The logger's children (ping, iperf3, webtorrent) are recorded in the run's state file with their start
time, so a logger that was killed with -9 can end exactly its own orphans when it resumes -- never
anything by name. Where util-linux `setpriv` exists the children also get PDEATHSIG, so they die with
the thread that started them even before that.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from typing import Dict, List, Optional, Sequence


def proc_start_time(pid: int) -> Optional[int]:
    """Start time in clock ticks since boot (field 22 of /proc/<pid>/stat); None if gone or a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            data = f.read()
    except OSError:
        return None
    fields = data.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])


def alive(pid: Optional[int], start_time: Optional[int]) -> bool:
    if not pid:
        return False
    st = proc_start_time(pid)
    return st is not None and (start_time is None or st == start_time)


def cmdline(pid: int) -> List[str]:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def terminate(pid: int, start_time: Optional[int], grace_s: float = 3.0) -> bool:
    """TERM, then KILL after `grace_s`, only while the PID is still the same process. True if it ended."""
    if not alive(pid, start_time):
        return True
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not alive(pid, start_time):
            return True
        time.sleep(0.05)
    if alive(pid, start_time):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return True
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        if not alive(pid, start_time):
            return True
        time.sleep(0.05)
    return False


_SETPRIV = shutil.which("setpriv")


def child_argv(argv: Sequence[str]) -> List[str]:
    """argv wrapped so the child gets SIGTERM when the logger dies (setpriv --pdeathsig), if available."""
    if _SETPRIV:
        return [_SETPRIV, "--pdeathsig", "TERM", "--", *argv]
    return list(argv)


def spawn(argv: Sequence[str], *, stdout: int = subprocess.PIPE, stderr: int = subprocess.STDOUT) -> subprocess.Popen:
    env = dict(os.environ, LC_ALL="C", LANG="C")
    # setpriv execs the tool: the PID we record is the tool's own.
    return subprocess.Popen(child_argv(argv), stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=env,
                            close_fds=True)


def identity(p: subprocess.Popen) -> Dict[str, Optional[int]]:
    return {"pid": p.pid, "start_time": proc_start_time(p.pid)}
