"""dnpipe shaper driver: pure planning, read-back and verification on real `dnpipe ctl` output
(tests/fixtures/generated/dnpipe/, captured from the forwarder on the virtual rack)."""
from __future__ import annotations

import json
import os

import pytest

from bridges.base import Direction, PipeConfig, ShaperState
from bridges.dnpipe_driver import DEFAULT, DnpipeShaper, config_of, parse_show
from controller.commands import CommandResult
from controller.errors import ParseError, UnsupportedShaping
from controller.inventory import load_inventory
from controller.units import Queue
from tests.support.shipped import ROOT, TESTS

D = TESTS / "fixtures" / "generated" / "dnpipe"
F, R = Direction.FORWARD, Direction.REVERSE


@pytest.fixture(scope="module")
def shaper(tmp_path_factory):
    # A state dir for the inventory's secrets, for this module only (it used to stay set in the
    # environment for every later test of the process: test_influx_token then failed in a one-process run).
    with pytest.MonkeyPatch.context() as mp:
        if "CTL_STATE_DIR" not in os.environ:
            mp.setenv("CTL_STATE_DIR", str(tmp_path_factory.mktemp("state")))
        yield DnpipeShaper(load_inventory(ROOT / "inventory" / "virtual.yaml"), "br2")


def state_from(shaper, name: str) -> ShaperState:
    cmd = shaper.read_commands()[0]
    return shaper.parse_state([CommandResult("br2", cmd.argv, 0, (D / name).read_text(), "")])


def test_reads_commands_are_ctl_show_on_the_links_socket(shaper):
    (cmd,) = shaper.read_commands()
    assert cmd.argv[1:] == ("ctl", "--control", "/run/ctl/ctlv/dnpipe/path2.sock", "show")
    assert cmd.argv[0].endswith("/bin/dnpipe") and not cmd.mutates
    assert json.loads(cmd.assume)["pipes"]["forward"]["config"]["queue_slots"] == 50


def test_defaults_read_as_unshaped(shaper):
    st = state_from(shaper, "show_default.json")
    assert st.pipes == {("path2", F): None, ("path2", R): None}
    assert st.details["path2"]["a"] == "pa" and st.details["path2"]["b"] == "pb"


def test_configured_pipes_read_back_exactly(shaper):
    st = state_from(shaper, "set_both_20M_50ms_0.01pct_50slots.json")
    want = PipeConfig(bw_bps=20_000_000, delay_us=50_000, plr=0.0001, queue=Queue(slots=50))
    assert st.pipes == {("path2", F): want, ("path2", R): want}


def test_byte_queue_and_counters(shaper):
    st = state_from(shaper, "show_mixed_after_traffic.json")
    assert st.pipes[("path2", F)].queue == Queue(bytes=65536)
    assert st.pipes[("path2", R)].queue == Queue(slots=50)
    c = st.counters[("path2", F)]
    # every packet that arrived was sent, dropped, or is still inside the pipe
    assert c["rx_pkts"] == (c["tx_pkts"] + c["drop_plr_pkts"] + c["drop_queue_pkts"] + c["tx_error_pkts"]
                            + c["queue_pkts"] + c["delay_line_pkts"] + c["drop_nomem_pkts"])
    assert c["queue_peak_pkts"] <= 50


def test_plan_one_command_when_both_directions_agree(shaper):
    before = state_from(shaper, "show_default.json")
    want = PipeConfig(bw_bps=20_000_000, delay_us=50_000)
    (c,) = shaper.plan({("path2", F): want, ("path2", R): want}, before)
    assert c.mutates and c.argv[1:] == ("ctl", "--control", "/run/ctl/ctlv/dnpipe/path2.sock", "set", "--dir",
                                        "both", "--bw", "20000000", "--delay-us", "50000", "--plr", "0.0",
                                        "--queue-slots", "50")


def test_plan_per_direction_and_nothing_when_equal(shaper):
    before = state_from(shaper, "set_both_20M_50ms_0.01pct_50slots.json")
    same = before.pipes[("path2", F)]
    assert shaper.plan({("path2", F): same, ("path2", R): same}, before) == []
    other = PipeConfig(bw_bps=20_000_000, delay_us=50_000, plr=0.0001, queue=Queue(bytes=65536))
    (c,) = shaper.plan({("path2", F): other, ("path2", R): same}, before)
    assert c.argv[5:7] == ("--dir", "forward") and c.argv[-2:] == ("--queue-bytes", "65536")


def test_plr_argument_round_trips_exactly(shaper):
    p = PipeConfig(plr=0.000046)
    c = shaper.set_argv("path2", F, p)
    assert float(c[c.index("--plr") + 1]) == 0.000046


def test_verify_reports_each_field(shaper):
    observed = state_from(shaper, "set_both_20M_50ms_0.01pct_50slots.json")
    want = PipeConfig(bw_bps=30_000_000, delay_us=40_000, plr=0.0001, queue=Queue(slots=50))
    diffs = shaper.verify({("path2", F): want}, observed)
    assert len(diffs) == 2 and "bw_bps expected 30 Mbit/s, found 20 Mbit/s" in diffs[0] and "delay_us" in diffs[1]
    assert shaper.verify({("path2", F): observed.pipes[("path2", F)]}, observed) == []
    assert shaper.verify({("path2", F): DEFAULT}, state_from(shaper, "show_default.json")) == []


def test_restore_returns_to_defaults_or_previous_config(shaper):
    default = state_from(shaper, "show_default.json")
    shaped = state_from(shaper, "set_both_20M_50ms_0.01pct_50slots.json")
    (c,) = shaper.plan_restore(default, shaped)
    assert c.argv[5:] == ("--dir", "both", "--bw", "0", "--delay-us", "0", "--plr", "0.0", "--queue-slots", "50")
    (c,) = shaper.plan_restore(shaped, default)
    assert c.argv[5:] == ("--dir", "both", "--bw", "20000000", "--delay-us", "50000", "--plr", "0.0001",
                          "--queue-slots", "50")
    assert shaper.plan_restore(shaped, shaped) == []


def test_expected_state_is_what_apply_leaves(shaper):
    default = state_from(shaper, "show_default.json")
    want = PipeConfig(bw_bps=20_000_000, delay_us=50_000, plr=0.0001)
    exp = shaper.expected_state(default, {("path2", F): want, ("path2", R): want})
    assert shaper.verify({("path2", F): want, ("path2", R): want}, exp) == []


def test_validate_refuses_what_the_forwarder_cannot(shaper):
    with pytest.raises(UnsupportedShaping, match="above the forwarder's 100000"):
        shaper.validate({("path2", F): PipeConfig(queue=Queue(slots=100_001))})
    with pytest.raises(UnsupportedShaping, match="outside 1500"):
        shaper.validate({("path2", F): PipeConfig(queue=Queue(bytes=1000))})
    with pytest.raises(UnsupportedShaping, match="no burst"):
        shaper.validate({("path2", F): PipeConfig(bw_bps=10**6, burst_bytes=3000)})
    with pytest.raises(UnsupportedShaping, match="above the back-end's 10 Gbit/s"):
        shaper.validate({("path2", F): PipeConfig(bw_bps=11 * 10**9)})
    with pytest.raises(UnsupportedShaping, match="not on this bridge"):
        shaper.validate({("path1", F): PipeConfig()})
    shaper.validate({("path2", F): PipeConfig(bw_bps=10**9, delay_us=800_000, plr=0.01, queue=Queue(bytes=64 << 20))})


def test_counter_stream_lines(shaper):
    (stream,) = shaper.counter_streams(0.1)
    assert stream.name == "shaper0" and stream.argv[-3:] == ("watch", "--interval-ms", "100")
    lines = (D / "watch_100ms.jsonl").read_text().splitlines()
    items = stream.parse_line(lines[0])
    assert {s.key for s in items} == {("path2", F), ("path2", R)}
    assert items[0].counters["tx_pkts"] == 51970 and items[0].t_ns == json.loads(lines[0])["t_ns"]
    assert all(s.host_clock for s in items)      # the forwarder stamps samples on the host


def test_counter_stream_carries_the_forwarders_cpu_time(shaper):
    """A forwarder that reports its process CPU time (`cpu_ns`, real lines of a 1 Gbit/s run) gives it
    to both directions' samples as `proc_cpu_ns`; one that does not (watch_100ms.jsonl) gives none."""
    (stream,) = shaper.counter_streams(0.1)
    lines = (D / "watch_100ms_cpu_1G.jsonl").read_text().splitlines()
    first, last = (stream.parse_line(lines[0]), stream.parse_line(lines[-1]))
    for line, items in ((lines[0], first), (lines[-1], last)):
        assert [s.counters["proc_cpu_ns"] for s in items] == [json.loads(line)["cpu_ns"]] * 2
    busy = (last[0].counters["proc_cpu_ns"] - first[0].counters["proc_cpu_ns"]) / (last[0].t_ns - first[0].t_ns)
    assert 0 < busy < 1                                   # a share of one core over 0.2 s
    old = stream.parse_line((D / "watch_100ms.jsonl").read_text().splitlines()[0])
    assert all("proc_cpu_ns" not in s.counters for s in old)


def test_bad_show_output():
    with pytest.raises(ParseError):
        parse_show("dnpipe: error: cannot connect")
    with pytest.raises(ParseError):
        parse_show('{"version": 2, "pipes": {}}')
    assert config_of({"bw_bps": 0, "delay_us": 0, "plr": 0, "queue_slots": 50, "queue_bytes": None}) == DEFAULT


def test_the_forwarder_holds_every_value_exactly(shaper):
    """dnpipe keeps bw in bit/s, delay in us and plr as a double (compared with a 53-bit uniform
    draw): nothing it is asked for is rounded, so it reports no conversion."""
    p = PipeConfig(bw_bps=1_000_001, delay_us=1_500, plr=0.000046, queue=Queue(bytes=5_000_192))
    assert shaper.conversions({("path2", F): p, ("path2", R): p}) == []
    assert shaper.queue_limit_names == ("the forwarder's slot maximum", "the forwarder's byte maximum")
