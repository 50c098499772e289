"""bridges.tc: the Linux tc back-end of the Shaper contract (bridges/base.py).

Pure pieces are tested on the REAL `tc -j [-s] qdisc show dev X` output captured in
tests/fixtures/generated/tc/ (iproute2 6.1, kernel 6.18; see its README for what each file
holds). The generic `bridges.base.apply` / `restore` loop is driven against
fakes_linux.FakeLinuxBridge, a test double that keeps a bridge's qdiscs in memory and
prints them in the captured JSON form.

Contract: forward (a -> b) is shaped on the egress of the bridge's b port, reverse on its a
port; ctl builds only `root 1: tbf` + `10: pfifo|bfifo` under 1:1, replaces only a default
qdisc or its own form, refuses anything else (UnsupportedShaping naming the port), and
cannot delay or drop (refused, naming the back-end).
"""
from __future__ import annotations

import asyncio
import json

import pytest

from bridges.base import Direction, PipeConfig, ShaperState, apply, read_state, restore, shaper_class
from bridges.tc import TcShaper, interpret_qdiscs, tbf_burst_bytes
from controller.commands import CommandResult
from controller.errors import UnsupportedShaping, VerifyError
from controller.inventory import load_inventory
from controller.parsers import tc as tc_parser
from controller.units import Queue
from tests.support.fakes_linux import FakeLinuxBridge
from tests.support.shipped import ROOT, no_state_dir

TC = ROOT / "tests" / "fixtures" / "generated" / "tc"
F, R = Direction.FORWARD, Direction.REVERSE
P1F, P1R = ("path1", F), ("path1", R)


def fx(name: str) -> str:
    return (TC / name).read_text()


def qdiscs(name: str) -> list[tc_parser.Qdisc]:
    return tc_parser.parse(fx(name), dev="tcfx0")


@pytest.fixture(scope="module")
def inv():
    with no_state_dir():
        yield load_inventory(ROOT / "inventory" / "virtual.yaml")


@pytest.fixture
def shaper(inv) -> TcShaper:
    return TcShaper(inv, "br1")


def state(shaper: TcShaper, pa: str, pb: str) -> ShaperState:
    """parse_state on the shaper's own read commands, answered with fixture texts per port."""
    outs = {"pa": pa, "pb": pb}
    return shaper.parse_state([CommandResult("br1", c.argv, 0, outs[c.argv[-1]], "") for c in shaper.read_commands()])


def run(coro):
    return asyncio.run(coro)


# ---- interpret_qdiscs on real captures -----------------------------------------------------


@pytest.mark.parametrize("name", ["01_default.json", "01_default.s.json", "06_after_delete.s.json"])
def test_default_noqueue_is_unshaped(name):
    assert interpret_qdiscs(qdiscs(name)) == (None, {}, None)


def test_no_qdiscs_is_unshaped():
    assert interpret_qdiscs([]) == (None, {}, None)


@pytest.mark.parametrize("name", ["02_tbf_pfifo.json", "02_tbf_pfifo.s.json", "02_tbf_pfifo.fresh.s.json"])
def test_tbf_pfifo_is_ctl_form_with_slots(name):
    config, _, problem = interpret_qdiscs(qdiscs(name))
    assert problem is None
    # JSON rate 2500000 B/s -> 20 Mbit/s; pfifo limit 50 packets -> 50 slots
    assert config == PipeConfig(bw_bps=20_000_000, queue=Queue(slots=50), burst_bytes=32767)


def test_tbf_bfifo_is_ctl_form_with_bytes():
    config, ctrs, problem = interpret_qdiscs(qdiscs("03_tbf_bfifo.s.json"))
    assert problem is None
    assert config.bw_bps == 20_000_000
    assert config.queue == Queue(bytes=65536)
    assert ctrs["drop_queue_pkts"] == 31098          # the bfifo's drops
    assert ctrs["tx_bytes"] == 7578251 and ctrs["tx_pkts"] == 5433
    assert ctrs["overlimits"] == 43177


def test_counters_during_traffic():
    _, ctrs, _ = interpret_qdiscs(qdiscs("02_tbf_pfifo.s.during_traffic.json"))
    assert ctrs == {"tx_bytes": 11375712, "tx_pkts": 7992, "drop_queue_pkts": 0, "queue_bytes": 70030,
                    "queue_pkts": 47, "overlimits": 19719}


def test_no_counters_without_stats():
    config, ctrs, _ = interpret_qdiscs(qdiscs("02_tbf_pfifo.json"))
    assert config is not None and ctrs == {}


def test_htb_root_is_foreign():
    config, ctrs, problem = interpret_qdiscs(qdiscs("05_htb.s.json"))
    assert config is None and ctrs == {}
    assert problem == "root htb 1:"


@pytest.mark.parametrize("name", ["04_tbf_1gbit.s.json", "07_tbf_and_ingress.s.json"])
def test_tbf_without_ctl_child_is_foreign(name):
    # tbf with its internal default child: not ctl's form, ctl could not restore it exactly
    config, _, problem = interpret_qdiscs(qdiscs(name))
    assert config is None
    assert problem is not None and "tbf" in problem


def test_ingress_does_not_change_the_egress_reading():
    # 02's egress qdiscs plus the ingress qdisc captured in 07 (both real objects, one list)
    ingress = [o for o in json.loads(fx("07_tbf_and_ingress.s.json")) if o["kind"] == "ingress"]
    combined = json.dumps(json.loads(fx("02_tbf_pfifo.s.json")) + ingress)
    config, _, problem = interpret_qdiscs(tc_parser.parse(combined, dev="tcfx0"))
    assert problem is None and config.bw_bps == 20_000_000 and config.queue == Queue(slots=50)


# ---- ports and parse_state --------------------------------------------------------------


def test_registered_as_tc():
    assert shaper_class("tc") is TcShaper


def test_forward_is_b_port_egress_reverse_is_a_port(shaper):
    assert shaper.port(P1F) == "pb"
    assert shaper.port(P1R) == "pa"
    assert shaper.pipes() == [P1F, P1R]            # br1 carries path1 only


def test_read_commands(shaper):
    assert [c.argv for c in shaper.read_commands()] == [
        ("tc", "-j", "-s", "qdisc", "show", "dev", "pa"),
        ("tc", "-j", "-s", "qdisc", "show", "dev", "pb")]
    assert all(not c.mutates for c in shaper.read_commands())


def test_parse_state_maps_ports_to_directions(shaper):
    st = state(shaper, pa=fx("01_default.s.json"), pb=fx("03_tbf_bfifo.s.json"))
    assert st.pipes[P1R] is None
    assert st.pipes[P1F].bw_bps == 20_000_000 and st.pipes[P1F].queue == Queue(bytes=65536)
    assert st.counters[P1F]["drop_queue_pkts"] == 31098
    assert P1R not in st.counters
    assert st.details["foreign"] == {}
    assert st.raw["tc -j -s qdisc show dev pb"] == fx("03_tbf_bfifo.s.json")


def test_parse_state_records_foreign_port(shaper):
    st = state(shaper, pa=fx("05_htb.s.json"), pb=fx("01_default.s.json"))
    assert st.details["foreign"] == {"pa": "root htb 1:"}
    assert st.pipes == {P1F: None, P1R: None}


# ---- validate -------------------------------------------------------------------------------


def test_validate_refuses_delay_naming_the_backend(shaper):
    with pytest.raises(UnsupportedShaping) as ei:
        shaper.validate({P1F: PipeConfig(bw_bps=20_000_000, delay_us=50_000)})
    msg = str(ei.value)
    assert "br1 (tc) link path1 forward" in msg
    assert "delay 50ms" in msg and "the tc back-end cannot delay packets" in msg


def test_validate_refuses_plr_naming_the_backend(shaper):
    with pytest.raises(UnsupportedShaping) as ei:
        shaper.validate({P1R: PipeConfig(bw_bps=20_000_000, plr=0.0001)})
    msg = str(ei.value)
    assert "br1 (tc) link path1 reverse" in msg
    assert "loss 0.01%" in msg and "tc back-end cannot drop packets at random" in msg


def test_validate_refuses_a_link_of_another_bridge(shaper):
    with pytest.raises(UnsupportedShaping, match="br1: link path2 is not on this bridge"):
        shaper.validate({("path2", F): PipeConfig(bw_bps=20_000_000)})


def test_validate_accepts_rate_and_both_queue_kinds(shaper):
    shaper.validate({P1F: PipeConfig(bw_bps=20_000_000, queue=Queue(slots=50)),
                     P1R: PipeConfig(bw_bps=10**9, queue=Queue(bytes=65536))})
    shaper.validate({P1F: PipeConfig()})     # unlimited


# ---- plan ---------------------------------------------------------------------------------


def test_plan_shaped_slots(shaper):
    st = state(shaper, pa=fx("01_default.s.json"), pb=fx("01_default.s.json"))
    cmds = shaper.plan({P1F: PipeConfig(bw_bps=20_000_000, queue=Queue(slots=50))}, st)
    burst = tbf_burst_bytes(20_000_000)
    assert [c.argv for c in cmds] == [
        ("tc", "qdisc", "replace", "dev", "pb", "root", "handle", "1:", "tbf", "rate", "20000000bit",
         "burst", str(burst), "limit", str(50 * 1514)),
        ("tc", "qdisc", "replace", "dev", "pb", "parent", "1:1", "handle", "10:", "pfifo", "limit", "50")]
    assert all(c.mutates for c in cmds)


def test_plan_shaped_bytes(shaper):
    st = state(shaper, pa=fx("01_default.s.json"), pb=fx("01_default.s.json"))
    cmds = shaper.plan({P1R: PipeConfig(bw_bps=100_000_000, queue=Queue(bytes=65536))}, st)
    assert cmds[0].argv[:11] == ("tc", "qdisc", "replace", "dev", "pa", "root", "handle", "1:", "tbf", "rate",
                                 "100000000bit")
    assert cmds[0].argv[-2:] == ("limit", "65536")
    assert cmds[1].argv[-3:] == ("bfifo", "limit", "65536")


def test_tbf_burst_reaches_the_rate():
    assert tbf_burst_bytes(20_000_000) == 2 * 1514          # at least two full frames
    assert tbf_burst_bytes(10**9) == 125_000                # 1 ms of bytes
    assert tbf_burst_bytes(1_000_001) == 3028


def test_plan_unlimited_deletes_only_ctl_state(shaper):
    shaped = state(shaper, pa=fx("02_tbf_pfifo.s.json"), pb=fx("01_default.s.json"))
    cmds = shaper.plan({P1F: PipeConfig(), P1R: PipeConfig()}, shaped)
    assert [c.argv for c in cmds] == [("tc", "qdisc", "del", "dev", "pa", "root")]
    assert cmds[0].mutates


def test_plan_unlimited_on_default_is_nothing(shaper):
    st = state(shaper, pa=fx("01_default.s.json"), pb=fx("06_after_delete.s.json"))
    assert shaper.plan({P1F: PipeConfig(), P1R: PipeConfig()}, st) == []


@pytest.mark.parametrize("foreign", ["05_htb.s.json", "04_tbf_1gbit.s.json", "07_tbf_and_ingress.s.json"])
def test_plan_refuses_a_foreign_qdisc_naming_the_port(shaper, foreign):
    st = state(shaper, pa=fx("01_default.s.json"), pb=fx(foreign))
    with pytest.raises(UnsupportedShaping) as ei:
        shaper.plan({P1F: PipeConfig(bw_bps=20_000_000)}, st)
    assert "br1: port pb has a qdisc ctl did not create" in str(ei.value)
    # the other port is not touched by the refusal either way
    assert shaper.plan({P1R: PipeConfig(bw_bps=20_000_000)}, st)


# ---- verify ---------------------------------------------------------------------------------


def test_verify_equal_is_empty(shaper):
    st = state(shaper, pa=fx("01_default.s.json"), pb=fx("02_tbf_pfifo.s.json"))
    assert shaper.verify({P1F: PipeConfig(bw_bps=20_000_000, queue=Queue(slots=50)), P1R: None}, st) == []
    assert shaper.verify({P1R: PipeConfig()}, st) == []     # unlimited = no qdisc of ours


def test_verify_reports_differences_by_field(shaper):
    st = state(shaper, pa=fx("01_default.s.json"), pb=fx("02_tbf_pfifo.s.json"))
    diffs = shaper.verify({P1F: PipeConfig(bw_bps=10_000_000, queue=Queue(bytes=65536))}, st)
    assert diffs == ["path1 forward (pb): bw_bps expected 10 Mbit/s, found 20 Mbit/s",
                     "path1 forward (pb): queue expected 64KiB, found 50 slots"]


def test_verify_reports_missing_and_unexpected_shaping(shaper):
    st = state(shaper, pa=fx("01_default.s.json"), pb=fx("02_tbf_pfifo.s.json"))
    missing = shaper.verify({P1R: PipeConfig(bw_bps=20_000_000)}, st)
    assert len(missing) == 1 and missing[0].startswith("path1 reverse (pa): expected bw 20 Mbit/s")
    assert missing[0].endswith("found unshaped")
    extra = shaper.verify({P1F: None}, st)
    assert len(extra) == 1 and extra[0].startswith("path1 forward (pb): expected unshaped, found bw 20 Mbit/s")


def test_verify_ignores_burst(shaper):
    st = state(shaper, pa=fx("01_default.s.json"), pb=fx("02_tbf_pfifo.s.json"))
    assert shaper.verify({P1F: PipeConfig(bw_bps=20_000_000, queue=Queue(slots=50), burst_bytes=3028)}, st) == []


# ---- plan_restore ---------------------------------------------------------------------------


def test_restore_to_default_deletes_root(shaper):
    before = state(shaper, pa=fx("01_default.s.json"), pb=fx("01_default.s.json"))
    now = state(shaper, pa=fx("02_tbf_pfifo.s.json"), pb=fx("03_tbf_bfifo.s.json"))
    assert sorted(c.argv for c in shaper.plan_restore(before, now)) == [
        ("tc", "qdisc", "del", "dev", "pa", "root"), ("tc", "qdisc", "del", "dev", "pb", "root")]


def test_restore_to_previous_ctl_form(shaper):
    before = state(shaper, pa=fx("01_default.s.json"), pb=fx("02_tbf_pfifo.s.json"))
    now = state(shaper, pa=fx("01_default.s.json"), pb=fx("03_tbf_bfifo.s.json"))
    cmds = [c.argv for c in shaper.plan_restore(before, now)]
    assert cmds == [
        ("tc", "qdisc", "replace", "dev", "pb", "root", "handle", "1:", "tbf", "rate", "20000000bit",
         "burst", "32767", "limit", str(50 * 1514)),
        ("tc", "qdisc", "replace", "dev", "pb", "parent", "1:1", "handle", "10:", "pfifo", "limit", "50")]


def test_restore_nothing_when_unchanged(shaper):
    before = state(shaper, pa=fx("01_default.s.json"), pb=fx("02_tbf_pfifo.s.json"))
    now = state(shaper, pa=fx("06_after_delete.s.json"), pb=fx("02_tbf_pfifo.s.during_traffic.json"))
    assert shaper.plan_restore(before, now) == []


# ---- the apply -> restore loop on the test double -------------------------------------------


def test_apply_then_restore_on_a_default_bridge(shaper):
    host = FakeLinuxBridge("br1", ["pa", "pb"])
    desired = {P1F: PipeConfig(bw_bps=20_000_000, queue=Queue(slots=50)),
               P1R: PipeConfig(bw_bps=100_000_000, queue=Queue(bytes=65536))}
    before, after = run(apply(shaper, host, desired))
    assert before.pipes == {P1F: None, P1R: None}
    assert after.pipes[P1F].bw_bps == 20_000_000 and after.pipes[P1F].queue == Queue(slots=50)
    assert after.pipes[P1R].bw_bps == 100_000_000 and after.pipes[P1R].queue == Queue(bytes=65536)
    # the host really holds ctl's form, in the captured JSON shape
    pb = json.loads(host.show("pb"))
    assert [(q["kind"], q["handle"], q.get("parent")) for q in pb] == [("tbf", "1:", None), ("pfifo", "10:", "1:1")]
    assert pb[0]["options"]["rate"] == 2_500_000
    restored = run(restore(shaper, host, before))
    assert restored.pipes == {P1F: None, P1R: None}
    assert host.show("pa") == host.show("pb") == fx("01_default.s.json").strip() + "\n"
    assert ("tc", "qdisc", "del", "dev", "pa", "root") in host.mutations


def test_apply_then_restore_to_a_previous_ctl_state(shaper):
    host = FakeLinuxBridge("br1", ["pa", "pb"])
    host.load_json("pb", fx("02_tbf_pfifo.s.json"))      # left by an earlier run
    before, _ = run(apply(shaper, host, {P1F: PipeConfig(bw_bps=50_000_000, queue=Queue(bytes=65536))}))
    assert before.pipes[P1F].bw_bps == 20_000_000
    assert json.loads(host.show("pb"))[1]["kind"] == "bfifo"
    restored = run(restore(shaper, host, before))
    assert restored.pipes[P1F].bw_bps == 20_000_000 and restored.pipes[P1F].queue == Queue(slots=50)
    assert restored.pipes[P1R] is None


def test_apply_refuses_a_foreign_bridge_before_any_change(shaper):
    host = FakeLinuxBridge("br1", ["pa", "pb"])
    host.load_json("pb", fx("05_htb.s.json"))
    with pytest.raises(UnsupportedShaping, match="port pb"):
        run(apply(shaper, host, {P1F: PipeConfig(bw_bps=20_000_000)}))
    assert host.mutations == []


def test_apply_refuses_delay_before_reading_anything(shaper):
    host = FakeLinuxBridge("br1", ["pa", "pb"])
    with pytest.raises(UnsupportedShaping):
        run(apply(shaper, host, {P1F: PipeConfig(bw_bps=20_000_000, delay_us=10_000)}))
    assert host.log == []


def test_apply_is_idempotent(shaper):
    host = FakeLinuxBridge("br1", ["pa", "pb"])
    desired = {P1F: PipeConfig(bw_bps=20_000_000), P1R: PipeConfig(bw_bps=20_000_000)}
    run(apply(shaper, host, desired))
    first = (host.show("pa"), host.show("pb"))
    _, after = run(apply(shaper, host, desired))
    assert (host.show("pa"), host.show("pb")) == first
    assert after.pipes[P1F].bw_bps == 20_000_000


@pytest.mark.parametrize("bw", [20_000_000, 8_000_001, 1_000_007, 64_007])
def test_apply_verifies_rates_that_tc_rounds_to_bytes(shaper, bw):
    # tc keeps bytes/s (bit/s / 8, truncated): a rate that is not a multiple of 8 reads back
    # up to 7 bit/s lower; the module promises verify allows that rounding.
    host = FakeLinuxBridge("br1", ["pa", "pb"])
    try:
        _, after = run(apply(shaper, host, {P1F: PipeConfig(bw_bps=bw)}))
    except VerifyError as exc:
        pytest.fail(f"tc's byte rounding of {bw} bit/s reported as a difference: {exc}")
    assert abs(after.pipes[P1F].bw_bps - bw) < 8


def test_restore_verifies_by_reading_back(shaper):
    # A host that ignores `tc qdisc del` leaves ctl's qdisc in place: restore must notice.
    class StickyBridge(FakeLinuxBridge):
        def _del_root(self, port, argv):
            return 0, "", ""
    host = StickyBridge("br1", ["pa", "pb"])
    before, _ = run(apply(shaper, host, {P1F: PipeConfig(bw_bps=20_000_000)}))
    with pytest.raises(VerifyError, match="path1 forward"):
        run(restore(shaper, host, before))


def test_read_state_keeps_raw_outputs(shaper):
    host = FakeLinuxBridge("br1", ["pa", "pb"])
    host.load_json("pa", fx("03_tbf_bfifo.s.json"))
    st = run(read_state(shaper, host))
    assert json.loads(st.raw["tc -j -s qdisc show dev pa"]) == json.loads(fx("03_tbf_bfifo.s.json"))
    assert st.pipes[P1R].queue == Queue(bytes=65536)


# ---- what tc holds differently: a warning and an entry of the run's conversions ------------------


def test_a_rate_tc_cannot_hold_exactly_is_a_conversion(shaper):
    """tc keeps rates in whole bytes per second: 1,000,001 bit/s is held as 1,000,000 bit/s
    (verify accepts that reading); a multiple of 8 bit/s is held exactly."""
    (c,) = shaper.conversions({("path1", F): PipeConfig(bw_bps=1_000_001, queue=Queue(slots=50)),
                               ("path1", R): PipeConfig(bw_bps=20_000_000, queue=Queue(slots=50))})
    assert c.what == "rate of path1 forward on br1 (tc, pb)"
    assert (c.asked, c.applied) == ("1,000,001 bit/s", "1,000,000 bit/s (125,000 B/s)")
    assert "whole bytes per second" in c.reason
    assert shaper.conversions({("path1", F): PipeConfig(bw_bps=20_000_000), ("path1", R): PipeConfig()}) == []
