#!/usr/bin/env python3
"""Benchmark: the shared lab's campaign queue and a campaign spread over two racks.

1. Queue: claim latency and throughput of the PostgreSQL store with 1, 4 and 16 simulated
   schedulers (separate processes, each with its own connection) taking runs of zero length
   (claim, start the attempt, close it), against the SQLite store in the same run. Both keep
   their crash-safety settings (PostgreSQL fsync on; SQLite WAL, synchronous=FULL). Every run
   must be taken exactly once: checked after each round.
2. Racks: the wall-clock of the 12-run two-rack campaign (distinct-bottleneck, 3 s runs, one
   `ctl campaign daemon` per rack) against the same campaign on one rack, in the same run.

Figures are printed, never asserted. PostgreSQL is Debian's server, started here on a private
Unix socket (tests/support/postgres.py); the racks are virtual racks built here and removed.
Usage (root, after scripts/setup.sh): .venv/bin/python bench/shared_lab_bench.py [--runs 400] [--no-racks]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from controller.campaign.pg_store import PostgresStore  # noqa: E402
from controller.campaign.plan import expand_cases, order_runs  # noqa: E402
from controller.campaign.policy import Decision  # noqa: E402
from controller.campaign.spec import load_campaign  # noqa: E402
from controller.campaign.sqlite_store import SQLiteStore  # noqa: E402
from tests.support.postgres import PostgresServer  # noqa: E402


def open_store(kind: str, where: str):
    return SQLiteStore(Path(where)) if kind == "sqlite" else PostgresStore(where, "bench")


def submit(kind: str, where: str, n_runs: int, tmp: Path) -> int:
    values = ", ".join(f"{i}M" for i in range(1, n_runs // 2 + 1))
    f = tmp / "queue.yaml"
    f.write_text(f"version: 1\nname: queue\nscenario: distinct-bottleneck\nsweep:\n  link2: [{values}]\n"
                 "  cc: [cubic, reno]\nrepetitions: 1\norder: sequential\n")
    spec, _lines, text = load_campaign(f)
    cases = expand_cases(spec)
    planned = order_runs(len(cases), 1, "sequential", None)
    s = open_store(kind, where)
    try:
        c = s.submit(spec=spec, file_path=f, file_text=text, inventory_path=tmp / "i.yaml", inventory_name="r0",
                     runs_root=tmp / "runs", seed=None, not_before=None, cases=cases, planned=planned,
                     durations={x.index: 0.0 for x in cases}, racks=["r0", "r1"])
        return c.num
    finally:
        s.close()


def worker(kind: str, where: str, num: int, i: int, start_at: float, out: "mp.Queue") -> None:
    s = open_store(kind, where)
    holder, rack = f"sched{i}", f"r{i % 2}"
    lat: list[float] = []
    taken = 0
    while time.time() < start_at:
        time.sleep(0.001)
    try:
        while True:
            t0 = time.perf_counter()
            r = s.claim_next(num, rack=rack, holder=holder, lease_s=60)
            lat.append(time.perf_counter() - t0)
            if r is None:
                break
            a = s.start_attempt(num, r.seq, f"r{r.seq}", Path(f"/r/{r.seq}"), None, holder=holder, rack=rack)
            if a is None:
                continue
            s.finish_attempt(num, r.seq, a, status="completed", exit_code=0, error=None, klass="ok",
                             decision=Decision("done", "done"), holder=holder)
            taken += 1
        out.put((i, taken, lat[:-1] or lat, time.time()))
    finally:
        s.close()


def round_(kind: str, where: str, n_sched: int, n_runs: int, tmp: Path) -> dict:
    num = submit(kind, where, n_runs, tmp)
    q: mp.Queue = mp.Queue()
    start_at = time.time() + 1.0
    procs = [mp.Process(target=worker, args=(kind, where, num, i, start_at, q)) for i in range(n_sched)]
    for p in procs:
        p.start()
    results = [q.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(60)
    end = max(r[3] for r in results)
    lat = sorted(x for r in results for x in r[2])
    s = open_store(kind, where)
    try:
        runs = s.runs(num)
        attempts = s.attempts(num)
    finally:
        s.close()
    once = all(r.state == "done" for r in runs) and len(attempts) == len(runs) == sum(r[1] for r in results)
    return {"throughput": len(runs) / (end - start_at), "p50_ms": 1e3 * statistics.median(lat),
            "p95_ms": 1e3 * lat[int(0.95 * (len(lat) - 1))], "exactly_once": once, "runs": len(runs)}


def queue_bench(n_runs: int) -> None:
    server = PostgresServer().start()
    tmp = Path(tempfile.mkdtemp(prefix="ctl-queue-bench-"))
    try:
        print(f"queue: {n_runs} zero-length runs per round; claim latency = one claim_next transaction")
        print(f"{'store':<11}{'schedulers':>11}{'runs/s':>10}{'claim p50 ms':>14}{'claim p95 ms':>14}  exactly once")
        for n in (1, 4, 16):
            for kind in ("sqlite", "postgres"):
                where = str(tmp / f"q{n}.sqlite") if kind == "sqlite" else server.fresh_database()
                r = round_(kind, where, n, n_runs, tmp)
                print(f"{kind:<11}{n:>11}{r['throughput']:>10.0f}{r['p50_ms']:>14.2f}{r['p95_ms']:>14.2f}  "
                      f"{'yes' if r['exactly_once'] else 'NO'} ({r['runs']} runs)", flush=True)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


# ---- the 12-run campaign on two racks vs one ---------------------------------------------------------

CAMPAIGN = """version: 1
name: bench-{n}racks
scenario: distinct-bottleneck
fixed: {{duration: 3s, link1: 20M}}
sweep:
  link2: [10M, 20M, 30M]
  cc: [cubic, reno]
repetitions: 2
order: random
seed: 4242
overhead: 10s
health: {{max_clock_spread: 20ms}}
racks: [{racks}]
"""


def racks_bench() -> None:
    from controller.inventory import load_inventory
    from controller.lab.ops import lab_up_cli
    from controller.lab.rack import lab_down
    from tests.support.rack import free_mgmt_octet, make_state_dir, write_test_inventory
    base = Path(tempfile.mkdtemp(prefix="ctl-racks-bench-"))
    server = PostgresServer().start()
    racks: list[tuple[dict, object]] = []
    try:
        for letter, name in (("x", "benchra"), ("y", "benchrb")):
            state = make_state_dir(base / name / "state")
            os.environ["CTL_STATE_DIR"] = str(state)
            prefix = f"{letter}{os.getpid() % 100000:05d}"
            octet = free_mgmt_octet()
            inv_path = write_test_inventory(base / f"{name}.yaml", prefix=prefix, mgmt_octet=octet,
                                            influx_port=18000 + octet, name=name)
            inv = load_inventory(inv_path)
            lab_up_cli(inv)
            (base / name / "runs").mkdir()
            env = {k: v for k, v in os.environ.items() if k != "CTL_INFLUX_TOKEN"}
            env.update(CTL_STATE_DIR=str(state), CTL_INVENTORY=str(inv_path), CTL_RUNS_DIR=str(base / name / "runs"),
                       CTL_LOCK_DIR=str(base / "locks"), PYTHONUNBUFFERED="1")
            racks.append(({"env": env, "path": inv_path}, inv))
        walls = {}
        for n in (2, 1):
            url = server.fresh_database()
            f = base / f"bench-{n}.yaml"
            f.write_text(CAMPAIGN.format(n=n, racks=", ".join(str(r[0]["path"]) for r in racks[:n])))
            env0 = dict(racks[0][0]["env"], CTL_DATABASE_URL=url)
            t0 = time.monotonic()
            p = subprocess.run([sys.executable, "-m", "controller", "campaign", "submit", str(f)], cwd=PROJECT,
                               env=env0, capture_output=True, text=True)
            if p.returncode != 0:
                raise SystemExit(p.stderr)
            daemons = [subprocess.Popen([sys.executable, "-m", "controller", "campaign", "daemon", "--exit-when-idle",
                                         "--quiet"], cwd=PROJECT, env=dict(r[0]["env"], CTL_DATABASE_URL=url),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for r in racks[:n]]
            for d in daemons:
                d.wait(1800)
            walls[n] = time.monotonic() - t0
            print(f"12-run campaign on {n} rack{'s' if n > 1 else ''}: {walls[n]:.1f} s wall-clock", flush=True)
        print(f"two racks / one rack: {walls[2] / walls[1]:.2f} (0.50 would be a perfect split of the 12 runs; here "
              "both racks share one machine's cores, and each daemon starts, settles and health-checks on its own: "
              "which of these makes the difference is not measured here)")
    finally:
        for _r, inv in racks:
            lab_down(inv)
            shutil.rmtree(inv.virtual.runtime_dir, ignore_errors=True)     # keys, lease files
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=400, help="zero-length runs per queue round")
    ap.add_argument("--no-racks", action="store_true", help="only the queue benchmark")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root (PostgreSQL runs as the postgres account; racks need namespaces)")
    print(f"machine: {platform.node()}, {os.cpu_count()} cores, kernel {platform.release()}")
    queue_bench(args.runs)
    if not args.no_racks:
        racks_bench()


if __name__ == "__main__":
    main()
