// SPDX-License-Identifier: GPL-2.0
/*
 * bbr3: BBR version 3 after the IETF CCWG draft "BBR Congestion Control",
 * draft-ietf-ccwg-bbr-06 (N. Cardwell, I. Swett, J. Beshay, 6 July 2026), as a BPF struct_ops
 * congestion control for a stock kernel. It implements cong_control: it decides cwnd and the
 * pacing rate itself, as Linux's tcp_bbr.c (BBRv1, the model of structure here) does; the
 * algorithm is the draft's (section 5): Startup / Drain / ProbeBW_DOWN, _CRUISE, _REFILL, _UP /
 * ProbeRTT, the max_bw and min_rtt filters, pacing and cwnd gains per state, the long-term model
 * (inflight_longterm, the draft's new name for v3's inflight_hi) and the short-term model
 * (bw_shortterm, inflight_shortterm: v3's bw_lo, inflight_lo), the per-round loss-rate check
 * against BBR.LossThresh = 2 %, ProbeRTT every 5 s with cwnd at 0.5 BDP, extra_acked, undo.
 * It is not Google's Linux BBRv3 (google/bbr branch v3), which needs TCP core changes this
 * kernel lacks, and it is not the kernel's `bbr` (BBRv1).
 *
 * Differences from the draft, where this kernel's hooks cannot give what it assumes (each the
 * closest quantity available; the same list is in nodes/congestion/catalog.py, `ctl cc list`
 * and docs/howto/bpf-congestion-control.md):
 *  1. Volumes in packets, not bytes: C.SMSS is one packet (tp->mss_cache); the kernel counts
 *     delivered, lost and in-flight data in packets, as tcp_bbr.c does.
 *  2. RS.tx_in_flight and RS.lost: the kernel keeps neither per packet (rate_sample has no
 *     tx_in_flight, skbs no lost count). They come from a ring of 16 snapshots (C.delivered,
 *     C.lost, in-flight) taken on ACKs every cwnd/8 packets delivered: for the ACKed packet P
 *     (P.delivered = rate_sample.prior_delivered) the newest snapshot at or before P.delivered
 *     gives RS.lost = C.lost now - C.lost then and RS.tx_in_flight = min(prior_in_flight, cwnd)
 *     of that ACK (what the packets it released were sent into), to about cwnd/8 packets.
 *  3. HandleLostPacket() runs once per ACK for the data newly marked lost since the last ACK
 *     (tp->lost, so also what the RACK timer or an RTO marked between ACKs), with the ACKed
 *     packet's RS.tx_in_flight, RS.lost and is_app_limited in place of the lost packet's; the
 *     packet size in InflightAtLoss() is the data newly marked on that ACK.
 *  4. CheckStartupHighLoss(): "at least 6 discontiguous lost sequence ranges in the round" is
 *     counted as ACKs of the round that marked new losses (the kernel reports no ranges).
 *  5. ECN: the draft specifies no ECN response but that CE marks MUST count as congestion
 *     (section 3.7): CE-marked deliveries (tp->delivered_ce) count with losses (C.lost + CE) in
 *     the loss rate and the loss rounds. The program does not request ECN (no
 *     TCP_CONG_NEEDS_ECN: the host's net.ipv4.tcp_ecn decides); with RFC 3168 feedback every ACK
 *     carrying ECE counts as a CE-marked delivery, so one mark may count several times.
 *  6. Pacing is the kernel's internal TCP pacing (sk_pacing_status = SK_PACING_NEEDED, no fq);
 *     C.send_quantum is TSO autosizing (pacing rate x about 1 ms, at most 64 KB) with
 *     min_tso_segs = 2; the offload budget is 3 x SetSendQuantum()'s value.
 *  7. Loss recovery is the kernel's: ssthresh() on entering fast recovery or RTO does
 *     SaveCwnd(); SaveStateUponLoss(); the RTO's cwnd = in-flight + 1 is the kernel's own
 *     (tcp_enter_loss); RestoreCwnd() when the CA state is seen leaving Recovery/Loss at the
 *     next ACK; a spurious recovery is the kernel's undo (undo_cwnd).
 *  8. HandleRestartFromIdle() on the kernel's CA_EVENT_TX_START (a transmission with nothing in
 *     flight) of an app-limited connection, not before every transmission.
 *  9. Now() is tcp_mstamp (us); random draws are bpf_get_prandom_u32(), one per call:
 *     rounds_since_probe_up = bit 0, bw_probe_wait = 2 s + (the other bits mod 1 s).
 * 10. Filters: max_bw in two slots (this and the previous ProbeBW cycle: the draft's one-bit
 *     cycle_count); extra_acked an exact windowed max over round_count, one slot per round;
 *     min_rtt through the ProbeRTT state (5.5.7.2). RTT samples are clamped to 4.2 s.
 * 11. RS.delivery_rate is rate_sample.delivered / interval_us (the kernel already takes the
 *     longer of the send and ACK phases and discards intervals below min_rtt); RS.rtt is
 *     rate_sample.rtt_us (the newest packet ACKed).
 * 12. InitPacingRate() uses C.InitialCwnd = 10 (TCP_INIT_CWND) and is redone once at the first
 *     srtt (as tcp_bbr.c); probe_rtt_min_delay starts at the initial min_rtt (OnInit() leaves
 *     it unset).
 * 13. The draft read where it is ambiguous: IsTimeToCruise() uses BBR.max_bw as written, every
 *     other BDP BBR.bw; Drain's cwnd cap is the pseudocode's (BoundCwndForModel():
 *     inflight_shortterm only; the table also lists inflight_longterm); each ProbeBW state's
 *     pacing and cwnd gains (the table's values) are set when it starts; StartupPacingGain is
 *     the text's 2.77, the gains are exact percentages.
 * 14. On MPTCP each subflow runs its own bbr3, uncoupled (as the kernel's bbr does).
 *
 * State: one `struct bbr3` per socket in socket-local storage (BPF_MAP_TYPE_SK_STORAGE: the
 * private congestion-control area of 104 bytes cannot hold it), made on init or at the first
 * ACK, freed with the socket. Every decision is a global BPF function of (state, context) with
 * the kernel's values copied in (`struct b3_in`) and what it writes copied out (`struct b3_out`),
 * so a test build (-DCTL_TRACE) records each call's state before and after, inputs and outputs
 * in the map bbr3_trace, and the suite replays it through nodes/congestion/model_bbr3.py.
 * Registered as "bbr3" (a test build: "bbr3_trace").
 *
 * Files: bbr3_state.h (the constants, the state, one call's inputs and outputs), bbr3_model.h
 * (the model and the state machine: every step of the draft as an inline function), bbr3_trace.h
 * (the test build's trace); this file: the entry points and the kernel's side.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#ifndef CTL_NAME
#define CTL_NAME bbr3
#endif
#define CTL_CAT2(a, b) a##b
#define CTL_CAT(a, b) CTL_CAT2(a, b)
#define CTL_MAP(suffix) CTL_CAT(CTL_NAME, suffix)
#define CTL_STR2(x) #x
#define CTL_STR(x) CTL_STR2(x)
#ifdef CTL_TRACE
#define CTL_OPS_NAME CTL_STR(CTL_NAME) "_trace"
#else
#define CTL_OPS_NAME CTL_STR(CTL_NAME)
#endif
/* TCP_CONG_NON_RESTRICTED (include/net/tcp.h): any socket and any network namespace may use it */
#define CTL_CONG_NON_RESTRICTED 0x1

char _license[] SEC("license") = "GPL";

#include "bbr3_state.h"
#include "bbr3_trace.h"
#include "bbr3_model.h"

/* ---- the entry points (global functions: each verified once, model_bbr3.py of the same name) -- */

__attribute__((noinline)) int b3_on_ack(struct bbr3 *b, struct b3_ctx *c)
{
	if (!b || !c)
		return 0;
	b3_ctx_begin(c);
	c->rs_delivered = c->i.rs_delivered > 0 ? (__u32)c->i.rs_delivered : 0;
	c->valid = c->i.rs_delivered > 0;
	if (c->i.rs_delivered > 0 && c->i.rs_interval_us > 0) {
		__u64 r = ((__u64)c->rs_delivered << BW_SCALE) / (__u64)c->i.rs_interval_us;
		c->rate = r > BW_MAX ? BW_MAX : (__u32)r;
	}
	__u32 marks = c->i.lost + c->i.delivered_ce;
	c->newly_marked = marks - b->marks_seen;
	b->marks_seen = marks;
	__u32 key = c->valid ? c->i.rs_prior_delivered : b->last_key;
	b->last_key = key;
	__u32 lost_then = 0, inflight_then = 0;
	snap_lookup(b, key, &lost_then, &inflight_then);
	c->tx_in_flight = inflight_then;
	c->rs_lost = marks - lost_then;
	if (b->prev_ca_state >= CA_RECOVERY && c->i.ca_state < CA_RECOVERY)
		restore_cwnd(b, c);
	b->prev_ca_state = c->i.ca_state;
	if (c->newly_marked) {
		note_loss(b, c);
		if (b->is_bw_probe_sample && is_inflight_too_high(c)) {
			__u32 tx = inflight_at_loss(c->tx_in_flight, c->rs_lost, c->newly_marked);
			c->o.inflight_at_loss = tx;
			c->o.too_high = 1;
			handle_inflight_too_high(b, c, tx);
		}
	}
	/* UpdateModelAndState() */
	update_latest_delivery_signals(b, c);
	update_congestion_signals(b, c);
	update_ack_aggregation(b, c);
	check_full_bw_reached(b, c);
	check_startup_done(b, c);
	check_drain_done(b, c);
	update_probe_bw_cycle_phase(b, c);
	update_min_rtt(b, c);
	check_probe_rtt(b, c);
	if (b->loss_round_start) {                          /* AdvanceLatestDeliverySignals() */
		b->bw_latest = c->rate;
		b->inflight_latest = c->rs_delivered;
	}
	b->bw = min32(max_bw(b), b->bw_shortterm);          /* BoundBWForModel() */
	update_control_parameters(b, c);
	/* this ACK's snapshot, for the packets it releases */
	__u32 last = b3_bound((b->snap_next + SNAPS - 1) % SNAPS, SNAPS);
	__u32 step = max32(c->cwnd >> SNAP_STEP_SHIFT, 1);
	if (!b->snap_used || c->i.delivered - b->snap[last].delivered >= step)
		snap_push(b, c->i.delivered, marks, min32(c->i.rs_prior_in_flight, c->cwnd));
	b3_outputs(c);
	return 1;
}

__attribute__((noinline)) int b3_init(struct bbr3 *b, struct b3_ctx *c)
{
	if (!b || !c)
		return 0;
	b3_ctx_begin(c);
	__builtin_memset(b, 0, sizeof(*b));
	b->initialized = 1;
	b->min_rtt_us = c->i.srtt_us ? min32(c->i.srtt_us, RTT_MAX_US) : U32_INF;
	b->min_rtt_stamp = c->i.now;
	b->probe_rtt_min_us = b->min_rtt_us;
	b->probe_rtt_min_stamp = c->i.now;
	b->undo_state = STATE_NONE;
	b->extra_acked_interval_start = c->i.now;
	b->inflight_longterm = U32_INF;
	b->probe_up_acked_per_inc = U32_INF;
	b->ack_phase = ACKS_INIT;
	b->send_quantum = SEND_QUANTUM_MIN;
	reset_congestion_signals(b);
	reset_short_term_model(b);
	reset_full_bw(b);
	init_pacing_rate(b, c);
	enter_startup(b);
	b->prev_ca_state = c->i.ca_state;
	b->marks_seen = c->i.lost + c->i.delivered_ce;
	b->last_key = c->i.delivered;
	snap_push(b, c->i.delivered, b->marks_seen, 0);
	b3_outputs(c);
	return 1;
}

__attribute__((noinline)) int b3_on_ssthresh(struct bbr3 *b, struct b3_ctx *c)
{
	if (!b || !c)
		return 0;
	b3_ctx_begin(c);
	save_cwnd(b, c);
	save_state_upon_loss(b, c);
	b3_outputs(c);
	c->o.ret = c->i.ssthresh;
	return 1;
}

__attribute__((noinline)) int b3_on_undo(struct bbr3 *b, struct b3_ctx *c)
{
	if (!b || !c)
		return 0;
	b3_ctx_begin(c);
	restore_cwnd(b, c);
	b->is_loss_in_round = 0;
	reset_full_bw(b);
	b->bw_shortterm = max32(b->bw_shortterm, b->undo_bw_shortterm);
	b->inflight_shortterm = max32(b->inflight_shortterm, b->undo_inflight_shortterm);
	b->inflight_longterm = max32(b->inflight_longterm, b->undo_inflight_longterm);
	if (b->undo_state == STARTUP && b->state != STARTUP) {
		b->full_bw_reached = 0;
		if (b->state != PROBE_RTT)
			enter_startup(b);
	} else if (b->undo_state == PROBE_BW_UP && b->state != PROBE_BW_UP) {
		if (b->state != PROBE_RTT)
			start_probe_bw_refill(b, c);
	}
	b->undo_state = STATE_NONE;
	b3_outputs(c);
	c->o.ret = c->cwnd;
	return 1;
}

__attribute__((noinline)) int b3_on_tx_start(struct bbr3 *b, struct b3_ctx *c)
{
	if (!b || !c)
		return 0;
	b3_ctx_begin(c);
	if (c->i.event == CA_EVENT_TX_START && c->i.inflight == 0 && c->i.app_limited) {
		b->idle_restart = 1;
		b->extra_acked_interval_start = c->i.now;
		if (is_probe_bw(b))
			set_pacing_rate_with_gain(b, c, 100);
		else if (b->state == PROBE_RTT)
			check_probe_rtt_done(b, c);
	}
	b3_outputs(c);
	return 1;
}

/* ---- the kernel's side: inputs in, outputs out --------------------------------------------------- */

static __always_inline struct tcp_sock *tcp_sk_of(struct sock *sk) { return (struct tcp_sock *)sk; }

static __always_inline __u32 packets_in_flight(struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

static __always_inline void b3_read(struct sock *sk, struct b3_ctx *c)
{
	struct tcp_sock *tp = tcp_sk_of(sk);
	c->i.now = tp->tcp_mstamp;
	c->i.pacing_rate = sk->sk_pacing_rate;
	c->i.max_pacing_rate = sk->sk_max_pacing_rate;
	c->i.delivered = tp->delivered;
	c->i.lost = tp->lost;
	c->i.delivered_ce = tp->delivered_ce;
	c->i.inflight = packets_in_flight(tp);
	c->i.cwnd = tp->snd_cwnd;
	c->i.cwnd_clamp = tp->snd_cwnd_clamp;
	c->i.mss = tp->mss_cache;
	c->i.ca_state = ((struct inet_connection_sock *)sk)->icsk_ca_state;
	c->i.is_cwnd_limited = tp->is_cwnd_limited;
	c->i.sack_ok = tp->rx_opt.sack_ok ? 1 : 0;
	c->i.srtt_us = tp->srtt_us >> 3;
	c->i.app_limited = tp->app_limited;
	c->i.ssthresh = tp->snd_ssthresh;
	c->i.rand = bpf_get_prandom_u32();
	c->i.rs_interval_us = -1;
	c->i.rs_rtt_us = -1;
}

static __always_inline void b3_write(struct sock *sk, struct b3_ctx *c)
{
	struct tcp_sock *tp = tcp_sk_of(sk);
	if (c->o.cwnd != c->i.cwnd)
		tp->snd_cwnd = c->o.cwnd;
	if (c->o.pacing_rate != c->i.pacing_rate)
		sk->sk_pacing_rate = c->o.pacing_rate;
	if (c->o.app_limited != c->i.app_limited)
		tp->app_limited = c->o.app_limited;
}

static __always_inline struct bbr3 *b3_state(struct sock *sk)
{
	return bpf_sk_storage_get(&CTL_MAP(_st), sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
}

static __always_inline void b3_do_init(struct sock *sk, struct bbr3 *b)
{
	struct b3_ctx c = {};
	b3_read(sk, &c);
#ifdef CTL_TRACE
	struct b3_trace_rec *r = b3_trace_begin(sk, B3_EV_INIT, b);
#endif
	b3_init(b, &c);
#ifdef CTL_TRACE
	b3_trace_end(r, b, &c);
#endif
	b3_write(sk, &c);
}

SEC("struct_ops/bbr3_init")
void BPF_PROG(bbr3_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk_of(sk);
	struct bbr3 *b = b3_state(sk);

	tp->snd_ssthresh = 0x7fffffff;              /* TCP_INFINITE_SSTHRESH, as tcp_bbr.c */
	sk->sk_pacing_status = SK_PACING_NEEDED;    /* the kernel's internal TCP pacing */
	if (b)
		b3_do_init(sk, b);
}

SEC("struct_ops/bbr3_cong_control")
void BPF_PROG(bbr3_cong_control, struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs)
{
	struct bbr3 *b = b3_state(sk);
	if (!b)
		return;                                 /* no memory: cwnd and pacing stay as they are */
	if (!b->initialized)
		b3_do_init(sk, b);                      /* storage lost or never made: start over */
	struct b3_ctx c = {};
	b3_read(sk, &c);
	c.i.rs_interval_us = rs->interval_us;
	c.i.rs_rtt_us = rs->rtt_us;
	c.i.rs_delivered = rs->delivered;
	c.i.rs_losses = rs->losses;
	c.i.rs_acked_sacked = rs->acked_sacked;
	c.i.rs_prior_in_flight = rs->prior_in_flight;
	c.i.rs_prior_delivered = rs->prior_delivered;
	c.i.rs_is_app_limited = rs->is_app_limited ? 1 : 0;
#ifdef CTL_TRACE
	struct b3_trace_rec *r = b3_trace_begin(sk, B3_EV_ACK, b);
#endif
	b3_on_ack(b, &c);
#ifdef CTL_TRACE
	b3_trace_end(r, b, &c);
#endif
	b3_write(sk, &c);
}

SEC("struct_ops/bbr3_ssthresh")
__u32 BPF_PROG(bbr3_ssthresh, struct sock *sk)
{
	struct bbr3 *b = b3_state(sk);
	struct b3_ctx c = {};
	b3_read(sk, &c);
	if (!b || !b->initialized)
		return c.i.ssthresh;
#ifdef CTL_TRACE
	struct b3_trace_rec *r = b3_trace_begin(sk, B3_EV_SSTHRESH, b);
#endif
	b3_on_ssthresh(b, &c);
#ifdef CTL_TRACE
	b3_trace_end(r, b, &c);
#endif
	return c.o.ret;
}

SEC("struct_ops/bbr3_undo_cwnd")
__u32 BPF_PROG(bbr3_undo_cwnd, struct sock *sk)
{
	struct bbr3 *b = b3_state(sk);
	struct b3_ctx c = {};
	b3_read(sk, &c);
	if (!b || !b->initialized)
		return c.i.cwnd;
#ifdef CTL_TRACE
	struct b3_trace_rec *r = b3_trace_begin(sk, B3_EV_UNDO, b);
#endif
	b3_on_undo(b, &c);
#ifdef CTL_TRACE
	b3_trace_end(r, b, &c);
#endif
	/* the kernel sets cwnd to the value returned; the state changed above */
	return c.o.ret;
}

SEC("struct_ops/bbr3_cwnd_event")
void BPF_PROG(bbr3_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	if (event != CA_EVENT_TX_START)
		return;
	struct bbr3 *b = b3_state(sk);
	if (!b || !b->initialized)
		return;
	struct b3_ctx c = {};
	b3_read(sk, &c);
	c.i.event = event;
#ifdef CTL_TRACE
	struct b3_trace_rec *r = b3_trace_begin(sk, B3_EV_CWND_EVENT, b);
#endif
	b3_on_tx_start(b, &c);
#ifdef CTL_TRACE
	b3_trace_end(r, b, &c);
#endif
	b3_write(sk, &c);
}

SEC("struct_ops/bbr3_min_tso_segs")
__u32 BPF_PROG(bbr3_min_tso_segs, struct sock *sk)
{
	return SEND_QUANTUM_MIN;                    /* C.send_quantum >= 2 * C.SMSS */
}

SEC("struct_ops/bbr3_sndbuf_expand")
__u32 BPF_PROG(bbr3_sndbuf_expand, struct sock *sk)
{
	return 3;                                   /* as tcp_bbr.c: cwnd may grow in recovery */
}

SEC(".struct_ops")
struct tcp_congestion_ops CTL_NAME = {
	.init = (void *)bbr3_init,
	.cong_control = (void *)bbr3_cong_control,
	.ssthresh = (void *)bbr3_ssthresh,
	.undo_cwnd = (void *)bbr3_undo_cwnd,
	.cwnd_event = (void *)bbr3_cwnd_event,
	.min_tso_segs = (void *)bbr3_min_tso_segs,
	.sndbuf_expand = (void *)bbr3_sndbuf_expand,
	.name = CTL_OPS_NAME,
	.flags = CTL_CONG_NON_RESTRICTED,
};
