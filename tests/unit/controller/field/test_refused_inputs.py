"""What a field logger refuses from its inputs is in the field run's record (issue 23, 25 audits): the
gpsd reports its GPS thread skipped (nodes/fieldlog/sources.GpsSource) as `gps_reports_skipped` in each
second's `field` point, a radio value out of its range (nodes/modem/ranges.py) as the radio point's
`out_of_range`; the report (`ctl field report`, `ctl runs show` of a field run) sums them per host under
`refused_inputs`, described in the data dictionary (controller/results/columns.py).

The logger runs here with its real tick loop and spool on a fake clock; the modem is the drive trace
(nodes/modem/emulator.field_test_trace, a TEST DOUBLE built from real qmicli/Quectel samples) and gpsd a
fake source with the GpsSource methods the tick calls (the real thread's counting is tested against a
socket speaking gpsd's protocol in tests/unit/nodes/test_gps_source_reports.py).
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import jsonschema
import pytest

from controller.cli import main
from controller.field.stats import load_points, render_report, report_data
from controller.results import columns
from controller.schemas import OUTPUT_DIR
from controller.telemetry.spool import read_points
from nodes.fieldlog import rundir
from nodes.fieldlog.logger import FieldLogger, Sources
from tests.support.shipped import ROOT, isolated_ctl
from tests.unit.nodes.test_field_logger import NS, T0, ClockedStop, FakeClock, FakeRadio, _config

FIELD = ROOT / "tests" / "fixtures" / "generated" / "field" / "iperf3-m2"
FIELD_ID = json.loads((FIELD / "manifest.json").read_text())["run_id"]


class FakeGps:
    """gpsd as the tick sees it: no fix, and `bad[k]` reports refused during second k."""

    def __init__(self, clock: FakeClock, bad: dict[int, int]):
        self.clock, self.bad, self.taken = clock, bad, 0

    def start(self): ...

    def stop(self): ...

    def latest(self):
        return None

    def take_bad(self) -> int:
        k = round((self.clock.t - T0) / NS)
        return self.bad.pop(k, 0)


class OddRadio(FakeRadio):
    """The drive trace, with an RSRP of +300 dBm printed at seconds 5 and 6 (a broken firmware)."""

    def result(self, seq, deadline):
        s, raw = super().result(seq, deadline)
        if seq in (5, 6) and s is not None:
            s = dataclasses.replace(s, rsrp_dbm=300.0)
        return s, raw


def test_the_logger_records_what_it_refused_and_the_report_sums_it(tmp_path):
    paths = rundir.Paths(str(tmp_path), "r1")
    os.makedirs(paths.runs, exist_ok=True)
    cfg = dict(_config(duration_s=12), gps={"gpsd": "127.0.0.1:2947"})
    rundir.create(paths, cfg, now_ns=T0)
    clock = FakeClock(T0)
    cfg, st = rundir.load(paths)
    gps = FakeGps(clock, {2: 3, 7: 1})
    lg = FieldLogger(paths, cfg, st, stop=ClockedStop(clock, T0 + 100 * NS), clock_ns=clock,
                     monotonic=lambda: clock.t / NS, log=lambda m: None,
                     sources=Sources(radio=OddRadio(clock, cfg["started_ns"]), gps=gps))
    assert lg.run() == "completed"
    points = read_points(Path(paths.spool))[0]
    field = {p.fields["seq"]: p.fields for p in points if p.measurement == "field"}
    assert sorted(field) == list(range(12))
    assert {k: f["gps_reports_skipped"] for k, f in field.items() if f["gps_reports_skipped"]} == {2: 3, 7: 1}
    assert all("gps_reports_skipped" in f for f in field.values())       # 0 is a count, not a gap
    radio = {p.fields["seq"]: p.fields for p in points if p.measurement == "radio"}
    assert radio[5]["out_of_range"] == "rsrp_dbm" and "rsrp_dbm" not in radio[5]      # missing, not +300
    assert "out_of_range" not in radio[4] and radio[4]["rsrp_dbm"] < 0
    summary = report_data(points)
    assert summary["refused_inputs"] == {"m1": {"gps_reports_skipped": 4, "radio_values_out_of_range": 2,
                                                "radio_samples_flagged": 2, "unparsed_lines": {}}}
    text = render_report(summary)
    assert "m1         4 GPS reports skipped; 2 radio values out of range in 2 samples" in text


def test_a_run_without_gps_writes_no_count_and_says_so():
    points = load_points(FIELD / "metrics.jsonl")
    assert not any("gps_reports_skipped" in p.fields for p in points)
    summary = report_data(points)
    assert summary["refused_inputs"] == {"m2": {"gps_reports_skipped": None, "radio_values_out_of_range": 0,
                                                "radio_samples_flagged": 0, "unparsed_lines": {}}}   # an older logger
    assert "m2         no GPS; 0 radio values out of range in 0 samples" in render_report(summary)


def test_the_data_dictionary_describes_the_counts():
    for col in ("gps_reports_skipped", "radio_values_out_of_range", "radio_samples_flagged"):
        unit, text = columns.describe("refused_inputs", col, "field", {})
        assert unit == "count" and text


@pytest.fixture()
def runs(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    root.mkdir()
    isolated_ctl(monkeypatch, tmp_path, root)
    return root


def test_runs_show_of_the_recorded_field_run_with_refused_reports(runs, capsys):
    """The recorded run (tests/fixtures/generated/field), copied, with gpsd reports refused in two of its
    seconds as a logger with GPS writes them: `ctl runs show` prints and --json carries the counts."""
    rec = runs / FIELD_ID
    shutil.copytree(FIELD, rec)
    lines = []
    for line in (rec / "metrics.jsonl").read_text().splitlines():
        d = json.loads(line)
        if d["m"] == "field":
            d["f"]["gps_reports_skipped"] = {3: 2, 9: 5}.get(d["f"]["seq"], 0)
        lines.append(json.dumps(d, separators=(",", ":")))
    (rec / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["runs", "show", FIELD_ID]) == 0
    out = capsys.readouterr().out
    assert "Inputs refused (counted, recorded as missing)" in out
    assert "m2         7 GPS reports skipped; 0 radio values out of range in 0 samples" in out
    assert main(["runs", "show", FIELD_ID, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, json.loads((OUTPUT_DIR / "runs-show.schema.json").read_text()))
    assert doc["data"]["refused_inputs"]["m2"]["gps_reports_skipped"] == 7


def test_the_real_gps_thread_counts_into_the_spool(tmp_path):
    """The logger's real GpsSource against a local server speaking gpsd's protocol (a double of a broken
    gpsd: no real gpsd sends these), on the real clock for four seconds: every skipped report is in the
    spool, once."""
    import socket
    import threading
    import time

    from nodes.fieldlog import sources as S
    from tests.unit.nodes.test_gps_source_reports import BAD, GOOD

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    done = threading.Event()

    def gpsd() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.recv(1024)                                   # ?WATCH
            for i, line in enumerate(BAD + [b'{"class":"TPV","mode":2,"lat":91.0,"lon":2.5}']):
                conn.sendall(line + b"\n" + GOOD % i + b"\n")
                time.sleep(0.3)
            done.wait(10)

    threading.Thread(target=gpsd, daemon=True).start()
    paths = rundir.Paths(str(tmp_path), "r1")
    os.makedirs(paths.runs, exist_ok=True)
    cfg = dict(_config(duration_s=4), gps={"gpsd": f"127.0.0.1:{port}"})
    cfg.pop("modem")
    rundir.create(paths, cfg, now_ns=time.time_ns())
    cfg, st = rundir.load(paths)
    gps = S.GpsSource(f"127.0.0.1:{port}", log=lambda m: None)
    try:
        lg = FieldLogger(paths, cfg, st, sources=Sources(gps=gps), log=lambda m: None)
        assert lg.run() == "completed"
    finally:
        done.set()
        srv.close()
    field = [p.fields for p in read_points(Path(paths.spool))[0] if p.measurement == "field"]
    assert len(field) == 4 and all("gps_reports_skipped" in f for f in field)
    assert gps.bad_reports == len(BAD) + 1
    # the last tick may come before the last report: what the spool has is what was skipped by then, once
    assert sum(f["gps_reports_skipped"] for f in field) == gps.bad_reports - gps.take_bad() >= 1
    assert report_data(read_points(Path(paths.spool))[0])["refused_inputs"]["m1"]["gps_reports_skipped"] == \
        sum(f["gps_reports_skipped"] for f in field)
