"""InfluxDB down or slow during a run: the run goes on, the spool keeps every point, and
InfluxDB ends up with exactly the points of the run record (count and values, no duplicates)."""
from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from controller.lab.rack import proc_start_time
from controller.telemetry.spool import iter_points
from tests.integration.test_abort_and_safety import _wait_for_traffic
from tests.support.influx import query_counts, query_values
from tests.unit.controller.cli.test_json_envelope import check

pytestmark = pytest.mark.integration


def _influxd(rack) -> dict:
    return next(p for p in rack.lab_state()["processes"] if p["name"] == "influxd")


def _stop_influxd(rack) -> None:
    pid = _influxd(rack)["pid"]
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    # (a zombie counts as gone: the fixture's process started it and reaps it later)
    while proc_start_time(pid) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc_start_time(pid) is None


def _wait_for_writer_error(rack, before: set, proc, timeout_s: float = 90.0) -> None:
    """Until the new run's InfluxDB writer has recorded a failed push (metrics.influx.json's
    last_error), at least 2 s; fails if the run ends or the time runs out first."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        assert proc.poll() is None, "the run ended before its writer met InfluxDB down"
        new = [d for d in rack.runs_dir.iterdir() if d not in before]
        states = [d / "metrics.influx.json" for d in new if (d / "metrics.influx.json").exists()]
        if time.monotonic() - t0 >= 2 and any(json.loads(f.read_text()).get("last_error") for f in states):
            return
        time.sleep(0.2)
    raise AssertionError(f"the run's writer did not meet InfluxDB down within {timeout_s:g} s")


def _expected(record: Path) -> Counter:
    out: Counter = Counter()
    for p in iter_points(record / "metrics.jsonl"):
        for f, v in p.fields.items():
            if v is not None and not (isinstance(v, float) and v != v):
                out[(p.measurement, p.tags["host"], f)] += 1
    return out


def test_influxdb_restarted_mid_run_loses_nothing(rack):
    before = set(rack.runs_dir.iterdir()) if rack.runs_dir.exists() else set()
    proc = rack.popen("run", "distinct-bottleneck", "--link2", "20M", "--duration", "16")
    _wait_for_traffic(proc)
    time.sleep(2)
    _stop_influxd(rack)
    # InfluxDB is down; the run goes on. Down until the run's writer has tried and failed (its push
    # state says so), not for a fixed time: on a loaded machine the controller's loop stalled for
    # the whole outage once (16.6 s, clean-clone suite of 2026-11-27) and the writer never tried.
    _wait_for_writer_error(rack, before, proc)
    up = rack.ctl("lab", "up")  # restarts only the dead daemon, on the same data
    assert up.returncode == 0, up.stderr
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    record = Path(out.split("record: ")[1].split()[0])
    m = json.loads((record / "manifest.json").read_text())
    assert m["telemetry"]["influx"]["errors"], "the writer should have seen InfluxDB fail"
    assert m["telemetry"]["influx"]["all_sent"] is True and m["telemetry"]["influx"]["pending"] == 0
    assert query_counts(rack, run=m["run_id"]) == _expected(record)
    # values too: the bridge's port counters, point by point, same timestamps
    spooled = sorted((p.time_ns, p.fields["tx_bytes"]) for p in iter_points(record / "metrics.jsonl")
                     if p.measurement == "iface" and p.tags["host"] == "br2" and p.tags["iface"] == "pb")
    assert query_values(rack, "iface", "tx_bytes", run=m["run_id"], host="br2", iface="pb") == spooled


def test_influxdb_hung_for_the_whole_run_then_metrics_push_exactly_once(rack):
    # Frozen, not dead: the process is there (so `ctl run` does not restart it) but never answers.
    pid = _influxd(rack)["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        p = rack.ctl("run", "distinct-bottleneck", "--link2", "20M", "--duration", "3")
        assert p.returncode == 0, p.stderr
        assert "points not sent yet" in p.stdout
        record = Path(p.stdout.split("record: ")[1].split()[0])
        state = json.loads((record / "metrics.influx.json").read_text())
        assert state["offset"] == 0 and state["last_error"]
    finally:
        os.kill(pid, signal.SIGCONT)
    run_id = record.name
    first = rack.ctl("metrics", "push", run_id, "--json")
    assert first.returncode == 0, first.stderr
    check(json.loads(first.stdout), "metrics push")        # the real output against its shipped schema
    (r1,) = json.loads(first.stdout)["data"]
    n = sum(1 for _ in open(record / "metrics.jsonl"))
    assert r1["sent_now"] == n and r1["pending"] == 0
    second = rack.ctl("metrics", "push", run_id, "--json")
    (r2,) = json.loads(second.stdout)["data"]
    assert r2["sent_now"] == 0 and r2["sent_total"] == n
    assert query_counts(rack, run=run_id) == _expected(record)
