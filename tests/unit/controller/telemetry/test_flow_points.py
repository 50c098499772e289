"""Where iperf3's intervals land on the controller's clock (controller.traffic.iperf3.estimate_test_start,
controller.telemetry.hosts.flow_points).

iperf3 reports its intervals in seconds since its own test start. ctl sees three times of the client:
when it asked for the spawn (a lower bound of the start), when it saw the client running (the
estimate, late by the controller's own latency in reading that line), and when the client's output
ended (minus the test's length: an upper bound). A loaded controller once read the "running" line
0.7 s late, which put the flow's last point after the client had exited and after the run had
finished: these tests pin that no point is placed beyond the upper bound.
"""
from __future__ import annotations

import pytest

from controller.parsers import iperf3 as iperf3_parser
from controller.telemetry.hosts import flow_points
from controller.traffic.iperf3 import FlowRun, FlowSpec, estimate_test_start
from tests.support.fixture_blocks import RECORDED_GENERATED


def recorded(name: str) -> str:
    return (RECORDED_GENERATED / name).read_text()


def run_of(client_json: str, spawned: float | None, started: float | None, exited: float | None) -> FlowRun:
    spec = FlowSpec("mptcp", "mptcp", "a1", "b1", "10.1.0.21", 5201)
    return FlowRun(spec, (), (), client_spawned=spawned, client_started=started, client_exited=exited,
                   client_json=client_json)


def test_the_estimate_is_the_running_time_within_its_bounds():
    # seen running 0.2 s after the request, exited 10.5 s after it, a 10 s test: 0.2 is within [0, 0.5]
    assert estimate_test_start(100.0, 100.2, 110.5, 10.0) == pytest.approx(100.2)
    # seen running 0.7 s late: the upper bound (exit - length) wins
    assert estimate_test_start(100.0, 100.9, 110.4, 10.0) == pytest.approx(100.4)
    # an exit impossibly early for the request (clock step): never before the request
    assert estimate_test_start(100.0, 100.3, 105.0, 10.0) == pytest.approx(100.0)


def test_without_the_later_times_the_estimate_is_what_older_records_used():
    assert estimate_test_start(None, 100.2, None, None) == pytest.approx(100.2)
    assert estimate_test_start(100.0, 100.2, None, 10.0) == pytest.approx(100.2)
    assert estimate_test_start(100.0, 100.2, 110.0, None) == pytest.approx(100.2)
    assert estimate_test_start(100.0, None, 110.0, 10.0) is None


@pytest.mark.parametrize("late_s", [0.0, 0.3, 0.7, 2.0])
def test_no_flow_point_lies_after_the_client_ended(late_s):
    text = recorded("iperf3_mptcp.client.json")
    res = iperf3_parser.parse(text)
    length = max(iv.sum.end for iv in res.intervals if iv.sum is not None)
    true_start = 1_000.0
    exited = true_start + length + 0.05            # results exchange after the last interval
    r = run_of(text, spawned=true_start - 0.1, started=true_start + late_s, exited=exited)
    pts = flow_points(r)
    assert len(pts) == len([iv for iv in res.intervals if iv.sum is not None])
    assert max(p.time_ns for p in pts) <= exited * 1e9
    # the points keep iperf3's spacing, and the first lies one interval after the estimated start
    first = min(p.time_ns for p in pts) / 1e9
    start = r.test_start(length)
    assert first == pytest.approx(start + res.intervals[0].sum.end, abs=1e-6)
    assert true_start - 0.1 <= start <= true_start + min(late_s, 0.05) + 1e-9


def test_an_older_record_without_the_bounds_is_placed_as_before():
    text = recorded("iperf3_mptcp.client.json")
    res = iperf3_parser.parse(text)
    r = run_of(text, spawned=None, started=500.0, exited=None)
    times = sorted(p.time_ns / 1e9 for p in flow_points(r))
    ends = sorted(iv.sum.end for iv in res.intervals if iv.sum is not None)
    assert times == pytest.approx([500.0 + e for e in ends], abs=1e-6)


def test_the_record_keeps_the_three_times():
    r = run_of("", spawned=1.0, started=1.5, exited=12.0)
    j = r.to_json()
    assert (j["client_spawned"], j["client_started"], j["client_exited"]) == (1.0, 1.5, 12.0)
