"""Recorded runs of every scenario a reproduction uses, read into the papers' table cells exactly as
their summaries state them (measure.extract, pure)."""
from __future__ import annotations

import pytest

from controller import scenarios
from controller.reproduce.cells import build_cells
from controller.reproduce.measure import extract
from tests.support.shipped import RECORDED_RUNS, summarized


def cells_of(scenario: str, run: str, key: str, varied: dict):
    _data, s = summarized(scenarios.get(scenario), RECORDED_RUNS / scenario / run)
    acc: dict = {}
    extract(acc, key, varied, s)
    return {c.key: c for c in build_cells(acc)}


def test_shared_bottleneck_fills_table_2():
    got = cells_of("shared-bottleneck", "delay-800ms", "mcubic-table2", {"cc": "cubic", "delay": "800ms"})
    (c,) = got.values()
    assert c.key == ("mcubic", "Table 2", "Cubic", "800ms", "ratio") and c.values == (1.306,)
    assert c.paper_value is None          # the paper's Table 2 has no Cubic row


def test_rtt_loss_sweep_fills_the_heatmap():
    got = cells_of("rtt-loss-sweep", "rtt-40ms_loss-0.01pct_bbr", "bbrv3", {})
    c = got[("bbrv3", "Fig. 1-2", "bbr", "RTT 40ms, loss 0.01%", "share_pct")]
    assert c.values == (91.5,) and c.facts["rtt_us"] == [40000] and c.facts["loss"] == [pytest.approx(1e-4)]
    assert got[("bbrv3", "Fig. 1-2", "bbr", "RTT 40ms, loss 0.01%", "throughput_mbps")].values == (914.968,)


def test_parallel_streams_fills_fig_8_with_model_and_paper():
    got = cells_of("parallel-streams", "sc64-sc16", "parallel", {"streams": "16"})
    x1 = got[("parallel", "Fig. 8", "x1", "SC64+SC16", "share_pct")]
    m0 = got[("parallel", "Fig. 8", "m0", "SC64+SC16", "share_pct")]
    assert (x1.values, x1.model_value, x1.paper_value) == ((80.57,), 80.0, 76.0)
    assert (m0.values, m0.model_value, m0.paper_value) == ((19.45,), 20.0, 28.0)
    assert m0.facts["setup_s"] == [0.539] and m0.facts["starved"] == [0]


def test_mptcp_bittorrent_steps():
    it = cells_of("mptcp-bittorrent", "iperf3", "mptcp-bt", {"step": "iperf3"})
    assert it[("mptcp-bt", "Fig. 2", "MPTCP", "lp1", "mbps")].values == (37.314,)
    assert it[("mptcp-bt", "Fig. 2", "TCP", "global", "mbps")].values == (3.868,)
    g = cells_of("mptcp-bittorrent", "bittorrent-global", "mptcp-bt", {"step": "bittorrent", "tracker": "global"})
    c = g[("mptcp-bt", "Fig. 3", "MPTCP", "tracker global", "mbps")]
    assert c.values == (14.06,) and c.facts["first_path"] == [["global"]]


def test_an_invalid_summary_adds_nothing():
    acc: dict = {}
    extract(acc, "mcubic-table1", {"cc": "lia", "link2": "10M"}, {"valid": False, "jain_index": 0.7})
    assert acc == {}
    extract(acc, "mcubic-table1", {"cc": "lia", "link2": "10M"}, {"valid": True, "jain_index": 0.7})
    (c,) = build_cells(acc)
    assert (c.row, c.paper_value) == ("LIA", 0.66)
