"""`ctl runs show RUN [--window START:END] [--json]`: a recorded run, what ran and its summary,
recomputed from the record -- over the whole traffic or over a window of it.

The first command of the `ctl runs` group (list, plot and export are to come): each action is
one `_ACTIONS` entry, a function adding its parser. Nothing here writes into a record.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import Any, Callable

from controller import scenarios
from controller.cli.commands import add_command
from controller.cli.common import print_json
from controller.errors import UsageError
from controller.results.records import load_manifest
from controller.run.partial import partial_line
from controller.run.replay import SUMMARIZED_STATUSES, summarize_record
from controller.settings import runs_dir


def record_dir(run: str, root: Path) -> Path:
    """RUN as a record directory (one holding manifest.json), else as a run id under `root`."""
    p = Path(run)
    if (p / "manifest.json").is_file():
        return p
    if run and "/" not in run and run not in (".", "..") and (root / run / "manifest.json").is_file():
        return root / run
    shown = repr(run) if len(run) <= 80 else repr(run[:80]) + "..."
    raise UsageError(f"runs show: no run record {shown}: neither a record directory nor a run id under {root}")


def iso(ts: Any) -> str:
    """Unix seconds -> ISO 8601 in the local zone, with its offset ('-' when unknown)."""
    if not isinstance(ts, (int, float)) or isinstance(ts, bool) or ts <= 0:
        return "-"
    return dt.datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


def what_ran(m: dict, record: Path) -> list[str]:
    """The lines above the summary: the run, its parameters, its times, where the record is."""
    given = (m.get("parameters") or {}).get("given") or {}
    args = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in given.items()) or "(none)"
    tw = m.get("traffic_window") or {}
    lines = [f"run {m.get('run_id') or record.name}: {m.get('scenario')}, {m.get('status')}"
             + (f" (campaign {m['campaign']})" if m.get("campaign") else ""),
             f"parameters given: {args} (the others at their defaults)",
             f"started {iso(m.get('created'))}, finished {iso(m.get('finished'))}"]
    if tw.get("start") and tw.get("end"):
        lines.append(f"traffic {iso(tw['start'])} to {iso(tw['end'])} ({tw['end'] - tw['start']:.1f} s)")
    lines.append(f"record: {record}")
    return lines


def cmd_show(args: argparse.Namespace) -> int:
    record = record_dir(args.run, runs_dir(args.runs_dir))
    m = load_manifest(record)
    scenario = scenarios.get(m["scenario"])
    if m.get("status") in SUMMARIZED_STATUSES:
        summary = summarize_record(record, args.window)
        text = scenario.render(summary)
        note = "summary recomputed from the record by this ctl"
    else:
        # A run cut short: its own (partial) summary, as `ctl run` printed it; nothing to window.
        if args.window is not None:
            raise UsageError(f"runs show: run {record.name} ended {m.get('status')!r}: --window needs a run whose "
                             "traffic completed")
        path = record / "summary.json"
        summary = json.loads(path.read_text()) if path.is_file() else {}
        parts = []
        if summary and (not summary.get("partial") or
                        (summary.get("partial_run") or {}).get("summarized") == "scenario"):
            parts.append(scenario.render(summary))
        if summary.get("partial"):
            parts.append(partial_line(summary))
        text = "\n\n".join(parts) if parts else "no summary in the record"
        note = "the run's own summary.json"
    if args.json:
        print_json(summary)
        return 0
    lines = what_ran(m, record)
    w = summary.get("window")
    if w:
        lines.append(f"window: {w['start_s']:g} s to {w['end_s']:g} s of {w['traffic_s']:.1f} s of traffic "
                     "(every number below is over it unless its definition says whole run; --json shows them)")
    print("\n".join(lines + [f"({note})", "", text]))
    return 0


def _add_show(actions: Any) -> None:
    p = actions.add_parser("show", help="what ran and its summary, over the whole traffic or a window of it",
                           description="Print what ran (scenario, parameters, status, times) and the scenario's "
                                       "summary, recomputed from the record, as `ctl run` prints it.")
    p.add_argument("run", metavar="RUN", help="a run id under the runs directory, or the path of a run record")
    p.add_argument("--window", metavar="START:END",
                   help="summarize only this part of the traffic: durations from the traffic's start, e.g. "
                        "45s:600s, :45s (from the start), 300s: (to the end), 0:10m")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p.add_argument("--runs-dir", help="where run records are (default: $CTL_RUNS_DIR, the config file, or runs/)")
    p.set_defaults(func=cmd_show)


# One entry per action of `ctl runs`.
_ACTIONS: dict[str, Callable[[Any], None]] = {"show": _add_show}


def register(sub) -> None:
    p = add_command(sub, "runs", description="Recorded runs: show one (more actions to come).")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    for add in _ACTIONS.values():
        add(actions)
