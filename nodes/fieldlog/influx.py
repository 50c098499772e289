"""Store and forward: drain a field run's spool into InfluxDB exactly once (HTTP line protocol, stdlib).

Exactly once, by construction:
* each measurement is ONE spool line, written once (seq never reused, see schedule.py);
* a line is sent until InfluxDB acknowledges the batch holding it (HTTP 204); the acknowledged byte
  offset then moves (metrics.influx.json, write-fsync-rename) -- and only then;
* a batch whose acknowledgement was lost (uplink cut mid-request, logger killed between the 204 and the
  offset write) is sent again from the same offset: the same bytes, so the same points -- same
  measurement, tag set, fields and nanosecond timestamp, never re-stamped -- and InfluxDB stores a
  point by (measurement, tag set, field, time): the second copy overwrites the first with itself;
* only fsynced bytes are sent (`AppendFile.durable_size`), so a power loss cannot leave InfluxDB
  holding a point the spool lost.

Line protocol comes from nodes.fieldlog.lineproto, the encoder the controller uses too, so `ctl metrics
push` of a fetched copy sends byte-identical lines.
"""
from __future__ import annotations

import gzip
import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from nodes.fieldlog.lineproto import line
from nodes.fieldlog.spool import SPOOL_NAME, load_push_state, read_complete, save_push_state


def to_line(p: Mapping[str, Any]) -> Optional[str]:
    """One spool record {"m","t","tags","f"} -> a line-protocol line (None: no field to store)."""
    return line(p["m"], p["tags"], p["f"], int(p["t"]))


def encode_block(block: bytes) -> Tuple[List[str], int, int]:
    """Spool bytes (complete lines) -> (line-protocol lines, points, unreadable lines).

    An unreadable spool line (it cannot be produced by the logger; a damaged disk could) is counted and
    skipped rather than blocking every later point forever."""
    out: List[str] = []
    points = bad = 0
    for raw in block.split(b"\n"):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except ValueError:
            bad += 1
            continue
        points += 1
        line = to_line(rec)
        if line is not None:
            out.append(line)
    return out, points, bad


Post = Callable[[str, bytes, Dict[str, str], float], int]


def http_post(url: str, body: bytes, headers: Dict[str, str], timeout_s: float) -> int:
    # No proxies from the environment: the field host talks to the database it was given, directly.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    req = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with opener.open(req, timeout=timeout_s) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode("utf-8", "replace")
        raise PushError("HTTP %d: %s" % (exc.code, detail)) from None


class PushError(Exception):
    pass


class Pusher:
    """Sends a run's spool to InfluxDB from the acknowledged offset; one instance per run."""

    def __init__(self, run_dir: str, target: Mapping[str, str], token: str, *,
                 durable_size: Callable[[], int], batch_bytes: int = 1 << 20, timeout_s: float = 10.0,
                 post: Post = http_post):
        self.run_dir = run_dir
        self.spool = os.path.join(run_dir, SPOOL_NAME)
        self.target = dict(target)
        self.token = token
        self.durable_size = durable_size
        self.batch_bytes = batch_bytes
        self.timeout_s = timeout_s
        self.post = post
        self.bad_lines = 0
        self.state = load_push_state(run_dir)
        q = urllib.parse.urlencode({"org": target["org"], "bucket": target["bucket"], "precision": "ns"})
        self.url = target["url"].rstrip("/") + "/api/v2/write?" + q

    def pending_bytes(self) -> int:
        return max(0, self.durable_size() - int(self.state["offset"]))

    def push_once(self) -> int:
        """Send everything durable and not yet acknowledged; returns points acknowledged now.
        Raises PushError (or OSError) when InfluxDB did not acknowledge; the offset stays."""
        sent = 0
        while True:
            end = self.durable_size()
            offset = int(self.state["offset"])
            if offset > end:
                # Cannot happen with the fsync rule above; if a damaged disk makes it happen, resending
                # from the spool's end is the only safe choice (nothing is skipped).
                self.state["offset"] = offset = end
            block, new_offset = read_complete(self.spool, offset, self.batch_bytes, end)
            if new_offset == offset:
                return sent
            lines, points, bad = encode_block(block)
            if lines:
                body = gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), mtime=0)
                headers = {"Authorization": "Token " + self.token, "Content-Type": "text/plain; charset=utf-8",
                           "Content-Encoding": "gzip"}
                status = self.post(self.url, body, headers, self.timeout_s)
                if not 200 <= status < 300:
                    raise PushError("HTTP %d" % status)
            self.bad_lines += bad
            self.state.update(offset=new_offset, points=int(self.state["points"]) + points,
                              url=self.target["url"], bucket=self.target["bucket"], last_error=None,
                              last_push=time.time())
            save_push_state(self.run_dir, self.state)
            sent += points

    def record_error(self, exc: BaseException) -> None:
        msg = "%s: %s" % (type(exc).__name__, str(exc)[:200])
        if self.state.get("last_error") != msg:
            self.state["last_error"] = msg
            save_push_state(self.run_dir, self.state)

    def run(self, stop: threading.Event, *, idle_s: float = 1.0, max_backoff_s: float = 10.0,
            wake: Optional[threading.Event] = None) -> None:
        """Forward until `stop`: right after new bytes became durable (`wake`, set by the spool's fsync)
        or every `idle_s`; while InfluxDB is unreachable, back off (doubling, capped) and ignore `wake`."""
        backoff = idle_s
        while not stop.is_set():
            failed = False
            try:
                self.push_once()
                backoff = idle_s
            except Exception as exc:  # any failure keeps the spool and the offset: retry later
                self.record_error(exc)
                backoff = min(max(backoff * 2, idle_s), max_backoff_s)
                failed = True
            if failed or wake is None:
                stop.wait(backoff)
            else:
                wake.wait(idle_s)
                wake.clear()

    def drain(self, deadline_s: float) -> bool:
        """Last attempts before exit (stop, end of run); True when nothing is left."""
        t_end = time.monotonic() + deadline_s
        while True:
            try:
                self.push_once()
                return self.pending_bytes() == 0
            except Exception as exc:
                self.record_error(exc)
                if time.monotonic() + 1.0 > t_end:
                    return False
                time.sleep(1.0)
