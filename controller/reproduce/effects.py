"""How much a change of one condition moved a measured number, with its 95 % confidence interval, and
what that says about a hypothesis (pure).

An effect is `treated - baseline` of a cell's values:
    paired      both cells hold one value per run of the SAME runs (e.g. the ratio over two windows of
                one run): the mean of the per-run differences, Student's t on those differences
    independent the cells come from different runs (e.g. two builds of MCubic): the difference of the
                means, Welch's t interval (Welch-Satterthwaite degrees of freedom)
No interval is ever drawn from fewer than two values per side (two pairs when paired).

A hypothesis predicts the direction of an effect: towards the paper's value (the effect must close
the gap between what this rack measured and what the paper printed), or a stated sign. The rule,
fixed before any number was seen and printed with every result:
    supported   the whole interval lies on the predicted side of 0 and reaches the smallest effect
                that matters (`relevant`) (towards a value: and short of twice the gap, so that the
                changed condition ends nearer the paper's value)
    refuted     the whole interval lies on the other side of 0, or below the smallest effect that
                matters (`relevant`): the change cannot account for the deviation, also when it is
                real and in the predicted direction; or (towards a value) the whole interval lies
                beyond twice the gap: the change carries the number past the paper's value and ends
                farther from it than without the change
    open        neither: the interval straddles 0 and reaches a relevant size, or (towards a
                value) it starts on the predicted side and reaches past twice the gap
`relevant` is a quarter of the gap to the paper's value (at least 0.05), or the hypothesis' own.

Two clarifications of the code were made after the deviation runs of 2026-11-26, each where the
code had not done what the text above said, and each is disclosed here because it was made with
results in view:
- The overshoot bound (twice the gap): until then the code checked the sign alone; mcubic_wrap at
  100 ms moved MCubic's ratio from 0.67 to 22.5 where the paper printed 1.95, which the sign alone
  had called "supported".
- An interval wholly on the predicted side but wholly below `relevant` met both the "supported"
  clause (the side of 0) and the "refuted" clause (below what matters); the code took the first
  that matched, "supported". It now says "refuted": such an effect is real but cannot account for
  the deviation, which is the question the hypothesis asks. On that day's data this changes two
  comparisons, both LIA's: its ratio with a 500- and a 1667-slot queue (0.15 -> 0.24 / 0.29, paper 1.86).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

from controller.results.stats import t95

SUPPORTED = "supported"
REFUTED = "refuted"
OPEN = "open"
MIXED = "mixed"
FINDINGS = (SUPPORTED, REFUTED, OPEN)
GAP_SHARE = 0.25          # an effect below a quarter of the gap cannot explain the deviation
MIN_RELEVANT = 0.05       # ... and never below this (ratios and Jain indices are O(1))


@dataclass(frozen=True)
class Effect:
    mean: float | None
    ci95: float | None        # half-width; None when n < 2 on a side
    n: int                    # pairs (paired) or the smaller side (independent)
    paired: bool

    @property
    def low(self) -> float | None:
        return None if self.mean is None or self.ci95 is None else self.mean - self.ci95

    @property
    def high(self) -> float | None:
        return None if self.mean is None or self.ci95 is None else self.mean + self.ci95

    def text(self) -> str:
        if self.mean is None:
            return "-"
        kind = "paired" if self.paired else "Welch"
        if self.ci95 is None:
            return f"{self.mean:+.3g} (n={self.n}, no CI)"
        return f"{self.mean:+.3g} ± {self.ci95:.2g} (95 % CI, {kind}, n={self.n})"

    def to_json(self) -> dict:
        return {"mean": self.mean, "ci95": self.ci95, "low": self.low, "high": self.high, "n": self.n,
                "paired": self.paired}


def _finite(xs: Sequence[float]) -> list[float]:
    return [float(x) for x in xs if x is not None and math.isfinite(float(x))]


def independent(treated: Sequence[float], baseline: Sequence[float]) -> Effect:
    """Difference of means with Welch's 95 % interval."""
    a, b = _finite(treated), _finite(baseline)
    if not a or not b:
        return Effect(None, None, min(len(a), len(b)), False)
    d = statistics.fmean(a) - statistics.fmean(b)
    if len(a) < 2 or len(b) < 2:
        return Effect(d, None, min(len(a), len(b)), False)
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se2 = va + vb
    if se2 == 0:
        return Effect(d, 0.0, min(len(a), len(b)), False)
    df = se2 ** 2 / ((va ** 2 / (len(a) - 1) if va else 0.0) + (vb ** 2 / (len(b) - 1) if vb else 0.0))
    return Effect(d, t95(max(1, int(df))) * math.sqrt(se2), min(len(a), len(b)), False)


def paired(treated: Sequence[tuple[str, float]], baseline: Sequence[tuple[str, float]]) -> Effect:
    """Mean per-run difference over the runs both sides have (keyed by run id), Student's t."""
    base = {k: float(v) for k, v in baseline if v is not None and math.isfinite(float(v))}
    diffs = [float(v) - base[k] for k, v in treated if k in base and v is not None and math.isfinite(float(v))]
    if not diffs:
        return Effect(None, None, 0, True)
    m = statistics.fmean(diffs)
    if len(diffs) < 2:
        return Effect(m, None, 1, True)
    return Effect(m, t95(len(diffs) - 1) * statistics.stdev(diffs) / math.sqrt(len(diffs)), len(diffs), True)


def relevant_size(gap: float | None, own: float | None = None) -> float:
    """The smallest effect that could matter for a deviation of `gap` (or the hypothesis' own)."""
    if own is not None:
        return own
    return max(MIN_RELEVANT, GAP_SHARE * abs(gap)) if gap is not None else MIN_RELEVANT


def finding(e: Effect, direction: int, relevant: float, gap: float | None = None) -> tuple[str, str]:
    """(supported | refuted | open, why) for an effect predicted to have the sign of `direction`;
    `gap`: the distance from the baseline to the value the effect should approach (None: a sign
    only), beyond twice which the changed condition ends farther from that value."""
    if e.mean is None:
        return OPEN, "not measured"
    if e.ci95 is None:
        return OPEN, f"n={e.n}: no confidence interval"
    lo, hi = (e.low, e.high) if direction >= 0 else (-e.high, -e.low)     # in the predicted direction
    assert lo is not None and hi is not None
    far = None if gap is None else 2 * abs(gap)
    if far is not None and lo > far:
        return REFUTED, (f"the whole 95 % interval lies beyond twice the gap ({far:.3g}): the change carries the "
                         "number past the target and farther from it than without the change")
    if lo > 0 and far is not None and hi > far:
        return OPEN, (f"the interval is on the predicted side of 0 but reaches past twice the gap ({far:.3g}): "
                      "it may overshoot the target")
    if hi < 0:
        return REFUTED, "the whole 95 % interval is on the other side of 0"
    if hi < relevant:
        if lo > 0:
            return REFUTED, (f"the whole 95 % interval is on the predicted side of 0 but below {relevant:.2g}, the "
                             "smallest effect that could account for the deviation: real, too small")
        return REFUTED, f"the interval excludes any effect of {relevant:.2g} or more in the predicted direction"
    if lo > 0:
        return SUPPORTED, (f"the whole 95 % interval is on the predicted side of 0 and includes effects of "
                           f"{relevant:.2g} or more") + (
            f", short of twice the gap ({far:.3g})" if far is not None else "")
    return OPEN, "the interval includes 0 and effects large enough to matter"


def combine(findings: Sequence[str]) -> str:
    """One word for several comparisons of one hypothesis: the common finding when they agree,
    `mixed` when they do not (the report lists what each comparison found)."""
    if not findings:
        return OPEN
    first = findings[0]
    return first if all(f == first for f in findings) else MIXED


def counts(findings: Sequence[str]) -> str:
    """`2 supported, 1 open` (in the order supported, refuted, open)."""
    return ", ".join(f"{sum(1 for f in findings if f == k)} {k}" for k in FINDINGS if k in findings)
