/* Packet buffers for one data thread: size classes with free lists, and a process-wide
 * cap on buffer memory so that a long delay at a high rate cannot exhaust the host.
 * Not thread-safe by design: each direction's thread allocates and frees its own. */
#ifndef DNPIPE_POOL_H
#define DNPIPE_POOL_H

#include "core.h"
#include <stdatomic.h>

#define DN_POOL_CLASSES 3

typedef struct {
    dn_pkt *free[DN_POOL_CLASSES];
    size_t  nfree[DN_POOL_CLASSES];
    atomic_size_t *in_use;   /* shared across the process */
    size_t  limit;           /* bytes */
} dn_pool;

void    dn_pool_init(dn_pool *pool, atomic_size_t *in_use, size_t limit);
dn_pkt *dn_pool_alloc(dn_pool *pool, size_t len);   /* NULL: memory cap reached */
void    dn_pool_free(dn_pool *pool, dn_pkt *pkt);
void    dn_pool_destroy(dn_pool *pool);

#endif
