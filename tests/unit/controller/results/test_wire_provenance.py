"""What leaves ctl: ISO 8601 UTC times and units (controller/results/wire.py), and summary.json's
provenance as the run record writes it (controller/results/records.py).

Contract: a number under a key that names an instant, in the range of Unix seconds or
nanoseconds, becomes ISO 8601 UTC; durations (`_s`), `_ns` machine fields and other numbers
stay; a summary.json names its run, times, ctl version and commit, inventory, parameters and
the unit of every numeric field, and says the run's final status once the record is closed.
"""
from __future__ import annotations

import json

import pytest

from controller.results.catalog import parse_when
from controller.results.records import RunRecord, id_time, load_manifest, summary_document
from controller.results.wire import iso_utc, iso_utc_ns, naive_times, to_wire, unit_of, units_of
from controller.version import commit, version
from controller.errors import UsageError


def test_iso_utc():
    assert iso_utc(1795321100.3819656) == "2026-11-22T04:18:20.381966Z"
    assert iso_utc_ns(1795321099174945252) == "2026-11-22T04:18:19.174945Z"
    assert iso_utc(0.0) == "1970-01-01T00:00:00.000000Z"


def test_to_wire_converts_instants_by_name_only():
    doc = {"created": 1795321100.38, "overlap": {"start": 1795321250.3842442, "end": 1795321263, "seconds": 13.0},
           "m0_data_start": 1795321248.3842442, "estimated_finish": 1795675738.3186324, "t": 1795321099174945252,
           "t_ns": 1795321099174945252, "start_s": 10.0, "bytes_received": 1720636752, "eta_s": 1795321100.0,
           "phases": [{"phase": "x", "t": 1795321100.0}], "seq": 1795321100, "bad": float("inf"),
           "not_a_time": "2026-11-22 04:18:17", "zoned": "2026-11-22T04:18:17+09:00"}
    w = to_wire(doc)
    assert w["created"] == "2026-11-22T04:18:20.380000Z"
    assert w["overlap"] == {"start": "2026-11-22T04:20:50.384244Z", "end": "2026-11-22T04:21:03.000000Z",
                            "seconds": 13.0}
    assert w["m0_data_start"] == "2026-11-22T04:20:48.384244Z" and w["estimated_finish"].endswith("Z")
    assert w["t"] == "2026-11-22T04:18:19.174945Z" and w["t_ns"] == 1795321099174945252    # documented machine field
    assert (w["start_s"], w["bytes_received"], w["eta_s"], w["seq"]) == (10.0, 1720636752, 1795321100.0, 1795321100)
    assert w["phases"][0]["t"] == "2026-11-22T04:18:20.000000Z" and w["bad"] is None
    assert naive_times(w) == ["not_a_time"]            # a time without a zone cannot be converted: it is found
    assert {"not_a_time", "created", "overlap.start", "t", "phases[0].t"} <= set(naive_times(doc))


@pytest.mark.parametrize("field, unit", [
    ("receiver_mbps", "Mbit/s"), ("rx_bps", "bit/s"), ("rtt_ms", "ms"), ("duration_s", "s"), ("share_pct", "%"),
    ("error_pp", "percentage points"), ("bytes_acked", "bytes"), ("rx_bytes", "bytes"), ("cwnd_pkts", "packets"),
    ("rsrp_dbm", "dBm"), ("retransmits", "segments"), ("jain_index", "1"), ("t_ns", "ns"), ("alt_m", "m"),
    ("per_connection.bytes_min", None), ("cc", None), ("negotiated", None), ("name", None),
])
def test_unit_of(field, unit):
    assert unit_of(field) == unit


def test_units_of_a_summary():
    s = {"ratio": 1.3, "connections": [{"sender_mbps": 4.3, "sender_bytes": 17, "cc": "cubic"}],
         "window": {"start_s": 1.0}, "valid": True}
    assert units_of(s) == {"ratio": "1", "sender_bytes": "bytes", "sender_mbps": "Mbit/s", "start_s": "s"}


def test_summary_json_carries_its_provenance(tmp_path):
    rec = RunRecord(tmp_path, "20261122T041817Z_shared-bottleneck_delay-800ms")
    rec.start(scenario="shared-bottleneck", parameters={"values": {"delay": 800000, "bw": 100000000},
                                                       "given": {"delay": "800ms"}},
              inventory={"name": "vunit"}, inventory_file="/x/vunit.yaml", campaign=None)
    rec.manifest["traffic_window"] = {"start": 1795321100.3819656, "end": 1795321131.6823382}
    summary = {"scenario": "shared-bottleneck", "ratio": 1.306, "overlap": {"start": 1795321101.5},
               "connections": [{"connection": "tcp", "sender_mbps": 3.333}], "valid": True}
    rec.write_summary(summary)
    s = json.loads((rec.dir / "summary.json").read_text())
    p = s["provenance"]
    assert p["run_id"] == rec.id and p["scenario"] == "shared-bottleneck" and p["status"] == "running"
    assert p["ctl"] == {"version": version(), "commit": commit()}
    assert p["inventory"] == {"name": "vunit", "file": "/x/vunit.yaml"}
    assert p["parameters"] == {"given": {"delay": "800ms"}, "values": {"delay": 800000, "bw": 100000000}}
    assert p["traffic"] == {"start": "2026-11-22T04:18:20.381966Z", "end": "2026-11-22T04:18:51.682338Z",
                            "duration_s": 31.300372}     # of the times as written (record format 2)
    assert p["started"].endswith("Z") and p["finished"] is None and p["summary_format"] == 1
    assert s["units"] == {"ratio": "1", "sender_mbps": "Mbit/s"}
    assert s["overlap"] == {"start": "2026-11-22T04:18:21.500000Z"} and s["ratio"] == 1.306
    assert summary["overlap"]["start"] == 1795321101.5          # the caller's summary is left as it was
    rec.finish("completed")
    s = json.loads((rec.dir / "summary.json").read_text())
    assert s["provenance"]["status"] == "completed" and s["provenance"]["finished"].endswith("Z")
    assert naive_times(s) == []
    # what `ctl runs show --json` prints for the record is the same document
    assert s == summary_document(summary, load_manifest(rec.dir))


def test_run_id_time():
    assert id_time("20261122T041817Z_shared-bottleneck_delay-800ms") == 1795321097
    assert id_time("delay-800ms") is None


def test_parse_when():
    now = 1795321100.0
    assert parse_when("2026-11-22T04:18:20Z", "--since", now) == 1795321100.0
    assert parse_when("2026-11-22T13:18:20+09:00", "--since", now) == 1795321100.0
    assert parse_when("2026-11-22", "--since", now) == 1795305600.0
    assert parse_when("1h", "--since", now) == now - 3600
    for bad in ("2026-11-22T04:18", "tomorrow", "2026-13-40T00:00Z"):
        with pytest.raises(UsageError):
            parse_when(bad, "--since", now)
