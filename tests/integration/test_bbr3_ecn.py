"""bbr3's ECN branch on this kernel (issue 24): CE marks from the forwarder's RED, counted by the
trace build and replayed against the model.

Topology as tests/integration/test_bbr3.py's (a -- r -- b, dnpipe in r at 20 Mbit/s and 40 ms RTT),
with its own namespaces (prefix `ec`). The data direction runs dummynet's RED with `ecn`
(`red 0.002/35/140/0.1 ecn` on a 280-slot queue: min_th half a BDP, max_th two, the queue four, so
a mark comes long before the queue is full); the endpoints negotiate ECN (net.ipv4.tcp_ecn=1 in
the sender's namespace, the receiver's default 2 accepts; both namespaces are the test's and go
with it). A bulk bbr3_trace transfer then runs; afterwards:

- the forwarder marked packets CE (`marked_pkts` > 0), lost none at random or at a full queue, and
  RED dropped at most a few packets ECN cannot mark (sent without ECT);
- every recorded call agrees with nodes/congestion/model_bbr3.py field for field;
- the trace counts CE-marked deliveries (tp->delivered_ce grows; ACKs carry newly marked data
  with no new loss, which the model counts with losses);
- what ended Startup, as the trace shows it (see the test's docstring).
"""
from __future__ import annotations

import os

import pytest

from nodes.congestion import model_bbr3 as m
from nodes.congestion.build import build
from nodes.congestion.catalog import ALGORITHMS
from nodes.congestion.trace_bbr3 import EV_ACK, RECORD_SIZE, check_trace, continuity_breaks, decode_record
from tests.support.tracepath import ROOT, TracePath, sh, traced_transfer

pytestmark = pytest.mark.integration

# The tree's build: RED needs dnpipe >= 1.2.0 (the installed .state/bin/dnpipe may be older).
DNPIPE = ROOT / "bridges" / "dnpipe" / "build" / "dnpipe"
PFX = f"ec{os.getpid() % 100000}"
HOLDER = f"test:{os.getpid()}"
ALG = ALGORITHMS["bbr3"]
RATE_BPS = 20_000_000
ONE_WAY_US = 20_000                      # 40 ms RTT
BDP_PACKETS = 70                         # 20 Mbit/s x 40 ms / 1448 bytes
QUEUE_SLOTS = 4 * BDP_PACKETS
RED = f"0.002/{BDP_PACKETS // 2}/{2 * BDP_PACKETS}/0.1"


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    if not DNPIPE.exists():
        pytest.fail(f"{DNPIPE} is not built: make -C bridges/dnpipe")
    version = sh(str(DNPIPE), "--version").stdout.split()[1]
    if tuple(int(x) for x in version.split(".")) < (1, 2, 0):
        pytest.fail(f"{DNPIPE} is dnpipe {version}: RED/ECN needs 1.2.0 (make -C bridges/dnpipe)")
    p = TracePath(tmp_path_factory.mktemp("bbr3-ecn-path"), PFX, "10.96.1", DNPIPE, sender_ecn=True)
    try:
        yield p
    finally:
        p.close()


@pytest.fixture(scope="module")
def trace_build(bpf_trace_dir):
    return build(dest=bpf_trace_dir, trace=True, names=["bbr3"])


def shape(path: TracePath) -> dict:
    """Forward (a -> b, the data) with RED marking CE; reverse (ACKs) a deep drop-tail queue."""
    common = ["--bw", str(RATE_BPS), "--delay-us", str(ONE_WAY_US)]
    path.ctl("set", "--dir", "reverse", *common, "--queue-slots", "500")
    return path.ctl("set", "--dir", "forward", *common, "--queue-slots", str(QUEUE_SLOTS), "--red", RED, "--ecn", "1")


def traced_ecn_transfer(path: TracePath, trace_build, seconds: float, port: int) -> tuple[list, dict, dict]:
    """(the decoded trace, the forward pipe's config, its counters over the transfer)."""
    shown = shape(path)
    config = shown["pipes"]["forward"]["config"]
    c0 = shown["pipes"]["forward"]["counters"]
    records, _ = traced_transfer(path, trace_build, ALG, HOLDER, decode_record, RECORD_SIZE, seconds=seconds, port=port)
    c1 = path.ctl("show")["pipes"]["forward"]["counters"]
    return records, config, {k: c1[k] - c0.get(k, 0) for k in c1 if k.endswith(("_pkts", "_bytes"))}


def test_red_marks_ce_bbr3_counts_it_and_the_trace_replays(path, trace_build, record_property):
    """What ended Startup is asserted as the model says it must be: the draft's
    CheckStartupHighLoss() (5.3.1.3) needs the connection in fast recovery, and CE marks alone put
    the sender in CWR (ca_state 2), never in recovery (3); so with marks and no loss Startup ends
    on the bandwidth plateau even where CE-marked deliveries were counted in it. The replay
    checks that rule on every ACK; this test states it on the one that left Startup."""
    records, config, delta = traced_ecn_transfer(path, trace_build, seconds=8, port=5611)
    assert config["aqm"] == {"type": "red", "w_q": 0.002, "min_th": BDP_PACKETS // 2,
                             "max_th": 2 * BDP_PACKETS, "max_p": 0.1, "ecn": True}, config
    # the forwarder marked; it never filled its queue (RED's thresholds are far below it) and lost
    # nothing at random. RED may drop what ECN cannot mark: packets sent without ECT (RFC 3168:
    # a data-less FIN, retransmissions) that arrive while the average is above min_th -- a few at
    # most (RED's drops are counted in drop_queue_pkts too, so any tail drop shows as a difference)
    assert delta["marked_pkts"] > 0, delta
    assert delta["drop_plr_pkts"] == 0 and delta["drop_queue_pkts"] == delta["red_drop_pkts"], delta
    assert delta["red_drop_pkts"] <= 3 < delta["marked_pkts"], delta
    # every call agrees with the model; each socket's state is continuous
    n, bad = check_trace(records)
    assert n == len(records) and n >= 1000, f"only {n} calls recorded"
    assert bad == [], f"{len(bad)} of {n} calls differ from the model; first: {bad[0]}"
    assert continuity_breaks(records) == []
    acks = [r for r in records if r.event == EV_ACK]
    assert len({r.sk for r in acks}) == 1
    # CE-marked deliveries counted: tp->delivered_ce grows, and ACKs with no new loss carry newly
    # marked data (the model counts CE with losses)
    assert acks[-1].inputs.delivered_ce > acks[0].inputs.delivered_ce
    ce_only = [r for r in acks if r.outputs.newly_marked and r.inputs.lost == acks[0].inputs.lost]
    assert ce_only, "no ACK carried CE-marked data without loss"
    assert any(r.inputs.ca_state == m.CA_CWR for r in acks), "the sender never reacted to ECE (CWR)"
    # CE marks alone never put the sender into fast recovery: only a loss does, and the only losses
    # possible here are RED's few drops of packets without ECT (counted above)
    lost0 = acks[0].inputs.lost
    recovery = [r for r in acks if r.inputs.ca_state == m.CA_RECOVERY]
    if delta["red_drop_pkts"] == 0:
        assert not recovery, f"fast recovery without any drop at the forwarder: {recovery[0]}"
    assert all(r.inputs.lost > lost0 for r in recovery), (delta, [r for r in recovery if r.inputs.lost <= lost0][:1])
    # Startup's end, as the model's rule has it with CE and no loss: the bandwidth plateau
    moves = [(r, r.before.state, r.after.state) for r in acks if r.before.state != r.after.state]
    first = moves[0]
    assert (first[1], first[2]) == (m.STARTUP, m.DRAIN)
    if first[0].inputs.lost == lost0:          # (a RED drop before it may end Startup on loss, as the model says)
        assert first[0].outputs.too_high != 2 and first[0].after.full_bw_count >= m.FULL_BW_ROUNDS
    # what the trace shows, for the report (pytest --junitxml keeps these)
    record_property("ce_acks_in_startup", sum(1 for r in acks if r.after.state == m.STARTUP and r.outputs.newly_marked))
    record_property("ce_acks_without_loss", len(ce_only))
    record_property("startup_exit_ms", (first[0].inputs.now - acks[0].inputs.now) // 1000)
    record_property("marked_pkts", delta["marked_pkts"])


def test_nothing_stays_registered(path, trace_build):
    from tests.support.kernel_cc import held_by_others, snapshot
    snap = snapshot()
    others = held_by_others(snap, {HOLDER})
    assert not [n for n in (ALG.trace_name, ALG.name) if n in snap.available and n not in others]
