"""`ctl run SCENARIO ...`: one run of a scenario on the rack."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

from typing import TYPE_CHECKING

from controller import scenarios
from controller.cli import gcpause
from controller.cli.commands import JSON_HELP, add_command, known, setting_default, suggest
from controller.errors import CtlError, UsageError

if TYPE_CHECKING:
    from controller.run.runner import RunOutcome
    from controller.scenarios.base import RunPlan

# Set-up and restore around the traffic, for the reservation check (a campaign learns its own).
ADHOC_OVERHEAD_S = 20.0


def __getattr__(name: str):
    """`from controller.cli.run import prepare_run` as before: the planner is imported when asked
    for (by cmd_run once the lease's connection is opening), not with the run command's parser."""
    if name in ("prepare_run", "dry_run_assumptions"):
        from controller.run import prepare
        return getattr(prepare, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_words(name: str, params: list[str]) -> None:
    """A misspelt scenario or parameter is bad input with "did you mean" (said before a bad
    inventory's error); the scenario's own parser checks the values."""
    # The registered names (not `available()`, which imports every scenario's module to check
    # it: ~8 ms of each `ctl run`); a registered scenario whose module this build lacks is
    # refused by `get` below with its own one-line error.
    known(name, scenarios.names(), "scenario")
    flags = [p.flag for p in scenarios.get(name).all_params()]
    for a in params:
        flag = a.split("=", 1)[0]
        if a.startswith("--") and flag not in flags:
            hint = suggest(flag, flags)
            if hint:
                raise UsageError(f"run {name}: unrecognized arguments: {flag}{hint}")


def cmd_run(args: argparse.Namespace) -> int:
    # What a run needs (SSH, the runner, the rack's lock and lease, telemetry) is imported here,
    # not with the parser: `ctl run --help`, completion and refused arguments do not load it.
    from controller.cli.common import inventory_of, print_json
    known(args.scenario, scenarios.names(), "scenario")     # a misspelt name: nothing is read or opened
    purpose = f"ctl run {args.scenario}"
    # The inventory is read before the scenario's module is imported, so that the connection to
    # the rack's lease host opens (in its own thread: only a connection, the lease itself is taken
    # under the rack lock by hold_rack, as always) while the module loads and the plan is made.
    # The errors keep their order: a misspelt parameter is said before a bad inventory, bad
    # parameters and an unusable lease setting before the rack is waited for.
    inv = inv_error = lease_error = None
    try:
        inv = inventory_of(args)
    except CtlError as exc:
        inv_error = exc
    leases: list = []
    if inv is not None and not args.dry_run:
        from controller.rack.lease import HostLease, make_leases
        try:
            leases = make_leases(inv, purpose)
        except CtlError as exc:
            lease_error = exc
        for lease in leases:
            if isinstance(lease, HostLease):
                lease.preconnect()
    try:
        check_words(args.scenario, args.params)
        if inv_error is not None:
            raise inv_error
        from controller.run.prepare import dry_run_assumptions, prepare_run
        scenario, params, given, plan = prepare_run(args.scenario, args.params, inv)
        # When each step of the start-up ended (the record keeps them: bench/control_overhead.py
        # splits the start-up with them).
        startup: dict[str, float] = {"planned": time.time()}
        if not args.dry_run:
            from controller.rack.lease import parse_wait
            wait_s = parse_wait(args.wait)
            if lease_error is not None:
                raise lease_error
        from controller.cli.console import Console
        from controller.lab.ops import ensure_lab
        from controller.rack.lease import hold_rack
        from controller.rack.reservations import check_free
        from controller.run.partial import partial_line
        from controller.run.recovery import recover_all
        from controller.run.runner import execute
        from controller.settings import runs_dir
        from controller.telemetry.influx import influx_target, push_pending
        startup["imported"] = time.time()
    except BaseException:
        for lease in leases:
            if isinstance(lease, HostLease):
                lease.abandon()             # the early connection: given up, not waited for
        raise
    gcpause.resume()        # the start-up's objects are made; before any wait for the rack
    # A value that reaches the rack changed (rounded, capped, converted) is never silent: one
    # warning line each, --quiet or not (the manifest records them too).
    for c in plan.conversions:
        print(c.warning(), file=sys.stderr, flush=True)
    # Progress lines on stderr; on a terminal also the live block while traffic runs.
    console = Console(quiet=args.quiet or (args.json and args.dry_run), block=not (args.json or args.dry_run))
    say = console.log
    if args.dry_run:
        for line in dry_run_assumptions(inv, plan):
            print(f"warning: {line}", file=sys.stderr, flush=True)
        outcome = asyncio.run(execute(scenario, params, given, inv, plan, runs_root=runs_dir(args.runs_dir),
                                      dry_run=True, progress=say))
        console.end()
        if args.json:
            print_json(dry_run_json(outcome, params, plan))
        else:
            print_dry_run(outcome.dry_run_log, plan)
        if outcome.error:
            print(f"dry run stopped: {outcome.error}", file=sys.stderr)
            return outcome.exit_code or 1
        return 0
    needed = {f.client for f in plan.flows} | {f.server for f in plan.flows} | set(plan.endpoints) | \
        {inv.links[k[0]].bridge for k in plan.links}
    brought_up: list[bool] = []
    with hold_rack(inv, purpose, wait_s=wait_s, say=say, leases=leases,
                   prepare=lambda: brought_up.append(ensure_lab(inv, needed))) as hold:
        startup["rack_held"] = time.time()
        if hold.lock.broke_stale:
            say(f"took over the rack lock of a dead controller (pid {hold.lock.broke_stale.get('pid')})")
        if brought_up and brought_up[0]:
            say(f"virtual rack {inv.name} was down: brought it up")
        # Somebody else's reservation: refused before anything on the rack changes (exit 3).
        check_free(inv, time.time(), float(params.get("duration") or 0) + ADHOC_OVERHEAD_S, f"ctl run {args.scenario}",
                   via=hold.lease)
        problems = recover_all(inv, runs_dir(args.runs_dir), say)
        if problems:
            raise CtlError("the rack could not be restored after an interrupted run: " + "; ".join(problems))
        push_pending(inv, runs_dir(args.runs_dir), say)
        target = influx_target(inv, say)
        startup["checked"] = time.time()
        try:
            outcome = asyncio.run(execute(scenario, params, given, inv, plan, runs_root=runs_dir(args.runs_dir),
                                          influx=target, progress=say, campaign=args.campaign,
                                          live=console.live_sink, startup=startup, figures_later=True))
        finally:
            console.end()
    # The rack is let go (lease, lock) once the record is finished; the run's figures, drawn in a
    # thread since the summary was known, go into the record now, off the rack's time.
    try:
        outcome.finish_figures()
    except KeyboardInterrupt:       # the run and its record are complete: say so, then as usual
        print(f"ctl: interrupted while the figures were drawn: the record is complete without them "
              f"(`ctl runs plot {outcome.run_id}` draws them)", file=sys.stderr, flush=True)
    console.end()           # the lines said while the rack was let go are out before the summary
    if outcome.exit_code == 2:
        # Refused after reading the hosts, before any change (e.g. a congestion control the kernel lacks).
        print(f"ctl: error: {' '.join((outcome.error or '').split())}", file=sys.stderr)
        print(f"record: {outcome.record_dir}", file=sys.stderr)
        return 2
    partial = bool(outcome.summary and outcome.summary.get("partial"))
    if args.json:
        print_json({"run_id": outcome.run_id, "status": outcome.status, "record": None if outcome.record_dir is None else str(outcome.record_dir),
                     "error": outcome.error, "summary": saved_summary(outcome),
                     "conversions": [c.to_json() for c in plan.conversions]})
    else:
        if outcome.summary is not None and (not partial or
                                            (outcome.summary.get("partial_run") or {}).get("summarized") == "scenario"):
            print(scenario.render(outcome.summary))
            print()
        if partial:
            print(partial_line(outcome.summary or {}))
        _print_fidelity(outcome.record_dir)
        print(f"run {outcome.run_id}: {outcome.status}" + (f" ({outcome.error})" if outcome.error else ""))
        print(f"record: {outcome.record_dir}")
        if outcome.influx_pending:
            print(f"InfluxDB: {outcome.influx_pending} points not sent yet; `ctl metrics push {outcome.run_id}`")
    _say_why(outcome)
    return outcome.exit_code


def _say_why(outcome: RunOutcome) -> None:
    """A run that did not complete says why on stderr too (scripts read stderr, not the table),
    one line, whether or not the summary went to stdout as JSON."""
    if outcome.status == "completed":
        return
    why = " ".join((outcome.error or "no reason recorded").split())
    line = f"ctl: run {outcome.run_id} {outcome.status}: {why}"
    if outcome.summary and outcome.summary.get("partial"):
        p = outcome.summary.get("partial_run") or {}
        line += f" (partial summary: {p.get('completed', 0)} of {p.get('planned', 0)} {p.get('unit', 'flows')} " \
                "completed)"
    print(line + f"; record: {outcome.record_dir}", file=sys.stderr, flush=True)


def _print_fidelity(record_dir) -> None:
    """One line on how well the shapers kept their schedule (their own counters, when they have them)."""
    from controller.results.records import load_manifest       # loaded by the run already
    try:
        m = load_manifest(record_dir)
    except (CtlError, TypeError):
        return
    parts = []
    for b, v in sorted((m.get("shapers") or {}).items()):
        for pipe, f in sorted((v.get("fidelity") or {}).items()):
            if "mean_late_us" in f:
                parts.append(f"{pipe} {f['mean_late_us']:.0f} us")
    if parts:
        print("shaper departure lateness (mean over the run): " + ", ".join(parts))


def print_dry_run(log, plan: RunPlan | None = None) -> None:
    by_host: dict[str, list] = {}
    for r in log:
        by_host.setdefault(r.host, []).append(r)
    print(f"dry run: {len(log)} commands on {len(by_host)} hosts; nothing was sent\n")
    if plan is not None and plan.conversions:
        print("values changed on their way to the rack (asked -> applied):")
        for c in plan.conversions:
            print(f"  {c.what}: {c.asked} -> {c.applied}\n      why: {c.reason}")
        print()
    if plan is not None and plan.notes:
        print("notes:")
        for n in plan.notes:
            print(f"  {n}")
        print()
    for host, entries in by_host.items():
        print(f"== {host} ({len(entries)} commands)")
        for i, r in enumerate(entries, 1):
            note = f"    # {r.note}" if r.note else ""
            print(f"{i:4d}  {_show_argv(r.argv)}{note}")
        print()


def saved_summary(outcome: RunOutcome) -> dict | None:
    """The summary as the record keeps it (summary.json: with its provenance and units, times ISO
    8601 UTC), else the run's own when the record has none."""
    try:
        return json.loads((Path(outcome.record_dir) / "summary.json").read_text())
    except (OSError, ValueError, TypeError):
        return outcome.summary


def dry_run_json(outcome: RunOutcome, params: dict, plan: RunPlan) -> dict:
    """`ctl run NAME --dry-run --json`: the plan (with its conversions and notes) and every
    command per host, as a real run would send them."""
    return {"dry_run": True, "run_id": outcome.run_id, "status": outcome.status, "error": outcome.error,
            "parameters": {k: v if isinstance(v, (str, int, float, bool, type(None))) else str(v)
                           for k, v in params.items()},
            "conversions": [c.to_json() for c in plan.conversions], "notes": list(plan.notes),
            "plan": plan.to_json(),
            "commands": [{"host": r.host, "argv": list(r.argv), "note": r.note} for r in outcome.dry_run_log]}


def _show_argv(argv) -> str:
    """A command as a shell would read it; the sampler's source (a constant, shipped in
    nodes/agent/sampler.py) is named rather than printed in full."""
    import shlex

    from controller.telemetry.hosts import SAMPLER_SOURCE
    return " ".join("<nodes/agent/sampler.py>" if a == SAMPLER_SOURCE else
                    (f"<{len(a)}-byte constant script>" if len(a) > 400 else shlex.quote(a)) for a in argv)


def _scenario_index(rest: list[str], run_p: argparse.ArgumentParser, names: list[str]) -> int | None:
    """Where the scenario's name is among the words after `run` (pure): the first word that is
    not an option or an option's value. An option run's parser does not know is a scenario
    parameter, and every one of those takes a value (`--duration 10s`)."""
    i = 0
    while i < len(rest):
        a = rest[i]
        if a == "--":
            return i + 1 if i + 1 < len(rest) else None
        if not a.startswith("-") or a == "-":
            return i
        if "=" in a:
            i += 1
            continue
        action = run_p._option_string_actions.get(a)
        if action is None or action.nargs is None:
            i += 2
        elif action.nargs == "?":
            nxt = rest[i + 1] if i + 1 < len(rest) else None
            i += 1 if nxt is None or nxt.startswith("-") or nxt in names else 2
        else:
            i += 1 if action.nargs == 0 else 2
    return None


def prepare_argv(parser: argparse.ArgumentParser, rest: list[str]) -> list[str]:
    """The words after `ctl run`, with the scenario's name moved first, so options and parameters
    go before or after it alike (`ctl run --duration 10s distinct-bottleneck`); with -h/--help,
    the named scenario's parameters join run's own in the help (`ctl run NAME --help`)."""
    run_p = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["run"]
    names = scenarios.names()
    i = _scenario_index(rest, run_p, names)
    helping = "-h" in rest or "--help" in rest
    if i is None:
        if helping:
            return rest
        raise UsageError("run: which scenario? (`ctl scenarios` lists them: " + ", ".join(names) + ")")
    name = rest[i]
    if helping:     # `ctl run distinct-botleneck --help`: did you mean, not run's help without the parameters
        add_scenario_params(run_p, scenarios.get(known(name, names, "scenario")))
    return [name] + rest[:i] + rest[i + 1:]


def _param_help(param) -> str:
    """A parameter's help as `ctl scenarios show` gives it: its text, default and range with units."""
    rng = ""
    if param.choices:
        rng = f"; one of {', '.join(param.choices)}"
    elif param.min is not None or param.max is not None:
        lo, hi = (param.display(b) if b is not None else "" for b in (param.min, param.max))
        rng = f"; {lo}..{hi}"
    text = f"{param.help} ({param.type}, default {param.display(param.default)}{rng})"
    return text.replace("%", "%%")      # argparse expands %(...)s in help texts


def add_scenario_params(p: argparse.ArgumentParser, scenario) -> None:
    """The scenario's own parameters on run's parser, for its help and for completion (a real
    run parses them with the scenario's own parser): `ctl run shared-bottleneck --d<TAB>`
    offers --delay, --delay1, --delay2, --duration."""
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.description = (f"Run {scenario.name}: {scenario.title}\nreference: {scenario.reference}\n\n"
                     + "\n".join(line.rstrip() for line in scenario.description.strip().splitlines()))
    group = p.add_argument_group(f"parameters of {scenario.name} (also `ctl scenarios show {scenario.name}`)")
    for param in scenario.all_params():
        if param.flag not in p._option_string_actions:
            group.add_argument(param.flag, help=_param_help(param), metavar=param.type.upper(),
                               choices=list(param.choices) if param.choices else None)


def _add_scenario_params_for_completion(p: argparse.ArgumentParser) -> None:
    """Completion only: the scenario named on the line being completed contributes its own
    parameters (with their help)."""
    words = os.environ.get("COMP_LINE", "").split()
    name = next((w for w in words[words.index("run") + 1:] if not w.startswith("-")), None) \
        if "run" in words else None
    if name not in scenarios.available():
        return
    add_scenario_params(p, scenarios.get(name))


def register(sub) -> None:
    names = scenarios.names()
    p = add_command(sub, "run", allow_abbrev=False, formatter_class=argparse.RawDescriptionHelpFormatter,
                    description="Run SCENARIO on the rack. Its own parameters (--PARAM VALUE, values with units) go\n"
                                "before or after its name: `ctl run SCENARIO --help` lists them.",
                    epilog="scenarios:\n" + "\n".join(f"  {n}" for n in names))
    scenario_arg = p.add_argument("scenario", metavar="SCENARIO",
                                  help="the experiment to run (`ctl scenarios` lists them with their titles)")
    scenario_arg.completer = lambda **_kw: scenarios.available()
    if "_ARGCOMPLETE" in os.environ:
        _add_scenario_params_for_completion(p)
    p.add_argument("--dry-run", action="store_true", help="print every command for every host; change nothing")
    p.add_argument("--json", action="store_true", help=JSON_HELP + "; the run's id, status, record, conversions and "
                   "summary (with --dry-run: the plan, the values changed on their way to the rack and every "
                   "command)")
    p.add_argument("--runs-dir", metavar="DIR", help=f"where run records go ({setting_default('runs_dir')})")
    p.add_argument("--wait", nargs="?", const="forever", default=None, metavar="DURATION",
                   help="wait for the rack when another controller holds it (as long as it takes, or up to "
                        "DURATION, e.g. 10m); without it a held rack is exit 3 at once")
    p.add_argument("--campaign", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_run, extra_args="params")
