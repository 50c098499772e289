/* JSON rendering of configs and counters (pure, shared by daemon and tests). */
#ifndef DNPIPE_JSON_H
#define DNPIPE_JSON_H

#include "core.h"
#include <stdarg.h>

typedef struct {
    char  *s;
    size_t len, cap;
    int    oom;
} dn_buf;

void dn_buf_init(dn_buf *b);
void dn_buf_free(dn_buf *b);
void dn_buf_printf(dn_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dn_buf_json_string(dn_buf *b, const char *s);

void dn_json_config(dn_buf *b, const dn_config *cfg);
void dn_json_counters(dn_buf *b, const dn_counters *c);

#endif
