"""`ctl runs`: recorded runs after the fact.

    ctl runs list [filters] [--json]                      the runs of the runs dir, filtered
    ctl runs show RUN [--window START:END] [--json]       what ran and its summary, recomputed
    ctl runs export [RUNS... | --campaign ID | --reproduction ID] [filters]
                    --format csv|jsonl|parquet --out DIR [--no-samples]
                                                          tables for pandas and R
    ctl runs plot RUN [--format png|pdf|svg] [--dpi N] [--out DIR]
                                                          every figure again (cli/runs_plot.py)

Filters (list, export): --scenario, --campaign, --since/--until (ISO 8601 with a zone, a date,
or a duration before now), --status, --param NAME=VALUE (the scenario's parameter, compared
after parsing: `--param link2=20M` matches 20000000 bit/s however it was typed).

Each action is one `_ACTIONS` entry, a function adding its parser. Nothing here writes into a
record; an export writes only under --out (controller.safefs, no link followed), and so does plot.
"""
from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from controller import scenarios
from controller.campaign.backends import open_store, store_location
from controller.campaign.boundary import local_record_dir
from controller.cli.commands import add_command, setting_default
from controller.cli.common import print_json
from controller.cli.runs_plot import add_plot
from controller.errors import CtlError, ParameterError, RecordError, UsageError
from controller.field.stats import load_points, render_report, report_data
from controller.reproduce import record as reproductions
from controller.results.catalog import FIELD, STATUSES, Filters, RunInfo, id_time, info_from_manifest, parse_when, scan
from controller.results.export import FORMATS, Source, write_export
from controller.results.records import load_manifest, record_warnings, summary_document
from controller.results.wire import iso_utc
from controller.run.partial import partial_line
from controller.run.replay import SUMMARIZED_STATUSES, summarize_record
from controller.safefs import open_dir
from controller.settings import runs_dir
from controller.textsafe import shown


def record_dir(run: str, root: Path) -> Path:
    """RUN as a record directory (one holding manifest.json), else as a run id under `root`."""
    p = Path(run)
    if (p / "manifest.json").is_file():
        return p
    if run and "/" not in run and run not in (".", "..") and (root / run / "manifest.json").is_file():
        return root / run
    what = repr(run) if len(run) <= 80 else repr(run[:80]) + "..."
    raise UsageError(f"runs: no run record {what}: neither a record directory nor a run id under {root}")


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
    lines += [f"warning (recorded): {w}" for w in record_warnings(m)]
    lines.append(f"record: {record}")
    return lines


def field_what_ran(m: dict, record: Path) -> list[str]:
    """The lines above a field run's report: hosts, workload, times, what the record holds."""
    p = m.get("parameters") or {}
    hosts = ", ".join(str(h) for h in p.get("hosts") or []) or "-"
    dur = p.get("duration_s")
    lines = [f"field run {m.get('run_id') or record.name}: {m.get('status')}",
             f"hosts {hosts}; workload {p.get('workload') or '-'}; duration "
             + (f"{dur:g} s" if isinstance(dur, (int, float)) else "until stopped")
             + (f"; iperf3 server {p['server']}" if p.get("server") else "")
             + (f"; ping {p['ping']}" if p.get("ping") else ""),
             f"started {iso(m.get('created'))}, finished {iso(m.get('finished'))}"]
    figs = m.get("figures") or []
    lines.append("figures in the record: " + (", ".join(str(f) for f in figs) if figs else
                                              "none yet (`ctl field report` draws them; `ctl runs plot` too)"))
    lines.append(f"record: {record}")
    return lines


def field_summary(record: Path, m: dict) -> dict | None:
    """A field run's report (Table 1, percentiles, handovers), computed by this ctl from the record's
    fetched points as `ctl field report` computes it, without fetching or writing; None: nothing
    fetched yet."""
    points = load_points(record / "metrics.jsonl")
    if not points:
        return None
    return {"scenario": FIELD, "run_id": m.get("run_id") or record.name, "parameters": m.get("parameters"),
            "status": m.get("status"), **report_data(points)}


def show_field(args: argparse.Namespace, record: Path, m: dict) -> int:
    if args.window is not None:
        raise UsageError(f"runs show: {record.name} is a field run: --window is for a scenario run's traffic")
    summary = field_summary(record, m)
    if args.json:
        print_json(summary_document(summary or {"scenario": FIELD, "run_id": m.get("run_id") or record.name},
                                    m))
        return 0
    if summary is None:
        text = "no points fetched yet: `ctl field report RUN` fetches the hosts' spools and reports"
    else:
        text = render_report(summary)
    print("\n".join(field_what_ran(m, record) + ["(report computed from the record's metrics.jsonl by this ctl)",
                                                  "", text]))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    record = record_dir(args.run, runs_dir(args.runs_dir))
    m = load_manifest(record)
    if m.get("scenario") == FIELD:
        return show_field(args, record, m)
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
        print_json(summary_document(summary, m))
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
                                       "summary, recomputed from the record, as `ctl run` prints it; for a field "
                                       "run, its hosts and workload and the report `ctl field report` prints, "
                                       "computed from the points fetched into the record.")
    p.add_argument("run", metavar="RUN", help="a run id under the runs directory, or the path of a run record")
    p.add_argument("--window", metavar="START:END",
                   help="summarize only this part of the traffic: durations from the traffic's start, e.g. "
                        "45s:600s, :45s (from the start), 300s: (to the end), 0:10m")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p.add_argument("--runs-dir", metavar="DIR", help=f"where run records are ({setting_default('runs_dir')})")
    p.set_defaults(func=cmd_show)


# ---- filters (list, export) ----------------------------------------------------------------

def _param_name(text: str) -> str:
    return text.strip().removeprefix("--").replace("-", "_")


def param_filter(specs: list[str]) -> Callable[[RunInfo], bool] | None:
    """--param NAME=VALUE ... as a predicate on a run: each VALUE parsed by the run's scenario's
    own parameter (units and all), compared with the run's resolved value. Bad input (no `=`,
    a name no scenario has, a value no scenario with that parameter accepts) is a UsageError."""
    if not specs:
        return None
    wanted: list[tuple[str, str]] = []
    for spec in specs:
        name, eq, raw = spec.partition("=")
        if not eq or not name.strip():
            raise UsageError(f"runs: --param {shown(spec, 60)!r}: give NAME=VALUE, e.g. --param cc=mcubic")
        wanted.append((_param_name(name), raw.strip()))
    parsed: dict[tuple[str, str], dict[str, Any]] = {}   # (name, raw) -> {scenario: value as recorded}
    for name, raw in wanted:
        values: dict[str, Any] = {}
        errors: list[str] = []
        for sc_name in scenarios.names():
            p = next((x for x in scenarios.get(sc_name).all_params() if x.name == name), None)
            if p is None:
                continue
            try:
                v = p.parse(raw)
            except ParameterError as exc:
                errors.append(exc.one_line())
                continue
            values[sc_name] = v.to_json() if hasattr(v, "to_json") else v
        if not values:
            raise UsageError(f"runs: --param {name}={shown(raw, 40)}: " +
                             (errors[0] if errors else f"no scenario has a parameter {name!r}"))
        parsed[(name, raw)] = values

    def keeps(r: RunInfo) -> bool:
        for key in wanted:
            values = parsed[key]
            if r.scenario not in values or key[0] not in r.values or r.values[key[0]] != values[r.scenario]:
                return False
        return True
    return keeps


def campaign_id(ref: str | None) -> str | None:
    """--campaign as a run record names it (its id): a campaign number (`3`, `#3`, as `ctl
    campaign status` shows it) is looked up in the campaign store; an id is kept as given."""
    if ref is None or not ref.strip().lstrip("#").isdigit():
        return ref
    from controller.campaign.backends import store_exists
    if not store_exists():
        raise UsageError(f"runs: --campaign {shown(ref, 20)}: no campaign store here to look the number up; "
                         "give the campaign's id")
    store = open_store()
    try:
        return store.find(ref.strip().lstrip("#")).id
    except CtlError as exc:
        raise UsageError(f"runs: --campaign {shown(ref, 20)}: {exc.one_line()}") from None
    finally:
        store.close()


def filters_of(args: argparse.Namespace, now: float | None = None) -> Filters:
    now = time.time() if now is None else now
    statuses = None
    if args.status:
        statuses = frozenset(x.strip() for s in args.status for x in s.split(",") if x.strip())
        unknown = sorted(statuses - set(STATUSES))
        if unknown:
            raise UsageError(f"runs: --status {shown(unknown[0], 40)!r} is not one of {', '.join(STATUSES)}")
    known = [*scenarios.names(), FIELD]
    if args.scenario is not None and args.scenario not in known:
        raise UsageError(f"runs: --scenario {shown(args.scenario, 40)!r} is not one of {', '.join(known)}")
    since = parse_when(args.since, "--since", now) if args.since else None
    until = parse_when(args.until, "--until", now) if args.until else None
    if since is not None and until is not None and until <= since:
        raise UsageError(f"runs: --until ({iso_utc(until)}) is not after --since ({iso_utc(since)})")
    campaign = campaign_id(getattr(args, "campaign_filter", None))
    return Filters(scenario=args.scenario, campaign=campaign, since=since, until=until, statuses=statuses,
                   params=param_filter(args.param or []))


def _add_filters(p: argparse.ArgumentParser, *, campaign: bool) -> None:
    p.add_argument("--scenario", help="only runs of this scenario (`ctl scenarios` lists them), or field: the "
                                      "field runs (`ctl field start`)")
    if campaign:
        p.add_argument("--campaign", dest="campaign_filter", metavar="ID",
                       help="only runs of this campaign: its number or id (`ctl campaign status` shows both)")
    p.add_argument("--since", metavar="TIME",
                   help="only runs started at or after TIME: ISO 8601 with a zone (2026-11-22T03:00:00Z, "
                        "2026-11-22T12:00+09:00), a date (2026-11-22, its start in UTC) or a duration before now (24h)")
    p.add_argument("--until", metavar="TIME", help="only runs started before TIME (same forms as --since)")
    p.add_argument("--status", action="append", metavar="STATUS",
                   help=f"only runs that ended so (repeat, or comma-separated): {', '.join(STATUSES)}")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="only runs whose parameter NAME had VALUE, in any spelling of its unit (repeat for "
                        "several): --param cc=mcubic --param link2=20M --param delay=800ms")
    p.add_argument("--runs-dir", metavar="DIR", help=f"where run records are ({setting_default('runs_dir')})")


# ---- list -----------------------------------------------------------------------------------

def _when(t: float | None) -> str:
    return iso_utc(t)[:19] + "Z" if t else "-"


def list_table(runs: list[RunInfo]) -> str:
    """The text of `ctl runs list` (pure)."""
    rows = [("RUN", "STARTED (UTC)", "STATUS", "CAMPAIGN", "PARAMETERS GIVEN")]
    for r in runs:
        given = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in r.given.items()) or "(defaults)"
        rows.append((shown(r.run_id, 120), _when(r.started), shown(r.status or "-", 20),
                     shown(r.campaign or "-", 80), shown(given, 200)))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join("  ".join(c.ljust(widths[i]) for i, c in enumerate(row[:4])) + "  " + row[4] for row in rows)


def cmd_list(args: argparse.Namespace) -> int:
    root = runs_dir(args.runs_dir)
    problems: list[str] = []
    runs = list(scan(root, filters_of(args), problems))
    for line in problems:
        print(f"ctl: warning: {line}", file=sys.stderr)
    if args.json:
        print_json([r.to_json() for r in runs])
        return 0
    if not runs:
        print(f"no runs under {root}" + (" that match" if _filtered(args) else ""))
        return 0
    print(list_table(runs))
    print(f"{len(runs)} run{'s' if len(runs) != 1 else ''} under {root}")
    return 0


def _filtered(args: argparse.Namespace) -> bool:
    return any(getattr(args, k, None) for k in ("scenario", "campaign_filter", "since", "until", "status", "param"))


def _add_list(actions: Any) -> None:
    p = actions.add_parser("list", help="the recorded runs: id, start, status, campaign, parameters",
                           description="List the run records of the runs directory, oldest first; only the small "
                                       "summary.json (or the manifest) of each is read.")
    _add_filters(p, campaign=True)
    p.add_argument("--json", action="store_true", help="print the runs as JSON on stdout")
    p.set_defaults(func=cmd_list)


# ---- export ---------------------------------------------------------------------------------

def _summary_of(d: Path, m: dict) -> tuple[dict | None, str | None]:
    """A record's summary: its summary.json, else (a record without one, e.g. cut down) the
    summary recomputed by this ctl when its traffic completed."""
    path = d / "summary.json"
    if path.is_file():
        try:
            s = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise RecordError(f"{path}: unreadable: {exc}") from None
        return (s, "summary.json") if isinstance(s, dict) else (None, None)
    if m.get("status") in SUMMARIZED_STATUSES:
        return summarize_record(d), "recomputed"
    return None, None


def local_source(d: Path) -> Source:
    m = load_manifest(d)
    summary, source = _summary_of(d, m)
    return Source(str(m.get("run_id") or d.name), m, summary, source, d / "metrics.jsonl")


def campaign_sources(refs: list[str], notes: list[str]) -> Iterator[Source]:
    """The completed runs of campaigns (by number or id) from the campaign store: each run's own
    record where it is on this controller (under its runs dir), else the copy its scheduler
    uploaded to the lab database (summary tables only: no samples); a run in neither is named
    in `notes`. Row values are checked by controller.campaign.boundary before they name a file."""
    store = open_store()
    try:
        shared = bool(getattr(store, "shared", False))
        for ref in refs:
            c = store.find(ref)
            completed = {a.seq: a for a in store.attempts(c.num) if a.status == "completed"}
            for r in store.runs(c.num):
                a = completed.get(r.seq)
                if r.state != "done" or a is None:
                    continue
                d = local_record_dir(a.record_dir, shared=shared)
                if d is not None and (d / "manifest.json").is_file():
                    yield local_source(d)
                    continue
                up = store.record(a.run_id)
                if up is not None and isinstance(up.get("manifest"), dict):
                    s = up.get("summary")
                    yield Source(a.run_id, up["manifest"], s if isinstance(s, dict) else None,
                                 "store" if isinstance(s, dict) else None, None)
                    continue
                notes.append(f"campaign #{c.num} run {r.seq} {a.run_id}: no record on this controller nor in the "
                             f"store ({store_location()})")
    finally:
        store.close()


def _param_types(scenario: str) -> dict[str, str]:
    try:
        return {p.name: p.type for p in scenarios.get(scenario).all_params()}
    except CtlError:
        return {}


def cmd_export(args: argparse.Namespace) -> int:
    given = [bool(args.runs), bool(args.campaign), bool(args.reproduction)]
    if sum(given) > 1:
        raise UsageError("runs export: give RUNS, --campaign or --reproduction, not several")
    if args.format == "parquet" and importlib.util.find_spec("pyarrow") is None:   # before anything is written
        raise UsageError("runs export: --format parquet needs pyarrow: pip install 'ctl[parquet]'")
    filters = filters_of(args)
    root = runs_dir(args.runs_dir)
    notes: list[str] = []                 # completed runs of a campaign with no record (exit 1)
    problems: list[str] = []              # records of the runs dir that cannot be read (skipped)
    if args.runs:
        dirs = [record_dir(r, root) for r in args.runs]        # every RUN checked before anything is written
        sources: Any = (local_source(d) for d in dirs)
    elif args.campaign or args.reproduction:
        refs = list(args.campaign or [])
        for ref in args.reproduction or []:
            rep = reproductions.find(ref)
            refs += [str(c["num"]) for c in rep.campaigns if isinstance(c.get("num"), int)]
        if args.reproduction and not refs:
            raise UsageError("runs export: the reproduction queued no campaign")
        sources = campaign_sources(refs, notes)
    else:
        sources = (local_source(r.dir) for r in scan(root, filters, problems))
    kept = (s for s in sources if not (args.campaign or args.reproduction or args.runs) or _keeps(filters, s))
    out = Path(args.out)
    fd = open_dir(out, "export directory")
    try:
        w = write_export(fd, str(out), args.format, kept, _param_types, samples=not args.no_samples)
    finally:
        os.close(fd)
    for line in problems + notes:
        print(f"ctl: warning: {line}", file=sys.stderr)
    data = {"out": str(out), "format": args.format, "runs": w.runs, "files": w.files,
            "without_samples": w.without_samples, "missing": notes}
    if args.json:
        print_json(data)
    else:
        files = ", ".join(f"{name} ({n} rows)" for name, n in w.files.items())
        print(f"{w.runs} run{'s' if w.runs != 1 else ''} exported to {out}: {files}")
        if w.without_samples:
            print(f"no samples (no metrics.jsonl here) for {len(w.without_samples)} runs: "
                  + ", ".join(shown(x, 120) for x in w.without_samples[:5]) + (" ..." if len(w.without_samples) > 5 else ""))
    if w.runs == 0:
        print("ctl: warning: no run matched: the tables have a header only", file=sys.stderr)
    return 1 if notes else 0


def _keeps(filters: Filters, s: Source) -> bool:
    info = info_from_manifest(Path("."), s.manifest)
    info.started = info.started or id_time(info.run_id)
    return filters.keeps(info)


def _add_export(actions: Any) -> None:
    p = actions.add_parser("export", help="runs as tables for pandas and R: a summary table per kind of item, "
                                          "the per-interval samples, a data dictionary",
                           description="Write the runs' summaries (runs, flows, subflows, ... one row per run and "
                                       "item, every parameter its own column) and their telemetry samples (one row "
                                       "per point and field) as CSV, JSON Lines or Parquet files under --out, with "
                                       "columns.<format> saying each column's type and unit. Times are ISO 8601 UTC.")
    p.add_argument("runs", nargs="*", metavar="RUN", help="run ids under the runs directory, or record directories "
                                                          "(default: every run the filters keep)")
    p.add_argument("--campaign", action="append", metavar="ID",
                   help="the completed runs of this campaign (number or id) from the campaign store: the local SQLite "
                        "store or the lab database ($CTL_DATABASE_URL); repeat for several")
    p.add_argument("--reproduction", action="append", metavar="ID",
                   help="the completed runs of every campaign of this reproduction (`ctl reproduce status`)")
    p.add_argument("--format", choices=FORMATS, default="csv",
                   help="csv (default), jsonl (JSON Lines) or parquet (needs pyarrow: pip install 'ctl[parquet]')")
    p.add_argument("--out", required=True, metavar="DIR", help="directory to write the tables into (created)")
    p.add_argument("--no-samples", action="store_true",
                   help="leave out the long table of per-interval samples (samples.<format>; large: metrics.jsonl "
                        "is ~5 MB per 30 s run)")
    _add_filters(p, campaign=False)
    p.add_argument("--json", action="store_true", help="print what was written as JSON on stdout")
    p.set_defaults(func=cmd_export)


# One entry per action of `ctl runs`.
_ACTIONS: dict[str, Callable[[Any], None]] = {"list": _add_list, "show": _add_show, "export": _add_export,
                                              "plot": lambda actions: add_plot(actions, record_dir)}


def register(sub) -> None:
    p = add_command(sub, "runs", description="Recorded runs: list them, show one's summary again, draw its figures "
                                             "again, export them as tables for pandas and R.")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    for add in _ACTIONS.values():
        add(actions)
