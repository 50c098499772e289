"""Every command has `--json` (issue 25: "one `--json` envelope for every command, a JSON Schema for
each"), and the four that had none print it as their schema says: `ctl inventory init`, `ctl rack
cancel`, `ctl campaign export` and `ctl campaign daemon`.

The walk reads the real parser (controller.cli.build_parser): every command a user can run, leaf or
a group that runs by itself (`ctl scenarios`, `ctl reproduce`), has a `--json` flag with a help text
and a shipped schema (controller/schemas/output/); `ctl parse` prints JSON always (it has no other
output) and is the one without the flag. `ctl lab up|down --json` run on a real rack in
tests/integration/test_lab_json.py.
"""
from __future__ import annotations

import argparse
import shutil
import time

import pytest
import yaml

from controller.campaign.policy import Decision
from controller.campaign.sqlite_store import SQLiteStore
from controller.cli import build_parser, main
from controller.cli.campaign import _daemon_json
from controller.cli.common import envelope
from controller.inventory_check import check_file
from controller.results.records import RunRecord
from controller.schemas.outputs import OUTPUTS
from tests.support.shipped import ROOT, isolated_ctl, json_cli
from tests.unit.controller.cli.test_json_envelope import check

ALWAYS_JSON = {"parse"}     # prints the envelope with no flag: JSON is its only output


def runnable_commands(p: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """(command words, parser) of every command a user can run: each leaf, and each group whose
    subcommand is optional (it runs by itself)."""
    sub = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
    if words and (sub is None or not sub.required):
        yield " ".join(words), p
    if sub is not None:
        for name, sp in sub.choices.items():
            yield from runnable_commands(sp, (*words, name))


def test_every_command_has_json_with_help_and_a_schema():
    commands = dict(runnable_commands(build_parser("*")))
    assert {"run", "scenarios", "reproduce", "campaign daemon", "lab up", "parse"} <= set(commands)
    without = sorted(c for c, p in commands.items() if "--json" not in p._option_string_actions)
    assert without == sorted(ALWAYS_JSON), "commands without --json"
    for c, p in commands.items():
        if c in ALWAYS_JSON:
            continue
        action = p._option_string_actions["--json"]
        assert action.help and action.help != argparse.SUPPRESS, f"ctl {c} --json has no help text"
        assert c in OUTPUTS, f"ctl {c} --json has no schema (controller/schemas/outputs.py OUTPUTS)"
    assert sorted(OUTPUTS) == sorted(commands), "a schema for a command that does not exist, or one missing"


def test_the_walk_finds_a_command_without_json():
    p = argparse.ArgumentParser(prog="x")
    sub = p.add_subparsers(dest="c", required=True)
    sub.add_parser("a").add_argument("--json", action="store_true", help="h")
    sub.add_parser("b")
    found = dict(runnable_commands(p))
    assert sorted(found) == ["a", "b"] and "--json" not in found["b"]._option_string_actions


@pytest.fixture()
def ctl(tmp_path, monkeypatch, capsys):
    isolated_ctl(monkeypatch, tmp_path)
    monkeypatch.setenv("CTL_LOCK_DIR", str(tmp_path / "locks"))
    return json_cli(capsys)


# ---- inventory init ---------------------------------------------------------------------------------

def test_inventory_init_printed_and_written(ctl, tmp_path):
    doc = ctl("inventory", "init", "--name", "lab2", "--hosts", "snd", "rcv@192.168.1.11", "shp:bridge")
    check(doc, "inventory init")
    d = doc["data"]
    assert d["file"] is None and d["name"] == "lab2" and d["shaper"] == "dummynet"
    assert d["hosts"] == [{"name": "snd", "role": "endpoint", "address": None},
                          {"name": "rcv", "role": "endpoint", "address": "192.168.1.11"},
                          {"name": "shp", "role": "bridge", "address": None}]
    lines = d["text"].splitlines()
    assert [p["value"] for p in d["to_fill"]] == ["<management address of snd>", "<management address of shp>"]
    assert all(p["value"] in lines[p["line"] - 1] for p in d["to_fill"])
    # what is left to fill is what `inventory check` refuses, line for line
    f = tmp_path / "lab2.yaml"
    doc = ctl("inventory", "init", str(f), "--hosts", "snd@192.168.1.10", "rcv@192.168.1.11", "shp:bridge", "--shaper",
              "tc")
    check(doc, "inventory init")
    assert doc["data"]["file"] == str(f) and f.read_text() == doc["data"]["text"]
    assert doc["data"]["name"] == "lab2" and [p["line"] for p in doc["data"]["to_fill"]] == \
        [e.line for e in check_file(f).errors] and len(doc["data"]["to_fill"]) == 1
    yaml.safe_load(doc["data"]["text"])
    # never over an existing file: bad input, nothing on stdout
    assert main(["inventory", "init", str(f), "--hosts", "a", "b", "c:bridge", "--json"]) == 2


# ---- rack cancel (real PostgreSQL lab database) ----------------------------------------------------------

def test_rack_cancel(ctl, pg_url, monkeypatch):
    monkeypatch.setenv("CTL_DATABASE_URL", pg_url)
    start = time.strftime("%Y-%m-%dT%H:%M", time.localtime(time.time() + 7200))
    booked = ctl("rack", "reserve", "virtual", "--from", start, "--for", "10m", "--note", "calibration")["data"]
    doc = ctl("rack", "cancel", str(booked["id"]))
    check(doc, "rack cancel")
    assert {k: doc["data"][k] for k in ("id", "rack", "note", "start", "end")} == \
        {k: booked[k] for k in ("id", "rack", "note", "start", "end")}
    assert ctl("rack", "reservations")["data"] == []
    assert main(["rack", "cancel", str(booked["id"]), "--json"]) != 0     # gone: nothing to cancel


# ---- campaign export and daemon (the local store) --------------------------------------------------------

def _completed_campaign(ctl, runs) -> tuple[int, list[RunRecord]]:
    """A campaign submitted as a user would, every run finished with a real record (no rack)."""
    sub = ctl("campaign", "submit", str(ROOT / "campaigns" / "distinct-bottleneck-link2.yaml"))["data"]
    store = SQLiteStore()
    records = []
    try:
        for run in store.runs(sub["num"]):
            rec = RunRecord(runs, f"20260101T000000Z_export-{run.seq}")
            rec.start(scenario="distinct-bottleneck", parameters={}, inventory={"name": "virtual"}, inventory_file="",
                      campaign=sub["id"])
            rec.write_json("summary.json", {"scenario": "distinct-bottleneck", "jain_index": 0.9})
            rec.finish("completed")
            store.start_attempt(sub["num"], run.seq, rec.id, rec.dir, None)
            store.finish_attempt(sub["num"], run.seq, 1, status="completed", exit_code=0, error=None, klass="ok",
                                 decision=Decision("done", "done"))
            records.append(rec)
        store.finish_campaign(sub["num"])
    finally:
        store.close()
    return sub["num"], records


def test_campaign_export_and_a_record_missing(ctl, tmp_path):
    num, records = _completed_campaign(ctl, tmp_path / "runs")
    doc = ctl("campaign", "export", str(num), "--out", str(tmp_path / "out"))
    check(doc, "campaign export")
    d = doc["data"]
    n = len(records)
    assert (d["num"], d["written"], d["copied_local"], d["completed"], d["missing"]) == (num, n, n, n, [])
    assert sorted(p.parent.name for p in (tmp_path / "out").glob("*/summary.json")) == sorted(r.id for r in records)
    shutil.rmtree(records[0].dir)               # a record that is nowhere: said, exit 1
    doc = ctl("campaign", "export", str(num), "--out", str(tmp_path / "out2"), code=1)
    check(doc, "campaign export")
    assert doc["data"]["written"] == n - 1 and [m["run_id"] for m in doc["data"]["missing"]] == [records[0].id]


def test_campaign_daemon_idle(ctl, tmp_path):
    num, _ = _completed_campaign(ctl, tmp_path / "runs")
    doc = ctl("campaign", "daemon", "--exit-when-idle")          # bound to $CTL_INVENTORY: the virtual rack
    check(doc, "campaign daemon")
    d = doc["data"]
    assert d["exit"] == "idle" and d["campaigns"] == [] and d["rack"] == "virtual" and d["started"] <= d["ended"]
    # what a daemon that drove a campaign prints when stopped (its data built from the store's rows)
    store = SQLiteStore()
    try:
        c = store.campaign(num)
        data = _daemon_json(store, None, time.time() - 5, "SIGTERM", {num: (c, None)})
    finally:
        store.close()
    doc = envelope(data, command="campaign daemon")
    check(doc, "campaign daemon")
    row = doc["data"]["campaigns"][0]
    assert doc["data"]["exit"] == "SIGTERM" and row["num"] == num and row["state"] == "done"
    assert row["done"] == row["total"] > 0 and row["failed"] == row["pending"] == 0
