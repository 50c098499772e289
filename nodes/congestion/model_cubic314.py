"""Reference model of cubic314 (nodes/congestion/bpf/cubic314.bpf.c): Cubic after Linux 3.14's
net/ipv4/tcp_cubic.c, not the kernel's cubic (pure Python, standard library).

Two layers, as nodes/congestion/model.py: Cubic's window in real arithmetic (`*_spec`), and 3.14's
integer arithmetic written expression for expression as the BPF program (and 3.14) compute it:
u32 wrap of the target and of `100 * cwnd` and `cnt << 4`, u64 wrap of the cube, C's unsigned
division, the TCP-friendly `while` loop as 3.14 writes it (the program does it in one division;
the replay checks both agree). Times in ms (3.14's jiffies at HZ = 1000), delays in ms << 3.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from nodes.congestion.model import (EV_HYSTART, EV_INCREASE, EV_SSTHRESH, U32_MAX, TraceRecord, _s32, cbrt_u64,
                                    check_replays)

U64_MAX = (1 << 64) - 1
HZ = 1000                               # jiffies per second here (the ms of tcp_mstamp)
BETA = 717                              # / 1024
BETA_SCALE = 8 * (1024 + BETA) // 3 // (1024 - BETA)      # 15: 3.14's beta_scale (integer)
CUBE_RTT_SCALE = 41 * 10                # bic_scale * 10
CUBE_FACTOR = (1 << 40) // CUBE_RTT_SCALE
ACK_RATIO_SHIFT = 4
ACK_RATIO_LIMIT = 32 << ACK_RATIO_SHIFT
HYSTART_ACK_TRAIN, HYSTART_DELAY = 0x1, 0x2
HYSTART_MIN_SAMPLES = 8
HYSTART_DELAY_MIN, HYSTART_DELAY_MAX = 4 << 3, 16 << 3    # ms << 3
HYSTART_LOW_WINDOW = 16
HYSTART_ACK_DELTA = 2                   # ms
EV_SLOW_START, EV_UNDO = 8, 9           # cubic314's own trace events (cubic314.bpf.c)


# ---- the equations (real arithmetic) -------------------------------------------------------------

def window_spec(t: float, k: float, w_max: float, c: float = 0.4) -> float:
    """Cubic's window W(t) = C (t - K)^3 + W_max, t and K in seconds."""
    return c * (t - k) ** 3 + w_max


def k_spec(w_max: float, cwnd: float, c: float = 0.4) -> float:
    """K = cbrt((W_max - cwnd) / C) in seconds."""
    return ((w_max - cwnd) / c) ** (1 / 3)


def friendly_window_spec(acks: float, cwnd_at_epoch: float) -> float:
    """3.14's estimate of a Reno flow's window: one packet per cwnd * beta_scale / 8 ACKs
    (beta_scale / 8 = 1.875 ~ (1 + beta) / (3 (1 - beta)) = 1.89 with beta = 0.7)."""
    return cwnd_at_epoch + acks / (cwnd_at_epoch * BETA_SCALE / 8)


# ---- 3.14's integer arithmetic -------------------------------------------------------------------

@dataclass(frozen=True)
class Curve:
    """The bictcp fields bictcp_update() reads and writes."""

    cnt: int = 0
    ack_cnt: int = 0
    last_cwnd: int = 0
    last_time: int = 0
    epoch_start: int = 0
    tcp_cwnd: int = 0
    bic_k: int = 0
    origin: int = 0
    last_max_cwnd: int = 0
    delay_min: int = 0          # ms << 3
    delayed_ack: int = 2 << ACK_RATIO_SHIFT


def bic_k(last_max_cwnd: int, cwnd: int) -> int:
    """K in 2^-10 s (an exact cube root; 3.14's table-and-Newton root differs by ~0.2 %)."""
    return cbrt_u64((CUBE_FACTOR * (last_max_cwnd - cwnd)) & U64_MAX)


def target(c: Curve, now: int) -> int:
    """bic_target (u32, wrapping below zero as 3.14's) at `now` (ms) of the curve's epoch."""
    t = _s32(now - c.epoch_start) & U64_MAX
    t = (t + (c.delay_min >> 3)) & U64_MAX
    t = ((t << 10) & U64_MAX) // HZ
    offs = c.bic_k - t if t < c.bic_k else t - c.bic_k
    delta = ((CUBE_RTT_SCALE * offs * offs * offs) & U64_MAX) >> 40
    delta &= U32_MAX
    return (c.origin - delta) & U32_MAX if t < c.bic_k else (c.origin + delta) & U32_MAX


def update(c: Curve, cwnd: int, now: int) -> Curve:
    """bictcp_update(ca, cwnd) of 3.14 for one ACK in congestion avoidance at `now` (ms)."""
    c = replace(c, ack_cnt=(c.ack_cnt + 1) & U32_MAX)
    if c.last_cwnd == cwnd and _s32(now - c.last_time) <= HZ // 32:
        return c                                            # cnt kept
    c = replace(c, last_cwnd=cwnd, last_time=now & U32_MAX)
    if c.epoch_start == 0:
        if c.last_max_cwnd <= cwnd:
            c = replace(c, epoch_start=now & U32_MAX, ack_cnt=1, tcp_cwnd=cwnd, bic_k=0, origin=cwnd)
        else:
            c = replace(c, epoch_start=now & U32_MAX, ack_cnt=1, tcp_cwnd=cwnd,
                        bic_k=bic_k(c.last_max_cwnd, cwnd), origin=c.last_max_cwnd)
    bt = target(c, now)
    cnt = cwnd // (bt - cwnd) if bt > cwnd else (100 * cwnd) & U32_MAX
    if c.last_max_cwnd == 0 and cnt > 20:
        cnt = 20
    delta = ((cwnd * BETA_SCALE) & U32_MAX) >> 3            # TCP friendliness
    ack_cnt, tcp_cwnd = c.ack_cnt, c.tcp_cwnd
    while delta and ack_cnt > delta:            # (delta is at least 1: cwnd >= 1)
        ack_cnt -= delta
        tcp_cwnd = (tcp_cwnd + 1) & U32_MAX
    if tcp_cwnd > cwnd:
        cnt = min(cnt, cwnd // (tcp_cwnd - cwnd))
    cnt = ((cnt << ACK_RATIO_SHIFT) & U32_MAX) // (c.delayed_ack or 1)
    return replace(c, cnt=cnt or 1, ack_cnt=ack_cnt, tcp_cwnd=tcp_cwnd)


def cong_avoid_ai(cwnd: int, cwnd_cnt: int, cnt: int, clamp: int = U32_MAX) -> tuple[int, int]:
    """3.14's tcp_cong_avoid_ai(tp, cnt), once per ACK: (cwnd, snd_cwnd_cnt)."""
    if cwnd_cnt >= cnt:
        return (cwnd + 1 if cwnd < clamp else cwnd), 0
    return cwnd, cwnd_cnt + 1


def slow_start(cwnd: int, ssthresh: int, acked: int, clamp: int = U32_MAX) -> int:
    """3.14's tcp_slow_start(tp, acked): at most one past ssthresh (u32)."""
    w = (cwnd + acked) & U32_MAX
    if w > ssthresh:
        w = (ssthresh + 1) & U32_MAX
    return min(w, clamp)


def delayed_ack(ratio: int, pkts_acked: int) -> int:
    """bictcp_acked()'s ratio of packets per ACK << 4 (in CA_Open): 15/16 ratio + packets."""
    r = ratio - (ratio >> ACK_RATIO_SHIFT) + pkts_acked
    return min(max(r, 1), ACK_RATIO_LIMIT)


def delay_of(rtt_us: int) -> int:
    """An RTT sample in 3.14's units, ms << 3 (at least 1)."""
    return ((rtt_us << 3) // 1000) or 1


def ssthresh(cwnd: int, last_max_cwnd: int) -> tuple[int, int]:
    """bictcp_recalc_ssthresh(): (ssthresh, the new last_max_cwnd), fast convergence on; the products
    are u32 (snd_cwnd * beta), as in 3.14."""
    last = ((cwnd * (1024 + BETA)) & U32_MAX) // 2048 if cwnd < last_max_cwnd else cwnd
    return max(((cwnd * BETA) & U32_MAX) // 1024, 2), last


@dataclass(frozen=True)
class Round:
    """3.14's HyStart round (ms; curr_rtt in ms << 3, 0 = none)."""

    round_start: int
    last_ack: int
    curr_rtt: int = 0
    sample_cnt: int = 0


def hystart_update(st: Round, *, now: int, delay: int, delay_min: int) -> tuple[Round, int]:
    """3.14's hystart_update(sk, delay) while nothing was found: (the new round, the detectors that
    fired; any sets ssthresh = cwnd)."""
    found = 0
    if _s32(now - st.last_ack) <= HYSTART_ACK_DELTA:
        st = replace(st, last_ack=now & U32_MAX)
        if ((now - st.round_start) & U32_MAX) > (delay_min >> 4):       # (s32) > u32: unsigned in C
            found |= HYSTART_ACK_TRAIN
    if st.sample_cnt < HYSTART_MIN_SAMPLES:
        if st.curr_rtt == 0 or st.curr_rtt > delay:
            st = replace(st, curr_rtt=delay)
        st = replace(st, sample_cnt=st.sample_cnt + 1)
    elif st.curr_rtt > delay_min + min(max(delay_min >> 4, HYSTART_DELAY_MIN), HYSTART_DELAY_MAX):
        found |= HYSTART_DELAY
    return st, found


# ---- replay of a test build's trace --------------------------------------------------------------

def replay(r: TraceRecord) -> tuple[int, ...] | None:
    """What the model decides for a traced decision of cubic314 (compare with r.outputs)."""
    if r.event == EV_INCREASE:
        now, cnt, ack_cnt, last_cwnd, last_time, epoch, tcp_cwnd, k, origin, last_max, delay_min, dack = r.inputs
        c = update(Curve(cnt, ack_cnt, last_cwnd, last_time, epoch, tcp_cwnd, k, origin, last_max, delay_min, dack),
                   r.cwnd_before, now)
        return c.cnt, c.ack_cnt, c.tcp_cwnd, c.bic_k, c.origin, c.epoch_start
    if r.event == EV_HYSTART:
        now, delay_min, round_start, last_ack, curr_rtt, samples = r.inputs[:6]
        st, found = hystart_update(Round(round_start, last_ack, curr_rtt, samples), now=now, delay=r.acked,
                                   delay_min=delay_min)
        return found, r.cwnd_before if found else r.ssthresh, st.last_ack, st.curr_rtt, st.sample_cnt
    if r.event == EV_SSTHRESH:
        return ssthresh(r.cwnd_before, r.inputs[0])
    if r.event == EV_SLOW_START:
        return (slow_start(r.cwnd_before, r.ssthresh, r.acked, r.inputs[0]) & U32_MAX,)
    if r.event == EV_UNDO:
        return (max(r.cwnd_before, r.inputs[0]),)
    return None


def check_trace(records: Sequence[TraceRecord]) -> tuple[int, list[tuple[TraceRecord, tuple]]]:
    """(decisions replayed, the mismatches with what the model computes), as model.check_trace."""
    return check_replays(records, replay)
