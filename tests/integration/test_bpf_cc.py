"""The BPF congestion controls on this kernel, checked against their reference model.

A test build of every algorithm (-DCTL_TRACE: registered as `<name>_trace`, so it never meets
a real run's algorithm on this shared kernel) records each window decision in a map. Real
MPTCP traffic (mptcpize iperf3, one subflow per path) crosses two shaped paths between three
namespaces of this test's own; afterwards every recorded decision is replayed through
nodes/congestion/model.py and must agree exactly, the decisions must have been coupled (two
subflows in one view), and nothing may stay registered.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from nodes.congestion import hostctl
from nodes.congestion.build import build
from nodes.congestion.catalog import ALGORITHMS
from nodes.congestion.model import check_trace, decode_trace_record

pytestmark = pytest.mark.integration

HOSTCTL = [sys.executable, hostctl.__file__]
PFX = f"cc{os.getpid() % 100000}"
A, R, B = f"{PFX}a", f"{PFX}r", f"{PFX}b"
HOLDER = f"test:{os.getpid()}"


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(list(argv), capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"{argv}: {p.stderr or p.stdout}")
    return p


def ns(name: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return sh("ip", "netns", "exec", name, *argv, check=check)


@pytest.fixture(scope="module")
def paths():
    """a -- r -- b, two paths bridged in r: 20 and 10 Mbit/s token buckets with 30 kB queues
    towards b (losses and queueing delay, so every branch of every algorithm runs)."""
    for n in (A, R, B):
        sh("ip", "netns", "add", n)
        ns(n, "ip", "link", "set", "lo", "up")
    try:
        for i, rate in ((1, "20mbit"), (2, "10mbit")):
            sh("ip", "link", "add", f"va{i}", "netns", A, "type", "veth", "peer", "name", f"ra{i}", "netns", R)
            sh("ip", "link", "add", f"vb{i}", "netns", B, "type", "veth", "peer", "name", f"rb{i}", "netns", R)
            ns(R, "ip", "link", "add", f"br{i}", "type", "bridge")
            for port in (f"ra{i}", f"rb{i}"):
                ns(R, "ip", "link", "set", port, "master", f"br{i}")
                ns(R, "ip", "link", "set", port, "up")
            ns(R, "ip", "link", "set", f"br{i}", "up")
            ns(A, "ip", "addr", "add", f"10.93.{i}.1/24", "dev", f"va{i}")
            ns(B, "ip", "addr", "add", f"10.93.{i}.2/24", "dev", f"vb{i}")
            ns(A, "ip", "link", "set", f"va{i}", "up")
            ns(B, "ip", "link", "set", f"vb{i}", "up")
            for n, dev in ((A, f"va{i}"), (B, f"vb{i}"), (R, f"ra{i}"), (R, f"rb{i}")):
                ns(n, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", check=False)
            ns(R, "tc", "qdisc", "add", "dev", f"rb{i}", "root", "tbf", "rate", rate, "burst", "4kb", "limit", "30kb")
        for n in (A, B):
            ns(n, "sysctl", "-q", "net.mptcp.enabled=1")
            ns(n, "ip", "mptcp", "limits", "set", "subflows", "2", "add_addr_accepted", "2")
        ns(B, "ip", "mptcp", "endpoint", "add", "10.93.2.2", "dev", "vb2", "signal")
        yield
    finally:
        for n in (A, R, B):
            sh("ip", "netns", "del", n, check=False)


@pytest.fixture(scope="module")
def objects(tmp_path_factory):
    return build(dest=tmp_path_factory.mktemp("cc-build"), trace=True)


def _maps_named(name: str) -> list[int]:
    maps = json.loads(sh("bpftool", "-j", "map", "show").stdout)
    return sorted(m["id"] for m in maps if m.get("name") == name)


def _dump(map_id: int) -> list[bytes]:
    doc = json.loads(sh("bpftool", "-j", "map", "dump", "id", str(map_id)).stdout)
    return [bytes(int(x, 16) for x in e["value"]) for e in doc]


def _hostctl(*args: str) -> dict:
    p = subprocess.run(HOSTCTL + list(args), capture_output=True, text=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_the_program_decides_as_its_model_on_real_traffic(algorithm, paths, objects):
    name = f"{algorithm}_trace"
    loaded = _hostctl("load", name, objects.sha256_of(algorithm), str(objects.object_of(algorithm)), HOLDER)
    assert loaded["ok"] and loaded["action"] == "registered", loaded
    try:
        trace_map = _maps_named(f"{algorithm}_trace")[-1]       # the one just created with it
        server = subprocess.Popen(["ip", "netns", "exec", B, "mptcpize", "run", "iperf3", "-s", "-1", "-p", "5301"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            client = ns(A, "mptcpize", "run", "iperf3", "-c", "10.93.1.2", "-p", "5301", "-t", "6", "-C", name, "-J")
        finally:
            server.wait(timeout=15)
        result = json.loads(client.stdout)
        assert result["end"]["sum_received"]["bytes"] > 0
        records = [r for r in (decode_trace_record(b) for b in _dump(trace_map)) if r is not None]
    finally:
        left = _hostctl("unload", name, HOLDER)
    assert left["ok"] and left["action"] == "unregistered", left
    replayed, bad = check_trace(algorithm, records)
    assert replayed >= 20, f"{algorithm}: only {replayed} decisions recorded ({len(records)} records)"
    assert bad == [], f"{algorithm}: {len(bad)} of {replayed} decisions differ from the model; first: {bad[0]}"
    coupled = [r for r in records if r.view.n == 2]
    assert coupled, f"{algorithm}: no decision saw both subflows of the connection"
    # one connection's subflows: two slots of one entry, both with this connection's state
    assert all(len(set(r.view.rtt)) >= 1 for r in coupled)


def test_nothing_stays_registered(paths, objects):
    available = open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split()
    assert not [a for a in available if a.endswith("_trace")]
    holders = _hostctl("probe")["holders"]
    assert not [n for n, e in holders.items() if HOLDER in e.get("holders", [])]


def test_builds_are_reproducible(tmp_path):
    """The same sources for the same BTF give the same objects wherever they are built (another
    state dir, another working directory): records name an object sha256 anyone can rebuild,
    and two racks on one kernel share one registered program instead of refusing each other."""
    from nodes.congestion.build import LOCAL_BTF
    here = build(LOCAL_BTF, tmp_path / "one")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        there = build(LOCAL_BTF, tmp_path / "elsewhere" / "two")
    finally:
        os.chdir(cwd)
    assert here.directory != there.directory
    assert {n: here.sha256_of(n) for n in ALGORITHMS} == {n: there.sha256_of(n) for n in ALGORITHMS}
