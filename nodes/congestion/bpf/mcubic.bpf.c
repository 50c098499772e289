// SPDX-License-Identifier: GPL-2.0
/*
 * MCubic, Multipath Cubic: S. Ro, J. Ryu, J. Choe, "Design and Implementation of MCubic
 * (Multipath Cubic) and Performance Evaluation of Multipath TCP" (the MCubic paper of
 * ../shared/seeds/003_*, section III), as a BPF congestion control coupling the subflows
 * of one MPTCP connection.
 *
 * Each subflow i grows its window on Cubic's curve (paper eq. 10)
 *     W_i(t) = C (t - K^i_mptcp)^3 + W^i_max
 * but with its time to reach W_max stretched by the coupling factor gamma_i (eq. 7, 11):
 *     K_i = cbrt(W^i_max (1 - beta) / C),   gamma_i = K_i * sum_j 1/K_j,
 *     K^i_mptcp = K_i * gamma_i = K_i^2 * sum_j 1/K_j
 * so that the connection's summed growth rate sum 1/K^i_mptcp is at most that of one Cubic
 * flow on the best path (eq. 8, 9), and a loss on one subflow (its K_j shrinking to a new
 * epoch) speeds up the others at once (traffic shift). Slow start and the multiplicative
 * decrease are Cubic's; Cubic's TCP-friendly region is left out, as the paper does (4.1).
 *
 * Constants and choices: C = 0.4 (the paper's implementation value, eq. 10-11); beta = 0.7 as
 * Linux's Cubic (the paper's implementation base, tcp_cubic.c, beta = 717/1024): a loss sets
 * the window to 0.7 W, so K uses (1 - beta) = 0.3 -- the paper's text writes "beta W_max" for
 * the reduced window, which with 0.7 is the same curve; fast convergence on, as in Linux.
 * A subflow whose K is 0 (no loss yet, or growing above its W_max) is left out of the sum and
 * grows as plain Cubic (K_mptcp = 0). Not implemented: HyStart (slow start is standard) and
 * Cubic's idle-period epoch shift (bulk transfers are never idle). Time is in 2^-10 s units
 * (Linux's BICTCP_HZ): t = (now - epoch start + min RTT), from tcp_mstamp (us); |t - K| is
 * capped at 2^17 units (128 s) so C (t - K)^3 = 410 |t - K|^3 >> 40 fits in 64 bits.
 * nodes/congestion/model.py: `mcubic_cnt`.
 */
#define CTL_NAME mcubic
#include "ctl_cc.h"

char _license[] SEC("license") = "GPL";

#define MC_BETA 717                      /* / 1024 */
#define MC_C_SCALED 410                  /* C * 1024 = 0.4 * 1024 (bic_scale 41 * 10) */
#define MC_CUBE_FACTOR ((1ULL << 40) / MC_C_SCALED)
#define MC_MAX_OFFS (1ULL << 17)

struct mcubic {
	__u32 cnt;
	__u32 last_max_cwnd;
	__u32 origin_point;
	__u32 K;                         /* own K_i, 2^-10 s */
	__u32 delay_min;                 /* us */
	__u32 pad;
	__u64 epoch_start;               /* us, 0 = no epoch */
};

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

static __always_inline void mc_reset(struct mcubic *ca)
{
	ca->cnt = 0;
	ca->last_max_cwnd = 0;
	ca->origin_point = 0;
	ca->K = 0;
	ca->delay_min = 0;
	ca->epoch_start = 0;
}

SEC("struct_ops/mcubic_init")
void BPF_PROG(mcubic_init, struct sock *sk)
{
	mc_reset(ctl_priv(sk));
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
	__u64 t = ((now - ca->epoch_start + ca->delay_min) << 10) / 1000000;
	__u64 offs = t < kc ? kc - t : t - kc;
	if (offs > MC_MAX_OFFS)
		offs = MC_MAX_OFFS;
	__u64 delta = (MC_C_SCALED * offs * offs * offs) >> 40;
	__u64 target;
	if (t < kc)
		target = delta >= ca->origin_point ? 0 : ca->origin_point - delta;
	else
		target = ca->origin_point + delta;
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
	ca->cnt = (__u32)cnt;
#ifdef CTL_TRACE
	struct ctl_trace_rec *r = ctl_trace_slot();
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
		r->out[0] = ca->cnt;
		r->out[1] = (__s64)kc;
		r->out[2] = (__s64)target;
	}
#endif
	tcp_cong_avoid_ai(tp, ca->cnt, acked);
}

SEC("struct_ops/mcubic_pkts_acked")
void BPF_PROG(mcubic_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct mcubic *ca = ctl_priv(sk);
	if (sample->rtt_us < 0)
		return;
	__u32 d = sample->rtt_us ? (__u32)sample->rtt_us : 1;
	if (!ca->delay_min || ca->delay_min > d)
		ca->delay_min = d;
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
	if (new_state == TCP_CA_Loss)
		mc_reset(ctl_priv(sk));
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
struct tcp_congestion_ops mcubic = {
	.init = (void *)mcubic_init,
	.cong_avoid = (void *)mcubic_cong_avoid,
	.pkts_acked = (void *)mcubic_pkts_acked,
	.ssthresh = (void *)mcubic_ssthresh,
	.set_state = (void *)mcubic_set_state,
	.undo_cwnd = (void *)mcubic_undo_cwnd,
	.release = (void *)mcubic_release,
	.name = CTL_OPS_NAME("mcubic"),
	.flags = CTL_CONG_NON_RESTRICTED,
};
