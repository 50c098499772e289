"""`ctl report rtt-loss RUN_OR_DIR...`: the BBRv3 paper's heatmaps from any set of rtt-loss-sweep runs."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from controller.cli import figure_options
from controller.cli.commands import JSON_HELP, Parser, add_command
from controller.cli.common import print_json
from controller.errors import UsageError
from controller.scenarios.rtt_loss_sweep import find_summaries, heatmap_grid, render_grid, write_heatmap


def cmd_report(args: argparse.Namespace) -> int:
    found = find_summaries([Path(p) for p in args.paths])
    if not found:
        raise UsageError(f"no completed rtt-loss-sweep runs under {', '.join(args.paths)}")
    summaries = [s for _, s in found]
    grid = heatmap_grid(summaries, args.metric)
    out = Path(args.out) if args.out else Path(args.paths[0]) / "rtt-loss-report"
    output = figure_options.output(args, FORMATS)
    fig = write_heatmap(summaries, out, args.metric, output=output,
                        title=f"RTT x loss sweep, BBRv3 paper Fig. 1-2 ({len(summaries)} runs)")
    (out / "heatmap.json").write_text(json.dumps({**grid, "runs": [str(d) for d, _ in found]}, indent=1))
    files = [fig.with_suffix("." + f) for f in output.formats] if fig else []
    if args.json:
        print_json({**grid, "runs": [str(d) for d, _ in found], "figure": str(fig) if fig else None,
                    "figures": [str(f) for f in files], "dpi": output.dpi})
    else:
        print(render_grid(grid))
        print(f"\n{len(summaries)} runs; figure: " + (", ".join(str(f) for f in files) if files else "none"))
    return 0


FORMATS = ("png", "pdf")


def register(sub) -> None:
    p = add_command(sub, "report", allow_abbrev=False,
                    description="Figures and tables over many run records, wherever they are.")
    rs = p.add_subparsers(dest="kind", required=True, parser_class=Parser, metavar="KIND")
    r = rs.add_parser("rtt-loss", help="heatmap of RTT x loss per congestion control from rtt-loss-sweep runs",
                      description="The BBRv3 paper's RTT x loss heatmaps from any rtt-loss-sweep runs.",
                      allow_abbrev=False)
    r.add_argument("paths", nargs="+", metavar="RUN_OR_DIR",
                   help="run records, or directories holding them (searched recursively)")
    r.add_argument("--metric", choices=["throughput_mbps", "share_pct"], default="throughput_mbps",
                   help="what a cell shows: the flow's throughput in Mbit/s, or its share of the bottleneck in "
                        "%% (default throughput_mbps)")
    r.add_argument("--out", "-o", metavar="DIR",
                   help="where the heatmap's figure files (heatmap.png, heatmap.pdf, ...) and heatmap.json go "
                        "(default: FIRST_PATH/rtt-loss-report)")
    figure_options.add(r, FORMATS)
    r.add_argument("--json", action="store_true", help=JSON_HELP + "; the grid, its runs and the figure's file")
    r.set_defaults(func=cmd_report)
