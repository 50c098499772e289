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
import contextlib
import importlib
import logging
import os
import select
import sys
import textwrap
from typing import Iterator

from controller.argutil import join_negative_values
from controller.cli import commands, gcpause
from controller.cli.output import WriterHandler
from controller.cli.commands import (COMMANDS, INVENTORY_HELP, QUIET_HELP, DeprecatedName, Parser, setting_default,
                                     suggest)
from controller.errors import CtlError, UsageError
from controller.settings import export_state_dir, set_flag

# The order `ctl --help` lists the commands in.
ORDER = ("run", "runs", "scenarios", "cc", "link", "campaign", "reproduce", "rack", "inventory", "lab", "field",
         "report", "metrics", "parse")
# Every exit status ctl uses (also in the README, "What a run guarantees"); `ctl --help` prints
# this table. "Nothing found" follows one rule everywhere: a list or status that finds nothing is
# an answer (0), a thing named on the command line, or the latest one a command must act on, that
# does not exist is bad input (2).
EXIT_CODES = (
    (0, "success (a run completed and its result is valid); a list or status that finds nothing is a success "
        "too and says so (--json: an empty list, or null for one thing)"),
    (1, "failed: an error on the rack or in ctl (the run record and stderr say which)"),
    (2, "bad input (usage, parameters, inventory, campaign file, unparsable data; a run, campaign, reproduction "
        "or reservation named on the command line, or the latest one a command must act on, that does not "
        "exist): nothing was touched"),
    (3, "the rack is busy (another controller holds its lock or lease) or reserved by somebody else"),
    (4, "a run completed but its result is invalid (e.g. MPTCP not negotiated; reasons in the summary)"),
    (130, "interrupted by SIGINT (Ctrl-C): the rack was restored"),
    (141, "stdout's reader went away (`ctl ... | head`): ctl stopped at its next write to it, quietly "
          "(nothing on stderr), as git does: 128 + SIGPIPE"),
    (143, "stopped by SIGTERM: the rack was restored"),
)
EPILOG = ("-i/--inventory, -q/--quiet and -v/--verbose mean the same before or after the command.\n\n"
          "exit status:\n" + "\n".join(textwrap.fill(what, 96, initial_indent=f"  {code:<4} ", subsequent_indent=" " * 7)
                                        for code, what in EXIT_CODES))
_GLOBAL_WITH_VALUE = ("--inventory", "-i")
# asyncssh and pysnmp log through `logging`: quiet unless -v asks (-vv: their debug too).
_LIBRARY_LOGGERS = ("asyncssh", "pysnmp", "psycopg", "influxdb_client", "urllib3")
# Arguments without a help text on purpose: internal (run --campaign: the scheduler's), an old
# name kept hidden, -v after the command (documented once, with the global options), and -i where
# it means nothing (inventory init writes a new inventory; it reads none).
HIDDEN = {("run", "--campaign"), ("", "--log-quiet"), ("*", "--verbose"), ("inventory init", "--inventory")}


def command_index(argv: list[str]) -> int | None:
    """Where the top-level command is in argv (skipping global options), or None."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in _GLOBAL_WITH_VALUE:
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        return i
    return None


def command_word(argv: list[str]) -> str | None:
    """The top-level command named in argv (skipping global options), or None."""
    i = command_index(argv)
    return argv[i] if i is not None else None


def build_parser(populate: str | None = "*") -> Parser:
    """The whole parser (`populate="*"`), or one whose only filled-in command is `populate`
    (the others are listed with their help, so `ctl --help` and errors read the same)."""
    p = Parser(prog="ctl", description="Controller of the hardware-in-the-loop network testbed.", allow_abbrev=False,
               epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="store_true", help="ctl's version, git commit and Python, then exit")
    p.add_argument("--verbose", "-v", action="count", default=0,
                   help="log more on stderr (-v: ctl's and its libraries' info; -vv: debug, SSH included)")
    p.add_argument("--quiet", "-q", dest="global_quiet", action="store_true", help=QUIET_HELP)
    p.add_argument("--log-quiet", dest="global_quiet", action=DeprecatedName, new="--quiet", nargs=0,
                   help=argparse.SUPPRESS)
    p.add_argument("--inventory", "-i", metavar="FILE", help=f"{INVENTORY_HELP} ({setting_default('inventory')})")
    sub = p.add_subparsers(dest="command", required=False, parser_class=Parser, metavar="COMMAND")
    for name in ORDER + tuple(n for n in COMMANDS.names() if n not in ORDER):
        if populate == "*" or name == populate:
            COMMANDS.get(name)(sub)
        else:
            sub.add_parser(name, help=COMMANDS.help(name))
    for sp in sub.choices.values():
        _add_everywhere(sp)
    return p


def _add_everywhere(p: argparse.ArgumentParser) -> None:
    """-i, -q and -v after the command too, with the meaning they have before it: on every
    (sub)command's parser (`ctl config show -i FILE`, `ctl link show -q`). Not set unless given
    (SUPPRESS), so a value given before the command stays."""
    added = []
    if "--inventory" not in p._option_string_actions:
        added.append(p.add_argument("--inventory", "-i", default=argparse.SUPPRESS, metavar="FILE",
                                    help=INVENTORY_HELP))
    if "--quiet" not in p._option_string_actions and "-q" not in p._option_string_actions:
        added.append(p.add_argument("--quiet", "-q", action="store_true", default=argparse.SUPPRESS, help=QUIET_HELP))
    if "--verbose" not in p._option_string_actions and "-v" not in p._option_string_actions:
        added.append(p.add_argument("--verbose", "-v", dest="sub_verbose", action="count", default=argparse.SUPPRESS,
                                    help=argparse.SUPPRESS))
    for a in added:
        a.everywhere = True      # the manual page documents them once, with the global options
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in a._choices_actions}
            for name, sp in a.choices.items():
                if not sp.description and helps.get(name):
                    sp.description = helps[name][:1].upper() + helps[name][1:] + "."   # `ctl X Y --help` says it
                _add_everywhere(sp)


def leaf_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command `args` were parsed for."""
    p = parser
    while True:
        sub = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(args, sub.dest, None) if sub is not None else None
        if sub is None or not isinstance(name, str) or name not in sub.choices:
            return p
        p = sub.choices[name]


def unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> UsageError:
    """`unrecognized arguments: --duraton 5s (did you mean --duration?)`."""
    leaf = leaf_parser(parser, args)
    options = set(leaf._option_string_actions) | set(parser._option_string_actions)
    options = {o for o in options if o.startswith("--")}
    first = next((a.split("=", 1)[0] for a in extra if a.startswith("-")), None)
    hint = suggest(first, sorted(options)) if first else ""
    where = leaf.prog.removeprefix("ctl").strip()
    return UsageError((f"{where}: " if where else "") + f"unrecognized arguments: {' '.join(extra)}{hint}")


def configure_logging(verbose: int, quiet: bool = False) -> None:
    """Warnings only by default; -q errors only, -v info, -vv debug (asyncssh's and pysnmp's
    loggers included)."""
    level = logging.ERROR if quiet else logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 \
        else logging.DEBUG
    # written by stderr's writer thread (controller/cli/output.py): a log record from a run's event
    # loop never waits on a terminal or pipe that stopped reading
    logging.basicConfig(level=level, format="ctl: %(levelname)s %(name)s: %(message)s",
                        handlers=[WriterHandler(sys.stderr)])
    for name in _LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR if quiet else logging.WARNING if verbose < 2 else logging.DEBUG)
    if verbose >= 2:
        import asyncssh  # its own debug level: packet-level detail only when asked
        asyncssh.set_debug_level(1)


def complete() -> None:
    """Shell completion (argcomplete): when the shell asks (`_ARGCOMPLETE` set), the whole parser
    is built, every command and option completes, and `ctl run SCENARIO --<TAB>` offers that
    scenario's own parameters (controller.cli.run adds them in completion mode). Exits when done.
    Enable with `eval "$(register-python-argcomplete ctl)"` (docs/howto/install.md,
    "Shell completion and the manual page")."""
    import argcomplete
    argcomplete.autocomplete(build_parser("*"), always_complete_options="long")


def _stdout_closed() -> bool:
    """stdout is a pipe (or socket) whose reader has gone (poll says POLLERR/POLLHUP)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _fd, ev in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def closed_pipe() -> int:
    """`ctl ... | head`: the reader went away. Quiet, as git is: nothing on stderr, exit 141 (128 +
    SIGPIPE, what a shell reports for a process killed by it); stdout goes to /dev/null so that
    Python's final flush does not print a traceback-like "Exception ignored" line."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError):
        pass
    return 141


def entry() -> None:
    """The `ctl` program (the console script and `python -m controller`): `main()`, then the
    process ends without the interpreter tearing down every module one by one (about 0.3 s of
    CPU after a run has loaded matplotlib, influxdb-client and asyncssh). Everything ctl writes
    is closed by then; the exit handlers still run and the standard streams are flushed. The
    garbage collector is paused while the command starts (controller.cli.gcpause)."""
    import atexit
    gcpause.pause()
    code = main()
    try:
        atexit._run_exitfuncs()     # logging's flush, weakref finalizers (temporary directories)
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:         # `ctl ... | head`: the reader left before the last write
        code = code or closed_pipe()
    os._exit(code)


def warm_import(name: str) -> None:
    """Import `name` in a daemon thread while this one goes on (asyncssh before a run, while
    this thread parses the inventory). The stdlib modules both import graphs share are imported
    here first, so the two threads never wait on each other's half-imported module."""
    import asyncio  # noqa: F401
    import ssl  # noqa: F401
    import threading

    def work() -> None:
        with quick_oqs_lookup():
            importlib.import_module(name)
    threading.Thread(target=work, name=f"import-{name}", daemon=True).start()


# Where a library file could be without the dynamic linker's cache knowing it (quick_oqs_lookup).
_LIBRARY_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib", "/usr/local/lib64")


@contextlib.contextmanager
def quick_oqs_lookup() -> Iterator[None]:
    """While asyncssh is imported: its crypto/pq.py asks `ctypes.util.find_library` for "oqs" and
    "liboqs" (post-quantum key exchange through liboqs, when installed). Where the library is not
    installed, as here, each question runs `ldconfig -p`, then `gcc` (with its linker) and `ld`:
    about 20 ms and six processes at every `ctl run`. Here it asks the linker's cache first
    (`ldconfig -p`, as find_library does first) and, when the cache does not list it and no
    lib{name}.so* file is in the usual library directories or $LD_LIBRARY_PATH is set, answers
    None without gcc and ld; in every other case find_library itself answers. So asyncssh gets
    find_library's answer wherever liboqs was installed into a library directory; only a liboqs
    reachable solely through gcc's own extra search directories would be missed (it is not there).
    Other names go to find_library unchanged; the original is put back after the import."""
    import ctypes.util
    original = ctypes.util.find_library
    cache = getattr(ctypes.util, "_findSoname_ldconfig", None)

    def find_library(lib: str) -> str | None:
        if lib not in ("oqs", "liboqs") or cache is None or os.environ.get("LD_LIBRARY_PATH"):
            return original(lib)
        found = cache(lib)
        if found or _library_file(lib):
            return found or original(lib)
        return None

    ctypes.util.find_library = find_library
    try:
        yield
    finally:
        ctypes.util.find_library = original


def _library_file(lib: str) -> bool:
    """A lib{lib}.so* file in a usual library directory or one level below (the multiarch ones)."""
    import glob
    pattern = f"lib{glob.escape(lib)}.so*"
    return any(glob.glob(os.path.join(d, pattern)) or glob.glob(os.path.join(d, "*", pattern)) for d in _LIBRARY_DIRS)


def warm_commit() -> None:
    """Ask git for the checkout's commit (the run record names it: two `git` processes, cached
    for the process) in a daemon thread while the start-up goes on, not after the record is
    created."""
    import threading

    from controller.version import commit
    threading.Thread(target=commit, name="git-commit", daemon=True).start()


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
        if word == "run" and not {"-h", "--help", "--dry-run"} & set(args_in):
            warm_import("asyncssh")
            warm_commit()
        commands.LIVE = True        # help texts name this machine's settings
        parser = build_parser(word if word in COMMANDS else None)
        if word == "run":
            from controller.cli.run import prepare_argv   # the scenario's name first, its parameters in --help
            i = command_index(args_in)
            assert i is not None
            args_in = args_in[:i + 1] + prepare_argv(parser, args_in[i + 1:])
        args, extra = parser.parse_known_args(args_in)
        args.quiet = bool(args.global_quiet or getattr(args, "quiet", False))
        args.verbose += getattr(args, "sub_verbose", 0)
        configure_logging(args.verbose, args.quiet)
        set_flag("inventory", getattr(args, "inventory", None))     # -i for every command, before or after it
        if args.command is None:
            raise UsageError("which command? (`ctl --help` lists them)")
        dest = getattr(args, "extra_args", None)
        if dest:
            setattr(args, dest, extra)  # e.g. a scenario's own parameters
        elif extra:
            raise unrecognized(parser, args, extra)
        from controller.cli.common import command_words, set_command   # loaded by the command already
        set_command(command_words(parser, args))    # named in the --json envelope
        if word != "run":
            gcpause.resume()        # the start-up ends here (`ctl run`'s once its imports are done)
        return args.func(args)
    except CtlError as exc:
        print(f"ctl: error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("ctl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        if _stdout_closed():
            return closed_pipe()
        raise
    finally:
        gcpause.resume()
        commands.LIVE = False       # a caller in the same process builds the generic texts again
