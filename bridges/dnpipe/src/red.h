/* dnpipe RED/GRED with optional ECN marking: FreeBSD dummynet's AQM, pure (no I/O, no clock).
 *
 * The algorithm is dummynet's red_drops() and ecn_mark() (sys/netpfil/ipfw/ip_dn_io.c), with
 * the constants config_red() derives (sys/netpfil/ipfw/ip_dummynet.c) and the parameter checks
 * of ipfw(8)'s `pipe N config ... red|gred w_q/min_th/max_th/max_p [ecn]` (sbin/ipfw/dummynet.c):
 *
 *   avg   <- avg + (q_size - avg) * w_q          on each arrival at a non-empty queue
 *   avg   <- avg * (1 - w_q)^(idle)              on an arrival at an empty queue, through a
 *                                                256-entry table stepped in kernel ticks
 *   avg <  min_th            accept (count = -1)
 *   avg >= max_th            RED: drop; GRED: p_b = (1 - max_p)/max_th * avg - (1 - 2 max_p)
 *   min_th < avg < max_th    p_b = max_p * (avg - min_th) / (max_th - min_th)
 *   byte queues              p_b <- p_b * len / 1500
 *   drop when p_b * count > a 16-bit random number, count = arrivals since the last drop
 *   with `ecn`: every arrival with avg > min_th is a "drop" decision (dummynet returns 1
 *   there before computing p_b); an ECT(0)/ECT(1) packet is then marked CE instead of dropped
 *   (an already-CE one passes), a not-ECT one is dropped.
 *
 * One deliberate difference: between the thresholds p_b is the documented line from 0 to
 * max_p (FreeBSD 8+ keeps 16 extra fractional bits in it and so drops nearly every packet
 * there: see red.c; with `ecn` both mark every ECT packet there).
 * Everything is fixed point with 16 fractional bits (SCALE_RED = 16) as in dummynet, so the
 * same parameters give the same decisions; products are taken in 128 bits, where dummynet's
 * 32-bit ints overflow for byte thresholds of 32 KiB and more.
 * q_size is the queue as dummynet counts it: the packets waiting, not the one being serialized
 * (see core.h: dnpipe's drop-tail bound counts that one too).
 * Time is dummynet's: kernel ticks at DN_RED_HZ (1000, kern.hz's default). */
#ifndef DNPIPE_RED_H
#define DNPIPE_RED_H

#include <stdbool.h>
#include <stdint.h>

#define DN_RED_SCALE_BITS  16
#define DN_RED_ONE         (1LL << DN_RED_SCALE_BITS)
#define DN_RED_LOOKUP      256      /* net.inet.ip.dummynet.red_lookup_depth */
#define DN_RED_AVG_PKT     512      /* net.inet.ip.dummynet.red_avg_pkt_size (bytes) */
#define DN_RED_MAX_PKT     1500     /* net.inet.ip.dummynet.red_max_pkt_size (bytes) */
#define DN_RED_HZ          1000ULL  /* dummynet's clock: kern.hz ticks per second */

typedef enum { DN_AQM_DROPTAIL = 0, DN_AQM_RED, DN_AQM_GRED } dn_aqm_type;

/* As the user gives them (ipfw's units): w_q and max_p fractions, thresholds in the queue's
 * unit (slots, or bytes for a byte-bounded queue). */
typedef struct {
    dn_aqm_type type;
    bool        ecn;
    double      w_q;     /* 0 < w_q <= 1 */
    uint64_t    min_th;  /* min_th < max_th (min_th <= max_th with ecn) */
    uint64_t    max_th;  /* > 0 */
    double      max_p;   /* 0 <= max_p <= 1 */
} dn_aqm;

/* config_red()'s constants plus one queue's state (dummynet keeps the state per queue;
 * a dnpipe direction is one queue). */
typedef struct {
    int64_t w_q, max_p, min_th, max_th, c_1, c_2, c_3, c_4;  /* scaled */
    int64_t lookup_step;                                      /* ticks, >= 1 */
    int64_t w_q_lookup[DN_RED_LOOKUP];                        /* (1 - w_q)^(1 + i*step), scaled */
    int64_t avg;                                              /* scaled */
    int64_t count;
    int64_t random;
    uint64_t q_time;                                          /* tick the queue went empty */
} dn_red;

/* Returns NULL when valid (or type is DROPTAIL without ecn), else the first problem, worded
 * as ipfw words it. `bytes`: thresholds are bytes (checked against the byte limit). */
const char *dn_aqm_check(const dn_aqm *a, bool bytes);

/* Parses ipfw's "w_q/min_th/max_th/max_p" (fractions as strtod reads them, thresholds decimal
 * integers) into a's parameters; type and ecn are left alone. 0 ok, -1 malformed (then `a` is
 * unchanged). Range checks are dn_aqm_check()'s. */
int dn_parse_red(const char *s, dn_aqm *a);

bool dn_aqm_equal(const dn_aqm *a, const dn_aqm *b);

/* config_red(): the constants for `a` on a link of `bw_bps` (0 = unlimited). Keeps avg and
 * count when `keep_state` (a bandwidth change, as dummynet's update_red()), else resets them. */
void dn_red_config(dn_red *r, const dn_aqm *a, uint64_t bw_bps, bool keep_state);

/* red_drops(): true = drop (or mark) the arriving packet of `len` bytes. `q_size` is the
 * queue before the arrival in the queue's unit, `now_tick` the time in ticks, `q_empty_tick`
 * the tick at which the queue last became empty, `rnd16` a source of 16-bit random numbers. */
typedef uint32_t (*dn_red_rand)(void *ctx);
bool dn_red_drops(dn_red *r, const dn_aqm *a, bool bytes, uint64_t q_size, uint32_t len,
                  uint64_t now_tick, uint64_t q_empty_tick, dn_red_rand rnd16, void *ctx);

/* ecn_mark() on an Ethernet frame (up to two VLAN tags): 1 if the packet is ECN-capable and
 * now carries CE (marked here, IPv4 header checksum updated as RFC 1624 says, or it already
 * was CE), 0 if it is not-ECT, not IP, or too short to tell (then it is to be dropped). */
int dn_ecn_mark(uint8_t *frame, uint32_t len);

/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') for one 16-bit word m -> m' (host order values). */
uint16_t dn_csum_adjust(uint16_t hc, uint16_t m_old, uint16_t m_new);

#endif
