"""The data dictionary of `ctl runs export` (columns.csv) on the recorded runs of
tests/fixtures/generated/runs and the field run of tests/fixtures/generated/field
(controller/results/export.py, controller/results/columns.py), units
of bare unit words (controller/results/wire.py) and one validity verdict for `runs list` and
`runs export` (controller/results/catalog.py).

Contract: every column of every table has a description of its own, per table: two columns of
different names never share one (the same name in several tables may: the run's identity and
parameters repeated in every item table), and one name in two tables holding two quantities
(`flows.sender_mbps`, iperf3's sender rate; `connections.sender_mbps`, bytes acked over the
traffic window) has each its own; a numeric column whose name spells a unit has it; a record
without summary.json has the same `valid` in the export as in `runs list --json` (its own
verdict, its status), and the recomputed summary's verdict apart.
"""
from __future__ import annotations

import json
from collections import defaultdict

import pandas as pd
import pytest

from controller.cli import main
from controller.results import columns
from controller.results.export import own_definitions
from controller.results.records import summary_document
from controller.results.wire import unit_of, units_of
from controller.run.replay import summarize_record
from tests.support.shipped import RECORDED_FIELD_RUN, RECORDED_RUNS, copy_runs, no_state_dir, recorded_runs

RUNS = recorded_runs(RECORDED_FIELD_RUN)
SHARED = RECORDED_RUNS / "shared-bottleneck" / "delay-800ms"
SHARED_ID = RUNS[SHARED]
# The same quantity under one name in several tables: the run's identity and the parameters.
REPEATED = {"run_id", "scenario", "campaign", "started", "status", "valid"}


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    return copy_runs(RUNS, tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def export(runs_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "csv"
    with no_state_dir():
        assert main(["runs", "export", "--format", "csv", "--out", str(out), "--runs-dir", str(runs_dir)]) == 0
    return out


@pytest.fixture(scope="module")
def dictionary(export):
    return pd.read_csv(export / "columns.csv", keep_default_na=False)


def test_every_column_of_every_table_is_in_the_dictionary_with_a_description(export, dictionary):
    tables = {p.stem for p in export.glob("*.csv")} - {"columns"}
    assert {"runs", "flows", "connections", "subflows", "samples", "table1", "download_percentiles"} <= tables
    for t in tables:
        header = list(pd.read_csv(export / f"{t}.csv", nrows=0).columns)
        assert list(dictionary[dictionary["table"] == t]["column"]) == header, t
    empty = [f"{r.table}.{r.column}" for r in dictionary.itertuples() if not r.description.strip()]
    assert empty == []


def test_no_two_different_columns_share_a_definition(dictionary):
    names = defaultdict(set)
    for r in dictionary.itertuples():
        names[r.description].add(r.column)
    shared = {d: sorted(c) for d, c in names.items() if len(c) > 1}
    assert shared == {}
    # a name repeated across tables shares its definition only where it is the same quantity
    for column, rows in dictionary.groupby("column"):
        if column in REPEATED or column.startswith("param_"):
            assert rows["description"].nunique() == 1, column


def test_sender_mbps_is_described_per_table_and_matches_its_numbers(export, dictionary):
    d = dictionary.set_index(["table", "column"])
    flows, conns = d.loc[("flows", "sender_mbps")], d.loc[("connections", "sender_mbps")]
    assert flows["description"] != conns["description"]
    assert "end.sum_sent" in flows["description"] and "the paper's 'at the sender'" not in flows["description"]
    assert "sender_bytes x 8 / the length of the traffic window" in conns["description"]
    assert (flows["unit"], conns["unit"]) == ("Mbit/s", "Mbit/s")
    # the numbers each definition is of (the 800 ms run: the numbers the README table and `runs show` print)
    with no_state_dir():
        s = summarize_record(SHARED)
    f = pd.read_csv(export / "flows.csv").query("run_id == @SHARED_ID").set_index("entity")
    c = pd.read_csv(export / "connections.csv").query("run_id == @SHARED_ID").set_index("entity")
    for name in ("mptcp", "tcp"):
        assert f.loc[name, "sender_mbps"] == next(x["sender_mbps"] for x in s["flows"] if x["name"] == name)
        assert c.loc[name, "sender_mbps"] == next(x["sender_mbps"] for x in s["connections"]
                                                  if x["connection"] == name)
        assert c.loc[name, "sender_mbps"] == pytest.approx(
            c.loc[name, "sender_bytes"] * 8 / 1e6 / pd.read_csv(export / "runs.csv").set_index("run_id")
            .loc[SHARED_ID, "traffic_s"], abs=1e-3)
    # the mptcp-bittorrent tests' sender_mbps is iperf3's, not the connections' definition
    assert "end.sum_sent" in d.loc[("tests", "sender_mbps"), "description"]


def test_numeric_columns_carry_the_unit_their_name_or_entry_says(dictionary):
    d = dictionary.set_index(["table", "column"])
    assert d.loc[("subflows", "mbps"), "unit"] == "Mbit/s"
    assert d.loc[("paths", "tcp.mean"), "unit"] == "Mbit/s" and d.loc[("paths", "tcp.n"), "unit"] == "count"
    assert d.loc[("protocols", "download_s.median"), "unit"] == "s"
    assert d.loc[("runs", "mptcp.bytes_per_link.sbd1"), "unit"] == "bytes"
    assert d.loc[("downloads", "received_mbps_per_link.lp1"), "unit"] == "Mbit/s"
    assert d.loc[("sender_counters", "counters.TcpRetransSegs"), "unit"] == "count"
    for r in dictionary.itertuples():
        if r.type in ("int", "float") and r.column != "value" and unit_of(r.column) is not None:
            assert r.unit == unit_of(r.column), (r.table, r.column)


def test_a_bare_unit_word_has_its_unit_in_summary_json():
    assert unit_of("mbps") == "Mbit/s" and unit_of("subflows.mbps") == "Mbit/s" and unit_of("pct") == "%"
    with no_state_dir():
        s = summarize_record(SHARED)
    assert units_of(s)["mbps"] == "Mbit/s"
    m = json.loads((SHARED / "manifest.json").read_text())
    assert summary_document(s, m)["units"]["mbps"] == "Mbit/s"


def test_a_definition_goes_to_the_one_table_it_is_of():
    run = {"ratio": 1.0, "sender_mbps": 2.0}
    tables = {"connections": [("mptcp", {"sender_mbps": 1.0, "sender_bytes": 5})],
              "subflows": [("a", {"mbps": 1.0})], "flows": [("tcp", {"sender_mbps": 3.0})]}
    own = own_definitions({"ratio": "R", "sender_bytes": "B", "sender_mbps": "S", "subflows.mbps": "M",
                           "delay": "D"}, run, tables)
    # sender_mbps is in three tables: it defines none of them (columns.COLUMNS does, per table)
    assert own == {"runs": {"ratio": "R"}, "connections": {"sender_bytes": "B"}, "subflows": {"mbps": "M"}}
    assert columns.describe("subflows", "mbps", "shared-bottleneck", own["subflows"]) == ("Mbit/s", "M")
    assert columns.describe("flows", "sender_mbps", "x", {})[1].startswith("iperf3's sender rate")
    assert columns.describe("paths", "mptcp.stdev", "x", {})[0] == "Mbit/s"
    assert columns.describe("runs", "no_such_column", "x", {}) is None


def test_validity_is_one_truth_for_list_and_export(ctl_json, export):
    # the record has no summary.json; it ended `invalid`; this ctl's recomputed summary says valid
    assert not (SHARED / "summary.json").exists()
    listed = {r["run_id"]: r for r in ctl_json("runs", "list")}
    runs = pd.read_csv(export / "runs.csv").set_index("run_id")
    for rid, r in listed.items():
        exported = runs.loc[rid, "valid"]
        assert (None if pd.isna(exported) else bool(exported)) == r["valid"], rid
    assert listed[SHARED_ID]["valid"] is False and runs.loc[SHARED_ID, "status"] == "invalid"
    with no_state_dir():
        recomputed = summarize_record(SHARED)["valid"]
    assert bool(runs.loc[SHARED_ID, "valid_recomputed"]) is recomputed
    items = pd.read_csv(export / "flows.csv").query("run_id == @SHARED_ID")
    assert not items["valid"].any()


@pytest.fixture()
def ctl_json(capsys, runs_dir):
    def call(*argv: str):
        with no_state_dir():
            code = main([*argv, "--runs-dir", str(runs_dir), "--json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        return json.loads(out)["data"]
    return call
