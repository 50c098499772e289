"""Before a run's traffic: wait, bounded, until no earlier connection is left sending between the
run's endpoints on their data addresses (a previous run's sender that exited with a full send
buffer: the kernel keeps sending it, seconds to a minute on a long path).

Read with `ss -Htn state connected` on every client and server of the plan (all hosts at once,
once a second), parsed by controller.parsers.ss (linear, validated). The first look rides in a
round trip the run makes anyway (issue 28): the runner sends `ss` and then the counters before
traffic (`nstat`) to each endpoint as one batch and hands the `ss` results in as
`first_results`; only when something is left does the wait poll on its own, and the runner then
reads the counters again (they must be taken after the wait, just before the traffic). A socket
counts when its local address is one of the host's data addresses (never the management address
ctl's own SSH uses) and its state may still carry data (ESTAB, SYN-*, FIN-WAIT-1, CLOSE-WAIT,
CLOSING, LAST-ACK; not TIME-WAIT or FIN-WAIT-2, which have nothing left to send). The run's own
iperf3 servers only listen at this point; its clients have not started.

If some remain at the limit the run goes on: the summary measures exactly how much foreign
traffic reached its window (controller/results/foreign.py) and makes it invalid above the run's
limit (the bytes that could move a ratio of its flows or their Jain's index by a tenth of the
recorded run-to-run spread, derived there: 0.2 % of its own bytes with one flow, less the smaller
its smallest flow's share; 0.02-0.04 % on the records so far). A connection on another port than
the run's servers' is not sampled and so not judged there: this wait's record
(`leftover_wait.left`) is what tells of it. Refusing instead would lose runs that a tail of a few
kilobytes does not disturb, and sockets are never killed (ctl cannot prove a socket on a host is one of its own).
`plan_*`/`leftovers` are pure; `wait_for_leftovers` is the I/O.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable, Mapping

from controller.commands import Command, CommandResult
from controller.errors import ParseError
from controller.inventory import Inventory
from controller.parsers import ss
from controller.scenarios.base import RunPlan

# At least 60 s: on campaign t2-delays (2026-11-27, 32 MiB buffers, 800 ms one way) a previous
# run's LIA connection was still acknowledged 51 s into the next run's traffic, i.e. about 60 s
# after its sender exited; 10 round trips of the longest path in the plan when that is longer.
LIMIT_S = 60.0
RTTS = 10
POLL_S = 1.0
ARGV = ("ss", "-Htn", "state", "connected")
# States in which a socket may still send or receive data.
LIVE = frozenset({"ESTAB", "SYN-SENT", "SYN-RECV", "FIN-WAIT-1", "CLOSE-WAIT", "CLOSING", "LAST-ACK"})


def plan_hosts(inv: Inventory, plan: RunPlan) -> dict[str, frozenset[str]]:
    """Each Linux endpoint of the plan's flows (clients and servers) -> its data addresses (the
    `ss` filter is iproute2's; other systems are not waited for)."""
    hosts = {f.client for f in plan.flows} | {f.server for f in plan.flows}
    return {h: frozenset(i.ip for i in inv.hosts[h].interfaces if i.address) for h in sorted(hosts)
            if h in inv.hosts and inv.hosts[h].os == "linux"}


def poll_command() -> Command:
    """One look at a host's connections (a failure is recorded, never fatal)."""
    return Command(ARGV, timeout=10, check=False, note="connections left from before the run (waits until none)")


def plan_limit_s(plan: RunPlan) -> float:
    """How long to wait at most: LIMIT_S, or RTTS round trips of the longest path when longer
    (one way bounded by the sum of every link's delay, as the neighbour warm-up does)."""
    one_way_s = sum(c.delay_us for c in plan.links.values()) / 1e6
    return max(LIMIT_S, RTTS * 2 * one_way_s)


def leftovers(text: str, data_addresses: frozenset[str]) -> list[dict]:
    """The connections in `ss -Htn state connected` output that are on one of `data_addresses`
    and may still carry data: [{state, local, peer, send_q_bytes, recv_q_bytes}]. ParseError on
    output that is not ss's."""
    out = []
    for s in ss.parse(text, netid="tcp", allow_empty=True):
        if s.state not in LIVE or s.local.normalized_host not in data_addresses:
            continue
        out.append({"state": s.state, "local": f"{s.local.normalized_host}:{s.local.port}",
                    "peer": f"{s.peer.normalized_host}:{s.peer.port}",
                    "send_q_bytes": s.send_q, "recv_q_bytes": s.recv_q})
    return out


def describe(found: Mapping[str, list[dict]]) -> str:
    """`host: local -> peer STATE (N bytes queued)`, the first three, and how many in all."""
    items = [(h, c) for h, cs in sorted(found.items()) for c in cs]
    text = "; ".join(f"{h}: {c['local']} -> {c['peer']} {c['state']} ({c['send_q_bytes']} bytes queued)"
                     for h, c in items[:3])
    return text + (f" and {len(items) - 3} more" if len(items) > 3 else "")


async def wait_for_leftovers(inv: Inventory, plan: RunPlan, sessions: Mapping[str, Any],
                             progress: Callable[[str], None] = lambda m: None, *,
                             first_results: Mapping[str, CommandResult] | None = None, started: float | None = None,
                             clock: Callable[[], float] = time.monotonic,
                             sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> dict | None:
    """Polls the plan's endpoints until none has a connection left (see the module), at most
    plan_limit_s: wait_until_drained's result, None without endpoints."""
    hosts = plan_hosts(inv, plan)
    if not hosts:
        return None
    return await wait_until_drained(hosts, plan_limit_s(plan), sessions, progress, first_results=first_results,
                                    started=started, clock=clock, sleep=sleep)


async def wait_until_drained(hosts: Mapping[str, frozenset[str]], limit: float, sessions: Mapping[str, Any],
                             progress: Callable[[str], None] = lambda m: None, *,
                             first_results: Mapping[str, CommandResult] | None = None, started: float | None = None,
                             clock: Callable[[], float] = time.monotonic,
                             sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> dict:
    """Polls `hosts` (host -> its data addresses) once a second until none has a connection left,
    at most `limit` seconds. `first_results`: results of `poll_command()` the caller already has (read in
    a round trip of its own, at `started` on `clock`): the first poll uses them instead of asking
    those hosts again. The record's `leftover_wait`: {limit_s, waited_s, polls, first (what was
    found at the first poll, by host), left (at the end), outcome, errors (hosts whose ss could
    not be read: not waited for)}."""
    errors: dict[str, str] = {}
    given = dict(first_results or {})

    async def poll(h: str) -> list[dict]:
        if h in errors:
            return []
        r = given.pop(h, None)
        if r is None:
            r = await sessions[h].run(poll_command())
        try:
            if r.exit_status != 0:
                raise ParseError(f"ss exited {r.exit_status}")
            return leftovers(r.stdout, hosts[h])
        except ParseError as exc:
            errors[h] = exc.one_line()[:200]
            return []

    t0 = clock() if started is None else started
    polls = 0
    first: dict[str, list[dict]] | None = None
    while True:
        found = dict(zip(hosts, await asyncio.gather(*(poll(h) for h in hosts)), strict=True))
        found = {h: c for h, c in found.items() if c}
        polls += 1
        if first is None:
            first = found
            if found:
                progress(f"waiting up to {limit:g} s for connections left from before the run: {describe(found)}")
        waited = clock() - t0
        if not found or waited >= limit:
            break
        await sleep(min(POLL_S, max(0.0, limit - waited)))
    if not first:
        outcome = "none"
    elif not found:
        outcome = "drained"
        progress(f"connections left from before the run: gone after {waited:.1f} s")
    else:
        outcome = "still there at the limit: the run goes on, its summary measures their traffic"
        progress(f"after {waited:.1f} s still {describe(found)}: going on, the summary judges their traffic")
    return {"limit_s": limit, "waited_s": round(waited, 3), "polls": polls, "first": first, "left": found,
            "outcome": outcome, "errors": errors}
