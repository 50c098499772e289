/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bbr3 (bbr3.bpf.c, which includes this header once): the model and the state machine, every
 * step of the draft's pseudocode as an inline function of (state, context) that the entry points
 * in bbr3.bpf.c compose: the small helpers (BDP, in-flight bounds, pacing rate), the state
 * entries (section 5.3), the snapshot ring (difference 2 of bbr3.bpf.c's header), the max_bw,
 * min_rtt and extra_acked filters, the short- and long-term models, ProbeBW's cycle, ProbeRTT,
 * and cwnd and pacing (section 5.6). nodes/congestion/model_bbr3.py has the same functions under
 * the same names.
 */
#ifndef CTL_BBR3_MODEL_H
#define CTL_BBR3_MODEL_H

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

#endif
