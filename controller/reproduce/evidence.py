"""What the deviation experiments say (pure): each hypothesis of controller.reproduce.hypotheses judged
on its experiment's cells with the rule of controller.reproduce.effects, and each calibration against
its expected value.

A hypothesis whose experiment has not run (or ran on too few runs) is `not measured` (or `open`): the
report shows it as such, never as a cause.
"""
from __future__ import annotations

from dataclasses import dataclass

from controller.reproduce.cells import Cell, Cells
from controller.reproduce.effects import (
    OPEN,
    Effect,
    combine,
    counts,
    finding,
    independent,
    paired,
    relevant_size,
)
from controller.reproduce.hypotheses import (
    CALIBRATIONS,
    EXPERIMENTS,
    HYPOTHESES,
    Calibration,
    Comparison,
    Hypothesis,
)

NOT_MEASURED = "not measured"
VALIDATED = "validated"
FAILED = "not validated"
SHOWN = "shown"


def _cell(cells: Cells, experiment: str, rc: tuple[str, str], metric: str | None = None) -> Cell | None:
    e = EXPERIMENTS[experiment]
    return cells.get(e.design.paper, e.key, rc[0], rc[1], metric or e.metric)


def _runs(c: Cell) -> list[tuple[str, float]]:
    runs = c.facts.get("run") or []
    return [(str(r), v) for r, v in zip(runs, c.values)]


@dataclass(frozen=True)
class ComparisonResult:
    comparison: Comparison
    treated: Cell | None
    baseline: Cell | None
    effect: Effect
    target: float | None          # the value the treated condition was predicted to approach
    direction: int | None
    relevant: float
    finding: str
    why: str

    def _holds_target(self, c: Cell | None) -> bool | None:
        """Whether the target lies within cell `c`'s 95 % interval (None: cannot say)."""
        if self.target is None or c is None or c.low is None or c.high is None:
            return None
        return c.low <= self.target <= c.high

    @property
    def reaches_target(self) -> bool | None:
        """Whether the target lies within the treated cell's 95 % interval (None: cannot say)."""
        return self._holds_target(self.treated)

    @property
    def baseline_at_target(self) -> bool | None:
        """Whether the target lies within the baseline cell's 95 % interval: this rack's number
        without the change already agrees with the paper's at that cell, so there is no
        deviation there for the change to explain (None: cannot say)."""
        return self._holds_target(self.baseline)

    @property
    def gap_share(self) -> float | None:
        """The effect's mean as a share of the gap from the baseline to the target (1: it closes
        the gap exactly; above 2: the treated condition ends farther from the target than the
        baseline; None: no target or no effect)."""
        b = self.baseline.stat.mean if self.baseline is not None else None
        if self.target is None or b is None or self.effect.mean is None or self.target == b:
            return None
        return self.effect.mean / (self.target - b)

    def text(self) -> str:
        tr = self.treated.text() if self.treated else "-"
        bs = self.baseline.text() if self.baseline else "-"
        share = self.gap_share
        where = [("within" if self.reaches_target else "outside") + " the treated 95 % CI"] \
            if self.reaches_target is not None else []
        if self.baseline_at_target:
            where.append("within the baseline's 95 % CI: no deviation to explain at this cell")
        moved = "" if share is None else (f"; the mean effect is {share:.0%} of the gap" if share >= 0 else
                                          f"; the mean effect moves away from the target ({-share:.3g} times the gap)")
        goal = "" if self.target is None else f"; target {self.target:.3g}" + (
            f" ({'; '.join(where)})" if where else "") + moved
        return f"{self.comparison.label}: {tr} vs {bs}; effect {self.effect.text()}{goal} -> {self.finding} ({self.why})"

    def to_json(self) -> dict:
        return {"comparison": self.comparison.to_json(), "treated": self.treated.to_json() if self.treated else None,
                "baseline": self.baseline.to_json() if self.baseline else None, "effect": self.effect.to_json(),
                "target": self.target, "direction": self.direction, "relevant": self.relevant,
                "finding": self.finding, "why": self.why, "reaches_target": self.reaches_target,
                "baseline_at_target": self.baseline_at_target, "gap_share": self.gap_share}


@dataclass(frozen=True)
class HypothesisResult:
    hypothesis: Hypothesis
    status: str                   # supported | refuted | open | mixed | not measured
    reason: str
    comparisons: tuple[ComparisonResult, ...]

    def to_json(self) -> dict:
        h = self.hypothesis
        return {"id": h.id, "paper": h.paper, "claims": list(h.claims), "statement": h.statement,
                "basis": [c.to_json() for c in h.basis], "experiment": h.experiment, "prediction": h.prediction,
                "status": self.status, "reason": self.reason, "comparisons": [c.to_json() for c in self.comparisons]}


def compare(cells: Cells, experiment: str, c: Comparison) -> ComparisonResult:
    treated = _cell(cells, experiment, c.treated, c.metric)
    base = _cell(cells, experiment, c.baseline, c.baseline_metric or c.metric)
    if treated is None or base is None:
        return ComparisonResult(c, treated, base, Effect(None, None, 0, c.paired), None, None, 0.0, OPEN,
                                "not measured")
    effect = paired(_runs(treated), _runs(base)) if c.paired else independent(treated.values, base.values)
    target = c.toward
    if c.toward_cell is not None:
        tc = _cell(cells, experiment, c.toward_cell, c.metric)
        target = tc.stat.mean if tc is not None else None
    b = base.stat.mean
    gap = None
    if target is not None and b is not None:
        direction = 1 if target > b else -1
        gap = target - b
        relevant = relevant_size(gap)
    else:
        direction, relevant = c.direction, relevant_size(None)
    if direction is None:
        return ComparisonResult(c, treated, base, effect, target, None, relevant, OPEN, "no prediction to test")
    f, why = finding(effect, direction, relevant, gap)
    return ComparisonResult(c, treated, base, effect, target, direction, relevant, f, why)


def judge_hypothesis(h: Hypothesis, cells: Cells) -> HypothesisResult:
    results = tuple(compare(cells, h.experiment, c) for c in h.comparisons)
    measured = [r for r in results if r.why != "not measured"]
    if not measured:
        return HypothesisResult(h, NOT_MEASURED, f"its experiment ({h.experiment}) has no completed runs", results)
    status = combine([r.finding for r in measured])
    reason = f"{len(measured)} of {len(results)} comparisons measured: {counts([r.finding for r in measured])}"
    reached = [r for r in measured if r.reaches_target]
    if reached:
        reason += "; the target (the paper's value, or the model's) lies within the treated condition's 95 % CI in " + ", ".join(
            r.comparison.label for r in reached)
    agreed = [r for r in measured if r.baseline_at_target]
    if agreed:
        reason += ("; without the change this rack already agrees with the target (within the baseline's 95 % CI) "
                   "in " + ", ".join(r.comparison.label for r in agreed))
    return HypothesisResult(h, status, reason, results)


@dataclass(frozen=True)
class CalibrationResult:
    calibration: Calibration
    cell: Cell | None
    status: str                   # validated | not validated | open | shown | not measured
    reason: str

    def to_json(self) -> dict:
        c = self.calibration
        return {"id": c.id, "statement": c.statement, "experiment": c.experiment, "expected": c.expected,
                "tolerance": c.tolerance, "meaning": c.meaning, "cell": self.cell.to_json() if self.cell else None,
                "status": self.status, "reason": self.reason}


def judge_calibration(c: Calibration, cells: Cells) -> CalibrationResult:
    cell = _cell(cells, c.experiment, c.cell)
    if cell is None or cell.stat.mean is None:
        return CalibrationResult(c, cell, NOT_MEASURED, "no completed run")
    if c.expected is None:
        return CalibrationResult(c, cell, SHOWN, f"measured {cell.text()}")
    m, lo, hi = cell.stat.mean, cell.low, cell.high
    off = abs(m - c.expected)
    if lo is None or hi is None:
        return CalibrationResult(c, cell, OPEN, f"{cell.text()}: one run, no interval")
    if off <= c.tolerance and lo <= c.expected <= hi:
        return CalibrationResult(c, cell, VALIDATED, f"{cell.text()}: within {c.tolerance:g} of {c.expected:g} "
                                 "and the 95 % CI contains it")
    if not lo <= c.expected <= hi and off > c.tolerance:
        return CalibrationResult(c, cell, FAILED, f"{cell.text()}: the 95 % CI excludes {c.expected:g} and the mean "
                                 f"is {off:.2g} away (tolerance {c.tolerance:g})")
    return CalibrationResult(c, cell, OPEN, f"{cell.text()}: neither clearly within {c.tolerance:g} of "
                             f"{c.expected:g} nor clearly outside")


def judge_all(cells: Cells, papers: tuple[str, ...] | list[str]) -> tuple[list[HypothesisResult],
                                                                         list[CalibrationResult]]:
    hs = [judge_hypothesis(h, cells) for h in HYPOTHESES if h.paper in papers]
    cs = [judge_calibration(c, cells) for c in CALIBRATIONS if c.paper in papers]
    return hs, cs
