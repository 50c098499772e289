"""The runs of a runs directory, found and filtered without reading their measurements
(`ctl runs list`, `ctl runs export`).

A record is known by its directory's name first: a run id starts with its UTC start time and
its scenario (`20261122T031819Z_distinct-bottleneck_link2-20M`), so the scenario and time
filters skip most records before a file is opened. Of a record that passes, only the small
summary.json is read when it carries its provenance (ctl writes it with every summary), else
the manifest; never metrics.jsonl or raw/.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from controller.errors import RecordError, UsageError
from controller.results.records import id_time, load_manifest, parameter_sets
from controller.units import parse_duration

# A field run (`ctl field start`) is `logging` until stopped, then `stopped` or `completed`.
STATUSES = ("completed", "invalid", "failed", "aborted", "error", "running", "logging", "stopped")
FIELD = "field"         # the scenario name of a field run's record (controller/field/records.py)
_RUN_NAME = re.compile(r"(\d{8}T\d{6}Z)_([a-z][a-z0-9-]*)(?:_.*)?")      # make_run_id's form


@dataclass
class RunInfo:
    """What `ctl runs list` shows of a run (times are Unix seconds, UTC)."""

    run_id: str
    dir: Path
    scenario: str | None
    campaign: str | None
    status: str | None
    valid: bool | None
    started: float | None
    finished: float | None
    inventory: str | None
    given: dict[str, Any] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    source: str = "manifest.json"

    def to_json(self) -> dict:
        return {"run_id": self.run_id, "scenario": self.scenario, "campaign": self.campaign, "status": self.status,
                "valid": self.valid, "started": self.started, "finished": self.finished,
                "inventory": self.inventory, "parameters": self.given, "record": str(self.dir)}


@dataclass
class Filters:
    """What `ctl runs list|export` keeps: every given filter must match."""

    scenario: str | None = None
    campaign: str | None = None
    since: float | None = None
    until: float | None = None
    statuses: frozenset[str] | None = None
    params: Callable[[RunInfo], bool] | None = None     # --param NAME=VALUE, checked by the CLI (it knows scenarios)

    def by_name(self, name: str) -> bool:
        """Whether a record named `name` may match (from its name alone; True when unsure)."""
        m = _RUN_NAME.fullmatch(name)
        if m is None:
            return True
        if self.scenario is not None and m.group(2) != self.scenario:
            return False
        t = id_time(name) or 0.0
        # the name has the start time to the second, floor: a run started at most 1 s later
        if self.since is not None and t + 1 <= self.since:
            return False
        return self.until is None or t < self.until

    def keeps(self, r: RunInfo) -> bool:
        if self.scenario is not None and r.scenario != self.scenario:
            return False
        if self.campaign is not None and r.campaign != self.campaign:
            return False
        if self.since is not None and (r.started is None or r.started < self.since):
            return False
        if self.until is not None and (r.started is None or r.started >= self.until):
            return False
        if self.statuses is not None and r.status not in self.statuses:
            return False
        return self.params is None or self.params(r)


def parse_when(text: str, what: str, now: float) -> float:
    """A time of --since/--until: ISO 8601 with a zone (`2026-11-22T03:00:00Z`,
    `...+09:00`), a date (`2026-11-22`: its start, UTC), or a duration before now (`24h`, `90m`)."""
    s = text.strip()
    if re.fullmatch(r"\d{4}-\d\d-\d\d", s):
        return dt.datetime.fromisoformat(s).replace(tzinfo=dt.timezone.utc).timestamp()
    if re.fullmatch(r"\d{4}-\d\d-\d\d[T ].*", s):
        try:
            t = dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(f"{what}: {text!r} is not an ISO 8601 time (e.g. 2026-11-22T03:00:00Z)") from None
        if t.tzinfo is None:
            raise UsageError(f"{what}: {text!r} has no zone: add Z (UTC) or an offset such as +09:00")
        return t.timestamp()
    try:
        return now - parse_duration(s, what=what)
    except Exception:
        raise UsageError(f"{what}: {text!r} is neither an ISO 8601 time with a zone (2026-11-22T03:00:00Z), "
                         "a date (2026-11-22) nor a duration before now (24h)") from None


def verdict(status: Any, summary_valid: Any = None) -> bool | None:
    """A run's validity, one truth for `runs list` and `runs export`: the `valid` of the run's own
    summary.json where it has one, else its status's (completed: true, invalid: false, any other:
    unknown). A summary recomputed by a later ctl is not the run's verdict (export shows it apart)."""
    if isinstance(summary_valid, bool):
        return summary_valid
    return {"completed": True, "invalid": False}.get(str(status))


def _seconds(v: Any) -> float | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v) if v > 0 else None
    if isinstance(v, str) and v:
        try:
            t = dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            return None
        return t.timestamp() if t.tzinfo else None
    return None


def info_from_summary(d: Path, s: dict) -> RunInfo | None:
    """A RunInfo from a summary.json with its provenance (None: it has none)."""
    p = s.get("provenance")
    if not isinstance(p, dict) or not isinstance(p.get("run_id"), str):
        return None
    params = p.get("parameters") or {}
    status = p.get("status")
    return RunInfo(p["run_id"], d, p.get("scenario"), p.get("campaign"), status, verdict(status, s.get("valid")), _seconds(p.get("started")),
                   _seconds(p.get("finished")), (p.get("inventory") or {}).get("name"),
                   dict(params.get("given") or {}), dict(params.get("values") or {}), "summary.json")


def info_from_manifest(d: Path, m: dict) -> RunInfo:
    given, values = parameter_sets(m.get("parameters"))
    inv = m.get("inventory")
    status = m.get("status")
    return RunInfo(m.get("run_id") or d.name, d, m.get("scenario"), m.get("campaign"), status,
                   verdict(status), _seconds(m.get("created")),
                   _seconds(m.get("finished")), inv.get("name") if isinstance(inv, dict) else None,
                   given, values)


def read_info(d: Path) -> RunInfo:
    """A record's RunInfo: from its summary.json's provenance when it has one (small), else from
    its manifest; a record without a start time (a cut-down copy) has its id's. RecordError when
    neither can be read."""
    try:
        s = json.loads((d / "summary.json").read_text())
    except (OSError, ValueError):
        s = None
    info = info_from_summary(d, s) if isinstance(s, dict) else None
    if info is None or info.status in ("running", None):
        info = info_from_manifest(d, load_manifest(d))
    if info.started is None:
        info.started = id_time(info.run_id) or id_time(d.name)
    return info


def scan(root: Path, filters: Filters, problems: list[str] | None = None) -> Iterator[RunInfo]:
    """The runs under `root` that `filters` keep, in the order of their ids (time first). An
    unreadable record is skipped and named in `problems`."""
    try:
        names = sorted(e.name for e in os.scandir(root) if e.is_dir(follow_symlinks=False))
    except FileNotFoundError:
        return
    for name in names:
        if name.startswith(".") or not filters.by_name(name):
            continue
        d = root / name
        if not (d / "manifest.json").is_file():
            continue
        try:
            info = read_info(d)
        except RecordError as exc:
            if problems is not None:
                problems.append(exc.one_line())
            continue
        if filters.keeps(info):
            yield info
