/* Unit tests of the pure core, driven by a fake clock (plain integers in ns). */
#include "core.h"
#include "json.h"
#include "pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define MS 1000000ULL
#define US 1000ULL

static atomic_size_t mem;
static dn_pool pool;

static dn_pkt *mk(uint32_t len, uint32_t seq)
{
    dn_pkt *p = dn_pool_alloc(&pool, len);
    if (!p)
        abort();
    p->len = len;
    memcpy(p->data, &seq, sizeof seq);
    return p;
}

static uint32_t seq_of(const dn_pkt *p)
{
    uint32_t s;
    memcpy(&s, p->data, sizeof s);
    return s;
}

static dn_config cfg(uint64_t bw, uint64_t delay_us, double plr, uint32_t slots, uint64_t bytes)
{
    dn_config c = {.bw_bps = bw, .delay_us = delay_us, .plr = plr, .queue_slots = slots, .queue_bytes = bytes};
    return c;
}

static void pipe_with(dn_pipe *p, dn_config c)
{
    dn_pipe_init(p, 42, 0);
    dn_pipe_set_config(p, &c, 0);
}

/* Pop everything due at t; returns how many; records due times. */
static int pop_due(dn_pipe *p, uint64_t t, uint64_t *dues, uint32_t *seqs)
{
    int n = 0;
    dn_pipe_advance(p, t);
    for (dn_pkt *h; (h = dn_pipe_peek_due(p, t));) {
        if (dues)
            dues[n] = h->t_due;
        if (seqs)
            seqs[n] = seq_of(h);
        dn_pool_free(&pool, dn_pipe_pop_sent(p, true));
        n++;
    }
    return n;
}

static void drain_all(dn_pipe *p)
{
    pop_due(p, UINT64_MAX / 2, NULL, NULL);
}

static int invariant(const dn_pipe *p)
{
    dn_counters c;
    dn_pipe_counters(p, &c);
    return c.rx_pkts == c.tx_pkts + c.drop_plr_pkts + c.drop_queue_pkts + c.tx_error_pkts + c.oversize_pkts +
                            c.drop_nomem_pkts + c.queue_pkts + c.delay_line_pkts;
}

TEST(defaults_are_dummynets)
{
    dn_pipe p;
    dn_pipe_init(&p, 1, 0);
    CHECK_EQ(p.cfg.bw_bps, 0);
    CHECK_EQ(p.cfg.delay_us, 0);
    CHECK(p.cfg.plr == 0.0);
    CHECK_EQ(p.cfg.queue_slots, 50);
    CHECK_EQ(p.cfg.queue_bytes, 0);
    CHECK(dn_config_check(&p.cfg) == NULL);
}

TEST(config_validation)
{
    dn_config c = cfg(0, 0, 0, 50, 0);
    CHECK(!dn_config_check(&c));
    c = cfg(10000000000ULL, 10000000, 1.0, 100000, 0);
    CHECK(!dn_config_check(&c));
    c = cfg(10000000001ULL, 0, 0, 50, 0);
    CHECK(dn_config_check(&c));
    c = cfg(0, 10000001, 0, 50, 0);
    CHECK(dn_config_check(&c));
    c = cfg(0, 0, 1.0000001, 50, 0);
    CHECK(dn_config_check(&c));
    c = cfg(0, 0, -0.1, 50, 0);
    CHECK(dn_config_check(&c));
    c = cfg(0, 0, NAN, 50, 0);
    CHECK(dn_config_check(&c));
    c = cfg(0, 0, 0, 100001, 0);
    CHECK(dn_config_check(&c));
    c = cfg(0, 0, 0, 0, 1499);
    CHECK(dn_config_check(&c));
    c = cfg(0, 0, 0, 0, 1500);
    CHECK(!dn_config_check(&c));
    c = cfg(0, 0, 0, 0, (64ULL << 20) + 1);
    CHECK(dn_config_check(&c));
    c = cfg(0, 0, 0, 10, 3000);
    CHECK(dn_config_check(&c)); /* both bounds */
    c = cfg(0, 0, 0, 0, 0);
    CHECK(dn_config_check(&c)); /* neither */
}

TEST(serialization_times)
{
    /* 1000 bytes at 1 Mbit/s: 8 ms each; back to back from t=0, then delay 5 ms. */
    dn_pipe p;
    pipe_with(&p, cfg(1000000, 5000, 0, 50, 0));
    for (uint32_t i = 0; i < 3; i++)
        CHECK_EQ(dn_pipe_enqueue(&p, mk(1000, i), 0), DN_ACCEPT);
    CHECK_EQ(dn_pipe_next_event(&p), 13 * MS);
    uint64_t due[8];
    CHECK_EQ(pop_due(&p, 13 * MS - 1, due, NULL), 0);
    CHECK_EQ(pop_due(&p, 13 * MS, due, NULL), 1);
    CHECK_EQ(due[0], 13 * MS);
    CHECK_EQ(dn_pipe_next_event(&p), 21 * MS);
    CHECK_EQ(pop_due(&p, 30 * MS, due, NULL), 2);
    CHECK_EQ(due[0], 21 * MS);
    CHECK_EQ(due[1], 29 * MS);
    /* An arrival on an idle link starts serializing at its arrival time. */
    CHECK_EQ(dn_pipe_enqueue(&p, mk(125, 9), 100 * MS), DN_ACCEPT);
    CHECK_EQ(dn_pipe_next_event(&p), 100 * MS + 1 * MS + 5 * MS);
    CHECK(invariant(&p));
    drain_all(&p);
}

TEST(serializer_queue_occupancy_over_time)
{
    dn_pipe p;
    pipe_with(&p, cfg(1000000, 100000, 0, 50, 0));
    for (uint32_t i = 0; i < 4; i++)
        dn_pipe_enqueue(&p, mk(1000, i), 0);
    dn_counters c;
    dn_pipe_counters(&p, &c);
    CHECK_EQ(c.queue_pkts, 4);
    CHECK_EQ(c.queue_bytes, 4000);
    /* At 8 ms the first has been serialized: it is in the delay line, not the queue. */
    dn_pipe_advance(&p, 8 * MS);
    dn_pipe_counters(&p, &c);
    CHECK_EQ(c.queue_pkts, 3);
    CHECK_EQ(c.delay_line_pkts, 1);
    dn_pipe_advance(&p, 32 * MS);
    dn_pipe_counters(&p, &c);
    CHECK_EQ(c.queue_pkts, 0);
    CHECK_EQ(c.delay_line_pkts, 4);
    CHECK_EQ(c.queue_peak_pkts, 4);
    CHECK_EQ(c.queue_peak_bytes, 4000);
    CHECK(invariant(&p));
    drain_all(&p);
}

TEST(unlimited_bw_never_queues)
{
    dn_pipe p;
    pipe_with(&p, cfg(0, 2000, 0, 1, 0));
    uint64_t due[16];
    for (uint32_t i = 0; i < 10; i++)
        CHECK_EQ(dn_pipe_enqueue(&p, mk(1514, i), 1000 + i), DN_ACCEPT);
    dn_counters c;
    dn_pipe_counters(&p, &c);
    CHECK_EQ(c.queue_peak_pkts, 0);
    CHECK_EQ(c.delay_line_pkts, 10);
    CHECK_EQ(pop_due(&p, 2 * MS + 1009, due, NULL), 10);
    for (int i = 0; i < 10; i++)
        CHECK_EQ(due[i], 2 * MS + 1000 + (uint64_t)i);
}

TEST(queue_bound_slots)
{
    dn_pipe p;
    pipe_with(&p, cfg(1000000, 0, 0, 5, 0));
    int acc = 0, drop = 0;
    for (uint32_t i = 0; i < 10; i++) {
        dn_pkt *k = mk(1000, i);
        if (dn_pipe_enqueue(&p, k, 0) == DN_ACCEPT)
            acc++;
        else {
            drop++;
            dn_pool_free(&pool, k);
        }
    }
    CHECK_EQ(acc, 5);
    CHECK_EQ(drop, 5);
    dn_counters c;
    dn_pipe_counters(&p, &c);
    CHECK_EQ(c.queue_peak_pkts, 5);
    CHECK_EQ(c.drop_queue_pkts, 5);
    CHECK_EQ(c.drop_queue_bytes, 5000);
    /* The packet under serialization counts: just before 8 ms the queue is still full. */
    dn_pkt *k = mk(1000, 99);
    CHECK_EQ(dn_pipe_enqueue(&p, k, 8 * MS - 1), DN_DROP_QUEUE);
    dn_pool_free(&pool, k);
    CHECK_EQ(dn_pipe_enqueue(&p, mk(1000, 100), 8 * MS), DN_ACCEPT);
    dn_pipe_counters(&p, &c);
    CHECK_EQ(c.queue_peak_pkts, 5);
    CHECK(invariant(&p));
    drain_all(&p);
}

TEST(queue_bound_bytes_never_exceeded)
{
    dn_pipe p;
    pipe_with(&p, cfg(1000000, 0, 0, 0, 3000));
    CHECK_EQ(dn_pipe_enqueue(&p, mk(1000, 0), 0), DN_ACCEPT);
    CHECK_EQ(dn_pipe_enqueue(&p, mk(1000, 1), 0), DN_ACCEPT);
    dn_pkt *big = mk(1500, 2);
    CHECK_EQ(dn_pipe_enqueue(&p, big, 0), DN_DROP_QUEUE); /* 2000 + 1500 > 3000 */
    dn_pool_free(&pool, big);
    CHECK_EQ(dn_pipe_enqueue(&p, mk(1000, 3), 0), DN_ACCEPT); /* exactly 3000 fits */
    dn_pkt *one = mk(60, 4);
    CHECK_EQ(dn_pipe_enqueue(&p, one, 0), DN_DROP_QUEUE);
    dn_pool_free(&pool, one);
    dn_counters c;
    dn_pipe_counters(&p, &c);
    CHECK_EQ(c.queue_peak_bytes, 3000);
    CHECK_EQ(c.queue_peak_pkts, 3);
    CHECK_EQ(c.drop_queue_pkts, 2);
    CHECK_EQ(c.drop_queue_bytes, 1560);
    drain_all(&p);
}

TEST(live_bw_change_keeps_queue_and_rescales_current_packet)
{
    dn_pipe p;
    pipe_with(&p, cfg(1000000, 0, 0, 50, 0));
    dn_pipe_enqueue(&p, mk(1000, 0), 0); /* 0..8 ms at 1 Mbit/s */
    dn_pipe_enqueue(&p, mk(1000, 1), 0);
    dn_pipe_enqueue(&p, mk(1000, 2), 0);
    /* At 4 ms half of packet 0 is sent; the other 4000 bits take 2 ms at 2 Mbit/s. */
    dn_config c2 = p.cfg;
    c2.bw_bps = 2000000;
    dn_pipe_set_config(&p, &c2, 4 * MS);
    dn_counters c;
    dn_pipe_counters(&p, &c);
    CHECK_EQ(c.queue_pkts, 3);
    CHECK_EQ(c.drop_queue_pkts, 0);
    uint64_t due[8];
    uint32_t seq[8];
    CHECK_EQ(dn_pipe_next_event(&p), 6 * MS);
    CHECK_EQ(pop_due(&p, 20 * MS, due, seq), 3);
    CHECK_EQ(due[0], 6 * MS);
    CHECK_EQ(due[1], 10 * MS);
    CHECK_EQ(due[2], 14 * MS);
    CHECK_EQ(seq[0], 0);
    CHECK_EQ(seq[2], 2);
    dn_pipe_counters(&p, &c);
    CHECK_EQ(c.tx_pkts, 3);
    CHECK(invariant(&p));
}

TEST(bw_to_unlimited_releases_queue)
{
    dn_pipe p;
    pipe_with(&p, cfg(1000000, 10000, 0, 50, 0));
    for (uint32_t i = 0; i < 5; i++)
        dn_pipe_enqueue(&p, mk(1000, i), 0);
    dn_config c2 = p.cfg;
    c2.bw_bps = 0;
    dn_pipe_set_config(&p, &c2, 4 * MS);
    dn_counters c;
    dn_pipe_counters(&p, &c);
    CHECK_EQ(c.queue_pkts, 0);
    CHECK_EQ(c.delay_line_pkts, 5);
    uint64_t due[8];
    CHECK_EQ(pop_due(&p, 14 * MS, due, NULL), 5);
    for (int i = 0; i < 5; i++)
        CHECK_EQ(due[i], 14 * MS);
}

TEST(live_delay_change_keeps_delay_line_and_fifo)
{
    dn_pipe p;
    pipe_with(&p, cfg(1000000, 100000, 0, 50, 0)); /* 100 ms */
    dn_pipe_enqueue(&p, mk(1000, 0), 0);           /* serialized by 8 ms: due 108 ms */
    dn_pipe_enqueue(&p, mk(1000, 1), 0);           /* serialized by 16 ms: due at the new delay */
    dn_config c2 = p.cfg;
    c2.delay_us = 10000; /* 10 ms, applied at 10 ms */
    dn_pipe_set_config(&p, &c2, 10 * MS);
    dn_pipe_enqueue(&p, mk(1000, 2), 10 * MS); /* serialized 16..24 ms: due 34 ms */
    dn_counters c;
    dn_pipe_counters(&p, &c);
    CHECK_EQ(c.delay_line_pkts, 1);
    CHECK_EQ(c.queue_pkts, 2);
    uint64_t due[8];
    uint32_t seq[8];
    /* Packets 1 and 2 are due at 26 and 34 ms but wait behind packet 0, like dummynet. */
    CHECK_EQ(pop_due(&p, 50 * MS, due, seq), 0);
    CHECK_EQ(dn_pipe_next_event(&p), 108 * MS);
    CHECK_EQ(pop_due(&p, 108 * MS, due, seq), 3);
    CHECK_EQ(seq[0], 0);
    CHECK_EQ(seq[1], 1);
    CHECK_EQ(seq[2], 2);
    CHECK_EQ(due[0], 108 * MS);
    CHECK_EQ(due[1], 26 * MS);
    CHECK_EQ(due[2], 34 * MS);
}

TEST(delay_increase_applies_only_after_change)
{
    dn_pipe p;
    pipe_with(&p, cfg(1000000, 1000, 0, 50, 0)); /* 1 ms */
    dn_pipe_enqueue(&p, mk(1000, 0), 0);         /* done at 8 ms */
    dn_pipe_enqueue(&p, mk(1000, 1), 0);         /* done at 16 ms */
    dn_config c2 = p.cfg;
    c2.delay_us = 50000;
    dn_pipe_set_config(&p, &c2, 12 * MS);
    uint64_t due[4];
    CHECK_EQ(pop_due(&p, 100 * MS, due, NULL), 2);
    CHECK_EQ(due[0], 9 * MS);
    CHECK_EQ(due[1], 66 * MS);
}

TEST(long_run_rate_is_exact)
{
    /* 7 Mbit/s does not divide 8e9 ns*bit evenly; the remainder must not drift. */
    dn_pipe p;
    pipe_with(&p, cfg(7000000, 0, 0, 100000, 0));
    for (uint32_t i = 0; i < 7000; i++)
        dn_pipe_enqueue(&p, mk(1000, i), 0);
    uint64_t last = 0;
    dn_pipe_advance(&p, 10ULL * 1000 * MS);
    for (dn_pkt *h; (h = dn_pipe_peek_due(&p, UINT64_MAX / 2));) {
        last = h->t_due;
        dn_pool_free(&pool, dn_pipe_pop_sent(&p, true));
    }
    CHECK_EQ(last, 8000ULL * MS); /* 7000 * 8000 bit / 7e6 bit/s = 8 s exactly */
}

TEST(gbit_frame_time)
{
    uint64_t rem = 0;
    CHECK_EQ(dn_ser_ns(1514, 1000000000ULL, &rem), 12112);
    CHECK_EQ(dn_ser_ns(1514, 20000000ULL, NULL), 605600);
    CHECK_EQ(dn_ser_ns(1514, 0, NULL), 0);
}

TEST(batch_bound_from_queue_drain_time)
{
    const uint64_t B = 200 * US;
    /* 50 slots of 1522-byte frames at 1 Gbit/s drain in 608.8 us: an eighth is 76.1 us. */
    dn_config c = cfg(1000000000ULL, 0, 0, 50, 0);
    CHECK_EQ(dn_batch_bound_ns(&c, B, 1522), 76100);
    /* 25 slots: half of that. 100 slots: 152.2 us, still below the 200 us maximum. */
    c.queue_slots = 25;
    CHECK_EQ(dn_batch_bound_ns(&c, B, 1522), 38050);
    c.queue_slots = 100;
    CHECK_EQ(dn_batch_bound_ns(&c, B, 1522), 152200);
    /* A queue that takes long to drain leaves the configured maximum: 1 MiB at 1 Gbit/s
     * drains in 8.39 ms; 50 slots at 100 Mbit/s in 6.09 ms. */
    c = cfg(1000000000ULL, 0, 0, 0, 1 << 20);
    CHECK_EQ(dn_batch_bound_ns(&c, B, 1522), B);
    c = cfg(100000000ULL, 0, 0, 50, 0);
    CHECK_EQ(dn_batch_bound_ns(&c, B, 1522), B);
    /* A byte bound ignores the frame size: 1500 bytes at 10 Gbit/s drain in 1.2 us. */
    c = cfg(10000000000ULL, 0, 0, 0, 1500);
    CHECK_EQ(dn_batch_bound_ns(&c, B, 9022), 150);
    /* bw 0: nothing ever waits in the queue, the maximum applies; a maximum of 0 stays 0. */
    c = cfg(0, 0, 0, 5, 0);
    CHECK_EQ(dn_batch_bound_ns(&c, B, 1522), B);
    c = cfg(1000000000ULL, 0, 0, 50, 0);
    CHECK_EQ(dn_batch_bound_ns(&c, 0, 1522), 0);
    /* The largest bound at the smallest rate does not overflow: 100000 slots of 65535-byte
     * frames at 1 bit/s take 5.24e19 ns to drain, above 2^64 (1.8e19); an eighth fits. */
    c = cfg(1, 0, 0, DN_QSLOTS_MAX, 0);
    CHECK_EQ(dn_batch_bound_ns(&c, B, 65535), B);
    CHECK_EQ(dn_batch_bound_ns(&c, UINT64_MAX, 65535), 6553500000000000000ULL);
}

TEST(tx_error_counts)
{
    dn_pipe p;
    pipe_with(&p, cfg(0, 0, 0, 50, 0));
    dn_pipe_enqueue(&p, mk(100, 0), 0);
    dn_pipe_enqueue(&p, mk(100, 1), 0);
    dn_pkt *h = dn_pipe_peek_due(&p, 0);
    CHECK(h != NULL);
    dn_pool_free(&pool, dn_pipe_pop_sent(&p, false));
    dn_pool_free(&pool, dn_pipe_pop_sent(&p, true));
    dn_counters c;
    dn_pipe_counters(&p, &c);
    CHECK_EQ(c.tx_error_pkts, 1);
    CHECK_EQ(c.tx_pkts, 1);
    CHECK_EQ(c.tx_bytes, 100);
    dn_pipe_count_reject(&p, 9000, DN_REJECT_OVERSIZE);
    dn_pipe_count_reject(&p, 100, DN_REJECT_NOMEM);
    dn_pipe_counters(&p, &c);
    CHECK_EQ(c.oversize_pkts, 1);
    CHECK_EQ(c.drop_nomem_pkts, 1);
    CHECK_EQ(c.rx_pkts, 4);
    CHECK(invariant(&p));
}

TEST(reset_peak_goes_to_current)
{
    dn_pipe p;
    pipe_with(&p, cfg(1000000, 0, 0, 50, 0));
    for (uint32_t i = 0; i < 6; i++)
        dn_pipe_enqueue(&p, mk(1000, i), 0);
    dn_pipe_advance(&p, 24 * MS);
    dn_pipe_reset_peak(&p);
    dn_counters c;
    dn_pipe_counters(&p, &c);
    CHECK_EQ(c.queue_peak_pkts, 3);
    CHECK_EQ(c.queue_peak_bytes, 3000);
    drain_all(&p);
}

static int within_sigma(uint64_t n, uint64_t k, double plr, double sigmas)
{
    double mean = (double)n * plr, sd = sqrt((double)n * plr * (1 - plr));
    return fabs((double)k - mean) <= sigmas * sd + 1e-9;
}

static void loss_run(double plr, uint64_t n, uint64_t seed)
{
    dn_pipe p;
    dn_pipe_init(&p, seed, 0);
    dn_config c = cfg(0, 0, plr, 50, 0);
    dn_pipe_set_config(&p, &c, 0);
    static dn_pkt *one;
    if (!one)
        one = mk(64, 0);
    for (uint64_t i = 0; i < n; i++) {
        if (dn_pipe_enqueue(&p, one, i) == DN_ACCEPT)
            dn_pipe_pop_sent(&p, true); /* the same buffer, recycled: only counters matter */
    }
    dn_counters cn;
    dn_pipe_counters(&p, &cn);
    CHECK_EQ(cn.rx_pkts, n);
    CHECK_EQ(cn.tx_pkts + cn.drop_plr_pkts, n);
    if (!within_sigma(n, cn.drop_plr_pkts, plr, 4.0))
        fprintf(stderr, "  plr %g: %llu of %llu dropped\n", plr, (unsigned long long)cn.drop_plr_pkts,
                (unsigned long long)n);
    CHECK(within_sigma(n, cn.drop_plr_pkts, plr, 4.0));
}

TEST(loss_statistics)
{
    loss_run(0.01, 1000000, 1);
    loss_run(0.001, 1000000, 2);
    loss_run(0.000046, 4000000, 3);
    loss_run(0.5, 200000, 4);
    loss_run(0.0, 100000, 5);
    loss_run(1.0, 100000, 6);
}

TEST(loss_is_independent_of_position)
{
    /* Drops of consecutive packets must not be correlated: the fraction of drops that
     * follow a drop should also be plr (a lag-1 check on the PRNG as used). */
    dn_rng r;
    dn_rng_seed(&r, 7);
    const double plr = 0.1;
    uint64_t n = 2000000, drops = 0, pairs = 0;
    int prev = 0;
    for (uint64_t i = 0; i < n; i++) {
        int d = dn_rng_double(&r) < plr;
        drops += (uint64_t)d;
        if (prev && d)
            pairs++;
        prev = d;
    }
    CHECK(within_sigma(n, drops, plr, 4));
    CHECK(within_sigma(drops, pairs, plr, 4));
}

TEST(rng_seeding)
{
    dn_rng a, b, c;
    dn_rng_seed(&a, 123);
    dn_rng_seed(&b, 123);
    dn_rng_seed(&c, 124);
    int same = 1, diff = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = dn_rng_next(&a), y = dn_rng_next(&b), z = dn_rng_next(&c);
        same &= x == y;
        diff += x != z;
    }
    CHECK(same);
    CHECK(diff > 95);
    dn_rng_seed(&a, 0); /* seed 0 must not give the all-zero (stuck) state */
    CHECK(dn_rng_next(&a) != 0 || dn_rng_next(&a) != 0);
    double sum = 0;
    for (int i = 0; i < 1000000; i++) {
        double u = dn_rng_double(&a);
        CHECK(u >= 0.0 && u < 1.0);
        sum += u;
    }
    CHECK(fabs(sum / 1e6 - 0.5) < 4 * sqrt(1.0 / 12 / 1e6));
}

TEST(fuzz_invariants)
{
    /* Random arrivals, config changes and transmissions: the accounting identity,
     * the queue bound and FIFO order must hold after every step. */
    dn_rng r;
    dn_rng_seed(&r, 99);
    dn_pipe p;
    dn_pipe_init(&p, 5, 0);
    uint64_t t = 0;
    uint32_t seq = 0, next_tx = 0, dropped_seqs = 0;
    uint32_t *dropped = calloc(400000, sizeof *dropped);
    uint64_t last_tx_time = 0;
    for (int step = 0; step < 300000; step++) {
        t += dn_rng_next(&r) % (200 * US);
        uint64_t op = dn_rng_next(&r) % 100;
        if (op < 2) {
            dn_config c = p.cfg;
            c.bw_bps = (dn_rng_next(&r) % 4) ? 1000000 + dn_rng_next(&r) % 100000000 : 0;
            c.delay_us = dn_rng_next(&r) % 50000;
            c.plr = (dn_rng_next(&r) % 3) ? 0.0 : 0.05;
            if (dn_rng_next(&r) % 2) {
                c.queue_slots = 1 + (uint32_t)(dn_rng_next(&r) % 100);
                c.queue_bytes = 0;
            } else {
                c.queue_slots = 0;
                c.queue_bytes = 1500 + dn_rng_next(&r) % 100000;
            }
            CHECK(!dn_config_check(&c));
            dn_pipe_set_config(&p, &c, t);
            dn_pipe_reset_peak(&p); /* the bound may have shrunk below what is queued */
        } else if (op < 80) {
            uint32_t len = 60 + (uint32_t)(dn_rng_next(&r) % 1455);
            dn_pkt *k = mk(len, seq);
            dn_verdict v = dn_pipe_enqueue(&p, k, t);
            if (v != DN_ACCEPT) {
                dn_pool_free(&pool, k);
                dropped[dropped_seqs++] = seq;
            }
            seq++;
            /* A shrunk bound leaves what was queued in place (nothing queued is ever
             * dropped), so the bound is checked where it acts: an accepted packet never
             * takes the queue above it. */
            dn_counters c;
            dn_pipe_counters(&p, &c);
            if (v == DN_ACCEPT) {
                if (p.cfg.queue_slots)
                    CHECK(c.queue_pkts <= p.cfg.queue_slots);
                else
                    CHECK(c.queue_bytes <= p.cfg.queue_bytes);
            }
        } else {
            dn_pipe_advance(&p, t);
            for (dn_pkt *h; (h = dn_pipe_peek_due(&p, t));) {
                uint32_t s = seq_of(h);
                /* skip over dropped sequence numbers: order must be preserved */
                CHECK(s >= next_tx);
                next_tx = s + 1;
                CHECK(h->t_due <= t);
                CHECK(t >= last_tx_time);
                last_tx_time = t;
                dn_pool_free(&pool, dn_pipe_pop_sent(&p, true));
            }
        }
        CHECK(invariant(&p));
        if (!g_ok)
            break;
    }
    drain_all(&p);
    dn_counters c;
    dn_pipe_counters(&p, &c);
    CHECK_EQ(c.tx_pkts + c.drop_plr_pkts + c.drop_queue_pkts, seq);
    CHECK_EQ(c.drop_plr_pkts + c.drop_queue_pkts, dropped_seqs);
    free(dropped);
}

TEST(json_rendering)
{
    dn_buf b;
    dn_buf_init(&b);
    dn_config c = cfg(20000000, 50000, 0.000046, 0, 65536);
    dn_json_config(&b, &c);
    CHECK(strstr(b.s, "\"queue_slots\":null,\"queue_bytes\":65536") != NULL);
    const char *plr = strstr(b.s, "\"plr\":");
    CHECK(plr && strtod(plr + 6, NULL) == 0.000046); /* round-trips */
    dn_buf_free(&b);
    c = cfg(0, 0, 0.1, 50, 0);
    dn_json_config(&b, &c);
    CHECK(strstr(b.s, "\"queue_slots\":50,\"queue_bytes\":null") != NULL);
    CHECK(strstr(b.s, "\"plr\":0.10000000000000001") != NULL);
    dn_buf_free(&b);
    dn_buf_json_string(&b, "a\"b\\c\n");
    CHECK(!strcmp(b.s, "\"a\\\"b\\\\c\\u000a\""));
    dn_buf_free(&b);
}

TEST(pool_memory_cap)
{
    atomic_size_t used = 0;
    dn_pool small;
    dn_pool_init(&small, &used, 64 * 1024);
    dn_pkt *ps[100];
    int n = 0;
    while (n < 100 && (ps[n] = dn_pool_alloc(&small, 1514)))
        n++;
    CHECK(n > 10 && n < 100);
    for (int i = 0; i < n; i++)
        dn_pool_free(&small, ps[i]);
    CHECK_EQ(atomic_load(&used), 0);
    dn_pkt *j = dn_pool_alloc(&small, 9018);
    CHECK(j && j->cap >= 9018);
    dn_pool_free(&small, j);
    dn_pool_destroy(&small);
}

int main(void)
{
    dn_pool_init(&pool, &mem, (size_t)1 << 34);
    RUN(defaults_are_dummynets);
    RUN(config_validation);
    RUN(serialization_times);
    RUN(serializer_queue_occupancy_over_time);
    RUN(unlimited_bw_never_queues);
    RUN(queue_bound_slots);
    RUN(queue_bound_bytes_never_exceeded);
    RUN(live_bw_change_keeps_queue_and_rescales_current_packet);
    RUN(bw_to_unlimited_releases_queue);
    RUN(live_delay_change_keeps_delay_line_and_fifo);
    RUN(delay_increase_applies_only_after_change);
    RUN(long_run_rate_is_exact);
    RUN(gbit_frame_time);
    RUN(batch_bound_from_queue_drain_time);
    RUN(tx_error_counts);
    RUN(reset_peak_goes_to_current);
    RUN(loss_statistics);
    RUN(loss_is_independent_of_position);
    RUN(rng_seeding);
    RUN(fuzz_invariants);
    RUN(json_rendering);
    RUN(pool_memory_cap);
    return CHECK_SUMMARY();
}
