"""bbr3's reference model (nodes/congestion/model_bbr3.py) against draft-ietf-ccwg-bbr-06: its
constants (section 2), hand-computed arithmetic, the pseudocode's decisions one ACK at a time and
the example test cases of the draft's Appendix A that a model can run (A.1-A.5, A.8-A.11, A.20,
A.21), and the layout the trace decoder shares with the C program."""
from __future__ import annotations

import re
from dataclasses import fields

import pytest

from nodes.congestion import model_bbr3 as m
from nodes.congestion import trace_bbr3 as t
from nodes.congestion.catalog import ALGORITHMS, BBR3_DIFFERENCES, BPF_DIR, kernel_label

# the program and the headers it includes (bbr3_state.h, bbr3_model.h, ...), the program first
SRC = "\n".join((BPF_DIR / name).read_text() for name in ["bbr3.bpf.c", *re.findall(
    r'^#include "(bbr3_\w+\.h)"', (BPF_DIR / "bbr3.bpf.c").read_text(), re.M)])
MSS = 1448


def pkts_per_us(mbps: float) -> float:
    return mbps * 1e6 / 8 / MSS / 1e6


def bw_of(mbps: float) -> int:
    return int(pkts_per_us(mbps) * m.BW_UNIT)


class Flow:
    """A connection driven one ACK at a time with inputs the kernel would give."""

    def __init__(self, srtt: int = 40_000, now: int = 1_000_000):
        self.now = now
        self.delivered = 0
        self.lost = 0
        self.b, o = m.init(m.Inputs(now=now, srtt_us=srtt, mss=MSS, cwnd=10))
        self.cwnd, self.pacing = o.cwnd, o.pacing_rate
        self.out = o

    def ack(self, *, mbps: float = 100, acked: int = 2, inflight: int | None = None, new_round: bool = False,
            lost: int = 0, ca_state: int = m.CA_OPEN, rtt: int = 40_000, dt: int = 100, app_limited: int = 0,
            cwnd_limited: int = 1, sack: int = 1, rand: int = 0, rs_delivered: int = 100,
            interval: int | None = None) -> m.Outputs:
        self.now += dt
        nrd = self.b.next_round_delivered
        # P, the packet ACKed, was sent after everything delivered so far (a new round), or before the round began
        prior = self.delivered if new_round else (nrd - 1) & m.U32
        self.delivered += acked
        self.lost += lost
        if interval is None:
            interval = max(1, round(rs_delivered / pkts_per_us(mbps))) if mbps else -1
        i = m.Inputs(now=self.now, pacing_rate=self.pacing, delivered=self.delivered, lost=self.lost,
                     inflight=self.cwnd if inflight is None else inflight, cwnd=self.cwnd, mss=MSS,
                     ca_state=ca_state, is_cwnd_limited=cwnd_limited, sack_ok=sack, srtt_us=40_000,
                     app_limited=app_limited, rand=rand, rs_delivered=rs_delivered if mbps else -1,
                     rs_interval_us=interval, rs_rtt_us=rtt, rs_acked_sacked=acked,
                     rs_prior_in_flight=self.cwnd, rs_prior_delivered=prior, rs_is_app_limited=app_limited)
        self.b, o = m.on_ack(self.b, i)
        self.cwnd, self.pacing, self.out = o.cwnd, o.pacing_rate, o
        return o

    def enter(self, start, **inputs) -> None:
        """Put the flow in a state through the model's own entry function (StartProbeBW_DOWN(), ...)."""
        c = m.Ctx(m.Inputs(now=self.now, delivered=self.delivered, **inputs), m.Outputs(), self.cwnd, self.pacing, 0)
        start(self.b, c) if start is not m.start_probe_bw_cruise else start(self.b)

    def rounds(self, n: int, **kw) -> None:
        for _ in range(n):
            self.ack(new_round=True, **kw)

    def to_probe_bw(self, mbps: float = 100) -> None:
        """Startup to ProbeBW on a plateau (A.1), then Drain out on in-flight (A.3)."""
        self.rounds(4, mbps=mbps, inflight=10_000)
        assert self.b.state == m.DRAIN
        self.ack(mbps=mbps, inflight=10)
        assert m.is_probe_bw(self.b)


# ---- the draft's constants (section 2), and the C program's -------------------------------------

def test_constants_are_the_drafts():
    assert (m.STARTUP_PACING_GAIN, m.DRAIN_PACING_GAIN, m.DEFAULT_CWND_GAIN) == (277, 50, 200)
    assert (m.PROBE_DOWN_PACING_GAIN, m.CRUISE_PACING_GAIN, m.PROBE_UP_PACING_GAIN, m.PROBE_UP_CWND_GAIN) == \
        (90, 100, 125, 225)
    assert m.PROBE_RTT_CWND_GAIN == 50 and m.PACING_MARGIN_PERCENT == 1
    assert m.LOSS_THRESH == (2, 100) and m.BETA == (7, 10) and m.HEADROOM == (15, 100) and m.MIN_PIPE_CWND == 4
    assert (m.MIN_RTT_FILTER_US, m.PROBE_RTT_INTERVAL_US, m.PROBE_RTT_DURATION_US) == (10_000_000, 5_000_000, 200_000)
    assert m.EXTRA_ACKED_FILTER_LEN == 10 and m.FULL_BW_GROWTH == (5, 4) and m.FULL_BW_ROUNDS == 3
    assert m.STARTUP_FULL_LOSS_CNT == 6 and m.RENO_ROUNDS_MAX == 63


@pytest.mark.parametrize("name", ["STARTUP_PACING_GAIN", "DRAIN_PACING_GAIN", "DEFAULT_CWND_GAIN",
                                  "PROBE_DOWN_PACING_GAIN", "CRUISE_PACING_GAIN", "PROBE_UP_PACING_GAIN",
                                  "PROBE_UP_CWND_GAIN", "PROBE_RTT_CWND_GAIN", "PACING_MARGIN_PERCENT",
                                  "MIN_PIPE_CWND", "INITIAL_CWND", "FULL_BW_ROUNDS", "STARTUP_FULL_LOSS_CNT",
                                  "RENO_ROUNDS_MAX", "SNAPS", "SNAP_STEP_SHIFT", "SEND_QUANTUM_MIN"])
def test_the_program_uses_the_models_constants(name):
    c = re.search(rf"^#define {name} (\d+)", SRC, re.M)
    assert c and int(c.group(1)) == getattr(m, name), name


def test_the_program_cites_the_draft_and_lists_every_difference():
    alg = ALGORITHMS["bbr3"]
    assert alg.specification == "draft-ietf-ccwg-bbr-06" and alg.specification in SRC.split("*/")[0]
    assert alg.title == "BBRv3 after draft-ietf-ccwg-bbr-06, BPF" and not alg.coupled
    header = SRC.split("*/")[0]
    numbered = re.findall(r"^ \*\s+(\d+)\. ", header, re.M)
    assert [int(n) for n in numbered] == list(range(1, len(BBR3_DIFFERENCES) + 1))
    assert kernel_label("bbr") == "bbr (kernel: v1 here)" and kernel_label("bbr", "3") == "bbr (kernel: v3 here)"
    docs = (BPF_DIR.parents[2] / "docs" / "howto" / "bpf-congestion-control.md").read_text()
    assert all(f"{i}. {d}\n" in docs for i, d in enumerate(BBR3_DIFFERENCES, 1)), "the how-to lists every difference"


# ---- the layout shared with the C program --------------------------------------------------------

def _c_fields(struct: str) -> list[tuple[str, str, int]]:
    body = re.search(rf"^struct {struct} \{{\n(.*?)^\}};", SRC, re.M | re.S).group(1)
    out = []
    for line in body.splitlines():
        f = re.match(r"\s*(__u64|__u32|__s64|__s32|struct b3_snap)\s+(\w+)(?:\[(\w+)\])?;", line)
        if f:
            n = {"XA_LEN": m.EXTRA_ACKED_FILTER_LEN, "SNAPS": m.SNAPS}.get(f.group(3), f.group(3))
            out.append((f.group(2), f.group(1), int(n) if n else 1))
    return out


def test_the_state_inputs_and_outputs_are_the_c_structs():
    state = _c_fields("bbr3")
    assert [n for n, _, _ in state] == [f.name for f in fields(m.Bbr3)]
    assert [n for n, ty, _ in state if ty == "__u64"] == list(t._STATE_U64)
    assert {n: k for n, _, k in state if k > 1} == {"bw_hi": 2, "xa": 10, "snap": 16}
    ins = _c_fields("b3_in")
    assert [n for n, _, _ in ins] == [f.name for f in fields(m.Inputs)] + ["pad"]
    assert {n: ty for n, ty, _ in ins if ty != "__u32"} == {
        "now": "__u64", "pacing_rate": "__u64", "max_pacing_rate": "__u64", "rs_interval_us": "__s64",
        "rs_rtt_us": "__s64", "rs_delivered": "__s32", "rs_losses": "__s32"}
    outs = _c_fields("b3_out")
    assert [n for n, _, _ in outs] == [f.name for f in fields(m.Outputs)] + ["pad"]
    assert (t.STATE.size, t.INPUTS.size, t.OUTPUTS.size, t.RECORD_SIZE) == (488, 128, 48, 1168)


def test_a_record_decodes_and_replays():
    b, o = m.init(m.Inputs(now=5, srtt_us=30_000, cwnd=10))
    i = m.Inputs(now=5, srtt_us=30_000, cwnd=10)
    raw = (t.HEADER.pack(7, t.EV_INIT, 0xffff8881_00000000) + t.INPUTS.pack(*[getattr(i, f.name) for f in fields(i)], 0)
           + t.OUTPUTS.pack(*[getattr(o, f.name) for f in fields(o)], 0) + b"\0" * t.STATE.size + _pack(b))
    r = t.decode_record(raw)
    assert r.seq == 7 and r.name == "init" and r.after == b and r.inputs == i
    n, bad = t.check_trace([r])
    assert n == 1 and bad == []
    wrong = t.Record(r.seq, r.event, r.sk, r.inputs, m.Outputs(**{**o.__dict__, "pacing_rate": o.pacing_rate + 1}),
                     r.before, r.after)
    assert [str(x).split(":")[0] for x in t.check_trace([wrong])[1]] == ["seq 7 (init, state Startup)"]
    assert t.decode_record(b"\0" * t.RECORD_SIZE) is None


def _pack(b: m.Bbr3) -> bytes:
    vals = []
    for f in fields(b):
        v = getattr(b, f.name)
        vals += [x for s in v for x in s] if f.name == "snap" else list(v) if isinstance(v, list) else [v]
    return t.STATE.pack(*vals)


# ---- arithmetic, hand-computed -------------------------------------------------------------------

def test_pacing_rate_is_gain_times_bw_one_percent_below():
    bw = bw_of(100)                                   # 100 Mbit/s of 1448-byte packets
    assert bw == 144_830
    r = m.rate_bytes(bw, MSS, 100, True)
    assert abs(r - 0.99 * 12_500_000) / 12_500_000 < 1e-4
    assert abs(m.rate_bytes(bw, MSS, 277, False) - 2.77 * 12_500_000) / 12_500_000 < 1e-4


def test_bdp_is_rounded_up_and_initial_cwnd_without_an_rtt():
    b = m.Bbr3(min_rtt_us=40_000)
    assert m.bdp_multiple(b, bw_of(100), 100) == 346           # 100 Mbit/s x 40 ms = 345.3 packets
    assert m.bdp_multiple(b, bw_of(100), 200) == 691           # 690.6
    assert m.bdp_multiple(b, bw_of(100), 50) == 173            # 172.6
    assert m.bdp_multiple(m.Bbr3(min_rtt_us=m.INF), bw_of(100), 200) == m.INITIAL_CWND


def test_quantization_budget_floors_and_probe_up_adds_two():
    b = m.Bbr3(send_quantum=8, state=m.PROBE_BW_CRUISE)
    assert m.quantization_budget(b, 10) == 24                  # 3 x send quantum
    assert m.quantization_budget(m.Bbr3(send_quantum=1), 1) == 4
    b.state = m.PROBE_BW_UP
    assert m.quantization_budget(b, 100) == 102


@pytest.mark.parametrize("longterm,want", [(100, 85), (10, 9), (4, 4), (0, 4), (m.INF, m.INF)])
def test_inflight_with_headroom(longterm, want):
    assert m.inflight_with_headroom(m.Bbr3(inflight_longterm=longterm)) == want


@pytest.mark.parametrize("lost,tx,sack,want", [(2, 100, 1, False), (3, 100, 1, True), (0, 0, 1, False),
                                               (1, 1000, 0, True), (20, 999, 1, True)])
def test_the_loss_rate_check_is_two_percent_exactly(lost, tx, sack, want):
    c = m.Ctx(m.Inputs(sack_ok=sack), m.Outputs(), 0, 0, 0, tx_in_flight=tx, rs_lost=lost)
    assert m.is_inflight_too_high(c) is want


def inflight_at_loss_spec(tx: float, lost: float, size: float) -> float:
    """The draft's InflightAtLoss() in real arithmetic."""
    inflight_prev, lost_prev = tx - size, lost - size
    return inflight_prev + (0.02 * inflight_prev - lost_prev) / 0.98


@pytest.mark.parametrize("tx,lost,size", [(100, 3, 1), (200, 5, 3), (345, 12, 2), (1000, 21, 1), (50, 40, 30)])
def test_inflight_at_loss_is_the_drafts_formula_truncated(tx, lost, size):
    got = m.inflight_at_loss(tx, lost, size)
    spec = inflight_at_loss_spec(tx, lost, size)
    assert got <= tx and abs(got - max(spec, 0)) < 1


# ---- Startup, Drain (5.3.1, 5.3.2; Appendix A.1-A.4) --------------------------------------------

def test_init_enters_startup_with_the_drafts_gains_and_pacing():
    f = Flow()
    b = f.b
    assert (b.state, b.pacing_gain, b.cwnd_gain) == (m.STARTUP, 277, 200)
    assert b.min_rtt_us == 40_000 and b.inflight_longterm == m.INF and b.bw_shortterm == m.INF
    # InitPacingRate(): 2.77 x 10 packets / 40 ms
    assert abs(f.pacing - 2.77 * 10 * MSS / 0.04) / f.pacing < 1e-3


def test_a1_startup_exits_on_a_bandwidth_plateau_after_three_rounds():
    f = Flow()
    f.rounds(1, mbps=100)
    for n in (1, 2):
        f.ack(new_round=True, mbps=110)                        # < 25 % more: a round without growth
        assert f.b.full_bw_count == n and f.b.state == m.STARTUP
    f.ack(new_round=True, mbps=100, inflight=10_000)
    assert f.b.full_bw_now and f.b.full_bw_reached and f.b.state == m.DRAIN
    assert (f.b.pacing_gain, f.b.cwnd_gain) == (50, 200)
    assert f.b.undo_state == m.STATE_NONE                      # not a loss exit


def test_startup_growth_of_25_percent_resets_the_count():
    f = Flow()
    f.rounds(2, interval=1000)
    assert f.b.full_bw_count == 1
    f.ack(new_round=True, interval=800)                        # exactly 1.25 x (to the integer): still growing
    assert f.b.full_bw_count == 0 and f.b.full_bw == f.out.rate == (100 << 24) // 800


def test_a2_startup_exits_on_high_loss_in_recovery():
    f = Flow()
    f.rounds(1, mbps=50)
    f.ack(mbps=50, lost=1, ca_state=m.CA_RECOVERY)             # the first loss starts a loss round
    for _ in range(5):
        f.ack(mbps=50, lost=2, ca_state=m.CA_RECOVERY)
    assert f.b.state == m.STARTUP and f.b.loss_events_in_round == 6
    f.ack(new_round=True, mbps=50, ca_state=m.CA_RECOVERY, app_limited=1, inflight=10_000)   # app-limited: exits
    b = f.b
    assert f.out.too_high == 2 and b.state == m.DRAIN and b.undo_state == m.STARTUP
    assert b.full_bw_now and b.full_bw_reached
    assert b.inflight_longterm == max(m.bdp_multiple(b, b.bw, 100), 100)      # max(bdp, inflight_latest)


def test_startup_does_not_exit_on_loss_below_six_events_or_outside_recovery():
    f = Flow()
    f.rounds(1, mbps=50)
    for _ in range(5):
        f.ack(mbps=50, lost=3, ca_state=m.CA_RECOVERY)
    f.ack(new_round=True, mbps=50, ca_state=m.CA_RECOVERY)
    assert f.b.state == m.STARTUP and f.out.too_high == 0 and f.b.loss_events_in_round == 0
    g = Flow()
    g.rounds(1, mbps=50)
    for _ in range(7):
        g.ack(mbps=50, lost=3, ca_state=m.CA_DISORDER)
    g.ack(new_round=True, mbps=50, ca_state=m.CA_DISORDER)
    assert g.b.state == m.STARTUP


def test_without_sack_any_loss_in_recovery_ends_startup():
    f = Flow()
    f.rounds(1, mbps=50)
    f.ack(mbps=50, lost=1, ca_state=m.CA_RECOVERY, sack=0, inflight=10_000)
    assert f.b.state == m.DRAIN and f.b.undo_state == m.STARTUP


def test_a3_drain_exits_once_inflight_is_at_most_one_bdp():
    f = Flow()
    f.rounds(4, mbps=100, inflight=10_000)
    assert f.b.state == m.DRAIN
    limit = m.inflight(f.b, f.b.bw, 100)
    f.ack(mbps=100, inflight=limit + 1)
    assert f.b.state == m.DRAIN
    f.ack(mbps=100, inflight=limit)
    assert m.is_probe_bw(f.b) and f.b.cwnd_gain == 200


def test_a4_drain_exits_after_three_rounds_even_above_one_bdp():
    f = Flow()
    f.rounds(4, mbps=100, inflight=10_000)
    assert f.b.state == m.DRAIN
    start = f.b.drain_start_round
    for _ in range(3):
        f.ack(new_round=True, mbps=100, inflight=10_000)
        assert f.b.state == m.DRAIN
    f.ack(new_round=True, mbps=100, inflight=10_000)
    assert f.b.round_count == start + 4 and f.b.state == m.PROBE_BW_DOWN


# ---- ProbeBW (5.3.3; A.5, A.8, A.9, A.21) --------------------------------------------------------

def test_a8_probe_bw_down_cruises_once_inflight_is_below_bdp_and_headroom():
    f = Flow()
    f.to_probe_bw()
    f.b.inflight_longterm = 300
    f.enter(m.start_probe_bw_down, rand=2_000_000)
    f.b.ack_phase = m.ACKS_INIT
    f.ack(mbps=100, inflight=256)                          # above 0.85 x 300 = 255
    assert f.b.state == m.PROBE_BW_DOWN and f.b.pacing_gain == 90
    f.ack(mbps=100, inflight=255)
    assert f.b.state == m.PROBE_BW_CRUISE and f.b.pacing_gain == 100


def test_a9_probe_bw_down_refills_after_the_probe_wait_bypassing_cruise():
    f = Flow()
    f.to_probe_bw()
    f.b.state, f.b.cycle_stamp, f.b.bw_probe_wait_us, f.b.rounds_since_probe_up = m.PROBE_BW_DOWN, f.now, 2_000_000, 0
    f.b.ack_phase = m.ACKS_INIT
    f.ack(mbps=90, inflight=100_000, dt=2_000_000)
    assert f.b.state == m.PROBE_BW_DOWN                    # not yet: Now() > cycle_stamp + wait
    f.ack(mbps=90, inflight=100_000, dt=1)
    assert f.b.state == m.PROBE_BW_REFILL and f.b.bw_shortterm == m.INF and f.b.ack_phase == m.ACKS_REFILLING


def test_reno_coexistence_probes_after_min_bdp_63_rounds():
    f = Flow()
    f.to_probe_bw()
    f.enter(m.start_probe_bw_down, rand=1_999_998)
    f.enter(m.start_probe_bw_cruise)
    f.b.ack_phase, f.b.rounds_since_probe_up, f.cwnd = m.ACKS_INIT, 61, 1000
    f.ack(new_round=True, mbps=100, inflight=50)
    assert f.b.state == m.PROBE_BW_CRUISE and f.b.rounds_since_probe_up == 62
    f.ack(new_round=True, mbps=100, inflight=50)
    assert f.b.state == m.PROBE_BW_REFILL                   # 63 rounds: min(BDP 346, 63)


def test_probe_wait_and_rounds_are_drawn_from_one_random_number():
    f = Flow()
    f.rounds(5, mbps=100, inflight=10_000)
    f.ack(mbps=100, inflight=10, rand=(123_456 << 1) | 1)
    assert f.b.bw_probe_wait_us == 2_000_000 + 123_456
    assert f.b.rounds_since_probe_up in (1, 2)              # 1, or 2 if a round started on this ACK


def test_refill_lasts_one_round_then_up_with_its_gains():
    f = Flow()
    f.to_probe_bw()
    f.enter(m.start_probe_bw_refill)
    f.ack(mbps=100)
    assert f.b.state == m.PROBE_BW_REFILL
    f.ack(new_round=True, mbps=100)
    b = f.b
    assert b.state == m.PROBE_BW_UP and b.is_bw_probe_sample and (b.pacing_gain, b.cwnd_gain) == (125, 225)
    assert b.ack_phase == m.ACKS_PROBE_STARTING and b.bw_probe_up_rounds == 1
    assert b.probe_up_acked_per_inc == f.cwnd or b.probe_up_acked_per_inc == max(1, b.probe_up_acked_per_inc)
    assert b.max_inflight == m.quantization_budget(m.Bbr3(**{**b.__dict__, "state": m.PROBE_BW_CRUISE}),
                                                   min(m.bdp_multiple(b, b.bw, 225) + b.extra_acked, m.U32)) + 2


def test_a5_probe_up_goes_down_on_a_plateau():
    f = Flow()
    f.to_probe_bw()
    f.enter(m.start_probe_bw_refill)
    f.ack(new_round=True, mbps=100)
    assert f.b.state == m.PROBE_BW_UP
    for _ in range(3):
        f.ack(new_round=True, mbps=100, cwnd_limited=0)
    assert f.b.state == m.PROBE_BW_DOWN and f.b.prev_probe_too_high == 0


def test_a21_loss_in_probe_up_sets_inflight_longterm_and_goes_down():
    f = Flow()
    f.to_probe_bw()
    f.b.inflight_longterm = 400
    f.enter(m.start_probe_bw_refill)
    f.ack(new_round=True, mbps=100)
    assert f.b.state == m.PROBE_BW_UP and f.b.is_bw_probe_sample
    before, cwnd_in = f.b.copy(), f.cwnd
    o = f.ack(mbps=100, lost=50)                           # far above 2 % of what the ACKed packet saw
    b = f.b
    assert o.too_high == 1 and b.state == m.PROBE_BW_DOWN and b.undo_state == m.PROBE_BW_UP
    assert b.prev_probe_too_high and not b.is_bw_probe_sample
    snap = m.snap_lookup(before, (before.next_round_delivered - 1) & m.U32)
    assert (o.tx_in_flight, o.rs_lost) == (snap[2], f.lost - snap[1])
    assert o.inflight_at_loss == m.inflight_at_loss(o.tx_in_flight, o.rs_lost, 50) <= o.tx_in_flight
    # BBR.inflight_longterm = max(RS.tx_in_flight at the loss, Beta x TargetInflight())
    assert b.inflight_longterm == max(o.inflight_at_loss,
                                      min(m.bdp_multiple(before, before.bw, 100), cwnd_in) * 7 // 10)


def test_loss_in_cruise_cuts_the_short_term_model_once_per_round():
    f = Flow()
    f.to_probe_bw()
    f.b.state, f.b.cycle_stamp, f.b.bw_probe_wait_us = m.PROBE_BW_CRUISE, f.now, 3_000_000
    f.b.ack_phase, f.b.rounds_since_probe_up = m.ACKS_INIT, 0
    max_bw, cwnd = f.b.max_bw, f.cwnd
    f.ack(mbps=40, lost=1)                                 # the loss round starts here
    assert f.b.is_loss_in_round and f.b.bw_shortterm == m.INF
    f.ack(mbps=40, new_round=True)                         # its end: LossLowerBounds()
    b = f.b
    assert b.bw_shortterm == max(bw_of(40) // 1 * 0 + b.bw_shortterm, max_bw * 7 // 10)
    assert b.bw_shortterm == max_bw * 7 // 10 and b.inflight_shortterm == max(100, cwnd * 7 // 10)
    assert b.bw == min(b.max_bw, b.bw_shortterm) and not b.is_loss_in_round


def test_no_short_term_cut_while_probing():
    f = Flow()
    f.to_probe_bw()
    f.enter(m.start_probe_bw_refill)
    f.ack(mbps=40, lost=1)
    f.ack(mbps=40, new_round=True)
    assert f.b.bw_shortterm == m.INF and f.b.inflight_shortterm == m.INF


def test_precautionary_probing_stops_up_at_inflight_longterm_then_refills():
    f = Flow()
    f.to_probe_bw()
    f.b.inflight_longterm, f.b.prev_probe_too_high = 200, 1
    f.enter(m.start_probe_bw_refill)
    f.ack(new_round=True, mbps=100, inflight=150)
    assert f.b.state == m.PROBE_BW_UP
    f.ack(mbps=100, inflight=200)
    assert f.b.state == m.PROBE_BW_DOWN and f.b.prev_probe_precautionary and not f.b.prev_probe_too_high
    f.ack(new_round=True, mbps=100, inflight=300)          # a round of feedback without high loss
    assert f.b.state == m.PROBE_BW_REFILL


def test_the_max_bw_filter_keeps_this_and_the_last_probe_cycle():
    b = m.Bbr3(bw_hi=[500, 0], cycle_count=0, state=m.PROBE_BW_DOWN, ack_phase=m.ACKS_PROBE_STOPPING, round_start=1,
               inflight_longterm=m.INF)
    c = m.Ctx(m.Inputs(), m.Outputs(), 10, 0, 0)
    m.adapt_long_term_model(b, c)
    assert b.cycle_count == 1 and b.bw_hi == [500, 0] and b.max_bw == 500
    b.bw_hi[1] = 300
    b.ack_phase, b.round_start = m.ACKS_PROBE_STOPPING, 1
    m.adapt_long_term_model(b, c)
    assert b.bw_hi == [0, 300] and b.max_bw == 300          # the oldest cycle forgotten


def test_inflight_longterm_grows_in_probe_up_by_doubling_steps():
    b = m.Bbr3(state=m.PROBE_BW_UP, inflight_longterm=100, bw_probe_up_rounds=0, probe_up_acked_per_inc=m.INF,
               round_start=0)
    c = m.Ctx(m.Inputs(is_cwnd_limited=1, rs_acked_sacked=50), m.Outputs(), 100, 0, 0)
    m.raise_inflight_longterm_slope(b, c)
    assert (b.bw_probe_up_rounds, b.probe_up_acked_per_inc) == (1, 100)       # 1 packet per cwnd
    m.probe_inflight_longterm_upward(b, c)
    m.probe_inflight_longterm_upward(b, c)
    assert b.inflight_longterm == 101 and b.bw_probe_up_acked == 0
    m.probe_inflight_longterm_upward(b, c)
    assert b.inflight_longterm == 101 and b.bw_probe_up_acked == 0             # cwnd below it: not using it
    b.round_start, c.cwnd = 1, 101
    m.probe_inflight_longterm_upward(b, c)
    assert (b.bw_probe_up_rounds, b.probe_up_acked_per_inc) == (2, 50)        # 2 packets per cwnd now


# ---- ProbeRTT and min_rtt (5.3.4; A.10, A.11, A.20) ----------------------------------------------

def test_a10_probe_rtt_every_five_seconds_with_cwnd_at_half_a_bdp():
    f = Flow()
    f.to_probe_bw()
    f.cwnd = 600
    start = f.b.probe_rtt_min_stamp
    f.ack(mbps=100, dt=start + 5_000_000 - f.now, rtt=45_000)
    assert f.b.state != m.PROBE_RTT                         # 5 s exactly is not more than 5 s
    f.ack(mbps=100, dt=1, rtt=45_000, inflight=600)
    b = f.b
    assert b.state == m.PROBE_RTT and (b.pacing_gain, b.cwnd_gain) == (100, 50) and b.ack_phase == m.ACKS_PROBE_STOPPING
    assert f.cwnd == max(m.bdp_multiple(b, b.bw, 50), 4) == 173
    assert f.out.app_limited == (f.delivered + 600) & m.U32
    assert b.probe_rtt_min_us == 45_000 and b.min_rtt_us == 40_000        # the expired sample was taken
    f.ack(mbps=100, inflight=173, rtt=40_000)
    assert b.state == m.PROBE_RTT and f.b.probe_rtt_done_stamp == f.now + 200_000
    f.ack(mbps=100, inflight=100, new_round=True, dt=100_000)
    assert f.b.probe_rtt_round_done and f.b.state == m.PROBE_RTT
    f.ack(mbps=100, inflight=100, dt=100_001)
    assert f.b.state == m.PROBE_BW_CRUISE and f.b.probe_rtt_min_stamp == f.now
    assert f.cwnd >= f.b.prior_cwnd or f.cwnd == f.b.max_inflight


def test_a20_probe_rtt_in_startup_returns_to_startup():
    f = Flow()
    f.ack(mbps=10, dt=5_000_001, new_round=True)
    assert f.b.state == m.PROBE_RTT and not f.b.full_bw_reached
    f.ack(mbps=10, inflight=2)
    f.ack(mbps=10, inflight=2, new_round=True, dt=300_000)
    f.ack(mbps=10, inflight=2, dt=1)
    assert f.b.state == m.STARTUP and f.b.pacing_gain == 277


def test_a11_idle_restart_skips_probe_rtt_and_paces_at_bw():
    f = Flow()
    f.to_probe_bw()
    f.b.full_bw_reached = 1
    b, o = m.on_tx_start(f.b, m.Inputs(now=f.now + 6_000_000, event=m.CA_EVENT_TX_START, inflight=0, app_limited=5,
                                       mss=MSS, pacing_rate=1, cwnd=f.cwnd))
    assert b.idle_restart and o.pacing_rate == m.rate_bytes(b.bw, MSS, 100, True)
    f.b, f.now = b, f.now + 6_000_000
    f.ack(mbps=100, rs_delivered=0, acked=0)
    assert f.b.state != m.PROBE_RTT
    nothing, _ = m.on_tx_start(f.b, m.Inputs(event=m.CA_EVENT_TX_START, inflight=3, app_limited=5))
    assert nothing == f.b                                    # something in flight: not a restart


def test_min_rtt_takes_lower_samples_and_expires_after_ten_seconds():
    b = m.Bbr3(min_rtt_us=40_000, min_rtt_stamp=0, probe_rtt_min_us=40_000, probe_rtt_min_stamp=0)
    c = m.Ctx(m.Inputs(now=1_000, rs_rtt_us=39_000), m.Outputs(), 10, 0, 0)
    m.update_min_rtt(b, c)
    assert (b.min_rtt_us, b.min_rtt_stamp) == (39_000, 1_000)
    c = m.Ctx(m.Inputs(now=6_000_000, rs_rtt_us=50_000), m.Outputs(), 10, 0, 0)
    m.update_min_rtt(b, c)
    assert b.probe_rtt_expired and b.probe_rtt_min_us == 50_000 and b.min_rtt_us == 39_000
    c = m.Ctx(m.Inputs(now=11_000_001, rs_rtt_us=-1), m.Outputs(), 10, 0, 0)
    m.update_min_rtt(b, c)
    assert b.min_rtt_us == 50_000 and b.min_rtt_stamp == 6_000_000


# ---- loss recovery and undo (5.5.11, 5.6.4.4) ----------------------------------------------------

def test_recovery_saves_and_restores_cwnd():
    f = Flow()
    f.to_probe_bw()
    b, o = m.on_ssthresh(f.b, m.Inputs(cwnd=300, ssthresh=0x7fffffff, ca_state=m.CA_OPEN))
    assert b.prior_cwnd == 300 and o.ret == 0x7fffffff and b.undo_state == m.STATE_NONE
    f.b = b
    f.cwnd = 50
    f.ack(mbps=100, ca_state=m.CA_RECOVERY)
    assert f.cwnd < 300
    f.ack(mbps=100, ca_state=m.CA_OPEN)
    assert f.cwnd == min(300 + 2, f.b.max_inflight)            # RestoreCwnd(), then + newly acked


def test_a18_spurious_recovery_restores_startup():
    f = Flow()
    f.rounds(1, mbps=50)
    f.ack(mbps=50, lost=1, ca_state=m.CA_RECOVERY)
    undo = (f.b.undo_bw_shortterm, f.b.undo_inflight_shortterm, f.b.undo_inflight_longterm)
    for _ in range(5):
        f.ack(mbps=50, lost=2, ca_state=m.CA_RECOVERY)
    f.ack(new_round=True, mbps=50, ca_state=m.CA_RECOVERY, inflight=10_000)
    assert f.b.state == m.DRAIN and f.b.undo_state == m.STARTUP
    b, o = m.on_undo(f.b, m.Inputs(cwnd=20, delivered=f.delivered))
    assert b.state == m.STARTUP and not b.full_bw_reached and b.undo_state == m.STATE_NONE
    assert b.full_bw == 0 and b.full_bw_count == 0 and not b.is_loss_in_round
    assert b.inflight_longterm == max(f.b.inflight_longterm, undo[2]) == m.INF
    assert o.ret == max(20, f.b.prior_cwnd)


def test_undo_of_a_probe_up_loss_refills():
    b = m.Bbr3(state=m.PROBE_BW_DOWN, undo_state=m.PROBE_BW_UP, inflight_longterm=100, undo_inflight_longterm=300,
               bw_shortterm=m.INF, inflight_shortterm=m.INF, prior_cwnd=250)
    after, o = m.on_undo(b, m.Inputs(cwnd=100, delivered=7))
    assert after.state == m.PROBE_BW_REFILL and after.inflight_longterm == 300 and o.ret == 250
    assert after.next_round_delivered == 7


# ---- the snapshot ring: RS.tx_in_flight and RS.lost (difference 2) -------------------------------

def test_the_ring_gives_the_snapshot_before_the_acked_packet_was_sent():
    b = m.Bbr3()
    for d, lost, infl in ((0, 0, 0), (100, 1, 80), (200, 3, 120), (300, 6, 150)):
        m.snap_push(b, d, lost, infl)
    assert m.snap_lookup(b, 250) == [200, 3, 120]
    assert m.snap_lookup(b, 300) == [300, 6, 150]
    assert m.snap_lookup(b, 99) == [0, 0, 0]
    for d in range(400, 400 + 100 * m.SNAPS, 100):
        m.snap_push(b, d, 9, 10)
    assert b.snap_used == m.SNAPS and m.snap_lookup(b, 5) == b.snap[b.snap_next]      # the oldest left


def test_each_ack_reads_the_ring_and_pushes_every_cwnd_over_8_delivered():
    f = Flow()
    f.cwnd = 80
    n0 = f.b.snap_used
    o = f.ack(mbps=10, acked=5, lost=2)
    assert o.rs_lost == 2 and o.newly_marked == 2 and f.b.snap_used == n0
    prior_in_flight = f.cwnd
    f.ack(mbps=10, acked=5)
    assert f.b.snap_used == n0 + 1                          # 10 >= 80 / 8 packets since the last one
    assert f.b.snap[(f.b.snap_next - 1) % m.SNAPS] == [f.delivered, 2, min(prior_in_flight, f.cwnd)]


def test_ce_marks_count_as_congestion():
    f = Flow()
    f.rounds(1, mbps=50)
    i = m.Inputs(now=f.now + 10, delivered=f.delivered + 2, lost=0, delivered_ce=3, cwnd=f.cwnd, mss=MSS,
                 rs_delivered=10, rs_interval_us=1000, rs_acked_sacked=2, rs_prior_delivered=f.delivered)
    b, o = m.on_ack(f.b, i)
    assert o.newly_marked == 3 and b.is_loss_in_round


def test_cwnd_grows_by_acked_until_max_inflight_and_is_bounded_by_the_model():
    f = Flow()
    f.ack(mbps=10, acked=4)
    assert f.cwnd == 14                                     # Startup: + newly acked
    f.to_probe_bw()
    f.b.state, f.b.inflight_longterm = m.PROBE_BW_DOWN, 100
    f.cwnd = 500
    f.ack(mbps=100, inflight=400)
    assert f.cwnd == 100                                    # ProbeBW_DOWN: capped at inflight_longterm
    f.b.state, f.b.inflight_shortterm = m.PROBE_BW_CRUISE, 60
    f.b.cycle_stamp = f.now
    f.ack(mbps=100, inflight=10)
    assert f.cwnd == 60                                     # CRUISE: min(headroom 85, shortterm 60)
