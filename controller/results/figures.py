"""Figures over many runs grouped into cases: a heatmap of a metric over two varied
parameters (a panel per value of a third), and box plots over repetitions.

Axis names and panel titles are written for a reader (controller.palette.label: `share_pct` ->
"share of the bottleneck (%)", `cc = bbr` -> "congestion control: BBR (kernel)"); a case's dots
take its congestion control's colour; a heatmap cell from one run says n = 1; legends sit
outside the axes (controller.plots.legend).
"""
from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from controller import palette, plots
from controller.results.stats import mean_ci


@dataclass
class CaseData:
    index: int
    varied: dict[str, str]
    runs: list[Any]                       # RunRow
    values: dict[str, list[float]]        # metric -> one value per completed repetition
    records: list[tuple[int, str]]        # (repetition, record dir) of completed runs


def varied_values(cases: Sequence[CaseData]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for cd in cases:
        for k, v in cd.varied.items():
            vals = out.setdefault(k, [])
            if v not in vals:
                vals.append(v)
    return out


def case_label(varied: dict[str, str]) -> str:
    return ", ".join(palette.value_label(k, v) for k, v in varied.items()) or "(fixed)"


def heatmap_figures(cases: Sequence[CaseData], metric: str, axes: tuple[str, str, str | None], out: Path,
                    title: str, output: plots.Output | None = None) -> list[tuple[Path, str]]:
    """One figure: a panel per value of `panels`, cells = mean of `metric` over repetitions."""
    plt = plots.pyplot()
    x, y, panels = axes
    vv = varied_values(cases)
    xs, ys = vv.get(x, []), vv.get(y, [])
    pvals: list[str | None] = list(vv.get(panels, [])) if panels else [None]
    if not xs or not ys:
        return []
    means = [mean_ci(cd.values.get(metric, [])).mean for cd in cases]
    finite = [m for m in means if m is not None]
    if not finite:
        return []
    vmin, vmax = colour_range(finite)
    width = max(5.5, 1.2 + 0.9 * len(xs) * len(pvals) + 1.6 * len(pvals))     # room for the title too
    fig, axs = plt.subplots(1, len(pvals), figsize=(width, 2.0 + 0.55 * len(ys)), squeeze=False,
                            layout="constrained")
    im = None
    singles = 0
    for ax, pv in zip(axs[0], pvals, strict=True):
        grid = [[math.nan for _ in xs] for _ in ys]
        count = [[0 for _ in xs] for _ in ys]
        for cd in cases:
            if panels and cd.varied.get(panels) != pv:
                continue
            if cd.varied.get(x) in xs and cd.varied.get(y) in ys:
                st = mean_ci(cd.values.get(metric, []))
                i, j = ys.index(cd.varied[y]), xs.index(cd.varied[x])
                grid[i][j] = math.nan if st.mean is None else st.mean
                count[i][j] = st.n
        im = ax.imshow(grid, cmap="viridis", vmin=vmin, vmax=vmax, aspect="auto", origin="lower")
        ax.set_xticks(range(len(xs)), xs)
        ax.set_yticks(range(len(ys)), ys)
        ax.set_xlabel(palette.label(x))
        ax.set_ylabel(palette.label(y))
        if panels:
            ax.set_title(palette.value_label(panels, str(pv)), fontsize=9)
        for i in range(len(ys)):
            for j in range(len(xs)):
                v = grid[i][j]
                if not math.isnan(v):
                    singles += count[i][j] == 1
                    ax.text(j, i, f"{v:.3g}" + ("\nn=1" if count[i][j] == 1 else ""), ha="center", va="center",
                            fontsize=7, color="white" if v < (vmin + vmax) / 2 else "black")
    if im is not None:
        bar = fig.colorbar(im, ax=axs[0].tolist(), label=palette.label(metric))
        bar.formatter.set_useOffset(False)      # the values themselves, never "1e-10+9.1e2"
        bar.update_ticks()
    fig.suptitle("\n".join(textwrap.fill(line, int(width * 12)) for line in title.split("\n")), fontsize=10)
    path = plots.save(fig, out / "heatmap.png", output)
    names = {cd.varied.get(panels, "") for cd in cases} if panels == "cc" else set()
    note = palette.algorithm_note(names)
    caption = (f"{palette.label(metric)}, mean over repetitions, by {palette.label(y)} (rows) and "
               f"{palette.label(x)} (columns)" + (f", one panel per {palette.label(panels)}" if panels else "")
               + (f"; every cell {finite[0]:.3g}: the colour scale spans \u00b15 % around it"
                  if min(finite) == max(finite) else "")
               + (f", {singles} cells from one run (marked n=1)" if singles else "")
               + (f". {note}" if note else ""))
    return [(path, caption)]


def colour_range(values: Sequence[float]) -> tuple[float, float]:
    """The colour scale of a heatmap: its values' range; when they are all equal (one cell, or a
    flat grid) a range of \u00b15 % around them (\u00b11 around 0), so the bar reads as the value and the
    cells take the scale's middle colour -- never a range of width 0 (matplotlib then draws a bar
    of offset-notation noise, "1e-10+9.14968e2")."""
    lo, hi = min(values), max(values)
    if hi > lo:
        return lo, hi
    half = abs(lo) * 0.05 or 1.0
    return lo - half, hi + half


def box_figure(cases: Sequence[CaseData], metric: str, out: Path, title: str,
               output: plots.Output | None = None) -> list[tuple[Path, str]]:
    """Box plot per case over repetitions, every repetition as a dot, mean with its 95 % CI
    (a case with one repetition: its mean alone, no interval)."""
    plt = plots.pyplot()
    data = [(cd, [v for v in cd.values.get(metric, [])]) for cd in cases]
    data = [(cd, vs) for cd, vs in data if vs]
    if not data:
        return []
    height = max(2.5, 0.38 * len(data) + 1.2)
    fig, ax = plt.subplots(figsize=(9.5, height), layout="constrained")
    single = draw_boxes(ax, data)
    ax.set_xlabel(palette.label(metric))
    ax.grid(axis="x", alpha=0.3)
    plots.legend(ax)
    ax.set_title(title, fontsize=10)
    path = plots.save(fig, out / "boxplot.png", output)
    note = f"; {single} case{'s' if single != 1 else ''} with one repetition: mean only, no CI" if single else ""
    return [(path, f"{palette.label(metric)} per case over repetitions (box: quartiles, from two repetitions up; dots: each "
                   f"repetition, in its congestion control's colour where the cases vary it; diamond: mean and 95% CI"
                   f"{note})")]


def draw_boxes(ax: Any, data: Sequence[tuple[CaseData, list[float]]]) -> int:
    """Draw the boxes, dots and means on `ax`; returns how many cases had one value (no CI drawn)."""
    labels = [case_label(cd.varied) for cd, _ in data]
    pos = list(range(1, len(data) + 1))
    # a box only from two repetitions up: one value drawn as a box would look exact
    boxed = [(p, vs) for p, (_cd, vs) in zip(pos, data, strict=True) if len(vs) >= 2]
    if boxed:
        try:  # matplotlib >= 3.10 names it `orientation`; `vert` goes away in 3.13
            ax.boxplot([vs for _, vs in boxed], positions=[p for p, _ in boxed], orientation="horizontal", widths=0.6,
                       showfliers=False)
        except TypeError:
            ax.boxplot([vs for _, vs in boxed], positions=[p for p, _ in boxed], vert=False, widths=0.6,
                       showfliers=False)
    ax.set_ylim(0.4, len(data) + 0.6)
    labelled: set[str] = set()
    single = 0
    for p, (cd, vs) in zip(pos, data, strict=True):
        st_ = palette.algorithm_style(cd.varied["cc"]) if cd.varied.get("cc") else None
        ax.plot(vs, [p] * len(vs), ls="none", marker=st_.marker if st_ else "o",
                color=st_.color if st_ else "#0072B2", alpha=0.6, markersize=4)
        st = mean_ci(vs)
        if st.mean is None:
            continue
        if st.ci95 is None:
            # One repetition has no confidence interval: the mean alone, never a zero-width bar.
            single += 1
            key = "mean (n = 1: no CI)"
            ax.plot([st.mean], [p], "D", color="#777777", markersize=5, label=key if key not in labelled else None)
        else:
            key = "mean, 95% CI"
            ax.errorbar([st.mean], [p], xerr=[[st.ci95], [st.ci95]], fmt="D", color="black",
                        markersize=5, capsize=4, label=key if key not in labelled else None)
        labelled.add(key)
    ax.set_yticks(pos, labels, fontsize=8)
    return single
