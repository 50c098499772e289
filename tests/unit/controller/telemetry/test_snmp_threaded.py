"""ThreadedPoller: the SNMP poller on a loop and thread of its own (controller/telemetry/snmp/threaded.py).

The poller here is a plain class with SnmpPoller's lifecycle (start, run(stop), close): the
thread, the loops and the hand-over are the real ones. The real poller against real agents
runs in tests/integration/test_snmp_poller.py and in every rack run with SNMP."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

from controller.errors import ParameterError
from controller.telemetry.snmp.threaded import ThreadedPoller


class RoundPoller:
    """Emits numbered items from its own thread, one per round, until stopped."""

    def __init__(self, sink, fail_start: bool = False) -> None:
        self.sink = sink
        self.fail_start = fail_start
        self.thread: threading.Thread | None = None
        self.closed = False
        self.n = 0

    async def start(self) -> None:
        self.thread = threading.current_thread()
        if self.fail_start:
            raise ParameterError("host br1 snmp.community: environment variable X is not set")
        self.sink(("start", 0))

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.n += 1
            self.sink(("round", self.n))
            try:
                await asyncio.wait_for(stop.wait(), 0.01)
            except asyncio.TimeoutError:
                pass
        self.sink(("last", self.n))

    async def close(self) -> None:
        self.closed = True


def test_items_arrive_on_the_callers_loop_in_order_and_all_before_stop_returns():
    got: list = []
    pollers: list[RoundPoller] = []

    async def go():
        caller = threading.current_thread()

        def deliver(item):
            assert threading.current_thread() is caller
            got.append(item)

        tp = ThreadedPoller(lambda sink: pollers.append(RoundPoller(sink)) or pollers[-1], deliver)
        await tp.start()
        t0 = time.monotonic()
        # The caller's loop is blocked (a busy sampler) until the poller has done 3 rounds: they
        # go on regardless. (A bound, not a timing: on a loaded machine the rounds take longer.)
        while pollers[0].n < 3 and time.monotonic() - t0 < 120:
            pass
        rounds_while_blocked = pollers[0].n
        problem = await tp.stop()
        return problem, rounds_while_blocked

    problem, rounds_while_blocked = asyncio.run(go())
    p = pollers[0]
    assert problem is None and p.closed and p.thread is not threading.main_thread()
    assert rounds_while_blocked >= 3, "the poller waited for the caller's loop"
    assert got[0] == ("start", 0) and got[-1] == ("last", p.n)
    assert [n for kind, n in got if kind == "round"] == list(range(1, p.n + 1))
    assert not [t for t in threading.enumerate() if t.name == "ctl-snmp-poller"]


def test_a_start_failure_is_raised_and_leaves_no_thread():
    async def go():
        tp = ThreadedPoller(lambda sink: RoundPoller(sink, fail_start=True), lambda item: None)
        with pytest.raises(ParameterError, match="snmp.community"):
            await tp.start()
        assert await tp.stop() is None

    asyncio.run(go())
    assert not [t for t in threading.enumerate() if t.name == "ctl-snmp-poller"]


def test_errors_of_the_pollers_loop_go_to_the_handler_first():
    seen: list = []

    class Failing(RoundPoller):
        async def start(self) -> None:
            def boom():
                raise RuntimeError("Unregistered transport")
            asyncio.get_running_loop().call_soon(boom)

    async def go():
        tp = ThreadedPoller(lambda sink: Failing(sink), lambda item: None,
                            lambda ctx: seen.append(str(ctx.get("exception"))) or True)
        await tp.start()
        await asyncio.sleep(0.05)
        await tp.stop()

    asyncio.run(go())
    assert seen == ["Unregistered transport"]
