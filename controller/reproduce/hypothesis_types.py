"""The shapes of controller.reproduce.hypotheses' data: a deviation experiment (`Experiment`), a
hypothesis and the comparisons of cells that judge it, a cause no experiment tests (`UntestedCause`),
and the paper's MCubic ratios the predictions point at (pure; re-exported by hypotheses)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from controller.reproduce.campaign_design import CampaignDesign
from controller.reproduce.citations import Citation
from controller.reproduce.papers import MCUBIC_ROWS
from controller.scenarios.shared_bottleneck import TABLE2, TABLE3


@dataclass(frozen=True)
class Experiment:
    """A deviation experiment: one campaign, and how its runs become cells. A cell's row is the value
    of `row` (the congestion control, usually), its column the values of `columns` (and the window,
    when the runs are read over several windows)."""
    design: CampaignDesign
    columns: tuple[str, ...]
    row: str = "cc"
    metric: str = "ratio"
    windows: tuple[str, ...] = ()          # START:END of the traffic; () = the whole run
    row_labels: Mapping[str, str] = field(default_factory=dict)   # a case's row value -> its label
    # the value of a run where it is not a top-level number of its summary (`metric` names it then)
    value_of: Callable[[Mapping[str, Any]], float | None] | None = None
    # further numbers each run is read as (metric name -> its value), each in cells of its own: the
    # same runs over another definition (Table 1's index over other entities)
    extra_metrics: Mapping[str, Callable[[Mapping[str, Any]], float | None]] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.design.key


def design(key: str, title: str, fixed: dict[str, str], cases: list[dict[str, str]], reps: int = 3,
           scenario: str = "shared-bottleneck", paper: str = "mcubic") -> CampaignDesign:
    return CampaignDesign(paper, key, title, scenario, fixed, cases=cases, repetitions=reps, pause="5s",
                          overhead="10s")


def cases(ccs: tuple[str, ...], columns: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{**col, "cc": cc} for col in columns for cc in ccs]


T2_COLUMNS = [{"delay": d, "duration": "60s" if d in ("100ms", "200ms") else "120s"} for d in TABLE2["columns"]]
T3_COLUMNS = [{"delay1": "100ms", "delay2": c.split(":")[1], "duration": "90s"} for c in TABLE3["columns"]]


def case_value(varied: Mapping[str, str], key: str) -> str:
    """A case's value of `key` in either spelling (`tcp-cc` in a design, `tcp_cc` once a campaign
    normalised it)."""
    for k in (key, key.replace("-", "_"), key.replace("_", "-")):
        if k in varied:
            return varied[k]
    return ""


def deviation_column(e: Experiment, varied: Mapping[str, str], window: str | None = None) -> str:
    """The column a run of a deviation experiment fills: `delay 100ms`, `queue 500`, `window 0s:45s`."""
    parts = [f"{k} {case_value(varied, k)}" for k in e.columns]
    if window is not None:
        parts.append(f"window {window}")
    return ", ".join(parts)


@dataclass(frozen=True)
class Comparison:
    """treated - baseline, two cells (row, column) of one experiment. `toward`: the paper's value
    the treated condition would have to approach (the prediction is the direction of the gap from
    the baseline's mean); or `toward_cell`: a measured cell of the same experiment; or `direction`."""
    label: str
    treated: tuple[str, str]
    baseline: tuple[str, str]
    paired: bool = False
    toward: float | None = None
    toward_cell: tuple[str, str] | None = None
    direction: int | None = None
    metric: str | None = None             # the cells' metric (None: the experiment's own)
    baseline_metric: str | None = None    # the baseline cell's, where it differs (the same runs read otherwise)

    def to_json(self) -> dict:
        return {"label": self.label, "treated": list(self.treated), "baseline": list(self.baseline),
                "paired": self.paired, "toward": self.toward,
                "toward_cell": list(self.toward_cell) if self.toward_cell else None, "direction": self.direction,
                "metric": self.metric, "baseline_metric": self.baseline_metric}


@dataclass(frozen=True)
class Hypothesis:
    id: str
    paper: str
    claims: tuple[str, ...]        # the claims (verdicts.CLAIMS ids) whose deviation it could explain
    statement: str                 # the candidate cause, as a hypothesis
    basis: tuple[Citation, ...]    # why it is a candidate
    experiment: str                # EXPERIMENTS key
    prediction: str                # what the experiment shows if it holds (fixed before any run)
    comparisons: tuple[Comparison, ...]


def column(k: str, v: str) -> str:
    return f"{k} {v}"


def t2_mcubic(delay: str) -> float:
    return TABLE2["rows"]["MCubic"][TABLE2["columns"].index(delay)]


def t3_mcubic(delay2: str) -> float:
    return TABLE3["rows"]["MCubic"][TABLE3["columns"].index(f"100:{delay2}")]


def t2_lia(delay: str) -> float:
    return TABLE2["rows"]["LIA"][TABLE2["columns"].index(delay)]


T2_LIA_100 = t2_lia("100ms")


def t3_lia(delay2: str) -> float:
    return TABLE3["rows"]["LIA"][TABLE3["columns"].index(f"100:{delay2}")]


def paper_ratio(cc: str, column: str) -> float:
    """The paper's ratio of `cc` (ctl's name) at a Table 2 delay ("500ms") or Table 3 column ("100:400ms")."""
    table = TABLE3 if ":" in column else TABLE2
    label = next(k for k, v in MCUBIC_ROWS.items() if v == cc)
    return table["rows"][label][table["columns"].index(column)]


@dataclass(frozen=True)
class UntestedCause:
    """A candidate cause of a deviation that no experiment of ctl tests in the claim's configuration:
    listed under the claim as an open, untested hypothesis (never omitted, never called a cause).
    `elsewhere`: experiments that test the same cause in another configuration, whose data do not
    carry over to this claim (named, not reused)."""
    id: str
    paper: str
    claims: tuple[str, ...]
    statement: str
    basis: tuple[Citation, ...]
    untested: str                  # why no experiment tests it (what one would need)
    elsewhere: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"id": self.id, "paper": self.paper, "claims": list(self.claims), "statement": self.statement,
                "basis": [c.to_json() for c in self.basis], "status": "untested", "untested": self.untested,
                "elsewhere": list(self.elsewhere)}
