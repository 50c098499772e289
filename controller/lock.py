"""The rack lock: one run or campaign on a rack at a time.

An advisory `flock` on `<state>/locks/<inventory>.lock`. The kernel drops the lock when
its holder dies, however it dies, so a lock left by a dead controller (kill -9, crash,
reboot) is never an obstacle: the next taker finds the file unlocked and overwrites the
stale owner record. The file records who holds the lock, for the error message.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

from controller.errors import RackBusy
from controller.settings import state_dir


class RackLock:
    def __init__(self, rack: str, purpose: str):
        self.rack = rack
        self.purpose = purpose
        self.path = state_dir() / "locks" / f"{rack}.lock"
        self._fd: int | None = None
        self.broke_stale: dict | None = None

    def owner(self) -> dict | None:
        try:
            return json.loads(self.path.read_text() or "null")
        except (OSError, ValueError):
            return None

    def acquire(self) -> "RackLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            o = self.owner() or {}
            since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(o.get("since", 0))) if o else "?"
            raise RackBusy(f"rack {self.rack} is in use by pid {o.get('pid', '?')} on {o.get('host', '?')} "
                           f"({o.get('purpose', '?')}, since {since})") from None
        previous = self.owner()
        if previous and previous.get("pid") and previous.get("host") == socket.gethostname() \
                and not _pid_alive(previous["pid"]):
            self.broke_stale = previous  # its holder died without releasing: the kernel freed it
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "purpose": self.purpose,
                                 "since": time.time()}).encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "RackLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
