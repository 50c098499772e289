"""controller.lock.RackLock: one run or campaign per rack; a dead holder's lock is taken over.

A real second process holds the lock (a child python that takes it and waits on stdin), so
the flock semantics are the kernel's, not simulated. CTL_STATE_DIR and CTL_LOCK_DIR point
into tmp_path.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from controller.errors import RackBusy
from controller import lock as lockmod
from controller.lock import RackLock
from tests.support.shipped import ROOT


HOLDER = textwrap.dedent("""
    import sys
    from controller.lock import RackLock
    lock = RackLock(sys.argv[1], "test holder").acquire()
    print("locked", flush=True)
    sys.stdin.read()          # hold until stdin closes (or the process is killed)
    lock.release()
""")


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("CTL_LOCK_DIR", str(tmp_path / "locks"))
    return tmp_path / "state"


@pytest.fixture
def holder(state):
    procs: list[subprocess.Popen] = []

    def start(rack: str = "virtual") -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, "-c", HOLDER, rack], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, cwd=ROOT, env={**os.environ, "CTL_STATE_DIR": str(state)})
        procs.append(p)
        assert p.stdout.readline().strip() == "locked"
        return p

    yield start
    for p in procs:        # end only the processes this test started, by their PID
        if p.poll() is None:
            p.kill()
        p.wait()


def test_rack_lock_lives_in_the_machine_wide_lock_dir(state, tmp_path):
    lock = RackLock("virtual", "ctl run x")
    assert lock.path == tmp_path / "locks" / "virtual.lock"
    with lock:
        owner = json.loads(lock.path.read_text())
        assert owner["pid"] == os.getpid() and owner["purpose"] == "ctl run x"
        assert owner["state_dir"] == str(state)
    assert lock.owner() is None                     # released: no owner recorded


def test_default_lock_dir_is_run_lock_ctl_else_the_state_dir(state, tmp_path, monkeypatch):
    monkeypatch.delenv("CTL_LOCK_DIR")
    assert lockmod.SYSTEM_LOCK_DIR == Path("/run/lock/ctl")
    (tmp_path / "run-lock").mkdir()
    monkeypatch.setattr(lockmod, "SYSTEM_LOCK_DIR", tmp_path / "run-lock" / "ctl")
    assert RackLock("virtual", "x").path == tmp_path / "run-lock" / "ctl" / "virtual.lock"
    monkeypatch.setattr(lockmod, "SYSTEM_LOCK_DIR", tmp_path / "no-such-dir" / "ctl")
    assert RackLock("virtual", "x").path == state / "locks" / "virtual.lock"


def test_another_checkout_cannot_take_the_same_rack(holder, tmp_path, monkeypatch):
    # A second clone of ctl has its own state dir; the rack lock is still the same one.
    child = holder("virtual")
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "other-checkout" / ".state"))
    with pytest.raises(RackBusy) as ei:
        RackLock("virtual", "ctl run distinct-bottleneck").acquire()
    assert f"rack virtual is in use by pid {child.pid}" in str(ei.value)
    assert f"state dir {tmp_path / 'state'}" in str(ei.value)


def test_second_lock_in_another_process_is_busy_naming_the_pid(holder):
    child = holder("virtual")
    with pytest.raises(RackBusy) as ei:
        RackLock("virtual", "ctl run distinct-bottleneck").acquire()
    msg = str(ei.value)
    assert f"rack virtual is in use by pid {child.pid}" in msg
    assert "test holder" in msg
    assert ei.value.exit_code == 3
    # since when, in ISO 8601 with the zone (was `2026-11-26 21:01:07`, no zone)
    assert re.search(r", since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)\)", msg), msg


def test_two_locks_in_one_process_exclude_each_other(state):
    first = RackLock("virtual", "first").acquire()
    try:
        with pytest.raises(RackBusy, match=f"in use by pid {os.getpid()}"):
            RackLock("virtual", "second").acquire()
    finally:
        first.release()
    with RackLock("virtual", "second") as again:
        assert again.broke_stale is None


def test_other_racks_are_independent(holder):
    holder("virtual")
    with RackLock("lab-rack", "x") as lock:
        assert lock.broke_stale is None


def test_lock_is_free_after_a_clean_release(holder):
    child = holder("virtual")
    child.stdin.close()
    assert child.wait(timeout=10) == 0
    with RackLock("virtual", "next") as lock:
        assert lock.broke_stale is None             # released properly: nothing stale


def test_kill_9_frees_the_lock_and_reports_the_dead_holder(holder):
    child = holder("virtual")
    pid = child.pid
    os.kill(pid, signal.SIGKILL)
    child.wait(timeout=10)                          # reaped, as its parent shell would
    lock = RackLock("virtual", "after crash").acquire()
    try:
        assert lock.broke_stale is not None
        assert lock.broke_stale["pid"] == pid
        assert lock.broke_stale["purpose"] == "test holder"
        assert json.loads(lock.path.read_text())["pid"] == os.getpid()
    finally:
        lock.release()
