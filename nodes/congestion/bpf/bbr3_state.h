/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bbr3 (bbr3.bpf.c, which includes this header once): the draft's constants, the state kept per
 * socket (`struct bbr3`, in socket-local storage), one call's inputs, outputs and working values
 * (`struct b3_in`, `struct b3_out`, `struct b3_ctx`) and the trace events. The same vocabulary,
 * field for field and in the same order, is nodes/congestion/model_bbr3_state.py's.
 */
#ifndef CTL_BBR3_STATE_H
#define CTL_BBR3_STATE_H

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

#endif
