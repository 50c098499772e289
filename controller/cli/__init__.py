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
import logging
import os
import sys

from controller.argutil import join_negative_values
from controller.cli.commands import COMMANDS, Parser
from controller.errors import CtlError, UsageError
from controller.settings import export_state_dir

# The order `ctl --help` lists the commands in.
ORDER = ("run", "runs", "scenarios", "cc", "link", "campaign", "reproduce", "rack", "inventory", "lab", "field",
         "report", "metrics", "parse")
# Every exit status ctl uses (also in the README); `ctl --help` prints this table.
EXIT_CODES = (
    (0, "success (a run completed and its result is valid)"),
    (1, "failed: an error on the rack or in ctl (the run record and stderr say which)"),
    (2, "bad input (usage, parameters, inventory, campaign file, unparsable data): nothing was touched"),
    (3, "the rack is busy (another controller holds its lock or lease) or reserved by somebody else"),
    (4, "a run completed but its result is invalid (e.g. MPTCP not negotiated; reasons in the summary)"),
    (130, "interrupted by SIGINT (Ctrl-C): the rack was restored"),
    (143, "stopped by SIGTERM: the rack was restored"),
)
EPILOG = "exit status:\n" + "\n".join(f"  {code:<4} {what}" for code, what in EXIT_CODES)
_GLOBAL_WITH_VALUE = ("--inventory", "-i")
# asyncssh and pysnmp log through `logging`: quiet unless -v asks (-vv: their debug too).
_LIBRARY_LOGGERS = ("asyncssh", "pysnmp", "psycopg", "influxdb_client", "urllib3")


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
    p = Parser(prog="ctl", description="Controller of the hardware-in-the-loop network testbed.", allow_abbrev=False,
               epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="store_true", help="ctl's version, git commit and Python, then exit")
    p.add_argument("--verbose", "-v", action="count", default=0,
                   help="log more on stderr (-v: ctl's and its libraries' info; -vv: debug, SSH included)")
    p.add_argument("--log-quiet", "-q", dest="log_quiet", action="store_true",
                   help="log errors only (progress lines are the commands' own `--quiet`)")
    p.add_argument("--inventory", "-i", help="rack description (default: $CTL_INVENTORY or inventory/virtual.yaml)")
    sub = p.add_subparsers(dest="command", required=False, parser_class=Parser, metavar="COMMAND")
    for name in ORDER + tuple(n for n in COMMANDS.names() if n not in ORDER):
        if populate == "*" or name == populate:
            COMMANDS.get(name)(sub)
        else:
            sub.add_parser(name, help=COMMANDS.help(name))
    # `--inventory` is accepted after the command too (`ctl run X ... --inventory FILE`).
    for sp in sub.choices.values():
        sp.add_argument("--inventory", "-i", default=argparse.SUPPRESS, help="rack description (YAML)")
    return p


def configure_logging(verbose: int, quiet: bool = False) -> None:
    """Warnings only by default; -q errors only, -v info, -vv debug (asyncssh's and pysnmp's
    loggers included)."""
    level = logging.ERROR if quiet else logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 \
        else logging.DEBUG
    logging.basicConfig(level=level, format="ctl: %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for name in _LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR if quiet else logging.WARNING if verbose < 2 else logging.DEBUG)
    if verbose >= 2:
        import asyncssh  # its own debug level: packet-level detail only when asked
        asyncssh.set_debug_level(1)


def complete() -> None:
    """Shell completion (argcomplete): when the shell asks (`_ARGCOMPLETE` set), the whole parser
    is built, every command and option completes, and `ctl run SCENARIO --<TAB>` offers that
    scenario's own parameters (controller.cli.run adds them in completion mode). Exits when done.
    Enable with `eval "$(register-python-argcomplete ctl)"` (README: Shell completion)."""
    import argcomplete
    argcomplete.autocomplete(build_parser("*"), always_complete_options="long")


def main(argv: list[str] | None = None) -> int:
    if argv is None and "_ARGCOMPLETE" in os.environ:
        complete()
    try:
        export_state_dir()
        args_in = join_negative_values(list(sys.argv[1:] if argv is None else argv))
        if args_in[:1] == ["--version"] or (args_in and command_word(args_in) is None and "--version" in args_in):
            from controller.version import version_line
            print(version_line())
            return 0
        word = command_word(args_in)
        parser = build_parser(word if word in COMMANDS else None)
        args, extra = parser.parse_known_args(args_in)
        configure_logging(args.verbose, args.log_quiet)
        if args.command is None:
            raise UsageError("which command? (`ctl --help` lists them)")
        dest = getattr(args, "extra_args", None)
        if dest:
            setattr(args, dest, extra)  # e.g. a scenario's own parameters
        elif extra:
            raise UsageError(f"unrecognized arguments: {' '.join(extra)}")
        from controller.cli.common import command_words, set_command   # loaded by the command already
        set_command(command_words(parser, args))    # named in the --json envelope
        return args.func(args)
    except CtlError as exc:
        print(f"ctl: error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("ctl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
