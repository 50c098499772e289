"""Rates of agents without sysUpTime: timed on the local clock, with the request's round trip as
the uncertainty of when the agent read its value (CounterTracker._reply_cs).

A reply can wait seconds in a busy controller before it is taken in (3.7 s measured under the
suite's load); timed by its receipt alone, such a value would give a rate over an interval that
is seconds too long (too low) and the next one over an interval seconds too short (a burst).
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from controller.telemetry.snmp.counters import LIVE, CounterSample, CounterTracker, NET_SNMP

NS_PER_CS = 10_000_000


def local(value: int, sent_cs: float, recv_cs: float) -> CounterSample:
    """A sample of an agent without sysUpTime: request sent at `sent_cs`, reply taken in at `recv_cs`."""
    return CounterSample(value, None, recv_ns=int(recv_cs * NS_PER_CS), mono_ns=int(recv_cs * NS_PER_CS),
                         sent_mono_ns=int(sent_cs * NS_PER_CS))


def test_prompt_replies_give_the_same_rates_as_before():
    t = CounterTracker(64, refresh=LIVE)
    t.update(local(0, 0, 1))
    u = t.update(local(1_000_000, 100, 101))            # 1 MB in 1.00 s, 10 ms round trips
    assert u.rate == pytest.approx(1_000_000.0)
    assert u.time_base == "local"


def test_a_reply_that_waited_in_the_controller_gives_no_rate_and_the_next_rate_is_right():
    # The agent serves 1 MB/s. The second request went out on time (t = 1 s) and the agent read
    # 1 MB then, but its reply was taken in 3.7 s late.
    t = CounterTracker(64, refresh=LIVE)
    t.update(local(0, 0, 1))
    late = t.update(local(1_000_000, 100, 471))
    assert late.rate is None and "time base uncertain" in late.reason
    # The next request (t = 4.71 s) is answered promptly: its rate spans from the last well-timed
    # value (the baseline), 4.7 MB over 4.71 s, within the round trips' 1 %.
    u = t.update(local(4_710_000, 471, 472))
    assert u.rate == pytest.approx(1_000_000.0, rel=0.01)
    assert u.interval_s == pytest.approx(4.71, abs=0.02)


def test_receipt_timing_alone_would_have_reported_a_wrong_rate():
    # What the tracker did before: a sample without its sending time is timed by receipt only.
    t = CounterTracker(64, refresh=LIVE)
    t.update(CounterSample(0, None, recv_ns=1 * NS_PER_CS, mono_ns=1 * NS_PER_CS))
    u = t.update(CounterSample(1_000_000, None, recv_ns=471 * NS_PER_CS, mono_ns=471 * NS_PER_CS))
    assert u.rate == pytest.approx(1_000_000 / 4.7)      # 21 % of the true 1 MB/s


def test_a_late_baseline_is_replaced_by_the_next_well_timed_value():
    t = CounterTracker(64, refresh=LIVE)
    t.update(local(0, 0, 300))                           # baseline read at 0..3 s: uncertain
    u = t.update(local(1_000_000, 400, 401))
    assert u.rate is None and "re-anchored" in u.reason
    u = t.update(local(2_000_000, 500, 501))
    assert u.rate == pytest.approx(1_000_000.0, rel=0.02)


def test_the_agents_own_clock_needs_no_round_trip():
    # With sysUpTime the agent's clock times the value: a late receipt changes nothing.
    t = CounterTracker(64, refresh=LIVE)
    t.update(CounterSample(0, 100, recv_ns=1 * NS_PER_CS, mono_ns=1 * NS_PER_CS, sent_mono_ns=0))
    u = t.update(CounterSample(1_000_000, 200, recv_ns=471 * NS_PER_CS, mono_ns=471 * NS_PER_CS,
                               sent_mono_ns=100 * NS_PER_CS))
    assert u.rate == pytest.approx(1_000_000.0)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 300), st.integers(0, 500)), min_size=2, max_size=40),
       st.sampled_from([LIVE, NET_SNMP]))
def test_every_rate_given_is_within_its_stated_bound_of_the_truth(polls, refresh):
    """A counter growing at exactly 1000 units per cs, read at the request's sending (worst case
    for receipt timing), polled at random gaps with random delays before each receipt: every rate
    the tracker gives is within its own time-error limit of the truth, whatever the delays."""
    rate_cs = 1000
    t = CounterTracker(64, refresh=refresh)
    sent = 0.0
    for gap, delay in polls:
        sent += gap
        # A cached agent serves the value loaded at its last reload (every period, phase 0).
        period = refresh.period_cs
        loaded = sent if period == 0 else (sent // period) * period
        u = t.update(local(int(loaded * rate_cs), sent, sent + delay), refreshed=None)
        if u.rate is not None:
            truth = rate_cs * 100
            assert abs(u.rate - truth) <= truth * refresh.max_time_error / (1 - refresh.max_time_error) + 1e-6
        sent += delay
