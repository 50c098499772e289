"""Two reproductions side by side (pure): Welch's t-test per cell, Holm's correction over the cells
tested, n on each side, no test with fewer than two values on a side, rows sorted. The numbers
below are worked by hand (the t distribution of 4 degrees of freedom has a closed form)."""
from __future__ import annotations

import math

import pytest

from controller.reproduce.cells import Cell, Cells
from controller.reproduce.compare import FEW, FLAG, ONLY_A, ONLY_B, SAME, compare, render, verdict_changes


def c(col, *v, row="MCubic", table="Table 1", metric="jain_index"):
    return Cell("mcubic", table, row, col, metric, tuple(v))


def t4_two_sided(t: float) -> float:
    """P(|T| > t) for 4 degrees of freedom from the closed form of its distribution function:
    F(t) = 1/2 + (3/8) (t / s) (1 - t^2 / (12 s^2)) with s^2 = 1 + t^2 / 4."""
    s2 = 1 + t * t / 4
    f = 0.5 + 0.375 * (t / math.sqrt(s2)) * (1 - t * t / (12 * s2))
    return 2 * (1 - f)


def test_a_difference_beyond_chance_is_flagged_with_its_welch_numbers():
    # A: 1, 2, 3 (mean 2, variance 1); B: 4, 5, 6 (mean 5, variance 1)
    # t = 3 / sqrt(1/3 + 1/3) = 3.6742; df = (2/3)^2 / ((1/3)^2/2 + (1/3)^2/2) = 4; p = 0.02131
    pairs = compare(Cells([c("10M", 1, 2, 3)]), Cells([c("10M", 4, 5, 6)]))
    (p,) = pairs
    assert p.test.t == pytest.approx(3 / math.sqrt(2 / 3)) and p.test.df == pytest.approx(4.0)
    assert p.test.p == pytest.approx(t4_two_sided(3 / math.sqrt(2 / 3)), abs=1e-9)
    assert p.test.p == pytest.approx(0.02131, abs=5e-5)
    assert p.p_holm == p.test.p and p.status == FLAG          # one test: Holm changes nothing
    j = p.to_json()
    assert (j["a"]["n"], j["b"]["n"], j["difference"], j["flagged"]) == (3, 3, 3.0, True)


def test_holm_keeps_a_lone_small_p_from_being_called_among_many():
    # The same 0.0213 next to two cells without any difference: 3 x 0.0213 = 0.064 >= 0.05
    a = Cells([c("10M", 1, 2, 3), c("20M", 0.80, 0.82), c("50M", 5.0, 7.0)])
    b = Cells([c("10M", 4, 5, 6), c("20M", 0.79, 0.83), c("50M", 4.0, 8.0)])
    got = {p.key[3]: p for p in compare(a, b)}
    assert got["10M"].test.p < 0.05 and got["10M"].p_holm == pytest.approx(3 * got["10M"].test.p)
    assert got["10M"].status == SAME
    assert got["20M"].test.p == pytest.approx(1.0) and got["20M"].p_holm == pytest.approx(1.0)


def test_unequal_variances_and_sizes():
    # A: 10, 12 (variance 2, n 2); B: 20, 30, 40 (variance 100, n 3)
    # se^2 = 2/2 + 100/3 = 34.333; t = 19 / 5.8595 = 3.2426
    # df = 34.333^2 / (1^2/1 + 33.333^2/2) = 2.1180
    (p,) = compare(Cells([c("10M", 10, 12)]), Cells([c("10M", 20, 30, 40)]))
    assert p.test.t == pytest.approx(19 / math.sqrt(1 + 100 / 3))
    assert p.test.df == pytest.approx((1 + 100 / 3) ** 2 / (1 + (100 / 3) ** 2 / 2))
    assert 0.05 < p.test.p < 0.1 and p.status == SAME          # a large difference, too few runs to say


def test_fewer_than_two_values_on_a_side_is_never_called_a_difference():
    a = Cells([c("10M", 0.1), c("20M", 0.7, 0.71), c("40M")])
    b = Cells([c("10M", 0.9, 0.91, 0.92), c("20M", 0.99), c("40M", 0.5, 0.6)])
    got = {p.key[3]: p for p in compare(a, b)}
    assert got["10M"].status == FEW and got["20M"].status == FEW
    assert got["10M"].test.p is None and got["10M"].p_holm is None
    assert got["10M"].to_json()["a"]["n"] == 1 and got["10M"].to_json()["b"]["n"] == 3
    assert got["40M"].status == ONLY_B                        # a cell without values is not measured


def test_rows_are_sorted_and_unmatched_cells_named():
    a = Cells([c("100ms", 1.0, 1.1, table="Table 2", metric="ratio"), c("5ms", 1.0, 1.2, table="Table 2",
                                                                        metric="ratio"),
               c("10M", 0.7, 0.71, row="LIA"), c("10M", 0.7, 0.72)])
    b = Cells([c("20ms", 1.0, 1.3, table="Table 2", metric="ratio"), c("100ms", 1.0, 1.05, table="Table 2",
                                                                         metric="ratio"),
               c("10M", 0.7, 0.73)])
    keys = [(p.key[1], p.key[2], p.key[3], p.status) for p in compare(a, b)]
    assert keys == [("Table 1", "LIA", "10M", ONLY_A), ("Table 1", "MCubic", "10M", SAME),
                    ("Table 2", "MCubic", "5ms", ONLY_A), ("Table 2", "MCubic", "20ms", ONLY_B),
                    ("Table 2", "MCubic", "100ms", SAME)]


def test_render_says_n_the_test_and_the_correction():
    a = Cells([c("10M", 0.70, 0.71, 0.72), c("50M", 0.80, 0.82), c("20M", 0.7)])
    b = Cells([c("10M", 0.80, 0.81, 0.82), c("50M", 0.79, 0.83), c("20M", 0.75, 0.76)])
    text = render(compare(a, b), "A1", "B1", [("mcubic-fairest", "reproduced", "not reproduced")])
    head = next(line for line in text.splitlines() if line.startswith("paper"))
    assert all(h.strip() for h in head.split("  ") if h) and head.rstrip().endswith("result")
    assert "** differs" in text and "0.71 ± 0.025 (n=3)" in text and "0.7 (n=1, no CI)" in text
    assert "1 of 2 cells tested differ (Welch's t-test, two-sided, Holm-adjusted p < 0.05 over the 2 tests); " \
           "1 cells have fewer than two values on a side and are not tested" in text
    assert "mcubic-fairest: reproduced -> not reproduced" in text


def test_verdict_changes():
    a = [{"claim": "y", "status": "inconclusive"}, {"claim": "x", "status": "reproduced"}]
    b = [{"claim": "x", "status": "not reproduced"}, {"claim": "y", "status": "not reproduced"},
         {"claim": "z", "status": "reproduced"}]
    assert verdict_changes(a, b) == [("x", "reproduced", "not reproduced"), ("y", "inconclusive", "not reproduced")]
