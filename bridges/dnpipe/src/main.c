/* dnpipe: a dummynet-faithful userspace pipe between two Ethernet interfaces.
 * Command-line entry point: `run` (the daemon), `ctl` (the control client), --version. */
#include "dnpipe.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dn_err(const char *fmt, ...)
{
    /* One line on stderr per error: the driver shows it as is. */
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    for (char *p = line; *p; p++)
        if (*p == '\n')
            *p = ' ';
    fprintf(stderr, "dnpipe: error: %s\n", line);
}

int dn_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return -1;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int dn_parse_prob(const char *s, double *out)
{
    if (!s || !*s)
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static void usage(FILE *f)
{
    fputs("usage: dnpipe run --a IFNAME --b IFNAME --control SOCKPATH [--pidfile PATH] [--seed N]\n"
          "                  [--batch-us N] [--mem-limit BYTES] [--ring-frames N] [--rt-prio N]\n                  [--threads 1|2]\n"
          "       dnpipe ctl --control SOCKPATH show\n"
          "       dnpipe ctl --control SOCKPATH set --dir forward|reverse|both [--bw BPS] [--delay-us N]\n"
          "                  [--plr P] [--queue-slots N | --queue-bytes N]\n"
          "                  [--red W_Q/MIN_TH/MAX_TH/MAX_P | --gred W_Q/MIN_TH/MAX_TH/MAX_P | --aqm droptail]\n"
          "                  [--ecn 0|1]   (RED thresholds in the queue's unit: slots or bytes)\n"
          "       dnpipe ctl --control SOCKPATH reset-peak [--dir forward|reverse|both]\n"
          "       dnpipe ctl --control SOCKPATH watch --interval-ms N\n"
          "       dnpipe --version\n",
          f);
}

static int run_main(int argc, char **argv)
{
    dn_run_opts o = {0};
    o.batch_us = 200;
    o.mem_limit = 1ULL << 30;
    o.ring_frames = 8192;
    /* Real-time priority for the data threads by default: on a shared or virtual host it
     * turns departure lateness from milliseconds into microseconds (see README). */
    o.rt_prio = 10;
    o.threads = 1;
    for (int i = 0; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "-h") || !strcmp(k, "--help")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            dn_err("run: option %s needs a value (or is unknown)", k);
            return EXIT_USAGE;
        }
        const char *v = argv[++i];
        uint64_t n;
        if (!strcmp(k, "--a"))
            o.a = v;
        else if (!strcmp(k, "--b"))
            o.b = v;
        else if (!strcmp(k, "--control"))
            o.control = v;
        else if (!strcmp(k, "--pidfile"))
            o.pidfile = v;
        else if (!strcmp(k, "--seed")) {
            if (dn_parse_u64(v, &o.seed)) {
                dn_err("run: --seed %s is not an unsigned 64-bit integer", v);
                return EXIT_USAGE;
            }
            o.have_seed = true;
        } else if (!strcmp(k, "--batch-us")) {
            if (dn_parse_u64(v, &o.batch_us) || o.batch_us > 1000) {
                dn_err("run: --batch-us %s is not an integer in 0..1000", v);
                return EXIT_USAGE;
            }
        } else if (!strcmp(k, "--mem-limit")) {
            if (dn_parse_u64(v, &o.mem_limit) || o.mem_limit < (1ULL << 20)) {
                dn_err("run: --mem-limit %s is not a byte count >= 1048576", v);
                return EXIT_USAGE;
            }
        } else if (!strcmp(k, "--ring-frames")) {
            if (dn_parse_u64(v, &n) || n < 256 || n > (1U << 20)) {
                dn_err("run: --ring-frames %s is not an integer in 256..1048576", v);
                return EXIT_USAGE;
            }
            o.ring_frames = (unsigned)n;
        } else if (!strcmp(k, "--threads")) {
            if (dn_parse_u64(v, &n) || n < 1 || n > 2) {
                dn_err("run: --threads %s is not 1 or 2", v);
                return EXIT_USAGE;
            }
            o.threads = (int)n;
        } else if (!strcmp(k, "--rt-prio")) {
            if (dn_parse_u64(v, &n) || n > 99) {
                dn_err("run: --rt-prio %s is not an integer in 0..99", v);
                return EXIT_USAGE;
            }
            o.rt_prio = (int)n;
        } else {
            dn_err("run: unknown option %s", k);
            return EXIT_USAGE;
        }
    }
    if (!o.a || !o.b || !o.control) {
        dn_err("run: --a, --b and --control are required");
        return EXIT_USAGE;
    }
    if (!*o.a || !*o.b || !strcmp(o.a, o.b)) {
        dn_err("run: --a and --b must name two different interfaces");
        return EXIT_USAGE;
    }
    return dn_run(&o);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("dnpipe %s (schema %d)\n", DNPIPE_VERSION, DNPIPE_SCHEMA_VERSION);
        return 0;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "run"))
        return run_main(argc - 2, argv + 2);
    if (!strcmp(argv[1], "ctl"))
        return dn_ctl_main(argc - 2, argv + 2);
    dn_err("unknown command %s (expected run, ctl or --version)", argv[1]);
    return EXIT_USAGE;
}
