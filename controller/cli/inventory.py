"""`ctl inventory check [FILE] [--probe] [--json]` and `ctl inventory init [FILE] --hosts ... [--json]`.

check: every problem of the file at once, one line each with its line number, in ctl's words
(controller.inventory_check), then which shipped scenarios the rack can run with the hosts and
links its roles default to (controller.rack.fit). Exit 0 when the file is valid, 2 otherwise.
With --probe it also asks every host, read-only, what each role needs (controller.rack.probe):
exit 0 only if every shipped scenario can run, 1 otherwise, saying which cannot and why.

init: a commented skeleton from flags (controller.inventory_skeleton), written to a new file
(never over an existing one, never through a symlink) or printed.
"""
from __future__ import annotations

import argparse
import errno
import os
import re
import sys
from pathlib import Path

from controller.cli.commands import JSON_HELP, Parser, add_command
from controller.cli.common import print_json
from controller.errors import UsageError
from controller.units import counted
from controller.inventory import resolve_inventory_path
from controller.inventory_check import CheckReport, check_file
from controller.inventory_skeleton import SHAPERS, parse_host, skeleton
from controller.settings import existing_or_shipped, packaged_inventory
from controller.textsafe import shown as escape


def cmd_check(args: argparse.Namespace) -> int:
    path = existing_or_shipped("inventory", args.file) if args.file else resolve_inventory_path(args.inventory)
    report = check_file(path)
    fits = []
    if report.valid:
        from controller.rack.fit import all_fits   # the scenarios and drivers: only for a valid file
        assert report.inventory is not None
        fits = all_fits(report.inventory)
    probe = None
    if report.valid and args.probe:
        from controller.rack.probe import probe_rack   # SSH: only when asked
        assert report.inventory is not None
        probe = probe_rack(report.inventory, fits, progress=None if args.json else _progress)
    if args.json:
        out = report.to_json()
        if report.valid:
            out["scenarios"] = [f.to_json() for f in fits]
        if probe is not None:
            out["probe"] = probe.to_json()
        print_json(out)
    else:
        _print_report(report, fits)
        if probe is not None:
            for line in probe.render():
                print(escape(line))
    if not report.valid:
        return 2
    if probe is not None:
        return 0 if probe.ok else 1
    return 0


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _print_report(report: CheckReport, fits: list) -> None:
    shown = escape(str(report.path))
    for f in report.errors + report.warnings:
        print(escape(f.render(shown)), file=sys.stderr)
    if not report.valid:
        n = len(report.errors)
        print(f"ctl: error: {shown}: {n} error{'s' if n != 1 else ''}: nothing was changed", file=sys.stderr)
        return
    inv = report.inventory
    assert inv is not None
    print(f"{shown}: valid: rack {inv.name} ({inv.kind}), {counted(len(inv.hosts), 'host')}, {counted(len(inv.links), 'link')}"
          + (f", {len(report.warnings)} warning{'s' if len(report.warnings) != 1 else ''}" if report.warnings else ""))
    print("scenarios planned on this rack with no role flag (the host or link each role defaults to here; "
          "--probe asks the hosts):")
    width = max((len(f.scenario) for f in fits), default=8)
    for f in fits:
        if f.ok:
            roles = ", ".join(r.shown() for r in f.roles)
            print(escape(f"  {f.scenario:<{width}}  plans     {roles}"))
        else:
            print(escape(f"  {f.scenario:<{width}}  cannot    {f.reason}"))


def cmd_init(args: argparse.Namespace) -> int:
    hosts = [parse_host(h) for h in (args.hosts or [])]
    target = Path(args.file) if args.file else None
    schema = packaged_inventory().parent / "inventory.schema.json"
    name = args.name or (target.stem.lower() if target is not None else "")
    if not name:
        raise UsageError("inventory init: give --name (the rack's name) or a FILE")
    text = skeleton(name, hosts, shaper=args.shaper, user=args.user, key_file=args.key_file,
                    known_hosts=args.known_hosts, sudo=args.sudo, schema=str(schema) if schema.exists() else None)
    if target is not None:
        _write_new(target, text)
    if args.json:
        print_json({"file": str(target) if target is not None else None, "name": name, "shaper": args.shaper,
                    "hosts": [{"name": h.name, "role": h.role, "address": h.address} for h in hosts],
                    "to_fill": _placeholders(text), "text": text})
    elif target is None:
        sys.stdout.write(text)
    if target is not None:
        print(f"wrote {escape(str(target))}: fill in every <...> value, then `ctl inventory check "
              f"{escape(str(target))}`", file=sys.stderr)
    return 0


_PLACEHOLDER = re.compile(r"<[^<>\n]{1,120}>")


def _placeholders(text: str) -> list[dict]:
    """Every `<...>` value the skeleton left to fill in, with its line (from 1)."""
    return [{"line": n, "value": m.group(0)} for n, line in enumerate(text.splitlines(), 1)
            if not line.lstrip().startswith("#") for m in _PLACEHOLDER.finditer(line)]


def _write_new(path: Path, text: str) -> None:
    """A new file: never over an existing one, never through a symlink (O_EXCL|O_NOFOLLOW)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            raise UsageError(f"{path}: exists; inventory init never writes over a file (choose another name)") from None
        raise UsageError(f"{path}: cannot create: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def register(sub) -> None:
    p = add_command(sub, "inventory", allow_abbrev=False,
                    description="Check an inventory (every error at once, with its line; which scenarios the rack "
                                "can run; --probe asks the hosts, read-only), or write a new one from a few flags.")
    acts = p.add_subparsers(dest="inventory_command", required=True, parser_class=Parser, metavar="ACTION")
    c = acts.add_parser("check", allow_abbrev=False,
                        help="every problem of an inventory file at once (exit 0 valid, 2 not); --probe asks the hosts",
                        description="Every problem of the file, one line each with its line number; then which "
                                    "shipped scenarios the rack can run with the hosts and links its roles default "
                                    "to. Secrets are checked as references and never printed.")
    c.add_argument("file", nargs="?", metavar="FILE",
                   help="inventory file (default: --inventory, $CTL_INVENTORY or the virtual rack)")
    c.add_argument("--probe", action="store_true",
                   help="also connect to every host (read-only: nothing on a host changes) and report, per host, "
                        "what its role needs and what is there; exit 0 only if every shipped scenario can run")
    c.add_argument("--json", action="store_true", help="the report as JSON on stdout (same exit status)")
    c.add_argument("--inventory", "-i", default=argparse.SUPPRESS, metavar="FILE", help="rack description (YAML)")
    c.set_defaults(func=cmd_check)
    i = acts.add_parser("init", allow_abbrev=False,
                        help="write a commented inventory from flags (a dumbbell per bridge)",
                        description="A commented inventory: every bridge carries one link (path1, path2, ...), the "
                                    "first half of the endpoints send (side a, playing a1, a2, ...), the rest "
                                    "receive (side b, b1, b2, ...). Values ctl cannot know are <marked> and refused "
                                    "by `ctl inventory check` until filled in.")
    i.add_argument("file", nargs="?", metavar="FILE", help="the new file (never written over); default: stdout")
    i.add_argument("--name", help="the rack's name (lower-case letters, digits, '-'; default: FILE's name)")
    i.add_argument("--hosts", nargs="+", metavar="NAME[:ROLE][@ADDRESS]",
                   help="hosts: ROLE is endpoint (default) or bridge, ADDRESS the management address "
                        "(e.g. snd@192.168.1.10 rcv@192.168.1.11 shp:bridge@192.168.1.12)")
    i.add_argument("--shaper", choices=SHAPERS, default="dummynet",
                   help="the bridges' shaper: dummynet (FreeBSD ipfw), tc (Linux, rate and queue only) or dnpipe "
                        "(default: dummynet)")
    i.add_argument("--user", default="root", help="SSH login of every host (default: root)")
    i.add_argument("--sudo", action="store_true", help="the login is not root: run commands through `sudo -n`")
    i.add_argument("--key-file", metavar="FILE", default="~/.ssh/id_ed25519", help="SSH private key (default: ~/.ssh/id_ed25519)")
    i.add_argument("--known-hosts", metavar="FILE", default="~/.ssh/known_hosts",
                   help="known_hosts file holding every host's key (default: ~/.ssh/known_hosts)")
    i.add_argument("--json", action="store_true",
                   help=JSON_HELP + "; the inventory's text, the file written (null: none) and every <...> value "
                                    "left to fill in, with its line")
    i.add_argument("--inventory", "-i", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    i.set_defaults(func=cmd_init)
