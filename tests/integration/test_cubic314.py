"""cubic314 (Linux 3.14's Cubic as a BPF program, not the kernel's cubic) on this kernel, checked
against its reference model (nodes/congestion/model_cubic314.py).

Its test build (-DCTL_TRACE, registered as `cubic314_trace`) records every congestion-avoidance
update (bictcp_update), every HyStart decision and every decrease; real traffic crosses the two
token-bucket paths of tests/integration/test_bpf_cc.py (20 and 10 Mbit/s, 30 kB queues, so losses,
queueing and slow-start exits happen) in namespaces of this module's own: a plain TCP transfer (the
competitor's case) and an MPTCP transfer (each subflow its own cubic314, uncoupled). Every recorded
decision is replayed through the model and must agree exactly; nothing may stay registered.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nodes.congestion import hostctl
from nodes.congestion.build import build
from nodes.congestion.catalog import ALGORITHMS
from nodes.congestion.model import EV_HYSTART, EV_INCREASE, EV_SSTHRESH, TRACE_RECORD_SIZE, decode_trace_record
from nodes.congestion.model_cubic314 import EV_SLOW_START, HYSTART_ACK_TRAIN, HYSTART_DELAY, check_trace
from tests.integration.test_bpf_cc import _hostctl, bridged_paths
from tests.support.bpfmap import read_trace
from tests.support.kernel_cc import assert_nothing_left, held_by_others, run_holders, snapshot

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BULK = str(ROOT / "tests" / "support" / "mptcp_bulk.py")
PFX = f"c3{os.getpid() % 100000}"
A, R, B = f"{PFX}a", f"{PFX}r", f"{PFX}b"
HOLDER = f"test:{os.getpid()}"
ALG = ALGORITHMS["cubic314"]


@pytest.fixture(scope="module")
def paths():
    yield from bridged_paths(A, R, B, 97, ("20mbit", "10mbit"))


@pytest.fixture(scope="module")
def objects(bpf_trace_dir):
    return build(dest=bpf_trace_dir, trace=True, names=["cubic314"])


def _available() -> list[str]:
    return open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split()


def _records(maps: dict[str, int]) -> list:
    return read_trace(maps, "cubic314", TRACE_RECORD_SIZE, decode_trace_record)[1]


def _transfer(verb: str, port: int, seconds: float) -> int:
    """One bulk transfer a -> b with cubic314_trace chosen on the sending socket (TCP_CONGESTION:
    the send fails if the kernel does not run it); the bytes received."""
    srv = subprocess.Popen(["ip", "netns", "exec", B, sys.executable, BULK, "recv" if verb == "send" else "recv-tcp",
                            str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert srv.stdout is not None and srv.stdout.readline().strip() == "listening", srv.stderr
        cli = subprocess.run(["ip", "netns", "exec", A, sys.executable, BULK, verb, "10.97.1.2", str(port),
                              ALG.trace_name, str(seconds)], capture_output=True, text=True, timeout=seconds + 120)
        assert cli.returncode == 0, cli.stderr
        received, err = srv.communicate(timeout=60)
        assert srv.returncode == 0, err
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait(timeout=10)
    assert int(received) == int(cli.stdout) > 0
    return int(received)


@pytest.mark.parametrize("verb", ["send-tcp", "send"])       # plain TCP (the competitor), MPTCP (uncoupled)
def test_cubic314_decides_as_its_model_on_real_traffic(verb, paths, objects):
    loaded = _hostctl("load", ALG.trace_name, objects.sha256_of("cubic314"), str(objects.object_of("cubic314")),
                      HOLDER)
    assert loaded["ok"] and loaded["action"] == "registered", loaded
    try:
        maps = hostctl._maps_of(loaded["id"])
        assert {"cubic314_trace", "cubic314_tidx"} <= set(maps), maps
        assert loaded["conns_map"] is None                # it couples nothing
        _transfer(verb, 5311 if verb == "send" else 5312, 6)
        records = _records(maps)
    finally:
        left = _hostctl("unload", ALG.trace_name, HOLDER)
    assert left["ok"] and left["action"] == "unregistered", left
    replayed, bad = check_trace(records)
    events = {e: sum(1 for r in records if r.event == e) for e in (EV_INCREASE, EV_HYSTART, EV_SSTHRESH, EV_SLOW_START)}
    print(f"\ncubic314 {verb}: {replayed} decisions replayed {events}, HyStart exits {left.get('hystart_exits')}")
    odd = [(r.cwnd_before, r.ssthresh, r.inputs[1:11]) for r in records if r.event == EV_SSTHRESH
           and r.cwnd_before > 1 << 20]
    if odd:       # (sk_state, ca_state, packets_out, clamp): a decrease of a socket with no real window
        print(f"cubic314 {verb}: decreases with a window above 2^20: {odd}")
        big = next(i for i, r in enumerate(records) if r.cwnd_before > 1 << 20 or r.outputs[0] > 1 << 20)
        for r in records[max(0, big - 12):big + 3]:
            print(f"  {r.seq} ev {r.event} cwnd {r.cwnd_before} ssthresh {r.ssthresh} acked {r.acked} "
                  f"in {r.inputs[:5]} out {r.outputs[:3]}")
    assert bad == [], f"{len(bad)} of {replayed} decisions differ from the model; first: {bad[0]}"
    assert events[EV_INCREASE] >= 100 and events[EV_SSTHRESH] >= 1 and events[EV_HYSTART] >= 1, events
    assert events[EV_SLOW_START] >= 10, events
    # 3.14's friendliness and u32 rules ran: some update started an epoch, some kept cnt (HZ/32 skip)
    incs = [r for r in records if r.event == EV_INCREASE]
    assert any(r.inputs[5] == 0 for r in incs), "no epoch started in congestion avoidance"
    assert any(r.outputs[0] == r.inputs[1] and r.inputs[3] == r.cwnd_before for r in incs)
    fired = [r for r in records if r.event == EV_HYSTART and r.outputs[0]]
    want = {"ack_train": sum(1 for r in fired if r.outputs[0] & HYSTART_ACK_TRAIN),
            "delay": sum(1 for r in fired if r.outputs[0] & HYSTART_DELAY)}
    assert left.get("hystart_exits") == want, (left.get("hystart_exits"), want)
    assert ALG.trace_name not in _available()


def test_nothing_stays_registered(paths, objects):
    snap = snapshot()
    others = held_by_others(snap, {HOLDER})     # a campaign or another rack on this kernel may hold cubic314
    assert not [a for a in snap.available if a.startswith("cubic314") and a not in others]
    assert not [n for n, e in snap.holders.items() if HOLDER in e.get("holders", [])]


def test_shared_bottleneck_with_cubic314_as_the_tcp_competitor(rack):
    """`--tcp-cc cubic314` through ctl: the single-path flow is seen running cubic314 (ss), the MPTCP
    subflows mcubic; the record names cubic314 as a variant of the kernel's cubic with its reading
    and its own HyStart exits (the kernel's TcpExtTCPHystart* do not count it), and nothing stays
    registered after the run."""
    import json
    before = snapshot()
    p = rack.ctl("run", "shared-bottleneck", "--delay", "20ms", "--cc", "mcubic", "--tcp-cc", "cubic314",
                 "--duration", "10s", "--json", timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)["data"]
    m = json.loads((Path(out["record"]) / "manifest.json").read_text())
    assert m["status"] == "completed", m["status"]
    cong = m["congestion"]
    observed = cong["subflows"]["observed"]
    assert cong["subflows"]["problems"] == [], cong["subflows"]
    assert observed["tcp"] and all(names == ["cubic314"] for names in observed["tcp"].values()), observed
    assert len(observed["mptcp"]) == 2 and all(names == ["mcubic"] for names in observed["mptcp"].values())
    alg = cong["algorithms"]["cubic314"]
    assert (alg["variant_of"], alg["reading"]) == ("cubic", ALG.reading)
    assert alg["source"] == "nodes/congestion/bpf/cubic314.bpf.c" and len(alg["object_sha256"]) == 64
    hs = [st["hystart_exits"]["cubic314"] for st in cong["hosts"].values() if "cubic314" in st.get("hystart_exits", {})]
    if not hs:      # not the last holder: another rack on this kernel held cubic314 when this run left it (the
        # restore read the kernel right after the unload), and the counters are that holder's to read
        assert any("cubic314" in st["restored"]["available"] for st in cong["hosts"].values()), cong["hosts"]
    else:
        assert len(hs) == 1 and set(hs[0]) == {"ack_train", "delay"}, cong["hosts"]
    assert_nothing_left(before, run_holders(rack.runs_dir))
