"""Current rates while a run goes on (pure): per flow from the client host's socket counters
(each socket once, the data direction), per link from the bridge ports' tx counters, over
the last second, from points shaped like the samplers' (controller/telemetry/hosts.py)."""
from __future__ import annotations

import pytest

from controller.telemetry.live import LiveRates
from controller.telemetry.points import Point

S = 1_000_000_000
T0 = 1_700_000_000 * S


def sub(host, flow, subflow, role, t, acked=None, received=None):
    f = {}
    if acked is not None:
        f["bytes_acked"] = acked
    if received is not None:
        f["bytes_received"] = received
    return Point("subflow", {"host": host, "flow": flow, "subflow": subflow, "role": role, "link": "path1"}, f, t)


def iface(host, name, t, tx):
    return Point("iface", {"host": host, "iface": name, "link": "path1"}, {"tx_bytes": tx, "rx_bytes": 0}, t)


def rates() -> LiveRates:
    return LiveRates({"mptcp": "a1", "bt-tcp": "ns2"}, {"path1": ("br1", "pa", "pb")})


def test_a_flow_is_the_sum_of_its_sockets_on_the_client_host_at_10hz():
    r = rates()
    pts = []
    for k in range(21):                            # 2 s at 10 Hz; subflow 1 at 40 Mbit/s, subflow 2 at 8
        t = T0 + k * S // 10
        pts.append(sub("a1", "mptcp", "s1", "client", t, acked=k * 500_000))
        pts.append(sub("a1", "mptcp", "s2", "client", t, acked=k * 100_000))
        # the same sockets seen at the server: not counted again
        pts.append(sub("b1", "mptcp", "s1", "server", t, received=k * 500_000))
    r.add(pts)
    now = T0 + 2 * S
    assert r.flow_bps("mptcp", now) == pytest.approx(48e6)
    assert r.flows(["mptcp", "nothing"], now) == {"mptcp": pytest.approx(48e6), "nothing": None}


def test_a_receiving_client_counts_what_it_received():
    r = rates()
    r.add([sub("ns2", "bt-tcp", "x", "client", T0 + k * S // 10, acked=k * 10, received=k * 250_000)
           for k in range(15)])
    assert r.flow_bps("bt-tcp", T0 + 14 * S // 10) == pytest.approx(20e6)


def test_too_little_history_is_no_rate_and_a_quiet_flow_is_zero():
    r = rates()
    r.add([sub("a1", "mptcp", "s1", "client", T0 + k * S // 10, acked=k * 1000) for k in range(5)])
    assert r.flow_bps("mptcp", T0 + S // 2) is None                # 0.4 s of samples: no rate yet
    r.add([sub("a1", "mptcp", "s1", "client", T0 + k * S // 10, acked=k * 1000) for k in range(5, 12)])
    assert r.flow_bps("mptcp", T0 + 2 * S) == pytest.approx(80_000)
    assert r.flow_bps("mptcp", T0 + 5 * S) == 0.0                  # nothing sampled for 3.9 s: it ended


def test_a_counter_that_went_back_gives_no_rate():
    r = rates()
    r.add([sub("a1", "mptcp", "s1", "client", T0, acked=5_000_000),
           sub("a1", "mptcp", "s1", "client", T0 + S, acked=10)])   # a new socket on the same ports
    assert r.flow_bps("mptcp", T0 + S) is None


def test_link_rates_from_the_bridge_ports():
    r = rates()
    pts = []
    for k in range(11):
        t = T0 + k * S // 10
        pts.append(iface("br1", "pb", t, k * 1_250_000))           # towards b: 100 Mbit/s
        pts.append(iface("br1", "pa", t, k * 25_000))              # towards a: 2 Mbit/s
        pts.append(iface("b1", "p1", t, k * 9_999_999))            # an endpoint's port: not the link's
    r.add(pts)
    (lr,) = r.link_rates(T0 + S)
    assert lr.link == "path1" and lr.forward_bps == pytest.approx(100e6) and lr.reverse_bps == pytest.approx(2e6)
    assert LiveRates({}, {"path2": ("br2", "pa", "pb")}).link_rates(T0)[0].forward_bps is None
