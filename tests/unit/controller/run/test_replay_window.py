"""A recorded run summarized again over a window of its traffic (controller/run/replay.py
summarize_record / summarize_run, the scenarios' `summarize(data, window=...)`).

Contract (brief of issue 22): the whole traffic window gives exactly the run's own summary;
over a window every number of the MCubic scenarios is over that window (or stays whole-run
and the definitions say so); a synthetic run whose rates step half-way gives the two rates
over its two halves; a scenario that cannot be windowed, or a run whose traffic did not
complete, is refused (exit 2); nothing is written into the record.
"""
from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from controller import scenarios
from controller.errors import UsageError
from controller.results.window import TrafficWindow
from controller.run.replay import load_run, summarize_record, summarize_run, windowable
from controller.telemetry.points import Point
from tests.support.shipped import RECORDED_RUNS, no_state_dir

SHARED = RECORDED_RUNS / "shared-bottleneck" / "delay-800ms"
SWEEP = RECORDED_RUNS / "rtt-loss-sweep" / "rtt-40ms_loss-0.01pct_bbr"


@pytest.fixture(scope="module")
def shared():
    with no_state_dir():
        yield load_run(SHARED)


def _without_window(s: dict) -> dict:
    out = {k: v for k, v in s.items() if k != "window"}
    out["definitions"] = {k: v for k, v in s["definitions"].items() if k != "window"}
    return out


@pytest.mark.parametrize("run", [SHARED, SWEEP], ids=["shared-bottleneck", "rtt-loss-sweep"])
def test_the_whole_traffic_window_is_the_runs_own_summary(run):
    with no_state_dir():
        data = load_run(run)
        sc = scenarios.get(json.loads((run / "manifest.json").read_text())["scenario"])
        own = sc.summarize(data)
        assert summarize_record(run) == own
        explicit = summarize_record(run, ":")
    assert "window" not in own
    # Given as a window, the whole traffic keeps every number and says which window it is.
    traffic = data.window[1] - data.window[0]
    assert explicit["window"] == {"start_s": 0.0, "end_s": round(traffic, 3), "traffic_s": round(traffic, 3),
                                  "of": "traffic"}
    assert _without_window(explicit) == own


def _rate_mbps(points, flow, port, lo, hi, key="bytes_acked"):
    """An independent reading of the metrics: a socket's counter from its first to its last
    sample in [lo, hi], as Mbit/s."""
    pts = sorted((p.time_ns, p.fields[key]) for p in points if p.measurement == "subflow"
                 and p.tags.get("flow") == flow and p.tags.get("role") == "client"
                 and p.tags["subflow"].split("-")[0].endswith(f":{port}")
                 and lo * 1e9 <= p.time_ns <= hi * 1e9 and key in p.fields)
    (t0, v0), (t1, v1) = pts[0], pts[-1]
    return (v1 - v0) * 8 / ((t1 - t0) / 1e9) / 1e6


def _bytes(points, flow, port, lo, hi, key="bytes_acked"):
    """An independent reading of a socket's counter growth from its first to its last sample in [lo, hi]."""
    pts = sorted((p.time_ns, p.fields[key]) for p in points if p.measurement == "subflow"
                 and p.tags.get("flow") == flow and p.tags.get("role") == "client"
                 and p.tags["subflow"].split("-")[0].endswith(f":{port}")
                 and lo * 1e9 <= p.time_ns <= hi * 1e9 and key in p.fields)
    return pts[-1][1] - pts[0][1]


def test_a_window_of_the_recorded_run(shared):
    sc = scenarios.get("shared-bottleneck")
    with no_state_dir():
        whole = sc.summarize(shared)
        s = summarize_run(sc, shared, "10s:25s")
    t0 = shared.window[0]
    assert s["window"] == {"start_s": 10.0, "end_s": 25.0, "traffic_s": 31.3, "of": "traffic"}
    # Sender rates over the window, as the metrics say (the data sockets of iperf3's JSON).
    # A connection's sender rate is its bytes over the window's 15 s (both connections the same time).
    tcp = _bytes(shared.points, "tcp", 45057, t0 + 10, t0 + 25) * 8 / 15 / 1e6
    sub1 = _bytes(shared.points, "mptcp", 48673, t0 + 10, t0 + 25) * 8 / 15 / 1e6
    sub2 = _bytes(shared.points, "mptcp", 39731, t0 + 10, t0 + 25) * 8 / 15 / 1e6
    assert s["tcp_mbps"] == pytest.approx(tcp, abs=0.001)
    assert s["mptcp_mbps"] == pytest.approx(sub1 + sub2, abs=0.002)
    # each subflow's own rate stays over its own samples (as the metrics say)
    assert sorted(x["mbps"] for x in s["subflows"]) == pytest.approx(
        sorted(_rate_mbps(shared.points, "mptcp", port, t0 + 10, t0 + 25) for port in (48673, 39731)), abs=0.002)
    assert s["ratio"] == pytest.approx(s["mptcp_mbps"] / s["tcp_mbps"], abs=0.001)
    assert s["ratio"] != whole["ratio"]
    # The receivers' sockets are not in this fixture (extract.py keeps the clients'): no receiver
    # rate over the window, rather than the whole run's iperf3 total.
    assert [c["receiver_mbps"] for c in s["connections"]] == [None, None]
    assert s["ratio_receiver"] is None
    assert "retransmits" in s["definitions"] and "retrans_total" in s["definitions"]["retransmits"]
    assert "every number is over seconds 10 to 25" in s["definitions"]["window"]
    assert "sender_counters" in s["definitions"]["window"]
    # Whole-run parts stay as they were.
    assert s["sender_counters"] == whole["sender_counters"]
    assert s["mptcp"]["subflows_established_per_link"] == whole["mptcp"]["subflows_established_per_link"]
    text = sc.render(s)
    assert "window 10-25 s of 31.3 s of traffic" in text.splitlines()[0]


# ---- a synthetic run with a known rate step -------------------------------------------------------

T0 = 1_800_000_000   # whole seconds: sample times and window bounds are exact in float and ns
MBIT = 1e6 / 8       # bytes per second of 1 Mbit/s


def _counter(first_rate: float, second_rate: float, t: float, mid: float) -> int:
    return round(first_rate * min(t, mid) + second_rate * max(0.0, t - mid))


def _step_points(seconds: float = 20.0, mid: float = 10.0) -> list[Point]:
    """10 Hz samples of the recorded run's sockets (same names, ports and hosts) and of the
    bottleneck's b port, each counter growing at one rate before `mid` and another after."""
    socks = [  # (host, role, flow, socket, link, token, initial, sender Mbit/s before/after, retransmits/s)
        ("sa2", "client", "tcp", "10.11.0.12:45057-10.11.0.22:5202", "sbd1", None, None, (10, 30), (2, 6)),
        ("sa2", "client", "tcp", "10.11.0.12:47311-10.11.0.22:5202", "sbd1", None, None, (0, 0), (0, 0)),  # control
        ("sa1", "client", "mptcp", "10.11.0.11:48673-10.11.0.21:5201", "sbd1", "aa", True, (20, 40), (1, 1)),
        ("sa1", "client", "mptcp", "10.12.0.11:39731-10.12.0.21:5201", "sbd2", "aa", False, (5, 15), (0, 3)),
        ("sb2", "server", "tcp", "10.11.0.22:5202-10.11.0.12:45057", "sbd1", None, None, (9, 29), (0, 0)),
        ("sb1", "server", "mptcp", "10.11.0.21:5201-10.11.0.11:48673", "sbd1", "bb", True, (19, 39), (0, 0)),
        ("sb1", "server", "mptcp", "10.12.0.21:5201-10.12.0.11:39731", "sbd2", "bb", False, (4, 14), (0, 0)),
    ]
    out = []
    for k in range(int(seconds * 10) + 1):
        t = k / 10
        ns = (T0 * 10 + k) * 100_000_000
        for host, role, flow, sub, link, token, initial, (r1, r2), (x1, x2) in socks:
            f: dict = {"bytes_acked" if role == "client" else "bytes_received":
                       _counter(r1 * MBIT, r2 * MBIT, t, mid), "retrans_total": _counter(x1, x2, t, mid)}
            if token:
                f.update(mptcp_token=token, mptcp_initial=initial)
            out.append(Point("subflow", {"host": host, "flow": flow, "subflow": sub, "link": link, "role": role}, f,
                             ns))
        out.append(Point("iface", {"host": "br3", "iface": "nb", "link": "sbn", "role": "bridge"},
                         {"tx_bytes": _counter(40 * MBIT, 90 * MBIT, t, mid)}, ns))
    return out


def test_two_halves_of_a_run_with_a_rate_step_give_the_two_rates(shared):
    data = dataclasses.replace(shared, points=_step_points(), window=(float(T0), float(T0 + 20)))
    sc = scenarios.get("shared-bottleneck")
    first = summarize_run(sc, data, ":10s")
    second = summarize_run(sc, data, "10s:")
    for s, (tcp, sub1, sub2, rtcp, rsub, retr_tcp, retr_mptcp, bn) in (
            (first, (10, 20, 5, 9, 23, 20, 10, 40)), (second, (30, 40, 15, 29, 53, 60, 40, 90))):
        conns = {c["connection"]: c for c in s["connections"]}
        assert s["tcp_mbps"] == pytest.approx(tcp, abs=1e-3)
        assert conns["tcp"]["sender_bytes"] == round(tcp * MBIT * 10)
        assert conns["mptcp"]["sender_bytes"] == round(sub1 * MBIT * 10) + round(sub2 * MBIT * 10)
        assert [x["mbps"] for x in s["subflows"]] == pytest.approx([sub1, sub2], abs=1e-3)
        assert s["mptcp_mbps"] == pytest.approx(sub1 + sub2, abs=1e-3)
        assert s["ratio"] == pytest.approx(round((sub1 + sub2) / tcp, 3), abs=1e-3)
        assert conns["tcp"]["receiver_mbps"] == pytest.approx(rtcp, abs=1e-3)
        assert conns["mptcp"]["receiver_mbps"] == pytest.approx(rsub, abs=1e-3)
        assert s["ratio_receiver"] == pytest.approx(round(rsub / rtcp, 3), abs=1e-3)
        assert (conns["tcp"]["retransmits"], conns["mptcp"]["retransmits"]) == (retr_tcp, retr_mptcp)
        assert s["bottleneck_forward_mbps"] == pytest.approx(bn, abs=1e-3)
        assert conns["tcp"]["bottleneck_share_pct"] == pytest.approx(tcp, abs=0.01)   # of 100 Mbit/s
        flows = {f["name"]: f for f in s["flows"]}
        assert flows["tcp"]["seconds"] == 10.0
        assert flows["tcp"]["bytes_received"] == round(rtcp * MBIT * 10)
    # The control connection (same server port, not in iperf3's `connected`) is never counted.
    assert all("47311" not in x["subflow"] for x in first["subflows"])


def test_distinct_bottleneck_is_windowable_too():
    sc = scenarios.get("distinct-bottleneck")
    assert windowable(sc) and windowable(scenarios.get("shared-bottleneck"))


# ---- refusals and the record left alone ---------------------------------------------------------

@pytest.mark.parametrize("kind, run", [("parallel-streams", "sc64-sc16"), ("mptcp-bittorrent", "iperf3")])
def test_scenarios_whose_summary_has_no_window_refuse_one(kind, run):
    with no_state_dir(), pytest.raises(UsageError) as e:
        summarize_record(RECORDED_RUNS / kind / run, "0:2s")
    assert e.value.one_line() == (f"--window: the {kind} summary is not defined over a part of the traffic "
                                  "(scenarios that are: distinct-bottleneck, rtt-loss-sweep, shared-bottleneck)")
    assert e.value.exit_code == 2


def test_a_run_cut_short_is_not_summarized_again(tmp_path):
    rec = tmp_path / "run"
    shutil.copytree(SHARED, rec)
    m = json.loads((rec / "manifest.json").read_text())
    (rec / "manifest.json").write_text(json.dumps({**m, "status": "aborted"}))
    with no_state_dir(), pytest.raises(UsageError, match="ended 'aborted': only a run whose traffic completed"):
        summarize_record(rec, "0:5s")


def test_a_window_made_for_another_run_is_refused(shared):
    with pytest.raises(UsageError, match="made for 600.000 s of traffic, the run's lasted 31.300 s"):
        summarize_run(scenarios.get("shared-bottleneck"), shared, TrafficWindow(0, 45, 600))


def test_nothing_is_written_into_the_record(tmp_path):
    rec = tmp_path / "run"
    shutil.copytree(SHARED, rec)
    before = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in rec.rglob("*")}
    with no_state_dir():
        summarize_record(rec, "5s:20s")
        summarize_record(rec)
    assert {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in rec.rglob("*")} == before


def test_a_record_with_a_bare_loss_is_read_as_the_fraction_it_ran_with():
    """Before issue 22 `--loss 0.05` meant a fraction; this ctl refuses it on the command line, but
    a record made then is re-summarized as it ran."""
    from controller.run.replay import recorded_value
    from controller.units import parse_probability
    assert parse_probability(recorded_value("probability", "0.05")) == 0.05
    assert parse_probability(recorded_value("probability", 0.0046)) == 0.0046
    assert recorded_value("probability", "0.01%") == "0.01%" and recorded_value("probability", "1e-4") == "1e-4"
    assert recorded_value("probability", "0") == "0" and recorded_value("rate", "0.05") == "0.05"


def test_several_windows_of_one_record_read_once_equal_each_read_alone():
    from controller.run.replay import summarize_record_windows
    windows = ["0s:10s", "10s:25s", "20s:"]
    with no_state_dir():
        together = summarize_record_windows(SHARED, windows)
        alone = [summarize_record(SHARED, w) for w in windows]
    assert [s["ratio"] for s in together] == [s["ratio"] for s in alone]
    assert [s["window"] for s in together] == [s["window"] for s in alone]
