/* dnpipe daemon: the control socket (see daemon.h). */
#include "daemon.h"

/* ---- control ---------------------------------------------------------------------- */

static void kernel_drops(dir_ctx *d)
{
    /* PACKET_STATISTICS reads and clears; accumulate. Called with d->lock held. */
    struct tpacket_stats st;
    socklen_t l = sizeof st;
    if (getsockopt(d->rx_fd, SOL_PACKET, PACKET_STATISTICS, &st, &l) == 0)
        d->pipe.c.rx_kernel_drops += st.tp_drops;
}

/* The control thread's drain: at most one ring's worth, so that a flood faster than we
 * can copy cannot keep it (and the pipe lock) forever. */
static void drain_all(dir_ctx *d, uint64_t now)
{
    for (unsigned n = 0; n < d->ring.frame_nr && drain_ring(d, now) == RX_BUDGET; n += RX_BUDGET)
        ;
}

static void lock_both(daemon_t *D)
{
    /* Always forward then reverse: one order, no deadlock. */
    pthread_mutex_lock(&D->dir[0].lock);
    pthread_mutex_lock(&D->dir[1].lock);
}

static void unlock_both(daemon_t *D)
{
    pthread_mutex_unlock(&D->dir[1].lock);
    pthread_mutex_unlock(&D->dir[0].lock);
}

/* Consistent snapshot of both pipes, advanced to now. */
static void snapshot(daemon_t *D, dn_config cfg[2], dn_counters cnt[2], uint64_t *t_real)
{
    lock_both(D);
    uint64_t now = mono_ns();
    if (t_real)
        *t_real = ts_ns(CLOCK_REALTIME);
    for (int i = 0; i < 2; i++) {
        kernel_drops(&D->dir[i]);
        /* Frames may wait in the ring while the data thread sleeps to its next departure
         * (see wait_next); take them in so that the counters are those of `now`. The
         * ring and the buffer pool are only ever touched under the pipe's lock. */
        drain_all(&D->dir[i], now);
        dn_pipe_advance(&D->dir[i].pipe, now);
        cfg[i] = D->dir[i].pipe.cfg;
        dn_pipe_counters(&D->dir[i].pipe, &cnt[i]);
    }
    unlock_both(D);
}

static void render_show(daemon_t *D, dn_buf *b)
{
    dn_config cfg[2];
    dn_counters cnt[2];
    snapshot(D, cfg, cnt, NULL);
    double up = (double)(mono_ns() - D->start_mono) / 1e9;
    dn_buf_printf(b, "{\"version\":%d,\"pid\":%d,\"a\":", DNPIPE_SCHEMA_VERSION, (int)getpid());
    dn_buf_json_string(b, D->o->a);
    dn_buf_printf(b, ",\"b\":");
    dn_buf_json_string(b, D->o->b);
    /* cpu_ns: the CPU time of the whole process (every thread, user and system), so that a
     * reader can tell from two samples whether the forwarder had a core to itself. */
    dn_buf_printf(b, ",\"uptime_s\":%.6f,\"cpu_ns\":%" PRIu64 ",\"seed\":%" PRIu64 ",\"pipes\":{", up,
                  ts_ns(CLOCK_PROCESS_CPUTIME_ID), D->seed);
    for (int i = 0; i < 2; i++) {
        /* The batch period that applies to this pipe's departures: its worker's, which
         * serves both pipes with --threads 1. */
        const dn_config *c[2] = {&cfg[0], &cfg[1]};
        const dir_ctx *d[2] = {&D->dir[0], &D->dir[1]};
        uint64_t batch = D->nworkers == 1 ? batch_of(c, d, 2, D->wk[0].batch_ns)
                                          : batch_of(c + i, d + i, 1, D->wk[i].batch_ns);
        dn_buf_printf(b, "%s\"%s\":{\"config\":", i ? "," : "", D->dir[i].name);
        dn_json_config(b, &cfg[i]);
        dn_buf_printf(b, ",\"counters\":");
        dn_json_counters(b, &cnt[i]);
        dn_buf_printf(b, ",\"batch_ns\":%" PRIu64 "}", batch);
    }
    dn_buf_printf(b, "}}");
}

static void render_counters(daemon_t *D, dn_buf *b)
{
    dn_config cfg[2];
    dn_counters cnt[2];
    uint64_t t;
    snapshot(D, cfg, cnt, &t);
    dn_buf_printf(b, "{\"t_ns\":%" PRIu64 ",\"cpu_ns\":%" PRIu64 ",\"pipes\":{", t,
                  ts_ns(CLOCK_PROCESS_CPUTIME_ID));
    for (int i = 0; i < 2; i++) {
        dn_buf_printf(b, "%s\"%s\":", i ? "," : "", D->dir[i].name);
        dn_json_counters(b, &cnt[i]);
    }
    dn_buf_printf(b, "}}");
}

/* Parse "dir=forward|reverse|both" into a mask; -1 if bad. */
static int dir_mask(const char *v)
{
    if (!strcmp(v, "forward"))
        return 1;
    if (!strcmp(v, "reverse"))
        return 2;
    if (!strcmp(v, "both"))
        return 3;
    return -1;
}

/* Requests are one line of space-separated words: a verb, then key=value pairs.
 * Replies are one line: "OK <json>" or "ERR <message>". */
static void handle_request(daemon_t *D, char *line, dn_buf *out)
{
    char *save = NULL;
    char *verb = strtok_r(line, " ", &save);
    if (!verb) {
        dn_buf_printf(out, "ERR empty request");
        return;
    }
    if (!strcmp(verb, "show")) {
        dn_buf_printf(out, "OK ");
        render_show(D, out);
        return;
    }
    if (!strcmp(verb, "counters")) {
        dn_buf_printf(out, "OK ");
        render_counters(D, out);
        return;
    }
    if (strcmp(verb, "set") && strcmp(verb, "reset-peak")) {
        dn_buf_printf(out, "ERR unknown request %s", verb);
        return;
    }
    bool is_set = !strcmp(verb, "set");
    int mask = 3;
    bool h_bw = false, h_delay = false, h_plr = false, h_qs = false, h_qb = false, h_red = false, h_ecn = false,
         h_droptail = false;
    dn_aqm red = {.type = DN_AQM_DROPTAIL};
    uint64_t ecn = 0;
    uint64_t bw = 0, delay = 0, qs = 0, qb = 0;
    double plr = 0;
    for (char *kv; (kv = strtok_r(NULL, " ", &save));) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            dn_buf_printf(out, "ERR malformed %s", kv);
            return;
        }
        *eq = 0;
        const char *k = kv, *v = eq + 1;
        int bad = 0;
        if (!strcmp(k, "dir"))
            bad = (mask = dir_mask(v)) < 0;
        else if (is_set && !strcmp(k, "bw"))
            bad = dn_parse_u64(v, &bw), h_bw = true;
        else if (is_set && !strcmp(k, "delay_us"))
            bad = dn_parse_u64(v, &delay), h_delay = true;
        else if (is_set && !strcmp(k, "plr"))
            bad = dn_parse_prob(v, &plr), h_plr = true;
        else if (is_set && !strcmp(k, "queue_slots"))
            bad = dn_parse_u64(v, &qs), h_qs = true;
        else if (is_set && !strcmp(k, "queue_bytes"))
            bad = dn_parse_u64(v, &qb), h_qb = true;
        else if (is_set && (!strcmp(k, "red") || !strcmp(k, "gred")) && !h_red)
            red.type = k[0] == 'g' ? DN_AQM_GRED : DN_AQM_RED, bad = dn_parse_red(v, &red), h_red = true;
        else if (is_set && !strcmp(k, "ecn"))
            bad = dn_parse_u64(v, &ecn) || ecn > 1, h_ecn = true;
        else if (is_set && !strcmp(k, "aqm"))
            bad = strcmp(v, "droptail") != 0, h_droptail = true;
        else
            bad = 1;
        if (bad) {
            dn_buf_printf(out, "ERR bad %s=%s", k, v);
            return;
        }
    }
    if (h_qs && h_qb) {
        dn_buf_printf(out, "ERR give queue_slots or queue_bytes, not both");
        return;
    }
    if (h_red && h_droptail) {
        dn_buf_printf(out, "ERR give red/gred or aqm=droptail, not both");
        return;
    }
    if (h_qs && qs > UINT32_MAX) {
        dn_buf_printf(out, "ERR queue slots are outside 1..100000");
        return;
    }
    lock_both(D);
    uint64_t now = mono_ns();
    /* Frames that arrived before the change meet the old config. */
    for (int i = 0; i < 2; i++)
        drain_all(&D->dir[i], now);
    if (is_set) {
        /* Check both new configs before changing either: atomic per call. */
        dn_config nc[2];
        for (int i = 0; i < 2; i++) {
            nc[i] = D->dir[i].pipe.cfg;
            if (!(mask & (1 << i)))
                continue;
            if (h_bw)
                nc[i].bw_bps = bw;
            if (h_delay)
                nc[i].delay_us = delay;
            if (h_plr)
                nc[i].plr = plr;
            if (h_qs) {
                nc[i].queue_slots = (uint32_t)qs;
                nc[i].queue_bytes = 0;
            }
            if (h_qb) {
                nc[i].queue_bytes = qb;
                nc[i].queue_slots = 0;
            }
            /* As `ipfw pipe N config`: red/gred replaces the AQM (ecn off unless given),
             * ecn alone changes the flag of the AQM in place. */
            if (h_red)
                nc[i].aqm = red;
            if (h_droptail)
                nc[i].aqm = (dn_aqm){.type = DN_AQM_DROPTAIL};
            if (h_ecn)
                nc[i].aqm.ecn = ecn == 1;
            const char *why = dn_config_check(&nc[i]);
            if (why) {
                unlock_both(D);
                dn_buf_printf(out, "ERR %s", why);
                return;
            }
        }
        for (int i = 0; i < 2; i++)
            if (mask & (1 << i))
                dn_pipe_set_config(&D->dir[i].pipe, &nc[i], now);
    } else {
        for (int i = 0; i < 2; i++)
            if (mask & (1 << i)) {
                dn_pipe_advance(&D->dir[i].pipe, now);
                dn_pipe_reset_peak(&D->dir[i].pipe);
            }
    }
    unlock_both(D);
    /* The next departure may now be earlier: let the data threads recompute it. */
    for (int i = 0; i < 2; i++)
        if (mask & (1 << i))
            wake(&D->dir[i]);
    dn_buf_printf(out, "OK ");
    render_show(D, out);
}

void client_close(client_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->len = 0;
}

void client_input(daemon_t *D, client_t *c)
{
    /* Reads never block (poll said readable, MSG_DONTWAIT for safety); sends block
     * with the 1 s SO_SNDTIMEO set at accept. */
    ssize_t n = recv(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len, MSG_DONTWAIT);
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        client_close(c);
        return;
    }
    c->len += (size_t)n;
    char *nl;
    while (c->fd >= 0 && (nl = memchr(c->buf, '\n', c->len))) {
        *nl = 0;
        dn_buf out;
        dn_buf_init(&out);
        handle_request(D, c->buf, &out);
        dn_buf_printf(&out, "\n");
        if (out.oom) {
            client_close(c);
        } else {
            /* Replies are a few KB and the socket has a send timeout: a client that does
             * not read cannot stall the control thread for long. */
            size_t off = 0;
            while (off < out.len) {
                ssize_t w = send(c->fd, out.s + off, out.len - off, MSG_NOSIGNAL);
                if (w < 0 && errno == EINTR)
                    continue;
                if (w <= 0) {
                    client_close(c);
                    break;
                }
                off += (size_t)w;
            }
        }
        dn_buf_free(&out);
        if (c->fd < 0)
            return;
        size_t used = (size_t)(nl - c->buf) + 1;
        memmove(c->buf, c->buf + used, c->len - used);
        c->len -= used;
    }
    if (c->len == sizeof c->buf - 1)
        client_close(c); /* a line longer than any valid request */
}

int write_pidfile(const char *path)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    FILE *f = fopen(tmp, "we");
    if (!f)
        return -1;
    fprintf(f, "%d\n", (int)getpid());
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}

int control_listen(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char tmp[sizeof sa.sun_path];
    if (strlen(path) >= sizeof sa.sun_path ||
        snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid()) >= (int)sizeof tmp) {
        dn_err("run: control socket path %s is too long (max %zu bytes with a pid suffix)", path,
               sizeof sa.sun_path - 9);
        return -1;
    }
    /* An existing socket: refuse if a daemon answers there, else it is stale. Anything
     * else at that path is not ours to replace. */
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
        dn_err("run: %s exists and is not a socket", path);
        return -1;
    }
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    strcpy(sa.sun_path, path);
    if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
        close(probe);
        dn_err("run: a daemon is already listening on %s", path);
        return -1;
    }
    if (probe >= 0)
        close(probe);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        dn_err("run: socket: %s", strerror(errno));
        return -1;
    }
    /* Bind under a temporary name; control_publish() renames it into place once everything
     * else (the pidfile) is done: the socket path exists only when the daemon is ready to
     * answer and its pidfile is written (the readiness signal). */
    strcpy(sa.sun_path, tmp);
    unlink(tmp);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || chmod(tmp, 0600) < 0 || listen(fd, 16) < 0) {
        dn_err("run: control socket %s: %s", path, strerror(errno));
        unlink(tmp);
        close(fd);
        return -1;
    }
    return fd;
}

int control_publish(const char *path)
{
    char tmp[sizeof(((struct sockaddr_un *)0)->sun_path)];
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    if (rename(tmp, path) < 0) {
        dn_err("run: control socket %s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

void control_unpublished_cleanup(const char *path)
{
    char tmp[sizeof(((struct sockaddr_un *)0)->sun_path)];
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    unlink(tmp);
}
