"""Field-test mode on the virtual rack: a field run on m2 (read over its AT port) whose uplink is cut for a
minute, whose logger is killed with -9 and started again, and whose modem resets -- nothing measured lost,
nothing doubled. (m1, read through the real ModemManager, is tests/integration/test_field_mm.py.)

m2's "modem" is the AT modem emulator, a TEST DOUBLE for hardware we do not have, started by
`ctl lab up` on a pty in m2's namespace; it replays field_test_trace() (50 s: SINR dip at 10 s, cell
A -> B at 20 s, modem silent 30..33 s, NR leg added at 40 s) looped on the wall clock, so the trace
state at wall time T is state_at(T mod 50). Real: SSH, the logger process on m2, ping, iperf3 and
InfluxDB; m2's uplink is its management interface, so `ip link set mgmt0 down` cuts SSH and InfluxDB.

Timeline (about 2.5 minutes): start with an iperf3 download (server in the root namespace) -> ~12 s ->
kill -9 the logger -> `ctl field start` again (resumes the same run) -> ~8 s -> uplink down for 60 s
(the full minute of the issue) -> up -> wait until InfluxDB has everything -> stop -> report.
"""
from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

from controller.telemetry.points import Point
from controller.telemetry.spool import read_points
from nodes.modem.emulator import CELL_A, CELL_B, field_test_trace
from tests.unit.controller.cli.test_json_envelope import check
from tests.support.influx import client

pytestmark = pytest.mark.integration
NS = 1_000_000_000
CUT_S = 60.0


def ctl_json(rack, *args: str, timeout: float = 120) -> dict:
    p = rack.ctl(*args, "--json", timeout=timeout)
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    doc = json.loads(p.stdout)
    check(doc, " ".join(args[:2]))          # the real output against its shipped schema (controller/schemas)
    return doc["data"]


def m2_status(rack) -> dict:
    return ctl_json(rack, "field", "status", "--host", "m2")["m2"]


def wait_until(pred, timeout: float, step: float = 1.0, what: str = "") -> None:
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        if pred():
            return
        time.sleep(step)
    raise AssertionError(f"timed out waiting for {what}")


def influx_points(rack, run_id: str) -> Counter:
    """Every stored value of the run: (measurement, tag set, field, t ns, value)."""
    q = (f'from(bucket: "{rack.inventory.influxdb.bucket}") |> range(start: 0) '
         f'|> filter(fn: (r) => r["run"] == "{run_id}") '
         f'|> map(fn: (r) => ({{r with t_ns: int(v: r._time)}}))')
    out: Counter = Counter()
    skip = {"result", "table", "_start", "_stop", "_time", "_value", "_field", "_measurement", "t_ns"}
    with client(rack) as c:
        for table in c.query_api().query(q):
            for rec in table.records:
                tags = tuple(sorted((k, v) for k, v in rec.values.items() if k not in skip and v is not None))
                out[(rec.values["_measurement"], tags, rec.values["_field"], int(rec.values["t_ns"]),
                     rec.get_value())] += 1
    return out


def _epoch(t) -> float:
    """A report time (ISO 8601 with a zone, or seconds) as seconds since the epoch."""
    if isinstance(t, (int, float)):
        return float(t)
    return datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()


def spool_values(points: list[Point]) -> Counter:
    """The same view of spool points, by the line-protocol rules (no None/NaN fields, empty tags dropped)."""
    out: Counter = Counter()
    for p in points:
        tags = tuple(sorted((k, str(v)) for k, v in p.tags.items() if str(v) != ""))
        for f, v in p.fields.items():
            if v is None or (isinstance(v, float) and v != v):
                continue
            out[(p.measurement, tags, f, p.time_ns, v)] += 1
    return out


@pytest.fixture
def iperf3_server(rack):
    gw = str(ipaddress.ip_interface(rack.inventory.virtual.mgmt_address).ip)
    port = 5400 + os.getpid() % 500
    # --snd-timeout: while the uplink is cut the server's unacknowledged data times out within 5 s, so the
    # test ends on the server too and the logger's restarted client is not told "the server is busy".
    p = subprocess.Popen(["iperf3", "-s", "-B", gw, "-p", str(port), "--snd-timeout", "5000", "--idle-timeout", "30"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(0.3)
    assert p.poll() is None, "iperf3 server did not start"
    yield f"{gw}:{port}"
    p.terminate()
    try:
        p.wait(5)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(5)


def test_field_run_loses_nothing_across_uplink_cut_restart_and_modem_reset(rack, iperf3_server):
    t_test = time.monotonic()
    trace = field_test_trace()
    root = Path(rack.inventory.virtual.runtime_dir) / "hosts" / "m2" / "field"
    link = Path(rack.inventory.virtual.runtime_dir) / "hosts" / "m2" / "ttyAT0"
    assert link.is_symlink() and os.path.exists(os.path.realpath(link)), "the modem test double is not running"

    # ---- start -------------------------------------------------------------------------------------------
    out = ctl_json(rack, "field", "start", "--host", "m2", "--workload", "iperf3", "--server", iperf3_server,
                   "--rate", "1M", "--duration", "10m")
    run_id = out["run_id"]
    assert out["hosts"]["m2"]["action"] == "started" and out["hosts"]["m2"]["run_id"] == run_id
    record = Path(out["record"])
    assert json.loads((record / "manifest.json").read_text())["status"] == "logging"
    wait_until(lambda: (m2_status(rack).get("last") or {}).get("seq", -1) >= 10, 40, what="10 s of samples")

    # ---- logger restart: kill -9, then start again -> the same run continues ---------------------------------
    st = m2_status(rack)
    assert st["state"] == "logging" and st["run_id"] == run_id
    os.kill(st["pid"], signal.SIGKILL)
    wait_until(lambda: m2_status(rack)["state"] == "unfinished", 10, 0.3, "the killed logger's run to be unfinished")
    # A restart within the slot's grace takes the next tick and records a plain `resume` (no second
    # lost): ctl's commands now take well under a second, so wait until seconds are surely missed.
    time.sleep(3)
    again = ctl_json(rack, "field", "start", "--host", "m2", "--workload", "idle")
    assert again["hosts"]["m2"]["action"] == "resumed" and again["hosts"]["m2"]["run_id"] == run_id
    assert again["record"] is None                      # no new record: the run is the same
    time.sleep(8)

    # ---- uplink cut: SSH and InfluxDB unreachable for a minute ---------------------------------------------------
    rack.netns("m2", "ip", "link", "set", "mgmt0", "down")
    t_cut = time.time_ns()
    try:
        during = ctl_json(rack, "field", "status", "--host", "m2", timeout=60)["m2"]
        assert during["state"] == "unreachable", during
        time.sleep(max(0.0, CUT_S - (time.time_ns() - t_cut) / NS))
    finally:
        rack.netns("m2", "ip", "link", "set", "mgmt0", "up")
    t_up = time.time_ns()

    # ---- back: the host forwards what it spooled; then stop and report ---------------------------------------------
    # caught up: at most the current second's records not yet acknowledged (stop drains the rest)
    wait_until(lambda: (lambda s: s.get("pending_points", 99) <= 5 and not s.get("push_error"))(m2_status(rack)),
               60, 2.0, "the host to forward its spool")
    # the workload comes back too (its restart backs off up to 10 s while the uplink is gone)
    wait_until(lambda: bool((m2_status(rack).get("last") or {}).get("dl_bps")), 40, 2.0, "iperf3 to download again")
    time.sleep(2)
    stopped = ctl_json(rack, "field", "stop", "--host", "m2")
    assert stopped["m2"]["action"] == "stopped" and stopped["m2"]["run_id"] == run_id
    summary = ctl_json(rack, "field", "report", run_id)

    # ---- nothing lost, nothing doubled: InfluxDB == host spool == fetched record ------------------------------------
    host_spool = root / "runs" / run_id / "metrics.jsonl"
    data = host_spool.read_bytes()
    assert (record / "metrics.jsonl").read_bytes() == data
    assert (record / "raw" / "m2" / "metrics.jsonl").read_bytes() == data
    points, _ = read_points(host_spool)
    spooled = spool_values(points)
    stored = influx_points(rack, run_id)
    assert max(stored.values()) == 1 and max(spooled.values()) == 1          # no point twice
    assert stored == spooled, (len(stored), len(spooled), list((stored - spooled).items())[:3],
                               list((spooled - stored).items())[:3])
    push = json.loads((root / "runs" / run_id / "metrics.influx.json").read_text())
    assert push["offset"] == len(data) and push["points"] == len(points)

    # ---- one point per second for every second of the run, the restart gap recorded as such --------------------------
    ticks = {p.fields["seq"]: p for p in points if p.measurement == "field"}
    events = [p for p in points if p.measurement == "field_event"]
    gaps = [e for e in events if e.tags["event"] == "gap"]
    assert len(gaps) == 1, [e.tags["event"] for e in events]
    missing = set(range(gaps[0].fields["from_seq"], gaps[0].fields["to_seq"] + 1))
    # kill -9 -> `ctl field status` notices -> `ctl field start`: seconds nobody measured (2-9 s seen,
    # longer on a loaded machine); what matters is that they are exactly the recorded gap
    assert 1 <= len(missing) <= 20
    # seconds a loaded host's logger woke too late for (a late start included) are said as `late`
    missing |= {s for e in events if e.tags["event"] == "late"
                for s in range(e.fields["from_seq"], e.fields["to_seq"] + 1)}
    last = max(ticks)
    assert sorted(ticks) == sorted(set(range(0, last + 1)) - missing)
    # (a `late` second is said, not lost: ddcb941 counted them as said-missing above but left an assertion that
    # none occurs, which a loaded host's logger broke in the clean clone of 2026-11-27 16:01)
    cut = [k for k, p in ticks.items() if t_cut <= p.time_ns <= t_up]
    assert len(cut) >= CUT_S - 2                        # measured while the uplink was gone ...
    assert all(p.fields.get("rtt_ms") is None for k, p in ticks.items() if t_cut + 2 * NS < p.time_ns < t_up)
    # ... and stored in InfluxDB afterwards (covered above, and explicitly:)
    stored_seqs = {key[4] for key in stored if key[0] == "field" and key[2] == "seq"}
    assert set(cut) <= stored_seqs and stored_seqs == set(ticks)

    # ---- the modem reset in the trace: samples missing, never zeros ----------------------------------------------------
    radio = {p.fields["seq"]: p for p in points if p.measurement == "radio"}
    silent_ok = []
    for k, p in ticks.items():
        pos = (p.time_ns / NS) % trace.duration_s
        if 30.3 <= pos <= 32.7:
            assert k not in radio and p.fields["modem_ok"] is False, (k, pos)
            silent_ok.append(k)
        elif not any(abs(pos - b) < 0.7 for b in (0.0, 30.0, 33.0, 50.0)) and k in radio:
            want = trace.state_at(pos)
            assert radio[k].fields["sinr_db"] == float(want.sinr_db), (k, pos)
            assert radio[k].fields["rsrp_dbm"] == float(want.rsrp_dbm)
    assert silent_ok                                    # the run crossed at least one reset
    answered = [k for k, p in ticks.items() if not (29.5 <= (p.time_ns / NS) % 50 <= 34.0)]
    assert sum(1 for k in answered if k in radio) >= 0.95 * len(answered)
    assert all(p.fields["sinr_db"] in (8.0, -18.0, 4.0, -20.0) for p in radio.values())
    lost = [e for e in events if e.tags["event"] == "modem-lost"]
    back = [e for e in events if e.tags["event"] == "modem-back"]
    assert lost and back and all(2 <= e.fields["missing"] <= 4 for e in back)

    # ---- handovers: on the host (settled events) and in the report, with time and before/after values ----------------
    # the report's times are ISO 8601 with a zone: compared here as seconds since the epoch (a signal
    # dip the series starts inside has no sample before it: its before_time is null, nodes/modem/handover.py)
    report_ho = [{**e, **{k: _epoch(e[k]) for k in ("time", "before_time", "after_time") if e.get(k) is not None}}
                 for e in summary["handovers"]["m2"]]
    cell_changes = [e for e in report_ho if e["kind"] == "cell-change"]
    assert cell_changes
    for e in cell_changes:
        assert {e["before_cell_id"], e["after_cell_id"]} <= {f"{CELL_A.eci:X}", f"{CELL_B.eci:X}"}
        assert e["before_cell_id"] != e["after_cell_id"] and e["before_time"] < e["after_time"]
    a_to_b = [e for e in cell_changes if e["after_cell_id"] == f"{CELL_B.eci:X}"]
    assert a_to_b
    for e in a_to_b:
        # The trace switches A -> B at 20 s (mod 50). The event brackets that instant: the last A sample is not
        # after it and the first B sample not before it (1 s for the tick-to-query skew). With samples on both
        # sides of it the event is within a second; when the kill -9 gap covered it, the event is the first
        # sample after the gap and gap_s says so.
        (t_true,) = [k * 50 + 20 for k in range(int(e["before_time"] // 50) - 1, int(e["after_time"] // 50) + 2)
                     if e["before_time"] - 1.0 <= k * 50 + 20 <= e["after_time"] + 1.0]
        assert e["before_time"] <= t_true + 1.0 and e["after_time"] >= t_true - 1.0, (e, t_true)
        assert e["time"] == e["after_time"] and e["gap_s"] == pytest.approx(e["after_time"] - e["before_time"])
        if e["gap_s"] <= 1.5:
            assert abs(e["time"] - t_true) <= 1.0, (e, t_true)
    host_ho = [p for p in points if p.measurement == "handover"]
    assert host_ho and {p.tags["kind"] for p in host_ho} <= {"cell-change", "technology-change", "signal-dip",
                                                            "secondary-change"}
    assert len({(p.tags["kind"], p.time_ns) for p in host_ho}) == len(host_ho)

    # ---- the workload: iperf3 download rate before and after the cut ---------------------------------------------------
    dl_before = [p.fields["dl_bps"] for p in ticks.values() if "dl_bps" in p.fields and p.time_ns < t_cut]
    dl_after = [p.fields["dl_bps"] for p in ticks.values() if "dl_bps" in p.fields and p.time_ns > t_up]
    assert len(dl_before) >= 8 and 0.5e6 < sorted(dl_before)[len(dl_before) // 2] < 1.5e6
    assert dl_after, "iperf3 did not come back after the uplink returned"

    # ---- the field run record and the report ------------------------------------------------------------------------------
    manifest = json.loads((record / "manifest.json").read_text())
    assert manifest["scenario"] == "field" and manifest["status"] == "stopped"
    assert len(manifest["field"]["hosts"]["m2"]["starts"]) == 2
    assert manifest["figures"] == ["fig4_timeline.png", "download_cdf.png"]
    assert (record / "fig4_timeline.png").stat().st_size > 10_000
    for name in ("run.json", "state.json", "metrics.influx.json", "logger.log", "raw/radio.jsonl", "raw/ping.log",
                 "raw/workload.log"):
        assert (record / "raw" / "m2" / name).exists(), name
    (row,) = summary["table1"]
    assert row["host"] == "m2" and row["seconds_logged"] == len(ticks) and row["seconds_not_logged"] == len(missing)
    assert row["quality_metric"] == "sinr_db" and row["rtt_ms"] is not None and row["jitter_ms"] is not None
    assert row["bandwidth_kbps"] > 0 and row["handovers"] == len(report_ho)
    (pct,) = summary["download_percentiles"]
    assert pct["n"] == len(dl_before) + sum(1 for p in ticks.values() if "dl_bps" in p.fields and
                                            t_cut <= p.time_ns <= t_up) + len(dl_after)
    assert pct["p5_kbps"] <= pct["p50_kbps"] <= pct["p95_kbps"]
    text = rack.ctl("field", "report", run_id, "--no-fetch")
    assert text.returncode == 0 and "Table 1" in text.stdout and "m2" in text.stdout

    # ---- lines of ping and iperf3 the logger did not understand: counted each second, summed by the report, the
    # first ones kept as the tools printed them (nodes/fieldlog/parsers.py Unread) ---------------------------------
    assert all(isinstance(p.fields.get("ping_unparsed_lines"), int) and
               isinstance(p.fields.get("workload_unparsed_lines"), int) for p in ticks.values())
    unparsed = summary["refused_inputs"]["m2"]["unparsed_lines"]
    assert set(unparsed) == {"ping", "iperf3"}, unparsed
    for tool, key, log in (("ping", "ping_unparsed_lines", "ping.log"), ("iperf3", "workload_unparsed_lines",
                                                                         "workload.log")):
        assert unparsed[tool]["lines"] == sum(p.fields[key] for p in ticks.values())
        raw_lines = {line.split(" ", 1)[1] for line in (record / "raw" / "m2" / "raw" / log).read_text().splitlines()
                     if " " in line}
        assert all(first in raw_lines for first in unparsed[tool]["first"]), (tool, unparsed[tool])
    print(f"lines not understood: {unparsed}")
    print(f"field integration test took {time.monotonic() - t_test:.0f} s; "
          f"{len(ticks)} seconds, {len(points)} points, gap {sorted(missing)}")
