"""The health check's clock verdict (controller.campaign.health.clock_spread, pure).

Contract: each host's offset is known to +-rtt/2; the spread between the extreme hosts is known to
the sum of their halves. Within the bound: ok. Above it by more than that uncertainty: the clocks
differ ("over"). Above it but within the uncertainty: "unclear", which the check measures once more
(twice the exchanges) before it counts; the reason then names the spread with its uncertainty.
"""
from __future__ import annotations

import pytest

from controller.campaign.health import clock_spread
from controller.clocksync import ClockOffset


def off(host: str, measured_ms: float, rtt_ms: float) -> ClockOffset:
    return ClockOffset(host, measured_ms / 1e3, rtt_ms / 1e3, measured_ms / 1e3, "echo")


def test_within_the_bound_is_ok():
    v, spread, unc, hi, lo = clock_spread({"a1": off("a1", 3, 1), "a2": off("a2", -4, 1)}, 0.010)
    assert (v, hi, lo) == ("ok", "a1", "a2") and spread == pytest.approx(0.007) and unc == pytest.approx(0.001)


def test_above_the_bound_beyond_the_uncertainty_is_over():
    # 13.5 ms apart, each known to +-0.5 ms: at least 12.5 ms, above 10 ms
    v, spread, unc, _hi, _lo = clock_spread({"a1": off("a1", 13.5, 1), "a2": off("a2", 0, 1)}, 0.010)
    assert v == "over" and spread == pytest.approx(0.0135) and unc == pytest.approx(0.001)


def test_above_the_bound_within_the_uncertainty_is_unclear():
    # the loaded-controller case of a suite run: 13.5 ms apart, round trips of 6 and 4 ms
    v, _spread, unc, _hi, _lo = clock_spread({"a1": off("a1", 13.5, 6), "a2": off("a2", 0, 4)}, 0.010)
    assert v == "unclear" and unc == pytest.approx(0.005)


def test_the_extremes_of_several_hosts_are_compared():
    offs = {h: off(h, m, 0.2) for h, m in (("a1", 1), ("a2", -2), ("b1", 12), ("b2", 0))}
    v, spread, _unc, hi, lo = clock_spread(offs, 0.010)
    assert (v, hi, lo) == ("over", "b1", "a2") and spread == pytest.approx(0.014)
