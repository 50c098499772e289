"""`ctl runs plot RUN [--format pdf|svg|png] [--dpi N] [--out DIR]`: every figure of a recorded run,
drawn again from its record (controller.run.replay.load_run) by this ctl, in the formats and at the
resolution asked for. The record is only read; the figures go to --out (created, no link followed:
controller.plots.save).

A completed (or invalid) run is summarized again and drawn as `ctl run` draws it. A run cut short
is drawn from its own partial summary over the traffic units that ended, where its scenario
summarizes such units (mptcp-bittorrent's downloads and tests); other partial runs have no figure.
A field run (`ctl field start`) is drawn from the points fetched into its record, as `ctl field
report` draws it (controller.field.figures).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from controller import plots, scenarios
from controller.cli import figure_options
from controller.cli.commands import setting_default
from controller.cli.common import print_json
from controller.errors import UsageError
from controller.field import figures as field_figures
from controller.field.stats import load_points, report_data
from controller.results.catalog import FIELD
from controller.results.records import load_manifest
from controller.run.replay import SUMMARIZED_STATUSES, load_run, summarize_run
from controller.settings import runs_dir


def draw_field(record: Path, m: dict, out: Path, output: plots.Output) -> list[str]:
    """A field run's figures (Fig. 4 timeline, download CDF: controller.field.figures), from the
    points fetched into its record, as `ctl field report` draws them; the record is only read."""
    points = load_points(record / "metrics.jsonl")
    if not points:
        raise UsageError(f"runs plot: field run {output.run_id} has no points fetched yet: `ctl field report "
                         f"{output.run_id}` fetches the hosts' spools")
    summary = {"scenario": FIELD, "run_id": output.run_id, **report_data(points)}
    names = field_figures.figures(summary, points, out, output)
    if not names:
        raise UsageError(f"runs plot: field run {output.run_id}: no host logged a second: no figure to draw")
    return names


def draw(record: Path, out: Path, output: plots.Output) -> tuple[dict, list[Path]]:
    """(manifest, figure paths in the first format) of the run recorded in `record`."""
    m = load_manifest(record)
    if m.get("scenario") == FIELD:
        output = dataclasses.replace(output, run_id=str(m.get("run_id") or record.name))
        return m, [out / n for n in draw_field(record, m, out, output)]
    scenario = scenarios.get(m["scenario"])
    data = load_run(record)
    output = dataclasses.replace(output, run_id=str(m.get("run_id") or record.name))
    if m.get("status") in SUMMARIZED_STATUSES:
        summary = summarize_run(scenario, data)
    else:
        path = record / "summary.json"
        summary = json.loads(path.read_text()) if path.is_file() else {}
        if (summary.get("partial_run") or {}).get("summarized") != "scenario":
            raise UsageError(f"runs plot: run {output.run_id} ended {m.get('status')!r} and its scenario has no "
                             "summary of part of its traffic: there is no figure to draw")
        data = dataclasses.replace(data, flows=[r for r in data.flows if getattr(r, "ended", False)])
    names = scenario.figures(data, summary, out, output)
    return m, [out / n for n in names]


def cmd_plot(args: argparse.Namespace, record_dir: Any) -> int:
    record = record_dir(args.run, runs_dir(args.runs_dir))
    formats = tuple(dict.fromkeys(args.format or ["png"]))
    output = plots.Output(formats, args.dpi)
    out = Path(args.out) if args.out else Path(f"figures-{record.name}")
    m, paths = draw(record, out, output)
    files = [p.with_suffix("." + f) for p in paths for f in formats]
    if args.json:
        print_json({"run_id": m.get("run_id") or record.name, "record": str(record), "out": str(out),
                    "formats": list(formats), "dpi": output.dpi, "files": [str(f) for f in files]})
        return 0
    print(f"run {m.get('run_id') or record.name}: {len(files)} figure file{'s' if len(files) != 1 else ''} in {out} "
          f"({', '.join(formats)}; {output.dpi} dpi for raster images)")
    for f in files:
        print(f"  {f}")
    return 0


def add_plot(actions: Any, record_dir: Any) -> None:
    p = actions.add_parser("plot", help="draw every figure of a run again from its record (PNG, PDF or SVG)",
                           description="Draw every figure of a recorded run again from its record, with this ctl's "
                                       "palette, labels and layout, in the formats asked for; a field run's Fig. 4 "
                                       "timeline and download CDF from the points fetched into it. The record is "
                                       "only read; the figures are written to --out.")
    p.add_argument("run", metavar="RUN", help="a run id under the runs directory, or the path of a run record")
    p.add_argument("--format", action="append", choices=plots.FORMATS, metavar="FORMAT",
                   help="png (raster), pdf or svg (vector); repeat for several (default: png)")
    p.add_argument("--dpi", type=figure_options.dpi, default=plots.DPI, metavar="N",
                   help=f"resolution of raster output in dots per inch, {plots.DPI_RANGE[0]}-{plots.DPI_RANGE[1]} "
                        f"(default: {plots.DPI})")
    p.add_argument("--out", metavar="DIR", help="directory for the figures (created; default: ./figures-<run id>)")
    p.add_argument("--runs-dir", metavar="DIR", help=f"where run records are ({setting_default('runs_dir')})")
    p.add_argument("--json", action="store_true", help="print the files written as JSON on stdout")
    p.set_defaults(func=lambda args: cmd_plot(args, record_dir))
