"""Reference models of the coupled congestion controls (pure Python, standard library).

Two layers per algorithm:

* the paper's equation in real arithmetic (`*_spec` functions): what the algorithm is;
* the integer arithmetic the BPF program uses (`lia_cnt`, `olia_increase`, ...), written to
  match the C expression for expression (the same shifts, the same division order, C's
  truncation toward zero), so a trace recorded by a test build of the program
  (`-DCTL_TRACE`) can be replayed here decision by decision and must agree exactly.

Unit tests check the integer layer against the equations (within the stated rounding) and
against hand-computed cases; the integration test checks the programs against the integer
layer on real traffic. Windows are in packets, RTTs in microseconds.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass, replace
from typing import Callable, Sequence

MAX_SUBFLOWS = 8
U32_MAX = 0xFFFFFFFF


def _cdiv(a: int, b: int) -> int:
    """C's signed division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


@dataclass(frozen=True)
class View:
    """The connection as one subflow saw it when deciding (the BPF program's `ctl_view`)."""

    cwnd: tuple[int, ...]
    rtt: tuple[int, ...]
    aux: tuple[int, ...]
    self: int

    @property
    def n(self) -> int:
        return len(self.cwnd)


# ---- LIA (RFC 6356) ------------------------------------------------------------------------------

def lia_increase_spec(w: Sequence[float], rtt: Sequence[float], i: int) -> float:
    """Window increase per packet acked on subflow i (RFC 6356 section 3)."""
    total = sum(w)
    alpha = total * max(wr / rr ** 2 for wr, rr in zip(w, rtt)) / sum(wr / rr for wr, rr in zip(w, rtt)) ** 2
    return min(alpha / total, 1.0 / w[i])


def lia_cnt(v: View) -> int:
    """Packets acked per window increment (tcp_cong_avoid_ai's `cnt`), as lia.bpf.c computes it."""
    n = v.n
    b = 0
    for i in range(1, n):
        if v.cwnd[i] * v.rtt[b] * v.rtt[b] > v.cwnd[b] * v.rtt[i] * v.rtt[i]:
            b = i
    s = sum(((v.cwnd[i] << 10) * v.rtt[b]) // v.rtt[i] for i in range(n))
    cnt = (s * s) // (v.cwnd[b] << 20)
    cnt = max(cnt, v.cwnd[v.self])
    return min(cnt, U32_MAX) or 1


# ---- OLIA (Khalili et al., ToN 2013) -------------------------------------------------------------

OLIA_SCALE = 16


def olia_increase_spec(w: Sequence[float], rtt: Sequence[float], loss_distance: Sequence[float], r: int) -> float:
    """Window increase per packet acked on path r: (w_r/rtt_r^2)/(sum w_p/rtt_p)^2 + alpha_r/w_r."""
    n = len(w)
    first = (w[r] / rtt[r] ** 2) / sum(wp / rp for wp, rp in zip(w, rtt)) ** 2
    max_w = max(w)
    M = [p for p in range(n) if w[p] == max_w]
    metric = [loss_distance[p] / rtt[p] ** 2 for p in range(n)]
    best = max(metric)
    B = [p for p in range(n) if metric[p] == best]
    b_not_m = [p for p in B if p not in M]
    if not b_not_m:
        alpha = 0.0
    elif r in b_not_m:
        alpha = 1.0 / (n * len(b_not_m))
    elif r in M:
        alpha = -1.0 / (n * len(M))
    else:
        alpha = 0.0
    return first + alpha / w[r]


def _olia_metric(v: View, i: int) -> tuple[int, int]:
    lkb = min(v.aux[i] >> 10, 1 << 22)
    r16 = (v.rtt[i] >> 4) or 1
    return lkb, r16


def olia_increase(v: View) -> int:
    """The increase per packet acked in 2^-16 packets, as olia.bpf.c computes it."""
    n = v.n
    me = v.self
    max_w = max(v.cwnd)
    bl, br = 0, 1
    for i in range(n):
        l, r = _olia_metric(v, i)
        if l * br * br >= bl * r * r:
            bl, br = l, r
    m = b_not_m = me_best = 0
    s = 0
    for i in range(n):
        l, r = _olia_metric(v, i)
        best = l * br * br == bl * r * r
        if v.cwnd[i] == max_w:
            m += 1
        elif best:
            b_not_m += 1
        if i == me:
            me_best = best
        s += ((v.cwnd[i] << 10) * v.rtt[me]) // (v.rtt[i] or 1)
    w = v.cwnd[me]
    first = ((w << 36) // (s * s)) if s and s <= (1 << 31) else 0
    second = 0
    if b_not_m and w:
        if w < max_w and me_best:
            second = (1 << OLIA_SCALE) // (n * b_not_m * w)
        elif w == max_w and m:
            second = -((1 << OLIA_SCALE) // (n * m * w))
    return first + second


def olia_apply(cwnd: int, acc: int, inc: int, acked: int, clamp: int = U32_MAX) -> tuple[int, int]:
    """(new cwnd, new accumulator) after `acked` packets at `inc` 2^-16 packets each."""
    acc = acc + inc * acked
    steps = acc >> OLIA_SCALE if acc >= 0 else -((-acc) >> OLIA_SCALE)
    acc -= steps * (1 << OLIA_SCALE)
    return max(1, min(clamp, cwnd + steps)), acc


# ---- BALIA (Peng et al., ToN 2016) ---------------------------------------------------------------

def balia_increase_spec(w: Sequence[float], rtt: Sequence[float], r: int) -> float:
    x = [wk / rk for wk, rk in zip(w, rtt)]
    alpha = max(x) / x[r]
    return x[r] / (rtt[r] * sum(x) ** 2) * (1 + alpha) / 2 * (4 + alpha) / 5


def balia_decrease_spec(w: Sequence[float], rtt: Sequence[float], r: int) -> float:
    """The window after a loss on path r: w_r - w_r/2 * min(alpha_r, 3/2)."""
    x = [wk / rk for wk, rk in zip(w, rtt)]
    return w[r] - w[r] / 2 * min(max(x) / x[r], 1.5)


def _balia_rates(v: View) -> tuple[int, int, int] | None:
    rtt_min = min(r for r in v.rtt if r)
    xs = [((v.cwnd[i] << 10) * rtt_min) // (v.rtt[i] or 1) for i in range(v.n)]
    x_me = xs[v.self]
    return (max(xs), sum(xs), x_me) if x_me else None


def balia_cnt(v: View) -> int:
    w = v.cwnd[v.self]
    rates = _balia_rates(v) if v.n > 1 else None
    if rates is None:
        return w or 1
    x_max, s, x_me = rates
    t = (s * s) // (x_me + x_max)
    t = (t * 10 * w) // ((x_me << 2) + x_max)
    t = t or w
    return min(t, U32_MAX) or 1


def balia_floor_decrease_spec(w: Sequence[float], rtt: Sequence[float], r: int) -> float:
    """The window after a loss in the authors' Linux code (mptcp_balia.c): alpha floored to an integer."""
    x = [wk / rk for wk, rk in zip(w, rtt)]
    return w[r] - w[r] / 2 * min(float(math.floor(max(x) / x[r])), 1.5)


def balia_ssthresh(v: View, cwnd: int, floor: bool = False) -> int:
    """ssthresh after a loss, as balia.bpf.c (floor: balia_floor, the authors' integer alpha)."""
    rates = _balia_rates(v) if v.n > 1 else None
    if rates is None:
        return max(cwnd >> 1, 2)                       # tcp_reno_ssthresh
    x_max, _s, x_me = rates
    alpha = (x_max // x_me) << 10 if floor else (x_max << 10) // x_me
    alpha = min(alpha, 3 << 9)
    md = ((cwnd >> 1) * alpha) >> 10
    return cwnd - md if cwnd > md + 1 else 1


# ---- wVegas (Cao, Xu, Fu, ICNP 2012) -------------------------------------------------------------

WV_SCALE = 16
WV_TOTAL_ALPHA = 10
WV_GAMMA = 1


@dataclass(frozen=True)
class WvegasRound:
    cwnd: int
    ssthresh: int
    alpha: int
    weight: int


def wvegas_round(v: View | None, cwnd: int, ssthresh: int, rtt: int, base: int, alpha: int, weight: int,
                 queue_delay: int, clamp: int = U32_MAX, ca_state_cwr_or_recovery: bool = False
                 ) -> tuple[WvegasRound, int]:
    """One round's decision (congestion avoidance branch and the early slow-start exit), as
    wvegas.bpf.c makes it. Returns the decision and the new queue_delay. A round still in
    slow start without early exit is Reno's tcp_slow_start and is not modelled here."""
    q = rtt - base if rtt > base else 0
    diff = (cwnd * q) // (rtt or 1)
    if diff > WV_GAMMA and cwnd < ssthresh:
        target = (cwnd * base) // (rtt or 1)
        w = min(cwnd, target + 1)
        ss = min(ssthresh, w - 1) & U32_MAX
    else:
        w, ss = cwnd, ssthresh
        if diff >= alpha:
            rate = (cwnd << WV_SCALE) // (rtt or 1)
            total = rate
            if v is not None:
                total += sum(a for i, a in enumerate(v.aux) if i != v.self)
            if total and rate:
                weight = (rate << WV_SCALE) // total
            alpha = max(2, (weight * WV_TOTAL_ALPHA) >> WV_SCALE)
        if diff > alpha:
            w = cwnd - 1
            ss = min(ss, w - 1) & U32_MAX
        elif diff < alpha:
            w = cwnd + 1
        if queue_delay == 0 or queue_delay > q:
            queue_delay = q
        if q >= 2 * queue_delay:
            backoff = (base << WV_SCALE) // (2 * (rtt or 1))
            w = (w * backoff) >> WV_SCALE
            queue_delay = 0
    w = 2 if w < 2 else min(w, clamp)
    ss = ss if ca_state_cwr_or_recovery else max(ss, (w >> 1) + (w >> 2))
    return WvegasRound(w, ss, alpha, weight), queue_delay


# ---- MCubic (the MCubic paper, section III) ------------------------------------------------------

MC_BETA = 717
MC_C_SCALED = 410
MC_CUBE_FACTOR = (1 << 40) // MC_C_SCALED
MC_MAX_OFFS = 1 << 17
C = 0.4
BETA = MC_BETA / 1024


def mcubic_k_spec(w_max: float, cwnd_after_loss: float) -> float:
    """K in seconds: the time Cubic takes back to W_max (eq. 6, with Linux's window drop)."""
    return ((w_max - cwnd_after_loss) / C) ** (1 / 3)


def mcubic_kmptcp_spec(ks: Sequence[float], i: int) -> float:
    """K^i_mptcp = K_i * gamma_i, gamma_i = K_i * sum_j 1/K_j (eq. 7, 11); K_j = 0 left out."""
    if ks[i] == 0:
        return 0.0
    return ks[i] * ks[i] * sum(1 / k for k in ks if k > 0)


def mcubic_window_spec(t: float, k_mptcp: float, w_max: float) -> float:
    """W_i(t) = C (t - K^i_mptcp)^3 + W^i_max (eq. 10); t and K in seconds."""
    return C * (t - k_mptcp) ** 3 + w_max


def cbrt_u64(a: int) -> int:
    """mcubic.bpf.c's integer cube root (floor)."""
    r = 0
    for s in range(60, -1, -3):
        r <<= 1
        b = 3 * r * (r + 1) + 1
        if (a >> s) >= b:
            a -= b << s
            r += 1
    return r


def mcubic_k(last_max_cwnd: int, cwnd: int) -> int:
    """K_i in 2^-10 s units at the start of an epoch."""
    return cbrt_u64(MC_CUBE_FACTOR * (last_max_cwnd - cwnd)) if cwnd < last_max_cwnd else 0


def mcubic_kc(v: View, k: int) -> int:
    if not k:
        return 0
    k2 = k * k
    return sum(k2 // kj for kj in v.aux if kj)


def _mcubic_cnt_of(cwnd: int, target: int, last_max_cwnd: int) -> int:
    cnt = cwnd // (target - cwnd) if target > cwnd else 100 * cwnd
    if last_max_cwnd == 0 and cnt > 20:
        cnt = 20
    return min(max(cnt, 2), U32_MAX)


def mcubic_cnt(cwnd: int, t: int, kc: int, origin: int, last_max_cwnd: int) -> tuple[int, int]:
    """(cnt, target) for one ACK in congestion avoidance, eq. 10 literally (mcubic); t and kc in
    2^-10 s units. Below the origin the target is clamped at 0."""
    offs = kc - t if t < kc else t - kc
    offs = min(offs, MC_MAX_OFFS)
    delta = (MC_C_SCALED * offs * offs * offs) >> 40
    if t < kc:
        target = 0 if delta >= origin else origin - delta
    else:
        target = origin + delta
    return _mcubic_cnt_of(cwnd, target, last_max_cwnd), target


MC_ACK_RATIO_SHIFT = 4
MC_ACK_RATIO_LIMIT = 32 << MC_ACK_RATIO_SHIFT


def mcubic_wrap_cnt(cwnd: int, t: int, kc: int, origin: int, last_max_cwnd: int, delayed_ack: int
                    ) -> tuple[int, int]:
    """(cnt in ACKs, target) of mcubic_wrap: Linux 3.14's bictcp_update() with K_mptcp, its u32
    `delta` and `bic_target` (origin - delta wraps modulo 2^32), its cnt rules (no TCP-friendly
    step) and its delayed-ACK conversion `(cnt << 4) / delayed_ack`, 0 becoming 1."""
    offs = min(kc - t if t < kc else t - kc, MC_MAX_OFFS)
    delta = ((MC_C_SCALED * offs * offs * offs) >> 40) & U32_MAX
    target = (origin - delta) & U32_MAX if t < kc else (origin + delta) & U32_MAX
    cnt = cwnd // (target - cwnd) if target > cwnd else (100 * cwnd) & U32_MAX
    if last_max_cwnd == 0 and cnt > 20:
        cnt = 20
    cnt = ((cnt << MC_ACK_RATIO_SHIFT) & U32_MAX) // (delayed_ack or 1)
    return cnt or 1, target


def mcubic_delayed_ack(ratio: int, pkts_acked: int) -> int:
    """Linux 3.14 bictcp_acked(): ratio = ratio - ratio/16 + packets acked, clamped to 1..32<<4."""
    r = ratio - (ratio >> MC_ACK_RATIO_SHIFT) + pkts_acked
    return min(max(r, 1), MC_ACK_RATIO_LIMIT)


MC_STRETCH_SHIFT = 20


def mcubic_stretch_target_spec(t: float, k_mptcp: float, w_max: float, w0: float) -> float:
    """mcubic_stretch's curve: from W_0 at t = 0 to W_max at t = K_mptcp (concave), then Cubic's
    convex part; t and K in seconds."""
    if t < k_mptcp:
        return w_max - (w_max - w0) * ((k_mptcp - t) / k_mptcp) ** 3
    return C * (t - k_mptcp) ** 3 + w_max


def mcubic_stretch_cnt(cwnd: int, t: int, kc: int, origin: int, last_max_cwnd: int, w0: int) -> tuple[int, int]:
    """(cnt, target) of mcubic_stretch, as mcubic.bpf.c -DMC_STRETCH computes it."""
    if t < kc:
        span = origin - w0 if origin > w0 else 0
        r = ((kc - t) << MC_STRETCH_SHIFT) // kc
        r3 = (((r * r) >> MC_STRETCH_SHIFT) * r) >> MC_STRETCH_SHIFT
        target = origin - ((span * r3) >> MC_STRETCH_SHIFT)
    else:
        offs = min(t - kc, MC_MAX_OFFS)
        target = origin + ((MC_C_SCALED * offs * offs * offs) >> 40)
    return _mcubic_cnt_of(cwnd, target, last_max_cwnd), target


# ---- HyStart (Linux 6.18 net/ipv4/tcp_cubic.c), in every MCubic build but mcubic_nohs ------------

HYSTART_ACK_TRAIN, HYSTART_DELAY = 0x1, 0x2
HYSTART_MIN_SAMPLES = 8
HYSTART_DELAY_MIN, HYSTART_DELAY_MAX = 4000, 16000       # us
HYSTART_LOW_WINDOW = 16
HYSTART_ACK_DELTA_US = 2000


@dataclass(frozen=True)
class HyStart:
    """One subflow's HyStart round state (times in us, 32 bits as tcp_cubic.c's clock)."""

    round_start: int
    last_ack: int
    end_seq: int
    curr_rtt: int
    sample_cnt: int


def _s32(x: int) -> int:
    x &= U32_MAX
    return x - (1 << 32) if x & 0x80000000 else x


def hystart_update(st: HyStart, *, now: int, snd_una: int, snd_nxt: int, cwnd: int, delay: int, delay_min: int,
                   ack_delay: int, paced: bool) -> tuple[HyStart, int]:
    """hystart_update() for one RTT sample in slow start: (the new state, the detectors that fired:
    HYSTART_ACK_TRAIN | HYSTART_DELAY; any of them sets ssthresh = cwnd)."""
    found = 0
    if _s32(st.end_seq - snd_una) < 0:                         # after(snd_una, end_seq): a new round
        st = HyStart(now & U32_MAX, now & U32_MAX, snd_nxt & U32_MAX, U32_MAX, 0)
    if cwnd < HYSTART_LOW_WINDOW:
        return st, 0
    if _s32(now - st.last_ack) <= HYSTART_ACK_DELTA_US:         # ack train
        st = replace(st, last_ack=now & U32_MAX)
        threshold = (delay_min + ack_delay) & U32_MAX
        if not paced:
            threshold >>= 1
        # (s32)(now - round_start) > threshold compares as u32 in C (threshold is a u32), as in Linux
        if ((now - st.round_start) & U32_MAX) > threshold:
            found |= HYSTART_ACK_TRAIN
    curr = min(st.curr_rtt, delay)                              # delay increase
    st = replace(st, curr_rtt=curr)
    if st.sample_cnt < HYSTART_MIN_SAMPLES:
        st = replace(st, sample_cnt=st.sample_cnt + 1)
    elif curr > delay_min + min(max(delay_min >> 3, HYSTART_DELAY_MIN), HYSTART_DELAY_MAX):
        found |= HYSTART_DELAY
    return st, found


# ---- traces of a test build (-DCTL_TRACE) --------------------------------------------------------

EV_INCREASE, EV_SSTHRESH, EV_ROUND, EV_HYSTART, EV_LINK, EV_UNLINK = 1, 2, 3, 4, 5, 6
# why a subflow's link to its connection entry changed (inputs[0] of EV_LINK / EV_UNLINK)
WHY_PUBLISH, WHY_RESET, WHY_RELEASE, WHY_LEAVING, WHY_EVICTED, WHY_CLASH, WHY_GONE = 1, 2, 3, 4, 5, 6, 7
TRACE_INPUTS, TRACE_OUTPUTS = 12, 6
_TRACE = struct.Struct("<8I" + "2I8I8I8Q" + f"{TRACE_INPUTS}q" + f"{TRACE_OUTPUTS}q")
TRACE_RECORD_SIZE = _TRACE.size            # 312 bytes, struct ctl_trace_rec


@dataclass(frozen=True)
class TraceRecord:
    seq: int
    event: int
    cwnd_before: int
    ssthresh: int
    acked: int              # (HyStart: the RTT sample, us)
    extra: int              # the record's spare field (wvegas: queue_delay before the round)
    token: int              # the MPTCP connection the deciding subflow is linked to (0: none)
    sub: int                # the deciding subflow's slot in that connection's entry
    view: View
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


def decode_trace_record(raw: bytes) -> TraceRecord | None:
    """One `ctl_trace_rec` (None for an unused slot). `view.n` is what the program counted,
    even beyond MAX_SUBFLOWS (the arrays hold at most MAX_SUBFLOWS)."""
    f = _TRACE.unpack(raw)
    seq, event, cwnd_before, ssthresh, acked, extra, token, sub = f[:8]
    if not seq:
        return None
    n, self_ = f[8], f[9]
    k = min(n, MAX_SUBFLOWS)
    view = View(tuple(f[10:10 + k]), tuple(f[18:18 + k]), tuple(f[26:26 + k]), self_)
    i = 34
    return TraceRecord(seq, event, cwnd_before, ssthresh, acked, extra, token, sub, view,
                       tuple(f[i:i + TRACE_INPUTS]), tuple(f[i + TRACE_INPUTS:i + TRACE_INPUTS + TRACE_OUTPUTS]))


def replay(algorithm: str, r: TraceRecord) -> tuple[int, ...] | None:
    """The outputs the model computes for a traced decision (compare with r.outputs), or None
    when the record is not one the model replays."""
    v = r.view
    if algorithm == "lia" and r.event == EV_INCREASE:
        return (lia_cnt(v),)
    if algorithm in ("balia", "balia_floor") and r.event == EV_INCREASE:
        return (balia_cnt(v),)
    if algorithm in ("balia", "balia_floor") and r.event == EV_SSTHRESH:
        return (balia_ssthresh(v, r.cwnd_before, floor=algorithm == "balia_floor"),) if v.n else None
    if algorithm == "olia" and r.event == EV_INCREASE:
        inc = olia_increase(v)
        cwnd, acc = olia_apply(r.cwnd_before, r.inputs[0], inc, r.acked)
        return inc, acc, cwnd
    if algorithm == "wvegas" and r.event == EV_ROUND:
        rtt, base, alpha, weight = r.inputs[:4]
        q = rtt - base if rtt > base else 0
        if r.cwnd_before < r.ssthresh and (r.cwnd_before * q) // (rtt or 1) <= WV_GAMMA:
            return None                                  # plain slow start: the kernel's own
        d, _qd = wvegas_round(v if v.n else None, r.cwnd_before, r.ssthresh, rtt, base, alpha, weight, r.extra)
        return d.cwnd, d.ssthresh, d.alpha, d.weight
    if algorithm in MCUBIC_READINGS and r.event == EV_INCREASE:
        t, origin, last_max, k, w0, delayed_ack = r.inputs[:6]
        kc = mcubic_kc(v, k)
        if algorithm == "mcubic_wrap":
            cnt, target = mcubic_wrap_cnt(r.cwnd_before, t, kc, origin, last_max, delayed_ack)
        elif algorithm == "mcubic_stretch":
            cnt, target = mcubic_stretch_cnt(r.cwnd_before, t, kc, origin, last_max, w0)
        else:
            cnt, target = mcubic_cnt(r.cwnd_before, t, kc, origin, last_max)
        return cnt, kc, target
    if algorithm in MCUBIC_READINGS and r.event == EV_HYSTART:
        now, snd_una, snd_nxt, delay_min, ack_delay, paced, round_start, last_ack, end_seq, curr_rtt, samples = \
            r.inputs[:11]
        st, found = hystart_update(HyStart(round_start, last_ack, end_seq, curr_rtt, samples), now=now,
                                   snd_una=snd_una, snd_nxt=snd_nxt, cwnd=r.cwnd_before, delay=r.acked,
                                   delay_min=delay_min, ack_delay=ack_delay, paced=bool(paced))
        return found, r.cwnd_before if found else r.ssthresh, st.round_start, st.last_ack, st.curr_rtt, st.sample_cnt
    return None


MCUBIC_READINGS = ("mcubic", "mcubic_wrap", "mcubic_stretch", "mcubic_nohs")


def check_replays(records: Sequence[TraceRecord], replay_one: Callable[[TraceRecord], tuple | None]
                  ) -> tuple[int, list[tuple[TraceRecord, tuple]]]:
    """(decisions replayed, the mismatches with what `replay_one` computes; None: not a decision it models)."""
    replayed, bad = 0, []
    for r in records:
        want = replay_one(r)
        if want is None:
            continue
        replayed += 1
        if tuple(r.outputs[:len(want)]) != tuple(want):
            bad.append((r, want))
    return replayed, bad


def check_trace(algorithm: str, records: Sequence[TraceRecord]) -> tuple[int, list[tuple[TraceRecord, tuple]]]:
    """(decisions replayed, the mismatches with what the model computes)."""
    return check_replays(records, lambda r: replay(algorithm, r))
