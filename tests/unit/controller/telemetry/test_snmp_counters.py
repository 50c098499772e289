"""CounterTracker and SnmpPoller logic without a real agent.

The net-snmp behaviour simulated here was measured on this machine (net-snmp 5.9.3): the
IF-MIB cache is reloaded by a timer every 300 cs, phase-locked to the agent's start
(reloads seen at sysUpTime = k*300 + 4..7 cs), whatever the poll times.
"""
from __future__ import annotations

import asyncio
import random
import re
import socket
from datetime import datetime

import pytest

from controller.inventory import SNMP, SecretRef
from controller.parsers.snmpwalk import varbinds
from controller.telemetry.snmp.counters import COUNTERS, CounterSample, CounterTracker, Event, IF_COUNTER_DISCONTINUITY, IF_HIGH_SPEED, IF_NAME, LIVE, NET_SNMP, Point, RefreshModel
from controller.telemetry.snmp.poller import AgentConfig, SnmpPoller
from tests.support.shipped import TESTS

RECORDED = TESTS / "fixtures" / "recorded"
NS_PER_CS = 10_000_000


def sample(value: int, uptime_cs: int | None, local_cs: float | None = None, disc: int | None = None) -> CounterSample:
    """A sample whose local receive time equals its uptime unless told otherwise."""
    local = uptime_cs if local_cs is None else local_cs
    ns = int(local * NS_PER_CS)
    return CounterSample(value, uptime_cs, recv_ns=ns, mono_ns=ns, discontinuity_cs=disc)


# ---- live agents (no cache): plain deltas, sysUpTime time base -----------------------------

def test_first_sample_is_a_baseline_without_rate():
    t = CounterTracker(64, refresh=LIVE)
    u = t.update(sample(1000, 100))
    assert u.rate is None and u.delta is None and "baseline" in u.reason


def test_rate_uses_agent_sysuptime_not_the_poll_interval():
    t = CounterTracker(64, refresh=LIVE)
    t.update(sample(1_000, 100, local_cs=0))
    # we received 1.5 s later (network delay, slow loop) but the agent's clock moved 1.00 s
    u = t.update(sample(126_000, 200, local_cs=150))
    assert u.delta == 125_000
    assert u.interval_s == pytest.approx(1.0)
    assert u.rate == pytest.approx(125_000.0)
    assert u.time_base == "sysuptime"


def test_without_sysuptime_the_local_clock_is_the_base_and_said_so():
    t = CounterTracker(64, refresh=LIVE)
    t.update(sample(0, None, local_cs=0))
    u = t.update(sample(500, None, local_cs=200))
    assert u.rate == pytest.approx(250.0)
    assert u.time_base == "local"


def test_idle_counter_on_live_agent_is_a_genuine_zero():
    t = CounterTracker(64, refresh=LIVE)
    t.update(sample(42, 100))
    u = t.update(sample(42, 200))
    assert u.rate == 0.0 and u.delta == 0


# ---- wraps ---------------------------------------------------------------------------------

def test_counter64_single_wrap_is_plausible_at_line_rate():
    t = CounterTracker(64, "octets", refresh=LIVE)
    t.update(sample(2**64 - 1_000, 100))
    u = t.update(sample(4_000, 200), speed_mbps=10_000)
    assert u.delta == 5_000
    assert u.rate == pytest.approx(5_000.0)
    assert [e.kind for e in u.events] == ["counter_wrap"]


def test_counter64_going_down_is_a_reset_not_a_wrap():
    # A "wrap" here would mean ~2**64 octets in one second: impossible, so a reset.
    t = CounterTracker(64, "octets", refresh=LIVE)
    t.update(sample(9_564_865, 100))
    u = t.update(sample(1_200, 200), speed_mbps=10_000)
    assert u.rate is None and u.delta is None
    assert [e.kind for e in u.events] == ["discontinuity"]
    assert "reset" in u.events[0].reason
    # new baseline: the next interval has a rate again
    u2 = t.update(sample(2_200, 300), speed_mbps=10_000)
    assert u2.rate == pytest.approx(1_000.0)


def test_counter32_wrap_of_in_discards():
    t = CounterTracker(32, "packets", refresh=LIVE)
    t.update(sample(2**32 - 10, 100))
    u = t.update(sample(20, 200), speed_mbps=1_000)
    assert u.delta == 30 and u.rate == pytest.approx(30.0)
    assert u.events[0].kind == "counter_wrap"
    assert "Counter32" in u.events[0].reason


def test_counter32_wrap_implausible_at_interface_speed_is_a_discontinuity():
    # lo reports ifHighSpeed 10 (recorded in snmpwalk_ifmib_localhost.txt): ~16 kpps max
    t = CounterTracker(32, "packets", refresh=LIVE)
    t.update(sample(3_000_000_000, 100))
    u = t.update(sample(1_000, 200), speed_mbps=10)
    assert u.rate is None
    assert u.events[0].kind == "discontinuity"


def test_counter32_going_down_with_unknown_speed_cannot_be_called_a_wrap():
    t = CounterTracker(32, "packets", refresh=LIVE)
    t.update(sample(2**32 - 10, 100))
    u = t.update(sample(20, 200), speed_mbps=0)
    assert u.rate is None
    assert "cannot tell a wrap from a reset" in u.events[0].reason


def test_counter32_interval_long_enough_for_two_wraps_gives_no_rate():
    # 10 Gbit/s -> ~16 Mpps of minimum frames -> 2**32 in ~260 s; 10 minutes since the last read
    t = CounterTracker(32, "packets", refresh=LIVE)
    t.update(sample(100, 100))
    u = t.update(sample(200, 100 + 60_000), speed_mbps=10_000)
    assert u.rate is None
    assert "more than once" in u.events[0].reason


def test_value_outside_counter32_range_is_rejected_not_wrapped():
    # recorded (05_snmp_ifmib.md §1.2, Zabbix notes): ifHCInOctets.1 = 1306368016205 > 2**32;
    # fed to a 32-bit tracker by mistake it must be refused, never taken modulo 2**32.
    recorded = [vb for vb in varbinds((RECORDED / "05_snmp_ifmib.md").read_text())
                if vb.printed == "IF-MIB::ifHCInOctets.1" and vb.value == 1306368016205]
    assert recorded, "Zabbix sample not found in the fixture"
    t = CounterTracker(32, "octets", refresh=LIVE)
    t.update(sample(5, 100))
    u = t.update(sample(recorded[0].value, 200))
    assert u.rate is None and u.events[0].kind == "invalid_value"
    # the tracker's state is untouched: the next valid sample still rates against 5
    assert t.update(sample(105, 300)).delta == 100


# ---- restarts and discontinuities ----------------------------------------------------------

def test_agent_restart_sysuptime_back_gives_discontinuity_and_no_rate():
    t = CounterTracker(64, refresh=LIVE)
    t.update(sample(10_000, 50_000))
    u = t.update(sample(10_500, 120, local_cs=50_100))
    assert u.rate is None and u.delta is None
    assert u.events[0].kind == "discontinuity" and "sysUpTime went back" in u.events[0].reason
    u2 = t.update(sample(11_500, 220, local_cs=50_200))
    assert u2.rate == pytest.approx(1_000.0)


def test_restart_suspected_when_uptime_advances_less_than_local_time():
    # agent down 60 s and restarted; by the next poll its uptime is past the old one
    t = CounterTracker(64, refresh=LIVE)
    t.update(sample(10_000, 3_000, local_cs=0))
    u = t.update(sample(99_000, 4_000, local_cs=9_000))   # +10 s of sysUpTime in 90 s
    assert u.rate is None
    assert "restart suspected" in u.events[0].reason


def test_a_reply_that_waited_in_a_busy_controller_is_not_a_restart():
    """Measured 2026-11-27 with 4 CPU hogs beside a run: a GET sent 1.18 s after the previous one
    was answered at once (sysUpTime +1.18 s) but taken in 3.7 s later. Judged by receipt times it
    read as a restart and the run had no SNMP rates. The agent answered inside [sent, received]."""
    t = CounterTracker(64, refresh=LIVE)
    t.update(CounterSample(10_000, 3_000, recv_ns=30 * 10**9, mono_ns=30 * 10**9))
    sent, got = 31_180 * 10**6, 34_910 * 10**6                       # sent +1.18 s, taken in +4.91 s
    u = t.update(CounterSample(11_180, 3_118, recv_ns=got, mono_ns=got, sent_mono_ns=sent))
    assert not u.events and u.rate == pytest.approx(1_000.0)
    # the same receipt times without the sending time: what the old check saw
    t2 = CounterTracker(64, refresh=LIVE)
    t2.update(CounterSample(10_000, 3_000, recv_ns=30 * 10**9, mono_ns=30 * 10**9))
    u2 = t2.update(CounterSample(11_180, 3_118, recv_ns=got, mono_ns=got))
    assert u2.rate is None and "restart suspected" in u2.events[0].reason


def test_restart_suspected_still_seen_when_the_reply_is_late():
    # restarted agent: 90 s passed before the request was even sent, its uptime says 10 s
    t = CounterTracker(64, refresh=LIVE)
    t.update(sample(10_000, 3_000, local_cs=0))
    u = t.update(CounterSample(99_000, 4_000, recv_ns=95 * 10**9, mono_ns=95 * 10**9, sent_mono_ns=90 * 10**9))
    assert u.rate is None and "restart suspected" in u.events[0].reason and "at least 90.00 s" in u.events[0].reason


def test_counter_discontinuity_time_change_gives_discontinuity():
    t = CounterTracker(64, refresh=LIVE)
    t.update(sample(10, 100, disc=0))
    u = t.update(sample(20, 200, disc=150))
    assert u.rate is None and "ifCounterDiscontinuityTime" in u.events[0].reason


def test_recorded_pnet_uptimes_in_document_order_look_like_a_restart():
    """05_snmp_ifmib.md §1.1: the symbolic walk shows sysUpTime (756575), the numeric walk of
    the same switch (602966). Read as two consecutive polls, sysUpTime went back: a rate across
    them would be invented, so there must be none."""
    vbs = varbinds((RECORDED / "05_snmp_ifmib.md").read_text())
    named = [vb.value for vb in vbs if vb.printed == "DISMAN-EXPRESSION-MIB::sysUpTimeInstance"]
    numeric = [vb.value for vb in vbs if vb.oid == "1.3.6.1.2.1.1.3.0" and vb.printed.startswith("iso.")]
    assert named[0] == 756575 and 602966 in numeric
    in_octets = next(vb.value for vb in vbs if vb.printed == "IF-MIB::ifInOctets.1")
    t = CounterTracker(32, "octets", refresh=LIVE)
    t.update(sample(in_octets, named[0]))
    u = t.update(sample(in_octets + 1_000, 602966, local_cs=named[0] + 100))
    assert u.rate is None and u.events[0].kind == "discontinuity"


def test_recorded_siemens_high_speed_in_bits_is_not_trusted_for_wrap_plausibility():
    """The recorded SCALANCE reports ifHighSpeed 10000000 for a 10 Mbit/s port (bit/s instead
    of Mbit/s). Taken at face value (10 Tbit/s) any Counter32 drop would pass as a wrap."""
    vbs = varbinds((RECORDED / "05_snmp_ifmib.md").read_text())
    speed = next(vb.value for vb in vbs if vb.printed == "IF-MIB::ifHighSpeed.1")
    assert speed == 10_000_000
    in_octets = next(vb.value for vb in vbs if vb.printed == "IF-MIB::ifInOctets.1")
    t = CounterTracker(32, "octets", refresh=LIVE)
    t.update(sample(in_octets, 756575), speed_mbps=speed)
    u = t.update(sample(1_000, 756675), speed_mbps=speed)
    assert u.rate is None
    assert "implausible" in u.events[0].reason and "cannot tell a wrap from a reset" in u.events[0].reason


def test_recorded_cisco_30s_series_rates():
    """05_snmp_ifmib.md §1.2: ifHCInOctets/ifHCOutOctets every 30 s with `date` lines and no
    sysUpTime: rates on the local clock; the first in-rate is the 2703.2 bit/s the file computes."""
    text = (RECORDED / "05_snmp_ifmib.md").read_text()
    block = text.split("### 1.2", 1)[1].split("```", 2)[1]
    times = [datetime.strptime(m.group(1), "%H:%M:%S") for m in re.finditer(r"(\d\d:\d\d:\d\d) CST", block)]
    vbs = varbinds(block)
    ins = [vb.value for vb in vbs if vb.printed == "IF-MIB::ifHCInOctets.1"]
    outs = [vb.value for vb in vbs if vb.printed == "IF-MIB::ifHCOutOctets.1"]
    assert len(times) == len(ins) == len(outs) == 6
    t_in, t_out = CounterTracker(64, refresh=LIVE), CounterTracker(64, refresh=LIVE)
    rates_in, rates_out = [], []
    for when, i, o in zip(times, ins, outs):
        local_cs = (when - times[0]).total_seconds() * 100
        ui, uo = t_in.update(sample(i, None, local_cs)), t_out.update(sample(o, None, local_cs))
        if ui.rate is not None:
            rates_in.append(ui.rate * 8)
            rates_out.append(uo.rate * 8)
    assert rates_in[0] == pytest.approx(2703.2)
    assert rates_in == pytest.approx([(b - a) * 8 / 30 for a, b in zip(ins, ins[1:])])
    assert rates_out == pytest.approx([(b - a) * 8 / 30 for a, b in zip(outs, outs[1:])])


# ---- slow-refresh (cached) agents ----------------------------------------------------------

class CachedAgent:
    """A counter behind net-snmp's cache: reloads every `period` cs at `phase`, live counter
    growing at `rate(t)` units/s (t in cs)."""

    def __init__(self, rate=lambda t: 125_000.0, period: int = 300, phase: int = 5) -> None:
        self.rate, self.period, self.phase = rate, period, phase

    def counter(self, t_cs: float) -> int:
        # integral of rate over [0, t], 1 cs steps (rates are piecewise constant in tests)
        whole = int(t_cs)
        return int(sum(self.rate(x) / 100 for x in range(whole)))

    def load_time(self, u: float) -> float:
        return self.phase + ((u - self.phase) // self.period) * self.period

    def read(self, u: float) -> int:
        return self.counter(self.load_time(u))


def run_polls(agent: CachedAgent, poll_cs: float, n: int, *, hint: bool, jitter: float = 0.0,
              start: float = 1_037.0, model: RefreshModel = NET_SNMP, seed: int = 1):
    rnd = random.Random(seed)
    t = CounterTracker(64, "octets", refresh=model)
    out = []
    prev_load = None
    for k in range(n):
        u = start + k * poll_cs + (rnd.uniform(-jitter, jitter) if jitter else 0.0)
        load = agent.load_time(u)
        refreshed = (prev_load is not None and load != prev_load) if hint else None
        prev_load = load
        up = t.update(sample(agent.read(u), int(u)), refreshed=refreshed, speed_mbps=10_000)
        out.append((u, up))
    return out


@pytest.mark.parametrize("poll_cs", [50, 100, 200])
@pytest.mark.parametrize("hint", [True, False])
def test_cached_agent_never_zero_never_burst(poll_cs: int, hint: bool):
    """Constant 1 Mbit/s behind a 3 s cache: every reported rate is the true rate (within timer
    jitter), identical values never produce a 0, no burst after them, and the rates tile time."""
    agent = CachedAgent(rate=lambda t: 125_000.0)
    res = run_polls(agent, poll_cs, 60, hint=hint, jitter=3)
    rates = [(u, up) for u, up in res if up.rate is not None]
    assert len(rates) >= (60 * poll_cs / 300) // 3, "too few rates"
    for _, up in rates:
        assert up.rate == pytest.approx(125_000.0, rel=0.03), up
        assert up.interval_s >= 2.9
    unchanged = [up for _, up in res if up.rate is None and up.reason and "cached value" in up.reason]
    assert unchanged, "polls inside a cache period must be reported as 'no rate', not 0"
    # the rates tile time: each delta is exactly the increase since the previous rated value
    # (unless the tracker re-anchored in between, which it says)
    prev = None
    for _, up in res:
        if up.reason and "re-anchored" in up.reason:
            prev = None
        if up.rate is not None:
            if prev is not None:
                assert up.delta == up.value - prev
            prev = up.value


def test_cached_agent_rate_intervals_are_whole_refresh_periods_when_polled_every_second():
    agent = CachedAgent(rate=lambda t: 50_000.0)
    res = run_polls(agent, 100, 40, hint=True, jitter=2)
    intervals = [up.interval_s for _, up in res if up.rate is not None]
    assert intervals and all(iv == pytest.approx(3.0) for iv in intervals)


def test_naive_poll_interval_rates_would_invent_zeros_and_bursts():
    """Why the tracker exists: dividing raw differences by the poll interval on this agent."""
    agent = CachedAgent(rate=lambda t: 125_000.0)
    us = [1_037 + 100 * k for k in range(12)]
    vals = [agent.read(u) for u in us]
    naive = [(b - a) / 1.0 for a, b in zip(vals, vals[1:])]
    assert 0.0 in naive and max(naive) == pytest.approx(3 * 125_000.0, rel=0.02)
    tracked = [up.rate for _, up in run_polls(agent, 100, 12, hint=True) if up.rate is not None]
    assert tracked and all(r == pytest.approx(125_000.0, rel=0.03) for r in tracked)


def test_cached_agent_idle_with_refresh_evidence_is_zero():
    agent = CachedAgent(rate=lambda t: 0.0)
    res = run_polls(agent, 100, 15, hint=True)
    rates = [up.rate for _, up in res if up.rate is not None]
    assert rates and all(r == 0.0 for r in rates)


def test_cached_agent_idle_without_evidence_is_not_reported_as_zero_within_a_period():
    t = CounterTracker(64, refresh=NET_SNMP)
    t.update(sample(7, 1_000))
    for u in (1_100, 1_200, 1_290):
        up = t.update(sample(7, u))
        assert up.rate is None and "refresh period" in up.reason


def test_cached_agent_burst_after_idle_is_averaged_over_the_real_interval():
    # idle, then 4 Mbit/s from t=2000 cs: the first fresh sample must not show 3x the rate
    agent = CachedAgent(rate=lambda t: 500_000.0 if t >= 2_000 else 0.0)
    res = run_polls(agent, 100, 40, hint=True, jitter=2)
    rates = [up.rate for _, up in res if up.rate is not None]
    assert max(rates) <= 500_000.0 * 1.03
    assert rates[-1] == pytest.approx(500_000.0, rel=0.03)


def test_cached_agent_slow_polling_gives_fewer_but_correct_rates():
    # polls every 5 s (slower than the 3 s cache): per-interval timing is uncertain by up to
    # 3 s, so rates come over longer intervals -- and are right.
    agent = CachedAgent(rate=lambda t: 125_000.0)
    res = run_polls(agent, 500, 40, hint=True, jitter=3)
    rates = [up for _, up in res if up.rate is not None]
    assert rates
    for up in rates:
        assert up.rate == pytest.approx(125_000.0, rel=NET_SNMP.max_time_error + 0.01)
    withheld = [up for _, up in res if up.rate is None and up.reason and "uncertain" in up.reason]
    assert withheld


def test_first_interval_after_baseline_is_not_a_burst():
    # recorded effect on this machine: first poll at up=595 got a value loaded ~3 s earlier,
    # the next at up=607 a fresh one: 0.12 s of "interval" for 3 s of traffic.
    agent = CachedAgent(rate=lambda t: 125_000.0, phase=5)
    t = CounterTracker(64, refresh=NET_SNMP)
    t.update(sample(agent.read(595), 595))
    u = t.update(sample(agent.read(607), 607), refreshed=True)
    assert u.rate is None or u.rate == pytest.approx(125_000.0, rel=0.03)


# ---- the poller, with a simulated agent (no network) ---------------------------------------

class FakeAgent:
    """Answers the poller's GETs like net-snmp would, from a simulated clock."""

    def __init__(self, names: dict[int, str], start_mono_cs: float = 0.0) -> None:
        from pysnmp.proto.rfc1902 import Counter32, Counter64, Gauge32, OctetString, TimeTicks
        self.T = dict(c32=Counter32, c64=Counter64, g=Gauge32, s=OctetString, tt=TimeTicks)
        self.names = names
        self.boot_mono_cs = start_mono_cs
        self.now_cs = start_mono_cs + 1_000
        self.rate = {i: 100_000.0 for i in names}   # octets/s per ifIndex
        self.base = {i: 0.0 for i in names}
        self.reachable = True
        self.live = False        # True: no cache, counters read on every request (like FreeBSD bsnmpd)
        self.reply_delay_cs = 0.0   # the answer reaches the poller this late (a busy controller)

    def uptime(self) -> int:
        return int(self.now_cs - self.boot_mono_cs)

    def restart(self, now_cs: float) -> None:
        self.boot_mono_cs = now_cs
        self.now_cs = now_cs

    def loaded_counter(self, idx: int, mult: float = 1.0) -> int:
        up = self.uptime()
        load = up if self.live else 5 + ((up - 5) // 300) * 300
        return int(self.base[idx] + self.rate[idx] * mult * max(load, 0) / 100)

    def get(self, oids):
        from pysnmp.proto.rfc1905 import NoSuchInstance
        out = {}
        for oid in oids:
            col, _, idx_s = oid.rpartition(".")
            if oid == "1.3.6.1.2.1.1.3.0":
                out[oid] = self.T["tt"](self.uptime())
                continue
            idx = int(idx_s)
            if idx not in self.names:
                out[oid] = NoSuchInstance()
            elif col == IF_HIGH_SPEED:
                out[oid] = self.T["g"](10_000)
            elif col == IF_COUNTER_DISCONTINUITY:
                out[oid] = self.T["tt"](0)
            elif col in (c for c, bits, _ in COUNTERS.values() if bits == 32):
                out[oid] = self.T["c32"](0)
            else:
                mult = 1.0 if col.endswith((".6", ".10")) else 1 / 1000
                out[oid] = self.T["c64"](self.loaded_counter(idx, mult))
        return out


class FakePoller(SnmpPoller):
    def __init__(self, fakes: dict[str, FakeAgent], interfaces: list[str] | None = None,
                 refresh: RefreshModel = NET_SNMP, **kw):
        agents = [AgentConfig(h, "192.0.2.1", SNMP(version="2c", community=SecretRef(env="CTL_TEST_COMM"),
                                                   interfaces=interfaces or []), refresh)
                  for h in fakes]
        super().__init__(agents, **kw)
        self.fakes = fakes

    async def _open(self, st):
        st.engine = object()

    def _close_transport(self, st):
        st.engine = None

    async def _get(self, st, oids):
        fake = self.fakes[st.cfg.host]
        if not fake.reachable:
            from controller.telemetry.snmp.poller import SnmpAgentError
            raise SnmpAgentError("No SNMP response received before timeout", timeout=True)
        from controller.telemetry.snmp.poller import Reply
        ns = int(fake.now_cs * NS_PER_CS)
        late = ns + int(fake.reply_delay_cs * NS_PER_CS)
        return Reply(fake.get(oids), late, late, ns)

    async def _walk(self, st, column, max_rows=10_000):
        from pysnmp.proto.rfc1902 import OctetString
        fake = self.fakes[st.cfg.host]
        if not fake.reachable:
            from controller.telemetry.snmp.poller import SnmpAgentError
            raise SnmpAgentError("No SNMP response received before timeout", timeout=True)
        assert column == IF_NAME
        return [(i, OctetString(n)) for i, n in sorted(fake.names.items())]


def _run(coro):
    return asyncio.run(coro)


def test_poller_points_events_and_rates_from_simulated_agent(monkeypatch):
    monkeypatch.setenv("CTL_TEST_COMM", "not-logged")
    fake = FakeAgent({1: "lo", 2: "eth0", 3: "eth1"})

    async def go():
        p = FakePoller({"sw1": fake})
        await p.start()
        outs = []
        for _ in range(12):
            fake.now_cs += 100
            outs.append(await p.poll_once())
        return p, outs

    p, outs = _run(go())
    assert p.interfaces("sw1") == {1: "lo", 2: "eth0", 3: "eth1"}
    points = [o for r in outs for o in r if isinstance(o, Point)]
    assert {pt.tags["ifname"] for pt in points} == {"lo", "eth0", "eth1"}
    assert all(pt.measurement == "snmp_if" and set(pt.tags) == {"host", "ifname", "ifindex"} for pt in points)
    rated = [pt for pt in points if "in_bps" in pt.fields]
    assert rated, "no rates at all"
    for pt in rated:
        assert pt.fields["in_bps"] == pytest.approx(800_000.0, rel=0.03)
        assert pt.fields["rate_interval_s"] == pytest.approx(3.0)
        assert pt.fields["high_speed_mbps"] == 10_000
    # between reloads, points carry raw counters but no rate (never a 0)
    assert any("in_bps" not in pt.fields and "in_octets" in pt.fields for pt in points)
    assert not any(pt.fields.get("in_bps") == 0.0 for pt in points)


def test_poller_unreachable_agent_gives_event_not_zero(monkeypatch):
    monkeypatch.setenv("CTL_TEST_COMM", "x")
    good, dead = FakeAgent({1: "eth0"}), FakeAgent({1: "eth0"})
    dead.reachable = False

    async def go():
        p = FakePoller({"good": good, "dead": dead})
        await p.start()
        r = []
        for _ in range(4):
            good.now_cs += 100
            r += await p.poll_once()
        return r

    out = _run(go())
    dead_out = [o for o in out if (isinstance(o, Event) and o.host == "dead")
                or (isinstance(o, Point) and o.tags["host"] == "dead")]
    assert dead_out and all(isinstance(o, Event) and o.kind == "agent_unreachable" for o in dead_out)
    assert any(isinstance(o, Point) and o.tags["host"] == "good" for o in out)


def test_poller_late_reply_is_not_an_agent_restart(monkeypatch):
    """A round whose answers wait 4 s in the controller (made at the agent at once): no
    agent_restart, no new baseline, and the rates go on (the CI failure of 2026-11-27)."""
    monkeypatch.setenv("CTL_TEST_COMM", "x")
    fake = FakeAgent({1: "lo", 2: "eth0"}, start_mono_cs=0.0)
    fake.live = True

    async def go():
        p = FakePoller({"sw1": fake}, refresh=LIVE)
        await p.start()
        out = []
        for i in range(10):
            fake.now_cs += 100
            fake.reply_delay_cs = 400.0 if i == 5 else 0.0
            out += await p.poll_once()
        return out

    out = _run(go())
    assert not [o for o in out if isinstance(o, Event) and o.kind in ("agent_restart", "discontinuity")]
    rated = [o for o in out if isinstance(o, Point) and o.tags["ifname"] == "eth0" and "in_bps" in o.fields]
    assert len(rated) >= 8 and all(o.fields["in_bps"] == pytest.approx(800_000.0, rel=0.03) for o in rated)


def test_poller_agent_restart_event_rediscovery_and_no_bogus_rate(monkeypatch):
    monkeypatch.setenv("CTL_TEST_COMM", "x")
    fake = FakeAgent({1: "lo", 2: "eth0"})

    async def go():
        p = FakePoller({"br1": fake})
        await p.start()
        before = []
        for _ in range(8):
            fake.now_cs += 100
            before += await p.poll_once()
        fake.restart(fake.now_cs + 50)
        fake.names = {1: "lo", 5: "eth0"}          # renumbered by the restart
        fake.rate[5], fake.base[5] = 100_000.0, 0.0
        fake.now_cs += 100
        at = await p.poll_once()
        after = []
        for _ in range(8):
            fake.now_cs += 100
            after += await p.poll_once()
        return p, before, at, after

    p, before, at, after = _run(go())
    kinds = [o.kind for o in at if isinstance(o, Event)]
    assert kinds.count("agent_restart") == 1
    assert kinds.count("discontinuity") == 2
    assert p.interfaces("br1") == {1: "lo", 5: "eth0"}
    at_points = [o for o in at if isinstance(o, Point)]
    assert at_points and not any("in_bps" in o.fields for o in at_points), "rate across a restart"
    eth0 = [o for o in after if isinstance(o, Point) and o.tags["ifname"] == "eth0" and "in_bps" in o.fields]
    assert eth0 and all(o.tags["ifindex"] == "5" for o in eth0)
    assert all(o.fields["in_bps"] == pytest.approx(800_000.0, rel=0.03) for o in eth0)


def test_poller_interface_filter_and_missing_interface_event(monkeypatch):
    monkeypatch.setenv("CTL_TEST_COMM", "x")
    fake = FakeAgent({1: "lo", 2: "eth0", 3: "eth1"})

    async def go():
        p = FakePoller({"sw": fake}, interfaces=["eth1", "eth9"])
        ev = await p.start()
        fake.now_cs += 100
        return p, ev, await p.poll_once()

    p, ev, out = _run(go())
    assert p.interfaces("sw") == {3: "eth1"}
    assert [e.kind for e in ev] == ["interface_missing"] and "eth9" in ev[0].message
    assert {o.tags["ifname"] for o in out if isinstance(o, Point)} == {"eth1"}


def test_poller_never_puts_secrets_in_outputs(monkeypatch, caplog):
    monkeypatch.setenv("CTL_TEST_COMM", "s3cret-community-value")
    fake = FakeAgent({1: "eth0"})
    dead = FakeAgent({1: "eth0"})
    dead.reachable = False

    async def go():
        p = FakePoller({"a": fake, "b": dead})
        out = await p.start()
        for _ in range(3):
            fake.now_cs += 100
            out += await p.poll_once()
        return out

    with caplog.at_level("DEBUG"):
        out = _run(go())
    blob = repr([o.to_dict() for o in out]) + caplog.text
    assert "s3cret-community-value" not in blob


def test_real_udp_blackhole_is_unreachable_quickly(monkeypatch):
    """pysnmp against a UDP socket that never answers: an event after ~timeout, no point."""
    monkeypatch.setenv("CTL_TEST_COMM", "x")
    hole = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    hole.bind(("127.0.0.1", 0))
    port = hole.getsockname()[1]
    try:
        async def go():
            cfg = AgentConfig("hole", "127.0.0.1", SNMP(version="2c", port=port, timeout=0.3, retries=0,
                                                        community=SecretRef(env="CTL_TEST_COMM")))
            loop = asyncio.get_running_loop()
            async with SnmpPoller([cfg]) as p:
                t0 = loop.time()
                out = await p.poll_once()
                return out, loop.time() - t0

        out, took = _run(go())
    finally:
        hole.close()
    assert [o.kind for o in out if isinstance(o, Event)] == ["agent_unreachable"]
    assert not any(isinstance(o, Point) for o in out)
    assert took < 0.3 * 2 + 1.0


def test_poller_rediscovery_sees_renumbering_and_new_interfaces(monkeypatch):
    monkeypatch.setenv("CTL_TEST_COMM", "x")
    fake = FakeAgent({1: "lo", 2: "eth0"})

    async def go():
        p = FakePoller({"sw": fake}, rediscover_s=5.0)
        await p.start()
        for _ in range(6):
            fake.now_cs += 100
            await p.poll_once()
        # without a restart, ifIndex 2 now names another port and a new one appears
        fake.names = {1: "lo", 2: "eth9", 3: "eth0"}
        fake.rate[3], fake.base[3] = 100_000.0, 0.0
        p._agents["sw"].discovered_mono -= 3600     # "an hour later": rediscovery is due
        fake.now_cs += 100
        return p, await p.poll_once()

    p, out = _run(go())
    assert p.interfaces("sw") == {1: "lo", 2: "eth9", 3: "eth0"}
    disc = [o for o in out if isinstance(o, Event) and o.kind == "discontinuity"]
    assert [(e.ifindex, e.ifname) for e in disc] == [(2, "eth9")]
    eth9 = [o for o in out if isinstance(o, Point) and o.tags["ifname"] == "eth9"]
    assert eth9 and "in_bps" not in eth9[0].fields


def test_run_delivers_to_queue_and_callables(monkeypatch):
    monkeypatch.setenv("CTL_TEST_COMM", "x")
    fake = FakeAgent({1: "eth0"})
    got_sync: list = []
    got_async: list = []

    async def async_sink(item):
        got_async.append(item)

    async def go():
        q: asyncio.Queue = asyncio.Queue()
        for sink in (q, got_sync.append, async_sink):
            p = FakePoller({"a": fake}, sink=sink, interval_s=0.01)
            await p.start()
            await p.run(rounds=3)
            await p.close()
        items = []
        while not q.empty():
            items.append(q.get_nowait())
        return items

    items = _run(go())
    for got in (items, got_sync, got_async):
        assert sum(isinstance(o, Point) for o in got) == 3


# ---- the snmpd.conf generator the tests and the virtual rack share ---------------------------

def test_render_snmpd_conf_content():
    from controller.lab.snmpd_conf import render_snmpd_conf, snmpd_argv, snmpd_env
    text = render_snmpd_conf(["10.0.0.2:161", "[::1]:1161"], "comm1234", "ctluser", "authkey12", "privkey12",
                             auth_protocol="sha256", priv_protocol="aes256", sys_name="br1")
    lines = text.splitlines()
    assert "agentAddress udp:10.0.0.2:161,udp6:[::1]:1161" in lines
    assert "view ctlview included .1.3.6.1.2.1.31" in lines and "view ctlview included .1.3.6.1.2.1.2" in lines
    assert "rocommunity comm1234 default -V ctlview" in lines and "rocommunity6 comm1234 default -V ctlview" in lines
    assert "createUser ctluser SHA-256 authkey12 AES-256 privkey12" in lines
    assert "rouser ctluser authpriv -V ctlview" in lines and "sysName br1" in lines
    assert "-C" not in snmpd_argv("/x/snmpd.conf")            # see snmpd_conf: -C loses engineID/boots
    env = snmpd_env("/p", {"PATH": "/bin", "SNMPCONFPATH": "/etc/snmp", "MIBS": "ALL", "HOME": "/root"})
    assert env["SNMPCONFPATH"] == "/p" and env["SNMP_PERSISTENT_DIR"] == "/p" and env["MIBS"] == ""
    assert env["HOME"] == "/root"


@pytest.mark.parametrize("kwargs,needle", [
    (dict(community="a b"), "community"),
    (dict(community='x"\ncreateUser evil'), "community"),
    (dict(auth_key="short"), "at least 8"),
    (dict(priv_key="pp\nrwcommunity x"), "priv_key"),
    (dict(listen="localhost:161"), "ADDRESS:PORT"),
    (dict(listen="300.1.1.1:161"), "not an IP address"),
    (dict(v3_user="1bad"), "v3 user"),
])
def test_render_snmpd_conf_refuses_injection_without_echoing_secrets(kwargs, needle):
    from controller.errors import ParameterError
    from controller.lab.snmpd_conf import render_snmpd_conf
    args = dict(listen="127.0.0.1:16161", community="comm1234", v3_user="ctluser", auth_key="authkey12",
                priv_key="privkey12")
    args.update(kwargs)
    with pytest.raises(ParameterError) as exc:
        render_snmpd_conf(**args)
    assert needle in str(exc.value)
    for k in ("community", "auth_key", "priv_key"):
        if k in kwargs:
            assert kwargs[k] not in str(exc.value)


# ---- each agent's refresh model comes from the inventory ------------------------------------

def live_agent_polls(model: RefreshModel, n: int = 12) -> list:
    """An agent that reads its counters on every request (FreeBSD bsnmpd), 1 Mbit/s, polled every second."""
    t = CounterTracker(64, "octets", refresh=model)
    return [t.update(sample(5_000 + 125_000 * k, 1_000 + 100 * k), speed_mbps=1_000) for k in range(n)]


def test_live_agent_declared_live_gives_a_rate_every_poll():
    rates = [u.rate for u in live_agent_polls(LIVE)[1:]]
    assert rates == [pytest.approx(125_000.0)] * 11


def test_live_agent_under_the_net_snmp_model_is_detected_and_never_given_a_wrong_rate():
    """A live agent declared as a 3 s periodic cache: timed on the 3 s grid, its 1 s steps would give
    2/3 of the true rate. The second change 1 s after the first refutes the model (one event), the
    tracker drops the period grid, and its rates are right but coarse (10 s intervals at 10 % error)."""
    ups = live_agent_polls(NET_SNMP, 25)
    assert ups[1].rate is None and "first change" in ups[1].reason
    mismatch = [k for k, u in enumerate(ups) if any(e.kind == "refresh_mismatch" for e in u.events)]
    assert mismatch == [2]
    rated = [u for u in ups if u.rate is not None]
    assert len(rated) == 2
    assert all(u.rate == pytest.approx(125_000.0, rel=NET_SNMP.max_time_error) for u in rated)


def test_cached_agent_never_refutes_its_model_under_jitter():
    for poll_cs in (50, 100, 150):
        for seed in range(5):
            res = run_polls(CachedAgent(rate=lambda t: 125_000.0), poll_cs, 80, hint=True, jitter=3, seed=seed)
            assert not any(e.kind == "refresh_mismatch" for _, up in res for e in up.events), (poll_cs, seed)


def test_poller_reports_a_live_agent_under_the_cache_model_once_and_keeps_rates_right(monkeypatch):
    monkeypatch.setenv("CTL_TEST_COMM", "x")

    async def go(refresh):
        fake = FakeAgent({1: "em0", 2: "em1"})
        fake.live = True
        p = FakePoller({"dn1": fake}, refresh=refresh)
        await p.start()
        outs = []
        for _ in range(25):
            fake.now_cs += 100
            outs.extend(await p.poll_once())
        return outs

    outs = _run(go(NET_SNMP))
    ev = [o for o in outs if isinstance(o, Event) and o.kind == "refresh_mismatch"]
    assert len(ev) == 1 and ev[0].host == "dn1" and "refresh_s" in ev[0].message   # once per agent
    rated = [o for o in outs if isinstance(o, Point) and "in_bps" in o.fields]
    assert rated and all(pt.fields["in_bps"] == pytest.approx(800_000.0, rel=0.1) for pt in rated)
    # declared live: a rate every poll after the baseline, exact, and no event
    outs = _run(go(LIVE))
    assert not any(isinstance(o, Event) for o in outs)
    rated = [o for o in outs if isinstance(o, Point) and "in_bps" in o.fields]
    assert len(rated) == 2 * 24 and all(pt.fields["in_bps"] == pytest.approx(800_000.0) for pt in rated)


def test_refresh_model_from_the_inventory_snmp_section():
    def snmp(**kw) -> SNMP:
        return SNMP(version="2c", community=SecretRef(env="X"), **kw)
    assert RefreshModel.from_snmp(snmp()) == NET_SNMP
    assert RefreshModel.from_snmp(snmp(refresh_s=0)) == LIVE
    assert RefreshModel.from_snmp(snmp(refresh_s=5, refresh_periodic=False)) == RefreshModel(500, periodic=False)
    assert RefreshModel.from_snmp(snmp(refresh_s=0, refresh_periodic=True)).periodic is False
    with pytest.raises(ValueError):
        snmp(refresh_s=-1)


def test_poller_from_inventory_takes_each_agents_model(invs):
    lab = SnmpPoller.from_inventory(invs["lab-rack"])
    models = {a.host: a.refresh for a in lab.agents}
    assert models["dn1"] == models["dn2"] == models["dn3"] == LIVE     # bsnmpd bridges
    assert models["sw1"] == NET_SNMP                                    # switch: not measured, cautious default
    virtual = SnmpPoller.from_inventory(invs["virtual"])
    assert virtual.agents and all(a.refresh == NET_SNMP for a in virtual.agents)   # net-snmp snmpd
    forced = SnmpPoller.from_inventory(invs["lab-rack"], refresh=NET_SNMP)
    assert all(a.refresh == NET_SNMP for a in forced.agents)
