"""What every command shares: the inventory it works on, and its JSON output.

`--json` output, every command alike: one JSON object on stdout (progress and warnings go to
stderr), the envelope

    {"format": 1,                                  # of this envelope
     "command": "runs list",                       # the command words, without options
     "ctl": {"version": "0.1.0", "commit": "..."}, # which ctl printed it
     "time": "2026-11-22T04:18:17.381965Z",        # when, ISO 8601 UTC
     "data": ...}                                  # the command's own output

with every time in `data` as ISO 8601 UTC and durations in seconds
(`controller.results.wire.to_wire`). The JSON Schema of each command's envelope is shipped in
controller/schemas/output/ (`python -m controller.schemas` writes them). print_json is the only
writer of it.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from controller.errors import RecordError, UsageError
from controller.inventory import Inventory, load_inventory, resolve_inventory_path
from controller.results.wire import iso_utc, to_wire
from controller.version import commit, version

ENVELOPE_FORMAT = 1
_command: list[str] = []        # the words of the command being run (set_command)


def inventory_of(args: argparse.Namespace) -> Inventory:
    """The rack a command works on: --inventory > $CTL_INVENTORY > inventory/virtual.yaml."""
    return load_inventory(resolve_inventory_path(args.inventory))


def run_record(runs_root: Path, run: str | None) -> Path:
    """The record of a run named on the command line (or the latest, for a command that acts on
    one): one that does not exist is bad input (exit 2), as everywhere ("nothing found" rule in
    `ctl --help`)."""
    from controller.results.records import find_run
    try:
        return find_run(runs_root, run)
    except RecordError as exc:
        raise UsageError(str(exc)) from None


def command_words(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The (sub)command names `args` were parsed for, e.g. ["runs", "list"]; a command whose
    action is a positional choice (`ctl lab status`) has it as its last word (pure)."""
    words: list[str] = []
    p: argparse.ArgumentParser = parser
    while True:
        sub = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(args, sub.dest, None) if sub is not None else None
        if sub is None or not isinstance(name, str) or name not in sub.choices:
            break
        words.append(name)
        p = sub.choices[name]
    if words:
        first = next((a for a in p._actions if not a.option_strings and a.dest != "help"), None)
        value = getattr(args, first.dest, None) if first is not None and first.choices else None
        if isinstance(value, str) and value in first.choices:
            words.append(value)
    return words


def set_command(words: list[str]) -> None:
    """Which command is running (controller.cli.main says it once arguments are parsed)."""
    _command[:] = words


def envelope(data: Any, command: str | None = None, now: float | None = None) -> dict:
    """The JSON document `--json` prints: the envelope around `data` (module doc)."""
    plain = json.loads(json.dumps(data, default=str))
    return {"format": ENVELOPE_FORMAT, "command": command if command is not None else " ".join(_command),
            "ctl": {"version": version(), "commit": commit()},
            "time": iso_utc(time.time() if now is None else now), "data": to_wire(plain)}


def print_json(data: Any) -> None:
    json.dump(envelope(data), sys.stdout, indent=2, sort_keys=False, allow_nan=False)
    sys.stdout.write("\n")
