"""The rule that turns a deviation experiment's numbers into supported / refuted / open, on
hand-computed cases, and the judging of hypotheses and calibrations on cells."""
from __future__ import annotations

import math

import pytest

from controller.reproduce.cells import Cell, Cells
from controller.reproduce.effects import (
    MIXED,
    OPEN,
    REFUTED,
    SUPPORTED,
    combine,
    finding,
    independent,
    paired,
    relevant_size,
)
from controller.reproduce.evidence import FAILED, NOT_MEASURED, VALIDATED, judge_calibration, judge_hypothesis
from controller.reproduce.hypotheses import CALIBRATIONS, HYPOTHESES


def test_welch_interval_by_hand():
    a, b = [2.0, 3.0, 4.0], [1.0, 1.0, 1.0]
    e = independent(a, b)
    # difference 2; se^2 = 1/3 + 0; df = (1/3)^2 / ((1/3)^2 / 2) = 2 -> t 4.303
    assert e.mean == pytest.approx(2.0)
    assert e.ci95 == pytest.approx(4.303 * math.sqrt(1 / 3), rel=1e-6)
    assert not e.paired and e.n == 3


def test_paired_interval_uses_only_runs_both_sides_have():
    treated = [("r1", 1.5), ("r2", 1.7), ("r3", 1.6), ("r4", 9.0)]
    base = [("r1", 1.0), ("r2", 1.1), ("r3", 1.2)]
    e = paired(treated, base)
    diffs = [0.5, 0.6, 0.4]
    sd = 0.1
    assert e.n == 3 and e.mean == pytest.approx(sum(diffs) / 3)
    assert e.ci95 == pytest.approx(4.303 * sd / math.sqrt(3))


def test_no_interval_from_one_value():
    assert independent([1.0], [2.0, 3.0]).ci95 is None
    assert paired([("r", 1.0)], [("r", 0.5)]).ci95 is None
    assert finding(independent([1.0], [2.0, 3.0]), 1, 0.1)[0] == OPEN


@pytest.mark.parametrize("low,high,direction,relevant,expect", [
    (0.1, 0.5, 1, 0.2, SUPPORTED),       # all above 0, predicted up
    (-0.5, -0.1, 1, 0.2, REFUTED),       # all below 0, predicted up
    (-0.05, 0.1, 1, 0.2, REFUTED),       # straddles 0 but cannot reach the relevant size
    (-0.05, 0.3, 1, 0.2, OPEN),          # straddles 0 and reaches it
    (-0.5, -0.1, -1, 0.2, SUPPORTED),    # predicted down
    (0.1, 0.5, -1, 0.2, REFUTED),
    (0.05, 0.15, 1, 0.2, REFUTED),       # real and in the predicted direction, but too small to matter
    (0.15, 0.25, 1, 0.2, SUPPORTED),     # real, and reaches the relevant size
])
def test_the_rule(low, high, direction, relevant, expect):
    from controller.reproduce.effects import Effect
    e = Effect((low + high) / 2, (high - low) / 2, 3, False)
    assert finding(e, direction, relevant)[0] == expect


@pytest.mark.parametrize("low,high,gap,expect", [
    (0.2, 1.0, 1.28, SUPPORTED),         # closes part of the gap, nowhere past twice it
    (17.8, 25.8, 1.28, REFUTED),         # mcubic_wrap at 100 ms, 2026-11-26: 0.67 -> 22.5 for a paper value of 1.95
    (0.5, 4.0, 1.28, OPEN),              # towards it, but may carry the number past it and farther away
    (-0.5, -0.1, 1.28, REFUTED),         # away from it
])
def test_an_effect_towards_a_value_must_close_the_gap_not_overshoot_it(low, high, gap, expect):
    """'Towards the paper's value' means the changed condition ends nearer to it: an effect
    beyond twice the gap leaves the number farther from the paper than it was."""
    from controller.reproduce.effects import Effect
    e = Effect((low + high) / 2, (high - low) / 2, 3, False)
    assert finding(e, 1, 0.32, gap)[0] == expect
    assert finding(Effect(-e.mean, e.ci95, 3, False), -1, 0.32, -gap)[0] == expect      # the same, predicted down


def test_relevant_size_is_a_quarter_of_the_gap_with_a_floor():
    assert relevant_size(1.2) == pytest.approx(0.3)
    assert relevant_size(-0.08) == pytest.approx(0.05)
    assert relevant_size(None) == pytest.approx(0.05)
    assert relevant_size(1.0, own=0.5) == 0.5


def test_combine():
    assert combine([SUPPORTED, SUPPORTED]) == SUPPORTED
    assert combine([REFUTED]) == REFUTED
    assert combine([SUPPORTED, REFUTED]) == MIXED
    assert combine([SUPPORTED, OPEN]) == MIXED
    assert combine([]) == OPEN


def _cell(exp: str, row: str, col: str, values, runs=None, metric="ratio", paper="mcubic"):
    return Cell(paper, exp, row, col, metric, tuple(values), facts={"run": list(runs or [f"{row}-{i}" for i in
                                                                                        range(len(values))])})


def test_run_length_hypothesis_on_cells():
    h = next(x for x in HYPOTHESES if x.id == "mcubic-run-length")
    runs = ["a", "b", "c"]
    cells = Cells([
        _cell("dev-mcubic-run-length", "mcubic", "window 0s:45s", [0.6, 0.7, 0.8], runs),
        _cell("dev-mcubic-run-length", "mcubic", "window 45s:600s", [1.6, 1.8, 1.7], runs),
        _cell("dev-mcubic-run-length", "mcubic", "window 300s:600s", [1.9, 2.0, 1.95], runs),
        _cell("dev-mcubic-run-length", "lia", "window 0s:45s", [0.3, 0.3, 0.31], runs),
        _cell("dev-mcubic-run-length", "lia", "window 45s:600s", [0.3, 0.31, 0.3], runs),
        _cell("dev-mcubic-run-length", "lia", "window 300s:600s", [0.29, 0.3, 0.31], runs),
    ])
    r = judge_hypothesis(h, cells)
    by = {c.comparison.label: c for c in r.comparisons}
    assert by["mcubic: window 300s:600s vs 0s:45s"].finding == SUPPORTED
    assert by["mcubic: window 300s:600s vs 0s:45s"].effect.paired
    assert by["mcubic: window 300s:600s vs 0s:45s"].reaches_target        # 1.95 within [1.83, 2.07]
    assert by["lia: window 300s:600s vs 0s:45s"].finding == REFUTED       # ~0 effect, gap 1.55
    assert r.status == MIXED and "2 supported, 2 refuted" in r.reason


def test_a_hypothesis_without_runs_is_not_measured():
    h = next(x for x in HYPOTHESES if x.id == "mcubic-eq10-reading")
    assert judge_hypothesis(h, Cells()).status == NOT_MEASURED


def test_toward_a_measured_cell():
    h = next(x for x in HYPOTHESES if x.id == "balia-floor")
    cells = Cells([_cell("dev-balia-floor", "balia", "", [0.7, 0.72, 0.74]),
                   _cell("dev-balia-floor", "balia_floor", "", [0.85, 0.86, 0.9]),
                   _cell("dev-balia-floor", "lia", "", [0.88, 0.9, 0.86])])
    r = judge_hypothesis(h, cells)
    assert r.comparisons[0].target == pytest.approx(0.88)
    assert r.status == SUPPORTED
    # how much of the gap the effect closes is printed beside the finding: (0.87 - 0.72) / (0.88 - 0.72)
    assert r.comparisons[0].gap_share == pytest.approx(0.15 / 0.16, rel=1e-3)
    assert "the mean effect is 94% of the gap" in r.comparisons[0].text()


def test_a_cell_that_already_agrees_with_the_paper_says_so():
    """MCubic's Table 3 cells on 2026-11-26: without the change (literal mcubic) the paper's 0.47
    lies inside the baseline's interval; the wrap reading moves the ratio up, away from it. The
    text says both, and the share of the gap is not printed as a negative percentage."""
    h = next(x for x in HYPOTHESES if x.id == "mcubic-eq10-reading-t3")
    col = "delay2 400ms"
    cells = Cells([_cell("dev-mcubic-eq10-t3", "mcubic", col, [0.43, 0.55, 0.66]),
                   _cell("dev-mcubic-eq10-t3", "mcubic_wrap", col, [4.5, 6.0, 7.4])])
    r = judge_hypothesis(h, cells)
    c = next(x for x in r.comparisons if x.comparison.label == "mcubic_wrap vs mcubic, 100:400ms")
    assert c.baseline_at_target and not c.reaches_target and c.finding == REFUTED
    text = c.text()
    assert "within the baseline's 95 % CI: no deviation to explain at this cell" in text
    assert "moves away from the target" in text and "-" not in text.split("moves away")[1].split(")")[0]
    assert "without the change this rack already agrees with the target" in r.reason
    assert c.to_json()["baseline_at_target"] is True


def test_calibrations():
    cal = next(c for c in CALIBRATIONS if c.id == "mcubic-single-subflow")
    ok = Cells([_cell("dev-calibration", "mcubic", "subflows 1", [0.95, 1.02, 1.05])])
    assert judge_calibration(cal, ok).status == VALIDATED
    off = Cells([_cell("dev-calibration", "mcubic", "subflows 1", [1.5, 1.55, 1.6])])
    assert judge_calibration(cal, off).status == FAILED
    assert judge_calibration(cal, Cells()).status == NOT_MEASURED


# ---- Table 1 (dev-mcubic-t1): one experiment, several metrics of the same runs ----------------------

_T1_BASE, _T1_DELAY = "delay 0, queue 50", "delay 100ms, queue 50"


def test_t1_path_delay_judged_on_the_jain_index():
    """Each row towards the paper's value at 20 Mbit/s (MCubic 0.70, LIA 0.70, Cubic 0.65), and the
    claims' order with the cause present (MCubic and LIA above Cubic)."""
    h = next(x for x in HYPOTHESES if x.id == "mcubic-t1-path-delay")
    cells = Cells([
        _cell("dev-mcubic-t1", "mcubic", _T1_BASE, [0.55, 0.56, 0.54], metric="jain_index"),
        _cell("dev-mcubic-t1", "mcubic", _T1_DELAY, [0.68, 0.70, 0.69], metric="jain_index"),
        _cell("dev-mcubic-t1", "lia", _T1_BASE, [0.60, 0.62, 0.61], metric="jain_index"),
        _cell("dev-mcubic-t1", "lia", _T1_DELAY, [0.69, 0.71, 0.70], metric="jain_index"),
        _cell("dev-mcubic-t1", "cubic", _T1_BASE, [0.72, 0.73, 0.71], metric="jain_index"),
        _cell("dev-mcubic-t1", "cubic", _T1_DELAY, [0.65, 0.66, 0.64], metric="jain_index"),
    ])
    r = judge_hypothesis(h, cells)
    by = {c.comparison.label: c for c in r.comparisons}
    assert by["mcubic: delay 100ms vs ctl's set-up"].target == 0.7
    assert by["mcubic: delay 100ms vs ctl's set-up"].finding == SUPPORTED
    assert by["cubic: delay 100ms vs ctl's set-up"].target == 0.65
    assert by["cubic: delay 100ms vs ctl's set-up"].direction == -1        # Cubic's index is above the paper's
    assert by["cubic: delay 100ms vs ctl's set-up"].finding == SUPPORTED
    assert by["mcubic above cubic, delay 100ms"].finding == SUPPORTED
    assert r.status == SUPPORTED
    # the same numbers without the cause's effect: refuted
    flat = Cells([Cell(c.paper, c.table, c.row, _T1_DELAY, c.metric, c.values, facts=c.facts)
                  for c in cells if c.column == _T1_BASE] + [c for c in cells if c.column == _T1_BASE])
    assert judge_hypothesis(h, flat).status == REFUTED


def test_t1_jain_entities_compares_metrics_of_the_same_runs():
    """Another entity set vs ctl's three flows: a paired effect over the runs both metrics of a cell
    share; the other metrics' cells are never mixed with the jain_index ones."""
    h = next(x for x in HYPOTHESES if x.id == "mcubic-t1-jain-entities")
    runs = {cc: [f"{cc}-{i}" for i in range(3)] for cc in ("mcubic", "lia", "cubic")}
    idx = {"mcubic": [0.55, 0.56, 0.54], "lia": [0.66, 0.60, 0.70], "cubic": [0.72, 0.73, 0.71]}
    four = {"mcubic": [0.45, 0.47, 0.44], "lia": [0.50, 0.49, 0.53], "cubic": [0.66, 0.65, 0.66]}
    cells = Cells([_cell("dev-mcubic-t1", cc, _T1_BASE, idx[cc], runs[cc], metric="jain_index") for cc in idx] +
                  [_cell("dev-mcubic-t1", cc, _T1_BASE, four[cc], runs[cc], metric="jain_four") for cc in four])
    r = judge_hypothesis(h, cells)
    by = {c.comparison.label: c for c in r.comparisons}
    m = by["mcubic: jain_four vs jain_index (the same runs)"]
    assert m.effect.paired and m.effect.n == 3 and m.effect.mean == pytest.approx(-0.0967, abs=1e-3)
    assert m.treated.metric == "jain_four" and m.baseline.metric == "jain_index"
    assert m.finding == REFUTED                                    # away from the paper's 0.70
    assert by["mcubic above cubic, jain_four"].finding == REFUTED  # MCubic's is below Cubic's
    assert by["cubic: jain_four vs jain_index (the same runs)"].finding in (SUPPORTED, REFUTED, OPEN)
    # link 1 / link 2 were not computed: those comparisons are not measured, not counted
    assert by["mcubic: jain_link1 vs jain_index (the same runs)"].why == "not measured"
    assert r.reason.startswith("5 of 15 comparisons measured")          # jain_four's 3 + 2


def test_t1_eq10_readings_against_the_literal_mcubic():
    h = next(x for x in HYPOTHESES if x.id == "mcubic-t1-eq10-reading")
    cells = Cells([
        _cell("dev-mcubic-t1", "mcubic", _T1_BASE, [0.55, 0.56, 0.54], metric="jain_index"),
        _cell("dev-mcubic-t1", "mcubic_wrap", _T1_BASE, [0.55, 0.555, 0.545], metric="jain_index"),
        _cell("dev-mcubic-t1", "mcubic_stretch", _T1_BASE, [0.545, 0.55, 0.555], metric="jain_index"),
        _cell("dev-mcubic-t1", "cubic", _T1_BASE, [0.72, 0.73, 0.71], metric="jain_index"),
    ])
    r = judge_hypothesis(h, cells)
    assert [c.finding for c in r.comparisons] == [REFUTED] * 4 and r.status == REFUTED
