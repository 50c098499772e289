"""`ctl parse KIND FILE`: saved raw tool output to JSON."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from controller.cli.commands import add_command
from controller.cli.common import print_json
from controller.errors import UsageError
from controller.parsers import kinds, parse


def cmd_parse(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        text = sys.stdin.read() if args.file == "-" else path.read_text(errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    print_json(parse(args.kind, text))
    return 0



def register(sub) -> None:
    parse_p = add_command(sub, "parse")
    parse_p.add_argument("kind", choices=kinds())
    parse_p.add_argument("file", help="file with the tool's output ('-' for stdin)")
    parse_p.set_defaults(func=cmd_parse)
