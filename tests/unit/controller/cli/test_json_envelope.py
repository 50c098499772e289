"""One `--json` envelope for every command, and a shipped JSON Schema for each command's output
(controller/cli/common.py, controller/schemas/outputs.py).

Contract: every command that can run without a rack prints, with --json, exactly one JSON
document on stdout: {format, command, ctl: {version, commit}, time, data}, which validates
against controller/schemas/output/<command>.schema.json; no time in it is a Unix number or a
date-time without a zone; the shipped schema files are the ones the models generate.
"""
from __future__ import annotations

import json
import shutil

import jsonschema
import pytest

from controller.cli import main
from controller.cli.common import envelope
from controller.results.wire import naive_times
from controller.schemas import OUTPUT_DIR, output_targets
from controller.schemas.outputs import OUTPUTS, file_name
from tests.support.shipped import RECORDED_RUNS, ROOT, VIRTUAL, isolated_ctl

SHARED = RECORDED_RUNS / "shared-bottleneck" / "delay-800ms"
SHARED_ID = "20261122T041817Z_shared-bottleneck_delay-800ms"
IPERF3 = ROOT / "tests" / "fixtures" / "recorded" / "generated" / "iperf3_tcp_1stream.client.json"


@pytest.fixture()
def env(tmp_path, monkeypatch):
    """A state dir and runs dir of the test's own (one recorded run in it), the virtual inventory."""
    runs = tmp_path / "runs"
    shutil.copytree(SHARED, runs / SHARED_ID)
    isolated_ctl(monkeypatch, tmp_path, runs)
    monkeypatch.delenv("CTL_DATABASE_URL", raising=False)
    return tmp_path


def run_json(capsys, *argv: str, codes: tuple[int, ...] = (0,)) -> dict:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code in codes, (argv, code, err)
    return json.loads(out)


def check(doc: dict, command: str) -> None:
    schema = json.loads((OUTPUT_DIR / file_name(command)).read_text())
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(doc)
    assert doc["command"] == command
    assert naive_times(doc) == [], f"{command}: times without a zone or as Unix numbers at {naive_times(doc)}"


def test_shipped_output_schemas_are_the_generated_ones():
    stale = [p.name for p, text in output_targets().items() if not p.exists() or p.read_text() != text]
    assert stale == [], "run `python -m controller.schemas`"
    assert sorted(p.name for p in OUTPUT_DIR.glob("*.schema.json")) == sorted(file_name(c) for c in OUTPUTS)


def test_the_envelope():
    doc = envelope({"created": 1795321100.3819656, "t_ns": 1795321099174945252, "rows": [float("nan")]},
                   command="runs list", now=1795321100.0)
    assert doc["format"] == 1 and doc["command"] == "runs list" and doc["time"] == "2026-11-22T04:18:20.000000Z"
    assert set(doc["ctl"]) == {"version", "commit"}
    # Unix seconds become ISO 8601 UTC; a documented *_ns field stays; NaN (not JSON) is null
    assert doc["data"] == {"created": "2026-11-22T04:18:20.381966Z", "t_ns": 1795321099174945252, "rows": [None]}


# (argv without --json, the command words the envelope names)
OFFLINE = [
    (("scenarios",), "scenarios"),
    (("scenarios", "show", "shared-bottleneck"), "scenarios show"),
    (("config", "show"), "config show"),
    (("lab", "status"), "lab status"),
    (("inventory", "check", str(VIRTUAL)), "inventory check"),
    (("campaign", "plan", str(ROOT / "campaigns" / "mcubic-table1.yaml")), "campaign plan"),
    (("campaign", "status"), "campaign status"),
    (("runs", "list"), "runs list"),
    (("runs", "show", SHARED_ID), "runs show"),
]


@pytest.mark.parametrize("argv,command", OFFLINE, ids=[c for _, c in OFFLINE])
def test_every_offline_json_output_validates(env, capsys, argv, command):
    # `lab status` exits 1 when the rack is down (it is: nothing was built here)
    check(run_json(capsys, *argv, "--json", codes=(0, 1) if command == "lab status" else (0,)), command)


def test_parse_prints_the_envelope(env, capsys):
    doc = run_json(capsys, "parse", "iperf3", str(IPERF3))
    assert doc["command"] == "parse iperf3"
    schema = json.loads((OUTPUT_DIR / file_name("parse")).read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert naive_times(doc) == []


def test_campaign_commands_on_the_local_store(env, capsys):
    f = ROOT / "campaigns" / "distinct-bottleneck-link2.yaml"
    sub = run_json(capsys, "campaign", "submit", str(f), "--json")
    check(sub, "campaign submit")
    num = str(sub["data"]["num"])
    check(run_json(capsys, "campaign", "status", num, "--json"), "campaign status")
    check(run_json(capsys, "campaign", "status", "--json"), "campaign status")
    check(run_json(capsys, "campaign", "pause", num, "--json"), "campaign pause")
    check(run_json(capsys, "campaign", "resume", num, "--no-wait", "--json"), "campaign resume")
    check(run_json(capsys, "campaign", "cancel", num, "--json"), "campaign cancel")


def test_run_dry_run_json_is_json(env, capsys):
    doc = run_json(capsys, "run", "distinct-bottleneck", "--link2", "20M", "--dry-run", "--json")
    check(doc, "run")
    assert doc["data"]["dry_run"] is True and doc["data"]["commands"]


def test_runs_export_json(env, capsys, tmp_path):
    doc = run_json(capsys, "runs", "export", SHARED_ID, "--out", str(tmp_path / "x"), "--no-samples", "--json")
    check(doc, "runs export")
    assert doc["data"]["runs"] == 1 and doc["data"]["files"]["runs.csv"] == 1


def test_reproduce_dry_run_json(env, capsys):
    check(run_json(capsys, "reproduce", "--quick", "--dry-run", "--json"), "reproduce")


def test_service_install_dry_run_json(env, capsys, tmp_path):
    doc = run_json(capsys, "service", "install", "--dry-run", "--dest", str(tmp_path / "units"), "--json")
    check(doc, "service install")
    assert not (tmp_path / "units").exists() and any(k.endswith("ctl-campaign.service") for k in doc["data"]["units"])
