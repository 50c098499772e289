#include "json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dn_buf_init(dn_buf *b)
{
    b->s = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}

void dn_buf_free(dn_buf *b)
{
    free(b->s);
    dn_buf_init(b);
}

static int reserve(dn_buf *b, size_t extra)
{
    if (b->oom)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = 1;
        return -1;
    }
    b->s = s;
    b->cap = cap;
    return 0;
}

void dn_buf_printf(dn_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(b, (size_t)n) < 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void dn_buf_json_string(dn_buf *b, const char *s)
{
    dn_buf_printf(b, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            dn_buf_printf(b, "\\%c", ch);
        else if (ch < 0x20)
            dn_buf_printf(b, "\\u%04x", ch);
        else
            dn_buf_printf(b, "%c", ch);
    }
    dn_buf_printf(b, "\"");
}

void dn_json_config(dn_buf *b, const dn_config *c)
{
    dn_buf_printf(b, "{\"bw_bps\":%" PRIu64 ",\"delay_us\":%" PRIu64 ",\"plr\":%.17g,", c->bw_bps,
                  c->delay_us, c->plr);
    if (c->queue_slots)
        dn_buf_printf(b, "\"queue_slots\":%u,\"queue_bytes\":null,", c->queue_slots);
    else
        dn_buf_printf(b, "\"queue_slots\":null,\"queue_bytes\":%" PRIu64 ",", c->queue_bytes);
    /* "aqm" only with RED/GRED (a drop-tail pipe's config is schema 1's five fields): its
     * parameters in ipfw's units (thresholds in the queue's unit). */
    const dn_aqm *a = &c->aqm;
    if (a->type == DN_AQM_DROPTAIL)
        b->s[b->len - 1] = '}'; /* the ',' after the queue */
    else
        dn_buf_printf(b,
                      "\"aqm\":{\"type\":\"%s\",\"w_q\":%.17g,\"min_th\":%" PRIu64 ",\"max_th\":%" PRIu64
                      ",\"max_p\":%.17g,\"ecn\":%s}}",
                      a->type == DN_AQM_GRED ? "gred" : "red", a->w_q, a->min_th, a->max_th, a->max_p,
                      a->ecn ? "true" : "false");
}

void dn_json_counters(dn_buf *b, const dn_counters *c)
{
#define F(name) "\"" #name "\":%" PRIu64
    dn_buf_printf(b,
                  "{" F(rx_pkts) "," F(rx_bytes) "," F(tx_pkts) "," F(tx_bytes) "," F(drop_plr_pkts) ","
                  F(drop_plr_bytes) "," F(drop_queue_pkts) "," F(drop_queue_bytes) "," F(tx_error_pkts) ","
                  F(oversize_pkts) "," F(queue_pkts) "," F(queue_bytes) "," F(queue_peak_pkts) ","
                  F(queue_peak_bytes) "," F(delay_line_pkts) ","
                  /* extensions beyond the documented schema, see README.md */
                  F(delay_line_bytes) "," F(drop_nomem_pkts) "," F(rx_kernel_drops) "," F(csum_partial_pkts) ","
                  F(tx_late_ns_sum) "," F(tx_late_ns_max) "," F(red_drop_pkts) "," F(red_drop_bytes) ","
                  F(marked_pkts) "}",
                  c->rx_pkts, c->rx_bytes, c->tx_pkts, c->tx_bytes, c->drop_plr_pkts, c->drop_plr_bytes,
                  c->drop_queue_pkts, c->drop_queue_bytes, c->tx_error_pkts, c->oversize_pkts, c->queue_pkts,
                  c->queue_bytes, c->queue_peak_pkts, c->queue_peak_bytes, c->delay_line_pkts,
                  c->delay_line_bytes, c->drop_nomem_pkts, c->rx_kernel_drops, c->csum_partial_pkts,
                  c->tx_late_ns_sum, c->tx_late_ns_max, c->red_drop_pkts, c->red_drop_bytes, c->marked_pkts);
#undef F
}
