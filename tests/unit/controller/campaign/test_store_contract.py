"""The same store tests against both back-ends: SQLite in the state dir and PostgreSQL (a real
server started by the `pg_server` fixture, a fresh database per test).

What every back-end must do: the transitions and attempts of the single-rack store, claims
by several schedulers at once (every run claimed by exactly one, concurrent claimers in
threads with their own connections), leases that run out and are taken back only when they
really ran out, uploaded records, versioned migrations (an older schema is migrated with its
rows kept, a newer one refused) and a writer killed inside a transaction leaving the
previous state."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from controller.campaign.pg_store import PostgresStore
from controller.campaign.plan import expand_cases, order_runs
from controller.campaign.policy import Decision, decide
from controller.campaign.spec import CampaignError, load_campaign
from controller.campaign.sqlite_store import SQLiteStore
from controller.errors import CtlError
from tests.support.shipped import ROOT as PROJECT

CAMPAIGN = """
version: 1
name: contract
scenario: distinct-bottleneck
fixed: {duration: 5s}
sweep:
  link2: [10M, 20M, 30M]
  cc: [cubic, reno]
repetitions: 2
order: random
seed: 7
"""


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request, tmp_path, monkeypatch):
    """A factory of store connections to one empty store of the parametrised kind."""
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    if request.param == "sqlite":
        path = tmp_path / "state" / "campaigns.sqlite"
        opened: list = []

        def make():
            s = SQLiteStore(path)
            opened.append(s)
            return s
    else:
        url = request.getfixturevalue("pg_url")
        opened = []

        def make():
            s = PostgresStore(url)
            opened.append(s)
            return s
    make.kind = request.param  # type: ignore[attr-defined]
    yield make
    for s in opened:
        try:
            s.close()
        except Exception:  # a store a worker thread opened and closed itself
            pass


def submit(store, tmp_path: Path, racks=None, group=None):
    f = tmp_path / "contract.yaml"
    f.write_text(CAMPAIGN)
    spec, _lines, text = load_campaign(f)
    cases = expand_cases(spec)
    planned = order_runs(len(cases), spec.repetitions, spec.order, spec.seed)
    return store.submit(spec=spec, file_path=f, file_text=text, inventory_path=tmp_path / "a.yaml",
                        inventory_name="rack-a", runs_root=tmp_path / "runs", seed=spec.seed, not_before=None,
                        cases=cases, planned=planned, durations={c.index: 5.0 for c in cases}, racks=racks,
                        rack_group=group, owner="alice@ctl1")


def test_submit_find_and_racks(backend, tmp_path):
    s = backend()
    c = submit(s, tmp_path, racks=["rack-a", "rack-b"])
    # In the lab database the owner's name is the database's: its session user (the login, `ctl` here).
    owner = "alice@ctl1" if backend.kind == "sqlite" else "ctl@ctl1"
    assert (c.state, c.seed, c.racks, c.owner) == ("queued", 7, ["rack-a", "rack-b"], owner)
    assert c.multi_rack and c.runs_on("rack-b", None) and not c.runs_on("rack-c", None)
    one = submit(s, tmp_path)
    assert one.racks == ["rack-a"] and not one.multi_rack
    grp = submit(s, tmp_path, group="lab")
    assert grp.racks == [] and grp.runs_on("rack-z", "lab") and not grp.runs_on("rack-z", "other")
    assert len(s.runs(c.num)) == 12 and {r.state for r in s.runs(c.num)} == {"pending"}
    assert s.find(str(c.num)).num == s.find(f"#{c.num}").num == s.find(c.id).num == c.num
    with pytest.raises(CampaignError, match="no campaign"):
        s.find("nope")
    assert [e["kind"] for e in s.events(c.num)] == ["submitted"]
    assert "on racks rack-a, rack-b" in s.events(c.num)[0]["message"]


def test_attempts_transitions_and_pause(backend, tmp_path):
    s = backend()
    c = submit(s, tmp_path)
    assert s.start_attempt(c.num, 1, "20260101T000000Z_rid-1", Path("/r/1"), None, rack="rack-a", controller="me") == 1
    assert s.campaign(c.num).state == "running"
    assert s.start_attempt(c.num, 1, "20260101T000000Z_rid-x", Path("/r/x"), None) is None      # not twice
    assert [r.seq for r in s.running_runs("rack-a")] == [1] and s.running_runs("rack-b") == []
    d = decide("result-invalid", failures_before=0, interruptions_before=0, policy=c.spec().retry, now=100.0,
               what="run 1", error="MPTCP not negotiated")
    assert s.finish_attempt(c.num, 1, 1, status="invalid", exit_code=4, error="x", klass="result-invalid", decision=d)
    assert not s.finish_attempt(c.num, 1, 1, status="completed", exit_code=0, error=None, klass="ok",
                                decision=Decision("done", "done"))   # an attempt is closed once
    r = s.run(c.num, 1)
    assert (r.state, r.failures, r.not_before, r.last_class) == ("pending", 1, 100.0, "result-invalid")
    a = s.attempts(c.num)[0]
    assert (a.status, a.klass, a.action, a.rack, a.controller) == ("invalid", "result-invalid", "retry", "rack-a", "me")
    s.start_attempt(c.num, 2, "20260101T000000Z_rid-2", Path("/r/2"), None)
    s.finish_attempt(c.num, 2, 1, status="failed", exit_code=2, error="refused", klass="refused",
                     decision=Decision("pending", "pause", pause_reason="run 2: refused"))
    assert (s.campaign(c.num).state, s.campaign(c.num).reason) == ("paused", "run 2: refused")
    assert s.start_attempt(c.num, 3, "r3", Path("/r/3"), None) is None
    assert s.claim_next(c.num, rack="rack-a", holder="h", lease_s=30) is None      # paused: nothing claimed
    s.set_state(c.num, "running")
    s.set_state(c.num, "cancelled", "enough")
    assert {r.state for r in s.runs(c.num)} == {"cancelled"}
    with pytest.raises(CampaignError, match="is cancelled: cannot make it running"):
        s.set_state(c.num, "running")
    assert s.pause_if_active(c.num, "x") is False
    hid = s.add_health(c.num, False, ["clock"], {"clock_spread_s": 0.5})
    assert s.health_checks(c.num)[0].id == hid and s.health_checks(c.num)[0].details["clock_spread_s"] == 0.5


def test_finish_campaign_and_overhead(backend, tmp_path):
    s = backend()
    c = submit(s, tmp_path)
    assert s.finish_campaign(c.num).state == "queued"
    for r in s.runs(c.num):
        a = s.start_attempt(c.num, r.seq, f"20260101T000000Z_r{r.seq}", Path(f"/r/{r.seq}"), None, rack="rack-b")
        s.finish_attempt(c.num, r.seq, a, status="completed", exit_code=0, error=None, klass="ok",
                         decision=Decision("done", "done"), finished=time.time() + 7.0)
    assert s.finish_campaign(c.num).state == "done"
    assert len(s.overhead_samples("distinct-bottleneck", "rack-b")) == 12
    assert s.overhead_samples("distinct-bottleneck", "rack-a") == []
    assert s.last_finished(c.num, "rack-b") is not None and s.last_finished(c.num, "rack-a") is None


def test_claims_are_exclusive_and_skip_what_does_not_fit(backend, tmp_path):
    s = backend()
    c = submit(s, tmp_path, racks=["rack-a", "rack-b"])
    a = s.claim_next(c.num, rack="rack-a", holder="A", lease_s=30)
    b = s.claim_next(c.num, rack="rack-b", holder="B", lease_s=30)
    assert a is not None and b is not None and (a.seq, b.seq) == (1, 2)
    assert (a.claimed_by, a.claim_rack) == ("A", "rack-a")
    # B cannot start A's claim; A can
    assert s.start_attempt(c.num, a.seq, "x", Path("/r/x"), None, holder="B") is None
    assert s.start_attempt(c.num, a.seq, "20260101T000000Z_ra", Path("/r/ra"), None, holder="A", rack="rack-a") == 1
    assert s.renew_claim(c.num, a.seq, "A", 30) and not s.renew_claim(c.num, a.seq, "B", 30)
    # released claims go back to the queue; `fits` skips runs that would not fit (e.g. a reservation)
    s.release_claim(c.num, b.seq, "B")
    assert s.run(c.num, b.seq).claimed_by is None
    assert s.claim_next(c.num, rack="rack-b", holder="B", lease_s=30, fits=lambda d: d < 1) is None
    assert s.claim_next(c.num, rack="rack-b", holder="B", lease_s=30).seq == b.seq
    # a claim of a dead scheduler (lease over) is free for another
    s2 = s.claim_next(c.num, rack="rack-b", holder="B", lease_s=-1)   # already expired
    assert s.claim_next(c.num, rack="rack-a", holder="A2", lease_s=30).seq == s2.seq


def test_concurrent_claimers_take_every_run_exactly_once(backend, tmp_path):
    first = backend()
    c = submit(first, tmp_path, racks=["rack-a", "rack-b"])
    n = 6
    taken: dict[str, list[int]] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def worker(i: int) -> None:
        mine: list[int] = []
        store = backend()            # each scheduler its own connection, opened in its own thread
        try:
            barrier.wait()
            while True:
                r = store.claim_next(c.num, rack=f"rack-{i % 2}", holder=f"h{i}", lease_s=60)
                if r is None:
                    break
                att = store.start_attempt(c.num, r.seq, f"20260101T000000Z_r{r.seq}", Path(f"/r/{r.seq}"), None, holder=f"h{i}",
                                          rack=f"rack-{i % 2}")
                assert att == 1
                store.finish_attempt(c.num, r.seq, att, status="completed", exit_code=0, error=None, klass="ok",
                                     decision=Decision("done", "done"), holder=f"h{i}")
                mine.append(r.seq)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            store.close()
        taken[f"h{i}"] = mine

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    all_seqs = sorted(x for v in taken.values() for x in v)
    assert all_seqs == list(range(1, 13))                       # each run once, none lost
    assert {r.state for r in first.runs(c.num)} == {"done"}
    assert len(first.attempts(c.num)) == 12 and {a.attempt for a in first.attempts(c.num)} == {1}


def test_taking_back_an_expired_claim_never_races_a_live_one(backend, tmp_path):
    s = backend()
    c = submit(s, tmp_path, racks=["rack-a", "rack-b"])
    r = s.claim_next(c.num, rack="rack-a", holder="A", lease_s=0.2)
    att = s.start_attempt(c.num, r.seq, "20260101T000000Z_ra", Path("/r/ra"), None, holder="A", rack="rack-a")
    assert s.expired_running(time.time()) == []
    time.sleep(0.3)
    now = time.time()
    expired = s.expired_running(now)
    assert [x.seq for x in expired] == [r.seq]
    # A renews just before B acts: B's guarded close changes nothing
    assert s.renew_claim(c.num, r.seq, "A", 60)
    d = Decision("pending", "requeue", counts_interruption=True)
    assert not s.finish_attempt(c.num, r.seq, att, status="aborted", exit_code=None, error="lease", klass="interrupted",
                                decision=d, holder="A", expired_before=now)
    assert s.run(c.num, r.seq).state == "running"
    # A really dies: its lease runs out, B takes the run back into the queue
    s.renew_claim(c.num, r.seq, "A", 0.1)
    time.sleep(0.2)
    now = time.time()
    assert s.finish_attempt(c.num, r.seq, att, status="aborted", exit_code=None, error="lease", klass="interrupted",
                            decision=d, holder="A", expired_before=now)
    row = s.run(c.num, r.seq)
    assert (row.state, row.claimed_by, row.interruptions) == ("pending", None, 1)
    # A comes back late: its claim is gone, it can neither renew nor close the attempt again
    assert not s.renew_claim(c.num, r.seq, "A", 60)
    assert not s.finish_attempt(c.num, r.seq, att, status="completed", exit_code=0, error=None, klass="ok",
                                decision=Decision("done", "done"), holder="A")
    b = s.claim_next(c.num, rack="rack-b", holder="B", lease_s=30)
    assert b.seq == r.seq and s.start_attempt(c.num, b.seq, "rb", Path("/r/rb"), None, holder="B") == 2


def test_records_are_uploaded_and_replaced(backend, tmp_path):
    s = backend()
    c = submit(s, tmp_path)
    s.put_record(run_id="20260101T000000Z_rid", num=c.num, seq=1, attempt=1, rack="rack-a", controller="alice@m1:1",
                 record_dir=Path("/runs/rid"), status="running", manifest={"status": "running"}, summary=None)
    s.put_record(run_id="20260101T000000Z_rid", num=c.num, seq=1, attempt=1, rack="rack-a", controller="alice@m1:1",
                 record_dir=Path("/runs/rid"), status="completed", manifest={"status": "completed"},
                 summary={"jain_index": 0.9})
    rec = s.record("20260101T000000Z_rid")
    assert (rec["status"], rec["summary"], rec["manifest"], rec["rack"]) == \
        ("completed", {"jain_index": 0.9}, {"status": "completed"}, "rack-a")
    assert [x["run_id"] for x in s.records(c.num)] == ["20260101T000000Z_rid"] and s.record("other") is None


KILLED_IN_TRANSACTION = textwrap.dedent("""
    import os, signal, sys
    from controller.campaign.backends import open_store
    s = open_store()
    with s.tx():
        s._x("UPDATE runs SET state='done' WHERE campaign=1")
        s._x("UPDATE campaigns SET state='done' WHERE num=1")
        sys.stdout.write("inside\\n"); sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)
""")


def test_a_writer_killed_inside_a_transaction_leaves_the_previous_state(backend, tmp_path):
    s = backend()
    c = submit(s, tmp_path)
    assert c.num == 1
    env = {**os.environ, "CTL_STATE_DIR": str(tmp_path / "state")}
    if backend.kind == "postgres":
        env["CTL_DATABASE_URL"] = s.url
    else:
        env.pop("CTL_DATABASE_URL", None)
    p = subprocess.run([sys.executable, "-c", KILLED_IN_TRANSACTION], cwd=PROJECT, capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode == -signal.SIGKILL and p.stdout == "inside\n", p.stderr
    fresh = backend()
    assert fresh.campaign(1).state == "queued" and {r.state for r in fresh.runs(1)} == {"pending"}
    fresh.set_activity(1, "after the crash")   # the dead writer's locks are gone


# ---- migrations --------------------------------------------------------------------------------

def test_postgres_migrates_an_older_schema_keeping_its_rows_and_refuses_a_newer_one(pg_url, tmp_path, monkeypatch):
    import psycopg
    from controller.labdb import connect
    from controller.labdb.migrations import LATEST, MIGRATIONS, SchemaTooNew, current_version, migrate
    assert [m.version for m in MIGRATIONS] == list(range(1, LATEST + 1))     # ordered, no gaps
    conn = connect(pg_url, "test")
    assert migrate(conn, target=1) == (0, 1)                                 # an "old ctl"'s database
    conn.execute("INSERT INTO campaigns (id, name, scenario, file_path, file_text, file_sha256, spec_json, "
                 "inventory_path, inventory_name, runs_root, state, submitted, updated) VALUES "
                 "('20250101T000000Z_old', 'old', 's', '/f', 't', 'h', '{\"version\": 1, \"scenario\": \"s\"}', "
                 "'/i', 'rack-a', '/r', 'done', 1, 1)")
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path))
    store = PostgresStore(pg_url)                                             # opening migrates
    assert current_version(store.conn) == LATEST
    old = store.campaigns()[0]
    assert (old.id, old.racks, old.owner) == ("20250101T000000Z_old", ["rack-a"], None)
    assert migrate(conn) == (LATEST, LATEST)                                  # idempotent
    conn.execute("INSERT INTO schema_version (version, description) VALUES (%s, 'from the future')", (LATEST + 1,))
    with pytest.raises(SchemaTooNew, match=f"version {LATEST + 1} is newer than this ctl"):
        PostgresStore(pg_url)
    store.close()
    conn.close()
    assert issubclass(SchemaTooNew, CtlError) and psycopg is not None


def test_sqlite_migrates_a_version_1_file_keeping_its_rows(tmp_path, monkeypatch):
    import sqlite3
    from controller.campaign import sqlite_store
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path))
    path = tmp_path / "campaigns.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    db.executescript(sqlite_store.SCHEMA_V1)
    db.execute("INSERT INTO campaigns (id, name, scenario, file_path, file_text, file_sha256, spec_json, "
               "inventory_path, inventory_name, runs_root, state, submitted, updated) VALUES "
               "('20250101T000000Z_old', 'old', 's', '/f', 't', 'h', '{\"version\": 1, \"scenario\": \"s\"}', "
               "'/i', 'rack-a', '/r', 'done', 1, 1)")
    db.execute("PRAGMA user_version=1")
    db.close()
    s = SQLiteStore(path)
    assert s.db.execute("PRAGMA user_version").fetchone()[0] == sqlite_store.SCHEMA_VERSION == 2
    assert [c.id for c in s.campaigns()] == ["20250101T000000Z_old"] and s.campaigns()[0].racks == ["rack-a"]
    s.close()


def test_a_database_url_with_a_password_is_refused(monkeypatch):
    from controller.campaign.backends import open_store, store_location
    from controller.errors import UsageError
    monkeypatch.setenv("CTL_DATABASE_URL", "postgresql://ctl:secret@db.lab/ctl")
    with pytest.raises(UsageError, match="password in the URL is not allowed") as e:
        open_store()
    assert "secret" not in str(e.value)
    monkeypatch.setenv("CTL_DATABASE_URL", "mysql://db/ctl")
    with pytest.raises(UsageError, match="not a postgresql:// URL"):
        store_location()
    monkeypatch.setenv("CTL_DATABASE_URL", "postgresql://ctl@/ctl?host=/tmp/x&port=5433&sslmode=disable")
    assert store_location() == "postgresql://ctl@/tmp/x:5433/ctl"
