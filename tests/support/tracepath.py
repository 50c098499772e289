"""One path a -- r -- b for the trace tests of a BPF congestion control on plain TCP
(tests/integration/test_bbr3.py, test_bbr3_ecn.py): three namespaces of the test's own, one veth
pair on each side (offloads off, so the forwarder sees wire-size frames), the dnpipe forwarder
in r, and a bulk TCP transfer a -> b under the trace build, whose calls come back decoded.

The namespaces are the test's and go with it (close()); a sysctl set in one of them (the
sender's net.ipv4.tcp_ecn) goes with it too. The trace build is loaded and unloaded through
nodes/congestion/hostctl.py under the test's own holder, as a real run does.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from nodes.congestion import hostctl
from tests.support.bpfmap import read_trace

ROOT = Path(__file__).resolve().parents[2]
HOSTCTL = [sys.executable, hostctl.__file__]
BULK = str(ROOT / "tests" / "support" / "mptcp_bulk.py")
TRACE_LIMIT = 32768


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(list(argv), capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"{argv}: {p.stderr or p.stdout}")
    return p


def ns(name: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return sh("ip", "netns", "exec", name, *argv, check=check)


def hostctl_call(*args: str) -> dict:
    """hostctl's JSON answer (its last line) to `args`."""
    p = subprocess.run(HOSTCTL + list(args), capture_output=True, text=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


class TracePath:
    """a -- r -- b, forwarded in r by `dnpipe` (shaped by the test with set()); addresses
    {subnet}.1 (a) and {subnet}.2 (b). `sender_ecn`: a asks for ECN (net.ipv4.tcp_ecn=1; b's
    default 2 accepts it)."""

    def __init__(self, tmp: Path, prefix: str, subnet: str, dnpipe: Path, sender_ecn: bool = False):
        self.a, self.r, self.b = f"{prefix}a", f"{prefix}r", f"{prefix}b"
        self.server_addr = f"{subnet}.2"
        self.dnpipe = dnpipe
        self.sock = tmp / "p.sock"
        self.made: list[str] = []
        for n in (self.a, self.r, self.b):
            sh("ip", "netns", "add", n)
            self.made.append(n)
            ns(n, "ip", "link", "set", "lo", "up")
        sh("ip", "link", "add", "va", "netns", self.a, "type", "veth", "peer", "name", "ra", "netns", self.r)
        sh("ip", "link", "add", "vb", "netns", self.b, "type", "veth", "peer", "name", "rb", "netns", self.r)
        ns(self.a, "ip", "addr", "add", f"{subnet}.1/24", "dev", "va")
        ns(self.b, "ip", "addr", "add", f"{subnet}.2/24", "dev", "vb")
        for n, dev in ((self.a, "va"), (self.b, "vb"), (self.r, "ra"), (self.r, "rb")):
            ns(n, "ethtool", "-K", dev, "tx", "off", "tso", "off", "gso", "off", "gro", "off", check=False)
            ns(n, "ip", "link", "set", dev, "up")
        if sender_ecn:
            ns(self.a, "sysctl", "-qw", "net.ipv4.tcp_ecn=1")
            assert ns(self.b, "sysctl", "-n", "net.ipv4.tcp_ecn").stdout.strip() in ("1", "2")   # b accepts
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.r, str(dnpipe), "run", "--a", "ra", "--b", "rb",
                                      "--control", str(self.sock), "--seed", "24"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not self.sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)

    def ctl(self, *args: str) -> dict:
        """The forwarder's control command (`set ...`, `show`) and its JSON answer."""
        return json.loads(sh(str(self.dnpipe), "ctl", "--control", str(self.sock), *args).stdout)

    def server(self, port: int) -> subprocess.Popen:
        srv = subprocess.Popen(["ip", "netns", "exec", self.b, sys.executable, BULK, "recv-tcp", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert srv.stdout is not None and srv.stdout.readline().strip() == "listening", srv.stderr
        return srv

    def sender(self, port: int, cc: str, seconds: float, **popen: Any) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", self.a, sys.executable, BULK, "send-tcp", self.server_addr,
                                 str(port), cc, str(seconds)], **popen)

    def close(self) -> None:
        self.proc.send_signal(15)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for n in self.made:
            sh("ip", "netns", "del", n, check=False)


def traced_transfer(path: TracePath, trace_build: Any, alg: Any, holder: str, decode: Callable,
                    record_size: int, *, seconds: float, port: int,
                    cubic_after: float | None = None) -> tuple[list, int]:
    """One TCP bulk transfer a -> b under `alg`'s trace build (loaded for it under `holder`,
    unloaded after), and a Cubic flow over the same path from `cubic_after` seconds on; (the
    decoded trace, the bytes the traced flow delivered)."""
    stem = alg.name
    loaded = hostctl_call("load", alg.trace_name, trace_build.sha256_of(stem), str(trace_build.object_of(stem)), holder)
    assert loaded["ok"] and loaded["action"] == "registered", loaded
    try:
        maps = hostctl._maps_of(loaded["id"])
        assert set(alg.trace_maps) <= set(maps), maps
        procs = [path.server(port)]
        try:
            sender = path.sender(port, alg.trace_name, seconds, stdout=subprocess.PIPE, text=True)
            procs.append(sender)
            if cubic_after is not None:
                procs.append(path.server(port + 1))
                time.sleep(cubic_after)
                procs.append(path.sender(port + 1, "cubic", seconds - cubic_after, stdout=subprocess.DEVNULL))
            sent, _ = sender.communicate(timeout=seconds + 120)
            received, err = procs[0].communicate(timeout=120)
            assert procs[0].returncode == 0 and sender.returncode == 0, err
            for p in procs[2:]:
                p.wait(timeout=120)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait(timeout=10)
        assert int(received) == int(sent) > 0
        used, records = read_trace(maps, alg.stem, record_size, decode, limit=TRACE_LIMIT)
        assert used < TRACE_LIMIT, f"the trace map filled up ({used} calls)"
    finally:
        left = hostctl_call("unload", alg.trace_name, holder)
    assert left["ok"] and left["action"] == "unregistered", left
    return records, int(received)
