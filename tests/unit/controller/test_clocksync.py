"""Clock exchanges and figure drawing kept apart in one process (controller.clocksync.QuietGate,
issue 28: a campaign draws a finished run's figures while the next run's health check measures
clocks).

Contract: exchanges run together; a drawing (in a thread) waits until no exchange runs; an
exchange waits, without blocking the event loop, while a drawing runs.
"""
from __future__ import annotations

import asyncio
import threading

from controller.clocksync import QuietGate


def test_a_drawing_waits_for_the_exchanges_and_they_run_together():
    gate = QuietGate()
    log: list[str] = []
    started = threading.Event()

    def draw() -> None:
        started.set()
        with gate.drawing():
            log.append("draw")

    async def main() -> None:
        async with gate.exchange():
            async with gate.exchange():          # a second host's exchange, at the same time
                assert gate.exchanges == 2
                t = threading.Thread(target=draw)
                t.start()
                await asyncio.to_thread(started.wait, 10)
                for _ in range(20):              # the loop goes on while the drawing waits
                    await asyncio.sleep(0.01)
                log.append("exchanges still running")
        await asyncio.to_thread(t.join, 10)
    asyncio.run(main())
    assert log == ["exchanges still running", "draw"]
    assert (gate.exchanges, gate.drawings) == (0, 0)


def test_an_exchange_waits_while_a_figure_is_drawn():
    gate = QuietGate()
    inside, release = threading.Event(), threading.Event()
    log: list[str] = []

    def draw() -> None:
        with gate.drawing():
            inside.set()
            assert release.wait(10)
            log.append("drawn")

    async def main() -> None:
        t = threading.Thread(target=draw)
        t.start()
        await asyncio.to_thread(inside.wait, 10)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while not release.is_set():
                ticks += 1
                await asyncio.sleep(0.01)
        tick = asyncio.ensure_future(ticker())
        exchange = asyncio.ensure_future(_exchange(gate, log))
        await asyncio.sleep(0.2)
        assert not exchange.done() and ticks > 0       # waiting, and the loop is not blocked
        release.set()
        await exchange
        await tick
        await asyncio.to_thread(t.join, 10)
    asyncio.run(main())
    assert log == ["drawn", "exchanged"]


async def _exchange(gate: QuietGate, log: list[str]) -> None:
    async with gate.exchange():
        log.append("exchanged")
