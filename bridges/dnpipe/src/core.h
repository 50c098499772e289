/* dnpipe core: the dummynet pipe as a pure state machine.
 *
 * No I/O, no clock reads, no allocation: every function takes the time it should act
 * at (nanoseconds on one monotonic time base) and the caller owns packet memory. That
 * keeps the semantics testable with a fake clock (tests/test_core.c) and lets the I/O
 * layer stay a thin shell around it.
 *
 * A pipe, per direction, as in FreeBSD dummynet:
 *   arrival -> random loss (plr) -> [RED/GRED, optionally marking CE: red.h]
 *           -> drop-tail queue (slots or bytes)
 *           -> serialization at bw -> delay line (fixed delay) -> transmit
 * The queue bound counts the packets waiting for or undergoing serialization; packets
 * in the delay line are not counted. The delay line is FIFO like dummynet's: after a
 * delay decrease, new packets wait behind older ones rather than overtaking them.
 */
#ifndef DNPIPE_CORE_H
#define DNPIPE_CORE_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "red.h"

#define DN_BW_MAX_BPS        10000000000ULL   /* 10 Gbit/s */
#define DN_DELAY_MAX_US      10000000ULL      /* 10 s */
#define DN_QSLOTS_MIN        1U
#define DN_QSLOTS_MAX        100000U
#define DN_QBYTES_MIN        1500ULL
#define DN_QBYTES_MAX        (64ULL << 20)    /* 64 MiB */
#define DN_DEFAULT_QSLOTS    50U               /* dummynet's default */
#define DN_NEVER             UINT64_MAX

typedef struct dn_pkt {
    struct dn_pkt *next;
    uint64_t t_arr;      /* arrival time (ns) */
    uint64_t t_due;      /* delivery time, set when it enters the delay line */
    uint32_t len;        /* bytes on the wire as dummynet counts them: L2 frame, no FCS */
    uint32_t cap;        /* capacity of data[] (owned by the allocator) */
    uint8_t  cls;        /* allocator size class */
    uint8_t  data[];     /* the frame */
} dn_pkt;

typedef struct {
    uint64_t bw_bps;       /* 0 = unlimited */
    uint64_t delay_us;
    double   plr;          /* 0..1 */
    uint32_t queue_slots;  /* exactly one of queue_slots / queue_bytes is non-zero */
    uint64_t queue_bytes;
    dn_aqm   aqm;          /* DN_AQM_DROPTAIL (the default): no RED; thresholds in the queue's unit */
} dn_config;

typedef struct {
    uint64_t rx_pkts, rx_bytes;
    uint64_t tx_pkts, tx_bytes;
    uint64_t drop_plr_pkts, drop_plr_bytes;
    uint64_t drop_queue_pkts, drop_queue_bytes;
    uint64_t tx_error_pkts;
    uint64_t oversize_pkts;        /* frames above MTU + L2 header (GRO), counted in rx, dropped */
    uint64_t drop_nomem_pkts;      /* dropped because the buffer memory cap was reached */
    uint64_t rx_kernel_drops;      /* frames the kernel dropped before dnpipe saw them (ring full) */
    uint64_t csum_partial_pkts;    /* frames with an unfinished checksum (tx offload on upstream) */
    uint64_t queue_pkts, queue_bytes;
    uint64_t queue_peak_pkts, queue_peak_bytes;
    uint64_t delay_line_pkts, delay_line_bytes;
    uint64_t tx_late_ns_sum, tx_late_ns_max; /* departure time minus due time (timer accuracy) */
    uint64_t red_drop_pkts, red_drop_bytes;  /* RED/GRED's drops: also counted in drop_queue_* */
    uint64_t marked_pkts;          /* accepted packets RED marked CE (or found CE) instead of dropping */
} dn_counters;

/* xoshiro256** seeded through splitmix64: fast, 256-bit state, passes BigCrush. */
typedef struct { uint64_t s[4]; } dn_rng;
void     dn_rng_seed(dn_rng *r, uint64_t seed);
uint64_t dn_rng_next(dn_rng *r);
double   dn_rng_double(dn_rng *r);  /* uniform in [0, 1), 53 bits */

typedef enum { DN_ACCEPT = 0, DN_DROP_PLR, DN_DROP_QUEUE, DN_DROP_RED } dn_verdict;

typedef struct {
    dn_config cfg;
    /* serializer queue: packets waiting for or undergoing serialization */
    dn_pkt  *q_head, *q_tail;
    uint64_t q_pkts, q_bytes;
    bool     head_started;  /* q_head's serialization start/end are computed */
    uint64_t head_start, head_end;
    uint64_t ser_free_at;   /* end of the last completed serialization */
    uint64_t ser_rem;       /* carried remainder of bits*1e9 / bw, so rates do not drift */
    /* delay line */
    dn_pkt  *d_head, *d_tail;
    uint64_t d_pkts, d_bytes;
    uint64_t adv_time;      /* latest time the pipe was advanced to */
    uint64_t last_arr;      /* latest arrival time accepted into the queue */
    dn_counters c;
    dn_rng   rng;
    dn_red   red;           /* RED's constants and state (unused with DN_AQM_DROPTAIL) */
    uint64_t last_start;    /* serialization start of the latest packet: when the queue as
                             * dummynet counts it (waiting packets only) last went empty */
} dn_pipe;

void dn_config_default(dn_config *cfg);
/* Returns NULL when valid, else a static description of the first problem. */
const char *dn_config_check(const dn_config *cfg);

void dn_pipe_init(dn_pipe *p, uint64_t seed, uint64_t now);

/* A packet arrives at t_arr. On DN_ACCEPT the pipe owns pkt; otherwise the caller frees it.
 * Counters (rx, drops, queue, peaks) are updated. */
dn_verdict dn_pipe_enqueue(dn_pipe *p, dn_pkt *pkt, uint64_t t_arr);

/* Move every packet whose serialization has finished by `now` into the delay line. */
void dn_pipe_advance(dn_pipe *p, uint64_t now);

/* The delay-line head if it is due at `now` (it stays in the pipe), else NULL. */
dn_pkt *dn_pipe_peek_due(const dn_pipe *p, uint64_t now);
/* Remove the delay-line head after its transmission was attempted; counts tx or tx error. */
dn_pkt *dn_pipe_pop_sent(dn_pipe *p, bool ok);
/* Same, also accounting how late it left: `sent_at` minus its due time. */
dn_pkt *dn_pipe_pop_sent_at(dn_pipe *p, bool ok, uint64_t sent_at);

/* When the next packet leaves the pipe (DN_NEVER if empty), assuming no config change. */
uint64_t dn_pipe_next_event(const dn_pipe *p);

/* Apply a new config at `now` without dropping anything queued: the packet under
 * serialization finishes its remaining bits at the new rate, waiting packets are
 * serialized at the new rate, packets already in the delay line keep their due time,
 * and packets that finish serialization from now on get the new delay. */
void dn_pipe_set_config(dn_pipe *p, const dn_config *cfg, uint64_t now);

/* A frame that arrived but cannot enter the pipe (oversize, no buffer memory): counted
 * in rx and under its cause, so that rx = tx + all drops + queue + delay line holds. */
typedef enum { DN_REJECT_OVERSIZE, DN_REJECT_NOMEM } dn_reject;
void dn_pipe_count_reject(dn_pipe *p, uint32_t len, dn_reject why);

/* Snapshot of the counters with queue/delay-line occupancy filled in. */
void dn_pipe_counters(const dn_pipe *p, dn_counters *out);
void dn_pipe_reset_peak(dn_pipe *p);

/* Serialization time of `bytes` at `bw_bps`, with a carried remainder (may be NULL). */
uint64_t dn_ser_ns(uint64_t bytes, uint64_t bw_bps, uint64_t *rem);

/* How long the I/O layer may hold a pipe's due departures to send them as one batch.
 * Departures held for a period leave together, and a TCP sender clocked by them sends
 * the same bytes back as one burst into the queue: once that burst is a sizeable part of
 * the queue bound, the forwarder and not the pipe decides what is dropped (one flow at
 * 1 Gbit/s through 25 slots lost 23 % of its throughput at 200 us batches, see README).
 * So the period is at most `batch_ns` and at most 1/DN_BATCH_QUEUE_DIV of the time the
 * queue bound takes to drain at bw (a slot bound counted in frames of `max_frame` bytes);
 * with bw 0 nothing ever waits in the queue and `batch_ns` applies. */
#define DN_BATCH_QUEUE_DIV 8
uint64_t dn_batch_bound_ns(const dn_config *cfg, uint64_t batch_ns, uint32_t max_frame);

#endif
