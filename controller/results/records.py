"""Run records: `runs/<id>/`, self-describing and versioned.

Layout of a run record:
    manifest.json        format version, status, resolved parameters, inventory snapshot
                         (references only, no secrets), per-host metadata, shaper and
                         endpoint state before/applied/after/restored, clock offsets,
                         flows, timings, errors
    commands.jsonl       every command issued: host, argv, exit status, stdout, stderr, time
    processes.jsonl      every remote process started, the moment its PID is known (the
                         manifest's `processes` has the same, saved a moment later)
    raw/<host>/...       raw tool output (iperf3 JSON, ss, nstat, ip mptcp monitor, tc)
    metrics.jsonl        every telemetry point (the spool; InfluxDB gets the same points)
    metrics.influx.json  how far the spool has been pushed to InfluxDB
    summary.json         the scenario's summary, with its provenance and units (below)
    *.png                figures, put in after the record is finished (the manifest's
                         `figures_drawn` is null while they are drawn, then when they went
                         in; `ctl runs plot` draws them again from the record)

A newer format version is refused; older ones are migrated on read.

Times (format 2): every time in manifest.json, commands.jsonl and processes.jsonl is ISO 8601 UTC
with microseconds and a zone (`2026-11-27T12:29:46.504719Z`, the form of summary.json and `--json`
output); durations are seconds (`_s`, `duration`). Where each time sits is declared once
(`controller.results.timefields`); `RunRecord.save`, the command log and the process journal write
them so, and every reader goes through `load_manifest` / `manifest_from` / `read_jsonl`, which give
Unix seconds back (the numbers ctl computes with). `processes[].host_start` is the process's start
on its host, from `ps -o lstart=` run under TZ=UTC0 (to the second). metrics.jsonl keeps Unix
nanoseconds in `t` (the InfluxDB line protocol's point time; millions of points, read with
`pd.to_datetime(t, unit="ns", utc=True)`; `ctl runs export` writes them as ISO 8601).
Format 1 (ctl before 2026-11-27) wrote Unix seconds as floats and `host_start` as the host's local
time without a zone; it is still read: the numbers are the same, and such a `host_start` is kept
as `host_start_local` (its zone is unknown: it is only compared with `ps` on that host again).

summary.json is the scenario's summary (its numbers and `definitions`) plus two keys ctl adds:
    provenance   {"run_id", "scenario", "campaign", "status", "started", "finished",
                  "traffic": {"start", "end", "duration_s"}, "ctl": {"version", "commit"},
                  "inventory": {"name", "file"}, "parameters": {"given", "values"},
                  "record_format", "summary_format"}: times ISO 8601 UTC; `parameters.given`
                  as typed, `parameters.values` resolved, in the scenario's base units
                  (rates bit/s, delays us, durations s, sizes bytes);
    units        field name -> unit of every numeric field whose name spells one
                  (`receiver_mbps`: "Mbit/s"), see `controller.results.wire.unit_of`.
A copied summary.json thus says which run, when, with which ctl and on which rack it is.
"""
from __future__ import annotations

import calendar
import contextlib
import json
import os
import platform
import re
import socket
import sys
import time
from pathlib import Path
from typing import Any, Callable

from controller.errors import RecordError
from controller.results.timefields import COMMAND_TIMES, MANIFEST_TIMES, PROCESS_TIMES, decode, encode, microsecond
from controller.results.wire import iso_utc, to_wire, units_of
from controller.settings import state_dir
from controller.version import commit, dependencies, version

FORMAT_VERSION = 2          # 2: times ISO 8601 UTC (module doc); 1: Unix seconds
SUMMARY_FORMAT = 1          # the provenance and units keys of summary.json


def _legacy_host_start(p: Any) -> Any:
    """A format-1 process entry: its `host_start` (the host's local time, no zone) as
    `host_start_local`; a zoned or numeric one is left."""
    if isinstance(p, dict) and isinstance(p.get("host_start"), str) and p["host_start"] \
            and not p["host_start"][:1].isdigit():
        p = {("host_start_local" if k == "host_start" else k): v for k, v in p.items()}
    return p


def _v1_to_v2(m: dict) -> dict:
    """Format 1 -> 2 (in memory the times are numbers in both): only the zone-less host_start moves."""
    if isinstance(m.get("processes"), list):
        m = {**m, "processes": [_legacy_host_start(p) for p in m["processes"]]}
    return m


_MIGRATIONS: dict[int, Callable[[dict], dict]] = {1: _v1_to_v2}  # from version N to N+1


def make_run_id(scenario: str, varied: dict[str, str], now: float | None = None) -> str:
    """Readable and unique: UTC time, scenario, the parameters that were set. A percentage keeps its
    unit as `pct` (`loss-0.1pct`, not `loss-0.1-`); other characters outside a file name's safe set
    become `-`."""
    t = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now if now is not None else time.time()))
    parts = [t, scenario]
    for k, v in varied.items():
        parts.append(f"{k}-{v}")
    rid = "_".join(parts).replace("%", "pct")
    rid = re.sub(r"[^A-Za-z0-9._+-]+", "-", rid)
    return rid[:180]


def id_time(run_id: str) -> float | None:
    """The UTC start time a run id begins with (make_run_id: to the second), or None."""
    m = re.match(r"(\d{8}T\d{6}Z)_", run_id)
    if m is None:
        return None
    return calendar.timegm(time.strptime(m.group(1), "%Y%m%dT%H%M%SZ"))


class RunRecord:
    def __init__(self, root: Path, run_id: str, *, create: bool = True):
        self.root = root
        base = run_id
        n = 1
        path = root / run_id
        if create:
            root.mkdir(parents=True, exist_ok=True)
            while True:
                try:
                    path.mkdir()
                    break
                except FileExistsError:
                    n += 1
                    run_id = f"{base}_{n}"
                    path = root / run_id
            (path / "raw").mkdir()
        self.id = run_id
        self.dir = path
        self.manifest: dict[str, Any] = {}
        self._summary: dict | None = None      # the summary as write_summary got it

    @classmethod
    def open(cls, path: Path) -> "RunRecord":
        if not (path / "manifest.json").exists():
            raise RecordError(f"{path} is not a run record (no manifest.json)")
        rec = cls(path.parent, path.name, create=False)
        rec.manifest = load_manifest(path)
        # an existing summary is rewritten with the record's final status by finish() (recovery)
        with contextlib.suppress(OSError, ValueError):
            doc = json.loads((path / "summary.json").read_text())
            if isinstance(doc, dict):
                rec._summary = doc
        return rec

    def start(self, *, scenario: str, parameters: dict, inventory: dict, inventory_file: str,
              campaign: str | None = None, dry_run: bool = False) -> None:
        self.manifest = {
            "format_version": FORMAT_VERSION,
            "run_id": self.id,
            "scenario": scenario,
            "campaign": campaign,
            "status": "running",
            "dry_run": dry_run,
            "created": time.time(),
            "finished": None,
            "controller": {"host": socket.gethostname(), "pid": os.getpid(), "ctl_version": version(), "commit": commit(), "dependencies": dependencies(),
                           "python": sys.version.split()[0], "platform": platform.platform(),
                           "argv": sys.argv, "state_dir": str(state_dir().resolve())},
            "parameters": parameters,
            "inventory_file": inventory_file,
            "inventory": inventory,
            "phases": [],
            "hosts": {},
            "shapers": {},
            "endpoints": {},
            "clock_offsets": {},
            "flows": [],
            "processes": [],
            "errors": [],
            "telemetry": {},
            "files": {"commands": "commands.jsonl", "metrics": "metrics.jsonl", "summary": "summary.json",
                      "raw": "raw/"},
        }
        self.save()

    def phase(self, name: str) -> None:
        self.manifest["phases"].append({"phase": name, "t": time.time()})
        self.save()

    def save(self) -> None:
        tmp = self.dir / "manifest.json.tmp"
        tmp.write_text(json.dumps(encode_manifest(self.manifest), indent=1, default=_json_default))
        os.replace(tmp, self.dir / "manifest.json")

    def raw_path(self, host: str, name: str) -> Path:
        d = self.dir / "raw" / host
        d.mkdir(parents=True, exist_ok=True)
        return d / name

    def write_raw(self, host: str, name: str, text: str) -> Path:
        p = self.raw_path(host, name)
        p.write_text(text)
        return p

    def write_json(self, name: str, data: Any) -> Path:
        p = self.dir / name
        tmp = self.dir / (name + ".tmp")
        tmp.write_text(json.dumps(data, indent=1, default=_json_default))
        os.replace(tmp, p)
        return p

    def write_summary(self, summary: dict) -> Path:
        """summary.json: the scenario's summary with its provenance and units (module doc);
        `finish` writes it again with the run's final status and end time."""
        self._summary = summary
        return self.write_json("summary.json", summary_document(summary, self.manifest))

    def finish(self, status: str, error: str | None = None) -> None:
        """The final status and end time: summary.json first, then the manifest, so that whenever
        the manifest says a final status (what recovery and every reader go by) summary.json's
        provenance says it too; a kill between the two leaves the manifest `running`, and the next
        start's recovery finishes both alike."""
        self.manifest["status"] = status
        self.manifest["finished"] = time.time()
        if error:
            self.manifest["errors"].append({"t": time.time(), "error": error})
        if self._summary is not None:
            self.write_summary(self._summary)
        self.save()


def _json_default(o: Any) -> Any:
    if hasattr(o, "to_json"):
        return o.to_json()
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if hasattr(o, "value"):
        return o.value
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _time(v: Any) -> str | None:
    return iso_utc(float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None


def parameter_sets(params: Any) -> tuple[dict, dict]:
    """(given, values) of a manifest's `parameters` (pure). A scenario run keeps both; a field
    run keeps its options flat (hosts, workload, duration_s, ...): they are its values."""
    if not isinstance(params, dict):
        return {}, {}
    if "values" in params or "given" in params:
        return dict(params.get("given") or {}), dict(params.get("values") or {})
    return {}, dict(params)


def provenance(manifest: dict) -> dict:
    """Which run a summary is of, from its manifest (pure): the `provenance` of summary.json."""
    tw = manifest.get("traffic_window") or {}
    t0, t1 = tw.get("start"), tw.get("end")
    ctl = manifest.get("controller") or {}
    inv = manifest.get("inventory") or {}
    params = manifest.get("parameters") or {}
    return {
        "run_id": manifest.get("run_id"),
        "scenario": manifest.get("scenario"),
        "campaign": manifest.get("campaign"),
        "status": manifest.get("status"),
        "started": _time(manifest.get("created")),
        "finished": _time(manifest.get("finished")),
        "traffic": {"start": _time(t0), "end": _time(t1),
                    # from the times as the record keeps them: the same when re-read (`ctl runs show`)
                    "duration_s": round(microsecond(t1) - microsecond(t0), 6)
                    if isinstance(t0, (int, float)) and isinstance(t1, (int, float)) else None},
        "ctl": {"version": ctl.get("ctl_version"), "commit": ctl.get("commit")},
        "inventory": {"name": inv.get("name") if isinstance(inv, dict) else None,
                      "file": manifest.get("inventory_file") or None},
        "parameters": dict(zip(("given", "values"), parameter_sets(params), strict=True)),
        "record_format": manifest.get("format_version"),
        "summary_format": SUMMARY_FORMAT,
    }


def summary_document(summary: dict, manifest: dict) -> dict:
    """summary.json's content (pure): the summary, its times as ISO 8601 UTC, its provenance
    and the unit of each numeric field. `ctl runs show --json` prints the same for a record."""
    body = {k: v for k, v in summary.items() if k not in ("provenance", "units")}
    return to_wire({**body, "provenance": provenance(manifest), "units": units_of(body)})


def record_warnings(manifest: dict) -> list[str]:
    """Every warning a run gave while it ran, as its record keeps them (pure): values changed on
    their way to the rack (`conversions`), the congestion controls' (`congestion.warnings`: a
    coupling map left non-empty, subflows refused coupling) and a stalled controller
    (`controller_loop.warning`). A record is untrusted input: only strings are taken."""
    out: list[str] = []
    for c in manifest.get("conversions") or []:
        if isinstance(c, dict) and all(isinstance(c.get(k), str) for k in ("what", "asked", "applied", "reason")):
            out.append(f"{c['what']}: {c['asked']} -> {c['applied']}: {c['reason']}")
    cong = manifest.get("congestion")
    if isinstance(cong, dict):
        out += [w for w in cong.get("warnings") or [] if isinstance(w, str)]
    loop = manifest.get("controller_loop")
    if isinstance(loop, dict) and isinstance(loop.get("warning"), str):
        out.append(loop["warning"])
    return out


def encode_manifest(manifest: dict) -> dict:
    """A manifest as format 2 writes it (its times ISO 8601 UTC): for manifest.json and for every
    copy of a manifest ctl stores (the campaign store, the lab database, an export)."""
    return encode(manifest, MANIFEST_TIMES)


def command_line(entry: dict) -> dict:
    """One commands.jsonl line as format 2 writes it (CommandLog's `encode`)."""
    return encode(entry, COMMAND_TIMES)


def process_line(entry: dict) -> dict:
    """One processes.jsonl line as format 2 writes it."""
    return encode(entry, PROCESS_TIMES)


def manifest_from(data: Any, where: str) -> dict:
    """A manifest as readers hold it (times as Unix seconds) from its stored JSON of any format
    this ctl knows: the one place a manifest's content is checked, migrated and decoded. A newer
    format is refused (RecordError naming `where`)."""
    if not isinstance(data, dict):
        raise RecordError(f"{where}: not a manifest (a JSON object)")
    v = data.get("format_version")
    if not isinstance(v, int) or isinstance(v, bool):
        raise RecordError(f"{where}: no format_version")
    if v > FORMAT_VERSION:
        raise RecordError(f"{where}: run record format {v} is newer than this ctl understands "
                          f"({FORMAT_VERSION}); upgrade ctl to read it")
    while v < FORMAT_VERSION:
        data = _MIGRATIONS[v](data)
        v += 1
        data["format_version"] = v
    return decode(data, MANIFEST_TIMES)


def load_manifest(path: Path) -> dict:
    try:
        data = json.loads((path / "manifest.json").read_text())
    except (OSError, ValueError) as exc:
        raise RecordError(f"{path}/manifest.json: unreadable: {exc}") from None
    if isinstance(data, dict) and not isinstance(data.get("format_version"), int):
        raise RecordError(f"{path}/manifest.json: no format_version")
    return manifest_from(data, str(path) if isinstance(data, dict) else f"{path}/manifest.json")


_LINE_TIMES = {"commands.jsonl": COMMAND_TIMES, "processes.jsonl": PROCESS_TIMES}


def read_jsonl(path: Path) -> list[dict]:
    """The entries of a record's commands.jsonl or processes.jsonl (by its name), times as Unix
    seconds, whatever format wrote each line (a format-1 record finished by a newer ctl has both).
    A line that is not a JSON object (a torn last line: a kill mid-write) is skipped. Missing
    file: OSError, as open()."""
    paths = _LINE_TIMES[path.name]
    out: list[dict] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if isinstance(e, dict):
                out.append(decode(_legacy_host_start(e) if paths is PROCESS_TIMES else e, paths))
    return out


def find_run(runs_root: Path, run: str | None) -> Path:
    """A run by id, by path, or the latest one."""
    if run:
        p = Path(run)
        if (p / "manifest.json").exists():
            return p
        if (runs_root / run / "manifest.json").exists():
            return runs_root / run
        # a part of an id, matched as text (never as a glob pattern: `[`, `*`, `?` are literal)
        matches = sorted(d for d in (runs_root.iterdir() if runs_root.is_dir() else ())
                         if run in d.name and (d / "manifest.json").exists())
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise RecordError(f"{run!r} matches {len(matches)} runs; give the full id")
        raise RecordError(f"no run record {run!r} under {runs_root}")
    candidates = sorted((d for d in runs_root.iterdir() if (d / "manifest.json").exists()),
                        key=lambda d: d.stat().st_mtime) if runs_root.exists() else []
    if not candidates:
        raise RecordError(f"no run records under {runs_root}")
    return candidates[-1]
