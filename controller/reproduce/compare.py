"""Two reproductions side by side (pure): the same rack a month later, or two racks.

Cells are matched by (paper, table, row, column, metric). A pair is flagged when both have a 95 %
confidence interval (two values or more each) and the intervals do not overlap; a cell with a
single value has no interval and is never flagged, only marked. Verdicts that differ are listed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from controller.reproduce.cells import Cell, Cells
from controller.results.summary import format_table

FLAG = "CIs do not overlap"


@dataclass(frozen=True)
class Pair:
    key: tuple[str, str, str, str, str]
    a: Cell | None
    b: Cell | None
    status: str            # "CIs do not overlap" | "overlap" | "no CI" | "only in A" | "only in B"

    def to_json(self) -> dict:
        def side(c: Cell | None) -> dict | None:
            if c is None:
                return None
            st = c.stat
            return {"n": st.n, "mean": st.mean, "ci95": st.ci95}
        return {"paper": self.key[0], "table": self.key[1], "row": self.key[2], "column": self.key[3],
                "metric": self.key[4], "a": side(self.a), "b": side(self.b), "status": self.status,
                "flagged": self.status == FLAG}


def pair_status(a: Cell | None, b: Cell | None) -> str:
    if a is None or a.stat.mean is None:
        return "only in B"
    if b is None or b.stat.mean is None:
        return "only in A"
    if None in (a.low, a.high, b.low, b.high):
        return "no CI"
    return FLAG if (a.high < b.low or b.high < a.low) else "overlap"   # type: ignore[operator]


def compare(a: Cells, b: Cells) -> list[Pair]:
    keys = list(dict.fromkeys([c.key for c in a] + [c.key for c in b]))
    amap = {c.key: c for c in a}
    bmap = {c.key: c for c in b}
    return [Pair(k, amap.get(k), bmap.get(k), pair_status(amap.get(k), bmap.get(k))) for k in keys]


def verdict_changes(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(claim, status in A, status in B) for claims whose verdict differs."""
    bs = {v["claim"]: v["status"] for v in b}
    out = []
    for v in a:
        other = bs.get(v["claim"])
        if other is not None and other != v["status"]:
            out.append((v["claim"], v["status"], other))
    return out


def render(pairs: Sequence[Pair], a_id: str, b_id: str, changes: Sequence[tuple[str, str, str]] = ()) -> str:
    rows = [[p.key[0], p.key[1], p.key[2], p.key[3], p.key[4], p.a.text() if p.a else "-", p.b.text() if p.b else "-",
             ("** " + p.status) if p.status == FLAG else p.status] for p in pairs]
    out = [format_table(["paper", "table", "row", "column", "metric", f"A {a_id}", f"B {b_id}", ""], rows,
                        title=f"A = {a_id}  B = {b_id}  (mean ± 95 % CI half-width, n)")]
    flagged = sum(1 for p in pairs if p.status == FLAG)
    comparable = sum(1 for p in pairs if p.status in (FLAG, "overlap"))
    out.append(f"{flagged} of {comparable} cells with an interval on both sides differ beyond their 95 % CIs"
               + (f"; {sum(1 for p in pairs if p.status == 'no CI')} cells have a single value on a side (no CI)"
                  if any(p.status == "no CI" for p in pairs) else ""))
    if changes:
        out.append("verdicts that differ:\n" + "\n".join(f"  {c}: {x} -> {y}" for c, x, y in changes))
    return "\n\n".join(out)
