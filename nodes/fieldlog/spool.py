"""The field run's durable spool, and the bookkeeping of how much of it InfluxDB has acknowledged.

Per field run, in `<root>/runs/<run_id>/`:

    metrics.jsonl        the spool: one JSON object per line, one line per point, append-only --
                         {"m": measurement, "t": time ns, "tags": {...}, "f": {...}}, the same line
                         format as a controller run record's metrics.jsonl (controller.telemetry.points)
    metrics.influx.json  acknowledged offset: {"offset", "points", "url", "bucket", "last_error",
                         "last_push"} -- the same file the controller's `ctl metrics push` keeps

fsync policy: every append is written and flushed to the kernel at once (a killed logger loses
nothing); the file is fsynced at most `fsync_every_s` seconds after an append (default 1 s, i.e.
every tick), so a power loss or kernel crash loses at most that much. Only fsynced bytes are ever sent
to InfluxDB (`durable_size`), so InfluxDB never holds a point the spool could lose. A line torn by a
power loss mid-write (or a tail of NUL bytes a crashed file system left) is cut off on the next start:
it was never sent, because only complete lines are.
"""
from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

SPOOL_NAME = "metrics.jsonl"
PUSH_STATE_NAME = "metrics.influx.json"


def fsync_dir(path: str) -> None:
    """Make a rename or a new file in `path` durable (the directory entry is data too)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_json_atomic(path: str, data: Any, mode: int = 0o644) -> None:
    """Write-fsync-rename: a reader (or a reboot) sees the old or the new file, never half of one."""
    # A tmp name per process and thread: two writers of the same file never rename each other's tmp.
    tmp = "%s.%d.%d.tmp" % (path, os.getpid(), threading.get_ident())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path) or ".")


def read_json(path: str, default: Any = None) -> Any:
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return default


def recover_tail(path: str) -> int:
    """Cut everything after the last newline (a torn line, NUL fill); returns the bytes removed."""
    try:
        size = os.path.getsize(path)
    except FileNotFoundError:
        return 0
    if size == 0:
        return 0
    keep = 0
    with open(path, "r+b") as f:
        pos = size
        while pos > 0:
            start = max(0, pos - 65536)
            f.seek(start)
            data = f.read(pos - start)
            i = data.rfind(b"\n")
            if i >= 0:
                keep = start + i + 1
                break
            pos = start
        if keep < size:
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())
    return size - keep


def read_complete(path: str, offset: int, limit: Optional[int] = None, end: Optional[int] = None) -> Tuple[bytes, int]:
    """Complete lines from `offset` (at most `limit` bytes, never past `end`); (data, new offset)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            n = -1
            if end is not None:
                n = max(0, end - offset)
            if limit is not None:
                n = limit if n < 0 else min(n, limit)
            data = f.read(n) if n >= 0 else f.read()
    except FileNotFoundError:
        return b"", offset
    cut = data.rfind(b"\n")
    if cut < 0:
        return b"", offset
    return data[:cut + 1], offset + cut + 1


def count_lines(path: str, start: int = 0, end: Optional[int] = None) -> int:
    n = 0
    try:
        with open(path, "rb") as f:
            f.seek(start)
            remaining = None if end is None else max(0, end - start)
            while True:
                size = 1 << 20 if remaining is None else min(1 << 20, remaining)
                if size == 0:
                    break
                chunk = f.read(size)
                if not chunk:
                    break
                n += chunk.count(b"\n")
                if remaining is not None:
                    remaining -= len(chunk)
    except FileNotFoundError:
        return 0
    return n


def tail_lines(path: str, max_bytes: int = 1 << 18) -> List[bytes]:
    """The complete lines in the last `max_bytes` of a file (the first, possibly partial, one dropped)."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            start = max(0, size - max_bytes)
            f.seek(start)
            data = f.read()
    except FileNotFoundError:
        return []
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]
    if lines and lines[-1] == b"":
        lines = lines[:-1]
    elif lines:
        lines = lines[:-1]          # not newline-terminated: not complete
    return lines


class AppendFile:
    """An append-only file: writes go to the kernel at once, fsync follows the policy."""

    def __init__(self, path: str, fsync_every_s: float = 1.0, clock: Callable[[], float] = time.monotonic):
        self.path = path
        self.fsync_every_s = fsync_every_s
        self.clock = clock
        self.truncated = recover_tail(path)
        new = not os.path.exists(path)
        self._f = open(path, "ab")
        self.size = self._f.seek(0, os.SEEK_END)
        if new:
            fsync_dir(os.path.dirname(path) or ".")
        # What is on disk after a restart is as durable as it gets: everything read back counts.
        self.durable_size = self.size
        self._dirty_since: Optional[float] = None
        self._lock = threading.Lock()
        self.durable = threading.Event()     # set whenever more bytes became durable (wakes the pusher)

    def append_bytes(self, data: bytes) -> None:
        if not data:
            return
        with self._lock:
            self._f.write(data)
            self._f.flush()
            self.size += len(data)
            if self._dirty_since is None:
                self._dirty_since = self.clock()
            if self.clock() - self._dirty_since >= self.fsync_every_s:
                self._sync_locked()

    def append_lines(self, lines: Sequence[str]) -> None:
        self.append_bytes("".join(line + "\n" for line in lines).encode("utf-8"))

    def sync(self) -> None:
        with self._lock:
            self._sync_locked()

    def sync_if_due(self) -> None:
        with self._lock:
            if self._dirty_since is not None and self.clock() - self._dirty_since >= self.fsync_every_s:
                self._sync_locked()

    def _sync_locked(self) -> None:
        if self._f.closed:
            return
        self._f.flush()
        os.fsync(self._f.fileno())
        self.durable_size = self.size
        self._dirty_since = None
        self.durable.set()

    def close(self) -> None:
        with self._lock:
            if not self._f.closed:
                self._sync_locked()
                self._f.close()


# ---- acknowledged offset (same fields as controller.telemetry.spool.PushState) --------------------

PUSH_FIELDS = ("offset", "points", "url", "bucket", "last_error", "last_push")


def load_push_state(run_dir: str) -> Dict[str, Any]:
    data = read_json(os.path.join(run_dir, PUSH_STATE_NAME), None) or {}
    out: Dict[str, Any] = {"offset": 0, "points": 0, "url": "", "bucket": "", "last_error": None, "last_push": None}
    out.update({k: v for k, v in data.items() if k in PUSH_FIELDS})
    return out


def save_push_state(run_dir: str, state: Dict[str, Any]) -> None:
    write_json_atomic(os.path.join(run_dir, PUSH_STATE_NAME), {k: state.get(k) for k in PUSH_FIELDS})
