"""`ctl campaign plan|submit|status|pause|resume|cancel|report|daemon`."""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from controller import plots
from controller.campaign.backends import open_store, store_exists, store_location
from controller.campaign.boundary import UntrustedRow
from controller.campaign.plan import draw_seed, order_runs, rack_inventories, validate_cases
from controller.campaign.progress import QueueEntry, progress_of, queue_entries, queue_schedule
from controller.campaign.report import export_records, write_report
from controller.campaign.attempts import SchedulerLock, scheduler_owner, settle_for_cancel
from controller.campaign.scheduler import Scheduler, SchedulerOptions
from controller.campaign.spec import CampaignError, CampaignFileError, load_campaign
from controller.campaign.status import SchedulerView, interruption, scheduler_view
from controller.campaign.store import campaign_dir
from controller.campaign.timing import estimate_finish, format_span, learned_overhead, parse_at, progress_bar
from controller.cli import figure_options
from controller.cli.output import END_WAIT_S, writer_for
from controller.cli.commands import JSON_HELP, Parser, add_command, setting_default
from controller.cli.common import inventory_of, print_json
from controller.inventory import load_inventory, resolve_inventory_path
from controller.labdb import whoami
from controller.settings import existing_or_shipped, runs_dir
from controller.textsafe import shown
from controller.timefmt import iso_local
from controller.units import parse_duration

# ---- terminal output -------------------------------------------------------------------------

def say(line: str = "", file: TextIO | None = None, flush: bool = False) -> None:
    """Print one line whose values may come from the lab database: every control character
    (ESC, C1, bidi controls, line breaks inside a value) is shown escaped (controller.textsafe)."""
    print(shown(line), file=file if file is not None else sys.stdout, flush=flush)


class Console:
    """Log lines on stderr; on a TTY one progress bar line kept at the bottom. Written by a thread
    of its own (controller.cli.output.Writer): a stream that stops reading never holds up the
    scheduler's event loop and the run in it; `end` waits a bounded time for what is left."""

    def __init__(self, stream: TextIO = sys.stderr, quiet: bool = False):
        self.stream = stream
        self.tty = stream.isatty()
        self.quiet = quiet
        self._bar = ""
        self._out = writer_for(stream)

    def log(self, msg: str) -> None:
        if self.quiet:
            return
        line = f"{iso_local(time.time())} {shown(msg)}"
        if self.tty and self._bar:
            self._out.text("\r\x1b[K" + line + "\n" + self._bar)
        else:
            self._out.text(line + "\n")

    def bar(self, text: str) -> None:
        if not self.tty:
            return
        self._bar = shown(text)[: max(20, _columns(self.stream) - 1)]
        self._out.text("\r\x1b[K" + self._bar)

    def end(self) -> None:
        if self.tty and self._bar:
            self._out.text("\n")
            self._bar = ""
        self._out.flush(END_WAIT_S)


def _columns(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns or 100
    except (OSError, ValueError):
        return 100


def progress_line(c: Any, p: Any, interrupted: str | None = None) -> str:
    """One line per campaign; an interrupted one (its scheduler gone) says so instead of an ETA."""
    eta = ""
    if p.finish_at is not None and p.eta_s is not None and interrupted is None:
        eta = f"  ETA {iso_local(p.finish_at, 'minutes')} (in {format_span(p.eta_s)})"
    extra = f", {p.failed} failed" if p.failed else ""
    return (f"#{c.num} {c.name} {progress_bar(p.done, p.failed, p.total)} {p.done}/{p.total} done{extra}"
            f"  {interrupted or c.state}{eta}")


def view_of(c: Any) -> SchedulerView:
    """The scheduler serving campaign `c`'s rack; a campaign on several racks is served by
    each rack's daemon through claims with leases (a dead daemon's claim runs out): none."""
    return SchedulerView(scheduler_owner(None), None) if c.multi_rack else scheduler_view(c.inventory_name)


def interrupted_text(c: Any, p: Any) -> str | None:
    """Stored `running` with no live scheduler for it (never for a multi-rack campaign, whose
    runs another rack's daemon takes back when their claim runs out)."""
    if c.multi_rack:
        return None
    return interruption(c.state, p.running > 0, c.num, view_of(c))


# ---- plan and submit -------------------------------------------------------------------------

# A campaign finishing more than a year from now is almost surely a mistake (a window of one
# minute, repetitions: 10000): refused unless --force.
MAX_HORIZON_S = 366 * 86400


def _planned(args: argparse.Namespace) -> dict:
    """Load, validate and expand a campaign file; no state anywhere is changed. A campaign on
    several racks is checked against every rack's inventory (each must be able to run every case)."""
    path = existing_or_shipped("campaigns", args.file)    # `ctl campaign plan rtt-loss-sweep.yaml`
    spec, lines, text = load_campaign(path)
    racks = rack_inventories(spec, path, lines)
    inv = racks[0][1] if racks else inventory_of(args)
    inventory_path = racks[0][0] if racks else resolve_inventory_path(args.inventory)
    if spec.rack_group is not None and inv.group != spec.rack_group:
        raise CampaignFileError(f"{path}:{lines.get(('rack_group',), '?')}: rack_group: the inventory's rack "
                                f"{inv.name} is of group {inv.group or '(none)'}, not {spec.rack_group} "
                                "(give --inventory a rack of the group)")
    validated = validate_cases(spec, path, lines, inv)
    for _p, other in racks[1:]:
        validate_cases(spec, path, lines, other)
    seed = spec.seed if spec.seed is not None else (draw_seed() if spec.order == "random" else None)
    planned = order_runs(len(validated), spec.repetitions, spec.order, seed)
    overhead = spec.overhead_s
    learned = 0
    if store_exists():
        store = open_store()
        try:
            samples = store.overhead_samples(spec.scenario, inv.name)
        finally:
            store.close()
        overhead = learned_overhead(samples, spec.overhead_s)
        learned = len(samples) if overhead != spec.overhead_s else 0
    now = time.time()
    not_before = parse_at(args.at, now) if getattr(args, "at", None) else None
    durations = {v.case.index: v.duration_s for v in validated}
    per_run = [durations[p.case] + overhead for p in planned]
    n_racks = max(1, len(racks))
    rack_s = sum(per_run) + spec.pause_s * max(0, len(planned) - n_racks)
    # Several racks take runs in turn: the campaign ends with the busiest rack.
    finish = max(estimate_finish(now, per_run[i::n_racks], spec.pause_s, spec.window_obj(), not_before)
                 for i in range(n_racks))
    queued_ahead = 0
    if store_exists() and n_racks == 1:
        # The campaigns already queued run first: this one finishes after them.
        store = open_store()
        try:
            ahead = queue_entries(store, now)
        finally:
            store.close()
        queued_ahead = sum(1 for e in ahead if e.runs_s)
        if queued_ahead:
            me = QueueEntry(max(e.num for e in ahead) + 1, tuple(per_run), spec.pause_s, spec.window_obj(), not_before)
            finish = queue_schedule(ahead + [me], now).get(me.num, (now, finish))[1]
    if finish - now > MAX_HORIZON_S and not getattr(args, "force", False):
        raise CampaignError(f"{path}: the campaign would finish on {iso_local(finish, 'minutes')} "
                            f"(in {(finish - now) / 86400 / 365.25:.1f} years: {len(planned)} runs, "
                            f"{format_span(rack_s)} of rack time"
                            + (f", only inside the window {spec.window}" if spec.window else "")
                            + "); pass --force to queue it anyway")
    return {"spec": spec, "path": path, "text": text, "inv": inv, "racks": [i.name for _p, i in racks],
            "inventory_path": inventory_path,
            "validated": validated, "seed": seed, "planned": planned, "overhead_s": overhead,
            "overhead_learned_from": learned, "rack_s": rack_s, "finish": finish, "not_before": not_before,
            "durations": durations, "traffic_s": sum(durations[p.case] for p in planned),
            "queued_ahead": queued_ahead}


def _racks_text(pl: dict) -> str:
    spec = pl["spec"]
    if spec.rack_group:
        return f"every rack of group {spec.rack_group} (checked against {pl['inv'].name})"
    return ", ".join(pl["racks"]) if pl["racks"] else pl["inv"].name


def cmd_plan(args: argparse.Namespace) -> int:
    pl = _planned(args)
    spec, planned, validated = pl["spec"], pl["planned"], pl["validated"]
    cases = {v.case.index: v.case for v in validated}
    if args.json:
        print_json({
            "name": spec.name, "scenario": spec.scenario, "cases": len(validated), "repetitions": spec.repetitions,
            "runs": [{"seq": p.seq, "case": p.case + 1, "repetition": p.repetition,
                      "parameters": cases[p.case].varied, "argv": cases[p.case].argv(),
                      "duration_s": pl["durations"][p.case]} for p in planned],
            "racks": pl["racks"] or [pl["inv"].name], "rack_group": spec.rack_group,
            "order": spec.order, "seed": pl["seed"], "pause_s": spec.pause_s, "window": spec.window,
            "overhead_s": pl["overhead_s"], "estimated_rack_s": pl["rack_s"], "traffic_s": pl["traffic_s"],
            "not_before": pl["not_before"], "estimated_finish": pl["finish"], "queued_ahead": pl["queued_ahead"],
            "estimated_finish_local": iso_local(pl["finish"])})
        return 0
    keys = list(validated[0].case.varied) if validated else []
    say(f"campaign {spec.name}: scenario {spec.scenario}, {len(validated)} cases x {spec.repetitions} "
          f"repetitions = {len(planned)} runs")
    say(f"racks: {_racks_text(pl)}")
    say(f"order: {spec.order}" + (f" (seed {pl['seed']}" + ("" if spec.seed is not None else
                                                                   ", drawn now; submit draws its own and records it")
                                     + ")" if spec.order == "random" else ""))
    fixed = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in spec.fixed.items())
    if fixed:
        say(f"fixed: {fixed}")
    say()
    widths = [max(len(k), *(len(cases[p.case].varied.get(k, "")) for p in planned)) for k in keys]
    head = f"{'seq':>5} {'case':>4} {'rep':>3}  " + "  ".join(
        f"{k:<{w}}" for k, w in zip(keys, widths, strict=True)) + "  duration"
    say(head)
    for p in planned:
        vals = "  ".join(f"{cases[p.case].varied.get(k, ''):<{w}}" for k, w in zip(keys, widths, strict=True))
        say(f"{p.seq:>5} {p.case + 1:>4} {p.repetition:>3}  {vals}  {pl['durations'][p.case]:g} s")
    say()
    learned = (f", learned from {pl['overhead_learned_from']} earlier runs" if pl["overhead_learned_from"]
               else " (the file's `overhead`)")
    say(f"traffic time:        {format_span(pl['traffic_s'])}")
    say(f"estimated rack time: {format_span(pl['rack_s'])} ({len(planned)} runs x (traffic + "
          f"{pl['overhead_s']:.0f} s set-up/restore{learned})" +
          (f" + {len(planned) - 1} pauses of {spec.pause_s:g} s" if spec.pause_s and len(planned) > 1 else "") + ")")
    start = f"at {iso_local(pl['not_before'], 'minutes')}" if pl["not_before"] else "now"
    win = f", only inside the window {spec.window}" if spec.window else ""
    spread = f" with the runs spread over {len(pl['racks'])} racks" if len(pl["racks"]) > 1 else ""
    ahead = (f", after the {pl['queued_ahead']} campaign{'s' if pl['queued_ahead'] != 1 else ''} queued ahead of it"
             if pl["queued_ahead"] else "")
    say(f"estimated finish:    {iso_local(pl['finish'], 'minutes')} if started {start}{win}{spread}{ahead}")
    say("nothing was submitted or changed (`ctl campaign submit FILE` queues it)")
    return 0


def cmd_submit(args: argparse.Namespace) -> int:
    pl = _planned(args)
    spec = pl["spec"]
    root = runs_dir(args.runs_dir).resolve()
    store = open_store()
    try:
        me = whoami()
        c = store.submit(spec=spec, file_path=pl["path"].resolve(), file_text=pl["text"],
                         inventory_path=Path(pl["inventory_path"]).resolve(), inventory_name=pl["inv"].name,
                         runs_root=root, seed=pl["seed"], not_before=pl["not_before"],
                         cases=[v.case for v in pl["validated"]], planned=pl["planned"], durations=pl["durations"],
                         racks=pl["racks"] or None, rack_group=spec.rack_group, owner=f"{me['user']}@{me['host']}")
        if not c.multi_rack:
            queued = progress_of(store, c)
            if queued.finish_at is not None:
                pl["finish"] = queued.finish_at      # in queue order, behind the campaigns already queued
    finally:
        store.close()
    d = campaign_dir(c.id)
    d.mkdir(parents=True, exist_ok=True)
    (d / "campaign.yaml").write_text(pl["text"])
    owner = scheduler_owner()
    if args.json:
        print_json({"num": c.num, "id": c.id, "runs": len(pl["planned"]), "seed": pl["seed"],
                     "not_before": pl["not_before"], "estimated_finish": pl["finish"], "scheduler": owner})
        return 0
    say(f"submitted campaign #{c.num} {c.id}: {len(pl['planned'])} runs"
          + (f", seed {pl['seed']}" if pl["seed"] is not None else "")
          + f"; estimated rack time {format_span(pl['rack_s'])}, finish {iso_local(pl['finish'], 'minutes')}")
    if c.multi_rack:
        say(f"racks: {_racks_text(pl)}; start one `ctl campaign daemon --inventory RACK` per rack "
              f"(on any controller with the lab database {store_location()})")
    elif owner:
        say(f"the campaign scheduler (pid {owner.get('pid')}, {owner.get('purpose')}) will run it")
    else:
        say("no campaign scheduler is running: start `ctl campaign daemon` (or its systemd unit), "
              f"or `ctl campaign resume {c.num}` to run it in this terminal")
    return 0


# ---- status ----------------------------------------------------------------------------------

def status_json(store: Any, c: Any) -> dict:
    p = progress_of(store, c)
    view = view_of(c)
    stopped = interrupted_text(c, p)
    spec = c.spec()
    attempts: dict[int, list] = {}
    classes: dict[str, int] = {}
    for a in store.attempts(c.num):
        attempts.setdefault(a.seq, []).append({
            "attempt": a.attempt, "run_id": a.run_id, "record": a.record_dir, "started": a.started,
            "finished": a.finished, "status": a.status, "exit_code": a.exit_code, "class": a.klass, "error": a.error,
            "action": a.action, "rack": a.rack, "controller": a.controller})
        if a.klass and a.klass != "ok":
            classes[a.klass] = classes.get(a.klass, 0) + 1
    health = store.health_checks(c.num)
    return {
        "num": c.num, "id": c.id, "name": c.name, "scenario": c.scenario, "state": c.state, "reason": c.reason,
        "activity": c.activity, "activity_t": c.activity_t, "file": c.file_path, "inventory": c.inventory_name,
        "racks": c.racks, "rack_group": c.rack_group, "owner": c.owner, "store": store_location(),
        "runs_root": c.runs_root, "order": spec.order, "seed": c.seed, "window": spec.window,
        "pause_s": spec.pause_s, "not_before": c.not_before, "submitted": c.submitted, "started": c.started,
        "finished": c.finished,
        "progress": {"total": p.total, "done": p.done, "failed": p.failed, "pending": p.pending, "running": p.running,
                     "cancelled": p.cancelled, "eta_s": None if stopped else p.eta_s,
                     "finish_at": None if stopped else p.finish_at},
        "scheduler": view.owner,
        # Stored state `running` with no scheduler running it (killed, or stopped between runs).
        "interrupted": ({"message": stopped, "scheduler_pid": (view.last or {}).get("pid")} if stopped else None),
        "failures_by_class": classes,
        "health": {"checks": len(health), "failed": sum(1 for h in health if not h.ok),
                   "last": ({"t": health[-1].t, "ok": bool(health[-1].ok), "reasons": health[-1].reasons,
                             "clock_spread_s": health[-1].details.get("clock_spread_s")} if health else None)},
        "runs": [{"seq": r.seq, "case": r.case_index + 1, "repetition": r.repetition, "parameters": r.varied,
                  "state": r.state, "attempts": attempts.get(r.seq, []), "last_class": r.last_class,
                  "not_before": r.not_before, "claimed_by": r.claimed_by, "claim_rack": r.claim_rack,
                  "claim_until": r.claim_until} for r in store.runs(c.num)],
    }


def _print_status(store: Any, c: Any) -> None:
    p = progress_of(store, c)
    spec = c.spec()
    view = view_of(c)
    stopped = interrupted_text(c, p)
    say(f"campaign #{c.num} {c.id}")
    racks = (f"racks of group {c.rack_group}" if c.rack_group else
             ("racks " + ", ".join(c.racks) if c.multi_rack else f"rack {c.inventory_name}"))
    say(f"  scenario {c.scenario}; file {c.file_path}; {racks}")
    if stopped:
        say(f"  state    {stopped}")
    else:
        say(f"  state    {c.state}" + (f": {c.reason}" if c.reason else ""))
    if c.activity and c.state in ("queued", "running"):
        say(f"  {'last' if stopped else 'now':<8} {c.activity}")
    owner = view.owner
    if c.multi_rack:
        for r in store.runs(c.num):
            if r.state == "running" or (r.claimed_by and r.state == "pending"):
                say(f"  run {r.seq}  {r.state} on {r.claim_rack} by {r.claimed_by} (lease until "
                      f"{iso_local(r.claim_until)})")
    elif c.state in ("queued", "running") and not stopped:
        say("  scheduler " + (f"pid {owner.get('pid')} ({owner.get('purpose')})" if owner else
                                f"none running: `ctl campaign resume {c.num}` or start the daemon"))
    say(f"  runs     {p.done}/{p.total} done, {p.failed} failed, {p.pending} pending, {p.running} "
          + ("interrupted" if stopped else "running") + (f", {p.cancelled} cancelled" if p.cancelled else ""))
    if p.finish_at is not None and p.eta_s is not None and not stopped:
        say(f"  ETA      {iso_local(p.finish_at, 'minutes')} (in {format_span(p.eta_s)})")
    say(f"  order    {spec.order}" + (f", seed {c.seed}" if c.seed is not None else "")
          + (f"; window {spec.window}" if spec.window else "") + (f"; pause {spec.pause}" if spec.pause_s else ""))
    fails = [a for a in store.attempts(c.num) if a.klass and a.klass != "ok"]
    if fails:
        say("  problems:")
        for a in fails[-10:]:
            say(f"    run {a.seq} attempt {a.attempt}: {a.klass} -> {a.action}: {(a.error or '')[:160]}")
    health = store.health_checks(c.num)
    if health and not health[-1].ok:
        say("  last health check FAILED: " + "; ".join(health[-1].reasons))


def cmd_status(args: argparse.Namespace) -> int:
    if not store_exists():
        if args.json:
            print_json([] if args.id is None else None)
            return 0 if args.id is None else 2
        if args.id is not None:
            raise CampaignError("no campaigns yet")
        say("no campaigns yet")
        return 0
    store = open_store()
    try:
        if args.watch:
            return _watch(store, store.find(args.id).num)
        if args.id is None and not args.watch:
            cs = store.campaigns()
            shown_json: list[dict] = []
            if not cs and not store.refused and not args.json:
                say("no campaigns yet")
            for c in cs:
                # A row of the lab database that fails the checks (controller.campaign.boundary) is
                # named on stderr; the other campaigns are listed.
                try:
                    if args.json:
                        shown_json.append(status_json(store, c))
                        continue
                    p = progress_of(store, c)
                    say(progress_line(c, p, interrupted=interrupted_text(c, p)) + f"  {c.id}"
                        + (f"  ({c.reason})" if c.reason else ""))
                except UntrustedRow as exc:
                    store.refused[c.num] = exc.one_line()
            for num in sorted(store.refused):
                say(f"campaign #{num} not shown: {store.refused[num]}", file=sys.stderr)
            if args.json:
                print_json(shown_json)
            return 0
        c = store.find(args.id)
        if args.json:
            print_json(status_json(store, c))
        else:
            _print_status(store, c)
        return 0
    finally:
        store.close()


def _watch(store: Any, num: int) -> int:
    """Live progress: a bar redrawn every second on a TTY, a line per change otherwise."""
    out = sys.stdout
    last = ""
    try:
        while True:
            c = store.campaign(num)
            p = progress_of(store, c)
            # An interrupted campaign is shown as such; watching goes on (a restarted daemon or
            # a `resume` in another terminal takes it up again).
            stopped = interrupted_text(c, p)
            line = progress_line(c, p, interrupted=stopped)
            if c.activity and c.state in ("queued", "running") and not stopped:
                line += f"  | {c.activity}"
            line = shown(line)
            if out.isatty():
                out.write("\r\x1b[K" + line[: _columns(out) - 1])
                out.flush()
            elif line != last:
                say(line, flush=True)
            last = line
            if c.state not in ("queued", "running"):
                if out.isatty():
                    out.write("\n")
                say(f"campaign #{c.num} is {c.state}" + (f": {c.reason}" if c.reason else ""), flush=True)
                # Scripts wait with --watch: 0 only when the campaign finished with every run done;
                # 1 when it stopped short (paused, cancelled) or some runs failed.
                if c.state == "done" and p.failed:
                    say(f"{p.failed} of {p.total} runs failed (`ctl campaign status {c.num}`)", flush=True)
                return 0 if c.state == "done" and not p.failed else 1
            time.sleep(1.0)
    except KeyboardInterrupt:
        if out.isatty():
            out.write("\n")
        return 130


# ---- pause / resume / cancel -----------------------------------------------------------------

def cmd_pause(args: argparse.Namespace) -> int:
    store = open_store()
    try:
        c = store.find(args.id)
        reason = args.reason or "paused by user"
        c = store.set_state(c.num, "paused", reason, abort=args.now)
        when = "now: the current run is stopped and the rack restored" if args.now else \
            "after the current run (if one is running)"
        if args.json:
            print_json({"num": c.num, "id": c.id, "state": c.state, "reason": c.reason, "now": bool(args.now)})
        else:
            say(f"campaign #{c.num} {c.id} paused {when}; `ctl campaign resume {c.num}` continues it")
        return 0
    finally:
        store.close()


def cmd_cancel(args: argparse.Namespace) -> int:
    store = open_store()
    try:
        c = store.find(args.id)
        c = store.set_state(c.num, "cancelled", args.reason or "cancelled by user", abort=True)
        tell = (lambda m: None) if args.json else say
        tell(f"campaign #{c.num} {c.id} cancelled: no further runs")
        current = None
        if any(r.state == "running" for r in store.runs(c.num)):
            if c.multi_rack or scheduler_owner(c.inventory_name):
                current = "stopped by its scheduler"
                tell("the scheduler stops the current run and restores the rack")
            elif asyncio.run(settle_for_cancel(store, c, Console(quiet=args.json).log)):
                current = "closed here"
                tell("the interrupted run's record was closed and the rack restored")
        if args.json:
            print_json({"num": c.num, "id": c.id, "state": c.state, "reason": c.reason, "current_run": current})
        return 0
    finally:
        store.close()


def cmd_resume(args: argparse.Namespace) -> int:
    store = open_store()
    try:
        c = store.find(args.id)
        if c.state == "paused":
            c = store.set_state(c.num, "running" if c.started else "queued", None)
            say(f"campaign #{c.num} {c.id} resumed", file=sys.stderr)
            if args.json and args.no_wait:
                print_json({"num": c.num, "id": c.id, "state": c.state, "resumed": True})
        elif c.state in ("done", "cancelled"):
            raise CampaignError(f"campaign #{c.num} is {c.state}: nothing to resume (submit the file again)")
        else:
            say(f"campaign #{c.num} {c.id} is {c.state}: continuing it", file=sys.stderr)
            if args.json and args.no_wait:
                print_json({"num": c.num, "id": c.id, "state": c.state, "resumed": False})
        if args.no_wait:
            return 0
        rack = None
        if c.multi_rack:
            # This terminal drives the campaign on this command's rack (--inventory / $CTL_INVENTORY).
            rack = inventory_of(args)
            if not c.runs_on(rack.name, rack.group):
                raise CampaignError(f"campaign #{c.num} does not run on rack {rack.name} "
                                    f"(its racks: {', '.join(c.racks) or 'group ' + str(c.rack_group)})")
        rack_name = rack.name if rack is not None else c.inventory_name
        lock = SchedulerLock(f"ctl campaign resume #{c.num}", rack_name)
        if not lock.try_acquire():
            o = scheduler_owner(rack_name) or {}
            say(f"the campaign scheduler (pid {o.get('pid', '?')}, {o.get('purpose', '?')}) continues it",
                  file=sys.stderr)
            return 0
        try:
            return _serve(store, {c.num}, exit_when_idle=True, quiet=args.quiet, foreground=True, watch=c.num,
                          rack=rack)[0]
        finally:
            lock.release()
    finally:
        store.close()


def _daemon_rack(args: argparse.Namespace) -> Any:
    """The rack a daemon is bound to: the inventory given to it (--inventory or $CTL_INVENTORY);
    none given: every one-rack campaign on its own inventory (one controller, one state dir)."""
    flag = getattr(args, "inventory", None)
    if flag or os.environ.get("CTL_INVENTORY"):
        return load_inventory(resolve_inventory_path(flag))
    return None


def cmd_daemon(args: argparse.Namespace) -> int:
    console = Console(quiet=args.quiet)
    lease_s = parse_duration(args.lease, what="--lease")
    if lease_s < 3 * 2.0:
        raise CampaignError("--lease: at least 6s (the scheduler renews its claims every 2 s)")
    rack = _daemon_rack(args)
    lock = SchedulerLock("ctl campaign daemon" + (f" --inventory {rack.name}" if rack else ""),
                         rack.name if rack else None)
    waited = False
    while not lock.try_acquire():
        if not waited:
            o = scheduler_owner(rack.name if rack else None) or {}
            console.log(f"another campaign scheduler is active (pid {o.get('pid', '?')}, {o.get('purpose', '?')}): "
                        "waiting for it to end")
            waited = True
        time.sleep(2.0)
    store = open_store("campaign daemon")
    started = time.time()
    driven: dict[int, tuple[Any, Any]] = {}      # campaign number -> (campaign, progress) as last reported
    try:
        console.log(f"campaign daemon started (pid {os.getpid()}" + (f", rack {rack.name}" if rack else "")
                    + f", store {store_location()})")
        code, stopped_by = _serve(store, None, exit_when_idle=args.exit_when_idle, quiet=args.quiet, foreground=False,
                                  rack=rack, lease_s=lease_s, driven=driven)
        if args.json:
            print_json(_daemon_json(store, rack, started, stopped_by, driven))
        return code
    finally:
        store.close()
        lock.release()


def _daemon_json(store: Any, rack: Any, started: float, stopped_by: str | None, driven: dict) -> dict:
    """`ctl campaign daemon --json`: one envelope when the daemon ends (idle with --exit-when-idle, or
    stopped by a signal): what it drove, each campaign as it left it (the log lines stay on stderr)."""
    rows = []
    for num in sorted(driven):
        c = store.campaign(num)
        p = progress_of(store, c)
        rows.append({"num": c.num, "id": c.id, "state": c.state, "total": p.total, "done": p.done,
                     "failed": p.failed, "pending": p.pending})
    return {"pid": os.getpid(), "rack": rack.name if rack is not None else None, "store": store_location(),
            "started": started, "ended": time.time(), "exit": stopped_by or "idle", "campaigns": rows}


def _serve(store: Any, only: set[int] | None, *, exit_when_idle: bool, quiet: bool, foreground: bool,
           watch: int | None = None, rack: Any = None, lease_s: float = 60.0,
           driven: dict | None = None) -> tuple[int, str | None]:
    """Drive campaigns until idle (exit_when_idle) or a signal: (exit status, the signal's name or None).
    `driven` collects every campaign the scheduler reported progress of."""
    console = Console(quiet=quiet)

    def progress(c: Any, p: Any) -> None:
        if driven is not None:
            driven[c.num] = (c, p)
        console.bar(progress_line(c, p))
    sched = Scheduler(store, console.log, SchedulerOptions(only=only, exit_when_idle=exit_when_idle,
                                                           verbose=not console.tty, rack=rack, lease_s=lease_s),
                      on_progress=progress)
    try:
        asyncio.run(sched.serve())
    finally:
        console.end()
    if sched.stopping:
        console.log(f"stopped by {sched.stop_reason}; the campaign continues with `ctl campaign resume` "
                    "or the daemon")
        if foreground:
            return (130 if sched.stop_reason == "SIGINT" else 143), sched.stop_reason
        return 0, sched.stop_reason
    if watch is not None:
        c = store.campaign(watch)
        say(f"campaign #{c.num} {c.id}: {c.state}" + (f" ({c.reason})" if c.reason else ""))
        if c.state == "paused":
            return 1, None
    return 0, None


# ---- report ----------------------------------------------------------------------------------

def cmd_report(args: argparse.Namespace) -> int:
    store = open_store()
    try:
        c = store.find(args.id)
        out = Path(args.out) if args.out else campaign_dir(c.id) / "report"
        output = figure_options.output(args, plots.REPORT.formats, report=True)
        html, md = write_report(store, c, out, output)
    finally:
        store.close()
    if args.json:
        print_json({"html": str(html), "markdown": str(md), "figure_formats": list(output.formats),
                    "dpi": output.dpi})
    else:
        say(f"report: {html}")
        say(f"markdown: {md}")
        say(f"figures: {', '.join(output.formats)} ({output.dpi} dpi for raster images) in {out}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Every completed run's manifest and summary (uploaded to the lab database by each rack's
    scheduler) as record directories, for `ctl report` and any other tool that reads records."""
    store = open_store()
    try:
        c = store.find(args.id)
        out = Path(args.out)
        ex = export_records(store, c, out)
        where = store_location()
    finally:
        store.close()
    if args.json:
        print_json({"num": c.num, "id": c.id, "out": str(out), "written": ex.written, "copied_local": ex.copied_local,
                    "completed": ex.completed, "store": where,
                    "missing": [{"seq": seq, "run_id": rid, "record": loc} for seq, rid, loc in ex.missing]})
    else:
        local = f" ({ex.copied_local} from this controller's own records)" if ex.copied_local else ""
        say(f"{ex.written} records of campaign #{c.num} written under {out}{local}; "
            f"{ex.completed} runs of the campaign are done")
    if ex.missing:
        # Issue 25: never a silent "0 records written" for a campaign whose runs are done.
        first = ", ".join(f"run {seq} {rid} ({loc})" for seq, rid, loc in ex.missing[:3])
        more = f" and {len(ex.missing) - 3} more" if len(ex.missing) > 3 else ""
        say(f"{len(ex.missing)} completed runs have no record in the store ({where}) nor on this controller: "
            f"{first}{more}; export them on the controller that ran them (their schedulers upload records only "
            "to a lab database, $CTL_DATABASE_URL)", file=sys.stderr)
        return 1
    return 0


# ---- registration ----------------------------------------------------------------------------

def register(sub) -> None:
    p = add_command(sub, "campaign", allow_abbrev=False,
                    description="Campaigns: many runs of one scenario from a campaign file (YAML), crash-safe and "
                                "resumable, on one rack or several.")
    cs = p.add_subparsers(dest="campaign_command", required=True, parser_class=Parser, metavar="ACTION")

    def add(name: str, func: Any, help_: str) -> argparse.ArgumentParser:
        sp = cs.add_parser(name, help=help_, description=help_, allow_abbrev=False)
        sp.set_defaults(func=func)
        return sp

    file_help = "the campaign file: a path, or the name of a shipped one (`ctl config show` lists them)"
    id_help = "the campaign: its number (#N), id or a unique part of it (default: the only active one, else the latest)"
    sp = add("plan", cmd_plan, "print the expanded runs, rack time and finish time; change nothing")
    sp.add_argument("file", metavar="FILE", help=file_help)
    sp.add_argument("--at", metavar="TIME", help="start time for the estimate (HH:MM or ISO 8601 date and time)")
    sp.add_argument("--force", action="store_true", help="plan a campaign that would finish more than a year from now")
    sp.add_argument("--json", action="store_true", help=JSON_HELP + "; every run with its parameters, rack time and "
                                                                    "estimated finish")

    sp = add("submit", cmd_submit, "queue a campaign")
    sp.add_argument("file", metavar="FILE", help=file_help)
    sp.add_argument("--at", metavar="TIME", help="not before this time (HH:MM: the next such time; or ISO 8601 date "
                                                 "and time)")
    sp.add_argument("--runs-dir", metavar="DIR", help=f"where run records go ({setting_default('runs_dir')})")
    sp.add_argument("--force", action="store_true", help="queue a campaign that would finish more than a year from now")
    sp.add_argument("--json", action="store_true", help=JSON_HELP + "; the queued campaign's number, id and plan")

    sp = add("status", cmd_status, "campaigns and their progress")
    sp.add_argument("id", nargs="?", metavar="ID", help="one campaign's number (#N) or id (default: every campaign)")
    sp.add_argument("--json", action="store_true", help=JSON_HELP + "; per campaign: state, progress, ETA")
    sp.add_argument("--watch", action="store_true", help="live progress bar with ETA until the campaign stops; "
                                                          "exit 0 when it is done, 1 when it stopped short")

    sp = add("pause", cmd_pause, "pause after the current run (--now: stop it, restore, re-run later)")
    sp.add_argument("id", nargs="?", metavar="ID", help=id_help)
    sp.add_argument("--now", action="store_true", help="stop the current run now (the rack is restored; the run is "
                                                        "queued again)")
    sp.add_argument("--reason", metavar="TEXT", help="why, one line: shown by `ctl campaign status`")
    sp.add_argument("--json", action="store_true", help=JSON_HELP + "; the campaign's state")

    sp = add("resume", cmd_resume, "continue a paused or interrupted campaign (in this terminal unless "
                                   "a scheduler is running)")
    sp.add_argument("id", nargs="?", metavar="ID", help=id_help)
    sp.add_argument("--no-wait", action="store_true", help="only mark it resumed; the daemon runs it")
    sp.add_argument("--json", action="store_true", help=JSON_HELP + "; with --no-wait: the campaign's state")

    sp = add("cancel", cmd_cancel, "stop a campaign for good (the current run is stopped, the rack restored)")
    sp.add_argument("id", nargs="?", metavar="ID", help=id_help)
    sp.add_argument("--reason", metavar="TEXT", help="why, one line: shown by `ctl campaign status`")
    sp.add_argument("--json", action="store_true", help=JSON_HELP + "; the campaign's state")

    sp = add("report", cmd_report, "write the HTML + Markdown report")
    sp.add_argument("id", nargs="?", metavar="ID", help=id_help)
    sp.add_argument("--out", metavar="DIR", help=f"directory ({setting_default('state_dir', 'campaigns/ID/report')})")
    figure_options.add(sp, plots.REPORT.formats, report=True)
    sp.add_argument("--json", action="store_true", help=JSON_HELP + "; the report's files")

    sp = add("daemon", cmd_daemon, "run queued campaigns (for a systemd unit); with --inventory: the campaigns of "
                                   "that rack (one daemon per rack, on any controller)")
    sp.add_argument("--exit-when-idle", action="store_true", help="exit when no campaign is queued or running")
    sp.add_argument("--lease", default="60s", metavar="DURATION",
                    help="how long a claimed run stays this daemon's without a renewal (default 60s; renewed every "
                         "2 s): after a kill -9, another rack's daemon takes the run back once it has run out")
    sp.add_argument("--json", action="store_true",
                    help=JSON_HELP + ", once, when the daemon ends (idle with --exit-when-idle, or stopped by SIGTERM "
                                     "or SIGINT): every campaign it drove as it left it; its log lines stay on stderr")

    sp = add("export", cmd_export, "write the uploaded records (manifest, summary) of every rack as record "
                                   "directories")
    sp.add_argument("id", nargs="?", metavar="ID", help=id_help)
    sp.add_argument("--out", required=True, metavar="DIR", help="directory (one sub-directory per run)")
    sp.add_argument("--json", action="store_true", help=JSON_HELP + "; how many records were written and the "
                                                                    "completed runs that have none (exit 1 if any)")
