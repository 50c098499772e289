"""`ctl scenarios [show NAME]`: the experiments this ctl can run, and each one's parameters."""
from __future__ import annotations

import argparse

from controller import scenarios
from controller.cli.commands import add_command
from controller.cli.common import print_json
from controller.errors import UsageError


def cmd_scenarios(args: argparse.Namespace) -> int:
    if args.action == "show" and not args.name:
        raise UsageError("scenarios show: which scenario? (`ctl scenarios` lists them)")
    if args.name:
        s = scenarios.get(args.name)
        if args.json:
            print_json(s.describe_json())
        else:
            print(s.describe())
        return 0
    rows = []
    for name in scenarios.available():
        s = scenarios.get(name)
        rows.append((name, s.title))
    if args.json:
        print_json([{"name": n, "title": t} for n, t in rows])
    else:
        w = max(len(n) for n, _ in rows) if rows else 0
        for n, t in rows:
            print(f"{n:<{w}}  {t}")
    return 0


def register(sub) -> None:
    s = add_command(sub, "scenarios")
    s.add_argument("action", nargs="?", choices=["show"])
    s.add_argument("name", nargs="?")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_scenarios)
