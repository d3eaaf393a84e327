/*
 * ringpool.c -- ring memory: rings carved from pooled arenas, so that a new
 * thread's ring costs no system call (issue 16: thread start).
 *
 * A ring of size S must be aligned to 2*S (the hot path wraps with
 * pos & (ring | (S - 1)), FORMAT.md 1.4).  Each size class (S = 2^5 ..
 * 2^30) carves rings at a stride of 2*S from chunks of up to 64 rings (one
 * MAP_NORESERVE mapping each: the untouched half of every stride and the
 * unused rings cost address space, no memory).  A ring given back (evicted
 * for the budget, resized, dropped in a fork child) is zeroed (MADV_DONTNEED
 * for page-sized rings: its memory goes back to the kernel) and kept on its
 * class's free list, linked through its first word; ft_ring_alloc clears
 * that word.  The housekeeper faults in the first page of the next rings of
 * the default size at every generation boundary (ft_ring_prefault), so a
 * new thread's first event does not take that fault either.
 *
 * Everything runs under the registry lock.  No malloc: the cold path may run
 * in a signal handler.
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>

#include "ft_internal.h"

#define LOG_MIN 5
#define LOG_MAX 30
#define CHUNK_BYTES (256ull << 20) /* address space per chunk (at most 64 rings) */
#define PAGE 4096ull
#define DIRTY_MEMSET (64ull << 10) /* zero up to this many written bytes with memset */

struct ring_class {
    uintptr_t free;  /* free list: first word of each free ring -> next */
    uintptr_t next;  /* next ring of the current chunk */
    uint32_t left;   /* rings left in the current chunk */
};

static struct ring_class classes[LOG_MAX + 1];

static int size_log(uint64_t size)
{
    int l = 0;
    while ((1ull << l) < size)
        l++;
    return l;
}

static int new_chunk(struct ring_class *c, uint64_t size)
{
    uint64_t stride = 2 * size, n = CHUNK_BYTES / stride;
    if (n < 1)
        n = 1;
    if (n > 64)
        n = 64;
    if (stride <= PAGE) { /* tiny rings: one page, page-aligned is aligned enough */
        char *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return -1;
        c->next = (uintptr_t)p;
        c->left = (uint32_t)(PAGE / stride);
        return 0;
    }
    size_t span = (size_t)(n * stride + stride);
    char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    uintptr_t a = ((uintptr_t)p + stride - 1) & ~(uintptr_t)(stride - 1);
    if (a > (uintptr_t)p)
        munmap(p, a - (uintptr_t)p);
    if ((uintptr_t)p + span > a + n * stride)
        munmap((void *)(a + n * stride), (uintptr_t)p + span - (a + n * stride));
    c->next = a;
    c->left = (uint32_t)n;
    return 0;
}

void *ft_ring_alloc(uint64_t size)
{
    int l = size_log(size);
    if (l < LOG_MIN || l > LOG_MAX || (1ull << l) != size)
        return NULL;
    struct ring_class *c = &classes[l];
    if (c->free) {
        uint64_t *r = (uint64_t *)c->free;
        c->free = (uintptr_t)r[0];
        r[0] = 0;
        return r;
    }
    if (!c->left && new_chunk(c, size) != 0)
        return NULL;
    void *r = (void *)c->next;
    c->next += 2 * size;
    c->left--;
    return r;
}

void ft_ring_free(void *ring, uint64_t size, uint64_t dirty)
{
    int l = size_log(size);
    if (!ring || l < LOG_MIN || l > LOG_MAX)
        return;
    if (dirty > size)
        dirty = size;
    if (size < PAGE || dirty <= DIRTY_MEMSET)
        memset(ring, 0, dirty); /* a thread that wrote little: its pages stay, no fault on reuse */
    else
        madvise(ring, size, MADV_DONTNEED); /* zero, memory back to the kernel */
    struct ring_class *c = &classes[l];
    *(uint64_t *)ring = c->free;
    c->free = (uintptr_t)ring;
}

/* fault in the first page of the next n rings of this size */
void ft_ring_prefault(uint64_t size, unsigned n)
{
    int l = size_log(size);
    if (l < LOG_MIN || l > LOG_MAX || (1ull << l) != size)
        return;
    struct ring_class *c = &classes[l];
    uintptr_t f = c->free;
    for (; f && n; n--)
        f = (uintptr_t) * (volatile uint64_t *)f; /* free rings hold their link: resident */
    if (n && !c->left && new_chunk(c, size) != 0)
        return;
    for (uint32_t i = 0; i < n && i < c->left; i++)
        *(volatile uint8_t *)(c->next + i * 2 * size) = 0;
}
