"""Jain's index of a distinct-bottleneck run over other entities than ctl's three flows (pure): the
analysis of the hypothesis `mcubic-t1-jain-entities` (controller.reproduce.hypotheses).

The MCubic paper's eq. 12 is Jain's index over "n개의 개체" (n entities) without saying which; ctl's
summary computes it over the three flows (the MPTCP connection, the TCP flow on link 1, the TCP flow
on link 2). A run's summary also holds, per link, the MPTCP subflow's rate on it (the growth of its
bytes_acked at the sender, `ss` at 10 Hz) and the TCP flow's (iperf3 receiver goodput): from those,
the index over
    link 1      {the MPTCP subflow on link 1, the TCP flow on link 1}   (one bottleneck's users)
    link 2      {the MPTCP subflow on link 2, the TCP flow on link 2}
    four        {both subflows, both TCP flows}                          (every flow and subflow)
The two rates of a link come from two definitions (sender acked bytes, receiver goodput), as the
record has them; no run record keeps a subflow's receiver goodput.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from controller.results.stats import mean_ci

ENTITY_SETS: dict[str, str] = {
    "jain_index": "the three flows: the MPTCP connection and the two TCP flows (ctl's summary, receiver goodput)",
    "jain_link1": "link 1's two users: the MPTCP subflow on it and the TCP flow on it",
    "jain_link2": "link 2's two users: the MPTCP subflow on it and the TCP flow on it",
    "jain_four": "the four flows and subflows: both MPTCP subflows and both TCP flows",
}


def jain(xs: Sequence[float]) -> float | None:
    """(sum x)^2 / (n sum x^2); None for no values or all zero (no throughput, no fairness to speak of)."""
    vals = [float(x) for x in xs]
    sq = sum(x * x for x in vals)
    if not vals or sq <= 0 or any(x < 0 for x in vals):
        return None
    return round(sum(vals) ** 2 / (len(vals) * sq), 4)


def link_rates(summary: Mapping[str, Any]) -> list[tuple[float, float]] | None:
    """[(subflow Mbit/s, TCP Mbit/s) of link 1, (...) of link 2] from a distinct-bottleneck summary's
    `links` (in the order the summary lists them: path 1, path 2); None when a rate is missing."""
    links = summary.get("links")
    if not isinstance(links, Mapping) or len(links) != 2:
        return None
    out = []
    for v in links.values():
        if not isinstance(v, Mapping):
            return None
        sub, tcp = v.get("mptcp_subflow_mbps"), v.get("tcp_mbps")
        if sub is None or tcp is None:
            return None
        out.append((float(sub), float(tcp)))
    return out


def _over(pick: Callable[[list[tuple[float, float]]], list[float]]) -> Callable[[Mapping[str, Any]], float | None]:
    def value(summary: Mapping[str, Any]) -> float | None:
        rates = link_rates(summary)
        return jain(pick(rates)) if rates is not None else None
    return value


jain_link1 = _over(lambda r: list(r[0]))
jain_link2 = _over(lambda r: list(r[1]))
jain_four = _over(lambda r: [r[0][0], r[0][1], r[1][0], r[1][1]])

# The metrics a Table 1 deviation run is read as besides ctl's own `jain_index` (name -> value).
ENTITY_METRICS: dict[str, Callable[[Mapping[str, Any]], float | None]] = {
    "jain_link1": jain_link1, "jain_link2": jain_link2, "jain_four": jain_four}


def all_indices(summary: Mapping[str, Any]) -> dict[str, float | None]:
    """Every entity set's index of one run (ctl's own from the summary)."""
    return {"jain_index": summary.get("jain_index"), **{k: f(summary) for k, f in ENTITY_METRICS.items()}}


# ---- the Table 1 runs of bench/cc_tables.py (a JSON of runs with per-path rates) ------------------

def cc_tables_summary(run: Mapping[str, Any]) -> dict[str, Any] | None:
    """A bench/cc_tables.py Table 1 run (`paths`: the MPTCP subflow per path, `tcp`: the TCP flow
    per path, Mbit/s; `value`: ctl's index) as the part of a summary the analysis reads."""
    paths, tcp = run.get("paths") or {}, run.get("tcp") or {}
    if run.get("table") != "1" or not run.get("ok"):
        return None
    return {"jain_index": run.get("value"),
            "links": {p: {"mptcp_subflow_mbps": paths.get(p), "tcp_mbps": tcp.get(p)} for p in ("path1", "path2")}}


def table(rows: Mapping[str, Sequence[Mapping[str, float | None]]]) -> list[str]:
    """Markdown: per algorithm, each entity set's mean ± 95 % CI half-width (Student's t over the runs)."""
    out = ["| algorithm | n | " + " | ".join(ENTITY_SETS) + " |", "|---|---|" + "---|" * len(ENTITY_SETS)]
    for cc, runs in rows.items():
        cells = []
        for k in ENTITY_SETS:
            st = mean_ci([r[k] for r in runs if r.get(k) is not None])
            if st.mean is None:
                cells.append("-")
            elif st.ci95 is None:
                cells.append(f"{st.mean:.3f} (n=1, no CI)")
            else:
                cells.append(f"{st.mean:.3f} ± {st.ci95:.3f}")
        out.append(f"| {cc} | {len(runs)} | " + " | ".join(cells) + " |")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Jain's index of Table 1 runs over other entities (stdout: Markdown).")
    ap.add_argument("runs", help="a bench/cc_tables.py JSON (bench/results/cc_tables-*.json)")
    a = ap.parse_args(argv)
    data = json.loads(Path(a.runs).read_text())
    rows: dict[str, list[dict[str, float | None]]] = {}
    for run in data.get("runs") or []:
        s = cc_tables_summary(run)
        if s is not None:
            rows.setdefault(str(run.get("cc")), []).append(all_indices(s))
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
