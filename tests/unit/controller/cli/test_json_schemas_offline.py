"""`--json` of the commands that need no rack and were validated by no test, against their shipped
schemas (controller/schemas/output/, from controller/schemas/outputs.py): `reproduce status`,
`reproduce report`, `reproduce compare`, `campaign report`, `report rtt-loss`, and `reproduce`
itself when it queues (not --dry-run).

The reproductions are the ones tests/unit/controller/reproduce/test_report.py builds: a quick
reproduction planned on the shipped virtual inventory and submitted to a real campaign store,
every run completed with a real record whose summary has the scenario's shape. The rtt-loss runs
are the recorded run of tests/fixtures/generated/runs/rtt-loss-sweep.
"""
from __future__ import annotations

import json
import shutil
import time

import jsonschema
import pytest

from controller.cli import main
from controller.results.records import load_manifest, summary_document
from controller.results.wire import naive_times
from controller.run.replay import summarize_record
from controller.schemas import OUTPUT_DIR
from controller.schemas.outputs import file_name
from tests.support.shipped import RECORDED_RUNS, isolated_ctl
from tests.unit.controller.reproduce.test_report import reproduction


def check(doc: dict, command: str) -> dict:
    schema = json.loads((OUTPUT_DIR / file_name(command)).read_text())
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(doc)
    assert doc["command"] == command
    assert naive_times(doc) == [], f"{command}: times without a zone or as Unix numbers at {naive_times(doc)}"
    return doc["data"]


@pytest.fixture(scope="module")
def state(invs, tmp_path_factory):
    """Two reproductions (the second with shifted values) in a state dir of the module's own."""
    tmp = tmp_path_factory.mktemp("offline")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CTL_STATE_DIR", str(tmp / "state"))
        a = reproduction(invs, tmp / "a")
        time.sleep(1.1)                 # reproduction ids carry the second
        b = reproduction(invs, tmp / "b", shift=0.2)
    return tmp, a, b


@pytest.fixture()
def ctl(state, monkeypatch, capsys):
    tmp = state[0]
    isolated_ctl(monkeypatch, tmp, tmp / "runs")

    def call(*argv: str) -> dict:
        code = main([*argv, "--json"])
        out, err = capsys.readouterr()
        assert code == 0, (argv, err)
        return json.loads(out)
    return call


def test_reproduce_status(state, ctl):
    _tmp, a, b = state
    latest = check(ctl("reproduce", "status"), "reproduce status")
    assert latest["id"] == b.id and latest["done"] == latest["runs"] > 0
    assert check(ctl("reproduce", "status", a.id), "reproduce status")["id"] == a.id


def test_reproduce_report(state, ctl, tmp_path):
    _tmp, a, _b = state
    d = check(ctl("reproduce", "report", a.id, "--out", str(tmp_path / "rep"), "--format", "svg"),
              "reproduce report")
    assert d["html"].startswith(str(tmp_path / "rep")) and d["figure_formats"] == ["svg"]
    assert {v["status"] for v in d["verdicts"]} and all(v["claim"] for v in d["verdicts"])


def test_reproduce_compare(state, ctl):
    _tmp, a, b = state
    d = check(ctl("reproduce", "compare", a.id, b.id), "reproduce compare")
    assert (d["a"], d["b"]) == (a.id, b.id) and d["cells"] and d["flagged"] >= 1


def test_campaign_report(state, ctl, tmp_path):
    _tmp, a, _b = state
    num = str(a.campaigns[0]["num"])
    d = check(ctl("campaign", "report", num, "--out", str(tmp_path / "camp")), "campaign report")
    assert d["html"].endswith(".html") and d["markdown"].endswith(".md")


def test_report_rtt_loss(ctl, tmp_path):
    runs = tmp_path / "runs"
    src = RECORDED_RUNS / "rtt-loss-sweep" / "rtt-40ms_loss-0.01pct_bbr"
    rec = runs / json.loads((src / "manifest.json").read_text())["run_id"]
    shutil.copytree(src, rec)
    # the cut-down record has no summary.json: the one `ctl run` writes, from the record by this ctl
    (rec / "summary.json").write_text(json.dumps(summary_document(summarize_record(rec), load_manifest(rec))))
    d = check(ctl("report", "rtt-loss", str(runs), "--out", str(tmp_path / "heat")), "report rtt-loss")
    assert len(d["runs"]) == 1 and d["figure"] is not None


def test_reproduce_queued_and_rerun_without_waiting(ctl, state, local_cc_build):
    if not (state[0] / "state" / "congestion").exists():
        local_cc_build(state[0] / "state")      # ctl's BPF build there, as after the rack's first run
    d = check(ctl("reproduce", "--smoke", "--papers", "mptcp-bt", "--no-wait"), "reproduce")
    assert d["id"] and len(d["campaign_ids"]) == 1 and d["runs"] >= 1 and d["campaigns"][0]["key"] == "mptcp-bt"
    num = check(ctl("reproduce", "status", d["id"]), "reproduce status")["campaigns"][0]["num"]
    check(ctl("campaign", "cancel", str(num)), "campaign cancel")
    r = check(ctl("reproduce", "rerun", d["id"], "--campaign", "mptcp-bt", "--no-wait"), "reproduce rerun")
    assert r["id"] == d["id"] and [(c["key"], c["replaces_num"]) for c in r["campaigns"]] == [("mptcp-bt", num)]
