"""Statistics over repetitions (pure): the mean with its 95 % confidence interval (Student's t).
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
