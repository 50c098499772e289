"""`ctl metrics push [RUN]`: send a run's spooled points to InfluxDB, exactly once."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

from controller.cli import _inventory, _print_json, extension
from controller.errors import CtlError
from controller.results.records import find_run
from controller.settings import runs_dir
from controller.telemetry.spool import InfluxSender, PushState, pending_points, push_once


def _target(inv):
    from controller.cli.run import influx_target
    msgs: list[str] = []
    t = influx_target(inv, msgs.append)
    if t is None:
        raise CtlError(msgs[0] if msgs else "no InfluxDB target")
    return t


def runs_with_pending(root: Path) -> list[Path]:
    out = []
    if not root.exists():
        return out
    for d in sorted(root.iterdir()):
        if (d / "metrics.jsonl").exists() and pending_points(d) > 0:
            out.append(d)
    return out


def push_pending(inv, root: Path, say: Callable[[str], None], budget_s: float = 20.0) -> None:
    """Before a run: best effort to send what earlier runs could not (InfluxDB was down)."""
    import time
    pending = runs_with_pending(root)
    if not pending:
        return
    try:
        sender = InfluxSender(_target(inv))
    except CtlError:
        return
    t_end = time.monotonic() + budget_s
    try:
        for d in pending:
            if time.monotonic() > t_end:
                break
            try:
                sent, _ = push_once(d, sender)
                say(f"sent {sent} spooled points of {d.name} to InfluxDB")
            except Exception as exc:  # InfluxDB still down: leave it for later
                say(f"InfluxDB still unreachable ({type(exc).__name__}); {len(pending)} runs keep their spool")
                break
    finally:
        sender.close()


def cmd_metrics(args: argparse.Namespace) -> int:
    inv = _inventory(args)
    root = runs_dir(args.runs_dir)
    if args.all:
        targets = runs_with_pending(root)
    else:
        targets = [find_run(root, args.run)]
    sender = InfluxSender(_target(inv))
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
        _print_json(results)
    else:
        for r in results:
            print(f"{r['run']}: sent {r['sent_now']} points now, {r['sent_total']} in all, {r['pending']} pending")
        if not results:
            print("nothing to send")
    return 0


@extension
def register(sub) -> None:
    p = sub.add_parser("metrics", help="InfluxDB: send spooled points")
    p.add_argument("action", choices=["push"])
    p.add_argument("run", nargs="?", help="run id or path (default: the latest run)")
    p.add_argument("--all", action="store_true", help="every run with points not yet in InfluxDB")
    p.add_argument("--runs-dir")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_metrics)
