"""Traffic that is not the run's own inside its traffic window (controller/results/foreign.py, pure).

Contract: a sender socket first sampled before the traffic began, or (where the run's data
connections are known) none of them and above iperf3's control size, whose bytes_acked grows in
the window is foreign; above the run's limit (the bytes that can move a ratio of its flows or their
Jain's index by a tenth of the smallest recorded run-to-run CV) the run is invalid with a reason
that names the host, the connection and until when; below it a warning, the run stays valid. The
limit is checked against exact ratios and Jain's indices of displaced bytes. Checked on
hand-built samples and on real records of campaign t2-delays (2026-11-27): two runs with a previous
run's LIA connection still draining (found on a rack, not made up) and a clean one.
"""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller import scenarios
from controller.results.foreign import (CONTROL_BYTES, JAIN_CV, RATIO_CV, SPREAD_FRACTION, UNSEEN, check,
                                        foreign_traffic, limit_bytes, reason, render_line)
from controller.run.replay import summarize_record
from controller.telemetry.points import Point

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "generated"
WS, WE = 1000.0, 1030.0
OWN = "10.0.0.1:40000-10.0.0.2:5201"
OLD = "10.0.0.1:39000-10.0.0.2:5201"
OTHER = "10.0.0.1:41000-10.0.0.9:22"


def sock(sub: str, times_bytes, host: str = "a1", role: str = "client", **fields) -> list[Point]:
    return [Point("subflow", {"host": host, "subflow": sub, "flow": "tcp", "role": role},
                  {"bytes_acked": b, **fields} if b is not None else dict(fields), int(t * 1e9))
            for t, b in times_bytes]


def test_a_previous_runs_connection_draining_into_the_window_is_foreign():
    pts = sock(OWN, [(WS + 0.1, 0), (WS + 29, 100_000_000)]) + sock(OLD, [(WS - 2, 5_000), (WS + 1, 6_000),
                                                                         (WS + 12, 1_006_000)])
    ft = foreign_traffic(pts, (WS, WE), {"a1": {40000}})
    assert ft["own_bytes"] == 100_000_000 and ft["bytes"] == 1_000_000
    assert ft["share_pct"] == 1.0 and ft["invalid"]
    [c] = ft["connections"]
    assert (c["host"], c["connection"], c["why"]) == ("a1", OLD, "began before the run's traffic")
    assert c["first_seen_s"] == -2.0 and c["until_s"] == 12.0
    text = reason(ft)
    assert "1.00 MB" in text and "1.00 % of the run's own" in text and "a1 " + OLD in text and "+12.0 s" in text


def test_a_connection_that_stops_before_the_window_is_not_counted():
    pts = sock(OWN, [(WS + 0.1, 0), (WS + 29, 10**8)]) + sock(OLD, [(WS - 3, 0), (WS + 1, 7), (WS + 5, 7)])
    ft = foreign_traffic(pts, (WS, WE), {"a1": {40000}})
    assert ft["bytes"] == 0 and ft["connections"] == [] and not ft["invalid"] and reason(ft) is None


def test_below_the_limit_is_a_warning_and_the_run_stays_valid():
    pts = sock(OWN, [(WS + 0.1, 0), (WS + 29, 10**8)]) + sock(OLD, [(WS - 2, 0), (WS + 1, 0), (WS + 2, 50_000)])
    data = SimpleNamespace(points=pts, window=(WS, WE), flows=[])
    s = check({"valid": True, "invalid_reasons": []}, data)
    assert s["valid"] and s["invalid_reasons"] == []
    assert s["foreign_traffic"]["share_pct"] == 0.05
    tiny = check({"valid": True, "invalid_reasons": []}, SimpleNamespace(
        points=pts[:2] + sock(OLD, [(WS - 2, 0), (WS + 1, 0), (WS + 2, 4_000)]), window=(WS, WE), flows=[]))
    assert "(0.004 % of the run's own" in tiny["foreign_traffic"]["warning"]
    assert render_line(s).startswith("WARNING: foreign traffic: 0.05 MB") and "stays valid" in render_line(s)
    assert "foreign_traffic" in s["definitions"]


def test_above_the_limit_makes_the_summary_invalid():
    # one flow of 10^8 bytes: limit 0.1 x 0.0215 x 10^8 = 215,000 bytes (0.215 %)
    pts = sock(OWN, [(WS + 0.1, 0), (WS + 29, 10**8)]) + sock(OLD, [(WS - 2, 0), (WS + 0.5, 0), (WS + 2, 300_000)])
    s = check({"valid": True, "invalid_reasons": ["x: other"]}, SimpleNamespace(points=pts, window=(WS, WE),
                                                                                 flows=[]))
    assert not s["valid"] and s["invalid_reasons"][0] == "x: other"
    assert s["foreign_traffic"]["limit_bytes"] == 215_000 and s["foreign_traffic"]["threshold_pct"] == 0.215
    assert s["invalid_reasons"][1].startswith("foreign traffic: 0.30 MB") and render_line(s) is None
    assert "limit 0.215 MB = 0.215 %" in s["invalid_reasons"][1]


def test_a_connection_not_of_the_run_counts_only_above_the_control_size_and_where_ports_are_known():
    ctl_conn = sock("10.0.0.1:40001-10.0.0.2:5201", [(WS + 0.05, 0), (WS + 29, 3_000)])
    big = sock(OTHER, [(WS + 3, 0), (WS + 20, CONTROL_BYTES + 1)])
    own = sock(OWN, [(WS + 0.1, 0), (WS + 29, 10**8)])
    ft = foreign_traffic(own + ctl_conn + big, (WS, WE), {"a1": {40000}})
    assert [c["connection"] for c in ft["connections"]] == [OTHER]
    assert ft["connections"][0]["why"] == "not one of the run's data connections"
    assert ft["own_bytes"] == 10**8 + 3_000
    # Ports unknown (no iperf3 JSON): only "began before" can be judged, the rest counts as the run's.
    assert foreign_traffic(own + ctl_conn + big, (WS, WE), None)["bytes"] == 0


def test_mptcp_subflows_sharing_the_token_of_a_data_connection_are_the_runs():
    own = sock(OWN, [(WS + 0.1, 0), (WS + 29, 10**8)], mptcp_token="ab12")
    joined = sock("10.0.1.1:50000-10.0.1.2:5201", [(WS + 3, 0), (WS + 29, 10**7)], mptcp_token="ab12")
    ft = foreign_traffic(own + joined, (WS, WE), {"a1": {40000}})
    assert ft["bytes"] == 0 and ft["own_bytes"] == 11 * 10**7


def test_receiver_sockets_and_other_hosts_ports():
    recv = sock(OLD, [(WS - 5, 0), (WS + 5, 10**6)], role="server")
    other_host = sock(OWN, [(WS + 0.1, 0), (WS + 9, 10**6)], host="a2")
    ft = foreign_traffic(recv + other_host, (WS, WE), {"a1": {40000}})
    assert ft["bytes"] == 0 and ft["own_bytes"] == 10**6


def test_a_sub_window_judges_began_before_against_the_traffics_start():
    pts = sock(OWN, [(WS + 0.1, 0), (WS + 15, 10**6), (WS + 29, 2 * 10**6)])
    ft = foreign_traffic(pts, (WS + 10, WE), {"a1": {40000}}, traffic_start=WS)
    assert ft["bytes"] == 0 and ft["own_bytes"] == 10**6


def test_no_own_bytes_with_foreign_ones_is_invalid():
    ft = foreign_traffic(sock(OLD, [(WS - 2, 0), (WS + 0.5, 0), (WS + 2, 10)]), (WS, WE), None)
    assert ft["invalid"] and ft["share_pct"] is None and "the run had none" in reason(ft)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([OWN, OLD, OTHER]), st.floats(990, 1040), st.integers(0, 10**9)),
                max_size=40))
def test_bytes_are_never_negative_and_the_verdict_follows_the_share(samples):
    pts = [p for sub, t, b in samples for p in sock(sub, [(t, b)])]
    ft = foreign_traffic(pts, (WS, WE), {"a1": {40000}})
    assert ft["bytes"] >= 0 and ft["own_bytes"] >= 0
    assert ft["bytes"] == sum(c["bytes"] for c in ft["connections"])
    assert ft["invalid"] == (ft["bytes"] > 0 and (ft["own_bytes"] == 0 or ft["bytes"] > ft["limit_bytes"]))
    assert sum(ft["own_bytes_per_flow"].values()) == ft["own_bytes"]


def _fixture(name: str):
    d = json.loads((FIX / "foreign" / f"{name}.json").read_text())
    pts = [Point("subflow", {"host": p["host"], "subflow": p["subflow"], "flow": p["flow"], "role": "client"},
                 p["f"], p["t"]) for p in d["points"]]
    return pts, tuple(d["window"]), {h: set(v) for h, v in d["own_ports"].items()}


@pytest.mark.parametrize("name, mb, share, until", [
    # 800 ms, mcubic run after an 800 ms LIA run: what helper t2delays found (5.0 MB, 1.3 %, 25 s).
    ("20261127T054818Z", 5.03, 1.29, 25),
    # 200 ms LIA run after an 800 ms LIA run: the same algorithm, first sampled only 0.39 s before
    # the window (a "> 1 s before" rule misses it).
    ("20261127T053748Z", 14.51, 2.90, 51),
])
def test_real_records_with_a_previous_runs_lia_connection(name, mb, share, until):
    pts, window, own = _fixture(name)
    ft = foreign_traffic(pts, window, own)
    assert ft["invalid"]
    assert ft["bytes"] / 1e6 == pytest.approx(mb, abs=0.01) and ft["share_pct"] == pytest.approx(share, abs=0.01)
    [c] = ft["connections"]
    assert c["host"] == "sa1" and c["cc"] == "lia" and c["why"] == "began before the run's traffic"
    assert c["first_seen_s"] < 0 and int(c["until_s"]) == until


def test_a_real_clean_record():
    pts, window, own = _fixture("20261127T054558Z")
    ft = foreign_traffic(pts, window, own)
    assert ft["bytes"] == 0 and not ft["invalid"] and ft["own_bytes"] > 4 * 10**8


@pytest.mark.parametrize("record", sorted(str(p.parent.relative_to(FIX / "runs"))
                                          for p in (FIX / "runs").rglob("manifest.json")))
def test_every_scenarios_summary_carries_it(record):
    s = summarize_record(FIX / "runs" / record)
    ft = s["foreign_traffic"]
    assert ft["bytes"] == 0 and "foreign_traffic" in s["definitions"]
    if ft["own_bytes"]:
        assert ft["limit_basis"] in ("ratio", "jain") and 0 < ft["limit_bytes"] < 0.01 * ft["own_bytes"]
        assert ft["threshold_pct"] == round(ft["limit_bytes"] / ft["own_bytes"] * 100, 4)
    assert ft["unseen"][-len(UNSEEN):] == list(UNSEEN)
    assert scenarios.get(s["scenario"]).render(s)


# ---- the limit (derivation: controller/results/foreign.py's docstring) ---------------------------------

def _jain(xs):
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def test_the_limit_of_one_flow_two_equal_flows_and_a_run_without_bytes():
    assert limit_bytes([10**8]) == (pytest.approx(SPREAD_FRACTION * RATIO_CV * 10**8), "ratio")
    lim, basis = limit_bytes([5 * 10**7, 5 * 10**7])           # Jain is flat at equal flows
    assert basis == "ratio" and lim / 10**8 == pytest.approx(0.001075)
    assert limit_bytes([]) == (0.0, "no own bytes") and limit_bytes([0, 0]) == (0.0, "no own bytes")
    # the 3-flow distinct-bottleneck runs of 2026-11-27 (MPTCP, TCP on path 1, TCP on path 2)
    lim, basis = limit_bytes([41_603_029, 85_973_744, 14_443_801])
    assert basis == "jain" and lim / 142_020_574 == pytest.approx(0.000199, abs=1e-6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(10**5, 10**10), min_size=1, max_size=6), st.data())
def test_the_limits_bytes_displaced_move_no_ratio_or_jain_by_more_than_the_fraction_of_its_cv(xs, data):
    """Exact, not first order: the limit's bytes taken from or given to any one flow move every ratio
    of two flows by at most q CV_ratio and Jain's index by at most q CV_jain (relative), within 1 %."""
    lim, _ = limit_bytes(xs)
    i = data.draw(st.integers(0, len(xs) - 1))
    for sign in (-1, 1):
        ys = list(xs)
        ys[i] += sign * lim
        for a in range(len(xs)):
            for b in range(len(xs)):
                if a != b:
                    moved = abs(ys[a] / ys[b] - xs[a] / xs[b]) / (xs[a] / xs[b])
                    assert moved <= SPREAD_FRACTION * RATIO_CV * 1.01
        if len(xs) > 1:
            assert abs(_jain(ys) - _jain(xs)) / _jain(xs) <= SPREAD_FRACTION * JAIN_CV * 1.01


def test_the_summary_says_what_the_check_could_not_see():
    own = sock(OWN, [(WS + 0.1, 0), (WS + 29, 10**8)])
    plan = SimpleNamespace(flows=[SimpleNamespace(client="a1"), SimpleNamespace(client="a2")])
    s = check({"valid": True, "invalid_reasons": []}, SimpleNamespace(points=own, window=(WS, WE), flows=[],
                                                                       plan=plan))
    assert s["foreign_traffic"]["unseen"] == ["a2: no socket sampled, none of its connections judged", *UNSEEN]
    assert s["valid"]
