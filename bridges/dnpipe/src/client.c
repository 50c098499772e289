/* dnpipe ctl: the control client. It validates every argument itself (exit 2, one line
 * on stderr) so that the daemon only ever sees well-formed requests; anything that goes
 * wrong after that (daemon unreachable, refused request) exits 1. */
#include "core.h"
#include "dnpipe.h"

#include <errno.h>
#include <stdarg.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define REPLY_TIMEOUT_MS 5000

static int ctl_connect(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        dn_err("control socket path %s is too long", path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        dn_err("cannot reach the dnpipe daemon at %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

typedef struct {
    char *buf;
    size_t len, cap;
} linebuf;

/* Send one request line and read one reply line. Returns a malloc'ed line without the
 * newline, or NULL (error already reported). */
static char *roundtrip(int fd, const char *req, linebuf *lb)
{
    size_t rl = strlen(req), off = 0;
    while (off < rl) {
        ssize_t w = send(fd, req + off, rl - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            dn_err("lost the dnpipe daemon: %s", strerror(errno));
            return NULL;
        }
        off += (size_t)w;
    }
    for (;;) {
        char *nl = lb->len ? memchr(lb->buf, '\n', lb->len) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - lb->buf);
            char *line = malloc(n + 1);
            if (!line) {
                dn_err("out of memory");
                return NULL;
            }
            memcpy(line, lb->buf, n);
            line[n] = 0;
            memmove(lb->buf, nl + 1, lb->len - n - 1);
            lb->len -= n + 1;
            return line;
        }
        if (lb->cap - lb->len < 4096) {
            size_t cap = lb->cap ? lb->cap * 2 : 16384;
            char *b = realloc(lb->buf, cap);
            if (!b) {
                dn_err("out of memory");
                return NULL;
            }
            lb->buf = b;
            lb->cap = cap;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, REPLY_TIMEOUT_MS);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr == 0) {
            dn_err("the dnpipe daemon did not answer within %d ms", REPLY_TIMEOUT_MS);
            return NULL;
        }
        ssize_t r = recv(fd, lb->buf + lb->len, lb->cap - lb->len, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            dn_err("the dnpipe daemon closed the connection%s%s", r < 0 ? ": " : "", r < 0 ? strerror(errno) : "");
            return NULL;
        }
        lb->len += (size_t)r;
    }
}

/* Print the JSON of an "OK <json>" reply; report an "ERR" one. Returns an exit code. */
static int print_reply(char *line)
{
    if (!strncmp(line, "OK ", 3)) {
        fputs(line + 3, stdout);
        fputc('\n', stdout);
        if (fflush(stdout) != 0)
            return EXIT_RUNTIME;
        return 0;
    }
    if (!strncmp(line, "ERR ", 4))
        dn_err("daemon refused the request: %s", line + 4);
    else
        dn_err("unexpected reply from the daemon");
    return EXIT_RUNTIME;
}

static int simple(const char *path, const char *req)
{
    int fd = ctl_connect(path);
    if (fd < 0)
        return EXIT_RUNTIME;
    linebuf lb = {0};
    char *line = roundtrip(fd, req, &lb);
    int rc = line ? print_reply(line) : EXIT_RUNTIME;
    free(line);
    free(lb.buf);
    close(fd);
    return rc;
}

static int watch(const char *path, uint64_t interval_ms)
{
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGTERM);
    sigaddset(&ss, SIGINT);
    sigaddset(&ss, SIGPIPE);
    sigprocmask(SIG_BLOCK, &ss, NULL);
    int sfd = signalfd(-1, &ss, SFD_CLOEXEC);
    int fd = ctl_connect(path);
    if (fd < 0 || sfd < 0)
        return EXIT_RUNTIME;
    /* A periodic timer, so lines come at a steady cadence without drift. */
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    struct itimerspec its = {
        .it_interval = {.tv_sec = (time_t)(interval_ms / 1000), .tv_nsec = (long)(interval_ms % 1000) * 1000000L},
        .it_value = {.tv_sec = 0, .tv_nsec = 1}};
    if (tfd < 0 || timerfd_settime(tfd, 0, &its, NULL) < 0) {
        dn_err("timerfd: %s", strerror(errno));
        return EXIT_RUNTIME;
    }
    linebuf lb = {0};
    int rc = 0;
    bool stdin_open = true;
    for (;;) {
        struct pollfd p[4] = {{.fd = tfd, .events = POLLIN},
                              {.fd = sfd, .events = POLLIN},
                              {.fd = fd, .events = POLLIN | POLLRDHUP},
                              {.fd = stdin_open ? 0 : -1, .events = POLLIN}};
        if (poll(p, 4, -1) < 0) {
            if (errno == EINTR)
                continue;
            rc = EXIT_RUNTIME;
            break;
        }
        if (p[1].revents)
            break; /* SIGTERM / SIGINT: a normal end */
        if (p[3].revents & (POLLIN | POLLHUP)) {
            char junk[512];
            ssize_t r = read(0, junk, sizeof junk);
            if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
                break; /* stdin reached EOF: the caller wants us to stop */
        } else if (p[3].revents & POLLNVAL) {
            stdin_open = false; /* no stdin at all: only a signal or the daemon ends us */
        }
        if (p[2].revents) {
            /* Nothing is pending from the daemon between requests: this is a hang-up. */
            dn_err("the dnpipe daemon went away");
            rc = EXIT_RUNTIME;
            break;
        }
        if (p[0].revents & POLLIN) {
            uint64_t ticks;
            if (read(tfd, &ticks, sizeof ticks) < 0)
                continue;
            char *line = roundtrip(fd, "counters\n", &lb);
            if (!line) {
                rc = EXIT_RUNTIME;
                break;
            }
            rc = print_reply(line);
            free(line);
            if (rc)
                break;
        }
    }
    free(lb.buf);
    close(fd);
    close(tfd);
    close(sfd);
    return rc;
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dn_err("%s", msg);
    return EXIT_USAGE;
}

int dn_ctl_main(int argc, char **argv)
{
    const char *control = NULL, *sub = NULL;
    const char *dir = NULL, *s_bw = NULL, *s_delay = NULL, *s_plr = NULL, *s_qs = NULL, *s_qb = NULL,
               *s_int = NULL, *s_red = NULL, *s_gred = NULL, *s_ecn = NULL, *s_aqm = NULL;
    for (int i = 0; i < argc; i++) {
        const char *k = argv[i];
        if (k[0] != '-') {
            if (sub)
                return bad("ctl: unexpected argument %s", k);
            sub = k;
            continue;
        }
        const char **slot = !strcmp(k, "--control")       ? &control
                            : !strcmp(k, "--dir")         ? &dir
                            : !strcmp(k, "--bw")          ? &s_bw
                            : !strcmp(k, "--delay-us")    ? &s_delay
                            : !strcmp(k, "--plr")         ? &s_plr
                            : !strcmp(k, "--queue-slots") ? &s_qs
                            : !strcmp(k, "--queue-bytes") ? &s_qb
                            : !strcmp(k, "--interval-ms") ? &s_int
                            : !strcmp(k, "--red")         ? &s_red
                            : !strcmp(k, "--gred")        ? &s_gred
                            : !strcmp(k, "--ecn")         ? &s_ecn
                            : !strcmp(k, "--aqm")         ? &s_aqm
                                                          : NULL;
        if (!slot)
            return bad("ctl: unknown option %s", k);
        if (i + 1 >= argc)
            return bad("ctl: option %s needs a value", k);
        if (*slot)
            return bad("ctl: option %s given twice", k);
        *slot = argv[++i];
    }
    if (!control)
        return bad("ctl: --control SOCKPATH is required");
    if (!sub)
        return bad("ctl: missing subcommand (show, set, reset-peak, watch)");
    bool is_set = !strcmp(sub, "set"), is_reset = !strcmp(sub, "reset-peak"), is_watch = !strcmp(sub, "watch"),
         is_show = !strcmp(sub, "show");
    if (!is_set && !is_reset && !is_watch && !is_show)
        return bad("ctl: unknown subcommand %s", sub);
    /* Options that do not belong to the subcommand are errors, not silently ignored. */
    if (!is_set && (s_bw || s_delay || s_plr || s_qs || s_qb || s_red || s_gred || s_ecn || s_aqm))
        return bad("ctl: %s takes no --bw/--delay-us/--plr/--queue-*/--red/--gred/--ecn/--aqm options", sub);
    if (!is_set && !is_reset && dir)
        return bad("ctl: %s takes no --dir", sub);
    if (!is_watch && s_int)
        return bad("ctl: %s takes no --interval-ms", sub);
    if (dir && strcmp(dir, "forward") && strcmp(dir, "reverse") && strcmp(dir, "both"))
        return bad("ctl: --dir %s is not forward, reverse or both", dir);

    if (is_show)
        return simple(control, "show\n");
    if (is_watch) {
        uint64_t ms;
        if (!s_int)
            return bad("ctl: watch needs --interval-ms N");
        if (dn_parse_u64(s_int, &ms) || ms < 1 || ms > 3600000)
            return bad("ctl: --interval-ms %s is not an integer in 1..3600000", s_int);
        return watch(control, ms);
    }
    char req[512];
    int n = snprintf(req, sizeof req, "%s dir=%s", sub, dir ? dir : "both");
    if (is_set) {
        if (!dir)
            return bad("ctl: set needs --dir forward|reverse|both");
        uint64_t v;
        double p;
        if (s_bw) {
            if (dn_parse_u64(s_bw, &v) || v > DN_BW_MAX_BPS)
                return bad("ctl: --bw %s is not an integer bit/s in 0..10000000000 (0 = unlimited)", s_bw);
            n += snprintf(req + n, sizeof req - (size_t)n, " bw=%s", s_bw);
        }
        if (s_delay) {
            if (dn_parse_u64(s_delay, &v) || v > DN_DELAY_MAX_US)
                return bad("ctl: --delay-us %s is not an integer in 0..10000000", s_delay);
            n += snprintf(req + n, sizeof req - (size_t)n, " delay_us=%s", s_delay);
        }
        if (s_plr) {
            if (dn_parse_prob(s_plr, &p) || p < 0.0 || p > 1.0)
                return bad("ctl: --plr %s is not a probability in 0..1", s_plr);
            /* %.17g round-trips the double exactly. */
            n += snprintf(req + n, sizeof req - (size_t)n, " plr=%.17g", p);
        }
        if (s_qs && s_qb)
            return bad("ctl: give --queue-slots or --queue-bytes, not both");
        if (s_qs) {
            if (dn_parse_u64(s_qs, &v) || v < DN_QSLOTS_MIN || v > DN_QSLOTS_MAX)
                return bad("ctl: --queue-slots %s is not an integer in 1..100000", s_qs);
            n += snprintf(req + n, sizeof req - (size_t)n, " queue_slots=%s", s_qs);
        }
        if (s_qb) {
            if (dn_parse_u64(s_qb, &v) || v < DN_QBYTES_MIN || v > DN_QBYTES_MAX)
                return bad("ctl: --queue-bytes %s is not an integer in 1500..67108864", s_qb);
            n += snprintf(req + n, sizeof req - (size_t)n, " queue_bytes=%s", s_qb);
        }
        if (!!s_red + !!s_gred + !!s_aqm > 1)
            return bad("ctl: give one of --red, --gred and --aqm droptail");
        const char *rv = s_red ? s_red : s_gred;
        if (rv) {
            dn_aqm a = {.type = s_red ? DN_AQM_RED : DN_AQM_GRED, .ecn = s_ecn && !strcmp(s_ecn, "1")};
            const char *why = dn_parse_red(rv, &a) ? "is not W_Q/MIN_TH/MAX_TH/MAX_P" : NULL;
            /* The unit of the thresholds is the queue's, which may be set elsewhere: the
             * daemon checks them against it; here the checks that do not depend on it. */
            if (!why)
                why = dn_aqm_check(&a, true);
            if (why)
                return bad("ctl: --%s %s: %s", s_red ? "red" : "gred", rv, why);
            n += snprintf(req + n, sizeof req - (size_t)n, " %s=%s", s_red ? "red" : "gred", rv);
        }
        if (s_aqm) {
            if (strcmp(s_aqm, "droptail"))
                return bad("ctl: --aqm %s is not droptail (use --red or --gred for RED)", s_aqm);
            if (s_ecn && !strcmp(s_ecn, "1"))
                return bad("ctl: --ecn 1 needs --red or --gred (enable red/gred for ECN)");
            n += snprintf(req + n, sizeof req - (size_t)n, " aqm=droptail");
        }
        if (s_ecn) {
            if (strcmp(s_ecn, "0") && strcmp(s_ecn, "1"))
                return bad("ctl: --ecn %s is not 0 or 1", s_ecn);
            n += snprintf(req + n, sizeof req - (size_t)n, " ecn=%s", s_ecn);
        }
    }
    if (n < 0 || (size_t)n + 2 > sizeof req)
        return bad("ctl: arguments too long");
    req[n++] = '\n';
    req[n] = 0;
    return simple(control, req);
}
