"""Two reproductions side by side (pure): cells whose 95 % intervals do not overlap are flagged,
a single value is never flagged (it has no interval)."""
from __future__ import annotations

from controller.reproduce.cells import Cell, Cells
from controller.reproduce.compare import FLAG, compare, pair_status, render, verdict_changes


def c(col, *v, row="MCubic"):
    return Cell("mcubic", "Table 1", row, col, "jain_index", tuple(v))


def test_pair_status():
    assert pair_status(c("10M", 0.70, 0.71, 0.72), c("10M", 0.80, 0.81, 0.82)) == FLAG
    assert pair_status(c("10M", 0.70, 0.71, 0.72), c("10M", 0.70, 0.74, 0.76)) == "overlap"
    assert pair_status(c("10M", 0.70), c("10M", 0.90, 0.91)) == "no CI"
    assert pair_status(None, c("10M", 0.7)) == "only in B" and pair_status(c("10M", 0.7), None) == "only in A"
    assert pair_status(c("10M"), c("10M", 0.7)) == "only in B"          # a cell without values


def test_compare_and_render():
    a = Cells([c("10M", 0.70, 0.71, 0.72), c("50M", 0.80, 0.82), c("20M", 0.7)])
    b = Cells([c("10M", 0.80, 0.81, 0.82), c("50M", 0.79, 0.83), c("40M", 0.75, 0.76)])
    pairs = compare(a, b)
    assert [(p.key[3], p.status) for p in pairs] == [("10M", FLAG), ("50M", "overlap"), ("20M", "only in A"),
                                                     ("40M", "only in B")]
    assert pairs[0].to_json()["flagged"] is True and pairs[0].to_json()["a"]["n"] == 3
    text = render(pairs, "A1", "B1", [("mcubic-fairest", "reproduced", "not reproduced")])
    assert "** CIs do not overlap" in text
    assert "1 of 2 cells with an interval on both sides differ beyond their 95 % CIs" in text
    assert "mcubic-fairest: reproduced -> not reproduced" in text


def test_verdict_changes():
    a = [{"claim": "x", "status": "reproduced"}, {"claim": "y", "status": "inconclusive"}]
    b = [{"claim": "x", "status": "reproduced"}, {"claim": "y", "status": "not reproduced"}, {"claim": "z",
                                                                                               "status": "reproduced"}]
    assert verdict_changes(a, b) == [("y", "inconclusive", "not reproduced")]
