"""`ctl config show`: every setting in force and where it came from (flag, environment,
config file, default), and the files ctl ships (inventories, campaign files) with where they are,
since a name of one of them is enough wherever a file is asked for."""
from __future__ import annotations

import argparse

from controller.cli.commands import JSON_HELP, Parser, add_command
from controller.cli.common import print_json
from controller.settings import config_path, in_checkout, resolve_all, shipped_dir, shipped_files

SHIPPED = (("inventory", "inventories", "-i NAME, --inventory NAME"),
           ("campaigns", "campaign files", "ctl campaign plan|submit NAME"))


def _shown(name: str, value: str) -> str:
    if name == "database_url" and value:
        from controller.labdb import redact  # never a password (none is allowed anyway)
        return redact(value)
    return value


def shipped() -> dict[str, dict]:
    """kind -> {"dir", "files"}: the files ctl ships, found by name where a file is asked for."""
    return {kind: {"dir": str(shipped_dir(kind)), "files": shipped_files(kind)} for kind, _w, _u in SHIPPED}


def cmd_show(args: argparse.Namespace) -> int:
    settings = resolve_all()
    cfg = config_path()
    files = shipped()
    if args.json:
        print_json({"checkout": in_checkout(), "config_file": str(cfg) if cfg else None,
                    "settings": {s.name: {"value": _shown(s.name, s.value) or None, "source": s.source}
                                 for s in settings},
                    "shipped": files})
        return 0
    print(f"config file: {cfg or 'none (CTL_CONFIG, ~/.config/ctl/config.yaml, /etc/ctl/config.yaml)'}")
    print(f"running from: {'a checkout' if in_checkout() else 'an installed package'}")
    w = max(len(s.name) for s in settings)
    for s in settings:
        print(f"  {s.name:<{w}}  {_shown(s.name, s.value) or '-':<50}  {s.source}")
    for kind, what, usage in SHIPPED:
        print(f"shipped {what} ({files[kind]['dir']}; by name: {usage}):")
        for name in files[kind]["files"]:
            print(f"  {name}")
    return 0


def register(sub) -> None:
    p = add_command(sub, "config", allow_abbrev=False,
                    description="ctl's settings: flag > environment > config file > default; and the files it ships.")
    cs = p.add_subparsers(dest="config_command", required=True, parser_class=Parser, metavar="ACTION")
    sp = cs.add_parser("show", help="every setting in force and where it came from; the shipped inventories and "
                                    "campaign files", allow_abbrev=False)
    sp.add_argument("--json", action="store_true", help=JSON_HELP)
    sp.set_defaults(func=cmd_show)
