"""The reproduction report's figures: each paper's table as grouped bars (measured mean, with its 95 %
CI where there are two values or more, next to the paper's value and a model's prediction), and
the BBRv3 heatmaps through results.figures. matplotlib only; data comes in as cells.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from controller import plots
from controller.reproduce.cells import Cells
from controller.results.figures import CaseData, heatmap_figures
from controller.units import parse_delay_us, parse_probability


def table_figure(cells: Cells, paper: str, table: str, metric: str, out: Path, name: str, title: str, ylabel: str,
                 column_key: Callable[[str], float] | None = None, reference: float | None = None) -> Path | None:
    """Grouped bars: one group per column, one bar per row; error bars only from two values up;
    the paper's value as a black dash, a model's prediction as a red dot."""
    sel = [c for c in cells.select(paper, table, metric=metric)]
    if not any(c.stat.mean is not None for c in sel):
        return None
    plt = plots.pyplot()
    cols = list(dict.fromkeys(c.column for c in sel))
    if column_key is not None:
        cols.sort(key=column_key)
    rows = list(dict.fromkeys(c.row for c in sel))
    width = 0.8 / max(1, len(rows))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 + 0.45 * len(cols) * len(rows)), 4.2), layout="constrained")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    shown_paper = shown_model = False
    for i, row in enumerate(rows):
        xs, ys, errs = [], [], []
        for j, col in enumerate(cols):
            c = cells.get(paper, table, row, col, metric)
            x = j - 0.4 + width * (i + 0.5)
            if c is not None and c.stat.mean is not None:
                xs.append(x)
                ys.append(c.stat.mean)
                errs.append(c.stat.ci95 if c.stat.ci95 is not None else 0.0)
                ax.plot([x] * len(c.values), list(c.values), ".", color="black", markersize=3, alpha=0.5)
            if c is not None and c.paper_value is not None:
                ax.plot([x - width * 0.45, x + width * 0.45], [c.paper_value] * 2, "-", color="black", lw=2,
                        label=None if shown_paper else "paper")
                shown_paper = True
            if c is not None and c.model_value is not None:
                ax.plot([x], [c.model_value], "o", color="tab:red", markersize=5,
                        label=None if shown_model else "model")
                shown_model = True
        bars = ax.bar(xs, ys, width=width * 0.9, color=colors[i % len(colors)], alpha=0.75, label=row)
        # an interval only where it exists (n >= 2): a zero-length bar would look like certainty
        with_ci = [(x, y, e) for x, y, e, b in zip(xs, ys, errs, bars) if e > 0]
        if with_ci:
            ax.errorbar([x for x, _, _ in with_ci], [y for _, y, _ in with_ci], yerr=[e for _, _, e in with_ci],
                        fmt="none", ecolor="black", capsize=3, lw=1)
    if reference is not None:
        ax.axhline(reference, color="gray", ls="--", lw=0.8)
    ax.set_xticks(range(len(cols)), cols, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=min(4, len(rows) + 2))
    out.mkdir(parents=True, exist_ok=True)
    return plots.save(fig, out / name)


def bbr_heatmaps(cells: Cells, out: Path, metric: str = "share_pct") -> list[tuple[Path, str]]:
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
    cases: list[CaseData] = []
    for cc in ccs:
        for r in rtts:
            for loss in losses:
                c = cells.get("bbrv3", "Fig. 1-2", cc, f"RTT {r}, loss {loss}", metric)
                cases.append(CaseData(len(cases), {"loss": loss, "rtt": r, "cc": cc}, [],
                                      {metric: list(c.values) if c else []}, []))
    out.mkdir(parents=True, exist_ok=True)
    return heatmap_figures(cases, metric, ("loss", "rtt", "cc"), out,
                           "BBRv3 paper Fig. 1-2 on this rack: mean " + ("% of the bottleneck" if metric == "share_pct"
                                                                       else metric))


def paths(figs: Sequence[tuple[Path | None, str]]) -> list[tuple[Path, str]]:
    return [(p, c) for p, c in figs if p is not None]
