"""Rows of the campaign store, checked where they enter ctl: the lab database is input.

With a lab database (`$CTL_DATABASE_URL`) every row was written by some member's ctl, or by
anyone holding the database role: its values are untrusted, like a command-line argument.
Every row the store returns passes through here first (`campaign_row`, `run_row`, ...), and
a value is refused unless it has the form ctl itself writes:

- identifiers, against the exact grammar of their generators: campaign ids
  (`sqlstore.submit`: `20261122T031819Z_<campaign name>[_<n>]`), run ids
  (`results.records.make_run_id` and `RunRecord`: `20261122T031819Z_<scenario>_<k>-<v>...`,
  characters `[A-Za-z0-9._+-]`), rack names and groups (the inventory's name pattern),
  scenario and parameter names; so an id is always one path component, never `..`, `/x`
  or a name with a line break;
- times: finite, 0 .. 9999-12-31 (a REAL column holds `Infinity` and `NaN` as well);
  durations finite and at most a year;
- structured columns (JSON): the types ctl writes;
- states: the store's own.

Text (names of people, reasons, errors, notes) is kept as written and escaped when printed
(`controller.textsafe.shown`); it never names a file or becomes an argument.

Paths in rows (`inventory_path`, `runs_root`, `record_dir`) are kept as text and are checked
where they would be used (`trusted_path`): with a store other controllers write (the lab
database), a path names a file this controller reads or writes only when it lies under a
directory this controller is configured with (its runs dir; for inventories, the directory of
its configured inventory and the shipped inventories). A local SQLite store lives in this
controller's own state dir, written only by this controller's ctl: its paths are this
controller's configuration (what `submit` resolved), and are still refused unless absolute
and free of control characters.

A refused row raises `UntrustedRow`: one line naming the table, the row and the field, the
value shown escaped and cut short.
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import ValidationError

from controller.argutil import NAME_PATTERNS
from controller.campaign.spec import CampaignSpec
from controller.campaign.store import (CAMPAIGN_STATES, RUN_STATES, AttemptRow, CampaignRow, HealthRow, RunRow)
from controller.errors import CtlError, RecordError
from controller.results.records import manifest_from
from controller.settings import packaged_inventory, resolve, runs_dir
from controller.textsafe import has_control, shown


class UntrustedRow(CtlError):
    """A row of the campaign store (the lab database) holds a value ctl never writes: it is not
    used (no file named, nothing run, nothing printed raw)."""

    exit_code = 2


_STAMP = r"[0-9]{8}T[0-9]{6}Z_"
# sqlstore.submit: f"{stamp}_{spec.name}", then `_2`, `_3`... on a clash; a name is
# `[a-z0-9][a-z0-9._-]{0,60}` (spec._NAME) or a file's stem cut to 60 characters.
CAMPAIGN_ID = re.compile(_STAMP + r"[a-z0-9._-]{1,72}")
CAMPAIGN_NAME = re.compile(r"[a-z0-9._-]{1,61}")
# make_run_id: `[^A-Za-z0-9._+-]+` replaced by `-`, cut to 180; RunRecord may add `_<n>`.
RUN_ID = re.compile(_STAMP + r"[A-Za-z0-9._+-]{1,220}")
RACK = re.compile(NAME_PATTERNS["name"])
GROUP = re.compile(r"[a-z0-9][a-z0-9._-]{0,60}")          # spec._NAME (rack_group)
SCENARIO = re.compile(r"[a-z][a-z0-9-]{0,40}")
PARAM = re.compile(r"[a-z][a-z0-9_]{0,40}")
ATTEMPT_STATUS = re.compile(r"[a-z][a-z-]{0,20}")
TIME_MAX = 253402300799.0        # 9999-12-31T23:59:59Z: what datetime can show
DURATION_MAX = 366 * 86400.0
VALUE_MAX = 400                  # characters of one parameter value


def _where(table: str, key: str) -> str:
    return f"lab database row {table} {key}"


def _refuse(table: str, key: str, field: str, value: Any, why: str) -> UntrustedRow:
    return UntrustedRow(f"{_where(table, key)}: {field} {shown(repr(value) if isinstance(value, str) else value, 80)} "
                        f"{why}; the row is not used")


def check_id(value: Any, pattern: re.Pattern[str], what: str, table: str, key: str, *,
             optional: bool = False) -> str | None:
    """`value` if it is a text matching `pattern` in full (None allowed with `optional`)."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise _refuse(table, key, what, value, f"is not a {what} ctl writes (it must match {pattern.pattern})")
    return value


def check_time(value: Any, what: str, table: str, key: str, *, optional: bool = True) -> float | None:
    """A UNIX time: finite, 0 .. 9999-12-31 (None allowed unless `optional` is False)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= TIME_MAX:
        raise _refuse(table, key, what, value, "is not a time (finite, 1970 .. 9999)")
    return float(value)


def check_number(value: Any, what: str, table: str, key: str, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not lo <= value <= hi:
        raise _refuse(table, key, what, value, f"is not a number in {lo:g} .. {hi:g}")
    return float(value)


def check_int(value: Any, what: str, table: str, key: str, *, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not -(2 ** 63) <= value < 2 ** 63:
        raise _refuse(table, key, what, value, "is not an integer")
    return value


def check_text(value: Any, what: str, table: str, key: str, *, optional: bool = True) -> str | None:
    """Free text: any characters (escaped when printed), but text."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _refuse(table, key, what, value, "is not text")
    return value


def check_state(value: Any, states: Iterable[str], what: str, table: str, key: str) -> str:
    if value not in tuple(states):
        raise _refuse(table, key, what, value, "is not a state ctl writes")
    return value


def _json(value: Any, what: str, table: str, key: str) -> Any:
    if not isinstance(value, str):
        raise _refuse(table, key, what, value, "is not JSON text")
    try:
        return json.loads(value)
    except ValueError:
        raise _refuse(table, key, what, value, "is not valid JSON") from None


def check_params(value: Any, what: str, table: str, key: str) -> str:
    """`args_json` / `varied_json`: a mapping of parameter names to short text values without
    control characters (they become a scenario's command-line arguments)."""
    data = _json(value, what, table, key)
    if not isinstance(data, dict):
        raise _refuse(table, key, what, value, "is not a mapping of parameters")
    for k, v in data.items():
        if not PARAM.fullmatch(k):
            raise _refuse(table, key, what, k, "names no parameter (lower-case name expected)")
        if not isinstance(v, str) or len(v) > VALUE_MAX or has_control(v):
            raise _refuse(table, key, f"{what} {k}", v, f"is not a parameter value (text up to {VALUE_MAX} "
                                                        "characters, no control characters)")
    return value


def check_path_text(value: Any, what: str, table: str, key: str) -> str:
    """A path as stored: absolute, no control characters (where it may be used: `trusted_path`)."""
    if not isinstance(value, str) or not value.startswith("/") or has_control(value) or len(value) > 4096:
        raise _refuse(table, key, what, value, "is not an absolute path")
    return value


# ---- rows ----------------------------------------------------------------------------------------

def campaign_row(r: Mapping[str, Any]) -> CampaignRow:
    num = check_int(r.get("num"), "num", "campaigns", "?")
    key = f"#{num}"
    t = "campaigns"
    check_id(r["id"], CAMPAIGN_ID, "campaign id", t, key)
    check_id(r["name"], CAMPAIGN_NAME, "campaign name", t, key)
    check_id(r["scenario"], SCENARIO, "scenario name", t, key)
    check_id(r["inventory_name"], RACK, "rack name", t, key)
    check_id(r.get("rack_group"), GROUP, "rack group", t, key, optional=True)
    check_state(r["state"], CAMPAIGN_STATES, "state", t, key)
    for f in ("inventory_path", "runs_root"):
        check_path_text(r[f], f, t, key)
    for f in ("submitted", "updated"):
        check_time(r[f], f, t, key, optional=False)
    for f in ("not_before", "started", "finished", "activity_t"):
        check_time(r[f], f, t, key)
    check_int(r["seed"], "seed", t, key, optional=True)
    check_int(r["abort_requested"], "abort_requested", t, key)
    for f in ("file_path", "file_text", "file_sha256", "spec_json"):
        check_text(r[f], f, t, key, optional=False)
    for f in ("reason", "activity", "owner"):
        check_text(r.get(f), f, t, key)
    try:
        CampaignSpec.model_validate_json(r["spec_json"])
    except ValidationError as exc:
        raise _refuse(t, key, "spec_json", r["spec_json"][:60], f"is not a campaign ({exc.error_count()} errors)") \
            from None
    if r.get("racks_json") is not None:
        racks = _json(r["racks_json"], "racks_json", t, key)
        if not isinstance(racks, list) or not racks:
            raise _refuse(t, key, "racks_json", r["racks_json"], "is not a list of rack names")
        for name in racks:
            check_id(name, RACK, "rack name", t, key)
    return CampaignRow(**r)


def run_row(r: Mapping[str, Any]) -> RunRow:
    t, key = "runs", f"#{r.get('campaign')} run {r.get('seq')}"
    for f in ("campaign", "seq", "case_index", "repetition", "attempts", "failures", "interruptions"):
        check_int(r[f], f, t, key)
    check_params(r["args_json"], "args_json", t, key)
    check_params(r["varied_json"], "varied_json", t, key)
    check_number(r["duration_s"], "duration_s", t, key, 0.0, DURATION_MAX)
    check_state(r["state"], RUN_STATES, "state", t, key)
    check_id(r["run_id"], RUN_ID, "run id", t, key, optional=True)
    check_id(r.get("claim_rack"), RACK, "rack name", t, key, optional=True)
    for f in ("not_before", "claim_until"):
        check_time(r.get(f), f, t, key)
    for f in ("last_class", "last_error", "claimed_by"):
        check_text(r.get(f), f, t, key)
    return RunRow(**r)


def attempt_row(r: Mapping[str, Any]) -> AttemptRow:
    t, key = "attempts", f"#{r.get('campaign')} run {r.get('seq')} attempt {r.get('attempt')}"
    for f in ("id", "campaign", "seq", "attempt"):
        check_int(r[f], f, t, key)
    check_int(r["health"], "health", t, key, optional=True)
    check_int(r["exit_code"], "exit_code", t, key, optional=True)
    check_id(r["run_id"], RUN_ID, "run id", t, key)
    check_path_text(r["record_dir"], "record_dir", t, key)
    check_id(r["status"], ATTEMPT_STATUS, "status", t, key)
    check_id(r.get("rack"), RACK, "rack name", t, key, optional=True)
    check_time(r["started"], "started", t, key, optional=False)
    check_time(r["finished"], "finished", t, key)
    for f in ("class", "error", "action", "controller"):
        check_text(r.get(f), f, t, key)
    return AttemptRow(**{("klass" if k == "class" else k): v for k, v in r.items()})


def health_row(r: Mapping[str, Any]) -> HealthRow:
    t, key = "health", f"#{r.get('campaign')} check {r.get('id')}"
    for f in ("id", "campaign", "ok"):
        check_int(r[f], f, t, key)
    check_time(r["t"], "t", t, key, optional=False)
    reasons = _json(r["reasons_json"], "reasons_json", t, key)
    if not isinstance(reasons, list) or not all(isinstance(x, str) for x in reasons):
        raise _refuse(t, key, "reasons_json", r["reasons_json"], "is not a list of texts")
    details = _json(r["details_json"], "details_json", t, key)
    if not isinstance(details, dict):
        raise _refuse(t, key, "details_json", r["details_json"], "is not a mapping")
    spread = details.get("clock_spread_s")
    if spread is not None:
        check_number(spread, "details_json clock_spread_s", t, key, 0.0, 86400.0)
    return HealthRow(r["id"], r["campaign"], r["t"], r["ok"], reasons, details)


def event_row(r: Mapping[str, Any], num: int) -> dict:
    t, key = "events", f"#{num}"
    check_time(r["t"], "t", t, key, optional=False)
    check_text(r["kind"], "kind", t, key, optional=False)
    check_text(r["message"], "message", t, key, optional=False)
    return dict(r)


def record_row(r: Mapping[str, Any]) -> dict:
    """An uploaded record: its ids checked, manifest and summary parsed (mappings)."""
    t, key = "records", f"run_id {shown(r.get('run_id'), 80)}"
    check_id(r["run_id"], RUN_ID, "run id", t, key)
    key = f"{r['run_id']}"
    for f in ("campaign", "seq", "attempt"):
        check_int(r.get(f), f, t, key, optional=True)
    check_id(r.get("rack"), RACK, "rack name", t, key, optional=True)
    check_text(r.get("status"), "status", t, key, optional=False)
    check_text(r.get("record_dir"), "record_dir", t, key, optional=False)
    check_text(r.get("controller"), "controller", t, key)
    check_time(r.get("uploaded"), "uploaded", t, key)
    out = {k: v for k, v in r.items() if k not in ("manifest_json", "summary_json")}
    manifest = _json(r["manifest_json"], "manifest_json", t, key)
    if not isinstance(manifest, dict):
        raise _refuse(t, key, "manifest_json", r["manifest_json"], "is not a mapping")
    if "format_version" in manifest:        # a record's manifest (records.encode_manifest): times back to numbers
        try:
            manifest = manifest_from(manifest, f"{t} {key}")
        except RecordError as exc:
            raise _refuse(t, key, "manifest_json", r["manifest_json"], exc.one_line()) from None
    summary = _json(r["summary_json"], "summary_json", t, key) if r["summary_json"] else None
    if summary is not None and not isinstance(summary, dict):
        raise _refuse(t, key, "summary_json", r["summary_json"], "is not a mapping")
    out["manifest"], out["summary"] = manifest, summary
    return out


def finite_times(values: Iterable[Any]) -> list[float]:
    """The finite numbers of `values` (an aggregate over rows: a bad one is left out)."""
    return [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(v) and abs(v) <= TIME_MAX]


# ---- paths ---------------------------------------------------------------------------------------

def is_under(path: Path, roots: Iterable[Path]) -> bool:
    """Whether `path`, with every symlink resolved, is one of `roots` or inside one (resolved too)."""
    real = Path(os.path.realpath(path))
    for root in roots:
        r = Path(os.path.realpath(root))
        if real == r or r in real.parents:
            return True
    return False


def trusted_path(value: str, what: str, roots: Iterable[Path], *, shared: bool, where: str) -> Path:
    """The path a row names, when this controller may use it: absolute, no control characters,
    and (from a shared store) under one of `roots`, the directories this controller is
    configured with. Raises UntrustedRow naming `where` (the row) and the roots."""
    roots = list(roots)
    if not isinstance(value, str) or not value.startswith("/") or has_control(value):
        raise UntrustedRow(f"{where}: {what} {shown(repr(value), 80)} is not an absolute path; not used")
    p = Path(value)
    if shared and not is_under(p, roots):
        raise UntrustedRow(f"{where}: {what} {shown(value, 120)} is not under "
                           + (" or ".join(str(r) for r in roots) or "a directory this controller is configured with")
                           + " (a path from the lab database names a file here only inside this controller's "
                             "configured directories); not used")
    return p


def record_roots(extra: Iterable[Path | None] = ()) -> list[Path]:
    """Where this controller keeps run records: its runs dir (flag > $CTL_RUNS_DIR > config file
    > default) and any runs dir its scheduler was given."""
    return [runs_dir(), *(p for p in extra if p is not None)]


def inventory_roots() -> list[Path]:
    """Where the inventories this controller is configured with live: the directory of its
    configured inventory ($CTL_INVENTORY > config file > default) and the shipped inventories."""
    return [Path(resolve("inventory").value).parent, packaged_inventory().parent]


def local_record_dir(value: Any, *, shared: bool, roots: Iterable[Path] | None = None) -> Path | None:
    """The record directory a row names, when this controller may read it there: None when it
    is not a path, or (from a shared store) not under this controller's runs dirs."""
    try:
        return trusted_path(value, "record_dir", record_roots() if roots is None else roots, shared=shared,
                            where="row")
    except UntrustedRow:
        return None
