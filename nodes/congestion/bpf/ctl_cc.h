/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every ctl congestion control shares: the kernel functions it calls, the per-connection
 * coupling map that lets the subflows of one MPTCP connection see each other, and (in a test
 * build, -DCTL_TRACE) the trace of every window decision, which the test suite replays through
 * the Python reference model (nodes/congestion/model.py).
 *
 * Coupling: a subflow's tcp_sock has is_mptcp set and its icsk_ulp_data points at its
 * struct mptcp_subflow_context; read through bpf_rdonly_cast, that gives the connection's
 * socket (`conn`, the map key) and the subflow's `subflow_id` (its slot, modulo
 * CTL_MAX_SUBFLOWS). Each subflow writes its own slot before every decision and reads its
 * siblings' slots. The reads are untrusted and two subflows may update concurrently: a window
 * computation tolerates a sibling's value being one ACK old. `.release` clears the slot and
 * the last subflow deletes the entry.
 *
 * Each algorithm file defines CTL_NAME (its map name prefix) before including this header.
 */
#ifndef CTL_CC_H
#define CTL_CC_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define CTL_MAX_SUBFLOWS 8
#define CTL_SLOT(id) (((id) - 1) & (CTL_MAX_SUBFLOWS - 1))
/* Bounds that keep every product in 64 bits (see each algorithm): a window of at most 2^18
 * packets and an RTT of at most 2^22 us (4.2 s) are far beyond any rack. */
#define CTL_MAX_CWND (1U << 18)
#define CTL_MAX_RTT_US (1U << 22)

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

#define CTL_CAT2(a, b) a##b
#define CTL_CAT(a, b) CTL_CAT2(a, b)
#define CTL_MAP(suffix) CTL_CAT(CTL_NAME, suffix)

struct ctl_slot {
	__u32 cwnd;     /* packets */
	__u32 rtt_us;   /* smoothed RTT (srtt_us >> 3), 0 = no sample yet */
	__u64 aux;      /* the algorithm's per-subflow quantity its siblings need */
	__u32 active;   /* 1 while the subflow exists */
	__u32 id;       /* subflow_id */
};

struct ctl_conn {
	__u32 token;
	__u32 pad;
	struct ctl_slot s[CTL_MAX_SUBFLOWS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct ctl_conn);
} CTL_MAP(_conns) SEC(".maps");

/* The view of the connection a decision was made from (copied out of the map once). */
struct ctl_view {
	__u32 n;                        /* active subflows with an RTT sample */
	__u32 self;                     /* index of the deciding subflow in the arrays below */
	__u32 cwnd[CTL_MAX_SUBFLOWS];
	__u32 rtt[CTL_MAX_SUBFLOWS];
	__u64 aux[CTL_MAX_SUBFLOWS];
};

#ifdef CTL_TRACE
#define CTL_TRACE_LEN 16384
struct ctl_trace_rec {
	__u32 seq;
	__u32 event;                    /* CTL_EV_* */
	__u32 cwnd_before;
	__u32 ssthresh;
	__u32 acked;
	__u32 pad;                      /* wvegas: queue_delay before the round */
	struct ctl_view v;
	__s64 in[4];                    /* algorithm inputs beyond the view (own state) */
	__s64 out[4];                   /* what the algorithm decided */
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CTL_TRACE_LEN);
	__type(key, __u32);
	__type(value, struct ctl_trace_rec);
} CTL_MAP(_trace) SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} CTL_MAP(_tidx) SEC(".maps");

static __always_inline struct ctl_trace_rec *ctl_trace_slot(void)
{
	__u32 zero = 0, *idx = bpf_map_lookup_elem(&CTL_MAP(_tidx), &zero);
	if (!idx)
		return 0;
	__u32 i = __sync_fetch_and_add(idx, 1);
	if (i >= CTL_TRACE_LEN)
		return 0;               /* full: the test reads what fits */
	struct ctl_trace_rec *r = bpf_map_lookup_elem(&CTL_MAP(_trace), &i);
	if (r)
		r->seq = i + 1;
	return r;
}
#endif

enum { CTL_EV_INCREASE = 1, CTL_EV_SSTHRESH = 2, CTL_EV_ROUND = 3 };

/* TCP_CONG_NON_RESTRICTED (include/net/tcp.h; a #define, so not in vmlinux.h): any socket may
 * select the algorithm and a network namespace other than the initial one may make it its
 * default (net.ipv4.tcp_congestion_control). A virtual rack's hosts are such namespaces, and
 * the BitTorrent step's client picks no algorithm per connection: it runs the host's default. */
#define CTL_CONG_NON_RESTRICTED 0x1

/* The name the kernel registers: a test build is "<name>_trace", so it never meets a real
 * run's algorithm of the same name on a shared kernel. */
#ifdef CTL_TRACE
#define CTL_OPS_NAME(n) n "_trace"
#else
#define CTL_OPS_NAME(n) n
#endif

static __always_inline struct tcp_sock *ctl_tp(struct sock *sk) { return (struct tcp_sock *)sk; }

static __always_inline void *ctl_priv(struct sock *sk)
{
	return (void *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline __u32 ctl_min_u32(__u32 a, __u32 b) { return a < b ? a : b; }
static __always_inline __u32 ctl_max_u32(__u32 a, __u32 b) { return a > b ? a : b; }

/* tcp_is_cwnd_limited() of include/net/tcp.h (inline there, so not a kfunc). */
static __always_inline int ctl_is_cwnd_limited(struct sock *sk)
{
	struct tcp_sock *tp = ctl_tp(sk);
	if (tp->snd_cwnd < tp->snd_ssthresh)
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return tp->is_cwnd_limited;
}

/* The subflow's connection key and slot, or 0 when the socket is plain TCP. */
static __always_inline __u64 ctl_conn_key(struct sock *sk, __u32 *slot, __u32 *token)
{
	struct tcp_sock *tp = ctl_tp(sk);
	if (!tp->is_mptcp)
		return 0;
	void *ulp = ((struct inet_connection_sock *)sk)->icsk_ulp_data;
	if (!ulp)
		return 0;
	struct mptcp_subflow_context *sf =
		bpf_rdonly_cast(ulp, bpf_core_type_id_kernel(struct mptcp_subflow_context));
	__u64 key = (__u64)sf->conn;
	*slot = CTL_SLOT(sf->subflow_id);
	*token = sf->token;
	return key;
}

static __always_inline __u32 ctl_clamp_cwnd(__u32 w) { return w > CTL_MAX_CWND ? CTL_MAX_CWND : w; }
static __always_inline __u32 ctl_clamp_rtt(__u32 r) { return r > CTL_MAX_RTT_US ? CTL_MAX_RTT_US : r; }

/* Publish this subflow's state into the connection entry and copy out the view every
 * decision is computed from. Returns 0 for plain TCP (the caller behaves as its uncoupled
 * counterpart), 1 otherwise. */
static __always_inline int ctl_publish(struct sock *sk, __u64 aux, struct ctl_view *v)
{
	struct tcp_sock *tp = ctl_tp(sk);
	__u32 slot = 0, token = 0;
	__u64 key = ctl_conn_key(sk, &slot, &token);
	if (!key)
		return 0;
	struct ctl_conn *c = bpf_map_lookup_elem(&CTL_MAP(_conns), &key);
	if (!c) {
		struct ctl_conn zero = {};
		zero.token = token;
		bpf_map_update_elem(&CTL_MAP(_conns), &key, &zero, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&CTL_MAP(_conns), &key);
		if (!c)
			return 0;
	}
	slot &= CTL_MAX_SUBFLOWS - 1;
	c->s[slot].cwnd = ctl_clamp_cwnd(tp->snd_cwnd);
	c->s[slot].rtt_us = ctl_clamp_rtt(tp->srtt_us >> 3);
	c->s[slot].aux = aux;
	c->s[slot].active = 1;
	__u32 n = 0;
	v->self = CTL_MAX_SUBFLOWS;
	for (int i = 0; i < CTL_MAX_SUBFLOWS; i++) {
		if (!c->s[i].active || !c->s[i].rtt_us || !c->s[i].cwnd)
			continue;
		if (i == slot)
			v->self = n;
		v->cwnd[n & (CTL_MAX_SUBFLOWS - 1)] = c->s[i].cwnd;
		v->rtt[n & (CTL_MAX_SUBFLOWS - 1)] = c->s[i].rtt_us;
		v->aux[n & (CTL_MAX_SUBFLOWS - 1)] = c->s[i].aux;
		n++;
	}
	v->n = n;
	return v->self < CTL_MAX_SUBFLOWS;
}

/* A standalone view of this socket alone (plain TCP, or a subflow without an RTT yet). */
static __always_inline void ctl_single_view(struct sock *sk, __u64 aux, struct ctl_view *v)
{
	struct tcp_sock *tp = ctl_tp(sk);
	v->n = 1;
	v->self = 0;
	v->cwnd[0] = ctl_clamp_cwnd(tp->snd_cwnd);
	v->rtt[0] = ctl_clamp_rtt(tp->srtt_us >> 3) ? : 1;
	v->aux[0] = aux;
}

static __always_inline void ctl_release(struct sock *sk)
{
	__u32 slot = 0, token = 0;
	__u64 key = ctl_conn_key(sk, &slot, &token);
	if (!key)
		return;
	struct ctl_conn *c = bpf_map_lookup_elem(&CTL_MAP(_conns), &key);
	if (!c)
		return;
	slot &= CTL_MAX_SUBFLOWS - 1;
	c->s[slot].active = 0;
	c->s[slot].cwnd = 0;
	c->s[slot].rtt_us = 0;
	for (int i = 0; i < CTL_MAX_SUBFLOWS; i++)
		if (c->s[i].active)
			return;
	bpf_map_delete_elem(&CTL_MAP(_conns), &key);
}

#endif
