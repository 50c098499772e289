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

Times in the manifest (`created`, `finished`, `phases[].t`, `errors[].t`, `traffic_window`,
`startup`: when `ctl run`'s start-up steps before the record ended, `figures_drawn`)
are Unix seconds, UTC (machine fields, for computation); metric points carry Unix
nanoseconds in `t` (metrics.jsonl, the InfluxDB format). Everything written for a reader
(summary.json, `--json` output, exports) has ISO 8601 UTC times instead
(`controller.results.wire`).

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
from controller.results.wire import iso_utc, to_wire, units_of
from controller.settings import state_dir
from controller.version import commit, dependencies, version

FORMAT_VERSION = 1
SUMMARY_FORMAT = 1          # the provenance and units keys of summary.json
_MIGRATIONS: dict[int, Callable[[dict], dict]] = {}  # from version N to N+1


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
        tmp.write_text(json.dumps(self.manifest, indent=1, default=_json_default))
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
                    "duration_s": round(t1 - t0, 6) if isinstance(t0, (int, float)) and isinstance(t1, (int, float))
                    else None},
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


def load_manifest(path: Path) -> dict:
    try:
        data = json.loads((path / "manifest.json").read_text())
    except (OSError, ValueError) as exc:
        raise RecordError(f"{path}/manifest.json: unreadable: {exc}") from None
    v = data.get("format_version")
    if not isinstance(v, int):
        raise RecordError(f"{path}/manifest.json: no format_version")
    if v > FORMAT_VERSION:
        raise RecordError(f"{path}: run record format {v} is newer than this ctl understands "
                          f"({FORMAT_VERSION}); upgrade ctl to read it")
    while v < FORMAT_VERSION:
        data = _MIGRATIONS[v](data)
        v += 1
        data["format_version"] = v
    return data


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
