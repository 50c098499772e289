"""Durable spool and the InfluxDB writer that drains it exactly once.

Every point is appended to the run record's `metrics.jsonl` first (the spool: the run's
own copy of its data). The writer tails that file, sends complete lines to InfluxDB in
batches, and after each acknowledged batch records how far it got in
`metrics.influx.json` (atomic replace). If InfluxDB is down or slow the run goes on and
the writer retries with back-off; whatever is left is sent later by `ctl metrics push`.

Exactly once: the offset only moves after InfluxDB acknowledged a batch. A batch whose
acknowledgement was lost is sent again; InfluxDB stores a point by (measurement, tag
set, field, timestamp), so the same point sent twice is still one point. Points are
never rewritten with new timestamps.
"""
from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from controller.telemetry.points import Point, dumps, to_line

SPOOL_NAME = "metrics.jsonl"
STATE_NAME = "metrics.influx.json"


class Spool:
    """Append-only JSON-lines file of points; flushed per batch, fsynced at checkpoints."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(path, "a", buffering=1 << 16)
        self.count = 0
        self._listeners: list = []

    def append(self, points: Iterable[Point]) -> int:
        n = 0
        for p in points:
            self._fh.write(dumps(p) + "\n")
            n += 1
        if n:
            self._fh.flush()
            self.count += n
            for fn in self._listeners:
                fn()
        return n

    def sync(self) -> None:
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self.sync()
            self._fh.close()

    def on_append(self, fn) -> None:
        self._listeners.append(fn)


def read_points(path: Path, offset: int = 0, limit_bytes: int | None = None) -> tuple[list[Point], int]:
    """Complete lines from `offset`; returns (points, new offset). A torn last line is left."""
    points: list[Point] = []
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read() if limit_bytes is None else f.read(limit_bytes)
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset
    for line in data[:end].split(b"\n"):
        if line.strip():
            points.append(Point.from_json(json.loads(line)))
    return points, offset + end + 1


def iter_points(path: Path) -> Iterator[Point]:
    offset = 0
    while True:
        pts, new = read_points(path, offset, 8 << 20)
        if new == offset:
            return
        yield from pts
        offset = new


@dataclass
class PushState:
    offset: int = 0
    points: int = 0
    url: str = ""
    bucket: str = ""
    last_error: str | None = None
    last_push: float | None = None

    @classmethod
    def load(cls, run_dir: Path) -> "PushState":
        try:
            return cls(**json.loads((run_dir / STATE_NAME).read_text()))
        except FileNotFoundError:
            return cls()

    def save(self, run_dir: Path) -> None:
        tmp = run_dir / (STATE_NAME + ".tmp")
        tmp.write_text(json.dumps(self.__dict__))
        os.replace(tmp, run_dir / STATE_NAME)


@dataclass
class InfluxTarget:
    url: str
    org: str
    bucket: str
    token: str = field(repr=False)
    timeout_s: float = 10.0


class InfluxSender:
    """Synchronous line-protocol sender (influxdb-client), used from a worker thread."""

    def __init__(self, target: InfluxTarget):
        from influxdb_client import InfluxDBClient
        from influxdb_client.client.write_api import SYNCHRONOUS
        self.target = target
        # No gzip: InfluxDB sits on the lab network, where compressing costs more CPU than it saves.
        self._client = InfluxDBClient(url=target.url, token=target.token, org=target.org,
                                      timeout=int(target.timeout_s * 1000), enable_gzip=False)
        self._write = self._client.write_api(write_options=SYNCHRONOUS)

    def send(self, points: list[Point]) -> None:
        lines = [l for l in (to_line(p) for p in points) if l is not None]
        if lines:
            self._write.write(bucket=self.target.bucket, org=self.target.org, record=lines,
                              write_precision="ns")

    def close(self) -> None:
        self._client.close()


def push_once(run_dir: Path, sender: InfluxSender, batch_bytes: int = 4 << 20) -> tuple[int, int]:
    """Send everything not yet acknowledged; returns (points sent now, points pending)."""
    state = PushState.load(run_dir)
    spool = run_dir / SPOOL_NAME
    sent = 0
    while True:
        points, new_offset = read_points(spool, state.offset, batch_bytes)
        if new_offset == state.offset:
            break
        sender.send(points)
        state.offset = new_offset
        state.points += len(points)
        state.url, state.bucket = sender.target.url, sender.target.bucket
        state.last_push, state.last_error = time.time(), None
        state.save(run_dir)
        sent += len(points)
    return sent, pending_points(run_dir)


class InfluxWriter:
    """Background drain of a run's spool into InfluxDB; the run never waits on it."""

    def __init__(self, run_dir: Path, target: InfluxTarget | None, batch_points: int = 5000,
                 interval_s: float = 1.0):
        self.run_dir = run_dir
        self.target = target
        self.interval_s = interval_s
        self.batch_bytes = batch_points * 300
        self.errors: list[str] = []
        self.down_since: float | None = None
        self._task: asyncio.Task | None = None
        self._stop = asyncio.Event()
        self._sender: InfluxSender | None = None

    def start(self) -> None:
        if self.target is None:
            return
        self._sender = InfluxSender(self.target)
        self._task = asyncio.ensure_future(self._loop())

    async def _loop(self) -> None:
        backoff = self.interval_s
        while True:
            try:
                await asyncio.to_thread(push_once, self.run_dir, self._sender, self.batch_bytes)
                if self.down_since is not None:
                    self.down_since = None
                backoff = self.interval_s
            except Exception as exc:  # any failure: keep the spool, retry later
                msg = f"{type(exc).__name__}: {str(exc)[:200]}"
                if not self.errors or self.errors[-1] != msg:
                    self.errors.append(msg)
                if self.down_since is None:
                    self.down_since = time.time()
                st = PushState.load(self.run_dir)
                st.last_error = msg
                st.save(self.run_dir)
                backoff = min(backoff * 2, 5.0)
            try:
                await asyncio.wait_for(self._stop.wait(), backoff)
                return
            except asyncio.TimeoutError:
                pass

    async def finish(self, deadline_s: float = 15.0) -> tuple[bool, str | None]:
        """Stop the loop and try to send the rest within `deadline_s`. Returns (all sent, error)."""
        if self._task is None or self._sender is None:
            return False, "no InfluxDB configured"
        self._stop.set()
        try:
            await asyncio.wait_for(self._task, 5)
        except (asyncio.TimeoutError, Exception):
            pass
        t_end = time.monotonic() + deadline_s
        err: str | None = None
        while time.monotonic() < t_end:
            try:
                await asyncio.wait_for(asyncio.to_thread(push_once, self.run_dir, self._sender, self.batch_bytes),
                                       max(0.5, t_end - time.monotonic()))
                err = None
                break
            except Exception as exc:
                err = f"{type(exc).__name__}: {str(exc)[:200]}" if str(exc) else type(exc).__name__
                await asyncio.sleep(1.0)
        if err is not None:
            # Say in the record why points are still pending (InfluxDB hung, down, refusing).
            st = PushState.load(self.run_dir)
            st.last_error = err
            st.save(self.run_dir)
            if err not in self.errors:
                self.errors.append(err)
        self._sender.close()
        return err is None and pending_points(self.run_dir) == 0, err


def pending_points(run_dir: Path) -> int:
    state = PushState.load(run_dir)
    pts, _ = read_points(run_dir / SPOOL_NAME, state.offset)
    return len(pts)
