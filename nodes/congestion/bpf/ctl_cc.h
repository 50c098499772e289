/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every ctl congestion control shares: the kernel functions it calls, the per-connection
 * coupling map that lets the subflows of one MPTCP connection see each other, and (in a test
 * build, -DCTL_TRACE) the trace of every window decision, which the test suite replays through
 * the Python reference model (nodes/congestion/model.py).
 *
 * Coupling: a subflow's tcp_sock has is_mptcp set and its icsk_ulp_data points at its
 * struct mptcp_subflow_context; read through bpf_rdonly_cast, that gives the connection's
 * socket (`conn`, the map key), the connection's `token` and the subflow's `subflow_id` (its
 * slot, modulo CTL_MAX_SUBFLOWS). Each subflow writes its own slot before every decision and
 * reads its siblings' slots. The reads are untrusted and two subflows may update concurrently:
 * a window computation tolerates a sibling's value being one ACK old.
 *
 * A map that cannot lie about who is in the connection:
 * - the entry holds the connection's token and every lookup compares it: an entry with another
 *   token belongs to a dead connection whose address was reused: the first subflow of the new
 *   connection to publish takes it over; each slot holds the token of the subflow that wrote
 *   it, and only slots of the entry's token are read, so a dead connection's slots are never seen;
 * - a subflow keeps the key, token and slot it published under in the last 16 bytes of its own
 *   private congestion-control area (`struct ctl_link`, after the algorithm's state), so it can
 *   leave the entry on every way it goes: `.release` (close, destroy, tcp_disconnect, another
 *   congestion control chosen), and a fallback to plain TCP noticed at its next decision
 *   (is_mptcp cleared or its ulp data gone: the key cannot be read any more, the link still has
 *   it), and a close (the subflow sent its FIN) noticed at its next decision. A subflow that
 *   left never couples again. TCP_CA_Loss is not leaving;
 * - a subflow's slot is its subflow id modulo CTL_MAX_SUBFLOWS, and the slot keeps the id: a subflow
 *   whose slot a live sibling holds (ids 8 apart: a 9th subflow of a connection whose first is still
 *   there) is refused coupling for good and counted in `<short>_clash` (hostctl reports the count
 *   as `coupling_refused`, the run records it as a warning), never merged into the sibling's slot;
 * - a subflow links only once it has a subflow id (0 until the connection has taken a passive
 *   MP_JOIN subflow in: net/mptcp/protocol.c, __mptcp_finish_join(), which may be deferred), and
 *   the count is per subflow, not per slot: should its id change anyway, its slot moves;
 * - the entry counts its linked subflows (`nactive`), and the count and the token are one 64-bit
 *   word changed only by compare-and-swap: a subflow joins only a live entry of its own token
 *   (count above 0), the one that takes the count from 1 to 0 deletes the entry, and nobody joins
 *   a count of 0. A hash map reuses a deleted element at once (kernel/bpf/hashtab.c,
 *   free_htab_elem: the preallocated freelist, or bpf_mem_cache_free without BPF_F_NO_PREALLOC),
 *   so a pointer from a lookup may point into another connection's entry by the time it is
 *   used: the compare-and-swap on the token and the count refuses it, and a linked subflow's
 *   entry cannot be deleted under it (it is counted). After the last connection closes the map
 *   is empty (the tests and every run check that before unloading).
 * - `ctl_linked` counts the subflows of the whole kernel linked to an entry, and `<short>_socks`
 *   holds each of them by its socket address (with its link); removing that element is what
 *   takes a subflow out of `ctl_linked`, and the compare-and-swap of its slot's socket address
 *   (`sk`) to 0 is what takes it out of the entry's count: each exactly once, whoever does it.
 * - A subflow can go away without `.release`: on 6.18, under churn, 0.3-2 % of the connections
 *   had one (server and client side; last seen in CLOSE_WAIT/LAST_ACK or FIN_WAIT1). Traced with
 *   tracepoints (fentry is refused on that kernel, kprobes are not built in): for those sockets
 *   `tcp:tcp_destroy_sock` (in tcp_v4_destroy_sock) was not seen, while it was for every other
 *   linked subflow, nor a pass to TCP_CLOSE (`sock:inet_sock_set_state`), and their
 *   memory becomes a new passive subflow 50-200 ms later (`tcp:tcp_cong_state_set` from
 *   tcp_v4_syn_recv_sock <- subflow_syn_recv_sock <- tcp_check_req). The kernel calls `.release`
 *   only from tcp_cleanup_congestion_control (destroy, another algorithm) and tcp_disconnect (and
 *   there only while icsk_ca_initialized is set), and none came for them; which function frees
 *   them was not identified (and the struct_ops was freed after those runs, so no socket kept a
 *   reference to it: the picture is not complete). The program therefore finds them itself
 *   (ctl_gone: the socket's reference count is 0, or its private area no longer holds that
 *   link) whenever a socket starts
 *   (`.init`) or stops (`.release`) running the algorithm (ctl_reap_all, a cost per socket in the
 *   number of subflows linked then, never per ACK), and when a subflow links in memory where a
 *   linked one was (ctl_reap_own); it counts them in `ctl_dead` (hostctl: `subflows_reaped`).
 *   hostctl runs one `.release` before counting the entries left (a socket that selects the
 *   algorithm and closes), so after the last connection the map is empty. Until such an event,
 *   a subflow gone this way mid-connection stays in its siblings' coupled view.
 *
 * Each algorithm file defines CTL_NAME (its map name prefix, at most 9 characters, see
 * nodes/congestion/catalog.py) before including this header, unless the build passes
 * -DCTL_NAME=... and -DCTL_ALG=... (a variant built from the same source).
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
#define CTL_STR2(x) #x
#define CTL_STR(x) CTL_STR2(x)
#ifndef CTL_ALG
#define CTL_ALG CTL_NAME
#endif

struct ctl_slot {
	__u32 cwnd;     /* packets */
	__u32 rtt_us;   /* smoothed RTT (srtt_us >> 3), 0 = no sample yet */
	__u64 aux;      /* the algorithm's per-subflow quantity its siblings need */
	__u32 token;    /* the connection of the subflow in the slot, 0 when free: a slot is active
	                 * while it holds the entry's token (a dead connection's slots hold another) */
	__u32 id;       /* subflow_id */
	__u64 sk;       /* the subflow's socket address while it is counted here, 0 once it left: only
	                 * compared, or read through bpf_rdonly_cast (never in a record) */
};

/* token and nactive are one 64-bit word, changed only by compare-and-swap (ctl_join, ctl_leave):
 * nactive counts the subflows linked to the entry (not slot flags), and an entry whose count is
 * 0 is dead: nobody joins it again, and its last subflow deletes it. */
struct ctl_conn {
	__u32 token;
	__u32 nactive;                  /* linked subflows */
	struct ctl_slot s[CTL_MAX_SUBFLOWS];
};

/* Where this subflow published (kept in its own private congestion-control area). */
enum { CTL_LINK_NONE = 0, CTL_LINK_LINKED = 1, CTL_LINK_LEFT = 2 };
struct ctl_link {
	__u64 key;                      /* the connection's socket address */
	__u32 token;
	__u8 slot;
	__u8 state;                     /* CTL_LINK_* */
	__u16 pad;
};
#define CTL_PRIV_SIZE sizeof(((struct inet_connection_sock *)0)->icsk_ca_priv)
#define CTL_LINK_OFF (CTL_PRIV_SIZE - sizeof(struct ctl_link))
/* An algorithm's private state must leave room for the link after it. */
#define CTL_PRIV_FITS(type) _Static_assert(sizeof(type) <= CTL_LINK_OFF, #type " overlaps struct ctl_link")

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct ctl_conn);
} CTL_MAP(_conns) SEC(".maps");

/* Where a new entry is built before it is inserted (one per CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ctl_conn);
} CTL_MAP(_new) SEC(".maps");

/* Subflows refused coupling because their slot was a live sibling's (a 9th subflow id while the
 * subflow 8 ids before it is still active): one counter for the program, read by hostctl before it
 * unregisters the program and recorded with the run (a problem, never a silent merge). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} CTL_MAP(_clash) SEC(".maps");

/* Subflows linked to an entry now, over the whole kernel (changed only when one links or leaves):
 * when the coupling map still has entries while this is 0, no subflow holds them (a phantom);
 * above 0, some subflow of some network namespace still does (hostctl reports it). */
__u32 ctl_linked SEC(".bss");

/* Every linked subflow by its socket address (the key), with where it is linked (its struct
 * ctl_link): one element per linked subflow, inserted when it links; whoever deletes the element
 * takes it out of `ctl_linked` (exactly once, whatever the path). An element found for a socket
 * whose own link does not say so is a subflow whose socket went away without `.release`. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct ctl_link);
} CTL_MAP(_socks) SEC(".maps");

/* Subflows taken out of their connection by another socket because theirs went away without
 * `.release` (its memory reused, or its private area cleared): hostctl reports the count. */
__u32 ctl_dead SEC(".bss");

/* The view of the connection a decision was made from (copied out of the map once). */
struct ctl_view {
	__u32 n;                        /* active subflows with an RTT sample */
	__u32 self;                     /* index of the deciding subflow in the arrays below */
	__u32 cwnd[CTL_MAX_SUBFLOWS];
	__u32 rtt[CTL_MAX_SUBFLOWS];
	__u64 aux[CTL_MAX_SUBFLOWS];
};

#ifdef CTL_TRACE
#ifndef CTL_TRACE_LEN
#define CTL_TRACE_LEN 32768
#endif
struct ctl_trace_rec {
	__u32 seq;
	__u32 event;                    /* CTL_EV_* */
	__u32 cwnd_before;
	__u32 ssthresh;
	__u32 acked;                    /* (HyStart: the RTT sample, us) */
	__u32 pad;                      /* wvegas: queue_delay before the round */
	__u32 token;                    /* the connection this subflow is linked to (0: none) */
	__u32 sub;                      /* its slot in the connection's entry */
	struct ctl_view v;
	__s64 in[12];                   /* algorithm inputs beyond the view (own state) */
	__s64 out[6];                   /* what the algorithm decided */
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

static __always_inline struct ctl_link *ctl_link_of(struct sock *sk);

static __always_inline struct ctl_trace_rec *ctl_trace_slot(struct sock *sk)
{
	__u32 zero = 0, *idx = bpf_map_lookup_elem(&CTL_MAP(_tidx), &zero);
	if (!idx)
		return 0;
	__u32 i = __sync_fetch_and_add(idx, 1);
	if (i >= CTL_TRACE_LEN)
		return 0;               /* full: the test reads what fits */
	struct ctl_trace_rec *r = bpf_map_lookup_elem(&CTL_MAP(_trace), &i);
	if (r) {
		struct ctl_link *l = ctl_link_of(sk);
		r->seq = i + 1;
		r->token = l->state == CTL_LINK_LINKED ? l->token : 0;
		r->sub = l->slot;
	}
	return r;
}
#endif

enum { CTL_EV_INCREASE = 1, CTL_EV_SSTHRESH = 2, CTL_EV_ROUND = 3, CTL_EV_HYSTART = 4,
       CTL_EV_LINK = 5, CTL_EV_UNLINK = 6 };
/* Why a subflow's link changed (trace in[0] of CTL_EV_LINK / CTL_EV_UNLINK). */
enum { CTL_WHY_PUBLISH = 1, CTL_WHY_RESET = 2, CTL_WHY_RELEASE = 3, CTL_WHY_LEAVING = 4,
       CTL_WHY_EVICTED = 5, CTL_WHY_CLASH = 6, CTL_WHY_GONE = 7 };

/* TCP_CONG_NON_RESTRICTED (include/net/tcp.h; a #define, so not in vmlinux.h): any socket may
 * select the algorithm and a network namespace other than the initial one may make it its
 * default (net.ipv4.tcp_congestion_control). A virtual rack's hosts are such namespaces, and
 * the BitTorrent step's client picks no algorithm per connection: it runs the host's default. */
#define CTL_CONG_NON_RESTRICTED 0x1

/* The name the kernel registers: the algorithm's name (CTL_ALG), or for a test build
 * "<CTL_NAME>_trace" (CTL_NAME is at most 9 characters, so this fits the kernel's 15), so it
 * never meets a real run's algorithm on a shared kernel. */
#ifdef CTL_TRACE
#define CTL_OPS_NAME CTL_STR(CTL_NAME) "_trace"
#else
#define CTL_OPS_NAME CTL_STR(CTL_ALG)
#endif

static __always_inline struct tcp_sock *ctl_tp(struct sock *sk) { return (struct tcp_sock *)sk; }

static __always_inline void *ctl_priv(struct sock *sk)
{
	return (void *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline struct ctl_link *ctl_link_of(struct sock *sk)
{
	return (struct ctl_link *)((char *)((struct inet_connection_sock *)sk)->icsk_ca_priv + CTL_LINK_OFF);
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

/* The subflow's connection key, subflow id and token, or 0 when the socket is plain TCP (never an
 * MPTCP subflow, or one that fell back: is_mptcp cleared or its ulp data gone). */
static __always_inline __u64 ctl_conn_key(struct sock *sk, __u32 *sid, __u32 *token)
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
	*sid = sf->subflow_id;
	*token = sf->token;
	return key;
}

static __always_inline __u32 ctl_clamp_cwnd(__u32 w) { return w > CTL_MAX_CWND ? CTL_MAX_CWND : w; }
static __always_inline __u32 ctl_clamp_rtt(__u32 r) { return r > CTL_MAX_RTT_US ? CTL_MAX_RTT_US : r; }

/* A subflow that has closed (FIN sent: FIN_WAIT1/2, CLOSING, LAST_ACK, TIME_WAIT, CLOSE) is
 * leaving its connection, although its socket lives until `.release`. */
static __always_inline int ctl_leaving(struct sock *sk)
{
	__u8 st = sk->__sk_common.skc_state;
	return !(st == TCP_ESTABLISHED || st == TCP_SYN_SENT || st == TCP_SYN_RECV || st == TCP_CLOSE_WAIT);
}

/* The entry's first word: token (low 32 bits in memory order) and count of linked subflows. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define CTL_TN(token, n) ((__u64)(token) | ((__u64)(n) << 32))
#define CTL_TN_TOKEN(w) ((__u32)(w))
#define CTL_TN_N(w) ((__u32)((w) >> 32))
#else
#define CTL_TN(token, n) (((__u64)(token) << 32) | (__u64)(n))
#define CTL_TN_TOKEN(w) ((__u32)((w) >> 32))
#define CTL_TN_N(w) ((__u32)(w))
#endif
#define CTL_CAS_TRIES 64

/* Count this subflow in the entry c, if c is (still) a live entry of connection `token`: the
 * test and the increment are one compare-and-swap, so a pointer to an element that was deleted
 * meanwhile and reused for another connection (a hash map reuses a deleted element at once, with
 * or without BPF_F_NO_PREALLOC: kernel/bpf/hashtab.c, free_htab_elem) or is dying (count 0: its
 * last subflow is deleting it) is refused. With `claim`, an entry of another token (a dead
 * connection's, at a reused address) is taken over: the count restarts at 1. */
static __always_inline int ctl_join(struct ctl_conn *c, __u32 token, int claim)
{
	__u64 *w = (__u64 *)c;
	for (int i = 0; i < CTL_CAS_TRIES; i++) {
		__u64 old = *(volatile __u64 *)w, new;
		if (!CTL_TN_N(old))
			return 0;
		if (CTL_TN_TOKEN(old) == token)
			new = old + CTL_TN(0, 1);
		else if (claim)
			new = CTL_TN(token, 1);
		else
			return 0;
		if (__sync_val_compare_and_swap(w, old, new) == old)
			return 1;
	}
	return 0;
}

/* Take this subflow out of the count of entry c of connection `token`: -1 when c is not (any
 * more) that connection's live entry, 1 when this was the last subflow (the entry is dead and
 * the caller deletes it), 0 otherwise. */
static __always_inline int ctl_leave(struct ctl_conn *c, __u32 token)
{
	__u64 *w = (__u64 *)c;
	for (int i = 0; i < CTL_CAS_TRIES; i++) {
		__u64 old = *(volatile __u64 *)w;
		if (CTL_TN_TOKEN(old) != token || !CTL_TN_N(old))
			return -1;
		if (__sync_val_compare_and_swap(w, old, old - CTL_TN(0, 1)) == old)
			return CTL_TN_N(old) == 1;
	}
	return -1;
}

static __always_inline void ctl_trace_link(struct sock *sk, __u32 event, __u32 why, __s64 found, __s64 deleted)
{
#ifdef CTL_TRACE
	struct ctl_trace_rec *r = ctl_trace_slot(sk);
	if (r) {
		struct ctl_link *l = ctl_link_of(sk);
		r->event = event;
		r->cwnd_before = ctl_tp(sk)->snd_cwnd;
		r->token = l->token;                /* the connection it was or is linked to */
		r->in[0] = why;
		r->in[1] = sk->__sk_common.skc_state;
		r->in[2] = l->state;
		r->out[0] = found;                  /* its entry was there (and its own) */
		r->out[1] = deleted;                /* it was the last subflow: the entry is gone */
	}
#endif
}

/* Clear this subflow's slot in its entry (only if the slot is still its connection's). */
static __always_inline void ctl_clear_slot(struct ctl_conn *c, __u32 slot, __u32 token)
{
	struct ctl_slot *s = &c->s[slot & (CTL_MAX_SUBFLOWS - 1)];
	if (s->token != token)
		return;
	s->token = 0;
	s->cwnd = 0;
	s->rtt_us = 0;
}

/* Remove the element of the subflow at socket address `skaddr` from the linked set: the one
 * whose delete succeeds takes it out of `ctl_linked` (exactly once per link). */
static __always_inline int ctl_forget(__u64 skaddr)
{
	if (bpf_map_delete_elem(&CTL_MAP(_socks), &skaddr))
		return 0;
	__sync_fetch_and_sub(&ctl_linked, 1);
	return 1;
}

/* Take the subflow at socket address `skaddr` out of slot `slot` of entry c: the compare-and-swap
 * of the slot's socket address to 0 is the claim (exactly one caller wins per link), the winner
 * clears the slot. 1 when this caller won (it must then leave the count for that subflow). */
static __always_inline int ctl_claim_slot(struct ctl_conn *c, __u32 slot, __u32 token, __u64 skaddr)
{
	struct ctl_slot *s = &c->s[slot & (CTL_MAX_SUBFLOWS - 1)];
	if (!skaddr || __sync_val_compare_and_swap(&s->sk, skaddr, 0) != skaddr)
		return 0;
	ctl_clear_slot(c, slot, token);
	return 1;
}

/* A subflow found gone without `.release` (its socket freed, or its private area cleared): out
 * of its slot and of its entry's count (the entry deleted when it was the last), counted. */
static __always_inline void ctl_drop_dead(struct ctl_link *d, __u64 skaddr)
{
	__u64 key = d->key;
	int found = 0, last = 0;
	struct ctl_conn *c = bpf_map_lookup_elem(&CTL_MAP(_conns), &key);
	if (c && c->token == d->token && ctl_claim_slot(c, d->slot, d->token, skaddr)) {
		found = 1;
		last = ctl_leave(c, d->token) > 0;
		if (last)
			bpf_map_delete_elem(&CTL_MAP(_conns), &key);
	}
#ifdef CTL_TRACE
	/* the gone subflow's own leaving, recorded for it (token and slot of its link) */
	__u32 zero = 0, *idx = bpf_map_lookup_elem(&CTL_MAP(_tidx), &zero);
	if (!idx)
		return;
	__u32 i = __sync_fetch_and_add(idx, 1);
	struct ctl_trace_rec *r = i < CTL_TRACE_LEN ? bpf_map_lookup_elem(&CTL_MAP(_trace), &i) : 0;
	if (r) {
		r->seq = i + 1;
		r->event = CTL_EV_UNLINK;
		r->token = d->token;
		r->sub = d->slot;
		r->in[0] = CTL_WHY_GONE;
		r->out[0] = found;
		r->out[1] = last;
	}
#endif
}

/* The socket at this address is not (or no longer) the subflow its element says: when the socket
 * links, is (re)initialised or leaves while the element is there and its own link is not that
 * one, the subflow that lived here went away without `.release`: drop it. */
static __always_inline void ctl_reap_own(struct sock *sk)
{
	__u64 self = (__u64)sk;
	struct ctl_link *e = bpf_map_lookup_elem(&CTL_MAP(_socks), &self);
	if (!e)
		return;
	struct ctl_link *l = ctl_link_of(sk), d = *e;
	if (l->state == CTL_LINK_LINKED && l->key == d.key && l->token == d.token)
		return;                         /* its own live link */
	if (!ctl_forget(self))
		return;
	__sync_fetch_and_add(&ctl_dead, 1);
	ctl_drop_dead(&d, self);
}

/* Is the subflow of element (skaddr, d) still there? Its socket is read through bpf_rdonly_cast
 * (untrusted loads that cannot fault; the memory of a TCP socket stays a socket: its slab is
 * SLAB_TYPESAFE_BY_RCU): it went away when its reference count is 0 (freed) or its private area
 * no longer holds this link (cleared, or a new socket in its memory). A subflow that is leaving
 * (its link says LEFT, same connection) is still there: it takes itself out. */
static __always_inline int ctl_gone(__u64 skaddr, struct ctl_link *d)
{
	struct tcp_sock *tp = bpf_rdonly_cast((void *)skaddr, bpf_core_type_id_kernel(struct tcp_sock));
	struct ctl_link *sl = (struct ctl_link *)((char *)tp->inet_conn.icsk_ca_priv + CTL_LINK_OFF);
	if (!tp->inet_conn.icsk_inet.sk.__sk_common.skc_refcnt.refs.counter)
		return 1;
	return sl->state == CTL_LINK_NONE || sl->key != d->key || sl->token != d->token;
}

static long ctl_reap_one(struct bpf_map *map, __u64 *skaddr, struct ctl_link *e, void *data)
{
	__u64 p = *skaddr;
	struct ctl_link d = *e;
	if (!ctl_gone(p, &d) || !ctl_forget(p))
		return 0;
	__sync_fetch_and_add(&ctl_dead, 1);
	ctl_drop_dead(&d, p);
	return 0;
}

/* Drop every linked subflow of the kernel whose socket went away without `.release`: run when a
 * socket starts or stops running the algorithm (a cost per socket, in the number of subflows
 * linked at that moment; never per ACK), so once the last connection has closed no such
 * subflow stays in the map. */
static __always_inline void ctl_reap_all(void)
{
	bpf_for_each_map_elem(&CTL_MAP(_socks), ctl_reap_one, 0, 0);
}

/* This subflow leaves the connection entry it is linked to (its slot cleared; the last subflow
 * deletes the entry) and never couples again. An entry that another connection took over
 * (another token) is not touched. */
static __always_inline void ctl_unlink(struct sock *sk, __u32 why)
{
	struct ctl_link *l = ctl_link_of(sk);
	if (l->state != CTL_LINK_LINKED) {
		l->state = CTL_LINK_LEFT;
		return;
	}
	__u64 key = l->key, self = (__u64)sk;
	l->state = CTL_LINK_LEFT;
	ctl_forget(self);
	struct ctl_conn *c = bpf_map_lookup_elem(&CTL_MAP(_conns), &key);
	if (!c || c->token != l->token) {
		ctl_trace_link(sk, CTL_EV_UNLINK, why, 0, 0);
		return;
	}
	/* Its slot: claimed by compare-and-swap like a gone subflow's (exactly one taker). */
	if (!ctl_claim_slot(c, l->slot, l->token, self)) {
		ctl_trace_link(sk, CTL_EV_UNLINK, why, 0, 0);
		return;
	}
	/* The last subflow deletes the entry. Not by scanning the siblings' flags: two subflows
	 * closing at once on two CPUs could each still see the other's flag set (a store may wait in
	 * the store buffer past a later load, even on x86) and neither would delete; the count,
	 * changed by compare-and-swap with the token, gives exactly one of them the 1 -> 0 step, and
	 * from 0 nobody joins again (ctl_join), so the delete removes this very element. */
	int last = ctl_leave(c, l->token);
	if (last > 0)
		bpf_map_delete_elem(&CTL_MAP(_conns), &key);
	ctl_trace_link(sk, CTL_EV_UNLINK, why, last >= 0, last > 0);
}

/* Publish this subflow's state into the connection entry and copy out the view every
 * decision is computed from. Returns 0 for plain TCP, a subflow that left its connection or
 * one without an RTT sample yet (the caller behaves as its uncoupled counterpart), 1
 * otherwise. */
static __always_inline int ctl_publish(struct sock *sk, __u64 aux, struct ctl_view *v)
{
	struct tcp_sock *tp = ctl_tp(sk);
	struct ctl_link *l = ctl_link_of(sk);
	__u32 sid = 0, token = 0;
	if (l->state == CTL_LINK_LEFT)
		return 0;
	__u64 key = ctl_leaving(sk) ? 0 : ctl_conn_key(sk, &sid, &token);
	__u32 slot = CTL_SLOT(sid);
	if (l->state == CTL_LINK_LINKED && (key != l->key || token != l->token)) {
		ctl_unlink(sk, CTL_WHY_LEAVING); /* closing, fell back to TCP, or no longer that connection's */
		return 0;
	}
	/* subflow_id 0: a passive MP_JOIN subflow the connection has not taken in yet
	 * (net/mptcp/protocol.c, __mptcp_finish_join() gives it its id, deferred to the release
	 * callback while the connection's socket is owned by a reader): no slot yet. */
	if (!key || !token || !sid)
		return 0;
	slot &= CTL_MAX_SUBFLOWS - 1;
	if (l->state != CTL_LINK_LINKED)
		ctl_reap_own(sk);               /* once per link: a dead subflow in this memory */
	struct ctl_conn *c = bpf_map_lookup_elem(&CTL_MAP(_conns), &key);
	if (l->state == CTL_LINK_LINKED) {
		/* counted in the entry: it cannot die before this subflow leaves, so it is there with
		 * this token unless a new connection at a reused address took it over (we are stale) */
		if (!c || c->token != token) {
			l->state = CTL_LINK_LEFT;
			ctl_forget((__u64)sk);
			ctl_trace_link(sk, CTL_EV_UNLINK, CTL_WHY_EVICTED, 0, 0);
			return 0;
		}
		if (slot != l->slot) {          /* its subflow id changed: move (still counted once) */
			if (!ctl_claim_slot(c, l->slot, token, (__u64)sk)) {
				l->state = CTL_LINK_LEFT;   /* a sibling took it out: it cannot be, but be exact */
				ctl_forget((__u64)sk);
				return 0;
			}
			c->s[slot].sk = (__u64)sk;
			l->slot = slot;
			struct ctl_link *e = bpf_map_lookup_elem(&CTL_MAP(_socks), &(__u64){(__u64)sk});
			if (e)
				e->slot = slot;
		}
	} else {
		__u32 why = CTL_WHY_PUBLISH;
		if (!c) {
			/* the new entry is built in a per-CPU scratch value (too big for the BPF stack) */
			__u32 zero = 0;
			struct ctl_conn *first = bpf_map_lookup_elem(&CTL_MAP(_new), &zero);
			if (!first)
				return 0;
			__builtin_memset(first, 0, sizeof(*first));
			first->token = token;
			first->nactive = 1;             /* this subflow, counted from the start */
			first->s[slot].token = token;
			first->s[slot].sk = (__u64)sk;
			if (!bpf_map_update_elem(&CTL_MAP(_conns), &key, first, BPF_NOEXIST)) {
				c = bpf_map_lookup_elem(&CTL_MAP(_conns), &key);
				goto linked;            /* counted: it lives until this subflow leaves */
			}
			c = bpf_map_lookup_elem(&CTL_MAP(_conns), &key);   /* a sibling created it first */
			if (!c)
				return 0;
		}
		if (c->token != token) {
			why = CTL_WHY_RESET;            /* a dead connection's leftovers at a reused address */
		} else if (c->s[slot].token == token && c->s[slot].id != sid && c->s[slot].sk) {
			/* The slot is a live sibling's (subflow ids 8 apart): coupling here would merge two
			 * subflows into one. Refused for good: this subflow runs uncoupled, counted. */
			__u32 zero = 0, *clash = bpf_map_lookup_elem(&CTL_MAP(_clash), &zero);
			if (clash)
				__sync_fetch_and_add(clash, 1);
			l->key = key;
			l->token = token;
			l->slot = slot;
			l->state = CTL_LINK_LEFT;
			ctl_trace_link(sk, CTL_EV_UNLINK, CTL_WHY_CLASH, 1, 0);
			return 0;
		}
		if (!ctl_join(c, token, 1))
			return 0;                       /* dying, or reused meanwhile: next time */
		c->s[slot].sk = (__u64)sk;
linked:
		__sync_fetch_and_add(&ctl_linked, 1);
		l->key = key;
		l->token = token;
		l->slot = slot;
		l->state = CTL_LINK_LINKED;
		struct ctl_link mine = *l;
		bpf_map_update_elem(&CTL_MAP(_socks), &(__u64){(__u64)sk}, &mine, BPF_ANY);
		ctl_trace_link(sk, CTL_EV_LINK, why, 1, 0);
		if (!c)
			return 0;
	}
	c->s[slot].cwnd = ctl_clamp_cwnd(tp->snd_cwnd);
	c->s[slot].rtt_us = ctl_clamp_rtt(tp->srtt_us >> 3);
	c->s[slot].aux = aux;
	c->s[slot].id = sid;
	c->s[slot].token = token;
	__u32 n = 0;
	v->self = CTL_MAX_SUBFLOWS;
	for (int i = 0; i < CTL_MAX_SUBFLOWS; i++) {
		if (c->s[i].token != token || !c->s[i].rtt_us || !c->s[i].cwnd)
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

/* `.release`: the subflow goes away (destroyed, disconnected, or switched to another
 * congestion control); found through the link, whatever is_mptcp and the ulp data say now. */
static __always_inline void ctl_release(struct sock *sk)
{
	ctl_reap_own(sk);
	ctl_unlink(sk, CTL_WHY_RELEASE);
	ctl_reap_all();
}

/* `.init` (a socket starts running the algorithm): a subflow that lived in this socket's memory
 * and went away without `.release` leaves its connection now. */
static __always_inline void ctl_init(struct sock *sk)
{
	ctl_reap_own(sk);
	ctl_reap_all();
}

#endif
