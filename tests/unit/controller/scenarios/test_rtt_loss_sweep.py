"""rtt-loss-sweep (BBRv3 emulation paper): parameters, plan (1-BDP buffer per back-end, RTT split,
loss on the data direction only), the campaign files' interface, the summary of a recorded run
(tests/fixtures/generated/runs/rtt-loss-sweep), and the heatmap over many runs
(`ctl report rtt-loss`).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from bridges.base import Direction
from controller import scenarios
from controller.cli import main as ctl_main
from controller.cli.run import prepare_run
from controller.errors import ParameterError, ScenarioError, UnsupportedShaping, UsageError
from controller.inventory import load_inventory
from controller.scenarios.rtt_loss_sweep import find_summaries, heatmap_grid, render_grid, write_heatmap
from controller.units import Queue
from tests.support.shipped import INVENTORIES, RECORDED_RUNS, ROOT, no_state_dir, summarized

RUN = RECORDED_RUNS / "rtt-loss-sweep" / "rtt-40ms_loss-0.01pct_bbr"
F, R = Direction.FORWARD, Direction.REVERSE


@pytest.fixture(scope="module")
def sc():
    return scenarios.get("rtt-loss-sweep")


@pytest.fixture(scope="module")
def recorded(sc):
    return summarized(sc, RUN)


# ---- parameters and the campaign's interface ------------------------------------------------------


def test_the_issue_command_line_parses(sc):
    values, given = sc.parse_args(["--rtt", "40ms", "--loss", "0.01%", "--cc", "bbr", "--duration", "60s"])
    assert (values["rtt"], values["loss"], values["cc"], values["duration"]) == (40_000, 0.0001, "bbr", 60.0)
    assert sc.run_id_parts(given, values) == {"rtt": "40ms", "loss": "0.01%", "cc": "bbr"}


def test_the_default_is_the_papers_algorithm_bbr3(sc):
    """The paper is about BBRv3: without --cc a case runs bbr3 (ctl's BPF BBRv3), not the kernel's
    bbr (BBRv1 on an upstream kernel)."""
    values, given = sc.parse_args(["--rtt", "40ms"])
    assert values["cc"] == "bbr3" and "cc" not in given


@pytest.mark.parametrize("path", sorted((ROOT / "campaigns").glob("rtt-loss-sweep*.yaml")))
def test_every_value_the_campaigns_sweep_is_accepted(sc, invs, path):
    c = yaml.safe_load(path.read_text())
    assert c["scenario"] == "rtt-loss-sweep"
    for rtt in c["sweep"]["rtt"]:
        for loss in c["sweep"]["loss"]:
            for cc in c["sweep"]["cc"]:
                argv = ["--rtt", rtt, "--loss", loss, "--cc", cc] + \
                    [x for k, v in c.get("fixed", {}).items() for x in (f"--{k}", str(v))]
                values, _ = sc.parse_args(argv)
                sc.plan(values, invs["virtual"])


@pytest.mark.parametrize("argv, message", [
    (["--rtt", "40"], "--rtt: '40' needs a unit (e.g. 40ms)"),
    (["--rtt", "3s"], "--rtt: 3s is above the maximum 2s"),
    (["--loss", "150%"], "--loss: '150%' is outside 0..1 (0%..100%)"),
    (["--loss", "60%"], "--loss: 60% is above the maximum 50%"),
    (["--loss", "a lot"], "--loss: 'a lot' is not a probability (examples: 0.01%, 1%, 1e-4)"),
    # the paper's table copied without its unit: refused, naming both readings (issue 22, item 6)
    (["--loss", "0.01"], "--loss: 0.01 is ambiguous: write 0.01% or 1e-4 for 0.01 percent, 1% or 1e-2 for a "
                         "fraction of 0.01"),
    (["--loss", "0.0046"], "--loss: 0.0046 is ambiguous: write 0.0046% or 4.6e-5 for 0.0046 percent, 0.46% or "
                           "4.6e-3 for a fraction of 0.0046"),
    (["--cc", "BBR v3"], "--cc: 'BBR v3' is not a valid name (cc names match [a-z0-9_]{2,16})"),
    (["--bw", "20G"], "--bw: 20G is above the maximum 10G"),
])
def test_bad_parameters_are_one_line_errors(sc, argv, message):
    with pytest.raises(UsageError) as ei:
        sc.parse_args(argv)
    assert str(ei.value) == message and ei.value.exit_code == 2


@pytest.mark.parametrize("argv, error, message", [
    (["--server", "a2"], ParameterError, "a1 and a2 are on the same side of path1"),
    (["--client", "br1"], ScenarioError, "--client: host 'br1' is a bridge, not a endpoint"),
    (["--link", "sbn"], ScenarioError, "rtt-loss-sweep client: host a1 has no addressed interface on link sbn"),
])
def test_plan_errors(sc, invs, argv, error, message):
    values, _ = sc.parse_args(argv)
    with pytest.raises(error) as ei:
        sc.plan(values, invs["virtual"])
    assert message in str(ei.value)


# ---- plan ------------------------------------------------------------------------------------


def test_dumbbell_with_a_one_bdp_buffer(sc, invs):
    _, values, _, plan = prepare_run("rtt-loss-sweep", ["--rtt", "40ms", "--loss", "0.01%", "--cc", "bbr"],
                                     invs["virtual"])
    fwd, rev = plan.links[("path1", F)], plan.links[("path1", R)]
    # 1 Gbit/s x 40 ms = 5 000 000 bytes, in whole KiB as dummynet prints byte queues
    assert fwd.queue == rev.queue == Queue(bytes=4883 * 1024)
    assert (fwd.bw_bps, fwd.delay_us, fwd.plr) == (10**9, 20_000, 0.0001)
    assert (rev.bw_bps, rev.delay_us, rev.plr) == (10**9, 20_000, 0.0)        # ACKs are never dropped
    (f,) = plan.flows
    assert (f.protocol, f.client, f.server, f.cc, f.duration_s) == ("tcp", "a1", "b1", "bbr", 60.0)
    assert plan.endpoints["a1"].mptcp is False and plan.endpoints["a1"].congestion_controls == {"bbr"}
    assert plan.endpoints["b1"].sysctls == plan.endpoints["a1"].sysctls
    assert any("bottleneck buffer 4883KiB for a BDP of 5,000,000 B (4.77 MiB) (1 Gbit/s x 40 ms)" in n
               for n in plan.notes)
    # the queue rounded up to whole KiB and the raised socket buffers: warnings and manifest entries
    q, buf = plan.conversions
    assert (q.what, q.asked, q.applied) == ("bottleneck queue of path1 (both directions)",
                                            "1 BDP (1 Gbit/s x 40 ms) = 5,000,000 B (4.77 MiB)",
                                            "4,883 KiB (5,000,192 B)")
    assert (buf.what, buf.applied) == ("socket buffers of a1, b1", "32 MiB (33,554,432 B) for the run (restored "
                                                                   "after it)")
    assert plan.to_json()["conversions"] == [q.to_json(), buf.to_json()]


@pytest.mark.parametrize("loss, plr", [("0.01%", 0.0001), ("1e-4", 0.0001), ("2.5E-3", 0.0025), ("0", 0.0),
                                       ("0.0046%", 0.000046)])
def test_loss_is_applied_as_written(sc, invs, loss, plr):
    _, _, _, plan = prepare_run("rtt-loss-sweep", ["--loss", loss], invs["virtual"])
    assert plan.links[("path1", F)].plr == pytest.approx(plr, rel=1e-15)


def test_a_loss_dummynet_holds_differently_is_a_conversion(sc, invs):
    """prepare_run adds what the bridge's back-end holds differently: dummynet's 31-bit plr."""
    _, _, _, plan = prepare_run("rtt-loss-sweep", ["--loss", "0.0046%"], invs["lab-rack"])
    loss = [c for c in plan.conversions if c.what.startswith("loss of")]
    assert [(c.what, c.asked, c.applied) for c in loss] == [
        ("loss of path1 forward on dn1 (dummynet pipe 10101)", "0.0046 %", "0.00459998846 %")]
    _, _, _, plan = prepare_run("rtt-loss-sweep", ["--loss", "0.0046%"], invs["virtual"])   # dnpipe: exact
    assert not [c for c in plan.conversions if c.what.startswith("loss of")]


def test_odd_rtt_still_adds_up(sc, invs):
    values, _ = sc.parse_args(["--rtt", "2001us"])
    plan = sc.plan(values, invs["virtual"])
    assert plan.links[("path1", F)].delay_us + plan.links[("path1", R)].delay_us == 2001


def test_reverse_client_puts_loss_on_the_reverse_pipe(sc, invs):
    values, _ = sc.parse_args(["--client", "b1", "--server", "a1", "--loss", "0.1%"])
    plan = sc.plan(values, invs["virtual"])
    assert (plan.links[("path1", R)].plr, plan.links[("path1", F)].plr) == (0.001, 0.0)


def test_lab_rack_buffer_respects_dummynet_limits(sc, invs):
    # dn1 allows 1 MiB or 1000 slots: 1 Gbit/s x 100 ms needs 12.5 MB -> the largest allowed, said in the notes
    _, values, _, plan = prepare_run("rtt-loss-sweep", ["--rtt", "100ms"], invs["lab-rack"])
    assert plan.links[("path1", F)].queue == Queue(slots=1000)
    q = plan.conversions[0]
    assert q.warning() == (
        "warning: bottleneck queue of path1 (both directions): 1 BDP (1 Gbit/s x 100 ms) = 12,500,000 B (11.9 MiB) "
        "-> 1000 slots = 1,500,000 B (1.43 MiB) in 1500-byte packets: capped: dn1 (dummynet) holds at most 1 MiB "
        "(1,048,576 B) by net.inet.ip.dummynet.pipe_byte_limit (inventory facts, else FreeBSD's default) or 1000 slots by "
        "net.inet.ip.dummynet.pipe_slot_limit (inventory facts, else FreeBSD's default); the queue is 12 % of the BDP asked for")
    _, _, _, plan = prepare_run("rtt-loss-sweep", ["--rtt", "2ms"], invs["lab-rack"])
    assert plan.links[("path1", F)].queue == Queue(bytes=245 * 1024)          # 250 000 B, whole KiB


def test_explicit_queue_wins(sc, invs):
    values, _ = sc.parse_args(["--queue", "100"])
    assert sc.plan(values, invs["virtual"]).links[("path1", F)].queue == Queue(slots=100)


def test_tc_bridges_are_refused_before_anything(invs, tmp_path):
    text = INVENTORIES["virtual"].read_text().replace('shaper: {kind: dnpipe, binary: "${CTL_STATE_DIR}/bin/dnpipe", control_dir: /run/ctl/ctlv/dnpipe}',
                        "shaper: {kind: tc}")
    p = tmp_path / "tc.yaml"
    p.write_text(text)
    with no_state_dir():
        with pytest.raises(UnsupportedShaping, match="cannot delay packets"):
            prepare_run("rtt-loss-sweep", [], load_inventory(p))


# ---- the recorded run ---------------------------------------------------------------------------


def test_recorded_summary(recorded):
    data, s = recorded
    assert s["valid"], s["invalid_reasons"]
    j = json.loads((RUN / "raw" / "a1" / "iperf3-tcp.client.json").read_text())
    assert s["throughput_mbps"] == pytest.approx(j["end"]["sum_received"]["bits_per_second"] / 1e6, abs=0.001)
    assert s["share_pct"] == pytest.approx(s["throughput_mbps"] / 10, abs=0.01)
    assert s["case"] == {"rtt": "40ms", "loss": "0.01%", "cc": "bbr"}
    assert s["parameters"]["buffer"] == "4883KiB" and s["parameters"]["buffer_bdp_bytes"] == 5_000_000
    assert s["retransmits"] == j["end"]["sum_sent"]["retransmits"] > 0          # 0.01 % random loss
    assert s["throughput_mbps"] <= s["bridge_forward_mbps"] <= 1000.5             # frames carry headers too
    assert s["congestion"] == "bbr"


def test_recorded_render(recorded):
    text = scenarios.get("rtt-loss-sweep").render(recorded[1])
    row = next(l for l in text.splitlines() if l.startswith("bbr "))
    assert row.split()[:5] == ["bbr", "40ms", "0.01%", "914.97", "91.50"]
    assert "BBRv3 keeps >= 70 %" in text
    # the BDP in the title is written as every other byte count ctl prints: 500000 B was hard to read
    assert "buffer 4883KiB (1 BDP = 5,000,000 B (4.77 MiB))" in text.splitlines()[0]


def test_recorded_figure(recorded, tmp_path):
    data, s = recorded
    assert scenarios.get("rtt-loss-sweep").figures(data, s, tmp_path) == ["throughput.png"]


# ---- the heatmap from any set of runs -----------------------------------------------------------


def fake_runs(root: Path, base: dict) -> None:
    """Copies of the recorded summary with other cases and values (the grid maths only)."""
    cases = [("bbr", "2ms", "0%", 950.0), ("bbr", "2ms", "0%", 930.0), ("bbr", "100ms", "0.1%", 800.0),
             ("cubic", "2ms", "0%", 940.0), ("cubic", "100ms", "0.1%", 40.0), ("cubic", "20ms", "0.0046%", 600.0)]
    for i, (cc, rtt, loss, thr) in enumerate(cases):
        d = root / f"run{i}"
        d.mkdir(parents=True)
        (d / "summary.json").write_text(json.dumps({**base, "case": {"rtt": rtt, "loss": loss, "cc": cc},
                                                    "throughput_mbps": thr, "share_pct": thr / 10}))
    (root / "not-a-run").mkdir()
    (root / "invalid").mkdir()
    (root / "invalid" / "summary.json").write_text(json.dumps({**base, "valid": False, "throughput_mbps": 1.0}))
    (root / "other").mkdir()
    (root / "other" / "summary.json").write_text(json.dumps({"scenario": "parallel-streams", "valid": True}))


def test_heatmap_grid(recorded, tmp_path):
    fake_runs(tmp_path, recorded[1])
    found = find_summaries([tmp_path])
    assert len(found) == 6                              # the invalid and the other scenario's run left out
    g = heatmap_grid([s for _, s in found])
    assert (g["cc"], g["rtt"], g["loss"]) == (["bbr", "cubic"], ["2ms", "20ms", "100ms"], ["0%", "0.0046%", "0.1%"])
    assert g["cells"]["bbr"]["2ms"]["0%"] == {"mean": 940.0, "n": 2, "ci95": pytest.approx(127.06, abs=0.01)}
    assert g["cells"]["cubic"]["100ms"]["0.1%"]["mean"] == 40.0
    assert g["cells"]["bbr"]["20ms"]["0.0046%"] is None
    text = render_grid(g)
    assert "throughput_mbps (bbr)" in text and "940.0 (n=2)" in text
    png = write_heatmap([s for _, s in found], tmp_path / "out")
    assert png == tmp_path / "out" / "heatmap.png" and png.read_bytes()[:4] == b"\x89PNG"


def test_ctl_report_rtt_loss(recorded, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    fake_runs(tmp_path / "runs", recorded[1])
    shutil.copytree(RUN, tmp_path / "runs" / "recorded")      # no summary.json: skipped
    assert ctl_main(["report", "rtt-loss", str(tmp_path / "runs"), "-o", str(tmp_path / "rep"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["data"]
    assert out["figure"] == str(tmp_path / "rep" / "heatmap.png") and len(out["runs"]) == 6
    assert json.loads((tmp_path / "rep" / "heatmap.json").read_text())["cc"] == ["bbr", "cubic"]
    assert ctl_main(["report", "rtt-loss", str(tmp_path / "nothing")]) == 2
    assert "no completed rtt-loss-sweep runs under" in capsys.readouterr().err


def test_summary_json_carries_the_papers_cell(recorded):
    assert recorded[1]["paper_table"] == {"title": "Fig. 2 cell: throughput (Mbit/s), bbr",
                                          "columns": ["RTT \\ loss", "0.01%"], "rows": [["40ms", 914.968]]}


def test_the_summary_says_whether_the_forwarder_was_the_limit():
    """From the bottleneck's pipe counters over the window: frames the kernel dropped before the
    forwarder read them (rx_kernel_drops: its ring was full) and its mean lateness."""
    from controller.scenarios.rtt_loss_sweep import forwarder_stats
    from controller.telemetry.points import Point

    def pipe(t_s, host="br1", direction="forward", **f):
        return Point("pipe", {"host": host, "link": "path1", "direction": direction}, f, int(t_s * 1e9))
    pts = [pipe(10, tx_pkts=0, rx_kernel_drops=5, tx_late_ns_sum=0),
           pipe(20, tx_pkts=1000, rx_kernel_drops=5, tx_late_ns_sum=150_000_000),
           pipe(30, tx_pkts=3000, rx_kernel_drops=9, tx_late_ns_sum=600_000_000),
           pipe(20, direction="reverse", tx_pkts=7, rx_kernel_drops=100),
           pipe(40, tx_pkts=9000, rx_kernel_drops=99)]                    # after the window
    assert forwarder_stats(pts, "br1", "path1", "forward", 10, 30) == {"kernel_drops": 4, "late_mean_us": 200.0,
                                                                        "cpu_pct": None}   # not reported
    assert forwarder_stats(pts, "br1", "path1", "forward", 15, 25) is None     # one sample
    assert forwarder_stats(pts, "br9", "path1", "forward", 0, 99) is None


def test_the_summary_has_the_forwarders_cpu_over_the_window():
    """dnpipe's `watch` carries its process's CPU time (proc_cpu_ns): its share of one core over the
    window, from the first and last samples in it (hand-computed: 9.5 s of CPU in 10 s = 95 %)."""
    from controller.scenarios.rtt_loss_sweep import FORWARDER_BUSY_PCT, forwarder_cpu_pct, forwarder_stats
    from controller.telemetry.points import Point

    def pipe(t_s, cpu_s, direction="forward"):
        return Point("pipe", {"host": "br1", "link": "path1", "direction": direction},
                     {"tx_pkts": int(t_s * 100), "proc_cpu_ns": int(cpu_s * 1e9)}, int(t_s * 1e9))
    pts = [pipe(5, 1.0), pipe(10, 2.0), pipe(15, 6.0), pipe(20, 11.5), pipe(25, 30.0),
           pipe(10, 0.0, "reverse"), pipe(20, 1.0, "reverse")]
    assert forwarder_cpu_pct(pts, "br1", "path1", "forward", 10, 20) == 95.0 >= FORWARDER_BUSY_PCT
    assert forwarder_cpu_pct(pts, "br1", "path1", "reverse", 10, 20) == 10.0
    assert forwarder_stats(pts, "br1", "path1", "forward", 10, 20)["cpu_pct"] == 95.0
    assert forwarder_cpu_pct(pts, "br1", "path1", "forward", 12, 18) is None    # one sample
