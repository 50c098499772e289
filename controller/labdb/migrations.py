"""The lab database's schema, as ordered, versioned migration steps.

`schema_version` holds one row per applied step (version, description, when). `migrate`
applies the missing steps in order, each in its own transaction together with its row, so
a controller killed mid-migration leaves the previous version intact. Concurrent
controllers starting at once are serialised by a transaction-level advisory lock. A
database whose version is newer than this ctl's is refused (never written by an older ctl).

Steps are append-only: a released step is never edited; a change is a new step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.errors import CtlError
from controller.labdb import DatabaseError, first_line

# pg_advisory_xact_lock key: "ctl" schema migrations (any constant no other lock uses).
MIGRATION_LOCK = (0x6374, 1)


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
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", MIGRATION_LOCK)
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
                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", MIGRATION_LOCK)
                if current_version(conn) >= step.version:  # another controller applied it meanwhile
                    continue
                for stmt in step.statements:
                    conn.execute(stmt)
                conn.execute("INSERT INTO schema_version (version, description) VALUES (%s, %s)",
                             (step.version, step.description))
        return before, current_version(conn)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise DatabaseError(f"the lab database refused the schema migration ({first_line(exc)}): the role "
                            "needs to act as the schema's owner (README: a lab shared by many people)") from None
