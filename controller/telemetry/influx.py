"""The InfluxDB side of telemetry: an inventory's target, and sending what runs left pending.

Points always go to a run record's spool first (`controller.telemetry.spool`); this module
decides where they go next and pushes what earlier runs could not send (InfluxDB was down).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from controller.errors import CtlError, ParameterError
from controller.inventory import Inventory
from controller.telemetry.spool import InfluxSender, InfluxTarget, pending_points, push_once


def influx_target(inv: Inventory, say: Callable[[str], None]) -> InfluxTarget | None:
    """The inventory's InfluxDB, or None (said why) when there is none or its token is missing."""
    if inv.influxdb is None:
        say("no InfluxDB in the inventory: points are kept in the run record only")
        return None
    try:
        token = inv.influxdb.token.resolve("influxdb token")
    except ParameterError as exc:
        say(f"InfluxDB token not available ({exc.one_line()}): points stay in the run record's spool; "
            "send them later with `ctl metrics push`")
        return None
    return InfluxTarget(inv.influxdb.url, inv.influxdb.org, inv.influxdb.bucket, token)


def require_target(inv: Inventory) -> InfluxTarget:
    """The target, or a CtlError saying why there is none."""
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


def push_pending(inv: Inventory, root: Path, say: Callable[[str], None], budget_s: float = 20.0) -> None:
    """Before a run: best effort to send what earlier runs could not (InfluxDB was down)."""
    pending = runs_with_pending(root)
    if not pending:
        return
    try:
        sender = InfluxSender(require_target(inv))
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
