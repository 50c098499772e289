"""controller.reproduce.entities: Jain's index of a distinct-bottleneck run over other entities than
ctl's three flows (the analysis of the hypothesis mcubic-t1-jain-entities), by hand and on the
recorded summary of a real run.

Contract (module doc): link 1 = {the MPTCP subflow on link 1, the TCP flow on link 1}, link 2
likewise, four = both subflows and both TCP flows, from the summary's `links` in its order (path 1,
path 2); a missing rate gives no value (never a made-up 0); all-zero rates give none.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.reproduce import entities as ent
from controller.reproduce.cells import build_cells
from controller.reproduce.hypotheses import EXPERIMENTS
from controller.reproduce.measure import extract_deviation

RECORDED = Path(__file__).parent / "data" / "distinct-bottleneck-delay-100ms.summary.json"


def _summary(sub1, tcp1, sub2, tcp2, jain=0.5):
    return {"jain_index": jain, "links": {
        "path1": {"mptcp_subflow_mbps": sub1, "tcp_mbps": tcp1},
        "path2": {"mptcp_subflow_mbps": sub2, "tcp_mbps": tcp2}}}


def test_jain_by_hand():
    assert ent.jain([10, 10]) == 1.0
    assert ent.jain([30, 10]) == pytest.approx(40 ** 2 / (2 * (900 + 100)), abs=1e-4)     # 0.8
    assert ent.jain([1, 0, 0, 0]) == 0.25                                                # one user has it all
    assert ent.jain([]) is None and ent.jain([0, 0]) is None


def test_each_entity_set_by_hand():
    # the 2026-11-24 mcubic run at link 2 = 20 Mbit/s (bench/results/cc_tables-2026-11-24.json, rep 0)
    s = _summary(9.061, 86.398, 2.626, 16.447, jain=0.5553)
    assert ent.jain_link1(s) == pytest.approx((9.061 + 86.398) ** 2 / (2 * (9.061 ** 2 + 86.398 ** 2)), abs=1e-4)
    assert ent.jain_link2(s) == pytest.approx((2.626 + 16.447) ** 2 / (2 * (2.626 ** 2 + 16.447 ** 2)), abs=1e-4)
    four = [9.061, 86.398, 2.626, 16.447]
    assert ent.jain_four(s) == pytest.approx(sum(four) ** 2 / (4 * sum(x * x for x in four)), abs=1e-4)
    assert ent.all_indices(s)["jain_index"] == 0.5553


@pytest.mark.parametrize("links", [
    None, {}, {"path1": {"mptcp_subflow_mbps": 1.0, "tcp_mbps": 2.0}},
    {"path1": {"mptcp_subflow_mbps": 1.0, "tcp_mbps": None}, "path2": {"mptcp_subflow_mbps": 1.0, "tcp_mbps": 2.0}},
    {"path1": "x", "path2": {"mptcp_subflow_mbps": 1.0, "tcp_mbps": 2.0}},
])
def test_a_missing_rate_gives_no_value(links):
    s = {"links": links} if links is not None else {}
    assert all(f(s) is None for f in ent.ENTITY_METRICS.values())


def test_a_recorded_run_has_what_the_analysis_needs():
    """The summary of a real distinct-bottleneck run (the virtual rack, 2026-11-26, link 2 = 20 Mbit/s,
    --delay 100ms, 10 s; kept as ctl wrote it) holds each link's subflow and TCP rates."""
    s = json.loads(RECORDED.read_text())
    rates = ent.link_rates(s)
    assert rates == [(24.056, 33.198), (3.946, 12.171)]
    vals = ent.all_indices(s)
    assert vals["jain_index"] == 0.882
    assert vals["jain_link1"] == ent.jain([24.056, 33.198]) and vals["jain_link2"] == ent.jain([3.946, 12.171])
    assert all(v is not None and 0.25 <= v <= 1.0 for v in vals.values()), vals


def test_a_table1_deviation_run_fills_a_cell_per_entity_set():
    e = EXPERIMENTS["dev-mcubic-t1"]
    acc: dict = {}
    s = _summary(9.061, 86.398, 2.626, 16.447, jain=0.5553)
    extract_deviation(acc, e, {"cc": "mcubic", "delay": "0", "queue": "50"}, s, "run-a")
    cells = build_cells(acc)
    got = {c.metric: c for c in cells}
    assert set(got) == {"jain_index", "jain_link1", "jain_link2", "jain_four"}
    assert {(c.row, c.column) for c in cells} == {("mcubic", "delay 0, queue 50")}
    assert got["jain_index"].values == (0.5553,)
    assert got["jain_four"].values == (ent.jain_four(s),)
    assert all(c.facts["run"] == ["run-a"] for c in cells)


def test_cc_tables_runs_read_as_summaries():
    run = {"table": "1", "cc": "lia", "ok": True, "value": 0.66, "paths": {"path1": 19.4, "path2": 3.8},
           "tcp": {"path1": 75.8, "path2": 15.3}}
    s = ent.cc_tables_summary(run)
    assert s is not None and ent.link_rates(s) == [(19.4, 75.8), (3.8, 15.3)]
    assert ent.cc_tables_summary({**run, "table": "2"}) is None
    assert ent.cc_tables_summary({**run, "ok": False}) is None
    md = ent.table({"lia": [ent.all_indices(s)] * 2})
    assert md[0].startswith("| algorithm | n | jain_index | jain_link1 | jain_link2 | jain_four |")
    assert md[2].startswith("| lia | 2 | 0.660 ± 0.000 |")
    assert ent.table({"lia": [ent.all_indices(s)]})[2].startswith("| lia | 1 | 0.660 (n=1, no CI) |")
