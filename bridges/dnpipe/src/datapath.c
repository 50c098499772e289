/* dnpipe daemon: the data threads (see daemon.h). */
#include "daemon.h"

/* ---- data path -------------------------------------------------------------------- */

static bool warn_due(uint64_t *last, uint64_t now)
{
    /* At most one warning of a kind per second: loud but not a log flood. */
    if (*last && now - *last < 1000000000ULL)
        return false;
    *last = now;
    return true;
}

static inline struct tpacket2_hdr *ring_frame(rx_ring *r, unsigned i)
{
    return (struct tpacket2_hdr *)r->frames[i];
}

static inline bool ring_ready(rx_ring *r)
{
    return __atomic_load_n(&ring_frame(r, r->idx)->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER;
}

/* Drain up to RX_BUDGET frames into the pipe. Called with d->lock held. */
unsigned drain_ring(dir_ctx *d, uint64_t now)
{
    rx_ring *r = &d->ring;
    /* The ring stamps frames with CLOCK_REALTIME; the offset to CLOCK_MONOTONIC is read
     * once per batch, which is exact to the clock-read jitter (well under 1 us). */
    int64_t off = (int64_t)now - (int64_t)ts_ns(CLOCK_REALTIME);
    unsigned n = 0;
    for (; n < RX_BUDGET; n++) {
        struct tpacket2_hdr *h = ring_frame(r, r->idx);
        uint32_t st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
        if (!(st & TP_STATUS_USER))
            break;
        const struct sockaddr_ll *sll =
            (const struct sockaddr_ll *)((uint8_t *)h + TPACKET_ALIGN(sizeof(struct tpacket2_hdr)));
        if (sll->sll_pkttype != PACKET_OUTGOING) {
            int64_t t = (int64_t)((uint64_t)h->tp_sec * 1000000000ULL + h->tp_nsec) + off;
            /* A stamp from far away (clock step between stamping and reading) is
             * replaced by the read time rather than trusted. */
            if (t > (int64_t)now + 1000000 || t < (int64_t)now - 5000000000LL)
                t = (int64_t)now;
            bool vlan = st & TP_STATUS_VLAN_VALID;
            uint32_t len = h->tp_len + (vlan ? VLAN_HLEN : 0);
            const uint8_t *src = (const uint8_t *)h + h->tp_mac;
            if (st & TP_STATUS_CSUMNOTREADY) {
                d->pipe.c.csum_partial_pkts++;
                if (warn_due(&d->last_csum_warn, now))
                    fprintf(stderr,
                            "dnpipe: warning: %s: frame with an unfinished checksum on %s: turn tx "
                            "checksum offload off upstream (ethtool -K IF tx off)\n",
                            d->name, d->rx_if);
            }
            if (h->tp_snaplen < h->tp_len || len > atomic_load_explicit(&d->max_frame, memory_order_relaxed) ||
                h->tp_len < ETH_HLEN) {
                dn_pipe_count_reject(&d->pipe, len, DN_REJECT_OVERSIZE);
                if (warn_due(&d->last_oversize_warn, now))
                    fprintf(stderr,
                            "dnpipe: warning: %s: dropped a %u-byte frame on %s, above MTU + L2 header "
                            "(%u): GRO/TSO is on; turn offloads off (ethtool -K IF tx off tso off gso off "
                            "gro off) on this port and the hosts feeding it\n",
                            d->name, len, d->rx_if, atomic_load(&d->max_frame));
            } else {
                dn_pkt *p = dn_pool_alloc(&d->pool, len);
                if (!p) {
                    dn_pipe_count_reject(&d->pipe, len, DN_REJECT_NOMEM);
                } else {
                    p->len = len;
                    if (vlan) {
                        /* The kernel strips the 802.1Q tag into metadata before taps see
                         * the frame; a transparent bridge puts it back. */
                        uint16_t tpid = (st & TP_STATUS_VLAN_TPID_VALID) ? h->tp_vlan_tpid : ETH_P_8021Q;
                        uint16_t tag[2] = {htons(tpid), htons(h->tp_vlan_tci)};
                        memcpy(p->data, src, 12);
                        memcpy(p->data + 12, tag, VLAN_HLEN);
                        memcpy(p->data + 12 + VLAN_HLEN, src + 12, h->tp_len - 12);
                    } else {
                        memcpy(p->data, src, h->tp_len);
                    }
                    if (dn_pipe_enqueue(&d->pipe, p, (uint64_t)t) != DN_ACCEPT)
                        dn_pool_free(&d->pool, p);
                }
            }
        }
        __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        r->idx = r->idx + 1 == r->frame_nr ? 0 : r->idx + 1;
    }
    return n;
}

/* Send every packet due at `now`, in batches. Called with d->lock held. */
static unsigned transmit_due(dir_ctx *d, uint64_t now)
{
    struct mmsghdr msgs[TX_BATCH];
    struct iovec iov[TX_BATCH];
    unsigned total = 0;
    for (;;) {
        unsigned n = 0;
        for (dn_pkt *p = dn_pipe_peek_due(&d->pipe, now); p && n < TX_BATCH && p->t_due <= now; p = p->next) {
            iov[n].iov_base = p->data;
            iov[n].iov_len = p->len;
            memset(&msgs[n], 0, sizeof msgs[n]);
            msgs[n].msg_hdr.msg_iov = &iov[n];
            msgs[n].msg_hdr.msg_iovlen = 1;
            n++;
        }
        if (!n)
            return total;
        unsigned i = 0;
        while (i < n) {
            uint64_t t_send = mono_ns();
            int rc = sendmmsg(d->tx_fd, msgs + i, n - i, 0);
            if (rc > 0) {
                for (int k = 0; k < rc; k++)
                    dn_pool_free(&d->pool, dn_pipe_pop_sent_at(&d->pipe, true, t_send));
                i += (unsigned)rc;
                continue;
            }
            if (rc < 0 && errno == EINTR)
                continue;
            /* The first unsent message failed: count it and go on with the rest. */
            int e = rc < 0 ? errno : EIO;
            dn_pool_free(&d->pool, dn_pipe_pop_sent(&d->pipe, false));
            i++;
            if (warn_due(&d->last_txerr_warn, now))
                fprintf(stderr, "dnpipe: warning: %s: send on %s failed: %s\n", d->name, d->tx_if, strerror(e));
        }
        total += n;
        if (n < TX_BATCH)
            return total;
    }
}

/* Waiting. Two facts shape it:
 *  - While the pipe holds a packet, nothing that arrives later can leave before it (the
 *    pipe is FIFO and a later arrival's departure is never earlier), so the thread need
 *    not wake for arrivals: frames wait in the ring with their kernel timestamps and are
 *    taken in at the next departure, at the latest RING_CHECK_NS later (so the ring
 *    cannot overflow; the control thread drains the ring itself before it reads
 *    counters, so those are fresh anyway). Only an empty pipe waits on the ring. At high
 *    rates this turns one wake-up per arrival plus one per departure into one per batch
 *    of departures.
 *  - Timer wake-ups on this class of machine (VMs especially) come tens to hundreds of
 *    microseconds late. Before a departure the thread sleeps until `next` minus an
 *    adaptive estimate of that lateness and spins the rest, paid from a budget of
 *    SPIN_SHARE of wall time: sparse departures (pings, the first packet after a long
 *    delay) leave on time, and at high rates, where a spin per departure would take a
 *    core, the budget runs dry and the thread just sleeps. */
#define RING_CHECK_NS 5000000ULL     /* 5 ms: 8192 ring slots last longer at 1 Mpps */
#define SPIN_SHARE_DIV 50            /* 2 % of a core at most */
#define SPIN_BUDGET_MAX 2000000ULL   /* ns */
#define LATE_CLAMP 300000ULL         /* outliers (host preemption) do not move the estimate */

typedef struct {
    uint64_t late_est;     /* EWMA of timer lateness (ns) */
    uint64_t budget, budget_at;
} waiter;

#define MAX_PFD 3

/* pfd[0] is the worker's eventfd, pfd[1..] rings of empty pipes. */
static int poll_for(worker_t *wk, struct pollfd *pfd, int nfds, const uint64_t *ns)
{
    struct timespec tmo;
    if (ns) {
        tmo.tv_sec = (time_t)(*ns / 1000000000ULL);
        tmo.tv_nsec = (long)(*ns % 1000000000ULL);
    }
    int rc = ppoll(pfd, (nfds_t)nfds, ns ? &tmo : NULL, NULL);
    if (rc > 0 && (pfd[0].revents & POLLIN)) {
        uint64_t junk;
        if (read(wk->wake_fd, &junk, sizeof junk) < 0 && errno != EAGAIN)
            fprintf(stderr, "dnpipe: warning: eventfd read: %s\n", strerror(errno));
    }
    for (int i = 1; rc > 0 && i < nfds; i++) {
        if (!(pfd[i].revents & POLLERR))
            continue;
        /* e.g. ENETDOWN when the port goes down: clear it and carry on. */
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(pfd[i].fd, SOL_SOCKET, SO_ERROR, &err, &el);
        for (int k = 0; k < wk->ndirs; k++)
            if (err && wk->dirs[k]->rx_fd == pfd[i].fd)
                fprintf(stderr, "dnpipe: warning: %s: %s\n", wk->dirs[k]->rx_if, strerror(err));
    }
    return rc;
}

/* `next`: the earliest departure of the worker's pipes (DN_NEVER if all are empty);
 * `empty`: which pipes are empty (their rings are watched); `not_before`: batch limit. */
static void wait_next(worker_t *wk, waiter *w, uint64_t next, const bool *empty, uint64_t not_before)
{
    struct pollfd pfd[MAX_PFD] = {{.fd = wk->wake_fd, .events = POLLIN}};
    int nfds = 1;
    for (int k = 0; k < wk->ndirs; k++)
        if (empty[k])
            pfd[nfds++] = (struct pollfd){.fd = wk->dirs[k]->rx_fd, .events = POLLIN};
    uint64_t t = mono_ns();
    if (nfds > 1 && not_before > t) {
        /* Just busy: let arrivals gather for one batch period, then take them all. */
        uint64_t left = not_before - t;
        if (poll_for(wk, pfd, 1, &left) != 0)
            return;
        t = mono_ns();
        not_before = 0;
    }
    for (int k = 0; k < wk->ndirs; k++)
        if (empty[k] && ring_ready(&wk->dirs[k]->ring))
            return;
    if (next == DN_NEVER) {
        poll_for(wk, pfd, nfds, NULL);
        return;
    }
    w->budget += (t - w->budget_at) / SPIN_SHARE_DIV;
    w->budget_at = t;
    if (w->budget > SPIN_BUDGET_MAX)
        w->budget = SPIN_BUDGET_MAX;
    uint64_t wake_at = next > not_before ? next : not_before;
    bool departure = wake_at == next;
    if (wake_at > t + RING_CHECK_NS) {
        wake_at = t + RING_CHECK_NS;
        departure = false;
    }
    if (wake_at <= t)
        return;
    uint64_t early = w->late_est + w->late_est / 4 + 5000;
    /* Only plan a spin the budget can pay for; otherwise one plain sleep. */
    if (!departure || early > w->budget || early >= wake_at - t)
        early = 0;
    uint64_t target = wake_at - early;
    uint64_t left = target - t;
    int rc = poll_for(wk, pfd, nfds, &left);
    uint64_t woke = mono_ns();
    if (rc != 0)
        return; /* an arrival on an empty pipe or a config change */
    uint64_t late = woke > target ? woke - target : 0;
    w->late_est = (w->late_est * 7 + (late < LATE_CLAMP ? late : LATE_CLAMP)) / 8;
    if (!early || woke >= wake_at)
        return;
    while (mono_ns() < wake_at)
        __builtin_ia32_pause();
    uint64_t spent = mono_ns() - woke;
    w->budget = spent < w->budget ? w->budget - spent : 0;
}

static void lock_dirs(worker_t *wk)
{
    for (int k = 0; k < wk->ndirs; k++) /* dirs[] is in forward, reverse order: one lock order */
        pthread_mutex_lock(&wk->dirs[k]->lock);
}

static void unlock_dirs(worker_t *wk)
{
    for (int k = wk->ndirs - 1; k >= 0; k--)
        pthread_mutex_unlock(&wk->dirs[k]->lock);
}

/* The batch period of a worker: the smallest its pipes allow (dn_batch_bound_ns). Called
 * with the worker's pipe locks held, or on configs copied under them. */
uint64_t batch_of(const dn_config *const *cfg, const dir_ctx *const *d, int n, uint64_t batch_ns)
{
    uint64_t b = batch_ns;
    for (int k = 0; k < n; k++) {
        uint64_t x = dn_batch_bound_ns(cfg[k], batch_ns, atomic_load_explicit(&d[k]->max_frame, memory_order_relaxed));
        if (x < b)
            b = x;
    }
    return b;
}

static uint64_t worker_batch_ns(worker_t *wk)
{
    const dn_config *cfg[2];
    const dir_ctx *d[2];
    for (int k = 0; k < wk->ndirs; k++) {
        cfg[k] = &wk->dirs[k]->pipe.cfg;
        d[k] = wk->dirs[k];
    }
    return batch_of(cfg, d, wk->ndirs, wk->batch_ns);
}

void *data_thread(void *arg)
{
    worker_t *wk = arg;
    /* The default 50 us timer slack would be most of our timing error budget. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (wk->rt_prio) {
        struct sched_param sp = {.sched_priority = wk->rt_prio};
        int e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
        if (e)
            fprintf(stderr, "dnpipe: warning: SCHED_FIFO %d refused (%s): timing will be less precise\n",
                    wk->rt_prio, strerror(e));
    }
    waiter w = {.late_est = 50000, .budget = 0, .budget_at = mono_ns()};
    lock_dirs(wk);
    uint64_t iter_start = mono_ns();
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        uint64_t now = mono_ns();
        unsigned got = 0, sent = 0;
        bool more = false;
        for (int k = 0; k < wk->ndirs; k++) {
            unsigned g = drain_ring(wk->dirs[k], now);
            more |= g == RX_BUDGET;
            got += g;
        }
        now = mono_ns();
        uint64_t next = DN_NEVER;
        bool empty[2] = {false, false};
        for (int k = 0; k < wk->ndirs; k++) {
            dir_ctx *d = wk->dirs[k];
            dn_pipe_advance(&d->pipe, now);
            sent += transmit_due(d, now);
            uint64_t n = dn_pipe_next_event(&d->pipe);
            empty[k] = n == DN_NEVER;
            if (n < next)
                next = n;
        }
        if (more)
            continue; /* more frames waiting: keep going without sleeping */
        uint64_t batch = worker_batch_ns(wk);
        unlock_dirs(wk);
        /* Under load, wake at most once per batch period: frames arriving meanwhile wait
         * in the ring with their kernel timestamps, so the pipe's arithmetic is
         * unaffected; departures are at most one period late. */
        uint64_t not_before = (got || sent) ? iter_start + batch : 0;
        wait_next(wk, &w, next, empty, not_before);
        iter_start = mono_ns();
        lock_dirs(wk);
    }
    unlock_dirs(wk);
    return NULL;
}

void wake(dir_ctx *d)
{
    uint64_t one = 1;
    if (write(d->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
        fprintf(stderr, "dnpipe: warning: eventfd write: %s\n", strerror(errno));
}
