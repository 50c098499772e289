"""Reference model of bbr3 (BBRv3 after draft-ietf-ccwg-bbr-06, as a BPF program): every decision of
nodes/congestion/bpf/bbr3.bpf.c in pure Python, statement for statement.

The C program keeps its state in a `struct bbr3` (one per socket) and makes every decision in
five entry points: `init`, `on_ack` (cong_control: UpdateOnACK of the draft, section 5.2.3),
`on_ssthresh` (entering loss recovery, 5.6.4.4), `on_undo` (a spurious recovery, 5.5.11) and
`on_tx_start` (restarting from idle, 5.4). Each takes the state and the inputs the kernel gave
(`Inputs`, the C program's `struct b3_in`) and returns the new state and what was written to
the socket (`Outputs`). A test build records the state before and after, the inputs and the
outputs of every call; nodes/congestion/trace_bbr3.py decodes those records and replays them
here, and the two must agree field for field.

Units are the kernel's, as in Linux's tcp_bbr.c: volumes in packets (C.SMSS = one packet: the
draft's RECOMMENDED bytes are not what Linux TCP counts), times in microseconds (tcp_mstamp),
bandwidth in packets per microsecond << 24 (BW_SCALE). Gains are in percent (the draft's own
decimal values: 2.77, 0.9, 1.25, ...), thresholds exact fractions (2/100, 15/100, 7/10).
Integer arithmetic follows the C: unsigned 32/64-bit with wrap-around (masked here), C's
truncating division, `(s32)(a - b)` comparisons of sequence counters.
"""
from __future__ import annotations

from nodes.congestion.model_bbr3_state import (  # noqa: F401  (one namespace: the state and its constants)
    ACKS_INIT, ACKS_PROBE_FEEDBACK, ACKS_PROBE_STARTING, ACKS_PROBE_STOPPING, ACKS_REFILLING, BETA, BW_MAX,
    BW_SCALE, BW_UNIT, Bbr3, CA_CWR, CA_DISORDER, CA_EVENT_TX_START, CA_LOSS, CA_OPEN, CA_RECOVERY,
    CRUISE_PACING_GAIN, Ctx, DEFAULT_CWND_GAIN, DRAIN, DRAIN_PACING_GAIN, EXTRA_ACKED_FILTER_LEN, FULL_BW_GROWTH,
    FULL_BW_ROUNDS, HEADROOM, INF, INITIAL_CWND, Inputs, LOSS_THRESH, MIN_PIPE_CWND, MIN_RTT_FILTER_US, Outputs,
    PACING_MARGIN_PERCENT, PROBE_BW_CRUISE, PROBE_BW_DOWN, PROBE_BW_REFILL, PROBE_BW_UP, PROBE_DOWN_PACING_GAIN,
    PROBE_RTT, PROBE_RTT_CWND_GAIN, PROBE_RTT_DURATION_US, PROBE_RTT_INTERVAL_US, PROBE_UP_CWND_GAIN,
    PROBE_UP_PACING_GAIN, PROBE_WAIT_BASE_US, PROBE_WAIT_RAND_US, RENO_ROUNDS_MAX, RTT_MAX_US,
    SEND_QUANTUM_MAX_BYTES, SEND_QUANTUM_MIN, SNAPS, SNAP_STEP_SHIFT, STARTUP, STARTUP_FULL_LOSS_CNT,
    STARTUP_PACING_GAIN, STATE_NAMES, STATE_NONE, U32, U64, USEC_PER_SEC, cdiv, s32
)


# ---- small helpers -------------------------------------------------------------------------------

def is_probe_bw(b: Bbr3) -> bool:
    return b.state in (PROBE_BW_DOWN, PROBE_BW_CRUISE, PROBE_BW_REFILL, PROBE_BW_UP)


def is_probing_bw(b: Bbr3) -> bool:
    return b.state in (STARTUP, PROBE_BW_REFILL, PROBE_BW_UP)


def in_loss_recovery(c: Ctx) -> bool:
    return c.i.ca_state in (CA_RECOVERY, CA_LOSS)


def rate_bytes(bw: int, mss: int, gain: int, margin: bool) -> int:
    """bytes/s for a bandwidth (packets/us << 24) and a gain in percent, 1 % below it with margin."""
    rate = (bw * mss) & U64
    rate = ((rate * gain) & U64) // 100
    rate = (rate * (USEC_PER_SEC // 100 * (100 - PACING_MARGIN_PERCENT) if margin else USEC_PER_SEC)) & U64
    return rate >> BW_SCALE


def bdp_multiple(b: Bbr3, bw: int, gain: int) -> int:
    """BDPMultiple(bw, gain): gain x bw x min_rtt in packets, rounded up; InitialCwnd without an RTT."""
    if b.min_rtt_us == INF:
        return INITIAL_CWND
    w = (bw * b.min_rtt_us) & U64
    return min(((((w * gain) & U64) // 100 + BW_UNIT - 1) & U64) >> BW_SCALE, U32)


def quantization_budget(b: Bbr3, cap: int) -> int:
    cap = max(cap, 3 * b.send_quantum)            # BBR.offload_budget = 3 * C.send_quantum (TCP)
    cap = max(cap, MIN_PIPE_CWND)
    if b.state == PROBE_BW_UP:
        cap += 2
    return min(cap, U32)


def inflight(b: Bbr3, bw: int, gain: int) -> int:
    return quantization_budget(b, bdp_multiple(b, bw, gain))


def target_inflight(b: Bbr3, c: Ctx) -> int:
    return min(bdp_multiple(b, b.bw, 100), c.cwnd)


def inflight_with_headroom(b: Bbr3) -> int:
    if b.inflight_longterm == INF:
        return INF
    headroom = max(1, b.inflight_longterm * HEADROOM[0] // HEADROOM[1])
    return max(b.inflight_longterm - headroom if b.inflight_longterm > headroom else 0, MIN_PIPE_CWND)


def probe_rtt_cwnd(b: Bbr3) -> int:
    return max(bdp_multiple(b, b.bw, PROBE_RTT_CWND_GAIN), MIN_PIPE_CWND)


def is_inflight_too_high(c: Ctx) -> bool:
    """IsInflightTooHigh(): RS.lost > RS.tx_in_flight * 2 % (exactly), or any loss without SACK."""
    return c.rs_lost * LOSS_THRESH[1] > c.tx_in_flight * LOSS_THRESH[0] or (c.rs_lost > 0 and not c.i.sack_ok)


def inflight_at_loss(tx_in_flight: int, lost: int, size: int) -> int:
    """InflightAtLoss(): the in-flight at which the loss rate crossed BBR.LossThresh, `size` being
    the data newly marked lost on this ACK (the draft's packet P); never below 0."""
    inflight_prev = tx_in_flight - size
    lost_prev = lost - size
    lost_prefix = cdiv(LOSS_THRESH[0] * inflight_prev - LOSS_THRESH[1] * lost_prev, LOSS_THRESH[1] - LOSS_THRESH[0])
    return min(max(inflight_prev + lost_prefix, 0), U32)


# ---- state entries (5.3) -------------------------------------------------------------------------

def start_round(b: Bbr3, c: Ctx) -> None:
    b.next_round_delivered = c.i.delivered


def enter_startup(b: Bbr3) -> None:
    b.state = STARTUP
    b.pacing_gain = STARTUP_PACING_GAIN
    b.cwnd_gain = DEFAULT_CWND_GAIN


def enter_drain(b: Bbr3) -> None:
    b.state = DRAIN
    b.pacing_gain = DRAIN_PACING_GAIN
    b.cwnd_gain = DEFAULT_CWND_GAIN
    b.drain_start_round = b.round_count


def reset_full_bw(b: Bbr3) -> None:
    b.full_bw = 0
    b.full_bw_count = 0
    b.full_bw_now = 0


def reset_congestion_signals(b: Bbr3) -> None:
    b.is_loss_in_round = 0
    b.bw_latest = 0
    b.inflight_latest = 0


def reset_short_term_model(b: Bbr3) -> None:
    b.bw_shortterm = INF
    b.inflight_shortterm = INF


def pick_probe_wait(b: Bbr3, c: Ctx) -> None:
    b.rounds_since_probe_up = c.i.rand & 1
    b.bw_probe_wait_us = PROBE_WAIT_BASE_US + (c.i.rand >> 1) % PROBE_WAIT_RAND_US


def start_probe_bw_down(b: Bbr3, c: Ctx) -> None:
    reset_congestion_signals(b)
    b.probe_up_acked_per_inc = INF
    pick_probe_wait(b, c)
    b.cycle_stamp = c.i.now
    b.ack_phase = ACKS_PROBE_STOPPING
    start_round(b, c)
    b.state = PROBE_BW_DOWN
    b.pacing_gain = PROBE_DOWN_PACING_GAIN
    b.cwnd_gain = DEFAULT_CWND_GAIN


def start_probe_bw_cruise(b: Bbr3) -> None:
    b.state = PROBE_BW_CRUISE
    b.pacing_gain = CRUISE_PACING_GAIN
    b.cwnd_gain = DEFAULT_CWND_GAIN


def start_probe_bw_refill(b: Bbr3, c: Ctx) -> None:
    reset_short_term_model(b)
    b.bw_probe_up_rounds = 0
    b.bw_probe_up_acked = 0
    b.prev_probe_precautionary = 0
    b.ack_phase = ACKS_REFILLING
    start_round(b, c)
    b.state = PROBE_BW_REFILL
    b.pacing_gain = CRUISE_PACING_GAIN
    b.cwnd_gain = DEFAULT_CWND_GAIN


def raise_inflight_longterm_slope(b: Bbr3, c: Ctx) -> None:
    growth_this_round = 1 << b.bw_probe_up_rounds
    b.bw_probe_up_rounds = min(b.bw_probe_up_rounds + 1, 30)
    b.probe_up_acked_per_inc = max(c.cwnd // growth_this_round, 1)


def start_probe_bw_up(b: Bbr3, c: Ctx) -> None:
    b.ack_phase = ACKS_PROBE_STARTING
    start_round(b, c)
    reset_full_bw(b)
    b.full_bw = c.rate
    b.state = PROBE_BW_UP
    b.pacing_gain = PROBE_UP_PACING_GAIN
    b.cwnd_gain = PROBE_UP_CWND_GAIN
    raise_inflight_longterm_slope(b, c)


def enter_probe_bw(b: Bbr3, c: Ctx) -> None:
    b.cwnd_gain = DEFAULT_CWND_GAIN
    start_probe_bw_down(b, c)


def enter_probe_rtt(b: Bbr3) -> None:
    b.state = PROBE_RTT
    b.pacing_gain = 100
    b.cwnd_gain = PROBE_RTT_CWND_GAIN


def save_cwnd(b: Bbr3, c: Ctx) -> None:
    if not in_loss_recovery(c) and b.state != PROBE_RTT:
        b.prior_cwnd = c.cwnd
    else:
        b.prior_cwnd = max(b.prior_cwnd, c.cwnd)


def restore_cwnd(b: Bbr3, c: Ctx) -> None:
    c.cwnd = max(c.cwnd, b.prior_cwnd)


def save_state_upon_loss(b: Bbr3, c: Ctx) -> None:
    save_cwnd(b, c)
    b.undo_state = STATE_NONE
    b.undo_bw_shortterm = b.bw_shortterm
    b.undo_inflight_shortterm = b.inflight_shortterm
    b.undo_inflight_longterm = b.inflight_longterm


def exit_probe_rtt(b: Bbr3, c: Ctx) -> None:
    reset_short_term_model(b)
    if b.full_bw_reached:
        start_probe_bw_down(b, c)
        start_probe_bw_cruise(b)
    else:
        enter_startup(b)


def check_probe_rtt_done(b: Bbr3, c: Ctx) -> None:
    if b.probe_rtt_done_stamp and c.i.now > b.probe_rtt_done_stamp:
        b.probe_rtt_min_stamp = c.i.now               # schedule the next ProbeRTT
        restore_cwnd(b, c)
        exit_probe_rtt(b, c)


def set_pacing_rate_with_gain(b: Bbr3, c: Ctx, gain: int) -> None:
    rate = min(rate_bytes(b.bw, c.i.mss, gain, True), c.i.max_pacing_rate)
    if b.full_bw_reached or rate > c.pacing_rate:
        c.pacing_rate = rate


def init_pacing_rate(b: Bbr3, c: Ctx) -> None:
    """InitPacingRate(): StartupPacingGain x InitialCwnd / (srtt or 1 ms)."""
    rtt = c.i.srtt_us if c.i.srtt_us else 1000
    b.has_seen_rtt = 1 if c.i.srtt_us else 0
    bw = (INITIAL_CWND * BW_UNIT) // max(rtt, 1)
    c.pacing_rate = min(rate_bytes(bw, c.i.mss, STARTUP_PACING_GAIN, False), c.i.max_pacing_rate)


# ---- the snapshot ring (this kernel has no per-packet P.lost / P.tx_in_flight) -------------------

def snap_push(b: Bbr3, delivered: int, marks: int, inflight_now: int) -> None:
    b.snap[b.snap_next] = [delivered & U32, marks & U32, inflight_now & U32]
    b.snap_next = (b.snap_next + 1) % SNAPS
    b.snap_used = min(b.snap_used + 1, SNAPS)


def snap_lookup(b: Bbr3, key: int) -> list[int]:
    """The newest snapshot taken at or before C.delivered == key (the oldest one if all are newer)."""
    for k in range(1, SNAPS + 1):
        if k > b.snap_used:
            break
        s = b.snap[(b.snap_next - k) % SNAPS]
        if s32(s[0] - key) <= 0:
            return s
    return b.snap[(b.snap_next - b.snap_used) % SNAPS] if b.snap_used else [key & U32, b.marks_seen, 0]


# ---- the entry points ----------------------------------------------------------------------------

def init(i: Inputs) -> tuple[Bbr3, Outputs]:
    """OnInit() (5.2.1): every field of the state, the initial pacing rate."""
    b = Bbr3()
    c = Ctx(i, Outputs(), i.cwnd, i.pacing_rate, i.app_limited)
    b.initialized = 1
    b.bw_hi = [0, 0]
    b.cycle_count = 0
    b.bw = 0
    b.min_rtt_us = min(i.srtt_us, RTT_MAX_US) if i.srtt_us else INF
    b.min_rtt_stamp = i.now
    b.probe_rtt_min_us = b.min_rtt_us
    b.probe_rtt_min_stamp = i.now
    b.probe_rtt_done_stamp = 0
    b.probe_rtt_round_done = 0
    b.probe_rtt_expired = 0
    b.prior_cwnd = 0
    b.undo_state = STATE_NONE
    b.undo_bw_shortterm = b.undo_inflight_shortterm = b.undo_inflight_longterm = 0
    b.idle_restart = 0
    b.extra_acked_interval_start = i.now
    b.extra_acked_delivered = 0
    b.extra_acked = 0
    b.full_bw_reached = 0
    b.inflight_longterm = INF
    b.probe_up_acked_per_inc = INF
    b.bw_probe_up_acked = 0
    b.bw_probe_up_rounds = 0
    b.rounds_since_probe_up = 0
    b.is_bw_probe_sample = 0
    b.prev_probe_too_high = 0
    b.prev_probe_precautionary = 0
    b.ack_phase = ACKS_INIT
    b.cycle_stamp = 0
    b.bw_probe_wait_us = 0
    b.loss_round_delivered = 0
    b.loss_round_start = 0
    b.loss_events_in_round = 0
    b.send_quantum = SEND_QUANTUM_MIN
    b.max_inflight = 0
    reset_congestion_signals(b)
    reset_short_term_model(b)
    b.next_round_delivered = 0                    # InitRoundCounting()
    b.round_start = 0
    b.round_count = 0
    reset_full_bw(b)
    init_pacing_rate(b, c)
    enter_startup(b)
    b.prev_ca_state = i.ca_state
    b.marks_seen = (i.lost + i.delivered_ce) & U32
    b.last_key = i.delivered & U32
    snap_push(b, i.delivered, b.marks_seen, 0)
    return b, _outputs(c)


def _outputs(c: Ctx) -> Outputs:
    o = c.o
    o.cwnd, o.pacing_rate, o.app_limited = c.cwnd, c.pacing_rate, c.app_limited
    o.tx_in_flight, o.rs_lost, o.newly_marked, o.rate = c.tx_in_flight, c.rs_lost, c.newly_marked, c.rate
    return o


def on_ssthresh(before: Bbr3, i: Inputs) -> tuple[Bbr3, Outputs]:
    """Entering loss recovery (fast recovery, RTO or an ECN CWR): OnEnterFastRecovery() /
    OnEnterRTO() (5.6.4.4): SaveCwnd(); SaveStateUponLoss(). ssthresh stays as it is (the
    kernel sets the RTO's cwnd = in-flight + 1 itself)."""
    b = before.copy()
    c = Ctx(i, Outputs(), i.cwnd, i.pacing_rate, i.app_limited)
    save_cwnd(b, c)
    save_state_upon_loss(b, c)
    o = _outputs(c)
    o.ret = i.ssthresh
    return b, o


def on_undo(before: Bbr3, i: Inputs) -> tuple[Bbr3, Outputs]:
    """HandleSpuriousLossDetection() (5.5.11.2); returns the cwnd to restore."""
    b = before.copy()
    c = Ctx(i, Outputs(), i.cwnd, i.pacing_rate, i.app_limited)
    restore_cwnd(b, c)
    b.is_loss_in_round = 0
    reset_full_bw(b)
    b.bw_shortterm = max(b.bw_shortterm, b.undo_bw_shortterm)
    b.inflight_shortterm = max(b.inflight_shortterm, b.undo_inflight_shortterm)
    b.inflight_longterm = max(b.inflight_longterm, b.undo_inflight_longterm)
    if b.undo_state == STARTUP and b.state != STARTUP:
        b.full_bw_reached = 0
        if b.state != PROBE_RTT:
            enter_startup(b)
    elif b.undo_state == PROBE_BW_UP and b.state != PROBE_BW_UP:
        if b.state != PROBE_RTT:
            start_probe_bw_refill(b, c)
    b.undo_state = STATE_NONE
    o = _outputs(c)
    o.ret = c.cwnd
    return b, o


def on_tx_start(before: Bbr3, i: Inputs) -> tuple[Bbr3, Outputs]:
    """cwnd_event: HandleRestartFromIdle() (5.4.1) on CA_EVENT_TX_START (the kernel sends it when
    nothing is in flight) of an application-limited connection."""
    b = before.copy()
    c = Ctx(i, Outputs(), i.cwnd, i.pacing_rate, i.app_limited)
    if i.event == CA_EVENT_TX_START and i.inflight == 0 and i.app_limited:
        b.idle_restart = 1
        b.extra_acked_interval_start = i.now
        if is_probe_bw(b):
            set_pacing_rate_with_gain(b, c, 100)
        elif b.state == PROBE_RTT:
            check_probe_rtt_done(b, c)
    return b, _outputs(c)


def on_ack(before: Bbr3, i: Inputs) -> tuple[Bbr3, Outputs]:
    """cong_control: UpdateOnACK() (5.2.3) with the per-loss steps of this ACK first."""
    b = before.copy()
    c = Ctx(i, Outputs(), i.cwnd, i.pacing_rate, i.app_limited)
    c.rs_delivered = max(i.rs_delivered, 0)
    c.valid = i.rs_delivered > 0
    if i.rs_delivered > 0 and i.rs_interval_us > 0:
        c.rate = min((c.rs_delivered * BW_UNIT) // i.rs_interval_us, BW_MAX)
    marks = (i.lost + i.delivered_ce) & U32
    c.newly_marked = (marks - b.marks_seen) & U32
    b.marks_seen = marks
    # RS.tx_in_flight and RS.lost of the ACKed packet P (P.delivered = rs.prior_delivered)
    key = i.rs_prior_delivered & U32 if c.valid else b.last_key
    b.last_key = key
    snap = snap_lookup(b, key)
    c.tx_in_flight = snap[2]
    c.rs_lost = (marks - snap[1]) & U32
    # leaving loss recovery: RestoreCwnd() (5.6.4.4)
    if b.prev_ca_state >= CA_RECOVERY and i.ca_state < CA_RECOVERY:
        restore_cwnd(b, c)
    b.prev_ca_state = i.ca_state
    # per-loss steps (5.2.4, HandleLostPacket) once for this ACK's newly marked data
    if c.newly_marked:
        note_loss(b, c)
        if b.is_bw_probe_sample and is_inflight_too_high(c):
            tx = inflight_at_loss(c.tx_in_flight, c.rs_lost, c.newly_marked)
            c.o.inflight_at_loss = tx
            c.o.too_high = 1
            handle_inflight_too_high(b, c, tx)
    update_model_and_state(b, c)
    update_control_parameters(b, c)
    # this ACK's snapshot for the packets it releases
    last = b.snap[(b.snap_next - 1) % SNAPS]
    step = max(c.cwnd >> SNAP_STEP_SHIFT, 1)
    if not b.snap_used or ((i.delivered - last[0]) & U32) >= step:
        snap_push(b, i.delivered, marks, min(i.rs_prior_in_flight, c.cwnd))
    return b, _outputs(c)


def note_loss(b: Bbr3, c: Ctx) -> None:
    if not b.is_loss_in_round:
        b.loss_round_delivered = c.i.delivered
        save_state_upon_loss(b, c)
    b.is_loss_in_round = 1


def handle_inflight_too_high(b: Bbr3, c: Ctx, tx_in_flight: int) -> None:
    b.prev_probe_too_high = 1
    b.is_bw_probe_sample = 0
    if not c.i.rs_is_app_limited:
        b.inflight_longterm = max(tx_in_flight, target_inflight(b, c) * BETA[0] // BETA[1])
    if b.state == PROBE_BW_UP:
        b.undo_state = PROBE_BW_UP
        start_probe_bw_down(b, c)


def update_model_and_state(b: Bbr3, c: Ctx) -> None:
    update_latest_delivery_signals(b, c)
    update_congestion_signals(b, c)
    update_ack_aggregation(b, c)
    check_full_bw_reached(b, c)
    check_startup_done(b, c)
    check_drain_done(b, c)
    update_probe_bw_cycle_phase(b, c)
    update_min_rtt(b, c)
    check_probe_rtt(b, c)
    advance_latest_delivery_signals(b, c)
    bound_bw_for_model(b)


def update_latest_delivery_signals(b: Bbr3, c: Ctx) -> None:
    b.loss_round_start = 0
    b.bw_latest = max(b.bw_latest, c.rate)
    b.inflight_latest = max(b.inflight_latest, c.rs_delivered)
    if c.valid and s32(c.i.rs_prior_delivered - b.loss_round_delivered) >= 0:
        b.loss_round_delivered = c.i.delivered
        b.loss_round_start = 1


def update_round(b: Bbr3, c: Ctx) -> None:
    if c.valid and s32(c.i.rs_prior_delivered - b.next_round_delivered) >= 0:
        start_round(b, c)
        b.round_count = (b.round_count + 1) & U32
        b.rounds_since_probe_up = (b.rounds_since_probe_up + 1) & U32
        b.round_start = 1
    else:
        b.round_start = 0


def update_max_bw(b: Bbr3, c: Ctx) -> None:
    update_round(b, c)
    if c.rate > 0 and (c.rate >= b.max_bw or not c.i.rs_is_app_limited):
        slot = b.cycle_count & 1
        b.bw_hi[slot] = max(b.bw_hi[slot], c.rate)


def update_congestion_signals(b: Bbr3, c: Ctx) -> None:
    update_max_bw(b, c)
    if not b.loss_round_start:
        return
    adapt_lower_bounds_from_congestion(b, c)
    b.is_loss_in_round = 0


def adapt_lower_bounds_from_congestion(b: Bbr3, c: Ctx) -> None:
    if is_probing_bw(b):
        return
    if b.is_loss_in_round:
        if b.bw_shortterm == INF:                  # InitLowerBounds()
            b.bw_shortterm = b.max_bw
        if b.inflight_shortterm == INF:
            b.inflight_shortterm = c.cwnd
        b.bw_shortterm = max(b.bw_latest, b.bw_shortterm * BETA[0] // BETA[1])           # LossLowerBounds()
        b.inflight_shortterm = max(b.inflight_latest, b.inflight_shortterm * BETA[0] // BETA[1])


def update_ack_aggregation(b: Bbr3, c: Ctx) -> None:
    interval = (c.i.now - b.extra_acked_interval_start) & U64
    expected = ((b.bw * interval) & U64) >> BW_SCALE
    if b.extra_acked_delivered <= expected:
        b.extra_acked_delivered = 0
        b.extra_acked_interval_start = c.i.now
        expected = 0
    b.extra_acked_delivered = (b.extra_acked_delivered + c.i.rs_acked_sacked) & U32
    extra = b.extra_acked_delivered - expected if b.extra_acked_delivered > expected else 0
    extra = min(extra, c.cwnd)
    # windowed max over round_count: one slot per round, the last filter_len rounds
    slot = b.round_count % EXTRA_ACKED_FILTER_LEN
    if b.round_start:
        b.xa[slot] = 0
    b.xa[slot] = max(b.xa[slot], extra)
    if b.full_bw_reached:
        b.extra_acked = max(b.xa)
    else:
        b.extra_acked = b.xa[slot]                 # in Startup, just remember 1 round


def check_full_bw_reached(b: Bbr3, c: Ctx) -> None:
    if b.full_bw_now or not b.round_start or c.i.rs_is_app_limited:
        return
    if c.rate * FULL_BW_GROWTH[1] >= b.full_bw * FULL_BW_GROWTH[0]:
        reset_full_bw(b)
        b.full_bw = c.rate
        return
    b.full_bw_count += 1
    b.full_bw_now = 1 if b.full_bw_count >= FULL_BW_ROUNDS else 0
    if b.full_bw_now:
        b.full_bw_reached = 1


def check_startup_high_loss(b: Bbr3, c: Ctx) -> None:
    """CheckStartupHighLoss() (5.3.1.3): in fast recovery for a full round, the round's loss rate
    above 2 %, at least 6 loss events in the round (without SACK: any loss in fast recovery)."""
    if b.state != STARTUP:
        return
    if c.newly_marked and b.loss_events_in_round < 15:
        b.loss_events_in_round += 1
    if c.i.sack_ok:
        high = (b.loss_round_start and c.i.ca_state == CA_RECOVERY
                and b.loss_events_in_round >= STARTUP_FULL_LOSS_CNT and is_inflight_too_high(c))
    else:
        high = c.i.ca_state == CA_RECOVERY and c.newly_marked > 0
    if high:
        b.undo_state = STARTUP
        b.full_bw_now = 1
        b.full_bw_reached = 1
        b.inflight_longterm = max(bdp_multiple(b, b.bw, 100), b.inflight_latest)
        c.o.too_high = 2
        return
    if b.loss_round_start:
        b.loss_events_in_round = 0


def check_startup_done(b: Bbr3, c: Ctx) -> None:
    check_startup_high_loss(b, c)
    if b.state == STARTUP and b.full_bw_reached:
        enter_drain(b)


def check_drain_done(b: Bbr3, c: Ctx) -> None:
    if b.state == DRAIN and (c.i.inflight <= inflight(b, b.bw, 100)
                             or s32(b.round_count - (b.drain_start_round + 3)) > 0):
        enter_probe_bw(b, c)


def has_elapsed_in_phase(b: Bbr3, c: Ctx, interval: int) -> bool:
    return c.i.now > b.cycle_stamp + interval


def is_reno_coexistence_probe_time(b: Bbr3, c: Ctx) -> bool:
    rounds = min(target_inflight(b, c), RENO_ROUNDS_MAX)
    return b.rounds_since_probe_up >= rounds


def is_time_to_probe_bw(b: Bbr3, c: Ctx) -> bool:
    if has_elapsed_in_phase(b, c, b.bw_probe_wait_us) or is_reno_coexistence_probe_time(b, c):
        start_probe_bw_refill(b, c)
        return True
    return False


def is_time_to_cruise(b: Bbr3, c: Ctx) -> bool:
    if c.i.inflight > inflight_with_headroom(b):
        return False
    if c.i.inflight > inflight(b, b.max_bw, 100):
        return False
    return True


def is_time_to_go_down(b: Bbr3, c: Ctx) -> bool:
    if b.prev_probe_too_high and c.i.inflight >= b.inflight_longterm:
        b.prev_probe_precautionary = 1
        return True
    if c.i.is_cwnd_limited and c.cwnd >= b.inflight_longterm:
        reset_full_bw(b)
        b.full_bw = c.rate
    elif b.full_bw_now:
        return True
    return False


def probe_inflight_longterm_upward(b: Bbr3, c: Ctx) -> None:
    if not c.i.is_cwnd_limited or c.cwnd < b.inflight_longterm:
        return
    b.bw_probe_up_acked = (b.bw_probe_up_acked + c.i.rs_acked_sacked) & U32
    if b.bw_probe_up_acked >= b.probe_up_acked_per_inc and b.probe_up_acked_per_inc:
        delta = b.bw_probe_up_acked // b.probe_up_acked_per_inc
        b.bw_probe_up_acked -= delta * b.probe_up_acked_per_inc
        b.inflight_longterm = min(b.inflight_longterm + delta, INF - 1)
    if b.round_start:
        raise_inflight_longterm_slope(b, c)


def adapt_long_term_model(b: Bbr3, c: Ctx) -> bool:
    if b.ack_phase == ACKS_PROBE_STARTING and b.round_start:
        b.ack_phase = ACKS_PROBE_FEEDBACK
    if b.ack_phase == ACKS_PROBE_STOPPING and b.round_start:
        b.is_bw_probe_sample = 0
        b.ack_phase = ACKS_INIT
        if is_probe_bw(b) and not c.i.rs_is_app_limited:
            b.cycle_count = (b.cycle_count + 1) & U32          # AdvanceMaxBwFilter()
            b.bw_hi[b.cycle_count & 1] = 0
        if is_probe_bw(b) and b.prev_probe_precautionary and not b.prev_probe_too_high:
            start_probe_bw_refill(b, c)
            return True
    if not is_inflight_too_high(c):
        if b.inflight_longterm == INF:
            return False
        if c.tx_in_flight > b.inflight_longterm:
            b.inflight_longterm = c.tx_in_flight
        if b.state == PROBE_BW_UP:
            probe_inflight_longterm_upward(b, c)
    return False


def update_probe_bw_cycle_phase(b: Bbr3, c: Ctx) -> None:
    if not b.full_bw_reached:
        return
    if adapt_long_term_model(b, c):
        return
    if not is_probe_bw(b):
        return
    if b.state == PROBE_BW_DOWN:
        if is_time_to_probe_bw(b, c):
            return
        if is_time_to_cruise(b, c):
            start_probe_bw_cruise(b)
    elif b.state == PROBE_BW_CRUISE:
        is_time_to_probe_bw(b, c)
    elif b.state == PROBE_BW_REFILL:
        if b.round_start:
            b.is_bw_probe_sample = 1
            start_probe_bw_up(b, c)
    elif b.state == PROBE_BW_UP:
        if is_time_to_go_down(b, c):
            b.prev_probe_too_high = 0
            start_probe_bw_down(b, c)


def update_min_rtt(b: Bbr3, c: Ctx) -> None:
    b.probe_rtt_expired = 1 if c.i.now > b.probe_rtt_min_stamp + PROBE_RTT_INTERVAL_US else 0
    rtt = min(c.i.rs_rtt_us, RTT_MAX_US)
    if rtt >= 0 and (rtt < b.probe_rtt_min_us or b.probe_rtt_expired):
        b.probe_rtt_min_us = rtt
        b.probe_rtt_min_stamp = c.i.now
    min_rtt_expired = c.i.now > b.min_rtt_stamp + MIN_RTT_FILTER_US
    if b.probe_rtt_min_us < b.min_rtt_us or min_rtt_expired:
        b.min_rtt_us = b.probe_rtt_min_us
        b.min_rtt_stamp = b.probe_rtt_min_stamp


def check_probe_rtt(b: Bbr3, c: Ctx) -> None:
    if b.state != PROBE_RTT and b.probe_rtt_expired and not b.idle_restart:
        enter_probe_rtt(b)
        save_cwnd(b, c)
        b.probe_rtt_done_stamp = 0
        b.ack_phase = ACKS_PROBE_STOPPING
        start_round(b, c)
    if b.state == PROBE_RTT:
        handle_probe_rtt(b, c)
    if c.i.rs_delivered > 0:
        b.idle_restart = 0


def handle_probe_rtt(b: Bbr3, c: Ctx) -> None:
    # MarkConnectionAppLimited(): ignore low rate samples during ProbeRTT
    c.app_limited = ((c.i.delivered + c.i.inflight) & U32) or 1
    if b.probe_rtt_done_stamp == 0 and c.i.inflight <= probe_rtt_cwnd(b):
        b.probe_rtt_done_stamp = c.i.now + PROBE_RTT_DURATION_US
        b.probe_rtt_round_done = 0
        start_round(b, c)
    elif b.probe_rtt_done_stamp != 0:
        if b.round_start:
            b.probe_rtt_round_done = 1
        if b.probe_rtt_round_done:
            check_probe_rtt_done(b, c)


def advance_latest_delivery_signals(b: Bbr3, c: Ctx) -> None:
    if b.loss_round_start:
        b.bw_latest = c.rate
        b.inflight_latest = c.rs_delivered


def bound_bw_for_model(b: Bbr3) -> None:
    b.bw = min(b.max_bw, b.bw_shortterm)


def update_control_parameters(b: Bbr3, c: Ctx) -> None:
    # SetPacingRate() (with v1's InitPacingRate once the first RTT sample is there)
    if not b.has_seen_rtt and c.i.srtt_us:
        init_pacing_rate(b, c)
    set_pacing_rate_with_gain(b, c, b.pacing_gain)
    # SetSendQuantum(), in packets
    b.send_quantum = max(min(c.pacing_rate // 1000, SEND_QUANTUM_MAX_BYTES) // max(c.i.mss, 1), SEND_QUANTUM_MIN)
    set_cwnd(b, c)


def set_cwnd(b: Bbr3, c: Ctx) -> None:
    cap = bdp_multiple(b, b.bw, b.cwnd_gain) + b.extra_acked            # UpdateMaxInflight()
    b.max_inflight = quantization_budget(b, min(cap, U32))
    acked = c.i.rs_acked_sacked
    if b.full_bw_reached:
        c.cwnd = min(c.cwnd + acked, b.max_inflight)
    elif c.cwnd < b.max_inflight or c.i.delivered < INITIAL_CWND:
        c.cwnd = c.cwnd + acked
    c.cwnd = max(c.cwnd, MIN_PIPE_CWND)
    if b.state == PROBE_RTT:                                             # BoundCwndForProbeRTT()
        c.cwnd = min(c.cwnd, probe_rtt_cwnd(b))
    cap = INF                                                            # BoundCwndForModel()
    if is_probe_bw(b) and b.state != PROBE_BW_CRUISE:
        cap = b.inflight_longterm
    elif b.state in (PROBE_RTT, PROBE_BW_CRUISE):
        cap = inflight_with_headroom(b)
    cap = min(cap, b.inflight_shortterm)
    cap = max(cap, MIN_PIPE_CWND)
    c.cwnd = min(c.cwnd, cap, c.i.cwnd_clamp, U32)
