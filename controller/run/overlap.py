"""What a run does beside the rack's critical path (issue 28): concurrent steps that all end
before an error is raised, the slow libraries imported while the traffic runs (the summary and
figures computed while the hosts are restored: controller.run.late). Pure of the rack."""
from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Callable, Iterable


def import_influx() -> None:
    import influxdb_client.client.write_api  # noqa: F401


def import_snmp() -> None:
    import pysnmp.hlapi.v3arch.asyncio  # noqa: F401


def preload_snmp() -> threading.Thread:
    """pysnmp (about 0.2-0.3 s to import), needed when the samplers start: imported in a thread
    while the run reads its hosts, so the event loop (and every host's sampler start) does not
    stop for it. A failure is ignored here: the poller imports it itself and reports there."""
    return _in_background("ctl-preload-snmp", import_snmp)


def preload_libraries(influx: bool) -> threading.Thread:
    """Import the slow libraries a run needs after its traffic (influxdb-client, matplotlib for
    the figures: about a second together) in a thread while the traffic runs, instead of on the
    rack's path. A failure here is ignored: the code that needs a library imports it itself and
    reports there."""
    def work() -> None:
        if influx:
            import_influx()
        from controller.plots import pyplot
        pyplot()
    return _in_background("ctl-preload", work)


def _in_background(name: str, work: Callable[[], Any]) -> threading.Thread:
    """`work` in a daemon thread, any failure ignored (the code that needs what it imports
    imports it again and reports there)."""
    def run() -> None:
        try:
            work()
        except Exception:
            pass
    t = threading.Thread(target=run, name=name, daemon=True)
    t.start()
    return t


async def together(*aws: Any) -> list[Any]:
    """Await all of `aws` concurrently; when one fails, the others still run to their end before
    its exception is raised, so clean-up never races a process still being started."""
    results = await asyncio.gather(*aws, return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results


async def when_started(runs: Iterable[Any], hook: Callable[[], None], wait_s: float, poll_s: float = 0.02) -> str | None:
    """`hook()` once every run (a traffic runner's flow or unit) that starts at once has its
    `client_started` time, at most `wait_s` from now (a flow with a start delay is not waited
    for). Returns what went wrong with the hook (one line), or None."""
    runs = [r for r in runs if not getattr(getattr(r, "spec", None), "start_delay_s", 0)]
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and not all(getattr(r, "client_started", None) for r in runs):
        await asyncio.sleep(poll_s)
    try:
        hook()
    except Exception as exc:
        return f"traffic_started hook: {exc!r}"[:300]
    return None
