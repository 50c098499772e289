"""`ctl service install`: the campaign daemon's systemd units, filled in and put in place."""
from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

from controller.cli.commands import INVENTORY_HELP, JSON_HELP, Parser, add_command
from controller.cli.common import inventory_of, print_json
from controller.inventory import resolve_inventory_path
from controller.service import (DEFAULT_DEST, UnitSettings, ctl_executable, default_user, documentation_uri,
                                install_units, render_units)


def cmd_install(args: argparse.Namespace) -> int:
    inv = inventory_of(args)
    needs_root = inv.kind == "virtual"
    settings = UnitSettings(ctl=args.ctl or ctl_executable(), user=args.user or default_user(needs_root),
                            inventory=str(Path(resolve_inventory_path(getattr(args, "inventory", None))).resolve()),
                            rack=inv.name, at=args.at, nightly=args.nightly,
                            no_new_privileges=not args.allow_new_privileges, needs_root=needs_root,
                            docs=documentation_uri())
    units = render_units(settings)
    if args.dry_run and args.json:
        print_json({"dry_run": True, "written": [], "units": {str(Path(args.dest) / n): t for n, t in units.items()}})
        return 0
    if args.dry_run:
        for name, text in units.items():
            print(f"# ---- {Path(args.dest) / name}\n{text}")
        return 0
    written = install_units(units, Path(args.dest))
    main = "ctl-campaign-nightly.timer" if args.nightly else "ctl-campaign.service"
    if args.enable:
        subprocess.run(["systemctl", "daemon-reload"], check=True)
        subprocess.run(["systemctl", "enable", "--now", main], check=True)
    if args.json:
        print_json({"written": [str(p) for p in written], "enable": main, "enabled": bool(args.enable)})
    else:
        for p in written:
            print(f"wrote {p}")
        if not args.enable:
            print(f"then: systemctl daemon-reload && systemctl enable --now {main}")
    return 0


def register(sub) -> None:
    p = add_command(sub, "service", allow_abbrev=False,
                    description="The campaign daemon as a systemd service (unit files shipped with ctl).")
    ss = p.add_subparsers(dest="service_command", required=True, parser_class=Parser, metavar="ACTION")
    sp = ss.add_parser("install", help="fill in the units for this rack and write them (change nothing else)",
                       description="Fill in the campaign daemon's systemd units for this rack and write them; "
                                   "their documentation is ctl(1), installed with ctl.", allow_abbrev=False)
    sp.add_argument("--inventory", "-i", default=argparse.SUPPRESS, metavar="FILE",
                    help="the rack the daemon drives: " + INVENTORY_HELP.removeprefix("rack description: "))
    sp.add_argument("--user", metavar="USER", help="account the daemon runs as (default: ctl for a physical rack; "
                                                   "root for a virtual rack, which refuses any other)")
    sp.add_argument("--dest", default=str(DEFAULT_DEST), metavar="DIR",
                    help=f"directory for the unit files (default {DEFAULT_DEST})")
    sp.add_argument("--ctl", metavar="PATH", help="the ctl executable (default: the one running this command)")
    sp.add_argument("--nightly", action="store_true", help="also a timer that starts the daemon every evening "
                                                           "(it exits when no campaign is left)")
    sp.add_argument("--at", default="21:25", metavar="HH:MM", help="the nightly timer's start time, HH:MM (default 21:25)")
    sp.add_argument("--allow-new-privileges", action="store_true",
                    help="NoNewPrivileges=no (only if the rack's accounts need sudo on the controller)")
    sp.add_argument("--enable", action="store_true", help="then systemctl daemon-reload and enable --now")
    sp.add_argument("--dry-run", action="store_true", help="print the units; write nothing")
    sp.add_argument("--json", action="store_true", help=JSON_HELP + "; the files written (with --dry-run: each unit's "
                                                                   "text)")
    sp.set_defaults(func=cmd_install)
