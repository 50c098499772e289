"""The text tables of `ctl run` / `ctl runs show`: every column has a header, and a column of rates
says its unit (issue 25's audit: "MPTCP subflow (sender) | path | Mbit/s | bytes acked | (blank)",
and distinct-bottleneck's per-link rates had no unit).

A table is format_table's: a header line, a line of dashes (one run per column), rows. A column's
header is the header line's text over its run of dashes.
"""
from __future__ import annotations

import re

import pytest

from controller import scenarios
from tests.support.shipped import RECORDED_RUNS, summarized

RUNS = sorted(p for p in RECORDED_RUNS.glob("*/*") if (p / "manifest.json").exists())


def headers(text: str) -> list[list[str]]:
    """The column headers of every table in `text` (stripped; "" where a column has none)."""
    lines = text.splitlines()
    out = []
    for above, line in zip(lines, lines[1:]):
        if line.strip() and set(line) <= {"-", " "}:
            out.append([above[m.start():m.end()].strip() for m in re.finditer(r"-+", line)])
    return out


def test_headers_reads_format_table():
    from controller.results.summary import format_table
    text = format_table(["flow", "", "Mbit/s"], [["mptcp", "x", 1.5]], title="t")
    assert headers(text) == [["flow", "", "Mbit/s"]]


@pytest.mark.parametrize("run", RUNS, ids=[f"{p.parent.name}/{p.name}" for p in RUNS])
def test_every_column_of_a_recorded_runs_tables_has_a_header(run):
    sc = scenarios.get(run.parent.name)
    _data, s = summarized(sc, run)
    tables = headers(sc.render(s))
    assert tables and all(all(tables_cell for tables_cell in t) for t in tables), tables


def distinct_summary() -> dict:
    """distinct-bottleneck's summary, the keys its render reads (numbers of a run on the virtual rack,
    runs/20261127T075239Z_distinct-bottleneck_link2-20M; no recorded run of it is shipped)."""
    return {
        "parameters": {"link1_mbps": 100.0, "link2_mbps": 20.0, "duration_s": 10.0},
        "flows": [{"name": "mptcp", "protocol": "mptcp", "link": None, "congestion": "cubic", "receiver_mbps": 41.1,
                   "sender_mbps": 41.2, "retransmits": 148},
                  {"name": "tcp-path1", "protocol": "tcp", "link": "path1", "congestion": "cubic",
                   "receiver_mbps": 62.87, "sender_mbps": 63.03, "retransmits": 226}],
        "subflows": [{"subflow": "10.1.0.11:42707-10.1.0.21:5201", "link": "path1", "mbps": 32.15, "bytes": 40180787,
                      "initial": True},
                     {"subflow": "10.2.0.11:55159-10.2.0.21:5201", "link": "path2", "mbps": 8.954, "bytes": 11193037,
                      "initial": False}],
        "links": {"path1": {"capacity_mbps": 100.0, "mptcp_subflow_mbps": 32.15, "tcp_mbps": 62.87,
                            "flows_total_mbps": 95.01, "bridge_forward_mbps": 99.69}},
        "mptcp": {"negotiated": True, "subflows_established_per_link": {"path1": 1, "path2": 1}},
        "jain_over": ["mptcp", "tcp-path1"], "jain_index": 0.7543, "valid": True, "invalid_reasons": [],
    }


def test_distinct_bottleneck_tables_have_headers_and_units():
    tables = headers(scenarios.get("distinct-bottleneck").render(distinct_summary()))
    assert [t[0] for t in tables] == ["flow", "MPTCP subflow", "link"]
    assert all(all(t) for t in tables), tables
    assert tables[1][-1] == "kind"
    assert all(h.endswith("Mbit/s") for h in tables[2][1:]), tables[2]


def test_an_rtt_loss_sweep_row_of_bbr_says_which_bbr_it_is():
    run = RECORDED_RUNS / "rtt-loss-sweep" / "rtt-40ms_loss-0.01pct_bbr"
    sc = scenarios.get("rtt-loss-sweep")
    _data, s = summarized(sc, run)
    text = sc.render(s)
    assert "paper (Fig. 1-2): BBRv3 keeps >= 70 %" in text
    assert "BBR (kernel) is the endpoints' own kernel's BBR: upstream Linux ships BBRv1, not BBRv3" in text
    assert headers(text)[0][-1] == "at bridge Mbit/s"
    ours = sc.render({**s, "case": {**s["case"], "cc": "bbr3"}})
    assert "BBRv3 is ctl's bbr3" in ours and "BBRv1" not in ours
    assert "BBR" not in sc.render({**s, "case": {**s["case"], "cc": "cubic"}}).split("RUN_OR_DIR...")[1]
