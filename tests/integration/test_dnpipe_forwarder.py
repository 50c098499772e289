"""dnpipe, the dummynet-faithful userspace pipe, forwarding real traffic between namespaces.

Topology (every namespace and link is prefixed `dnp`, suffixed with our pid):

    client ns  --veth--  wire ns: dnpipe between its two veth ends  --veth--  server ns

Tolerances here are loose on purpose (the CPU is shared and tests must not be flaky);
the precise figures are the business of bench/dnpipe_bench.py.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "bridges" / "dnpipe"
DNPIPE = SRC / "build" / "dnpipe"

TAG = str(os.getpid() % 100000)
NS_C, NS_W, NS_S = f"dnpc{TAG}", f"dnpw{TAG}", f"dnps{TAG}"
IF_CA, IF_WA, IF_WB, IF_SB = f"dnp{TAG}ca", f"dnp{TAG}wa", f"dnp{TAG}wb", f"dnp{TAG}sb"
IP_C, IP_S = "10.201.77.1", "10.201.77.2"
IP_VLAN_C, IP_VLAN_S = "10.201.78.1", "10.201.78.2"
IPERF_PORT = 5201

COUNTER_KEYS = {"rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes", "drop_plr_pkts", "drop_plr_bytes",
                "drop_queue_pkts", "drop_queue_bytes", "tx_error_pkts", "oversize_pkts", "queue_pkts",
                "queue_bytes", "queue_peak_pkts", "queue_peak_bytes", "delay_line_pkts"}
CONFIG_KEYS = {"bw_bps", "delay_us", "plr", "queue_slots", "queue_bytes"}


def _need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.fail(f"{tool} is not installed: scripts/setup.sh installs it")


def run(argv: list[str], check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=check, capture_output=True, text=True, **kw)


def nsrun(ns: str, argv: list[str], check: bool = True, **kw) -> subprocess.CompletedProcess:
    return run(["ip", "netns", "exec", ns, *argv], check=check, **kw)


def offloads_off(ns: str, ifname: str) -> None:
    # Checksum, segmentation and receive offloads would hand dnpipe unfinished checksums
    # and 64 KB super-packets (see the brief); every veth on the path has them off.
    nsrun(ns, ["ethtool", "-K", ifname, "tx", "off", "tso", "off", "gso", "off", "gro", "off"])


class Topology:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen] = []
        self.made_ns: list[str] = []

    def create(self) -> None:
        for ns in (NS_C, NS_W, NS_S):
            run(["ip", "netns", "add", ns])
            self.made_ns.append(ns)
        run(["ip", "link", "add", IF_CA, "netns", NS_C, "type", "veth", "peer", "name", IF_WA, "netns", NS_W])
        run(["ip", "link", "add", IF_WB, "netns", NS_W, "type", "veth", "peer", "name", IF_SB, "netns", NS_S])
        # The wire namespace is a bridge host: its ports carry no IPv6 chatter of its own.
        nsrun(NS_W, ["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
        nsrun(NS_W, ["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"])
        for ns, ifname in ((NS_C, IF_CA), (NS_W, IF_WA), (NS_W, IF_WB), (NS_S, IF_SB)):
            offloads_off(ns, ifname)
            nsrun(ns, ["ip", "link", "set", ifname, "up"])
            nsrun(ns, ["ip", "link", "set", "lo", "up"])
        nsrun(NS_C, ["ip", "addr", "add", f"{IP_C}/24", "dev", IF_CA])
        nsrun(NS_S, ["ip", "addr", "add", f"{IP_S}/24", "dev", IF_SB])

    def popen(self, ns: str, argv: list[str], **kw) -> subprocess.Popen:
        # `ip netns exec` execs the program in place, so the pid we get is the program's.
        p = subprocess.Popen(["ip", "netns", "exec", ns, *argv], **kw)
        self.procs.append(p)
        return p

    def stop(self, p: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 5.0) -> None:
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def destroy(self) -> None:
        for p in self.procs:
            self.stop(p)
        for ns in self.made_ns:
            run(["ip", "netns", "del", ns], check=False)
        self.made_ns.clear()


class Dnpipe:
    def __init__(self, topo: Topology, a: str, b: str, name: str, extra: tuple[str, ...] = ()) -> None:
        self.sock = str(topo.tmp / f"{name}.sock")
        self.pidfile = str(topo.tmp / f"{name}.pid")
        self.errlog = open(topo.tmp / f"{name}.err", "w+")
        self.proc = topo.popen(NS_W, [str(DNPIPE), "run", "--a", a, "--b", b, "--control", self.sock,
                                      "--pidfile", self.pidfile, "--seed", "12345", *extra],
                               stdout=subprocess.DEVNULL, stderr=self.errlog)
        deadline = time.monotonic() + 5
        # Readiness: the control socket appears only once the daemon answers on it.
        while not os.path.exists(self.sock):
            assert self.proc.poll() is None, f"dnpipe exited: {self.stderr()}"
            assert time.monotonic() < deadline, "dnpipe did not become ready"
            time.sleep(0.01)

    def stderr(self) -> str:
        self.errlog.flush()
        self.errlog.seek(0)
        return self.errlog.read()

    def ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run([str(DNPIPE), "ctl", "--control", self.sock, *args], check=check)

    def show(self) -> dict:
        return json.loads(self.ctl("show").stdout)

    def set(self, *args: str, dir: str = "both") -> dict:
        return json.loads(self.ctl("set", "--dir", dir, *args).stdout)

    def reset(self) -> None:
        self.set("--bw", "0", "--delay-us", "0", "--plr", "0", "--queue-slots", "50")
        self.ctl("reset-peak", "--dir", "both")

    def counters(self, direction: str = "forward") -> dict:
        return self.show()["pipes"][direction]["counters"]


def accounted(c: dict) -> int:
    return (c["tx_pkts"] + c["drop_plr_pkts"] + c["drop_queue_pkts"] + c["tx_error_pkts"] + c["oversize_pkts"]
            + c.get("drop_nomem_pkts", 0) + c["queue_pkts"] + c["delay_line_pkts"])


def delta(a: dict, b: dict) -> dict:
    return {k: b[k] - a[k] for k in a if isinstance(a[k], int)}


@pytest.fixture(scope="module")
def topo(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.fail("needs root for network namespaces (CI runs as root)")
    for tool in ("ip", "ethtool", "iperf3", "ping", "make", "gcc"):
        _need(tool)
    run(["make", "-C", str(SRC), "-s"])
    t = Topology(tmp_path_factory.mktemp("dnpipe"))
    try:
        t.create()
        t.iperf = t.popen(NS_S, ["iperf3", "-s", "-p", str(IPERF_PORT)], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
        t.dn = Dnpipe(t, IF_WA, IF_WB, "main")
        # Learn neighbours once, so ARP does not show up in the first test's counts.
        nsrun(NS_C, ["ping", "-c", "1", "-W", "2", IP_S])
        yield t
    finally:
        t.destroy()


@pytest.fixture
def dn(topo):
    topo.dn.reset()
    return topo.dn


def iperf(args: list[str], timeout: float = 30) -> dict:
    out = nsrun(NS_C, ["iperf3", "-c", IP_S, "-p", str(IPERF_PORT), "-J", *args], timeout=timeout)
    return json.loads(out.stdout)


def binomial_ok(n: int, k: int, p: float, sigmas: float) -> tuple[bool, str]:
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    return abs(k - mean) <= sigmas * sd, f"{k} drops of {n} at p={p}: expected {mean:.1f} +- {sigmas}*{sd:.1f}"


def test_core_unit_tests_pass():
    # The C unit tests of the pure core (fake clock): serialization, bounds, live changes,
    # loss statistics. Run here too so that a pytest run covers them.
    r = run(["make", "-C", str(SRC), "-s", "test"], check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert " 0 failed" in r.stdout


# ---- schema and control ------------------------------------------------------------

def test_show_schema_and_defaults(dn):
    s = dn.show()
    assert s["version"] == 1
    assert s["pid"] == dn.proc.pid
    assert (s["a"], s["b"]) == (IF_WA, IF_WB)
    assert isinstance(s["uptime_s"], float) and s["uptime_s"] > 0
    assert isinstance(s["cpu_ns"], int) and s["cpu_ns"] > 0     # the process's CPU time, every thread
    assert set(s["pipes"]) == {"forward", "reverse"}
    for p in s["pipes"].values():
        assert set(p["config"]) == CONFIG_KEYS
        assert p["config"] == {"bw_bps": 0, "delay_us": 0, "plr": 0, "queue_slots": 50, "queue_bytes": None}
        assert COUNTER_KEYS <= set(p["counters"])
        assert all(isinstance(v, int) and v >= 0 for v in p["counters"].values())
    assert open(dn.pidfile).read().strip() == str(dn.proc.pid)


def test_set_prints_show_and_round_trips(dn):
    s = dn.set("--bw", "12345678", "--delay-us", "1500", "--plr", "0.000046", "--queue-bytes", "65536",
               dir="forward")
    f, r = s["pipes"]["forward"]["config"], s["pipes"]["reverse"]["config"]
    assert f == {"bw_bps": 12345678, "delay_us": 1500, "plr": 0.000046, "queue_slots": None, "queue_bytes": 65536}
    assert r["bw_bps"] == 0 and r["queue_slots"] == 50
    # unspecified fields are unchanged
    s = dn.set("--delay-us", "7", dir="forward")
    assert s["pipes"]["forward"]["config"]["bw_bps"] == 12345678
    assert s["pipes"]["forward"]["config"]["queue_bytes"] == 65536
    s = dn.set("--plr", "0.1", dir="both")
    assert s["pipes"]["forward"]["config"]["plr"] == 0.1 and s["pipes"]["reverse"]["config"]["plr"] == 0.1


def test_batch_period_is_bounded_by_the_queue_drain_time(dn):
    # Under load departures leave in batches of at most --batch-us (200 us by default) and
    # at most an eighth of the time the queue bound takes to drain at bw: a batch comes
    # back from a TCP sender as one burst into the queue (README, "Batches and small
    # queues"). show reports the period that applies; one data thread serves both pipes.
    def periods(s: dict) -> list[int]:
        return [s["pipes"][d]["batch_ns"] for d in ("forward", "reverse")]

    assert periods(dn.show()) == [200_000, 200_000]  # bw 0: nothing ever queues
    # 50 frames of MTU 1500 + 22 bytes of L2 header at 1 Gbit/s drain in 608.8 us.
    assert periods(dn.set("--bw", "1000000000", "--queue-slots", "50", dir="forward")) == [76_100, 76_100]
    assert periods(dn.set("--bw", "1000000000", "--queue-slots", "25", dir="reverse")) == [38_050, 38_050]
    # 1 MiB at 1 Gbit/s and 50 slots at 100 Mbit/s drain in milliseconds: the maximum.
    assert periods(dn.set("--queue-bytes", str(1 << 20), dir="both")) == [200_000, 200_000]
    assert periods(dn.set("--bw", "100000000", "--queue-slots", "50", dir="both")) == [200_000, 200_000]


def test_batch_period_per_thread_and_option(topo):
    # With --threads 2 each direction has its own data thread and its own period;
    # --batch-us sets the maximum. Dangling veths in the wire namespace, a daemon of its own.
    for a, b in (("dnpqa" + TAG, "dnpqA" + TAG), ("dnpqb" + TAG, "dnpqB" + TAG)):
        nsrun(NS_W, ["ip", "link", "add", a, "type", "veth", "peer", "name", b])
        nsrun(NS_W, ["ip", "link", "set", a, "up"])
    try:
        d = Dnpipe(topo, "dnpqa" + TAG, "dnpqb" + TAG, "batch", ("--threads", "2", "--batch-us", "100"))
        s = d.set("--bw", "1000000000", "--queue-slots", "25", dir="forward")
        assert [s["pipes"][k]["batch_ns"] for k in ("forward", "reverse")] == [38_050, 100_000]
        topo.stop(d.proc)
    finally:
        for a in ("dnpqa" + TAG, "dnpqb" + TAG):
            nsrun(NS_W, ["ip", "link", "del", a], check=False)


@pytest.mark.parametrize("args", [
    ["set", "--dir", "forward", "--bw", "10000000001"],
    ["set", "--dir", "forward", "--bw", "-1"],
    ["set", "--dir", "forward", "--bw", "20M"],
    ["set", "--dir", "forward", "--delay-us", "10000001"],
    ["set", "--dir", "forward", "--plr", "1.5"],
    ["set", "--dir", "forward", "--plr", "nan"],
    ["set", "--dir", "forward", "--plr", "1%"],
    ["set", "--dir", "forward", "--queue-slots", "0"],
    ["set", "--dir", "forward", "--queue-slots", "100001"],
    ["set", "--dir", "forward", "--queue-bytes", "1499"],
    ["set", "--dir", "forward", "--queue-bytes", str(64 * 2**20 + 1)],
    ["set", "--dir", "forward", "--queue-slots", "5", "--queue-bytes", "3000"],
    ["set", "--dir", "sideways", "--bw", "1"],
    ["set", "--bw", "1"],
    ["set", "--dir", "forward", "--bogus", "1"],
    ["watch", "--interval-ms", "0"],
    ["frobnicate"],
    [],
])
def test_set_validation_exits_2_with_one_line(dn, args):
    before = dn.show()["pipes"]
    r = dn.ctl(*args, check=False)
    assert r.returncode == 2, r
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert {k: v["config"] for k, v in dn.show()["pipes"].items()} == {k: v["config"] for k, v in before.items()}


def test_unreachable_daemon_exits_1(topo):
    r = run([str(DNPIPE), "ctl", "--control", str(topo.tmp / "nobody.sock"), "show"], check=False)
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1


def test_version():
    r = run([str(DNPIPE), "--version"])
    assert r.stdout.startswith("dnpipe ")


def test_watch_schema_and_stdin_eof(dn):
    p = subprocess.Popen([str(DNPIPE), "ctl", "--control", dn.sock, "watch", "--interval-ms", "50"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [json.loads(p.stdout.readline()) for _ in range(4)]
    finally:
        p.stdin.close()  # EOF on stdin ends the watch
        rc = p.wait(3)
    assert rc == 0
    now = time.time_ns()
    ts = [x["t_ns"] for x in lines]
    assert ts == sorted(ts) and abs(ts[-1] - now) < 5e9
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    assert all(20e6 < g < 500e6 for g in gaps), gaps
    for x in lines:
        assert set(x) == {"t_ns", "cpu_ns", "pipes"} and set(x["pipes"]) == {"forward", "reverse"}
        for c in x["pipes"].values():
            assert COUNTER_KEYS <= set(c)


def test_watch_ends_on_sigterm(dn):
    p = subprocess.Popen([str(DNPIPE), "ctl", "--control", dn.sock, "watch", "--interval-ms", "20"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    json.loads(p.stdout.readline())
    p.send_signal(signal.SIGTERM)
    assert p.wait(3) == 0
    p.stdin.close()


# ---- forwarding ----------------------------------------------------------------------

UDP_SEND = r"""
import socket, sys, os
dst, port, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(n):
    payload = i.to_bytes(4, "big") + os.urandom(size - 4)
    s.sendto(payload, (dst, port))
"""

UDP_RECV = r"""
import socket, sys, hashlib
port, n, timeout = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind(("0.0.0.0", port))
print("ready", flush=True)
s.settimeout(timeout)
got = []
try:
    while len(got) < n:
        got.append(s.recv(65536))
except socket.timeout:
    pass
print(len(got), flush=True)
for g in got:
    print(int.from_bytes(g[:4], "big"), hashlib.sha256(g).hexdigest(), flush=True)
"""


def test_frames_pass_unchanged_and_own_frames_never_come_back(topo, dn):
    n = 300
    recv = topo.popen(NS_S, [sys.executable, "-c", UDP_RECV, "9100", str(n), "3"], stdout=subprocess.PIPE,
                      text=True)
    assert recv.stdout.readline().strip() == "ready"
    f0, r0 = dn.counters("forward"), dn.counters("reverse")
    sender = r"""
import socket, sys, os, hashlib
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[3])):
    p = i.to_bytes(4, "big") + os.urandom(1000)
    s.sendto(p, (sys.argv[1], int(sys.argv[2])))
    print(i, hashlib.sha256(p).hexdigest())
"""
    sent = nsrun(NS_C, [sys.executable, "-c", sender, IP_S, "9100", str(n)]).stdout.split("\n")
    out, _ = recv.communicate(timeout=10)
    got = out.split("\n")[1:]
    assert sorted(x for x in got if x) == sorted(x for x in sent if x)
    f1, r1 = dn.counters("forward"), dn.counters("reverse")
    assert f1["rx_pkts"] - f0["rx_pkts"] >= n
    assert f1["tx_pkts"] - f0["tx_pkts"] >= n
    # If dnpipe saw its own transmissions on port b, the reverse pipe would have taken in
    # the ~300 frames it sent there (and looped them). Only stray ARP may come back.
    assert r1["rx_pkts"] - r0["rx_pkts"] <= 5


VLAN_SEND = r"""
import socket, sys, struct
ifname, n = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifname, 0))
for i in range(n):
    # broadcast, locally administered source, 802.1Q tag: PCP 3, VID 77, then a test ethertype
    frame = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x07" + struct.pack("!HHH", 0x8100, (3 << 13) | 77, 0x88B5)
    s.send(frame + i.to_bytes(4, "big") + bytes(range(96)))
"""

VLAN_RECV = r"""
import socket, sys, struct
ifname, n = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL
s.bind((ifname, 0))
s.setsockopt(263, 8, 1)  # SOL_PACKET, PACKET_AUXDATA: the kernel strips the tag into these
s.settimeout(3)
print("ready", flush=True)
seen = 0
try:
    while seen < n:
        data, anc, _, _ = s.recvmsg(2048, 256)
        if data[12:14] != b"\x88\xb5":
            continue
        for level, kind, blob in anc:
            if level == 263 and kind == 8:
                status, _, _, _, _, tci, tpid = struct.unpack("IIIHHHH", blob[:24])
                ok = bool(status & 0x10) and tci == (3 << 13) | 77 and data[18:] == bytes(range(96))
                print("tag" if ok else "bad %x %x %x" % (status, tci, tpid), flush=True)
                seen += 1
except socket.timeout:
    pass
"""


def test_vlan_tagged_frames_keep_their_tag(topo, dn):
    # The kernel hands taps untagged frames with the tag in metadata; dnpipe must put the
    # 802.1Q header back (VID and priority) or the far side would see untagged frames.
    n = 5
    recv = topo.popen(NS_S, [sys.executable, "-c", VLAN_RECV, IF_SB, str(n)], stdout=subprocess.PIPE, text=True)
    assert recv.stdout.readline().strip() == "ready"
    nsrun(NS_C, [sys.executable, "-c", VLAN_SEND, IF_CA, str(n)])
    out, _ = recv.communicate(timeout=10)
    assert out.split() == ["tag"] * n, out


def ping_rtts(count: int, interval: float = 0.05, size: int = 56) -> list[float]:
    out = nsrun(NS_C, ["ping", "-c", str(count), "-i", str(interval), "-s", str(size), "-W", "5", IP_S],
                check=False, timeout=60).stdout
    return [float(tok.split("=")[1]) for line in out.splitlines() for tok in line.split() if tok.startswith("time=")]


@pytest.mark.parametrize("delay_ms", [10, 100])
def test_rtt_is_twice_the_delay(dn, delay_ms):
    dn.set("--delay-us", str(delay_ms * 1000))
    rtts = ping_rtts(10, interval=0.05)
    assert len(rtts) >= 9
    # Never early: a packet leaves no sooner than its due time.
    assert min(rtts) >= 2 * delay_ms
    # And on time when the machine lets it: the best replies within a few ms. Not the median:
    # this VM's host steals the CPU for tens of ms at times, and a whole burst of pings can
    # meet it (bench/dnpipe_bench.py measures the precise figures on a quiet machine).
    assert min(rtts) < 2 * delay_ms + 1.5, rtts
    assert sum(r < 2 * delay_ms + 3.0 for r in rtts) >= 3, rtts


def test_rtt_with_bandwidth_includes_serialization(dn):
    # 1 Mbit/s: a 1028-byte echo request frame (1000 B payload) takes 8.2 ms each way.
    dn.set("--bw", "1000000", "--delay-us", "5000")
    rtts = ping_rtts(7, interval=0.2, size=1000)
    frame = 1000 + 8 + 20 + 14
    expect = 2 * (5.0 + frame * 8 / 1e6 * 1000)
    assert len(rtts) >= 6
    # ping prints 0.1 ms resolution here, hence the 0.1 below the exact figure.
    assert expect - 0.1 <= min(rtts) < expect + 1.5, (expect, rtts)
    assert sum(r < expect + 3.0 for r in rtts) >= 3, (expect, rtts)   # as above: not the median


@pytest.mark.parametrize("rate", [20_000_000, 100_000_000])
def test_tcp_throughput_near_rate(dn, rate):
    dn.set("--bw", str(rate), dir="forward")
    results = []
    for _ in range(2):  # a second chance when the shared host stole the CPU for a while
        r = iperf(["-t", "3", "-O", "1"])
        got = r["end"]["sum_received"]["bits_per_second"]
        # Goodput can never beat the wire: 1448 payload bytes ride in 1514-byte frames.
        assert got <= rate * 1448 / 1514 * 1.01
        results.append(got)
        if got >= 0.85 * rate:
            break
    assert max(results) >= 0.85 * rate, results


def udp_rcvbuf_errors(ns: str) -> int:
    out = nsrun(ns, ["nstat", "-az", "UdpRcvbufErrors"]).stdout
    return sum(int(line.split()[1]) for line in out.splitlines() if line.startswith("UdpRcvbufErrors"))


def test_udp_loss_matches_plr(dn):
    plr = 0.01
    dn.set("--plr", str(plr), dir="forward")
    c0 = dn.counters()
    e0 = udp_rcvbuf_errors(NS_S)
    r = iperf(["-u", "-b", "10M", "-l", "100", "-t", "4", "-w", "4M"])
    time.sleep(0.2)
    d = delta(c0, dn.counters())
    endpoint_drops = udp_rcvbuf_errors(NS_S) - e0
    assert d["rx_pkts"] > 40000
    ok, why = binomial_ok(d["rx_pkts"], d["drop_plr_pkts"], plr, 4.5)
    assert ok, why
    assert d["drop_queue_pkts"] == 0 and d["tx_error_pkts"] == 0
    s = r["end"]["sum"]
    # The receiver sees every dnpipe drop as a loss (a handful hit the iperf3 control
    # connection instead), plus whatever its own socket buffer dropped.
    assert d["drop_plr_pkts"] - 20 <= s["lost_packets"] <= d["drop_plr_pkts"] + endpoint_drops + 5, \
        (s, endpoint_drops)


def _watch(dn: Dnpipe, interval_ms: int, samples: list, stop: threading.Event) -> threading.Thread:
    def loop() -> None:
        p = subprocess.Popen([str(DNPIPE), "ctl", "--control", dn.sock, "watch", "--interval-ms", str(interval_ms)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            while not stop.is_set():
                line = p.stdout.readline()
                if not line:
                    break
                samples.append(json.loads(line))
        finally:
            p.stdin.close()
            p.wait(3)
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("bound", [("--queue-slots", "20"), ("--queue-bytes", "30000")])
def test_queue_never_above_bound(dn, bound):
    dn.set("--bw", "5000000", bound[0], bound[1], dir="forward")
    samples: list = []
    stop = threading.Event()
    w = _watch(dn, 10, samples, stop)
    iperf(["-u", "-b", "20M", "-l", "1400", "-t", "1.5"])
    stop.set()
    w.join(5)
    c = dn.counters()
    assert c["drop_queue_pkts"] > 0, "the flood should have filled the queue"
    assert samples
    if bound[0] == "--queue-slots":
        assert c["queue_peak_pkts"] == 20
        assert max(s["pipes"]["forward"]["queue_pkts"] for s in samples) <= 20
    else:
        frame = 1400 + 8 + 20 + 14
        assert 30000 - frame < c["queue_peak_bytes"] <= 30000
        assert max(s["pipes"]["forward"]["queue_bytes"] for s in samples) <= 30000


def test_live_reconfiguration_keeps_queued_packets(dn):
    dn.set("--bw", "10000000", "--delay-us", "10000", "--queue-slots", "2000", dir="forward")
    c0 = dn.counters()
    result: dict = {}

    def flow() -> None:
        result["r"] = iperf(["-u", "-b", "8M", "-l", "1000", "-t", "3"])
    t = threading.Thread(target=flow)
    t.start()
    time.sleep(0.5)
    queued_seen = 0
    for i in range(8):
        s = dn.set("--bw", "6000000" if i % 2 == 0 else "12000000",
                   "--delay-us", "30000" if i % 2 == 0 else "2000", dir="forward")
        c = s["pipes"]["forward"]["counters"]
        assert c["rx_pkts"] == accounted(c)  # the identity holds at every change
        queued_seen = max(queued_seen, c["queue_pkts"] + c["delay_line_pkts"])
        time.sleep(0.25)
    t.join(20)
    time.sleep(0.3)
    c1 = dn.counters()
    d = delta(c0, c1)
    assert queued_seen > 0, "the changes should have happened with packets in the pipe"
    assert c1["queue_pkts"] == 0 and c1["delay_line_pkts"] == 0
    assert d["drop_queue_pkts"] == 0 and d["drop_plr_pkts"] == 0 and d["tx_error_pkts"] == 0
    assert d["rx_pkts"] == d["tx_pkts"]
    s = result["r"]["end"]["sum"]
    assert s["lost_packets"] == 0
    assert s.get("out_of_order", 0) == 0  # the delay line is FIFO even when the delay drops


def test_burst_survives_rate_change(topo, dn):
    # 40 frames queued at 1 Mbit/s (0.33 s of backlog), then the rate changes under them.
    n = 40
    dn.set("--bw", "1000000", "--queue-slots", "100", dir="forward")
    recv = topo.popen(NS_S, [sys.executable, "-c", UDP_RECV, "9101", str(n), "3"], stdout=subprocess.PIPE, text=True)
    assert recv.stdout.readline().strip() == "ready"
    c0 = dn.counters()
    nsrun(NS_C, [sys.executable, "-c", UDP_SEND, IP_S, "9101", str(n), "1000"])
    time.sleep(0.05)
    mid = dn.set("--bw", "2000000", "--delay-us", "20000", dir="forward")["pipes"]["forward"]["counters"]
    assert mid["queue_pkts"] > 10
    out, _ = recv.communicate(timeout=10)
    assert int(out.split("\n")[0]) == n
    d = delta(c0, dn.counters())
    assert d["tx_pkts"] == d["rx_pkts"] >= n and d["drop_queue_pkts"] == 0


def test_oversize_frames_are_counted_and_reported(topo, dn):
    # GRO on dnpipe's port merges TCP segments into super-frames before taps see them:
    # dnpipe must refuse them loudly and count them, never forward them.
    nsrun(NS_W, ["ethtool", "-K", IF_WA, "gro", "on"])
    try:
        c0 = dn.counters()
        nsrun(NS_C, ["iperf3", "-c", IP_S, "-p", str(IPERF_PORT), "-t", "1", "--connect-timeout", "2000"],
              check=False, timeout=20)
        d = delta(c0, dn.counters())
    finally:
        offloads_off(NS_W, IF_WA)
    assert d["oversize_pkts"] > 0
    assert "above MTU" in dn.stderr()
    # The identity still holds: oversize frames are counted in rx and as their own drop.
    c = dn.counters()
    assert c["rx_pkts"] == accounted(c)


# ---- lifecycle -------------------------------------------------------------------------

def test_sigterm_exits_fast_and_cleans_up(topo):
    # A pair of dangling veths in the wire namespace: a second daemon of its own.
    for a, b in (("dnpta" + TAG, "dnptA" + TAG), ("dnptb" + TAG, "dnptB" + TAG)):
        nsrun(NS_W, ["ip", "link", "add", a, "type", "veth", "peer", "name", b])
        nsrun(NS_W, ["ip", "link", "set", a, "up"])
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            d = Dnpipe(topo, "dnpta" + TAG, "dnptb" + TAG, f"life{sig}")
            assert os.path.exists(d.pidfile)
            # A second daemon on the same socket is refused, and leaves the first alone.
            r = nsrun(NS_W, [str(DNPIPE), "run", "--a", "dnpta" + TAG, "--b", "dnptb" + TAG, "--control", d.sock],
                      check=False, timeout=10)
            assert r.returncode == 1 and "already" in r.stderr
            assert d.show()["pid"] == d.proc.pid
            watch = subprocess.Popen([str(DNPIPE), "ctl", "--control", d.sock, "watch", "--interval-ms", "20"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            json.loads(watch.stdout.readline())
            t0 = time.monotonic()
            d.proc.send_signal(sig)
            rc = d.proc.wait(5)
            took = time.monotonic() - t0
            assert rc == 0
            assert took < 0.5, took  # the contract is 100 ms; slack for a loaded CI machine
            assert not os.path.exists(d.sock) and not os.path.exists(d.pidfile)
            # A watch ends, with exit 1 and one line, when its daemon goes away.
            assert watch.wait(3) == 1
            assert len(watch.stderr.read().strip().splitlines()) == 1
            watch.stdin.close()
    finally:
        for a in ("dnpta" + TAG, "dnptb" + TAG):
            nsrun(NS_W, ["ip", "link", "del", a], check=False)


def test_run_argument_errors(topo):
    cases = [
        [],
        ["--a", IF_WA],
        ["--a", IF_WA, "--b", IF_WA, "--control", str(topo.tmp / "x.sock")],
        ["--a", IF_WA, "--b", IF_WB, "--control", str(topo.tmp / "x.sock"), "--seed", "-1"],
    ]
    for args in cases:
        r = nsrun(NS_W, [str(DNPIPE), "run", *args], check=False)
        assert r.returncode == 2, (args, r)
        assert len(r.stderr.strip().splitlines()) == 1
    r = nsrun(NS_W, [str(DNPIPE), "run", "--a", "dnpnosuch", "--b", IF_WB, "--control", str(topo.tmp / "y.sock")],
              check=False)
    assert r.returncode == 1 and "dnpnosuch" in r.stderr
    assert not os.path.exists(topo.tmp / "y.sock")
