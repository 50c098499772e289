"""The BPF congestion controls on this kernel, checked against their reference model.

A test build of every coupled algorithm and variant (-DCTL_TRACE: registered as `<short>_trace`, so it
never meets a real run's algorithm on this shared kernel) records each window decision (and each
HyStart decision of the MCubic builds) in a map. Real MPTCP traffic (a bulk transfer that closes
cleanly, one subflow per path) crosses two shaped paths between three namespaces of this test's own; afterwards every
recorded decision is replayed through nodes/congestion/model.py and must agree exactly.

The coupling map must not lie: no decision may see more subflows than its connection has (two
here), both must be seen together, and once the connections are gone the program's coupling map
(`<short>_conns`, found through the programs of the struct_ops map this test registered) must be
empty before the program is unregistered. A connection that falls back to TCP (a server without
MPTCP) and a subflow the server's path manager removes mid-connection leave no phantom slot. One
test runs long enough at 200 ms RTT (the dnpipe forwarder: this kernel has no netem) to replay
MCubic's multi-second epochs, including the frozen (mcubic) and wrapped (mcubic_wrap) phases.
MCubic's HyStart must end slow start where the kernel's Cubic does on the same paths: the ACK-train
test on the unshaped short paths, the delay test behind the long paths' deep queues, each
detection replayed by the model. Nothing may stay registered.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from nodes.congestion import hostctl
from nodes.congestion.build import build
from nodes.congestion.catalog import ALGORITHMS, coupled_algorithms
from nodes.congestion.model import (EV_HYSTART, EV_INCREASE, EV_LINK, EV_ROUND, EV_SSTHRESH, EV_UNLINK, HYSTART_ACK_TRAIN,
                                    HYSTART_DELAY, TRACE_RECORD_SIZE, WHY_CLASH, TraceRecord, check_trace,
                                    decode_trace_record, replay)
from tests.support.bpfmap import BpfMap, read_trace
from tests.support.tracepath import ns, sh

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
HOSTCTL = [sys.executable, hostctl.__file__]
BULK = str(ROOT / "tests" / "support" / "mptcp_bulk.py")
PFX = f"cc{os.getpid() % 100000}"
A, R, B = f"{PFX}a", f"{PFX}r", f"{PFX}b"
HOLDER = f"test:{os.getpid()}"
SUBFLOWS = 2                                    # what every connection here has at most
MCUBIC_HYSTART = ("mcubic", "mcubic_wrap", "mcubic_stretch")
TRACE_CAPACITY = 32768      # CTL_TRACE_LEN of ctl_cc.h: the records a trace build keeps


def _two_paths(a: str, r: str, b: str, net: int, shape) -> None:
    """a -- r -- b over two veth paths (10.<net>.1/24 and 10.<net>.2/24), each forwarded in r by
    `shape(i, r_port_a, r_port_b)`; MPTCP on with one extra subflow, b signalling its second
    address."""
    for n in (a, r, b):
        sh("ip", "netns", "add", n)
        ns(n, "ip", "link", "set", "lo", "up")
    for i in (1, 2):
        sh("ip", "link", "add", f"va{i}", "netns", a, "type", "veth", "peer", "name", f"ra{i}", "netns", r)
        sh("ip", "link", "add", f"vb{i}", "netns", b, "type", "veth", "peer", "name", f"rb{i}", "netns", r)
        ns(a, "ip", "addr", "add", f"10.{net}.{i}.1/24", "dev", f"va{i}")
        ns(b, "ip", "addr", "add", f"10.{net}.{i}.2/24", "dev", f"vb{i}")
        for n, dev in ((a, f"va{i}"), (b, f"vb{i}"), (r, f"ra{i}"), (r, f"rb{i}")):
            ns(n, "ethtool", "-K", dev, "tx", "off", "tso", "off", "gso", "off", "gro", "off", check=False)
            ns(n, "ip", "link", "set", dev, "up")
        shape(i, f"ra{i}", f"rb{i}")
    for n in (a, b):
        ns(n, "sysctl", "-q", "net.mptcp.enabled=1")
        ns(n, "ip", "mptcp", "limits", "set", "subflows", str(SUBFLOWS - 1), "add_addr_accepted", "1")
    ns(b, "ip", "mptcp", "endpoint", "add", f"10.{net}.2.2", "dev", "vb2", "signal", "id", "7")


def bridged_paths(a: str, r: str, b: str, net: int, rates: tuple[str, str], *, both_ways: bool = False,
                  burst: str = "4kb", limit: str = "30kb"):
    """A module fixture's body: a -- r -- b (_two_paths), each path a bridge in r with a token
    bucket of its rate towards b (and towards a too with `both_ways`); the namespaces deleted after."""
    def shape(i, pa, pb):
        ns(r, "ip", "link", "add", f"br{i}", "type", "bridge")
        for port in (pa, pb):
            ns(r, "ip", "link", "set", port, "master", f"br{i}")
        ns(r, "ip", "link", "set", f"br{i}", "up")
        for port in ((pa, pb) if both_ways else (pb,)):
            ns(r, "tc", "qdisc", "add", "dev", port, "root", "tbf", "rate", rates[i - 1], "burst", burst,
               "limit", limit)
    try:
        _two_paths(a, r, b, net, shape)
        yield
    finally:
        for n in (a, r, b):
            sh("ip", "netns", "del", n, check=False)


@pytest.fixture(scope="module")
def paths():
    """a -- r -- b, two paths bridged in r: 20 and 10 Mbit/s token buckets with 30 kB queues
    towards b (losses and queueing delay, so every branch of every algorithm runs)."""
    yield from bridged_paths(A, R, B, 93, ("20mbit", "10mbit"))


@pytest.fixture(scope="module")
def objects(bpf_trace_dir):
    return build(dest=bpf_trace_dir, trace=True)


def _hostctl(*args: str) -> dict:
    p = subprocess.run(HOSTCTL + list(args), capture_output=True, text=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


class Registered:
    """One trace build registered for this test, its maps found through its own programs."""

    def __init__(self, algorithm: str, objects) -> None:
        self.alg = ALGORITHMS[algorithm]
        self.name = self.alg.trace_name
        loaded = _hostctl("load", self.name, objects.sha256_of(algorithm), str(objects.object_of(algorithm)), HOLDER)
        assert loaded["ok"] and loaded["action"] == "registered", loaded
        self.unloaded: dict | None = None
        try:
            self.maps = hostctl._maps_of(loaded["id"])
            stem = self.alg.stem
            assert {f"{stem}_conns", f"{stem}_clash", f"{stem}_trace", f"{stem}_tidx"} <= set(self.maps), self.maps
            assert loaded["conns_map"] == self.maps[f"{stem}_conns"]
        except BaseException:
            self.unload()
            raise

    def conns(self) -> int:
        """Entries in the coupling map now."""
        return len(json.loads(sh("bpftool", "-j", "map", "dump", "id", str(self.maps[f"{self.alg.stem}_conns"])).stdout))

    def wait_empty(self, timeout: float = 20) -> int:
        """Wait for the connections to be gone (a closed socket drains its send buffer first: at
        3 Mbit/s and 200 ms that takes seconds); the entries left."""
        deadline = time.monotonic() + timeout
        while (n := self.conns()) and time.monotonic() < deadline:
            time.sleep(0.2)
        return n

    def clash(self) -> int:
        """The program's count of subflows refused coupling (their slot was a live sibling's)."""
        with BpfMap(self.maps[f"{self.alg.stem}_clash"], 4) as m:
            raw = m.lookup(0)
        return int.from_bytes(raw, "little") if raw else 0

    def records(self) -> list[TraceRecord]:
        return read_trace(self.maps, self.alg.stem, TRACE_RECORD_SIZE, decode_trace_record)[1]

    def unload(self) -> dict:
        if self.unloaded is None:
            self.unloaded = _hostctl("unload", self.name, HOLDER)
        return self.unloaded


def bulk(client: str, server: str, addr: str, port: int, cc: str, seconds: float, *,
         mptcp_server: bool = True, during=None) -> int:
    """One MPTCP bulk transfer client -> server that ends cleanly (tests/support/mptcp_bulk.py:
    the receiver reads to the end before it closes, so every subflow closes within round trips);
    `during(sender)` runs while the sender does. Returns the bytes received."""
    srv = subprocess.Popen(["ip", "netns", "exec", server, sys.executable, BULK, "recv" if mptcp_server else "recv-tcp",
                            str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert srv.stdout is not None and srv.stdout.readline().strip() == "listening", srv.stderr
        cli = subprocess.Popen(["ip", "netns", "exec", client, sys.executable, BULK, "send", addr, str(port), cc,
                                str(seconds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if during is not None:
            during(cli)
        out, err = cli.communicate(timeout=seconds + 120)
        assert cli.returncode == 0, err
        received, err = srv.communicate(timeout=60)
        assert srv.returncode == 0, err
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait(timeout=10)
    assert int(received) == int(out) > 0
    return int(received)


def links(records: list[TraceRecord]) -> dict[tuple[int, int], list[tuple[str, int, int, int, int]]]:
    """(connection token, slot) -> how that subflow joined and left: (event, why, tcp state, its
    entry was found, the entry was deleted)."""
    names = {EV_LINK: "link", EV_UNLINK: "unlink"}
    out: dict[tuple[int, int], list[tuple[str, int, int, int, int]]] = defaultdict(list)
    for r in records:
        if r.event in names:
            out[(r.token, r.sub)].append((names[r.event], r.inputs[0], r.inputs[1], r.outputs[0], r.outputs[1]))
    return dict(out)


def assert_map_emptied(what: str, left: dict, records: list[TraceRecord]) -> None:
    """hostctl unloaded the program with its coupling map empty; every subflow that linked left."""
    assert left["ok"] and left["action"] == "unregistered", left
    joined = links(records)
    assert left["conns_left"] == 0, (f"{what}: {left['conns_left']} phantom connection entries "
                                     f"{left.get('leftovers')}; links: {joined}")
    stuck = {k: v for k, v in joined.items() if v[-1][0] != "unlink"}
    assert not stuck, f"{what}: subflows that never left: {stuck}"


def check_decisions(algorithm: str, records: list[TraceRecord], *, min_replayed: int = 20,
                    subflows: int = SUBFLOWS) -> tuple[int, list[TraceRecord]]:
    """Every decision agrees with the model; none saw more subflows than its connection had."""
    replayed, bad = check_trace(algorithm, records)
    assert replayed >= min_replayed, f"{algorithm}: only {replayed} decisions recorded ({len(records)} records)"
    assert bad == [], f"{algorithm}: {len(bad)} of {replayed} decisions differ from the model; first: {bad[0]}"
    views = [r for r in records if r.event in (EV_INCREASE, EV_SSTHRESH, EV_ROUND)]
    too_many = [r for r in views if r.view.n > subflows]
    assert not too_many, f"{algorithm}: a decision saw {too_many[0].view.n} subflows: {too_many[0]}"
    slots = defaultdict(set)
    for r in views:
        if r.token:
            slots[r.token].add(r.sub)
    assert all(len(s) <= subflows for s in slots.values()), dict(slots)
    return replayed, [r for r in views if r.view.n == 2]


@pytest.mark.parametrize("algorithm", sorted(coupled_algorithms()))      # bbr3: tests/integration/test_bbr3.py
def test_the_program_decides_as_its_model_on_real_traffic(algorithm, paths, objects):
    reg = Registered(algorithm, objects)
    try:
        bulk(A, B, "10.93.1.2", 5301, reg.name, 4)
        reg.wait_empty()
        records = reg.records()
    finally:
        left = reg.unload()
    assert_map_emptied(algorithm, left, records)
    _, coupled = check_decisions(algorithm, records)
    assert coupled, f"{algorithm}: no decision saw both subflows of the connection"
    hystart = [r for r in records if r.event == EV_HYSTART]
    if algorithm in MCUBIC_HYSTART:
        assert hystart, f"{algorithm}: no HyStart decision recorded"
        # Unshaped RTT (tens of us), ACKs 0.6-1.2 ms apart, 30 kB queues (12-24 ms): HyStart must end
        # slow start from a window of 16 on (the ACK-train test, or the delay test where a queue
        # builds first), as the kernel's Cubic does on these paths (nstat: 2 ACK-train detections
        # of 2 subflows in 4 s when this was written).
        fired = hystart_detections(algorithm, hystart)
        assert fired, f"{algorithm}: HyStart never fired in {len(hystart)} decisions: {hystart_summary(hystart)}"
        # the program's own counters (hostctl: hystart_exits, kept in the run record) count exactly
        # the detections its trace shows (every one, while the trace did not fill up)
        want = {"ack_train": sum(1 for r in fired if r.outputs[0] & HYSTART_ACK_TRAIN),
                "delay": sum(1 for r in fired if r.outputs[0] & HYSTART_DELAY)}
        got = left.get("hystart_exits")
        assert isinstance(got, dict) and got["ack_train"] + got["delay"] > 0, left
        print(f"\n{algorithm}: the program's own HyStart exits {got}, its trace's {want}")
        if len(records) < TRACE_CAPACITY:
            assert got == want, (got, want)
        else:
            assert got["ack_train"] >= want["ack_train"] and got["delay"] >= want["delay"], (got, want)
    else:
        assert not hystart
        assert "hystart_exits" not in left, left


def hystart_detections(algorithm: str, records: list[TraceRecord], kind: int = HYSTART_ACK_TRAIN | HYSTART_DELAY
                       ) -> list[TraceRecord]:
    """The HyStart decisions that ended slow start (a detector of `kind` fired), each checked
    against the model's replay: the same detectors, and ssthresh set to the window."""
    fired = [r for r in records if r.event == EV_HYSTART and r.outputs[0] & kind]
    for r in fired:
        want = replay(algorithm, r)
        assert want is not None and want[0] == r.outputs[0], f"{algorithm}: the model does not fire here: {r}"
        assert r.outputs[1] == r.cwnd_before, f"{algorithm}: a detection must set ssthresh = cwnd: {r}"
    return fired


def hystart_summary(records: list[TraceRecord]) -> dict:
    """Per subflow (token, slot): HyStart decisions, windows seen, detections, last delay_min (us)."""
    out: dict = {}
    for r in records:
        if r.event != EV_HYSTART:
            continue
        e = out.setdefault((r.token, r.sub), {"n": 0, "cwnd": [r.cwnd_before, r.cwnd_before], "found": []})
        e["n"] += 1
        e["cwnd"][1] = r.cwnd_before
        e["delay_min_us"] = r.inputs[3]
        if r.outputs[0]:
            e["found"].append((r.outputs[0], r.cwnd_before))
    return out


def test_a_fallback_and_a_removed_subflow_leave_no_phantom_slot(paths, objects):
    """An MPTCP client against a server without MPTCP falls back to TCP at the handshake; then
    a new MPTCP connection, whose second subflow the server's path manager removes after 3 s
    (REMOVE_ADDR: the client closes it). Neither leaves a slot behind: the fallback
    connection's decisions see one subflow, the next connection never sees more than its two,
    only its remaining subflow once the other is gone, and the map is empty after each."""
    reg = Registered("mcubic", objects)
    try:
        bulk(A, B, "10.93.1.2", 5302, reg.name, 3, mptcp_server=False)
        assert reg.wait_empty() == 0, f"the fallback connection left its entry: {links(reg.records())}"
        fallback = reg.records()
        assert fallback and all(r.view.n <= 1 for r in fallback if r.event == EV_INCREASE), fallback[:3]

        def remove_second_address(sender):
            time.sleep(3.5)
            ns(B, "ip", "mptcp", "endpoint", "delete", "id", "7")
        try:
            bulk(A, B, "10.93.1.2", 5303, reg.name, 7, during=remove_second_address)
        finally:
            ns(B, "ip", "mptcp", "endpoint", "add", "10.93.2.2", "dev", "vb2", "signal", "id", "7", check=False)
        reg.wait_empty()
        records = reg.records()[len(fallback):]
    finally:
        left = reg.unload()
    assert_map_emptied("mcubic", left, fallback + records)
    _, coupled = check_decisions("mcubic", records)
    assert coupled, "the second connection never coupled its two subflows"
    token = coupled[0].token
    # the joined subflow (slot 1, the server's second address) left while the first still sent
    gone = [i for i, r in enumerate(records) if r.event == EV_UNLINK and (r.token, r.sub) == (token, 1)]
    assert gone, f"the removed subflow never left: {links(records)}"
    after = [r for r in records[gone[0]:] if r.event == EV_INCREASE and (r.token, r.sub) == (token, 0)]
    assert len(after) >= 20, f"only {len(after)} decisions of the remaining subflow after the other left"
    assert all(r.view.n == 1 for r in after), \
        f"after the second subflow left, decisions still saw {max(r.view.n for r in after)} subflows"


def test_a_ninth_subflow_whose_slot_a_live_sibling_holds_runs_uncoupled_and_is_counted(paths, objects):
    """A subflow's slot is its subflow id modulo 8, and ids grow with every subflow a connection
    ever had. The server's second address removed and announced again 8 times over one connection:
    the joined subflows get ids 2 to 9 (one at a time: never more than two subflows at once), and
    id 9 maps to slot 0, the first subflow's, still alive.
    It must not be merged into that slot: it runs uncoupled for good (a CLASH unlink in the trace),
    the program counts it (hostctl: coupling_refused), no decision sees more subflows than the
    connection has at once (two), and the map is empty afterwards."""
    reg = Registered("mcubic", objects)

    def joined_ports() -> set[str]:
        """The local ports of A's established subflows to B's second address (the joined ones)."""
        out = ns(A, "ss", "-tnH", "state", "established", "dst", "10.93.2.2", check=False).stdout
        return {line.split()[-2].rsplit(":", 1)[-1] for line in out.splitlines() if line.split()}

    def wait_for(cond, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cond():
                return True
            time.sleep(0.1)
        return False

    def churn(sender):
        # a new endpoint id each time (this kernel announces a re-added id again only sometimes),
        # one announcement at a time, each round paced by what the kernel did (a join seen, then
        # gone), not by fixed sleeps: on a loaded machine a join can take seconds, and removing
        # the address while it is under way only resets it. At most 24 rounds, while the sender runs,
        # from the first join on (or 1.5 s).
        wait_for(joined_ports, 1.5)
        for i in range(24):
            if reg.clash() or sender.poll() is not None:
                return
            ns(B, "ip", "mptcp", "endpoint", "flush")
            wait_for(lambda: not joined_ports(), 5.0)
            before = joined_ports()
            ns(B, "ip", "mptcp", "endpoint", "add", "10.93.2.2", "dev", "vb2", "signal", "id", str(10 + i))
            wait_for(lambda: joined_ports() - before, 8.0)
    def rates(r1: str, r2: str) -> None:
        for dev, rate in (("rb1", r1), ("rb2", r2)):
            ns(R, "tc", "qdisc", "change", "dev", dev, "root", "tbf", "rate", rate, "burst", "4kb", "limit", "30kb")
    ns(A, "ip", "mptcp", "limits", "set", "subflows", "8", "add_addr_accepted", "8")     # the kernel's maxima
    try:
        try:
            # Slower paths for this test: 40 s of churn time on a loaded machine (a round waits for
            # the kernel's join and removal), with every decision still in the trace (32768 records:
            # ~1270 a second at 20 + 10 Mbit/s, a fifth of that here).
            rates("4mbit", "2mbit")
            bulk(A, B, "10.93.1.2", 5304, reg.name, 40, during=churn)
        finally:
            rates("20mbit", "10mbit")
            ns(A, "ip", "mptcp", "limits", "set", "subflows", str(SUBFLOWS - 1), "add_addr_accepted", "1")
            ns(B, "ip", "mptcp", "endpoint", "flush", check=False)
            ns(B, "ip", "mptcp", "endpoint", "add", "10.93.2.2", "dev", "vb2", "signal", "id", "7", check=False)
        reg.wait_empty()
        records = reg.records()
        counted = reg.clash()
    finally:
        left = reg.unload()
    assert_map_emptied("mcubic", left, records)
    joined = links(records)
    clashes = [r for r in records if r.event == EV_UNLINK and r.inputs[0] == WHY_CLASH]
    assert clashes, f"no subflow reached a slot a live sibling held (links per slot: {sorted(joined)})"
    assert all(r.sub == 0 for r in clashes), clashes
    assert counted == len(clashes) and left["coupling_refused"] == counted, (counted, left)
    replayed, bad = check_trace("mcubic", records)
    assert replayed >= 20 and bad == [], bad[:1]
    views = [r for r in records if r.event == EV_INCREASE]
    assert max(r.view.n for r in views) <= SUBFLOWS, max(r.view.n for r in views)
    # the first subflow keeps its slot and its coupling after the clash
    tok, at = clashes[0].token, records.index(clashes[0])
    assert [r for r in records[at:] if r.event == EV_INCREASE and (r.token, r.sub) == (tok, 0)], \
        "the first subflow lost its coupling when the 9th subflow arrived"


# ---- the long replay: MCubic's epochs at 200 ms RTT ----------------------------------------------

DNPIPE = next((p for p in (ROOT / ".state" / "bin" / "dnpipe", ROOT / "bridges" / "dnpipe" / "build" / "dnpipe")
               if p.exists()), None)
LA, LR, LB = f"{PFX}la", f"{PFX}lr", f"{PFX}lb"
LONG_S = 30
LONG_RATE_BPS = 3_000_000
ONE_WAY_US = 100_000                    # 200 ms RTT
LONG_QUEUE_SLOTS = 25


@pytest.fixture(scope="module")
def long_paths(tmp_path_factory):
    """Two paths of 3 Mbit/s, 100 ms each way, 25-packet drop-tail queues, each a dnpipe
    forwarder in its own right (this kernel has no netem)."""
    if DNPIPE is None:
        pytest.fail("dnpipe is not built: scripts/setup.sh builds it into .state/bin/dnpipe")
    tmp = tmp_path_factory.mktemp("dnpipe")
    procs: list[subprocess.Popen] = []

    def shape(i, pa, pb):
        sock = tmp / f"p{i}.sock"
        procs.append(subprocess.Popen(["ip", "netns", "exec", LR, str(DNPIPE), "run", "--a", pa, "--b", pb,
                                       "--control", str(sock), "--seed", str(i)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        sh(str(DNPIPE), "ctl", "--control", str(sock), "set", "--dir", "both", "--bw", str(LONG_RATE_BPS),
           "--delay-us", str(ONE_WAY_US), "--queue-slots", str(LONG_QUEUE_SLOTS))
    try:
        _two_paths(LA, LR, LB, 94, shape)
        yield
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        for n in (LA, LR, LB):
            sh("ip", "netns", "del", n, check=False)


def test_mcubic_epochs_at_a_long_rtt_replay_with_their_frozen_and_wrapped_phases(long_paths, objects):
    """mcubic and mcubic_wrap side by side for 30 s at 200 ms RTT (two MPTCP connections over
    the same two paths): every decision of both agrees with the model, and each reading shows
    the phase it is about after a loss of a coupled subflow -- a run of decisions with the
    target at or below the window (cnt = 100 cwnd: the literal reading's freeze) for mcubic, a
    target wrapped below zero (above 2^31) for mcubic_wrap."""
    regs = {a: Registered(a, objects) for a in ("mcubic", "mcubic_wrap")}
    try:
        with ThreadPoolExecutor(2) as pool:
            runs = [pool.submit(bulk, LA, LB, "10.94.1.2", port, reg.name, LONG_S)
                    for port, reg in zip((5401, 5402), regs.values())]
            for f in runs:
                f.result(timeout=LONG_S + 120)
        for r in regs.values():
            r.wait_empty()
        records = {a: r.records() for a, r in regs.items()}
    finally:
        lefts = {a: r.unload() for a, r in regs.items()}
    for a, left in lefts.items():
        assert_map_emptied(a, left, records.get(a, []))
    for a, recs in records.items():
        assert len(recs) < 32768, f"{a}: the trace map filled up ({len(recs)} records)"
        _, coupled = check_decisions(a, recs, min_replayed=500)
        assert coupled, a
    frozen = _longest_run(records["mcubic"], lambda r: r.outputs[2] <= r.cwnd_before and r.inputs[0] < r.outputs[1]
                          and r.outputs[0] == 100 * r.cwnd_before)
    assert frozen >= 20, f"mcubic: no frozen phase (longest run of cnt = 100 cwnd below the origin: {frozen})"
    wrapped = [r for r in records["mcubic_wrap"] if r.event == EV_INCREASE and r.outputs[2] >= 1 << 31]
    assert wrapped, "mcubic_wrap: no wrapped target"
    assert all(r.outputs[0] == 1 for r in wrapped), "a wrapped target must give 3.14's minimum cnt"
    # A 25-packet queue at 3 Mbit/s holds 100 ms: HyStart's delay test (an RTT above delay_min +
    # 16 ms over a round's first 8 samples) ends slow start before the queue overflows on some of the
    # four subflows, as it does for the kernel's Cubic on this path (nstat: 1 or 2 delay detections
    # of 2 subflows in 15 s when this was written). A subflow that overflows first ends by loss.
    delay = {a: hystart_detections(a, recs, HYSTART_DELAY) for a, recs in records.items()}
    assert any(delay.values()), "HyStart's delay test never fired: " + "; ".join(
        f"{a}: {hystart_summary(recs)}" for a, recs in records.items())


def _longest_run(records: list[TraceRecord], pred) -> int:
    """The longest run of consecutive decisions of one subflow for which pred holds."""
    best, cur = 0, defaultdict(int)
    for r in records:
        if r.event != EV_INCREASE:
            continue
        key = (r.token, r.sub)
        cur[key] = cur[key] + 1 if pred(r) else 0
        best = max(best, cur[key])
    return best


def test_two_racks_with_one_run_id_hold_a_program_apart(objects, tmp_path):
    """Two racks on this kernel whose runs got the same run id: each holds the program under
    its own holder id (rack, state dir, run), so the first to leave does not unregister it from
    under the other, and the last one does."""
    from controller.run.congestion import holder_id, state_identity
    rid = "20261126T000000Z_shared-bottleneck_cc-lia"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    h1 = holder_id("virtual", state_identity(tmp_path / "a"), rid)
    h2 = holder_id("virtual", state_identity(tmp_path / "b"), rid)
    name, sha, obj = "lia_trace", objects.sha256_of("lia"), str(objects.object_of("lia"))
    first = _hostctl("load", name, sha, obj, h1)
    try:
        assert first["action"] == "registered", first
        second = _hostctl("load", name, sha, obj, h2)
        assert second["action"] == "shared" and second["holders"] == [h1, h2], second
        assert _hostctl("unload", name, h1)["action"] == "left"
        assert name in open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split()
    finally:
        _hostctl("unload", name, h1)
        last = _hostctl("unload", name, h2)
    assert last["action"] == "unregistered", last
    assert name not in open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split()


def test_a_leaked_hold_fails_the_restore_check_and_another_racks_hold_does_not(objects):
    """tests/support/kernel_cc.py on this kernel: a program another holder registered while a test
    ran is not the test's (the old comparison of the kernel's lists fails on it, this one does not);
    the test's own hold left behind fails it, naming the hold and the name it kept registered."""
    from tests.support.kernel_cc import assert_nothing_left, left_behind, snapshot
    name, sha, obj = "olia_trace", objects.sha256_of("olia"), str(objects.object_of("olia"))
    other = f"{HOLDER}:another-rack"
    before = snapshot()
    assert name not in before.available, "olia_trace is registered already: another test's leftover"
    try:
        assert _hostctl("load", name, sha, obj, other)["action"] == "registered"
        during = snapshot()
        assert not during.available <= before.available                # what the old check compared
        assert left_behind(before, during, {HOLDER}) == []               # another rack's: not ours
        assert _hostctl("load", name, sha, obj, HOLDER)["action"] == "shared"
        assert _hostctl("unload", name, other)["action"] == "left"      # the other leaves; ours stays
        problems = left_behind(before, snapshot(), {HOLDER})
        assert f"{name} is still held by {HOLDER}" in problems, problems
        assert f"{name} appeared in tcp_available_congestion_control and no other holder holds it" in problems
        with pytest.raises(AssertionError, match=f"{name} is still held by {HOLDER}"):
            assert_nothing_left(before, {HOLDER})
    finally:
        _hostctl("unload", name, other)
        last = _hostctl("unload", name, HOLDER)
    assert last["action"] == "unregistered", last
    assert_nothing_left(before, {HOLDER, other})


def test_nothing_stays_registered(paths, objects):
    from tests.support.kernel_cc import held_by_others, snapshot
    snap = snapshot()
    others = held_by_others(snap, {HOLDER})     # another checkout's suite on this kernel: its own trace builds
    assert not [a for a in snap.available if a.endswith("_trace") and a not in others]
    assert not [n for n, e in snap.holders.items() if HOLDER in e.get("holders", [])]


def test_builds_are_reproducible(tmp_path):
    """The same sources for the same BTF give the same objects wherever they are built (another
    state dir, another working directory): records name an object sha256 anyone can rebuild,
    and two racks on one kernel share one registered program instead of refusing each other."""
    from nodes.congestion.build import LOCAL_BTF
    names = ["lia", "mcubic", "mcubic_wrap", "mcubic_stretch"]    # a plain source, and one with variants
    here = build(LOCAL_BTF, tmp_path / "one", names=names)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        there = build(LOCAL_BTF, tmp_path / "elsewhere" / "two", names=names)
    finally:
        os.chdir(cwd)
    assert here.directory != there.directory
    assert {n: here.sha256_of(n) for n in names} == {n: there.sha256_of(n) for n in names}
    # one source, distinct programs: every variant is its own object
    assert len({here.sha256_of(n) for n in names}) == len(names)
