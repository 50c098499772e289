"""Figures for run records (matplotlib, Agg backend: no display needed)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence



DPI = 110


def pyplot():
    """matplotlib on demand: importing it costs about a second, which a run only pays when it
    draws (after the traffic), never before it touches the rack."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(fig, path: Path) -> Path:
    """Write a figure as PNG (the resolution every figure of ctl uses) and free it."""
    fig.savefig(path, dpi=DPI)
    pyplot().close(fig)
    return path


def smooth(times: Sequence[float], values: Sequence[float], window_s: float) -> tuple[list[float], list[float]]:
    """Mean over consecutive windows (10 Hz samples are noisy at packet granularity)."""
    if not times:
        return [], []
    out_t, out_v = [], []
    start = times[0]
    acc: list[float] = []
    for t, v in zip(times, values):
        if t - start >= window_s and acc:
            out_t.append(start + window_s / 2)
            out_v.append(sum(acc) / len(acc))
            start, acc = t, []
        acc.append(v)
    if acc:
        out_t.append(start + window_s / 2)
        out_v.append(sum(acc) / len(acc))
    return out_t, out_v


def throughput_figure(path: Path, title: str, t0: float, flows: Mapping[str, list[tuple[float, float, float]]],
                      subflows: Mapping[str, list[tuple[float, float]]], links: Mapping[str, list[tuple[float, float]]],
                      smooth_s: float = 0.5) -> Path:
    """Three panels: per flow (iperf3 intervals), per subflow and per link (10 Hz samples, smoothed)."""
    plt = pyplot()
    fig, axes = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
    ax = axes[0]
    for name, ivs in sorted(flows.items()):
        xs = [e for (_s, e, _b) in ivs]
        ys = [b / 1e6 for (_s, _e, b) in ivs]
        ax.step(xs, ys, where="pre", label=name)
    ax.set_ylabel("flow goodput (Mbit/s)")
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    ax = axes[1]
    for name, pts in sorted(subflows.items()):
        ts, vs = smooth([t - t0 for t, _ in pts], [v / 1e6 for _, v in pts], smooth_s)
        ax.plot(ts, vs, label=name)
    ax.set_ylabel(f"subflow (Mbit/s, {smooth_s:g} s mean)")
    if subflows:
        ax.legend(loc="upper right", fontsize=7)
    ax.grid(alpha=0.3)
    ax = axes[2]
    for name, pts in sorted(links.items()):
        ts, vs = smooth([t - t0 for t, _ in pts], [v / 1e6 for _, v in pts], smooth_s)
        ax.plot(ts, vs, label=name)
    ax.set_ylabel(f"link (Mbit/s, {smooth_s:g} s mean)")
    ax.set_xlabel("time since traffic start (s)")
    if links:
        ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return save(fig, path)
