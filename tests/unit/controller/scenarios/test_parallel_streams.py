"""parallel-streams (parallel-sockets paper, Fig. 4-8): parameters, plan (x1 for the whole run, m0
started later and stopped earlier), the BNA/IB model, and the summary of a recorded SC64+SC16
run (tests/fixtures/generated/runs/parallel-streams): measured shares next to the prediction
and the prediction error.
"""
from __future__ import annotations

import dataclasses
import json

import pytest

from bridges.base import Direction, PipeConfig
from controller import scenarios
from controller.cli.run import prepare_run
from controller.errors import ParameterError, UsageError
from controller.scenarios.parallel_streams import (
    connections_needed,
    data_start,
    packets_per_connection,
    predict,
    rx_samples,
    window_rate,
)
from controller.units import Queue
from tests.support.shipped import INVENTORIES, RECORDED_RUNS, summarized

RUN = RECORDED_RUNS / "parallel-streams" / "sc64-sc16"


@pytest.fixture(scope="module")
def sc():
    return scenarios.get("parallel-streams")


@pytest.fixture(scope="module")
def recorded(sc):
    return summarized(sc, RUN)


# ---- the model (paper eq. 2-4) ----------------------------------------------------------------


@pytest.mark.parametrize("a_n, bna_pct", [(2, 100 * 2 / 66), (16, 20.0), (32, 100 / 3), (64, 50.0)])
def test_bna_and_ib(a_n, bna_pct):
    m = predict(100e6, 64, a_n)
    assert m["bna_bps"] == pytest.approx(bna_pct * 1e6)
    assert m["bna_bps"] + m["ib_bps"] == pytest.approx(100e6)


def test_connections_needed_inverts_bna():
    assert connections_needed(100e6, 64, predict(100e6, 64, 16)["bna_bps"]) == pytest.approx(16)
    with pytest.raises(ParameterError):
        connections_needed(100e6, 64, 100e6)


# ---- parameters and plan -------------------------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["--streams", "0"], "--streams: 0 is below the minimum 1"),
    (["--streams", "200"], "--streams: 200 is above the maximum 128"),
    (["--base-streams", "x"], "--base-streams: 'x' is not a whole number"),
    (["--start-after", "0.1s"], "--start-after: 0.1s is below the minimum 0.5s"),
    (["--bw", "-1M"], "--bw: '-1M' must be a positive rate"),
])
def test_bad_parameters_are_one_line_errors(sc, argv, message):
    with pytest.raises(UsageError) as ei:
        sc.parse_args(argv)
    assert str(ei.value) == message and ei.value.exit_code == 2


@pytest.mark.parametrize("argv, message", [
    (["--duration", "12s"], "--duration 12s leaves no overlap to measure (m0 runs 2 s, minus --settle 2 s); "
                            "need --duration >= 13s"),
    (["--x1-receiver", "a2", "--m0", "b1", "--m0-receiver", "b2"], "x1's receiver is not across path1"),
])
def test_plan_errors(sc, invs, argv, message):
    values, _ = sc.parse_args(argv)
    with pytest.raises(ParameterError) as ei:
        sc.plan(values, invs["virtual"])
    assert message in str(ei.value) and "\n" not in str(ei.value)


@pytest.mark.parametrize("argv, message", [
    (["--m0-receiver", "b1"], "parallel-streams: --x1-receiver and --m0-receiver are both 'b1'"),
    (["--m0", "a1"], "parallel-streams: --x1 and --m0 are both 'a1'"),
])
def test_roles_must_be_distinct(sc, argv, message):
    with pytest.raises(UsageError) as ei:
        sc.parse_args(argv)
    assert str(ei.value).startswith(message) and ei.value.exit_code == 2 and "\n" not in str(ei.value)


@pytest.mark.parametrize("inventory", sorted(INVENTORIES))
def test_plan(invs, inventory):
    inv = invs[inventory]
    _, values, given, plan = prepare_run("parallel-streams", ["--streams", "32", "--duration", "40s"], inv)
    pipe = PipeConfig(bw_bps=100_000_000, delay_us=5000, queue=Queue(slots=100))
    assert plan.links == {("path1", Direction.FORWARD): pipe, ("path1", Direction.REVERSE): pipe}
    x1, m0 = plan.flows
    assert (x1.client, x1.server, x1.streams, x1.duration_s, x1.start_delay_s) == ("a1", "b1", 64, 40.0, 0.0)
    assert (m0.client, m0.server, m0.streams, m0.duration_s, m0.start_delay_s) == ("a2", "b2", 32, 30.0, 5.0)
    assert x1.port != m0.port and x1.protocol == m0.protocol == "tcp"
    assert plan.endpoints["a1"].mptcp is False and plan.endpoints["a2"].mptcp is False
    assert "b1" in plan.sample_ifaces and "b2" in plan.sample_ifaces     # the receivers' counters are the shares
    assert scenarios.get("parallel-streams").run_id_parts(given, values) == {"streams": "32"}


# ---- the recorded SC64 + SC16 run ----------------------------------------------------------------


def test_recorded_shares_and_errors(recorded):
    data, s = recorded
    assert s["valid"], s["invalid_reasons"]
    assert s["case"] == "SC64+SC16"
    x1, m0 = s["hosts"]
    assert (x1["predicted_mbps"], m0["predicted_mbps"]) == (80.0, 20.0)
    assert x1["measured_mbps"] == pytest.approx(80.568, abs=0.001)
    assert m0["measured_mbps"] == pytest.approx(19.452, abs=0.001)
    for h in (x1, m0):
        assert h["error_pp"] == pytest.approx(h["measured_share_pct"] - h["predicted_share_pct"], abs=0.02)
        assert h["error_rel_pct"] == pytest.approx(100 * (h["measured_mbps"] / h["predicted_mbps"] - 1), abs=0.02)
    # the two shares fill the bottleneck (frames, as dnpipe serializes them) while both run
    assert 98.0 <= s["measured_total_mbps"] <= 100.5
    assert s["paper_shares_pct"] == {"x1": 76.0, "m0": 28.0}
    assert 10.0 <= s["overlap"]["seconds"] <= 13.0


def test_overlap_starts_when_m0_data_really_flows(recorded):
    """Not when its client was spawned: iperf3 connects its streams first (here 0.54 s, in the
    SC64+SC64 case up to seconds), and a window from the spawn would count x1 alone."""
    data, s = recorded
    m = json.loads((RUN / "manifest.json").read_text())
    m0 = next(f for f in m["flows"] if f["name"] == "m0")
    start = s["overlap"]["m0_data_start"]
    # b2's counter: handshakes only (hundreds of bytes per step) until 0.54 s, then 36 kB, 117 kB, ...
    samples = rx_samples(data.points, "b2", "p1")
    before = [v for t, v in samples if m0["client_started"] <= t <= start]
    after = [v for t, v in samples if t > start]
    assert after[0] - before[-1] > 30_000 and before[-1] - before[0] < 2_000
    assert start - m0["client_started"] == pytest.approx(0.539, abs=0.001) == s["m0_setup_s"]
    assert s["overlap"]["start"] == pytest.approx(start + 2.0)      # + settle
    assert s["overlap"]["end"] == pytest.approx(start + 15.0)       # m0 runs 25 - 2 x 5 s of its own data


def test_data_start_and_window_rate():
    samples = [(0.0, 0), (0.1, 300), (0.2, 700), (0.3, 60_000), (0.4, 200_000), (1.3, 1_325_000)]
    assert data_start(samples, 0.0, 100e6) == pytest.approx(0.2)    # 59 kB in 0.1 s > 2 % of 100 Mbit/s
    assert data_start(samples, 0.25, 100e6) == pytest.approx(0.3)   # only after the spawn
    assert data_start(samples[:3], 0.0, 100e6) is None               # handshakes only
    assert window_rate(samples, 0.4, 1.3) == pytest.approx(10e6)
    assert window_rate(samples, 0.5, 1.0) is None


def test_packets_per_connection():
    # 100 slots + 100 Mbit/s x 10 ms (83.3 full-size packets) over 128 connections
    assert packets_per_connection(100e6, 5000, Queue(slots=100), 128) == pytest.approx(1.43, abs=0.01)
    assert packets_per_connection(100e6, 5000, Queue(bytes=1_500_000), 128) == pytest.approx(8.46, abs=0.01)


def test_recorded_diagnostics(recorded):
    _, s = recorded
    x1, m0 = (h["per_connection"] for h in s["hosts"])
    assert (x1["connections"], x1["starved"], m0["connections"], m0["starved"]) == (64, 0, 16, 0)
    assert 0.98 < x1["jain"] <= 1.0 and 0.98 < m0["jain"] <= 1.0
    assert s["diagnostics"]["packets_per_connection"] == pytest.approx(2.29, abs=0.01)
    # no connection starved: the model over the connections alive is the model itself
    assert s["diagnostics"]["connections_alive"] == {"x1": 64, "m0": 16}
    assert s["diagnostics"]["alive_model_share_pct"] == {"x1": 80.0, "m0": 20.0}
    tl = s["diagnostics"]["share_timeline"]
    assert len(tl) == 7 and all(75 < x["x1_pct"] < 85 and 15 < x["m0_pct"] < 25 for x in tl)


def test_missing_receiver_samples_make_it_invalid(recorded):
    data, _ = recorded
    points = [p for p in data.points if p.tags.get("host") != "b2"]
    s = scenarios.get("parallel-streams").summarize(dataclasses.replace(data, points=points))
    assert s["valid"] is False and "m0: no interface samples on b2 during the overlap" in s["invalid_reasons"]


def test_recorded_render_and_figure(recorded, tmp_path):
    data, s = recorded
    sc = scenarios.get("parallel-streams")
    text = sc.render(s)
    rows = {l.split()[0]: l.split() for l in text.splitlines() if l.startswith(("x1 ", "m0 "))}
    assert rows["x1"][1:4] == ["SC64", "existing", "(IB)"] and rows["x1"][-2:] == ["0.570", "0.710"]
    assert rows["m0"][1:4] == ["SC16", "new", "(BNA)"] and rows["m0"][-2:] == ["-0.550", "-2.740"]
    assert "prediction error: x1 0.57 pp, m0 -0.55 pp" in text
    assert "m0: first data 0.539 s after its client started; 0 of 16 connections starved" in text
    assert sc.figures(data, s, tmp_path) == ["parallel-streams.png"]


def test_summary_json_carries_fig8(recorded):
    t = recorded[1]["paper_table"]
    assert t["columns"][-1] == "error pp"
    assert t["rows"] == [["x1", 64, 80.568, 80.57, 80.0, 80.0, 0.57], ["m0", 16, 19.452, 19.45, 20.0, 20.0, -0.55]]


def test_pipe_drops_counts_arrivals_drops_and_the_queue_peak_over_the_window():
    """Arrivals and queue drops are the window's counter differences; the queue peak is the largest
    over every sample in the window, not only its ends; a window with under two samples is None."""
    from controller.scenarios.parallel_streams import pipe_drops
    from controller.telemetry.points import Point

    def pipe(t_s, direction="forward", **f):
        return Point("pipe", {"host": "br1", "link": "path1", "direction": direction}, f, int(t_s * 1e9))
    pts = [pipe(30, rx_pkts=5000, drop_queue_pkts=50, queue_peak_pkts=40),
           pipe(10, rx_pkts=1000, drop_queue_pkts=10, queue_peak_pkts=20),
           pipe(20, rx_pkts=3000, drop_queue_pkts=30, queue_peak_pkts=99),
           pipe(20, direction="reverse", rx_pkts=1, drop_queue_pkts=1, queue_peak_pkts=500),
           pipe(40, rx_pkts=9000, drop_queue_pkts=90, queue_peak_pkts=700)]     # after the window
    assert pipe_drops(pts, "br1", "path1", "forward", 10, 30) == {
        "arrived_pkts": 4000, "queue_drops_pkts": 40, "drop_pct": 1.0, "queue_peak_pkts": 99}
    assert pipe_drops(pts, "br1", "path1", "forward", 15, 25) is None
    assert pipe_drops(pts, "br9", "path1", "forward", 0, 99) is None
