/* dnpipe core: see core.h. Pure: no I/O, no clock, no allocation. */
#include "core.h"

#include <math.h>
#include <string.h>

/* ---- PRNG ------------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void dn_rng_seed(dn_rng *r, uint64_t seed)
{
    /* splitmix64 expands any seed (even 0) into a state that is not all zero. */
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t dn_rng_next(dn_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double dn_rng_double(dn_rng *r)
{
    return (double)(dn_rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- config ----------------------------------------------------------------------- */

void dn_config_default(dn_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->queue_slots = DN_DEFAULT_QSLOTS;
}

const char *dn_config_check(const dn_config *cfg)
{
    if (cfg->bw_bps > DN_BW_MAX_BPS)
        return "bw is above 10000000000 bit/s";
    if (cfg->delay_us > DN_DELAY_MAX_US)
        return "delay is above 10000000 us";
    if (!(cfg->plr >= 0.0 && cfg->plr <= 1.0)) /* also rejects NaN */
        return "plr is outside 0..1";
    if ((cfg->queue_slots == 0) == (cfg->queue_bytes == 0))
        return "queue needs exactly one of slots or bytes";
    if (cfg->queue_slots && (cfg->queue_slots < DN_QSLOTS_MIN || cfg->queue_slots > DN_QSLOTS_MAX))
        return "queue slots are outside 1..100000";
    if (cfg->queue_bytes && (cfg->queue_bytes < DN_QBYTES_MIN || cfg->queue_bytes > DN_QBYTES_MAX))
        return "queue bytes are outside 1500..67108864";
    return dn_aqm_check(&cfg->aqm, cfg->queue_bytes != 0);
}

/* ---- serialization ---------------------------------------------------------------- */

uint64_t dn_ser_ns(uint64_t bytes, uint64_t bw_bps, uint64_t *rem)
{
    if (bw_bps == 0)
        return 0;
    /* bytes <= 64 KiB, so bytes*8e9 < 2^64; the remainder keeps the long-run rate exact
     * for any bw that does not divide 8e9 evenly. */
    uint64_t num = bytes * 8ULL * 1000000000ULL + (rem ? *rem : 0);
    if (rem)
        *rem = num % bw_bps;
    return num / bw_bps;
}

uint64_t dn_batch_bound_ns(const dn_config *cfg, uint64_t batch_ns, uint32_t max_frame)
{
    if (cfg->bw_bps == 0)
        return batch_ns;
    unsigned __int128 bytes = cfg->queue_slots ? (unsigned __int128)cfg->queue_slots * max_frame : cfg->queue_bytes;
    unsigned __int128 drain_ns = bytes * 8U * 1000000000U / cfg->bw_bps;
    unsigned __int128 bound = drain_ns / DN_BATCH_QUEUE_DIV;
    return bound < batch_ns ? (uint64_t)bound : batch_ns;
}

/* ---- pipe ------------------------------------------------------------------------- */

void dn_pipe_init(dn_pipe *p, uint64_t seed, uint64_t now)
{
    memset(p, 0, sizeof *p);
    dn_config_default(&p->cfg);
    dn_rng_seed(&p->rng, seed);
    p->ser_free_at = now;
    p->adv_time = now;
}

static void start_head(dn_pipe *p)
{
    dn_pkt *h = p->q_head;
    p->head_start = h->t_arr > p->ser_free_at ? h->t_arr : p->ser_free_at;
    p->head_end = p->head_start + dn_ser_ns(h->len, p->cfg.bw_bps, &p->ser_rem);
    p->head_started = true;
    p->last_start = p->head_start;
}

void dn_pipe_advance(dn_pipe *p, uint64_t now)
{
    while (p->q_head) {
        if (!p->head_started)
            start_head(p);
        if (p->head_end > now)
            break;
        dn_pkt *h = p->q_head;
        p->q_head = h->next;
        if (!p->q_head)
            p->q_tail = NULL;
        p->q_pkts--;
        p->q_bytes -= h->len;
        p->ser_free_at = p->head_end;
        p->head_started = false;

        h->t_due = p->head_end + p->cfg.delay_us * 1000ULL;
        h->next = NULL;
        if (p->d_tail)
            p->d_tail->next = h;
        else
            p->d_head = h;
        p->d_tail = h;
        p->d_pkts++;
        p->d_bytes += h->len;
    }
    if (!p->q_head && p->ser_free_at < now && p->ser_rem) {
        /* The link went idle: a fraction of a nanosecond owed by the last packet
         * must not be charged to the next busy period. */
        p->ser_rem = 0;
    }
    if (now > p->adv_time)
        p->adv_time = now;
}

static uint32_t red_rand(void *rng)
{
    return (uint32_t)(dn_rng_next(rng) >> 48); /* dummynet: random() & 0xffff */
}

dn_verdict dn_pipe_enqueue(dn_pipe *p, dn_pkt *pkt, uint64_t t_arr)
{
    p->c.rx_pkts++;
    p->c.rx_bytes += pkt->len;
    /* Loss on arrival, before the queue, as dummynet's dn_enqueue does. */
    if (p->cfg.plr > 0.0 && dn_rng_double(&p->rng) < p->cfg.plr) {
        p->c.drop_plr_pkts++;
        p->c.drop_plr_bytes += pkt->len;
        return DN_DROP_PLR;
    }
    /* Frames reach the ring in the order the kernel queued them, but their stamps can be
     * a few microseconds out of order (taken on different CPUs). The pipe is FIFO, so a
     * frame is taken to arrive no earlier than the one before it. */
    if (t_arr < p->last_arr)
        t_arr = p->last_arr;
    p->last_arr = t_arr;
    dn_pipe_advance(p, t_arr);
    bool marked = false;
    if (p->cfg.aqm.type != DN_AQM_DROPTAIL) {
        /* dn_enqueue(): RED after the loss, before the tail check; with `ecn` an ECT packet is
         * marked instead of dropped. The queue as dummynet sees it: without the packet in
         * service (after the advance, a remaining head is being serialized). */
        bool bytes = p->cfg.queue_bytes != 0;
        uint64_t qs = bytes ? p->q_bytes - (p->q_head ? p->q_head->len : 0) : p->q_pkts - (p->q_head ? 1 : 0);
        uint64_t tick_ns = 1000000000ULL / DN_RED_HZ;
        if (dn_red_drops(&p->red, &p->cfg.aqm, bytes, qs, pkt->len, t_arr / tick_ns, p->last_start / tick_ns,
                         red_rand, &p->rng)) {
            if (!p->cfg.aqm.ecn || !dn_ecn_mark(pkt->data, pkt->len)) {
                p->c.drop_queue_pkts++;
                p->c.drop_queue_bytes += pkt->len;
                p->c.red_drop_pkts++;
                p->c.red_drop_bytes += pkt->len;
                return DN_DROP_RED;
            }
            marked = true;
        }
    }
    bool full = p->cfg.queue_slots ? p->q_pkts + 1 > p->cfg.queue_slots
                                   : p->q_bytes + pkt->len > p->cfg.queue_bytes;
    if (full) {
        p->c.drop_queue_pkts++;
        p->c.drop_queue_bytes += pkt->len;
        return DN_DROP_QUEUE;
    }
    pkt->t_arr = t_arr;
    pkt->next = NULL;
    if (p->q_tail)
        p->q_tail->next = pkt;
    else
        p->q_head = pkt;
    p->q_tail = pkt;
    p->q_pkts++;
    p->q_bytes += pkt->len;
    if (marked)
        p->c.marked_pkts++;
    /* With bw 0 the packet passes the serializer at once; it never occupies the queue,
     * so the peak is taken after this advance. */
    dn_pipe_advance(p, t_arr);
    if (p->q_pkts > p->c.queue_peak_pkts)
        p->c.queue_peak_pkts = p->q_pkts;
    if (p->q_bytes > p->c.queue_peak_bytes)
        p->c.queue_peak_bytes = p->q_bytes;
    return DN_ACCEPT;
}

dn_pkt *dn_pipe_peek_due(const dn_pipe *p, uint64_t now)
{
    dn_pkt *h = p->d_head;
    return (h && h->t_due <= now) ? h : NULL;
}

dn_pkt *dn_pipe_pop_sent(dn_pipe *p, bool ok)
{
    dn_pkt *h = p->d_head;
    if (!h)
        return NULL;
    p->d_head = h->next;
    if (!p->d_head)
        p->d_tail = NULL;
    p->d_pkts--;
    p->d_bytes -= h->len;
    h->next = NULL;
    if (ok) {
        p->c.tx_pkts++;
        p->c.tx_bytes += h->len;
    } else {
        p->c.tx_error_pkts++;
    }
    return h;
}

dn_pkt *dn_pipe_pop_sent_at(dn_pipe *p, bool ok, uint64_t sent_at)
{
    dn_pkt *h = p->d_head;
    if (h && ok && sent_at > h->t_due) {
        uint64_t late = sent_at - h->t_due;
        p->c.tx_late_ns_sum += late;
        if (late > p->c.tx_late_ns_max)
            p->c.tx_late_ns_max = late;
    }
    return dn_pipe_pop_sent(p, ok);
}

uint64_t dn_pipe_next_event(const dn_pipe *p)
{
    /* FIFO delay line: nothing behind its head can leave before it. */
    if (p->d_head)
        return p->d_head->t_due;
    if (!p->q_head)
        return DN_NEVER;
    uint64_t end;
    if (p->head_started) {
        end = p->head_end;
    } else {
        const dn_pkt *h = p->q_head;
        uint64_t start = h->t_arr > p->ser_free_at ? h->t_arr : p->ser_free_at;
        uint64_t rem = p->ser_rem;
        end = start + dn_ser_ns(h->len, p->cfg.bw_bps, &rem);
    }
    return end + p->cfg.delay_us * 1000ULL;
}

void dn_pipe_set_config(dn_pipe *p, const dn_config *cfg, uint64_t now)
{
    /* Everything that finished serializing before the change did so at the old rate
     * and enters the delay line with the old delay. */
    dn_pipe_advance(p, now);
    if (p->q_head && p->head_started && cfg->bw_bps != p->cfg.bw_bps) {
        if (p->head_start >= now) {
            /* Not begun yet (arrival stamped just after `now`): all of it at the new rate. */
            p->ser_rem = 0;
            p->head_end = p->head_start + dn_ser_ns(p->q_head->len, cfg->bw_bps, &p->ser_rem);
        } else if (cfg->bw_bps == 0) {
            p->head_end = now;
        } else {
            /* The bits still to send after `now`, at the new rate:
             * left_ns * old_bw / new_bw. old_bw > 0 here: with bw 0 nothing waits. */
            unsigned __int128 left = p->head_end - now;
            left = left * p->cfg.bw_bps / cfg->bw_bps;
            p->head_end = now + (uint64_t)left;
        }
        p->ser_rem = 0;
    }
    /* RED's constants depend on bw (config_red() via update_red() keeps the average); new RED
     * parameters start a new average, as dummynet's reconfigured flowset starts new queues. */
    if (!dn_aqm_equal(&cfg->aqm, &p->cfg.aqm))
        dn_red_config(&p->red, &cfg->aqm, cfg->bw_bps, false);
    else if (cfg->bw_bps != p->cfg.bw_bps)
        dn_red_config(&p->red, &cfg->aqm, cfg->bw_bps, true);
    p->cfg = *cfg;
    /* A bw raised to unlimited releases the queue at once. */
    dn_pipe_advance(p, now);
}

void dn_pipe_count_reject(dn_pipe *p, uint32_t len, dn_reject why)
{
    p->c.rx_pkts++;
    p->c.rx_bytes += len;
    if (why == DN_REJECT_OVERSIZE)
        p->c.oversize_pkts++;
    else
        p->c.drop_nomem_pkts++;
}

void dn_pipe_counters(const dn_pipe *p, dn_counters *out)
{
    *out = p->c;
    out->queue_pkts = p->q_pkts;
    out->queue_bytes = p->q_bytes;
    out->delay_line_pkts = p->d_pkts;
    out->delay_line_bytes = p->d_bytes;
}

void dn_pipe_reset_peak(dn_pipe *p)
{
    /* The peak since the reset cannot be below what is queued right now. */
    p->c.queue_peak_pkts = p->q_pkts;
    p->c.queue_peak_bytes = p->q_bytes;
    p->c.tx_late_ns_max = 0;
}
