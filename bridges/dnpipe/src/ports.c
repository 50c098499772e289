/* dnpipe daemon: the packet sockets (see daemon.h). */
#include "daemon.h"

/* ---- sockets ---------------------------------------------------------------------- */

int if_info(const char *name, int *ifindex, unsigned *mtu)
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

int open_rx(dir_ctx *d, unsigned mtu, unsigned ring_frames)
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

int open_tx(dir_ctx *d)
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

/* ---- closing ---------------------------------------------------------------------- */

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
void close_packet_sockets(daemon_t *D)
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

void dir_close(dir_ctx *d)
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
