#!/usr/bin/env python3
"""Benchmark: ctl's control overhead per run against plain `ssh`, measured in the same run.

A (ctl): `ctl run distinct-bottleneck --duration D` on the virtual rack, repeated; from each
run record, the run's rack time minus its traffic window (from the record's creation to its
`finished`): connecting, reading host metadata and shaper/endpoint state, shaping + read-back +
verify, endpoint configuration, clock offsets, starting samplers and servers, collecting
counters and JSON, restoring + verifying, summarizing. Since 2026-11-27 (issue 28) the record is
finished, and `ctl run` lets the rack go, before the run's figures are put in (drawn in a thread
since the summary was known; the manifest's `figures_drawn` says when they were put in): the
figure's tail after `finished` is printed apart ("figures after the rack"), and so is the whole
process's wall time, so both definitions can be read from one run.

B (baseline): the same non-traffic commands that run issued (taken from its
commands.jsonl: everything but the long-running traffic, sampler and monitor processes),
issued one by one with plain `ssh` (a new connection per command, as a shell script
would), in the same order, on the same hosts.

Prints both (median, min, max over the repetitions, interleaved A B A B) and the ratio.

The process's own time outside the record is split in two: start-up (interpreter, imports,
inventory, rack lock, lease and recovery check: from the process's start to the record's
creation) and exit (from the record's end to the process's exit).

C (optional, `--before DIR`): the same `ctl run` from another checkout of ctl (e.g. `git archive
<commit> | tar -x -C DIR`), interleaved with A on the same rack, so a change is measured against
the code before it under the same load.

Usage (root, after scripts/setup.sh): .venv/bin/python bench/control_overhead.py [--runs 5]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))
# The environment the ctl runs get: this process's as it started (importing controller sets
# variables of its own, e.g. PYDANTIC_DISABLE_PLUGINS, that a --before checkout must not inherit).
BASE_ENV = dict(os.environ)

from controller.inventory import load_inventory, resolve_inventory_path  # noqa: E402
from controller.results.records import load_manifest, read_jsonl  # noqa: E402
from controller.settings import export_state_dir  # noqa: E402

LONG_RUNNING = ("iperf3", "mptcpize", "python3", "ip mptcp monitor")


def run_ctl(duration: str, runs_dir: Path, inventory: Path, tree: Path = PROJECT) -> dict:
    env = dict(BASE_ENV, CTL_RUNS_DIR=str(runs_dir), CTL_INVENTORY=str(inventory))
    cpu0 = _children_cpu()
    t0 = time.monotonic()
    t0_wall = time.time()
    # `python -m controller` from the tree's directory runs that tree's ctl (the checkout's own
    # .venv/bin/ctl is the same for PROJECT).
    p = subprocess.run([sys.executable, "-m", "controller", "run", "distinct-bottleneck", "--link2", "20M",
                        "--duration", duration, "--json", "--quiet"], env=env, capture_output=True, text=True,
                       cwd=tree)
    wall = time.monotonic() - t0
    t1_wall = t0_wall + wall
    cpu = _children_cpu() - cpu0
    if p.returncode != 0:
        raise SystemExit(f"ctl run failed ({p.returncode}): {p.stderr.strip()[-400:]}")
    out = json.loads(p.stdout)["data"]
    record = Path(out["record"])
    m = load_manifest(record)           # times as Unix seconds, whatever record format the tree wrote
    tw = m["traffic_window"]
    phases = {ph["phase"]: ph["t"] for ph in m["phases"]}
    return {"record": record, "wall_process": wall,
            "overhead": (m["finished"] - m["created"]) - (tw["end"] - tw["start"]),
            "wall_minus_traffic": wall - (tw["end"] - tw["start"]),
            "record_start": phases["prepare"] - m["created"],
            "prepare": phases["configure"] - phases["prepare"],
            "configure": phases["measure"] - phases["configure"],
            "measure_setup": tw["start"] - phases["measure"],
            "after_traffic": m["finished"] - tw["end"],
            # after the traffic: stopping the samplers, SNMP and clock offsets; then the restore
            "stop": phases["restore"] - tw["end"], "restore": m["finished"] - phases["restore"],
            # the figures put into the record after it was finished (the rack let go); 0 before
            "figures_after": max(0.0, (m.get("figures_drawn") or m["finished"]) - m["finished"]),
            "process_startup_and_lock": wall - (m["finished"] - m["created"]),
            "startup": m["created"] - t0_wall, "exit": t1_wall - m["finished"],
            "cpu": cpu, "load": os.getloadavg()[0], **startup_steps(m, t0_wall)}


# The start-up's steps, from the marks `ctl run` keeps in the record (manifest "startup").
STARTUP_STEPS = (("planned", "interpreter, parser, inventory, plan"), ("imported", "imports of a run (lease connecting)"),
                 ("rack_held", "rack lock, lab check, lease"), ("checked", "reservations, recovery check, InfluxDB"),
                 ("created", "the record created"))


def startup_steps(m: dict, t0_wall: float) -> dict:
    marks = dict(m.get("startup") or {}, created=m["created"])
    out, prev = {}, t0_wall
    for key, _what in STARTUP_STEPS:
        if key in marks:
            out[f"startup:{key}"] = marks[key] - prev
            prev = marks[key]
    return out


def _children_cpu() -> float:
    """User + system CPU seconds of this process's finished children (each `ctl run` is waited
    for before the next starts, so a difference is one run's: robust to the machine's load)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def baseline_commands(record: Path) -> list[tuple[str, list[str]]]:
    out = []
    for c in read_jsonl(record / "commands.jsonl"):
        argv = c["argv"]
        joined = " ".join(argv[:3])
        if any(joined.startswith(x) for x in LONG_RUNNING) or c.get("note", "").startswith(("stop ", "kill ")):
            continue
        out.append((c["host"], argv))
    return out


def run_baseline(inv, commands: list[tuple[str, list[str]]]) -> float:
    import shlex
    t0 = time.monotonic()
    for host, argv in commands:
        ssh = inv.ssh_for(host)
        addr = inv.hosts[host].mgmt.address
        p = subprocess.run(["ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", f"UserKnownHostsFile={ssh.known_hosts}",
                            "-o", "StrictHostKeyChecking=yes", "-i", str(ssh.key_file), f"{ssh.user}@{addr}", "--",
                            shlex.join(["env", "LC_ALL=C", *argv])],
                           capture_output=True, text=True, timeout=60)
        if p.returncode == 255:
            raise SystemExit(f"plain ssh to {host} failed: {p.stderr.strip()}")
    return time.monotonic() - t0


# A fixed piece of CPU work in a fresh interpreter, timed in CPU seconds (user + system): it moves
# with the machine (the processor the VM got, its clock) and never with ctl's code, so two
# measurements on different days can be told apart (issue 28: the same code ran ~1.5x slower after
# the VM restarted at 2026-11-27 07:41 UTC; the plain-ssh baseline said so, too). It moves with the
# load as well (491-500 ms at load 1.3, 615-647 ms at load ~6, nice 19, 2026-11-27): compare it at
# like loads, the load printed beside it.
CALIBRATION = "import hashlib\nx = b'ctl' * 300\nfor i in range(60000):\n    x = hashlib.sha256(x).digest() * 300\nsum(i * i for i in range(400000))"


def calibration_ms(runs: int = 3) -> float:
    """The least CPU time (ms) of CALIBRATION over `runs` fresh interpreters."""
    best = float("inf")
    for _ in range(runs):
        cpu0 = _children_cpu()
        subprocess.run([sys.executable, "-S", "-c", CALIBRATION], check=True)
        best = min(best, _children_cpu() - cpu0)
    return best * 1000


def fmt(xs: list[float]) -> str:
    return f"median {statistics.median(xs):7.3f} s   min {min(xs):7.3f}   max {max(xs):7.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="paired repetitions (ctl, plain ssh; default 5)")
    ap.add_argument("--duration", default="1s", help="traffic per ctl run (excluded from the overhead)")
    ap.add_argument("--inventory", default=None, help="rack inventory file (default: ctl's, as `ctl config show` resolves it)")
    ap.add_argument("--before", type=Path, default=None, metavar="DIR",
                    help="another checkout of ctl whose `ctl run` is measured too, interleaved (C)")
    ap.add_argument("--no-ssh-baseline", action="store_true",
                    help="skip B (plain ssh), e.g. when only comparing with --before")
    args = ap.parse_args()
    export_state_dir()
    inv_path = resolve_inventory_path(args.inventory)
    inv = load_inventory(inv_path)
    runs_dir = Path(os.environ.get("CTL_BENCH_RUNS", "/tmp/ctl-bench-runs"))
    runs_dir.mkdir(parents=True, exist_ok=True)
    print(f"# control overhead, {platform.node()}, {os.cpu_count()} cores, kernel {platform.release()}, "
          f"inventory {inv.name}, {args.runs} paired repetitions")
    print(f"# machine: a fixed CPU task (CALIBRATION) took {calibration_ms():.0f} ms of CPU (least of 3; "
          f"load {os.getloadavg()[0]:.1f})", flush=True)
    run_ctl(args.duration, runs_dir, inv_path)  # warm-up: brings the lab up, warms caches
    if args.before:
        run_ctl(args.duration, runs_dir, inv_path, args.before)
    a, b, parts, c_parts = [], [], [], []
    n_cmds = 0
    for i in range(args.runs):
        r = run_ctl(args.duration, runs_dir, inv_path)
        a.append(r["overhead"])
        parts.append(r)
        line = (f"  rep {i + 1}: ctl {r['overhead']:.3f} s (start-up {r['startup']:.3f} s, CPU {r['cpu']:.2f} s, "
                f"load {r['load']:.1f})")
        if not args.no_ssh_baseline:
            cmds = baseline_commands(r["record"])
            n_cmds = len(cmds)
            b.append(run_baseline(inv, cmds))
            line += f"   plain ssh {b[-1]:.3f} s   ({n_cmds} commands)"
        if args.before:
            c_parts.append(run_ctl(args.duration, runs_dir, inv_path, args.before))
            line += (f"   before: {c_parts[-1]['overhead']:.3f} s (start-up {c_parts[-1]['startup']:.3f} s, "
                     f"CPU {c_parts[-1]['cpu']:.2f} s)")
        print(line, flush=True)
    print()
    for label, ps in (("A  ctl control overhead per run       ", parts),
                      ("C  the same, --before checkout         ", c_parts)):
        if not ps:
            continue
        print(f"{label} {fmt([p['overhead'] for p in ps])}")
        for k in ("record_start", "prepare", "configure", "measure_setup", "after_traffic", "stop", "restore"):
            print(f"     {k:<32} median {statistics.median(p[k] for p in ps):7.3f} s")
        print(f"     figures put in after the record was finished (the rack let go)  median "
              f"{statistics.median(p['figures_after'] for p in ps):.3f} s")
        print(f"     process wall time, start to exit, minus the traffic window  median "
              f"{statistics.median(p['wall_minus_traffic'] for p in ps):.3f} s")
        print(f"     outside the record: start-up (interpreter, imports, lock, lease, recovery check) "
              f"median {statistics.median(p['startup'] for p in ps):.3f} s, exit "
              f"median {statistics.median(p['exit'] for p in ps):.3f} s")
        for key, what in STARTUP_STEPS:
            xs = [p[f"startup:{key}"] for p in ps if f"startup:{key}" in p]
            if xs:
                print(f"       start-up to {key:<10} {what:<42} median {statistics.median(xs):.3f} s")
        print(f"     CPU of the whole ctl process (user + system, its children included) "
              f"median {statistics.median(p['cpu'] for p in ps):.3f} s")
    if b:
        ratios = [x / y for x, y in zip(a, b)]
        print(f"B  same {n_cmds} commands, plain ssh, one by one  {fmt(b)}")
        print(f"ratio A/B (paired)                      median {statistics.median(ratios):.3f}   "
              f"min {min(ratios):.3f}   max {max(ratios):.3f}")
    if c_parts:
        for k in ("overhead", "startup", "wall_minus_traffic"):
            ratios = [x[k] / y[k] for x, y in zip(parts, c_parts)]
            print(f"ratio A/C {k:<18} (paired)   median {statistics.median(ratios):.3f}   "
                  f"min {min(ratios):.3f}   max {max(ratios):.3f}")
    # The two figures of issue 28's "Done when", last and alone on their lines.
    loads = [p["load"] for p in parts]
    print()
    print(f"PROCESS (start to exit, minus the traffic)  median "
          f"{statistics.median(p['wall_minus_traffic'] for p in parts):.3f} s   (start-up, rack time, figures, exit)")
    print(f"START-UP (process start -> record created)  median {statistics.median(p['startup'] for p in parts):.3f} s"
          f"   (goal <= 0.3 s; load {min(loads):.1f}-{max(loads):.1f})")
    print(f"OVERHEAD (inside the record: rack time)     median {statistics.median(a):.3f} s"
          f"   (goal <= 1.0 s; CPU of the process {statistics.median(p['cpu'] for p in parts):.2f} s; "
          f"the figures {statistics.median(p['figures_after'] for p in parts):.3f} s after it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
