"""Rows of the campaign store are input (controller.campaign.boundary): every id ctl generates
passes, anything else is refused with one line naming the row; times are finite; a path from a
shared store is used only under this controller's directories. The stores are the real ones
(SQLite here; the same checks on PostgreSQL in tests/integration/test_lab_trust_files.py), the
bad rows written with plain SQL, as another lab member's client would."""
from __future__ import annotations

import math
import os
import re
import sqlite3
import time
from pathlib import Path

import pytest

from controller.campaign import boundary
from controller.campaign.boundary import (CAMPAIGN_ID, RUN_ID, UntrustedRow, campaign_row, check_time, is_under,
                                          run_row, trusted_path)
from controller.campaign.plan import expand_cases, order_runs
from controller.campaign.spec import load_campaign
from controller.campaign.sqlite_store import SQLiteStore
from controller.results.records import RunRecord, make_run_id
from controller.scenarios import SCENARIOS
from controller.textsafe import has_control
from tests.support.shipped import ROOT as PROJECT

CAMPAIGN = """
version: 1
scenario: distinct-bottleneck
fixed: {duration: 5s}
sweep:
  link2: [10M, 20M]
repetitions: 1
order: sequential
"""


def submit(store: SQLiteStore, tmp_path: Path, file_name: str = "unit.yaml"):
    f = tmp_path / file_name
    f.write_text(CAMPAIGN)
    spec, _lines, text = load_campaign(f)
    cases = expand_cases(spec)
    planned = order_runs(len(cases), spec.repetitions, spec.order, None)
    return store.submit(spec=spec, file_path=f, file_text=text, inventory_path=tmp_path / "inv.yaml",
                        inventory_name="vunit", runs_root=tmp_path / "runs", seed=None, not_before=None,
                        cases=cases, planned=planned, durations={c.index: 5.0 for c in cases})


# ---- the grammar is the generators' -------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(SCENARIOS.names()))
def test_every_run_id_ctl_generates_passes_and_is_one_file_name(name, tmp_path):
    odd = {"loss": "0.01%", "rtt": "20ms", "cc": "mptcp_olia", "path": "../../etc/passwd", "x": "a b\nc\x1b[2J",
           "long": "9" * 300}
    rid = make_run_id(name, odd, now=time.time())
    assert RUN_ID.fullmatch(rid) and "/" not in rid and rid not in (".", "..")
    # the record directory may add `_2`, `_3`...: that too is an id ctl writes
    root = tmp_path / "runs"
    first, second = RunRecord(root, rid), RunRecord(root, rid)
    assert second.id == f"{rid}_2" and RUN_ID.fullmatch(second.id) and first.dir.parent == second.dir.parent


@pytest.mark.parametrize("file_name", ["unit.yaml", "_Night Sweep.v2.yaml", "..yaml", "x" * 90 + ".yaml",
                                       "über-lang.yaml"])
def test_every_campaign_id_ctl_generates_passes(file_name, tmp_path, tmp_state_dir):
    store = SQLiteStore()
    try:
        a = submit(store, tmp_path, file_name)
        b = submit(store, tmp_path, file_name)      # the same second: `_2`
        assert CAMPAIGN_ID.fullmatch(a.id) and CAMPAIGN_ID.fullmatch(b.id) and a.id != b.id
        assert [c.id for c in store.campaigns()] == [a.id, b.id] and not store.refused
    finally:
        store.close()


@pytest.mark.parametrize("bad", ["../x", "/tmp/abs", "x/y", "20261122T031819Z_a/../../x", "..", ".",
                                 "20261122T031819Z_ok\n", "20261122T031819Z_\x1b[2J", "", "rid1",
                                 "20261122T031819Z_" + "a" * 300])
def test_anything_else_is_not_a_run_id(bad):
    assert not RUN_ID.fullmatch(bad)
    with pytest.raises(UntrustedRow, match="run id .* is not a run id ctl writes"):
        boundary.check_id(bad, RUN_ID, "run id", "records", "x")


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, -1.0, 1e300, "12", True, None])
def test_a_time_must_be_a_finite_time(value):
    with pytest.raises(UntrustedRow, match="is not a time"):
        check_time(value, "submitted", "campaigns", "#1", optional=False)
    assert check_time(0, "t", "x", "y") == 0.0 and check_time(time.time(), "t", "x", "y") > 0
    assert check_time(None, "t", "x", "y") is None


def test_a_refusal_is_one_line_with_the_value_escaped():
    with pytest.raises(UntrustedRow) as e:
        boundary.check_id("\x1b]0;owned\x07\u202e\x9b\n../x", RUN_ID, "run id", "records", "run 1")
    line = e.value.one_line()
    assert "\n" not in str(e.value) and not has_control(str(e.value))
    assert "lab database row records run 1: run id" in line and "\\x1b]0;owned" in line and "\\u202e" in line
    assert e.value.exit_code == 2


# ---- rows from the store -----------------------------------------------------------------------

def raw(tmp_state_dir: Path) -> sqlite3.Connection:
    return sqlite3.connect(tmp_state_dir / "campaigns.sqlite", isolation_level=None)


def test_a_bad_campaign_row_is_left_out_of_listings_and_named_when_asked_for(tmp_path, tmp_state_dir):
    store = SQLiteStore()
    good = submit(store, tmp_path)
    bad = submit(store, tmp_path)
    db = raw(tmp_state_dir)
    db.execute("UPDATE campaigns SET id='../../x' WHERE num=?", (bad.num,))
    db.execute("UPDATE campaigns SET submitted=? WHERE num=?", (math.inf, good.num))   # SQLite stores Inf
    third = submit(store, tmp_path)
    try:
        assert [c.num for c in store.campaigns()] == [third.num]
        assert set(store.refused) == {good.num, bad.num}
        assert "campaign id '../../x' is not a campaign id ctl writes" in store.refused[bad.num]
        assert "submitted inf is not a time" in store.refused[good.num]
        with pytest.raises(UntrustedRow, match=r"campaigns #\d+: campaign id '../../x'"):
            store.find(str(bad.num))
        with pytest.raises(UntrustedRow):
            store.campaign(bad.num)
    finally:
        store.close()
        db.close()


@pytest.mark.parametrize("column,value,says", [
    ("run_id", "../x", "run id '../x' is not a run id"),
    ("duration_s", math.inf, "duration_s inf is not a number"),
    ("not_before", -5.0, "not_before -5.0 is not a time"),
    ("args_json", '{"link2": "--inventory=/etc/shadow\\n"}', "is not a parameter value"),
    ("args_json", '{"--x": "1"}', "names no parameter"),
    ("claim_rack", "../rack", "rack name '../rack'"),
])
def test_a_bad_run_row_is_refused_naming_the_field(tmp_path, tmp_state_dir, column, value, says):
    store = SQLiteStore()
    c = submit(store, tmp_path)
    db = raw(tmp_state_dir)
    db.execute(f"UPDATE runs SET {column}=? WHERE campaign=? AND seq=1", (value, c.num))
    try:
        with pytest.raises(UntrustedRow, match=f"runs #{c.num} run 1: .*" + re.escape(says)):
            store.runs(c.num)
        if column in ("run_id", "claim_rack", "not_before"):
            db.execute("UPDATE runs SET state='running' WHERE campaign=? AND seq=1", (c.num,))
            assert store.running_runs() == [] and c.num in store.refused     # the daemon's listing goes on
    finally:
        store.close()
        db.close()


def test_row_checks_take_what_ctl_writes():
    row = dict(num=1, id="20261122T031819Z_night", name="night", scenario="distinct-bottleneck",
               file_path="/f.yaml", file_text="x", file_sha256="0" * 64, spec_json='{"version": 1, "scenario": "s"}',
               seed=None,
               inventory_path="/inv/a.yaml", inventory_name="vtest", runs_root="/runs", state="queued",
               reason="paused by user: \x1b[2J is kept as text", not_before=None, abort_requested=0,
               submitted=1.0, started=None, finished=None, updated=2.0, activity=None, activity_t=None,
               racks_json='["vtest", "vtestb"]', rack_group=None, owner="alice@ctl1")
    assert campaign_row(row).racks == ["vtest", "vtestb"]
    for field, value in (("inventory_path", "relative.yaml"), ("runs_root", "/x\n/y"), ("racks_json", '["../a"]'),
                         ("racks_json", "{}"), ("state", "exploded"), ("inventory_name", "Rack A"),
                         ("spec_json", "{"), ("spec_json", '{"version": 1}')):
        with pytest.raises(UntrustedRow):
            campaign_row({**row, field: value})
    run = dict(campaign=1, seq=1, case_index=0, repetition=1, args_json='{"link2": "10M"}',
               varied_json='{"link2": "10M"}', duration_s=5.0, state="pending", attempts=0, failures=0,
               interruptions=0, run_id=None, not_before=None, last_class=None, last_error=None)
    assert run_row(run).args == {"link2": "10M"}


# ---- paths ---------------------------------------------------------------------------------------

def test_a_path_from_a_shared_store_is_used_only_under_this_controllers_directories(tmp_path):
    root = tmp_path / "runs"
    (root / "r1").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "escape").symlink_to(outside)
    where = "lab database row attempts #1"
    assert trusted_path(str(root / "r1"), "record_dir", [root], shared=True, where=where) == root / "r1"
    for bad in (str(root / ".." / "elsewhere"), str(root / "escape" / "x"), "/etc", str(outside)):
        with pytest.raises(UntrustedRow, match=f"{where}: record_dir .* is not under {root}"):
            trusted_path(bad, "record_dir", [root], shared=True, where=where)
    # a local store is this controller's own configuration: any absolute path, but a path
    assert trusted_path("/etc", "record_dir", [root], shared=False, where=where) == Path("/etc")
    for bad in ("relative/dir", "/x\x1b[2J", 42):
        with pytest.raises(UntrustedRow, match="is not an absolute path"):
            trusted_path(bad, "record_dir", [root], shared=False, where=where)
    assert is_under(root, [root]) and not is_under(Path(str(root) + "-other"), [root])


def test_the_inventory_roots_are_the_configured_inventorys_directory_and_the_shipped_ones(tmp_path, monkeypatch):
    inv = tmp_path / "lab" / "rack.yaml"
    monkeypatch.setenv("CTL_INVENTORY", str(inv))
    roots = boundary.inventory_roots()
    assert roots[0] == inv.parent and (PROJECT / "inventory" / "virtual.yaml").parent in roots
    monkeypatch.setenv("CTL_RUNS_DIR", str(tmp_path / "myruns"))
    assert boundary.record_roots([None, tmp_path / "extra"]) == [tmp_path / "myruns", tmp_path / "extra"]
    assert os.path.isabs(str(roots[1]))
