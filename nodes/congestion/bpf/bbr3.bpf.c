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

#define U32_INF 0xFFFFFFFFU              /* the draft's Infinity for a u32 quantity */
#define BW_SCALE 24
#define BW_UNIT (1ULL << BW_SCALE)       /* bandwidth: packets per us << 24 */
#define BW_MAX (U32_INF - 1)
#define RTT_MAX_US (1U << 22)
#define USEC_PER_SEC 1000000ULL

#define STARTUP_PACING_GAIN 277          /* percent: 2.77 (4 ln 2) */
#define DRAIN_PACING_GAIN 50
#define DEFAULT_CWND_GAIN 200
#define PROBE_DOWN_PACING_GAIN 90
#define CRUISE_PACING_GAIN 100
#define PROBE_UP_PACING_GAIN 125
#define PROBE_UP_CWND_GAIN 225
#define PROBE_RTT_CWND_GAIN 50
#define PACING_MARGIN_PERCENT 1
#define LOSS_THRESH_NUM 2                /* BBR.LossThresh = 2 / 100 */
#define LOSS_THRESH_DEN 100
#define BETA_NUM 7                       /* BBR.Beta = 7 / 10 */
#define BETA_DEN 10
#define HEADROOM_NUM 15                  /* BBR.Headroom = 15 / 100 */
#define HEADROOM_DEN 100
#define MIN_PIPE_CWND 4
#define INITIAL_CWND 10
#define FULL_BW_ROUNDS 3
#define STARTUP_FULL_LOSS_CNT 6
#define XA_LEN 10                        /* BBR.ExtraAckedFilterLen, rounds */
#define MIN_RTT_FILTER_US (10 * USEC_PER_SEC)
#define PROBE_RTT_INTERVAL_US (5 * USEC_PER_SEC)
#define PROBE_RTT_DURATION_US 200000ULL
#define PROBE_WAIT_BASE_US 2000000U
#define PROBE_WAIT_RAND_US 1000000U
#define RENO_ROUNDS_MAX 63
#define SEND_QUANTUM_MAX_BYTES 65536
#define SEND_QUANTUM_MIN 2
#define SNAPS 16
#define SNAP_STEP_SHIFT 3

enum { STARTUP, DRAIN, PROBE_BW_DOWN, PROBE_BW_CRUISE, PROBE_BW_REFILL, PROBE_BW_UP, PROBE_RTT, STATE_NONE };
enum { ACKS_INIT, ACKS_REFILLING, ACKS_PROBE_STARTING, ACKS_PROBE_FEEDBACK, ACKS_PROBE_STOPPING };
enum { CA_OPEN, CA_DISORDER, CA_CWR, CA_RECOVERY, CA_LOSS };

struct b3_snap {
	__u32 delivered;
	__u32 lost;
	__u32 inflight;
};

/* nodes/congestion/model_bbr3.py Bbr3: the same fields in the same order */
struct bbr3 {
	__u64 min_rtt_stamp;
	__u64 probe_rtt_min_stamp;
	__u64 probe_rtt_done_stamp;
	__u64 cycle_stamp;
	__u64 extra_acked_interval_start;
	__u32 initialized;
	__u32 state;
	__u32 pacing_gain;
	__u32 cwnd_gain;
	__u32 round_count;
	__u32 next_round_delivered;
	__u32 round_start;
	__u32 rounds_since_probe_up;
	__u32 cycle_count;
	__u32 bw_hi[2];
	__u32 bw;
	__u32 bw_shortterm;
	__u32 bw_latest;
	__u32 min_rtt_us;
	__u32 probe_rtt_min_us;
	__u32 probe_rtt_expired;
	__u32 probe_rtt_round_done;
	__u32 prior_cwnd;
	__u32 idle_restart;
	__u32 full_bw;
	__u32 full_bw_count;
	__u32 full_bw_now;
	__u32 full_bw_reached;
	__u32 inflight_longterm;
	__u32 inflight_shortterm;
	__u32 inflight_latest;
	__u32 max_inflight;
	__u32 send_quantum;
	__u32 loss_round_delivered;
	__u32 loss_round_start;
	__u32 is_loss_in_round;
	__u32 loss_events_in_round;
	__u32 bw_probe_up_acked;
	__u32 probe_up_acked_per_inc;
	__u32 bw_probe_up_rounds;
	__u32 bw_probe_wait_us;
	__u32 ack_phase;
	__u32 is_bw_probe_sample;
	__u32 prev_probe_too_high;
	__u32 prev_probe_precautionary;
	__u32 drain_start_round;
	__u32 extra_acked_delivered;
	__u32 extra_acked;
	__u32 xa[XA_LEN];
	__u32 undo_state;
	__u32 undo_bw_shortterm;
	__u32 undo_inflight_shortterm;
	__u32 undo_inflight_longterm;
	__u32 prev_ca_state;
	__u32 has_seen_rtt;
	__u32 marks_seen;
	__u32 last_key;
	__u32 snap_next;
	__u32 snap_used;
	struct b3_snap snap[SNAPS];
};

/* model_bbr3.py Inputs */
struct b3_in {
	__u64 now;
	__u64 pacing_rate;
	__u64 max_pacing_rate;
	__s64 rs_interval_us;
	__s64 rs_rtt_us;
	__u32 delivered;
	__u32 lost;
	__u32 delivered_ce;
	__u32 inflight;
	__u32 cwnd;
	__u32 cwnd_clamp;
	__u32 mss;
	__u32 ca_state;
	__u32 is_cwnd_limited;
	__u32 sack_ok;
	__u32 srtt_us;
	__u32 app_limited;
	__u32 rand;
	__s32 rs_delivered;
	__s32 rs_losses;
	__u32 rs_acked_sacked;
	__u32 rs_prior_in_flight;
	__u32 rs_prior_delivered;
	__u32 rs_is_app_limited;
	__u32 event;
	__u32 ssthresh;
	__u32 pad;
};

/* model_bbr3.py Outputs */
struct b3_out {
	__u64 pacing_rate;
	__u32 cwnd;
	__u32 app_limited;
	__u32 ret;
	__u32 tx_in_flight;
	__u32 rs_lost;
	__u32 newly_marked;
	__u32 too_high;
	__u32 inflight_at_loss;
	__u32 rate;
	__u32 pad;
};

/* model_bbr3.py Ctx: one call's inputs, outputs and working values */
struct b3_ctx {
	struct b3_in i;
	struct b3_out o;
	__u64 pacing_rate;
	__u32 cwnd;
	__u32 app_limited;
	__u32 rate;
	__u32 rs_delivered;
	__u32 valid;
	__u32 tx_in_flight;
	__u32 rs_lost;
	__u32 newly_marked;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bbr3);
} CTL_MAP(_st) SEC(".maps");

enum { B3_EV_INIT = 1, B3_EV_ACK = 2, B3_EV_SSTHRESH = 3, B3_EV_UNDO = 4, B3_EV_CWND_EVENT = 5 };

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

/* ---- small helpers (model_bbr3.py: the functions of the same names) ---------------------------- */

static __always_inline __u32 min32(__u32 a, __u32 b) { return a < b ? a : b; }
static __always_inline __u32 max32(__u32 a, __u32 b) { return a > b ? a : b; }
static __always_inline __u64 min64(__u64 a, __u64 b) { return a < b ? a : b; }

/* An index the verifier can bound (the compiler may not drop the check). */
static __always_inline __u32 b3_bound(__u32 i, __u32 n)
{
	asm volatile("" : "+r"(i));
	return i < n ? i : 0;
}

static __always_inline int is_probe_bw(struct bbr3 *b)
{
	return b->state == PROBE_BW_DOWN || b->state == PROBE_BW_CRUISE || b->state == PROBE_BW_REFILL ||
	       b->state == PROBE_BW_UP;
}

static __always_inline int is_probing_bw(struct bbr3 *b)
{
	return b->state == STARTUP || b->state == PROBE_BW_REFILL || b->state == PROBE_BW_UP;
}

static __always_inline int in_loss_recovery(struct b3_ctx *c)
{
	return c->i.ca_state == CA_RECOVERY || c->i.ca_state == CA_LOSS;
}

static __always_inline __u32 max_bw(struct bbr3 *b)
{
	return max32(b->bw_hi[0], b->bw_hi[1]);
}

static __always_inline __u64 rate_bytes(__u64 bw, __u32 mss, __u32 gain, int margin)
{
	__u64 rate = bw * mss;
	rate = rate * gain / 100;
	rate *= margin ? USEC_PER_SEC / 100 * (100 - PACING_MARGIN_PERCENT) : USEC_PER_SEC;
	return rate >> BW_SCALE;
}

static __always_inline __u32 bdp_multiple(struct bbr3 *b, __u32 bw, __u32 gain)
{
	if (b->min_rtt_us == U32_INF)
		return INITIAL_CWND;
	__u64 w = (__u64)bw * b->min_rtt_us;
	__u64 bdp = ((w * gain) / 100 + BW_UNIT - 1) >> BW_SCALE;
	return bdp > U32_INF ? U32_INF : (__u32)bdp;
}

static __always_inline __u32 quantization_budget(struct bbr3 *b, __u32 cap)
{
	__u64 c = cap;
	if (c < 3ULL * b->send_quantum)
		c = 3ULL * b->send_quantum;
	if (c < MIN_PIPE_CWND)
		c = MIN_PIPE_CWND;
	if (b->state == PROBE_BW_UP)
		c += 2;
	return c > U32_INF ? U32_INF : (__u32)c;
}

static __always_inline __u32 inflight(struct bbr3 *b, __u32 bw, __u32 gain)
{
	return quantization_budget(b, bdp_multiple(b, bw, gain));
}

static __always_inline __u32 target_inflight(struct bbr3 *b, struct b3_ctx *c)
{
	return min32(bdp_multiple(b, b->bw, 100), c->cwnd);
}

static __always_inline __u32 inflight_with_headroom(struct bbr3 *b)
{
	if (b->inflight_longterm == U32_INF)
		return U32_INF;
	__u32 headroom = max32(1, (__u32)((__u64)b->inflight_longterm * HEADROOM_NUM / HEADROOM_DEN));
	__u32 w = b->inflight_longterm > headroom ? b->inflight_longterm - headroom : 0;
	return max32(w, MIN_PIPE_CWND);
}

static __always_inline __u32 probe_rtt_cwnd(struct bbr3 *b)
{
	return max32(bdp_multiple(b, b->bw, PROBE_RTT_CWND_GAIN), MIN_PIPE_CWND);
}

static __always_inline int is_inflight_too_high(struct b3_ctx *c)
{
	return (__u64)c->rs_lost * LOSS_THRESH_DEN > (__u64)c->tx_in_flight * LOSS_THRESH_NUM ||
	       (c->rs_lost > 0 && !c->i.sack_ok);
}

static __always_inline __u32 inflight_at_loss(__u32 tx_in_flight, __u32 lost, __u32 size)
{
	__s64 inflight_prev = (__s64)tx_in_flight - size;
	__s64 lost_prev = (__s64)lost - size;
	__s64 num = LOSS_THRESH_NUM * inflight_prev - LOSS_THRESH_DEN * lost_prev;
	__u64 den = LOSS_THRESH_DEN - LOSS_THRESH_NUM;
	/* C's truncating division, in unsigned steps (BPF has no signed division before cpu v4) */
	__s64 lost_prefix = num >= 0 ? (__s64)((__u64)num / den) : -(__s64)((__u64)(-num) / den);
	__s64 at = inflight_prev + lost_prefix;
	if (at < 0)
		return 0;
	return at > U32_INF ? U32_INF : (__u32)at;
}

/* ---- state entries (5.3) ---------------------------------------------------------------------- */

static __always_inline void start_round(struct bbr3 *b, struct b3_ctx *c)
{
	b->next_round_delivered = c->i.delivered;
}

static __always_inline void enter_startup(struct bbr3 *b)
{
	b->state = STARTUP;
	b->pacing_gain = STARTUP_PACING_GAIN;
	b->cwnd_gain = DEFAULT_CWND_GAIN;
}

static __always_inline void enter_drain(struct bbr3 *b)
{
	b->state = DRAIN;
	b->pacing_gain = DRAIN_PACING_GAIN;
	b->cwnd_gain = DEFAULT_CWND_GAIN;
	b->drain_start_round = b->round_count;
}

static __always_inline void reset_full_bw(struct bbr3 *b)
{
	b->full_bw = 0;
	b->full_bw_count = 0;
	b->full_bw_now = 0;
}

static __always_inline void reset_congestion_signals(struct bbr3 *b)
{
	b->is_loss_in_round = 0;
	b->bw_latest = 0;
	b->inflight_latest = 0;
}

static __always_inline void reset_short_term_model(struct bbr3 *b)
{
	b->bw_shortterm = U32_INF;
	b->inflight_shortterm = U32_INF;
}

static __always_inline void pick_probe_wait(struct bbr3 *b, struct b3_ctx *c)
{
	b->rounds_since_probe_up = c->i.rand & 1;
	b->bw_probe_wait_us = PROBE_WAIT_BASE_US + (c->i.rand >> 1) % PROBE_WAIT_RAND_US;
}

static __always_inline void start_probe_bw_down(struct bbr3 *b, struct b3_ctx *c)
{
	reset_congestion_signals(b);
	b->probe_up_acked_per_inc = U32_INF;
	pick_probe_wait(b, c);
	b->cycle_stamp = c->i.now;
	b->ack_phase = ACKS_PROBE_STOPPING;
	start_round(b, c);
	b->state = PROBE_BW_DOWN;
	b->pacing_gain = PROBE_DOWN_PACING_GAIN;
	b->cwnd_gain = DEFAULT_CWND_GAIN;
}

static __always_inline void start_probe_bw_cruise(struct bbr3 *b)
{
	b->state = PROBE_BW_CRUISE;
	b->pacing_gain = CRUISE_PACING_GAIN;
	b->cwnd_gain = DEFAULT_CWND_GAIN;
}

static __always_inline void start_probe_bw_refill(struct bbr3 *b, struct b3_ctx *c)
{
	reset_short_term_model(b);
	b->bw_probe_up_rounds = 0;
	b->bw_probe_up_acked = 0;
	b->prev_probe_precautionary = 0;
	b->ack_phase = ACKS_REFILLING;
	start_round(b, c);
	b->state = PROBE_BW_REFILL;
	b->pacing_gain = CRUISE_PACING_GAIN;
	b->cwnd_gain = DEFAULT_CWND_GAIN;
}

static __always_inline void raise_inflight_longterm_slope(struct bbr3 *b, struct b3_ctx *c)
{
	__u32 rounds = b->bw_probe_up_rounds < 30 ? b->bw_probe_up_rounds : 30;
	__u32 growth_this_round = 1U << rounds;
	b->bw_probe_up_rounds = min32(b->bw_probe_up_rounds + 1, 30);
	b->probe_up_acked_per_inc = max32(c->cwnd / growth_this_round, 1);
}

static __always_inline void start_probe_bw_up(struct bbr3 *b, struct b3_ctx *c)
{
	b->ack_phase = ACKS_PROBE_STARTING;
	start_round(b, c);
	reset_full_bw(b);
	b->full_bw = c->rate;
	b->state = PROBE_BW_UP;
	b->pacing_gain = PROBE_UP_PACING_GAIN;
	b->cwnd_gain = PROBE_UP_CWND_GAIN;
	raise_inflight_longterm_slope(b, c);
}

static __always_inline void enter_probe_bw(struct bbr3 *b, struct b3_ctx *c)
{
	b->cwnd_gain = DEFAULT_CWND_GAIN;
	start_probe_bw_down(b, c);
}

static __always_inline void enter_probe_rtt(struct bbr3 *b)
{
	b->state = PROBE_RTT;
	b->pacing_gain = 100;
	b->cwnd_gain = PROBE_RTT_CWND_GAIN;
}

static __always_inline void save_cwnd(struct bbr3 *b, struct b3_ctx *c)
{
	if (!in_loss_recovery(c) && b->state != PROBE_RTT)
		b->prior_cwnd = c->cwnd;
	else
		b->prior_cwnd = max32(b->prior_cwnd, c->cwnd);
}

static __always_inline void restore_cwnd(struct bbr3 *b, struct b3_ctx *c)
{
	c->cwnd = max32(c->cwnd, b->prior_cwnd);
}

static __always_inline void save_state_upon_loss(struct bbr3 *b, struct b3_ctx *c)
{
	save_cwnd(b, c);
	b->undo_state = STATE_NONE;
	b->undo_bw_shortterm = b->bw_shortterm;
	b->undo_inflight_shortterm = b->inflight_shortterm;
	b->undo_inflight_longterm = b->inflight_longterm;
}

static __always_inline void exit_probe_rtt(struct bbr3 *b, struct b3_ctx *c)
{
	reset_short_term_model(b);
	if (b->full_bw_reached) {
		start_probe_bw_down(b, c);
		start_probe_bw_cruise(b);
	} else {
		enter_startup(b);
	}
}

static __always_inline void check_probe_rtt_done(struct bbr3 *b, struct b3_ctx *c)
{
	if (b->probe_rtt_done_stamp && c->i.now > b->probe_rtt_done_stamp) {
		b->probe_rtt_min_stamp = c->i.now;      /* schedule the next ProbeRTT */
		restore_cwnd(b, c);
		exit_probe_rtt(b, c);
	}
}

static __always_inline void set_pacing_rate_with_gain(struct bbr3 *b, struct b3_ctx *c, __u32 gain)
{
	__u64 rate = min64(rate_bytes(b->bw, c->i.mss, gain, 1), c->i.max_pacing_rate);
	if (b->full_bw_reached || rate > c->pacing_rate)
		c->pacing_rate = rate;
}

static __always_inline void init_pacing_rate(struct bbr3 *b, struct b3_ctx *c)
{
	__u32 rtt = c->i.srtt_us ? c->i.srtt_us : 1000;
	b->has_seen_rtt = c->i.srtt_us ? 1 : 0;
	__u64 bw = ((__u64)INITIAL_CWND << BW_SCALE) / (rtt ? rtt : 1);
	c->pacing_rate = min64(rate_bytes(bw, c->i.mss, STARTUP_PACING_GAIN, 0), c->i.max_pacing_rate);
}

/* ---- the snapshot ring: P.lost and P.tx_in_flight as near as this kernel allows (difference 2) - */

static __always_inline void snap_push(struct bbr3 *b, __u32 delivered, __u32 marks, __u32 inflight_now)
{
	__u32 k = b3_bound(b->snap_next, SNAPS);
	b->snap[k].delivered = delivered;
	b->snap[k].lost = marks;
	b->snap[k].inflight = inflight_now;
	b->snap_next = (k + 1) % SNAPS;
	b->snap_used = min32(b->snap_used + 1, SNAPS);
}

/* The newest snapshot taken at or before C.delivered == key (the oldest if all are newer). */
static __always_inline void snap_lookup(struct bbr3 *b, __u32 key, __u32 *lost, __u32 *inflight_then)
{
	__u32 used = min32(b->snap_used, SNAPS);
	if (!used) {
		*lost = b->marks_seen;
		*inflight_then = 0;
		return;
	}
	__u32 found = (b->snap_next + SNAPS - used) % SNAPS;      /* the oldest */
	for (__u32 k = 1; k <= SNAPS; k++) {
		if (k > used)
			break;
		__u32 j = b3_bound((b->snap_next + SNAPS - k) % SNAPS, SNAPS);
		if ((__s32)(b->snap[j].delivered - key) <= 0) {
			found = j;
			break;
		}
	}
	found = b3_bound(found, SNAPS);
	*lost = b->snap[found].lost;
	*inflight_then = b->snap[found].inflight;
}

/* ---- per-ACK steps ------------------------------------------------------------------------------ */

static __always_inline void note_loss(struct bbr3 *b, struct b3_ctx *c)
{
	if (!b->is_loss_in_round) {
		b->loss_round_delivered = c->i.delivered;
		save_state_upon_loss(b, c);
	}
	b->is_loss_in_round = 1;
}

static __always_inline void handle_inflight_too_high(struct bbr3 *b, struct b3_ctx *c, __u32 tx_in_flight)
{
	b->prev_probe_too_high = 1;
	b->is_bw_probe_sample = 0;
	if (!c->i.rs_is_app_limited)
		b->inflight_longterm = max32(tx_in_flight,
					     (__u32)((__u64)target_inflight(b, c) * BETA_NUM / BETA_DEN));
	if (b->state == PROBE_BW_UP) {
		b->undo_state = PROBE_BW_UP;
		start_probe_bw_down(b, c);
	}
}

static __always_inline void update_latest_delivery_signals(struct bbr3 *b, struct b3_ctx *c)
{
	b->loss_round_start = 0;
	b->bw_latest = max32(b->bw_latest, c->rate);
	b->inflight_latest = max32(b->inflight_latest, c->rs_delivered);
	if (c->valid && (__s32)(c->i.rs_prior_delivered - b->loss_round_delivered) >= 0) {
		b->loss_round_delivered = c->i.delivered;
		b->loss_round_start = 1;
	}
}

static __always_inline void update_round(struct bbr3 *b, struct b3_ctx *c)
{
	if (c->valid && (__s32)(c->i.rs_prior_delivered - b->next_round_delivered) >= 0) {
		start_round(b, c);
		b->round_count++;
		b->rounds_since_probe_up++;
		b->round_start = 1;
	} else {
		b->round_start = 0;
	}
}

static __always_inline void update_max_bw(struct bbr3 *b, struct b3_ctx *c)
{
	update_round(b, c);
	if (c->rate > 0 && (c->rate >= max_bw(b) || !c->i.rs_is_app_limited)) {
		__u32 slot = b->cycle_count & 1;
		b->bw_hi[slot] = max32(b->bw_hi[slot], c->rate);
	}
}

static __always_inline void adapt_lower_bounds_from_congestion(struct bbr3 *b, struct b3_ctx *c)
{
	if (is_probing_bw(b))
		return;
	if (b->is_loss_in_round) {
		if (b->bw_shortterm == U32_INF)             /* InitLowerBounds() */
			b->bw_shortterm = max_bw(b);
		if (b->inflight_shortterm == U32_INF)
			b->inflight_shortterm = c->cwnd;
		/* LossLowerBounds() */
		b->bw_shortterm = max32(b->bw_latest, (__u32)((__u64)b->bw_shortterm * BETA_NUM / BETA_DEN));
		b->inflight_shortterm = max32(b->inflight_latest,
					      (__u32)((__u64)b->inflight_shortterm * BETA_NUM / BETA_DEN));
	}
}

static __always_inline void update_congestion_signals(struct bbr3 *b, struct b3_ctx *c)
{
	update_max_bw(b, c);
	if (!b->loss_round_start)
		return;
	adapt_lower_bounds_from_congestion(b, c);
	b->is_loss_in_round = 0;
}

static __always_inline void update_ack_aggregation(struct bbr3 *b, struct b3_ctx *c)
{
	__u64 interval = c->i.now - b->extra_acked_interval_start;
	__u64 expected = ((__u64)b->bw * interval) >> BW_SCALE;
	if ((__u64)b->extra_acked_delivered <= expected) {
		b->extra_acked_delivered = 0;
		b->extra_acked_interval_start = c->i.now;
		expected = 0;
	}
	b->extra_acked_delivered += c->i.rs_acked_sacked;
	__u64 extra = (__u64)b->extra_acked_delivered > expected ? b->extra_acked_delivered - expected : 0;
	__u32 e = (__u32)min64(extra, c->cwnd);
	__u32 slot = b3_bound(b->round_count % XA_LEN, XA_LEN);
	if (b->round_start)
		b->xa[slot] = 0;
	b->xa[slot] = max32(b->xa[slot], e);
	if (b->full_bw_reached) {
		__u32 m = 0;
		for (int k = 0; k < XA_LEN; k++)
			m = max32(m, b->xa[k]);
		b->extra_acked = m;
	} else {
		b->extra_acked = b->xa[slot];
	}
}

static __always_inline void check_full_bw_reached(struct bbr3 *b, struct b3_ctx *c)
{
	if (b->full_bw_now || !b->round_start || c->i.rs_is_app_limited)
		return;
	if ((__u64)c->rate * 4 >= (__u64)b->full_bw * 5) {
		reset_full_bw(b);
		b->full_bw = c->rate;
		return;
	}
	b->full_bw_count++;
	b->full_bw_now = b->full_bw_count >= FULL_BW_ROUNDS ? 1 : 0;
	if (b->full_bw_now)
		b->full_bw_reached = 1;
}

static __always_inline void check_startup_high_loss(struct bbr3 *b, struct b3_ctx *c)
{
	int high;

	if (b->state != STARTUP)
		return;
	if (c->newly_marked && b->loss_events_in_round < 15)
		b->loss_events_in_round++;
	if (c->i.sack_ok)
		high = b->loss_round_start && c->i.ca_state == CA_RECOVERY &&
		       b->loss_events_in_round >= STARTUP_FULL_LOSS_CNT && is_inflight_too_high(c);
	else
		high = c->i.ca_state == CA_RECOVERY && c->newly_marked > 0;
	if (high) {
		b->undo_state = STARTUP;
		b->full_bw_now = 1;
		b->full_bw_reached = 1;
		b->inflight_longterm = max32(bdp_multiple(b, b->bw, 100), b->inflight_latest);
		c->o.too_high = 2;
		return;
	}
	if (b->loss_round_start)
		b->loss_events_in_round = 0;
}

static __always_inline void check_startup_done(struct bbr3 *b, struct b3_ctx *c)
{
	check_startup_high_loss(b, c);
	if (b->state == STARTUP && b->full_bw_reached)
		enter_drain(b);
}

static __always_inline void check_drain_done(struct bbr3 *b, struct b3_ctx *c)
{
	if (b->state == DRAIN && (c->i.inflight <= inflight(b, b->bw, 100) ||
				  (__s32)(b->round_count - (b->drain_start_round + 3)) > 0))
		enter_probe_bw(b, c);
}

static __always_inline int is_time_to_probe_bw(struct bbr3 *b, struct b3_ctx *c)
{
	__u32 rounds = min32(target_inflight(b, c), RENO_ROUNDS_MAX);
	if (c->i.now > b->cycle_stamp + b->bw_probe_wait_us || b->rounds_since_probe_up >= rounds) {
		start_probe_bw_refill(b, c);
		return 1;
	}
	return 0;
}

static __always_inline int is_time_to_cruise(struct bbr3 *b, struct b3_ctx *c)
{
	if (c->i.inflight > inflight_with_headroom(b))
		return 0;
	if (c->i.inflight > inflight(b, max_bw(b), 100))
		return 0;
	return 1;
}

static __always_inline int is_time_to_go_down(struct bbr3 *b, struct b3_ctx *c)
{
	if (b->prev_probe_too_high && c->i.inflight >= b->inflight_longterm) {
		b->prev_probe_precautionary = 1;
		return 1;
	}
	if (c->i.is_cwnd_limited && c->cwnd >= b->inflight_longterm) {
		reset_full_bw(b);
		b->full_bw = c->rate;
	} else if (b->full_bw_now) {
		return 1;
	}
	return 0;
}

static __always_inline void probe_inflight_longterm_upward(struct bbr3 *b, struct b3_ctx *c)
{
	if (!c->i.is_cwnd_limited || c->cwnd < b->inflight_longterm)
		return;
	b->bw_probe_up_acked += c->i.rs_acked_sacked;
	if (b->bw_probe_up_acked >= b->probe_up_acked_per_inc && b->probe_up_acked_per_inc) {
		__u32 delta = b->bw_probe_up_acked / b->probe_up_acked_per_inc;
		b->bw_probe_up_acked -= delta * b->probe_up_acked_per_inc;
		__u64 hi = (__u64)b->inflight_longterm + delta;
		b->inflight_longterm = hi > U32_INF - 1 ? U32_INF - 1 : (__u32)hi;
	}
	if (b->round_start)
		raise_inflight_longterm_slope(b, c);
}

static __always_inline int adapt_long_term_model(struct bbr3 *b, struct b3_ctx *c)
{
	if (b->ack_phase == ACKS_PROBE_STARTING && b->round_start)
		b->ack_phase = ACKS_PROBE_FEEDBACK;
	if (b->ack_phase == ACKS_PROBE_STOPPING && b->round_start) {
		b->is_bw_probe_sample = 0;
		b->ack_phase = ACKS_INIT;
		if (is_probe_bw(b) && !c->i.rs_is_app_limited) {
			b->cycle_count++;                       /* AdvanceMaxBwFilter() */
			b->bw_hi[b->cycle_count & 1] = 0;
		}
		if (is_probe_bw(b) && b->prev_probe_precautionary && !b->prev_probe_too_high) {
			start_probe_bw_refill(b, c);
			return 1;
		}
	}
	if (!is_inflight_too_high(c)) {
		if (b->inflight_longterm == U32_INF)
			return 0;
		if (c->tx_in_flight > b->inflight_longterm)
			b->inflight_longterm = c->tx_in_flight;
		if (b->state == PROBE_BW_UP)
			probe_inflight_longterm_upward(b, c);
	}
	return 0;
}

static __always_inline void update_probe_bw_cycle_phase(struct bbr3 *b, struct b3_ctx *c)
{
	if (!b->full_bw_reached)
		return;
	if (adapt_long_term_model(b, c))
		return;
	switch (b->state) {
	case PROBE_BW_DOWN:
		if (is_time_to_probe_bw(b, c))
			return;
		if (is_time_to_cruise(b, c))
			start_probe_bw_cruise(b);
		break;
	case PROBE_BW_CRUISE:
		is_time_to_probe_bw(b, c);
		break;
	case PROBE_BW_REFILL:
		if (b->round_start) {
			b->is_bw_probe_sample = 1;
			start_probe_bw_up(b, c);
		}
		break;
	case PROBE_BW_UP:
		if (is_time_to_go_down(b, c)) {
			b->prev_probe_too_high = 0;
			start_probe_bw_down(b, c);
		}
		break;
	default:
		break;
	}
}

static __always_inline void update_min_rtt(struct bbr3 *b, struct b3_ctx *c)
{
	b->probe_rtt_expired = c->i.now > b->probe_rtt_min_stamp + PROBE_RTT_INTERVAL_US ? 1 : 0;
	__s64 rtt = c->i.rs_rtt_us < RTT_MAX_US ? c->i.rs_rtt_us : RTT_MAX_US;
	if (rtt >= 0 && ((__u64)rtt < b->probe_rtt_min_us || b->probe_rtt_expired)) {
		b->probe_rtt_min_us = (__u32)rtt;
		b->probe_rtt_min_stamp = c->i.now;
	}
	int min_rtt_expired = c->i.now > b->min_rtt_stamp + MIN_RTT_FILTER_US;
	if (b->probe_rtt_min_us < b->min_rtt_us || min_rtt_expired) {
		b->min_rtt_us = b->probe_rtt_min_us;
		b->min_rtt_stamp = b->probe_rtt_min_stamp;
	}
}

static __always_inline void handle_probe_rtt(struct bbr3 *b, struct b3_ctx *c)
{
	__u32 al = c->i.delivered + c->i.inflight;        /* MarkConnectionAppLimited() */
	c->app_limited = al ? al : 1;
	if (b->probe_rtt_done_stamp == 0 && c->i.inflight <= probe_rtt_cwnd(b)) {
		b->probe_rtt_done_stamp = c->i.now + PROBE_RTT_DURATION_US;
		b->probe_rtt_round_done = 0;
		start_round(b, c);
	} else if (b->probe_rtt_done_stamp != 0) {
		if (b->round_start)
			b->probe_rtt_round_done = 1;
		if (b->probe_rtt_round_done)
			check_probe_rtt_done(b, c);
	}
}

static __always_inline void check_probe_rtt(struct bbr3 *b, struct b3_ctx *c)
{
	if (b->state != PROBE_RTT && b->probe_rtt_expired && !b->idle_restart) {
		enter_probe_rtt(b);
		save_cwnd(b, c);
		b->probe_rtt_done_stamp = 0;
		b->ack_phase = ACKS_PROBE_STOPPING;
		start_round(b, c);
	}
	if (b->state == PROBE_RTT)
		handle_probe_rtt(b, c);
	if (c->i.rs_delivered > 0)
		b->idle_restart = 0;
}

static __always_inline void set_cwnd(struct bbr3 *b, struct b3_ctx *c)
{
	__u64 cap = (__u64)bdp_multiple(b, b->bw, b->cwnd_gain) + b->extra_acked;   /* UpdateMaxInflight() */
	b->max_inflight = quantization_budget(b, cap > U32_INF ? U32_INF : (__u32)cap);
	__u32 acked = c->i.rs_acked_sacked;
	__u64 cwnd = c->cwnd;
	if (b->full_bw_reached)
		cwnd = min64(cwnd + acked, b->max_inflight);
	else if (cwnd < b->max_inflight || c->i.delivered < INITIAL_CWND)
		cwnd = cwnd + acked;
	if (cwnd < MIN_PIPE_CWND)
		cwnd = MIN_PIPE_CWND;
	if (b->state == PROBE_RTT)                          /* BoundCwndForProbeRTT() */
		cwnd = min64(cwnd, probe_rtt_cwnd(b));
	__u32 capm = U32_INF;                               /* BoundCwndForModel() */
	if (is_probe_bw(b) && b->state != PROBE_BW_CRUISE)
		capm = b->inflight_longterm;
	else if (b->state == PROBE_RTT || b->state == PROBE_BW_CRUISE)
		capm = inflight_with_headroom(b);
	capm = min32(capm, b->inflight_shortterm);
	capm = max32(capm, MIN_PIPE_CWND);
	cwnd = min64(cwnd, capm);
	cwnd = min64(cwnd, c->i.cwnd_clamp);
	c->cwnd = (__u32)min64(cwnd, U32_INF);
}

static __always_inline void update_control_parameters(struct bbr3 *b, struct b3_ctx *c)
{
	if (!b->has_seen_rtt && c->i.srtt_us)
		init_pacing_rate(b, c);
	set_pacing_rate_with_gain(b, c, b->pacing_gain);
	__u64 sq = min64(c->pacing_rate / 1000, SEND_QUANTUM_MAX_BYTES) / (c->i.mss ? c->i.mss : 1);
	b->send_quantum = sq > SEND_QUANTUM_MIN ? (__u32)sq : SEND_QUANTUM_MIN;
	set_cwnd(b, c);
}

static __always_inline void b3_outputs(struct b3_ctx *c)
{
	c->o.cwnd = c->cwnd;
	c->o.pacing_rate = c->pacing_rate;
	c->o.app_limited = c->app_limited;
	c->o.tx_in_flight = c->tx_in_flight;
	c->o.rs_lost = c->rs_lost;
	c->o.newly_marked = c->newly_marked;
	c->o.rate = c->rate;
}

static __always_inline void b3_ctx_begin(struct b3_ctx *c)
{
	c->cwnd = c->i.cwnd;
	c->pacing_rate = c->i.pacing_rate;
	c->app_limited = c->i.app_limited;
}

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
