"""The campaign daemon never exits over bad data in one campaign: that campaign pauses with
the reason (traceback kept in its directory), the others go on. And campaign files that
would expand to millions of runs, or finish years from now, are refused before anything
is expanded or queued."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest

from controller.campaign.boundary import UntrustedRow
from controller.campaign.plan import expand_cases, order_runs
from controller.campaign.scheduler import Scheduler, SchedulerOptions
from controller.campaign.spec import MAX_RUNS, load_campaign
from controller.campaign.sqlite_store import SQLiteStore
from controller.campaign.store import campaign_dir
from tests.support.shipped import ROOT, VIRTUAL

GOOD = """
version: 1
name: {name}
scenario: distinct-bottleneck
fixed: {{duration: 5s}}
sweep:
  link2: [10M, 20M]
repetitions: 1
order: sequential
"""


def _submit(store: SQLiteStore, tmp_path, name: str, inventory) -> int:
    f = tmp_path / f"{name}.yaml"
    f.write_text(GOOD.format(name=name))
    spec, _lines, text = load_campaign(f)
    cases = expand_cases(spec)
    planned = order_runs(len(cases), spec.repetitions, spec.order, spec.seed)
    c = store.submit(spec=spec, file_path=f, file_text=text, inventory_path=inventory, inventory_name="vunit",
                     runs_root=tmp_path / "runs", seed=None, not_before=None, cases=cases, planned=planned,
                     durations={x.index: 5.0 for x in cases})
    return c.num


def test_bad_data_in_one_campaign_pauses_it_and_the_daemon_goes_on(tmp_path, tmp_state_dir):
    store = SQLiteStore()
    bad = _submit(store, tmp_path, "bad", tmp_path / "inv.yaml")
    other = _submit(store, tmp_path, "other", tmp_path / "missing-inventory.yaml")
    # Bad data in the store (a hand edit, a half-migrated row): its spec no longer parses.
    store.db.execute("UPDATE campaigns SET spec_json=? WHERE num=?", ('{"version": 1, "scenario": 7}', bad))
    lines: list[str] = []
    sched = Scheduler(store, lines.append, SchedulerOptions(exit_when_idle=True, poll_s=0.05))
    assert asyncio.run(asyncio.wait_for(sched.serve(), 30)) == 0         # returned, did not raise
    # The row fails the store's checks (controller.campaign.boundary): it is never used, and paused
    # with the reason, which names the row and the field.
    state, reason = store.db.execute("SELECT state, reason FROM campaigns WHERE num=?", (bad,)).fetchone()
    assert state == "paused" and reason.startswith(f"lab database row campaigns #{bad}: spec_json ")
    assert "is not a campaign (1 errors)" in reason
    with pytest.raises(UntrustedRow):
        store.campaign(bad)
    o = store.campaign(other)
    # The other campaign was still driven: its own problem (no inventory) paused it with its own reason.
    assert o.state == "paused" and o.reason.startswith("inventory not loadable")
    assert sum(f"campaign #{bad} PAUSED" in line for line in lines) == 1
    store.close()


def test_an_exception_while_planning_one_campaign_pauses_it_and_the_daemon_goes_on(tmp_path, tmp_state_dir):
    """A bug (not bad data) in planning one campaign's next step: that campaign pauses with the
    exception, the traceback goes to its scheduler-errors.log, the other campaigns go on."""
    store = SQLiteStore()
    bad = _submit(store, tmp_path, "bad", tmp_path / "inv.yaml")
    other = _submit(store, tmp_path, "other", tmp_path / "missing-inventory.yaml")

    class Buggy(Scheduler):
        def _step(self, c, *a, **kw):
            if c.num == bad:
                raise ZeroDivisionError("a bug")
            return super()._step(c, *a, **kw)

    sched = Buggy(store, [].append, SchedulerOptions(exit_when_idle=True, poll_s=0.05))
    assert asyncio.run(asyncio.wait_for(sched.serve(), 30)) == 0
    b, o = store.campaign(bad), store.campaign(other)
    assert b.state == "paused" and b.reason == "the scheduler failed planning its next step: ZeroDivisionError: a bug"
    log = (campaign_dir(b.id) / "scheduler-errors.log").read_text()
    assert "Traceback" in log and "ZeroDivisionError" in log
    assert o.state == "paused" and o.reason.startswith("inventory not loadable")
    store.close()


def _ctl(args: list[str], state) -> subprocess.CompletedProcess:
    env = {"CTL_STATE_DIR": str(state), "PATH": "/usr/bin:/bin", "HOME": str(state)}
    return subprocess.run([sys.executable, "-m", "controller", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)


def test_a_campaign_of_millions_of_runs_is_refused_before_expansion(tmp_path, tmp_state_dir):
    values = ", ".join(f"{i}M" for i in range(1, 1001))
    f = tmp_path / "huge.yaml"
    f.write_text(f"version: 1\nscenario: distinct-bottleneck\nsweep:\n  link2: [{values}]\n"
                 f"  queue: [{', '.join(str(i) for i in range(10, 1010))}]\nrepetitions: 10\n")
    t0 = time.monotonic()
    p = _ctl(["campaign", "plan", str(f), "--inventory", str(VIRTUAL)], tmp_state_dir)
    assert p.returncode == 2 and p.stdout == ""
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and "10000000 runs" in err[0] and f"at most {MAX_RUNS}" in err[0], p.stderr
    assert time.monotonic() - t0 < 30          # refused, not expanded (a generous bound, not a benchmark)
    assert not (tmp_state_dir / "campaigns.sqlite").exists()


def test_a_campaign_finishing_years_from_now_needs_force(tmp_path, tmp_state_dir):
    values = ", ".join(f"{i}M" for i in range(1, 21))
    f = tmp_path / "slow.yaml"
    f.write_text(f"version: 1\nscenario: distinct-bottleneck\nfixed: {{duration: 20s}}\nsweep:\n"
                 f"  link2: [{values}]\nrepetitions: 1000\nwindow: \"22:00-22:30\"\n")
    p = _ctl(["campaign", "plan", str(f), "--inventory", str(VIRTUAL)], tmp_state_dir)
    assert p.returncode == 2, p.stderr
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and "years" in err[0] and "--force" in err[0]
    p = _ctl(["campaign", "plan", str(f), "--inventory", str(VIRTUAL), "--force", "--json"], tmp_state_dir)
    assert p.returncode == 0, p.stderr
    assert len(json.loads(p.stdout)["data"]["runs"]) == 20000
