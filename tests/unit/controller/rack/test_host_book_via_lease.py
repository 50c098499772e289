"""The reservation check before a run reads the host book over the rack's held host lease instead of
a second SSH connection to the same host (issue 28: start-up). Only a lease that is held here, is
still alive and lives at the book's place lends its connection; otherwise the book opens its own
(tests/integration/test_lab_trust_locks.py runs both against real hosts)."""
from __future__ import annotations

from dataclasses import replace

from controller.rack.lease import HostLease, lease_place
from controller.rack.reservations import HostBook, book_for


def test_a_lease_not_held_here_lends_nothing(invs, monkeypatch):
    monkeypatch.delenv("CTL_DATABASE_URL", raising=False)
    inv = invs["virtual"]
    lease = HostLease(inv, "test")
    place = lease_place(inv)
    assert lease.run(place, ("true",)) is None                  # never taken: no connection
    book = book_for(inv, lease)
    assert isinstance(book, HostBook) and book.via is lease


def test_a_held_lease_lends_only_to_its_own_place(invs):
    inv = invs["virtual"]
    lease = HostLease(inv, "test")
    lease._session, lease._loop, lease._proc = object(), object(), object()   # as if held
    other = replace(lease_place(inv), directory="/elsewhere")
    assert lease.run(other, ("true",)) is None
    lease.lost = "the lease process ended"
    assert lease.run(lease_place(inv), ("true",)) is None      # a lost lease lends nothing either
