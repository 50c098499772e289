"""The live view of a run's traffic: what a terminal shows about once a second while it runs.

`LiveFeed` turns what the run already has (the telemetry hub's points, the traffic runner's
own progress) into a `LiveStatus`: pure data, drawn by the command line (controller/cli/
console.py) and never printed here. No remote command is added for it.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Callable

from controller.inventory import Inventory
from controller.scenarios.base import RunPlan
from controller.telemetry.live import LinkRate, LiveRates
from controller.traffic.progress import TrafficProgress, Unit, timed_progress
from controller.units import counted

LIVE_INTERVAL_S = 1.0
MAX_FLOW_LINES = 8     # the block stays a few lines high whatever the number of flows


@dataclass(frozen=True)
class FlowLine:
    name: str
    state: str
    rate_bps: float | None
    detail: str = ""


@dataclass(frozen=True)
class LiveStatus:
    run_id: str
    traffic: TrafficProgress
    flows: tuple[FlowLine, ...]
    more_flows: int                 # flows of interest not shown (over MAX_FLOW_LINES)
    links: tuple[LinkRate, ...]


LiveSink = Callable[[LiveStatus | None], None]   # None: traffic is over, take the block away


def shown_units(units: tuple[Unit, ...]) -> list[Unit]:
    """The units worth a line: the running ones; when none runs, all of a small set (a few
    concurrent flows), else none (the header counts them)."""
    running = [u for u in units if u.state == "running"]
    if running:
        return running
    return list(units) if len(units) <= MAX_FLOW_LINES else []


class LiveFeed:
    """Reads the run's points as they accumulate and the traffic runner's progress."""

    def __init__(self, run_id: str, inv: Inventory, plan: RunPlan, traffic: Any, points: list):
        self.run_id = run_id
        self.plan = plan
        self.traffic = traffic
        self.points = points            # the telemetry hub's list, appended to as points arrive
        self._seen = 0
        links = {}
        for (link, _d) in plan.links:
            l = inv.links[link]
            links[link] = (l.bridge, l.a_port, l.b_port)
        self.rates = LiveRates({f.name: f.client for f in plan.flows}, links)

    def status(self, now: float | None = None) -> LiveStatus:
        now = time.time() if now is None else now
        new = self.points[self._seen:]
        self._seen += len(new)
        self.rates.add(new)
        prog = self._progress(now)
        now_ns = int(now * 1e9)
        units = shown_units(prog.units)
        lines = tuple(FlowLine(u.name, u.state, self.rates.flow_bps(u.flow or u.name, now_ns)
                               if u.state == "running" else None, u.detail)
                      for u in units[:MAX_FLOW_LINES])
        return LiveStatus(self.run_id, prog, lines, max(0, len(units) - MAX_FLOW_LINES),
                          tuple(self.rates.link_rates(now_ns)))

    def _progress(self, now: float) -> TrafficProgress:
        progress = getattr(self.traffic, "progress", None)
        if progress is not None:
            return progress(now)
        # A traffic runner without its own progress: the plan's length, its flows as running.
        units = [Unit(f.name, "running", f.name) for f in self.plan.flows]
        return timed_progress(counted(len(units), "flow"), units, 0.0, self.plan.duration_s)


def start_view(feed: LiveFeed, sink: "LiveSink", errors: list) -> "asyncio.Task":
    """`sink(feed.status())` about once a second until stop_view: a display must never end a run,
    so a failing sink stops the block (said in `errors`, the record's) and the run goes on."""
    async def loop() -> None:
        while True:
            try:
                sink(feed.status())
            except Exception as exc:
                errors.append({"t": time.time(), "error": f"live view: {exc!r}"[:300]})
                return
            await asyncio.sleep(LIVE_INTERVAL_S)
    return asyncio.ensure_future(loop())


async def stop_view(view: "asyncio.Task | None", sink: "LiveSink | None") -> None:
    """The block ended (`sink(None)`), whatever it raised."""
    if view is None:
        return
    view.cancel()
    try:
        await view
    except (asyncio.CancelledError, Exception):
        pass
    try:
        assert sink is not None
        sink(None)
    except Exception:
        pass
