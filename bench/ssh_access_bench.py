#!/usr/bin/env python3
"""Benchmark: what reaching a host as a lab does costs (sudo -n, a bastion) against a direct root
login, measured in the same run on one virtual rack built here (support/rack.py `access=True`:
a1 logs in as the account `ctl` with sudo -n, b2 only through the bastion, b1 directly as root).

1. Connect: a new SSH connection (handshake, shell probe, privilege check) per host kind.
2. Command: one short command (`true`) over an open connection, per host kind; what every
   command of a run pays, and what separates the start of the flows on two hosts.
3. Clock offset: the round trip of the exchange ctl's clock-offset measurement keeps (its
   uncertainty is +-rtt/2: what aligning two hosts' samples can rest on).
4. Run: ctl's control overhead of one distinct-bottleneck run (wall time minus traffic) on this
   rack against a rack reached directly as root, built alongside, alternating A B A B.

Figures are printed (median, p95; ratio against the direct login measured in the same run),
never asserted. Usage (root, after scripts/setup.sh): .venv/bin/python bench/ssh_access_bench.py
[--connects 30] [--commands 300] [--runs 3]
"""
from __future__ import annotations

import argparse
import asyncio
import json
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

from controller.commands import Command  # noqa: E402
from controller.inventory import load_inventory  # noqa: E402
from controller.results.records import load_manifest  # noqa: E402
from controller.clocksync import measure_clock_offset  # noqa: E402
from controller.ssh import CommandLog, SSHSession, targets  # noqa: E402

KINDS = (("direct root", "b1"), ("sudo -n account", "a1"), ("via bastion", "b2"))


def p95(xs: list[float]) -> float:
    return sorted(xs)[max(0, int(round(0.95 * len(xs))) - 1)]


def show(label: str, xs: list[float], base: float) -> None:
    med = statistics.median(xs)
    print(f"  {label:<16} median {med * 1000:8.2f} ms   p95 {p95(xs) * 1000:8.2f} ms   "
          f"ratio to direct {med / base:5.2f}", flush=True)


async def connects(inv, host: str, n: int) -> list[float]:
    [t] = targets(inv, [host])
    out = []
    for _ in range(n):
        s = SSHSession(t, CommandLog(None))
        t0 = time.perf_counter()
        await s.connect()
        out.append(time.perf_counter() - t0)
        await s.close()
    return out


async def commands(inv, host: str, n: int) -> list[float]:
    [t] = targets(inv, [host])
    s = SSHSession(t, CommandLog(None))
    await s.connect()
    out = []
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            r = await s.run(Command(("true",), timeout=10))
            out.append(time.perf_counter() - t0)
            if r.exit_status != 0:
                raise SystemExit(f"{host}: `true` failed: {r.stderr}")
    finally:
        await s.close()
    return out


async def clock_rtts(inv, host: str, n: int) -> list[float]:
    [t] = targets(inv, [host])
    s = SSHSession(t, CommandLog(None))
    await s.connect()
    try:
        return [(await measure_clock_offset(s)).rtt_s for _ in range(n)]
    finally:
        await s.close()


def run_overhead(env: dict[str, str]) -> float:
    p = subprocess.run([sys.executable, "-m", "controller", "run", "distinct-bottleneck", "--duration", "4s",
                        "--json", "--quiet"], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"ctl run failed ({p.returncode}): {p.stderr.strip()[-400:]}")
    m = load_manifest(Path(json.loads(p.stdout)["data"]["record"]))
    tw = m["traffic_window"]
    return (m["finished"] - m["created"]) - (tw["end"] - tw["start"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connects", type=int, default=30)
    ap.add_argument("--commands", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3, help="ctl runs per rack (0: skip the run comparison)")
    a = ap.parse_args()
    from controller.lab.ops import lab_up_cli
    from controller.lab.rack import lab_down
    from tests.support.rack import free_mgmt_octet, make_state_dir, write_test_inventory
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    base = Path(tempfile.mkdtemp(prefix="ctl-access-bench-"))
    racks = []
    try:
        for letter, name, access in (("x", "benchacc", True), ("y", "benchdir", False)):
            if not access and a.runs == 0:
                continue
            state = make_state_dir(base / name / "state")
            os.environ["CTL_STATE_DIR"] = str(state)
            octet = free_mgmt_octet()
            inv_path = write_test_inventory(base / f"{name}.yaml", prefix=f"{letter}{os.getpid() % 100000:05d}",
                                            mgmt_octet=octet, influx_port=18000 + octet, name=name, access=access)
            inv = load_inventory(inv_path)
            lab_up_cli(inv)
            (base / name / "runs").mkdir()
            env = {k: v for k, v in os.environ.items() if k != "CTL_INFLUX_TOKEN"}
            env.update(CTL_STATE_DIR=str(state), CTL_INVENTORY=str(inv_path), CTL_RUNS_DIR=str(base / name / "runs"),
                       CTL_LOCK_DIR=str(base / f"locks-{name}"), PYTHONUNBUFFERED="1")
            racks.append((inv, env))
        inv = racks[0][0]
        os.environ["CTL_STATE_DIR"] = racks[0][1]["CTL_STATE_DIR"]
        print(f"1. connect (new connection, shell probe, privilege check), {a.connects} each, interleaved:")
        got: dict[str, list[float]] = {k: [] for k, _h in KINDS}
        for _ in range(a.connects):
            for label, host in KINDS:
                got[label] += asyncio.run(connects(inv, host, 1))
        for label, _h in KINDS:
            show(label, got[label], statistics.median(got["direct root"]))
        print(f"2. one command (`true`) over an open connection, {a.commands} each:")
        cmd = {label: asyncio.run(commands(inv, host, a.commands)) for label, host in KINDS}
        for label, _h in KINDS:
            show(label, cmd[label], statistics.median(cmd["direct root"]))
        print("3. clock offset: round trip of the best of 9 echo exchanges (the offset is known to +-rtt/2), "
              "10 measurements each:")
        rtt = {label: asyncio.run(clock_rtts(inv, host, 10)) for label, host in KINDS}
        for label, _h in KINDS:
            show(label, rtt[label], statistics.median(rtt["direct root"]))
        if a.runs:
            print(f"4. control overhead of one run (wall minus traffic), {a.runs} per rack, alternating:")
            over: dict[str, list[float]] = {"direct": [], "access": []}
            for _ in range(a.runs):
                over["access"].append(run_overhead(racks[0][1]))
                over["direct"].append(run_overhead(racks[1][1]))
            d, s = statistics.median(over["direct"]), statistics.median(over["access"])
            print(f"  all hosts as root, direct        median {d:6.2f} s  (min {min(over['direct']):.2f}, "
                  f"max {max(over['direct']):.2f})")
            print(f"  a1, br2 sudo -n; b2 via bastion  median {s:6.2f} s  (min {min(over['access']):.2f}, "
                  f"max {max(over['access']):.2f})   ratio {s / d:.2f}")
    finally:
        for inv, env in racks:
            os.environ["CTL_STATE_DIR"] = env["CTL_STATE_DIR"]
            lab_down(inv)
            shutil.rmtree(inv.virtual.runtime_dir, ignore_errors=True)     # keys, account files
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
