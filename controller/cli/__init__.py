"""`ctl`: thin command line. Parse, call, print.

Every deliberate error is one line on stderr and a non-zero exit (2 for bad input, before
anything on the rack is touched).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable

from controller.argutil import join_negative_values
from controller.errors import CtlError, RackBusy, UsageError
from controller.settings import export_state_dir


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad usage as a UsageError (one line, exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _inventory(args: argparse.Namespace):
    from controller.inventory import load_inventory, resolve_inventory_path
    return load_inventory(resolve_inventory_path(args.inventory))


def _print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")


# ---- lab -------------------------------------------------------------------------------------

def cmd_lab(args: argparse.Namespace) -> int:
    inv = _inventory(args)
    if args.action in ("up", "down"):
        # Not under a run or a campaign: building or removing the rack would cut it.
        from controller.lock import RackLock
        lock = RackLock(inv.name, f"ctl lab {args.action}")
        try:
            lock.acquire()
        except RackBusy:
            from controller.lab import rack as lab
            if args.action == "up" and lab.topology_intact(inv):
                # Restarting a dead daemon (InfluxDB, an sshd) on the intact topology does not
                # disturb the run or campaign that holds the rack; building would, so it waits.
                return _lab_up_down(inv, "up")
            raise
        try:
            return _lab_up_down(inv, args.action)
        finally:
            lock.release()
    from controller.lab.ops import lab_status
    status = lab_status(inv)
    if args.json:
        _print_json(status)
    else:
        print(f"virtual rack {inv.name}: {'UP' if status['up'] else 'DOWN'}")
        for h, s in status.get("hosts", {}).items():
            print(f"  {h:8s} {s}")
        if "influxdb" in status:
            print(f"  influxdb {status['influxdb']}")
        if "owner_problem" in status:
            print(f"  NOTE: {status['owner_problem']}")
    return 0 if status["up"] else 1


def _lab_up_down(inv, action: str) -> int:
    from controller.lab import rack as lab
    if action == "up":
        from controller.lab.ops import lab_up_cli
        st = lab_up_cli(inv)
        print(f"virtual rack {inv.name} up: {len(st.namespaces)} namespaces, "
              f"{len(st.processes)} daemons, SSH on {len(st.ssh_hosts)} hosts")
        return 0
    if action == "down":
        removed = lab.lab_down(inv)
        print(f"virtual rack {inv.name} down" + (f": removed {len(removed)} objects" if removed else " (was not up)"))
        return 0
    raise AssertionError(action)


# ---- parse -----------------------------------------------------------------------------------

def cmd_parse(args: argparse.Namespace) -> int:
    from controller.parsers import parse
    path = Path(args.file)
    try:
        text = sys.stdin.read() if args.file == "-" else path.read_text(errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    _print_json(parse(args.kind, text))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def build_parser() -> _Parser:
    p = _Parser(prog="ctl", description="Controller of the hardware-in-the-loop network testbed.", allow_abbrev=False)
    p.add_argument("--inventory", "-i", help="rack description (default: $CTL_INVENTORY or inventory/virtual.yaml)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    lab_p = sub.add_parser("lab", help="build, check or remove the virtual rack")
    lab_p.add_argument("action", choices=["up", "down", "status"])
    lab_p.add_argument("--json", action="store_true")
    lab_p.set_defaults(func=cmd_lab)

    from controller.parsers import kinds
    parse_p = sub.add_parser("parse", help="parse saved raw tool output and print JSON")
    parse_p.add_argument("kind", choices=kinds())
    parse_p.add_argument("file", help="file with the tool's output ('-' for stdin)")
    parse_p.set_defaults(func=cmd_parse)

    for register in _EXTENSIONS:
        register(sub)
    # `--inventory` is accepted after the command too (`ctl run X ... --inventory FILE`).
    for name, sp in sub.choices.items():
        sp.add_argument("--inventory", "-i", default=argparse.SUPPRESS, help="rack description (YAML)")
    return p


_EXTENSIONS: list[Callable[[Any], None]] = []


def extension(fn: Callable[[Any], None]) -> Callable[[Any], None]:
    _EXTENSIONS.append(fn)
    return fn


def _load_extensions() -> None:
    import importlib
    for mod in ("controller.cli.run", "controller.cli.link", "controller.cli.campaign", "controller.cli.field",
                "controller.cli.metrics", "controller.cli.report"):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise


def main(argv: list[str] | None = None) -> int:
    export_state_dir()
    try:
        _load_extensions()
        parser = build_parser()
        args, extra = parser.parse_known_args(join_negative_values(list(sys.argv[1:] if argv is None else argv)))
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


if __name__ == "__main__":
    # Run as a script, this module is __main__; the extensions register with controller.cli.
    from controller.cli import main as _main
    sys.exit(_main())
