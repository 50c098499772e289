/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bbr3 (bbr3.bpf.c, which includes this header once): the trace of a test build (-DCTL_TRACE).
 * Every call of an entry point records its event, socket, inputs, outputs and the state before
 * and after in the map bbr3_trace; nodes/congestion/trace_bbr3.py reads it and replays it
 * through nodes/congestion/model_bbr3.py. Without CTL_TRACE this header defines nothing.
 */
#ifndef CTL_BBR3_TRACE_H
#define CTL_BBR3_TRACE_H

#ifdef CTL_TRACE
#ifndef CTL_TRACE_LEN
#define CTL_TRACE_LEN 32768
#endif
struct b3_trace_rec {
	__u32 seq;
	__u32 event;                    /* B3_EV_* */
	__u64 sk;                       /* the socket's address: tells connections apart */
	struct b3_in in;
	struct b3_out out;
	struct bbr3 before;
	struct bbr3 after;
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CTL_TRACE_LEN);
	__type(key, __u32);
	__type(value, struct b3_trace_rec);
} CTL_MAP(_trace) SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} CTL_MAP(_tidx) SEC(".maps");

static __always_inline struct b3_trace_rec *b3_trace_begin(struct sock *sk, __u32 event, struct bbr3 *b)
{
	__u32 zero = 0, *idx = bpf_map_lookup_elem(&CTL_MAP(_tidx), &zero);
	if (!idx)
		return 0;
	__u32 n = __sync_fetch_and_add(idx, 1);
	if (n >= CTL_TRACE_LEN)
		return 0;               /* full: the test reads what fits */
	struct b3_trace_rec *r = bpf_map_lookup_elem(&CTL_MAP(_trace), &n);
	if (!r)
		return 0;
	r->seq = n + 1;
	r->event = event;
	r->sk = (__u64)sk;
	r->before = *b;
	return r;
}

static __always_inline void b3_trace_end(struct b3_trace_rec *r, struct bbr3 *b, struct b3_ctx *c)
{
	if (!r)
		return;
	r->in = c->i;
	r->out = c->o;
	r->after = *b;
}
#endif

#endif
