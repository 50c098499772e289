"""The campaign store on SQLite (the default back-end): one file in the state dir, WAL, one
IMMEDIATE transaction per state change."""
from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from controller.campaign.plan import Case, PlannedRun
from controller.campaign.policy import Decision
from controller.campaign.spec import CampaignError, CampaignSpec
from controller.campaign.store import TRANSITIONS, AttemptRow, CampaignRow, HealthRow, RunRow
from controller.campaign.timing import local
from controller.errors import CtlError
from controller.settings import state_dir


SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS campaigns (
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


def db_path() -> Path:
    return state_dir() / "campaigns.sqlite"


class SQLiteStore:
    """The queue and every run's state. Every state change is one IMMEDIATE transaction, so
    a controller killed at any instant leaves either the old or the new state, never half."""

    def __init__(self, path: Path | None = None):
        self.path = path or db_path()
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
        if version < SCHEMA_VERSION:
            with self.tx():
                for stmt in SCHEMA.split(";"):
                    if stmt.strip():
                        self.db.execute(stmt)
                self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

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

    # ---- reads ---------------------------------------------------------------------------------

    def campaign(self, num: int) -> CampaignRow:
        r = self.db.execute("SELECT * FROM campaigns WHERE num=?", (num,)).fetchone()
        if r is None:
            raise CampaignError(f"no campaign #{num}")
        return CampaignRow(**dict(r))

    def campaigns(self, states: Sequence[str] | None = None) -> list[CampaignRow]:
        rows = self.db.execute("SELECT * FROM campaigns ORDER BY num").fetchall()
        out = [CampaignRow(**dict(r)) for r in rows]
        return [c for c in out if states is None or c.state in states]

    def find(self, ref: str | None) -> CampaignRow:
        """By number (`3`, `#3`), full id, or a unique part of the id; none: the only active one."""
        all_ = self.campaigns()
        if ref is None:
            active = [c for c in all_ if c.state in ("queued", "running", "paused")]
            if len(active) == 1:
                return active[0]
            if not active and all_:
                return all_[-1]
            raise CampaignError("give a campaign id: " + (", ".join(f"#{c.num} {c.id}" for c in active)
                                                          if active else "no campaigns yet"))
        r = ref.lstrip("#")
        if r.isdigit():  # a number is a campaign number, never a part of an id (ids hold digits)
            for c in all_:
                if c.num == int(r):
                    return c
            raise CampaignError(f"no campaign {ref!r}")
        exact = [c for c in all_ if c.id == ref]
        if exact:
            return exact[0]
        part = [c for c in all_ if ref in c.id]
        if len(part) == 1:
            return part[0]
        if len(part) > 1:
            raise CampaignError(f"{ref!r} matches {len(part)} campaigns: " + ", ".join(f"#{c.num}" for c in part))
        raise CampaignError(f"no campaign {ref!r}")

    def runs(self, num: int) -> list[RunRow]:
        return [RunRow(**dict(r)) for r in
                self.db.execute("SELECT * FROM runs WHERE campaign=? ORDER BY seq", (num,)).fetchall()]

    def run(self, num: int, seq: int) -> RunRow:
        r = self.db.execute("SELECT * FROM runs WHERE campaign=? AND seq=?", (num, seq)).fetchone()
        return RunRow(**dict(r))

    def attempts(self, num: int) -> list[AttemptRow]:
        rows = self.db.execute("SELECT * FROM attempts WHERE campaign=? ORDER BY id", (num,)).fetchall()
        return [AttemptRow(**{("klass" if k == "class" else k): v for k, v in dict(r).items()}) for r in rows]

    def health_checks(self, num: int) -> list[HealthRow]:
        rows = self.db.execute("SELECT * FROM health WHERE campaign=? ORDER BY id", (num,)).fetchall()
        return [HealthRow(r["id"], r["campaign"], r["t"], r["ok"], json.loads(r["reasons_json"]),
                          json.loads(r["details_json"])) for r in rows]

    def events(self, num: int) -> list[dict]:
        return [dict(r) for r in self.db.execute("SELECT t, kind, message FROM events WHERE campaign=? ORDER BY id",
                                                 (num,)).fetchall()]

    def running_runs(self, inventory_name: str | None = None) -> list[RunRow]:
        q = "SELECT runs.* FROM runs JOIN campaigns ON campaigns.num = runs.campaign WHERE runs.state='running'"
        args: tuple = ()
        if inventory_name is not None:
            q += " AND campaigns.inventory_name=?"
            args = (inventory_name,)
        return [RunRow(**dict(r)) for r in self.db.execute(q, args).fetchall()]

    def last_finished(self, num: int) -> float | None:
        r = self.db.execute("SELECT MAX(finished) FROM attempts WHERE campaign=?", (num,)).fetchone()
        return r[0]

    def overhead_samples(self, scenario: str, inventory_name: str, limit: int = 50) -> list[float]:
        """Wall time minus traffic time of recent completed attempts of this scenario on this rack."""
        rows = self.db.execute(
            "SELECT attempts.finished - attempts.started - runs.duration_s FROM attempts "
            "JOIN runs ON runs.campaign = attempts.campaign AND runs.seq = attempts.seq "
            "JOIN campaigns ON campaigns.num = attempts.campaign "
            "WHERE attempts.status='completed' AND campaigns.scenario=? AND campaigns.inventory_name=? "
            "ORDER BY attempts.id DESC LIMIT ?", (scenario, inventory_name, limit)).fetchall()
        return [r[0] for r in rows if r[0] is not None]

    # ---- writes (each one transaction) ---------------------------------------------------------

    def submit(self, *, spec: CampaignSpec, file_path: Path, file_text: str, inventory_path: Path,
               inventory_name: str, runs_root: Path, seed: int | None, not_before: float | None,
               cases: Sequence[Case], planned: Sequence[PlannedRun], durations: Mapping[int, float],
               now: float | None = None) -> CampaignRow:
        now = time.time() if now is None else now
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
        assert spec.name is not None
        with self.tx() as db:
            base = f"{stamp}_{spec.name}"
            cid, n = base, 1
            while db.execute("SELECT 1 FROM campaigns WHERE id=?", (cid,)).fetchone():
                n += 1
                cid = f"{base}_{n}"
            cur = db.execute(
                "INSERT INTO campaigns (id, name, scenario, file_path, file_text, file_sha256, spec_json, seed, "
                "inventory_path, inventory_name, runs_root, state, reason, not_before, submitted, updated) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,'queued',NULL,?,?,?)",
                (cid, spec.name, spec.scenario, str(file_path), file_text,
                 hashlib.sha256(file_text.encode()).hexdigest(), spec.model_dump_json(by_alias=True), seed,
                 str(inventory_path), inventory_name, str(runs_root), not_before, now, now))
            num = int(cur.lastrowid or 0)
            by_index = {c.index: c for c in cases}
            db.executemany(
                "INSERT INTO runs (campaign, seq, case_index, repetition, args_json, varied_json, duration_s, state) "
                "VALUES (?,?,?,?,?,?,?,'pending')",
                [(num, p.seq, p.case, p.repetition, json.dumps(by_index[p.case].values),
                  json.dumps(by_index[p.case].varied), durations[p.case]) for p in planned])
            self._event(db, num, now, "submitted",
                        f"{len(planned)} runs ({len(cases)} cases x {spec.repetitions}), order {spec.order}"
                        + (f", seed {seed}" if seed is not None else "")
                        + (f", not before {local(not_before):%Y-%m-%d %H:%M}" if not_before else ""))
        return self.campaign(num)

    @staticmethod
    def _event(db: sqlite3.Connection, num: int, now: float, kind: str, message: str) -> None:
        db.execute("INSERT INTO events (campaign, t, kind, message) VALUES (?,?,?,?)", (num, now, kind, message))

    def event(self, num: int, kind: str, message: str) -> None:
        with self.tx() as db:
            self._event(db, num, time.time(), kind, message)

    def set_state(self, num: int, new: str, reason: str | None = None, *, abort: bool = False) -> CampaignRow:
        now = time.time()
        with self.tx() as db:
            c = CampaignRow(**dict(db.execute("SELECT * FROM campaigns WHERE num=?", (num,)).fetchone()))
            if c.state == new:
                return c
            if new not in TRANSITIONS[c.state]:
                raise CampaignError(f"campaign #{num} is {c.state}: cannot make it {new}")
            db.execute("UPDATE campaigns SET state=?, reason=?, updated=?, abort_requested=?, "
                       "started=COALESCE(started, CASE WHEN ?='running' THEN ? END), "
                       "finished=CASE WHEN ? IN ('done','cancelled') THEN ? ELSE finished END WHERE num=?",
                       (new, reason, now, 1 if abort else 0, new, now, new, now, num))
            if new == "cancelled":
                db.execute("UPDATE runs SET state='cancelled' WHERE campaign=? AND state='pending'", (num,))
            self._event(db, num, now, new, reason or new)
        return self.campaign(num)

    def pause_if_active(self, num: int, reason: str) -> bool:
        """The scheduler's pause: only a queued or running campaign (a concurrent cancel wins)."""
        now = time.time()
        with self.tx() as db:
            st = db.execute("SELECT state FROM campaigns WHERE num=?", (num,)).fetchone()["state"]
            if st not in ("queued", "running"):
                return False
            db.execute("UPDATE campaigns SET state='paused', reason=?, updated=? WHERE num=?", (reason, now, num))
            self._event(db, num, now, "paused", reason)
        return True

    def set_activity(self, num: int, text: str) -> None:
        # Advisory (what the scheduler does now): a plain single-statement write.
        with self.tx() as db:
            db.execute("UPDATE campaigns SET activity=?, activity_t=? WHERE num=?", (text, time.time(), num))

    def add_health(self, num: int, ok: bool, reasons: list[str], details: dict) -> int:
        with self.tx() as db:
            cur = db.execute("INSERT INTO health (campaign, t, ok, reasons_json, details_json) VALUES (?,?,?,?,?)",
                             (num, time.time(), 1 if ok else 0, json.dumps(reasons), json.dumps(details, default=str)))
            return int(cur.lastrowid or 0)

    def start_attempt(self, num: int, seq: int, run_id: str, record_dir: Path, health_id: int | None) -> int | None:
        """pending -> running, with the attempt and its run id: BEFORE the rack is touched.
        None when the run may not start (paused, cancelled or taken meanwhile)."""
        now = time.time()
        with self.tx() as db:
            r = db.execute("SELECT state, attempts FROM runs WHERE campaign=? AND seq=?", (num, seq)).fetchone()
            c = db.execute("SELECT state FROM campaigns WHERE num=?", (num,)).fetchone()
            if r is None or r["state"] != "pending" or c["state"] not in ("queued", "running"):
                return None
            attempt = r["attempts"] + 1
            db.execute("UPDATE runs SET state='running', attempts=?, run_id=?, not_before=NULL "
                       "WHERE campaign=? AND seq=?", (attempt, run_id, num, seq))
            db.execute("INSERT INTO attempts (campaign, seq, attempt, run_id, record_dir, health, started, status) "
                       "VALUES (?,?,?,?,?,?,?,'running')", (num, seq, attempt, run_id, str(record_dir), health_id, now))
            if c["state"] == "queued":
                db.execute("UPDATE campaigns SET state='running', started=COALESCE(started, ?), updated=? WHERE num=?",
                           (now, now, num))
                self._event(db, num, now, "running", "first run started")
        return attempt

    def finish_attempt(self, num: int, seq: int, attempt: int, *, status: str, exit_code: int | None,
                       error: str | None, klass: str, decision: Decision, run_id: str | None = None,
                       record_dir: Path | None = None, finished: float | None = None) -> None:
        """The record is final; close the attempt and apply the decision (one transaction)."""
        now = time.time()
        with self.tx() as db:
            db.execute("UPDATE attempts SET finished=?, status=?, exit_code=?, class=?, error=?, action=?, "
                       "run_id=COALESCE(?, run_id), record_dir=COALESCE(?, record_dir) "
                       "WHERE campaign=? AND seq=? AND attempt=?",
                       (finished or now, status, exit_code, klass, error, decision.action, run_id,
                        str(record_dir) if record_dir else None, num, seq, attempt))
            db.execute("UPDATE runs SET state=?, failures=failures+?, interruptions=interruptions+?, not_before=?, "
                       "last_class=?, last_error=?, run_id=COALESCE(?, run_id) WHERE campaign=? AND seq=?",
                       (decision.run_state, int(decision.counts_failure), int(decision.counts_interruption),
                        decision.not_before, None if klass == "ok" else klass, error, run_id, num, seq))
            if klass != "ok":
                self._event(db, num, now, "attempt", f"run {seq} attempt {attempt}: {klass} -> {decision.action}"
                            + (f": {error}" if error else ""))
            if decision.action == "pause":
                st = db.execute("SELECT state FROM campaigns WHERE num=?", (num,)).fetchone()["state"]
                if st in ("queued", "running"):
                    db.execute("UPDATE campaigns SET state='paused', reason=?, updated=? WHERE num=?",
                               (decision.pause_reason, now, num))
                    self._event(db, num, now, "paused", decision.pause_reason or "paused by the retry policy")

    def clear_abort(self, num: int) -> None:
        with self.tx() as db:
            db.execute("UPDATE campaigns SET abort_requested=0 WHERE num=?", (num,))

    def finish_campaign(self, num: int) -> CampaignRow:
        now = time.time()
        with self.tx() as db:
            c = db.execute("SELECT state FROM campaigns WHERE num=?", (num,)).fetchone()
            left = db.execute("SELECT COUNT(*) FROM runs WHERE campaign=? AND state IN ('pending','running')",
                              (num,)).fetchone()[0]
            if c["state"] in ("queued", "running") and left == 0:
                failed = db.execute("SELECT COUNT(*) FROM runs WHERE campaign=? AND state='failed'",
                                    (num,)).fetchone()[0]
                db.execute("UPDATE campaigns SET state='done', reason=?, finished=?, updated=?, activity=NULL "
                           "WHERE num=?", (f"{failed} runs failed" if failed else None, now, now, num))
                self._event(db, num, now, "done", "all runs finished" + (f"; {failed} failed" if failed else ""))
        return self.campaign(num)
