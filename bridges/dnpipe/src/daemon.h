/* dnpipe daemon: the I/O shell around the pure core.
 *
 * Threads:
 *   - the data threads: one for both directions (`--threads 1`, the default), or one per
 *     direction (`--threads 2`; forward = a -> b, reverse = b -> a). A direction owns a
 *     receive socket with a TPACKET_V2 mmap ring on its input port and a plain send
 *     socket on its output port. Its thread drains the ring (kernel receive timestamps give each
 *     frame its true arrival time, however late the thread looks), feeds the core, and
 *     sends everything due with one sendmmsg() per batch. It sleeps in ppoll() on the
 *     ring, a wake-up eventfd and a nanosecond timeout for the next departure, with a
 *     timer slack of 1 ns.
 *   - the main thread: control socket, signals, housekeeping.
 * Each pipe has a mutex: the data thread holds it while it works (not while it sleeps),
 * the control thread takes it to read counters or apply a config, so that a snapshot
 * and a change are atomic with respect to the packets.
 *
 * The daemon's files, one concern each (this header: what they share):
 *   ports.c     the packet sockets: interface look-up, the receive ring, the send socket,
 *               and closing them at exit;
 *   datapath.c  the data threads: draining the rings, sendmmsg() batches, waiting and pacing;
 *   control.c   the control socket: requests, replies, snapshots, the pidfile;
 *   daemon.c    dn_run(): set-up, the main thread's loop, teardown.
 */
#ifndef DNPIPE_DAEMON_H
#define DNPIPE_DAEMON_H

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

static inline uint64_t ts_ns(clockid_t c)
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

typedef struct {
    dir_ctx dir[2];
    worker_t wk[2];
    int nworkers;
    const dn_run_opts *o;
    uint64_t start_mono;
    uint64_t seed;
} daemon_t;

typedef struct {
    int fd;
    char buf[4096];
    size_t len;
} client_t;

extern atomic_bool g_stop;
extern atomic_size_t g_mem_in_use;

/* ports.c */
int if_info(const char *name, int *ifindex, unsigned *mtu);
int open_rx(dir_ctx *d, unsigned mtu, unsigned ring_frames);
int open_tx(dir_ctx *d);
void close_packet_sockets(daemon_t *D);
void dir_close(dir_ctx *d);

/* datapath.c */
unsigned drain_ring(dir_ctx *d, uint64_t now);
uint64_t batch_of(const dn_config *const *cfg, const dir_ctx *const *d, int n, uint64_t batch_ns);
void *data_thread(void *arg);
void wake(dir_ctx *d);

/* control.c */
void client_close(client_t *c);
void client_input(daemon_t *D, client_t *c);
int write_pidfile(const char *path);
int control_listen(const char *path);
int control_publish(const char *path);
void control_unpublished_cleanup(const char *path);

#endif
