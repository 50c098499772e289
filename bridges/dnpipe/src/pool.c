#include "pool.h"

#include <stdlib.h>

/* Data capacity per class: TCP ACKs and small frames, a standard 1500-byte MTU frame
 * with up to two VLAN tags, and anything up to jumbo frames; larger ones are malloc'ed
 * exactly (they only occur with MTUs above 9000). */
static const size_t class_cap[DN_POOL_CLASSES] = {192, 1536, 9232};
/* Free buffers kept per class: enough for bursts, bounded so memory returns after one. */
static const size_t class_keep[DN_POOL_CLASSES] = {8192, 16384, 1024};
#define HUGE_CLASS 255

void dn_pool_init(dn_pool *pool, atomic_size_t *in_use, size_t limit)
{
    for (int i = 0; i < DN_POOL_CLASSES; i++) {
        pool->free[i] = NULL;
        pool->nfree[i] = 0;
    }
    pool->in_use = in_use;
    pool->limit = limit;
}

static size_t footprint(const dn_pkt *p) { return sizeof(dn_pkt) + p->cap; }

dn_pkt *dn_pool_alloc(dn_pool *pool, size_t len)
{
    int cls = HUGE_CLASS;
    for (int i = 0; i < DN_POOL_CLASSES; i++) {
        if (len <= class_cap[i]) {
            cls = i;
            break;
        }
    }
    size_t cap = cls == HUGE_CLASS ? len : class_cap[cls];
    size_t need = sizeof(dn_pkt) + cap;
    if (atomic_load_explicit(pool->in_use, memory_order_relaxed) + need > pool->limit)
        return NULL;
    dn_pkt *p;
    if (cls != HUGE_CLASS && pool->free[cls]) {
        p = pool->free[cls];
        pool->free[cls] = p->next;
        pool->nfree[cls]--;
    } else {
        p = malloc(need);
        if (!p)
            return NULL;
        p->cap = (uint32_t)cap;
        p->cls = (uint8_t)cls;
    }
    atomic_fetch_add_explicit(pool->in_use, need, memory_order_relaxed);
    p->next = NULL;
    p->len = 0;
    return p;
}

void dn_pool_free(dn_pool *pool, dn_pkt *p)
{
    atomic_fetch_sub_explicit(pool->in_use, footprint(p), memory_order_relaxed);
    if (p->cls != HUGE_CLASS && pool->nfree[p->cls] < class_keep[p->cls]) {
        p->next = pool->free[p->cls];
        pool->free[p->cls] = p;
        pool->nfree[p->cls]++;
        return;
    }
    free(p);
}

void dn_pool_destroy(dn_pool *pool)
{
    for (int i = 0; i < DN_POOL_CLASSES; i++) {
        while (pool->free[i]) {
            dn_pkt *p = pool->free[i];
            pool->free[i] = p->next;
            free(p);
        }
        pool->nfree[i] = 0;
    }
}
