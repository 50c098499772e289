"""`ctl reproduce [--quick|--full|--smoke] [--papers ...]`, `ctl reproduce status|report|compare`."""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from controller import plots
from controller.campaign.backends import open_store, store_exists
from controller.campaign.progress import progress_of
from controller.campaign.attempts import SchedulerLock, scheduler_owner
from controller.campaign.scheduler import Scheduler, SchedulerOptions
from controller.campaign.timing import format_span, parse_at, parse_window, progress_bar
from controller.cli import figure_options
from controller.cli.campaign import Console, progress_line
from controller.cli.cc import toolchain_problem
from controller.cli.commands import JSON_HELP, Parser, add_command, setting_default
from controller.cli.common import inventory_of, print_json
from controller.errors import UsageError
from controller.inventory import Inventory, resolve_inventory_path
from controller.reproduce import algorithms as algs
from controller.reproduce import compare as cmp
from controller.reproduce import record
from controller.reproduce import report as rep
from controller.reproduce.cells import Cells
from controller.reproduce.design import design, parse_papers
from controller.reproduce.measure import collect
from controller.reproduce.queue import PlannedCampaign, finish_times, overhead_note, prepare, replan, submit
from controller.reproduce.verdicts import Context, judge, unavailable_rows
from controller.settings import runs_dir
from controller.textsafe import shown
from controller.timefmt import iso_local


def _mode(args: argparse.Namespace) -> str:
    chosen = [m for m in ("smoke", "quick", "full", "deviations") if getattr(args, m, False)]
    if len(chosen) > 1:
        raise UsageError("reproduce: give one of --smoke, --quick, --full, --deviations")
    return chosen[0] if chosen else "quick"


def _statuses(inv: Inventory, dry_run: bool) -> dict[str, algs.AlgorithmStatus]:
    """What the rack can run. A virtual rack's endpoints are namespaces of this machine's kernel:
    the probe runs here (the rack need not be up). A dry run builds nothing."""
    probe = (lambda i, hosts: algs.probe_local(hosts)) if inv.kind == "virtual" else None
    return algs.available_algorithms(inv, probe=probe, build_check=toolchain_problem if dry_run else None)


def _plan_json(mode: str, papers: list[str], planned: list[PlannedCampaign], finishes: list[float], rd: Any,
               statuses: dict) -> dict:
    return {"mode": mode, "papers": papers,
            "campaigns": [{"key": p.design.key, "paper": p.design.paper, "title": p.design.title,
                           "scenario": p.spec.scenario, "cases": len(p.validated), "repetitions": p.spec.repetitions,
                           "runs": p.runs, "traffic_s": p.traffic_s, "overhead_s": p.overhead_s,
                           "estimated_rack_s": p.rack_s, "estimated_finish": f, "file": str(p.path)}
                          for p, f in zip(planned, finishes, strict=True)],
            "runs": sum(p.runs for p in planned), "estimated_rack_s": sum(p.rack_s for p in planned),
            "estimated_finish": finishes[-1] if finishes else None,
            "not_runnable": [n.to_json() for n in rd.not_runnable], "notes": rd.notes,
            "algorithms": {n: s.to_json() for n, s in statuses.items()}}


def _print_plan(inv: Inventory, mode: str, planned: list[PlannedCampaign], finishes: list[float], rd: Any,
                statuses: dict, not_before: float | None) -> None:
    total = sum(p.runs for p in planned)
    print(f"reproduction --{mode} on rack {inv.name} ({inv.kind}): {len(planned)} campaigns, {total} runs")
    print(f"congestion controls: {algs.summary_line(statuses)}")
    print()
    cw = max([28] + [len(p.spec.name or "") for p in planned])
    head = f"{'paper':<9} {'campaign':<{cw}} {'scenario':<20} {'cases x reps':>12} {'runs':>5} {'traffic':>9} " \
           f"{'rack time':>10}  finish"
    print(head)
    for p, f in zip(planned, finishes, strict=True):
        print(f"{p.design.paper:<9} {p.spec.name or '':<{cw}} {p.spec.scenario:<20} "
              f"{f'{len(p.validated)} x {p.spec.repetitions}':>12} {p.runs:>5} {format_span(p.traffic_s):>9} "
              f"{format_span(p.rack_s):>10}  {iso_local(f, 'minutes')}")
    rack = sum(p.rack_s for p in planned)
    start = f"at {iso_local(not_before, 'minutes')}" if not_before else "now"
    finish = f"{iso_local(finishes[-1], 'minutes')} if started {start}" if finishes else "-"
    print(f"{'total':<9} {'':<{cw}} {'':<20} {'':>12} {total:>5} {format_span(sum(p.traffic_s for p in planned)):>9} "
          f"{format_span(rack):>10}  {finish}")
    print(f"rack time = traffic + set-up/restore per run ({overhead_note(planned)}) + pauses")
    if rd.not_runnable:
        print("\nnot runnable here:")
        for n in rd.not_runnable:
            print(f"  {n.paper}: {n.what}: {n.reason}")
    if any(rd.notes.values()):
        print(f"\ndesign (--{mode}) vs the papers':")
        for paper, notes in rd.notes.items():
            for n in notes:
                print(f"  {paper}: {n}")
    if "field" in rd.papers:
        print("  field: nothing to queue; the report shows Table 1 from the latest field runs, if any")


def cmd_start(args: argparse.Namespace) -> int:
    mode = _mode(args)
    papers = parse_papers(args.papers)
    inv = inventory_of(args)
    inv_path = Path(resolve_inventory_path(args.inventory))
    now = time.time()
    not_before = parse_at(args.at, now) if args.at else None
    if args.window:
        try:
            parse_window(args.window)
        except ValueError as exc:
            raise UsageError(f"--window: {exc}") from None
    statuses = _statuses(inv, args.dry_run)
    rd = design(mode, papers, statuses)
    if not rd.campaigns and not args.dry_run and papers != ["field"]:
        raise UsageError("reproduce: nothing can run on this rack: " + "; ".join(n.reason for n in rd.not_runnable))
    if args.dry_run:
        with tempfile.TemporaryDirectory(prefix="ctl-reproduce-") as tmp:
            planned = prepare(rd, inv, Path(tmp), args.window)
            finishes = finish_times(planned, now, not_before)
            if args.json:
                print_json(_plan_json(mode, papers, planned, finishes, rd, statuses))
            else:
                _print_plan(inv, mode, planned, finishes, rd, statuses, not_before)
                print("\nnothing was submitted or changed (`ctl reproduce` without --dry-run queues it)")
        return 0
    rid = record.new_id(mode, now)
    r = record.Reproduction(rid, mode, papers, now, str(inv_path.resolve()), inv.name, inv.kind,
                            str(runs_dir(args.runs_dir).resolve()),
                            not_runnable=[n.to_json() for n in rd.not_runnable],
                            algorithms={n: s.to_json() for n, s in statuses.items()}, notes=rd.notes)
    planned = prepare(rd, inv, r.dir / "campaigns", args.window)
    finishes = finish_times(planned, now, not_before)
    r.estimate = {"rack_s": sum(p.rack_s for p in planned), "traffic_s": sum(p.traffic_s for p in planned),
                  "finish": finishes[-1] if finishes else now}
    if not args.json:
        _print_plan(inv, mode, planned, finishes, rd, statuses, not_before)
    submit(r, planned, inventory_path=inv_path, inv=inv, runs_root=Path(r.runs_root), not_before=not_before)
    record.save(r)
    doc = {"id": r.id, **_plan_json(mode, papers, planned, finishes, rd, statuses),
           "campaign_ids": [c["id"] for c in r.campaigns]}
    if not args.json:
        print(f"\nqueued reproduction {r.id}: campaigns " + ", ".join(f"#{c['num']}" for c in r.campaigns))
    owner = scheduler_owner()
    if r.campaigns and (args.no_wait or owner):
        who = f"the campaign scheduler (pid {owner.get('pid')}, {owner.get('purpose')}) runs them" if owner else \
            "start `ctl campaign daemon` (or its systemd unit) to run them"
        print(f"{who}; `ctl reproduce status {r.id}` shows progress, `ctl reproduce report {r.id}` writes the "
              "report", file=sys.stderr)
        if args.json:
            print_json(doc)
        return 0
    code = _run_foreground(r, args.quiet) if r.campaigns else 0
    if code is None or code in (130, 143):      # another scheduler runs them, or stopped by a signal
        if args.json:
            print_json(doc)
        return code or 0
    rc = _report(r, None, args.json, extra=doc, output=_figures_of(args))
    return code or rc


def _run_foreground(r: record.Reproduction, quiet: bool) -> int | None:
    """Run the reproduction's campaigns in this terminal (as `ctl campaign resume` does): 0 when
    they are done, 1 when one paused (its reason is printed), 130/143 when stopped by a signal,
    None when another scheduler holds the campaigns (it runs them)."""
    lock = SchedulerLock(f"ctl reproduce {r.id}")
    if not lock.try_acquire():
        o = scheduler_owner() or {}
        print(f"the campaign scheduler (pid {o.get('pid', '?')}, {o.get('purpose', '?')}) runs the campaigns; "
              f"`ctl reproduce report {r.id}` when they are done", file=sys.stderr)
        return None
    store = open_store()
    console = Console(quiet=quiet)
    try:
        sched = Scheduler(store, console.log,
                          SchedulerOptions(only={int(c["num"]) for c in r.campaigns}, exit_when_idle=True,
                                           verbose=not console.tty),
                          on_progress=lambda c, p: console.bar(progress_line(c, p)))
        try:
            asyncio.run(sched.serve())
        finally:
            console.end()
        if sched.stopping:
            console.log(f"stopped by {sched.stop_reason}; `ctl campaign resume` (or the daemon) continues, "
                        f"`ctl reproduce report {r.id}` reports what completed")
            return 130 if sched.stop_reason == "SIGINT" else 143
        paused = [c for c in (store.find(e["id"]) for e in r.campaigns) if c.state == "paused"]
        for c in paused:
            console.log(f"campaign #{c.num} {c.name} is paused: {c.reason}")
        return 1 if paused else 0
    finally:
        store.close()
        lock.release()


def _report(r: record.Reproduction, out: str | None, as_json: bool, extra: dict | None = None,
            output: plots.Output = plots.REPORT) -> int:
    store = open_store()
    try:
        res = rep.write(store, r, Path(out) if out else None, output=output)
    finally:
        store.close()
    if as_json:
        print_json({**(extra or {}), "id": r.id, "html": str(res["html"]), "markdown": str(res["markdown"]),
                    "json": str(res["json"]), "figure_formats": list(output.formats), "dpi": output.dpi,
                    "verdicts": [{"paper": c.paper, "claim": c.id, "status": v.status, "strength": v.strength}
                                 for c, v in res["judged"]]})
        return 0
    for line in verdict_lines([(c.paper, c.text, v.status + (f" ({v.strength})" if v.strength else ""))
                               for c, v in res["judged"]]):
        print(line)
    print(f"\nreport: {res['html']}\nmarkdown: {res['markdown']}\nfigures: {', '.join(output.formats)} "
          f"({output.dpi} dpi for raster images)")
    return 0


def verdict_lines(rows: list[tuple[str, str, str]], width: int = 90) -> list[str]:
    """(paper, claim, verdict) rows as a table whose claim column wraps at words, never inside one
    (pure): the verdict stands on the claim's first line, continuation lines are indented."""
    col = min(width, max((len(t) for _, t, _ in rows), default=10))
    out = []
    for paper, text, verdict in rows:
        lines = textwrap.wrap(" ".join(text.split()), col, break_long_words=False, break_on_hyphens=False) or [""]
        out.append(f"{paper:<9} {lines[0]:<{col}}  {verdict}")
        out += [f"{'':<9} {line}" for line in lines[1:]]
    return out


def time_left_s(campaigns: list[tuple[str, float | None]]) -> float:
    """Seconds until the reproduction's last campaign ends, from (state, eta_s) per campaign
    (pure). A campaign's eta_s already counts the campaigns the queue runs before it, so the
    time left is the latest of them, not their sum."""
    return max((eta or 0.0 for state, eta in campaigns if state in ("queued", "running")), default=0.0)


def cmd_status(args: argparse.Namespace) -> int:
    if args.id is None and not record.all_ids():
        # Nothing found is an answer (`ctl --help`: exit status): 0, said on stderr; JSON null.
        if args.json:
            print_json(None)
        print("no reproductions yet (`ctl reproduce --quick` starts one)", file=sys.stderr)
        return 0
    r = record.find(args.id)
    if not store_exists():
        raise UsageError("no campaign store yet")
    store = open_store()
    try:
        rows = [(c, store.find(c["id"])) for c in r.campaigns]
        progs = [(e, c, progress_of(store, c)) for e, c in rows]
    finally:
        store.close()
    total = sum(p.total for _, _, p in progs)
    done = sum(p.done for _, _, p in progs)
    failed = sum(p.failed for _, _, p in progs)
    left_s = time_left_s([(c.state, p.eta_s) for _, c, p in progs])
    active = any(c.state in ("queued", "running") for _, c, _ in progs)
    if args.json:
        print_json({"id": r.id, "mode": r.mode, "papers": r.papers, "runs": total, "done": done, "failed": failed,
                    "eta_s": left_s if active else 0.0, "scheduler": scheduler_owner(),
                    "campaigns": [{"key": e["key"], "num": c.num, "id": c.id, "state": c.state, "reason": c.reason,
                                   "total": p.total, "done": p.done, "failed": p.failed} for e, c, p in progs]})
        return 0
    print(f"reproduction {r.id} (--{r.mode}, rack {r.inventory_name}, created {iso_local(r.created, 'minutes')})")
    for e, c, p in progs:
        print(f"  {progress_line(c, p)}" + (f"  ({shown(c.reason)})" if c.reason else ""))
    print(f"  total {progress_bar(done, failed, total)} {done}/{total} runs done" + (f", {failed} failed" if failed else "")
          + (f"; the last campaign ends in about {format_span(left_s)} (campaigns run one after the other)"
             if active else ""))
    if active and not scheduler_owner():
        print("  no campaign scheduler is running: `ctl campaign daemon`, or `ctl campaign resume N` per campaign")
    print(f"  report: ctl reproduce report {r.id}")
    return 0


def rerun_targets(r: record.Reproduction, keys: list[str], states: dict[str, str]) -> list[dict]:
    """The record's entries to queue again (pure): each key must name one of the reproduction's
    campaigns, and that campaign must be cancelled (`states`: campaign id -> its state in the
    store). A paused one continues with `ctl campaign resume`; a done, queued or running one is
    not queued twice."""
    by_key = {e["key"]: e for e in r.campaigns}
    out = []
    for k in keys:
        e = by_key.get(k)
        if e is None:
            raise UsageError(f"reproduce rerun: {r.id} has no campaign {k!r} (its campaigns: {', '.join(by_key)})")
        st = states.get(e["id"], "missing from the campaign store")
        if st == "paused":
            raise UsageError(f"reproduce rerun: campaign #{e['num']} ({k}) is paused: `ctl campaign resume "
                             f"{e['num']}` continues it")
        if st != "cancelled":
            raise UsageError(f"reproduce rerun: campaign #{e['num']} ({k}) is {st}: only a cancelled campaign is "
                             "queued again")
        out.append(e)
    return out


def cmd_rerun(args: argparse.Namespace) -> int:
    keys = [k.strip() for k in args.campaign.split(",") if k.strip()]
    if not keys or len(set(keys)) != len(keys):
        raise UsageError("reproduce rerun: --campaign: one or more different campaign keys, comma-separated")
    r = record.find(args.id)
    if not store_exists():
        raise UsageError("no campaign store yet")
    store = open_store()
    try:
        states = {e["id"]: c.state for e in r.campaigns if (c := store.find(e["id"])) is not None}
    finally:
        store.close()
    targets = rerun_targets(r, keys, states)
    # The rack the reproduction ran on: its inventory file unless --inventory names another file of it.
    inv_path = Path(resolve_inventory_path(args.inventory) if getattr(args, "inventory", None) else r.inventory_path)
    inv = inventory_of(argparse.Namespace(inventory=str(inv_path)))
    if inv.name != r.inventory_name:
        raise UsageError(f"reproduce rerun: {inv_path} now describes rack {inv.name}, not {r.inventory_name}")
    # Check every file before queueing anything: a bad one changes nothing.
    planned = [replan(e, inv) for e in targets]
    lock = record.RecordLock(r.id)
    if not lock.try_acquire():
        raise UsageError(f"reproduce rerun: another ctl is changing reproduction {r.id}'s record")
    try:
        r = record.load(r.id)          # the record as it is now, under the lock
        ids = {e["id"] for e in r.campaigns}
        gone = [e["key"] for e in targets if e["id"] not in ids]
        if gone:
            raise UsageError(f"reproduce rerun: {', '.join(gone)} of {r.id} was queued again meanwhile "
                             "(`ctl reproduce status` shows it)")
        rows = []
        for e, p in zip(targets, planned, strict=True):
            rows += submit(r, [p], inventory_path=inv_path, inv=inv, runs_root=Path(r.runs_root), not_before=None,
                           replacing=e)
        record.save(r)
    finally:
        lock.release()
    doc = {"id": r.id, "runs": sum(p.runs for p in planned), "estimated_rack_s": sum(p.rack_s for p in planned),
           "campaigns": [{"key": e["key"], "num": c.num, "id": c.id, "runs": p.runs, "replaces_num": e["num"],
                          "replaces_id": e["id"]} for e, p, c in zip(targets, planned, rows, strict=True)]}
    if not args.json:
        for d in doc["campaigns"]:
            print(f"queued campaign #{d['num']} ({d['key']}, {d['runs']} runs) in place of cancelled "
                  f"#{d['replaces_num']}; rack time about {format_span(doc['estimated_rack_s'])}")
    owner = scheduler_owner()
    if args.no_wait or owner:
        who = f"the campaign scheduler (pid {owner.get('pid')}, {owner.get('purpose')}) runs them" if owner else \
            "start `ctl campaign daemon` (or its systemd unit) to run them"
        print(f"{who}; `ctl reproduce status {r.id}` shows progress", file=sys.stderr)
        if args.json:
            print_json(doc)
        return 0
    code = _run_foreground(r, args.quiet)
    if code is None or code in (130, 143):
        if args.json:
            print_json(doc)
        return code or 0
    return code or _report(r, None, args.json, extra=doc, output=_figures_of(args))


def cmd_report(args: argparse.Namespace) -> int:
    return _report(record.find(args.id), args.out, args.json, output=_figures_of(args))


def _figures_of(args: argparse.Namespace) -> plots.Output:
    return figure_options.output(args, plots.REPORT.formats, report=True)


def _cells_and_verdicts(ref: str) -> tuple[str, Cells, list[dict]]:
    """A reproduction by id (measured now from the store), or a report's measured.json (file or dir)."""
    p = Path(ref)
    if p.is_dir():
        p = p / "measured.json"
    if p.is_file():
        try:
            d = json.loads(p.read_text())
            return d["reproduction"]["id"], Cells.from_json(d["cells"]), list(d["verdicts"])
        except (OSError, ValueError, KeyError) as exc:
            raise UsageError(f"{ref}: not a reproduction's measured.json ({exc})") from None
    r = record.find(ref)
    store = open_store()
    try:
        m = collect(store, r)
    finally:
        store.close()
    statuses = {n: algs.AlgorithmStatus.from_json(s) for n, s in r.algorithms.items()}
    ctx = Context(m.cells, unavailable_rows(statuses) if statuses else {}, m.field_runs, r.rack_kind, r.papers)
    return r.id, m.cells, [{**v.to_json(), "paper": c.paper} for c, v in judge(ctx)]


def cmd_compare(args: argparse.Namespace) -> int:
    a_id, a, av = _cells_and_verdicts(args.a)
    b_id, b, bv = _cells_and_verdicts(args.b)
    pairs = cmp.compare(a, b)
    changes = cmp.verdict_changes(av, bv)
    if args.json:
        print_json({"a": a_id, "b": b_id, "cells": [p.to_json() for p in pairs],
                    "flagged": sum(1 for p in pairs if p.status == cmp.FLAG),
                    "verdict_changes": [{"claim": c, "a": x, "b": y} for c, x, y in changes]})
    else:
        print(cmp.render(pairs, a_id, b_id, changes))
    return 0


def register(sub) -> None:
    p = add_command(sub, "reproduce", description="Regenerate every paper's tables and figures on this rack: one group "
                    "of campaigns and one report with a verdict per claim. Without an action: plan and queue a "
                    "reproduction (and run it here unless a scheduler does).")
    p.add_argument("--quick", action="store_true", help="about 30 minutes on the virtual rack (the default)")
    p.add_argument("--full", action="store_true", help="the papers' own designs (the 600-run sweep included), then "
                   "the deviation experiments")
    p.add_argument("--smoke", action="store_true", help="a few short runs per paper: checks the chain only")
    p.add_argument("--deviations", action="store_true",
                   help="only the experiments that test each candidate cause of a deviation from a paper "
                        "(--full runs them too, after the papers' designs); the report judges each hypothesis")
    p.add_argument("--papers", metavar="LIST", help="comma-separated: mcubic,bbrv3,parallel,mptcp-bt,field "
                                                    "(default: all)")
    p.add_argument("--dry-run", action="store_true", help="print the campaigns, runs, rack time and finish; change nothing")
    p.add_argument("--at", metavar="TIME", help="not before this time (HH:MM or ISO 8601 date and time)")
    p.add_argument("--window", metavar="HH:MM-HH:MM", help="runs only inside this daily stretch, e.g. 22:00-07:00 "
                                                           "(over as many nights as it takes)")
    p.add_argument("--runs-dir", metavar="DIR", help=f"where run records go ({setting_default('runs_dir')})")
    p.add_argument("--no-wait", action="store_true", help="only queue the campaigns (the daemon runs them)")
    p.add_argument("--json", action="store_true", help=JSON_HELP + "; the plan (campaigns, runs, rack time, finish), "
                                                                   "and the verdicts when it ran here")
    figure_options.add(p, plots.REPORT.formats, report=True)
    p.set_defaults(func=cmd_start)
    rs = p.add_subparsers(dest="reproduce_command", parser_class=Parser, metavar="ACTION")

    def add(name: str, help_: str):
        return rs.add_parser(name, help=help_, description=help_, allow_abbrev=False)

    id_help = "the reproduction: its id or a unique part of it (default: the latest)"
    sp = add("status", "progress of a reproduction's campaigns (default: the latest)")
    sp.add_argument("id", nargs="?", metavar="ID", help=id_help)
    sp.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                    help=JSON_HELP + "; runs done and failed, ETA, per campaign (null: no reproduction yet)")
    sp.set_defaults(func=cmd_status)

    sp = add("report", "write the HTML + Markdown report (default: the latest)")
    sp.add_argument("id", nargs="?", metavar="ID", help=id_help)
    sp.add_argument("--out", metavar="DIR",
                    help=f"directory ({setting_default('state_dir', 'reproductions/ID/report')})")
    sp.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                    help=JSON_HELP + "; the report's files and a verdict per claim")
    figure_options.add(sp, plots.REPORT.formats, report=True, inherit=True)
    sp.set_defaults(func=cmd_report)

    sp = add("rerun", "queue a cancelled campaign of a reproduction again (its own campaign file; a new campaign "
                      "takes the cancelled one's place in the report) and run it here unless a scheduler does")
    sp.add_argument("id", nargs="?", metavar="ID", help=id_help)
    sp.add_argument("--campaign", required=True, metavar="KEYS",
                    help="comma-separated keys of the campaigns to queue again, as `ctl reproduce status` and the "
                         "report name them (e.g. dev-mcubic-eq10-t3)")
    sp.add_argument("--no-wait", action="store_true", default=argparse.SUPPRESS,
                    help="only queue them (the daemon runs them)")
    sp.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                    help=JSON_HELP + "; the campaigns queued again, and the verdicts when they ran here")
    figure_options.add(sp, plots.REPORT.formats, report=True, inherit=True)
    sp.set_defaults(func=cmd_rerun)

    sp = add("compare", "two reproductions side by side (ids, or their report directories): each cell tested with "
                        "Welch's two-sided t-test, a difference called when its Holm-adjusted p over all cells is "
                        "below 0.05; a cell with fewer than 2 values on a side is marked, never tested")
    sp.add_argument("a", metavar="FIRST", help="a reproduction id, or a report directory (its measured.json)")
    sp.add_argument("b", metavar="SECOND", help="the other one, compared with FIRST")
    sp.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                    help=JSON_HELP + "; every cell of both, flagged where they differ, and changed verdicts")
    sp.set_defaults(func=cmd_compare)
