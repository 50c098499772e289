#!/usr/bin/env python3
"""dnpipe benchmark: for every figure of the dnpipe brief, configured vs measured.

Not a test: it prints a table (and optionally writes JSON). Needs root, iproute2,
ethtool, iperf3, ping, nstat, gcc/make. Namespaces and links are prefixed `dnpb`.

    sudo .venv/bin/python bench/dnpipe_bench.py            # full run, ~15 minutes
    sudo .venv/bin/python bench/dnpipe_bench.py --quick    # ~5 minutes, smaller samples
    ... --only rtt,tcp,fwd --profile --json out.json

Topology per path: client ns --veth-- wire ns (dnpipe, or a kernel bridge with tbf for
the reference) --veth-- server ns. Offloads are off on every veth of the path.

Figures are what this machine gives with whatever else runs on it: the load average is
printed with each section, and noisy figures should be re-run.
"""
from __future__ import annotations

import argparse
import bisect
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from dnpipe_cpu import (Profiler, describe_split, kernel_threads_cpu_s, machine_busy_s, proc_cpu_s, run_rusage,
                        timed_wake_cost_us)

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "bridges" / "dnpipe"
DNPIPE = SRC / "build" / "dnpipe"
TAG = str(os.getpid() % 100000)
CLK_TCK = os.sysconf("SC_CLK_TCK")
PING_FRAME = 56 + 8 + 20 + 14          # default ping payload + ICMP + IPv4 + Ethernet
TCP_GOODPUT_SHARE = 1448 / 1514        # TCP payload per full frame (timestamps on)
TCP_CC = ["-C", "cubic"]                # set by --cc; the machine's default may be bbr


def run(argv: list[str], check: bool = True, timeout: float | None = None,
        input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=timeout, input=input)


_last_stat: list[int] = []


def loadavg() -> str:
    """The guest's load average and the share of CPU time the hypervisor took from this
    VM ("steal") since the previous call: the two things that make figures noisy here."""
    global _last_stat
    cpu = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    steal = ""
    if _last_stat and len(cpu) > 7:
        d = [b - a for a, b in zip(_last_stat, cpu)]
        if sum(d) > 0:
            steal = f", steal {100 * d[7] / sum(d):.0f}%"
    _last_stat = cpu
    return open("/proc/loadavg").read().split()[0] + steal


# ---- topology -------------------------------------------------------------------------

class NetPath:
    """client ns -- wire ns -- server ns, the wire running dnpipe or a tbf bridge."""

    def __init__(self, key: str, subnet: int, kind: str = "dnpipe", extra: list[str] | None = None) -> None:
        self.key, self.kind, self.extra = key, kind, extra or []
        p = f"dnpb{TAG}{key}"
        self.ns_c, self.ns_w, self.ns_s = p + "c", p + "w", p + "s"
        self.ca, self.wa, self.wb, self.sb = p + "ca", p + "wa", p + "wb", p + "sb"
        self.ip_c, self.ip_s = f"10.202.{subnet}.1", f"10.202.{subnet}.2"
        self.procs: list[subprocess.Popen] = []
        self.made: list[str] = []
        self.sock = f"/tmp/dnpb{TAG}{key}.sock"
        self.dn: subprocess.Popen | None = None
        self.srv: subprocess.Popen | None = None
        self.threaded = False

    def nsrun(self, ns: str, argv: list[str], **kw) -> subprocess.CompletedProcess:
        return run(["ip", "netns", "exec", ns, *argv], **kw)

    def popen(self, ns: str, argv: list[str], **kw) -> subprocess.Popen:
        p = subprocess.Popen(["ip", "netns", "exec", ns, *argv], **kw)  # execs in place: pid is the program's
        self.procs.append(p)
        return p

    def setup(self) -> None:
        for ns in (self.ns_c, self.ns_w, self.ns_s):
            run(["ip", "netns", "add", ns])
            self.made.append(ns)
        run(["ip", "link", "add", self.ca, "netns", self.ns_c, "type", "veth", "peer", "name", self.wa,
             "netns", self.ns_w])
        run(["ip", "link", "add", self.wb, "netns", self.ns_w, "type", "veth", "peer", "name", self.sb,
             "netns", self.ns_s])
        self.nsrun(self.ns_w, ["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
        self.nsrun(self.ns_w, ["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"])
        for ns, ifname in ((self.ns_c, self.ca), (self.ns_w, self.wa), (self.ns_w, self.wb), (self.ns_s, self.sb)):
            self.nsrun(ns, ["ethtool", "-K", ifname, "tx", "off", "tso", "off", "gso", "off", "gro", "off"])
            self.nsrun(ns, ["ip", "link", "set", ifname, "up"])
            self.nsrun(ns, ["ip", "link", "set", "lo", "up"])
        for ns in (self.ns_c, self.ns_s):
            # Room for a window of bandwidth x 1.6 s RTT (20 MB at 100 Mbit/s).
            self.nsrun(ns, ["sysctl", "-qw", "net.ipv4.tcp_rmem=4096 131072 67108864"])
            self.nsrun(ns, ["sysctl", "-qw", "net.ipv4.tcp_wmem=4096 16384 67108864"])
        self.nsrun(self.ns_c, ["ip", "addr", "add", f"{self.ip_c}/24", "dev", self.ca])
        self.nsrun(self.ns_s, ["ip", "addr", "add", f"{self.ip_s}/24", "dev", self.sb])
        if self.kind == "dnpipe":
            self.dn_err = open(f"/tmp/dnpb{TAG}{self.key}.err", "w")
            self.dn = self.popen(self.ns_w, [str(DNPIPE), "run", "--a", self.wa, "--b", self.wb, "--control",
                                             self.sock, *self.extra], stdout=subprocess.DEVNULL, stderr=self.dn_err)
            deadline = time.monotonic() + 5
            while not os.path.exists(self.sock):  # appears once the daemon answers
                if self.dn.poll() is not None or time.monotonic() > deadline:
                    self.dn_err.flush()
                    raise RuntimeError(f"dnpipe on path {self.key} did not start: "
                                       f"{open(self.dn_err.name).read().strip()}")
                time.sleep(0.01)
        else:
            br = f"dnpb{TAG}{self.key}br"
            self.nsrun(self.ns_w, ["ip", "link", "add", br, "type", "bridge"])
            for ifname in (self.wa, self.wb):
                self.nsrun(self.ns_w, ["ip", "link", "set", ifname, "master", br])
            self.nsrun(self.ns_w, ["ip", "link", "set", br, "up"])
        self.srv = self.popen(self.ns_s, ["iperf3", "-s", "-p", "5201"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        time.sleep(0.2)
        self.nsrun(self.ns_c, ["ping", "-c", "2", "-i", "0.2", "-W", "2", self.ip_s], check=False)

    def teardown(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for ns in self.made:
            run(["ip", "netns", "del", ns], check=False)
        self.made.clear()
        if getattr(self, "dn_err", None):  # dnpipe's stderr: its warnings are printed, the file removed
            self.dn_err.close()
            for line in open(self.dn_err.name):
                if "dnpipe: ready:" not in line:
                    print(f"  path {self.key}: {line.rstrip()}", flush=True)
            os.unlink(self.dn_err.name)
            self.dn_err = None

    def endpoint_rx(self, threaded: bool) -> None:
        """Where the endpoints' kernels receive: inline (the default: in the context of
        whoever sends into their veth, dnpipe's send calls included) or in their own
        threaded-NAPI kernel threads, as on separate machines. NAPI on a veth needs GRO
        on the receiving end; the endpoints still send MTU-sized frames (their transmit
        offloads stay off), but the server, receiving coalesced segments, ACKs less often."""
        if threaded == self.threaded:
            return
        for ns, ifname in ((self.ns_c, self.ca), (self.ns_s, self.sb)):
            if threaded:
                self.nsrun(ns, ["ethtool", "-K", ifname, "gro", "on"])
                self.nsrun(ns, ["tee", f"/sys/class/net/{ifname}/threaded"], input="1\n")
            else:
                self.nsrun(ns, ["tee", f"/sys/class/net/{ifname}/threaded"], input="0\n", check=False)
                self.nsrun(ns, ["ethtool", "-K", ifname, "gro", "off"])
        self.threaded = threaded

    # dnpipe control
    def ctl(self, *args: str) -> dict:
        return json.loads(run([str(DNPIPE), "ctl", "--control", self.sock, *args]).stdout)

    def set(self, direction: str = "both", **kw) -> dict:
        argv = ["set", "--dir", direction]
        for k, v in kw.items():
            argv += ["--" + k.replace("_", "-"), str(v)]
        return self.ctl(*argv)

    def reset(self) -> None:
        self.set(bw=0, delay_us=0, plr=0, queue_slots=50)
        self.ctl("reset-peak")

    def counters(self, direction: str = "forward") -> dict:
        return self.ctl("show")["pipes"][direction]["counters"]

    def cpu_s(self) -> float:
        assert self.dn is not None
        f = open(f"/proc/{self.dn.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / CLK_TCK

    # tbf reference
    def unshaped(self) -> None:
        """The kernel bridge alone: no qdisc on its ports (a veth's default, noqueue)."""
        for ifname in (self.wa, self.wb):
            self.nsrun(self.ns_w, ["tc", "qdisc", "del", "dev", ifname, "root"], check=False)

    def tbf(self, rate: int, limit: int) -> None:
        burst = max(15140, rate // 8 // 1000)  # 10 frames or 1 ms at rate
        for ifname in (self.wa, self.wb):
            self.nsrun(self.ns_w, ["tc", "qdisc", "replace", "dev", ifname, "root", "tbf", "rate", f"{rate}bit",
                                   "burst", str(burst), "limit", str(limit)])

    # traffic
    def iperf(self, args: list[str], timeout: float = 120) -> dict:
        """iperf3's JSON; `_client_cpu_s` is the client's CPU time (its rusage at exit)."""
        for attempt in range(5):
            stdout, stderr, cpu = run_rusage(["ip", "netns", "exec", self.ns_c, "iperf3", "-c", self.ip_s, "-p",
                                              "5201", "-J", *args], timeout)
            try:
                d = json.loads(stdout)
            except json.JSONDecodeError:
                d = {"error": stdout + stderr}
            d["_client_cpu_s"] = cpu
            # The server may still be closing the previous test (at 1.6 s RTT that takes a
            # while); it refuses or resets the control connection, and we retry.
            if "error" not in d:
                return d
            time.sleep(2)
        return d

    def ping(self, count: int, interval: float, size: int = 56) -> list[tuple[float, float]]:
        """ICMP echo, [(receive unix time, rtt ms)] with microsecond resolution (iputils
        ping prints whole milliseconds above 100 ms, too coarse here)."""
        out = self.nsrun(self.ns_c, [sys.executable, "-c", PINGER, self.ip_s, str(count), str(interval), str(size)],
                         check=False, timeout=count * interval + 30).stdout
        res = []
        for line in out.splitlines():
            t, rtt = line.split()
            res.append((float(t), float(rtt)))
        return res


# An ICMP echo prober: kernel receive timestamps (SO_TIMESTAMPNS) against the send time,
# both CLOCK_REALTIME; prints "receive_unix_time rtt_ms" per reply. The kernel of the
# far side answers, so no user-space latency is measured on that end.
PINGER = r"""
import os, socket, struct, sys, time, select
dst, count, interval, size = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS
ident = os.getpid() & 0xFFFF
def csum(b):
    if len(b) % 2:
        b += b"\0"
    v = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    v = (v >> 16) + (v & 0xFFFF)
    v += v >> 16
    return ~v & 0xFFFF
sent = {}
next_t = time.monotonic()
deadline_after_last = 5.0
i = 0
last_send = None
while True:
    now = time.monotonic()
    if i < count and now >= next_t:
        body = struct.pack("!HH", ident, i) + bytes(size)
        hdr = struct.pack("!BBH", 8, 0, 0)
        pkt = struct.pack("!BBH", 8, 0, csum(hdr + body)) + body
        sent[i] = time.time_ns()
        s.sendto(pkt, (dst, 0))
        i += 1
        last_send = now
        next_t += interval
    if i >= count and (not sent or now - last_send > deadline_after_last):
        break
    wait = max(0.0, min(next_t - time.monotonic(), 0.05)) if i < count else 0.05
    r, _, _ = select.select([s], [], [], wait)
    if not r:
        continue
    data, anc, _, _ = s.recvmsg(65536, 256)
    ihl = (data[0] & 15) * 4
    typ, _, _, rid, seq = struct.unpack("!BBHHH", data[ihl:ihl + 8])
    if typ != 0 or rid != ident or seq not in sent:
        continue
    ts = None
    for level, kind, blob in anc:
        if level == socket.SOL_SOCKET and kind == 35:
            sec, nsec = struct.unpack("qq", blob[:16])
            ts = sec * 10**9 + nsec
    if ts is None:
        ts = time.time_ns()
    t0 = sent.pop(seq)
    print("%.6f %.6f" % (ts / 1e9, (ts - t0) / 1e6), flush=True)
    if i >= count and not sent:
        break
"""


class Watch:
    """Samples of both pipes' counters every few ms, from `dnpipe ctl watch`."""

    def __init__(self, path: NetPath, interval_ms: int = 5) -> None:
        self.p = subprocess.Popen([str(DNPIPE), "ctl", "--control", path.sock, "watch", "--interval-ms",
                                   str(interval_ms)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.t: list[float] = []
        self.fwd: list[dict] = []
        self.rev: list[dict] = []
        self.th = threading.Thread(target=self._read, daemon=True)
        self.th.start()

    def _read(self) -> None:
        for line in self.p.stdout:
            d = json.loads(line)
            self.t.append(d["t_ns"] / 1e9)
            self.fwd.append(d["pipes"]["forward"])
            self.rev.append(d["pipes"]["reverse"])

    def stop(self) -> None:
        self.p.stdin.close()
        self.p.wait(5)
        self.th.join(5)

    def at(self, t: float, direction: str) -> dict | None:
        i = bisect.bisect_left(self.t, t)
        cands = [j for j in (i - 1, i) if 0 <= j < len(self.t)]
        if not cands:
            return None
        j = min(cands, key=lambda j: abs(self.t[j] - t))
        if abs(self.t[j] - t) > 0.05:
            return None
        return (self.fwd if direction == "forward" else self.rev)[j]


# ---- results ---------------------------------------------------------------------------

@dataclass
class Row:
    section: str
    item: str
    configured: str
    measured: str
    target: str
    verdict: str
    note: str = ""


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)

    def add(self, *a, **kw) -> None:
        r = Row(*a, **kw)
        self.rows.append(r)
        print(f"  {r.section:<10} {r.item:<34} {r.configured:<26} {r.measured:<34} {r.target:<18} {r.verdict}"
              + (f"  ({r.note})" if r.note else ""), flush=True)

    def table(self) -> str:
        cols = ["section", "item", "configured", "measured", "target", "verdict", "note"]
        w = {c: max(len(c), *(len(getattr(r, c)) for r in self.rows)) for c in cols}
        lines = ["  ".join(c.ljust(w[c]) for c in cols), "  ".join("-" * w[c] for c in cols)]
        for r in self.rows:
            lines.append("  ".join(getattr(r, c).ljust(w[c]) for c in cols))
        return "\n".join(lines)


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


def late_us(c0: dict, c1: dict) -> float:
    """Mean departure lateness (dnpipe's own timing error) between two counter snapshots."""
    n = c1["tx_pkts"] - c0["tx_pkts"]
    return (c1["tx_late_ns_sum"] - c0["tx_late_ns_sum"]) / n / 1000 if n else float("nan")


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


# ---- sections --------------------------------------------------------------------------

DELAYS_MS = [2, 50, 250, 800]


def bench_rtt(path: NetPath, rep: Report, quick: bool) -> None:
    bw = 100_000_000
    ser_ms = 2 * PING_FRAME * 8 / bw * 1e3
    for d in DELAYS_MS:
        path.reset()
        path.set(bw=bw, delay_us=d * 1000)
        n = 10 if quick else 30
        c0 = path.counters()
        pings = path.ping(n, 0.2 if d < 800 else 0.25)
        c1 = path.counters()
        rtts = [r for _, r in pings]
        want = 2 * d + ser_ms
        if not rtts:
            rep.add("rtt-idle", f"{d} ms one-way", f"RTT {want:.3f} ms", "no replies", "|err| < 1 ms", "FAIL")
            continue
        err = mean(rtts) - want
        rep.add("rtt-idle", f"{d} ms one-way, bw 100M", f"RTT {want:.3f} ms",
                f"mean {mean(rtts):.3f} min {min(rtts):.3f} max {max(rtts):.3f}", "|mean-cfg| < 1 ms",
                verdict(abs(err) < 1.0 and min(rtts) >= 2 * d),
                f"n={len(rtts)}, fwd lateness {late_us(c0, c1):.0f} us, load {loadavg()}")

    for d in DELAYS_MS:
        if quick and d == 800:
            continue
        path.reset()
        path.set(bw=bw, delay_us=d * 1000)
        rtt_s = 2 * d / 1000
        dur = 8 if d <= 50 else (14 if d == 250 else 22)
        if quick:
            dur = min(dur, 8)
        warm = min(dur / 2, max(1.0, 6 * rtt_s))
        w = Watch(path, 5)
        c0, t0 = path.counters(), time.time()
        res: dict = {}
        th = threading.Thread(target=lambda: res.update(r=path.iperf(["-t", str(dur), *TCP_CC], timeout=dur + 60)))
        th.start()
        time.sleep(warm)
        n = int((dur - warm - 1) / 0.1)
        pings = path.ping(n, 0.1)
        th.join()
        c1, t1 = path.counters(), time.time()
        w.stop()
        resid, qd = [], []
        for trecv, rtt in pings:
            tsend = trecv - rtt / 1000
            f = w.at(tsend, "forward")
            r = w.at(tsend + rtt / 2000, "reverse")
            if f is None or r is None:
                continue
            q = (f["queue_bytes"] + r["queue_bytes"]) * 8 / bw * 1000
            qd.append(q)
            resid.append(rtt - (2 * d + ser_ms) - q)
        util = (c1["tx_bytes"] - c0["tx_bytes"]) * 8 / (t1 - t0) / bw
        gp = res.get("r", {}).get("end", {}).get("sum_received", {}).get("bits_per_second", float("nan"))
        rtts = [r for _, r in pings]
        if not resid:
            rep.add("rtt-load", f"{d} ms one-way + TCP", f"RTT {2 * d + ser_ms:.3f} ms", "no samples",
                    "|resid| < 1 ms", "FAIL")
            continue
        rep.add("rtt-load", f"{d} ms one-way + TCP, bw 100M", f"RTT {2 * d + ser_ms:.3f} + queueing",
                f"mean {mean(rtts):.2f}, queue {mean(qd):.2f}, resid {mean(resid):+.3f}", "|resid| < 1 ms",
                verdict(abs(mean(resid)) < 1.0),
                f"n={len(resid)}, TCP {gp / 1e6:.1f} Mbit/s, link busy {100 * util:.0f}%, "
                f"lateness {late_us(c0, c1):.0f} us, load {loadavg()}")


@dataclass
class Flow:
    """One iperf3 TCP flow through a path, with whose CPU it took."""
    got: float              # receiver goodput, bit/s (nan: iperf3 failed)
    retr: int
    el: float               # wall time of the measurement, s
    cpu_dn: float           # dnpipe process, cores (0 on the kernel bridge)
    cpu_path: float         # dnpipe + both iperf3 + softirq/NAPI threads, cores
    machine: float          # the whole machine busy, cores (others' work included)
    c0: dict | None = None  # dnpipe forward counters before / after
    c1: dict | None = None
    pkts: int = 0           # frames dnpipe sent, both directions
    split: dict = field(default_factory=dict)
    error: str = ""


def tcp_flow(path: NetPath, dur: int, profile: bool = False) -> Flow:
    """One cubic flow (2 s omitted, then `dur` s) through `path`, whatever it runs."""
    dn = path.dn.pid if path.dn else None
    srv = path.srv.pid if path.srv else None
    show0 = path.ctl("show")["pipes"] if dn else None
    d0, s0, k0, m0 = proc_cpu_s(dn), proc_cpu_s(srv), kernel_threads_cpu_s(f"dnpb{TAG}"), machine_busy_s()
    t0 = time.monotonic()
    prof: list[Profiler] = []
    timer = threading.Timer(2.5, lambda: prof.append(Profiler(dn, dur - 1))) if profile and dn else None
    if timer:
        timer.start()
    r = path.iperf(["-t", str(dur + 2), "-O", "2", *TCP_CC])
    el = time.monotonic() - t0
    d1, s1, k1, m1 = proc_cpu_s(dn), proc_cpu_s(srv), kernel_threads_cpu_s(f"dnpb{TAG}"), machine_busy_s()
    if timer:
        timer.join()
    f = Flow(got=r.get("end", {}).get("sum_received", {}).get("bits_per_second", float("nan")),
             retr=r.get("end", {}).get("sum_sent", {}).get("retransmits", 0), el=el, cpu_dn=(d1 - d0) / el,
             cpu_path=(d1 - d0 + s1 - s0 + k1 - k0 + r["_client_cpu_s"]) / el, machine=(m1 - m0) / el,
             split=prof[0].split() if prof else {}, error=str(r.get("error", ""))[:80])
    if dn:
        show1 = path.ctl("show")["pipes"]
        f.c0, f.c1 = show0["forward"]["counters"], show1["forward"]["counters"]
        f.pkts = sum(show1[d]["counters"]["tx_pkts"] - show0[d]["counters"]["tx_pkts"] for d in ("forward", "reverse"))
    return f


def flow_note(f: Flow, rate: int | None) -> str:
    """The note of a flow's row: CPU and, for dnpipe, what its counters say."""
    out = []
    if f.c0 is not None and rate:
        busy = (f.c1["tx_bytes"] - f.c0["tx_bytes"]) * 8 / f.el / rate
        out.append(f"max {100 * TCP_GOODPUT_SHARE:.1f}% (1448/1514), link busy ~{100 * busy:.0f}%")
    out.append(f"retr {f.retr}")
    if f.c0 is not None:
        out.append(f"queue drops {f.c1['drop_queue_pkts'] - f.c0['drop_queue_pkts']}, lateness {late_us(f.c0, f.c1):.0f} us")
        out.append(f"{f.pkts / f.el / 1e3:.0f} kpps, {f.pkts / max(1e-9, f.cpu_dn * f.el) / 1e3:.0f} k pkts per CPU-s")
    out.append(f"path cpu {100 * f.cpu_path:.0f}%, machine busy {100 * f.machine:.0f}%")
    if f.split:
        out.append(describe_split(f.split))
    return ", ".join(out) + f", load {loadavg()}"


def bench_tcp(path: NetPath, rep: Report, quick: bool, tbf_path: NetPath | None, profile: bool) -> None:
    """One TCP flow per rate, symmetric link, no delay, through dnpipe and then, at the
    same rate, through the kernel bridge with tbf (the reference of the same run). Twice:
    with dummynet's default queue of 50 slots (0.6 ms of buffer at 1 Gbit/s, where drop
    bursts cost TCP throughput) and with a 1 MiB byte queue (dummynet's default
    pipe_byte_limit). At 1 Gbit/s both once more with the endpoints receiving in their own
    kernel threads, which takes their TCP work out of dnpipe's send calls (dnpipe_cpu.py)."""
    dur = 6 if quick else 12
    queues = (("50 slots", {"queue_slots": 50}, 50 * 1514), ("1 MiB", {"queue_bytes": 1 << 20}, 1 << 20))
    for qname, qarg, tbf_limit in queues:
        cases = [(r, False) for r in (20_000_000, 100_000_000, 1_000_000_000)] + [(1_000_000_000, True)]
        for rate, threaded in cases:
            where = ", endpoints rx threaded" if threaded else ""
            path.endpoint_rx(threaded)
            path.reset()
            path.set(bw=rate, **qarg)
            f = tcp_flow(path, dur, profile and rate == 1_000_000_000)
            item = f"1 flow, {rate // 1_000_000} Mbit/s, q {qname}{where}"
            if math.isnan(f.got):
                rep.add("tcp", item, f"{rate / 1e6:.0f} Mbit/s", "iperf3 failed", "", "FAIL", f.error)
                continue
            rep.add("tcp", item, f"{rate / 1e6:.0f} Mbit/s",
                    f"{f.got / 1e6:.1f} Mbit/s ({100 * f.got / rate:.1f}%), cpu {100 * f.cpu_dn:.0f}%",
                    ">= 95% of bw" + (", cpu <= 25%" if rate == 1_000_000_000 else ""),
                    verdict(f.got >= 0.95 * rate and (rate < 1_000_000_000 or f.cpu_dn <= 0.25)), flow_note(f, rate))
            if tbf_path is None:
                continue
            tbf_path.endpoint_rx(threaded)
            tbf_path.tbf(rate, tbf_limit)
            t = tcp_flow(tbf_path, dur)
            rep.add("tcp-tbf", f"1 flow, {rate // 1_000_000} Mbit/s, limit {qname}{where}", f"{rate / 1e6:.0f} Mbit/s",
                    f"{t.got / 1e6:.1f} Mbit/s ({100 * t.got / rate:.1f}%)", "reference", "n/a",
                    f"kernel bridge + tbf, limit {tbf_limit} B, path cpu {100 * t.cpu_path:.0f}% (dnpipe's "
                    f"{100 * f.cpu_path:.0f}%: ratio {f.cpu_path / max(1e-9, t.cpu_path):.2f}; per Mbit/s "
                    f"{(f.cpu_path / f.got) / max(1e-18, t.cpu_path / t.got):.2f}), machine busy "
                    f"{100 * t.machine:.0f}%, load {loadavg()}")
    path.endpoint_rx(False)
    if tbf_path is not None:
        tbf_path.endpoint_rx(False)


def bench_fwd(path: NetPath, rep: Report, quick: bool, bridge: NetPath | None, profile: bool) -> None:
    """Unshaped forwarding: one TCP flow through dnpipe at bw 0 (every frame due at once)
    and through the plain kernel bridge (no qdisc): what this machine can forward at all,
    in bit/s and frames per second, and dnpipe's frames per CPU-second."""
    dur = 6 if quick else 12
    wake, call = timed_wake_cost_us()
    rep.add("fwd", "a timed wake-up on this machine", "sleep 100 us, slack 1 ns", f"{wake:.1f} us of CPU",
            "report", "n/a", f"a plain system call {call:.2f} us: the cost is the hardware timer each sleep "
            f"programs; dnpipe pays it per batch, load {loadavg()}")
    for threaded in (False, True):
        where = ", endpoints rx threaded" if threaded else ""
        path.endpoint_rx(threaded)
        path.reset()
        path.set(queue_bytes=1 << 20)
        f = tcp_flow(path, dur, profile)
        rep.add("fwd", f"unshaped, 1 TCP flow{where}", "bw 0 (unlimited)",
                f"{f.got / 1e6:.0f} Mbit/s, {f.pkts / f.el / 1e3:.0f} kpps, cpu {100 * f.cpu_dn:.0f}%",
                "report", "n/a", flow_note(f, None))
        if bridge is None:
            continue
        bridge.endpoint_rx(threaded)
        bridge.unshaped()
        b = tcp_flow(bridge, dur)
        rep.add("fwd-bridge", f"unshaped, 1 TCP flow{where}", "kernel bridge, no qdisc",
                f"{b.got / 1e6:.0f} Mbit/s", "reference", "n/a",
                f"dnpipe {100 * f.got / b.got:.0f}% of it; path cpu {100 * b.cpu_path:.0f}% (dnpipe's "
                f"{100 * f.cpu_path:.0f}%, per Mbit/s ratio {(f.cpu_path / f.got) / max(1e-18, b.cpu_path / b.got):.2f})"
                f", machine busy {100 * b.machine:.0f}%, load {loadavg()}")
    path.endpoint_rx(False)
    if bridge is not None:
        bridge.endpoint_rx(False)


def bench_loss(path: NetPath, rep: Report, quick: bool) -> None:
    n_target = 200_000 if quick else 1_100_000
    for plr in (0.01, 0.001, 0.000046):
        path.reset()
        path.set(direction="forward", plr=plr)
        c0 = path.counters()
        r = path.iperf(["-u", "-b", "80M", "-l", "100", "-k", str(n_target), "-w", "4M"], timeout=600)
        time.sleep(0.3)
        c1 = path.counters()
        n = c1["rx_pkts"] - c0["rx_pkts"]
        k = c1["drop_plr_pkts"] - c0["drop_plr_pkts"]
        mu, sd = n * plr, math.sqrt(n * plr * (1 - plr))
        lost = r.get("end", {}).get("sum", {}).get("lost_packets")
        rep.add("loss", f"plr {plr * 100:g}%", f"{plr * 100:g}%",
                f"{100 * k / n:.5f}% ({k}/{n})", f"{mu:.1f} +- 3x{sd:.1f}",
                verdict(abs(k - mu) <= 3 * sd and n >= (1_000_000 if not quick else 0)),
                f"z={(k - mu) / sd:+.2f}, iperf3 saw {lost} lost, kernel ring drops "
                f"{c1['rx_kernel_drops'] - c0['rx_kernel_drops']}")


def bench_queue(path: NetPath, rep: Report, quick: bool) -> None:
    for arg, bound in (("queue_slots", 50), ("queue_bytes", 65536)):
        path.reset()
        path.set(direction="forward", bw=10_000_000, **{arg: bound})
        w = Watch(path, 5)
        path.iperf(["-u", "-b", "40M", "-l", "1400", "-t", "2" if quick else "4"])
        w.stop()
        c = path.counters()
        key = "queue_peak_pkts" if arg == "queue_slots" else "queue_peak_bytes"
        now_key = "queue_pkts" if arg == "queue_slots" else "queue_bytes"
        sampled = max((s[now_key] for s in w.fwd), default=0)
        rep.add("queue", f"UDP 40M into 10M, {arg}", f"bound {bound}", f"peak {c[key]}, sampled max {sampled}",
                "peak <= bound", verdict(c[key] <= bound and sampled <= bound),
                f"queue drops {c['drop_queue_pkts']}")


def bench_two_paths(a: NetPath, b: NetPath, rep: Report, quick: bool) -> None:
    dur = 10 if quick else 20
    a.reset()
    b.reset()
    # A's queue holds its bandwidth-delay product (500 KB at 40 ms RTT): with fewer slots
    # no loss-based TCP fills the link, whatever the shaper.
    a.set(bw=100_000_000, delay_us=20_000, queue_bytes=1 << 20)
    b.set(bw=20_000_000, delay_us=400_000, plr=0.01)
    cb0 = b.counters()
    cpu_a0, cpu_b0, t0 = a.cpu_s(), b.cpu_s(), time.monotonic()
    wa, wb = Watch(a, 5), Watch(b, 5)
    res: dict = {}
    ths = [threading.Thread(target=lambda: res.update(a=a.iperf(["-t", str(dur), "-O", "2", *TCP_CC],
                                                               timeout=dur + 60))),
           threading.Thread(target=lambda: res.update(b=b.iperf(["-u", "-b", "15M", "-l", "200", "-t", str(dur)],
                                                               timeout=dur + 60))),
           threading.Thread(target=lambda: res.update(pa=a.ping(int((dur - 4) / 0.1), 0.1))),
           threading.Thread(target=lambda: res.update(pb=b.ping(int((dur - 4) / 0.2), 0.2)))]
    for t in ths[:2]:
        t.start()
    time.sleep(3)
    for t in ths[2:]:
        t.start()
    for t in ths:
        t.join()
    wa.stop()
    wb.stop()
    time.sleep(0.5)
    cb1 = b.counters()
    el = time.monotonic() - t0
    cpu_a, cpu_b = (a.cpu_s() - cpu_a0) / el, (b.cpu_s() - cpu_b0) / el
    bw = 100_000_000
    got = res["a"].get("end", {}).get("sum_received", {}).get("bits_per_second", float("nan"))
    rep.add("two-paths", "A: TCP, 100M 20 ms, q 1 MiB", "100 Mbit/s", f"{got / 1e6:.1f} Mbit/s ({100 * got / bw:.1f}%), "
            f"cpu {100 * cpu_a:.0f}%", ">= 95% of bw", verdict(got >= 0.95 * bw), f"load {loadavg()}")
    ser = 2 * PING_FRAME * 8 / bw * 1000
    resid = []
    for trecv, rtt in res["pa"]:
        tsend = trecv - rtt / 1000
        f, r = wa.at(tsend, "forward"), wa.at(tsend + rtt / 2000, "reverse")
        if f and r:
            resid.append(rtt - 40 - ser - (f["queue_bytes"] + r["queue_bytes"]) * 8 / bw * 1000)
    rtts = [r for _, r in res["pa"]]
    rep.add("two-paths", "A: RTT under its TCP flow", f"RTT {40 + ser:.3f} + queueing",
            f"mean {mean(rtts):.2f}, resid {mean(resid):+.3f}", "|resid| < 1 ms",
            verdict(bool(resid) and abs(mean(resid)) < 1.0), f"n={len(resid)}")
    rtts_b = [r for _, r in res["pb"]]
    want_b = 800 + 2 * PING_FRAME * 8 / 20e6 * 1000
    # B's forward queue holds the bursts of the 15 Mbit/s UDP stream (iperf3 paces per ms).
    resid_b, qd_b = [], []
    for trecv, rtt in res["pb"]:
        tsend = trecv - rtt / 1000
        f, r = wb.at(tsend, "forward"), wb.at(tsend + rtt / 2000, "reverse")
        if f and r:
            q = (f["queue_bytes"] + r["queue_bytes"]) * 8 / 20e6 * 1000
            qd_b.append(q)
            resid_b.append(rtt - want_b - q)
    rep.add("two-paths", "B: RTT under UDP 15M, 20M 400 ms", f"RTT {want_b:.3f} + queueing",
            f"mean {mean(rtts_b):.3f}, queue {mean(qd_b):.3f}, resid {mean(resid_b):+.3f}", "|resid| < 1 ms",
            verdict(bool(resid_b) and abs(mean(resid_b)) < 1.0), f"n={len(resid_b)} (1% of pings lost)")
    n = cb1["rx_pkts"] - cb0["rx_pkts"]
    k = cb1["drop_plr_pkts"] - cb0["drop_plr_pkts"]
    mu, sd = n * 0.01, math.sqrt(n * 0.01 * 0.99)
    rep.add("two-paths", "B: loss 1%", "1%", f"{100 * k / max(1, n):.4f}% ({k}/{n})", f"{mu:.0f} +- 3x{sd:.1f}",
            verdict(n > 0 and abs(k - mu) <= 3 * sd), f"z={(k - mu) / sd if sd else 0:+.2f}, cpu {100 * cpu_b:.0f}%")


def bench_exit(rep: Report) -> None:
    """SIGTERM to exit, on a pair of idle veths (the contract: within 100 ms)."""
    ns = f"dnpb{TAG}x"
    run(["ip", "netns", "add", ns])
    try:
        for a in ("xa", "xb"):
            run(["ip", "-n", ns, "link", "add", f"dnpb{a}", "type", "veth", "peer", "name", f"dnpb{a}p"])
            run(["ip", "-n", ns, "link", "set", f"dnpb{a}", "up"])
        sock = f"/tmp/dnpb{TAG}x.sock"
        times, gone = [], []
        for _ in range(7):
            p = subprocess.Popen(["ip", "netns", "exec", ns, str(DNPIPE), "run", "--a", "dnpbxa", "--b", "dnpbxb",
                                  "--control", sock], stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 5
            while not os.path.exists(sock) and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(0.2)
            t0 = time.monotonic()
            p.send_signal(signal.SIGTERM)
            while os.path.exists(sock) and time.monotonic() - t0 < 2:
                time.sleep(0.0002)
            gone.append(1000 * (time.monotonic() - t0))
            p.wait(5)
            times.append(1000 * (time.monotonic() - t0))
        times.sort()
        rep.add("exit", "SIGTERM to process gone (7 runs)", "< 100 ms",
                f"median {times[3]:.1f} ms, max {times[-1]:.1f} ms", "< 100 ms", verdict(times[-1] < 100),
                f"control socket gone after median {sorted(gone)[3]:.1f} ms, load {loadavg()}")
    finally:
        run(["ip", "netns", "del", ns], check=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="shorter runs and smaller samples")
    ap.add_argument("--only", default="rtt,tcp,fwd,loss,queue,two,exit",
                    help="comma list of sections: rtt, tcp, fwd (unshaped forwarding), loss, queue, two, exit "
                         "(default: all)")
    ap.add_argument("--no-tbf", action="store_true", help="skip the kernel bridge references (tbf, plain bridge)")
    ap.add_argument("--profile", action="store_true",
                    help="sample dnpipe with perf during the 1 Gbit/s and unshaped flows and print where its CPU "
                         "time goes (its own work vs the endpoints' kernel work run inside its send calls)")
    ap.add_argument("--cc", default="cubic", help="TCP congestion control of the iperf3 flows (default cubic)")
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    ap.add_argument("--dnpipe-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for `dnpipe run` (repeat; e.g. --dnpipe-arg=--batch-us --dnpipe-arg=100)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        return 2
    for tool in ("ip", "ethtool", "iperf3", "ping", "tc", "make"):
        if shutil.which(tool) is None:
            print(f"{tool} is missing (apt-get install iproute2 ethtool iperf3 iputils-ping make gcc)",
                  file=sys.stderr)
            return 2
    run(["make", "-C", str(SRC), "-s"])
    only = set(args.only.split(","))
    TCP_CC[:] = ["-C", args.cc]
    rep = Report()
    paths: list[NetPath] = []
    try:
        a = NetPath("a", 1, extra=args.dnpipe_arg)
        paths.append(a)
        a.setup()
        tbf = None
        if only & {"tcp", "fwd"} and not args.no_tbf:
            tbf = NetPath("t", 3, kind="tbf")
            paths.append(tbf)
            tbf.setup()
        print(f"dnpipe bench ({'quick' if args.quick else 'full'}), {run([str(DNPIPE), '--version']).stdout.strip()},"
              f" run args {' '.join(args.dnpipe_arg) or '(defaults)'}, TCP {args.cc}, load {loadavg()}", flush=True)
        if "rtt" in only:
            bench_rtt(a, rep, args.quick)
        profile = args.profile and Profiler.available()
        if args.profile and not profile:
            print("--profile: perf is missing or refused here (apt-get install linux-perf); no split", flush=True)
        if "tcp" in only:
            bench_tcp(a, rep, args.quick, tbf, profile)
        if "fwd" in only:
            bench_fwd(a, rep, args.quick, tbf, profile)
        if "loss" in only:
            bench_loss(a, rep, args.quick)
        if "queue" in only:
            bench_queue(a, rep, args.quick)
        if "two" in only:
            b = NetPath("b", 2, extra=args.dnpipe_arg)
            paths.append(b)
            b.setup()
            bench_two_paths(a, b, rep, args.quick)
        if "exit" in only:
            bench_exit(rep)
    finally:
        for p in paths:
            p.teardown()
    print()
    print(rep.table())
    fails = sum(r.verdict == "FAIL" for r in rep.rows)
    print(f"\n{sum(r.verdict == 'PASS' for r in rep.rows)} PASS, {fails} FAIL, load {loadavg()}")
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in rep.rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
