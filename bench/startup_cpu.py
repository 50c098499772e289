#!/usr/bin/env python3
"""Benchmark: the CPU of `ctl run`'s start-up, step by step, without the rack (issue 28).

`bench/control_overhead.py` times the start-up of real runs (wall time, with the rack's lock,
lease and recovery check): on this shared 2-core machine it moves with everybody's load. This one
repeats, in a fresh interpreter each time and in one thread, what `ctl run distinct-bottleneck`
does before it takes the rack, and prints the process CPU time (user + system, which another
process's load moves much less than wall time) of each step, in the order `ctl run` takes them
since the lease host's connection opens before the scenario is imported: the interpreter,
`controller.cli`, the run command's parser, loading the inventory, the lease and asyncssh (`ctl
run` imports asyncssh in a thread from its start, and opens the connection here), the scenario's
module (what it imports that the parser did not), the plan, and the rest of a run's imports (the
lab and recovery, the runner). Min and median over --runs; with `--before DIR` (another checkout of
ctl) interleaved with it, the same steps in the same order, and the paired ratio of the totals
(what each step holds differs between checkouts: in one whose run parser imports the planner, the
parser step holds the scenario base and the inventory's models).

`--costs` also prints where the CPU of those imports goes by kind: dataclass creation (each
@dataclass compiles its methods), regular expressions compiled at import, pydantic models built
at import or at their first use (defer_build), and the garbage collector's passes (by module, the
largest first). Like `ctl` (controller.cli.gcpause), the steps pause the collector from
`controller.cli`'s import until the imports of a run are done, in a checkout that has it.

Usage: .venv/bin/python bench/startup_cpu.py [--runs 15] [--before DIR] [--costs]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent

# Run in the child (a fresh interpreter whose first import is the checkout's `controller`).
STEPS = r'''
import json, time
c = time.process_time
marks = [("interpreter", c())]
from controller.settings import export_state_dir
export_state_dir()
import controller.cli as cli
from controller.cli import commands
try:
    from controller.cli import gcpause      # the collector paused as `ctl`'s entry() does
except ImportError:                         # a checkout from before it
    gcpause = None
else:
    gcpause.pause()
marks.append(("controller.cli", c()))
commands.LIVE = True
parser = cli.build_parser("run")
from controller.cli.run import check_words, prepare_argv
argv = ["run", "distinct-bottleneck", "--link2", "20M", "--duration", "1"]
args, extra = parser.parse_known_args(argv[:1] + prepare_argv(parser, argv[1:]))
marks.append(("parser of `run`", c()))
from controller.cli.common import inventory_of
args.inventory, args.quiet = None, True
inv = inventory_of(args)
marks.append(("inventory loaded", c()))
from controller.rack.lease import hold_rack, make_leases  # noqa: F401  (asyncssh with it)
marks.append(("lease, asyncssh", c()))      # `ctl run` opens the lease host's connection here
check_words(args.scenario, extra)
marks.append(("scenario module", c()))
from controller.run.prepare import prepare_run
prepare_run(args.scenario, extra, inv)
marks.append(("plan", c()))
from controller.lab.ops import ensure_lab  # noqa: F401
from controller.rack.reservations import check_free  # noqa: F401
from controller.run.partial import partial_line  # noqa: F401
from controller.run.recovery import recover_all  # noqa: F401
from controller.cli.console import Console  # noqa: F401
marks.append(("lab, reservations, recovery", c()))
from controller.run.runner import execute  # noqa: F401
from controller.telemetry.influx import influx_target  # noqa: F401
if gcpause is not None:
    gcpause.resume()                        # where `ctl run` resumes it
marks.append(("runner", c()))
print(json.dumps([(n, t - p) for (n, t), (_, p) in zip(marks, [("", 0.0)] + marks[:-1])]))
'''

COSTS = r'''
import collections, dataclasses, json, re, sys, time
c = time.process_time
acc, cnt, per = collections.Counter(), collections.Counter(), collections.Counter()
_pc = dataclasses._process_class
def process_class(cls, *a, **k):
    t = c(); r = _pc(cls, *a, **k); d = c() - t
    acc["dataclass"] += d; cnt["dataclass"] += 1; per["dataclasses of " + cls.__module__] += d
    return r
dataclasses._process_class = process_class
_comp = re._compile
def compile_(*a, **k):
    t = c(); r = _comp(*a, **k); d = c() - t
    acc["regex"] += d; cnt["regex"] += 1; per["regexes of " + sys._getframe(2).f_globals.get("__name__", "?")] += d
    return r
re._compile = compile_
import pydantic._internal._model_construction as mc
_new, _complete, in_new = mc.ModelMetaclass.__new__, mc.complete_model_class, []
def new(mcs, name, bases, ns, *a, **k):
    in_new.append(1)
    try:
        t = c(); r = _new(mcs, name, bases, ns, *a, **k); d = c() - t
    finally:
        in_new.pop()
    acc["pydantic model"] += d; cnt["pydantic model"] += 1; per["pydantic models of " + ns.get("__module__", "?")] += d
    return r
mc.ModelMetaclass.__new__ = new
def complete(cls, *a, **k):   # a deferred model's validator, built at its first use (defer_build)
    if in_new:
        return _complete(cls, *a, **k)
    t = c(); r = _complete(cls, *a, **k); d = c() - t
    acc["pydantic model built at first use"] += d; cnt["pydantic model built at first use"] += 1
    per["pydantic models of " + cls.__module__ + " built at first use"] += d
    return r
mc.complete_model_class = complete
import gc
started = []
def collected(phase, info):   # the cyclic garbage collector's passes (ctl's entry() pauses it)
    if phase == "start":
        started.append(c())
    elif started:
        d = c() - started.pop(); g = f"garbage collection (generation {info['generation']})"
        acc[g] += d; cnt[g] += 1
gc.callbacks.append(collected)
t0 = c()
exec(compile(open(sys.argv[1]).read(), "steps", "exec"), {"__name__": "steps"})
total = c() - t0
print(json.dumps({"total": total, "kinds": {k: [cnt[k], acc[k]] for k in acc}, "top": per.most_common(15)}))
'''


def child(tree: Path, code: str, *extra: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(tree))
    p = subprocess.run([sys.executable, "-c", code, *extra], cwd=tree, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{tree}: {p.stderr.strip()[-600:]}")
    return p.stdout.strip().splitlines()[-1]


def summary(rows: list[list[tuple[str, float]]]) -> tuple[list[str], float, float]:
    names = [n for n, _ in rows[0]]
    lines = []
    for i, n in enumerate(names):
        vals = sorted(r[i][1] * 1000 for r in rows)
        lines.append(f"    {n:<30} min {vals[0]:7.1f} ms   median {statistics.median(vals):7.1f} ms")
    totals = [sum(v for _, v in r) * 1000 for r in rows]
    return lines, min(totals), statistics.median(totals)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=15, help="fresh interpreters per checkout (default 15)")
    ap.add_argument("--before", type=Path, default=None, metavar="DIR", help="another checkout, interleaved")
    ap.add_argument("--costs", action="store_true", help="also the CPU of dataclasses, regexes and pydantic models")
    args = ap.parse_args()
    trees = [("ctl", PROJECT)] + ([("before", args.before.resolve())] if args.before else [])
    rows: dict[str, list] = {t: [] for t, _ in trees}
    for _ in range(args.runs):
        for tag, tree in trees:
            rows[tag].append(json.loads(child(tree, STEPS)))
    print(f"# start-up CPU of `ctl run distinct-bottleneck` before the rack, {os.cpu_count()} cores, "
          f"{args.runs} fresh interpreters per checkout, load {os.getloadavg()[0]:.1f}")
    totals = {}
    for tag, _tree in trees:
        lines, lo, med = summary(rows[tag])
        totals[tag] = [sum(v for _, v in r) for r in rows[tag]]
        print(f"{tag:<7} total CPU min {lo:.1f} ms, median {med:.1f} ms")
        print("\n".join(lines))
    if args.before:
        ratios = sorted(a / b for a, b in zip(totals["ctl"], totals["before"]))
        print(f"ratio ctl/before of the totals (paired): median {statistics.median(ratios):.3f}, "
              f"min {ratios[0]:.3f}, max {ratios[-1]:.3f}")
    if args.costs:
        steps_file = Path(os.environ.get("TMPDIR", "/tmp")) / f"ctl-startup-steps-{os.getpid()}.py"
        steps_file.write_text(STEPS)
        try:
            for tag, tree in trees:
                got = json.loads(child(tree, COSTS, str(steps_file)))
                kinds = ", ".join(f"{k} {n} x: {1000 * s:.1f} ms" for k, (n, s) in sorted(got["kinds"].items()))
                print(f"{tag:<7} where the CPU went (one run, total {1000 * got['total']:.1f} ms): {kinds}")
                for what, s in got["top"]:
                    print(f"    {1000 * s:6.1f} ms  {what}")
        finally:
            steps_file.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
