"""The campaign store without a rack: transitions, one transaction per change, a controller
killed inside a transaction, and reconciliation with real run records after a crash."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from controller.campaign.plan import expand_cases, order_runs
from controller.campaign.policy import Decision, classify, decide
from controller.campaign.progress import progress_of
from controller.campaign.attempts import reconcile
from controller.campaign.spec import CampaignError, load_campaign
from controller.campaign.sqlite_store import SQLiteStore
from controller.results.records import RunRecord
from tests.support.shipped import ROOT as PROJECT


CAMPAIGN = """
version: 1
name: unit
scenario: distinct-bottleneck
fixed: {duration: 5s}
sweep:
  link2: [10M, 20M]
  cc: [cubic, reno]
repetitions: 2
order: random
seed: 99
pause: 0s
overhead: 10s
retry:
  result-invalid: {attempts: 2, then: skip}
"""


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    f = tmp_path / "unit.yaml"
    f.write_text(CAMPAIGN)
    spec, _lines, text = load_campaign(f)
    cases = expand_cases(spec)
    planned = order_runs(len(cases), spec.repetitions, spec.order, spec.seed)
    store = SQLiteStore()
    c = store.submit(spec=spec, file_path=f, file_text=text, inventory_path=tmp_path / "inv.yaml",
                     inventory_name="vunit", runs_root=tmp_path / "runs", seed=spec.seed, not_before=None,
                     cases=cases, planned=planned, durations={c_.index: 5.0 for c_ in cases})
    yield store, c, tmp_path
    store.close()


def test_submit_records_the_plan(env):
    store, c, tmp = env
    assert c.state == "queued" and c.seed == 99 and c.name == "unit"
    assert c.id.endswith("_unit") and len(c.file_sha256) == 64
    runs = store.runs(c.num)
    assert len(runs) == 8 and {r.state for r in runs} == {"pending"}
    assert sorted((r.case_index, r.repetition) for r in runs) == [(i, k) for i in range(4) for k in (1, 2)]
    assert runs[0].args["duration"] == "5s" and set(runs[0].varied) == {"link2", "cc"}
    # the WAL journal: readers never block the scheduler's writes
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert (tmp / "state" / "campaigns.sqlite").exists()
    # found by number, #number, id, unique part of the id, or as the only active one
    assert store.find("1").num == store.find("#1").num == store.find(c.id).num == store.find("_unit").num == \
        store.find(None).num == c.num
    with pytest.raises(CampaignError, match="no campaign"):
        store.find("nope")


def test_attempt_transitions(env):
    store, c, _ = env
    a = store.start_attempt(c.num, 1, "20260101T000000Z_rid-1", Path("/r/rid-1"), None)
    assert a == 1
    assert store.campaign(c.num).state == "running" and store.campaign(c.num).started is not None
    r = store.run(c.num, 1)
    assert (r.state, r.attempts, r.run_id) == ("running", 1, "20260101T000000Z_rid-1")
    # a running run cannot be started twice
    assert store.start_attempt(c.num, 1, "20260101T000000Z_rid-x", Path("/r/x"), None) is None
    d = decide("result-invalid", failures_before=0, interruptions_before=0, policy=c.spec().retry, now=100.0,
               what="run 1", error="MPTCP not negotiated")
    store.finish_attempt(c.num, 1, 1, status="invalid", exit_code=4, error="MPTCP not negotiated",
                         klass="result-invalid", decision=d)
    r = store.run(c.num, 1)
    assert (r.state, r.failures, r.not_before, r.last_class) == ("pending", 1, 100.0, "result-invalid")
    att = store.attempts(c.num)
    assert [(x.attempt, x.status, x.klass, x.action) for x in att] == [(1, "invalid", "result-invalid", "retry")]
    # second failure: the policy says skip
    store.start_attempt(c.num, 1, "20260101T000000Z_rid-2", Path("/r/rid-2"), None)
    d = decide("result-invalid", failures_before=1, interruptions_before=0, policy=c.spec().retry, now=200.0,
               what="run 1", error="again")
    store.finish_attempt(c.num, 1, 2, status="invalid", exit_code=4, error="again", klass="result-invalid", decision=d)
    assert store.run(c.num, 1).state == "failed"
    assert progress_of(store, store.campaign(c.num)).failed == 1


def test_pause_from_the_policy_and_campaign_transitions(env):
    store, c, _ = env
    store.start_attempt(c.num, 2, "20260101T000000Z_rid", Path("/r/rid"), None)
    store.finish_attempt(c.num, 2, 1, status="failed", exit_code=2, error="refused", klass="refused",
                         decision=Decision("pending", "pause", pause_reason="run 2: refused"))
    c2 = store.campaign(c.num)
    assert (c2.state, c2.reason) == ("paused", "run 2: refused")
    assert store.start_attempt(c.num, 3, "20260101T000000Z_rid3", Path("/r/rid3"), None) is None  # paused: nothing starts
    store.set_state(c.num, "running")
    store.set_state(c.num, "cancelled", "enough")
    assert {r.state for r in store.runs(c.num)} == {"cancelled"}
    with pytest.raises(CampaignError, match="is cancelled: cannot make it running"):
        store.set_state(c.num, "running")
    assert store.pause_if_active(c.num, "health") is False   # a cancel is never overridden by the scheduler
    kinds = [e["kind"] for e in store.events(c.num)]
    assert kinds == ["submitted", "running", "attempt", "paused", "running", "cancelled"]


def test_finish_campaign_only_when_nothing_is_left(env):
    store, c, _ = env
    assert store.finish_campaign(c.num).state == "queued"
    for r in store.runs(c.num):
        a = store.start_attempt(c.num, r.seq, f"20260101T000000Z_rid{r.seq}", Path(f"/r/{r.seq}"), None)
        assert a is not None
        store.finish_attempt(c.num, r.seq, a, status="completed", exit_code=0, error=None, klass="ok",
                             decision=Decision("done", "done"))
    done = store.finish_campaign(c.num)
    assert done.state == "done" and done.finished is not None
    p = progress_of(store, done)
    assert (p.done, p.total, p.eta_s) == (8, 8, 0.0)


KILLED_IN_TRANSACTION = textwrap.dedent("""
    import os, signal, sys
    from controller.campaign.sqlite_store import SQLiteStore
    s = SQLiteStore()
    s.db.execute("BEGIN IMMEDIATE")
    s.db.execute("UPDATE runs SET state='done' WHERE campaign=1")
    s.db.execute("UPDATE campaigns SET state='done' WHERE num=1")
    sys.stdout.write("inside\\n"); sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_a_controller_killed_inside_a_transaction_leaves_the_previous_state(env):
    store, c, tmp = env
    p = subprocess.run([sys.executable, "-c", KILLED_IN_TRANSACTION], cwd=PROJECT, capture_output=True, text=True,
                       env={**os.environ, "CTL_STATE_DIR": str(tmp / "state")}, timeout=60)
    assert p.returncode == -signal.SIGKILL and p.stdout == "inside\n", p.stderr
    fresh = SQLiteStore()
    try:
        assert fresh.campaign(c.num).state == "queued"
        assert {r.state for r in fresh.runs(c.num)} == {"pending"}
        assert fresh.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # the dead writer's lock is gone: the next transaction goes through at once
        fresh.set_activity(c.num, "after the crash")
    finally:
        fresh.close()


# ---- reconciliation after a crash, with real run records ---------------------------------------

def make_record(root: Path, rid: str, status: str | None, error: str | None = None) -> Path:
    rec = RunRecord(root, rid)
    rec.start(scenario="distinct-bottleneck", parameters={}, inventory={"name": "vunit"}, inventory_file="",
              campaign="c")
    if status is not None:
        rec.finish(status, error)
    return rec.dir


def test_reconcile_never_repeats_a_completed_run_and_requeues_interrupted_ones(env):
    store, c, tmp = env
    root = tmp / "runs"
    said: list[str] = []
    # controller died after the record was final, before the store knew: the run is done
    store.start_attempt(c.num, 1, "20260101T000000Z_r1", root / "20260101T000000Z_r1", None)
    make_record(root, "20260101T000000Z_r1", "completed")
    # died mid-run; recovery restored the rack and marked the record aborted: run it again
    store.start_attempt(c.num, 2, "20260101T000000Z_r2", root / "20260101T000000Z_r2", None)
    make_record(root, "20260101T000000Z_r2", "aborted", "controller (pid 1 on h) died before restoring; rack restored by recovery")
    # died between the store's `running` and the record's creation: nothing was touched, run it again
    store.start_attempt(c.num, 3, "20260101T000000Z_r3", root / "20260101T000000Z_r3", None)
    # died after an invalid result was final: the retry policy decides
    store.start_attempt(c.num, 4, "20260101T000000Z_r4", root / "20260101T000000Z_r4", None)
    make_record(root, "20260101T000000Z_r4", "invalid", "MPTCP not negotiated")
    reconcile(store, store.running_runs("vunit"), said.append)
    states = {r.seq: (r.state, r.attempts, r.failures, r.interruptions) for r in store.runs(c.num) if r.seq <= 4}
    assert states == {1: ("done", 1, 0, 0), 2: ("pending", 1, 0, 1), 3: ("pending", 1, 0, 1),
                      4: ("pending", 1, 1, 0)}
    acts = {a.seq: (a.status, a.klass, a.action) for a in store.attempts(c.num)}
    assert acts == {1: ("completed", "ok", "done"), 2: ("aborted", "interrupted", "requeue"),
                    3: ("aborted", "interrupted", "requeue"), 4: ("invalid", "result-invalid", "retry")}
    assert len(said) == 4 and not store.running_runs("vunit")
    # the next attempt of run 2 gets attempt number 2 and its own record
    assert store.start_attempt(c.num, 2, "r2b", root / "r2b", None) == 2


def test_reconcile_does_not_trust_a_record_recovery_left_running(env):
    store, c, tmp = env
    store.start_attempt(c.num, 1, "20260101T000000Z_r1", tmp / "runs" / "20260101T000000Z_r1", None)
    make_record(tmp / "runs", "20260101T000000Z_r1", None)  # still `running`
    reconcile(store, store.running_runs("vunit"), lambda m: None)
    assert store.campaign(c.num).state == "paused"
    assert "record still marked running" in (store.campaign(c.num).reason or "")
    assert classify("aborted", None, "record still marked running after recovery") == "error"


def test_a_newer_store_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path))
    SQLiteStore().close()
    db = sqlite3.connect(tmp_path / "campaigns.sqlite")
    db.execute("PRAGMA user_version=99")
    db.close()
    from controller.errors import CtlError
    with pytest.raises(CtlError, match="newer than this ctl"):
        SQLiteStore()

