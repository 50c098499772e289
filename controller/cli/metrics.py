"""`ctl metrics push [RUN]`: send a run's spooled points to InfluxDB, exactly once."""
from __future__ import annotations

import argparse

from controller.cli.commands import JSON_HELP, Parser, add_command, setting_default
from controller.cli.common import inventory_of, print_json, run_record
from controller.errors import CtlError
from controller.settings import runs_dir
from controller.telemetry.influx import require_target, runs_with_pending
from controller.telemetry.spool import InfluxSender, PushState, pending_points, push_once


def cmd_metrics(args: argparse.Namespace) -> int:
    inv = inventory_of(args)
    root = runs_dir(args.runs_dir)
    if args.all:
        targets = runs_with_pending(root)
    else:
        targets = [run_record(root, args.run)]
    if not targets:            # nothing found is an answer: exit 0
        if args.json:
            print_json([])
        else:
            print("nothing to send: every run's points are in InfluxDB")
        return 0
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
    return 0


def register(sub) -> None:
    p = add_command(sub, "metrics", allow_abbrev=False,
                    description="A run's telemetry points kept in its record (metrics.jsonl) and InfluxDB.")
    acts = p.add_subparsers(dest="action", required=True, parser_class=Parser, metavar="ACTION")
    sp = acts.add_parser("push", help="send the points InfluxDB has not received yet, exactly once",
                         description="Send a run's spooled points to the inventory's InfluxDB, exactly once.",
                         allow_abbrev=False)
    sp.add_argument("run", nargs="?", metavar="RUN", help="run id or record path (default: the latest run)")
    sp.add_argument("--all", action="store_true", help="every run with points not yet in InfluxDB")
    sp.add_argument("--runs-dir", metavar="DIR", help=f"where run records are ({setting_default('runs_dir')})")
    sp.add_argument("--json", action="store_true", help=JSON_HELP + "; per run: points sent now, in all, pending")
    sp.set_defaults(func=cmd_metrics)
