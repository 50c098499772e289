/* Shared declarations of the dnpipe program (daemon, control client, argument checks). */
#ifndef DNPIPE_DNPIPE_H
#define DNPIPE_DNPIPE_H

#include <stdbool.h>
#include <stdint.h>

#define DNPIPE_VERSION "1.2.0"
#define DNPIPE_SCHEMA_VERSION 1

/* Exit codes shared by `run` and `ctl`. */
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

typedef struct {
    const char *a, *b, *control, *pidfile;
    bool have_seed;
    uint64_t seed;
    uint64_t batch_us;     /* minimum loop period under load, see README */
    uint64_t mem_limit;    /* bytes of packet buffers per process */
    unsigned ring_frames;  /* per receive ring */
    int rt_prio;           /* 0: normal scheduling */
    int threads;           /* data threads: 1 (both directions) or 2 (one each) */
} dn_run_opts;

int dn_run(const dn_run_opts *o);
int dn_ctl_main(int argc, char **argv);

/* Strict number parsing: whole string, no sign, no units. Return 0 on success. */
int dn_parse_u64(const char *s, uint64_t *out);
int dn_parse_prob(const char *s, double *out);

void dn_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
