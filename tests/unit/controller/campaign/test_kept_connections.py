"""A campaign's consecutive runs on one rack share their SSH connections (issue 28): the pool a
run's health check connects is kept for the next run while the hosts are reached the same way,
replaced when they are not, and closed when the scheduler lets the rack go. (The connections
themselves, lost and reopened, are exercised on the virtual rack by the campaign integration
tests; here no host is connected.)"""
from __future__ import annotations

import asyncio

from controller.campaign.scheduler import Scheduler, SchedulerOptions
from controller.campaign.sqlite_store import SQLiteStore


def test_the_pool_is_kept_for_the_same_hosts_and_replaced_for_others(invs, tmp_state_dir):
    inv = invs["virtual"]
    store = SQLiteStore()
    try:
        sched = Scheduler(store, lambda m: None, SchedulerOptions(exit_when_idle=True))

        async def go() -> None:
            first = await sched._pool_for(inv, ["a1", "b1", "br1"])
            assert await sched._pool_for(inv, ["a1", "b1", "br1"]) is first
            other = await sched._pool_for(inv, ["a1", "b2", "br1"])
            assert other is not first and sorted(other.sessions) == ["a1", "b2", "br1"]
            await sched._drop_pool(inv.name)
            assert inv.name not in sched._pools
            assert await sched._pool_for(inv, ["a1", "b2", "br1"]) is not other
            await sched._drop_pool(inv.name)
        asyncio.run(go())
    finally:
        store.close()
