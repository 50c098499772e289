"""bridges.dummynet: exact commands, limits, verification, restore, and the apply -> restore loop.

The loop runs against tests/unit/ipfw_fake.FakeDummynetHost, a simulated FreeBSD bridge
(a test double for hardware we do not have) that reads `pipe N config` arguments the way
ipfw does, quirks included, and prints listings with dummynet.c's own format strings.
"""
from __future__ import annotations

import asyncio
import copy
import json

import pytest
import yaml

from bridges.base import Direction, PipeConfig, ShaperState, apply, read_state, restore, shaper_class
from bridges.dummynet.queues import queue_for_bdp
from bridges.dummynet.rules import pipe_counters
from bridges.dummynet.shaper import DummynetShaper
from bridges.dummynet.values import (
    ASSUMED_RULES,
    SAMPLER_SCRIPT,
    format_bw_arg,
    format_delay_arg,
    format_plr_arg,
    format_queue_arg,
    plr_internal,
    printed_bw,
    printed_plr,
    printed_queue,
)
from bridges.ipfw_host import parse_sample_stream
from bridges.ipfw_parse import parse_pipe_show
from controller.commands import Command, CommandResult, DryRunSession
from controller.errors import ParameterError, UnsupportedShaping
from controller.inventory import Inventory, load_inventory
from controller.units import Conversion, Queue
from tests.support.ipfw_fake import FakeDummynetHost
from tests.support.shipped import ROOT

LAB = ROOT / "inventory" / "lab-rack.example.yaml"
F, R = Direction.FORWARD, Direction.REVERSE

READS = [
    ("freebsd-version", "-u"),
    ("sysctl", "kern.hz", "net.inet.ip.dummynet", "net.link.bridge", "net.link.ether.ipfw", "net.inet.ip.fw.one_pass"),
    ("ipfw", "pipe", "show"),
    ("ipfw", "-S", "list"),
]


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(LAB)


def inventory_with(mutate) -> Inventory:
    data = yaml.safe_load(LAB.read_text())
    mutate(data)
    return Inventory.model_validate(data)


def both(link: str, cfg: PipeConfig) -> dict:
    return {(link, F): cfg, (link, R): cfg}


def state_from(shaper: DummynetShaper, *, release: str = "13.3-RELEASE", sysctl: dict[str, str] | None = None,
               pipes: str = "", rules: str = ASSUMED_RULES) -> ShaperState:
    """A ShaperState from hand-written host outputs (plan/verify are pure: no host needed)."""
    values = {"kern.hz": "1000", "net.inet.ip.dummynet.pipe_slot_limit": "100",
              "net.inet.ip.dummynet.pipe_byte_limit": "1048576", "net.link.bridge.ipfw": "1",
              "net.link.ether.ipfw": "1", "net.inet.ip.fw.one_pass": "1"}
    values.update(sysctl or {})
    outs = [release + "\n", "".join(f"{k}: {v}\n" for k, v in values.items()), pipes, rules]
    cmds = shaper.read_commands()
    return shaper.parse_state([CommandResult(shaper.host, c.argv, 0, o, "") for c, o in zip(cmds, outs)])


def pipe_text(n: int, bw: str = " 20.000 Mbit/s", delay: int = 0, q: str = " 50 sl.", plr: str = "",
              qm: str = "droptail") -> str:
    return (f"{n:05d}: {bw} {delay:4d} ms burst 0 \n"
            f"q{n + 131072:05d} {q}{plr} 0 flows (1 buckets) sched {n + 65536} weight 0 lmax 0 pri 0 {qm}\n"
            f" sched {n + 65536} type FIFO flags 0x0 0 buckets 0 active\n")


OUR_RULES_DN2 = ("10000 set 0 pipe 10201 ip from any to any layer2 out recv em0 xmit em1 // ctl:path2:forward\n"
                 "10001 set 0 pipe 10202 ip from any to any layer2 out recv em1 xmit em0 // ctl:path2:reverse\n")


def _rule(n, pipe, a, b, link, d):
    return ("ipfw", "add", str(n), "set", "0", "pipe", str(pipe), "ip", "from", "any", "to", "any", "layer2", "out",
            "recv", a, "xmit", b, "//", f"ctl:{link}:{d}")


# ---- construction and registration ------------------------------------------------------------

def test_registered_and_bound_to_the_host_links(inv):
    assert shaper_class("dummynet") is DummynetShaper and DummynetShaper.kind == "dummynet"
    dn1, dn2 = DummynetShaper(inv, "dn1"), DummynetShaper(inv, "dn2")
    assert dn1.host == "dn1" and list(dn1.links) == ["path1"]
    assert dn1.pipe_of == {("path1", F): 10101, ("path1", R): 10102}
    assert dn1.rule_of == {("path1", F): 10000, ("path1", R): 10001}
    assert dn2.pipe_of == {("path2", F): 10201, ("path2", R): 10202}
    assert dn2.rule_of == {("path2", F): 10000, ("path2", R): 10001}
    caps = dn1.capabilities()
    assert caps.delay and caps.loss and caps.queue_bytes and caps.queue_slots and not caps.masks
    assert caps.max_delay_us == 10_000_000


def test_construction_errors(inv):
    with pytest.raises(Exception, match="not a bridge"):
        DummynetShaper(inv, "a1")

    def pipe_out(d):
        d["links"]["path1"]["forward"]["pipe"] = 20000
    with pytest.raises(Exception, match="outside pipe_range"):
        DummynetShaper(inventory_with(pipe_out), "dn1")

    def tiny_range(d):
        d["hosts"]["dn1"]["shaper"]["rule_range"] = [10000, 10000]
    with pytest.raises(Exception, match="too small"):
        DummynetShaper(inventory_with(tiny_range), "dn1")


# ---- unit rendering -----------------------------------------------------------------------------

def test_values_rendered_as_dummynet_reads_them():
    assert [format_bw_arg(x) for x in (100_000_000, 20_000_000, 10**9, 1_500_000, 64_000, 1_234_567, None)] == \
        ["100Mbit/s", "20Mbit/s", "1000Mbit/s", "1500Kbit/s", "64Kbit/s", "1234567bit/s", "0"]
    assert [format_delay_arg(x) for x in (0, 1000, 300_000)] == ["0ms", "1ms", "300ms"]
    with pytest.raises(ParameterError):
        format_delay_arg(500)
    assert [format_plr_arg(x) for x in (0.0, 0.05, 1e-05, 0.001, 1.0)] == ["0", "0.05", "0.00001", "0.001", "1"]
    assert [format_queue_arg(q) for q in (Queue(slots=50), Queue(bytes=65536), Queue(bytes=3000))] == \
        ["50", "64Kbytes", "3000B"]


def test_printed_forms_and_plr_quantisation():
    assert printed_bw(100_000) == "100.000 Kbit/s" and printed_bw(10**9) == "1.000 Gbit/s"
    assert printed_bw(10**9, gbit=False) == "1000.000 Mbit/s" and printed_bw(None) == "unlimited"
    assert printed_bw(1_234_567) == "1.235 Mbit/s"                 # what verification can see
    assert plr_internal(0.05) == 107374182 and plr_internal(1.0) == 0x7FFFFFFF and plr_internal(2.0) == 0x7FFFFFFF
    assert printed_plr(0.05) == "0.050000" and printed_plr(1e-6) == "0.000001" and printed_plr(0.0) is None
    assert printed_plr(1e-10) is None                               # the kernel would hold 0: refused by validate
    assert printed_queue(Queue(slots=50)) == "50 sl." and printed_queue(Queue(bytes=10240)) == "10 KB"
    assert printed_queue(Queue(bytes=3000)) == "3000 B"


# ---- golden command lines ------------------------------------------------------------------------

def test_golden_distinct_bottleneck_dry_run(inv):
    """path1 100 Mbit/s both ways (dn1, FreeBSD 14.1: dnctl), path2 20 Mbit/s (dn2, 13.3: ipfw),
    queue 50 slots, no delay, no loss: every command in order, as a dry run prints it."""
    cases = {"dn1": ("path1", 100_000_000, "dnctl", "100Mbit/s", 10101, 10102),
             "dn2": ("path2", 20_000_000, "ipfw", "20Mbit/s", 10201, 10202)}
    for host, (link, bw, tool, bw_arg, pf, pr) in cases.items():
        shaper = DummynetShaper(inv, host)
        log: list[CommandResult] = []
        run(apply(shaper, DryRunSession(host, log), both(link, PipeConfig(bw_bps=bw, queue=Queue(slots=50)))))
        assert [r.argv for r in log] == READS + [
            (tool, "pipe", str(pf), "config", "bw", bw_arg, "delay", "0ms", "plr", "0", "queue", "50"),
            (tool, "pipe", str(pr), "config", "bw", bw_arg, "delay", "0ms", "plr", "0", "queue", "50"),
            _rule(10000, pf, "em0", "em1", link, "forward"),
            _rule(10001, pr, "em1", "em0", link, "reverse"),
        ] + READS


def test_golden_shared_bottleneck(inv):
    """100 Mbit/s with 100 ms (path1) / 300 ms (path2) one-way delay in each direction, plr 0,
    queue sized from the BDP at RTT = 2 x delay; the hosts' facts allow 1000 slots / 1 MiB,
    so both BDPs (2.5 MB, 7.5 MB) are clamped to 1000 slots and that is reported."""
    conversions: list[Conversion] = []
    for host, link, delay_ms, tool, (pf, pr) in (("dn1", "path1", 100, "dnctl", (10101, 10102)),
                                                 ("dn2", "path2", 300, "ipfw", (10201, 10202))):
        shaper = DummynetShaper(inv, host)
        q = queue_for_bdp(100_000_000, 2 * delay_ms * 1000, slot_limit=1000, byte_limit=1048576,
                          conversions=conversions)
        assert q == Queue(slots=1000)
        cfg = PipeConfig(bw_bps=100_000_000, delay_us=delay_ms * 1000, plr=0.0, queue=q)
        before = run(read_state(shaper, DryRunSession(host, [])))
        cmds = shaper.plan(both(link, cfg), before)
        assert [c.argv for c in cmds] == [
            (tool, "pipe", str(pf), "config", "bw", "100Mbit/s", "delay", f"{delay_ms}ms", "plr", "0", "queue", "1000"),
            (tool, "pipe", str(pr), "config", "bw", "100Mbit/s", "delay", f"{delay_ms}ms", "plr", "0", "queue", "1000"),
            _rule(10000, pf, "em0", "em1", link, "forward"),
            _rule(10001, pr, "em1", "em0", link, "reverse"),
        ]
        assert all(c.mutates for c in cmds)
    assert len(conversions) == 2
    assert conversions[0].asked == "1 BDP (100 Mbit/s x 200 ms) = 2,500,000 B (2.38 MiB)"
    assert conversions[0].applied == "1000 slots = 1,500,000 B (1.43 MiB) in 1500-byte packets"
    assert conversions[0].reason.startswith("capped: the bridge holds at most 1 MiB (1,048,576 B) by pipe_byte_limit "
                                            "or 1000 slots by pipe_slot_limit; the queue is 60 % of the BDP")


def test_read_and_metadata_commands_are_read_only_with_baseline_assumptions(inv):
    shaper = DummynetShaper(inv, "dn1")
    reads = shaper.read_commands()
    assert [c.argv for c in reads] == READS and not any(c.mutates for c in reads)
    assert reads[0].assume == "14.1-RELEASE\n" and reads[2].assume == "" and reads[3].assume == ASSUMED_RULES
    assert "net.inet.ip.dummynet.pipe_slot_limit: 1000\n" in reads[1].assume        # from Host.facts
    assert "net.link.bridge.ipfw: 1\n" in reads[1].assume                           # the documented tuning
    meta = shaper.metadata_commands()
    assert [c.argv for c in meta] == [
        ("uname", "-a"), ("freebsd-version", "-u"), ("sysctl", "kern.hz"), ("sysctl", "net.inet.ip.dummynet"),
        ("sysctl", "net.link.bridge"), ("sysctl", "net.link.ether.ipfw", "net.inet.ip.fw.one_pass"),
        ("ipfw", "-S", "list", "10000-10999"), ("ipfw", "pipe", "show")]
    assert not any(c.mutates for c in meta)
    assert meta[2].assume == "kern.hz: 1000\n"
    forced = DummynetShaper(inventory_with(lambda d: d["hosts"]["dn1"]["shaper"].update(tool="ipfw")), "dn1")
    plan = forced.plan(both("path1", PipeConfig(bw_bps=10**8)), run(read_state(forced, DryRunSession("dn1", []))))
    assert plan[0].argv[0] == "ipfw"                                # `tool: ipfw` beats the 14.1 release


# ---- limits, checked before anything is sent -----------------------------------------------------

@pytest.mark.parametrize("cfg,error,needle", [
    (PipeConfig(bw_bps=10**7, delay_us=500), ParameterError, "finer than 1 ms"),
    (PipeConfig(bw_bps=10**7, delay_us=10_001_000), UnsupportedShaping, "above"),
    (PipeConfig(bw_bps=10**7, plr=1e-7), ParameterError, "below 1e-6"),
    (PipeConfig(bw_bps=10**7, queue=Queue(bytes=1000)), ParameterError, "16384"),
    (PipeConfig(bw_bps=10**7, queue=Queue(bytes=10000)), ParameterError, "whole number of KiB"),
    (PipeConfig(bw_bps=10**7, burst_bytes=2 * 10**9), ParameterError, "burst"),
    (PipeConfig(bw_bps=4_294_967_296), UnsupportedShaping, "bw"),
    (PipeConfig(bw_bps=10**7, mask="dst-ip 0xffffffff"), UnsupportedShaping, "masks"),
    (PipeConfig(bw_bps=10**7, sched="fq_codel"), UnsupportedShaping, "scheduler"),
])
def test_static_limits(inv, cfg, error, needle):
    with pytest.raises(error, match=needle):
        DummynetShaper(inv, "dn2").validate({("path2", F): cfg})


def test_unknown_link_is_refused(inv):
    with pytest.raises(ParameterError, match="not carried by this bridge"):
        DummynetShaper(inv, "dn2").validate({("path1", F): PipeConfig(bw_bps=10**7)})


@pytest.mark.parametrize("host_kw,cfg,needle", [
    ({"slot_limit": 100}, PipeConfig(bw_bps=10**7, queue=Queue(slots=500)), "pipe_slot_limit=100"),
    ({"byte_limit": 65536}, PipeConfig(bw_bps=10**7, queue=Queue(bytes=131072)), "pipe_byte_limit=65536"),
    ({"hz": 100}, PipeConfig(bw_bps=10**7, delay_us=15_000), "kern.hz=100"),
    ({"release": "12.4-RELEASE"}, PipeConfig(bw_bps=3 * 10**9), "bandwidth too large"),
    ({"sysctls": {"net.link.bridge.ipfw": "0"}}, PipeConfig(bw_bps=10**7), "net.link.bridge.ipfw is 0"),
    ({"sysctls": {"net.link.ether.ipfw": "0"}}, PipeConfig(bw_bps=10**7), "net.link.ether.ipfw is 0"),
])
def test_host_limits_refused_before_any_change(inv, host_kw, cfg, needle):
    fake = FakeDummynetHost("dn2", **host_kw)
    with pytest.raises((ParameterError, UnsupportedShaping), match=needle):
        run(apply(DummynetShaper(inv, "dn2"), fake, both("path2", cfg)))
    assert fake.mutations == []                                     # refused before anything was sent
    assert [c for c in fake.log if c not in READS] == []


def test_host_limits_allow_what_the_host_allows(inv):
    fake = FakeDummynetHost("dn2", slot_limit=1000, hz=100)
    run(apply(DummynetShaper(inv, "dn2"), fake, both("path2", PipeConfig(bw_bps=10**7, delay_us=20_000,
                                                                         queue=Queue(slots=500)))))
    assert fake.pipes[10201].qsize == 500 and fake.pipes[10201].delay_ticks == 2


def test_rule_outside_range_using_our_pipe_is_refused(inv):
    shaper = DummynetShaper(inv, "dn2")
    st = state_from(shaper, rules="00500 set 0 pipe 10201 ip from any to any\n" + ASSUMED_RULES)
    with pytest.raises(UnsupportedShaping, match="rule 500 outside"):
        shaper.plan(both("path2", PipeConfig(bw_bps=10**7)), st)
    st = state_from(shaper, rules="20000 set 1 prob 0.5 pipe 10202 ip from any to any\n" + ASSUMED_RULES)
    with pytest.raises(UnsupportedShaping, match="rule 20000 outside"):
        shaper.plan(both("path2", PipeConfig(bw_bps=10**7)), st)


def test_existing_pipe_with_unrestorable_features_is_refused(inv):
    shaper = DummynetShaper(inv, "dn2")
    codel = ("10201:  20.000 Mbit/s    0 ms burst 0\n"
             "q141273  50 sl. 0 flows (1 buckets) sched 75737 weight 0 lmax 0 pri 0  AQM CoDel target 5ms "
             "interval 100ms NoECN\n"
             " sched 75737 type FIFO flags 0x0 0 buckets 0 active\n")
    with pytest.raises(UnsupportedShaping, match="queue management CoDel"):
        shaper.plan(both("path2", PipeConfig(bw_bps=10**7)), state_from(shaper, pipes=codel))


# ---- verification by field ----------------------------------------------------------------------

def test_verify_reports_each_field(inv):
    shaper = DummynetShaper(inv, "dn2")
    want = PipeConfig(bw_bps=20_000_000, delay_us=50_000, plr=0.01, queue=Queue(slots=50))
    good = pipe_text(10201, delay=50, plr="plr 0.010000") + pipe_text(10202, delay=50, plr="plr 0.010000")
    assert shaper.verify(both("path2", want), state_from(shaper, pipes=good, rules=OUR_RULES_DN2 + ASSUMED_RULES)) == []
    bad = pipe_text(10201, bw=" 10.000 Mbit/s", delay=40, q="100 sl.", plr="plr 0.020000") + \
        pipe_text(10202, delay=50, plr="plr 0.010000")
    diffs = shaper.verify(both("path2", want), state_from(shaper, pipes=bad, rules=OUR_RULES_DN2 + ASSUMED_RULES))
    label = "dn2 (dummynet) link path2 forward pipe 10201"
    assert diffs == [f"{label}: bw expected 20.000 Mbit/s, found 10.000 Mbit/s",
                     f"{label}: delay expected 50 ms, found 40 ms",
                     f"{label}: loss expected 1% (plr 0.010000), found 2% (plr 0.020000)",
                     f"{label}: queue expected 50 sl., found 100 sl."]


def test_verify_structural_problems(inv):
    shaper = DummynetShaper(inv, "dn2")
    want = both("path2", PipeConfig(bw_bps=20_000_000))
    pipes = pipe_text(10201) + pipe_text(10202)
    no_rules = shaper.verify(want, state_from(shaper, pipes=pipes))
    assert len(no_rules) == 2 and all("frames are not shaped" in d for d in no_rules)
    disabled = "# DISABLED " + OUR_RULES_DN2.splitlines()[0].replace("set 0", "set 4") + "\n" + \
        OUR_RULES_DN2.splitlines()[1] + "\n"
    assert any("disabled set 4" in d for d in shaper.verify(want, state_from(shaper, pipes=pipes, rules=disabled)))
    double = OUR_RULES_DN2 + "10500 set 0 pipe 10201 ip from any to any layer2\n"
    assert any("double shaping" in d for d in shaper.verify(want, state_from(shaper, pipes=pipes, rules=double)))
    missing = shaper.verify(want, state_from(shaper, pipes=pipe_text(10202), rules=OUR_RULES_DN2))
    assert missing == [("dn2 (dummynet) link path2 forward pipe 10201: pipe 10201 does not exist "
                        "(dummynet drops the frames its rule sends there)")]
    off = shaper.verify(want, state_from(shaper, pipes=pipes, rules=OUR_RULES_DN2,
                                         sysctl={"net.link.bridge.ipfw": "0"}))
    assert off and "nothing would be shaped" in off[0]
    unshaped = shaper.verify({("path2", F): None}, state_from(shaper, pipes=pipes, rules=OUR_RULES_DN2))
    assert unshaped and "expected unshaped" in unshaped[0]


def test_verify_catches_what_dummynet_silently_changes(inv):
    """Values the driver would never send, sent to the simulated host to show verify sees them:
    a decimal bw (strtoul stops at the dot), a delay at kern.hz=100 (truncated to ticks)."""
    shaper = DummynetShaper(inv, "dn2")
    fake = FakeDummynetHost("dn2", hz=100)
    run(apply(shaper, fake, both("path2", PipeConfig(bw_bps=1_500_000))))
    run(fake.run(Command(("ipfw", "pipe", "10201", "config", "bw", "1.5Mbit/s", "delay", "15ms", "queue", "50"),
                         mutates=True)))
    diffs = shaper.verify(both("path2", PipeConfig(bw_bps=1_500_000, delay_us=15_000)), run(read_state(shaper, fake)))
    # strtoul() stops at the dot and the multiplier is never seen: 1 bit/s, not even 1 Mbit/s
    assert "bw expected 1.500 Mbit/s, found 1.000 bit/s" in diffs[0]
    assert "delay expected 15 ms, found 10 ms" in diffs[1]


# ---- the apply -> restore loop on the simulated host ---------------------------------------------

def _preloaded(release: str, host: str) -> FakeDummynetHost:
    """A bridge that already has things in and around ctl's ranges."""
    fake = FakeDummynetHost(host, release, slot_limit=1000)
    first = "10101" if host == "dn1" else "10201"
    # a pipe in ctl's pipe_range that ctl will reconfigure, and one it does not use
    run(fake.run(Command(("ipfw", "pipe", first, "config", "bw", "1234Kbit/s", "delay", "7ms", "plr", "0.02",
                          "queue", "30KBytes"), mutates=True)))
    run(fake.run(Command(("ipfw", "pipe", "10900", "config", "bw", "5Mbit/s"), mutates=True)))
    # rules outside the range, and foreign rules inside it (one at a number ctl uses)
    for argv in (("100", "allow", "ip", "from", "any", "to", "any", "via", "lo0"),
                 ("10000", "set", "2", "count", "ip", "from", "any", "to", "any", "layer2"),
                 ("10500", "count", "ip", "from", "10.9.0.0/16", "to", "any"),
                 ("20000", "pipe", "10900", "ip", "from", "any", "to", "any", "layer2", "out", "xmit", "em0"),
                 ("65000", "allow", "ip", "from", "any", "to", "any")):
        run(fake.run(Command(("ipfw", "add") + argv, mutates=True)))
    fake.mutations.clear()
    return fake


@pytest.mark.parametrize("host,release,tool", [("dn1", "14.1-RELEASE", "dnctl"), ("dn2", "13.3-RELEASE", "ipfw")])
def test_apply_then_restore_brings_back_exactly_what_was_there(inv, host, release, tool):
    shaper = DummynetShaper(inv, host)
    link = "path1" if host == "dn1" else "path2"
    fake = _preloaded(release, host)
    pipes0, rules0 = copy.deepcopy(fake.pipes), list(fake.rules)

    desired = {(link, F): PipeConfig(bw_bps=100_000_000, delay_us=100_000, plr=0.001, queue=Queue(bytes=1048576)),
               (link, R): PipeConfig(bw_bps=20_000_000, delay_us=100_000, queue=Queue(slots=50))}
    before, after = run(apply(shaper, fake, desired))
    assert shaper.verify(desired, after) == []
    assert after.pipes == desired                                     # read back from the simulated listing
    lo_r, hi_r = shaper.spec.rule_range
    lo_p, hi_p = shaper.spec.pipe_range
    # only ctl's ranges were touched, pipes with the host's tool
    for m in fake.mutations:
        if m[1] == "pipe":
            assert m[0] == tool and lo_p <= int(m[2]) <= hi_p
        else:
            assert m[0] == "ipfw" and lo_r <= int(m[2]) <= hi_r
    assert (100, 0, ("allow", "ip", "from", "any", "to", "any", "via", "lo0")) in fake.rules
    assert 10500 not in [r[0] for r in fake.rules]                     # ctl's range holds only ctl's rules

    fake.mutations.clear()
    now = run(restore(shaper, fake, before))
    assert fake.pipes == pipes0 and fake.rules == rules0              # exactly as found
    assert shaper.verify_restore(before, now) == []
    assert all(lo_r <= int(m[2]) <= hi_r for m in fake.mutations if m[1] in ("add", "delete"))


def test_an_old_freebsd_with_the_classic_listing_is_shaped_verified_and_restored(inv):
    """FreeBSD 7 (and Emulab/GENI delay nodes): the classic listing, no freebsd-version(1), so the
    inventory names the tool. The simulated host prints the ipfw2.c formats of that code."""
    def old(data):
        data["hosts"]["dn2"]["shaper"]["tool"] = "ipfw"
    shaper = DummynetShaper(inventory_with(old), "dn2")
    fake = _preloaded("7.4-RELEASE", "dn2")
    assert "burst" not in fake._pipe_show() and "queues (1 buckets) droptail" in fake._pipe_show()
    pipes0, rules0 = copy.deepcopy(fake.pipes), list(fake.rules)
    desired = {("path2", F): PipeConfig(bw_bps=100_000_000, delay_us=40_000, plr=0.001, queue=Queue(bytes=65536)),
               ("path2", R): PipeConfig(bw_bps=2_000_000_000, delay_us=40_000, queue=Queue(slots=50))}
    before, after = run(apply(shaper, fake, desired))
    assert before.details["listing_format"] == after.details["listing_format"] == "classic"
    assert shaper.verify(desired, after) == [] and after.pipes == desired
    assert "2000.000 Mbit/s" in fake._pipe_show()              # no Gbit/s in the old code
    # traffic: flows with the (all-zero) mask line and the header; counters and the sampler read them
    fake.pipes[10201].flows = [(10, 15000, 1, 1500, 2)]
    state = run(read_state(shaper, fake))
    assert state.counters[("path2", F)]["tot_bytes"] == 15000 and state.counters[("path2", F)]["drops"] == 2
    assert shaper.verify(desired, state) == []                 # a zero mask is no mask
    [stream] = shaper.counter_streams(0.1)
    proc = run(fake.spawn(stream.argv))
    samples = [s for line in run(_collect(proc)) for s in stream.parse_line(line)]
    assert [s.counters["tot_bytes"] for s in samples if s.key == ("path2", F)] == [15000, 30000, 45000]
    fake.pipes[10201].flows = []                               # the flows expire once traffic ends
    now = run(restore(shaper, fake, before))
    assert fake.pipes == pipes0 and fake.rules == rules0
    assert shaper.verify_restore(before, now) == []


async def _collect(proc) -> list[str]:
    return [line async for line in proc.lines()]


def test_a_classic_wf2q_queue_on_a_pipe_of_ctl_is_a_warning(inv):
    def old(data):
        data["hosts"]["dn2"]["shaper"]["tool"] = "ipfw"
    shaper = DummynetShaper(inventory_with(old), "dn2")
    listing = ("10201:  20.000 Mbit/s    5 ms  50 sl. 0 queues (1 buckets) droptail\n"
               "q00007: weight 10 pipe 10201  50 sl. 0 queues (64 buckets) droptail\n"
               "    mask: 0x00 0xffffffff/0x0000 -> 0x00000000/0x0000\n")
    state = state_from(shaper, release="", pipes=listing)
    assert state.details["listing_format"] == "classic"
    assert any("WF2Q+ queue(s) 7" in w for w in state.details["warnings"])


def test_restore_plan_is_exact(inv):
    shaper = DummynetShaper(inv, "dn2")
    before = state_from(shaper, pipes=pipe_text(10201, bw="  1.234 Mbit/s", delay=7, q="30 KB", plr="plr 0.020000"),
                        rules="00100 set 0 allow ip from any to any via lo0\n"
                              "10000 set 2 count ip from any to any layer2\n" + ASSUMED_RULES)
    now = state_from(shaper, pipes=pipe_text(10201) + pipe_text(10202),
                     rules="00100 set 0 allow ip from any to any via lo0\n" + OUR_RULES_DN2 + ASSUMED_RULES)
    cmds = shaper.plan_restore(before, now)
    assert [c.argv for c in cmds] == [
        ("ipfw", "delete", "10000"),
        ("ipfw", "delete", "10001"),
        ("ipfw", "pipe", "10201", "config", "bw", "1234Kbit/s", "delay", "7ms", "plr", "0.020000", "queue", "30Kbytes"),
        ("ipfw", "pipe", "10202", "delete"),
        ("ipfw", "add", "10000", "set", "2", "count", "ip", "from", "any", "to", "any", "layer2"),
    ]
    assert all(c.mutates for c in cmds)
    assert shaper.plan_restore(before, before) == []


def test_restore_refuses_what_it_cannot_recreate(inv):
    shaper = DummynetShaper(inv, "dn2")
    before = state_from(shaper, pipes="10201:  20.000 Mbit/s    0 ms burst 0\n"
                                      "\t profile: name \"wifi\" loss 0.140000 samples 100\n"
                                      "q141273  50 sl. 0 flows (1 buckets) sched 75737 weight 0 lmax 0 pri 0 droptail\n"
                                      " sched 75737 type FIFO flags 0x0 0 buckets 0 active\n")
    now = state_from(shaper, pipes=pipe_text(10201))
    with pytest.raises(UnsupportedShaping, match="delay profile"):
        shaper.plan_restore(before, now)


def test_state_is_recordable_and_re_readable(inv):
    """A ShaperState goes into the run record as JSON; its raw outputs rebuild the snapshot."""
    shaper = DummynetShaper(inv, "dn2")
    fake = FakeDummynetHost("dn2")
    _, after = run(apply(shaper, fake, both("path2", PipeConfig(bw_bps=20_000_000, plr=0.05))))
    data = json.loads(json.dumps(after.to_json()))
    assert data["pipes"]["path2.forward"]["bw_bps"] == 20_000_000
    assert data["details"]["rules_in_range"][0].startswith("10000 set 0 pipe 10201 ")
    assert data["details"]["pipes_in_range"]["10201"]["flowset"]["plr_text"] == "0.050000"
    assert data["details"]["tool"] == "ipfw" and data["details"]["warnings"] == []
    reloaded = ShaperState(pipes={}, raw=data["raw"])
    assert shaper.verify(both("path2", PipeConfig(bw_bps=20_000_000, plr=0.05)), reloaded) == []


def test_second_apply_changes_nothing_and_stale_rules_are_replaced(inv):
    shaper = DummynetShaper(inv, "dn2")
    fake = FakeDummynetHost("dn2")
    desired = both("path2", PipeConfig(bw_bps=20_000_000))
    run(apply(shaper, fake, desired))
    fake.mutations.clear()
    run(apply(shaper, fake, desired))
    assert fake.mutations == []
    # a leftover rule of another form at ctl's number is replaced, not stacked
    fake.rules = [(10000, 0, ("pipe", "10201", "ip", "from", "any", "to", "any"))] + fake.rules[1:]
    cmds = shaper.plan(desired, run(read_state(shaper, fake)))
    assert [c.argv[:3] for c in cmds] == [("ipfw", "delete", "10000"), ("ipfw", "add", "10000")]


# ---- counters and the sampler --------------------------------------------------------------------

def test_pipe_counters_pure():
    text = ("00061:  20.000 Mbit/s    0 ms burst 0\n"
            "q131133  50 sl. 0 flows (1 buckets) sched 65597 weight 0 lmax 0 pri 0 droptail\n"
            " sched 65597 type FIFO flags 0x0 0 buckets 1 active\n"
            "BKT Prot ___Source IP/port____ ____Dest. IP/port____ Tot_pkt/bytes Pkt/Byte Drp\n"
            "  0 ip           0.0.0.0/0             0.0.0.0/0      483   378358  9 6349   0\n")
    counters = pipe_counters(parse_pipe_show(text), {61: ("path2", F), 62: ("path2", R)})
    assert counters == {("path2", F): {"tot_pkts": 483, "tot_bytes": 378358, "drops": 0, "queued_pkts": 9,
                                       "queued_bytes": 6349, "flows": 1}}


def test_state_counters_and_sampler_stream(inv):
    shaper = DummynetShaper(inv, "dn2")
    fake = FakeDummynetHost("dn2")
    run(apply(shaper, fake, both("path2", PipeConfig(bw_bps=20_000_000))))
    fake.pipes[10201].flows = [(1000, 1_500_000, 3, 4500, 7)]
    st = run(read_state(shaper, fake))
    assert st.counters[("path2", F)] == {"tot_pkts": 1000, "tot_bytes": 1_500_000, "drops": 7, "queued_pkts": 3,
                                         "queued_bytes": 4500, "flows": 1}
    assert st.counters[("path2", R)]["flows"] == 0

    argv = shaper.sampler_argv("0.1")
    assert argv == ("/bin/sh", "-c", SAMPLER_SCRIPT, "ctl-dummynet-sampler", "0.1", "ipfw", "pipe", "show")
    assert "dn2" not in SAMPLER_SCRIPT and "10201" not in SAMPLER_SCRIPT and '"$@"' in SAMPLER_SCRIPT
    assert not shaper.sampler_command().mutates
    with pytest.raises(ParameterError):
        shaper.sampler_argv("0.1; reboot")

    async def sample():
        proc = await fake.spawn(argv)
        return [line async for line in proc.lines()]
    samples = parse_sample_stream(run(sample()))
    assert [s.seq for s in samples] == [1, 2, 3]
    series = [shaper.pipe_counters(s.listing)[("path2", F)]["tot_pkts"] for s in samples]
    assert series == [1000, 1010, 1020]


# ---- queue sizing -----------------------------------------------------------------------------------

def test_queue_for_bdp():
    assert queue_for_bdp(20_000_000, 2_000, factor=0.5) == Queue(bytes=2500)     # below 8 KiB: exact bytes
    assert queue_for_bdp(100_000_000, 100_000, slot_limit=1000) == Queue(slots=834)   # 1.25 MB in 1500 B slots
    with pytest.raises(ParameterError):
        queue_for_bdp(0, 1000)


@pytest.mark.parametrize("args, kw, queue, asked, applied, why", [
    # 1250 B -> the smallest byte queue ctl sets
    ((1_000_000, 10_000), {}, Queue(bytes=1500), "1 BDP (1 Mbit/s x 10 ms) = 1,250 B", "1,500 B",
     "1500 B is the smallest byte queue ctl sets"),
    # 25 000 B -> whole KiB, as `pipe show` prints it
    ((20_000_000, 10_000), {}, Queue(bytes=25600), "1 BDP (20 Mbit/s x 10 ms) = 25,000 B (24.4 KiB)",
     "25 KiB (25,600 B)", "rounded up to whole KiB"),
    # above the byte limit, within the slot limit: bytes held as packets
    ((100_000_000, 100_000), {"slot_limit": 1000}, Queue(slots=834),
     "1 BDP (100 Mbit/s x 100 ms) = 1,250,000 B (1.19 MiB)", "834 slots = 1,251,000 B (1.19 MiB) in 1500-byte packets",
     "above the 1 MiB (1,048,576 B) the bridge holds in bytes (pipe_byte_limit): held as packets"),
    # both limits too small: capped, and how much of the BDP is left said
    ((100_000_000, 200_000), {"what": "queue of path9", "limits_of": "dn9 (dummynet)"}, Queue(bytes=1048576),
     "1 BDP (100 Mbit/s x 200 ms) = 2,500,000 B (2.38 MiB)", "1 MiB (1,048,576 B)",
     "capped: dn9 (dummynet) holds at most 1 MiB (1,048,576 B) by pipe_byte_limit or 100 slots by pipe_slot_limit; "
     "the queue is 41.9 % of the BDP asked for"),
    ((10**9, 40_000), {"factor": 0.5, "byte_limit": 1 << 30}, Queue(bytes=2442 * 1024), "0.5 x 1 BDP (1 Gbit/s x 40 ms) = 2,500,000 B "
     "(2.38 MiB)", "2,442 KiB (2,500,608 B)", "rounded up to whole KiB"),
])
def test_every_departure_from_the_bdp_is_a_conversion(args, kw, queue, asked, applied, why):
    out: list[Conversion] = []
    assert queue_for_bdp(*args, conversions=out, **kw) == queue
    (c,) = out
    assert (c.asked, c.applied) == (asked, applied) and c.reason.startswith(why)
    assert c.what == kw.get("what", "bottleneck queue")
    assert c.warning() == f"warning: {c.what}: {asked} -> {applied}: {c.reason}"


def test_a_plr_the_kernel_holds_differently_is_a_conversion(inv):
    """dummynet keeps (int)(p * 0x7fffffff): 0.0046 % is held as 0.00459998846 %, which shows in ctl's
    6 significant digits; 0.1 % is held as 0.0999999996 %, which does not."""
    shaper = DummynetShaper(inv, "dn1")
    cfg = PipeConfig(bw_bps=10**9, delay_us=20_000, plr=0.000046, queue=Queue(slots=100))
    (c,) = shaper.conversions({("path1", F): cfg, ("path1", R): PipeConfig(bw_bps=10**9, delay_us=20_000)})
    assert c.what == "loss of path1 forward on dn1 (dummynet pipe 10101)"
    assert (c.asked, c.applied) == ("0.0046 %", "0.00459998846 %")
    assert int(0.000046 * 0x7FFFFFFF) / 0x7FFFFFFF * 100 == pytest.approx(0.00459998846, rel=1e-9)
    assert "31-bit integer" in c.reason
    assert shaper.conversions(both("path1", PipeConfig(bw_bps=10**9, plr=0.001))) == []


def test_an_exact_bdp_is_no_conversion():
    out: list[Conversion] = []
    assert queue_for_bdp(8 * 1024 * 1000, 8_000, conversions=out) == Queue(bytes=8192)   # 8192 B exactly
    assert queue_for_bdp(8_000_000, 2_000, conversions=out) == Queue(bytes=2000)          # < 8 KiB, >= 1500 B
    assert out == []


def test_host_warnings_recorded_with_the_state(inv):
    shaper = DummynetShaper(inv, "dn2")
    st = state_from(shaper, sysctl={"net.inet.ip.fw.one_pass": "0", "net.inet.ip.dummynet.io_fast": "1"},
                    rules="00100 set 0 allow ip from any to any via lo0\n"
                          "00200 set 0 deny ip from any to 127.0.0.0/8\n"
                          "00300 set 0 allow ip from any to any layer2\n" + ASSUMED_RULES)
    warnings = st.details["warnings"]
    assert any("one_pass=0" in w for w in warnings) and any("io_fast=1" in w for w in warnings)
    preempt = [w for w in warnings if "comes before ctl's range" in w]
    assert len(preempt) == 1 and preempt[0].startswith("rule 300 ")   # not the loopback rules


def test_dry_run_restore_after_dry_run_apply_prints_only_reads(inv):
    shaper = DummynetShaper(inv, "dn1")
    log: list[CommandResult] = []
    session = DryRunSession("dn1", log)
    before, _ = run(apply(shaper, session, both("path1", PipeConfig(bw_bps=100_000_000))))
    log.clear()
    run(restore(shaper, session, before))
    assert [r.argv for r in log] == READS + READS


def test_forced_dnctl_reads_and_configures_with_dnctl(inv):
    inv14 = inventory_with(lambda d: d["hosts"]["dn2"]["shaper"].update(tool="dnctl"))
    shaper = DummynetShaper(inv14, "dn2")
    fake = FakeDummynetHost("dn2", "14.1-RELEASE")
    before, _ = run(apply(shaper, fake, both("path2", PipeConfig(bw_bps=20_000_000))))
    assert ("dnctl", "pipe", "show") in fake.log and ("ipfw", "pipe", "show") not in fake.log
    assert {m[0] for m in fake.mutations if m[1] == "pipe"} == {"dnctl"}
    run(restore(shaper, fake, before))
    assert fake.pipes == {} and fake.rules == []
