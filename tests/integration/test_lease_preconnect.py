"""`ctl run` opens the SSH connection to the rack's lease host before it has imported the rest of
what a run needs (HostLease.preconnect, issue 28: start-up), and takes the lease over it under the
rack lock. On the virtual rack's real sshd: the early connection is only a connection (nobody holds
the rack until the lock is taken), the lease then rides on it, a connection that failed is opened
again, and one never used is closed."""
from __future__ import annotations

import threading

import pytest

from controller.errors import RackBusy, SSHError
from controller.lock import RackLock
from controller.rack.lease import HostLease, hold_rack

pytestmark = pytest.mark.integration


def _holder(inv):
    """Who holds the rack's host lease now (a stale note of an earlier holder is nobody)."""
    h = HostLease(inv, "reader").holder()
    return h if h is not None and h.alive else None


def _lease_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("lease-") and t.is_alive()]


def test_the_lease_is_taken_over_the_early_connection_and_only_under_the_lock(rack):
    inv = rack.inventory
    lease = HostLease(inv, "preconnect test")
    lease.preconnect()
    early = lease._early.result(30)               # the connection is open ...
    assert early._conn is not None and not early._conn.is_closed()
    assert _holder(inv) is None   # ... and nobody holds the rack yet
    with hold_rack(inv, "preconnect test", leases=[lease]) as hold:
        assert hold.lease is lease and lease._session is early       # taken over that connection
        held = _holder(inv)
        assert held is not None and held.purpose == "preconnect test"
    assert _holder(inv) is None
    assert early._conn is None and not _lease_threads()


def test_an_early_connection_that_failed_is_opened_again(rack, monkeypatch):
    inv = rack.inventory
    real = HostLease._connect
    calls = []

    async def first_fails(self):
        calls.append(1)
        if len(calls) == 1:
            raise SSHError(self.place.target.name, "connection refused (the rack was not up yet)")
        return await real(self)

    monkeypatch.setattr(HostLease, "_connect", first_fails)
    lease = HostLease(inv, "preconnect test")
    lease.preconnect()
    with pytest.raises(SSHError):
        lease._early.result(30)
    with hold_rack(inv, "preconnect test", leases=[lease]):
        held = _holder(inv)
        assert held is not None and held.purpose == "preconnect test"
    assert len(calls) == 1            # the second connection is the ordinary one of try_acquire
    assert _holder(inv) is None and not _lease_threads()


def test_a_lease_never_taken_closes_its_early_connection(rack):
    inv = rack.inventory
    other = RackLock(inv.name, "another controller on this machine")
    other.acquire()
    try:
        lease = HostLease(inv, "preconnect test")
        lease.preconnect()
        early = lease._early.result(30)
        with pytest.raises(RackBusy):
            with hold_rack(inv, "preconnect test", leases=[lease]):
                pytest.fail("the rack lock is somebody else's")
        assert early._conn is None and lease._loop is None and not _lease_threads()
    finally:
        other.release()
    assert _holder(inv) is None
