// SPDX-License-Identifier: GPL-2.0
/*
 * OLIA, the Opportunistic Linked Increases Algorithm: R. Khalili, N. Gast, M. Popovic,
 * J.-Y. Le Boudec, "MPTCP is not Pareto-optimal: performance issues and a possible solution",
 * IEEE/ACM ToN 21(5), 2013 (and draft-khalili-mptcp-congestion-control-05), as a BPF
 * congestion control coupling the subflows of one MPTCP connection.
 *
 * For each packet acked on path r in congestion avoidance the window grows by
 *     (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2  +  alpha_r / w_r
 * where, with M the paths of largest window, B the "best" paths (largest l_p / rtt_p^2, l_p
 * the inter-loss distance: bytes acked between the last losses, the larger of the last two)
 * and n the number of paths:
 *     alpha_r = 1 / (n |B\M|)    if r in B\M,
 *              -1 / (n |M|)      if r in M and B\M is not empty,
 *               0                otherwise.
 * A loss halves the window (Reno); slow start is Reno's.
 *
 * Implementation: the increase per packet is accumulated with 16 fractional bits (a window
 * step when the sum passes +-1 packet, remainder kept). The first term uses
 * S = sum_p w_p * rtt_r / rtt_p with 10 fractional bits; when S exceeds 2^31 the term is
 * below 2^-8 packets per ACK and is taken as 0 (w <= 2^18). Paths are compared on
 * l_p / rtt_p^2 with l in KiB and rtt in units of 16 us, so products fit in 64 bits;
 * equal metrics after that rounding are equally best (as the reference implementation,
 * mptcp_olia.c, compares them for equality). nodes/congestion/model.py: `olia_increase`.
 */
#ifndef CTL_NAME
#define CTL_NAME olia
#endif
#include "ctl_cc.h"

char _license[] SEC("license") = "GPL";

#define OLIA_SCALE 16

struct olia {
	__u32 loss1, loss2, loss3;   /* snd_una at the last loss events (loss3: now) */
	__u32 pad;
	__s64 acc;                   /* fractional window change, 2^-16 packets */
};
CTL_PRIV_FITS(struct olia);

static __always_inline __u64 olia_l(const struct olia *ca)
{
	__u32 a = ca->loss3 - ca->loss2, b = ca->loss2 - ca->loss1;
	return a > b ? a : b;
}

/* The scan state of one decision (the view and what the passes over it found). Passes use
 * bpf_loop() so the verifier checks each pass body once instead of every branch combination
 * of an unrolled loop. */
struct olia_ctx {
	struct ctl_view v;
	__u32 max_w, m, b_not_m, me_best;
	__u64 bl, br, s;
};

static __always_inline void olia_metric(const struct ctl_view *v, __u32 i, __u64 *l, __u64 *r)
{
	__u64 ll = v->aux[i & 7] >> 10, rr = v->rtt[i & 7] >> 4;
	*l = ll > (1ULL << 22) ? (1ULL << 22) : ll;
	*r = rr ? rr : 1;
}

static long olia_pass_best(__u32 i, void *data)
{
	struct olia_ctx *c = data;
	if (i >= c->v.n)
		return 1;
	__u32 w = c->v.cwnd[i & 7];
	if (w > c->max_w)
		c->max_w = w;
	__u64 l, r;
	olia_metric(&c->v, i, &l, &r);
	if (l * c->br * c->br >= c->bl * r * r) {
		c->bl = l;
		c->br = r;
	}
	return 0;
}

static long olia_pass_sets(__u32 i, void *data)
{
	struct olia_ctx *c = data;
	if (i >= c->v.n)
		return 1;
	__u64 l, r;
	olia_metric(&c->v, i, &l, &r);
	int best = l * c->br * c->br == c->bl * r * r;
	if (c->v.cwnd[i & 7] == c->max_w)
		c->m++;
	else if (best)
		c->b_not_m++;
	if (i == c->v.self)
		c->me_best = best;
	c->s += (((__u64)c->v.cwnd[i & 7] << 10) * c->v.rtt[c->v.self & 7]) / (c->v.rtt[i & 7] ? : 1);
	return 0;
}

/* The increase per packet acked, in 2^-16 packets (may be negative). */
static __always_inline __s64 olia_increase(struct olia_ctx *c)
{
	c->max_w = 0;
	c->bl = 0;
	c->br = 1;
	c->m = c->b_not_m = c->me_best = 0;
	c->s = 0;
	bpf_loop(CTL_MAX_SUBFLOWS, olia_pass_best, c, 0);
	bpf_loop(CTL_MAX_SUBFLOWS, olia_pass_sets, c, 0);
	__u32 n = c->v.n, w = c->v.cwnd[c->v.self & 7];
	__s64 first = 0;
	if (c->s && c->s <= (1ULL << 31))
		first = (__s64)(((__u64)w << 36) / (c->s * c->s));
	__s64 second = 0;
	if (c->b_not_m && w) {
		if (w < c->max_w && c->me_best)
			second = (__s64)((1ULL << OLIA_SCALE) / ((__u64)n * c->b_not_m * w));
		else if (w == c->max_w && c->m)
			second = -(__s64)((1ULL << OLIA_SCALE) / ((__u64)n * c->m * w));
	}
	return first + second;
}

SEC("struct_ops/olia_init")
void BPF_PROG(olia_init, struct sock *sk)
{
	ctl_init(sk);
	struct olia *ca = ctl_priv(sk);
	__u32 una = ctl_tp(sk)->snd_una;
	ca->loss1 = una;
	ca->loss2 = una;
	ca->loss3 = una;
	ca->acc = 0;
}

SEC("struct_ops/olia_cong_avoid")
void BPF_PROG(olia_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = ctl_tp(sk);
	struct olia *ca = ctl_priv(sk);
	struct olia_ctx c = {};

	ca->loss3 = tp->snd_una;
	int coupled = ctl_publish(sk, olia_l(ca), &c.v);
	if (!coupled) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	if (!ctl_is_cwnd_limited(sk))
		return;
	if (tp->snd_cwnd < tp->snd_ssthresh) {
		tcp_slow_start(tp, acked);
		return;
	}
	__s64 inc = olia_increase(&c);
	__s64 acc_before = ca->acc;
	__u32 cwnd_before = tp->snd_cwnd;
	__s64 acc = acc_before + inc * (__s64)acked;
	/* whole packets, rounded toward zero (no signed division in BPF: shift the magnitude) */
	__s64 steps = acc >= 0 ? (__s64)((__u64)acc >> OLIA_SCALE) : -(__s64)((__u64)(-acc) >> OLIA_SCALE);
	acc -= steps * (1LL << OLIA_SCALE);
	__s64 w = (__s64)tp->snd_cwnd + steps;
	if (w < 1)
		w = 1;
	if (w > tp->snd_cwnd_clamp)
		w = tp->snd_cwnd_clamp;
	tp->snd_cwnd = (__u32)w;
	ca->acc = acc;
#ifdef CTL_TRACE
	struct ctl_trace_rec *r = ctl_trace_slot(sk);
	if (r) {
		r->event = CTL_EV_INCREASE;
		r->cwnd_before = cwnd_before;
		r->ssthresh = tp->snd_ssthresh;
		r->acked = acked;
		r->v = c.v;
		r->in[0] = acc_before;
		r->out[0] = inc;
		r->out[1] = acc;
		r->out[2] = tp->snd_cwnd;
	}
#endif
}

SEC("struct_ops/olia_set_state")
void BPF_PROG(olia_set_state, struct sock *sk, __u8 new_state)
{
	struct olia *ca = ctl_priv(sk);
	if (new_state != TCP_CA_Loss && new_state != TCP_CA_Recovery && new_state != TCP_CA_CWR)
		return;
	if (ca->loss3 != ca->loss2 && !((struct inet_connection_sock *)sk)->icsk_retransmits) {
		ca->loss1 = ca->loss2;
		ca->loss2 = ca->loss3;
	}
}

SEC("struct_ops/olia_ssthresh")
__u32 BPF_PROG(olia_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops/olia_undo_cwnd")
__u32 BPF_PROG(olia_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC("struct_ops/olia_release")
void BPF_PROG(olia_release, struct sock *sk)
{
	ctl_release(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops CTL_NAME = {
	.init = (void *)olia_init,
	.cong_avoid = (void *)olia_cong_avoid,
	.set_state = (void *)olia_set_state,
	.ssthresh = (void *)olia_ssthresh,
	.undo_cwnd = (void *)olia_undo_cwnd,
	.release = (void *)olia_release,
	.name = CTL_OPS_NAME,
	.flags = CTL_CONG_NON_RESTRICTED,
};
