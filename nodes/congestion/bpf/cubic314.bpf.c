// SPDX-License-Identifier: GPL-2.0
/*
 * cubic314: Cubic after Linux 3.14's net/ipv4/tcp_cubic.c, as a BPF congestion control; NOT the
 * kernel's cubic (the rack kernel's, 6.18 here, which differs from 3.14's in HyStart, in how cnt
 * is applied, in the TCP-friendly region and in the idle restart). It exists to test one candidate
 * cause of the MCubic paper's deviations (controller/reproduce/hypotheses.py,
 * "mcubic-competitor-version"): the paper's single-path TCP Cubic flow most likely ran 3.14.17's
 * Cubic (MCubic was built on 3.14.17, the paper's section 4.1), ctl's competitor runs 6.18's.
 * One flow at a time: on a plain TCP socket, or uncoupled on each subflow of an MPTCP connection
 * (it never publishes into the coupling map ctl_cc.h declares; that map stays empty).
 *
 * Sources: no 3.14 tree's tcp_cubic.c was at hand when this was written (the reference index held
 * none); bictcp_update()'s arithmetic is the text mcubic.bpf.c's mcubic_wrap follows (read from
 * 3.14.40 there), and the rest was checked against the tcp_cubic.c of github.com/Chirfen/mptcp
 * (commit 6de2ad66a4d6, a later MPTCP tree): its struct bictcp, bictcp_reset, bictcp_clock (ms),
 * bictcp_hystart_reset, hystart_update (ms << 3 delays, delay_min >> 4), bictcp_acked (the
 * delayed-ACK ratio, HZ discard), recalc_ssthresh and undo_cwnd (loss_cwnd) read as below; its
 * bictcp_update is newer than 3.14 (4.1's `acked` count, per-jiffy goto and cnt floor of 2), and what
 * 3.14 has there instead (ack_cnt++ per ACK, cnt = (cnt << 4) / delayed_ack, at least 1, no floor of
 * 2) is from mcubic_wrap's reading; afterwards checked line by line against an older tree, Linux
 * 3.10.40's tcp_cubic.c (github.com/LineageOS/android_kernel_moto_shamu, commit 13c4bf3b7a8f):
 * `ca->ack_cnt++;`, `ca->cnt = (ca->cnt << ACK_RATIO_SHIFT) / ca->delayed_ack; if (ca->cnt == 0)
 * ca->cnt = 1;`, no floor of 2, and the same HyStart and bictcp_acked as above. A 3.14 tree itself
 * was not re-read: that 3.10 and the later tree agree with this file is evidence, not proof.
 * What this file does:
 *
 *   bictcp_update(ca, cwnd), once per ACK in congestion avoidance:
 *     ack_cnt++; if last_cwnd == cwnd and (s32)(now - last_time) <= HZ/32: return (cnt kept);
 *     last_cwnd = cwnd, last_time = now; a new epoch (epoch_start == 0): epoch_start = now,
 *     ack_cnt = 1, tcp_cwnd = cwnd, K = cbrt(cube_factor (last_max_cwnd - cwnd)) and origin =
 *     last_max_cwnd when last_max_cwnd > cwnd, else K = 0, origin = cwnd;
 *     t = ((s32)(now - epoch_start) + delay_min_ms) << 10 / HZ (u64); offs = |t - K| (u64);
 *     u32 delta = (410 offs^3) >> 40 (u64 product, wrapping as 3.14's); u32 bic_target =
 *     origin - delta below the origin (unguarded: wraps), origin + delta above;
 *     cnt = cwnd / (bic_target - cwnd) if bic_target > cwnd, else 100 cwnd (u32); cnt <= 20 while
 *     last_max_cwnd == 0;
 *     TCP friendliness (tcp_friendliness = 1, 3.14's default): delta = (cwnd beta_scale) >> 3 with
 *     beta_scale = 8 (1024 + 717) / 3 / (1024 - 717) = 15 (integer); while ack_cnt > delta:
 *     ack_cnt -= delta, tcp_cwnd++; if tcp_cwnd > cwnd: cnt = min(cnt, cwnd / (tcp_cwnd - cwnd));
 *     cnt = (cnt << 4) / delayed_ack (u32); 0 becomes 1.
 *   tcp_cong_avoid_ai(tp, cnt) of 3.14: one step per ACK (cwnd + 1 when snd_cwnd_cnt >= cnt and
 *     cwnd < clamp, snd_cwnd_cnt = 0; else snd_cwnd_cnt + 1).
 *   Slow start while cwnd <= ssthresh (3.14's test): a new HyStart round when ack is after end_seq
 *     (bictcp_cong_avoid), then 3.14's tcp_slow_start(tp, acked): cwnd = min(cwnd + acked,
 *     ssthresh + 1, clamp).
 *   bictcp_acked(sk, pkts_acked, rtt_us): in CA_Open the delayed-ACK ratio = ratio - ratio/16 +
 *     pkts_acked, clamped to 1..32<<4 (reset to 2<<4); an RTT sample (none: rtt_us < 0; none within
 *     HZ of the epoch's start) becomes delay = (rtt_us << 3) / 1000 (ms << 3, at least 1), delay_min
 *     its minimum; HyStart while cwnd <= ssthresh and cwnd >= hystart_low_window (16).
 *   hystart_update(sk, delay) of 3.14, both detectors (hystart_detect = 3), only while nothing was
 *     found: ack train when (s32)(now - last_ack) <= hystart_ack_delta (2 ms): last_ack = now, found
 *     when (s32)(now - round_start) > delay_min >> 4 (half the minimum RTT, in ms); delay: the
 *     round's minimum of its first HYSTART_MIN_SAMPLES (8) samples (curr_rtt 0 = none), then found
 *     when curr_rtt > delay_min + clamp(delay_min >> 4, 4 << 3, 16 << 3) (1/16 of delay_min, 4-16
 *     ms); either sets ssthresh = cwnd. bictcp_hystart_reset: round_start = last_ack = now,
 *     end_seq = snd_nxt, curr_rtt = 0, sample_cnt = 0 (found is cleared only by bictcp_reset).
 *   bictcp_recalc_ssthresh: epoch_start = 0; last_max_cwnd = cwnd (1024 + 717) / 2048 when cwnd <
 *     last_max_cwnd (fast convergence, on), else cwnd; loss_cwnd = cwnd; returns max(cwnd 717 /
 *     1024, 2). bictcp_undo_cwnd: max(cwnd, loss_cwnd). bictcp_state: TCP_CA_Loss resets the curve
 *     (bictcp_reset: delayed_ack 2<<4, found 0, ...) and the HyStart round.
 *
 * Where this kernel's hooks force a difference from 3.14 (the same list as nodes/congestion/
 * catalog.py CUBIC314_DIFFERENCES):
 *   - the clock: 3.14's tcp_time_stamp (jiffies) and bictcp_clock() (ms) are both the ms of
 *     tcp_mstamp here, i.e. jiffies at HZ = 1000 (HZ/32 = 31 ms, t in 2^-10 s from ms); a 3.14
 *     kernel built with HZ = 250 steps in 4 ms and skips updates for 7 jiffies (28 ms);
 *   - the RTT sample is 6.18's (ack_sample.rtt_us, from tcp_mstamp), converted to ms << 3 as 3.14
 *     does; 3.14 took it from jiffies or ktime; no ack_delay term (3.14 has none);
 *   - tcp_is_cwnd_limited() is 6.18's (3.14's took in_flight and TSO deferral into account), and the
 *     kernel decides when cong_avoid and pkts_acked are called (6.18's ACK processing, its PRR
 *     recovery, RACK loss detection, TSO autosizing and pacing, none of them 3.14's);
 *   - K from an exact integer cube root (3.14: a table lookup and one Newton-Raphson step, average
 *     error 0.195 %);
 *   - the HyStart exits are counted in this program (ctl_hystart_train, ctl_hystart_delay; the
 *     kernel's TcpExtTCPHystart* counters count only its own cubic).
 * Not in 3.14 and not here: 6.18's idle-restart epoch shift (CA_EVENT_TX_START), its ack_delay, its
 * per-jiffy cnt with the acked count, its cnt floor of 2 and its minimum-RTT-based HyStart delay.
 * nodes/congestion/model_cubic314.py is the reference model of every decision traced here.
 */
#ifndef CTL_NAME
#define CTL_NAME cubic314
#endif
#include "ctl_cc.h"

char _license[] SEC("license") = "GPL";

#define C3_HZ 1000U                      /* jiffies per second: the ms clock of tcp_mstamp */
#define C3_BETA 717                      /* / 1024 */
#define C3_BETA_SCALE 15                 /* 8 * (1024 + 717) / 3 / (1024 - 717), integer */
#define C3_CUBE_RTT_SCALE 410            /* bic_scale * 10 */
#define C3_CUBE_FACTOR ((1ULL << 40) / C3_CUBE_RTT_SCALE)
#define C3_ACK_RATIO_SHIFT 4
#define C3_ACK_RATIO_LIMIT (32U << C3_ACK_RATIO_SHIFT)
#define C3_HYSTART_ACK_TRAIN 0x1
#define C3_HYSTART_DELAY 0x2
#define C3_HYSTART_DETECT (C3_HYSTART_ACK_TRAIN | C3_HYSTART_DELAY)
#define C3_HYSTART_MIN_SAMPLES 8
#define C3_HYSTART_DELAY_MIN (4U << 3)
#define C3_HYSTART_DELAY_MAX (16U << 3)
#define C3_HYSTART_LOW_WINDOW 16
#define C3_HYSTART_ACK_DELTA 2           /* ms */
/* trace events beyond ctl_cc.h's (CTL_EV_INCREASE: bictcp_update, CTL_EV_HYSTART, CTL_EV_SSTHRESH) */
#define C3_EV_SLOW_START 8               /* one slow-start step: cwnd_before + acked -> out[0] */
#define C3_EV_UNDO 9                     /* undo_cwnd: max(cwnd, loss_cwnd) -> out[0] */

/* struct bictcp of 3.14, the same fields (times in ms = jiffies at HZ 1000) */
struct cubic314 {
	__u32 cnt;
	__u32 last_max_cwnd;
	__u32 loss_cwnd;
	__u32 last_cwnd;
	__u32 last_time;
	__u32 bic_origin_point;
	__u32 bic_K;
	__u32 delay_min;                 /* ms << 3 */
	__u32 epoch_start;               /* 0 = no epoch */
	__u32 ack_cnt;
	__u32 tcp_cwnd;
	__u16 delayed_ack;               /* packets per ACK << 4 */
	__u8 sample_cnt;
	__u8 found;
	__u32 round_start;
	__u32 end_seq;
	__u32 last_ack;
	__u32 curr_rtt;                  /* ms << 3, 0 = none */
};
CTL_PRIV_FITS(struct cubic314);

__u32 ctl_hystart_train SEC(".bss");
__u32 ctl_hystart_delay SEC(".bss");

static __always_inline __u32 c3_now(struct tcp_sock *tp)
{
	return (__u32)(tp->tcp_mstamp / 1000);
}

/* Integer cube root, branch-free (as mcubic.bpf.c's). */
static __always_inline __u32 c3_cbrt(__u64 a)
{
	__u64 r = 0;
	for (int s = 60; s >= 0; s -= 3) {
		r <<= 1;
		__u64 b = 3 * r * (r + 1) + 1;
		__u64 ge = ((~((a >> s) - b)) >> 63) & 1;
		a -= (b << s) * ge;
		r += ge;
	}
	return (__u32)r;
}

static __always_inline void c3_reset(struct cubic314 *ca)
{
	ca->cnt = 0;
	ca->last_max_cwnd = 0;
	ca->last_cwnd = 0;
	ca->last_time = 0;
	ca->bic_origin_point = 0;
	ca->bic_K = 0;
	ca->delay_min = 0;
	ca->epoch_start = 0;
	ca->delayed_ack = 2 << C3_ACK_RATIO_SHIFT;
	ca->ack_cnt = 0;
	ca->tcp_cwnd = 0;
	ca->found = 0;
}

static __always_inline void c3_hystart_reset(struct sock *sk, struct cubic314 *ca)
{
	struct tcp_sock *tp = ctl_tp(sk);
	ca->round_start = ca->last_ack = c3_now(tp);
	ca->end_seq = tp->snd_nxt;
	ca->curr_rtt = 0;
	ca->sample_cnt = 0;
}

SEC("struct_ops/cubic314_init")
void BPF_PROG(cubic314_init, struct sock *sk)
{
	struct cubic314 *ca = ctl_priv(sk);
	c3_reset(ca);
	ca->loss_cwnd = 0;
	c3_hystart_reset(sk, ca);
}

/* bictcp_update() of 3.14 */
static __always_inline void c3_update(struct cubic314 *ca, __u32 cwnd, __u32 now)
{
	ca->ack_cnt++;
	if (ca->last_cwnd == cwnd && (__s32)(now - ca->last_time) <= (__s32)(C3_HZ / 32))
		return;
	ca->last_cwnd = cwnd;
	ca->last_time = now;
	if (ca->epoch_start == 0) {
		ca->epoch_start = now;
		ca->ack_cnt = 1;
		ca->tcp_cwnd = cwnd;
		if (ca->last_max_cwnd <= cwnd) {
			ca->bic_K = 0;
			ca->bic_origin_point = cwnd;
		} else {
			ca->bic_K = c3_cbrt(C3_CUBE_FACTOR * (__u64)(ca->last_max_cwnd - cwnd));
			ca->bic_origin_point = ca->last_max_cwnd;
		}
	}
	__u64 t = (__u64)(__s64)(__s32)(now - ca->epoch_start);
	t += ca->delay_min >> 3;                    /* msecs_to_jiffies at HZ 1000 */
	t <<= 10;
	t /= C3_HZ;
	__u64 offs = t < ca->bic_K ? ca->bic_K - t : t - ca->bic_K;
	__u32 delta = (__u32)((C3_CUBE_RTT_SCALE * offs * offs * offs) >> 40);
	__u32 bic_target = t < ca->bic_K ? ca->bic_origin_point - delta : ca->bic_origin_point + delta;
	__u32 cnt;
	if (bic_target > cwnd)
		cnt = cwnd / (bic_target - cwnd);
	else
		cnt = 100 * cwnd;
	if (ca->last_max_cwnd == 0 && cnt > 20)
		cnt = 20;
	/* TCP friendliness */
	__u32 d = (cwnd * C3_BETA_SCALE) >> 3;
	if (d && ca->ack_cnt > d) {                 /* 3.14's while loop, in one step */
		__u32 n = (ca->ack_cnt - 1) / d;
		ca->ack_cnt -= n * d;
		ca->tcp_cwnd += n;
	}
	if (ca->tcp_cwnd > cwnd) {
		__u32 max_cnt = cwnd / (ca->tcp_cwnd - cwnd);
		if (cnt > max_cnt)
			cnt = max_cnt;
	}
	cnt = (cnt << C3_ACK_RATIO_SHIFT) / (ca->delayed_ack ? ca->delayed_ack : 1);
	ca->cnt = cnt ? cnt : 1;
}

SEC("struct_ops/cubic314_cong_avoid")
void BPF_PROG(cubic314_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = ctl_tp(sk);
	struct cubic314 *ca = ctl_priv(sk);

	if (!ctl_is_cwnd_limited(sk))
		return;
	if (tp->snd_cwnd <= tp->snd_ssthresh) {
		if ((__s32)(ca->end_seq - ack) < 0)          /* after(ack, end_seq) */
			c3_hystart_reset(sk, ca);
		/* 3.14's tcp_slow_start(tp, acked) */
#ifdef CTL_TRACE
		__u32 before = tp->snd_cwnd;
#endif
		__u32 cwnd = tp->snd_cwnd + acked;
		if (cwnd > tp->snd_ssthresh)
			cwnd = tp->snd_ssthresh + 1;
		tp->snd_cwnd = cwnd < tp->snd_cwnd_clamp ? cwnd : tp->snd_cwnd_clamp;
#ifdef CTL_TRACE
		struct ctl_trace_rec *r = ctl_trace_slot(sk);
		if (r) {
			r->event = C3_EV_SLOW_START;
			r->cwnd_before = before;
			r->ssthresh = tp->snd_ssthresh;
			r->acked = acked;
			r->in[0] = tp->snd_cwnd_clamp;
			r->in[1] = tp->max_packets_out;
			r->out[0] = tp->snd_cwnd;
		}
#endif
		return;
	}
	__u32 cwnd = tp->snd_cwnd, now = c3_now(tp);
#ifdef CTL_TRACE
	__u32 in_cnt = ca->cnt, in_ack_cnt = ca->ack_cnt, in_last_cwnd = ca->last_cwnd;
	__u32 in_last_time = ca->last_time, in_epoch = ca->epoch_start, in_tcp_cwnd = ca->tcp_cwnd;
	__u32 in_k = ca->bic_K, in_origin = ca->bic_origin_point;
#endif
	c3_update(ca, cwnd, now);
#ifdef CTL_TRACE
	struct ctl_trace_rec *r = ctl_trace_slot(sk);
	if (r) {
		r->event = CTL_EV_INCREASE;
		r->cwnd_before = cwnd;
		r->ssthresh = tp->snd_ssthresh;
		r->acked = acked;
		r->in[0] = now;
		r->in[1] = in_cnt;
		r->in[2] = in_ack_cnt;
		r->in[3] = in_last_cwnd;
		r->in[4] = in_last_time;
		r->in[5] = in_epoch;
		r->in[6] = in_tcp_cwnd;
		r->in[7] = in_k;
		r->in[8] = in_origin;
		r->in[9] = ca->last_max_cwnd;
		r->in[10] = ca->delay_min;
		r->in[11] = ca->delayed_ack;
		r->out[0] = ca->cnt;
		r->out[1] = ca->ack_cnt;
		r->out[2] = ca->tcp_cwnd;
		r->out[3] = ca->bic_K;
		r->out[4] = ca->bic_origin_point;
		r->out[5] = ca->epoch_start;
	}
#endif
	/* 3.14's tcp_cong_avoid_ai(tp, cnt) */
	if (tp->snd_cwnd_cnt >= ca->cnt) {
		if (tp->snd_cwnd < tp->snd_cwnd_clamp)
			tp->snd_cwnd = tp->snd_cwnd + 1;
		tp->snd_cwnd_cnt = 0;
	} else {
		tp->snd_cwnd_cnt = tp->snd_cwnd_cnt + 1;
	}
}

/* hystart_update() of 3.14 (called only while nothing was found: its own first test) */
static __always_inline void c3_hystart_update(struct sock *sk, struct cubic314 *ca, __u32 delay)
{
	struct tcp_sock *tp = ctl_tp(sk);
	__u32 now = c3_now(tp);
#ifdef CTL_TRACE
	__u32 ssthresh_before = tp->snd_ssthresh, round_start = ca->round_start, last_ack = ca->last_ack;
	__u32 curr_rtt = ca->curr_rtt, sample_cnt = ca->sample_cnt;
#endif
	__u32 found = 0;
	if ((__s32)(now - ca->last_ack) <= C3_HYSTART_ACK_DELTA) {
		ca->last_ack = now;
		if ((__u32)(__s32)(now - ca->round_start) > (ca->delay_min >> 4))   /* 3.14: s32 > u32, unsigned */
			found |= C3_HYSTART_ACK_TRAIN;
	}
	if (ca->sample_cnt < C3_HYSTART_MIN_SAMPLES) {
		if (ca->curr_rtt == 0 || ca->curr_rtt > delay)
			ca->curr_rtt = delay;
		ca->sample_cnt++;
	} else {
		__u32 d16 = ca->delay_min >> 4;
		__u32 thresh = d16 < C3_HYSTART_DELAY_MIN ? C3_HYSTART_DELAY_MIN :
			       d16 > C3_HYSTART_DELAY_MAX ? C3_HYSTART_DELAY_MAX : d16;
		if (ca->curr_rtt > ca->delay_min + thresh)
			found |= C3_HYSTART_DELAY;
	}
	if (found) {
		ca->found |= found;
		tp->snd_ssthresh = tp->snd_cwnd;
		if (found & C3_HYSTART_ACK_TRAIN)
			__sync_fetch_and_add(&ctl_hystart_train, 1);
		if (found & C3_HYSTART_DELAY)
			__sync_fetch_and_add(&ctl_hystart_delay, 1);
	}
#ifdef CTL_TRACE
	struct ctl_trace_rec *r = ctl_trace_slot(sk);
	if (r) {
		r->event = CTL_EV_HYSTART;
		r->cwnd_before = tp->snd_cwnd;
		r->ssthresh = ssthresh_before;
		r->acked = delay;
		r->in[0] = now;
		r->in[1] = ca->delay_min;
		r->in[2] = round_start;
		r->in[3] = last_ack;
		r->in[4] = curr_rtt;
		r->in[5] = sample_cnt;
		r->out[0] = found;
		r->out[1] = tp->snd_ssthresh;
		r->out[2] = ca->last_ack;
		r->out[3] = ca->curr_rtt;
		r->out[4] = ca->sample_cnt;
	}
#endif
}

SEC("struct_ops/cubic314_pkts_acked")
void BPF_PROG(cubic314_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = ctl_tp(sk);
	struct cubic314 *ca = ctl_priv(sk);

	if (((struct inet_connection_sock *)sk)->icsk_ca_state == TCP_CA_Open) {
		__u32 ratio = ca->delayed_ack;
		ratio -= ca->delayed_ack >> C3_ACK_RATIO_SHIFT;
		ratio += sample->pkts_acked;
		ca->delayed_ack = ratio < 1 ? 1 : ratio > C3_ACK_RATIO_LIMIT ? C3_ACK_RATIO_LIMIT : ratio;
	}
	if (sample->rtt_us < 0)
		return;
	if (ca->epoch_start && (__s32)(c3_now(tp) - ca->epoch_start) < (__s32)C3_HZ)
		return;
	__u32 delay = (__u32)(((__u64)sample->rtt_us << 3) / 1000);
	if (delay == 0)
		delay = 1;
	if (ca->delay_min == 0 || ca->delay_min > delay)
		ca->delay_min = delay;
	if (tp->snd_cwnd <= tp->snd_ssthresh && tp->snd_cwnd >= C3_HYSTART_LOW_WINDOW &&
	    !(ca->found & C3_HYSTART_DETECT))
		c3_hystart_update(sk, ca, delay);
}

SEC("struct_ops/cubic314_ssthresh")
__u32 BPF_PROG(cubic314_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = ctl_tp(sk);
	struct cubic314 *ca = ctl_priv(sk);
	__u32 w = tp->snd_cwnd;
#ifdef CTL_TRACE
	__u32 last_max = ca->last_max_cwnd;
#endif
	ca->epoch_start = 0;
	if (w < ca->last_max_cwnd)               /* fast convergence */
		ca->last_max_cwnd = (w * (1024 + C3_BETA)) / (2 * 1024);
	else
		ca->last_max_cwnd = w;
	ca->loss_cwnd = w;
	__u32 out = (w * C3_BETA) / 1024;
	out = out > 2 ? out : 2;
#ifdef CTL_TRACE
	struct ctl_trace_rec *r = ctl_trace_slot(sk);
	if (r) {
		r->event = CTL_EV_SSTHRESH;
		r->cwnd_before = w;
		r->ssthresh = tp->snd_ssthresh;
		r->in[0] = last_max;
		r->in[1] = sk->__sk_common.skc_state;        /* (not replayed: what the socket was doing) */
		r->in[2] = ((struct inet_connection_sock *)sk)->icsk_ca_state;
		r->in[3] = tp->packets_out;
		r->in[4] = tp->snd_cwnd_clamp;
		r->in[5] = sk->sk_protocol;
		r->in[6] = tp->is_mptcp;
		r->in[7] = tp->snd_una;
		r->in[8] = tp->snd_nxt;
		r->in[9] = tp->srtt_us;
		r->in[10] = sk->sk_type;
		r->out[0] = out;
		r->out[1] = ca->last_max_cwnd;
	}
#endif
	return out;
}

SEC("struct_ops/cubic314_set_state")
void BPF_PROG(cubic314_set_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Loss) {
		struct cubic314 *ca = ctl_priv(sk);
		c3_reset(ca);
		c3_hystart_reset(sk, ca);
	}
}

SEC("struct_ops/cubic314_undo_cwnd")
__u32 BPF_PROG(cubic314_undo_cwnd, struct sock *sk)
{
	struct cubic314 *ca = ctl_priv(sk);
	__u32 w = ctl_tp(sk)->snd_cwnd;
	__u32 out = w > ca->loss_cwnd ? w : ca->loss_cwnd;
#ifdef CTL_TRACE
	struct ctl_trace_rec *r = ctl_trace_slot(sk);
	if (r) {
		r->event = C3_EV_UNDO;
		r->cwnd_before = w;
		r->ssthresh = ctl_tp(sk)->snd_ssthresh;
		r->in[0] = ca->loss_cwnd;
		r->in[1] = ctl_tp(sk)->prior_ssthresh;
		r->out[0] = out;
	}
#endif
	return out;
}

SEC(".struct_ops")
struct tcp_congestion_ops CTL_NAME = {
	.init = (void *)cubic314_init,
	.cong_avoid = (void *)cubic314_cong_avoid,
	.pkts_acked = (void *)cubic314_pkts_acked,
	.ssthresh = (void *)cubic314_ssthresh,
	.set_state = (void *)cubic314_set_state,
	.undo_cwnd = (void *)cubic314_undo_cwnd,
	.name = CTL_OPS_NAME,
	.flags = CTL_CONG_NON_RESTRICTED,
};
