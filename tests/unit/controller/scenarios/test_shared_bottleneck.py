"""shared-bottleneck (MCubic paper Fig. 4-6, Tables 2-3): parameters, plan, and the summary of a
recorded run (tests/fixtures/generated/runs/shared-bottleneck, 800 ms one-way, 20 s).

Contract (module doc): case 1 = one `--delay` on both paths, case 2 = `--delay1`/`--delay2`;
delays are one-way on each path's delay link in both directions; only the bottleneck has a
rate and a queue; socket buffers = 2 x (BDP of the slower path + queue) on all four hosts;
the MPTCP server signals its path-2 address. Summary: sender-side rate per connection
(acked bytes), the MPTCP/TCP ratio, the paper's column beside it; invalid unless both
subflows were established and carried data.
"""
from __future__ import annotations

import json

import pytest

from bridges.base import Direction, PipeConfig
from controller import scenarios
from controller.cli.run import prepare_run
from controller.errors import ParameterError, ScenarioError, UsageError
from controller.units import Queue, format_bytes
from nodes.mptcp import MptcpEndpoint
from tests.support.shipped import INVENTORIES, RECORDED_RUNS, summarized

RUN = RECORDED_RUNS / "shared-bottleneck" / "delay-800ms"
F, R = Direction.FORWARD, Direction.REVERSE


@pytest.fixture(scope="module")
def sc():
    return scenarios.get("shared-bottleneck")


@pytest.fixture(scope="module")
def recorded(sc):
    return summarized(sc, RUN)


# ---- parameters ------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["--delay", "100"], "--delay: '100' needs a unit (e.g. 100ms)"),
    (["--delay", "-5ms"], "--delay: '-5ms' is not a duration (examples: 50ms, 30s, 2h)"),
    (["--delay", "6s"], "--delay: 6s is above the maximum 5s"),
    (["--delay2", "0.1us"], "--delay2: '0.1us' is finer than 1 microsecond"),
    (["--bw", "100k"], "--bw: 100k is below the minimum 1M"),
    (["--queue", "0"], "--queue: '0' must be a positive number of slots or a size like 64KB"),
    (["--cc", "LIA!"], "--cc: 'LIA!' is not a valid name (cc names match [a-z0-9_]{2,16})"),
    (["--port-base", "80"], "--port-base: 80 is below the minimum 1024"),
])
def test_bad_parameters_are_one_line_errors(sc, argv, message):
    with pytest.raises(UsageError) as ei:
        sc.parse_args(argv)
    assert str(ei.value) == message
    assert "\n" not in str(ei.value) and ei.value.exit_code == 2


def test_unknown_flag(sc):
    with pytest.raises(UsageError, match="ctl run shared-bottleneck: unrecognized arguments: --delay3"):
        sc.parse_args(["--delay3", "1ms"])


def test_paths_must_be_three_different_links(sc):
    with pytest.raises(UsageError, match=r"^shared-bottleneck: --path1 and --path2 are both 'sbd1'; the experiment "
                                         r"needs --path1, --path2, --bottleneck to be different$"):
        sc.parse_args(["--path2", "sbd1"])


@pytest.mark.parametrize("argv, error, message", [
    (["--bottleneck", "path1"], ParameterError, "link sbd1 does not feed path1"),
    (["--mptcp-client", "br3"], ScenarioError, "--mptcp-client: host 'br3' is a bridge, not a endpoint"),
    (["--tcp-server", "a1"], ScenarioError, "TCP server: host a1 has no address in 10.11.0.0/24"),
    (["--path1", "nope"], ScenarioError, "link 'nope' is not in inventory"),
])
def test_plan_refuses_roles_the_inventory_cannot_fill(sc, invs, argv, error, message):
    values, _ = sc.parse_args(argv)
    with pytest.raises(error) as ei:
        sc.plan(values, invs["virtual"])
    assert message in str(ei.value) and "\n" not in str(ei.value)


# ---- plan --------------------------------------------------------------------------------------


@pytest.mark.parametrize("inventory", sorted(INVENTORIES))
def test_case1_plan(sc, invs, inventory):
    inv = invs[inventory]
    _, values, given, plan = prepare_run("shared-bottleneck", ["--delay", "800ms", "--duration", "20s"], inv)
    assert plan.links == {("sbd1", F): PipeConfig(delay_us=800_000), ("sbd1", R): PipeConfig(delay_us=800_000),
                          ("sbd2", F): PipeConfig(delay_us=800_000), ("sbd2", R): PipeConfig(delay_us=800_000),
                          ("sbn", F): PipeConfig(bw_bps=100_000_000, queue=Queue(slots=50)),
                          ("sbn", R): PipeConfig(bw_bps=100_000_000, queue=Queue(slots=50))}
    m, t = plan.flows
    assert (m.name, m.protocol, m.client, m.server, m.client_addr, m.server_addr) == \
        ("mptcp", "mptcp", "sa1", "sb1", "10.11.0.11", "10.11.0.21")
    assert (t.name, t.protocol, t.client, t.server, t.client_addr, t.server_addr, t.link) == \
        ("tcp", "tcp", "sa2", "sb2", "10.11.0.12", "10.11.0.22", "sbd1")
    assert m.duration_s == t.duration_s == plan.duration_s == 20.0
    sb1_p2 = next(i for i in inv.hosts["sb1"].interfaces if i.ip == "10.12.0.21")
    assert plan.endpoints["sb1"].endpoints == (MptcpEndpoint("10.12.0.21", sb1_p2.name, ("signal",)),)
    assert plan.endpoints["sa1"].endpoints == () and plan.endpoints["sa2"].mptcp is False
    # 100 Mbit/s x 1.6 s + 50 x 1500 B, doubled, in whole MiB, on every host
    need = 100_000_000 * 1_600_000 // 8_000_000 + 75_000
    top = -(-2 * need // (1 << 20)) * (1 << 20)
    buffers = {"net.ipv4.tcp_rmem": f"4096 131072 {top}", "net.ipv4.tcp_wmem": f"4096 16384 {top}"}
    for h in ("sa2", "sb1", "sb2"):
        assert plan.endpoints[h].sysctls == buffers
    # at 1.6 s RTT a cold path answers after ~3.2 s: the MPTCP client must not fall back to TCP
    # after two 1-s SYN retransmissions, nor switch MPTCP off as a "blackhole" for an hour
    assert plan.endpoints["sa1"].sysctls == {**buffers, "net.mptcp.syn_retrans_before_tcp_fallback": "6",
                                             "net.mptcp.blackhole_timeout": "0"}
    assert plan.mptcp_hosts == ["sa1", "sb1"]
    assert given == {"delay": "800ms", "duration": "20s"}
    assert sc.run_id_parts(given, values) == {"delay": "800ms"}


def test_case2_delays_per_path(sc, invs):
    values, given = sc.parse_args(["--delay1", "100ms", "--delay2", "300ms"])
    plan = sc.plan(values, invs["virtual"])
    assert plan.links[("sbd1", F)].delay_us == plan.links[("sbd1", R)].delay_us == 100_000
    assert plan.links[("sbd2", F)].delay_us == plan.links[("sbd2", R)].delay_us == 300_000
    assert sc.run_id_parts(given, values) == {"delay1": "100ms", "delay2": "300ms"}
    # buffers for the slower path: 2 x (7.5 MB + queue) stays under Linux's own 32 MiB maximum
    assert plan.endpoints["sa1"].sysctls["net.ipv4.tcp_rmem"] == "4096 131072 33554432"
    values, _ = sc.parse_args(["--delay1", "100ms", "--delay2", "2s"])
    plan = sc.plan(values, invs["virtual"])
    assert plan.endpoints["sb1"].sysctls["net.ipv4.tcp_wmem"] == f"4096 16384 {96 * (1 << 20)}"   # 2 x 50.08 MB


@pytest.mark.parametrize("delay, extra", [("200ms", False), ("249ms", False), ("250ms", True), ("500ms", True)])
def test_mptcp_syn_fallback_sysctls_only_on_long_paths(sc, invs, delay, extra):
    values, _ = sc.parse_args(["--delay1", "100ms", "--delay2", delay])
    plan = sc.plan(values, invs["virtual"])
    assert ("net.mptcp.blackhole_timeout" in plan.endpoints["sa1"].sysctls) is extra
    # host settings the experiment changes are conversions too: a warning and a manifest entry each
    assert [c.what for c in plan.conversions] == ["socket buffers of sa1, sa2, sb1, sb2"] + \
        (["MPTCP fallback on sa1"] if extra else [])
    if extra:
        assert plan.conversions[1].applied == ("6 SYN retransmissions and no blackhole detection, for the run "
                                               "(restored after it)")


def test_small_delays_keep_linux_default_buffer_maximum(sc, invs):
    values, _ = sc.parse_args(["--delay", "1ms"])
    assert sc.plan(values, invs["virtual"]).endpoints["sb2"].sysctls["net.ipv4.tcp_rmem"] == "4096 131072 33554432"


def test_case_of():
    from controller.scenarios.shared_bottleneck import case_of
    assert {k: v for k, v in case_of(500_000, 500_000).items() if k != "reference"} == \
        {"case": 1, "table": "Table 2", "column": "500ms"}
    assert case_of(100_000, 400_000)["column"] == "100:400ms" and case_of(100_000, 400_000)["case"] == 2


# ---- summary of the recorded 800 ms run ----------------------------------------------------------


def test_recorded_run_is_valid_with_both_subflows(recorded):
    data, s = recorded
    assert s["valid"], s["invalid_reasons"]
    assert s["mptcp"]["negotiated"] is True
    assert s["mptcp"]["subflows_established_per_link"] == {"sbd1": 1, "sbd2": 1}
    assert [(x["link"], x["initial"]) for x in s["subflows"]] == [("sbd1", True), ("sbd2", False)]
    assert all(x["bytes"] >= 64 * 1024 for x in s["subflows"])
    assert (s["table"], s["column"], s["parameters"]["case"]) == ("Table 2", "800ms", 1)
    assert s["parameters"]["rtt1_ms"] == s["parameters"]["rtt2_ms"] == 1600.0


def test_recorded_rates_and_ratio(recorded):
    data, s = recorded
    conns = {c["connection"]: c for c in s["connections"]}
    # a connection's sender rate = its bytes acked (summed over its subflows) over the traffic window,
    # the same time for both connections: a subflow that joined late is not counted as if it had sent
    # all along (averaged over their own lives, the subflows' rates summed give a ratio 9 % higher)
    secs = data.window[1] - data.window[0]
    assert conns["mptcp"]["sender_bytes"] == sum(x["bytes"] for x in s["subflows"])
    for name in ("mptcp", "tcp"):
        assert conns[name]["sender_mbps"] == pytest.approx(conns[name]["sender_bytes"] * 8 / secs / 1e6, abs=0.001)
    assert s["ratio"] == pytest.approx(conns["mptcp"]["sender_bytes"] / conns["tcp"]["sender_bytes"], abs=0.001)
    assert sum(x["mbps"] for x in s["subflows"]) > conns["mptcp"]["sender_mbps"] * 1.05
    # receiver goodput straight from iperf3's JSON
    for name in ("mptcp", "tcp"):
        host = "sa1" if name == "mptcp" else "sa2"
        j = json.loads((RUN / "raw" / host / f"iperf3-{name}.client.json").read_text())
        assert conns[name]["receiver_mbps"] == pytest.approx(j["end"]["sum_received"]["bits_per_second"] / 1e6,
                                                             abs=0.001)
    # what crossed the bottleneck is at most its rate, and at least what the two connections delivered
    assert s["bottleneck_forward_mbps"] <= 100.5
    assert s["paper_column"] == {"LIA": 0.75, "OLIA": 0.54, "wVegas": 0.54, "MCubic": 1.0}


def test_render_is_the_papers_table(recorded):
    _, s = recorded
    text = scenarios.get("shared-bottleneck").render(s)
    assert "shared-bottleneck  case 1  delay path1 800ms / path2 800ms  bottleneck 100 Mbit/s" in text
    lines = text.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("Table 2: MPTCP / TCP"))
    assert lines[head].split()[-1] == "800ms"
    assert lines[head + 2].split() == ["cubic", "(this", "run)", "1.306"]
    assert lines[head + 6].split() == ["MCubic", "(paper)", "1.000"]
    assert "MPTCP negotiated: yes; subflows per path: sbd1 1, sbd2 1" in text
    # the socket buffers' maximum as ctl prints byte counts (was the bare "33554432 B")
    rmem = int(s["parameters"]["socket_buffers"]["net.ipv4.tcp_rmem"].split()[-1])
    assert f"; socket buffers max {format_bytes(rmem)}" in text and f"{rmem:,} B" in format_bytes(rmem)
    assert "RESULT INVALID" not in text
    assert f"; bottleneck carried {s['bottleneck_forward_mbps']} Mbit/s;" in text


def test_render_of_a_summary_without_the_bridge_rate_says_so(recorded):
    """A window with no shaper sample (`ctl runs show --window 0.001s:0.002s`) printed 'None Mbit/s'."""
    _, s = recorded
    text = scenarios.get("shared-bottleneck").render({**s, "bottleneck_forward_mbps": None})
    assert "; bottleneck carried -;" in text and "None" not in text


def test_a_missing_subflow_makes_the_result_invalid(recorded):
    data, _ = recorded
    sc = scenarios.get("shared-bottleneck")
    points = [p for p in data.points if not (p.measurement == "subflow" and p.tags.get("link") == "sbd2")]
    import dataclasses
    s = sc.summarize(dataclasses.replace(data, points=points, monitor={}))
    assert s["valid"] is False
    assert "mptcp: no subflow established on sbd2" in s["invalid_reasons"]


def test_figures_are_pngs(recorded, tmp_path):
    data, s = recorded
    names = scenarios.get("shared-bottleneck").figures(data, s, tmp_path)
    assert names == ["throughput.png", "ratio.png"]
    for n in names:
        assert (tmp_path / n).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_summary_json_carries_the_papers_table(recorded):
    t = recorded[1]["paper_table"]
    assert t["columns"] == ["algorithm", "800ms"] and t["title"].startswith("Table 2")
    assert t["rows"][0] == ["cubic (this run)", 1.306] and ["MCubic (paper)", 1.0] in t["rows"]
    json.dumps(recorded[1])


def test_a_window_without_subflow_samples_counts_no_control_connection(sc, recorded):
    """`ctl runs show --window 0.001s:0.002s` (issue 24 audit): no subflow sample falls in such a window;
    the monitor's connections are still told apart by the whole run's tokens, so iperf3's control
    connection is not counted as a subflow (it showed 2 per link where the run has 1)."""
    from controller.results.window import TrafficWindow
    data, whole = recorded
    t0, t1 = data.window
    tiny = sc.summarize(data, TrafficWindow(0.001, 0.002, t1 - t0))
    assert tiny["mptcp"]["subflows_established_per_link"] == whole["mptcp"]["subflows_established_per_link"]
