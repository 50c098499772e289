"""Restoring a run's bridges and endpoints after the traffic, planned from what configure
verified (issue 28).

Configure reads every shaping and endpoint configuration back and verifies it; the traffic
cannot change either (a shaper's pipes, an endpoint's MPTCP path-manager endpoints, limits and
sysctls are configuration, not connection state). So the restore plans from that verified state
instead of reading the host first, then reads back and verifies against the state before the run
exactly as before: the proof is the read-back, never the plan. If that does not restore the host
(a command fails, or the read-back differs: something else changed it meanwhile), the host is
read and restored again from what it holds, as without this. A run cut short before a host was
verified has no such state for it and is restored from a read. The record's `restore_basis`
says which: "configure", "read", or the fallback.
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


async def restore_endpoint(drv: Any, session: Any, before: Any, applied: Any,
                           expected: Any = None) -> tuple[Any, str, list[str]]:
    """An endpoint driver's restore: (the state read back, its basis, what still differs from
    `before`). `applied`: the state configure verified (None: read first); `expected`: a dry
    run's stand-in for the read (nothing was applied)."""
    basis = "read"
    if applied is not None and drv.plan_restore(before, applied):
        try:
            await run_all(session, drv.plan_restore(before, applied))
            after = drv.parse_state(await run_all(session, drv.read_commands()))
            if not drv.restored_equal(before, after):
                return after, "configure", []
        except CommandFailed:
            pass
        basis = FALLBACK
    # With nothing to undo (a host configure did not change), the one read is the proof.
    now = expected if expected is not None else drv.parse_state(await run_all(session, drv.read_commands()))
    todo = drv.plan_restore(before, now)
    await run_all(session, todo)
    after = drv.parse_state(await run_all(session, drv.read_commands())) if todo or expected is not None else now
    return after, basis, drv.restored_equal(before, after)
