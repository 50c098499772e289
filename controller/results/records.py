"""Run records: `runs/<id>/`, self-describing and versioned.

Layout of a run record:
    manifest.json        format version, status, resolved parameters, inventory snapshot
                         (references only, no secrets), per-host metadata, shaper and
                         endpoint state before/applied/after/restored, clock offsets,
                         flows, timings, errors
    commands.jsonl       every command issued: host, argv, exit status, stdout, stderr, time
    raw/<host>/...       raw tool output (iperf3 JSON, ss, nstat, ip mptcp monitor, tc)
    metrics.jsonl        every telemetry point (the spool; InfluxDB gets the same points)
    metrics.influx.json  how far the spool has been pushed to InfluxDB
    summary.json         the scenario's summary
    *.png                figures

A newer format version is refused; older ones are migrated on read.
"""
from __future__ import annotations

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
from controller.settings import state_dir
from controller.version import commit, dependencies, version

FORMAT_VERSION = 1
_MIGRATIONS: dict[int, Callable[[dict], dict]] = {}  # from version N to N+1


def make_run_id(scenario: str, varied: dict[str, str], now: float | None = None) -> str:
    """Readable and unique: UTC time, scenario, the parameters that were set."""
    t = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now if now is not None else time.time()))
    parts = [t, scenario]
    for k, v in varied.items():
        parts.append(f"{k}-{v}")
    rid = "_".join(parts)
    rid = re.sub(r"[^A-Za-z0-9._+-]+", "-", rid)
    return rid[:180]


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

    @classmethod
    def open(cls, path: Path) -> "RunRecord":
        if not (path / "manifest.json").exists():
            raise RecordError(f"{path} is not a run record (no manifest.json)")
        rec = cls(path.parent, path.name, create=False)
        rec.manifest = load_manifest(path)
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

    def finish(self, status: str, error: str | None = None) -> None:
        self.manifest["status"] = status
        self.manifest["finished"] = time.time()
        if error:
            self.manifest["errors"].append({"t": time.time(), "error": error})
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
        matches = sorted(d for d in runs_root.glob(f"*{run}*") if (d / "manifest.json").exists())
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
