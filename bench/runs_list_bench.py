"""`ctl runs list` on a few thousand run records: ctl's catalog (the small summary.json with its
provenance, names filtered before any file is opened) against the baseline measured in the same
run, reading every record's manifest (what a list without the provenance would have to do).

    .venv/bin/python bench/runs_list_bench.py [--runs 3000]

The records are copies of the recorded shared-bottleneck run (tests/fixtures/generated/runs):
its manifest is the cut-down one (29 KB; a real run's is ~130 KB, so the baseline here is
faster than it would be on real records). Figures are printed, never asserted.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller.results.catalog import Filters, scan  # noqa: E402
from controller.results.records import summary_document  # noqa: E402

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "generated" / "runs" / "shared-bottleneck" \
    / "delay-800ms"
SCENARIOS = ("shared-bottleneck", "distinct-bottleneck", "rtt-loss-sweep", "parallel-streams", "mptcp-bittorrent",
             "x1", "x2", "x3", "x4", "x5")


def make(root: Path, n: int) -> None:
    manifest = json.loads((FIXTURE / "manifest.json").read_text())
    summary = {"scenario": "shared-bottleneck", "ratio": 1.306, "valid": True,
               "connections": [{"connection": "mptcp", "sender_mbps": 4.353}, {"connection": "tcp", "sender_mbps": 3.3}]}
    t0 = 1795321097
    for i in range(n):
        sc = SCENARIOS[i % len(SCENARIOS)]
        rid = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(t0 + 60 * i)) + f"_{sc}_seq-{i}"
        m = {**manifest, "run_id": rid, "scenario": sc, "status": "completed", "created": t0 + 60 * i,
             "finished": t0 + 60 * i + 40}
        d = root / rid
        d.mkdir()
        (d / "manifest.json").write_text(json.dumps(m, indent=1))
        (d / "summary.json").write_text(json.dumps(summary_document({**summary, "scenario": sc}, m), indent=1))


def baseline(root: Path) -> int:
    n = 0
    for d in sorted(root.iterdir()):
        m = json.loads((d / "manifest.json").read_text())
        n += m.get("status") == "completed"
    return n


def best(f, repeat: int) -> tuple[float, int]:
    times, out = [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ctl-runs-bench-") as tmp:
        root = Path(tmp)
        make(root, a.runs)
        size = statistics.mean((d / "manifest.json").stat().st_size for d in list(root.iterdir())[:20])
        t_base, n_base = best(lambda: baseline(root), a.repeat)
        t_all, n_all = best(lambda: len(list(scan(root, Filters()))), a.repeat)
        t_sc, n_sc = best(lambda: len(list(scan(root, Filters(scenario="rtt-loss-sweep")))), a.repeat)
        t_st, n_st = best(lambda: len(list(scan(root, Filters(statuses=frozenset({"failed"}))))), a.repeat)
    print(f"{a.runs} records, manifests {size / 1024:.0f} KB each; best of {a.repeat}")
    print(f"  baseline: read every manifest            {t_base * 1000:8.0f} ms  ({n_base} runs)")
    print(f"  ctl runs list (all)                      {t_all * 1000:8.0f} ms  ({n_all} runs)  ratio {t_all / t_base:.2f}")
    print(f"  ctl runs list --scenario (1 in 10)       {t_sc * 1000:8.0f} ms  ({n_sc} runs)  ratio {t_sc / t_base:.2f}")
    print(f"  ctl runs list --status failed (none)     {t_st * 1000:8.0f} ms  ({n_st} runs)  ratio {t_st / t_base:.2f}")


if __name__ == "__main__":
    main()
