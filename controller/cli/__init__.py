"""`ctl`: the thin command line. Parse, call, print.

One module per top-level command (`lab`, `parse`, `run`, `scenarios`, `link`, `campaign`,
`field`, `metrics`, `report`), each with a `register(subparsers)` that declares the
command's arguments and the handlers they call. The commands are entries of one registry
(`controller.cli.common.COMMANDS`, a `controller.registry.Registry` like the shapers,
scenarios and parsers), and only the module of the command being run is imported.

This package may import everything below it (run, campaign, field, lab, rack, scenarios,
telemetry, drivers, base); nothing imports it. Every deliberate error is one line on
stderr and a non-zero exit (2 for bad input, before anything on the rack is touched).
"""
from __future__ import annotations

import argparse
import sys

from controller.argutil import join_negative_values
from controller.cli.commands import COMMANDS, Parser
from controller.errors import CtlError, UsageError
from controller.settings import export_state_dir

# The order `ctl --help` lists the commands in.
ORDER = ("lab", "parse", "run", "scenarios", "link", "campaign", "rack", "field", "metrics", "report")
_GLOBAL_WITH_VALUE = ("--inventory", "-i")


def command_word(argv: list[str]) -> str | None:
    """The top-level command named in argv (skipping global options), or None."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in _GLOBAL_WITH_VALUE:
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        return a
    return None


def build_parser(populate: str | None = "*") -> Parser:
    """The whole parser (`populate="*"`), or one whose only filled-in command is `populate`
    (the others are listed with their help, so `ctl --help` and errors read the same)."""
    p = Parser(prog="ctl", description="Controller of the hardware-in-the-loop network testbed.", allow_abbrev=False)
    p.add_argument("--inventory", "-i", help="rack description (default: $CTL_INVENTORY or inventory/virtual.yaml)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name in ORDER + tuple(n for n in COMMANDS.names() if n not in ORDER):
        if populate == "*" or name == populate:
            COMMANDS.get(name)(sub)
        else:
            sub.add_parser(name, help=COMMANDS.help(name))
    # `--inventory` is accepted after the command too (`ctl run X ... --inventory FILE`).
    for sp in sub.choices.values():
        sp.add_argument("--inventory", "-i", default=argparse.SUPPRESS, help="rack description (YAML)")
    return p


def main(argv: list[str] | None = None) -> int:
    export_state_dir()
    try:
        args_in = join_negative_values(list(sys.argv[1:] if argv is None else argv))
        word = command_word(args_in)
        parser = build_parser(word if word in COMMANDS else None)
        args, extra = parser.parse_known_args(args_in)
        dest = getattr(args, "extra_args", None)
        if dest:
            setattr(args, dest, extra)  # e.g. a scenario's own parameters
        elif extra:
            raise UsageError(f"unrecognized arguments: {' '.join(extra)}")
        return args.func(args)
    except CtlError as exc:
        print(f"ctl: error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("ctl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
