"""controller.run.restoring (issue 28): after the traffic a bridge is restored from the state
configure read back and verified, without reading it first; the proof stays the read-back against
the state before the run, and a bridge that does not come back that way (changed meanwhile, a
command refused) is read and restored again from what it holds. An endpoint is always read first
(the traffic changes an MPTCP client's endpoint table).

Bridges: the tc shaper on its test double (tests/support/fakes_linux.py). Endpoints: a plain
driver over a fake host whose whole configuration is one value (the control flow is what is
tested here; MptcpEndpointDriver's plans are tested on recorded output in tests/unit/nodes/)."""
from __future__ import annotations

import asyncio
import json

import pytest

from bridges.base import Direction, PipeConfig, apply, restore
from bridges.tc import TcShaper
from controller.commands import Command, CommandResult
from controller.inventory import load_inventory
from controller.run.restoring import FALLBACK, restore_bridge, restore_endpoint
from tests.support.fakes_linux import FakeLinuxBridge
from tests.support.shipped import ROOT, no_state_dir

P1F, P1R = ("path1", Direction.FORWARD), ("path1", Direction.REVERSE)


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def shaper():
    with no_state_dir():
        inv = load_inventory(ROOT / "inventory" / "virtual.yaml")
    return TcShaper(inv, "br1")


def _configured(shaper, desired):
    host = FakeLinuxBridge("br1", ["pa", "pb"])
    before, after = run(apply(shaper, host, desired))
    return host, before, after, len(host.log)


def _reads_before_first_change(host, start: int) -> int:
    n = 0
    for argv in host.log[start:]:
        if argv in host.mutations:
            break
        n += 1
    return n


def test_a_bridge_is_restored_from_configures_state_without_a_read_first(shaper):
    host, before, applied, start = _configured(shaper, {P1F: PipeConfig(bw_bps=20_000_000)})
    after, basis = run(restore_bridge(lambda now: restore(shaper, host, before, now), applied))
    assert basis == "configure" and after.pipes == before.pipes == {P1F: None, P1R: None}
    assert _reads_before_first_change(host, start) == 0          # no read before the restore's change
    assert host.log[-1][:3] == ("tc", "-j", "-s")                 # ... and read back after it
    assert [q["kind"] for q in json.loads(host.show("pa"))] == [q["kind"] for q in json.loads(host.show("pb"))] \
        == ["noqueue"]


def test_a_bridge_changed_meanwhile_is_read_and_restored_again(shaper):
    host, before, applied, start = _configured(shaper, {P1F: PipeConfig(bw_bps=20_000_000)})
    # Between configure and the restore, something shaped the port ctl left alone (path1 reverse).
    run(host.run(Command(("tc", "qdisc", "replace", "dev", "pa", "root", "handle", "1:", "tbf", "rate",
                          "8000000bit", "burst", "32768", "limit", "65536"), mutates=True)))
    after, basis = run(restore_bridge(lambda now: restore(shaper, host, before, now), applied))
    assert basis == FALLBACK and after.pipes == before.pipes
    assert ("tc", "qdisc", "del", "dev", "pa", "root") in host.mutations
    assert [q["kind"] for q in json.loads(host.show("pa"))] == ["noqueue"]


def test_without_configures_state_a_bridge_is_read_first(shaper):
    host, before, _applied, start = _configured(shaper, {P1F: PipeConfig(bw_bps=20_000_000)})
    after, basis = run(restore_bridge(lambda now: restore(shaper, host, before, now), None))
    assert basis == "read" and after.pipes == before.pipes
    assert _reads_before_first_change(host, start) == len(shaper.read_commands())


# ---- endpoints ---------------------------------------------------------------------------------

class _Host:
    """A host whose configuration is one string: `read` prints it, `set X` makes it X (a
    refusing host fails every `set` that does not restore `refuse_unless`)."""

    def __init__(self, config: str, refuse_unless: str | None = None):
        self.host, self.config, self.refuse_unless, self.log = "a1", config, refuse_unless, []

    async def run(self, command: Command) -> CommandResult:
        self.log.append(command.argv)
        if command.argv[0] == "read":
            return CommandResult(self.host, command.argv, 0, self.config, "")
        if self.refuse_unless is not None and command.argv[1] != self.refuse_unless:
            return CommandResult(self.host, command.argv, 1, "", "refused")
        self.config = command.argv[1]
        return CommandResult(self.host, command.argv, 0, "", "")


class _Driver:
    """plan_restore(before, now): `set before` when they differ (pure, as the drivers are)."""

    def read_commands(self):
        return [Command(("read",))]

    def parse_state(self, results):
        return results[0].stdout

    def plan_restore(self, before, now):
        return [Command(("set", before), mutates=True)] if now != before else []

    def restored_equal(self, before, after):
        return [] if before == after else [f"{after} is not {before}"]


def test_an_endpoint_is_read_first_then_restored_and_read_back():
    # An MPTCP client's endpoint table changes during the traffic (the kernel's implicit
    # endpoints): an endpoint is never restored from configure's state, always from a read.
    host = _Host("configured plus an implicit endpoint")
    after, diffs = run(restore_endpoint(_Driver(), host, "before"))
    assert (after, diffs) == ("before", []) and host.log == [("read",), ("set", "before"), ("read",)]


def test_an_endpoint_configure_did_not_change_is_proved_by_one_read():
    host = _Host("before")
    after, diffs = run(restore_endpoint(_Driver(), host, "before"))
    assert (after, diffs) == ("before", []) and host.log == [("read",)]


def test_an_endpoint_that_does_not_come_back_says_what_differs():
    class Sticky(_Host):       # answers the restore OK but changes nothing
        async def run(self, command):
            if command.argv[0] == "set":
                self.log.append(command.argv)
                return CommandResult(self.host, command.argv, 0, "", "")
            return await super().run(command)
    host = Sticky("something else")
    after, diffs = run(restore_endpoint(_Driver(), host, "before"))
    assert after == "something else" and diffs == ["something else is not before"]


def test_a_dry_run_plans_from_the_expected_state_and_reads_back():
    host = _Host("before")      # a dry run applied nothing: the host still reads as before
    after, diffs = run(restore_endpoint(_Driver(), host, "before", expected="configured"))
    assert (after, diffs) == ("before", []) and host.log == [("set", "before"), ("read",)]
