"""A run cut short is summarized over what ended, marked partial with its counts: the
mptcp-bittorrent downloads and iperf3 tests of recorded runs (tests/fixtures/generated/runs)
with the later ones cut off as a SIGTERM cuts them; concurrent flows get only the generic part."""
from __future__ import annotations

import dataclasses
import json

import pytest

from controller import scenarios
from controller.run.partial import partial_counts, partial_line, partial_summary
from controller.run.replay import load_run
from tests.support.shipped import RECORDED_RUNS, no_state_dir


@pytest.fixture()
def bt_local():
    with no_state_dir():
        yield load_run(RECORDED_RUNS / "mptcp-bittorrent" / "bittorrent-local")


def _cut_after(data, n: int):
    """The run as a SIGTERM during download n+1 leaves it: the first n ended, the rest did not."""
    for k, d in enumerate(data.flows):
        if k < n:
            d.ended_at = d.exited
        else:
            d.ended_at = None
    return data


def test_bittorrent_step_cut_after_one_download_summarizes_that_download(bt_local, tmp_path):
    sc = scenarios.get("mptcp-bittorrent")
    data = _cut_after(bt_local, 1)
    assert [d.name for d in data.flows] == ["tcp-1", "mptcp-1"]
    with no_state_dir():
        s, figs = partial_summary(sc, data, "aborted", "interrupted by SIGTERM", tmp_path, unit="BitTorrent downloads")
    p = s["partial_run"]
    assert s["partial"] is True and s["status"] == "aborted"
    assert (p["planned"], p["ended"], p["completed"], p["summarized"]) == (2, 1, 1, "scenario")
    assert p["completed_names"] == ["tcp-1"] and p["not_ended"] == ["mptcp-1"] and p["units_valid"] is True
    # the scenario's own summary of the one download that ended ...
    assert [d["name"] for d in s["downloads"]] == ["tcp-1"] and s["downloads"][0]["complete"]
    assert s["protocols"]["tcp"]["complete"] == 1 and s["protocols"]["mptcp"]["downloads"] == 0
    # ... never a valid result of the planned run
    assert s["valid"] is False
    assert s["invalid_reasons"][0] == "partial run (aborted: interrupted by SIGTERM): 1 of 2 BitTorrent downloads completed"
    assert figs == ["bittorrent.png"] and (tmp_path / "bittorrent.png").stat().st_size > 1000
    assert partial_line(s) == ("PARTIAL (aborted: interrupted by SIGTERM): 1 of 2 BitTorrent downloads completed "
                               "and are summarized above")
    json.dumps(s)                                   # it goes to summary.json as is
    rendered = sc.render(s)
    assert "tcp-1" in rendered and "RESULT INVALID: partial run" in rendered


def test_iperf3_step_cut_after_three_tests(tmp_path):
    sc = scenarios.get("mptcp-bittorrent")
    with no_state_dir():
        data = load_run(RECORDED_RUNS / "mptcp-bittorrent" / "iperf3")
        full = sc.summarize(data)
        for r in data.flows[3:]:
            r.client_status = None               # still running when the signal came
        s, _ = partial_summary(sc, data, "aborted", "interrupted by SIGINT", None, unit="iperf3 tests")
    assert s["partial_run"]["completed"] == 3 and s["partial_run"]["planned"] == len(data.flows) == 6
    assert [t["name"] for t in s["tests"]] == [t["name"] for t in full["tests"][:3]]
    # the numbers of the tests that ended are the ones the full summary had for them
    assert [t["receiver_mbps"] for t in s["tests"]] == [t["receiver_mbps"] for t in full["tests"][:3]]


def test_concurrent_flows_get_the_generic_part_only():
    sc = scenarios.get("shared-bottleneck")
    with no_state_dir():
        data = load_run(RECORDED_RUNS / "shared-bottleneck" / "delay-800ms")
        for r in data.flows:
            r.client_status = None
        s, figs = partial_summary(sc, data, "aborted", "lost a host: b1", None)
    assert sc.summarize_partial is None and figs == []
    assert s["partial_run"]["summarized"] == "generic" and s["partial_run"]["completed"] == 0
    assert s["partial_run"]["traffic_s"] > 0 and set(s["links"]) >= {"sbd1", "sbd2", "sbn"}
    assert s["links"]["sbn"]["forward_mbps"] > 1
    assert "mptcp_over_tcp" not in s and "flows" not in s
    assert partial_line(s).startswith("PARTIAL (aborted: lost a host: b1): 0 of 2 flows completed; concurrent")


def test_a_scenario_summary_that_fails_on_partial_data_is_reported_not_raised(bt_local):
    sc = dataclasses.replace(scenarios.get("mptcp-bittorrent"), summarize_partial=lambda d: 1 / 0)
    with no_state_dir():
        s, _ = partial_summary(sc, _cut_after(bt_local, 1), "failed", "x", None)
    assert s["partial_run"]["summary_error"] == "ZeroDivisionError: division by zero"
    assert s["partial_run"]["summarized"] == "generic"


def test_counts():
    class R:
        def __init__(self, name, ended, error=None):
            self.name, self.ended, self.error = name, ended, error
    c = partial_counts([R("a", True), R("b", True, "boom"), R("c", False)])
    assert (c["planned"], c["ended"], c["completed"], c["not_ended"]) == (3, 2, 1, ["c"])
