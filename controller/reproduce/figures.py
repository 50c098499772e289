"""The reproduction report's figures: each paper's table as grouped bars (measured mean, with its 95 %
CI where there are two values or more, next to the paper's value and a model's prediction), and
the BBRv3 heatmaps through results.figures. matplotlib only; data comes in as cells.

Every row keeps one colour, marker and hatch across all figures of a report: its algorithm's or
its role's in controller.palette (LIA is orange in Table 1, 2 and 3 alike), never the colour of
its position. A cell with one value is drawn as its row's marker, without a bar or an interval,
and the caption says how many there are (`single_note`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping, Sequence

from controller import palette, plots
from controller.reproduce.cells import Cells
from controller.results.figures import CaseData, heatmap_figures
from controller.units import parse_delay_us, parse_probability


def table_figure(cells: Cells, paper: str, table: str, metric: str, out: Path, name: str, title: str, ylabel: str,
                 column_key: Callable[[str], float] | None = None, reference: float | None = None,
                 output: plots.Output | None = None) -> Path | None:
    """Grouped bars: one group per column, one bar per row in the row's palette style; an error
    bar only from two values up (one value: the row's marker alone); each value as a small dot;
    the paper's value as a black dash, a model's prediction as a white diamond."""
    sel = [c for c in cells.select(paper, table, metric=metric)]
    if not any(c.stat.mean is not None for c in sel):
        return None
    plt = plots.pyplot()
    cols = list(dict.fromkeys(c.column for c in sel))
    if column_key is not None:
        cols.sort(key=column_key)
    rows = list(dict.fromkeys(c.row for c in sel))
    width = 0.8 / max(1, len(rows))
    fig, ax = plt.subplots(figsize=(max(7.0, 2.8 + 0.45 * len(cols) * len(rows)), 4.4), layout="constrained")
    shown_paper = shown_model = False
    for i, row in enumerate(rows):
        st = palette.style(row)
        bars, singles = [], []
        for j, col in enumerate(cols):
            c = cells.get(paper, table, row, col, metric)
            x = j - 0.4 + width * (i + 0.5)
            if c is not None and c.stat.mean is not None:
                if c.stat.ci95 is not None:
                    bars.append((x, c.stat.mean, c.stat.ci95))
                else:
                    singles.append((x, c.stat.mean))
                ax.plot([x] * len(c.values), list(c.values), ".", color="black", markersize=3, alpha=0.5)
            if c is not None and c.paper_value is not None:
                ax.plot([x - width * 0.45, x + width * 0.45], [c.paper_value] * 2, "-", color=palette.PAPER.color,
                        lw=2, label=None if shown_paper else "paper's value")
                shown_paper = True
            if c is not None and c.model_value is not None:
                ax.plot([x], [c.model_value], ls="none", marker=palette.MODEL.marker, mfc="white", mec="black",
                        markersize=6, label=None if shown_model else "model's prediction")
                shown_model = True
        if bars:
            ax.bar([b[0] for b in bars], [b[1] for b in bars], width=width * 0.9, color=st.color, hatch=st.hatch,
                   edgecolor="black", lw=0.5, alpha=0.85, label=row)
            # an interval only where it exists (n >= 2): a zero-length bar would look like certainty
            ax.errorbar([b[0] for b in bars], [b[1] for b in bars], yerr=[b[2] for b in bars], fmt="none",
                        ecolor="black", capsize=3, lw=1)
        if singles:
            ax.plot([s[0] for s in singles], [s[1] for s in singles], ls="none", marker=st.marker or "o",
                    color=st.color, mec="black", markersize=8, label=f"{row} (one run: no CI)")
    if reference is not None:
        ax.axhline(reference, color="gray", ls="--", lw=0.8)
    ax.set_xticks(range(len(cols)), cols, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    plots.legend(ax)
    return plots.save(fig, Path(out) / name, output)


def single_note(cells: Cells, paper: str, table: str, metric: str) -> str:
    """What a table figure's caption says about cells with one value (drawn as markers)."""
    n = sum(1 for c in cells.select(paper, table, metric=metric) if c.stat.n == 1)
    if not n:
        return ""
    return (f"; {n} cell{'s' if n != 1 else ''} with one run: drawn as the row's marker, without a bar or "
            "a confidence interval")


def bbr_heatmaps(cells: Cells, out: Path, metric: str = "share_pct", output: plots.Output | None = None,
                 stamp: str = "", row_labels: Mapping[str, str] | None = None) -> list[tuple[Path, str]]:
    """The paper's Fig. 1-2: a panel per algorithm, RTT x loss, mean over repetitions."""
    sel = [c for c in cells.select("bbrv3", "Fig. 1-2", metric=metric) if c.values]
    if not sel:
        return []

    def rtt_loss(col: str) -> tuple[str, str]:
        rtt, loss = col.removeprefix("RTT ").split(", loss ")
        return rtt, loss
    rtts = sorted({rtt_loss(c.column)[0] for c in sel}, key=parse_delay_us)
    losses = sorted({rtt_loss(c.column)[1] for c in sel}, key=parse_probability)
    ccs = sorted({c.row for c in sel})
    labels = row_labels or {}          # a panel names its algorithm: "bbr (kernel: v1 here)", "bbr3 (BBRv3 ...)"
    cases: list[CaseData] = []
    for cc in ccs:
        for r in rtts:
            for loss in losses:
                c = cells.get("bbrv3", "Fig. 1-2", cc, f"RTT {r}, loss {loss}", metric)
                cases.append(CaseData(len(cases), {"loss": loss, "rtt": r, "cc": labels.get(cc, cc)}, [],
                                      {metric: list(c.values) if c else []}, []))
    out.mkdir(parents=True, exist_ok=True)
    return heatmap_figures(cases, metric, ("loss", "rtt", "cc"), out,
                           "The BBRv3 paper's Fig. 1-2 on this rack: mean " + palette.label(metric)
                           + (f"\n{stamp}" if stamp else ""), output)


def paths(figs: Sequence[tuple[Path | None, str]]) -> list[tuple[Path, str]]:
    return [(p, c) for p, c in figs if p is not None]
