// SPDX-License-Identifier: GPL-2.0
/*
 * MCubic, Multipath Cubic: S. Ro, J. Ryu, J. Choe, "Design and Implementation of MCubic
 * (Multipath Cubic) and Performance Evaluation of Multipath TCP" (the MCubic paper,
 * section III "MCubic"; docs/experiments.md cites it), as a BPF congestion control coupling the subflows
 * of one MPTCP connection.
 *
 * Each subflow i grows its window on Cubic's curve (paper eq. 10)
 *     W_i(t) = C (t - K^i_mptcp)^3 + W^i_max
 * but with its time to reach W_max stretched by the coupling factor gamma_i (eq. 7, 11):
 *     K_i = cbrt(W^i_max (1 - beta) / C),   gamma_i = K_i * sum_j 1/K_j,
 *     K^i_mptcp = K_i * gamma_i = K_i^2 * sum_j 1/K_j
 * so that the connection's summed growth rate sum 1/K^i_mptcp is at most that of one Cubic
 * flow on the best path (eq. 8, 9), and a loss on one subflow (its K_j shrinking to a new
 * epoch) speeds up the others at once (traffic shift). Section 4.1: the implementation is
 * Linux's Cubic with K_mptcp in place of K ("Cubic 증가 함수에서의 K 변수에 적용되었다"); slow start
 * and the multiplicative decrease are Cubic's ("느린 시작과 승수 감소 방식은 TCP Cubic과 동일하다");
 * Cubic's TCP-friendly function is left out ("Cubic TCP의 친화 함수(Friendliness Function)은
 * 불필요하다").
 *
 * With K_mptcp > K_i, eq. 10 below the origin reaches below the window the loss left: how an
 * implementation treats that cannot be read from the paper. One source, four readings, each
 * registered under its own name (nodes/congestion/catalog.py; the build selects one with -D):
 *
 *   mcubic          (default) eq. 10 literally, the target clamped at 0 below the origin:
 *                   target = max(0, W_max - C (K_mptcp - t)^3); a target at or below cwnd gives
 *                   cnt = 100 cwnd, so after its own loss a coupled subflow holds its window
 *                   flat until the curve climbs past it (about K_i^2 sum_{j!=i} 1/K_j seconds).
 *   mcubic_wrap     (-DMC_WRAP) K_mptcp put into Linux 3.14's bictcp_update() (the paper's base,
 *                   net/ipv4/tcp_cubic.c of 3.14; read from 3.14.40): `u32 delta, bic_target`,
 *                   `bic_target = bic_origin_point - delta` unguarded, so below zero it wraps to
 *                   about 2^32; then 3.14's cnt rules in 3.14's units: cnt = cwnd / (bic_target -
 *                   cwnd) (u32; 0 when wrapped) or 100 * cwnd; cnt <= 20 while last_max_cwnd is 0;
 *                   (no TCP-friendly step, as the paper); cnt = (cnt << 4) / delayed_ack, the
 *                   ACKs per increment with 3.14's delayed-ACK ratio (ratio = 15/16 ratio +
 *                   packets acked, in CA_Open, clamped to 1..32<<4, reset to 2<<4); 0 becomes 1;
 *                   and 3.14's tcp_cong_avoid_ai(tp, cnt) once per ACK (cwnd + 1 when
 *                   snd_cwnd_cnt >= cnt, else snd_cwnd_cnt + 1). A wrapped target makes cnt 1:
 *                   one packet per two ACKs, the window regrows almost exponentially.
 *   mcubic_stretch  (-DMC_STRETCH) a reading ctl defines: the concave part stretched to start at
 *                   the window after the loss, W_0 (the window at the epoch's start):
 *                       t < K_mptcp:  target = W_max - (W_max - W_0) ((K_mptcp - t) / K_mptcp)^3
 *                       t >= K_mptcp: target = W_max + C (t - K_mptcp)^3
 *                   (an effective C_i = (W_max - W_0) / K_mptcp^3 below the origin, so W(0) = W_0
 *                   and W(K_mptcp) = W_max); the ratio (K_mptcp - t)/K_mptcp with 20 fractional
 *                   bits, cubed with a shift of 20 after each product; cnt rules as mcubic.
 *   mcubic_nohs     (-DMC_NOHS) mcubic without HyStart.
 *
 * Slow start: tcp_slow_start with HyStart (all but mcubic_nohs) as Linux 6.18's tcp_cubic.c
 * (the kernel these programs run on, whose Cubic the single-path flows of ctl's scenarios use),
 * hystart_update() and cubictcp_acked(): a round starts when snd_una passes the snd_nxt of the
 * last round's start; from a window of hystart_low_window = 16 on, the ACK train detector exits
 * slow start when ACKs spaced at most hystart_ack_delta_us = 2000 us apart span more than
 * (delay_min + ack_delay) / 2 since the round's start (not halved when the socket is paced;
 * ack_delay = min(1 ms, 4 sk_gso_max_size / pacing rate)); the delay detector, after
 * HYSTART_MIN_SAMPLES = 8 RTT samples of the round, when the round's minimum RTT exceeds
 * delay_min + clamp(delay_min / 8, 4 ms, 16 ms). Either sets ssthresh = cwnd. (3.14's HyStart
 * differs: ms clock, ack delta 2 ms, no ack_delay, delay threshold clamp(delay_min / 16, 4, 16)
 * ms, the round reset in cong_avoid.) Delay samples within 1 s of an epoch's start are
 * discarded, as tcp_cubic.c does after a recovery.
 *
 * Constants and choices: C = 0.4 (the paper's implementation value, eq. 10-11); beta = 0.7 as
 * Linux's Cubic (tcp_cubic.c, beta = 717/1024): a loss sets the window to 0.7 W, so K uses
 * (1 - beta) = 0.3 -- the paper's text writes "beta W_max" for the reduced window, which with
 * 0.7 is the same curve; fast convergence on, as in Linux. A subflow whose K is 0 (no loss yet,
 * or growing above its W_max) is left out of the sum and grows as plain Cubic (K_mptcp = 0).
 * Not implemented: Cubic's idle-period epoch shift (bulk transfers are never idle) and its
 * once-per-jiffy recomputation of cnt (it is recomputed on every ACK here). Time is in 2^-10 s
 * units (Linux's BICTCP_HZ): t = (now - epoch start + min RTT), from tcp_mstamp (us); |t - K| is
 * capped at 2^17 units (128 s) so C (t - K)^3 = 410 |t - K|^3 >> 40 fits in 64 bits (3.14 has no
 * cap; its u64 product would not overflow before 342 s, and a target 128 s past the origin is
 * above any window a rack allows, 2^18).
 * nodes/congestion/model.py: `mcubic_cnt`, `mcubic_wrap_cnt`, `mcubic_stretch_cnt`,
 * `hystart_update`.
 */
#ifndef CTL_NAME
#define CTL_NAME mcubic
#endif
#include "ctl_cc.h"

char _license[] SEC("license") = "GPL";

#if defined(MC_WRAP) + defined(MC_STRETCH) + defined(MC_NOHS) > 1
#error "one MCubic reading per build"
#endif

#define MC_BETA 717                      /* / 1024 */
#define MC_C_SCALED 410                  /* C * 1024 = 0.4 * 1024 (bic_scale 41 * 10) */
#define MC_CUBE_FACTOR ((1ULL << 40) / MC_C_SCALED)
#define MC_MAX_OFFS (1ULL << 17)
#define MC_STRETCH_SHIFT 20

/* Linux 3.14 tcp_cubic.c (mcubic_wrap) */
#define MC_ACK_RATIO_SHIFT 4
#define MC_ACK_RATIO_LIMIT (32U << MC_ACK_RATIO_SHIFT)

/* Linux 6.18 tcp_cubic.c HyStart */
#define MC_HYSTART_ACK_TRAIN 0x1
#define MC_HYSTART_DELAY 0x2
#define MC_HYSTART_MIN_SAMPLES 8
#define MC_HYSTART_DELAY_MIN 4000U       /* us */
#define MC_HYSTART_DELAY_MAX 16000U      /* us */
#define MC_HYSTART_LOW_WINDOW 16
#define MC_HYSTART_ACK_DELTA_US 2000
#define MC_USEC_PER_SEC 1000000ULL
#define MC_USEC_PER_MSEC 1000ULL

struct mcubic {
	__u32 cnt;
	__u32 last_max_cwnd;
	__u32 origin_point;
	__u32 K;                         /* own K_i, 2^-10 s */
	__u32 delay_min;                 /* us */
	__u32 epoch_cwnd;                /* W_0: the window at the epoch's start */
	__u64 epoch_start;               /* us, 0 = no epoch */
	/* HyStart */
	__u32 round_start;               /* us (32 bits of tcp_mstamp, as bictcp_clock_us) */
	__u32 end_seq;
	__u32 last_ack;                  /* us */
	__u32 curr_rtt;                  /* us */
	__u8 sample_cnt;
	__u8 found;
	__u16 delayed_ack;               /* mcubic_wrap: 3.14's packets per ACK << 4 */
	__u32 pad;
};
CTL_PRIV_FITS(struct mcubic);

struct mc_ctx {
	struct ctl_view v;
	__u64 k2;                        /* K_i^2 */
	__u64 kc;                        /* sum_j K_i^2 / K_j */
};

/* Integer cube root, branch-free (the verifier checks one path). */
static __always_inline __u32 mc_cbrt(__u64 a)
{
	__u64 r = 0;
	for (int s = 60; s >= 0; s -= 3) {
		r <<= 1;
		__u64 b = 3 * r * (r + 1) + 1;
		__u64 ge = ((~((a >> s) - b)) >> 63) & 1;   /* (a >> s) >= b, as 0/1 */
		a -= (b << s) * ge;
		r += ge;
	}
	return (__u32)r;
}

static long mc_pass_k(__u32 i, void *data)
{
	struct mc_ctx *c = data;
	if (i >= c->v.n)
		return 1;
	__u64 kj = c->v.aux[i & 7];
	if (kj)
		c->kc += c->k2 / kj;
	return 0;
}

/* bictcp_reset(): the curve's state (not HyStart's round). */
static __always_inline void mc_reset(struct mcubic *ca)
{
	ca->cnt = 0;
	ca->last_max_cwnd = 0;
	ca->origin_point = 0;
	ca->K = 0;
	ca->delay_min = 0;
	ca->epoch_cwnd = 0;
	ca->epoch_start = 0;
	ca->found = 0;
	ca->delayed_ack = 2 << MC_ACK_RATIO_SHIFT;
}

/* bictcp_hystart_reset(): a new slow-start round. */
static __always_inline void mc_hystart_reset(struct sock *sk, struct mcubic *ca)
{
	struct tcp_sock *tp = ctl_tp(sk);
	ca->round_start = ca->last_ack = (__u32)tp->tcp_mstamp;
	ca->end_seq = tp->snd_nxt;
	ca->curr_rtt = ~0U;
	ca->sample_cnt = 0;
}

SEC("struct_ops/mcubic_init")
void BPF_PROG(mcubic_init, struct sock *sk)
{
	ctl_init(sk);
	struct mcubic *ca = ctl_priv(sk);
	mc_reset(ca);
	mc_hystart_reset(sk, ca);
}

/* The target window and cnt of one ACK in congestion avoidance, in this build's reading. */
static __always_inline __u32 mc_cnt(struct mcubic *ca, __u32 cwnd, __u64 t, __u64 kc, __u64 *target_out)
{
#ifdef MC_WRAP
	/* Linux 3.14 bictcp_update() with bic_K = K_mptcp: u32 delta and bic_target */
	__u64 offs = t < kc ? kc - t : t - kc;
	if (offs > MC_MAX_OFFS)
		offs = MC_MAX_OFFS;
	__u32 delta = (__u32)((MC_C_SCALED * offs * offs * offs) >> 40);
	__u32 bic_target;
	if (t < kc)
		bic_target = ca->origin_point - delta;       /* wraps below zero, as in 3.14 */
	else
		bic_target = ca->origin_point + delta;
	__u32 cnt;
	if (bic_target > cwnd)
		cnt = cwnd / (bic_target - cwnd);
	else
		cnt = 100 * cwnd;
	if (ca->last_max_cwnd == 0 && cnt > 20)
		cnt = 20;
	cnt = (cnt << MC_ACK_RATIO_SHIFT) / (ca->delayed_ack ? ca->delayed_ack : 1);
	if (cnt == 0)
		cnt = 1;
	*target_out = bic_target;
	return cnt;
#else
	__u64 target, delta;
	if (t < kc) {
#ifdef MC_STRETCH
		__u64 span = ca->origin_point > ca->epoch_cwnd ? ca->origin_point - ca->epoch_cwnd : 0;
		__u64 r = ((kc - t) << MC_STRETCH_SHIFT) / kc;
		__u64 r3 = (((r * r) >> MC_STRETCH_SHIFT) * r) >> MC_STRETCH_SHIFT;
		delta = (span * r3) >> MC_STRETCH_SHIFT;
		target = ca->origin_point - delta;
#else
		__u64 offs = kc - t;
		if (offs > MC_MAX_OFFS)
			offs = MC_MAX_OFFS;
		delta = (MC_C_SCALED * offs * offs * offs) >> 40;
		target = delta >= ca->origin_point ? 0 : ca->origin_point - delta;
#endif
	} else {
		__u64 offs = t - kc;
		if (offs > MC_MAX_OFFS)
			offs = MC_MAX_OFFS;
		delta = (MC_C_SCALED * offs * offs * offs) >> 40;
		target = ca->origin_point + delta;
	}
	__u64 cnt;
	if (target > cwnd)
		cnt = cwnd / (target - cwnd);
	else
		cnt = 100ULL * cwnd;
	if (ca->last_max_cwnd == 0 && cnt > 20)
		cnt = 20;
	if (cnt < 2)
		cnt = 2;
	if (cnt > 0xffffffffULL)
		cnt = 0xffffffffULL;
	*target_out = target;
	return (__u32)cnt;
#endif
}

SEC("struct_ops/mcubic_cong_avoid")
void BPF_PROG(mcubic_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = ctl_tp(sk);
	struct mcubic *ca = ctl_priv(sk);
	struct mc_ctx c = {};

	if (!ctl_is_cwnd_limited(sk)) {
		ctl_publish(sk, ca->K, &c.v);
		return;
	}
	if (tp->snd_cwnd < tp->snd_ssthresh) {
		ctl_publish(sk, ca->K, &c.v);
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	__u32 cwnd = tp->snd_cwnd;
	__u64 now = tp->tcp_mstamp;
	if (!ca->epoch_start) {
		ca->epoch_start = now ? now : 1;
		ca->epoch_cwnd = cwnd;
		if (cwnd < ca->last_max_cwnd) {
			ca->K = mc_cbrt(MC_CUBE_FACTOR * (ca->last_max_cwnd - cwnd));
			ca->origin_point = ca->last_max_cwnd;
		} else {
			ca->K = 0;
			ca->origin_point = cwnd;
		}
	}
	int coupled = ctl_publish(sk, ca->K, &c.v);
	if (!coupled)
		ctl_single_view(sk, ca->K, &c.v);
	/* K_mptcp = K_i^2 * sum_j 1/K_j (K_i = 0: plain Cubic) */
	__u64 kc = 0;
	if (ca->K) {
		c.k2 = (__u64)ca->K * ca->K;
		c.kc = 0;
		bpf_loop(CTL_MAX_SUBFLOWS, mc_pass_k, &c, 0);
		kc = c.kc;
	}
	__u64 t = ((now - ca->epoch_start + ca->delay_min) << 10) / MC_USEC_PER_SEC;
	__u64 target = 0;
	ca->cnt = mc_cnt(ca, cwnd, t, kc, &target);
#ifdef CTL_TRACE
	struct ctl_trace_rec *r = ctl_trace_slot(sk);
	if (r) {
		r->event = CTL_EV_INCREASE;
		r->cwnd_before = cwnd;
		r->ssthresh = tp->snd_ssthresh;
		r->acked = acked;
		r->v = c.v;
		r->in[0] = (__s64)t;
		r->in[1] = ca->origin_point;
		r->in[2] = ca->last_max_cwnd;
		r->in[3] = ca->K;
		r->in[4] = ca->epoch_cwnd;
		r->in[5] = ca->delayed_ack;
		r->out[0] = ca->cnt;
		r->out[1] = (__s64)kc;
		r->out[2] = (__s64)target;
	}
#endif
#ifdef MC_WRAP
	/* Linux 3.14 tcp_cong_avoid_ai(tp, w): one step per ACK */
	if (tp->snd_cwnd_cnt >= ca->cnt) {
		if (tp->snd_cwnd < tp->snd_cwnd_clamp)
			tp->snd_cwnd = tp->snd_cwnd + 1;
		tp->snd_cwnd_cnt = 0;
	} else {
		tp->snd_cwnd_cnt = tp->snd_cwnd_cnt + 1;
	}
#else
	tcp_cong_avoid_ai(tp, ca->cnt, acked);
#endif
}

#ifndef MC_NOHS
/* hystart_ack_delay(): TSO/GRO cushion, capped at 1 ms. */
static __always_inline __u32 mc_hystart_ack_delay(struct sock *sk)
{
	__u64 rate = sk->sk_pacing_rate;
	if (!rate)
		return 0;
	__u64 d = ((__u64)sk->sk_gso_max_size * 4 * MC_USEC_PER_SEC) / rate;
	return d < MC_USEC_PER_MSEC ? (__u32)d : (__u32)MC_USEC_PER_MSEC;
}

/* MCubic's own HyStart exits over the whole program (every socket of every network namespace
running it): the kernel's TcpExtTCPHystart* counters count only its own Cubic, so hostctl reads
these before unloading the program (`hystart_exits`) and the run record keeps them. A decision
where both detectors fire counts in both (this program does not return after the ACK train, as
the model it is checked against does not). Absent from the MC_NOHS build (no HyStart). */
__u32 ctl_hystart_train SEC(".bss");
__u32 ctl_hystart_delay SEC(".bss");

/* hystart_update() of Linux 6.18's tcp_cubic.c. */
static __always_inline void mc_hystart_update(struct sock *sk, struct mcubic *ca, __u32 delay)
{
	struct tcp_sock *tp = ctl_tp(sk);
	__u32 found = 0;
#ifdef CTL_TRACE
	__u32 ssthresh_before = tp->snd_ssthresh, cwnd = tp->snd_cwnd, end_seq = ca->end_seq;
	__u32 round_start = ca->round_start, last_ack = ca->last_ack, curr_rtt = ca->curr_rtt;
	__u32 sample_cnt = ca->sample_cnt;
#endif
	__u32 now = (__u32)tp->tcp_mstamp;
	__u32 ack_delay = mc_hystart_ack_delay(sk);
	__u32 paced = sk->sk_pacing_status != SK_PACING_NONE;

	if ((__s32)(ca->end_seq - tp->snd_una) < 0)      /* after(snd_una, end_seq) */
		mc_hystart_reset(sk, ca);
	if (tp->snd_cwnd >= MC_HYSTART_LOW_WINDOW) {
		/* first detection parameter - ack-train detection */
		if ((__s32)(now - ca->last_ack) <= MC_HYSTART_ACK_DELTA_US) {
			ca->last_ack = now;
			__u32 threshold = ca->delay_min + ack_delay;
			if (!paced)
				threshold >>= 1;
			if ((__s32)(now - ca->round_start) > threshold) {
				ca->found = 1;
				found |= MC_HYSTART_ACK_TRAIN;
				tp->snd_ssthresh = tp->snd_cwnd;
				__sync_fetch_and_add(&ctl_hystart_train, 1);
			}
		}
		/* obtain the minimum delay of more than sampling packets */
		if (ca->curr_rtt > delay)
			ca->curr_rtt = delay;
		if (ca->sample_cnt < MC_HYSTART_MIN_SAMPLES) {
			ca->sample_cnt++;
		} else {
			__u32 d8 = ca->delay_min >> 3;
			__u32 thresh = d8 < MC_HYSTART_DELAY_MIN ? MC_HYSTART_DELAY_MIN :
				       d8 > MC_HYSTART_DELAY_MAX ? MC_HYSTART_DELAY_MAX : d8;
			if (ca->curr_rtt > ca->delay_min + thresh) {
				ca->found = 1;
				found |= MC_HYSTART_DELAY;
				tp->snd_ssthresh = tp->snd_cwnd;
				__sync_fetch_and_add(&ctl_hystart_delay, 1);
			}
		}
	}
#ifdef CTL_TRACE
	struct ctl_trace_rec *r = ctl_trace_slot(sk);
	if (r) {
		r->event = CTL_EV_HYSTART;
		r->cwnd_before = cwnd;
		r->ssthresh = ssthresh_before;
		r->acked = delay;
		r->in[0] = now;
		r->in[1] = tp->snd_una;
		r->in[2] = tp->snd_nxt;
		r->in[3] = ca->delay_min;
		r->in[4] = ack_delay;
		r->in[5] = paced;
		r->in[6] = round_start;
		r->in[7] = last_ack;
		r->in[8] = end_seq;
		r->in[9] = curr_rtt;
		r->in[10] = sample_cnt;
		r->out[0] = found;
		r->out[1] = tp->snd_ssthresh;
		r->out[2] = ca->round_start;
		r->out[3] = ca->last_ack;
		r->out[4] = ca->curr_rtt;
		r->out[5] = ca->sample_cnt;
	}
#endif
}
#endif

SEC("struct_ops/mcubic_pkts_acked")
void BPF_PROG(mcubic_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = ctl_tp(sk);
	struct mcubic *ca = ctl_priv(sk);
#ifdef MC_WRAP
	/* Linux 3.14 bictcp_acked(): the delayed-ACK ratio, ratio = 15/16 ratio + packets acked */
	if (((struct inet_connection_sock *)sk)->icsk_ca_state == TCP_CA_Open) {
		__u32 ratio = ca->delayed_ack;
		ratio -= ca->delayed_ack >> MC_ACK_RATIO_SHIFT;
		ratio += sample->pkts_acked;
		ca->delayed_ack = ratio < 1 ? 1 : ratio > MC_ACK_RATIO_LIMIT ? MC_ACK_RATIO_LIMIT : ratio;
	}
#endif
	/* Some calls are for duplicates without timestamps */
	if (sample->rtt_us < 0)
		return;
	/* Discard delay samples right after fast recovery (tcp_cubic.c: within HZ of the epoch) */
	if (ca->epoch_start && tp->tcp_mstamp - ca->epoch_start < MC_USEC_PER_SEC)
		return;
	__u32 d = sample->rtt_us ? (__u32)sample->rtt_us : 1;
	if (!ca->delay_min || ca->delay_min > d)
		ca->delay_min = d;
#ifndef MC_NOHS
	if (!ca->found && tp->snd_cwnd < tp->snd_ssthresh)
		mc_hystart_update(sk, ca, d);
#endif
}

SEC("struct_ops/mcubic_ssthresh")
__u32 BPF_PROG(mcubic_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = ctl_tp(sk);
	struct mcubic *ca = ctl_priv(sk);
	__u32 w = tp->snd_cwnd;
	ca->epoch_start = 0;
	if (w < ca->last_max_cwnd)     /* fast convergence */
		ca->last_max_cwnd = (w * (1024 + MC_BETA)) / (2 * 1024);
	else
		ca->last_max_cwnd = w;
	__u32 out = (w * MC_BETA) / 1024;
	return out > 2 ? out : 2;
}

SEC("struct_ops/mcubic_set_state")
void BPF_PROG(mcubic_set_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Loss) {          /* the curve starts over; the coupling link stays */
		struct mcubic *ca = ctl_priv(sk);
		mc_reset(ca);
		mc_hystart_reset(sk, ca);
	}
}

SEC("struct_ops/mcubic_undo_cwnd")
__u32 BPF_PROG(mcubic_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC("struct_ops/mcubic_release")
void BPF_PROG(mcubic_release, struct sock *sk)
{
	ctl_release(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops CTL_NAME = {
	.init = (void *)mcubic_init,
	.cong_avoid = (void *)mcubic_cong_avoid,
	.pkts_acked = (void *)mcubic_pkts_acked,
	.ssthresh = (void *)mcubic_ssthresh,
	.set_state = (void *)mcubic_set_state,
	.undo_cwnd = (void *)mcubic_undo_cwnd,
	.release = (void *)mcubic_release,
	.name = CTL_OPS_NAME,
	.flags = CTL_CONG_NON_RESTRICTED,
};
