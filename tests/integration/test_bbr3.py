"""bbr3 on this kernel, replayed against its reference model, and the phases of draft-ietf-ccwg-bbr-06.

A test build of nodes/congestion/bpf/bbr3.bpf.c (-DCTL_TRACE: registered as `bbr3_trace`, so it
never meets a real run's `bbr3` on this shared kernel) records every call of its entry points
(init, cong_control, ssthresh, undo_cwnd, cwnd_event) with the whole state before and after, the
inputs the kernel gave and what the program wrote. Real TCP traffic crosses one path a -- r -- b
shaped by the dnpipe forwarder (this kernel has no netem) at 20 Mbit/s and 40 ms RTT (with a Cubic
flow beside it where a standing queue is needed); afterwards
every recorded call is replayed through nodes/congestion/model_bbr3.py and must agree field for
field, and each socket's state must be continuous from one call to the next.

The traces must show what the draft describes: with a deep buffer, Startup ends on a bandwidth
plateau, then Drain, the ProbeBW cycle DOWN -> CRUISE -> REFILL -> UP -> DOWN, and ProbeRTT
about every 5 s of the busy flow with cwnd at most max(0.5 BDP, 4 packets) for at least 200 ms;
with a shallow buffer and 3 % random loss, Startup ends on loss, and after a round above the
2 % loss threshold while probing, inflight_longterm is set at or below the in-flight that saw the
loss. (The ECN branch, CE marks from the forwarder's RED, is tests/integration/test_bbr3_ecn.py's.) Nothing may stay
registered. And through ctl on the session's virtual rack: a bbr3 run killed with SIGKILL mid-traffic
is recovered by the next start (hold released, program unregistered, the congestion-control state
as before).
"""
from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from nodes.congestion import model_bbr3 as m
from nodes.congestion.build import build
from nodes.congestion.catalog import ALGORITHMS
from nodes.congestion.trace_bbr3 import (EV_ACK, RECORD_SIZE, STATE, Record, check_trace, continuity_breaks,
                                         decode_record)
from tests.support.tracepath import ROOT, TracePath, hostctl_call, sh
from tests.support.tracepath import traced_transfer as traced_transfer_on

pytestmark = pytest.mark.integration

DNPIPE = next((p for p in (ROOT / ".state" / "bin" / "dnpipe", ROOT / "bridges" / "dnpipe" / "build" / "dnpipe")
               if p.exists()), None)
PFX = f"b3{os.getpid() % 100000}"
HOLDER = f"test:{os.getpid()}"
ALG = ALGORITHMS["bbr3"]
RATE_BPS = 20_000_000
ONE_WAY_US = 20_000                      # 40 ms RTT
BDP_PACKETS = 70                         # 20 Mbit/s x 40 ms / 1448 bytes


def shape(path: TracePath, queue_slots: int, plr: float) -> None:
    """The data direction (a -> b, "forward") with its queue and random loss; ACKs get a deep queue."""
    common = ["--bw", str(RATE_BPS), "--delay-us", str(ONE_WAY_US)]
    path.ctl("set", "--dir", "reverse", *common, "--queue-slots", "500")
    path.ctl("set", "--dir", "forward", *common, "--queue-slots", str(queue_slots), "--plr", str(plr))


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    if DNPIPE is None:
        pytest.fail("dnpipe is not built: scripts/setup.sh builds it into .state/bin/dnpipe")
    p = TracePath(tmp_path_factory.mktemp("bbr3-path"), PFX, "10.95.1", DNPIPE)
    try:
        yield p
    finally:
        p.close()


@pytest.fixture(scope="module")
def trace_build(bpf_trace_dir):
    return build(dest=bpf_trace_dir, trace=True, names=["bbr3"])


def traced_transfer(path: TracePath, trace_build, *, queue_slots: int, plr: float, seconds: float, port: int,
                    cubic_after: float | None = None) -> tuple[list[Record], int]:
    """One TCP bulk transfer a -> b under bbr3_trace, and a Cubic flow over the same bottleneck
    from `cubic_after` seconds on; (the decoded trace, bytes bbr3 delivered)."""
    shape(path, queue_slots, plr)
    return traced_transfer_on(path, trace_build, ALG, HOLDER, decode_record, RECORD_SIZE, seconds=seconds, port=port,
                              cubic_after=cubic_after)


def replays(records: list[Record]) -> list[Record]:
    """Every call agrees with the model, each socket's state is continuous; the ACKs of the sender."""
    n, bad = check_trace(records)
    assert n == len(records) and n >= 1000, f"only {n} calls recorded"
    assert bad == [], f"{len(bad)} of {n} calls differ from the model; first: {bad[0]}"
    breaks = continuity_breaks(records)
    assert breaks == [], f"state changed between calls: {breaks[0][0].seq} -> {breaks[0][1].seq}"
    acks = [r for r in records if r.event == EV_ACK]
    socks = {r.sk for r in acks}
    assert len(socks) == 1, f"ACKs of {len(socks)} sockets: one sender expected"
    return acks


def transitions(acks: list[Record]) -> list[tuple[Record, int, int]]:
    """(the ACK, state before, state after) for every ACK that changed the state."""
    return [(r, r.before.state, r.after.state) for r in acks if r.before.state != r.after.state]


def test_the_program_uses_the_layout_the_model_decodes(trace_build):
    dump = sh("bpftool", "btf", "dump", "file", str(trace_build.object_of("bbr3"))).stdout
    assert f"STRUCT 'bbr3' size={STATE.size} " in dump and f"STRUCT 'b3_trace_rec' size={RECORD_SIZE} " in dump


def test_deep_buffer_startup_plateau_drain_probe_bw_cycle_and_probe_rtt_every_5_s(path, trace_build):
    """A 12-BDP buffer. bbr3 alone for 5.6 s: Startup, Drain, a ProbeBW cycle, the first ProbeRTT
    5 s after its first minimum RTT sample; then a Cubic flow fills the buffer, so bbr3 sees no
    new minimum RTT sample outside ProbeRTT and ProbeRTT comes every 5 s. (A lone bbr3 flow drains
    its own queue in ProbeBW_CRUISE and may take new minimum samples there, which by the draft
    postpone ProbeRTT: the replay checks that rule on every ACK.)"""
    records, _ = traced_transfer(path, trace_build, queue_slots=12 * BDP_PACKETS, plr=0.0, seconds=14, port=5511,
                                 cubic_after=5.6)
    acks = replays(records)
    t0 = acks[0].inputs.now
    moves = transitions(acks)
    names = [(m.STATE_NAMES[a], m.STATE_NAMES[b]) for _, a, b in moves]
    # Startup ends on a bandwidth plateau (three rounds without 25 % growth), not on loss; then Drain
    first = moves[0]
    assert (first[1], first[2]) == (m.STARTUP, m.DRAIN), names[:3]
    assert first[0].after.full_bw_count >= 3 and first[0].after.undo_state == m.STATE_NONE
    assert first[0].after.inflight_longterm == m.INF and (first[0].inputs.now - t0) < 1_500_000
    assert moves[1][1] == m.DRAIN and m.is_probe_bw(moves[1][0].after), names[:3]
    # the ProbeBW cycle of the lone flow, every phase in the draft's order
    alone = [b for r, _, b in moves if r.inputs.now - t0 < 5_600_000]
    cycle = [m.PROBE_BW_CRUISE, m.PROBE_BW_REFILL, m.PROBE_BW_UP, m.PROBE_BW_DOWN, m.PROBE_BW_CRUISE]
    assert any(alone[i:i + len(cycle)] == cycle for i in range(len(alone))), names
    assert all((r.after.pacing_gain, r.after.cwnd_gain) == {m.PROBE_BW_DOWN: (90, 200), m.PROBE_BW_CRUISE: (100, 200),
                                                            m.PROBE_BW_REFILL: (100, 200),
                                                            m.PROBE_BW_UP: (125, 225)}[b]
               for r, _, b in moves if m.is_probe_bw(r.after))
    # ProbeRTT about every 5 s of the busy flow: entered once the last min-RTT sample is 5 s old
    entries = [r for r, a, b in moves if b == m.PROBE_RTT]
    exits = [r for r, a, b in moves if a == m.PROBE_RTT]
    assert len(entries) >= 2, names
    for r in entries:
        assert r.inputs.now - r.before.probe_rtt_min_stamp > m.PROBE_RTT_INTERVAL_US
        assert (r.after.pacing_gain, r.after.cwnd_gain) == (100, 50)
    gaps = [(b.inputs.now - a.inputs.now) / 1e6 for a, b in zip(entries, entries[1:])]
    assert all(5.0 < g < 6.5 for g in gaps), gaps
    assert 4.5 < (entries[0].inputs.now - t0) / 1e6 < 6.5
    # while in ProbeRTT, cwnd at most max(0.5 BDP, 4 packets), for at least 200 ms and a round
    in_probe_rtt = [r for r in acks if r.after.state == m.PROBE_RTT]
    assert all(r.outputs.cwnd <= m.probe_rtt_cwnd(r.after) for r in in_probe_rtt)
    assert all(m.probe_rtt_cwnd(r.after) <= BDP_PACKETS // 2 + 8 for r in in_probe_rtt if r.after.min_rtt_us < 45_000)
    for e, x in zip(entries, exits):
        assert x.inputs.now - e.inputs.now >= m.PROBE_RTT_DURATION_US
        assert x.after.state == m.PROBE_BW_CRUISE


def test_shallow_buffer_with_loss_startup_exits_on_loss_and_inflight_longterm_falls_below_the_loss(path,
                                                                                                    trace_build):
    records, _ = traced_transfer(path, trace_build, queue_slots=20, plr=0.03, seconds=6, port=5512)
    acks = replays(records)
    moves = transitions(acks)
    # Startup ends on high loss in recovery: inflight_longterm set, undo_state remembers Startup
    first, after = moves[0][0], moves[0][0].after
    assert moves[0][1] == m.STARTUP and first.outputs.too_high == 2, \
        [(m.STATE_NAMES[a], m.STATE_NAMES[b]) for _, a, b in moves[:3]]
    assert first.inputs.ca_state == m.CA_RECOVERY and first.before.loss_events_in_round >= 5
    assert after.undo_state == m.STARTUP and after.inflight_longterm != m.INF and after.full_bw_reached
    # through Drain (left on the same ACK when in-flight is already below one BDP)
    assert after.state == m.DRAIN or after.drain_start_round == after.round_count
    # after a round above the loss threshold while probing: inflight_longterm at or below the loss's in-flight
    high = [r for r in acks if r.outputs.too_high == 1]
    assert high, "no round above the loss threshold while probing bandwidth"
    for r in high:
        o = r.outputs
        assert o.rs_lost * 100 > o.tx_in_flight * 2                          # more than 2 % lost
        assert o.inflight_at_loss <= o.tx_in_flight
        floor = min(m.bdp_multiple(r.before, r.before.bw, 100), r.inputs.cwnd) * 7 // 10
        assert r.after.inflight_longterm == max(o.inflight_at_loss, floor)
        assert r.after.prev_probe_too_high and not r.after.is_bw_probe_sample
    below = [r for r in high if r.after.inflight_longterm < r.outputs.tx_in_flight]
    assert below, [(r.outputs.tx_in_flight, r.after.inflight_longterm) for r in high]
    assert any(r.before.state == m.PROBE_BW_UP and r.after.state == m.PROBE_BW_DOWN for r in high)
    # and the short-term model cut once per loss round outside probing
    assert any(r.before.bw_shortterm == m.INF and r.after.bw_shortterm != m.INF for r in acks)


def _cc_state(rack) -> dict:
    """The congestion-control state a run may touch besides the kernel's lists of registered and
    allowed algorithms (kernel-wide: tests/support/kernel_cc.py judges them by this run's hold): the
    default of the initial namespace and of the run's sender and receiver, their socket buffers."""
    def sysctl(name: str, host: str | None = None) -> str:
        argv = ["sysctl", "-n", name]
        return (rack.netns(host, *argv) if host else sh(*argv).stdout).strip()
    out = {"default": sysctl("net.ipv4.tcp_congestion_control")}
    for h in ("a1", "b1"):
        out[h] = tuple(sysctl(k, h) for k in ("net.ipv4.tcp_congestion_control", "net.ipv4.tcp_rmem",
                                             "net.ipv4.tcp_wmem"))
    return out


def test_a_bbr3_run_killed_mid_traffic_is_recovered_by_the_next_start(rack):
    """Lifecycle of bbr3 through ctl: `ctl run rtt-loss-sweep --cc bbr3` killed with SIGKILL while its
    traffic runs (no clean-up at all) leaves bbr3 registered and held by the dead run; the next
    `ctl run` recovers the rack from the record first: bbr3's hold is released and the program
    unregistered (unless another rack on this kernel holds it too), and the kernel's and the
    endpoints' congestion-control state is what it was before the killed run."""
    from tests.support.kernel_cc import assert_nothing_left, snapshot
    before, registered = _cc_state(rack), snapshot()
    runs_before = set(rack.runs_dir.glob("*")) if rack.runs_dir.exists() else set()
    proc = rack.popen("run", "rtt-loss-sweep", "--cc", "bbr3", "--bw", "100M", "--rtt", "20ms", "--duration", "60s")
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:          # the run says "traffic:" once its flows started
        line = proc.stderr.readline()
        if "traffic:" in line or (not line and proc.poll() is not None):
            break
    assert proc.poll() is None, "the bbr3 run ended before its traffic: " + (proc.stderr.read() or "")[-2000:]
    time.sleep(2)
    (killed,) = [d for d in rack.runs_dir.glob("*cc-bbr3*") if d not in runs_before]
    holder = json.loads((killed / "manifest.json").read_text())["congestion"]["holder"]
    assert "bbr3" in set(Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split())
    assert holder in hostctl_call("probe")["holders"]["bbr3"]["holders"]       # loaded for the run, held by it
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert holder in hostctl_call("probe")["holders"]["bbr3"]["holders"]       # the dead run still holds it

    p = rack.ctl("run", "rtt-loss-sweep", "--cc", "cubic", "--bw", "100M", "--rtt", "20ms", "--duration", "3s",
                 timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert f"recovered the rack from interrupted run {killed.name}" in p.stderr
    m = json.loads((killed / "manifest.json").read_text())
    assert m["status"] in ("aborted", "interrupted"), m["status"]
    assert m["recovery"]["problems"] == [], m["recovery"]
    assert not any(holder in e.get("holders", []) for e in hostctl_call("probe")["holders"].values())
    # the kernel's lists: nothing this run held is left (another rack's holds on this kernel are theirs)
    assert_nothing_left(registered, {holder})
    assert _cc_state(rack) == before


def test_nothing_stays_registered(path, trace_build):
    from tests.support.kernel_cc import held_by_others, snapshot
    snap = snapshot()
    others = held_by_others(snap, {HOLDER})     # another rack's bbr3 run on this kernel: its hold
    assert not [n for n in (ALG.trace_name, ALG.name) if n in snap.available and n not in others]
    assert not [n for n, e in snap.holders.items() if HOLDER in e.get("holders", [])]
