"""Measured table cells (pure): the values of one cell of a paper's table or figure, from the
reproduction's runs, with their statistics and the paper's own value next to them.

A cell's values are one number per completed run (Tables 1-3, the heatmaps, Fig. 8), or one per
test inside a run where the scenario itself repeats (mptcp-bittorrent: iperf3 tests, downloads).
The 95 % confidence interval is Student's t over those values (results.stats.mean_ci) and is
never given for fewer than two.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from controller.results.stats import Stat, mean_ci


@dataclass(frozen=True)
class Cell:
    paper: str
    table: str                 # "Table 1", "Fig. 1-2", "Fig. 8", ...
    row: str                   # "MCubic", "bbr", "x1", "MPTCP", ...
    column: str                # "10M", "100ms", "RTT 2ms, loss 0%", "SC64+SC32", "local1", ...
    metric: str                # jain_index, ratio, share_pct, mbps
    values: tuple[float, ...] = ()
    paper_value: float | None = None
    model_value: float | None = None     # a model's prediction where the paper has one (BNA/IB)
    unit: str = ""
    facts: dict[str, Any] = field(default_factory=dict, compare=False)   # e.g. first paths, setup times

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.paper, self.table, self.row, self.column, self.metric)

    @property
    def stat(self) -> Stat:
        return mean_ci(self.values)

    @property
    def low(self) -> float | None:
        st = self.stat
        return None if st.mean is None or st.ci95 is None else st.mean - st.ci95

    @property
    def high(self) -> float | None:
        st = self.stat
        return None if st.mean is None or st.ci95 is None else st.mean + st.ci95

    def text(self, digits: int = 3) -> str:
        """`0.712 ± 0.031 (n=3)`; one value: `0.712 (n=1, no CI)`; none: `-`."""
        st = self.stat
        if st.mean is None:
            return "-"
        if st.ci95 is None:
            return f"{st.mean:.{digits}g} (n=1, no CI)"
        return f"{st.mean:.{digits}g} ± {st.ci95:.2g} (n={st.n})"

    def to_json(self) -> dict:
        st = self.stat
        return {"paper": self.paper, "table": self.table, "row": self.row, "column": self.column,
                "metric": self.metric, "values": list(self.values), "n": st.n, "mean": st.mean, "ci95": st.ci95,
                "paper_value": self.paper_value, "model_value": self.model_value, "unit": self.unit,
                "facts": self.facts}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> "Cell":
        return Cell(d["paper"], d["table"], d["row"], d["column"], d["metric"], tuple(float(v) for v in d["values"]),
                    d.get("paper_value"), d.get("model_value"), d.get("unit", ""), dict(d.get("facts") or {}))


class Cells:
    """All cells of a reproduction, looked up by key parts."""

    def __init__(self, cells: Iterable[Cell] = ()):
        self.cells: list[Cell] = list(cells)

    def __iter__(self):
        return iter(self.cells)

    def __len__(self) -> int:
        return len(self.cells)

    def select(self, paper: str | None = None, table: str | None = None, row: str | None = None,
               column: str | None = None, metric: str | None = None) -> list[Cell]:
        return [c for c in self.cells if (paper is None or c.paper == paper) and (table is None or c.table == table)
                and (row is None or c.row == row) and (column is None or c.column == column)
                and (metric is None or c.metric == metric)]

    def get(self, paper: str, table: str, row: str, column: str, metric: str) -> Cell | None:
        found = self.select(paper, table, row, column, metric)
        return found[0] if found else None

    def rows(self, paper: str, table: str, metric: str) -> list[str]:
        return list(dict.fromkeys(c.row for c in self.select(paper, table, metric=metric)))

    def columns(self, paper: str, table: str, metric: str) -> list[str]:
        return list(dict.fromkeys(c.column for c in self.select(paper, table, metric=metric)))

    def to_json(self) -> list[dict]:
        return [c.to_json() for c in self.cells]

    @staticmethod
    def from_json(data: Sequence[Mapping[str, Any]]) -> "Cells":
        return Cells(Cell.from_json(d) for d in data)

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1)


def add_value(acc: dict[tuple, dict[str, Any]], key: tuple[str, str, str, str, str], value: float | None,
              **extra: Any) -> None:
    """Accumulate one value (None: the run gave none) for a cell while reading runs."""
    slot = acc.setdefault(key, {"values": [], **{k: v for k, v in extra.items() if k != "facts"}, "facts": {}})
    if value is not None:
        slot["values"].append(float(value))
    for k, v in (extra.get("facts") or {}).items():
        slot["facts"].setdefault(k, []).append(v)


def build_cells(acc: Mapping[tuple, Mapping[str, Any]]) -> Cells:
    out = []
    for (paper, table, row, column, metric), slot in acc.items():
        out.append(Cell(paper, table, row, column, metric, tuple(slot["values"]), slot.get("paper_value"),
                        slot.get("model_value"), slot.get("unit", ""), dict(slot.get("facts") or {})))
    return Cells(out)
