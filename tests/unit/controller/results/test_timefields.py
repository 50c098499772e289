"""Record format 2: one time form in manifest.json, commands.jsonl and processes.jsonl
(controller/results/timefields.py, controller/results/records.py).

Contract: every declared time is written ISO 8601 UTC with microseconds and a `Z` and read back as
the number it was, to the microsecond; nothing else is touched; a format-1 record (numbers, a
zone-less `host_start`) and the same record written as format 2 read to the same numbers, through
every reader (manifest, command log, process journal, the campaign store's copy, the summary,
the replayed summary); a newer format is refused with the versions named.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from controller.campaign.boundary import UntrustedRow, record_row
from controller.errors import RecordError
from controller.results.records import (FORMAT_VERSION, RunRecord, command_line, encode_manifest, load_manifest,
                                        manifest_from, process_line, read_jsonl, summary_document)
from controller.results.timefields import (COMMAND_TIMES, FILES, MANIFEST_TIMES, PROCESS_TIMES, decode, encode,
                                           iso_seconds, lstart_utc, wire_path)
from controller.results.wire import iso_utc

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "generated"
RUN_FIXTURES = sorted(p.parent for p in (FIXTURES / "runs").glob("*/*/manifest.json"))
FIELD = FIXTURES / "field" / "iperf3-m2"
# processes.jsonl as format 1 wrote it (a line of runs/20261127T122946Z_rtt-loss-sweep_..., verbatim)
V1_PROCESS = ('{"host": "br1", "pid": 21889, "argv0": "python3", "argv": ["python3", "-u", "-c", "x"], '
              '"program": "python3", "host_start": "Fri Nov 27 12:29:46 2026", "note": "clock offset", '
              '"started": 1795782587.011612}')

seconds = st.floats(min_value=0, max_value=4e9, allow_nan=False, allow_infinity=False)


@settings(max_examples=500, deadline=None)
@given(seconds)
def test_a_time_round_trips_to_the_microsecond(x):
    wire = encode({"created": x}, ("created",))["created"]
    assert wire == iso_utc(x) and wire.endswith("Z") and len(wire) == 27
    back = decode({"created": wire}, ("created",))["created"]
    assert isinstance(back, float) and abs(back - x) <= 1e-6
    assert iso_utc(back) == wire            # the same microsecond: writing it again changes nothing


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=4 * 10**18))
def test_a_nanosecond_time_is_written_without_its_suffix_and_read_back_to_the_microsecond(ns):
    doc = {"telemetry": {"snmp_events": [{"kind": "agent_error", "time_ns": ns}]}}
    wire = encode(doc, MANIFEST_TIMES)["telemetry"]["snmp_events"][0]
    assert set(wire) == {"kind", "time"} and wire["time"].endswith("Z")
    back = decode({"telemetry": {"snmp_events": [wire]}}, MANIFEST_TIMES)["telemetry"]["snmp_events"][0]
    assert back == {"kind": "agent_error", "time_ns": ns // 1000 * 1000}
    assert doc["telemetry"]["snmp_events"][0]["time_ns"] == ns          # the input is not changed


def _doc_at(path: str, value: float) -> dict:
    """A document with `value` at `path` (every `*` a key `k`, every list one element)."""
    steps = []
    for seg in path.split("."):
        name, _, rest = seg.partition("[")
        steps.append(("key", "k" if name == "*" else name))
        for idx in ("[" + rest).split("[")[1:] if rest else ():
            steps.append(("index", int(idx[:-1]) if idx[:-1] else 0))
    node: object = value
    for kind, arg in reversed(steps):
        node = {arg: node} if kind == "key" else [None] * arg + [node]
    assert isinstance(node, dict)
    return node


@pytest.mark.parametrize("name", sorted(FILES))
def test_every_declared_time_is_written_iso_and_read_back(name):
    for path in FILES[name]:
        ns = path.endswith("_ns")
        x = 1795782598504719300 if ns else 1795782598.5047193
        doc = _doc_at(path, x)
        wire = encode(doc, FILES[name])
        text = "2026-11-27T12:29:58.504719Z"
        assert json.dumps(wire).count(f'"{text}"') == 1, path
        assert _doc_at(wire_path(path), text) == wire, path
        back = decode(wire, FILES[name])
        assert back == _doc_at(path, 1795782598504719000 if ns else iso_seconds(text)), path


def test_only_declared_times_change():
    doc = {"created": 1795782586.4, "duration": 3.2, "traffic_s": 1795782586.4, "run_id": "r", "phases": [],
           "errors": [{"t": None, "error": "x"}], "flows": [{"client_started": 1795782587.0, "client_pid": 1795782587,
                                                          "spec": {"start_delay_s": 0.5}}],
           "clock_offsets": {"start": [{"measured_at": 1795782590.25, "rtt_s": 0.0004}]}}
    wire = encode(doc, MANIFEST_TIMES)
    assert wire["traffic_s"] == 1795782586.4 and wire["duration"] == 3.2 and wire["flows"][0]["client_pid"] == 1795782587
    assert wire["errors"] == [{"t": None, "error": "x"}] and wire["flows"][0]["spec"] == {"start_delay_s": 0.5}
    assert wire["created"] == "2026-11-27T12:29:46.400000Z" and wire["flows"][0]["client_started"].endswith("Z")
    assert wire["clock_offsets"]["start"][0] == {"measured_at": "2026-11-27T12:29:50.250000Z", "rtt_s": 0.0004}
    assert decode(wire, MANIFEST_TIMES) == doc
    assert decode(doc, MANIFEST_TIMES) == doc           # format 1: numbers read as they are


def _epoch_floats(obj, path=""):
    """Where a written document still has a float that looks like Unix seconds (2001..5138)."""
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _epoch_floats(v, f"{path}.{k}")]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in _epoch_floats(v, f"{path}[{i}]")]
    return [path] if isinstance(obj, float) and 1e9 <= obj < 1e11 else []


def _rewritten(src: Path, tmp: Path) -> Path:
    """A copy of a format-1 record written again by this ctl (format 2), as recovery or a re-summary would."""
    d = tmp / src.name
    shutil.copytree(src, d)
    rec = RunRecord.open(d)
    rec.save()
    return d


@pytest.mark.parametrize("src", RUN_FIXTURES + [FIELD], ids=lambda p: p.name)
def test_a_format_1_record_and_the_same_record_in_format_2_read_to_the_same_numbers(src, tmp_path):
    raw1 = json.loads((src / "manifest.json").read_text())
    assert raw1["format_version"] == 1 and _epoch_floats(raw1)      # a recorded sample of format 1
    d = _rewritten(src, tmp_path)
    raw2 = json.loads((d / "manifest.json").read_text())
    assert raw2["format_version"] == FORMAT_VERSION == 2
    assert _epoch_floats(raw2) == []
    m1, m2 = load_manifest(src), load_manifest(d)
    first = (lambda m: m["created"]) if "created" in raw1 else (lambda m: m["traffic_window"]["start"])
    assert first(m1) == first(raw1) and isinstance(first(m2), float) and abs(first(m2) - first(m1)) <= 1e-6
    assert isinstance(first(raw2), str) and first(raw2).endswith("Z")
    assert encode_manifest(m1) == encode_manifest(m2)      # every value equal, every time to the microsecond
    # summary.json's provenance (its traffic duration from the times as written) is the same
    assert summary_document({"scenario": "x"}, m1) == summary_document({"scenario": "x"}, m2)


@pytest.mark.parametrize("src", RUN_FIXTURES, ids=lambda p: p.name)
def test_the_replayed_summary_is_the_same_from_either_format(src, tmp_path):
    from controller.run.replay import summarize_record
    assert summarize_record(_rewritten(src, tmp_path)) == summarize_record(src)


def test_the_command_log_of_either_format_reads_to_the_same_numbers(tmp_path):
    v1 = read_jsonl(FIELD / "commands.jsonl")
    assert v1 and all(isinstance(c["started"], float) for c in v1)
    f2 = tmp_path / "commands.jsonl"
    f2.write_text("".join(json.dumps(command_line(c)) + "\n" for c in v1) + '{"host": "m2", "argv": ["x"')   # torn
    assert all(json.loads(line)["started"].endswith("Z") for line in f2.read_text().splitlines()[:-1])
    v2 = read_jsonl(f2)
    assert [encode(c, COMMAND_TIMES) for c in v2] == [encode(c, COMMAND_TIMES) for c in v1]
    assert all(abs(a["started"] - b["started"]) <= 1e-6 for a, b in zip(v1, v2, strict=True))


def test_a_process_journal_of_either_format(tmp_path):
    (tmp_path / "processes.jsonl").write_text(V1_PROCESS + "\n")
    [old] = read_jsonl(tmp_path / "processes.jsonl")
    # format 1's start on the host had no zone: kept for recovery's comparison with ps, not as a time
    assert "host_start" not in old and old["host_start_local"] == "Fri Nov 27 12:29:46 2026"
    assert old["started"] == 1795782587.011612
    new = {**old, "host_start": lstart_utc("Fri Nov 27 12:29:46 2026")}
    del new["host_start_local"]
    line = process_line(new)
    assert line["host_start"] == "2026-11-27T12:29:46.000000Z" and line["started"] == "2026-11-27T12:29:47.011612Z"
    (tmp_path / "processes.jsonl").write_text(V1_PROCESS + "\n" + json.dumps(line) + "\n")
    old2, new2 = read_jsonl(tmp_path / "processes.jsonl")
    assert old2 == old and new2 == {**new, "started": pytest.approx(old["started"], abs=1e-6)}
    assert new2["host_start"] == 1795782586.0 and PROCESS_TIMES == ("started", "host_start")


def test_a_manifest_with_a_format_1_process_is_migrated_and_written_without_a_zone_less_time(tmp_path):
    m = manifest_from({"format_version": 1, "created": 1795782586.4, "processes": [json.loads(V1_PROCESS)]}, "t")
    assert m["format_version"] == 2 and m["processes"][0]["host_start_local"] == "Fri Nov 27 12:29:46 2026"
    wire = encode_manifest(m)
    assert "host_start" not in wire["processes"][0] and wire["processes"][0]["started"].endswith("Z")


def test_lstart_under_utc():
    assert lstart_utc("Fri Nov 27 12:29:46 2026") == 1795782586.0
    assert lstart_utc("Tue  Nov  3 01:02:03 2026\n") == lstart_utc("Tue Nov 3 01:02:03 2026")     # ps pads
    assert lstart_utc("") is None and lstart_utc(None) is None and lstart_utc("27.11.2026 12:29") is None


def test_a_newer_format_is_refused_everywhere(tmp_path):
    newer = {"format_version": FORMAT_VERSION + 1, "run_id": "r", "status": "completed"}
    with pytest.raises(RecordError, match=f"format {FORMAT_VERSION + 1} is newer than this ctl understands "
                                          f"\\({FORMAT_VERSION}\\); upgrade ctl"):
        manifest_from(newer, "x")
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "manifest.json").write_text(json.dumps(newer))
    with pytest.raises(RecordError, match="newer than this ctl understands"):
        load_manifest(tmp_path / "r")
    row = {"run_id": "20261127T122946Z_x", "campaign": 1, "seq": 1, "attempt": 1, "rack": None, "status": "completed",
           "record_dir": "/runs/r", "controller": None, "uploaded": 1795782586.0, "summary_json": None,
           "manifest_json": json.dumps(newer)}
    with pytest.raises(UntrustedRow, match="newer than this ctl understands"):
        record_row(row)


def test_the_campaign_stores_copy_of_a_manifest_reads_as_the_record(tmp_path):
    m1 = load_manifest(RUN_FIXTURES[0])
    base = {"run_id": "20261127T122946Z_x", "campaign": 1, "seq": 1, "attempt": 1, "rack": None,
            "status": "completed", "record_dir": "/runs/r", "controller": None, "uploaded": 1795782586.0,
            "summary_json": None}
    stored2 = json.dumps(encode_manifest(m1))              # what put_record stores now
    assert _epoch_floats(json.loads(stored2)) == []
    stored1 = (RUN_FIXTURES[0] / "manifest.json").read_text()    # what it stored before (format 1)
    a, b = record_row({**base, "manifest_json": stored2}), record_row({**base, "manifest_json": stored1})
    assert encode_manifest(a["manifest"]) == encode_manifest(b["manifest"]) == encode_manifest(m1)
