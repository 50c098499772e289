/* dnpipe RED/GRED/ECN: see red.h. Pure: no I/O, no clock, no allocation. */
#include "red.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SCALE(x)       ((int64_t)(x) * DN_RED_ONE)
#define SCALE_MUL(x, y) ((int64_t)(((__int128)(x) * (__int128)(y)) >> DN_RED_SCALE_BITS))

const char *dn_aqm_check(const dn_aqm *a, bool bytes)
{
    if (a->type == DN_AQM_DROPTAIL)
        return a->ecn ? "enable red/gred for ECN" : NULL;
    if (a->type != DN_AQM_RED && a->type != DN_AQM_GRED)
        return "unknown AQM type";
    /* ipfw(8)'s checks (sbin/ipfw/dummynet.c). NaN fails every comparison. */
    if (!(a->w_q > 0.0 && a->w_q <= 1.0))
        return "0 < w_q <= 1";
    if (!(a->max_p >= 0.0 && a->max_p <= 1.0))
        return "0 <= max_p <= 1";
    if (a->max_th == 0)
        return "max_th must be > 0";
    if (!a->ecn && a->min_th >= a->max_th)
        return "min_th must be < than max_th";
    if (a->ecn && a->min_th > a->max_th)
        return "min_th must be =< than max_th";
    /* Ours: thresholds within the largest queue dnpipe allows, so that the scaled values
     * and their products stay far inside 64 bits. */
    if (a->max_th > (bytes ? (64ULL << 20) : 100000ULL))
        return bytes ? "max_th is above 67108864 bytes" : "max_th is above 100000 slots";
    /* ipfw scales w_q to (int)(w_q * 65536): below 1/65536 that is 0, a filter that never moves. */
    if ((int64_t)(a->w_q * (double)DN_RED_ONE) == 0)
        return "w_q is below 1/65536 (0 in dummynet's fixed point)";
    return NULL;
}

static int field(const char **s, char *buf, size_t cap)
{
    const char *e = strchr(*s, '/');
    size_t n = e ? (size_t)(e - *s) : strlen(*s);
    if (n == 0 || n >= cap)
        return -1;
    memcpy(buf, *s, n);
    buf[n] = 0;
    *s += n + (e ? 1 : 0);
    return e ? 1 : 0; /* 1: more fields follow */
}

static int frac(const char *b, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(b, &end);
    if (errno || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int whole(const char *b, uint64_t *out)
{
    for (const char *p = b; *p; p++)
        if (*p < '0' || *p > '9')
            return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(b, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int dn_parse_red(const char *s, dn_aqm *a)
{
    char b[4][64];
    for (int i = 0; i < 4; i++) {
        int more = field(&s, b[i], sizeof b[i]);
        if (more < 0 || (more == 0) != (i == 3))
            return -1;
    }
    dn_aqm t = *a;
    if (frac(b[0], &t.w_q) || whole(b[1], &t.min_th) || whole(b[2], &t.max_th) || frac(b[3], &t.max_p))
        return -1;
    *a = t;
    return 0;
}

bool dn_aqm_equal(const dn_aqm *a, const dn_aqm *b)
{
    return a->type == b->type && a->ecn == b->ecn && a->w_q == b->w_q && a->min_th == b->min_th &&
           a->max_th == b->max_th && a->max_p == b->max_p;
}

void dn_red_config(dn_red *r, const dn_aqm *a, uint64_t bw_bps, bool keep_state)
{
    int64_t avg = r->avg, count = r->count, random = r->random;
    uint64_t q_time = r->q_time;
    memset(r, 0, sizeof *r);
    if (keep_state) {
        r->avg = avg;
        r->count = count;
        r->random = random;
        r->q_time = q_time;
    }
    if (a->type == DN_AQM_DROPTAIL)
        return;
    /* ipfw's conversion of the user's fractions. */
    r->w_q = (int64_t)(a->w_q * (double)DN_RED_ONE);
    r->max_p = (int64_t)(a->max_p * (double)DN_RED_ONE);
    /* config_red(): s = ticks to send a medium packet (scaled); idle = ticks after which
     * avg has decayed to ~0 (3/w_q packet times); the table has 256 steps over it. dummynet
     * evaluates `hz * red_avg_pkt_size * 8 * SCALE(1)` in int, which overflows at hz 1000;
     * this is the value it means (64 bits). */
    int64_t s = bw_bps == 0 ? 0 : (int64_t)(DN_RED_HZ * DN_RED_AVG_PKT * 8ULL * (uint64_t)DN_RED_ONE / bw_bps);
    int64_t idle = s * 3 / r->w_q;
    r->lookup_step = idle / DN_RED_LOOKUP;
    if (!r->lookup_step)
        r->lookup_step = 1;
    int64_t w0 = DN_RED_ONE - r->w_q, weight = w0;
    for (int64_t t = r->lookup_step; t > 1; --t)
        weight = SCALE_MUL(weight, w0);
    r->min_th = SCALE(a->min_th);
    r->max_th = SCALE(a->max_th);
    /* FreeBSD 8+'s constants: c_1 = SCALE(max_p) / (max_th - min_th), so c_1 and c_2 carry
     * 32 fractional bits (FreeBSD 7 had max_p / (max_th - min_th), 16 bits, which is 0 for
     * byte thresholds). */
    if (a->max_th == a->min_th)
        r->c_1 = r->max_p;
    else
        r->c_1 = SCALE(r->max_p) / (int64_t)(a->max_th - a->min_th);
    r->c_2 = SCALE_MUL(r->c_1, SCALE(a->min_th));
    if (a->type == DN_AQM_GRED) {
        r->c_3 = (DN_RED_ONE - r->max_p) / (int64_t)a->max_th;
        r->c_4 = DN_RED_ONE - 2 * r->max_p;
    }
    r->w_q_lookup[0] = DN_RED_ONE - r->w_q;
    for (int i = 1; i < DN_RED_LOOKUP; i++)
        r->w_q_lookup[i] = SCALE_MUL(r->w_q_lookup[i - 1], weight);
}

bool dn_red_drops(dn_red *r, const dn_aqm *a, bool bytes, uint64_t q_size, uint32_t len,
                  uint64_t now_tick, uint64_t q_empty_tick, dn_red_rand rnd16, void *ctx)
{
    int64_t p_b = 0;
    if (q_size != 0) {
        /* avg <- avg + (q_size - avg) * w_q */
        r->avg += SCALE_MUL(SCALE(q_size) - r->avg, r->w_q);
    } else if (r->avg) {
        /* Empty queue: decay by (1 - w_q)^(idle time) through the table. */
        uint64_t t = (now_tick > q_empty_tick ? now_tick - q_empty_tick : 0) / (uint64_t)r->lookup_step;
        r->avg = t < DN_RED_LOOKUP ? SCALE_MUL(r->avg, r->w_q_lookup[t]) : 0;
    }
    if (r->avg < r->min_th) {
        r->count = -1;
        return false;
    }
    if (r->avg >= r->max_th) {
        if (a->ecn)
            return true;
        if (a->type == DN_AQM_GRED) {
            p_b = SCALE_MUL(r->c_3, r->avg) - r->c_4;
        } else {
            r->count = -1;
            return true;
        }
    } else if (r->avg > r->min_th) {
        if (a->ecn)
            return true;
        /* FreeBSD 8+ compares SCALE_MUL(c_1, avg) - c_2 as it is, with 32 fractional bits,
         * against a 16-bit random number: p_b 65536 times the documented max_p line, so
         * every arrival but the first between the thresholds is dropped. We take the
         * documented probability (red_drops()'s comment, ipfw(8)): the extra SCALE out. With
         * `ecn` the two agree: red_drops() returns above before computing p_b. */
        p_b = (SCALE_MUL(r->c_1, r->avg) - r->c_2) >> DN_RED_SCALE_BITS;
    }
    if (bytes)
        p_b = p_b * (int64_t)len / DN_RED_MAX_PKT;
    if (++r->count == 0) {
        r->random = rnd16(ctx) & 0xffff;
    } else if (SCALE_MUL(p_b, SCALE(r->count)) > r->random) {
        /* count: arrivals since the last drop, so the probability grows with it. */
        r->count = 0;
        r->random = rnd16(ctx) & 0xffff;
        return true;
    }
    return false;
}

uint16_t dn_csum_adjust(uint16_t hc, uint16_t m_old, uint16_t m_new)
{
    /* RFC 1624, eqn. 3, in one's complement arithmetic with end-around carry. */
    uint32_t sum = (uint16_t)~hc + (uint16_t)~m_old + (uint32_t)m_new;
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

#define ECN_MASK 0x03
#define ECN_CE   0x03

int dn_ecn_mark(uint8_t *f, uint32_t len)
{
    uint32_t off = 12;
    if (len < off + 2)
        return 0;
    uint16_t et = (uint16_t)(f[off] << 8 | f[off + 1]);
    for (int tags = 0; (et == 0x8100 || et == 0x88a8) && tags < 2; tags++) {
        off += 4;
        if (len < off + 2)
            return 0;
        et = (uint16_t)(f[off] << 8 | f[off + 1]);
    }
    off += 2; /* the IP header */
    if (et == 0x0800) {
        if (len < off + 20 || (f[off] >> 4) != 4 || (f[off] & 0x0f) < 5 || len < off + 4u * (f[off] & 0x0f))
            return 0;
        uint8_t tos = f[off + 1];
        if ((tos & ECN_MASK) == 0)
            return 0; /* not-ECT */
        if ((tos & ECN_MASK) == ECN_CE)
            return 1; /* already marked */
        uint16_t old = (uint16_t)(f[off] << 8 | tos);
        uint16_t new = (uint16_t)(old | ECN_CE);
        uint16_t hc = (uint16_t)(f[off + 10] << 8 | f[off + 11]);
        uint16_t nc = dn_csum_adjust(hc, old, new);
        f[off + 1] = (uint8_t)(tos | ECN_CE);
        f[off + 10] = (uint8_t)(nc >> 8);
        f[off + 11] = (uint8_t)nc;
        return 1;
    }
    if (et == 0x86dd) {
        if (len < off + 40 || (f[off] >> 4) != 6)
            return 0;
        /* Traffic class: the low 4 bits of byte 0 and the high 4 of byte 1; ECN is its low 2,
         * bits 4-5 of byte 1. No header checksum. */
        uint8_t ecn = (f[off + 1] >> 4) & ECN_MASK;
        if (ecn == 0)
            return 0;
        if (ecn == ECN_CE)
            return 1;
        f[off + 1] |= (uint8_t)(ECN_CE << 4);
        return 1;
    }
    return 0;
}
