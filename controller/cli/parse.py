"""`ctl parse KIND FILE`: saved raw tool output to JSON."""
from __future__ import annotations

import argparse

from controller.cli.commands import add_command
from controller.cli.common import print_json
from controller.parsers import kinds, parse_input


def cmd_parse(args: argparse.Namespace) -> int:
    print_json(parse_input(args.kind, args.file, partial=args.partial))
    return 0


def register(sub) -> None:
    parse_p = add_command(sub, "parse", allow_abbrev=False,
                          description="Parse saved raw output of a tool ctl runs and print it as JSON (the --json "
                                      "envelope), as ctl reads it during a run.")
    parse_p.add_argument("kind", metavar="KIND", choices=kinds(),
                         help="which tool's output: " + ", ".join(kinds()))
    parse_p.add_argument("file", metavar="FILE", help="file with the tool's output ('-' for stdin)")
    parse_p.add_argument("--partial", action="store_true",
                         help="return what was recognised plus the lines that were not (each with the reason), "
                              "instead of refusing the input at its first unknown line")
    parse_p.set_defaults(func=cmd_parse)
