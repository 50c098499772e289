"""The wait before a run's traffic for connections left from before it (controller/run/drain.py).

Contract: the plan's clients and servers are polled on their data addresses only (never the
management address of ctl's SSH); sockets that may still carry data count, TIME-WAIT and
FIN-WAIT-2 do not; the wait is bounded by max(60 s, 10 round trips of the plan's longest path)
and ends as soon as nothing is left; what it found and how long it waited go into the record.
The wait loop is run against the real `ss` of this machine and a real loopback connection whose
reader never reads (its send queue stays full), on its own address 127.0.0.77.
"""
from __future__ import annotations

import asyncio
import socket
import time

import pytest

from controller.commands import CommandResult
from controller.errors import ParseError
from controller.run.drain import LIMIT_S, leftovers, plan_hosts, plan_limit_s, wait_until_drained

SS = """ESTAB      0      4194304 10.11.0.11:59741  10.11.0.21:5201
FIN-WAIT-1 0      1048576 10.11.0.11:59742  10.11.0.21:5201
TIME-WAIT  0      0       10.11.0.11:59743  10.11.0.21:5201
FIN-WAIT-2 0      0       10.11.0.11:59744  10.11.0.21:5201
ESTAB      0      0       10.250.0.11:22    10.250.0.1:48812
CLOSE-WAIT 1      0       [::ffff:10.11.0.11]:5201 [::ffff:10.11.0.30]:40000
"""


def test_leftovers_are_live_sockets_on_data_addresses():
    got = leftovers(SS, frozenset({"10.11.0.11"}))
    assert [(c["state"], c["local"], c["send_q_bytes"]) for c in got] == [
        ("ESTAB", "10.11.0.11:59741", 4194304), ("FIN-WAIT-1", "10.11.0.11:59742", 1048576),
        ("CLOSE-WAIT", "10.11.0.11:5201", 0)]
    assert got[0]["peer"] == "10.11.0.21:5201"
    assert leftovers("", frozenset({"10.11.0.11"})) == []


def test_output_that_is_not_ss_is_a_parse_error():
    with pytest.raises(ParseError):
        leftovers("ESTAB x y 1.2.3.4:5 6.7.8.9:10\n", frozenset({"1.2.3.4"}))


def test_plan_hosts_and_limit(invs):
    from controller import scenarios
    inventory = invs["virtual"]
    sc = scenarios.get("shared-bottleneck")
    params, _ = sc.parse_args(["--delay", "800ms"])
    plan = sc.plan(params, inventory)
    hosts = plan_hosts(inventory, plan)
    assert set(hosts) == {f.client for f in plan.flows} | {f.server for f in plan.flows}
    for h, addrs in hosts.items():
        assert addrs and str(inventory.hosts[h].mgmt.address).split("/")[0] not in addrs
    one_way = sum(c.delay_us for c in plan.links.values()) / 1e6
    assert plan_limit_s(plan) == max(LIMIT_S, 20 * one_way)


class LocalSession:
    """Runs the command on this machine (the real ss)."""

    async def run(self, cmd):
        p = await asyncio.create_subprocess_exec(*cmd.argv, stdout=asyncio.subprocess.PIPE,
                                                 stderr=asyncio.subprocess.PIPE)
        out, err = await p.communicate()
        return CommandResult("local", cmd.argv, p.returncode, out.decode(), err.decode())


ADDR = "127.0.0.77"


def _stuck_connection():
    """A connection from ADDR whose peer never reads: its send queue stays full."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    cli = socket.socket()
    cli.bind((ADDR, 0))
    cli.connect(srv.getsockname())
    peer, _ = srv.accept()
    cli.setblocking(False)
    try:
        while True:
            cli.send(b"x" * 65536)
    except BlockingIOError:
        pass
    return srv, cli, peer


def test_waits_until_the_connection_is_gone_and_records_it():
    srv, cli, peer = _stuck_connection()
    msgs: list[str] = []

    async def main():
        async def drain_later():
            await asyncio.sleep(1.5)
            cli.close()
            peer.setblocking(False)
            while True:          # the reader reads it all: the closed sender's data drains
                try:
                    if not peer.recv(1 << 20):
                        break
                except BlockingIOError:
                    await asyncio.sleep(0.01)
            peer.close()
        task = asyncio.ensure_future(drain_later())
        res = await wait_until_drained({"h": frozenset({ADDR})}, 20.0, {"h": LocalSession()}, msgs.append)
        await task
        return res
    try:
        t = time.monotonic()
        res = asyncio.run(main())
        assert time.monotonic() - t < 15
    finally:
        srv.close()
        cli.close()
        peer.close()
    assert res["outcome"] == "drained" and res["polls"] >= 2 and res["errors"] == {} and res["left"] == {}
    [c] = res["first"]["h"]
    assert c["local"].startswith(ADDR + ":") and c["state"] == "ESTAB" and c["send_q_bytes"] > 0
    assert 1.0 <= res["waited_s"] < 15
    assert msgs[0].startswith("waiting up to 20 s for connections left from before the run: h: " + ADDR)
    assert msgs[-1].startswith("connections left from before the run: gone after")


def test_at_the_limit_it_goes_on_and_says_what_is_left():
    srv, cli, peer = _stuck_connection()
    try:
        res = asyncio.run(wait_until_drained({"h": frozenset({ADDR})}, 1.5, {"h": LocalSession()}))
    finally:
        for s in (srv, cli, peer):
            s.close()
    assert res["outcome"].startswith("still there at the limit") and res["left"]["h"][0]["send_q_bytes"] > 0
    assert 1.5 <= res["waited_s"] < 5


def test_nothing_left_is_one_poll():
    res = asyncio.run(wait_until_drained({"h": frozenset({"127.0.0.78"})}, 60.0, {"h": LocalSession()}))
    assert (res["outcome"], res["polls"], res["first"]) == ("none", 1, {}) and res["waited_s"] < 5


class Counting(LocalSession):
    def __init__(self):
        self.calls = 0

    async def run(self, cmd):
        self.calls += 1
        return await super().run(cmd)


def _looked(text: str) -> CommandResult:
    from controller.run.drain import poll_command
    return CommandResult("h", poll_command().argv, 0, text, "")


def test_a_first_look_already_read_is_not_asked_again():
    """Issue 28: the runner reads the first `ss` in the counters' round trip and hands it in: with
    nothing left, the wait asks no host at all; the hosts it was not given are polled as before."""
    h, other = Counting(), Counting()
    res = asyncio.run(wait_until_drained({"h": frozenset({"10.11.0.11"}), "o": frozenset({"127.0.0.78"})}, 60.0,
                                         {"h": h, "o": other}, first_results={"h": _looked("")}))
    assert (res["outcome"], res["polls"], res["first"]) == ("none", 1, {})
    assert (h.calls, other.calls) == (0, 1)


def test_a_leftover_in_the_first_look_is_waited_for_from_when_it_was_read():
    """The first look found a connection: the wait polls the host itself from then on (here it is
    gone at the second poll), and the time waited counts from when the first look was read."""
    h = Counting()
    now = [100.0]
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s
    res = asyncio.run(wait_until_drained({"h": frozenset({"10.11.0.11"})}, 60.0, {"h": h},
                                         first_results={"h": _looked(SS)}, started=99.5,
                                         clock=lambda: now[0], sleep=sleep))
    assert res["outcome"] == "drained" and res["polls"] == 2 and h.calls == 1 and slept == [1.0]
    assert [c["local"] for c in res["first"]["h"]] == ["10.11.0.11:59741", "10.11.0.11:59742", "10.11.0.11:5201"]
    assert res["waited_s"] == 1.5


def test_a_first_look_that_failed_is_an_error_not_a_wait():
    res = asyncio.run(wait_until_drained({"h": frozenset({"10.11.0.11"})}, 60.0, {"h": Counting()},
                                         first_results={"h": CommandResult("h", ("ss",), 1, "", "no ss")}))
    assert res["outcome"] == "none" and res["errors"] == {"h": "ss exited 1"} and res["polls"] == 1
