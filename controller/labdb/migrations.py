"""The lab database's schema, as ordered, versioned migration steps.

`schema_version` holds one row per applied step (version, description, when). `migrate`
applies the missing steps in order, each in its own transaction together with its row, so
a controller killed mid-migration leaves the previous version intact. Concurrent
controllers starting at once are serialised by a transaction-level advisory lock
(`keys.MIGRATION_KEY`, a class no other lock uses). A database whose version is newer than
this ctl's is refused (never written by an older ctl). A database already at this ctl's
version is only read: a member whose role may not create tables (the strict set-up of
docs/howto/shared-lab.md, "Setting up the database") uses ctl all the same.

Step 4 moves who-is-who into the database, where no client can fake it:
- `racks`: a serial id per rack name, never changed or removed (a trigger refuses it): the
  key of the rack's advisory locks (`keys`), so two racks never share a lock;
- reservations: the owner is the PostgreSQL session user, set by a trigger on insert whatever
  the client sends; a reservation is never changed except cancelled, once, by its owner or by a
  member of the role `ctl_admin` (or a superuser), who is recorded (`cancelled_by`); only they
  delete one. Times must be finite, in the years 2000..9999, start < end, at most 31 days (a
  CHECK; rows written before are kept and checked when read: `owner_checked` is false for them,
  their owner being the name the booking controller's environment gave);
- rack leases and campaigns: the holder / submitter recorded is the session user too.
The trigger functions run with `search_path = pg_catalog, pg_temp` and name catalogs in full,
so a member's temporary table cannot stand in for `pg_roles`. Against a member who owns the
tables (the simple set-up of docs/howto/shared-lab.md, "Setting up the database") this holds
for everything done through ctl or plain DML; a table owner can still drop a trigger: the strict
set-up gives members table privileges only.

Steps are append-only: a released step is never edited; a change is a new step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.errors import CtlError
from controller.labdb import DatabaseError, first_line
from controller.labdb.keys import MIGRATION_KEY

MIGRATION_LOCK = MIGRATION_KEY       # pg_advisory_xact_lock key of schema migrations
ADMIN_ROLE = "ctl_admin"             # members of this database role may cancel anybody's reservation
# Reservation times the database accepts (the same bounds as controller.rack.reservations).
EPOCH_MIN, EPOCH_MAX, SPAN_MAX_S = 946684800, 253402300799, 31 * 86400
_IS_ADMIN = (f"(EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = session_user AND r.rolsuper) OR "
             f"EXISTS (SELECT 1 FROM pg_catalog.pg_roles a WHERE a.rolname = '{ADMIN_ROLE}' "
             "AND pg_catalog.pg_has_role(session_user, a.oid, 'MEMBER')))")
_SAFE_PATH = "SET search_path = pg_catalog, pg_temp"


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "campaign store: campaigns, runs, attempts, health checks, events", (
        """CREATE TABLE campaigns (
          num BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          id TEXT NOT NULL UNIQUE,
          name TEXT NOT NULL,
          scenario TEXT NOT NULL,
          file_path TEXT NOT NULL,
          file_text TEXT NOT NULL,
          file_sha256 TEXT NOT NULL,
          spec_json TEXT NOT NULL,
          seed BIGINT,
          inventory_path TEXT NOT NULL,
          inventory_name TEXT NOT NULL,
          runs_root TEXT NOT NULL,
          state TEXT NOT NULL CHECK (state IN ('queued','running','paused','done','cancelled')),
          reason TEXT,
          not_before DOUBLE PRECISION,
          abort_requested INTEGER NOT NULL DEFAULT 0,
          submitted DOUBLE PRECISION NOT NULL,
          started DOUBLE PRECISION,
          finished DOUBLE PRECISION,
          updated DOUBLE PRECISION NOT NULL,
          activity TEXT,
          activity_t DOUBLE PRECISION)""",
        """CREATE TABLE runs (
          campaign BIGINT NOT NULL REFERENCES campaigns(num),
          seq INTEGER NOT NULL,
          case_index INTEGER NOT NULL,
          repetition INTEGER NOT NULL,
          args_json TEXT NOT NULL,
          varied_json TEXT NOT NULL,
          duration_s DOUBLE PRECISION NOT NULL,
          state TEXT NOT NULL CHECK (state IN ('pending','running','done','failed','cancelled')),
          attempts INTEGER NOT NULL DEFAULT 0,
          failures INTEGER NOT NULL DEFAULT 0,
          interruptions INTEGER NOT NULL DEFAULT 0,
          run_id TEXT,
          not_before DOUBLE PRECISION,
          last_class TEXT,
          last_error TEXT,
          PRIMARY KEY (campaign, seq))""",
        """CREATE TABLE health (
          id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          campaign BIGINT NOT NULL REFERENCES campaigns(num),
          t DOUBLE PRECISION NOT NULL,
          ok INTEGER NOT NULL,
          reasons_json TEXT NOT NULL,
          details_json TEXT NOT NULL)""",
        """CREATE TABLE attempts (
          id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          campaign BIGINT NOT NULL REFERENCES campaigns(num),
          seq INTEGER NOT NULL,
          attempt INTEGER NOT NULL,
          run_id TEXT NOT NULL,
          record_dir TEXT NOT NULL,
          health BIGINT REFERENCES health(id),
          started DOUBLE PRECISION NOT NULL,
          finished DOUBLE PRECISION,
          status TEXT NOT NULL,
          exit_code INTEGER,
          class TEXT,
          error TEXT,
          action TEXT,
          UNIQUE (campaign, seq, attempt))""",
        """CREATE TABLE events (
          id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          campaign BIGINT NOT NULL REFERENCES campaigns(num),
          t DOUBLE PRECISION NOT NULL,
          kind TEXT NOT NULL,
          message TEXT NOT NULL)""",
        "CREATE INDEX runs_state ON runs (campaign, state)",
        "CREATE INDEX attempts_run ON attempts (campaign, seq)",
    )),
    Migration(2, "several racks per campaign: run claims with a lease, the rack and controller of each attempt, "
                 "uploaded run records", (
        "ALTER TABLE campaigns ADD COLUMN racks_json TEXT",
        "ALTER TABLE campaigns ADD COLUMN rack_group TEXT",
        "ALTER TABLE campaigns ADD COLUMN owner TEXT",
        "ALTER TABLE runs ADD COLUMN claimed_by TEXT",
        "ALTER TABLE runs ADD COLUMN claim_rack TEXT",
        "ALTER TABLE runs ADD COLUMN claim_until DOUBLE PRECISION",
        "ALTER TABLE attempts ADD COLUMN rack TEXT",
        "ALTER TABLE attempts ADD COLUMN controller TEXT",
        """CREATE TABLE records (
          run_id TEXT PRIMARY KEY,
          campaign BIGINT REFERENCES campaigns(num),
          seq INTEGER,
          attempt INTEGER,
          rack TEXT,
          controller TEXT,
          record_dir TEXT NOT NULL,
          status TEXT NOT NULL,
          manifest_json TEXT NOT NULL,
          summary_json TEXT,
          uploaded DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX records_campaign ON records (campaign, seq)",
    )),
    Migration(3, "rack leases (who holds each rack) and reservations", (
        """CREATE TABLE rack_leases (
          rack TEXT PRIMARY KEY,
          holder_user TEXT NOT NULL,
          holder_host TEXT NOT NULL,
          holder_pid INTEGER NOT NULL,
          backend_pid INTEGER NOT NULL,
          purpose TEXT NOT NULL,
          since DOUBLE PRECISION NOT NULL,
          heartbeat DOUBLE PRECISION NOT NULL)""",
        """CREATE TABLE reservations (
          id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          rack TEXT NOT NULL,
          owner_user TEXT NOT NULL,
          owner_host TEXT NOT NULL,
          starts DOUBLE PRECISION NOT NULL,
          ends DOUBLE PRECISION NOT NULL,
          note TEXT NOT NULL DEFAULT '',
          created DOUBLE PRECISION NOT NULL,
          cancelled DOUBLE PRECISION,
          CHECK (ends > starts))""",
        "CREATE INDEX reservations_rack ON reservations (rack, ends)",
    )),
    Migration(4, "who is who from the database: rack ids for lock keys, reservation owners and cancels checked by "
                 "the database, reservation times bounded, lease holders and campaign owners as session users", (
        """CREATE TABLE racks (
          id INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          name TEXT NOT NULL UNIQUE,
          created TIMESTAMPTZ NOT NULL DEFAULT now())""",
        f"""CREATE FUNCTION ctl_racks_fixed() RETURNS trigger LANGUAGE plpgsql {_SAFE_PATH} AS $$
        BEGIN
          RAISE EXCEPTION 'a rack''s id is never changed or removed (it keys the rack''s locks)'
            USING ERRCODE = 'insufficient_privilege';
        END $$""",
        "CREATE TRIGGER racks_fixed BEFORE UPDATE OR DELETE ON racks FOR EACH ROW EXECUTE FUNCTION ctl_racks_fixed()",
        "CREATE TRIGGER racks_fixed_truncate BEFORE TRUNCATE ON racks FOR EACH STATEMENT "
        "EXECUTE FUNCTION ctl_racks_fixed()",
        "ALTER TABLE reservations ADD COLUMN owner_checked BOOLEAN NOT NULL DEFAULT false",
        "ALTER TABLE reservations ADD COLUMN cancelled_by TEXT",
        "ALTER TABLE reservations ALTER COLUMN owner_user SET DEFAULT session_user",
        "ALTER TABLE reservations ALTER COLUMN owner_host SET DEFAULT ''",
        "ALTER TABLE reservations ALTER COLUMN created SET DEFAULT extract(epoch FROM now())",
        f"""ALTER TABLE reservations ADD CONSTRAINT reservations_times CHECK (starts >= {EPOCH_MIN} AND
          ends <= {EPOCH_MAX} AND starts < ends AND ends - starts <= {SPAN_MAX_S}) NOT VALID""",
        f"""CREATE FUNCTION ctl_reservation_guard() RETURNS trigger LANGUAGE plpgsql {_SAFE_PATH} AS $$
        BEGIN
          IF TG_OP = 'INSERT' THEN
            NEW.owner_user := session_user;
            NEW.owner_checked := true;
            NEW.created := extract(epoch FROM clock_timestamp());
            NEW.cancelled := NULL;
            NEW.cancelled_by := NULL;
            RETURN NEW;
          END IF;
          IF TG_OP = 'DELETE' THEN
            IF NOT {_IS_ADMIN} THEN
              RAISE EXCEPTION 'reservation #% is never deleted (cancel it); only a member of {ADMIN_ROLE} deletes one',
                OLD.id USING ERRCODE = 'insufficient_privilege';
            END IF;
            RETURN OLD;
          END IF;
          IF NEW.id IS DISTINCT FROM OLD.id OR NEW.rack IS DISTINCT FROM OLD.rack
             OR NEW.owner_user IS DISTINCT FROM OLD.owner_user OR NEW.owner_host IS DISTINCT FROM OLD.owner_host
             OR NEW.owner_checked IS DISTINCT FROM OLD.owner_checked OR NEW.starts IS DISTINCT FROM OLD.starts
             OR NEW.ends IS DISTINCT FROM OLD.ends OR NEW.note IS DISTINCT FROM OLD.note
             OR NEW.created IS DISTINCT FROM OLD.created OR OLD.cancelled IS NOT NULL OR NEW.cancelled IS NULL THEN
            RAISE EXCEPTION 'reservation #%: a reservation is only ever cancelled, once; nothing else of it changes',
              OLD.id USING ERRCODE = 'insufficient_privilege';
          END IF;
          IF OLD.owner_user IS DISTINCT FROM session_user::text AND NOT {_IS_ADMIN} THEN
            RAISE EXCEPTION
              'reservation #% is %''s: only they, or a member of the database role {ADMIN_ROLE}, cancel it',
              OLD.id, OLD.owner_user USING ERRCODE = 'insufficient_privilege';
          END IF;
          NEW.cancelled := extract(epoch FROM clock_timestamp());
          NEW.cancelled_by := session_user;
          RETURN NEW;
        END $$""",
        "CREATE TRIGGER reservations_guard BEFORE INSERT OR UPDATE OR DELETE ON reservations FOR EACH ROW "
        "EXECUTE FUNCTION ctl_reservation_guard()",
        f"""CREATE FUNCTION ctl_lease_holder() RETURNS trigger LANGUAGE plpgsql {_SAFE_PATH} AS $$
        BEGIN
          NEW.holder_user := session_user;
          NEW.backend_pid := pg_backend_pid();
          RETURN NEW;
        END $$""",
        "CREATE TRIGGER rack_leases_holder BEFORE INSERT OR UPDATE ON rack_leases FOR EACH ROW "
        "EXECUTE FUNCTION ctl_lease_holder()",
        f"""CREATE FUNCTION ctl_campaign_owner() RETURNS trigger LANGUAGE plpgsql {_SAFE_PATH} AS $$
        BEGIN
          NEW.owner := session_user || '@' || coalesce(nullif(split_part(coalesce(NEW.owner, ''), '@', 2), ''), '?');
          RETURN NEW;
        END $$""",
        "CREATE TRIGGER campaigns_owner BEFORE INSERT OR UPDATE OF owner ON campaigns FOR EACH ROW "
        "EXECUTE FUNCTION ctl_campaign_owner()",
    )),
)
LATEST = MIGRATIONS[-1].version


class SchemaTooNew(CtlError):
    """The database was migrated by a newer ctl."""


def current_version(conn: Any) -> int:
    """The applied schema version (0: an empty database)."""
    row = conn.execute("SELECT to_regclass('schema_version') AS t").fetchone()
    if row["t"] is None:
        return 0
    row = conn.execute("SELECT COALESCE(MAX(version), 0) AS v FROM schema_version").fetchone()
    return int(row["v"])


def migrate(conn: Any, target: int = LATEST) -> tuple[int, int]:
    """Bring the schema to `target` (default: this ctl's). Returns (version before, after).
    Refuses a database newer than this ctl. `conn` is an autocommit connection."""
    import psycopg
    before = current_version(conn)
    if before > LATEST:
        raise SchemaTooNew(f"the lab database's schema version {before} is newer than this ctl's ({LATEST}); "
                           "upgrade ctl on this controller")
    if before >= target:
        return before, before          # nothing to do: read only, no privilege beyond SELECT needed
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", MIGRATION_KEY)
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
                         "description TEXT NOT NULL, applied TIMESTAMPTZ NOT NULL DEFAULT now())")
        before = current_version(conn)
        if before > LATEST:
            raise SchemaTooNew(f"the lab database's schema version {before} is newer than this ctl's ({LATEST}); "
                               "upgrade ctl on this controller")
        for step in MIGRATIONS:
            if step.version <= before or step.version > target:
                continue
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", MIGRATION_KEY)
                if current_version(conn) >= step.version:  # another controller applied it meanwhile
                    continue
                for stmt in step.statements:
                    conn.execute(stmt)
                conn.execute("INSERT INTO schema_version (version, description) VALUES (%s, %s)",
                             (step.version, step.description))
        return before, current_version(conn)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise DatabaseError(f"the lab database refused the schema migration ({first_line(exc)}): the role "
                            "needs to act as the schema's owner "
                            "(docs/howto/shared-lab.md, \"Setting up the database\")") from None
