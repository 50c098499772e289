// SPDX-License-Identifier: GPL-2.0
/*
 * LIA, the Linked Increases Algorithm of MPTCP: RFC 6356 (Raiciu, Handley, Wischik, 2011),
 * as a BPF congestion control coupling the subflows of one MPTCP connection.
 *
 * In congestion avoidance, each ACK of `acked` packets on subflow i grows its window by
 *     min(alpha / w_total, 1 / w_i) packets per packet acked,
 *     alpha = w_total * max_r(w_r / rtt_r^2) / (sum_r w_r / rtt_r)^2          (RFC 6356, sec. 3)
 * A loss halves the subflow's window (Reno). Slow start is Reno's.
 *
 * Implementation: the increase is expressed as tcp_cong_avoid_ai()'s `cnt`, the number of
 * packets acked per window increment: cnt = max(w_i, w_total / alpha), and
 *     w_total / alpha = (sum_r q_r)^2 / w_b,  q_r = w_r * rtt_b / rtt_r,
 * where b maximises w_r / rtt_r^2 (w_total cancels; the rtt unit cancels). q_r is kept with
 * 10 fractional bits: with w <= 2^18 and rtt <= 2^22 us every intermediate fits in 64 bits
 * (q_r <= max(w_r, w_b) because b is the argmax). nodes/congestion/model.py holds the same
 * arithmetic (`lia_cnt`) next to the real-valued equation it approximates.
 *
 * One subflow (or plain TCP): cnt = w_i, which is Reno.
 */
#ifndef CTL_NAME
#define CTL_NAME lia
#endif
#include "ctl_cc.h"

char _license[] SEC("license") = "GPL";

static __always_inline __u32 lia_cnt(const struct ctl_view *v)
{
	__u32 n = v->n > CTL_MAX_SUBFLOWS ? CTL_MAX_SUBFLOWS : v->n;
	__u32 b = 0;
	for (__u32 i = 1; i < CTL_MAX_SUBFLOWS; i++) {
		if (i >= n)
			break;
		__u64 rb = v->rtt[b & 7], ri = v->rtt[i];
		if ((__u64)v->cwnd[i] * rb * rb > (__u64)v->cwnd[b & 7] * ri * ri)
			b = i;
	}
	b &= 7;
	__u64 s = 0;
	for (__u32 i = 0; i < CTL_MAX_SUBFLOWS; i++) {
		if (i >= n)
			break;
		s += (((__u64)v->cwnd[i] << 10) * v->rtt[b]) / v->rtt[i];
	}
	__u64 cnt = (s * s) / ((__u64)v->cwnd[b] << 20);
	__u32 self = v->cwnd[v->self & 7];
	if (cnt < self)
		cnt = self;
	if (cnt > 0xffffffffULL)
		cnt = 0xffffffffULL;
	return cnt ? (__u32)cnt : 1;
}

SEC("struct_ops/lia_init")
void BPF_PROG(lia_init, struct sock *sk)
{
	ctl_init(sk);
}

SEC("struct_ops/lia_cong_avoid")
void BPF_PROG(lia_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = ctl_tp(sk);
	struct ctl_view v = {};
	int coupled = ctl_publish(sk, 0, &v);

	if (!ctl_is_cwnd_limited(sk))
		return;
	if (tp->snd_cwnd < tp->snd_ssthresh) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	if (!coupled)
		ctl_single_view(sk, 0, &v);
	__u32 cnt = lia_cnt(&v);
#ifdef CTL_TRACE
	struct ctl_trace_rec *r = ctl_trace_slot(sk);
	if (r) {
		r->event = CTL_EV_INCREASE;
		r->cwnd_before = tp->snd_cwnd;
		r->ssthresh = tp->snd_ssthresh;
		r->acked = acked;
		r->v = v;
		r->out[0] = cnt;
	}
#endif
	tcp_cong_avoid_ai(tp, cnt, acked);
}

SEC("struct_ops/lia_ssthresh")
__u32 BPF_PROG(lia_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops/lia_undo_cwnd")
__u32 BPF_PROG(lia_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC("struct_ops/lia_release")
void BPF_PROG(lia_release, struct sock *sk)
{
	ctl_release(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops CTL_NAME = {
	.init = (void *)lia_init,
	.cong_avoid = (void *)lia_cong_avoid,
	.ssthresh = (void *)lia_ssthresh,
	.undo_cwnd = (void *)lia_undo_cwnd,
	.release = (void *)lia_release,
	.name = CTL_OPS_NAME,
	.flags = CTL_CONG_NON_RESTRICTED,
};
