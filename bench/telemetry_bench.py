#!/usr/bin/env python3
"""Benchmark: the telemetry path, on the virtual rack (real sshd, real InfluxDB).

1. Points per second into InfluxDB, sustained: N points shaped like a run's (iface/subflow
   samples with run/scenario/host tags) are appended to a spool and drained by the
   writer ctl uses (spool -> line protocol -> influxdb-client, batches of 5000, offsets
   acknowledged). Baseline in the same run: influxdb-client's own batching WriteApi fed the
   same points directly (no spool, no exactly-once bookkeeping).
2. Sampler CPU per host at 10 Hz: ctl's long-lived sampler (nodes/agent/sampler.py) on a rack
   host for T seconds, reading /proc/net/dev and running `ss -tinH` each tick, CPU from
   /proc/PID/stat (host side) and the controller's own CPU. Baseline in the same run: the
   same readings with one SSH exec per sample (`cat /proc/net/dev` + `ss -tinH` each tick,
   over a persistent connection), as a shell-script controller would.
3. SNMP poll round time: see bench/snmp_bench.py (1, 10, 50 agents).

Usage (root, after scripts/setup.sh, rack up): .venv/bin/python bench/telemetry_bench.py [--points 200000]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from controller.commands import Command  # noqa: E402
from controller.inventory import load_inventory, resolve_inventory_path  # noqa: E402
from controller.lab.ops import ensure_lab  # noqa: E402
from controller.settings import export_state_dir  # noqa: E402
from controller.ssh import CommandLog, SSHPool  # noqa: E402
from controller.telemetry.hosts import SAMPLER_SOURCE  # noqa: E402
from controller.telemetry.points import Point, to_line  # noqa: E402
from controller.telemetry.spool import InfluxSender, InfluxTarget, Spool, push_once  # noqa: E402

CLK = os.sysconf("SC_CLK_TCK")


def synthetic_points(n: int, run: str) -> list[Point]:
    t0 = time.time_ns() - n * 1000
    out = []
    for i in range(n):
        if i % 3:
            out.append(Point("iface", {"run": run, "scenario": "bench", "host": f"h{i % 6}", "iface": f"p{i % 2}",
                                       "link": "path1", "side": "a", "role": "endpoint"},
                             {"rx_bytes": 123456789 + i, "tx_bytes": 987654321 + i, "rx_packets": i, "tx_packets": i,
                              "rx_dropped": 0, "tx_dropped": 0, "rx_bps": 9.5e7 + i, "tx_bps": 1.2e6}, t0 + i * 1000))
        else:
            out.append(Point("subflow", {"run": run, "scenario": "bench", "host": "a1", "flow": "mptcp",
                                         "subflow": f"10.1.0.11:{40000 + i % 4}-10.1.0.21:5201", "link": "path1",
                                         "role": "client"},
                             {"cwnd_pkts": 100 + i % 50, "rtt_ms": 1.5, "bytes_acked": i * 1448,
                              "acked_bps": 4.2e7, "mptcp_token": "dae409f8"}, t0 + i * 1000))
    return out


def bench_writer(target: InfluxTarget, n: int) -> tuple[float, float]:
    pts = synthetic_points(n, f"bench-spool-{time.time_ns()}")
    with tempfile.TemporaryDirectory() as d:
        run_dir = Path(d)
        sp = Spool(run_dir / "metrics.jsonl")
        t0 = time.monotonic()
        for i in range(0, n, 1000):
            sp.append(pts[i:i + 1000])
        sp.close()
        t1 = time.monotonic()
        sender = InfluxSender(target)
        sent, pending = push_once(run_dir, sender, batch_bytes=5000 * 300)
        t2 = time.monotonic()
        sender.close()
        assert sent == n and pending == 0, (sent, pending)
    ctl_rate = n / (t2 - t0)
    # baseline: influxdb-client's batching write API, straight from memory
    from influxdb_client import InfluxDBClient, WriteOptions
    pts = synthetic_points(n, f"bench-direct-{time.time_ns()}")
    client = InfluxDBClient(url=target.url, token=target.token, org=target.org, timeout=30_000)
    t3 = time.monotonic()
    lines = [to_line(p) for p in pts]  # both paths start from points: encoding is part of the work
    with client.write_api(write_options=WriteOptions(batch_size=5000, flush_interval=1000)) as w:
        w.write(bucket=target.bucket, org=target.org, record=lines, write_precision="ns")
    t4 = time.monotonic()
    client.close()
    print(f"  spool append {n / (t1 - t0):,.0f} points/s (fsync at close)")
    return ctl_rate, n / (t4 - t3)


async def bench_sampler(inv, host: str, seconds: float) -> dict:
    pool = SSHPool(inv, CommandLog(), [host])
    (await pool.connect_all()).raise_on_error()
    s = pool[host]
    ifaces = [i.name for i in inv.hosts[host].interfaces]
    cfg = {"interval": 0.1, "ifaces": ifaces, "probes": [{"name": "ss", "argv": ["ss", "-tinH"], "every": 1}]}
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    p = await s.spawn(("python3", "-u", "-c", SAMPLER_SOURCE, json.dumps(cfg)), stdin_open=True)
    n = 0
    t_end = time.monotonic() + seconds
    stat0 = None

    async def cpu_of(pid: int) -> int:
        r = await s.run(Command(("cat", f"/proc/{pid}/stat"), timeout=5))
        f = r.stdout.rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])  # utime stime cutime cstime (children: ss)

    async for line in p.lines():
        n += 1
        if stat0 is None and n == 3:
            stat0, t_stat0 = await cpu_of(p.pid), time.monotonic()
        if time.monotonic() >= t_end:
            stat1, t_stat1 = await cpu_of(p.pid), time.monotonic()
            break
    p.close_stdin()
    await p.wait(5)
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    sampler = {"samples": n, "host_cpu_pct": (stat1 - stat0) / CLK / (t_stat1 - t_stat0) * 100,
               "controller_cpu_pct": ((ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)) / seconds * 100}
    # baseline: one SSH exec per sample (two reads per tick), as fast as 10 Hz allows
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    k = 0
    lat = []
    while time.monotonic() - t0 < seconds:
        target = t0 + k * 0.1
        await asyncio.sleep(max(0.0, target - time.monotonic()))
        a = time.monotonic()
        await s.run(Command(("cat", "/proc/net/dev"), timeout=5))
        await s.run(Command(("ss", "-tinH"), timeout=5))
        lat.append(time.monotonic() - a)
        k += 1
    wall = time.monotonic() - t0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    await pool.close()
    baseline = {"samples": k, "achieved_hz": k / wall, "median_exec_pair_ms": statistics.median(lat) * 1000,
                "controller_cpu_pct": ((ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)) / wall * 100}
    return {"sampler": sampler, "ssh_exec_per_sample": baseline}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=200_000)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--host", default="a1")
    ap.add_argument("--inventory")
    args = ap.parse_args()
    export_state_dir()
    inv = load_inventory(resolve_inventory_path(args.inventory))
    ensure_lab(inv)
    tok = inv.influxdb.token.resolve("influxdb token")
    target = InfluxTarget(inv.influxdb.url, inv.influxdb.org, inv.influxdb.bucket, tok, timeout_s=60)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"# telemetry, {platform.node()}, {os.cpu_count()} cores ({cpu}), kernel {platform.release()}, "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"1. points into InfluxDB ({args.points:,} points)")
    ctl_rate, direct_rate = bench_writer(target, args.points)
    print(f"  ctl spool + writer (exactly once)      {ctl_rate:12,.0f} points/s")
    print(f"  baseline: influxdb-client WriteApi     {direct_rate:12,.0f} points/s")
    print(f"  ratio ctl/baseline                     {ctl_rate / direct_rate:12.2f}")
    print(f"2. sampling one host at 10 Hz for {args.seconds:g} s ({args.host}: /proc/net/dev + ss -tinH)")
    r = asyncio.run(bench_sampler(inv, args.host, args.seconds))
    s, b = r["sampler"], r["ssh_exec_per_sample"]
    print(f"  ctl sampler: {s['samples']} samples; host CPU {s['host_cpu_pct']:.1f} % of a core "
          f"(incl. ss), controller CPU {s['controller_cpu_pct']:.1f} %")
    print(f"  baseline, SSH exec per sample: {b['samples']} samples at {b['achieved_hz']:.1f} Hz "
          f"(median {b['median_exec_pair_ms']:.1f} ms per pair of execs); controller CPU "
          f"{b['controller_cpu_pct']:.1f} %")
    print(f"  ratio controller CPU sampler/baseline  {s['controller_cpu_pct'] / max(b['controller_cpu_pct'], 1e-9):.2f}")
    print("3. SNMP poll round time: bench/snmp_bench.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
