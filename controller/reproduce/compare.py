"""Two reproductions side by side (pure): the same rack a month later, or two racks.

Cells are matched by (paper, table, row, column, metric). Each pair with two values or more on
both sides is tested with Welch's unequal-variances t-test (two-sided; results.stats.welch), and
the p-values of all the pairs tested in one comparison are corrected together with Holm's
step-down method: a pair is called different when its Holm-adjusted p is below ALPHA, so the
chance of calling any difference where there is none stays at most ALPHA however many cells are
compared and however they depend on each other (cells of one run are not independent, which
Benjamini-Hochberg would need). A pair with fewer than two values on a side has no variance there:
it is never called different, only marked with its n. Rows are sorted by paper, table, row,
column (numbers in labels in numeric order) and metric. Verdicts that differ are listed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from controller.reproduce.cells import Cell, Cells
from controller.results.stats import Welch, holm, welch
from controller.results.summary import format_table

ALPHA = 0.05
FLAG = "differs"                 # Holm-adjusted p < ALPHA
SAME = "no difference shown"     # tested, Holm-adjusted p >= ALPHA
FEW = "n < 2: not tested"
ONLY_A, ONLY_B = "only in A", "only in B"
STATUSES = (FLAG, SAME, FEW, ONLY_A, ONLY_B)


@dataclass(frozen=True)
class Pair:
    key: tuple[str, str, str, str, str]
    a: Cell | None
    b: Cell | None
    test: Welch | None          # None when a side is missing
    p_holm: float | None        # None when not tested
    status: str

    def to_json(self) -> dict:
        def side(c: Cell | None) -> dict | None:
            if c is None:
                return None
            st = c.stat
            return {"n": st.n, "mean": st.mean, "sd": st.sd, "ci95": st.ci95}
        t = self.test
        return {"paper": self.key[0], "table": self.key[1], "row": self.key[2], "column": self.key[3],
                "metric": self.key[4], "a": side(self.a), "b": side(self.b),
                "difference": None if t is None else t.diff,
                "welch": None if t is None or t.p is None else {"t": t.t, "df": t.df, "p": t.p},
                "p_holm": self.p_holm, "alpha": ALPHA, "status": self.status, "flagged": self.status == FLAG}


def _natural(s: str) -> tuple:
    """`10M` < `50M` < `100M`; `RTT 2ms` < `RTT 20ms`: digits compare as numbers."""
    return tuple((0, float(x), "") if re.fullmatch(r"\d+(?:\.\d+)?", x) else (1, 0.0, x)
                 for x in re.findall(r"\d+(?:\.\d+)?|\D+", s))


def sort_key(key: tuple[str, str, str, str, str]) -> tuple:
    return tuple(_natural(k) for k in key)


def _has_values(c: Cell | None) -> bool:
    return c is not None and c.stat.mean is not None


def compare(a: Cells, b: Cells, alpha: float = ALPHA) -> list[Pair]:
    amap = {c.key: c for c in a}
    bmap = {c.key: c for c in b}
    keys = sorted(set(amap) | set(bmap), key=sort_key)
    tests: dict[tuple, Welch] = {}
    for k in keys:
        ca, cb = amap.get(k), bmap.get(k)
        if _has_values(ca) and _has_values(cb):
            tests[k] = welch(ca.values, cb.values)          # type: ignore[union-attr]
    tested = [k for k in keys if k in tests and tests[k].p is not None]
    adjusted = dict(zip(tested, holm([tests[k].p for k in tested]), strict=True))  # type: ignore[misc]
    out = []
    for k in keys:
        ca, cb = amap.get(k), bmap.get(k)
        if not _has_values(ca):
            status = ONLY_B if _has_values(cb) else FEW
        elif not _has_values(cb):
            status = ONLY_A
        elif k not in adjusted:
            status = FEW
        else:
            status = FLAG if adjusted[k] < alpha else SAME
        out.append(Pair(k, ca, cb, tests.get(k), adjusted.get(k), status))
    return out


def verdict_changes(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(claim, status in A, status in B) for claims whose verdict differs, sorted by claim."""
    bs = {v["claim"]: v["status"] for v in b}
    out = []
    for v in a:
        other = bs.get(v["claim"])
        if other is not None and other != v["status"]:
            out.append((v["claim"], v["status"], other))
    return sorted(out)


def _p(p: float | None) -> str:
    if p is None:
        return "-"
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}"


def _side(c: Cell | None) -> str:
    return c.text() if c is not None else "-"


def render(pairs: Sequence[Pair], a_id: str, b_id: str, changes: Sequence[tuple[str, str, str]] = ()) -> str:
    rows = [[p.key[0], p.key[1], p.key[2], p.key[3], p.key[4], _side(p.a), _side(p.b),
             "-" if p.test is None or p.test.diff is None else f"{p.test.diff:+.3g}",
             _p(p.test.p if p.test else None), _p(p.p_holm), ("** " + p.status) if p.status == FLAG else p.status]
            for p in pairs]
    out = [format_table(["paper", "table", "row", "column", "metric", f"A {a_id}", f"B {b_id}", "B - A",
                         "Welch p", "Holm p", "result"], rows,
                        title=f"A = {a_id}  B = {b_id}  (mean ± 95 % CI half-width, n runs per side)")]
    flagged = sum(1 for p in pairs if p.status == FLAG)
    tested = sum(1 for p in pairs if p.status in (FLAG, SAME))
    few = sum(1 for p in pairs if p.status == FEW)
    out.append(f"{flagged} of {tested} cells tested differ (Welch's t-test, two-sided, Holm-adjusted p < {ALPHA:g} "
               f"over the {tested} tests)"
               + (f"; {few} cells have fewer than two values on a side and are not tested" if few else ""))
    if changes:
        out.append("verdicts that differ:\n" + "\n".join(f"  {c}: {x} -> {y}" for c, x, y in changes))
    return "\n\n".join(out)
