#!/usr/bin/env python3
"""Benchmark: campaign duty -- the share of a campaign's wall-clock the rack spends in traffic.

For each run length D (default 10 s and 60 s): a campaign of N distinct-bottleneck runs of D
seconds (`pause: 0`) is submitted to the rack's queue and run by `ctl campaign daemon
--exit-when-idle`, exactly as an overnight sweep is. Wall-clock: from the daemon's start to its
exit (its start-up, settling and health check before each run, the runs, their records).
Traffic: the sum of the runs' traffic windows, from their records. Duty = traffic / wall-clock;
the gap per run = (wall-clock - traffic) / N. Since issue 28's second round a run is done once its
record is finished and its figures go in while the next run starts (since its third round drawn by
the daemon's figure worker process, controller/run/figworker.py): the benchmark also prints when
the figures went in after a record's end (median and largest), in how many runs after the next
record was created and after the next run's traffic had started, and how long after the last
record's end the daemon exited (it waits for the last figures; counted in the wall-clock).

Baseline (optional, `--before DIR`): the same campaign with another checkout of ctl (e.g.
`git archive <commit> | tar -x -C DIR`), on the same rack, right after each measurement.

The rack's own campaign queue (its state dir) must be empty: the benchmark refuses otherwise.
Usage (root, after scripts/setup.sh; a virtual rack or any inventory):
    .venv/bin/python bench/campaign_duty.py [--inventory FILE] [--durations 10s,60s] [--runs 5,3]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from controller.errors import RecordError  # noqa: E402
from controller.inventory import load_inventory, resolve_inventory_path  # noqa: E402
from controller.results.records import load_manifest  # noqa: E402
from controller.settings import export_state_dir  # noqa: E402
from controller.units import parse_duration  # noqa: E402

CAMPAIGN = """version: 1
name: {name}
scenario: distinct-bottleneck
fixed: {{duration: {duration}, link1: 100M, link2: 20M, cc: cubic, tcp-cc: cubic}}
repetitions: {runs}
order: sequential
pause: 0s
overhead: 15s
"""


def ctl(tree: Path, env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "controller", *args], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=timeout)


def queue_is_empty(env: dict) -> bool:
    p = ctl(PROJECT, env, "campaign", "status", "--json")
    if p.returncode != 0:
        raise SystemExit(f"ctl campaign status failed: {p.stderr.strip()}")
    active = [c for c in json.loads(p.stdout)["data"] if c.get("state") not in ("done", "cancelled", "failed")]
    return not active


def one_campaign(tree: Path, env: dict, tmp: Path, duration: str, runs: int, tag: str) -> dict:
    name = f"duty-{tag}-{duration}-{int(time.time())}"
    f = tmp / f"{name}.yaml"
    f.write_text(CAMPAIGN.format(name=name, duration=duration, runs=runs))
    p = ctl(tree, env, "campaign", "submit", str(f))
    if p.returncode != 0:
        raise SystemExit(f"ctl campaign submit failed: {p.stderr.strip()}")
    t0 = time.time()
    p = ctl(tree, env, "campaign", "daemon", "--exit-when-idle", "--quiet",
            timeout=runs * (parse_duration(duration) + 120) + 300)
    t_end = time.time()
    wall = t_end - t0
    if p.returncode != 0:
        raise SystemExit(f"ctl campaign daemon failed ({p.returncode}): {p.stderr.strip()[-600:]}")
    traffic, n, gaps, tails, overlapped, in_traffic = 0.0, 0, [], [], 0, 0
    records = []
    for d in sorted(Path(env["CTL_RUNS_DIR"]).iterdir()):
        try:
            m = load_manifest(d)
        except RecordError:
            continue
        if not str(m.get("campaign") or "").endswith(name) or m.get("created", 0) < t0:
            continue
        records.append(m)
    records.sort(key=lambda m: m["created"])
    for prev, m in zip([None] + records[:-1], records):
        if m.get("status") != "completed":
            raise SystemExit(f"run {m['run_id']} of {name}: {m.get('status')}")
        tw = m["traffic_window"]
        traffic += tw["end"] - tw["start"]
        n += 1
        if prev is not None:   # from one run's traffic end to the next one's start
            gaps.append(tw["start"] - prev["traffic_window"]["end"])
            # the previous run's figures went into its record after this run's record was created
            overlapped += (prev.get("figures_drawn") or 0) > m["created"]
            in_traffic += (prev.get("figures_drawn") or 0) > tw["start"]
        if m.get("figures_drawn"):
            tails.append(m["figures_drawn"] - m["finished"])
    if n != runs:
        raise SystemExit(f"{name}: {n} completed runs found, {runs} expected")
    return {"wall": wall, "traffic": traffic, "duty": traffic / wall, "per_run_gap": (wall - traffic) / runs,
            "between_runs": sorted(gaps)[len(gaps) // 2] if gaps else None,
            "figures_tail": sorted(tails)[len(tails) // 2] if tails else None, "overlapped": overlapped,
            "figures_tail_max": max(tails) if tails else None, "in_traffic": in_traffic,
            "exit_after_last": t_end - records[-1]["finished"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inventory", default=None, help="rack description (default: the configured one)")
    ap.add_argument("--durations", default="10s,60s", help="run lengths, comma-separated (durations)")
    ap.add_argument("--runs", default="5,3", help="runs per campaign, one number per run length")
    ap.add_argument("--before", type=Path, default=None, metavar="DIR",
                    help="another checkout of ctl whose campaign daemon is measured too, after each one")
    args = ap.parse_args()
    export_state_dir()
    inv_path = resolve_inventory_path(args.inventory)
    inv = load_inventory(inv_path)
    durations = [d.strip() for d in args.durations.split(",") if d.strip()]
    counts = [int(x) for x in args.runs.split(",")]
    if len(counts) != len(durations):
        raise SystemExit("--runs needs one number per run length of --durations")
    tmp = Path(tempfile.mkdtemp(prefix="ctl-duty-bench-"))
    env = dict(os.environ, CTL_INVENTORY=str(inv_path), PYTHONUNBUFFERED="1")
    env.setdefault("CTL_RUNS_DIR", str(tmp / "runs"))
    Path(env["CTL_RUNS_DIR"]).mkdir(parents=True, exist_ok=True)
    if not queue_is_empty(env):
        raise SystemExit("the rack's campaign queue is not empty (ctl campaign status): not measuring beside it")
    print(f"# campaign duty, {platform.node()}, {os.cpu_count()} cores, kernel {platform.release()}, "
          f"inventory {inv.name}, load {os.getloadavg()[0]:.1f}")
    for duration, runs in zip(durations, counts):
        trees = [("ctl", PROJECT)] + ([("before", args.before)] if args.before else [])
        for tag, tree in trees:
            r = one_campaign(tree, env, tmp, duration, runs, tag)
            between = f"{r['between_runs']:.2f} s" if r["between_runs"] is not None else "-"
            print(f"{tag:<7} {runs} runs of {duration}: {r['traffic']:.1f} s of traffic in {r['wall']:.1f} s: "
                  f"duty {100 * r['duty']:.1f} %; (wall - traffic) per run {r['per_run_gap']:.2f} s; "
                  f"traffic end to next start (median) {between}; load {os.getloadavg()[0]:.1f}", flush=True)
            if r["figures_tail"] is not None:
                print(f"        figures put in {r['figures_tail']:.2f} s after a record's end (median; largest "
                      f"{r['figures_tail_max']:.2f} s); in {r['overlapped']} of {runs - 1} runs after the next run's "
                      f"record was created, in {r['in_traffic']} after its traffic started; the daemon exited "
                      f"{r['exit_after_last']:.2f} s after the last record's end", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
