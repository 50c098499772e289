/* dnpipe daemon: the I/O shell around the pure core.
 *
 * Threads:
 *   - one data thread per direction (forward = a -> b, reverse = b -> a). Each owns a
 *     receive socket with a TPACKET_V2 mmap ring on its input port and a plain send
 *     socket on its output port. It drains the ring (kernel receive timestamps give each
 *     frame its true arrival time, however late the thread looks), feeds the core, and
 *     sends everything due with one sendmmsg() per batch. It sleeps in ppoll() on the
 *     ring, a wake-up eventfd and a nanosecond timeout for the next departure, with a
 *     timer slack of 1 ns.
 *   - the main thread: control socket, signals, housekeeping.
 * Each pipe has a mutex: the data thread holds it while it works (not while it sleeps),
 * the control thread takes it to read counters or apply a config, so that a snapshot
 * and a change are atomic with respect to the packets.
 */
#include "core.h"
#include "dnpipe.h"
#include "json.h"
#include "pool.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define TX_BATCH 64
#define RX_BUDGET 256           /* frames per iteration before transmitting what is due */
#define MAX_CLIENTS 32
#define VLAN_HLEN 4
#define L2_ALLOWANCE (ETH_HLEN + 2 * VLAN_HLEN) /* Ethernet header and up to two VLAN tags */

static uint64_t ts_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline uint64_t mono_ns(void) { return ts_ns(CLOCK_MONOTONIC); }

typedef struct {
    uint8_t *map;
    size_t map_len;
    uint8_t **frames;       /* slot addresses: slots tile each block, not the whole map */
    unsigned frame_size, frame_nr, idx;
} rx_ring;

typedef struct {
    const char *name;       /* "forward" / "reverse" */
    const char *rx_if, *tx_if;
    int rx_ifindex, tx_ifindex;
    int rx_fd, tx_fd;
    int wake_fd;            /* the eventfd of the worker thread serving this direction (not owned) */
    rx_ring ring;           /* guarded by lock */
    atomic_uint max_frame;  /* MTU + L2 allowance of the receive port */
    pthread_mutex_t lock;
    dn_pipe pipe;           /* guarded by lock */
    dn_pool pool;           /* guarded by lock (the control thread drains the ring too) */
    uint64_t last_oversize_warn, last_csum_warn, last_txerr_warn;
} dir_ctx;

static atomic_bool g_stop;
static atomic_size_t g_mem_in_use;

/* ---- sockets ---------------------------------------------------------------------- */

static int if_info(const char *name, int *ifindex, unsigned *mtu)
{
    struct ifreq ifr;
    if (strlen(name) >= IFNAMSIZ) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    int rc = -1;
    memset(&ifr, 0, sizeof ifr);
    strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
    if (ioctl(s, SIOCGIFINDEX, &ifr) < 0)
        goto out;
    *ifindex = ifr.ifr_ifindex;
    if (ioctl(s, SIOCGIFMTU, &ifr) < 0)
        goto out;
    *mtu = (unsigned)ifr.ifr_mtu;
    if (ioctl(s, SIOCGIFHWADDR, &ifr) < 0)
        goto out;
    if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER) {
        errno = EPROTOTYPE;
        goto out;
    }
    rc = 0;
out:
    close(s);
    return rc;
}

static int open_rx(dir_ctx *d, unsigned mtu, unsigned ring_frames)
{
    /* Protocol 0 at creation: the socket receives nothing until it is bound to its one
     * interface below, so no frame of another interface ever lands in the ring. */
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int v = TPACKET_V2;
    if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &v, sizeof v) < 0)
        goto fail;
    /* Never see (and so never re-forward) frames sent on this port, ours included. */
    v = 1;
    if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &v, sizeof v) < 0)
        goto fail;
    /* Frame slot: tpacket2 header + sockaddr_ll (aligned) + 16 bytes of headroom, then
     * the frame; as small as that allows (1616 bytes at MTU 1500), because tearing the
     * ring's mapping down at exit costs time in proportion to its size. */
    unsigned fs = TPACKET_ALIGN(TPACKET_ALIGN(TPACKET2_HDRLEN) + 16 + mtu + L2_ALLOWANCE);
    unsigned bs = 262144;
    while (bs < fs * 16)
        bs <<= 1;
    unsigned per_block = bs / fs;
    unsigned blocks = (ring_frames + per_block - 1) / per_block;
    struct tpacket_req req = {.tp_block_size = bs, .tp_block_nr = blocks, .tp_frame_size = fs,
                              .tp_frame_nr = blocks * per_block};
    if (setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) < 0)
        goto fail;
    size_t len = (size_t)bs * blocks;
    void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (map == MAP_FAILED)
        goto fail;
    uint8_t **frames = calloc(req.tp_frame_nr, sizeof *frames);
    if (!frames) {
        munmap(map, len);
        goto fail;
    }
    for (unsigned i = 0; i < req.tp_frame_nr; i++)
        frames[i] = (uint8_t *)map + (size_t)(i / per_block) * bs + (size_t)(i % per_block) * fs;
    d->ring = (rx_ring){.map = map, .map_len = len, .frames = frames, .frame_size = fs,
                        .frame_nr = req.tp_frame_nr, .idx = 0};
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
                              .sll_ifindex = d->rx_ifindex};
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0)
        goto fail;
    /* Promiscuous: a bridge port forwards frames for any MAC. Tied to the socket, so the
     * kernel drops it when we exit, however we exit. */
    struct packet_mreq mr = {.mr_ifindex = d->rx_ifindex, .mr_type = PACKET_MR_PROMISC};
    if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr) < 0)
        goto fail;
    return fd;
fail:;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

static int open_tx(dir_ctx *d)
{
    /* Bound with protocol 0: a send-only socket that receives nothing. */
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = 0, .sll_ifindex = d->tx_ifindex};
    int v = 4 << 20;
    /* A deep send buffer so that a batch never blocks on skbs still in flight;
     * SO_SNDBUFFORCE ignores wmem_max (we are root), SO_SNDBUF is the fallback. */
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof v) < 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

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
static unsigned drain_ring(dir_ctx *d, uint64_t now)
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

/* A data thread serves one direction, or both (--threads 1, the default: one wake-up
 * then serves the departures of both pipes, which halves the wake-ups of a TCP flow,
 * whose data and ACKs go opposite ways). */
typedef struct {
    dir_ctx *dirs[2];
    int ndirs;
    int wake_fd;
    uint64_t batch_ns;
    int rt_prio;
    pthread_t thr;
    bool started;
} worker_t;

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
static uint64_t batch_of(const dn_config *const *cfg, const dir_ctx *const *d, int n, uint64_t batch_ns)
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

static void *data_thread(void *arg)
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

/* ---- control ---------------------------------------------------------------------- */

typedef struct {
    dir_ctx dir[2];
    worker_t wk[2];
    int nworkers;
    const dn_run_opts *o;
    uint64_t start_mono;
    uint64_t seed;
} daemon_t;

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

static void wake(dir_ctx *d)
{
    uint64_t one = 1;
    if (write(d->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
        fprintf(stderr, "dnpipe: warning: eventfd write: %s\n", strerror(errno));
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
    bool h_bw = false, h_delay = false, h_plr = false, h_qs = false, h_qb = false;
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

typedef struct {
    int fd;
    char buf[4096];
    size_t len;
} client_t;

static void client_close(client_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->len = 0;
}

static void client_input(daemon_t *D, client_t *c)
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

static int write_pidfile(const char *path)
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

static int control_listen(const char *path)
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

static int control_publish(const char *path)
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

static void control_unpublished_cleanup(const char *path)
{
    char tmp[sizeof(((struct sockaddr_un *)0)->sun_path)];
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    unlink(tmp);
}

static uint64_t seed_for(uint64_t seed, int dir)
{
    /* Independent streams per direction from one seed. */
    uint64_t x = seed ^ (0xd1b54a32d192ed03ULL * (uint64_t)(dir + 1));
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

typedef struct {
    int fd;
    void *map;
    size_t len;
} closing_t;

static void *close_thread(void *arg)
{
    closing_t *c = arg;
    close(c->fd);
    /* The mapping holds the last reference to a ring socket: its release (and the RCU
     * grace periods in it) runs here, on unmapping. */
    if (c->map)
        munmap(c->map, c->len);
    return NULL;
}

/* Releasing a packet socket waits for RCU grace periods (synchronize_net), several
 * milliseconds each on a busy VM; one socket after the other, or left to the exit of
 * the process (which unmaps the rings one by one), that took 55-80 ms of the 100 ms exit
 * budget. Released concurrently, they share grace periods. */
static void close_packet_sockets(daemon_t *D)
{
    pthread_t th[4];
    bool started[4] = {false, false, false, false};
    closing_t c[4] = {{D->dir[0].rx_fd, D->dir[0].ring.map, D->dir[0].ring.map_len},
                      {D->dir[0].tx_fd, NULL, 0},
                      {D->dir[1].rx_fd, D->dir[1].ring.map, D->dir[1].ring.map_len},
                      {D->dir[1].tx_fd, NULL, 0}};
    for (int i = 0; i < 4; i++) {
        if (c[i].fd < 0)
            continue;
        if (pthread_create(&th[i], NULL, close_thread, &c[i]) == 0)
            started[i] = true;
        else
            close_thread(&c[i]);
    }
    for (int i = 0; i < 4; i++)
        if (started[i])
            pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        D->dir[i].rx_fd = D->dir[i].tx_fd = -1;
        D->dir[i].ring.map = NULL;
    }
}

static void dir_close(dir_ctx *d)
{
    if (d->ring.map)
        munmap(d->ring.map, d->ring.map_len);
    d->ring.map = NULL;
    free(d->ring.frames);
    d->ring.frames = NULL;
    if (d->rx_fd >= 0)
        close(d->rx_fd);
    if (d->tx_fd >= 0)
        close(d->tx_fd);
    d->rx_fd = d->tx_fd = d->wake_fd = -1;
    /* Packets still in the pipe are dropped with the process; free them for valgrind. */
    dn_pkt *lists[2] = {d->pipe.q_head, d->pipe.d_head};
    for (int i = 0; i < 2; i++)
        for (dn_pkt *p = lists[i], *n; p; p = n) {
            n = p->next;
            dn_pool_free(&d->pool, p);
        }
    d->pipe.q_head = d->pipe.d_head = NULL;
    dn_pool_destroy(&d->pool);
}

int dn_run(const dn_run_opts *o)
{
    daemon_t *D = calloc(1, sizeof *D);
    if (!D) {
        dn_err("run: out of memory");
        return EXIT_RUNTIME;
    }
    D->o = o;
    D->start_mono = mono_ns();
    if (o->have_seed) {
        D->seed = o->seed;
    } else if (getrandom(&D->seed, sizeof D->seed, 0) != sizeof D->seed) {
        D->seed = mono_ns() ^ ((uint64_t)getpid() << 32);
    }
    int rc = EXIT_RUNTIME, ctl_fd = -1, sig_fd = -1, tmr_fd = -1;
    bool sock_made = false, pid_made = false;
    client_t clients[MAX_CLIENTS];
    for (int i = 0; i < MAX_CLIENTS; i++)
        clients[i].fd = -1;

    int ifx[2];
    unsigned mtu[2];
    const char *names[2] = {o->a, o->b};
    for (int i = 0; i < 2; i++) {
        if (if_info(names[i], &ifx[i], &mtu[i]) < 0) {
            dn_err("run: interface %s: %s", names[i],
                   errno == EPROTOTYPE ? "not an Ethernet interface" : strerror(errno));
            free(D);
            return EXIT_RUNTIME;
        }
    }
    for (int i = 0; i < 2; i++) {
        dir_ctx *d = &D->dir[i];
        d->name = i ? "reverse" : "forward";
        d->rx_if = names[i];
        d->tx_if = names[1 - i];
        d->rx_ifindex = ifx[i];
        d->tx_ifindex = ifx[1 - i];
        d->rx_fd = d->tx_fd = d->wake_fd = -1;
        atomic_store(&d->max_frame, mtu[i] + L2_ALLOWANCE);
        /* Priority inheritance: the control thread (normal priority) holds this lock
         * briefly; if it were preempted while holding it, the real-time data thread would
         * wait behind whatever preempted it. */
        pthread_mutexattr_t ma;
        pthread_mutexattr_init(&ma);
        pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
        pthread_mutex_init(&d->lock, &ma);
        pthread_mutexattr_destroy(&ma);
        dn_pool_init(&d->pool, &g_mem_in_use, o->mem_limit);
        dn_pipe_init(&d->pipe, seed_for(D->seed, i), mono_ns());
    }

    /* Signals are taken through a signalfd by the main thread only; the data threads
     * inherit the blocked mask. */
    sigset_t ss;
    sigemptyset(&ss);
    sigaddset(&ss, SIGTERM);
    sigaddset(&ss, SIGINT);
    sigaddset(&ss, SIGHUP);
    sigaddset(&ss, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &ss, NULL);
    sig_fd = signalfd(-1, &ss, SFD_CLOEXEC | SFD_NONBLOCK);

    for (int i = 0; i < 2; i++) {
        dir_ctx *d = &D->dir[i];
        d->rx_fd = open_rx(d, mtu[i], o->ring_frames);
        if (d->rx_fd < 0) {
            dn_err("run: receive socket on %s: %s", d->rx_if, strerror(errno));
            goto out;
        }
        d->tx_fd = open_tx(d);
        if (d->tx_fd < 0) {
            dn_err("run: send socket on %s: %s", d->tx_if, strerror(errno));
            goto out;
        }
    }
    D->nworkers = o->threads == 2 ? 2 : 1;
    for (int i = 0; i < D->nworkers; i++) {
        worker_t *wk = &D->wk[i];
        wk->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (wk->wake_fd < 0 || sig_fd < 0) {
            dn_err("run: eventfd/signalfd: %s", strerror(errno));
            goto out;
        }
        wk->batch_ns = o->batch_us * 1000ULL;
        wk->rt_prio = o->rt_prio;
        wk->ndirs = 0;
        for (int k = 0; k < 2; k++)
            if (D->nworkers == 1 || k == i) {
                wk->dirs[wk->ndirs++] = &D->dir[k];
                D->dir[k].wake_fd = wk->wake_fd;
            }
    }
    for (int i = 0; i < D->nworkers; i++) {
        int e = pthread_create(&D->wk[i].thr, NULL, data_thread, &D->wk[i]);
        if (e) {
            dn_err("run: thread: %s", strerror(e));
            goto out;
        }
        D->wk[i].started = true;
    }
    ctl_fd = control_listen(o->control);
    if (ctl_fd < 0)
        goto out;
    if (o->pidfile) {
        if (write_pidfile(o->pidfile) < 0) {
            dn_err("run: pidfile %s: %s", o->pidfile, strerror(errno));
            control_unpublished_cleanup(o->control);
            goto out;
        }
        pid_made = true;
    }
    if (control_publish(o->control) < 0)
        goto out;
    sock_made = true;
    /* Housekeeping tick: notice a port that disappeared. */
    tmr_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    struct itimerspec its = {.it_interval = {1, 0}, .it_value = {1, 0}};
    if (tmr_fd < 0 || timerfd_settime(tmr_fd, 0, &its, NULL) < 0) {
        dn_err("run: timerfd: %s", strerror(errno));
        goto out;
    }
    fprintf(stderr, "dnpipe: ready: pid %d, a=%s b=%s control=%s seed=%" PRIu64 "\n", (int)getpid(), o->a, o->b,
            o->control, D->seed);

    for (;;) {
        struct pollfd pfd[3 + MAX_CLIENTS];
        int map[3 + MAX_CLIENTS];
        int n = 0;
        pfd[n] = (struct pollfd){.fd = sig_fd, .events = POLLIN};
        map[n++] = -1;
        pfd[n] = (struct pollfd){.fd = ctl_fd, .events = POLLIN};
        map[n++] = -2;
        pfd[n] = (struct pollfd){.fd = tmr_fd, .events = POLLIN};
        map[n++] = -3;
        for (int i = 0; i < MAX_CLIENTS; i++)
            if (clients[i].fd >= 0) {
                pfd[n] = (struct pollfd){.fd = clients[i].fd, .events = POLLIN};
                map[n++] = i;
            }
        if (poll(pfd, (nfds_t)n, -1) < 0) {
            if (errno == EINTR)
                continue;
            dn_err("run: poll: %s", strerror(errno));
            goto out;
        }
        for (int k = 0; k < n; k++) {
            if (!pfd[k].revents)
                continue;
            if (map[k] == -1) {
                struct signalfd_siginfo si;
                while (read(sig_fd, &si, sizeof si) == sizeof si) {
                    if (si.ssi_signo != SIGPIPE) {
                        rc = 0;
                        goto out;
                    }
                }
            } else if (map[k] == -2) {
                int c;
                while ((c = accept4(ctl_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
                    int slot = -1;
                    for (int i = 0; i < MAX_CLIENTS; i++)
                        if (clients[i].fd < 0) {
                            slot = i;
                            break;
                        }
                    if (slot < 0) {
                        close(c);
                        continue;
                    }
                    struct timeval tv = {.tv_sec = 1};
                    setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
                    clients[slot].fd = c;
                    clients[slot].len = 0;
                }
            } else if (map[k] == -3) {
                uint64_t ticks;
                if (read(tmr_fd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
                    break;
                for (int i = 0; i < 2; i++) {
                    int idx;
                    unsigned m;
                    if (if_info(names[i], &idx, &m) < 0 || idx != ifx[i]) {
                        dn_err("run: interface %s disappeared; exiting", names[i]);
                        goto out;
                    }
                    /* The receive check follows MTU changes (the ring slot size does not:
                     * a frame larger than the slot is counted as oversize). */
                    atomic_store(&D->dir[i].max_frame, m + L2_ALLOWANCE);
                }
            } else {
                client_t *c = &clients[map[k]];
                if (pfd[k].revents & (POLLERR | POLLNVAL)) {
                    client_close(c);
                    continue;
                }
                client_input(D, c);
            }
        }
    }

out:
    atomic_store(&g_stop, true);
    for (int i = 0; i < 2; i++)
        if (D->dir[i].wake_fd >= 0)
            wake(&D->dir[i]);
    for (int i = 0; i < D->nworkers; i++) {
        if (D->wk[i].started)
            pthread_join(D->wk[i].thr, NULL);
        if (D->wk[i].wake_fd > 0)
            close(D->wk[i].wake_fd);
    }
    for (int i = 0; i < MAX_CLIENTS; i++)
        client_close(&clients[i]);
    if (sock_made)
        unlink(o->control);
    if (pid_made)
        unlink(o->pidfile);
    if (ctl_fd >= 0)
        close(ctl_fd);
    if (tmr_fd >= 0)
        close(tmr_fd);
    if (sig_fd >= 0)
        close(sig_fd);
    close_packet_sockets(D);
    for (int i = 0; i < 2; i++) {
        dir_close(&D->dir[i]);
        pthread_mutex_destroy(&D->dir[i].lock);
    }
    free(D);
    return rc;
}
