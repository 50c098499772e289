"""The report's account of deviations (pure): what each paper's text establishes (citations), each
hypothesis with its experiment, its numbers and what they mean, the calibrations, and the experiments'
tables. Blocks in the report's own form (report.Block); the report's templates render the one
block kind this adds ("hypothesis", from `hypothesis_lines`).
"""
from __future__ import annotations

from typing import Sequence

from controller.reproduce.cells import Cells
from controller.reproduce.effects import GAP_SHARE, MIN_RELEVANT
from controller.reproduce.entities import ENTITY_SETS
from controller.reproduce.evidence import CalibrationResult, HypothesisResult
from controller.reproduce.hypotheses import (
    CITATIONS,
    EXPERIMENTS,
    NO_CANDIDATE_CAUSE,
    Citation,
    Experiment,
    UntestedCause,
    deviation_column,
    experiments_for,
    untested_for,
)

RULE = (f"Rule (fixed before the runs; two clarifications of its code made after the runs of 2026-11-26 are "
        f"listed in docs/reference/hypotheses.md): an effect is treated - baseline with its 95 % confidence "
        f"interval (paired over the runs both cells share, else Welch). A hypothesis predicts the direction "
        f"(towards the paper's value). Relevant: the smallest effect that could account for the deviation, "
        f"{GAP_SHARE:g} of the gap to the paper's value, at least {MIN_RELEVANT:g}. Supported: the whole interval "
        f"is on the predicted side of 0, includes relevant effects, and (towards a value) stays short of twice "
        f"the gap. Refuted: the whole interval is on the other side of 0, or below the relevant size (also when "
        f"it is on the predicted side: real, too small), or beyond twice the gap (the number ends farther from "
        f"the paper's value than without the change). Open: neither. Mixed: the comparisons of one hypothesis "
        f"disagree (each is listed).")


# What a metric of a deviation table is over, where its name alone does not say (Table 1's entity sets).
METRIC_TEXT = {k: f"Jain's index over {v}" for k, v in ENTITY_SETS.items()}


def citation_text(c: Citation) -> str:
    return f"{c.source}: \u201c{c.quote}\u201d \u2014 {c.says}"


def citations_blocks(paper: str) -> list[tuple]:
    cs = CITATIONS.get(paper) or ()
    if not cs:
        return []
    return [("h3", "What the paper's text establishes"), ("list", [citation_text(c) for c in cs])]


def no_hypothesis_note(claim_id: str, tested: Sequence[HypothesisResult]) -> tuple | None:
    """Under a claim that did not reproduce and has no tested hypothesis: say so plainly (and that the
    candidate causes listed under it, if any, are untested)."""
    if any(claim_id in h.hypothesis.claims for h in tested):
        return None
    if claim_id in NO_CANDIDATE_CAUSE:
        return ("p", f"No candidate cause of this deviation is known: {NO_CANDIDATE_CAUSE[claim_id]}")
    if untested_for(claim_id):
        return ("p", "No candidate cause of this deviation has been tested by an experiment here: the candidate "
                     "causes below are untested hypotheses, listed so that none is omitted; none of them is a "
                     "finding.")
    return ("p", "No candidate cause of this deviation has been tested by an experiment here; only the paper's "
                 "text cited below is offered, and it is not a cause.")


def untested_block(u: UntestedCause) -> dict:
    """An untested hypothesis in the report's hypothesis block form (status `untested`)."""
    lines = [f"basis: {citation_text(c)}" for c in u.basis]
    lines.append(f"untested: {u.untested}")
    if u.elsewhere:
        lines.append("tested only in another configuration, whose data are not reused here: "
                     + ", ".join(u.elsewhere))
    return {"id": u.id, "status": "untested", "statement": u.statement,
            "reason": "no experiment tests this cause for this claim", "lines": lines}


def experiment_tables(cells: Cells, paper: str) -> list[tuple]:
    out: list[tuple] = []
    for e in experiments_for([paper]):
        first = True
        for metric in (e.metric, *e.extra_metrics):
            sel = cells.select(e.design.paper, e.key, metric=metric)
            if not sel:
                continue
            rows, cols = design_order(e, [c.row for c in sel], [c.column for c in sel])
            body = [[(r, None)] + [((cells.get(e.design.paper, e.key, r, c, metric).text()   # type: ignore[union-attr]
                                     if cells.get(e.design.paper, e.key, r, c, metric) else "-"), None) for c in cols]
                    for r in rows]
            if first:
                out.append(("h3", f"{e.key}: {e.design.title}"))
                first = False
            out.append(("p", f"{metric}{' (' + METRIC_TEXT[metric] + ')' if metric in METRIC_TEXT else ''} per run, "
                             f"mean ± 95 % CI half-width (n runs); scenario {e.design.scenario}, "
                             f"{e.design.repetitions} repetitions per case" +
                             (f"; values over the windows {', '.join(e.windows)} of each run's traffic" if e.windows
                              else "")))
            out.append(("table", [f"{e.row} \\ condition"] + [c or "(one condition)" for c in cols], body))
    return out


def design_order(e: Experiment, rows: Sequence[str], cols: Sequence[str]) -> tuple[list[str], list[str]]:
    """The rows and columns of an experiment's cells in the order its campaign file lists the cases
    (pure; the runs themselves come in a random order); any the design does not name go last."""
    want_rows: list[str] = []
    want_cols: list[str] = []
    for case in e.design.case_values():
        v = {k.replace("-", "_"): x for k, x in case.items()}     # as the campaign's runs name them
        want_rows.append(e.row_labels.get(v.get(e.row, ""), v.get(e.row, "")))
        want_cols += [deviation_column(e, v, w) for w in (e.windows or (None,))]

    def ordered(got: Sequence[str], want: list[str]) -> list[str]:
        rank = {x: i for i, x in reversed(list(enumerate(want)))}
        return sorted(dict.fromkeys(got), key=lambda x: rank.get(x, len(want)))
    return ordered(rows, want_rows), ordered(cols, want_cols)


def calibration_blocks(results: Sequence[CalibrationResult]) -> list[tuple]:
    if not results:
        return []
    return [("h3", "Calibrations of the rack and of ctl's implementations"),
            ("table", ["calibration", "expected", "status", "measured", "what it checks"],
             [[(r.calibration.statement, None),
               ("-" if r.calibration.expected is None else f"{r.calibration.expected:g} ± {r.calibration.tolerance:g}",
                None), (r.status, None), (r.reason, None), (r.calibration.meaning, None)] for r in results])]


def hypothesis_lines(h: HypothesisResult) -> list[str]:
    hy = h.hypothesis
    e = EXPERIMENTS[hy.experiment]
    lines = [f"basis: {citation_text(c)}" for c in hy.basis]
    lines.append(f"experiment: {e.key} ({e.design.title}; {e.design.run_count()} runs, campaign file "
                 f"campaigns/deviations/{e.key}.yaml)")
    lines.append(f"prediction: {hy.prediction}")
    lines += [r.text() for r in h.comparisons]
    return lines


CSS = """
.hyp{border-left:4px dashed #99b;padding:.3em .8em;margin:.6em 0 .6em 1.5em}
.hv-supported{background:#d6f5d6;color:#145214} .hv-refuted{background:#fbd5d5;color:#7a1010}
.hv-open,.hv-mixed{background:#fff0c2;color:#6b4d00} .hv-not-measured,.hv-untested{background:#e4e4e4;color:#333}
"""


def experiments_in(cells: Cells) -> list[str]:
    return [k for k in EXPERIMENTS if any(c.table == k for c in cells)]
