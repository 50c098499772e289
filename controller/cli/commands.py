"""The registry of top-level commands, the argv parser class every command uses, and the
pieces of help text every command shares (--json, settings' defaults, deprecated names).

Kept small and free of heavy imports: `ctl --help` and shell completion load only this.
"""
from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Iterable
from typing import Any

from controller.errors import CtlError, UsageError
from controller.registry import Registry

# One text for every command's --json (what it prints is the command's own `data`).
JSON_HELP = ("print the result as one JSON document on stdout: the envelope {format, command, ctl, time, data}, "
             "times ISO 8601 UTC, durations in seconds (schema: controller/schemas/output/)")
QUIET_HELP = ("quiet: no progress lines and no log messages below errors on stderr (errors, and warnings about "
              "values changed on their way to the rack, are still printed); the same before or after the command")
INVENTORY_HELP = "rack description: a YAML file, or the name of a shipped one (`ctl config show` lists them)"

# Help texts name a setting's default. In `ctl ... --help` (main() sets LIVE) that is the value
# in force on this machine and where it came from; elsewhere (the manual page, the reference
# pages, tests) the rule, so a generated text is the same on every machine.
LIVE = False
_SETTING_RULES = {
    "runs_dir": "$CTL_RUNS_DIR, else the config file's runs_dir, else ~/.local/share/ctl/runs "
                "(installed; /var/lib/ctl/runs as the service) or runs/ (a checkout)",
    "state_dir": "$CTL_STATE_DIR, else the config file's state_dir, else ~/.local/state/ctl "
                 "(installed; /var/lib/ctl as the service) or .state/ (a checkout)",
    "inventory": "$CTL_INVENTORY, else the config file's inventory, else the shipped virtual rack",
}


def setting_default(name: str, under: str = "") -> str:
    """`default: ...` of a help text for a setting (`under`: a path below the setting's value,
    e.g. "campaigns/ID/report"): this machine's value when LIVE, else the rule."""
    if LIVE:
        from controller.settings import resolve
        try:
            s = resolve(name)
        except CtlError:          # a broken config file: its own command says so
            s = None
        if s is not None and s.value:
            value = s.value.rstrip("/") + ("/" + under if under else "")
            return f"default here: {value}, {s.source.removeprefix('default: ')}"
    if under:
        return f"default: {name.upper()}/{under}, {name} being {_SETTING_RULES[name]}"
    return f"default: {_SETTING_RULES[name]}"


def suggest(word: str, candidates: Iterable[str]) -> str:
    """` (did you mean 'run' or 'runs'?)` for a misspelt word, else "" (difflib)."""
    close = difflib.get_close_matches(word, [str(c) for c in candidates], n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) if not c.startswith("-") else c for c in close) + "?)"


def known(name: str, names: Iterable[str], what: str) -> str:
    """`name` when it is one of `names`, else a UsageError naming the close ones and all."""
    names = list(names)
    if name in names:
        return name
    raise UsageError(f"unknown {what} {name!r}{suggest(name, names)} (known: {', '.join(names)})")


class Parser(argparse.ArgumentParser):
    """argparse that reports bad usage as a UsageError (one line, exit 2), with "did you mean"
    for a misspelt command or choice."""

    def error(self, message: str) -> None:  # type: ignore[override]
        # "ctl: error: " is printed once by main(); the subcommand's words say where.
        where = self.prog.removeprefix("ctl").strip()
        raise UsageError(f"{where}: {message}" if where else message)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            choices = [str(c) for c in action.choices]
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}{suggest(str(value), choices)} "
                                                 f"(choose from {', '.join(choices)})")


class DeprecatedName(argparse.Action):
    """The old name of an option (`--plr` for `--loss`): still accepted, with one line on stderr
    saying what it is called now. Stores into the new option's dest."""

    def __init__(self, option_strings: list[str], dest: str, new: str = "", **kw: Any):
        kw.setdefault("help", f"the old name of {new} (deprecated: still accepted, with a warning)")
        super().__init__(option_strings, dest, **kw)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"ctl: warning: {option_string} is deprecated: it is {self.new} now (the same values); "
              f"{option_string} will be removed", file=sys.stderr)
        setattr(namespace, self.dest, True if self.nargs == 0 else values)


# One entry per top-level command: "controller.cli.<module>:register" and the one-line help
# `ctl --help` shows. Only the module of the command being run is imported (start-up time:
# `ctl --help` and shell completion must not load SSH, pydantic models or matplotlib).
COMMANDS: Registry = Registry("command", UsageError)
for _name, _help in (
        ("lab", "build, check or remove the virtual rack"),
        ("parse", "parse saved raw tool output and print JSON"),
        ("run", "run a scenario on the rack"),
        ("scenarios", "list scenarios, or document one"),
        ("cc", "congestion controls the rack can run (kernel built-ins, ctl's BPF programs)"),
        ("link", "set, reset, show or measure a link's shaping"),
        ("campaign", "unattended sweeps: plan, submit, status, pause, resume, cancel, report"),
        ("config", "the settings in force and where each came from"),
        ("service", "the campaign daemon as a systemd service: install its unit files"),
        ("rack", "a shared rack: who holds its lease, reservations (reserve, list, cancel)"),
        ("field", "field tests on modem hosts: start, status, stop, report"),
        ("metrics", "InfluxDB: send spooled points"),
        ("report", "figures over many run records (rtt-loss: the BBRv3 heatmaps)"),
        ("inventory", "describe a rack: check a file (every error, its line; --probe asks the hosts), init one"),
        ("runs", "recorded runs: show one's summary again, over its whole traffic or a window of it"),
        ("reproduce", "every paper's tables on this rack: campaigns, status, report with verdicts, compare")):
    COMMANDS.lazy(_name, f"controller.cli.{_name}:register", _help)


def add_command(sub: argparse._SubParsersAction, name: str, **kw: Any) -> argparse.ArgumentParser:
    """The command's parser, with the help text of its registry entry."""
    return sub.add_parser(name, help=COMMANDS.help(name), **kw)
