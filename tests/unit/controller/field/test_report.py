"""Controller side of field tests, pure parts: logger settings and commands, merging fetched spools,
and the report (Table 1, download percentiles, handover events, figures) on recorded data.

"Recorded data": the radio values are field_test_trace() (built from the REAL qmicli/Quectel samples of
tests/fixtures/recorded/02*, replayed by the AT emulator TEST DOUBLE), the torrent progress is the real
webtorrent-cli leecher output of tests/fixtures/recorded/generated/webtorrent/.
"""
from __future__ import annotations

import json
import re
import statistics

import numpy
import pytest

from controller.field.figures import figures, write_report
from controller.field.host import _RecordLog
from controller.field.options import FieldOptions, check_hosts, check_options, field_root, logger_config, modem_hosts, resolve_device
from controller.field.records import merge_spools
from controller.field.ship import INSTALL_SCRIPT, build_zipapp, install_command, start_command, stop_command
from controller.field.stats import PERCENTILES, percentile, render_report, report_data, sample_from_point
from controller.commands import CommandResult
from controller.errors import ParameterError, UsageError
from controller.inventory import load_inventory
from controller.results.records import RunRecord
from controller.telemetry.points import Point
from controller.telemetry.spool import PushState
from nodes.fieldlog import parsers
from nodes.fieldlog import points as P
from nodes.fieldlog.rundir import validate_config
from nodes.modem.emulator import CELL_A, CELL_B, field_test_trace
from tests.support.shipped import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "recorded" / "generated"
NS = 1_000_000_000
T0 = 1_795_000_000 * NS


@pytest.fixture(autouse=True)
def _state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))


@pytest.fixture
def vinv():
    return load_inventory(ROOT / "inventory" / "virtual.yaml")


@pytest.fixture
def labinv():
    return load_inventory(ROOT / "inventory" / "lab-rack.example.yaml")


# ---- settings and commands ---------------------------------------------------------------------------

def test_virtual_modem_device_is_the_test_double_link_under_the_runtime_dir(vinv):
    assert modem_hosts(vinv) == ["m1", "m2"]
    assert resolve_device(vinv, "m2") == "/run/ctl/ctlv/hosts/m2/ttyAT0"
    assert field_root(vinv, "m2") == "/run/ctl/ctlv/hosts/m2/field"
    from controller.lab.plan import modem_test_doubles
    doubles = {(d.host, d.name): d for d in modem_test_doubles(vinv)}
    d = doubles[("m2", "modem-test-double")]
    assert d.argv[d.argv.index("--link") + 1] == resolve_device(vinv, "m2")
    assert d.argv[:4] == ("ip", "netns", "exec", "ctlv-m2") and d.argv[-1] == "at-quectel"
    # m1 reads its (emulated) modem through the real ModemManager: the device is the modem's identity
    assert resolve_device(vinv, "m1") == "867978050021665"
    assert [name for (h, name) in doubles if h == "m1"] == ["modem-test-double", "system-bus", "polkitd",
                                                            "ModemManager"]


def test_physical_rack_paths(labinv):
    assert field_root(labinv, "bus1") == "/var/lib/ctl-field"
    assert resolve_device(labinv, "static1") == "/dev/ttyUSB2"
    assert resolve_device(labinv, "bus1") == "/dev/cdc-wdm0"      # qmicli: not a serial path rule


def test_relative_serial_device_on_a_physical_rack_is_refused(tmp_path):
    text = (ROOT / "inventory" / "lab-rack.example.yaml").read_text().replace("device: /dev/ttyUSB2", "device: ttyUSB2")
    p = tmp_path / "lab.yaml"
    p.write_text(text)
    with pytest.raises(ParameterError, match="absolute"):
        resolve_device(load_inventory(p), "static1")


def test_bad_hosts_and_options_are_usage_errors(vinv):
    with pytest.raises(UsageError, match="not modem-host"):
        check_hosts(vinv, ["a1"])
    with pytest.raises(UsageError, match="no host"):
        check_hosts(vinv, ["bus9"])
    with pytest.raises(UsageError, match="--server"):
        check_options(FieldOptions(workload="iperf3"))
    with pytest.raises(UsageError, match="--torrent"):
        check_options(FieldOptions(workload="torrent"))


def test_logger_config_is_valid_and_holds_no_secret(vinv, monkeypatch):
    monkeypatch.setenv("CTL_INFLUX_TOKEN", "s3cret")
    opts = FieldOptions(workload="iperf3", server="10.250.0.1:5999", rate="1M", duration_s=7200)
    cfg = logger_config(vinv, "m1", "RUN1", opts, "/root")
    validate_config(cfg)
    assert cfg["workload"] == {"kind": "iperf3", "server": "10.250.0.1", "port": 5999, "rate": "1M", "chunk_s": 600}
    assert cfg["ping"]["target"] == "10.250.0.1" and cfg["uplink"] == "mgmt0"
    assert cfg["influx"] == {"url": "http://10.250.0.1:8086", "org": "ctl", "bucket": "ctl"}
    assert cfg["tags"] == {"run": "RUN1", "scenario": "field", "host": "m1"}
    assert "s3cret" not in json.dumps(cfg)


def test_commands_are_argv_and_the_token_travels_on_stdin():
    c = start_command("/r/fieldlog-x.pyz", "/r", {"run_id": "R"}, "s3cret")
    assert isinstance(c.argv, tuple) and "s3cret" not in " ".join(c.argv) and c.stdin == "s3cret\n"
    assert c.argv[:5] == ("python3", "/r/fieldlog-x.pyz", "start", "--root", "/r") and c.mutates
    assert start_command("/p", "/r", None, None).argv == ("python3", "/p", "start", "--root", "/r")
    s = stop_command("/p", "/r", 1234)
    assert s.argv[-2:] == ("--pid", "1234")
    data, sha = build_zipapp()
    inst = install_command("/r", data, sha)
    assert inst.argv[:3] == ("python3", "-c", INSTALL_SCRIPT) and inst.argv[3:] == (f"/r/fieldlog-{sha[:12]}.pyz", sha)


def test_fetch_payloads_are_not_copied_into_commands_jsonl(tmp_path):
    log = _RecordLog(tmp_path / "commands.jsonl")
    log.add(CommandResult("m1", ("python3", "x", "cat"), 0, "x" * 5000, "", note="fetch metrics.jsonl"))
    log.close()
    entry = json.loads((tmp_path / "commands.jsonl").read_text())
    assert "5000 characters" in entry["stdout"] and len(entry["stdout"]) < 100


# ---- merging fetched spools -------------------------------------------------------------------------------

def _host_spool(rec: RunRecord, host: str, lines: list[str], acked: int | None) -> bytes:
    d = rec.dir / "raw" / host
    d.mkdir(parents=True, exist_ok=True)
    data = "".join(line + "\n" for line in lines).encode()
    (d / "metrics.jsonl").write_bytes(data)
    if acked is not None:
        PushState(offset=acked, points=0, url="http://db", bucket="b").save(d)
    return data


def test_one_host_run_record_spool_is_the_host_spool_byte_for_byte(tmp_path):
    rec = RunRecord(tmp_path, "R")
    data = _host_spool(rec, "m1", [P.dumps(r) for r in _records()[:30]], acked=None)
    assert merge_spools(rec, ["m1"]) == 30
    assert (rec.dir / "metrics.jsonl").read_bytes() == data
    assert not (rec.dir / "metrics.influx.json").exists()     # not all acknowledged: `metrics push` resends all


def test_run_push_state_only_when_every_host_was_fully_acknowledged(tmp_path):
    rec = RunRecord(tmp_path, "R")
    a = _host_spool(rec, "m1", ['{"m":"x","t":1,"tags":{},"f":{"v":1}}'], acked=None)
    _host_spool(rec, "m1", ['{"m":"x","t":1,"tags":{},"f":{"v":1}}'], acked=len(a))
    b = _host_spool(rec, "m2", ['{"m":"x","t":2,"tags":{},"f":{"v":1}}'] * 2, acked=None)
    _host_spool(rec, "m2", ['{"m":"x","t":2,"tags":{},"f":{"v":1}}'] * 2, acked=len(b))
    assert merge_spools(rec, ["m1", "m2"]) == 3
    st = PushState.load(rec.dir)
    assert st.offset == len(a) + len(b) and st.points == 3
    _host_spool(rec, "m2", ['{"m":"x","t":2,"tags":{},"f":{"v":1}}'] * 3, acked=len(b))
    merge_spools(rec, ["m1", "m2"])
    assert PushState.load(rec.dir).offset == 0


# ---- the report on recorded data ---------------------------------------------------------------------------

RTT = [150.0, 160.0, 140.0, 155.0, 170.0]
JIT = [70.0, 80.0, 60.0, 75.0, 90.0]


def _records(host: str = "m1", seconds: int = 100) -> list[dict]:
    """A 100 s field run on the drive trace (looped), torrent progress from the recorded leecher frames."""
    trace = field_test_trace()
    frames = parsers.parse_webtorrent((FIXTURES / "webtorrent" / "leecher.stdout.txt").read_text())
    base = {"host": host, "run": "R", "scenario": "field"}
    out = []
    rx = 0
    for k in range(seconds):
        t = T0 + k * NS
        s = trace.truth_at(k % 50)
        fr = frames[k % len(frames)]
        work = {"dl_bps": fr["dl_bps"], "dl_bytes": fr["downloaded_bytes"], "peers_connected": fr["peers_connected"],
                "peers_unchoked": fr["peers_unchoked"], "peers_active": fr["peers_active"] if k % 2 else 0,
                "running": True}
        ping = {"rtt_ms": RTT[k % 5], "jitter_ms": JIT[k % 5], "ping_replies": 5, "ping_lost": 0, "ping_errors": 0}
        out.append(P.field_record(k, t, base, "torrent", modem_ok=s is not None, ping=ping, gps=None, work=work))
        rr = P.radio_record(s, t, k, base)
        if rr is not None:
            out.append(rr)
        rates = {"rx_bps": 2.5e6 + 1000 * (k % 7), "tx_bps": 1e5} if k else {}
        rx += 312_500
        out.append(P.iface_record("wwan0", t, base, {"rx_bytes": rx, "tx_bytes": 0, "rx_packets": k,
                                                     "tx_packets": 0, "rx_dropped": 0, "tx_dropped": 0}, rates))
    return out


def _points(records: list[dict]) -> list[Point]:
    return [Point.from_json(json.loads(P.dumps(r))) for r in records]


def test_table1_on_the_drive_trace():
    pts = _points(_records())
    summary = report_data(pts)
    (row,) = summary["table1"]
    trace = field_test_trace()
    sinr = [trace.truth_at(k % 50).sinr_db for k in range(100) if trace.truth_at(k % 50) is not None]
    assert row["seconds_logged"] == 100 and row["radio_samples"] == 94 and row["radio_missing_s"] == 6
    assert row["quality_metric"] == "sinr_db"                  # LTE: no CINR, so SINR (said so)
    assert row["quality_mean_db"] == round(statistics.mean(sinr), 3)
    assert row["quality_sd_db"] == round(statistics.stdev(sinr), 3)
    assert row["rtt_ms"] == round(statistics.mean(RTT), 3) and row["jitter_ms"] == round(statistics.mean(JIT), 3)
    assert row["bandwidth_kbps"] == round(statistics.mean(2.5e3 + (k % 7) for k in range(1, 100)), 3)
    assert row["download_kbps"] == pytest.approx(statistics.mean([1.8, 1.9, 1.9, 2.0, 2.1]) * 8e3, abs=1e-3)


def test_download_percentiles_match_numpy():
    pts = _points(_records())
    (pct,) = report_data(pts)["download_percentiles"]
    dl = [f.fields["dl_bps"] / 1e3 for f in pts if f.measurement == "field"]
    for q in PERCENTILES:
        assert pct[f"p{q}_kbps"] == pytest.approx(numpy.percentile(dl, q), abs=1e-3)
    assert pct["n"] == 100
    assert percentile([], 50) is None and percentile([3.0], 95) == 3.0


def test_handover_events_in_the_report_have_time_and_before_after():
    summary = report_data(_points(_records()))
    evs = summary["handovers"]["m1"]
    kinds = [(e["kind"], round(e["time"] - T0 / NS)) for e in evs]
    assert ("signal-dip", 10) in kinds and ("cell-change", 20) in kinds and ("technology-change", 40) in kinds
    # the looped trace goes back from B on EN-DC to A on LTE at 50 s: one event, the technology change
    assert ("technology-change", 50) in kinds and ("cell-change", 70) in kinds
    cc = next(e for e in evs if e["kind"] == "cell-change" and round(e["time"] - T0 / NS) == 20)
    assert (cc["before_time"], cc["after_time"]) == (T0 / NS + 19, T0 / NS + 20)   # last A sample, first B
    assert (cc["before_pci"], cc["after_pci"]) == (CELL_A.pci, CELL_B.pci)
    assert cc["dip_min_db"] == -20.0                         # the WiBro-style dip just before the new cell
    # the modem reset (30..32) is a gap, not a handover
    assert not any(29 <= round(e["time"] - T0 / NS) <= 33 for e in evs)
    row = summary["table1"][0]
    assert row["handovers"] == len(evs) and row["handovers_by_kind"]["cell-change"] == 2


def test_report_rebuilds_cell_identity_from_points():
    s = sample_from_point({"cell_id_int": CELL_B.eci, "pci": 295, "sinr_db": 4.0, "nr_pci": 747,
                                 "nr_technology": "nr5g"}, {"technology": "nr5g-nsa"})
    assert s.cell_key() == CELL_B.eci and s.secondary[0].pci == 747 and s.technology == "nr5g-nsa"
    assert sample_from_point({"cell_id_int": CELL_A.eci}, {"technology": "lte"}).secondary == ()


def test_report_text_and_figures(tmp_path):
    pts = _points(_records("m1") + _records("m2", 60))
    summary = report_data(pts)
    text = render_report(summary)
    assert "Table 1" in text and "SINR" in text and "m2" in text and "p95" in text
    # a handover's time in ISO 8601 with its zone (was `11:06:50`: no date, no zone)
    assert re.search(r"^  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  cell-change ", text, re.M), text
    figs = figures(summary, pts, tmp_path)
    assert figs == ["fig4_timeline.png", "download_cdf.png"]
    assert (tmp_path / "fig4_timeline.png").stat().st_size > 10_000


def test_write_report_on_a_record(tmp_path):
    rec = RunRecord(tmp_path, "R")
    rec.manifest = {"format_version": 1, "run_id": "R", "scenario": "field", "status": "stopped", "errors": [],
                    "phases": [], "parameters": {"hosts": ["m1"]}}
    rec.save()
    (rec.dir / "metrics.jsonl").write_text("".join(P.dumps(r) + "\n" for r in _records()))
    summary = write_report(rec)
    saved = json.loads((rec.dir / "summary.json").read_text())
    assert saved["table1"] == summary["table1"] and "definitions" in saved
    # a copied summary keeps which run it is of, as a scenario run's does (issue 25)
    prov = saved["provenance"]
    assert prov["run_id"] == "R" and prov["scenario"] == "field" and prov["status"] == "stopped"
    assert prov["parameters"] == {"given": {}, "values": {"hosts": ["m1"]}} and "ctl" in prov
    assert isinstance(saved["units"], dict)
    assert json.loads((rec.dir / "manifest.json").read_text())["figures"] == ["fig4_timeline.png", "download_cdf.png"]
