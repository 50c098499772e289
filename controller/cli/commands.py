"""The registry of top-level commands and the argv parser class every command uses.

Kept small and free of heavy imports: `ctl --help` and shell completion load only this.
"""
from __future__ import annotations

import argparse
from typing import Any

from controller.errors import UsageError
from controller.registry import Registry


class Parser(argparse.ArgumentParser):
    """argparse that reports bad usage as a UsageError (one line, exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        # "ctl: error: " is printed once by main(); the subcommand's words say where.
        where = self.prog.removeprefix("ctl").strip()
        raise UsageError(f"{where}: {message}" if where else message)


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
