"""Who owns a reservation is the database's answer, not the environment's (a real PostgreSQL).

The reviewer's finding: the owner was the local login name (getpass: $LOGNAME/$USER), so any
member could cancel another's booking without --force by setting $USER. Now the database
records the owner at insert (the PostgreSQL session user, whatever the client sends) and
compares it on every change: a member cancels only their own reservation; another's only with
--force AND membership of the database role `ctl_admin`; nothing else of a reservation ever
changes. Members are set up as the README says: login roles in the role that owns the schema,
with `SET role` to it (so current_user is the owner role and only session_user tells them
apart); and, in the strict set-up, login roles with table privileges only (they cannot switch
the checks off)."""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import psycopg
import pytest

from controller.errors import UsageError
from controller.labdb import connect
from controller.labdb.migrations import migrate
from controller.rack.lease import DatabaseLease
from controller.rack.reservations import DatabaseBook, others

_n = itertools.count(1)


@dataclass
class Lab:
    server: object
    db: str
    alice: str
    bob: str
    carol: str              # a member of ctl_admin

    def url(self, user: str) -> str:
        return self.server.url(self.db, user)


@pytest.fixture
def lab(pg_server, tmp_path, monkeypatch) -> Lab:
    url = pg_server.fresh_database()
    db = url.split("/")[3].split("?")[0]
    n = f"{db}_{next(_n)}"
    names = [f"alice_{n}", f"bob_{n}", f"carol_{n}"]
    pg_server.admin("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ctl_admin') THEN "
                    "CREATE ROLE ctl_admin NOLOGIN; END IF; END $$")
    for name in names:
        pg_server.admin(f"CREATE ROLE {name} LOGIN IN ROLE ctl")
        pg_server.admin(f"ALTER ROLE {name} IN DATABASE {db} SET role TO ctl")
    pg_server.admin(f"GRANT ctl_admin TO {names[2]}")
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("CTL_DATABASE_URL", raising=False)
    return Lab(pg_server, db, *names)


def _as_user(monkeypatch, name: str) -> None:
    """What the environment claims (the old code believed it)."""
    monkeypatch.setenv("USER", name)
    monkeypatch.setenv("LOGNAME", name)


def test_the_owner_is_the_session_user_and_only_they_cancel(lab, monkeypatch):
    now = time.time()
    _as_user(monkeypatch, lab.bob)                       # alice's shell claims to be bob
    r = DatabaseBook(lab.url(lab.alice), "lab-a").add(now + 3600, now + 7200, "calibration")
    assert r.user == lab.alice
    _as_user(monkeypatch, lab.alice)                     # bob's shell claims to be alice
    bob = DatabaseBook(lab.url(lab.bob), "lab-a")
    assert [x.id for x in others(bob.list(), bob.me())] == [r.id]     # it binds bob
    with pytest.raises(UsageError, match=f"is {lab.alice}'s"):
        bob.cancel(r.id)
    with pytest.raises(UsageError, match="ctl_admin"):
        bob.cancel(r.id, force=True)
    assert [x.id for x in bob.list()] == [r.id]
    carol = DatabaseBook(lab.url(lab.carol), "lab-a")
    with pytest.raises(UsageError, match=f"is {lab.alice}'s"):
        carol.cancel(r.id)                               # an admin still says --force
    assert carol.cancel(r.id, force=True).id == r.id
    with connect(lab.url(lab.alice), "test") as c:
        row = c.execute("SELECT cancelled_by FROM reservations WHERE id = %s", (r.id,)).fetchone()
    assert row["cancelled_by"] == lab.carol
    mine = DatabaseBook(lab.url(lab.alice), "lab-a").add(now + 3600, now + 7200, "")
    assert DatabaseBook(lab.url(lab.alice), "lab-a").cancel(mine.id).id == mine.id


def test_raw_sql_cannot_forge_an_owner_or_change_anothers_booking(lab):
    now = time.time()
    r = DatabaseBook(lab.url(lab.alice), "lab-a").add(now + 3600, now + 7200, "")
    with psycopg.connect(lab.url(lab.bob), autocommit=True) as c:
        got = c.execute("INSERT INTO reservations (rack, owner_user, owner_host, starts, ends, note, created) "
                        "VALUES ('lab-a', %s, 'elsewhere', %s, %s, '', 0) RETURNING owner_user",
                        (lab.alice, now + 9000, now + 9600)).fetchone()
        assert got[0] == lab.bob
        for sql in ("UPDATE reservations SET cancelled = 1 WHERE id = %s",
                    "UPDATE reservations SET ends = ends + 3600 WHERE id = %s",
                    "UPDATE reservations SET owner_user = current_user WHERE id = %s",
                    "DELETE FROM reservations WHERE id = %s"):
            with pytest.raises(psycopg.Error):
                c.execute(sql, (r.id,))
    assert [x.id for x in DatabaseBook(lab.url(lab.alice), "lab-a").list()][0] == r.id


def test_leases_and_campaigns_are_named_by_the_session_user(lab, monkeypatch):
    _as_user(monkeypatch, "somebody-else")
    lease = DatabaseLease(lab.url(lab.alice), "lab-a", "ctl run x")
    assert lease.try_acquire() is None
    try:
        assert DatabaseLease(lab.url(lab.bob), "lab-a", "peek").holder().user == lab.alice
    finally:
        lease.release()
    with psycopg.connect(lab.url(lab.bob), autocommit=True) as c:
        got = c.execute(
            "INSERT INTO campaigns (id, name, scenario, file_path, file_text, file_sha256, spec_json, "
            "inventory_path, inventory_name, runs_root, state, submitted, updated, owner) VALUES "
            "('c1', 'c', 's', 'f', '', '', '{}', 'i', 'lab-a', 'r', 'queued', 0, 0, %s) RETURNING owner",
            (f"{lab.alice}@laptop",)).fetchone()
    assert got[0] == f"{lab.bob}@laptop"


def test_reservations_booked_before_the_migration_keep_their_name_marked_unchecked(lab):
    now = time.time()
    with connect(lab.url("ctl"), "test") as c:
        migrate(c, target=3)
        c.execute("INSERT INTO reservations (rack, owner_user, owner_host, starts, ends, note, created) VALUES "
                  "('lab-a', %s, 'old-laptop', %s, %s, 'legacy', %s)", (lab.alice, now + 100, now + 200, now))
        migrate(c)
    book = DatabaseBook(lab.url(lab.bob), "lab-a")
    (r,) = book.list()
    assert r.user == lab.alice and not r.checked and "unchecked" in r.text()
    with pytest.raises(UsageError, match=f"is {lab.alice}'s"):
        book.cancel(r.id)
    assert DatabaseBook(lab.url(lab.alice), "lab-a").cancel(r.id).id == r.id


def test_strict_setup_members_without_ownership_use_ctl_but_cannot_lift_the_checks(lab, pg_server, tmp_path):
    """The README's strict set-up: the schema's owner (here `ctl`, the administrator's role) grants
    members rows by default privileges before the first ctl creates the schema; members use ctl
    (nothing to create: the schema is up to date) and cannot switch the checks off."""
    member, dave = f"member_{lab.db}", f"dave_{lab.db}"
    pg_server.admin(f"CREATE ROLE {member} NOLOGIN")
    pg_server.admin(f"CREATE ROLE {dave} LOGIN IN ROLE {member}")
    pg_server.admin(f"ALTER DEFAULT PRIVILEGES FOR ROLE ctl GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO "
                    f"{member}; ALTER DEFAULT PRIVILEGES FOR ROLE ctl GRANT USAGE ON SEQUENCES TO {member}",
                    database=lab.db)
    with connect(lab.url("ctl"), "test") as c:      # the administrator's first ctl
        migrate(c)
    now = time.time()
    alices = DatabaseBook(lab.url(lab.alice), "lab-b").add(now + 3600, now + 7200, "")
    book = DatabaseBook(lab.url(dave), "lab-b")
    mine = book.add(now + 7200, now + 9000, "")
    assert mine.user == dave and [x.id for x in book.list()] == [alices.id, mine.id]
    with pytest.raises(UsageError):
        book.cancel(alices.id, force=True)
    assert book.cancel(mine.id).id == mine.id
    lease = DatabaseLease(lab.url(dave), "lab-c", "run")          # a rack nobody named before: a new id
    assert lease.try_acquire() is None
    lease.release()
    from controller.campaign.pg_store import PostgresStore
    store = PostgresStore(lab.url(dave))
    try:
        assert store.campaigns(("queued", "running")) == []
    finally:
        store.close()
    with psycopg.connect(lab.url(dave), autocommit=True) as c:
        for sql in ("ALTER TABLE reservations DISABLE TRIGGER USER", "DROP TRIGGER reservations_guard ON reservations",
                    "ALTER TABLE reservations DROP CONSTRAINT reservations_times", "CREATE TABLE mine (x int)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(sql)
