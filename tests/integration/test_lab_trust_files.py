"""Rows of the shared lab database are input (issue 23, item 2 and related): whatever another
member writes into it, ctl on this controller never writes outside its directories, never
loads a file the row chooses, and never prints a terminal control character.

A real PostgreSQL (the `pg_server` fixture, a fresh database per test); the campaigns are
submitted through the store as ctl does, then rows are changed with plain SQL as a member with
the database role could; every command is the `ctl` a user runs (a subprocess). No rack is
needed: every refusal comes before a rack would be touched.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from controller.campaign.pg_store import PostgresStore
from controller.campaign.plan import expand_cases, order_runs
from controller.campaign.policy import Decision
from controller.campaign.spec import load_campaign
from controller.campaign.sqlite_store import SQLiteStore
from controller.results.records import RunRecord
from controller.textsafe import has_control

pytestmark = pytest.mark.integration

PROJECT = Path(__file__).resolve().parents[2]
CAMPAIGN = """
version: 1
name: trust
scenario: distinct-bottleneck
fixed: {duration: 3s}
sweep:
  link2: [10M, 20M, 30M]
repetitions: 1
order: sequential
"""
RID = "20261122T031819Z_distinct-bottleneck_link2-{}M_rep-1_c1-r{}a1"


@pytest.fixture
def lab(pg_url, tmp_path, monkeypatch):
    """This controller: its own state and runs dirs, the lab database; no inventory configured
    (an unbound daemon's inventories are the shipped ones)."""
    state, runs = tmp_path / "state", tmp_path / "runs"
    state.mkdir()
    runs.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("CTL_INVENTORY", "CTL_CONFIG")}
    env.update(CTL_DATABASE_URL=pg_url, CTL_STATE_DIR=str(state), CTL_RUNS_DIR=str(runs), PYTHONUNBUFFERED="1")
    for k in ("CTL_DATABASE_URL", "CTL_STATE_DIR", "CTL_RUNS_DIR"):
        monkeypatch.setenv(k, env[k])
    monkeypatch.delenv("CTL_INVENTORY", raising=False)
    store = PostgresStore(pg_url)
    yield store, env, tmp_path
    store.close()


def submit(store, tmp_path: Path, inventory: Path | None = None):
    f = tmp_path / "trust.yaml"
    f.write_text(CAMPAIGN)
    spec, _lines, text = load_campaign(f)
    cases = expand_cases(spec)
    planned = order_runs(len(cases), spec.repetitions, spec.order, None)
    return store.submit(spec=spec, file_path=f, file_text=text,
                        inventory_path=inventory or PROJECT / "inventory" / "virtual.yaml", inventory_name="vtest",
                        runs_root=tmp_path / "runs", seed=None, not_before=None, cases=cases, planned=planned,
                        durations={c.index: 3.0 for c in cases})


def complete(store, c, seq: int, record_dir: Path, controller: str = "bob@ctl-b:4242/vtest") -> str:
    """Run `seq` of campaign `c` done as a rack's scheduler records it; returns its run id."""
    rid = RID.format(10 * seq, seq)
    assert store.claim_next(c.num, rack="vtest", holder=controller, lease_s=60).seq == seq
    a = store.start_attempt(c.num, seq, rid, record_dir, None, holder=controller, rack="vtest", controller=controller)
    assert store.finish_attempt(c.num, seq, a, status="completed", exit_code=0, error=None, klass="ok",
                                decision=Decision("done", "done"), holder=controller)
    return rid


def upload(store, c, seq: int, run_id: str) -> None:
    store.put_record(run_id=run_id, num=c.num, seq=seq, attempt=1, rack="vtest", controller="bob@ctl-b:4242/vtest",
                     record_dir=Path("/elsewhere/runs") / "x", status="completed",
                     manifest={"format_version": 1, "status": "completed"}, summary={"jain_index": 0.9})


def ctl(env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "controller", *args], cwd=PROJECT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def data(p: subprocess.CompletedProcess):
    """What a `--json` command printed (inside its envelope when the output has one)."""
    doc = json.loads(p.stdout)
    return doc["data"] if isinstance(doc, dict) and {"format", "data"} <= set(doc) else doc


def one_line(p: subprocess.CompletedProcess, code: int = 2) -> str:
    err = p.stderr.strip().splitlines()
    assert p.returncode == code and len(err) == 1 and "Traceback" not in p.stderr, (p.returncode, p.stdout, p.stderr)
    assert not has_control(err[0])
    return err[0]


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []


# ---- export: a row never chooses where root writes ------------------------------------------------

@pytest.mark.parametrize("bad", ["../x", "/tmp/lfh-abs-{pid}", "../../lfh-{pid}/manifest"])
def test_export_refuses_a_records_row_whose_run_id_is_a_path(lab, bad):
    store, env, tmp = lab
    bad = bad.format(pid=os.getpid())
    c = submit(store, tmp)
    good = complete(store, c, 1, tmp / "elsewhere" / "r1")
    upload(store, c, 1, good)
    upload(store, c, 2, bad)
    out = tmp / "exports" / "out"
    before = tree(tmp)
    target = (out / bad).resolve()
    try:
        line = one_line(ctl(env, "campaign", "export", str(c.num), "--out", str(out)))
        assert f"lab database row records run_id {bad}" in line and "is not a run id ctl writes" in line
        assert not target.exists() and not out.exists()          # checked before anything is written
        assert tree(tmp) == before
    finally:
        if target.exists() and str(target).startswith("/tmp/lfh-"):   # what the old code wrote
            for p in sorted(target.rglob("*"), reverse=True):
                p.unlink() if not p.is_dir() else p.rmdir()
            target.rmdir()


def test_export_refuses_a_planted_symlink_in_out_and_leaves_its_target_alone(lab):
    store, env, tmp = lab
    c = submit(store, tmp)
    rids = [complete(store, c, s, tmp / "elsewhere" / f"r{s}") for s in (1, 2)]
    for s, rid in zip((1, 2), rids, strict=True):
        upload(store, c, s, rid)
    out = tmp / "out"
    out.mkdir()
    victim_dir = tmp / "victim-dir"
    victim_dir.mkdir()
    (out / rids[0]).symlink_to(victim_dir)                       # the record directory is a link
    line = one_line(ctl(env, "campaign", "export", str(c.num), "--out", str(out)))
    assert f"refusing record directory {out}/{rids[0]}: not a real directory (a symlink" in line
    assert list(victim_dir.iterdir()) == []
    # a link in place of a file of a record directory: refused, its target unchanged
    (out / rids[0]).unlink()
    victim = tmp / "victim"
    victim.write_text("precious\n")
    (out / rids[1]).mkdir()
    (out / rids[1] / "summary.json").symlink_to(victim)
    line = one_line(ctl(env, "campaign", "export", str(c.num), "--out", str(out)))
    assert f"refusing record file {out}/{rids[1]}/summary.json: not a regular file (a symlink" in line
    assert victim.read_text() == "precious\n"
    # a FIFO there: refused at once, never opened (before: a write waits for a reader forever)
    (out / rids[1] / "summary.json").unlink()
    os.mkfifo(out / rids[1] / "summary.json")
    line = one_line(ctl(env, "campaign", "export", str(c.num), "--out", str(out), timeout=60))
    assert "not a regular file (a FIFO" in line
    # nothing planted: both written
    (out / rids[1] / "summary.json").unlink()
    p = ctl(env, "campaign", "export", str(c.num), "--out", str(out))
    assert p.returncode == 0 and "2 records of campaign" in p.stdout, p.stderr
    assert json.loads((out / rids[1] / "summary.json").read_text()) == {"jain_index": 0.9}


def test_export_says_where_the_records_of_completed_runs_are_instead_of_writing_nothing(lab):
    """Issue 25: 'export' printed '0 records ... written' with exit 0 for a campaign whose
    completed runs' records were not in the lab database."""
    store, env, tmp = lab
    c = submit(store, tmp)
    rids = [complete(store, c, s, Path(f"/srv/bob/runs/r{s}")) for s in (1, 2, 3)]
    out = tmp / "out"
    p = ctl(env, "campaign", "export", str(c.num), "--out", str(out))
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert p.stdout.strip() == \
        f"0 records of campaign #{c.num} written under {out}; 3 runs of the campaign are done"
    err = one_line(p, code=1)
    assert err.startswith("3 completed runs have no record in the store (postgresql://")
    assert f"run 1 {rids[0]} (/srv/bob/runs/r1 on ctl-b)" in err and "on the controller that ran them" in err
    # once one is uploaded, that one is exported and the two others are still named
    upload(store, c, 2, rids[1])
    p = ctl(env, "campaign", "export", str(c.num), "--out", str(out))
    assert p.returncode == 1 and p.stdout.startswith(f"1 records of campaign #{c.num}")
    assert "2 completed runs" in p.stderr
    assert tree(out) == [rids[1], f"{rids[1]}/manifest.json", f"{rids[1]}/summary.json"]


def test_export_from_a_local_store_copies_this_controllers_own_records(tmp_path, monkeypatch):
    """The local store (SQLite) uploads nothing: its records are read where its runs wrote them."""
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("CTL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.delenv("CTL_DATABASE_URL", raising=False)
    store = SQLiteStore()
    try:
        c = submit(store, tmp_path)
        for s in (1, 2, 3):
            rec = RunRecord(tmp_path / "runs", RID.format(10 * s, s))
            rec.start(scenario="distinct-bottleneck", parameters={}, inventory={"name": "vtest"}, inventory_file="",
                      campaign=c.id)
            rec.write_json("summary.json", {"jain_index": 0.5 + s / 10})
            rec.finish("completed")
            complete(store, c, s, rec.dir)
    finally:
        store.close()
    env = {**os.environ, "CTL_STATE_DIR": str(tmp_path / "state"), "CTL_RUNS_DIR": str(tmp_path / "runs")}
    env.pop("CTL_DATABASE_URL", None)
    out = tmp_path / "out"
    p = ctl(env, "campaign", "export", str(c.num), "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == (f"3 records of campaign #{c.num} written under {out} (3 from this controller's own "
                                "records); 3 runs of the campaign are done")
    assert json.loads((out / RID.format(20, 2) / "summary.json").read_text()) == {"jain_index": 0.7}
    assert json.loads((out / RID.format(20, 2) / "manifest.json").read_text())["status"] == "completed"


# ---- report: a campaign id never names a directory outside the state dir ----------------------------

def test_report_refuses_a_campaign_id_with_dotdot(lab):
    store, env, tmp = lab
    c = submit(store, tmp)
    escape = f"../../../lfh-report-{os.getpid()}"
    store.conn.execute("UPDATE campaigns SET id=%s WHERE num=%s", (escape, c.num))
    target = (tmp / "state" / "campaigns" / escape).resolve()
    line = one_line(ctl(env, "campaign", "report", str(c.num)))
    assert f"lab database row campaigns #{c.num}: campaign id '{escape}' is not a campaign id ctl writes" in line
    assert not target.exists() and not (tmp / "state" / "campaigns").exists()
    # the listing names the row on stderr and goes on; JSON the same
    p = ctl(env, "campaign", "status")
    assert p.returncode == 0 and p.stdout == "" and f"campaign #{c.num} not shown: lab database row" in p.stderr
    p = ctl(env, "campaign", "status", "--json")
    assert p.returncode == 0 and data(p) == []


# ---- text: control characters from rows are printed escaped ------------------------------------------

EVIL = "\x1b]0;owned\x07\x1b[2J\x9b31m\u202eexe.txt\u2066\n2nd line\x7f"


def test_status_prints_names_reasons_and_errors_with_their_control_characters_escaped(lab):
    store, env, tmp = lab
    c = submit(store, tmp)
    named = submit(store, tmp)
    store.set_state(c.num, "paused", EVIL)
    rid = RID.format(10, 1)
    assert store.claim_next(c.num, rack="vtest", holder="h", lease_s=60) is None   # paused: nothing claimed
    store.set_state(c.num, "running", None)
    assert store.claim_next(c.num, rack="vtest", holder="h", lease_s=60).seq == 1
    a = store.start_attempt(c.num, 1, rid, tmp / "runs" / rid, None, holder="h", rack="vtest", controller=EVIL)
    store.finish_attempt(c.num, 1, a, status="failed", exit_code=1, error=EVIL, klass="traffic-error",
                         decision=Decision("failed", "skip", counts_failure=True), holder="h")
    store.pause_if_active(c.num, EVIL)
    store.conn.execute("UPDATE campaigns SET name=%s, activity=%s WHERE num=%s", ("\x1b[31mred", EVIL, named.num))
    outputs = [ctl(env, "campaign", "status"), ctl(env, "campaign", "status", str(c.num))]
    for p in outputs:
        assert p.returncode == 0, p.stderr
        for line in (p.stdout + p.stderr).splitlines():
            assert not has_control(line), repr(line)
        assert "\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\u202eexe.txt\\u2066\\n2nd line\\x7f" in p.stdout
    assert "run 1 attempt 1: traffic-error -> skip: \\x1b]0;owned" in outputs[1].stdout
    # the campaign whose name holds ESC is a row ctl never writes: named, escaped, on stderr
    assert f"campaign #{named.num} not shown: lab database row campaigns #{named.num}: campaign name " \
           "'\\x1b[31mred'" in outputs[0].stderr
    # JSON escapes them itself (and the values stay what was written)
    p = ctl(env, "campaign", "status", str(c.num), "--json")
    assert "\x1b" not in p.stdout and data(p)["reason"] == EVIL


# ---- an unbound daemon never loads an inventory a row names ----------------------------------------

def test_an_unbound_daemon_does_not_load_an_inventory_path_from_the_database(lab):
    """The row names a FIFO outside this controller's inventory directories. If anything opened
    it to read, the writer waiting on its other end would return: it never does; the campaign
    is paused with the reason, and the daemon (--exit-when-idle) ends."""
    store, env, tmp = lab
    c = submit(store, tmp)
    foreign = tmp / "members-home" / "rack.yaml"
    foreign.parent.mkdir()
    os.mkfifo(foreign)
    store.conn.execute("UPDATE campaigns SET inventory_path=%s WHERE num=%s", (str(foreign), c.num))
    opened = threading.Event()

    def writer() -> None:
        try:
            fd = os.open(foreign, os.O_WRONLY)        # returns only once someone opens it for reading
        except OSError:
            return
        opened.set()
        os.close(fd)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        p = ctl(env, "campaign", "daemon", "--exit-when-idle", timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        assert not opened.is_set(), "the inventory named by the database was opened"
        st = data(ctl(env, "campaign", "status", str(c.num), "--json"))
        assert st["state"] == "paused"
        assert st["reason"].startswith(f"lab database row campaigns #{c.num}: inventory_path {foreign} is not under ")
        assert str(PROJECT / "inventory") in st["reason"] and "not used" in st["reason"]
        assert f"campaign #{c.num} PAUSED: lab database row" in p.stdout + p.stderr
        assert stat.S_ISFIFO(os.lstat(foreign).st_mode)
    finally:
        if not opened.is_set():                       # release the writer thread
            fd = os.open(foreign, os.O_RDONLY | os.O_NONBLOCK)
            time.sleep(0.1)
            os.close(fd)
        t.join(5)
