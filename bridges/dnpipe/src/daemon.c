/* dnpipe daemon: dn_run(), set-up, the main thread's loop and teardown (see daemon.h for
 * the threads and the other files). */
#include "daemon.h"

atomic_bool g_stop;
atomic_size_t g_mem_in_use;

static uint64_t seed_for(uint64_t seed, int dir)
{
    /* Independent streams per direction from one seed. */
    uint64_t x = seed ^ (0xd1b54a32d192ed03ULL * (uint64_t)(dir + 1));
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
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
