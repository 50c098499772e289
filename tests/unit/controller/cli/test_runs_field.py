"""`ctl runs list|show|plot` on field runs (`ctl field start`), which live in the same runs directory
as scenario runs (controller/cli/runs.py, controller/cli/runs_plot.py).

Contract: `runs list --scenario field` lists the field runs (and only them); `runs show FIELD_RUN`
prints the field run's hosts, workload, times and the report `ctl field report` prints, computed
from the points fetched into the record, and its --json validates against the `runs show`
schema; `runs plot FIELD_RUN` draws the field figures (Fig. 4 timeline, download CDF) in the
formats asked for, into --out only (the record is only read); a field run with nothing fetched
is one line and exit 2.

The record: `field_record` below makes one as `ctl field start` does (controller.field.records.new_record),
with the points a logger writes of the drive trace (nodes/modem/emulator.field_test_trace, built from
the REAL qmicli/Quectel samples of tests/fixtures/recorded/02*, a TEST DOUBLE for a modem) and the
torrent progress of the real webtorrent-cli leecher output of tests/fixtures/recorded/generated/webtorrent/.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from controller.cli import main
from controller.field.options import FieldOptions
from controller.field.records import new_record
from controller.inventory import load_inventory
from controller.results.wire import naive_times
from controller.schemas import OUTPUT_DIR
from nodes.fieldlog import points as P
from tests.support.shipped import RECORDED_RUNS, ROOT, VIRTUAL, isolated_ctl
from tests.unit.controller.field.test_report import _records
from tests.unit.controller.cli.test_runs_plot import digest

SHARED_ID = "20261122T041817Z_shared-bottleneck_delay-800ms"


def field_record(root: Path, hosts: tuple[str, ...] = ("m2",), seconds: int = 60) -> Path:
    inv = load_inventory(VIRTUAL)
    rec = new_record(root, inv, list(hosts), FieldOptions(workload="torrent", torrent="/srv/payload.torrent"))
    with open(rec.dir / "metrics.jsonl", "w") as f:
        for h in hosts:
            f.writelines(P.dumps(r).replace('"run":"R"', f'"run":"{rec.id}"') + "\n" for r in _records(h, seconds))
    rec.manifest["status"] = "stopped"
    rec.save()
    return rec.dir


@pytest.fixture()
def runs(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    root.mkdir()
    shutil.copytree(RECORDED_RUNS / "shared-bottleneck" / "delay-800ms", root / SHARED_ID)
    isolated_ctl(monkeypatch, tmp_path, root)
    return root


@pytest.fixture()
def ctl(capsys):
    def call(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err
    return call


def check(doc: dict, command: str) -> dict:
    schema = json.loads((OUTPUT_DIR / f"{command.replace(' ', '-')}.schema.json").read_text())
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(doc)
    assert naive_times(doc) == []
    return doc["data"]


def test_list_finds_field_runs_by_scenario_and_status(runs, ctl):
    rec = field_record(runs)
    code, out, err = ctl("runs", "list", "--scenario", "field", "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    check(doc, "runs list")
    (r,) = doc["data"]
    assert (r["run_id"], r["scenario"], r["status"], r["valid"]) == (rec.name, "field", "stopped", None)
    assert r["started"].endswith("Z")
    code, out, _ = ctl("runs", "list", "--status", "stopped", "--json")
    assert [x["run_id"] for x in json.loads(out)["data"]] == [rec.name]
    code, out, _ = ctl("runs", "list", "--json")
    assert sorted(x["run_id"] for x in json.loads(out)["data"]) == sorted([rec.name, SHARED_ID])


def test_show_prints_the_field_report_from_the_record(runs, ctl):
    rec = field_record(runs, ("m1", "m2"))
    before = digest(rec)
    code, out, err = ctl("runs", "show", rec.name)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"field run {rec.name}: stopped"
    assert lines[1].startswith("hosts m1, m2; workload torrent; duration until stopped")
    assert "Table 1 (per host)" in out and "Download rate percentiles (kbit/s)" in out and "Handovers on m2" in out
    code, out, err = ctl("runs", "show", rec.name, "--json")
    assert code == 0
    doc = json.loads(out)
    check(doc, "runs show")
    d = doc["data"]
    assert d["scenario"] == "field" and d["provenance"]["run_id"] == rec.name
    assert [row["host"] for row in d["table1"]] == ["m1", "m2"] and d["table1"][0]["seconds_logged"] == 60
    assert d["units"]["rtt_ms"] == "ms" and d["units"]["download_kbps"] == "kbit/s"
    assert digest(rec) == before                         # only read: no summary.json, no figure written


def test_show_a_field_run_with_nothing_fetched_and_no_window(runs, ctl):
    rec = field_record(runs)
    code, out, err = ctl("runs", "show", rec.name, "--window", "0:10s")
    assert (code, out) == (2, "") and err.splitlines() == [
        f"ctl: error: runs show: {rec.name} is a field run: --window is for a scenario run's traffic"]
    (rec / "metrics.jsonl").unlink()
    code, out, err = ctl("runs", "show", rec.name)
    assert code == 0 and "no points fetched yet" in out
    code, out, err = ctl("runs", "plot", rec.name, "--out", str(runs.parent / "figs"))
    assert (code, out) == (2, "") and len(err.splitlines()) == 1 and "no points fetched yet" in err
    assert not (runs.parent / "figs").exists()


def test_plot_draws_the_field_figures_in_the_formats_asked_for(runs, ctl, tmp_path):
    rec = field_record(runs)
    before = digest(rec)
    out_dir = tmp_path / "figs"
    code, out, err = ctl("runs", "plot", rec.name, "--format", "pdf", "--format", "png", "--out", str(out_dir),
                         "--json")
    assert code == 0, err
    doc = json.loads(out)
    check(doc, "runs plot")
    files = sorted(Path(f).name for f in doc["data"]["files"])
    assert files == ["download_cdf.pdf", "download_cdf.png", "fig4_timeline.pdf", "fig4_timeline.png"]
    for f in doc["data"]["files"]:
        assert Path(f).stat().st_size > 5000
    assert (out_dir / "fig4_timeline.pdf").read_bytes().startswith(b"%PDF")
    assert digest(rec) == before


# ---- a field run recorded by ctl on the virtual rack (tests/fixtures/generated/field/README.md) ----------------

FIELD = ROOT / "tests" / "fixtures" / "generated" / "field" / "iperf3-m2"
FIELD_ID = json.loads((FIELD / "manifest.json").read_text())["run_id"]


@pytest.fixture()
def recorded(runs):
    shutil.copytree(FIELD, runs / FIELD_ID)
    return runs / FIELD_ID


def test_the_recorded_field_run_is_listed_shown_and_plotted(recorded, runs, ctl, tmp_path):
    before = digest(recorded)
    code, out, err = ctl("runs", "list", "--scenario", "field", "--json")
    assert code == 0 and [r["run_id"] for r in json.loads(out)["data"]] == [FIELD_ID]
    code, out, err = ctl("runs", "show", FIELD_ID)
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == [f"field run {FIELD_ID}: completed",
                                    "hosts m2; workload iperf3; duration 25 s; iperf3 server 10.135.0.1:5835; "
                                    "ping 10.135.0.1"]
    code, out, err = ctl("runs", "show", FIELD_ID, "--json")
    doc = json.loads(out)
    check(doc, "runs show")
    # the report computed from the record is the one `ctl field report` wrote into it
    own = json.loads((recorded / "summary.json").read_text())
    assert doc["data"]["table1"] == own["table1"] and doc["data"]["download_percentiles"] == own["download_percentiles"]
    assert doc["data"]["handovers"] == own["handovers"] and doc["data"]["provenance"]["status"] == "completed"
    code, out, err = ctl("runs", "plot", FIELD_ID, "--format", "pdf", "--out", str(tmp_path / "f"), "--json")
    assert code == 0, err
    files = check(json.loads(out), "runs plot")["files"]
    assert sorted(Path(f).name for f in files) == ["download_cdf.pdf", "fig4_timeline.pdf"]
    assert all(Path(f).read_bytes().startswith(b"%PDF") for f in files)
    assert digest(recorded) == before
