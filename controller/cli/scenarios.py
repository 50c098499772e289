"""`ctl scenarios [show NAME]`: the experiments this ctl can run, and each one's parameters."""
from __future__ import annotations

import argparse

from controller import scenarios
from controller.cli.commands import JSON_HELP, Parser, add_command, known
from controller.cli.common import print_json


def cmd_list(args: argparse.Namespace) -> int:
    rows = [(name, scenarios.get(name).title) for name in scenarios.available()]
    if args.json:
        print_json([{"name": n, "title": t} for n, t in rows])
    else:
        w = max(len(n) for n, _ in rows) if rows else 0
        for n, t in rows:
            print(f"{n:<{w}}  {t}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    s = scenarios.get(known(args.name, scenarios.available(), "scenario"))
    if args.json:
        print_json(s.describe_json())
    else:
        print(s.describe())
    return 0


def register(sub) -> None:
    s = add_command(sub, "scenarios", allow_abbrev=False,
                    description="The experiments ctl runs (`ctl run SCENARIO`): without an action, list them.")
    s.add_argument("--json", action="store_true", help=JSON_HELP + "; each scenario's name and title")
    s.set_defaults(func=cmd_list)
    acts = s.add_subparsers(dest="action", required=False, parser_class=Parser, metavar="ACTION")
    sp = acts.add_parser("show", help="one scenario's description and parameters, with units, ranges and defaults",
                         allow_abbrev=False)
    name = sp.add_argument("name", metavar="SCENARIO", help="the scenario (`ctl scenarios` lists them)")
    name.completer = lambda **_kw: scenarios.available()
    sp.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                    help=JSON_HELP + "; the description and every parameter")
    sp.set_defaults(func=cmd_show)
