"""Statistics over repetitions (pure): the mean with its 95 % confidence interval (Student's t);
Welch's t-test with its p-value and Holm's correction for many of them (`ctl reproduce compare`).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

# Two-sided 95 % quantiles of Student's t for 1..30 degrees of freedom.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)


def t95(df: int) -> float:
    if df < 1:
        return math.nan
    if df <= 30:
        return _T95[df - 1]
    # Coarse steps beyond 30 (t falls slowly): never smaller than the true quantile.
    for limit, t in ((40, 2.042), (60, 2.021), (120, 2.000)):
        if df <= limit:
            return t
    return 1.980


@dataclass(frozen=True)
class Stat:
    n: int
    mean: float | None
    ci95: float | None     # half-width of the 95 % confidence interval of the mean (None: n < 2)
    sd: float | None
    min: float | None
    max: float | None


def mean_ci(values: Sequence[float]) -> Stat:
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not xs:
        return Stat(0, None, None, None, None, None)
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return Stat(1, m, None, None, xs[0], xs[0])
    sd = statistics.stdev(xs)
    return Stat(len(xs), m, t95(len(xs) - 1) * sd / math.sqrt(len(xs)), sd, min(xs), max(xs))


# ---- Welch's t-test and the Holm correction (`ctl reproduce compare`) ------------------------------
#
# The p-value needs Student's t distribution at any (fractional) degrees of freedom: its two-sided
# tail is the regularized incomplete beta function, P(|T| > t) = I_x(df/2, 1/2) with x = df/(df+t^2)
# (Abramowitz & Stegun 26.7.1 with 26.5.27), evaluated by the continued fraction of A&S 26.5.8 with
# modified Lentz steps (Press et al., Numerical Recipes, 3rd ed., section 6.4), at most 300 steps
# per call. Checked against the quantiles above and the closed
# forms for 1 and 2 degrees of freedom (tests/unit/controller/results/test_stats_welch.py).

_CF_STEPS = 300
_CF_EPS = 1e-15
_TINY = 1e-300


def _beta_cf(a: float, b: float, x: float) -> float:
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _CF_STEPS + 1):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _CF_EPS:
            break
    return h


def beta_reg(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), a, b > 0, 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_cf(a, b, x) / a
    return 1.0 - front * _beta_cf(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with `df` (> 0, not necessarily whole) degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return min(1.0, max(0.0, beta_reg(df / 2.0, 0.5, df / (df + t * t))))


@dataclass(frozen=True)
class Welch:
    """Welch's unequal-variances t-test of mean(b) - mean(a) (two-sided)."""
    n_a: int
    n_b: int
    diff: float | None       # mean(b) - mean(a); None when a side has no value
    t: float | None          # None when a side has fewer than two values
    df: float | None         # Welch-Satterthwaite
    p: float | None          # two-sided; None when a side has fewer than two values


def welch(a: Sequence[float], b: Sequence[float]) -> Welch:
    """The test needs two values per side (a variance each); with fewer it gives no t and no p.
    Two sides without any spread: p = 1 when their means are equal, else 0 (every value of one
    side differs from every value of the other)."""
    xa = [float(v) for v in a if v is not None and math.isfinite(float(v))]
    xb = [float(v) for v in b if v is not None and math.isfinite(float(v))]
    if not xa or not xb:
        return Welch(len(xa), len(xb), None, None, None, None)
    diff = statistics.fmean(xb) - statistics.fmean(xa)
    if len(xa) < 2 or len(xb) < 2:
        return Welch(len(xa), len(xb), diff, None, None, None)
    va, vb = statistics.variance(xa) / len(xa), statistics.variance(xb) / len(xb)
    se2 = va + vb
    if se2 == 0.0:
        return Welch(len(xa), len(xb), diff, 0.0 if diff == 0 else math.copysign(math.inf, diff), None,
                     1.0 if diff == 0 else 0.0)
    df = se2 ** 2 / ((va ** 2 / (len(xa) - 1)) + (vb ** 2 / (len(xb) - 1)))
    t = diff / math.sqrt(se2)
    return Welch(len(xa), len(xb), diff, t, df, t_two_sided_p(t, df))


def holm(ps: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979), in the order given: the family-wise error
    rate is at most alpha when every adjusted p < alpha is called a difference, whatever the
    dependence between the tests."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    out = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out
