"""Student's t tail, Welch's test and Holm's correction (results.stats) against values worked out
by other means: the project's own table of 95 % quantiles, the closed forms of the t
distribution for 1 and 2 degrees of freedom, and Holm's procedure by hand."""
from __future__ import annotations

import math

import pytest

from controller.results.stats import beta_reg, holm, t95, t_two_sided_p, welch


@pytest.mark.parametrize("df", range(1, 31))
def test_the_tail_at_each_tabled_95_quantile_is_5_percent(df):
    # the table has 3 decimals: the tail at a rounded quantile is 0.05 to within what the rounding moves it
    assert t_two_sided_p(t95(df), df) == pytest.approx(0.05, abs=2e-4)


@pytest.mark.parametrize("t", [0.1, 0.5, 1.0, 2.0, 3.0, 10.0, 100.0])
def test_closed_forms_for_one_and_two_degrees_of_freedom(t):
    # df = 1 is Cauchy: P(|T| > t) = 1 - (2/pi) atan(t); df = 2: P(|T| > t) = 1 - t / sqrt(2 + t^2)
    assert t_two_sided_p(t, 1) == pytest.approx(1 - 2 / math.pi * math.atan(t), rel=1e-9, abs=1e-12)
    assert t_two_sided_p(-t, 2) == pytest.approx(1 - t / math.sqrt(2 + t * t), rel=1e-9, abs=1e-12)


def test_edges():
    assert t_two_sided_p(0.0, 5) == 1.0 and t_two_sided_p(math.inf, 5) == 0.0
    assert t_two_sided_p(1.959964, 1e7) == pytest.approx(0.05, abs=1e-5)     # the normal limit
    assert beta_reg(2, 3, 0) == 0.0 and beta_reg(2, 3, 1) == 1.0
    assert beta_reg(1, 1, 0.3) == pytest.approx(0.3)                        # the uniform distribution
    assert beta_reg(2, 1, 0.5) == pytest.approx(0.25)                       # I_x(2, 1) = x^2


def test_welch_needs_two_values_per_side():
    assert welch([1.0], [2.0, 3.0]).p is None and welch([1.0], [2.0, 3.0]).diff == 1.5
    assert welch([], [2.0, 3.0]).diff is None
    assert welch([1.0, float("nan"), 2.0], [3.0, 4.0]).n_a == 2                # not a number is no value
    same = welch([5.0, 5.0], [5.0, 5.0])
    assert (same.p, same.t) == (1.0, 0.0)
    apart = welch([5.0, 5.0], [6.0, 6.0])        # no spread on either side, different means
    assert apart.p == 0.0 and apart.t == math.inf and apart.df is None


def test_holm_by_hand():
    # sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> kept at 0.06: monotone)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0]) and holm([]) == []
