"""distinct-bottleneck's `--delay` (issue 22: the path-delay hypothesis of Table 1).

Contract (module doc): by default ctl adds no delay and plans exactly what it planned before
`--delay` existed (no host setting changed, no conversion, no note); `--delay D` adds D one way
on each link in both directions, on the same pipe as the link's rate and queue, and raises the
socket buffers of all four hosts to 2 x (BDP of both links at the RTT 2 x D + their queues),
recorded as a conversion; bad values are one-line usage errors naming the flag.
"""
from __future__ import annotations

import pytest

from bridges.base import Direction, PipeConfig
from controller import scenarios
from controller.errors import UsageError
from controller.scenarios.common import tcp_buffer_sysctls, window_need
from controller.units import Queue
from tests.support.shipped import INVENTORIES

F, R = Direction.FORWARD, Direction.REVERSE


@pytest.fixture(scope="module")
def db():
    return scenarios.get("distinct-bottleneck")


@pytest.mark.parametrize("inventory", sorted(INVENTORIES))
def test_default_adds_no_delay_and_changes_no_host_setting(db, invs, inventory):
    values, _ = db.parse_args(["--link2", "20M"])
    assert values["delay"] == 0
    plan = db.plan(values, invs[inventory])
    want1, want2 = PipeConfig(bw_bps=100_000_000, queue=Queue(slots=50)), PipeConfig(bw_bps=20_000_000,
                                                                                      queue=Queue(slots=50))
    assert plan.links == {("path1", F): want1, ("path1", R): want1, ("path2", F): want2, ("path2", R): want2}
    assert all(not e.sysctls and not e.optional_sysctls for e in plan.endpoints.values())
    assert sorted(plan.endpoints) == ["a1", "a2", "b1"]        # the TCP receiver is left alone, as before
    assert plan.conversions == [] and plan.notes == []


@pytest.mark.parametrize("inventory", sorted(INVENTORIES))
def test_delay_is_one_way_on_each_link_both_directions(db, invs, inventory):
    values, _ = db.parse_args(["--link2", "20M", "--delay", "100ms", "--queue", "500"])
    plan = db.plan(values, invs[inventory])
    q = Queue(slots=500)
    want1 = PipeConfig(bw_bps=100_000_000, delay_us=100_000, queue=q)
    want2 = PipeConfig(bw_bps=20_000_000, delay_us=100_000, queue=q)
    assert plan.links == {("path1", F): want1, ("path1", R): want1, ("path2", F): want2, ("path2", R): want2}


def test_delay_raises_buffers_on_all_four_hosts(db, invs):
    values, _ = db.parse_args(["--link2", "20M", "--delay", "100ms"])
    plan = db.plan(values, invs["virtual"])
    need = window_need(100_000_000, 200_000, Queue(slots=50)) + window_need(20_000_000, 200_000, Queue(slots=50))
    # 100 Mbit/s x 200 ms = 2.5 MB, 20 Mbit/s x 200 ms = 0.5 MB, two 50-slot queues of 1500 B
    assert need == 2_500_000 + 500_000 + 2 * 75_000
    buffers = tcp_buffer_sysctls(need)
    assert sorted(plan.endpoints) == ["a1", "a2", "b1", "b2"]
    assert all(e.sysctls.items() >= buffers.items() for e in plan.endpoints.values())
    assert plan.endpoints["b2"].mptcp is False
    [conv] = plan.conversions          # 200 ms RTT: below the long-path threshold, no MPTCP fallback change
    assert "tcp_rmem" in conv.asked and buffers["net.ipv4.tcp_rmem"].split()[-1] in conv.applied.replace(",", "")
    assert plan.notes and "100 ms one way on path1 and path2" in plan.notes[0]


def test_long_delay_keeps_mptcp_from_falling_back(db, invs):
    values, _ = db.parse_args(["--delay", "300ms"])
    plan = db.plan(values, invs["virtual"])
    client = plan.endpoints["a1"]
    assert client.sysctls["net.mptcp.syn_retrans_before_tcp_fallback"] == "6"
    assert "net.mptcp.blackhole_timeout" in client.optional_sysctls
    assert len(plan.conversions) == 2


@pytest.mark.parametrize("argv, message", [
    (["--delay", "100"], "--delay: '100' needs a unit (e.g. 100ms)"),
    (["--delay", "6s"], "--delay: 6s is above the maximum 5s"),
    (["--delay", "-1ms"], "--delay: '-1ms' is not a duration (examples: 50ms, 30s, 2h)"),
])
def test_bad_delay_is_a_one_line_usage_error(db, argv, message):
    with pytest.raises(UsageError) as ei:
        db.parse_args(argv)
    assert str(ei.value) == message and ei.value.exit_code == 2
