"""Figures over many runs grouped into cases: a heatmap of a metric over two varied
parameters (a panel per value of a third), and box plots over repetitions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from controller import plots
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


def heatmap_figures(cases: Sequence[CaseData], metric: str, axes: tuple[str, str, str | None], out: Path,
                    title: str) -> list[tuple[Path, str]]:
    """One PNG: a panel per value of `panels`, cells = mean of `metric` over repetitions."""
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
    vmin, vmax = min(finite), max(finite)
    fig, axs = plt.subplots(1, len(pvals), figsize=(1.2 + 0.9 * len(xs) * len(pvals) + 1.6 * len(pvals),
                                                    1.8 + 0.55 * len(ys)), squeeze=False, layout="constrained")
    im = None
    for ax, pv in zip(axs[0], pvals, strict=True):
        grid = [[math.nan for _ in xs] for _ in ys]
        for cd in cases:
            if panels and cd.varied.get(panels) != pv:
                continue
            if cd.varied.get(x) in xs and cd.varied.get(y) in ys:
                m = mean_ci(cd.values.get(metric, [])).mean
                grid[ys.index(cd.varied[y])][xs.index(cd.varied[x])] = math.nan if m is None else m
        im = ax.imshow(grid, cmap="viridis", vmin=vmin, vmax=vmax if vmax > vmin else vmin + 1e-9, aspect="auto",
                       origin="lower")
        ax.set_xticks(range(len(xs)), xs)
        ax.set_yticks(range(len(ys)), ys)
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        if panels:
            ax.set_title(f"{panels} = {pv}", fontsize=10)
        for i in range(len(ys)):
            for j in range(len(xs)):
                v = grid[i][j]
                if not math.isnan(v):
                    ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=8,
                            color="white" if v < (vmin + vmax) / 2 else "black")
    if im is not None:
        fig.colorbar(im, ax=axs[0].tolist(), label=metric)
    fig.suptitle(title, fontsize=11)
    path = plots.save(fig, out / "heatmap.png")
    return [(path, f"heatmap of {metric}: {y} x {x}" + (f" per {panels}" if panels else ""))]


def box_figure(cases: Sequence[CaseData], metric: str, out: Path, title: str) -> list[tuple[Path, str]]:
    """Box plot per case over repetitions, every repetition as a dot, mean with its 95 % CI
    (a case with one repetition: its mean alone, no interval)."""
    plt = plots.pyplot()
    data = [(cd, [v for v in cd.values.get(metric, [])]) for cd in cases]
    data = [(cd, vs) for cd, vs in data if vs]
    if not data:
        return []
    height = max(2.5, 0.38 * len(data) + 1.2)
    fig, ax = plt.subplots(figsize=(8.5, height), layout="constrained")
    single = draw_boxes(ax, data)
    ax.set_xlabel(metric)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title(title, fontsize=11)
    path = plots.save(fig, out / "boxplot.png")
    note = f"; {single} case{'s' if single != 1 else ''} with one repetition: mean only, no CI" if single else ""
    return [(path, f"{metric} per case over repetitions (box: quartiles; red: mean and 95% CI{note})")]


def draw_boxes(ax: Any, data: Sequence[tuple[CaseData, list[float]]]) -> int:
    """Draw the boxes, dots and means on `ax`; returns how many cases had one value (no CI drawn)."""
    labels = [" ".join(f"{k}={v}" for k, v in cd.varied.items()) or "(fixed)" for cd, _ in data]
    pos = list(range(1, len(data) + 1))
    try:  # matplotlib >= 3.10 names it `orientation`; `vert` goes away in 3.13
        ax.boxplot([vs for _, vs in data], positions=pos, orientation="horizontal", widths=0.6, showfliers=False)
    except TypeError:
        ax.boxplot([vs for _, vs in data], positions=pos, vert=False, widths=0.6, showfliers=False)
    labelled: set[str] = set()
    single = 0
    for p, (_cd, vs) in zip(pos, data, strict=True):
        ax.plot(vs, [p] * len(vs), "o", color="tab:blue", alpha=0.5, markersize=4)
        st = mean_ci(vs)
        if st.mean is None:
            continue
        if st.ci95 is None:
            # One repetition has no confidence interval: the mean alone, never a zero-width bar.
            single += 1
            key = "mean (n = 1: no CI)"
            ax.plot([st.mean], [p], "D", color="tab:gray", markersize=5, label=key if key not in labelled else None)
        else:
            key = "mean, 95% CI"
            ax.errorbar([st.mean], [p], xerr=[[st.ci95], [st.ci95]], fmt="D", color="tab:red",
                        markersize=5, capsize=4, label=key if key not in labelled else None)
        labelled.add(key)
    ax.set_yticks(pos, labels, fontsize=8)
    return single
