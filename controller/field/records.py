"""Field run records: create, reopen, find, and merge the hosts' fetched spools into one
`metrics.jsonl` (host by host, byte for byte).
"""
from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from typing import Sequence

from controller.errors import RecordError
from controller.field.options import FieldOptions, default_ping_target
from controller.inventory import Inventory, source_of
from controller.results.records import FORMAT_VERSION, RunRecord, make_run_id
from controller.telemetry.spool import PushState
from controller.version import commit, dependencies, version

FETCH_FILES = ("run.json", "state.json", "metrics.jsonl", "metrics.influx.json", "logger.log",
               "raw/radio.jsonl", "raw/ping.log", "raw/workload.log", "raw/gps.jsonl")


APPEND_ONLY = tuple(f for f in FETCH_FILES if not f.endswith(".json"))


def new_record(runs_root: Path, inv: Inventory, hosts: Sequence[str], opts: FieldOptions) -> RunRecord:
    rid = make_run_id("field", {"host": "+".join(hosts), "workload": opts.workload})
    rec = RunRecord(runs_root, rid)
    # Written directly with status "logging" (not RunRecord.start's "running": crash recovery would take
    # a `running` record for a controller that died mid-run and try to restore the rack from it).
    rec.manifest = {
        "format_version": FORMAT_VERSION, "run_id": rec.id, "scenario": "field", "campaign": None,
        "status": "logging", "dry_run": False, "created": time.time(), "finished": None,
        "controller": {"host": socket.gethostname(), "pid": os.getpid(), "ctl_version": version(), "commit": commit(), "dependencies": dependencies(),
                       "python": sys.version.split()[0], "argv": sys.argv},
        "parameters": {"hosts": list(hosts), "workload": opts.workload, "duration_s": opts.duration_s,
                       "server": opts.server, "rate": opts.rate, "torrent": opts.torrent,
                       "ping": opts.ping or default_ping_target(inv), "interval_s": opts.interval_s},
        "inventory_file": str(source_of(inv) or ""), "inventory": inv.snapshot(),
        "phases": [{"phase": "start", "t": time.time()}], "hosts": {}, "processes": [], "errors": [],
        "clock_offsets": {}, "field": {"hosts": {}},
        "files": {"commands": "commands.jsonl", "metrics": "metrics.jsonl", "summary": "summary.json",
                  "raw": "raw/"},
    }
    rec.save()
    return rec


def open_field_record(path: Path) -> RunRecord:
    rec = RunRecord.open(path)
    if rec.manifest.get("scenario") != "field":
        raise RecordError(f"{path.name} is not a field run (scenario {rec.manifest.get('scenario')!r})")
    return rec


def find_record_of(runs_root: Path, run_id: str) -> RunRecord | None:
    p = runs_root / run_id
    if (p / "manifest.json").exists():
        try:
            return open_field_record(p)
        except RecordError:
            return None
    return None


def merge_spools(rec: RunRecord, hosts: Sequence[str]) -> int:
    """runs/<id>/metrics.jsonl = the hosts' spools, host by host (for one host: its spool byte for byte),
    and the run's metrics.influx.json says what InfluxDB has: all of it only if every host's logger
    had every point acknowledged; otherwise nothing, so `ctl metrics push RUN` sends everything again
    (the repeats are identical points, stored once)."""
    out = rec.dir / "metrics.jsonl"
    tmp = rec.dir / "metrics.jsonl.tmp"
    total = 0
    all_acked = True
    last_push: float | None = None
    url = bucket = ""
    with open(tmp, "wb") as f:
        for h in hosts:
            spool = rec.dir / "raw" / h / "metrics.jsonl"
            if not spool.exists():
                continue
            data = spool.read_bytes()
            f.write(data)
            total += data.count(b"\n")
            st = PushState.load(spool.parent)
            if st.offset < len(data):
                all_acked = False
            url, bucket = st.url or url, st.bucket or bucket
            if st.last_push is not None:
                last_push = max(last_push or 0.0, st.last_push)
    os.replace(tmp, out)
    state_file = rec.dir / "metrics.influx.json"
    if all_acked and total:
        PushState(offset=out.stat().st_size, points=total, url=url, bucket=bucket, last_error=None,
                  last_push=last_push).save(rec.dir)
    else:
        state_file.unlink(missing_ok=True)
    return total
