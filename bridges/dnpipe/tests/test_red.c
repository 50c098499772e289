/* Unit tests of RED/GRED/ECN (src/red.c) and of the pipe with it (src/core.c). Every expected
 * number is computed by hand from dummynet's fixed-point formulas (16 fractional bits); the
 * arithmetic is written next to each check. */
#include "core.h"
#include "json.h"
#include "red.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* A scripted random source: returns the values in order. */
typedef struct { const uint32_t *v; int n, i; } script;
static uint32_t scripted(void *ctx)
{
    script *s = ctx;
    return s->i < s->n ? s->v[s->i++] : 0;
}

static dn_aqm aqm(dn_aqm_type t, bool ecn, double w_q, uint64_t min_th, uint64_t max_th, double max_p)
{
    dn_aqm a = {.type = t, .ecn = ecn, .w_q = w_q, .min_th = min_th, .max_th = max_th, .max_p = max_p};
    return a;
}

TEST(check_matches_ipfw)
{
    dn_aqm a = aqm(DN_AQM_RED, false, 0.002, 5, 15, 0.1);
    CHECK(dn_aqm_check(&a, false) == NULL);
    a.w_q = 0;
    CHECK(dn_aqm_check(&a, false) != NULL); /* 0 < w_q <= 1 */
    a.w_q = 1.5;
    CHECK(dn_aqm_check(&a, false) != NULL);
    a.w_q = 0.002;
    a.max_p = 1.01;
    CHECK(dn_aqm_check(&a, false) != NULL); /* 0 <= max_p <= 1 */
    a.max_p = 0;
    CHECK(dn_aqm_check(&a, false) == NULL);
    a.min_th = 15;
    CHECK(dn_aqm_check(&a, false) != NULL); /* min_th < max_th without ecn */
    a.ecn = true;
    CHECK(dn_aqm_check(&a, false) == NULL); /* min_th <= max_th with ecn */
    a.min_th = 16;
    CHECK(dn_aqm_check(&a, false) != NULL);
    a.min_th = 0;
    a.max_th = 0;
    CHECK(dn_aqm_check(&a, false) != NULL); /* max_th > 0 */
    dn_aqm d = aqm(DN_AQM_DROPTAIL, true, 0, 0, 0, 0);
    CHECK(dn_aqm_check(&d, false) != NULL); /* "enable red/gred for ECN" */
    d.ecn = false;
    CHECK(dn_aqm_check(&d, false) == NULL);
    dn_aqm big = aqm(DN_AQM_RED, false, 0.5, 1, 200000, 0.1);
    CHECK(dn_aqm_check(&big, false) != NULL); /* above 100000 slots */
    CHECK(dn_aqm_check(&big, true) == NULL);  /* fine in bytes */
}

TEST(config_constants)
{
    dn_red r;
    memset(&r, 0, sizeof r);
    dn_aqm a = aqm(DN_AQM_GRED, false, 0.002, 5, 15, 0.1);
    dn_red_config(&r, &a, 10000000, false);
    CHECK_EQ(r.w_q, 131);           /* (int)(0.002 * 65536) = (int)131.07 */
    CHECK_EQ(r.max_p, 6553);        /* (int)(0.1 * 65536) = (int)6553.6 */
    CHECK_EQ(r.min_th, 5 << 16);
    CHECK_EQ(r.max_th, 15 << 16);
    CHECK_EQ(r.c_1, 42945740);      /* 6553 * 65536 / 10 = 429457408 / 10 */
    CHECK_EQ(r.c_2, 214728700);     /* 42945740 * (5 << 16) >> 16 */
    CHECK_EQ(r.c_3, 3932);          /* (65536 - 6553) / 15 = 58983 / 15 */
    CHECK_EQ(r.c_4, 52430);         /* 65536 - 2 * 6553 */
    /* s = 1000 * 512 * 8 * 65536 / 1e7 = 26843 (scaled ticks); idle = 26843 * 3 / 131 = 614;
     * step = 614 / 256 = 2 ticks; weight = 65405 * 65405 >> 16 = 65274. */
    CHECK_EQ(r.lookup_step, 2);
    CHECK_EQ(r.w_q_lookup[0], 65405);       /* 65536 - 131 */
    CHECK_EQ(r.w_q_lookup[1], 65143);       /* 65405 * 65274 >> 16 = 4269245970 >> 16 */
    /* bw 0 (unlimited): s = 0, step 1, weight = 1 - w_q. */
    dn_red_config(&r, &a, 0, false);
    CHECK_EQ(r.lookup_step, 1);
    CHECK_EQ(r.w_q_lookup[1], 65274);       /* 65405 * 65405 >> 16 */
}

TEST(average_and_idle_decay)
{
    dn_red r;
    memset(&r, 0, sizeof r);
    dn_aqm a = aqm(DN_AQM_RED, false, 0.5, 50, 100, 0.1);
    dn_red_config(&r, &a, 0, false);
    script sc = {0};
    /* avg <- avg + (SCALE(q) - avg) * w_q */
    CHECK(!dn_red_drops(&r, &a, false, 10, 1500, 0, 0, scripted, &sc));
    CHECK_EQ(r.avg, 327680);        /* 0 + 655360 * 32768 >> 16 = 5.0 */
    CHECK(!dn_red_drops(&r, &a, false, 10, 1500, 0, 0, scripted, &sc));
    CHECK_EQ(r.avg, 491520);        /* 327680 + 327680 / 2 = 7.5 */
    /* Empty queue since tick 100, now tick 100: t = 0, avg *= (1 - w_q)^1. */
    CHECK(!dn_red_drops(&r, &a, false, 0, 1500, 100, 100, scripted, &sc));
    CHECK_EQ(r.avg, 245760);        /* 491520 * 32768 >> 16 */
    /* One step (1 tick) later: table[1] = 32768 * 32768 >> 16 = 16384, a quarter. */
    CHECK(!dn_red_drops(&r, &a, false, 0, 1500, 101, 100, scripted, &sc));
    CHECK_EQ(r.avg, 61440);         /* 245760 * 16384 >> 16 */
    /* Idle for the whole table or more: 0. */
    CHECK(!dn_red_drops(&r, &a, false, 0, 1500, 400, 100, scripted, &sc));
    CHECK_EQ(r.avg, 0);
}

TEST(probability_and_count)
{
    dn_red r;
    memset(&r, 0, sizeof r);
    /* w_q = 1: avg is the queue exactly. */
    dn_aqm a = aqm(DN_AQM_RED, false, 1.0, 5, 15, 0.1);
    dn_red_config(&r, &a, 0, false);
    const uint32_t rnd[] = {10000, 20000};
    script sc = {rnd, 2, 0};
    CHECK(!dn_red_drops(&r, &a, false, 1, 1500, 0, 0, scripted, &sc)); /* below min_th */
    CHECK_EQ(r.count, -1);
    /* q 10: p_b = (42945740 * 655360 >> 16) - 214728700 = 214728700, >> 16 = 3276 (0.05).
     * First arrival in the region: count 0, draws the random number 10000, accepts. */
    CHECK(!dn_red_drops(&r, &a, false, 10, 1500, 0, 0, scripted, &sc));
    CHECK_EQ(r.count, 0);
    CHECK_EQ(r.random, 10000);
    /* Then drop when p_b * count > 10000: 3276, 6552, 9828 no; 13104 yes (the 4th). */
    CHECK(!dn_red_drops(&r, &a, false, 10, 1500, 0, 0, scripted, &sc));
    CHECK(!dn_red_drops(&r, &a, false, 10, 1500, 0, 0, scripted, &sc));
    CHECK(!dn_red_drops(&r, &a, false, 10, 1500, 0, 0, scripted, &sc));
    CHECK_EQ(r.count, 3);
    CHECK(dn_red_drops(&r, &a, false, 10, 1500, 0, 0, scripted, &sc));
    CHECK_EQ(r.count, 0);
    CHECK_EQ(r.random, 20000);      /* a new random number after the drop */
    /* avg >= max_th: RED drops, count -1. */
    CHECK(dn_red_drops(&r, &a, false, 15, 1500, 0, 0, scripted, &sc));
    CHECK_EQ(r.count, -1);
}

TEST(gentle_region)
{
    dn_red r;
    memset(&r, 0, sizeof r);
    dn_aqm a = aqm(DN_AQM_GRED, false, 1.0, 5, 15, 0.1);
    dn_red_config(&r, &a, 0, false);
    const uint32_t rnd[] = {50000, 65535};
    script sc = {rnd, 2, 0};
    CHECK(!dn_red_drops(&r, &a, false, 1, 1500, 0, 0, scripted, &sc)); /* count -1 */
    /* q 25 (gentle region 15..30): p_b = 3932 * 25 - 52430 = 45870 (0.70). count -1 -> 0:
     * draw 50000, accept; count 1: 45870 > 50000 no; count 2: 91740 > 50000 drop. */
    CHECK(!dn_red_drops(&r, &a, false, 25, 1500, 0, 0, scripted, &sc));
    CHECK(!dn_red_drops(&r, &a, false, 25, 1500, 0, 0, scripted, &sc));
    CHECK(dn_red_drops(&r, &a, false, 25, 1500, 0, 0, scripted, &sc));
    /* q 30 = 2 max_th: p_b = 117960 - 52430 = 65530; count 1 against 65535: not yet. */
    CHECK(!dn_red_drops(&r, &a, false, 30, 1500, 0, 0, scripted, &sc));
    CHECK(dn_red_drops(&r, &a, false, 30, 1500, 0, 0, scripted, &sc)); /* count 2: 131060 */
}

TEST(bytes_scale_by_length)
{
    dn_red r;
    memset(&r, 0, sizeof r);
    dn_aqm a = aqm(DN_AQM_RED, false, 1.0, 5000, 15000, 0.1);
    dn_red_config(&r, &a, 0, false);
    CHECK_EQ(r.c_1, 42945);         /* 429457408 / 10000 */
    const uint32_t rnd[] = {1700, 1700};
    script sc = {rnd, 2, 0};
    CHECK(!dn_red_drops(&r, &a, true, 100, 750, 0, 0, scripted, &sc)); /* count -1 */
    /* q 10000 bytes: p_b = (42945 * 10000 - 42945 * 5000) >> 16 = 214725000 >> 16 = 3276;
     * a 750-byte packet: 3276 * 750 / 1500 = 1638. count 0 draws 1700; count 1: 1638 no;
     * count 2: 3276 > 1700 drop. */
    CHECK(!dn_red_drops(&r, &a, true, 10000, 750, 0, 0, scripted, &sc));
    CHECK(!dn_red_drops(&r, &a, true, 10000, 750, 0, 0, scripted, &sc));
    CHECK(dn_red_drops(&r, &a, true, 10000, 750, 0, 0, scripted, &sc));
}

TEST(ecn_decides_above_min_th)
{
    dn_red r;
    memset(&r, 0, sizeof r);
    dn_aqm a = aqm(DN_AQM_RED, true, 1.0, 5, 15, 0.1);
    dn_red_config(&r, &a, 0, false);
    script sc = {0};
    CHECK(!dn_red_drops(&r, &a, false, 4, 1500, 0, 0, scripted, &sc));
    /* avg == min_th: not "above", p_b 0: accepted. */
    CHECK(!dn_red_drops(&r, &a, false, 5, 1500, 0, 0, scripted, &sc));
    /* Every arrival above min_th, and above max_th, is a mark (or drop) decision. */
    for (int i = 0; i < 5; i++)
        CHECK(dn_red_drops(&r, &a, false, 6, 1500, 0, 0, scripted, &sc));
    CHECK(dn_red_drops(&r, &a, false, 40, 1500, 0, 0, scripted, &sc));
}

TEST(rfc1624_example)
{
    /* RFC 1624 section 4: m 0x5555 -> 0x3285 in a header with HC 0xDD2F gives HC' 0x0000. */
    CHECK_EQ(dn_csum_adjust(0xDD2F, 0x5555, 0x3285), 0x0000);
}

static uint16_t ip_csum(const uint8_t *h, int n)
{
    uint32_t s = 0;
    for (int i = 0; i < n; i += 2)
        s += (uint32_t)(h[i] << 8 | h[i + 1]);
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)~s;
}

static int ipv4_frame(uint8_t *f, uint8_t tos, bool vlan)
{
    memset(f, 0, 80);
    int off = 12;
    if (vlan) {
        f[12] = 0x81, f[13] = 0x00, f[14] = 0x00, f[15] = 0x05;
        off = 16;
    }
    f[off] = 0x08, f[off + 1] = 0x00;
    uint8_t *ip = f + off + 2;
    ip[0] = 0x45, ip[1] = tos, ip[3] = 40, ip[8] = 64, ip[9] = 6;
    ip[12] = 10, ip[15] = 1, ip[16] = 10, ip[19] = 2;
    uint16_t c = ip_csum(ip, 20);
    ip[10] = (uint8_t)(c >> 8), ip[11] = (uint8_t)c;
    return off + 2;
}

TEST(mark_ipv4)
{
    uint8_t f[80];
    for (int vlan = 0; vlan < 2; vlan++) {
        int o = ipv4_frame(f, 0x02, vlan); /* ECT(0) */
        CHECK_EQ(dn_ecn_mark(f, 80), 1);
        CHECK_EQ(f[o + 1], 0x03);
        CHECK_EQ(ip_csum(f + o, 20), 0); /* the updated checksum verifies */
        o = ipv4_frame(f, 0xb9, vlan);     /* DSCP 46, ECT(1) */
        CHECK_EQ(dn_ecn_mark(f, 80), 1);
        CHECK_EQ(f[o + 1], 0xbb);
        CHECK_EQ(ip_csum(f + o, 20), 0);
    }
    int o = ipv4_frame(f, 0x00, false); /* not-ECT: to be dropped, left alone */
    CHECK_EQ(dn_ecn_mark(f, 80), 0);
    CHECK_EQ(f[o + 1], 0x00);
    o = ipv4_frame(f, 0x03, false);     /* CE already: passes unchanged */
    uint16_t c = (uint16_t)(f[o + 10] << 8 | f[o + 11]);
    CHECK_EQ(dn_ecn_mark(f, 80), 1);
    CHECK_EQ((f[o + 10] << 8 | f[o + 11]), c);
    ipv4_frame(f, 0x02, false);
    CHECK_EQ(dn_ecn_mark(f, 30), 0);   /* truncated header: cannot mark */
    f[12] = 0x08, f[13] = 0x06;         /* ARP */
    CHECK_EQ(dn_ecn_mark(f, 80), 0);
}

TEST(mark_ipv6)
{
    uint8_t f[80];
    memset(f, 0, sizeof f);
    f[12] = 0x86, f[13] = 0xdd;
    /* version 6, traffic class 0xb8 | ECT(0) = 0xba: byte0 0x6b, byte1 0xa0 */
    f[14] = 0x6b, f[15] = 0xa0;
    CHECK_EQ(dn_ecn_mark(f, 80), 1);
    CHECK_EQ(f[14], 0x6b);
    CHECK_EQ(f[15], 0xb0);              /* traffic class 0xbb: CE */
    f[15] = 0x80;                       /* traffic class 0xb8: not-ECT */
    CHECK_EQ(dn_ecn_mark(f, 80), 0);
    CHECK_EQ(f[15], 0x80);
    CHECK_EQ(dn_ecn_mark(f, 50), 0);    /* shorter than the fixed header */
}

static dn_pkt *frame_pkt(uint8_t tos)
{
    dn_pkt *p = calloc(1, sizeof *p + 1514);
    if (!p)
        abort();
    p->len = 1514;
    p->cap = 1514;
    ipv4_frame(p->data, tos, false);
    return p;
}

TEST(pipe_marks_instead_of_dropping)
{
    dn_pipe p;
    dn_pipe_init(&p, 1, 0);
    dn_config c;
    dn_config_default(&c);
    c.bw_bps = 10000000; /* 1514 B in 1211.2 us */
    c.queue_slots = 100;
    c.aqm = aqm(DN_AQM_RED, true, 1.0, 3, 50, 0.1);
    CHECK(dn_config_check(&c) == NULL);
    dn_pipe_set_config(&p, &c, 0);
    /* 20 ECT(0) packets at once: #1 goes into service, #2..#4 find 0..2 waiting (avg <= 3 =
     * min_th, unmarked), #5 finds 3 waiting (== min_th: p_b 0, unmarked), #6..#20 find 4..18
     * waiting: marked. Nothing dropped. */
    dn_pkt *pk[20];
    for (int i = 0; i < 20; i++) {
        pk[i] = frame_pkt(0x02);
        CHECK_EQ(dn_pipe_enqueue(&p, pk[i], 1000), DN_ACCEPT);
    }
    dn_counters k;
    dn_pipe_counters(&p, &k);
    CHECK_EQ(k.marked_pkts, 15);
    CHECK_EQ(k.drop_queue_pkts, 0);
    CHECK_EQ(pk[4]->data[15], 0x02);
    CHECK_EQ(pk[5]->data[15], 0x03);
    CHECK_EQ(ip_csum(pk[5]->data + 14, 20), 0);
    /* A not-ECT packet now is dropped by RED, counted under the queue's drops too. */
    dn_pkt *ne = frame_pkt(0x00);
    CHECK_EQ(dn_pipe_enqueue(&p, ne, 1000), DN_DROP_RED);
    free(ne);
    dn_pipe_counters(&p, &k);
    CHECK_EQ(k.red_drop_pkts, 1);
    CHECK_EQ(k.drop_queue_pkts, 1);
    CHECK_EQ(k.rx_pkts, k.tx_pkts + k.drop_plr_pkts + k.drop_queue_pkts + k.queue_pkts + k.delay_line_pkts);
    /* Drain; then, idle for more than the table (256 ticks of 1 ms at bw 10 Mbit/s with
     * w_q 1: step 1), the average is 0 and the next arrival is not marked. */
    dn_pipe_advance(&p, 1000000000ULL);
    while (dn_pipe_peek_due(&p, 1000000000ULL))
        free(dn_pipe_pop_sent(&p, true));
    dn_pkt *late = frame_pkt(0x02);
    CHECK_EQ(dn_pipe_enqueue(&p, late, 1000000000ULL), DN_ACCEPT);
    CHECK_EQ(late->data[15], 0x02);
    dn_pipe_counters(&p, &k);
    CHECK_EQ(k.marked_pkts, 15);
    /* Back to drop-tail: RED off, nothing marked any more. */
    c.aqm = aqm(DN_AQM_DROPTAIL, false, 0, 0, 0, 0);
    dn_pipe_set_config(&p, &c, 1000000000ULL);
    dn_pipe_advance(&p, 2000000000ULL);
    while (dn_pipe_peek_due(&p, 2000000000ULL))
        free(dn_pipe_pop_sent(&p, true));
}

TEST(pipe_red_without_ecn_drops)
{
    dn_pipe p;
    dn_pipe_init(&p, 1, 0);
    dn_config c;
    dn_config_default(&c);
    c.bw_bps = 10000000;
    c.queue_slots = 100;
    c.aqm = aqm(DN_AQM_RED, false, 1.0, 3, 6, 0.1);
    dn_pipe_set_config(&p, &c, 0);
    /* At once: from the 8th arrival on, 6 or more wait: avg >= max_th, every ECT packet is
     * dropped (no ecn). */
    int dropped = 0;
    for (int i = 0; i < 20; i++) {
        dn_pkt *x = frame_pkt(0x02);
        if (dn_pipe_enqueue(&p, x, 1000) != DN_ACCEPT) {
            dropped++;
            CHECK_EQ(x->data[15], 0x02); /* never marked */
            free(x);
        }
    }
    dn_counters k;
    dn_pipe_counters(&p, &k);
    CHECK_EQ(k.marked_pkts, 0);
    CHECK_EQ(k.red_drop_pkts, (uint64_t)dropped);
    CHECK(dropped >= 13); /* arrivals 8..20 find >= 6 waiting */
    dn_pipe_advance(&p, 1000000000ULL);
    while (dn_pipe_peek_due(&p, 1000000000ULL))
        free(dn_pipe_pop_sent(&p, true));
}

TEST(parse_and_render)
{
    dn_aqm a = {.type = DN_AQM_RED};
    CHECK(dn_parse_red("0.002/5/15/0.1", &a) == 0);
    CHECK(a.w_q == 0.002 && a.min_th == 5 && a.max_th == 15 && a.max_p == 0.1);
    const char *badv[] = {"", "0.002/5/15", "0.002/5/15/0.1/2", "x/5/15/0.1", "0.002/-5/15/0.1",
                          "0.002/5/15/nan", "0.002//15/0.1", "0.002/5k/15/0.1", "0.002/5/15/0.1/"};
    for (size_t i = 0; i < sizeof badv / sizeof *badv; i++) {
        dn_aqm b = a;
        CHECK(dn_parse_red(badv[i], &b) != 0);
        CHECK(dn_aqm_equal(&a, &b)); /* unchanged on error */
    }
    dn_config c;
    dn_config_default(&c);
    dn_buf b;
    dn_buf_init(&b);
    dn_json_config(&b, &c);
    CHECK(strstr(b.s, "aqm") == NULL);
    CHECK(strcmp(b.s + b.len - 19, "\"queue_bytes\":null}") == 0);
    dn_buf_free(&b);
    c.aqm = aqm(DN_AQM_GRED, true, 0.5, 3, 10, 0.25);
    dn_json_config(&b, &c);
    CHECK(strstr(b.s, "\"aqm\":{\"type\":\"gred\",\"w_q\":0.5,\"min_th\":3,\"max_th\":10,\"max_p\":0.25,"
                      "\"ecn\":true}}") != NULL);
    dn_buf_free(&b);
    dn_counters k = {0};
    k.marked_pkts = 7;
    dn_json_counters(&b, &k);
    CHECK(strstr(b.s, "\"marked_pkts\":7}") != NULL);
    dn_buf_free(&b);
}

int main(void)
{
    RUN(parse_and_render);
    RUN(check_matches_ipfw);
    RUN(config_constants);
    RUN(average_and_idle_decay);
    RUN(probability_and_count);
    RUN(gentle_region);
    RUN(bytes_scale_by_length);
    RUN(ecn_decides_above_min_th);
    RUN(rfc1624_example);
    RUN(mark_ipv4);
    RUN(mark_ipv6);
    RUN(pipe_marks_instead_of_dropping);
    RUN(pipe_red_without_ecn_drops);
    return CHECK_SUMMARY();
}
