"""The campaign store on SQLite (the default back-end): one file in the state dir, WAL, one
IMMEDIATE transaction per state change. The statements are shared with PostgreSQL
(`controller.campaign.sqlstore`); the schema is versioned with `PRAGMA user_version` and
migrated step by step (each step one transaction), a newer file is refused."""
from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any, Iterator, Sequence

from controller.campaign.sqlstore import SQLStore
from controller.errors import CtlError
from controller.settings import state_dir


# Version 1: the single-rack store. Version 2: claims with leases, the rack and controller of
# each attempt, uploaded records (the same steps as the lab database's migrations 1 and 2).
SCHEMA_V1 = """CREATE TABLE IF NOT EXISTS campaigns (
  num INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  scenario TEXT NOT NULL,
  file_path TEXT NOT NULL,
  file_text TEXT NOT NULL,
  file_sha256 TEXT NOT NULL,
  spec_json TEXT NOT NULL,
  seed INTEGER,
  inventory_path TEXT NOT NULL,
  inventory_name TEXT NOT NULL,
  runs_root TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued','running','paused','done','cancelled')),
  reason TEXT,
  not_before REAL,
  abort_requested INTEGER NOT NULL DEFAULT 0,
  submitted REAL NOT NULL,
  started REAL,
  finished REAL,
  updated REAL NOT NULL,
  activity TEXT,
  activity_t REAL
);
CREATE TABLE IF NOT EXISTS runs (
  campaign INTEGER NOT NULL REFERENCES campaigns(num),
  seq INTEGER NOT NULL,
  case_index INTEGER NOT NULL,
  repetition INTEGER NOT NULL,
  args_json TEXT NOT NULL,
  varied_json TEXT NOT NULL,
  duration_s REAL NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending','running','done','failed','cancelled')),
  attempts INTEGER NOT NULL DEFAULT 0,
  failures INTEGER NOT NULL DEFAULT 0,
  interruptions INTEGER NOT NULL DEFAULT 0,
  run_id TEXT,
  not_before REAL,
  last_class TEXT,
  last_error TEXT,
  PRIMARY KEY (campaign, seq)
);
CREATE TABLE IF NOT EXISTS attempts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  campaign INTEGER NOT NULL REFERENCES campaigns(num),
  seq INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  run_id TEXT NOT NULL,
  record_dir TEXT NOT NULL,
  health INTEGER REFERENCES health(id),
  started REAL NOT NULL,
  finished REAL,
  status TEXT NOT NULL,
  exit_code INTEGER,
  class TEXT,
  error TEXT,
  action TEXT,
  UNIQUE (campaign, seq, attempt)
);
CREATE TABLE IF NOT EXISTS health (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  campaign INTEGER NOT NULL REFERENCES campaigns(num),
  t REAL NOT NULL,
  ok INTEGER NOT NULL,
  reasons_json TEXT NOT NULL,
  details_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  campaign INTEGER NOT NULL REFERENCES campaigns(num),
  t REAL NOT NULL,
  kind TEXT NOT NULL,
  message TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_state ON runs (campaign, state);
CREATE INDEX IF NOT EXISTS attempts_run ON attempts (campaign, seq);
"""

SCHEMA_V2 = """
ALTER TABLE campaigns ADD COLUMN racks_json TEXT;
ALTER TABLE campaigns ADD COLUMN rack_group TEXT;
ALTER TABLE campaigns ADD COLUMN owner TEXT;
ALTER TABLE runs ADD COLUMN claimed_by TEXT;
ALTER TABLE runs ADD COLUMN claim_rack TEXT;
ALTER TABLE runs ADD COLUMN claim_until REAL;
ALTER TABLE attempts ADD COLUMN rack TEXT;
ALTER TABLE attempts ADD COLUMN controller TEXT;
CREATE TABLE records (
  run_id TEXT PRIMARY KEY,
  campaign INTEGER REFERENCES campaigns(num),
  seq INTEGER,
  attempt INTEGER,
  rack TEXT,
  controller TEXT,
  record_dir TEXT NOT NULL,
  status TEXT NOT NULL,
  manifest_json TEXT NOT NULL,
  summary_json TEXT,
  uploaded REAL NOT NULL
);
CREATE INDEX records_campaign ON records (campaign, seq);
"""
STEPS = ((1, SCHEMA_V1), (2, SCHEMA_V2))
SCHEMA_VERSION = STEPS[-1][0]


def db_path() -> Path:
    return state_dir() / "campaigns.sqlite"


class SQLiteStore(SQLStore):
    """The queue and every run's state. Every state change is one IMMEDIATE transaction, so
    a controller killed at any instant leaves either the old or the new state, never half."""

    def __init__(self, path: Path | None = None):
        self.path = path or db_path()
        self.where = str(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        # FULL: a committed state change survives a power cut too, not only a crash.
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("PRAGMA foreign_keys=ON")
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise CtlError(f"{self.path}: campaign store version {version} is newer than this ctl "
                           f"({SCHEMA_VERSION}); upgrade ctl")
        for step, script in STEPS:
            if step <= version:
                continue
            with self.tx():
                # Another process may have migrated between our read and our write lock.
                if self.db.execute("PRAGMA user_version").fetchone()[0] >= step:
                    continue
                for stmt in script.split(";"):
                    if stmt.strip():
                        self.db.execute(stmt)
                self.db.execute(f"PRAGMA user_version={int(step)}")

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def _x(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.db.execute(sql, tuple(args))

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.db.executemany(sql, [tuple(r) for r in rows])
