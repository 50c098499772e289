#!/usr/bin/env python3
"""SNMP poll round time for 1, 10 and 50 real net-snmp agents (a benchmark, not a test).

Each agent is its own `snmpd` process on a distinct loopback address 127.66.Y.N (Linux
answers all of 127/8 on lo) with a generated config (controller.lab.snmpd_conf) and
its own persistent dir; one SnmpPoller polls all of them concurrently. A "round" is one
SnmpPoller.poll_once(): per agent one GET of sysUpTime + the 8 IF-MIB columns of the polled
interface(s) + canaries, all agents in parallel. Printed: median / p95 / max per agent count
and SNMP version, with the machine's figures. Every agent is stopped by the PID we started,
even on Ctrl-C.

    sudo .venv/bin/python bench/snmp_bench.py                 # 1, 10, 50 agents, v2c and v3
    .venv/bin/python bench/snmp_bench.py --agents 1,10 --rounds 50 --version 2c
"""
from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from controller.inventory import SNMP, SecretRef  # noqa: E402
from controller.telemetry.snmp.counters import Event, Point
from controller.telemetry.snmp.poller import AgentConfig, SnmpPoller, poll_round_time
from tests.support.snmpd import SNMPD, Snmpd, SnmpCreds, have_snmpd, loopback_agents, stop_all  # noqa: E402

ENV = "CTL_SNB_BENCH"


def machine() -> dict[str, str]:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        snmpd_v = subprocess.run([SNMPD, "-v"], capture_output=True, text=True, timeout=5).stdout
        snmpd_v = next((ln.split(":", 1)[1].strip() for ln in snmpd_v.splitlines() if "version" in ln.lower()), "?")
    except (OSError, subprocess.SubprocessError):
        snmpd_v = "?"
    try:
        from importlib.metadata import version
        pysnmp_v = version("pysnmp")
    except Exception:
        pysnmp_v = "?"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return {"cpu": model, "cores": str(os.cpu_count()), "kernel": platform.release(),
            "python": platform.python_version(), "pysnmp": pysnmp_v, "net-snmp": snmpd_v,
            "loadavg": f"{load} (at start; other work on the machine skews the figures)"}


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    k = max(0, min(len(s) - 1, round(p / 100 * (len(s) - 1))))
    return s[k]


def configs(agents: list[Snmpd], creds: SnmpCreds, version: str, timeout: float) -> list[AgentConfig]:
    out = []
    for i, a in enumerate(agents):
        if version == "3":
            snmp = SNMP(version="3", port=a.port, user=creds.user, auth_protocol=creds.auth_protocol,
                        auth_key=SecretRef(env=f"{ENV}_AUTH"), priv_protocol=creds.priv_protocol,
                        priv_key=SecretRef(env=f"{ENV}_PRIV"), timeout=timeout, retries=1, interfaces=["lo"])
        else:
            snmp = SNMP(version="2c", port=a.port, community=SecretRef(env=f"{ENV}_COMMUNITY"),
                        timeout=timeout, retries=1, interfaces=["lo"])
        out.append(AgentConfig(f"bench{i}", a.address, snmp))
    return out


async def measure(cfgs: list[AgentConfig], rounds: int, pause: float) -> dict[str, float]:
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    async with SnmpPoller(cfgs) as poller:
        start_s = loop.time() - t0
        await poller.poll_once()                      # warm-up (first GETs, v3 engine discovery)
        times = await poll_round_time(poller, rounds=rounds, pause_s=pause)
        last = await poller.poll_once()
    bad = [o for o in last if isinstance(o, Event) and o.kind in ("agent_unreachable", "agent_error")]
    ok = {o.tags["host"] for o in last if isinstance(o, Point)}
    return {"start_s": start_s, "median": statistics.median(times), "p95": pct(times, 95), "max": max(times),
            "agents_ok": len(ok), "errors": len(bad)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", default="1,10,50", help="comma-separated agent counts (default 1,10,50)")
    ap.add_argument("--rounds", type=int, default=30, help="measured rounds per case (default 30)")
    ap.add_argument("--pause", type=float, default=0.1, help="seconds between rounds (default 0.1)")
    ap.add_argument("--version", choices=["2c", "3", "both"], default="both")
    ap.add_argument("--timeout", type=float, default=2.0, help="per-agent SNMP timeout (s)")
    args = ap.parse_args()
    if not have_snmpd():
        print("snmpd not installed (apt-get install snmpd)", file=sys.stderr)
        return 2
    counts = [int(x) for x in args.agents.split(",") if x.strip()]
    versions = ["2c", "3"] if args.version == "both" else [args.version]
    creds = SnmpCreds.random()
    os.environ.update(creds.env(ENV))

    info = machine()
    print("SNMP poll round time (SnmpPoller.poll_once over N snmpd agents on 127.66.Y.N, 1 interface each)")
    for k, v in info.items():
        print(f"  {k:9s} {v}")
    print(f"  rounds    {args.rounds} per case, {args.pause:g} s apart, after one warm-up round")
    print()
    print(f"{'agents':>6} {'ver':>3} {'start s':>8} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'ok':>4} {'errors':>6}")

    rc = 0
    with tempfile.TemporaryDirectory(prefix="snb-") as tmp:
        for n in counts:
            base = f"127.66.{random.randint(0, 250)}.0"
            agents = loopback_agents(Path(tmp) / f"n{n}", n, creds, base=base, name=f"snb{n}-")
            try:
                # start in parallel (each start waits until its agent answers)
                with ThreadPoolExecutor(max_workers=8) as pool:
                    list(pool.map(lambda a: a.start(15.0), agents))
                for ver in versions:
                    r = asyncio.run(measure(configs(agents, creds, ver, args.timeout), args.rounds, args.pause))
                    print(f"{n:>6} {ver:>3} {r['start_s']:>8.2f} {r['median'] * 1e3:>10.1f} {r['p95'] * 1e3:>8.1f} "
                          f"{r['max'] * 1e3:>8.1f} {r['agents_ok']:>4} {r['errors']:>6}", flush=True)
                    if r["agents_ok"] != n:
                        rc = 1
            finally:
                stop_all(agents)
    return rc


if __name__ == "__main__":
    t = time.monotonic()
    code = main()
    print(f"\n(total {time.monotonic() - t:.0f} s)")
    sys.exit(code)
