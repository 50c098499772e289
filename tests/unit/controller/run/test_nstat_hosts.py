"""Which hosts' kernel counters a run reads (controller/run/runner.py Run._nstat).

Contract: `nstat -asz` before and after traffic on the MPTCP hosts and on every client and
server of the flows, all hosts at once (the run's control overhead grows by no round trip per
host); the MPTCP hosts' readings are required (check=True), a sender's or receiver's that
fails is left out.

The sessions below are fakes of an SSH session (a plain class with `run`), so the test needs
no rack: each answers only once every host has asked, which a host-by-host loop never reaches.
"""
from __future__ import annotations

import asyncio

import pytest

from controller import scenarios
from controller.commands import CommandResult
from controller.inventory import load_inventory
from controller.results.records import RunRecord
from controller.run.replay import counter_hosts
from controller.run.runner import Run
from tests.support.shipped import VIRTUAL, no_state_dir

NSTAT = "#kernel\nTcpRetransSegs                  7                  0.0\n"


class AllAtOnce:
    """Answers the n-th caller only when all n are waiting (2 s at most: then it fails)."""

    def __init__(self, n: int):
        self.n, self.waiting, self.released = n, 0, asyncio.Event()

    async def wait(self) -> None:
        self.waiting += 1
        if self.waiting == self.n:
            self.released.set()
        await asyncio.wait_for(self.released.wait(), 2)


class Session:
    def __init__(self, host: str, gate: AllAtOnce, calls: list, fail: bool = False):
        self.host, self.gate, self.calls, self.fail = host, gate, calls, fail

    async def run(self, command):
        self.calls.append((self.host, command.argv, command.check))
        await self.gate.wait()
        return CommandResult(self.host, command.argv, 1 if self.fail else 0, "" if self.fail else NSTAT, "")


@pytest.fixture()
def run(tmp_path):
    with no_state_dir():
        inv = load_inventory(VIRTUAL)
        sc = scenarios.get("shared-bottleneck")
        params, given = sc.parse_args(["--delay", "100ms"])
        plan = sc.plan(params, inv)
        return Run(sc, params, given, inv, plan, RunRecord(tmp_path, "r"), dry_run=True)


def test_every_flow_host_at_once(run):
    assert counter_hosts(run.plan) == {"sa1", "sa2", "sb1", "sb2"}
    calls: list = []
    gate = AllAtOnce(4)
    run.sessions = {h: Session(h, gate, calls) for h in run.sessions}

    async def both():
        await run._nstat("before")
        gate.waiting, gate.released = 0, asyncio.Event()
        await run._nstat("after")
    asyncio.run(both())
    assert sorted(calls) == sorted([(h, ("nstat", "-asz"), h in ("sa1", "sb1"))
                                    for h in ("sa1", "sa2", "sb1", "sb2")] * 2)
    assert run.nstat == {h: [NSTAT, NSTAT] for h in ("sa1", "sa2", "sb1", "sb2")}
    assert set(run.run_data().nstat) == {"sa1", "sa2", "sb1", "sb2"}


def test_a_sender_without_nstat_is_left_out(run):
    calls: list = []
    gate = AllAtOnce(4)
    run.sessions = {h: Session(h, gate, calls, fail=(h == "sa2")) for h in run.sessions}
    asyncio.run(run._nstat("before"))
    assert set(run.nstat) == {"sa1", "sb1", "sb2"}


class BatchSession(Session):
    """A session that also runs a batch (one round trip for several commands, as controller.ssh)."""

    def __init__(self, host: str, gate: AllAtOnce, calls: list, texts: list[str] | None = None):
        super().__init__(host, gate, calls)
        self.texts = texts

    async def run(self, command):
        r = await super().run(command)
        if self.texts:
            r.stdout = self.texts.pop(0)
        return r

    async def run_batch(self, commands):
        self.calls.append((self.host, "batch", tuple(c.argv for c in commands)))
        await self.gate.wait()
        return [CommandResult(self.host, c.argv, 0, "" if c.argv[0] == "ss" else NSTAT, "") for c in commands]


def test_the_look_for_leftovers_rides_in_the_counters_round_trip(run):
    """Issue 28: on the hosts the leftover wait polls, `ss` goes first in the batch that reads the
    counters before traffic (no round trip of its own); its results come back by host."""
    from controller.run.drain import ARGV
    calls: list = []
    gate = AllAtOnce(4)
    run.sessions = {h: BatchSession(h, gate, calls) for h in run.sessions}
    looked = asyncio.run(run._nstat("before", ["sa1", "sb1"]))
    assert {h: r.argv for h, r in looked.items()} == {"sa1": ARGV, "sb1": ARGV}
    assert sorted(calls) == sorted([(h, "batch", (ARGV, ("nstat", "-asz"))) for h in ("sa1", "sb1")]
                                   + [(h, ("nstat", "-asz"), False) for h in ("sa2", "sb2")])
    assert run.nstat == {h: [NSTAT] for h in ("sa1", "sa2", "sb1", "sb2")}


def test_counters_read_again_before_traffic_replace_the_earlier_ones(run):
    """After a wait for leftover connections the counters before traffic are read again: the run's
    counter deltas are from the second reading, not from before the wait."""
    calls: list = []
    texts = {h: [f"first {h}", f"second {h}", f"after {h}"] for h in run.sessions}
    gate = AllAtOnce(4)
    run.sessions = {h: BatchSession(h, gate, calls, texts[h]) for h in run.sessions}

    async def three():
        for when in ("before", "before", "after"):
            gate.waiting, gate.released = 0, asyncio.Event()
            await run._nstat(when)
    asyncio.run(three())
    assert run.nstat == {h: [f"second {h}", f"after {h}"] for h in ("sa1", "sa2", "sb1", "sb2")}
    assert run.run_data().nstat["sa1"] == ("second sa1", "after sa1")


def test_a_failed_reading_on_an_mptcp_host_is_said_and_never_parsed_as_counters(run):
    """A required (MPTCP) host whose `nstat` times out: its empty output is not kept as a reading
    (it used to be, and the summary then failed on "nstat: no counters in input"); the run says
    which host and why, and the verdict's "no MPTcpExt counters recorded" follows."""
    said: list[str] = []
    run.progress = said.append
    calls: list = []

    class TimesOut(Session):
        async def run(self, command):
            r = await super().run(command)
            if self.host == "sa1":
                r.exit_status, r.stdout = None, ""
            return r

    for when in ("before", "after"):
        gate = AllAtOnce(4)
        run.sessions = {h: TimesOut(h, gate, calls) for h in run.sessions}
        asyncio.run(run._nstat(when))
    assert set(run.nstat) == {"sa2", "sb1", "sb2"}
    assert "sa1" not in run.run_data().nstat
    assert said == [f"warning: sa1: `nstat -asz` (counters {w} the traffic) failed (timed out): its MPTCP "
                    f"counters are not recorded" for w in ("before", "after")]
