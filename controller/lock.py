"""Locks held by a live ctl process: the rack lock, the campaign scheduler lock.

An advisory `flock` on a file. The kernel drops the lock when its holder dies, however it
dies, so a lock left by a dead controller (kill -9, crash, reboot) is never an obstacle:
the next taker finds the file unlocked and overwrites the stale owner record. The file
records who holds the lock, for error messages and status.

Lock files live in directories that must be ours and closed to others, and are opened
without following symlinks and without blocking (controller.safefs): a local user who
pre-creates `/run/lock/ctl` or plants a symlink gets a refusal, never root writing through it.
Reading who holds a lock (`ctl rack status`, error messages) checks the same: a lock directory
that is not ours, or that others can write to (sticky or not), is refused with one line, and a
lock file that is not a regular file (a FIFO would make a plain open wait forever for a writer)
is never read.

The rack lock is machine-wide (`$CTL_LOCK_DIR`, default `/run/lock/ctl`), keyed by the
inventory's rack name: two checkouts of ctl on one controller (each with its own state
dir) still cannot drive one rack at once. It is the fast path on one machine; controllers
on different machines are kept apart by the rack's lease, taken right after this lock
(`controller.rack.lease.hold_rack`: a PostgreSQL advisory lock with a lab database, else a
lock held on the rack's first host for the life of the SSH connection). The campaign
scheduler lock belongs to a state dir (its queue lives there; one per rack for schedulers
bound to a rack) and stays in `<state>/locks/`.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

from controller.errors import RackBusy, UnsafePath
from controller.safefs import check_private_dir, open_private, private_dir
from controller.settings import state_dir
from controller.timefmt import iso_local


SYSTEM_LOCK_DIR = Path("/run/lock/ctl")


def rack_lock_dir() -> Path:
    """Where rack locks live: $CTL_LOCK_DIR, else /run/lock/ctl (else, where /run/lock is
    not writable, e.g. not root, `<state>/locks`)."""
    if os.environ.get("CTL_LOCK_DIR"):
        return Path(os.environ["CTL_LOCK_DIR"])
    if os.access(SYSTEM_LOCK_DIR, os.W_OK) or os.access(SYSTEM_LOCK_DIR.parent, os.W_OK):
        return SYSTEM_LOCK_DIR
    return state_dir() / "locks"


class FileLock:
    """An exclusive flock with an owner record ({pid, host, purpose, since, state_dir})."""

    def __init__(self, name: str, purpose: str, directory: Path | None = None):
        self.name = name
        self.purpose = purpose
        self.path = (directory or state_dir() / "locks") / f"{name}.lock"
        self._fd: int | None = None
        self.broke_stale: dict | None = None

    def _record(self) -> dict | None:
        """The owner record as written by the holder (None: no lock file yet, or an empty or
        unparseable one). UnsafePath when the directory is not ours or others can write to it, or
        the lock file is not a regular file of ours."""
        if not os.path.lexists(self.path.parent):
            return None
        check_private_dir(self.path.parent, "lock directory")
        try:
            fd = open_private(self.path, os.O_RDONLY | os.O_NONBLOCK, "lock file")
        except UnsafePath:
            if not os.path.lexists(self.path):
                return None          # nobody has taken it yet
            raise
        try:
            return _parse_record(os.pread(fd, MAX_RECORD, 0))
        finally:
            os.close(fd)

    def last_holder(self) -> dict | None:
        """The owner record as the file holds it, whether its holder lives or not: a holder
        killed with -9 leaves its record behind, a clean release empties it (None)."""
        return self._record()

    def owner(self) -> dict | None:
        """The recorded holder, or None when nobody holds it (a dead holder does not count)."""
        o = self._record()
        if o and o.get("host") == socket.gethostname() and not pid_alive(int(o.get("pid", 0))):
            return None
        return o or None

    def try_acquire(self) -> bool:
        # The lock directory may sit in a world-writable place (/run/lock): it must be ours and
        # closed to others, and the lock file a regular file of ours (never a symlink to follow).
        private_dir(self.path.parent, "lock directory")
        fd = open_private(self.path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK, "lock file", 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        previous = _parse_record(os.pread(fd, MAX_RECORD, 0))
        if previous and previous.get("pid") and previous.get("host") == socket.gethostname() \
                and not pid_alive(previous["pid"]):
            self.broke_stale = previous  # its holder died without releasing: the kernel freed it
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "purpose": self.purpose,
                                  "since": time.time(), "state_dir": str(state_dir())}).encode(), 0)
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


class RackLock(FileLock):
    """One run or campaign on a rack at a time."""

    def __init__(self, rack: str, purpose: str):
        super().__init__(rack, purpose, rack_lock_dir())
        self.rack = rack

    def acquire(self) -> "RackLock":
        if not self.try_acquire():
            o = self._record() or {}
            since = iso_local(o.get("since")) if o else "?"
            other = o.get("state_dir")
            where = f", state dir {other}" if other and other != str(state_dir()) else ""
            raise RackBusy(f"rack {self.rack} is in use by pid {o.get('pid', '?')} on {o.get('host', '?')} "
                           f"({o.get('purpose', '?')}, since {since}{where})")
        return self

    def __enter__(self) -> "RackLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


MAX_RECORD = 4096


def _parse_record(data: bytes) -> dict | None:
    try:
        o = json.loads(data.decode() or "null")
    except (UnicodeDecodeError, ValueError):
        return None
    return o if isinstance(o, dict) else None


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
