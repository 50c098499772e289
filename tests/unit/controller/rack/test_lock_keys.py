"""Advisory-lock keys in the lab database cannot collide (a real PostgreSQL, `pg_url`).

The reviewer's finding: rack leases were keyed (0x6374, crc32(name)) and the migration lock was
(0x6374, 1), so a rack whose name has CRC 1 blocked every controller in `migrate`, and two rack
names with one CRC made each other busy. Such names are found in well under a millisecond
(crcforge). Now each rack gets an id from the database (`racks`, one row per name, never
changed) and its lease is keyed (lease class, id); migrations and bookings have classes of
their own."""
from __future__ import annotations

import pytest

from controller.labdb import connect
from controller.labdb.migrations import migrate
from controller.rack.lease import DatabaseLease
from tests.unit.controller.rack.crcforge import crc31, name_with_crc31


@pytest.fixture
def url(pg_url, tmp_path, monkeypatch):
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("CTL_DATABASE_URL", pg_url)
    return pg_url


def test_a_rack_whose_name_has_crc_1_does_not_block_migrations(url):
    evil = name_with_crc31("rack-", 1)
    lease = DatabaseLease(url, evil, "held while another controller starts")
    assert lease.try_acquire() is None
    try:
        conn = connect(url, "test migrate")
        try:
            # Waiting on an advisory lock obeys lock_timeout: a blocked migration fails in 3 s
            # instead of hanging the test.
            conn.execute("SET lock_timeout = '3s'")
            before, after = migrate(conn)
            assert before == after > 0
        finally:
            conn.close()
        other = DatabaseLease(url, "lab-a", "another rack")
        assert other.try_acquire() is None
        other.release()
    finally:
        lease.release()


def test_two_rack_names_with_one_crc_do_not_make_each_other_busy(url):
    a = name_with_crc31("lab-", 12345)
    b = name_with_crc31("rig-", 12345)
    assert a != b and crc31(a) == crc31(b)
    first = DatabaseLease(url, a, "run on a")
    second = DatabaseLease(url, b, "run on b")
    assert first.try_acquire() is None
    try:
        assert second.try_acquire() is None, "rack b is busy because rack a is held"
        second.release()
        # and the same rack is still exclusive
        again = DatabaseLease(url, a, "second run on a")
        holder = again.try_acquire()
        assert holder is not None and holder.purpose == "run on a"
    finally:
        first.release()


def test_rack_ids_are_allocated_once_and_never_change(url):
    from controller.labdb.keys import LEASE_CLASS, MIGRATION_KEY, rack_id
    conn = connect(url, "test")
    try:
        migrate(conn)
        ids = {name: rack_id(conn, name) for name in ("lab-a", "lab-b", name_with_crc31("x-", crc31("lab-a")))}
        assert len(set(ids.values())) == 3
        assert rack_id(conn, "lab-a") == ids["lab-a"]
        assert MIGRATION_KEY[0] != LEASE_CLASS
        import psycopg
        for sql in ("UPDATE racks SET id = DEFAULT WHERE name = 'lab-a'", "DELETE FROM racks WHERE name = 'lab-a'",
                    "UPDATE racks SET name = 'lab-z' WHERE name = 'lab-a'", "TRUNCATE racks"):
            with pytest.raises(psycopg.Error, match="never changed"):
                conn.execute(sql)
        assert rack_id(conn, "lab-a") == ids["lab-a"]
    finally:
        conn.close()
    lease = DatabaseLease(url, "lab-a", "check the key")
    assert lease.try_acquire() is None
    try:
        c2 = connect(url, "test")
        row = c2.execute("SELECT classid, objid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 "
                         "AND granted AND pid <> pg_backend_pid()").fetchall()
        c2.close()
        assert [(r["classid"], r["objid"]) for r in row] == [(LEASE_CLASS, ids["lab-a"])]
    finally:
        lease.release()


def test_a_holder_still_on_a_ctl_from_before_schema_4_is_respected(url):
    """During an upgrade a controller may still hold a rack by the old key (0x6374, crc32): its
    rack_leases row names its session, and the new ctl sees that session's old lock."""
    from controller.rack.lease import legacy_key
    old = connect(url, "old ctl")
    try:
        migrate(old)
        old.execute("SELECT pg_advisory_lock(%s, %s)", legacy_key("lab-a"))
        old.execute("INSERT INTO rack_leases (rack, holder_user, holder_host, holder_pid, backend_pid, purpose, since, "
                    "heartbeat) VALUES ('lab-a', 'x', 'old-pc', 4242, pg_backend_pid(), 'ctl run (old)', 0, 0)")
        new = DatabaseLease(url, "lab-a", "new ctl")
        holder = new.try_acquire()
        assert holder is not None and holder.alive and (holder.host, holder.pid) == ("old-pc", 4242)
    finally:
        old.close()
    assert new.try_acquire() is None        # its session ended: the rack is free
    new.release()
