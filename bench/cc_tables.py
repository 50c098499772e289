#!/usr/bin/env python3
"""Benchmark: the MCubic paper's Tables 1-3 measured on the virtual rack for every congestion
control ctl can run (its five BPF programs and the kernel's Cubic), next to the paper's values,
with 95 % confidence intervals over repetitions and the rack time it took.

Also the two pieces of evidence issue 13 asks for, read off the same runs:
- "do no harm" (RFC 6356): Table 2 at 100 ms is one MPTCP connection (two subflows) and one
  TCP flow through one shared 100 Mbit/s bottleneck; a coupled algorithm should take about the
  TCP flow's rate (ratio near 1, at most ~1.2), uncoupled Cubic clearly more;
- resource pooling: Table 1 is two distinct bottlenecks (link 1 100 Mbit/s, link 2 slower),
  each shared with one TCP flow; the per-path subflow rates show where each algorithm sends.

Every cell is `ctl run` on the rack given (default: the shipped virtual rack), in a random order
of (cell, repetition) drawn from --seed, so drift of the machine over the benchmark does not
line up with one algorithm. Figures are printed (Markdown) and written as JSON; nothing is
asserted. The paper gives neither run length nor repetitions: --duration and --reps are ours
and printed with the table. On this machine (2 cores shared with whatever else runs), rates are
those of the dnpipe forwarder, which the table's shaper-lateness column lets you judge.

Usage (root, after scripts/setup.sh):
    .venv/bin/python bench/cc_tables.py [--reps 3] [--duration 40s] [--tables 1,2,3,2r]
                                        [--cc lia,olia,balia,wvegas,mcubic,cubic] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from controller.reproduce.papers import TABLE1, row_label  # noqa: E402
from controller.results.stats import mean_ci  # noqa: E402
from controller.scenarios.shared_bottleneck import TABLE2, TABLE3  # noqa: E402

# table -> (scenario, fixed parameters, the column's parameters, the metric, the paper's table)
TABLES = {
    "1": ("distinct-bottleneck", ["--link1", "100M", "--tcp-cc", "cubic"], "--link2", "20M", "jain_index", TABLE1,
          "20M"),
    "2": ("shared-bottleneck", ["--tcp-cc", "cubic"], "--delay", "100ms", "ratio", TABLE2, "100ms"),
    "3": ("shared-bottleneck", ["--tcp-cc", "cubic", "--delay1", "100ms"], "--delay2", "300ms", "ratio", TABLE3,
          "100:300ms"),
    # "Do no harm" as RFC 6356 states it: against a regular (Reno) TCP flow on the shared
    # bottleneck, a coupled connection should take about that flow's rate; two uncoupled Reno
    # subflows take about twice it. Not a table of the paper (its single-path flow is TCP Cubic,
    # sections 4.2.1 and 4.2.2: controller/reproduce/hypotheses.py quotes them): no paper column.
    "2r": ("shared-bottleneck", ["--tcp-cc", "reno"], "--delay", "100ms", "ratio", {"columns": [], "rows": {}},
           None),
}
# The algorithms of the do-no-harm check: the three whose design goal it is, and uncoupled Reno.
DO_NO_HARM = ["lia", "olia", "balia", "reno"]


def one_run(ctl: list[str], table: str, cc: str, duration: str) -> dict:
    scenario, fixed, key, value, metric, _paper, _col = TABLES[table]
    argv = [*ctl, "run", scenario, *fixed, key, value, "--cc", cc, "--duration", duration, "--json", "--quiet"]
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    took = time.monotonic() - t0
    try:
        out = json.loads(p.stdout)["data"]
    except ValueError:
        return {"table": table, "cc": cc, "ok": False, "error": (p.stderr or p.stdout).strip()[-300:], "took_s": took}
    s = out.get("summary") or {}
    row = {"table": table, "cc": cc, "ok": out.get("status") == "completed" and bool(s.get("valid")),
           "status": out.get("status"), "error": out.get("error"), "record": out.get("record"), "took_s": took,
           "value": s.get(metric)}
    if table == "1":
        row["paths"] = {l: v.get("mptcp_subflow_mbps") for l, v in (s.get("links") or {}).items()}
        row["tcp"] = {l: v.get("tcp_mbps") for l, v in (s.get("links") or {}).items()}
    if table in ("2", "3"):
        row["mptcp_mbps"], row["tcp_mbps"] = s.get("mptcp_mbps"), s.get("tcp_mbps")
    return row


def fmt(st) -> str:
    if st.mean is None:
        return "-"
    return f"{st.mean:.3f} ± {st.ci95:.3f}" if st.ci95 is not None else f"{st.mean:.3f} (n = 1)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", default="40s")
    ap.add_argument("--tables", default="1,2,3,2r")
    ap.add_argument("--cc", default="lia,olia,balia,wvegas,mcubic,cubic")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--inventory", default=str(PROJECT / "inventory" / "virtual.yaml"))
    ap.add_argument("--out", default="cc_tables.json")
    a = ap.parse_args()
    ctl = [sys.executable, "-m", "controller"]
    os.environ.setdefault("CTL_INVENTORY", a.inventory)
    tables = [t.strip() for t in a.tables.split(",") if t.strip()]
    ccs = [c.strip() for c in a.cc.split(",") if c.strip()]
    per_table = {t: (DO_NO_HARM if t == "2r" else ccs) for t in tables}
    order = [(t, c, r) for t in tables for c in per_table[t] for r in range(a.reps)]
    random.Random(a.seed).shuffle(order)
    t0 = time.monotonic()
    rows = []
    for i, (t, c, r) in enumerate(order, 1):
        row = one_run(ctl, t, c, a.duration)
        row["rep"] = r
        rows.append(row)
        print(f"[{i}/{len(order)}] table {t} {c} rep {r}: "
              + (f"{row['value']}" if row["ok"] else f"FAILED {row.get('status')}: {row.get('error')}"),
              file=sys.stderr, flush=True)
    wall = time.monotonic() - t0
    Path(a.out).write_text(json.dumps({"args": vars(a), "wall_s": wall, "runs": rows}, indent=1))
    print(f"\n# MCubic Tables 1-3 on this rack: {a.reps} repetitions of {a.duration} per cell, "
          f"{len(order)} runs, {wall / 60:.1f} min of rack time\n")
    for t in tables:
        scenario, _f, key, value, metric, paper, col = TABLES[t]
        print(f"## Table {t}: {metric} at {key.lstrip('-')} = {value} ({scenario})\n")
        head = "| algorithm | paper | measured (mean ± 95 % CI) | n |"
        extra = " link1 / link2 MPTCP subflow Mbit/s | link1 / link2 TCP Mbit/s |" if t == "1" else ""
        print(head + extra)
        print("|" + "---|" * (4 + (2 if t == "1" else 0)))
        for c in per_table[t]:
            got = [r for r in rows if r["table"] == t and r["cc"] == c and r["ok"]]
            st = mean_ci([r["value"] for r in got if r["value"] is not None])
            label = row_label(c)
            p = paper["rows"][label][paper["columns"].index(col)] if label in paper["rows"] else None
            line = f"| {c} | {p if p is not None else '-'} | {fmt(st)} | {st.n} |"
            if t == "1":
                def path(k: str, i: int) -> str:
                    vals = [list(r[k].values())[i] for r in got if r.get(k) and len(r[k]) == 2]
                    s = mean_ci([v for v in vals if v is not None])
                    return f"{s.mean:.1f}" if s.mean is not None else "-"
                line += f" {path('paths', 0)} / {path('paths', 1)} | {path('tcp', 0)} / {path('tcp', 1)} |"
            print(line)
        failed = [r for r in rows if r["table"] == t and not r["ok"]]
        if failed:
            print(f"\n{len(failed)} runs not counted: " + "; ".join(f"{r['cc']}: {r.get('status')} {r.get('error')}"
                                                                  for r in failed[:5]))
        print()


if __name__ == "__main__":
    main()
