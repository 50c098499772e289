// SPDX-License-Identifier: GPL-2.0
/*
 * BALIA, the Balanced Linked Adaptation algorithm: Q. Peng, A. Walid, J. Hwang, S. H. Low,
 * "Multipath TCP: Analysis, Design, and Implementation", IEEE/ACM ToN 24(1), 2016, as a BPF
 * congestion control coupling the subflows of one MPTCP connection.
 *
 * With x_k = w_k / rtt_k and alpha_r = max_k x_k / x_r, for each packet acked on path r in
 * congestion avoidance:
 *     w_r += x_r / (rtt_r (sum_k x_k)^2) * (1 + alpha_r)/2 * (4 + alpha_r)/5
 * and on a loss:
 *     w_r -= w_r / 2 * min(alpha_r, 3/2).
 * Slow start is Reno's; one subflow (or plain TCP) is Reno.
 *
 * Implementation: the increase is tcp_cong_avoid_ai()'s `cnt`, the packets acked per window
 * increment, which the equation makes
 *     cnt = 10 w_r (sum_k x_k)^2 / ((x_r + x_max)(4 x_r + x_max))
 * (invariant to the unit of x). x_k is kept as w_k * rtt_min / rtt_k with 10 fractional
 * bits (x_k <= 2^28) and cnt is computed as (S^2 / (x_r + x_max)) * 10 * w_r / (4 x_r + x_max):
 * S^2 / (x_r + x_max) <= n^2 x_max <= 2^34, so with w <= 2^18 every intermediate stays below
 * 2^56, and the one rounding that matters comes last. alpha_r has 10 fractional bits.
 *
 * balia_floor (-DBALIA_FLOOR, registered as its own algorithm): the decrease of the authors'
 * Linux code (multipath-tcp/mptcp, branch mptcp_v0.96, net/mptcp/mptcp_balia.c,
 * mptcp_balia_recalc_ai()): `alpha = div64_u64(max_rate, rate)` is an integer (floored), then
 * `md = ((tp->snd_cwnd >> 1) * min(alpha << alpha_scale, (3 << alpha_scale) >> 1)) >> alpha_scale`:
 * a loss cuts w/2 while max_k x_k < 2 x_r and 0.75 w from there on, never in between. Only the
 * floor is taken from that code: the rates and the window are this subflow's at the loss (theirs
 * keeps the md of the last recalculation), and the increase is unchanged (theirs computes it from
 * the rates as 10 w (sum x)^2 / ((x_r + x_max)(4 x_r + x_max)) too, with no rounded alpha).
 * nodes/congestion/model.py: `balia_cnt`, `balia_ssthresh`.
 */
#ifndef CTL_NAME
#define CTL_NAME balia
#endif
#include "ctl_cc.h"

char _license[] SEC("license") = "GPL";

struct balia_ctx {
	struct ctl_view v;
	__u64 rtt_min, x_max, sum, x_me;
};

static long balia_pass_min(__u32 i, void *data)
{
	struct balia_ctx *c = data;
	if (i >= c->v.n)
		return 1;
	__u64 r = c->v.rtt[i & 7];
	if (r && r < c->rtt_min)
		c->rtt_min = r;
	return 0;
}

static long balia_pass_rates(__u32 i, void *data)
{
	struct balia_ctx *c = data;
	if (i >= c->v.n)
		return 1;
	__u64 r = c->v.rtt[i & 7] ? : 1;
	__u64 x = (((__u64)c->v.cwnd[i & 7] << 10) * c->rtt_min) / r;
	c->sum += x;
	if (x > c->x_max)
		c->x_max = x;
	if (i == c->v.self)
		c->x_me = x;
	return 0;
}

/* Fills rtt_min, x_max, sum and x_me of the view; 0 when the rates cannot be formed. */
static __always_inline int balia_rates(struct balia_ctx *c)
{
	c->rtt_min = ~0ULL;
	c->x_max = c->sum = c->x_me = 0;
	bpf_loop(CTL_MAX_SUBFLOWS, balia_pass_min, c, 0);
	if (c->rtt_min == ~0ULL)
		return 0;
	bpf_loop(CTL_MAX_SUBFLOWS, balia_pass_rates, c, 0);
	return c->x_me != 0;
}

static __always_inline __u32 balia_cnt(struct balia_ctx *c)
{
	__u32 w = c->v.cwnd[c->v.self & 7];
	if (c->v.n <= 1 || !balia_rates(c))
		return w ? w : 1;
	__u64 t = (c->sum * c->sum) / (c->x_me + c->x_max);
	t = (t * 10 * w) / ((c->x_me << 2) + c->x_max);
	if (!t)
		t = w;
	if (t > 0xffffffffULL)
		t = 0xffffffffULL;
	return t ? (__u32)t : 1;
}

SEC("struct_ops/balia_init")
void BPF_PROG(balia_init, struct sock *sk)
{
	ctl_init(sk);
}

SEC("struct_ops/balia_cong_avoid")
void BPF_PROG(balia_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = ctl_tp(sk);
	struct balia_ctx c = {};
	int coupled = ctl_publish(sk, 0, &c.v);

	if (!ctl_is_cwnd_limited(sk))
		return;
	if (tp->snd_cwnd < tp->snd_ssthresh) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	if (!coupled)
		ctl_single_view(sk, 0, &c.v);
	__u32 cnt = balia_cnt(&c);
#ifdef CTL_TRACE
	struct ctl_trace_rec *r = ctl_trace_slot(sk);
	if (r) {
		r->event = CTL_EV_INCREASE;
		r->cwnd_before = tp->snd_cwnd;
		r->ssthresh = tp->snd_ssthresh;
		r->acked = acked;
		r->v = c.v;
		r->out[0] = cnt;
	}
#endif
	tcp_cong_avoid_ai(tp, cnt, acked);
}

SEC("struct_ops/balia_ssthresh")
__u32 BPF_PROG(balia_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = ctl_tp(sk);
	struct balia_ctx c = {};
	__u32 w = tp->snd_cwnd, out;
	if (!ctl_publish(sk, 0, &c.v) || c.v.n <= 1 || !balia_rates(&c)) {
		out = tcp_reno_ssthresh(sk);
	} else {
#ifdef BALIA_FLOOR
		__u64 alpha = (c.x_max / c.x_me) << 10;          /* the authors' integer alpha */
#else
		__u64 alpha = (c.x_max << 10) / c.x_me;          /* alpha_r, 10 fractional bits */
#endif
		if (alpha > (3 << 9))
			alpha = 3 << 9;                             /* min(alpha, 1.5) */
		__u64 md = ((__u64)(w >> 1) * alpha) >> 10;
		out = w > md + 1 ? w - (__u32)md : 1;
	}
#ifdef CTL_TRACE
	struct ctl_trace_rec *r = ctl_trace_slot(sk);
	if (r) {
		r->event = CTL_EV_SSTHRESH;
		r->cwnd_before = w;
		r->ssthresh = tp->snd_ssthresh;
		r->v = c.v;
		r->out[0] = out;
	}
#endif
	return out;
}

SEC("struct_ops/balia_undo_cwnd")
__u32 BPF_PROG(balia_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC("struct_ops/balia_release")
void BPF_PROG(balia_release, struct sock *sk)
{
	ctl_release(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops CTL_NAME = {
	.init = (void *)balia_init,
	.cong_avoid = (void *)balia_cong_avoid,
	.ssthresh = (void *)balia_ssthresh,
	.undo_cwnd = (void *)balia_undo_cwnd,
	.release = (void *)balia_release,
	.name = CTL_OPS_NAME,
	.flags = CTL_CONG_NON_RESTRICTED,
};
