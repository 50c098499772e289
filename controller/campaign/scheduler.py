"""Campaigns: many runs of one scenario, unattended, crash-safe and resumable.

A campaign file (YAML, strict) names a scenario, fixed parameters, a sweep (cross product
or an explicit list of cases), repetitions, an order (randomized with a recorded seed, or
sequential), a pause between runs, an optional time window and a retry policy per failure
class. `expand` turns it into planned runs; the durable store (SQLite in the state dir,
WAL) holds the queue, every run's state and every attempt; the scheduler executes them
one at a time through `runner.execute`, holding the rack lock.

Functional core (pure, unit-tested without a rack): the file model, expansion, ordering,
time windows, failure classification, retry decisions, the next scheduler step, ETA.
Imperative shell: the store, the health check, the scheduler loop.

Crash safety rests on the order of durable writes:
1. a run is marked `running` together with its attempt and run id (one transaction)
   BEFORE `execute()` creates the record or touches the rack;
2. the runner's record is final (`completed`/`failed`/`invalid`/`aborted`) before the
   attempt is closed in the store (one transaction with the retry decision).
If the controller dies anywhere, the next scheduler takes the rack lock, lets
`controller.run.recovery` restore the rack from any record still `running` (and mark it
`aborted`), then reconciles every `running` run of the store with its record: a final
record is taken as the attempt's result (a completed run is never repeated); an aborted
or missing one puts the run back in the queue.
"""
from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import itertools
import json
import math
import random
import re
import secrets
import signal
import sqlite3
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, Iterator, Literal, Mapping, Sequence

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from controller.errors import CtlError, ParameterError, RackBusy, RecordError, UsageError
from controller.inventory import format_validation_error, load_yaml_with_lines
from controller.lock import FileLock
from controller.settings import state_dir
from controller.units import format_delay, parse_duration


class CampaignFileError(UsageError):
    """The campaign file is invalid (file, line and field in the message)."""


class CampaignError(UsageError):
    """A campaign command that cannot be done (unknown id, resuming a finished campaign...)."""


# ==== the campaign file ==========================================================================

FailureClass = Literal["host-unreachable", "command-failed", "traffic-error", "result-invalid", "refused"]
# Classes the policy decides; "restore-failed" and "error" (a controller bug) always pause:
# after either, the rack's state is not known to be the baseline, and data must not be produced.
POLICY_CLASSES: tuple[str, ...] = ("host-unreachable", "command-failed", "traffic-error", "result-invalid",
                                   "refused")
ALL_CLASSES: tuple[str, ...] = POLICY_CLASSES + ("restore-failed", "error", "interrupted")
MAX_INTERRUPTIONS = 5  # a run that kills its controller again and again must not loop all night

_NAME = r"^[a-z0-9][a-z0-9._-]{0,60}$"


def _param_value(v: Any) -> str:
    # Parameters go to the scenario's own parser as text, exactly as on the command line.
    # YAML booleans (yes/no/on/off) are never a parameter value: refuse them instead of guessing.
    if isinstance(v, bool) or v is None:
        raise ValueError(f"{v!r} is not a parameter value (write it as a string, e.g. \"20M\")")
    if isinstance(v, (int, float, str)):
        s = str(v)
        if not s.strip():
            raise ValueError("empty parameter value")
        return s
    raise ValueError(f"{v!r} is not a parameter value (a string or a number)")


ParamValue = Annotated[str, BeforeValidator(_param_value)]


def _duration_text(what: str, allow_zero: bool = True) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        try:
            parse_duration(v, what=what, allow_zero=allow_zero)
        except ParameterError as exc:
            raise ValueError(str(exc).removeprefix(f"{what}: ")) from None
        return str(v)
    return check


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RetryRule(_Strict):
    """attempts: how many attempts a run gets in all when it fails this way; wait: before the
    next attempt; then: what happens when they are used up (skip the run, or pause the campaign)."""

    attempts: int = Field(1, ge=1, le=20)
    wait: Annotated[str, BeforeValidator(_duration_text("wait"))] = "0s"
    then: Literal["skip", "pause"] = "skip"

    @property
    def wait_s(self) -> float:
        return parse_duration(self.wait, allow_zero=True)


class RetryPolicy(_Strict):
    host_unreachable: RetryRule = Field(RetryRule(attempts=3, wait="60s", then="pause"), alias="host-unreachable")
    command_failed: RetryRule = Field(RetryRule(attempts=2, wait="10s", then="skip"), alias="command-failed")
    traffic_error: RetryRule = Field(RetryRule(attempts=3, wait="10s", then="skip"), alias="traffic-error")
    result_invalid: RetryRule = Field(RetryRule(attempts=2, wait="0s", then="skip"), alias="result-invalid")
    refused: RetryRule = Field(RetryRule(attempts=1, wait="0s", then="pause"), alias="refused")

    def rule(self, klass: str) -> RetryRule:
        return getattr(self, klass.replace("-", "_"))


class HealthSpec(_Strict):
    """The check before every run. A failure pauses the campaign with the reason."""

    max_clock_spread: Annotated[str, BeforeValidator(_duration_text("max_clock_spread", False))] = "10ms"
    clock_samples: int = Field(5, ge=1, le=50)
    shapers_at_baseline: bool = True

    @property
    def max_clock_spread_s(self) -> float:
        return parse_duration(self.max_clock_spread)


class HeatmapSpec(_Strict):
    x: str
    y: str
    panels: str | None = None


class ReportSpec(_Strict):
    metric: str | None = None        # summary metric the figures show (default: the scenario's headline)
    heatmap: HeatmapSpec | None = None


class CampaignSpec(_Strict):
    version: Literal[1]
    name: str | None = Field(None, pattern=_NAME)
    description: str = ""
    scenario: str
    fixed: dict[str, ParamValue] = Field(default_factory=dict)
    sweep: dict[str, list[ParamValue]] | None = None
    cases: list[dict[str, ParamValue]] | None = None
    repetitions: int = Field(1, ge=1, le=1000)
    order: Literal["random", "sequential"] = "random"
    seed: int | None = Field(None, ge=0, lt=2**63)
    pause: Annotated[str, BeforeValidator(_duration_text("pause"))] = "0s"
    window: str | None = None
    overhead: Annotated[str, BeforeValidator(_duration_text("overhead"))] = "20s"
    retry: RetryPolicy = Field(default_factory=lambda: RetryPolicy.model_validate({}))
    health: HealthSpec = Field(default_factory=lambda: HealthSpec.model_validate({}))
    report: ReportSpec = Field(default_factory=ReportSpec)

    @field_validator("window")
    @classmethod
    def _window(cls, v: str | None) -> str | None:
        if v is not None:
            parse_window(v)  # raises ValueError with the reason
        return v

    @field_validator("sweep")
    @classmethod
    def _sweep(cls, v: dict[str, list[str]] | None) -> dict[str, list[str]] | None:
        for k, values in (v or {}).items():
            if not values:
                raise ValueError(f"{k}: an empty list of values")
            if len(set(values)) != len(values):
                raise ValueError(f"{k}: a value is listed twice")
        return v

    @model_validator(mode="after")
    def _shape(self) -> "CampaignSpec":
        if self.sweep is not None and self.cases is not None:
            raise ValueError("give either `sweep` (cross product) or `cases` (explicit list), not both")
        if self.cases is not None and not self.cases:
            raise ValueError("cases: an empty list")
        fixed = {_norm(k) for k in self.fixed}
        for k in (self.sweep or {}):
            if _norm(k) in fixed:
                raise ValueError(f"parameter {k!r} is both fixed and swept")
        for i, c in enumerate(self.cases or []):
            for k in c:
                if _norm(k) in fixed:
                    raise ValueError(f"cases[{i}]: parameter {k!r} is also fixed")
        return self

    @property
    def pause_s(self) -> float:
        return parse_duration(self.pause, allow_zero=True)

    @property
    def overhead_s(self) -> float:
        return parse_duration(self.overhead, allow_zero=True)

    def window_obj(self) -> "Window | None":
        return parse_window(self.window) if self.window else None


def _norm(name: str) -> str:
    """`tcp-cc`, `tcp_cc` and `--tcp-cc` name the same parameter."""
    return name.lstrip("-").replace("-", "_")


def load_campaign(path: Path) -> tuple[CampaignSpec, dict[tuple, int], str]:
    """Parse and validate the file's structure. Returns (spec, line of every key, file text)."""
    try:
        data, lines = load_yaml_with_lines(path)
    except UsageError as exc:  # the inventory loader's YAML errors already name file and line
        raise CampaignFileError(str(exc)) from None
    if not isinstance(data, dict):
        raise CampaignFileError(f"{path}:1: a campaign file is a mapping")
    try:
        spec = CampaignSpec.model_validate(data)
    except ValidationError as exc:
        raise CampaignFileError(format_validation_error(path, exc, lines)) from None
    if spec.name is None:
        stem = re.sub(r"[^a-z0-9._-]+", "-", path.stem.lower()).strip("-") or "campaign"
        spec = spec.model_copy(update={"name": stem[:60]})
    return spec, lines, path.read_text()


# ==== expansion and order (pure) ==================================================================

@dataclass(frozen=True)
class Case:
    index: int                 # 0-based, in file order
    varied: dict[str, str]     # the swept / listed parameters of this case (normalised names)
    values: dict[str, str]     # fixed + varied: everything passed to the scenario

    def argv(self) -> list[str]:
        return case_argv(self.values)

    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.varied.items()) or "(fixed)"


@dataclass(frozen=True)
class PlannedRun:
    seq: int          # 1-based position in the execution order
    case: int         # Case.index
    repetition: int   # 1-based


def case_argv(values: Mapping[str, str]) -> list[str]:
    """Scenario arguments as argv (never a shell string): `--tcp-cc cubic --duration 5s`."""
    out: list[str] = []
    for k, v in values.items():
        out += ["--" + k.replace("_", "-"), v]
    return out


def expand_cases(spec: CampaignSpec) -> list[Case]:
    fixed = {_norm(k): v for k, v in spec.fixed.items()}
    cases: list[Case] = []
    if spec.sweep:
        keys = [_norm(k) for k in spec.sweep]
        for i, combo in enumerate(itertools.product(*spec.sweep.values())):
            varied = dict(zip(keys, combo, strict=True))
            cases.append(Case(i, varied, {**fixed, **varied}))
    elif spec.cases:
        for i, c in enumerate(spec.cases):
            varied = {_norm(k): v for k, v in c.items()}
            cases.append(Case(i, varied, {**fixed, **varied}))
    else:
        cases.append(Case(0, {}, fixed))
    return cases


def order_runs(n_cases: int, repetitions: int, order: str, seed: int | None) -> list[PlannedRun]:
    """Sequential: case by case in file order, repetitions of a case back to back.
    Random: all runs shuffled with `random.Random(seed)` (the seed is recorded, so the order
    can be reproduced; drift of the rack over the night is then not confounded with a case)."""
    pairs = [(c, r) for c in range(n_cases) for r in range(1, repetitions + 1)]
    if order == "random":
        if seed is None:
            raise ValueError("a random order needs a seed (drawn and recorded at submit)")
        random.Random(seed).shuffle(pairs)
    return [PlannedRun(i + 1, c, r) for i, (c, r) in enumerate(pairs)]


def draw_seed() -> int:
    return secrets.randbits(32)


# ==== time windows (pure) =========================================================================

_HHMM = re.compile(r"^\s*([01]?\d|2[0-3]):([0-5]\d)\s*$")


@dataclass(frozen=True)
class Window:
    """A daily stretch of local time, e.g. 22:00-07:00 (crossing midnight). Runs start only
    when they are expected to end inside the stretch they start in."""

    start_min: int
    end_min: int

    @property
    def length_s(self) -> float:
        return ((self.end_min - self.start_min) % 1440) * 60.0

    def text(self) -> str:
        return f"{self.start_min // 60:02d}:{self.start_min % 60:02d}-{self.end_min // 60:02d}:{self.end_min % 60:02d}"

    def _stretches(self, t: dt.datetime) -> list[tuple[dt.datetime, dt.datetime]]:
        day = t.replace(hour=0, minute=0, second=0, microsecond=0)
        out = []
        for d in (-1, 0, 1, 2):
            s = day + dt.timedelta(days=d, minutes=self.start_min)
            out.append((s, s + dt.timedelta(seconds=self.length_s)))
        return out

    def current(self, t: dt.datetime) -> tuple[dt.datetime, dt.datetime] | None:
        """The open stretch containing t (start inclusive, end exclusive), or None."""
        for s, e in self._stretches(t):
            if s <= t < e:
                return s, e
        return None

    def next_open(self, t: dt.datetime) -> dt.datetime:
        """The first stretch start after t."""
        return min(s for s, _e in self._stretches(t) if s > t)

    def start_for(self, t: dt.datetime, run_s: float) -> dt.datetime:
        """When a run of `run_s` seconds may start, at t or later (a run longer than the
        whole window starts at the window's opening: refusing it forever would stall)."""
        cur = self.current(t)
        if cur is not None and (t + dt.timedelta(seconds=run_s) <= cur[1] or
                                (run_s > self.length_s and t == cur[0])):
            return t
        return self.next_open(t)


def parse_window(text: str) -> Window:
    parts = str(text).split("-")
    if len(parts) != 2:
        raise ValueError(f"{text!r} is not a time window (example: 22:00-07:00)")
    mins = []
    for p in parts:
        m = _HHMM.match(p)
        if not m:
            raise ValueError(f"{text!r}: {p.strip()!r} is not a time of day HH:MM")
        mins.append(int(m.group(1)) * 60 + int(m.group(2)))
    if mins[0] == mins[1]:
        raise ValueError(f"{text!r}: an empty window (leave `window` out to run at any time)")
    return Window(mins[0], mins[1])


def parse_at(text: str, now: float) -> float:
    """`--at 22:00` (the next 22:00, local time) or `--at 2026-11-22T22:00` -> epoch seconds."""
    m = _HHMM.match(text)
    if m:
        t = dt.datetime.fromtimestamp(now)
        target = t.replace(hour=int(m.group(1)), minute=int(m.group(2)), second=0, microsecond=0)
        if target <= t:
            target += dt.timedelta(days=1)
        return target.timestamp()
    try:
        return dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise ParameterError(f"--at: {text!r} is neither HH:MM nor an ISO date and time") from None


def local(ts: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(ts)


# ==== estimates (pure) ============================================================================

def estimate_finish(now: float, run_seconds: Sequence[float], pause_s: float, window: Window | None,
                    not_before: float | None = None) -> float:
    """When the listed runs are done, starting at `now`, pausing between runs and waiting for
    the window where needed."""
    t = max(now, not_before or now)
    for i, d in enumerate(run_seconds):
        if i:
            t += pause_s
        if window is not None:
            t = window.start_for(local(t), d).timestamp()
        t += d
    return t


def learned_overhead(samples: Sequence[float], default_s: float) -> float:
    """Set-up + restore time per run: the median of what was observed (once there are a few)."""
    good = [s for s in samples if s >= 0 and math.isfinite(s)]
    return statistics.median(good) if len(good) >= 3 else default_s


def format_span(seconds: float) -> str:
    s = int(round(max(0.0, seconds)))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{h}h {m:02d}m"
    if m:
        return f"{m}m {sec:02d}s"
    return f"{sec}s"


def progress_bar(done: int, failed: int, total: int, width: int = 30) -> str:
    """`[#####xx.......]`: completed runs, runs given up, runs to go."""
    if total <= 0:
        return "[" + " " * width + "]"
    n_done = int(width * done / total)
    n_fail = int(width * (done + failed) / total) - n_done
    return "[" + "#" * n_done + "x" * n_fail + "." * (width - n_done - n_fail) + "]"


# ==== failure classes and retry decisions (pure) ==================================================

_RE_COMMAND = re.compile(r"` failed \((exit -?\d+|timed out)\)|not as planned:|: restore failed:")
_RE_LOST = re.compile(r"^lost a host:|cannot connect to|connection lost|not connected|did not start")


def classify(status: str, exit_code: int | None, error: str | None, error_type: str | None = None) -> str:
    """Failure class of a finished attempt, from the runner's outcome (or a final record).

    ok | interrupted | host-unreachable | command-failed | traffic-error | result-invalid |
    refused | restore-failed | error. `error_type` (the exception class name, when the
    runner reports it) wins over reading the message."""
    err = error or ""
    if "RESTORE PROBLEMS" in err or "rack restored by recovery with problems" in err:
        return "restore-failed"
    if status == "completed":
        return "ok"
    if status == "invalid":
        return "result-invalid"
    if status == "aborted":
        if (exit_code is not None and exit_code > 128) or err.startswith("interrupted") \
                or "controller died before" in err or "died before restoring" in err:
            return "interrupted"
        if err.startswith("lost a host"):
            return "host-unreachable"
        return "error"
    if status == "failed":
        if exit_code == 2:
            return "refused"
        by_type = {"TrafficError": "traffic-error", "CommandFailed": "command-failed", "VerifyError": "command-failed",
                   "SSHError": "host-unreachable", "ResultInvalid": "result-invalid"}
        if error_type in by_type:
            return by_type[error_type]
        if _RE_LOST.search(err):
            return "host-unreachable"
        if _RE_COMMAND.search(err):
            return "command-failed"
        if err:
            # What is left of the runner's `failed` path without a command or SSH signature
            # is the traffic phase (iperf3 errors, servers not listening).
            return "traffic-error"
        return "error"
    return "error"


@dataclass(frozen=True)
class Decision:
    run_state: Literal["done", "pending", "failed", "cancelled"]
    action: Literal["done", "retry", "skip", "pause", "requeue", "cancel"]
    not_before: float | None = None
    pause_reason: str | None = None
    counts_failure: bool = False
    counts_interruption: bool = False


def decide(klass: str, *, failures_before: int, interruptions_before: int, policy: RetryPolicy, now: float,
           what: str, error: str | None, cancelled: bool = False, user_abort: bool = False) -> Decision:
    """What happens to a run after an attempt of class `klass` (see `classify`)."""
    if klass == "ok":
        return Decision("done", "done")
    if cancelled:
        return Decision("cancelled", "cancel", counts_interruption=klass == "interrupted")
    short = " ".join((error or klass).split())[:300]
    if klass == "interrupted":
        if user_abort:
            return Decision("pending", "requeue")
        if interruptions_before + 1 >= MAX_INTERRUPTIONS:
            return Decision("pending", "pause", pause_reason=f"{what} was interrupted {interruptions_before + 1} "
                            "times (does it crash the controller?)", counts_interruption=True)
        return Decision("pending", "requeue", counts_interruption=True)
    if klass in ("restore-failed", "error"):
        return Decision("pending", "pause", pause_reason=f"{what}: {klass}: {short}", counts_failure=True)
    rule = policy.rule(klass)
    failures = failures_before + 1
    if failures < rule.attempts:
        return Decision("pending", "retry", not_before=now + rule.wait_s, counts_failure=True)
    if rule.then == "skip":
        return Decision("failed", "skip", counts_failure=True)
    return Decision("pending", "pause", pause_reason=f"{what}: {klass} ({failures} of {rule.attempts} "
                    f"attempts): {short}", counts_failure=True)


# ==== the scheduler's next step (pure) ============================================================

@dataclass(frozen=True)
class RunView:
    seq: int
    state: str
    not_before: float | None
    duration_s: float


@dataclass(frozen=True)
class Step:
    kind: Literal["run", "wait", "finish", "idle"]
    seq: int | None = None
    until: float | None = None
    why: str = ""
    hold_rack: bool = False  # short waits (pause between runs, retry wait) keep the rack lock


def next_step(state: str, not_before: float | None, runs: Sequence[RunView], now: float, *,
              window: Window | None, pause_s: float, last_finished: float | None, overhead_s: float) -> Step:
    if state not in ("queued", "running"):
        return Step("idle", why=state)
    if not_before is not None and now < not_before:
        return Step("wait", until=not_before, why=f"starts at {local(not_before):%Y-%m-%d %H:%M}")
    pending = [r for r in runs if r.state == "pending"]
    if not pending:
        if any(r.state == "running" for r in runs):
            return Step("idle", why="a run is in progress")
        return Step("finish")
    ready = sorted((r for r in pending if (r.not_before or 0) <= now), key=lambda r: r.seq)
    if not ready:
        until = min(r.not_before or now for r in pending)
        return Step("wait", until=until, why=f"retry wait until {local(until):%H:%M:%S}", hold_rack=True)
    if last_finished is not None and now < last_finished + pause_s:
        return Step("wait", until=last_finished + pause_s, why="pause between runs", hold_rack=True)
    run = ready[0]
    if window is not None:
        start = window.start_for(local(now), run.duration_s + overhead_s).timestamp()
        if start > now:
            return Step("wait", until=start, why=f"outside the window {window.text()} (opens "
                        f"{local(start):%Y-%m-%d %H:%M})")
    return Step("run", seq=run.seq)


# ==== the durable store ===========================================================================

SCHEMA_VERSION = 1
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

    def spec(self) -> CampaignSpec:
        return CampaignSpec.model_validate_json(self.spec_json)


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

    @property
    def args(self) -> dict[str, str]:
        return json.loads(self.args_json)

    @property
    def varied(self) -> dict[str, str]:
        return json.loads(self.varied_json)

    def view(self) -> RunView:
        return RunView(self.seq, self.state, self.not_before, self.duration_s)


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


@dataclass(frozen=True)
class HealthRow:
    id: int
    campaign: int
    t: float
    ok: int
    reasons: list[str]
    details: dict


def db_path() -> Path:
    return state_dir() / "campaigns.sqlite"


def campaign_dir(campaign_id: str) -> Path:
    """Per campaign: the submitted file, the progress spool (metrics.jsonl), health command logs, reports."""
    return state_dir() / "campaigns" / campaign_id


class Store:
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


@dataclass(frozen=True)
class Progress:
    total: int
    done: int
    failed: int
    cancelled: int
    pending: int
    running: int
    eta_s: float | None        # seconds from now until the last run is expected to end
    finish_at: float | None


def progress_of(store: Store, c: CampaignRow, now: float | None = None) -> Progress:
    now = time.time() if now is None else now
    runs = store.runs(c.num)
    counts = {s: sum(1 for r in runs if r.state == s) for s in RUN_STATES}
    spec = c.spec()
    overhead = learned_overhead(store.overhead_samples(c.scenario, c.inventory_name), spec.overhead_s)
    left = [r.duration_s + overhead for r in runs if r.state in ("pending", "running")]
    eta: float | None = None
    finish: float | None = None
    if c.state in ("queued", "running") and left:
        finish = estimate_finish(now, left, spec.pause_s, spec.window_obj(), c.not_before)
        eta = finish - now
    elif not left:
        eta = 0.0
    return Progress(len(runs), counts["done"], counts["failed"], counts["cancelled"], counts["pending"],
                    counts["running"], eta, finish)


# ==== locks ======================================================================================

class SchedulerLock(FileLock):
    """One scheduler (daemon or foreground resume) per state dir (see controller.lock)."""

    def __init__(self, purpose: str):
        super().__init__("campaign-scheduler", purpose)


def scheduler_owner() -> dict | None:
    """Who runs campaigns now (None: nobody; a dead holder does not count)."""
    return SchedulerLock("status").owner()


# ==== validation against the scenario and the inventory ===========================================

@dataclass(frozen=True)
class ValidatedCase:
    case: Case
    params: dict[str, Any]
    given: dict[str, str]
    duration_s: float


def case_line(spec: CampaignSpec, lines: Mapping[tuple, int], case: Case) -> int | None:
    if spec.cases is not None:
        return lines.get(("cases", case.index))
    if spec.sweep:
        return lines.get(("sweep",))
    return lines.get(("fixed",)) or lines.get(("scenario",))


def validate_cases(spec: CampaignSpec, path: Path, lines: Mapping[tuple, int], inv: Any) -> list[ValidatedCase]:
    """Every case through the scenario's own parser and planner, and the shapers' validation:
    what `ctl run` would refuse is refused here, naming the file line and the case."""
    from controller import scenarios
    from controller.cli.run import prepare_run
    try:
        scenario = scenarios.get(spec.scenario)
    except CtlError as exc:
        raise CampaignFileError(f"{path}:{lines.get(('scenario',), '?')}: scenario: {exc.one_line()}") from None
    known = {p.name for p in scenario.all_params()}
    for where, keys in [(("fixed",), spec.fixed)] + [(("sweep",), spec.sweep or {})] + \
            [(("cases", i), c) for i, c in enumerate(spec.cases or [])]:
        for k in keys:
            if _norm(k) not in known:
                line = lines.get(where + (k,), lines.get(where, "?"))
                field_ = ".".join(str(x) for x in where + (k,))
                raise CampaignFileError(f"{path}:{line}: {field_}: {spec.scenario} has no parameter {k!r} "
                                        f"(known: {', '.join(sorted(known))})")
    out = []
    window = spec.window_obj()
    cases = expand_cases(spec)
    hm = spec.report.heatmap
    if hm is not None:
        varied = {k for c in cases for k in c.varied}
        for axis in ("x", "y", "panels"):
            v = getattr(hm, axis)
            if v is not None and _norm(v) not in varied:
                raise CampaignFileError(f"{path}:{lines.get(('report', 'heatmap', axis), '?')}: report.heatmap.{axis}: "
                                        f"{v!r} is not a swept parameter ({', '.join(sorted(varied)) or 'none'})")
    for case in cases:
        try:
            _scenario, params, given, _plan = prepare_run(spec.scenario, case.argv(), inv)
        except CtlError as exc:
            raise CampaignFileError(f"{path}:{case_line(spec, lines, case) or '?'}: case {case.index + 1} "
                                    f"({case.label()}): {exc.one_line()}") from None
        duration = float(params.get("duration") or 0.0)
        if window is not None and duration + spec.overhead_s > window.length_s:
            raise CampaignFileError(f"{path}:{lines.get(('window',), '?')}: window: a run of case {case.index + 1} "
                                    f"takes about {format_span(duration + spec.overhead_s)}, longer than the "
                                    f"window {window.text()}")
        out.append(ValidatedCase(case, params, given, duration))
    return out


def campaign_run_id(scenario: Any, given: Mapping[str, str], params: Mapping[str, Any], campaign_num: int,
                    seq: int, repetition: int, attempt: int, now: float | None = None) -> str:
    """Readable and unique: time, scenario, the set parameters, repetition, campaign/run/attempt."""
    from controller.results.records import make_run_id
    parts = dict(scenario.run_id_parts(given, params))
    parts["rep"] = str(repetition)
    parts[f"c{campaign_num}"] = f"r{seq}a{attempt}"
    return make_run_id(scenario.name, parts, now)


# ==== health check (imperative: talks to the hosts, changes nothing) ===============================

@dataclass
class HealthResult:
    ok: bool
    reasons: list[str]
    details: dict


def plan_hosts(plan: Any, inv: Any) -> list[str]:
    """Hosts a run will talk to (the runner's own selection): endpoints, sampled hosts, flow
    ends, and the bridges of every shaped link; switches are not SSH hosts."""
    from controller.inventory import Role
    hosts = set(plan.endpoints) | set(plan.sample_ifaces)
    for f in plan.flows:
        hosts |= {f.client, f.server}
    for (link, _d) in plan.links:
        hosts.add(inv.links[link].bridge)
    return sorted(h for h in hosts if inv.hosts[h].role is not Role.SWITCH)


def baseline_problems(inv: Any, bridge: str, state: Any) -> list[str]:
    """Differences between a bridge's shaping and the inventory's baseline (unshaped when the
    link has none), pipe by pipe; only the fields a baseline sets are compared."""
    from bridges.base import PipeConfig, diff_pipe
    out = []
    foreign = (state.details or {}).get("foreign") or {}
    for port, what in sorted(foreign.items()):
        out.append(f"{bridge}: port {port} has a qdisc ctl did not create ({what})")
    for (link, direction), got in sorted(state.pipes.items(), key=lambda kv: (kv[0][0], kv[0][1].value)):
        label = f"{bridge} {link} {direction.value}"
        base = inv.links[link].baseline if link in inv.links else None
        if base is None or all(getattr(base, f) is None for f in ("bw", "delay", "plr", "queue")):
            if got is not None and not got.unlimited:
                out.append(f"{label}: expected unshaped (baseline), found {got.describe()}")
            continue
        want = PipeConfig.from_args(base.bw, base.delay, base.plr, base.queue)
        if got is None:
            got = PipeConfig()
        fields = [f for f, v in (("bw_bps", base.bw), ("delay_us", base.delay), ("plr", base.plr),
                                 ("queue", base.queue)) if v is not None]
        out += diff_pipe(want, got, label=label, fields=fields)
    return out


async def health_check(inv: Any, hosts: Sequence[str], spec: HealthSpec, log_path: Path | None) -> HealthResult:
    from bridges.base import read_state, shaper_class
    from controller.ssh import CommandLog, SSHPool, measure_clock_offset
    reasons: list[str] = []
    details: dict[str, Any] = {"hosts": {}, "clock": {}, "shapers": {}}
    log = CommandLog(log_path)
    pool = SSHPool(inv, log, hosts)
    try:
        res = await asyncio.gather(*(pool[h].connect() for h in hosts), return_exceptions=True)
        reachable = []
        for h, r in zip(hosts, res, strict=True):
            if isinstance(r, BaseException):
                msg = r.one_line() if isinstance(r, CtlError) else repr(r)
                details["hosts"][h] = msg
                reasons.append(f"{h} unreachable over SSH: {msg}")
            else:
                details["hosts"][h] = "ok"
                reachable.append(h)
        offs = await asyncio.gather(*(measure_clock_offset(pool[h], spec.clock_samples) for h in reachable),
                                    return_exceptions=True)
        measured = {}
        for h, o in zip(reachable, offs, strict=True):
            if isinstance(o, BaseException):
                details["clock"][h] = {"error": str(o)}
                reasons.append(f"{h}: clock offset not measurable: {o}")
            else:
                details["clock"][h] = o.to_json()
                measured[h] = o.measured_s
        if len(measured) >= 2:
            spread = max(measured.values()) - min(measured.values())
            details["clock_spread_s"] = spread
            if spread > spec.max_clock_spread_s:
                hi = max(measured, key=measured.__getitem__)
                lo = min(measured, key=measured.__getitem__)
                reasons.append(f"clocks differ by {format_delay(int(spread * 1e6))} between {hi} and {lo} "
                               f"(bound {spec.max_clock_spread})")
        if spec.shapers_at_baseline:
            for b in hosts:
                sh = inv.hosts[b].shaper
                if sh is None or b not in reachable:
                    continue
                shaper = shaper_class(sh.kind)(inv, b)
                try:
                    st = await read_state(shaper, pool[b])
                except CtlError as exc:
                    reasons.append(f"{b}: shaping not readable: {exc.one_line()}")
                    continue
                details["shapers"][b] = {f"{k[0]}.{k[1].value}": (v.to_json() if v else None)
                                         for k, v in st.pipes.items()}
                reasons += baseline_problems(inv, b, st)
    finally:
        await pool.close()
        log.close()
    return HealthResult(not reasons, reasons, details)


# ==== progress telemetry ===========================================================================

class ProgressTelemetry:
    """`campaign` points (runs_done, runs_failed, runs_total, eta_s): appended to the campaign's
    own spool first, then pushed to InfluxDB exactly once (the run records' mechanism)."""

    def __init__(self, directory: Path, campaign_id: str, target: Any | None):
        from controller.telemetry.spool import Spool
        self.dir = directory
        self.tags = {"campaign": campaign_id}
        self.spool = Spool(directory / "metrics.jsonl")
        self.target = target
        self.last_error: str | None = None

    def emit(self, p: Progress) -> None:
        from controller.telemetry.points import Point
        fields: dict[str, int | float] = {"runs_done": p.done, "runs_failed": p.failed, "runs_total": p.total}
        if p.eta_s is not None:
            fields["eta_s"] = float(round(p.eta_s, 1))
        self.spool.append([Point("campaign", self.tags, fields, time.time_ns())])
        self.spool.sync()

    def push(self) -> None:
        """Best effort; what InfluxDB does not take now stays in the spool for the next push."""
        if self.target is None:
            return
        from controller.telemetry.spool import InfluxSender, push_once
        try:
            sender = InfluxSender(self.target)
            try:
                push_once(self.dir, sender)
                self.last_error = None
            finally:
                sender.close()
        except Exception as exc:  # InfluxDB down: the spool keeps the points
            self.last_error = f"{type(exc).__name__}: {str(exc)[:200]}"

    def close(self) -> None:
        self.spool.close()


# ==== reconciling the store with run records after a crash ========================================

def record_outcome(record_dir: Path) -> tuple[str, str | None] | None:
    """(status, last error) of a run record, or None when there is no readable record."""
    from controller.results.records import load_manifest
    try:
        m = load_manifest(record_dir)
    except RecordError:
        return None
    errs = m.get("errors") or []
    return str(m.get("status")), (errs[-1].get("error") if errs else None)


def reconcile(store: Store, rows: Sequence[RunRow], say: Callable[[str], None]) -> None:
    """Close the attempts of runs left `running` by a dead controller, from their records.
    Call with the rack lock held and after recovery (so an interrupted record is `aborted`)."""
    for r in rows:
        c = store.campaign(r.campaign)
        att = [a for a in store.attempts(c.num) if a.seq == r.seq and a.attempt == r.attempts]
        if not att:
            continue
        a = att[0]
        rec = record_outcome(Path(a.record_dir))
        error: str | None
        if rec is None:
            status, error = "aborted", "controller died before the run record was written (rack untouched)"
        else:
            status, error = rec
            if status == "running":  # recovery did not claim it (another rack?): never assume success
                status, error = "aborted", "record still marked running after recovery"
        klass = classify(status, None, error)
        what = f"run {r.seq} ({', '.join(f'{k}={v}' for k, v in r.varied.items())}, rep {r.repetition})"
        d = decide(klass, failures_before=r.failures, interruptions_before=r.interruptions,
                   policy=c.spec().retry, now=time.time(), what=what, error=error,
                   cancelled=c.state == "cancelled")
        store.finish_attempt(c.num, r.seq, a.attempt, status=status, exit_code=None, error=error, klass=klass,
                             decision=d)
        say(f"campaign #{c.num}: run {r.seq} attempt {a.attempt} was interrupted with the controller: record "
            f"{Path(a.record_dir).name} is {status} -> {d.action}")


# ==== the scheduler (imperative shell) ============================================================

Log = Callable[[str], None]


@dataclass
class SchedulerOptions:
    only: set[int] | None = None       # campaign numbers this scheduler may drive (None: all)
    exit_when_idle: bool = False        # return when no campaign is queued or running
    poll_s: float = 2.0
    verbose: bool = True                # pass the runner's progress lines to `log`


class Scheduler:
    """Drives campaigns: one run at a time, rack lock held, health check before each run."""

    def __init__(self, store: Store, log: Log, opts: SchedulerOptions,
                 on_progress: Callable[[CampaignRow, Progress], None] | None = None):
        self.store = store
        self.log = log
        self.opts = opts
        self.on_progress = on_progress or (lambda c, p: None)
        self.stopping = False
        self.stop_reason: str | None = None
        self._wake = asyncio.Event()

    # ---- signals -------------------------------------------------------------------------------

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._on_signal, sig)

    def _on_signal(self, sig: int) -> None:
        self.stopping = True
        self.stop_reason = signal.Signals(sig).name
        self._wake.set()

    async def _sleep(self, seconds: float) -> None:
        self._wake.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._wake.wait(), max(0.0, seconds))

    # ---- the outer loop ------------------------------------------------------------------------

    async def serve(self) -> int:
        self._install_signals()
        while not self.stopping:
            active = [c for c in self.store.campaigns(("queued", "running"))
                      if self.opts.only is None or c.num in self.opts.only]
            if not active:
                if self.opts.exit_when_idle:
                    return 0
                await self._sleep(self.opts.poll_s)
                continue
            chosen = None
            wake = time.time() + self.opts.poll_s
            for c in active:
                step = self._step(c)
                if step.kind in ("run", "finish") or (step.kind == "wait" and step.hold_rack) or \
                        (step.kind == "idle" and any(r.state == "running" for r in self.store.runs(c.num))):
                    chosen = c
                    break
                if step.kind == "wait" and step.until is not None:
                    wake = min(wake, step.until)
                    if c.activity != step.why:
                        self.store.set_activity(c.num, step.why)
                        self.log(f"campaign #{c.num}: {step.why}")
            if chosen is None:
                await self._sleep(wake - time.time())
                continue
            busy = await self.drive(chosen)
            if busy:
                await self._sleep(self.opts.poll_s)
        return 0

    def _step(self, c: CampaignRow, now: float | None = None) -> Step:
        spec = c.spec()
        overhead = learned_overhead(self.store.overhead_samples(c.scenario, c.inventory_name), spec.overhead_s)
        return next_step(c.state, c.not_before, [r.view() for r in self.store.runs(c.num)],
                         time.time() if now is None else now, window=spec.window_obj(), pause_s=spec.pause_s,
                         last_finished=self.store.last_finished(c.num), overhead_s=overhead)

    # ---- one campaign while it can run ---------------------------------------------------------

    async def drive(self, c: CampaignRow) -> bool:
        """Run `c` until it finishes, pauses, is cancelled or must wait without the rack.
        Returns True when the rack was busy (someone else holds its lock)."""
        from controller.cli.run import influx_target
        from controller.inventory import load_inventory
        from controller.lock import RackLock
        try:
            inv = load_inventory(c.inventory_path)
        except CtlError as exc:
            self.store.pause_if_active(c.num, f"inventory not loadable: {exc.one_line()}")
            return False
        lock = RackLock(inv.name, f"ctl campaign #{c.num} {c.id}")
        try:
            lock.acquire()
        except RackBusy as exc:
            msg = f"waiting for the rack: {exc.one_line()}"
            if c.activity != msg:
                self.store.set_activity(c.num, msg)
                self.log(f"campaign #{c.num}: {msg}")
            return True
        telemetry: ProgressTelemetry | None = None
        try:
            if lock.broke_stale:
                self.log(f"took over the rack lock of a dead controller (pid {lock.broke_stale.get('pid')})")
                self.store.event(c.num, "lock", f"took over the rack lock of dead pid {lock.broke_stale.get('pid')}")
            if not await self._settle(c, inv):
                return False
            target = influx_target(inv, self.log)
            telemetry = ProgressTelemetry(campaign_dir(c.id), c.id, target)
            await self._emit(telemetry, c.num)
            while not self.stopping:
                c = self.store.campaign(c.num)
                step = self._step(c)
                if step.kind == "idle":
                    return False
                if step.kind == "finish":
                    c = self.store.finish_campaign(c.num)
                    self.log(f"campaign #{c.num} {c.id}: done" + (f" ({c.reason})" if c.reason else ""))
                    await self._emit(telemetry, c.num)
                    return False
                if step.kind == "wait":
                    if c.activity != step.why:
                        self.store.set_activity(c.num, step.why)
                    if not step.hold_rack:
                        self.log(f"campaign #{c.num}: {step.why}")
                        return False
                    await self._sleep(min(self.opts.poll_s, (step.until or 0) - time.time()))
                    continue
                assert step.seq is not None
                await self._run_one(c, inv, step.seq, target, telemetry)
            return False
        finally:
            if telemetry is not None:
                telemetry.close()
            lock.release()

    async def _settle(self, c: CampaignRow, inv: Any) -> bool:
        """With the rack lock held: bring a virtual rack up, restore the rack from any record a
        dead controller left `running`, reconcile the store, send spooled points. False: paused."""
        from controller.lab.ops import ensure_lab
        from controller.run.recovery import interrupted_runs, recover
        runs_root = Path(c.runs_root)
        try:
            if await asyncio.to_thread(ensure_lab, inv):
                self.log(f"virtual rack {inv.name} was down: brought it up")
        except CtlError as exc:
            self.store.pause_if_active(c.num, f"the rack could not be brought up: {exc.one_line()}")
            return False
        problems: list[str] = []
        stale = self.store.running_runs(inv.name)
        # Every run record directory a run on this rack may have used, not only this campaign's.
        roots = dict.fromkeys([runs_root] + [Path(self.store.campaign(r.campaign).runs_root) for r in stale])
        for root in roots:
            for d in interrupted_runs(root, inv):
                problems += await recover(inv, d, self.log)
        reconcile(self.store, stale, self.log)
        if problems:
            self.store.pause_if_active(c.num, "the rack could not be restored after an interrupted run: "
                                       + "; ".join(problems))
            self.log(f"campaign #{c.num} paused: rack not restored: {'; '.join(problems)}")
            return False
        try:
            from controller.cli.metrics import push_pending
            await asyncio.to_thread(push_pending, inv, runs_root, self.log)
        except Exception as exc:  # best effort: points stay spooled in their records
            self.log(f"spooled points not sent: {type(exc).__name__}")
        return True

    async def _emit(self, telemetry: ProgressTelemetry, num: int) -> None:
        c = self.store.campaign(num)
        p = progress_of(self.store, c)
        telemetry.emit(p)
        self.on_progress(c, p)
        await asyncio.to_thread(telemetry.push)

    async def _run_one(self, c: CampaignRow, inv: Any, seq: int, target: Any, telemetry: ProgressTelemetry) -> None:
        from controller.cli.run import prepare_run
        from controller.run.runner import execute
        r = self.store.run(c.num, seq)
        spec = c.spec()
        total = len(self.store.runs(c.num))
        what = f"run {seq}/{total} ({r_label(r)}, rep {r.repetition})"
        try:
            scenario, params, given, plan = prepare_run(c.scenario, case_argv(r.args), inv)
        except CtlError as exc:
            # The inventory changed since submit: this run cannot be planned. Pause, never guess.
            self.store.pause_if_active(c.num, f"{what} no longer valid: {exc.one_line()}")
            self.log(f"campaign #{c.num} paused: {what} no longer valid: {exc.one_line()}")
            return
        self.store.set_activity(c.num, f"health check before {what}")
        hosts = plan_hosts(plan, inv)
        cdir = campaign_dir(c.id)
        cdir.mkdir(parents=True, exist_ok=True)
        health = await health_check(inv, hosts, spec.health, cdir / "health-commands.jsonl")
        hid = self.store.add_health(c.num, health.ok, health.reasons, health.details)
        if not health.ok:
            reason = "health check failed before " + what + ": " + "; ".join(health.reasons)
            if self.store.pause_if_active(c.num, reason):
                self.log(f"campaign #{c.num} PAUSED: {reason}")
            await self._emit(telemetry, c.num)
            return
        if self.stopping:
            return
        runs_root = Path(c.runs_root)
        rid = campaign_run_id(scenario, given, params, c.num, seq, r.repetition, r.attempts + 1)
        attempt = self.store.start_attempt(c.num, seq, rid, runs_root / rid, hid)
        if attempt is None:  # paused or cancelled while the health check ran
            return
        self.store.set_activity(c.num, f"{what}, attempt {attempt}: {rid}")
        self.log(f"campaign #{c.num}: {what}, attempt {attempt}: {rid}")
        prefix = f"[#{c.num} {seq}/{total}] "
        progress = (lambda m: self.log(prefix + m)) if self.opts.verbose else None
        task = asyncio.ensure_future(execute(scenario, params, given, inv, plan, runs_root=runs_root,
                                             campaign=c.id, influx=target, progress=progress, run_id=rid))
        user_abort = await self._watch(c.num, task)
        try:
            outcome = await task
        except Exception as exc:  # a controller bug: the runner's own clean-up has run; pause
            self.log(f"campaign #{c.num}: {what}: controller error {exc!r}")
            d = decide("error", failures_before=r.failures, interruptions_before=r.interruptions,
                       policy=spec.retry, now=time.time(), what=what, error=repr(exc))
            self.store.finish_attempt(c.num, seq, attempt, status="error", exit_code=None, error=repr(exc),
                                      klass="error", decision=d)
            await self._emit(telemetry, c.num)
            return
        finally:
            self._install_signals()  # the runner removed its handlers, and with them ours
        if outcome.exit_code > 128 and not user_abort:
            self.stopping = True
            self.stop_reason = self.stop_reason or signal.Signals(outcome.exit_code - 128).name
        now_c = self.store.campaign(c.num)
        klass = classify(outcome.status, outcome.exit_code, outcome.error, getattr(outcome, "error_type", None))
        error = outcome.error
        if user_abort and klass == "interrupted":
            # The runner reports a cancelled task as SIGINT; say who stopped it.
            how = "cancel" if now_c.state == "cancelled" else "pause --now"
            error = f"stopped by `ctl campaign {how}` ({now_c.reason or 'by user'}); rack restored by the runner"
        d = decide(klass, failures_before=r.failures, interruptions_before=r.interruptions, policy=spec.retry,
                   now=time.time(), what=what, error=error, cancelled=now_c.state == "cancelled",
                   user_abort=user_abort)
        self.store.finish_attempt(c.num, seq, attempt, status=outcome.status, exit_code=outcome.exit_code,
                                  error=error, klass=klass, decision=d, run_id=outcome.run_id,
                                  record_dir=outcome.record_dir)
        if user_abort:
            self.store.clear_abort(c.num)
        self.log(f"campaign #{c.num}: {what}: {outcome.status}" + (f" [{klass}]" if klass != "ok" else "")
                 + f" -> {d.action}" + (f" ({error})" if error else ""))
        if d.action == "pause":
            self.log(f"campaign #{c.num} PAUSED: {d.pause_reason}")
        await self._emit(telemetry, c.num)

    async def _watch(self, num: int, task: "asyncio.Future[Any]") -> bool:
        """While a run executes: a `cancel` or `pause --now` from another ctl aborts it (the
        runner restores the rack). Returns True when the run was aborted that way."""
        while not task.done():
            await asyncio.wait({task}, timeout=self.opts.poll_s)
            if task.done():
                break
            c = self.store.campaign(num)
            if c.abort_requested or c.state == "cancelled":
                self.log(f"campaign #{num}: {c.state} ({c.reason or 'by user'}): stopping the current run")
                task.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait({task})
                return True
        return False


def r_label(r: RunRow) -> str:
    return " ".join(f"{k}={v}" for k, v in r.varied.items()) or "fixed parameters"


async def settle_for_cancel(store: Store, c: CampaignRow, log: Log) -> bool:
    """`cancel` with nobody running the campaign: restore the rack from an interrupted run and
    close its attempt now. False when the rack is busy (its holder will do it)."""
    from controller.inventory import load_inventory
    from controller.lock import RackLock
    from controller.run.recovery import interrupted_runs, recover
    inv = load_inventory(c.inventory_path)
    lock = RackLock(inv.name, f"ctl campaign cancel #{c.num}")
    try:
        lock.acquire()
    except RackBusy:
        return False
    try:
        for d in interrupted_runs(Path(c.runs_root), inv):
            await recover(inv, d, log)
        reconcile(store, store.running_runs(inv.name), log)
    finally:
        lock.release()
    return True

