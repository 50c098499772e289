"""The coupling map under connection churn: once the connections are gone it is empty.

Hundreds of short MPTCP connections (both ends on a trace build of balia_floor, data both ways,
24 at a time, two tbf-shaped paths so losses and queues run every branch, two CPU burners beside
them) open, couple and close; then, once the connections are gone, every entry left in the
program's coupling map must be honest about itself: a count of linked subflows above 0 (an entry
whose count reached 0 is deleted by the subflow that took it there), exactly as many slots
holding the entry's token as it counts, and no more counted subflows in all entries than the
program's own kernel-wide count of linked subflows (`ctl_linked`). A pointer into a deleted and
reused element (a hash map reuses one at once) or a lost update of the count breaks one of these.

On 6.18 a few subflows per hundred connections go away without `.release` (the kernel never calls
tcp_v4_destroy_sock for them: nodes/congestion/bpf/ctl_cc.h); the program finds them itself (their
socket's reference count is 0 or its private area no longer holds their link) when a socket starts
or stops running it, and takes them out (`ctl_dead`, printed); when none does after the last one
died, hostctl's poke (a socket that selects the algorithm and closes) does, as at every unload. So after the churn every link has
left (`ctl_linked` 0) and the map is empty; and, on the way, every entry is honest.
Registered under the trace build's own name; nothing stays registered.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nodes.congestion import hostctl
from tests.integration.test_bpf_cc import Registered, bridged_paths

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHURN = str(ROOT / "tests" / "support" / "mptcp_churn.py")
PFX = f"ch{os.getpid() % 100000}"
A, R, B = f"{PFX}a", f"{PFX}r", f"{PFX}b"
CONNECTIONS, PARALLEL = 400, 24


def _burn(stop) -> None:
    while not stop.is_set():
        sum(range(100000))


@pytest.fixture(scope="module")
def churn_paths():
    yield from bridged_paths(A, R, B, 96, ("200mbit", "100mbit"), both_ways=True, burst="16kb", limit="60kb")


@pytest.fixture(scope="module")
def objects(bpf_trace_dir):
    from nodes.congestion.build import build
    return build(dest=bpf_trace_dir, trace=True)


def test_every_entry_left_after_a_churn_is_one_a_counted_subflow_holds(churn_paths, objects):
    reg = Registered("balia_floor", objects)
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,)) for _ in range(2)]
    try:
        sid = json.loads(Path(hostctl.HOLDERS).read_text())[reg.name]["id"]
        srv = subprocess.Popen(["ip", "netns", "exec", B, sys.executable, CHURN, "serve", "5201", reg.name,
                                str(CONNECTIONS)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert srv.stdout is not None and srv.stdout.readline().strip() == "listening", srv.stderr
        for b in burners:
            b.start()
        t0 = time.monotonic()
        cli = subprocess.run(["ip", "netns", "exec", A, sys.executable, CHURN, "client", "10.96.1.2", "5201", reg.name,
                              str(CONNECTIONS), str(PARALLEL), "200000", "300000"],
                             capture_output=True, text=True, timeout=600)
        served, err = srv.communicate(timeout=180)
        assert cli.returncode == 0 and srv.returncode == 0, (cli.stderr, err)
        assert cli.stdout.strip() == "0" and int(served) == CONNECTIONS, (cli.stdout, served)
        took = time.monotonic() - t0
        before_poke = reg.wait_empty(15)
        hostctl._poke(reg.name)     # what hostctl does before it counts: one socket's .release reaps
        left = reg.conns()
        entries = hostctl._entries(reg.maps[f"{reg.alg.stem}_conns"], 4096) or []
        linked = hostctl._linked(sid)
        reaped = hostctl._reaped(sid)
        print(f"\n{CONNECTIONS} connections in {took:.1f} s; entries left {before_poke} (after a poke {left}), subflows still counted "
              f"(ctl_linked) {linked}, gone without .release and taken out by the program (ctl_dead) {reaped}")
        assert isinstance(linked, int) and len(entries) == left
        for e in entries:
            held = [s for s in e["slots"] if s.get("token") == e["token"]]
            assert e["nactive"] >= 1 and e["nactive"] == len(held), e
        assert sum(e["nactive"] for e in entries) <= linked, (entries, linked)
        assert isinstance(reaped, int)
        assert (left, linked) == (0, 0), (entries, linked, reaped)
    finally:
        stop.set()
        for b in burners:
            if b.pid is not None:
                b.join(timeout=10)
        left = reg.unload()
    assert left["ok"] and left["action"] == "unregistered", left
