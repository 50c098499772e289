"""Figures for run records, campaigns and reproductions (matplotlib, Agg backend: no display).

Every figure of ctl goes through here: `Output` says in which formats (PNG, PDF, SVG) and at what
resolution it is written, `save` writes it (never through a symlink, only into a directory ctl
opened) and frees it, `legend` puts a legend outside the axes (it can never cover data), and
`throughput_figure` draws a run's rates over time with the series and colours of
`controller.palette`. Vector files are deterministic: no creation date, a fixed SVG id salt.
"""
from __future__ import annotations

import io
import math
import os
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from controller import timefmt
from controller.errors import ParameterError
from controller.palette import CAPACITY, Style
from controller.safefs import open_dir, replace_file_at

FORMATS = ("png", "pdf", "svg")
DPI = 150                   # PNG resolution unless asked otherwise (`ctl runs plot --dpi`)
DPI_RANGE = (50, 1200)
_METADATA = {"pdf": {"CreationDate": None, "Creator": "ctl"}, "svg": {"Date": None, "Creator": "ctl"},
             "png": {"Software": "ctl"}}


@dataclass(frozen=True)
class Output:
    """How figures are written: `formats` (the first is the one a report embeds and a record's
    manifest lists), `dpi` (raster resolution; vector formats ignore it except for embedded
    images), the run id a run figure names in its caption, and `check`, called with each figure
    before it is written (tests use it to inspect legends and colours)."""

    formats: tuple[str, ...] = ("png",)
    dpi: int = DPI
    run_id: str | None = None
    check: Callable[[Any, Path], None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not self.formats:
            raise ParameterError("figure formats: none given (png, pdf, svg)")
        bad = [f for f in self.formats if f not in FORMATS]
        if bad:
            raise ParameterError(f"figure format {bad[0]!r}: not one of {', '.join(FORMATS)}")
        if isinstance(self.dpi, bool) or not isinstance(self.dpi, int) or not DPI_RANGE[0] <= self.dpi <= DPI_RANGE[1]:
            raise ParameterError(f"figure resolution {self.dpi!r} dpi: a whole number from {DPI_RANGE[0]} to "
                                 f"{DPI_RANGE[1]} dots per inch")


DEFAULT = Output()
# Reports embed PNG and put a PDF of each figure beside it, for a paper.
REPORT = Output(("png", "pdf"))
EMBEDDABLE = ("png", "svg")     # what an HTML report shows inline


def report_output(formats: Sequence[str] | None = None, dpi: int = DPI) -> Output:
    """How a report (campaign, reproduction, rtt-loss heatmaps) writes its figures: the formats
    asked for (default PNG and PDF), the one it shows inline first -- PNG, or SVG when SVG and
    no PNG was asked for; PNG is added when neither was (a report always has a figure to show)."""
    asked = tuple(dict.fromkeys(formats or REPORT.formats))
    shown = next((f for f in EMBEDDABLE if f in asked), "png")
    return Output((shown,) + tuple(f for f in asked if f != shown), dpi)


def pyplot():
    """matplotlib on demand: importing it costs about a second, which a run only pays when it
    draws (after the traffic), never before it touches the rack."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    matplotlib.rcParams["svg.hashsalt"] = "ctl"          # stable element ids: same figure, same file
    matplotlib.rcParams["svg.fonttype"] = "none"         # text stays text (searchable, editable)
    matplotlib.rcParams["pdf.fonttype"] = 42             # TrueType in PDFs (journals refuse Type 3)
    return plt


def save(fig: Any, path: Path, output: Output | None = None) -> Path:
    """Write `fig` as `path` with each format's suffix, into `path`'s directory (created when
    missing, a symlink refused, each file replaced whole: controller.safefs), and free it.
    Returns the path in the first format."""
    out = output or DEFAULT
    path = Path(path)
    if out.check is not None:
        out.check(fig, path)
    written: list[Path] = []
    fd = open_dir(path.parent, "figure directory")
    try:
        for fmt in out.formats:
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, dpi=out.dpi, metadata=_METADATA[fmt])
            target = path.with_suffix("." + fmt)
            replace_file_at(fd, target.name, buf.getvalue(), "figure", str(target))
            written.append(target)
    finally:
        os.close(fd)
        pyplot().close(fig)
    return written[0]


def legend(ax: Any, **kw: Any) -> Any:
    """A legend outside the axes, right of them (constrained layout makes room): it can never
    cover a bar, a line or a mark. Nothing when there is nothing labelled."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    opts = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0, "fontsize": 8,
            "frameon": False}
    opts.update(kw)
    return ax.legend(handles, labels, **opts)


def legend_overlaps(fig: Any) -> list[str]:
    """Legends whose box overlaps the data area of any axes of `fig` (what `legend` avoids)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    legends = [(ax, ax.get_legend()) for ax in fig.axes if ax.get_legend() is not None] + \
              [(None, lg) for lg in fig.legends]
    for owner, lg in legends:
        box = lg.get_window_extent(renderer)
        for ax in fig.axes:
            if ax.get_label() == "<colorbar>":
                continue
            a = ax.get_window_extent(renderer)
            if box.x0 < a.x1 - 0.5 and box.x1 > a.x0 + 0.5 and box.y0 < a.y1 - 0.5 and box.y1 > a.y0 + 0.5:
                out.append(f"legend of {owner.get_title() if owner is not None else 'the figure'!r} covers "
                           f"axes {ax.get_title()!r}")
    return out


def iso_utc(t: float | None) -> str:
    """Unix seconds as ISO 8601 in UTC, to the second (`2026-11-22T04:18:20Z`), the form every
    figure and report of ctl shows; '-' without a time (controller.timefmt)."""
    return timefmt.iso_utc(t)


def run_caption(run_id: str, t0: float | None) -> str:
    return f"run {run_id}, traffic from {iso_utc(t0)}"


def titled(fig: Any, title: str, caption: str | None) -> None:
    """The figure's title, and under it the run (id and date) it shows."""
    fig.suptitle(title + (f"\n{caption}" if caption else ""), fontsize=10)


def capacity_line(ax: Any, bps: float, what: str, color: str | None = None, scale: float = 1e6) -> None:
    """A horizontal line at a capacity, labelled with its value (Mbit/s)."""
    ax.axhline(bps / scale, color=color or CAPACITY.color, ls=":", lw=1.2,
               label=f"{what} capacity ({bps / 1e6:g} Mbit/s)")


# ---- a run's rates over time ----------------------------------------------------------------------

@dataclass(frozen=True)
class Series:
    """One line of a time-series panel: points (epoch s, bit/s), its legend name and style."""

    name: str
    points: Sequence[tuple[float, float]]
    style: Style
    linestyle: str = "-"


def binned(points: Sequence[tuple[float, float]], t0: float, width_s: float) -> list[tuple[float, float]]:
    """Time-weighted mean of a rate over consecutive windows [t0 + k w, t0 + (k+1) w), at each
    window's middle (relative to t0). A sample (t_i, v_i) is the rate over (t_{i-1}, t_i] (what a
    counter's difference gives), so a window's value is the bytes of its samples over their time,
    not the mean of rates of unequal spans; the first sample weighs as the median span. Windows
    without a sample are left out (pure)."""
    pts = sorted(points)
    if not pts:
        return []
    spans = [b[0] - a[0] for a, b in zip(pts, pts[1:]) if b[0] > a[0]]
    first = sorted(spans)[len(spans) // 2] if spans else 1.0
    num: dict[int, float] = {}
    den: dict[int, float] = {}
    prev = None
    for t, v in pts:
        dt_ = first if prev is None else t - prev
        prev = t
        if dt_ <= 0:
            continue
        k = math.floor((t - dt_ / 2 - t0) / width_s)
        num[k] = num.get(k, 0.0) + v * dt_
        den[k] = den.get(k, 0.0) + dt_
    return [((k + 0.5) * width_s, num[k] / den[k]) for k in sorted(num)]


def smooth(times: Sequence[float], values: Sequence[float], window_s: float) -> tuple[list[float], list[float]]:
    """Mean over consecutive windows from the first time (10 Hz samples are noisy at packet
    granularity)."""
    if not times:
        return [], []
    pts = binned(list(zip(times, values)), times[0], window_s)
    return [times[0] + t for t, _ in pts], [v for _, v in pts]


def aligned_window(rtt_s: float | None, step_s: float = 0.5, rtts: int = 2) -> float:
    """Averaging window for rates: at least `rtts` round trips (a window-limited sender sends
    once per RTT, so a shorter window shows each burst as a spike and each gap as zero: the
    square wave of a 0.5 s window at long RTTs), in whole `step_s`, never below one step."""
    if not rtt_s or rtt_s <= 0:
        return step_s
    return max(step_s, step_s * math.ceil(rtts * rtt_s / step_s - 1e-9))


def throughput_figure(path: Path, title: str, t0: float, flows: Sequence[Series], subflows: Sequence[Series],
                      links: Sequence[Series], *, window_s: float, window_note: str,
                      flow_source: str, flow_capacity: Mapping[str, float] | None = None,
                      link_capacity: Mapping[str, float] | None = None, caption: str | None = None,
                      output: Output | None = None) -> Path:
    """Up to three panels sharing the time axis: per flow, per subflow (when there are any) and per
    link, each a mean over `window_s` (said in the axis label with `window_note`); capacities as
    dotted lines; legends outside the axes."""
    plt = pyplot()
    panels = [("flows", flows), ("subflows", subflows), ("links", links)]
    panels = [(k, s) for k, s in panels if s or k != "subflows"]
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 2.9 * len(panels) + 0.8), sharex=True, squeeze=False,
                             layout="constrained")
    ylabel = {"flows": "per flow", "subflows": "per subflow", "links": "per link"}
    caps = {"flows": flow_capacity or {}, "subflows": {}, "links": link_capacity or {}}
    for ax, (kind, series) in zip(axes[:, 0], panels, strict=True):
        for s in series:
            pts = binned(s.points, t0, window_s)
            ax.plot([t for t, _ in pts], [v / 1e6 for _, v in pts], color=s.style.color, ls=s.linestyle, lw=1.4,
                    marker=(s.style.marker or None) if len(pts) <= 40 else None, markersize=3, label=s.name)
        for what, bps in caps[kind].items():
            capacity_line(ax, bps, what)
        ax.set_ylabel(f"{ylabel[kind]} (Mbit/s)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        legend(ax)
    axes[-1, 0].set_xlabel("time since the traffic started (s)")
    what = {"flows": f"flows: {flow_source}", "subflows": "subflows: bytes acked at the sender (ss)",
            "links": "links: forwarded by the bridge"}
    parts = [p for p in (caption, f"each point: {window_note}; " + "; ".join(what[k] for k, _ in panels)) if p]
    titled(fig, title, "\n".join(textwrap.fill(p, 130) for p in parts))
    return save(fig, path, output)
