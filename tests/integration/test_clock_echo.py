"""The clock echo a campaign keeps open on its connections (issue 28: two python3 starts per host
and run fewer), on the virtual rack's real sshd and python3. Its hosts share this machine's clock, so
every correct offset is 0 within its round trip: an answer taken from an earlier request would show
up as the time since that request."""
from __future__ import annotations

import asyncio
import time

import pytest

from controller.campaign.health import health_check
from controller.campaign.spec import HealthSpec
from controller.clocksync import ClockEcho
from controller.ssh import CommandLog, SSHPool

pytestmark = pytest.mark.integration
HOSTS = ("a1", "br1")


def _near_zero(o) -> bool:
    return abs(o.measured_s) <= max(o.rtt_s, 0.005) and o.method.startswith("python3 echo")


def test_a_kept_echo_goes_with_its_connection_and_answers_the_next_run(rack):
    async def main():
        lender = SSHPool(rack.inventory, CommandLog(), HOSTS)
        try:
            (await lender.connect_all()).raise_on_error()
            first = ClockEcho.kept(lender["a1"])
            assert _near_zero(await first.offset(5)) and lender["a1"].echo is first and not first.reused
            run = SSHPool(rack.inventory, CommandLog(), HOSTS)     # a run's pool borrows the connections
            assert sorted(run.borrow(lender)) == sorted(HOSTS)
            again = ClockEcho.kept(run["a1"])
            assert again is first and again.reused and again.session is run["a1"]
            assert _near_zero(await again.offset(5))
            run.give_back(lender)
            assert lender["a1"].echo is first and run["a1"].echo is None
            await run.close()
            assert ClockEcho.kept(lender["a1"]) is first                # still there for the next check
        finally:
            await lender.close()
        assert lender["a1"].echo is None                                # gone with the connection
    asyncio.run(main())


def test_an_answer_left_unread_is_never_taken_for_a_later_one(rack):
    async def main():
        pool = SSHPool(rack.inventory, CommandLog(), HOSTS)
        try:
            (await pool.connect_all()).raise_on_error()
            echo = ClockEcho.kept(pool["a1"])
            await echo.open()
            echo.proc.send_line("cut-short")          # an exchange a cancelled run never read
            echo.proc.send_line("x7")
            time.sleep(0.3)                           # its answers are now 0.3 s old
            o = await ClockEcho.kept(pool["a1"]).offset(5)
            assert _near_zero(o), o
        finally:
            await pool.close()
    asyncio.run(main())


def test_a_kept_echo_that_ended_is_replaced_not_given_up_for_date(rack):
    async def main():
        pool = SSHPool(rack.inventory, CommandLog(), HOSTS)
        try:
            (await pool.connect_all()).raise_on_error()
            echo = ClockEcho.kept(pool["a1"])
            await echo.offset(3)
            echo.proc.close_stdin()                   # the python3 ends (as if killed on the host)
            await echo.proc.wait(5)
            again = ClockEcho.kept(pool["a1"])
            assert again is echo and again.reused
            o = await again.offset(5)
            assert _near_zero(o), o                   # a fresh echo, not `date` (+-0.5 s)
            assert pool["a1"].echo is again and again.proc is not None
        finally:
            await pool.close()
    asyncio.run(main())


def test_the_health_check_keeps_its_echoes_only_on_the_callers_pool(rack):
    spec = HealthSpec()

    async def main():
        own = await health_check(rack.inventory, list(HOSTS), spec, None)
        assert own.ok, own.reasons
        pool = SSHPool(rack.inventory, CommandLog(), HOSTS)
        try:
            r = await health_check(rack.inventory, list(HOSTS), spec, None, pool=pool)
            assert r.ok, r.reasons
            echoes = {h: pool[h].echo for h in HOSTS}
            assert all(e is not None and e.proc is not None for e in echoes.values())
            r = await health_check(rack.inventory, list(HOSTS), spec, None, pool=pool)
            assert r.ok and all(pool[h].echo is echoes[h] for h in HOSTS)      # the same python3s
            assert all(r.details["clock"][h]["method"].startswith("python3 echo") for h in HOSTS)
        finally:
            await pool.close()
    asyncio.run(main())
