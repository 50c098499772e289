#!/usr/bin/env python3
"""Benchmark: what holding a rack costs now that a controller with the lab database takes the
host lease too (the cross-check of controller/rack/lease.py).

On one virtual rack built here (namespace prefix llhNNN) and Debian's PostgreSQL started here on
a private socket: the time to take and release a rack (`hold_rack`: the machine-wide lock, then
the leases) with the database lease alone (what ctl took before), with the database lease and
the host lease (what it takes now), and with the host lease alone (no database), interleaved,
N rounds each, medians and the ratio against the database lease alone in the same run. The
schema is created before the first round (not counted). Figures are printed, never asserted.

Usage (root, after scripts/setup.sh): .venv/bin/python bench/lease_bench.py [--rounds 20]
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from tests.support.postgres import PostgresServer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20, help="takes of the rack per way (interleaved)")
    args = ap.parse_args()
    from controller.inventory import load_inventory
    from controller.lab.ops import lab_up_cli
    from controller.lab.rack import lab_down
    from controller.rack.lease import DatabaseLease, HostLease, hold_rack
    from tests.support.rack import free_mgmt_octet, make_state_dir, write_test_inventory
    base = Path(tempfile.mkdtemp(prefix="ctl-lease-bench-"))
    server = PostgresServer().start()
    inv = None
    try:
        state = make_state_dir(base / "state")
        os.environ["CTL_STATE_DIR"] = str(state)
        os.environ["CTL_LOCK_DIR"] = str(base / "locks")
        octet = free_mgmt_octet()
        inv_path = write_test_inventory(base / "benchlease.yaml", prefix=f"llh{os.getpid() % 1000:03d}",
                                        mgmt_octet=octet, influx_port=18000 + octet, name="benchlease")
        inv = load_inventory(inv_path)
        lab_up_cli(inv)
        url = server.fresh_database()
        os.environ["CTL_DATABASE_URL"] = url
        ways = {
            "database lease only (before)": lambda: [DatabaseLease(url, inv.name, "bench")],
            "database + host lease (now)": lambda: None,               # make_leases: both
            "host lease only (no database)": lambda: [HostLease(inv, "bench")],
        }
        with hold_rack(inv, "bench warm-up"):                          # creates the schema, the rack's id
            pass
        times: dict[str, list[float]] = {k: [] for k in ways}
        for _ in range(args.rounds):
            for name, leases in ways.items():
                t0 = time.perf_counter()
                with hold_rack(inv, "bench", leases=leases()):
                    pass
                times[name].append(time.perf_counter() - t0)
        print(f"machine: {platform.node()}, {os.cpu_count()} cores, kernel {platform.release()}, "
              f"load {os.getloadavg()[0]:.1f}; {args.rounds} rounds")
        base_median = statistics.median(times["database lease only (before)"])
        for name, ts in times.items():
            m = statistics.median(ts)
            print(f"{name:32s} take + release: median {m * 1000:7.1f} ms, p90 "
                  f"{sorted(ts)[int(0.9 * (len(ts) - 1))] * 1000:7.1f} ms, ratio {m / base_median:.2f}")
    finally:
        if inv is not None:
            lab_down(inv)
            shutil.rmtree(inv.virtual.runtime_dir, ignore_errors=True)     # keys, lease files
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
