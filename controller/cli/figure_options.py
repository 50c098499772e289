"""`--format` and `--dpi` for every command that writes figures (`report rtt-loss`, `campaign
report`, `reproduce report`, `field report`; `runs plot` has the same two): one spelling, one
help text, one check of the resolution (controller.plots.Output)."""
from __future__ import annotations

import argparse
from typing import Any, Sequence

from controller import plots


def dpi(text: str) -> int:
    """`--dpi N`: a whole number of dots per inch in plots.DPI_RANGE (argparse turns the error
    into a usage error, exit 2)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of dots per inch") from None
    if not plots.DPI_RANGE[0] <= n <= plots.DPI_RANGE[1]:
        raise argparse.ArgumentTypeError(f"{n} dpi: from {plots.DPI_RANGE[0]} to {plots.DPI_RANGE[1]}")
    return n


def add(p: argparse.ArgumentParser, default: Sequence[str], report: bool = False, inherit: bool = False) -> None:
    """Add --format (repeatable) and --dpi to `p`; `default` is what is written without --format.
    `report`: the command writes an HTML report that shows one of the formats inline (the help
    says which). `inherit`: the options are also on the parent command (a subcommand keeps the
    parent's value unless given again)."""
    shown = " (the report shows PNG inline, or SVG when only SVG and PDF are asked for; PNG is written "\
            "too when neither is)" if report else ""
    p.add_argument("--format", action="append", choices=plots.FORMATS, metavar="FORMAT",
                   default=argparse.SUPPRESS if inherit else None,
                   help=f"figure file format: png (raster), pdf or svg (vector); repeat for several (default: "
                        f"{' and '.join(default)}){shown}")
    p.add_argument("--dpi", type=dpi, metavar="N", default=argparse.SUPPRESS if inherit else plots.DPI,
                   help=f"resolution of raster figures (PNG, and images inside vector files) in dots per inch, "
                        f"{plots.DPI_RANGE[0]}-{plots.DPI_RANGE[1]} (default: {plots.DPI})")


def output(args: argparse.Namespace, default: Sequence[str], report: bool = False,
           run_id: str | None = None) -> plots.Output:
    """The plots.Output that --format and --dpi ask for (the options may be absent: `default`)."""
    formats: Any = getattr(args, "format", None) or tuple(default)
    res = getattr(args, "dpi", None) or plots.DPI
    if report:
        return plots.report_output(formats, res)
    return plots.Output(tuple(dict.fromkeys(formats)), res, run_id)
