"""Restoring a run's bridges and endpoints after the traffic (issue 28).

A bridge is restored from the state configure read back and verified, without reading it first:
the traffic cannot change a shaper's configuration (its pipes' rate, delay, loss and queue; only
its counters move). The proof stays the read-back, verified against the state before the run
exactly as before: never the plan. If that does not restore the bridge (a command fails, or the
read-back differs: something else changed it meanwhile), it is read and restored again from what
it holds. A run cut short before a bridge was verified has no such state for it and restores from
a read. The record's `restore_basis` says which: "configure", "read", or the fallback.

An endpoint is always read first: the traffic does change an MPTCP client's endpoint table (the
kernel's path manager adds an `implicit` endpoint for the address of a subflow it opened in answer
to the server's ADD_ADDR; seen on the virtual rack's a1 on 2026-11-27, where restoring from
configure's state left it and the read-back said so).
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable

from controller.commands import run_all
from controller.errors import CommandFailed, VerifyError

FALLBACK = "read (restoring from configure's state did not restore it)"


async def restore_bridge(restore: Callable[[Any], Awaitable[Any]], applied: Any) -> tuple[Any, str]:
    """`restore(now)` (bridges.base.restore: plans from `now`, or from a read when None, then
    reads back and verifies) from `applied`, the state configure verified; None: from a read.
    Returns (the state read back, the restore's basis)."""
    if applied is None:
        return await restore(None), "read"
    try:
        return await restore(applied), "configure"
    except (VerifyError, CommandFailed):
        return await restore(None), FALLBACK


async def restore_endpoint(drv: Any, session: Any, before: Any, expected: Any = None) -> tuple[Any, list[str]]:
    """An endpoint driver's restore: read, plan, apply, read back (with nothing to undo, the one
    read is the proof). Returns (the state read back, what still differs from `before`).
    `expected`: a dry run's stand-in for the read (nothing was applied)."""
    now = expected if expected is not None else drv.parse_state(await run_all(session, drv.read_commands()))
    todo = drv.plan_restore(before, now)
    await run_all(session, todo)
    after = drv.parse_state(await run_all(session, drv.read_commands())) if todo or expected is not None else now
    return after, drv.restored_equal(before, after)
