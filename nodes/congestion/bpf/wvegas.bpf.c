// SPDX-License-Identifier: GPL-2.0
/*
 * wVegas, weighted Vegas: Y. Cao, M. Xu, X. Fu, "Delay-based Congestion Control for Multipath
 * TCP", IEEE ICNP 2012, as a BPF congestion control coupling the subflows of one MPTCP
 * connection.
 *
 * Once per round trip (when the ACK passes the snd_nxt recorded at the round's start), with
 * rtt the mean RTT sampled in the round, base the smallest RTT ever seen and
 *     diff_r = w_r (rtt - base) / rtt              (packets this subflow keeps queued)
 * the subflow keeps diff_r near its share alpha_r of a connection-wide budget:
 *     if diff_r >= alpha_r:  weight_r = x_r / sum_k x_k (x = w / rtt),
 *                            alpha_r = max(2, weight_r * total_alpha)
 *     w_r -= 1 if diff_r > alpha_r;  w_r += 1 if diff_r < alpha_r
 * and drains a standing queue: with q = rtt - base and q_min the smallest q seen since the
 * last drain, if q >= 2 q_min then w_r *= base / (2 rtt). Slow start ends early when
 * diff_r > gamma. Loss: Reno halving. Outside TCP_CA_Open, or with fewer than three RTT samples
 * in the round, it behaves as Reno.
 *
 * Constants, as in the authors' Linux implementation (mptcp_wvegas.c): initial alpha 2,
 * total_alpha 10 (packets queued by the whole connection), gamma 1; weights and rates have
 * 16 fractional bits. nodes/congestion/model.py: `wvegas_round`.
 */
#ifndef CTL_NAME
#define CTL_NAME wvegas
#endif
#include "ctl_cc.h"

char _license[] SEC("license") = "GPL";

#define WV_SCALE 16
#define WV_INITIAL_ALPHA 2
#define WV_TOTAL_ALPHA 10
#define WV_GAMMA 1

struct wvegas {
	__u32 beg_snd_nxt;
	__u32 doing;           /* this round is a wVegas round (CA state Open) */
	__u32 cnt_rtt;
	__u32 base_rtt;        /* us; 0x7fffffff = none yet */
	__u64 sampled_rtt;     /* sum of this round's samples, us */
	__u64 instant_rate;    /* w / rtt, 2^-16 packets per us; published to the siblings */
	__u64 weight;          /* 2^-16 */
	__u32 alpha;
	__u32 queue_delay;     /* us */
};
CTL_PRIV_FITS(struct wvegas);

struct wv_ctx {
	struct ctl_view v;
	__u64 total;
	int coupled;
};

/* The siblings' rates (this subflow's own slot is replaced by its fresh rate by the caller). */
static long wv_pass_total(__u32 i, void *data)
{
	struct wv_ctx *c = data;
	if (i >= c->v.n)
		return 1;
	if (i != c->v.self)
		c->total += c->v.aux[i & 7];
	return 0;
}

static __always_inline void wv_enable(struct sock *sk)
{
	struct wvegas *ca = ctl_priv(sk);
	ca->doing = 1;
	ca->beg_snd_nxt = ctl_tp(sk)->snd_nxt;
	ca->cnt_rtt = 0;
	ca->sampled_rtt = 0;
	ca->instant_rate = 0;
	ca->alpha = WV_INITIAL_ALPHA;
	ca->weight = 1ULL << WV_SCALE;
	ca->queue_delay = 0;
}

SEC("struct_ops/wvegas_init")
void BPF_PROG(wvegas_init, struct sock *sk)
{
	ctl_init(sk);
	struct wvegas *ca = ctl_priv(sk);
	ca->base_rtt = 0x7fffffff;
	wv_enable(sk);
}

SEC("struct_ops/wvegas_pkts_acked")
void BPF_PROG(wvegas_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct wvegas *ca = ctl_priv(sk);
	if (sample->rtt_us < 0)
		return;
	__u32 vrtt = (__u32)sample->rtt_us + 1;
	if (vrtt < ca->base_rtt)
		ca->base_rtt = vrtt;
	ca->sampled_rtt += vrtt;
	ca->cnt_rtt++;
}

SEC("struct_ops/wvegas_set_state")
void BPF_PROG(wvegas_set_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Open)
		wv_enable(sk);
	else
		((struct wvegas *)ctl_priv(sk))->doing = 0;
}

SEC("struct_ops/wvegas_cwnd_event")
void BPF_PROG(wvegas_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct wvegas *ca = ctl_priv(sk);
	if (ev == CA_EVENT_CWND_RESTART) {
		ca->base_rtt = 0x7fffffff;
		wv_enable(sk);
	} else if (ev == CA_EVENT_LOSS) {
		ca->instant_rate = 0;
	}
}

static __always_inline __u32 wv_current_ssthresh(struct sock *sk)
{
	struct tcp_sock *tp = ctl_tp(sk);
	__u8 st = ((struct inet_connection_sock *)sk)->icsk_ca_state;
	if (st == TCP_CA_CWR || st == TCP_CA_Recovery)
		return tp->snd_ssthresh;
	return ctl_max_u32(tp->snd_ssthresh, (tp->snd_cwnd >> 1) + (tp->snd_cwnd >> 2));
}

/* One wVegas round: the window (and alpha, weight, queue_delay) after it. */
static __always_inline void wv_round(struct sock *sk, struct wvegas *ca, __u32 acked, struct wv_ctx *c)
{
	struct tcp_sock *tp = ctl_tp(sk);
	__u32 rtt = (__u32)(ca->sampled_rtt / ca->cnt_rtt);
	__u32 base = ca->base_rtt;
	__u32 w = tp->snd_cwnd, ss = tp->snd_ssthresh, alpha_before = ca->alpha;
	__u32 q = rtt > base ? rtt - base : 0;
	__u32 diff = (__u32)(((__u64)w * q) / (rtt ? rtt : 1));
	__u64 total = 0, weight_before = ca->weight;
	__u32 qd_before = ca->queue_delay;

	if (diff > WV_GAMMA && w < ss) {
		__u32 target = (__u32)(((__u64)w * base) / (rtt ? rtt : 1));
		tp->snd_cwnd = ctl_min_u32(w, target + 1);
		tp->snd_ssthresh = ctl_min_u32(ss, tp->snd_cwnd - 1);
	} else if (w < ss) {
		tcp_slow_start(tp, acked);
	} else {
		if (diff >= ca->alpha) {
			ca->instant_rate = ((__u64)w << WV_SCALE) / (rtt ? rtt : 1);
			/* the siblings' rates as last published, and this subflow's fresh one (published
			 * into the map at its next ACK) */
			total = ca->instant_rate;
			if (c->coupled) {
				c->total = 0;
				bpf_loop(CTL_MAX_SUBFLOWS, wv_pass_total, c, 0);
				total += c->total;
				c->v.aux[c->v.self & 7] = ca->instant_rate;
			}
			if (total && ca->instant_rate)
				ca->weight = (ca->instant_rate << WV_SCALE) / total;
			ca->alpha = ctl_max_u32(2, (__u32)((ca->weight * WV_TOTAL_ALPHA) >> WV_SCALE));
		}
		if (diff > ca->alpha) {
			tp->snd_cwnd = w - 1;
			tp->snd_ssthresh = ctl_min_u32(tp->snd_ssthresh, tp->snd_cwnd - 1);
		} else if (diff < ca->alpha) {
			tp->snd_cwnd = w + 1;
		}
		if (ca->queue_delay == 0 || ca->queue_delay > q)
			ca->queue_delay = q;
		if (q >= 2 * ca->queue_delay) {
			__u64 backoff = ((__u64)base << WV_SCALE) / (2ULL * (rtt ? rtt : 1));
			tp->snd_cwnd = (__u32)(((__u64)tp->snd_cwnd * backoff) >> WV_SCALE);
			ca->queue_delay = 0;
		}
	}
	if (tp->snd_cwnd < 2)
		tp->snd_cwnd = 2;
	else if (tp->snd_cwnd > tp->snd_cwnd_clamp)
		tp->snd_cwnd = tp->snd_cwnd_clamp;
	tp->snd_ssthresh = wv_current_ssthresh(sk);
#ifdef CTL_TRACE
	struct ctl_trace_rec *r = ctl_trace_slot(sk);
	if (r) {
		r->event = CTL_EV_ROUND;
		r->cwnd_before = w;
		r->ssthresh = ss;
		r->acked = acked;
		r->pad = qd_before;
		r->v = c->v;
		r->in[0] = rtt;
		r->in[1] = base;
		r->in[2] = alpha_before;
		r->in[3] = (__s64)weight_before;
		r->out[0] = tp->snd_cwnd;
		r->out[1] = tp->snd_ssthresh;
		r->out[2] = ca->alpha;
		r->out[3] = (__s64)ca->weight;
	}
#endif
}

SEC("struct_ops/wvegas_cong_avoid")
void BPF_PROG(wvegas_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = ctl_tp(sk);
	struct wvegas *ca = ctl_priv(sk);
	struct wv_ctx c = {};

	c.coupled = ctl_publish(sk, ca->instant_rate, &c.v);   /* keeps the siblings' view of it fresh */
	if (!ca->doing) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	if ((__s32)(ca->beg_snd_nxt - ack) < 0) {     /* after(ack, beg_snd_nxt): a round ended */
		ca->beg_snd_nxt = tp->snd_nxt;
		if (ca->cnt_rtt <= 2)
			tcp_reno_cong_avoid(sk, ack, acked);
		else
			wv_round(sk, ca, acked, &c);
		ca->cnt_rtt = 0;
		ca->sampled_rtt = 0;
	} else if (tp->snd_cwnd < tp->snd_ssthresh) {
		tcp_slow_start(tp, acked);
	}
}

SEC("struct_ops/wvegas_ssthresh")
__u32 BPF_PROG(wvegas_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops/wvegas_undo_cwnd")
__u32 BPF_PROG(wvegas_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC("struct_ops/wvegas_release")
void BPF_PROG(wvegas_release, struct sock *sk)
{
	ctl_release(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops CTL_NAME = {
	.init = (void *)wvegas_init,
	.cong_avoid = (void *)wvegas_cong_avoid,
	.pkts_acked = (void *)wvegas_pkts_acked,
	.set_state = (void *)wvegas_set_state,
	.cwnd_event = (void *)wvegas_cwnd_event,
	.ssthresh = (void *)wvegas_ssthresh,
	.undo_cwnd = (void *)wvegas_undo_cwnd,
	.release = (void *)wvegas_release,
	.name = CTL_OPS_NAME,
	.flags = CTL_CONG_NON_RESTRICTED,
};
