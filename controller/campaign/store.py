"""The campaign store: its rows, and the one interface every back-end implements.

The scheduler, the CLI and the report talk to a `CampaignStore` only. The default back-end
is SQLite in the state dir (`controller.campaign.sqlite_store`); with a lab database
(`$CTL_DATABASE_URL`) it is PostgreSQL (`controller.campaign.pg_store`); `open_store()`
picks the configured one. Both share their statements (`controller.campaign.sqlstore`). A
back-end must keep the crash-safety promise: every state change is one transaction, so a
controller killed at any instant leaves either the old or the new state.

Several racks may work on one campaign: a rack's scheduler *claims* the next run for its
rack (`claim_next`, rows locked with FOR UPDATE SKIP LOCKED on PostgreSQL) with a lease it
renews while it works on the run; a claim whose lease ran out (its daemon died) is taken
back (`expired_running` + a guarded `finish_attempt`) and the run goes back in the queue.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Protocol, Sequence

from controller.campaign.plan import Case, PlannedRun
from controller.campaign.policy import Decision, RunView
from controller.campaign.spec import CampaignSpec
from controller.safefs import component
from controller.settings import state_dir

CAMPAIGN_STATES = ("queued", "running", "paused", "done", "cancelled")
RUN_STATES = ("pending", "running", "done", "failed", "cancelled")
# Allowed campaign transitions; everything else is refused (a cancelled campaign stays cancelled).
TRANSITIONS: dict[str, set[str]] = {
    "queued": {"running", "paused", "cancelled"},
    "running": {"paused", "done", "cancelled"},
    "paused": {"queued", "running", "cancelled"},
    "done": set(),
    "cancelled": set(),
}


@dataclass(frozen=True)
class CampaignRow:
    num: int
    id: str
    name: str
    scenario: str
    file_path: str
    file_text: str
    file_sha256: str
    spec_json: str
    seed: int | None
    inventory_path: str
    inventory_name: str
    runs_root: str
    state: str
    reason: str | None
    not_before: float | None
    abort_requested: int
    submitted: float
    started: float | None
    finished: float | None
    updated: float
    activity: str | None
    activity_t: float | None
    racks_json: str | None = None     # the racks the campaign runs on (None: its one inventory)
    rack_group: str | None = None     # ... or any rack of this group
    owner: str | None = None          # user@host that submitted it (reservations of the owner do not block it)

    def spec(self) -> CampaignSpec:
        return CampaignSpec.model_validate_json(self.spec_json)

    @property
    def racks(self) -> list[str]:
        """Rack names the campaign names (its inventory's alone for a one-rack campaign)."""
        if self.racks_json:
            return list(json.loads(self.racks_json))
        return [] if self.rack_group else [self.inventory_name]

    @property
    def multi_rack(self) -> bool:
        return bool(self.rack_group) or len(self.racks) > 1

    def runs_on(self, rack: str, group: str | None) -> bool:
        """Whether a scheduler of rack `rack` (of group `group`) may run this campaign's runs."""
        return rack in self.racks or (self.rack_group is not None and self.rack_group == group)


@dataclass(frozen=True)
class RunRow:
    campaign: int
    seq: int
    case_index: int
    repetition: int
    args_json: str
    varied_json: str
    duration_s: float
    state: str
    attempts: int
    failures: int
    interruptions: int
    run_id: str | None
    not_before: float | None
    last_class: str | None
    last_error: str | None
    claimed_by: str | None = None     # the scheduler working on it (see CampaignStore.claim_next)
    claim_rack: str | None = None
    claim_until: float | None = None  # its lease: renewed while it works, then free to be taken back

    @property
    def args(self) -> dict[str, str]:
        return json.loads(self.args_json)

    @property
    def varied(self) -> dict[str, str]:
        return json.loads(self.varied_json)

    def view(self) -> RunView:
        return RunView(self.seq, self.state, self.not_before, self.duration_s, self.claimed_by, self.claim_until)


@dataclass(frozen=True)
class AttemptRow:
    id: int
    campaign: int
    seq: int
    attempt: int
    run_id: str
    record_dir: str
    health: int | None
    started: float
    finished: float | None
    status: str
    exit_code: int | None
    klass: str | None
    error: str | None
    action: str | None
    rack: str | None = None           # the rack it ran on
    controller: str | None = None     # user@host:pid of the scheduler or ctl that ran it


@dataclass(frozen=True)
class HealthRow:
    id: int
    campaign: int
    t: float
    ok: int
    reasons: list[str]
    details: dict


def campaign_dir(campaign_id: str) -> Path:
    """Per campaign: the submitted file, the progress spool (metrics.jsonl), health command logs, reports.
    The id is one file name (the store's rows are checked against the id grammar; this is the
    last guard: an id with a `/` or `..` never names a directory)."""
    return state_dir() / "campaigns" / component(campaign_id, "campaign id")


class CampaignStore(Protocol):
    """What the scheduler, the CLI and the report need of a store. Reads return rows; every
    write is one transaction. `find` resolves a user's reference (number, id, part of an id)."""

    shared: bool   # other controllers write it (the lab database): paths in its rows are not this controller's

    @property
    def refused(self) -> dict[int, str]:
        """Campaign number -> why a row of it was left out of a listing (controller.campaign.boundary)."""
        ...

    # reads
    def campaign(self, num: int) -> CampaignRow: ...
    def campaigns(self, states: Sequence[str] | None = None) -> list[CampaignRow]: ...
    def find(self, ref: str | None) -> CampaignRow: ...
    def runs(self, num: int) -> list[RunRow]: ...
    def run(self, num: int, seq: int) -> RunRow: ...
    def attempts(self, num: int) -> list[AttemptRow]: ...
    def health_checks(self, num: int) -> list[HealthRow]: ...
    def events(self, num: int) -> list[dict]: ...
    def running_runs(self, inventory_name: str | None = None) -> list[RunRow]: ...
    def last_finished(self, num: int, rack: str | None = None) -> float | None: ...
    def overhead_samples(self, scenario: str, inventory_name: str, limit: int = 50) -> list[float]: ...
    def expired_running(self, now: float) -> list[RunRow]: ...
    def record(self, run_id: str) -> dict | None: ...
    def records(self, num: int) -> list[dict]: ...

    # writes, each one transaction
    def submit(self, *, spec: CampaignSpec, file_path: Path, file_text: str, inventory_path: Path,
               inventory_name: str, runs_root: Path, seed: int | None, not_before: float | None,
               cases: Sequence[Case], planned: Sequence[PlannedRun], durations: Mapping[int, float],
               now: float | None = None, racks: Sequence[str] | None = None, rack_group: str | None = None,
               owner: str | None = None) -> CampaignRow: ...
    def event(self, num: int, kind: str, message: str) -> None: ...
    def set_state(self, num: int, new: str, reason: str | None = None, *, abort: bool = False) -> CampaignRow: ...
    def pause_if_active(self, num: int, reason: str) -> bool: ...
    def set_activity(self, num: int, text: str) -> None: ...
    def add_health(self, num: int, ok: bool, reasons: list[str], details: dict) -> int: ...
    def claim_next(self, num: int, *, rack: str, holder: str, lease_s: float, now: float | None = None,
                   fits: Callable[[float], bool] | None = None) -> RunRow | None: ...
    def renew_claim(self, num: int, seq: int, holder: str, lease_s: float) -> bool: ...
    def release_claim(self, num: int, seq: int, holder: str) -> None: ...
    def start_attempt(self, num: int, seq: int, run_id: str, record_dir: Path, health_id: int | None, *,
                      holder: str | None = None, rack: str | None = None,
                      controller: str | None = None) -> int | None: ...
    def finish_attempt(self, num: int, seq: int, attempt: int, *, status: str, exit_code: int | None,
                       error: str | None, klass: str, decision: Decision, run_id: str | None = None,
                       record_dir: Path | None = None, finished: float | None = None, holder: str | None = None,
                       expired_before: float | None = None) -> bool: ...
    def put_record(self, *, run_id: str, num: int | None, seq: int | None, attempt: int | None, rack: str | None,
                   controller: str | None, record_dir: Path, status: str, manifest: dict,
                   summary: dict | None) -> None: ...
    def clear_abort(self, num: int) -> None: ...
    def finish_campaign(self, num: int) -> CampaignRow: ...
    def close(self) -> None: ...

