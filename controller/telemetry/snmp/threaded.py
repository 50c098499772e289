"""An SnmpPoller on an event loop of its own, in a thread of its own.

Why a thread: a run's controller also parses 10 samples a second from every endpoint and
bridge on its event loop. On a loaded machine that loop falls behind, and the SNMP replies
wait behind the backlog: measured 2026-11-27 with 4 CPU hogs beside a 10 s run on the
virtual rack, the poller completed 2 rounds in 10 s (one round's replies, answered by the
agents at once, were taken in 1.4-6 s late, one after another), so a 3 s counter cache gave
no rate at all. On its own loop the poller's rounds keep their schedule as far as the CPU
allows: the GIL is handed between threads every few milliseconds, whereas a callback on a
busy event loop waits for everything queued before it.

Items (Points and Events) are handed to the caller's loop with call_soon_threadsafe, in the
order the poller produced them; when stop() returns, every item has been handed over and
the items queued before it run before any later callback (asyncio runs callbacks FIFO).
"""
from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any

from controller.telemetry.snmp.counters import Output

log = logging.getLogger(__name__)


class ThreadedPoller:
    """ThreadedPoller(make_poller, deliver, on_loop_error=None)

    make_poller(sink) -> SnmpPoller: called in the poller's thread (pysnmp binds its transports
      to the loop they are made on); `sink` takes one Output.
    deliver(item): called on the caller's loop for every item, in order.
    on_loop_error(context) -> bool: offered every unhandled error of the poller's loop first;
      True means handled (e.g. a late datagram for a closed transport), else it is logged.
    """

    def __init__(self, make_poller: Callable[[Callable[[Output], None]], Any],
                 deliver: Callable[[Output], None],
                 on_loop_error: Callable[[dict], bool] | None = None) -> None:
        self._make = make_poller
        self._deliver = deliver
        self._on_loop_error = on_loop_error
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._poller: Any = None
        self._stop: asyncio.Event | None = None
        self._run: Any = None            # concurrent.futures.Future of poller.run()

    async def start(self) -> None:
        """Start the thread and the poller (discovery); raises what SnmpPoller.start raises
        (CtlError for credential problems), after stopping the thread again."""
        caller = asyncio.get_running_loop()
        loop = asyncio.new_event_loop()
        loop.set_exception_handler(self._loop_error)
        thread = threading.Thread(target=loop.run_forever, name="ctl-snmp-poller", daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread

        def sink(item: Output) -> None:
            caller.call_soon_threadsafe(self._deliver, item)

        async def begin() -> None:
            self._poller = self._make(sink)
            self._stop = asyncio.Event()
            await self._poller.start()

        try:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(begin(), loop))
        except BaseException:
            await self._shutdown()
            raise
        self._run = asyncio.run_coroutine_threadsafe(self._poller.run(self._stop), loop)

    async def stop(self, timeout: float = 10.0) -> str | None:
        """End the rounds (the one under way finishes), close the poller, end the thread.
        Returns a one-line problem (the poller did not stop in time, or failed), else None."""
        problem = None
        if self._loop is None:
            return None
        if self._run is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            try:
                await asyncio.wait_for(asyncio.wrap_future(self._run), timeout)
            except asyncio.TimeoutError:
                problem = f"the SNMP poller did not stop within {timeout:g} s"
                self._run.cancel()
            except Exception as exc:  # the poller's own failure: reported in the record
                problem = repr(exc)[:200]
        await self._shutdown()
        return problem

    async def _shutdown(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if self._poller is not None:
            try:
                await asyncio.wait_for(asyncio.wrap_future(
                    asyncio.run_coroutine_threadsafe(self._poller.close(), loop)), 5)
            except Exception:  # closing must not mask what made us close
                log.debug("closing the SNMP poller failed", exc_info=True)
        loop.call_soon_threadsafe(loop.stop)
        await asyncio.to_thread(thread.join, 5)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = self._poller = self._run = None

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        if self._on_loop_error is not None and self._on_loop_error(context):
            return
        loop.default_exception_handler(context)
