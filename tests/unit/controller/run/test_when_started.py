"""controller.run.overlap.when_started: the runner's `traffic_started` hook (issue 28: a campaign
hands the previous run's figures to its worker once this run's clients run, never during its
set-up). Contract: the hook is called once, after every flow that starts at once has its
`client_started`; a flow with a start delay is not waited for; a client that never starts does
not hold it forever (the bound); a failing hook is returned as one line, never raised."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from controller.run.overlap import when_started


def _run(delay: float = 0.0, started: float | None = None):
    return SimpleNamespace(spec=SimpleNamespace(start_delay_s=delay), client_started=started)


def test_the_hook_waits_for_every_client_that_starts_at_once():
    a, b, late = _run(), _run(), _run(delay=30.0)
    seen: list[tuple] = []

    async def main():
        task = asyncio.ensure_future(when_started([a, b, late], lambda: seen.append((a.client_started,
                                                                                     b.client_started)), 60.0,
                                                  poll_s=0.001))
        await asyncio.sleep(0.01)
        a.client_started = 1.0
        await asyncio.sleep(0.01)
        assert seen == []                     # b has not started yet
        b.client_started = 2.0
        return await task
    assert asyncio.run(main()) is None
    assert seen == [(1.0, 2.0)]               # once, with both running; the delayed flow not waited for


def test_a_client_that_never_starts_does_not_hold_the_hook():
    seen: list[int] = []
    assert asyncio.run(when_started([_run()], lambda: seen.append(1), 0.05, poll_s=0.001)) is None
    assert seen == [1]


def test_runs_without_specs_or_start_times_are_bounded_too():
    seen: list[int] = []
    assert asyncio.run(when_started([object()], lambda: seen.append(1), 0.02, poll_s=0.001)) is None
    assert seen == [1]


def test_a_failing_hook_is_said_not_raised():
    def hook():
        raise RuntimeError("no worker")
    assert asyncio.run(when_started([_run(started=1.0)], hook, 1.0)) == "traffic_started hook: RuntimeError('no worker')"
