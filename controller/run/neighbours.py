"""Around a run's traffic, on its hosts: the neighbour warm-up before it (moved out of
runner.py, unchanged), and which hosts' kernel counters are read before and after it (here, not
in controller.run.replay, so a run does not import the record replay and its BitTorrent parts)."""
from __future__ import annotations

import asyncio
from typing import Any, Mapping

from controller.commands import Command
from controller.inventory import Inventory
from controller.scenarios.base import RunPlan
from controller.topology import interfaces_in_subnet


async def warm_neighbours(inv: Inventory, plan: RunPlan, sessions: Mapping[str, Any]) -> list[dict] | None:
    """One ping per (client address, server address) pair in a common subnet, before traffic;
    what each got (for the record's `neighbour_warmup`), or None when there is no pair.

    Neighbour (ARP) resolution crosses the shaped bridges too: without this, whether a
    flow's first packets or an MPTCP join wait an extra round trip (1.6 s at 800 ms one
    way) would depend on what the previous run left in the caches. Unanswered pings are
    recorded, not errors (a firewall may drop ICMP; the traffic is what counts)."""
    pairs: set[tuple[str, str, str]] = set()
    for f in plan.flows:
        for ci in inv.hosts[f.client].interfaces:
            if ci.address:
                pairs.update((f.client, ci.ip, si.ip) for si in interfaces_in_subnet(inv, f.server, ci))
    if not pairs:
        return None
    one_way_s = sum(c.delay_us for c in plan.links.values()) / 1e6   # an upper bound
    wait = str(min(30, int(4 * one_way_s) + 2))                      # ARP + echo round trips

    async def one(host: str, src: str, dst: str) -> dict:
        r = await sessions[host].run(Command(("ping", "-n", "-c", "1", "-W", wait, "-I", src, dst),
                                             timeout=int(wait) + 10, check=False,
                                             note="neighbour warm-up before traffic"))
        return {"host": host, "src": src, "dst": dst, "replied": r.exit_status == 0}
    return list(await asyncio.gather(*(one(*p) for p in sorted(pairs))))


def counter_hosts(plan: Any) -> set[str]:
    """The hosts whose kernel counters (`nstat -asz`) a run reads before and after traffic: the
    MPTCP hosts and every client and server of the plan's flows."""
    return set(plan.mptcp_hosts) | {f.client for f in plan.flows} | {f.server for f in plan.flows}
