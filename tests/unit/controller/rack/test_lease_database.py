"""Rack leases and reservations in the lab database (a real PostgreSQL, `pg_url`): a lease is
held by a live process only, named to whoever else asks, and gone the moment its holder is
killed -9 (PostgreSQL ends the session's advisory locks); reservations refuse overlaps and are
cancelled by their owner (who owns what, and who else may cancel: test_owners.py; lock keys:
test_lock_keys.py)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from controller.errors import RackBusy, UsageError
from controller.inventory import load_inventory
from controller.rack.lease import DatabaseLease, hold_rack
from controller.rack.reservations import DatabaseBook, RackReserved, check_new, overlapping
from tests.support.shipped import ROOT, VIRTUAL

HOLDER = textwrap.dedent("""
    import sys, time
    from controller.rack.lease import DatabaseLease
    lease = DatabaseLease(sys.argv[1], sys.argv[2], "ctl run distinct-bottleneck")
    assert lease.try_acquire() is None
    print("held", flush=True)
    time.sleep(3600)
""")


@pytest.fixture
def env(pg_url, tmp_path, monkeypatch):
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("CTL_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("CTL_DATABASE_URL", pg_url)
    return pg_url


def test_a_lease_names_its_holder_and_dies_with_it(env):
    child = subprocess.Popen([sys.executable, "-c", HOLDER, env, "rack-x"], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env={**os.environ})
    try:
        assert child.stdout.readline().strip() == "held", child.stderr.read()
        mine = DatabaseLease(env, "rack-x", "second")
        h = mine.try_acquire()
        assert h is not None and h.pid == child.pid and h.alive and h.purpose == "ctl run distinct-bottleneck"
        assert f"(pid {child.pid}, ctl run distinct-bottleneck, since " in h.text() and "lab database" in h.text()
        assert mine.holder().pid == child.pid
        # another rack is not affected
        other = DatabaseLease(env, "rack-y", "other")
        assert other.try_acquire() is None
        assert other.key != mine.key and other.key[0] == mine.key[0]      # one class, one id per rack
        other.release()
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        t0 = time.monotonic()
        while mine.try_acquire() is not None:
            assert time.monotonic() - t0 < 10, "the dead holder's lease was not released"
            time.sleep(0.1)
        assert mine.holder().pid == os.getpid()
        mine.release()
        last = mine.holder()
        assert last is None or not last.alive
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)


def test_hold_rack_waits_for_the_lease_and_says_for_whom(env):
    """The database lease alone (a unit test has no rack for the host lease hold_rack also takes:
    that one and the cross-check are in tests/integration/test_lab_trust_locks.py)."""
    inv = load_inventory(VIRTUAL)

    def db_only() -> list:
        return [DatabaseLease(env, inv.name, "test")]

    child = subprocess.Popen([sys.executable, "-c", HOLDER, env, inv.name], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    said: list[str] = []
    try:
        assert child.stdout.readline().strip() == "held"
        with pytest.raises(RackBusy, match=rf"rack {inv.name} is leased by .* \(pid {child.pid}, .*--wait waits"):
            with hold_rack(inv, "test", say=said.append, leases=db_only()):
                pass
        assert said == []                                   # not asked to wait: refused, nothing said
        # asked to wait less than one look takes: still told whom it waited for before the refusal
        with pytest.raises(RackBusy, match="is leased by"):
            with hold_rack(inv, "test", wait_s=0.001, say=said.append, leases=db_only()):
                pass
        assert len(said) == 1 and said[0].startswith(f"waiting for the rack: rack {inv.name} is leased by"), said
        said.clear()
        t0 = time.monotonic()
        with pytest.raises(RackBusy, match="is leased by"):
            with hold_rack(inv, "test", wait_s=3, say=said.append, leases=db_only()):
                pass
        assert 2.0 <= time.monotonic() - t0 < 10 and len(said) == 1 and said[0].startswith("waiting for the rack")
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        with hold_rack(inv, "test", wait_s=10, leases=db_only()) as hold:
            assert hold.lease.holder().pid == os.getpid() and hold.lost is None
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)


def test_reservations_in_the_database(env):
    now = time.time()
    book = DatabaseBook(env, "rack-x")
    r = book.add(now + 3600, now + 7200, "calibration")
    assert (r.user, r.owner, r.note, r.rack) == ("ctl", "ctl", "calibration", "rack-x")   # the database login
    with pytest.raises(RackReserved, match="overlaps reservation #"):
        book.add(now + 7000, now + 9000, "")
    r2 = book.add(now + 7200, now + 9000, "")                 # back to back is fine
    assert DatabaseBook(env, "rack-y").add(now + 3600, now + 7200, "").id not in (r.id, r2.id)
    assert [x.id for x in book.list()] == [r.id, r2.id]
    assert book.cancel(r.id).id == r.id
    with pytest.raises(UsageError, match=f"no reservation #{r.id}"):
        book.cancel(r.id)
    assert [x.id for x in book.list()] == [r2.id]
    assert overlapping(book.list(), now + 8000, now + 8001) and not overlapping(book.list(), now, now + 7199)


def test_bad_reservations_are_refused_before_anything(tmp_path):
    now = time.time()
    with pytest.raises(UsageError, match="--to must be after --from"):
        check_new("r", now + 10, now, "", now)
    with pytest.raises(UsageError, match="that time is over"):
        check_new("r", now - 100, now - 10, "", now)
    with pytest.raises(UsageError, match="more than 31 days"):
        check_new("r", now, now + 40 * 86400, "", now)
    with pytest.raises(UsageError, match="one line"):
        check_new("r", now, now + 60, "a\nb", now)
