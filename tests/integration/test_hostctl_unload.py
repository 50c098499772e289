"""hostctl's unload on this kernel when sockets still run the program (nodes/congestion/hostctl.py).

A BPF congestion control is kernel-wide and shared by holders (racks, runs) through
/run/ctl-cc/holders.json. The kernel lets its struct_ops map be unregistered while sockets run
it: the name goes, the program stays until its last socket is released (and a second unregister
fails with EINPROGRESS). These tests put sockets of the algorithm in a named namespace of their
own (tests/support/cc_sockets.py: a finished run's sender still draining, or connections left
open, or the namespace's default) and check that

- a holder that is not the last leaves and never unregisters, whatever runs the program;
- the last holder unregisters only once the sockets are gone (it is still waiting when the test
  lets them go), and the kernel has freed the program by the time it answers;
- at its wait's limit it unregisters anyway and its warning names the namespace, the sockets'
  states and the namespace default that still run it; the program is freed with them;
- an entry whose program was unregistered already (a hostctl ended between unregistering and
  saving) is left cleanly instead of failing and keeping the hold.

Every test leaves nothing registered: the struct_ops ids it made are gone from `bpftool
struct_ops show` and tests/support/kernel_cc.py finds none of its holds left.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nodes.congestion import hostctl
from nodes.congestion.build import build
from nodes.congestion.catalog import ALGORITHMS
from tests.support.kernel_cc import assert_nothing_left, snapshot
from tests.support.tracepath import hostctl_call, ns, sh

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SOCKETS = str(ROOT / "tests" / "support" / "cc_sockets.py")
PFX = f"hu{os.getpid() % 100000}"
ALG = "wvegas"      # its trace build, wvegas_trace: never a run's name; lane A runs no other test meanwhile


def _ids() -> set[int]:
    return {i for _, i in hostctl._struct_ops_maps()}


def _available() -> list[str]:
    return Path(hostctl.AVAILABLE).read_text().split()


@pytest.fixture(scope="module")
def program(bpf_trace_dir):
    b = build(dest=bpf_trace_dir, trace=True)
    return ALGORITHMS[ALG].trace_name, b.sha256_of(ALG), str(b.object_of(ALG))


@pytest.fixture
def netns():
    """Two namespaces of the test's own (lo up); deleted afterwards, with whatever sockets are left."""
    names = [f"{PFX}x", f"{PFX}y"]
    for n in names:
        sh("ip", "netns", "add", n)
        ns(n, "ip", "link", "set", "lo", "up")
    try:
        yield names
    finally:
        for n in names:
            sh("ip", "netns", "del", n, check=False)


_registered_by_test: set[int] = set()     # struct_ops ids this module's loads registered


@pytest.fixture
def holders(program):
    """The test's holder ids; afterwards none is left holding anything, the kernel's lists are as
    the holders explain (kernel_cc), and no struct_ops map the test registered is in the kernel."""
    before = snapshot()
    mine = [f"test:{os.getpid()}:{x}" for x in ("a", "b")]
    yield mine
    for h in mine:
        hostctl_call("unload", program[0], h, "0")
    deadline = time.monotonic() + 30
    while _ids() & _registered_by_test and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _ids() & _registered_by_test, "a program the test registered is still in the kernel"
    assert_nothing_left(before, set(mine))


def _load(program, holder: str) -> dict:
    name, sha, obj = program
    d = hostctl_call("load", name, sha, obj, holder)
    assert d.get("ok"), d
    if d.get("action") == "registered":
        _registered_by_test.add(d["id"])
    return d


class Sockets:
    """tests/support/cc_sockets.py in a namespace: N connections running `cc`, until release()."""

    def __init__(self, netns: str, cc: str, n: int, mode: str) -> None:
        self.p = subprocess.Popen(["ip", "netns", "exec", netns, sys.executable, SOCKETS, cc, str(n), mode],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.p.stdout.readline().strip() == "ready"

    def release(self) -> None:
        if self.p.poll() is None:
            self.p.stdin.write("go\n")
            self.p.stdin.flush()
            assert self.p.stdout.readline().strip() == "closed"
            self.p.wait(timeout=60)


def _unload_bg(name: str, holder: str, wait_s: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, hostctl.__file__, "unload", name, holder, wait_s],
                            stdout=subprocess.PIPE, text=True)


def _answer(p: subprocess.Popen) -> dict:
    out, _ = p.communicate(timeout=300)
    return json.loads(out.strip().splitlines()[-1])


def test_the_last_holder_unregisters_only_after_another_racks_closing_sockets_are_gone(program, netns, holders):
    name = program[0]
    a, b = holders
    first = _load(program, a)
    assert first["action"] == "registered", first
    assert _load(program, b)["action"] == "shared"
    socks = Sockets(netns[0], name, 3, "closing")       # b's run: its senders exited, data still queued
    try:
        assert sum(hostctl._users(name).get(f"netns {netns[0]}", {}).values()) == 3
        # b is not the last: it leaves, and nothing is unregistered although its sockets are gone from it
        left = hostctl_call("unload", name, b)
        assert left["action"] == "left" and left["holders"] == [a], left
        assert name in _available() and first["id"] in _ids()
        # a is the last: it waits for b's sockets (up to 120 s here), so it is still waiting when they go
        pending = _unload_bg(name, a, "120")
        time.sleep(2)
        assert pending.poll() is None, _answer(pending)
        assert name in _available(), "unregistered while sockets still ran it"
        socks.release()
        done = _answer(pending)
    finally:
        socks.release()
    assert done["action"] == "unregistered", done
    assert done["in_use"] == {} and done["lingering"] is False and "warning" not in done, done
    assert done["waited_s"] > 0, done
    assert first["id"] not in _ids(), "the kernel still keeps the program after the answer"
    assert name not in _available()


def test_at_the_limit_the_last_holder_unregisters_and_names_what_still_runs_it(program, netns, holders):
    name = program[0]
    a = holders[0]
    first = _load(program, a)
    assert first["action"] == "registered", first
    socks = Sockets(netns[0], name, 2, "open")      # the senders run it (the accepted sockets: the listener's cubic)
    # the other namespace's default: every new socket there would get it (and it holds the program)
    default = ns(netns[1], "sysctl", "-n", "net.ipv4.tcp_congestion_control").stdout.strip()
    ns(netns[1], "sysctl", "-q", "-w", f"net.ipv4.tcp_congestion_control={name}")
    try:
        done = hostctl_call("unload", name, a, "1")
        assert done["action"] == "unregistered", done
        assert done["in_use"] == {f"netns {netns[0]}": {"ESTAB": 2}, f"netns {netns[1]}": {"default": 1}}, done
        assert done["lingering"] is True, done
        w = done["warning"]
        assert f"{name} is still run by 2 sockets and 1 namespace default" in w, w
        assert f"netns {netns[0]}: ESTAB 2" in w and f"netns {netns[1]}: default congestion control" in w, w
        assert "unregistered anyway" in w and f"program id {first['id']}" in w, w
        assert name not in _available()             # no new socket can select it
        assert first["id"] in _ids()                # the kernel keeps it for its sockets
    finally:
        socks.release()
        ns(netns[1], "sysctl", "-q", "-w", f"net.ipv4.tcp_congestion_control={default}")
    deadline = time.monotonic() + 30
    while first["id"] in _ids() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert first["id"] not in _ids(), "the program outlived its last socket"


def test_an_entry_whose_program_was_unregistered_already_is_left_cleanly(program, netns, holders):
    """A hostctl ended between unregistering and saving leaves an entry whose program the kernel
    keeps for its sockets; a second unregister fails (EINPROGRESS). The hold is released anyway."""
    name = program[0]
    a = holders[0]
    first = _load(program, a)
    socks = Sockets(netns[0], name, 1, "open")
    try:
        sh("bpftool", "struct_ops", "unregister", "id", str(first["id"]))
        again = sh("bpftool", "struct_ops", "unregister", "id", str(first["id"]), check=False)
        assert again.returncode != 0 and "in progress" in (again.stderr + again.stdout), again
        done = hostctl_call("unload", name, a, "0")
        assert done["ok"] and done["action"] == "unregistered", done
        assert f"id {first['id']} was unregistered already" in done["warning"], done
        assert name not in json.loads(Path(hostctl.HOLDERS).read_text())
    finally:
        socks.release()
