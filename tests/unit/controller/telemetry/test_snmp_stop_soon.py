"""TelemetryHub.stop_snmp_soon (issue 28): at the traffic's end the run ends the SNMP rounds at
once, beside what follows; stop() waits for that same stop (never a second one) and records a
problem it reported, as it does when it stops the poller itself."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from controller.telemetry.hosts import TelemetryHub


class _Poller:
    def __init__(self, problem=None):
        self.calls, self.problem, self.gate = 0, problem, asyncio.Event()

    async def stop(self, timeout):
        self.calls += 1
        await self.gate.wait()
        return self.problem


def _hub(tmp_path) -> TelemetryHub:
    record = SimpleNamespace(dir=tmp_path, manifest={"telemetry": {}})
    return TelemetryHub(None, record, {}, {}, None, {})


def test_the_poller_is_stopped_once_beginning_at_the_traffics_end(tmp_path):
    async def main():
        hub = _hub(tmp_path)
        hub.snmp = poller = _Poller()
        hub.stop_snmp_soon()
        await asyncio.sleep(0)
        assert poller.calls == 1              # under way while the run collects and stops its streams
        hub.stop_snmp_soon()                  # a second call starts nothing more
        stopping = asyncio.ensure_future(hub.stop())
        await asyncio.sleep(0.01)
        assert not stopping.done()            # stop() waits for the poller's end
        poller.gate.set()
        await stopping
        return hub, poller
    hub, poller = asyncio.run(main())
    assert poller.calls == 1 and hub.snmp is None and hub.snmp_events == []


def test_stop_alone_stops_the_poller_and_keeps_its_problem(tmp_path):
    async def main():
        hub = _hub(tmp_path)
        hub.snmp = poller = _Poller("the SNMP poller did not stop within 10 s")
        poller.gate.set()
        await hub.stop()
        return hub, poller
    hub, poller = asyncio.run(main())
    assert poller.calls == 1
    assert hub.snmp_events == [{"kind": "poller_stopped", "message": "the SNMP poller did not stop within 10 s"}]


def test_without_a_poller_nothing_happens(tmp_path):
    async def main():
        hub = _hub(tmp_path)
        hub.stop_snmp_soon()
        await hub.stop()
        return hub
    hub = asyncio.run(main())
    assert hub.snmp is None and hub.snmp_events == []
