"""`ctl parse KIND FILE`: saved raw tool output to JSON."""
from __future__ import annotations

import argparse

from controller.cli.commands import add_command
from controller.cli.common import print_json
from controller.parsers import kinds, parse_input


def cmd_parse(args: argparse.Namespace) -> int:
    print_json(parse_input(args.kind, args.file))
    return 0



def register(sub) -> None:
    parse_p = add_command(sub, "parse")
    parse_p.add_argument("kind", choices=kinds())
    parse_p.add_argument("file", help="file with the tool's output ('-' for stdin)")
    parse_p.set_defaults(func=cmd_parse)
