"""What both campaign store back-ends share: every statement and every transaction.

`SQLStore` implements `CampaignStore` over a DB-API connection with `?` placeholders (the
PostgreSQL back-end turns them into psycopg's `%s`). A back-end provides the connection, its
transaction (`tx`: SQLite's BEGIN IMMEDIATE, a PostgreSQL transaction), the row-locking
clauses (`FOR UPDATE`, `FOR UPDATE SKIP LOCKED` on PostgreSQL; nothing on SQLite, whose
IMMEDIATE transaction already holds the one write lock) and its migrations. The statements
being one text for both is what keeps the back-ends' behaviour the same (the contract test
runs one suite against both).

Lock order, so two PostgreSQL transactions never wait on each other in a cycle: a transaction
that changes a campaign's state locks its `campaigns` row first, then its `runs` rows.
Claims touch `runs` rows only.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from controller.campaign.boundary import (UntrustedRow, attempt_row, campaign_row, event_row, finite_times, health_row,
                                          record_row, run_row)
from controller.campaign.plan import Case, PlannedRun
from controller.campaign.policy import Decision
from controller.campaign.spec import CampaignError, CampaignSpec
from controller.campaign.store import TRANSITIONS, AttemptRow, CampaignRow, HealthRow, RunRow
from controller.results.records import encode_manifest
from controller.timefmt import iso_local

# Candidates a claim looks at per transaction (the first that fits is taken).
CLAIM_BATCH = 64


class SQLStore:
    """The campaign store's logic over one connection; see the module docstring."""

    shared = False               # a store other controllers read (records are uploaded to it)
    FOR_UPDATE = ""              # PostgreSQL: " FOR UPDATE"
    SKIP_LOCKED = ""             # PostgreSQL: " FOR UPDATE SKIP LOCKED"
    where: str = ""              # for messages: the file or the (redacted) database URL

    # ---- back-end primitives ---------------------------------------------------------------------

    def _x(self, sql: str, args: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError

    @contextlib.contextmanager
    def tx(self) -> Iterator[Any]:
        raise NotImplementedError
        yield

    def close(self) -> None:
        raise NotImplementedError

    def _one(self, sql: str, args: Sequence[Any] = ()) -> dict | None:
        r = self._x(sql, args).fetchone()
        return None if r is None else dict(r)

    def _all(self, sql: str, args: Sequence[Any] = ()) -> list[dict]:
        return [dict(r) for r in self._x(sql, args).fetchall()]

    # ---- reads ---------------------------------------------------------------------------------

    def campaign(self, num: int) -> CampaignRow:
        r = self._one("SELECT * FROM campaigns WHERE num=?", (num,))
        if r is None:
            raise CampaignError(f"no campaign #{num}")
        return campaign_row(r)

    def campaigns(self, states: Sequence[str] | None = None) -> list[CampaignRow]:
        """Every campaign whose row passes the checks of `controller.campaign.boundary`; a row
        that fails them is left out and its reason kept in `refused` (by number)."""
        out = [c for c in self._checked(campaign_row, self._all("SELECT * FROM campaigns ORDER BY num"), "num")]
        return [c for c in out if states is None or c.state in states]

    def _checked(self, check: Callable[[Mapping[str, Any]], Any], rows: Sequence[Mapping[str, Any]],
                 key: str) -> Iterator[Any]:
        """Rows of a listing across campaigns, checked; one that fails is skipped and remembered
        in `refused` (so one member's bad row never stops every scheduler and status)."""
        for r in rows:
            try:
                yield check(r)
            except UntrustedRow as exc:
                self.refused[r.get(key) if key == "num" else r.get("campaign")] = exc.one_line()

    @property
    def refused(self) -> dict[Any, str]:
        """Campaign number -> why a row of it was left out of a listing (see `_checked`)."""
        return self.__dict__.setdefault("_refused", {})

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
            if int(r) in self.refused:
                raise UntrustedRow(self.refused[int(r)])
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
        return [run_row(r) for r in self._all("SELECT * FROM runs WHERE campaign=? ORDER BY seq", (num,))]

    def run(self, num: int, seq: int) -> RunRow:
        r = self._one("SELECT * FROM runs WHERE campaign=? AND seq=?", (num, seq))
        if r is None:
            raise CampaignError(f"campaign #{num} has no run {seq}")
        return run_row(r)

    def attempts(self, num: int) -> list[AttemptRow]:
        rows = self._all("SELECT * FROM attempts WHERE campaign=? ORDER BY id", (num,))
        return [attempt_row(r) for r in rows]

    def health_checks(self, num: int) -> list[HealthRow]:
        rows = self._all("SELECT * FROM health WHERE campaign=? ORDER BY id", (num,))
        return [health_row(r) for r in rows]

    def events(self, num: int) -> list[dict]:
        return [event_row(r, num) for r in self._all("SELECT t, kind, message FROM events WHERE campaign=? ORDER BY id",
                                                     (num,))]

    def running_runs(self, inventory_name: str | None = None) -> list[RunRow]:
        """Runs marked running (on rack `inventory_name`: the rack its claim names, else the campaign's)."""
        q = "SELECT runs.* FROM runs JOIN campaigns ON campaigns.num = runs.campaign WHERE runs.state='running'"
        args: tuple = ()
        if inventory_name is not None:
            q += " AND COALESCE(runs.claim_rack, campaigns.inventory_name)=?"
            args = (inventory_name,)
        return list(self._checked(run_row, self._all(q + " ORDER BY runs.campaign, runs.seq", args), "campaign"))

    def expired_running(self, now: float) -> list[RunRow]:
        """Runs marked running whose claim's lease ran out: their scheduler died (or lost the database)."""
        return list(self._checked(run_row, self._all(
            "SELECT * FROM runs WHERE state='running' AND claim_until IS NOT NULL AND claim_until < ? "
            "ORDER BY campaign, seq", (now,)), "campaign"))

    def last_finished(self, num: int, rack: str | None = None) -> float | None:
        if rack is None:
            r = self._one("SELECT MAX(finished) AS f FROM attempts WHERE campaign=?", (num,))
        else:
            r = self._one("SELECT MAX(finished) AS f FROM attempts WHERE campaign=? AND rack=?", (num, rack))
        got = finite_times([r["f"]] if r is not None else [])
        return got[0] if got else None

    def overhead_samples(self, scenario: str, inventory_name: str, limit: int = 50) -> list[float]:
        """Wall time minus traffic time of recent completed attempts of this scenario on this rack."""
        rows = self._all(
            "SELECT attempts.finished - attempts.started - runs.duration_s AS o FROM attempts "
            "JOIN runs ON runs.campaign = attempts.campaign AND runs.seq = attempts.seq "
            "JOIN campaigns ON campaigns.num = attempts.campaign "
            "WHERE attempts.status='completed' AND campaigns.scenario=? "
            "AND COALESCE(attempts.rack, campaigns.inventory_name)=? "
            "ORDER BY attempts.id DESC LIMIT ?", (scenario, inventory_name, limit))
        return [o for o in finite_times(r["o"] for r in rows) if 0 <= o <= 86400]

    def record(self, run_id: str) -> dict | None:
        """An uploaded record (manifest and summary as dicts), or None."""
        r = self._one("SELECT * FROM records WHERE run_id=?", (run_id,))
        return None if r is None else record_row(r)

    def records(self, num: int) -> list[dict]:
        return [record_row(r) for r in self._all("SELECT * FROM records WHERE campaign=? ORDER BY seq, attempt",
                                                  (num,))]

    # ---- writes (each one transaction) ---------------------------------------------------------

    def submit(self, *, spec: CampaignSpec, file_path: Path, file_text: str, inventory_path: Path,
               inventory_name: str, runs_root: Path, seed: int | None, not_before: float | None,
               cases: Sequence[Case], planned: Sequence[PlannedRun], durations: Mapping[int, float],
               now: float | None = None, racks: Sequence[str] | None = None, rack_group: str | None = None,
               owner: str | None = None) -> CampaignRow:
        now = time.time() if now is None else now
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
        assert spec.name is not None
        racks_json = json.dumps(list(racks)) if racks and (len(racks) > 1 or list(racks) != [inventory_name]) \
            else None
        with self.tx():
            base = f"{stamp}_{spec.name}"
            cid, n = base, 1
            while self._one("SELECT 1 AS x FROM campaigns WHERE id=?", (cid,)):
                n += 1
                cid = f"{base}_{n}"
            row = self._one(
                "INSERT INTO campaigns (id, name, scenario, file_path, file_text, file_sha256, spec_json, seed, "
                "inventory_path, inventory_name, runs_root, state, reason, not_before, submitted, updated, "
                "racks_json, rack_group, owner) VALUES (?,?,?,?,?,?,?,?,?,?,?,'queued',NULL,?,?,?,?,?,?) RETURNING num",
                (cid, spec.name, spec.scenario, str(file_path), file_text,
                 hashlib.sha256(file_text.encode()).hexdigest(), spec.model_dump_json(by_alias=True), seed,
                 str(inventory_path), inventory_name, str(runs_root), not_before, now, now, racks_json, rack_group,
                 owner))
            assert row is not None
            num = int(row["num"])
            by_index = {c.index: c for c in cases}
            self._many(
                "INSERT INTO runs (campaign, seq, case_index, repetition, args_json, varied_json, duration_s, state) "
                "VALUES (?,?,?,?,?,?,?,'pending')",
                [(num, p.seq, p.case, p.repetition, json.dumps(by_index[p.case].values),
                  json.dumps(by_index[p.case].varied), durations[p.case]) for p in planned])
            where = ""
            if racks_json or rack_group:
                where = ", on " + (f"rack group {rack_group}" if rack_group else "racks " + ", ".join(racks or []))
            self._event(num, now, "submitted",
                        f"{len(planned)} runs ({len(cases)} cases x {spec.repetitions}), order {spec.order}"
                        + (f", seed {seed}" if seed is not None else "")
                        + (f", not before {iso_local(not_before, 'minutes')}" if not_before else "") + where)
        return self.campaign(num)

    def _event(self, num: int, now: float, kind: str, message: str) -> None:
        self._x("INSERT INTO events (campaign, t, kind, message) VALUES (?,?,?,?)", (num, now, kind, message))

    def _lock_campaign(self, num: int) -> dict:
        r = self._one("SELECT * FROM campaigns WHERE num=?" + self.FOR_UPDATE, (num,))
        if r is None:
            raise CampaignError(f"no campaign #{num}")
        return r

    def event(self, num: int, kind: str, message: str) -> None:
        with self.tx():
            self._event(num, time.time(), kind, message)

    def set_state(self, num: int, new: str, reason: str | None = None, *, abort: bool = False) -> CampaignRow:
        now = time.time()
        with self.tx():
            c = campaign_row(self._lock_campaign(num))
            if c.state == new:
                return c
            if new not in TRANSITIONS[c.state]:
                raise CampaignError(f"campaign #{num} is {c.state}: cannot make it {new}")
            self._x("UPDATE campaigns SET state=?, reason=?, updated=?, abort_requested=?, "
                    "started=COALESCE(started, CASE WHEN ?='running' THEN ? END), "
                    "finished=CASE WHEN ? IN ('done','cancelled') THEN ? ELSE finished END WHERE num=?",
                    (new, reason, now, 1 if abort else 0, new, now, new, now, num))
            if new == "cancelled":
                self._x("UPDATE runs SET state='cancelled', claimed_by=NULL, claim_rack=NULL, claim_until=NULL "
                        "WHERE campaign=? AND state='pending'", (num,))
            self._event(num, now, new, reason or new)
        return self.campaign(num)

    def pause_if_active(self, num: int, reason: str) -> bool:
        """The scheduler's pause: only a queued or running campaign (a concurrent cancel wins)."""
        now = time.time()
        with self.tx():
            if self._lock_campaign(num)["state"] not in ("queued", "running"):
                return False
            self._x("UPDATE campaigns SET state='paused', reason=?, updated=? WHERE num=?", (reason, now, num))
            self._event(num, now, "paused", reason)
        return True

    def set_activity(self, num: int, text: str) -> None:
        # Advisory (what the scheduler does now): a plain single-statement write.
        with self.tx():
            self._x("UPDATE campaigns SET activity=?, activity_t=? WHERE num=?", (text, time.time(), num))

    def add_health(self, num: int, ok: bool, reasons: list[str], details: dict) -> int:
        with self.tx():
            r = self._one("INSERT INTO health (campaign, t, ok, reasons_json, details_json) VALUES (?,?,?,?,?) "
                          "RETURNING id", (num, time.time(), 1 if ok else 0, json.dumps(reasons),
                                           json.dumps(details, default=str)))
        assert r is not None
        return int(r["id"])

    # ---- claims: several racks' schedulers on one queue ------------------------------------------

    def claim_next(self, num: int, *, rack: str, holder: str, lease_s: float, now: float | None = None,
                   fits: Callable[[float], bool] | None = None) -> RunRow | None:
        """Claim the first ready pending run (lowest seq) that `fits` (by its duration) for
        `holder`, a scheduler of `rack`, for `lease_s` seconds. Rows another transaction is
        claiming are skipped, not waited for, so every run is claimed by one scheduler.
        None: nothing ready (or the campaign is not active)."""
        now = time.time() if now is None else now
        with self.tx():
            c = self._one("SELECT state FROM campaigns WHERE num=?", (num,))
            if c is None or c["state"] not in ("queued", "running"):
                return None
            rows = self._all(
                "SELECT * FROM runs WHERE campaign=? AND state='pending' AND (not_before IS NULL OR not_before<=?) "
                "AND (claimed_by IS NULL OR claimed_by=? OR claim_until IS NULL OR claim_until<?) "
                "ORDER BY seq LIMIT ?" + self.SKIP_LOCKED, (num, now, holder, now, CLAIM_BATCH))
            pick = next((r for r in rows if fits is None or fits(float(r["duration_s"]))), None)
            if pick is None:
                return None
            self._x("UPDATE runs SET claimed_by=?, claim_rack=?, claim_until=? WHERE campaign=? AND seq=?",
                    (holder, rack, now + lease_s, num, pick["seq"]))
            pick.update(claimed_by=holder, claim_rack=rack, claim_until=now + lease_s)
        return run_row(pick)

    def renew_claim(self, num: int, seq: int, holder: str, lease_s: float) -> bool:
        """Extend `holder`'s lease on a run it claimed; False when the claim is no longer its own."""
        with self.tx():
            cur = self._x("UPDATE runs SET claim_until=? WHERE campaign=? AND seq=? AND claimed_by=? "
                          "AND state IN ('pending','running')", (time.time() + lease_s, num, seq, holder))
            return cur.rowcount == 1

    def release_claim(self, num: int, seq: int, holder: str) -> None:
        """Give back a claimed run that was not started (health check failed, scheduler stopping)."""
        with self.tx():
            self._x("UPDATE runs SET claimed_by=NULL, claim_rack=NULL, claim_until=NULL "
                    "WHERE campaign=? AND seq=? AND claimed_by=? AND state='pending'", (num, seq, holder))

    def start_attempt(self, num: int, seq: int, run_id: str, record_dir: Path, health_id: int | None, *,
                      holder: str | None = None, rack: str | None = None,
                      controller: str | None = None) -> int | None:
        """pending -> running, with the attempt and its run id: BEFORE the rack is touched.
        None when the run may not start (paused, cancelled, taken meanwhile, or claimed by
        another scheduler than `holder`)."""
        now = time.time()
        with self.tx():
            c = self._lock_campaign(num)
            r = self._one("SELECT state, attempts, claimed_by, claim_until FROM runs WHERE campaign=? AND seq=?"
                          + self.FOR_UPDATE, (num, seq))
            if r is None or r["state"] != "pending" or c["state"] not in ("queued", "running"):
                return None
            if r["claimed_by"] is not None and r["claimed_by"] != holder and (r["claim_until"] or 0) >= now:
                return None
            if holder is not None and r["claimed_by"] != holder:
                return None  # our claim ran out and was given to another scheduler, or released
            attempt = int(r["attempts"]) + 1
            self._x("UPDATE runs SET state='running', attempts=?, run_id=?, not_before=NULL WHERE campaign=? AND seq=?",
                    (attempt, run_id, num, seq))
            self._x("INSERT INTO attempts (campaign, seq, attempt, run_id, record_dir, health, started, status, rack, "
                    "controller) VALUES (?,?,?,?,?,?,?,'running',?,?)",
                    (num, seq, attempt, run_id, str(record_dir), health_id, now, rack, controller))
            if c["state"] == "queued":
                self._x("UPDATE campaigns SET state='running', started=COALESCE(started, ?), updated=? WHERE num=?",
                        (now, now, num))
                self._event(num, now, "running", "first run started")
        return attempt

    def finish_attempt(self, num: int, seq: int, attempt: int, *, status: str, exit_code: int | None,
                       error: str | None, klass: str, decision: Decision, run_id: str | None = None,
                       record_dir: Path | None = None, finished: float | None = None, holder: str | None = None,
                       expired_before: float | None = None) -> bool:
        """The record is final; close the attempt and apply the decision (one transaction).

        Guards for several schedulers: with `holder`, only while the run is still that
        scheduler's claim (and, with `expired_before`, only if its lease ran out before then:
        taking back a dead scheduler's run never races with it renewing). An attempt already
        closed is never closed again. False: nothing was changed."""
        now = time.time()
        with self.tx():
            self._lock_campaign(num)
            r = self._one("SELECT state, claimed_by, claim_until, attempts FROM runs WHERE campaign=? AND seq=?"
                          + self.FOR_UPDATE, (num, seq))
            a = self._one("SELECT status FROM attempts WHERE campaign=? AND seq=? AND attempt=?", (num, seq, attempt))
            if r is None or a is None or a["status"] != "running":
                return False
            if holder is not None and r["claimed_by"] != holder:
                return False
            if expired_before is not None and not (r["claim_until"] is not None and r["claim_until"] < expired_before):
                return False
            self._x("UPDATE attempts SET finished=?, status=?, exit_code=?, class=?, error=?, action=?, "
                    "run_id=COALESCE(?, run_id), record_dir=COALESCE(?, record_dir) "
                    "WHERE campaign=? AND seq=? AND attempt=?",
                    (finished or now, status, exit_code, klass, error, decision.action, run_id,
                     str(record_dir) if record_dir else None, num, seq, attempt))
            if r["state"] == "running" and int(r["attempts"]) == attempt:
                self._x("UPDATE runs SET state=?, failures=failures+?, interruptions=interruptions+?, not_before=?, "
                        "last_class=?, last_error=?, run_id=COALESCE(?, run_id), claimed_by=NULL, claim_rack=NULL, "
                        "claim_until=NULL WHERE campaign=? AND seq=?",
                        (decision.run_state, int(decision.counts_failure), int(decision.counts_interruption),
                         decision.not_before, None if klass == "ok" else klass, error, run_id, num, seq))
            if klass != "ok":
                self._event(num, now, "attempt", f"run {seq} attempt {attempt}: {klass} -> {decision.action}"
                            + (f": {error}" if error else ""))
            if decision.action == "pause":
                st = self._one("SELECT state FROM campaigns WHERE num=?", (num,))
                if st is not None and st["state"] in ("queued", "running"):
                    self._x("UPDATE campaigns SET state='paused', reason=?, updated=? WHERE num=?",
                            (decision.pause_reason, now, num))
                    self._event(num, now, "paused", decision.pause_reason or "paused by the retry policy")
        return True

    def clear_abort(self, num: int) -> None:
        with self.tx():
            self._x("UPDATE campaigns SET abort_requested=0 WHERE num=?", (num,))

    def finish_campaign(self, num: int) -> CampaignRow:
        now = time.time()
        with self.tx():
            c = self._lock_campaign(num)
            left = self._one("SELECT COUNT(*) AS n FROM runs WHERE campaign=? AND state IN ('pending','running')",
                             (num,))
            if c["state"] in ("queued", "running") and left is not None and left["n"] == 0:
                failed = self._one("SELECT COUNT(*) AS n FROM runs WHERE campaign=? AND state='failed'", (num,))
                nf = int(failed["n"]) if failed else 0
                self._x("UPDATE campaigns SET state='done', reason=?, finished=?, updated=?, activity=NULL "
                        "WHERE num=?", (f"{nf} runs failed" if nf else None, now, now, num))
                self._event(num, now, "done", "all runs finished" + (f"; {nf} failed" if nf else ""))
        return self.campaign(num)

    def put_record(self, *, run_id: str, num: int | None, seq: int | None, attempt: int | None, rack: str | None,
                   controller: str | None, record_dir: Path, status: str, manifest: dict,
                   summary: dict | None) -> None:
        """Upload a run record's manifest and summary (what reports read), replacing an older upload."""
        with self.tx():
            self._x("DELETE FROM records WHERE run_id=?", (run_id,))
            self._x("INSERT INTO records (run_id, campaign, seq, attempt, rack, controller, record_dir, status, "
                    "manifest_json, summary_json, uploaded) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (run_id, num, seq, attempt, rack, controller, str(record_dir), status,
                     json.dumps(encode_manifest(manifest), default=str), json.dumps(summary) if summary is not None else None,
                     time.time()))

