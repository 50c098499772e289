"""`ctl metrics push [RUN]`: send a run's spooled points to InfluxDB, exactly once."""
from __future__ import annotations

import argparse

from controller.cli.commands import add_command
from controller.cli.common import inventory_of, print_json
from controller.errors import CtlError
from controller.results.records import find_run
from controller.settings import runs_dir
from controller.telemetry.influx import require_target, runs_with_pending
from controller.telemetry.spool import InfluxSender, PushState, pending_points, push_once


def cmd_metrics(args: argparse.Namespace) -> int:
    inv = inventory_of(args)
    root = runs_dir(args.runs_dir)
    if args.all:
        targets = runs_with_pending(root)
    else:
        targets = [find_run(root, args.run)]
    sender = InfluxSender(require_target(inv))
    results = []
    try:
        for d in targets:
            try:
                sent, _ = push_once(d, sender)
            except Exception as exc:
                raise CtlError(f"{d.name}: InfluxDB write failed: {type(exc).__name__}: {str(exc)[:200]}") from None
            st = PushState.load(d)
            results.append({"run": d.name, "sent_now": sent, "sent_total": st.points, "pending": pending_points(d)})
    finally:
        sender.close()
    if args.json:
        print_json(results)
    else:
        for r in results:
            print(f"{r['run']}: sent {r['sent_now']} points now, {r['sent_total']} in all, {r['pending']} pending")
        if not results:
            print("nothing to send")
    return 0


def register(sub) -> None:
    p = add_command(sub, "metrics")
    p.add_argument("action", choices=["push"])
    p.add_argument("run", nargs="?", help="run id or path (default: the latest run)")
    p.add_argument("--all", action="store_true", help="every run with points not yet in InfluxDB")
    p.add_argument("--runs-dir")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_metrics)
