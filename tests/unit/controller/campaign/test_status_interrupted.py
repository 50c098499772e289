"""`ctl campaign status` after the scheduler is gone: a campaign the store still says is
running is shown as interrupted, with the dead scheduler's pid and the command that continues
it (pure, from the scheduler lock's records), and a real lock file left by a killed process."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from controller.campaign.status import SchedulerView, interruption, scheduler_view, serves

DAEMON = {"pid": 4242, "purpose": "ctl campaign daemon"}


def test_a_live_daemon_serves_every_campaign():
    v = SchedulerView(DAEMON, None)
    assert serves(DAEMON, 3) and interruption("running", True, 3, v) is None


def test_a_campaign_left_running_by_a_killed_scheduler():
    v = SchedulerView(None, {"pid": 4242, "purpose": "ctl campaign daemon"})
    assert interruption("running", True, 3, v) == "interrupted, scheduler pid 4242 gone, `ctl campaign resume 3`"
    assert interruption("running", False, 3, v) == "interrupted, scheduler pid 4242 gone, `ctl campaign resume 3`"
    # queued and never started, paused, done: not interrupted (queued just waits for a scheduler)
    assert interruption("queued", False, 3, v) is None
    assert interruption("paused", False, 3, v) is None and interruption("done", False, 3, v) is None


def test_a_scheduler_stopped_cleanly_between_runs():
    assert interruption("running", False, 2, SchedulerView(None, None)) == \
        "interrupted, its scheduler stopped, `ctl campaign resume 2`"


def test_a_foreground_resume_serves_only_its_campaign():
    fg = {"pid": 77, "purpose": "ctl campaign resume #5"}
    assert serves(fg, 5) and not serves(fg, 3)
    v = SchedulerView(fg, None)
    assert interruption("running", True, 5, v) is None
    assert interruption("running", True, 3, v) == \
        "interrupted: the running scheduler (pid 77) serves only #5; `ctl campaign resume 3`"


KILLED = textwrap.dedent("""
    import os, signal
    from controller.campaign.attempts import SchedulerLock
    assert SchedulerLock("ctl campaign daemon").try_acquire()
    print(os.getpid(), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
""")


def test_the_lock_record_of_a_killed_scheduler(tmp_path, monkeypatch):
    from tests.support.shipped import ROOT
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    assert scheduler_view() == SchedulerView(None, None)
    p = subprocess.run([sys.executable, "-c", KILLED], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == -9, p.stderr
    pid = int(p.stdout)
    v = scheduler_view()
    assert v.owner is None and v.last is not None and v.last["pid"] == pid
    assert interruption("running", True, 1, v) == f"interrupted, scheduler pid {pid} gone, `ctl campaign resume 1`"
