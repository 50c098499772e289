"""controller.results.summary: the numbers a researcher puts in a paper, from their documented definitions.

- Jain's index J = (sum x)^2 / (n sum x^2) (as in the MCubic paper and Jain et al. 1984);
- flow throughput: iperf3's `end.sum_received.bits_per_second` (receiver), `end.sum_sent` next to it,
  computed here on the REAL iperf3 JSON in tests/fixtures/recorded/generated/;
- subflow and link throughput: growth of a counter between the first and last sample in the
  traffic window, on synthetic Point series built below (construction documented at each builder);
- the MPTCP verdict, on the REAL `ip mptcp monitor` and `nstat` captures of the recorded run
  (04_linux_mptcp.md), with an inventory whose addresses are that run's (10.1.1.x = path1,
  10.2.2.x = path2).
"""
from __future__ import annotations

import re

import pytest

from controller.inventory import load_inventory
from controller.results.summary import (counter_rate, data_local_ports, flow_throughput, jain_index, link_throughput,
                                mptcp_verdict, subflow_throughput)
from controller.telemetry.points import Point
from controller.traffic.iperf3 import FlowRun, FlowSpec
from tests.support.fixture_blocks import RECORDED_GENERATED, command_output
from tests.support.shipped import ROOT

VIRTUAL = ROOT / "inventory" / "virtual.yaml"


def rec(name: str) -> str:
    return (RECORDED_GENERATED / name).read_text()


@pytest.fixture(autouse=True)
def _state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))


# ---- Jain's fairness index ------------------------------------------------------------------


def test_jain_equal_shares_is_one():
    assert jain_index([10.0, 10.0, 10.0]) == pytest.approx(1.0)
    assert jain_index([5e6]) == pytest.approx(1.0)


@pytest.mark.parametrize("n", [2, 3, 4, 10])
def test_jain_one_of_n_is_one_over_n(n):
    assert jain_index([7.0] + [0.0] * (n - 1)) == pytest.approx(1 / n)


def test_jain_definition():
    xs = [34.58, 67.02, 11.92]
    assert jain_index(xs) == pytest.approx(sum(xs) ** 2 / (3 * sum(x * x for x in xs)))
    assert jain_index([1, 2, 3]) == pytest.approx(36 / 42)
    assert jain_index([2, 4, 6]) == pytest.approx(jain_index([1, 2, 3]))     # scale-free


@pytest.mark.parametrize("values", [[], [1.0, -1.0], [0.0, 0.0], [1.0, float("nan")], [float("inf"), 1.0]])
def test_jain_undefined(values):
    assert jain_index(values) is None


# ---- counter_rate ---------------------------------------------------------------------------


def test_counter_rate_last_minus_first():
    s = [(1_000_000_000, 100), (1_500_000_000, 9999), (3_000_000_000, 4100)]
    assert counter_rate(s) == pytest.approx(2000.0)       # (4100 - 100) / 2 s


@pytest.mark.parametrize("samples", [
    [],
    [(1, 5)],
    [(2_000_000_000, 10), (1_000_000_000, 20)],           # time going backwards
    [(1_000_000_000, 10), (1_000_000_000, 20)],           # no time passed
    [(1_000_000_000, 500), (2_000_000_000, 20)],          # counter reset
])
def test_counter_rate_undefined(samples):
    assert counter_rate(samples) is None


# ---- flow throughput on real iperf3 JSON ------------------------------------------------------


def flow_run(name: str, protocol: str, client_json: str, *, link: str | None = None, error: str | None = None):
    spec = FlowSpec(name, protocol, "a1", "b1", "10.1.0.21", 5201, link=link)
    return FlowRun(spec, (), (), client_json=client_json, error=error)


def test_flow_throughput_mptcp_client_json():
    ft = flow_throughput(flow_run("mptcp", "mptcp", rec("iperf3_mptcp.client.json")))
    assert ft.receiver_bps == pytest.approx(24610881.683190767)      # end.sum_received.bits_per_second
    assert ft.sender_bps == pytest.approx(27193117.493774146)        # end.sum_sent.bits_per_second
    assert ft.bytes_received == 24626808
    assert ft.seconds == pytest.approx(8.005177)
    assert ft.retransmits == 621
    assert ft.congestion == "bbr"
    assert ft.error is None
    assert len(ft.intervals) == 8
    assert all(a < b for a, b, _ in ft.intervals)
    js = ft.to_json()
    assert js["receiver_mbps"] == 24.611 and js["sender_mbps"] == 27.193
    assert (js["name"], js["protocol"], js["link"]) == ("mptcp", "mptcp", None)


@pytest.mark.parametrize("name, recv, sent, retr", [
    ("iperf3_tcp_1stream.client.json", 18983998.105835445, 20074429.618252214, 225),
    ("iperf3_tcp_P2.client.json", 19132361.378210522, 21314224.60192504, 887),
    ("iperf3_tcp_reverse.client.json", 19136531.982772212, 21205297.580597315, 96),
])
def test_flow_throughput_tcp_client_json(name, recv, sent, retr):
    ft = flow_throughput(flow_run("tcp-path1", "tcp", rec(name), link="path1"))
    assert ft.receiver_bps == pytest.approx(recv)
    assert ft.sender_bps == pytest.approx(sent)
    assert ft.retransmits == retr
    assert ft.link == "path1"
    assert ft.error is None


def test_flow_throughput_udp():
    ft = flow_throughput(flow_run("udp", "udp", rec("iperf3_udp_5M.client.json")))
    assert ft.receiver_bps == pytest.approx(5000159.99146712)
    assert ft.error is None


def test_flow_throughput_error_json():
    ft = flow_throughput(flow_run("mptcp", "mptcp", rec("iperf3_error_conn_refused.client.json")))
    assert ft.error == "unable to connect to server: Connection refused"
    assert ft.receiver_bps is None and ft.sender_bps is None and ft.intervals == []


def test_flow_throughput_keeps_the_runs_own_error_first():
    ft = flow_throughput(flow_run("m", "mptcp", rec("iperf3_error_conn_refused.client.json"), error="interrupted"))
    assert ft.error == "interrupted"


def test_flow_throughput_unparseable_and_missing_json():
    ft = flow_throughput(flow_run("m", "tcp", "{not json"))
    assert ft.error is not None and ft.error.startswith("client JSON unparseable")
    ft = flow_throughput(flow_run("m", "tcp", "", error="did not finish within 40 s"))
    assert (ft.receiver_bps, ft.error) == (None, "did not finish within 40 s")


def test_data_local_ports():
    assert data_local_ports(flow_run("m", "mptcp", rec("iperf3_mptcp.client.json"))) == {34488}
    assert data_local_ports(flow_run("t", "tcp", rec("iperf3_tcp_P2.client.json"))) == {59674, 59690}
    assert data_local_ports(flow_run("t", "tcp", rec("iperf3_error_conn_refused.client.json"))) == set()
    assert data_local_ports(flow_run("t", "tcp", "")) == set()
    assert data_local_ports(flow_run("t", "tcp", "garbage")) == set()


# ---- subflow throughput on synthetic samples ----------------------------------------------------

T0 = 1_700_000_000.0      # traffic window start (s since the epoch)
T1 = T0 + 10.0


def subflow_series(sub: str, link: str, *, rate_bps: float, token: str, role: str = "client",
                   flow: str = "mptcp", start: float = T0 - 1.0, end: float = T1 + 1.0, step: float = 0.1,
                   initial: bool = False, counter: str = "bytes_acked") -> list[Point]:
    """A sampler's view of one subflow: every `step` s from `start` to `end`, the byte counter
    grows by rate_bps / 8 per second (starting at 1000), tagged like telemetry.hosts makes them."""
    pts = []
    n = int(round((end - start) / step))
    for i in range(n + 1):
        t = start + i * step
        value = 1000 + int(round((t - start) * rate_bps / 8))
        pts.append(Point("subflow", {"host": "a1", "flow": flow, "subflow": sub, "link": link, "role": role},
                         {counter: value, "mptcp_token": token, "mptcp_initial": initial}, int(round(t * 1e9))))
    return pts


DATA_P1 = "10.1.0.11:40000-10.1.0.21:5201"   # the data connection's initial subflow (path 1)
DATA_P2 = "10.2.0.11:40100-10.1.0.21:5201"   # joined subflow on path 2, same MPTCP token
CTRL = "10.1.0.11:39999-10.1.0.21:5201"      # iperf3's control connection (also MPTCP under mptcpize)


def points_of_a_run() -> list[Point]:
    return (subflow_series(DATA_P1, "path1", rate_bps=10e6, token="62c3f513", initial=True)
            + subflow_series(DATA_P2, "path2", rate_bps=5e6, token="62c3f513")
            + subflow_series(CTRL, "path1", rate_bps=8e3, token="dae409f8", initial=True)
            + subflow_series("10.1.0.21:5201-10.1.0.11:40000", "path1", rate_bps=1e6, token="x", role="server",
                             counter="bytes_received")
            + subflow_series("10.1.0.12:41000-10.1.0.22:5202", "path1", rate_bps=3e6, token="", flow="tcp-path1"))


def test_subflow_throughput_rates_over_the_window():
    subs = {s["subflow"]: s for s in subflow_throughput(points_of_a_run(), "mptcp", (T0, T1))}
    assert set(subs) == {DATA_P1, DATA_P2, CTRL}          # role=client, flow=mptcp only
    p1, p2 = subs[DATA_P1], subs[DATA_P2]
    # window +-0.5 s slack: samples from T0-0.5 to T1+0.5 (11 s), rate unchanged
    assert p1["mbps"] == pytest.approx(10.0, abs=0.01)
    assert p2["mbps"] == pytest.approx(5.0, abs=0.01)
    assert p1["link"] == "path1" and p2["link"] == "path2"
    assert p1["samples"] == 111
    assert p1["bytes"] == pytest.approx(11.0 * 10e6 / 8, rel=1e-3)
    assert (p1["mptcp_token"], p1["initial"], p2["initial"]) == ("62c3f513", True, False)


def test_subflow_throughput_keeps_only_the_data_connection():
    subs = subflow_throughput(points_of_a_run(), "mptcp", (T0, T1), data_ports={40000})
    # port 40000 is the data connection; the path-2 subflow shares its token; the control
    # connection (token dae409f8) is dropped
    assert [s["subflow"] for s in subs] == sorted([DATA_P1, DATA_P2])


def test_subflow_throughput_server_side():
    subs = subflow_throughput(points_of_a_run(), "mptcp", (T0, T1), role="server")
    assert len(subs) == 1 and subs[0]["mbps"] == pytest.approx(1.0, abs=0.01)


def test_subflow_throughput_single_sample_is_zero():
    pts = subflow_series(DATA_P1, "path1", rate_bps=1e6, token="t", start=T0 + 1, end=T0 + 1)
    (s,) = subflow_throughput(pts, "mptcp", (T0, T1))
    assert (s["samples"], s["bytes"], s["mbps"]) == (1, 0, 0.0)


# ---- link throughput on synthetic interface counters -----------------------------------------


def iface_series(host: str, iface: str, link: str, rate_bps: float, start: float = T0 - 2, end: float = T1 + 2,
                 step: float = 0.1) -> list[Point]:
    """/proc/net/dev as the 10 Hz sampler reports it: tx_bytes growing at rate_bps / 8 per second."""
    n = int(round((end - start) / step))
    return [Point("iface", {"host": host, "iface": iface, "link": link, "side": ""},
                  {"tx_bytes": int(round((i * step) * rate_bps / 8))}, int(round((start + i * step) * 1e9)))
            for i in range(n + 1)]


def test_link_throughput_forward_is_the_b_port():
    inv = load_inventory(VIRTUAL)
    pts = (iface_series("br1", "pb", "path1", 100e6) + iface_series("br1", "pa", "path1", 2e6)
           + iface_series("br2", "pb", "path2", 20e6)
           + iface_series("a1", "p1", "path1", 999e6))          # an endpoint: not the bridge, ignored
    out = link_throughput(pts, inv, (T0, T1))
    assert out == {"path1": {"forward_mbps": pytest.approx(100.0, abs=0.01),
                             "reverse_mbps": pytest.approx(2.0, abs=0.01), "bridge": "br1"},
                   "path2": {"forward_mbps": pytest.approx(20.0, abs=0.01), "reverse_mbps": None,
                             "bridge": "br2"}}


def test_link_throughput_only_inside_the_window():
    inv = load_inventory(VIRTUAL)
    pts = iface_series("br1", "pb", "path1", 100e6, start=T1 + 1, end=T1 + 5)
    assert link_throughput(pts, inv, (T0, T1)) == {}


# ---- MPTCP verdict on the recorded run ----------------------------------------------------------


@pytest.fixture
def rec_inv(tmp_path):
    """virtual.yaml with the recorded run's addresses: a1 = client (fxr_c), b1 = server (fxr_s)."""
    text = VIRTUAL.read_text()
    for old, new in (("10.1.0.11/24", "10.1.1.1/24"), ("10.2.0.11/24", "10.2.2.1/24"),
                     ("10.1.0.21/24", "10.1.1.2/24"), ("10.2.0.21/24", "10.2.2.2/24")):
        assert text.count(old) == 1
        text = text.replace(old, new)
    p = tmp_path / "rec.yaml"
    p.write_text(text)
    return load_inventory(p)


NSTAT_AFTER = command_output(rec("nstat_mptcp.client.txt"), "nstat -asz")
# "before" the run: the same counters, all zero (a fresh namespace)
NSTAT_BEFORE = re.sub(r"^(\S+\s+)\d+", lambda m: m.group(1) + "0", NSTAT_AFTER, flags=re.M)
MONITOR = rec("ip_mptcp_monitor.client.txt")


def carried(path1: int, path2: int, token: str = "62c3f513") -> list[dict]:
    return [{"subflow": "s1", "link": "path1", "bytes": path1, "mptcp_token": token},
            {"subflow": "s2", "link": "path2", "bytes": path2, "mptcp_token": token}]


def test_verdict_on_the_recorded_run(rec_inv):
    v = mptcp_verdict(rec_inv, "mptcp", "a1", "b1", {"a1": (NSTAT_BEFORE, NSTAT_AFTER)}, {"a1": MONITOR},
                      carried(10**6, 10**6), ["path1", "path2"])
    assert v["problems"] == []
    assert v["negotiated"] is True and v["all_subflows_carried_data"] is True
    assert v["client_counters"]["MPCapableSYNTX"] == 2 and v["client_counters"]["MPCapableSYNACKRX"] == 2
    assert v["client_counters"]["fell_back"] is False
    # data connection 62c3f513 only: initial on path1; joins from 10.2.2.1 (path2) to both server addresses
    assert v["subflows_established_per_link"] == {"path1": 1, "path2": 2}
    assert v["monitor_connections"] == 2


def test_verdict_counts_every_connection_without_tokens(rec_inv):
    v = mptcp_verdict(rec_inv, "mptcp", "a1", "b1", {"a1": (NSTAT_BEFORE, NSTAT_AFTER)}, {"a1": MONITOR},
                      carried(10**6, 10**6, token=""), ["path1", "path2"])
    assert v["subflows_established_per_link"] == {"path1": 2, "path2": 4}


def test_verdict_link_that_carried_too_little(rec_inv):
    v = mptcp_verdict(rec_inv, "mptcp", "a1", "b1", {"a1": (NSTAT_BEFORE, NSTAT_AFTER)}, {"a1": MONITOR},
                      carried(10**6, 1000), ["path1", "path2"], min_bytes=64 * 1024)
    assert v["problems"] == ["mptcp: subflow on path2 carried 1000 bytes (< 65536)"]
    assert v["all_subflows_carried_data"] is False
    assert v["negotiated"] is True
    assert v["bytes_per_link"] == {"path1": 10**6, "path2": 1000}


def test_verdict_fallback_is_not_negotiated(rec_inv):
    after = re.sub(r"^(MPTcpExtMPCapableFallbackACK\s+)0", r"\g<1>1", NSTAT_AFTER, flags=re.M)
    assert after != NSTAT_AFTER
    v = mptcp_verdict(rec_inv, "mptcp", "a1", "b1", {"a1": (NSTAT_BEFORE, after)}, {"a1": MONITOR},
                      carried(10**6, 10**6), ["path1", "path2"])
    assert v["negotiated"] is False
    assert any("fell back to TCP" in p for p in v["problems"])


def test_verdict_no_handshake(rec_inv):
    v = mptcp_verdict(rec_inv, "mptcp", "a1", "b1", {"a1": (NSTAT_BEFORE, NSTAT_BEFORE)}, {"a1": ""},
                      [], ["path1", "path2"])
    assert v["negotiated"] is False
    assert "a1: no MP_CAPABLE handshake completed (MPTcpExt counters)" in v["problems"]
    assert "mptcp: no subflow established on path1" in v["problems"]
    assert v["subflows_established_per_link"] == {"path1": 0, "path2": 0}


def test_verdict_without_counters_does_not_claim_negotiation(rec_inv):
    # No MPTcpExt counters were recorded: there is no evidence that MPTCP was used, so the
    # verdict must not answer "negotiated: yes" (it is printed as such in the summary).
    v = mptcp_verdict(rec_inv, "mptcp", "a1", "b1", {}, {"a1": MONITOR}, carried(10**6, 10**6),
                      ["path1", "path2"])
    assert "a1: no MPTcpExt counters recorded" in v["problems"]
    assert v["negotiated"] is not True
