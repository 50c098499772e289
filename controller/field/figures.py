"""The field report's figures: the paper's Fig. 4 timeline and the download-rate CDF, and the
report written into the record.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from controller import palette, plots
from controller.field.stats import load_points, quality_metric, report_data, series_by_host
from controller.results.records import RunRecord
from controller.telemetry.points import Point


def figures(summary: Mapping[str, Any], points: Sequence[Point], out_dir: Path,
            output: plots.Output | None = None) -> list[str]:
    """Fig. 4: per host one timeline -- CINR/SINR, download rate, active peers -- with handover
    lines and shaded stretches (no ping reply; not logged); and the download rate CDF per host.

    Written as `output` says (formats, dpi; default PNG alone) into `out_dir`; returns the file
    names in the first format (`fig4_timeline.png`, `download_cdf.png`). Colours are the
    palette's (controller.palette.FIELD for the measured series, `host_styles` for hosts),
    legends sit outside the axes, and each title names the run (`output.run_id`, else the
    summary's `run_id`) and its first sample in ISO 8601 (UTC). A stable API: `ctl field report`
    and `ctl runs plot` both draw through it."""
    plt = plots.pyplot()
    out = output or plots.DEFAULT

    by_host = series_by_host(points)
    hosts = sorted(by_host)
    if not hosts:
        return []
    t0 = min(t for s in by_host.values() for t, _ in s.ticks.values()) / 1e9 if any(
        s.ticks for s in by_host.values()) else 0.0
    caption = plots.run_caption(str(out.run_id or summary.get("run_id") or "?"), t0 or None).replace(
        "traffic from", "first sample")
    st = palette.FIELD
    fig, axes = plt.subplots(3 * len(hosts), 1, figsize=(11, 3.0 * 3 * len(hosts) / 1.6 + 0.8), sharex=True,
                             squeeze=False, layout="constrained")
    for i, h in enumerate(hosts):
        s = by_host[h]
        metric = quality_metric(s) or "sinr_db"
        seqs = sorted(s.ticks)
        ts = [(s.ticks[k][0] / 1e9) - t0 for k in seqs]
        q = [s.radio[k][1].get(metric) if k in s.radio else float("nan") for k in seqs]
        nan = float("nan")       # a missing value is a break in the line, never a zero
        dl = [s.ticks[k][1]["dl_bps"] / 1e3 if s.ticks[k][1].get("dl_bps") is not None else nan for k in seqs]
        peers = [s.ticks[k][1]["peers_active"] if s.ticks[k][1].get("peers_active") is not None else nan
                 for k in seqs]
        ax_q, ax_d, ax_p = axes[3 * i][0], axes[3 * i + 1][0], axes[3 * i + 2][0]
        ax_q.plot(ts, q, lw=1, color=st["quality"].color, label=metric.replace("_db", "").upper())
        ax_q.set_ylabel(f"{metric.replace('_db', '').upper()} (dB)")
        ax_q.set_title(f"{h}: radio quality, download rate, active peers", fontsize=9)
        ax_d.plot(ts, dl, lw=1, color=st["download"].color, label=f"download ({s.workload or 'workload'})")
        ax_d.set_ylabel("download (kbit/s)")
        ax_p.step(ts, peers, where="post", lw=1, color=st["peers"].color, label="active peers")
        ax_p.set_ylabel("active peers")
        if all(p != p for p in peers):
            ax_p.text(0.5, 0.5, f"no peer counts (workload {s.workload})", transform=ax_p.transAxes,
                      ha="center", va="center", color="grey")
        marks: set[str] = set()

        def mark(kind: str) -> str | None:
            """The legend label of a mark, on its first use in this host's panels only."""
            if kind in marks:
                return None
            marks.add(kind)
            return st[kind].name
        for e in summary["handovers"].get(h, []):
            label = mark("handover")
            for ax in (ax_q, ax_d, ax_p):
                ax.axvline(e["time"] - t0, color=st["handover"].color, lw=1, alpha=0.8,
                           label=label if ax is ax_q else None)
        for a, b in _runs([ts[i] for i, k in enumerate(seqs) if s.ticks[k][1].get("ping_replies") == 0]):
            label = mark("no_reply")
            for ax in (ax_q, ax_d, ax_p):      # the reference host did not answer: uplink gone
                ax.axvspan(a, b + 1, color=st["no_reply"].color, alpha=0.12, lw=0,
                           label=label if ax is ax_q else None)
        for ev in s.events:      # seconds no logger measured (restart, reboot): shaded, not interpolated
            if ev.tags.get("event") in ("gap", "late") and ev.fields.get("from_seq") is not None:
                first = s.ticks.get(int(ev.fields["from_seq"]) - 1)
                n = float(ev.fields.get("missing", 0))
                x0 = (first[0] / 1e9 - t0 + 1) if first else ev.time_ns / 1e9 - t0 - n
                label = mark("gap")
                for ax in (ax_q, ax_d, ax_p):
                    ax.axvspan(x0, x0 + n, color=st["gap"].color, alpha=0.35, lw=0,
                               label=label if ax is ax_q else None)
        for ax in (ax_q, ax_d, ax_p):
            ax.grid(alpha=0.3)
            plots.legend(ax)
    axes[-1][0].set_xlabel("time since the run's first sample (s)")
    plots.titled(fig, "Field run (Fig. 4): per modem host, radio quality, download rate and active peers", caption)
    p1 = plots.save(fig, out_dir / "fig4_timeline.png", out)

    fig, ax = plt.subplots(figsize=(8, 4.4), layout="constrained")
    styles = palette.host_styles(hosts)
    for h in hosts:
        dl = sorted(f["dl_bps"] / 1e3 for _t, f in by_host[h].ticks.values() if f.get("dl_bps") is not None)
        if dl:
            ax.step(dl, [(i + 1) / len(dl) for i in range(len(dl))], where="post", label=h, color=styles[h].color)
    ax.set_xlabel("download rate (kbit/s)")
    ax.set_ylabel("fraction of seconds")
    ax.grid(alpha=0.3)
    plots.legend(ax)
    plots.titled(fig, "Field run: download rate per modem host (CDF over seconds)", caption)
    p2 = plots.save(fig, out_dir / "download_cdf.png", out)
    return [p1.name, p2.name]


def _runs(xs: Sequence[float], step: float = 1.5) -> list[tuple[float, float]]:
    """Consecutive x values (spaced less than `step` apart) as (first, last) spans."""
    out: list[tuple[float, float]] = []
    for x in xs:
        if out and x - out[-1][1] < step:
            out[-1] = (out[-1][0], x)
        else:
            out.append((x, x))
    return out


def write_report(rec: RunRecord, output: plots.Output | None = None) -> dict[str, Any]:
    """Summarize a field run's fetched points into its record (summary.json) and draw its figures
    into the record as `output` says (`ctl field report --format/--dpi`; default PNG)."""
    points = load_points(rec.dir / "metrics.jsonl")
    summary = {"scenario": "field", "run_id": rec.id, "parameters": rec.manifest.get("parameters"),
               "status": rec.manifest.get("status"), **report_data(points)}
    rec.write_summary(summary)              # with its provenance and units, as every run's
    try:
        rec.manifest["figures"] = figures(summary, points, rec.dir,
                                          dataclasses.replace(output or plots.DEFAULT, run_id=rec.id))
    except Exception as exc:  # a plot must never lose the numbers
        rec.manifest.setdefault("errors", []).append({"t": time.time(), "error": f"figure failed: {exc!r}"})
    rec.manifest.setdefault("phases", []).append({"phase": "report", "t": time.time()})
    rec.save()
    return summary
