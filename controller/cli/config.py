"""`ctl config show`: every setting in force and where it came from (flag, environment,
config file, default)."""
from __future__ import annotations

import argparse

from controller.cli.commands import Parser, add_command
from controller.cli.common import print_json
from controller.settings import config_path, in_checkout, resolve_all


def _shown(name: str, value: str) -> str:
    if name == "database_url" and value:
        from controller.labdb import redact  # never a password (none is allowed anyway)
        return redact(value)
    return value


def cmd_show(args: argparse.Namespace) -> int:
    settings = resolve_all()
    cfg = config_path()
    if args.json:
        print_json({"checkout": in_checkout(), "config_file": str(cfg) if cfg else None,
                    "settings": {s.name: {"value": _shown(s.name, s.value) or None, "source": s.source}
                                 for s in settings}})
        return 0
    print(f"config file: {cfg or 'none (CTL_CONFIG, ~/.config/ctl/config.yaml, /etc/ctl/config.yaml)'}")
    print(f"running from: {'a checkout' if in_checkout() else 'an installed package'}")
    w = max(len(s.name) for s in settings)
    for s in settings:
        print(f"  {s.name:<{w}}  {_shown(s.name, s.value) or '-':<50}  {s.source}")
    return 0


def register(sub) -> None:
    p = add_command(sub, "config", allow_abbrev=False,
                    description="ctl's settings: flag > environment > config file > default.")
    cs = p.add_subparsers(dest="config_command", required=True, parser_class=Parser, metavar="ACTION")
    sp = cs.add_parser("show", help="every setting in force and where it came from", allow_abbrev=False)
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_show)
