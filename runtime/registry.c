/*
 * registry.c -- the thread registry: per-thread records and rings, the cold
 * path that creates them, thread exit, the ring memory budget, pausing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "funtrace.h"
#include "ft_internal.h"

struct ft_thread ft_thread_dummy_init __attribute__((aligned(64)));
struct ft_thread ft_thread_dummy_dead __attribute__((aligned(64)));
__thread struct ft_thread *ft_self __attribute__((tls_model("initial-exec"))) = &ft_thread_dummy_init;
__thread struct ft_thread *ft_self_s __attribute__((tls_model("initial-exec"))) = &ft_thread_dummy_init;
/* the record of this thread (whatever mode), NULL if none */
static __thread struct ft_thread *my_rec __attribute__((tls_model("initial-exec")));

static void set_hot_ptr(struct ft_thread *t)
{
    if (ft_sampled_mode)
        ft_self_s = t;
    else
        ft_self = t;
}

/* ---- rings ------------------------------------------------------------ */

uint64_t ft_mask_for(const struct ft_thread *t)
{
    uint64_t ring;
    if (FT_LOAD(t->state) != FT_THR_ALIVE || !FT_LOAD(funtrace_root.enabled) || FT_LOAD(ft_rt.pause_depth))
        return 0;
    ring = FT_LOAD(t->ring);
    return ring ? ring | (t->ring_size - 1) : 0;
}

/* Record indices in the order their records became EXITED (with a ring)
 * and EVICTED: the oldest of each is found without scanning the registry,
 * which with thousands of exited threads would cost every new thread
 * microseconds.  A popped index whose record is no longer in that state is
 * skipped.  Under lock; each holds at most threads_cap indices. */
struct idxq {
    uint32_t *v;
    uint32_t cap, head, n;
};
static struct idxq q_exited, q_evicted;

static void q_push(struct idxq *q, uint32_t i)
{
    if (q->n < q->cap) {
        q->v[(q->head + q->n) % q->cap] = i;
        q->n++;
    }
}

/* the oldest index whose record is in state `state` (and, for EXITED, has a
 * ring); UINT32_MAX if none */
static uint32_t q_pop(struct idxq *q, uint32_t state)
{
    struct ft_thread *th = ft_threads();
    while (q->n) {
        uint32_t i = q->v[q->head];
        q->head = (q->head + 1) % q->cap;
        q->n--;
        if (i < funtrace_root.threads_used && th[i].state == state && (state != FT_THR_EXITED || th[i].ring))
            return i;
    }
    return UINT32_MAX;
}

/* the bytes of t's ring, from its start, that may be non-zero: up to its
 * write position and the slots a hook may have in flight there, unless the
 * ring has wrapped (a written slot after them) */
uint64_t ft_ring_dirty(const struct ft_thread *t)
{
    uint64_t off = t->pos - t->ring, size = t->ring_size;
    if (!t->ring || off >= size || off + 24 >= size)
        return size;
    if (((const uint64_t *)(uintptr_t)t->ring)[(off + 16) / 8])
        return size;
    return off + 16;
}

/* evict the oldest exited ring (its memory goes back to the ring pool,
 * zeroed); *evicted = 0 if there was nothing to evict.  Under lock. */
static void evict_oldest(int *evicted)
{
    struct ft_thread *th = ft_threads();
    uint32_t best = q_pop(&q_exited, FT_THR_EXITED);
    void *ring;
    uint64_t size;
    *evicted = best != UINT32_MAX;
    if (best == UINT32_MAX)
        return;
    funtrace_root.rings_evicted++;
    ring = (void *)(uintptr_t)th[best].ring;
    size = th[best].ring_size;
    uint64_t dirty = ft_ring_dirty(&th[best]);
    FT_STORE(th[best].state, (uint32_t)FT_THR_EVICTED);
    q_push(&q_evicted, best);
    FT_STORE(th[best].ring, 0);
    ft_rt.ring_bytes -= size;
    ft_ring_free(ring, size, dirty);
}

/* a ring of `size` bytes within the budget (evicting exited rings); under lock */
static void *ring_get(uint64_t size)
{
    int evicted = 1;
    while (ft_rt.ring_bytes + size > funtrace_root.budget && evicted)
        evict_oldest(&evicted);
    void *ring = ft_ring_alloc(size);
    if (ring)
        ft_rt.ring_bytes += size;
    return ring;
}

static void ring_put(struct ft_thread *t)
{
    void *ring = (void *)(uintptr_t)t->ring;
    uint64_t size = t->ring_size;
    if (!ring)
        return;
    uint64_t dirty = ft_ring_dirty(t);
    FT_STORE(t->ring, 0);
    ft_rt.ring_bytes -= size;
    ft_ring_free(ring, size, dirty);
}

/* ---- records ---------------------------------------------------------- */

static void gen_pos_reset(struct ft_thread *t)
{
    for (unsigned g = 0; g < FT_GEN_SLOTS; g++) {
        t->gen_pos[g].gen = FT_GEN_NONE;
        t->gen_pos[g].pos = 0;
    }
}

/* a record slot for a new thread; under lock.  EVICTED records (no ring
 * left, nothing to decode) are reused first, so that a program creating
 * short-lived threads keeps a compact registry; then never-used slots; when
 * the registry is full, IGNORED records and then the oldest exited ring. */
static struct ft_thread *slot_get(void)
{
    struct ft_root *r = &funtrace_root;
    struct ft_thread *th = ft_threads();
    uint32_t i, best = UINT32_MAX;
    int evicted;
    for (;;) {
        best = q_pop(&q_evicted, FT_THR_EVICTED);
        if (best != UINT32_MAX) {
            /* a record retired by a resize belonged to a thread that lives
             * on in another record: reusing it loses nobody */
            if (!(th[best].flags & FT_THRF_RETIRED))
                r->records_reused++;
            return &th[best];
        }
        if (r->threads_used < r->threads_cap)
            return &th[r->threads_used]; /* threads_used is bumped once the record is filled */
        for (i = 0; i < r->threads_used; i++)
            if (th[i].state == FT_THR_IGNORED || th[i].state == FT_THR_FREE)
                return &th[i];
        evict_oldest(&evicted);
        if (!evicted)
            return NULL;
    }
}

static uint32_t main_idx = UINT32_MAX; /* the main thread's record, if still so */

/* names given by pthread_setname_np to threads without a record yet (named
 * by their creator before their first traced call), by tid: the record
 * created later takes its name from here.  names_unsure: such a thread's
 * tid could not be read (tid.c), so new records ask PR_GET_NAME.  Under
 * lock. */
#define FT_PENDING_NAMES 16
static struct pending_name {
    uint32_t tid; /* 0: empty */
    char name[FT_THREAD_NAME_LEN];
} pending[FT_PENDING_NAMES];
static uint32_t pending_next;
static int names_unsure;

/* records that took the main thread's name, since the last refresh: the
 * next refresh reads theirs first (a thread renamed with prctl before its
 * first traced call, or made by another renamed thread).  Under lock. */
#define FT_GUESSED_NAMES 64
static struct {
    uint32_t idx;
    uint64_t seq;
} guessed[FT_GUESSED_NAMES];
static uint32_t n_guessed;

static int pending_take(uint32_t tid, char *name)
{
    for (uint32_t i = 0; i < FT_PENDING_NAMES; i++) {
        if (pending[i].tid == tid) {
            memcpy(name, pending[i].name, FT_THREAD_NAME_LEN);
            pending[i].tid = 0;
            return 1;
        }
    }
    return 0;
}

/* a new record's name: the kernel gives a new thread its creator's name,
 * most often the main thread's, so a traced thread takes the main thread's
 * name as the registry knows it (kept current by the pthread_setname_np
 * interposer and the refreshes at generation boundaries); PR_GET_NAME, a
 * system call, only where there is no alive main-thread record (the first
 * record, the child of a fork), for records without a ring (IGNORED: never
 * refreshed, e.g. the housekeeper, named before it asks) and when a name
 * given to a thread without a record could not be kept for it (pending).
 * Under lock. */
static void fill_name(struct ft_thread *t, uint32_t state)
{
    struct ft_thread *th = ft_threads(), *m = NULL;
    char name[FT_THREAD_NAME_LEN + 1];
    if (state == FT_THR_ALIVE && pending_take(t->tid, t->name))
        return;
    if (t->flags & FT_THRF_MAIN)
        main_idx = (uint32_t)(t - th);
    else if (main_idx < funtrace_root.threads_used && state == FT_THR_ALIVE && !names_unsure)
        m = &th[main_idx];
    if (m && (m->flags & FT_THRF_MAIN) && m->state == FT_THR_ALIVE) {
        memcpy(t->name, m->name, FT_THREAD_NAME_LEN);
        if (n_guessed < FT_GUESSED_NAMES) {
            guessed[n_guessed].idx = (uint32_t)(t - th);
            guessed[n_guessed++].seq = t->seq;
        }
        return;
    }
    memset(name, 0, sizeof name);
    if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0)
        name[0] = 0;
    memcpy(t->name, name, FT_THREAD_NAME_LEN);
    t->name[FT_THREAD_NAME_LEN - 1] = 0;
}

/* create this thread's record and ring; under lock */
static struct ft_thread *record_create(uint64_t size, uint32_t state)
{
    struct ft_root *r = &funtrace_root;
    struct ft_thread *t = slot_get();
    void *ring = NULL;
    uint64_t gen;
    if (!t)
        return NULL;
    r->threads_created++;
    if (state == FT_THR_ALIVE) {
        ring = ring_get(size);
        if (!ring)
            state = FT_THR_IGNORED;
        else /* fault its first page in now, not between the first event's
              * timestamp and its store (the entry is stored after rdtsc) */
            *(volatile uint64_t *)ring = 0;
    }
    FT_STORE(t->state, (uint32_t)FT_THR_FREE);
    FT_STORE(t->mask, 0);
    t->seq++;
    t->countdown = 1; /* sampled: the first return is stamped */
    t->tid = ft_gettid();
    t->fmt = ft_sampled_mode ? FT_FMT_SAMPLED4 : FT_FMT_EXACT8;
    t->addr_hi = FT_E8_HI_NONE; /* the first event carries both escapes */
    t->tsc_hi = FT_E8_HI_NONE;
    t->self = (uint64_t)(uintptr_t)t;
    t->flags = (t->tid == (uint32_t)r->pid) ? FT_THRF_MAIN : 0;
    t->start_tsc = ft_rdtsc();
    t->exit_tsc = 0;
    fill_name(t, state);
    gen_pos_reset(t);
    t->ring_size = ring ? size : 0;
    t->pos = (uint64_t)(uintptr_t)ring;
    t->ring = (uint64_t)(uintptr_t)ring;
    t->wrap = ring ? (uint64_t)(uintptr_t)ring | (size - 1) : 0;
    /* events from here on belong to the current generation or a later one */
    gen = FT_LOAD(r->gen_current);
    t->gen_pos[gen % FT_GEN_SLOTS].pos = t->pos;
    t->gen_pos[gen % FT_GEN_SLOTS].gen = gen;
    __atomic_thread_fence(__ATOMIC_RELEASE);
    FT_STORE(t->state, state);
    FT_STORE(t->mask, ft_mask_for(t));
    if (t == &ft_threads()[r->threads_used])
        FT_STORE(r->threads_used, r->threads_used + 1);
    ft_rt.pthreads[t - ft_threads()] = pthread_self();
    return t;
}

/* the cold path of every hook: the thread has no record yet (its hot
 * pointer is ft_thread_dummy_init).  Creates the record and ring, then
 * records the event.  Called with the hook's registers saved. */
void ft_slow_event(uint64_t word)
{
    struct ft_thread *t;
    if (ft_in_runtime)
        return; /* e.g. a signal handler interrupted this thread in the runtime */
    ft_in_runtime++;
    if (!ft_rt.initialized) {
        if (!ft_libc_ready() || ft_frozen()) { /* .preinit_array code: not yet (its getenv sees nothing) */
            ft_in_runtime--;
            return;
        }
        ft_init();
    }
    if (ft_frozen()) { /* a fatal signal froze tracing since the hook looked */
        ft_in_runtime--;
        return;
    }
    if (my_rec) { /* record exists but the hot pointer was reset: restore */
        set_hot_ptr(my_rec);
        ft_write_event(my_rec, word);
        ft_in_runtime--;
        return;
    }
    if (!ft_lock()) { /* frozen meanwhile (freeze.c): not now */
        ft_in_runtime--;
        return;
    }
    t = record_create(funtrace_root.default_buf_size, FT_THR_ALIVE);
    ft_unlock();
    if (!t || t->state != FT_THR_ALIVE) {
        set_hot_ptr(&ft_thread_dummy_dead);
        ft_in_runtime--;
        return;
    }
    my_rec = t;
    pthread_setspecific(ft_rt.exit_key, t);
    ft_thread_altstack();
    set_hot_ptr(t);
    ft_write_event(t, word);
    ft_in_runtime--;
}

/* pthread key destructor: the thread is exiting (return, pthread_exit or
 * cancellation).  The record keeps its ring and final pos. */
static void thread_exit(void *arg)
{
    struct ft_thread *t = arg;
    if (!t || t != my_rec)
        return;
    ft_self = &ft_thread_dummy_dead;
    ft_self_s = &ft_thread_dummy_dead;
    if (!ft_lock()) { /* tracing frozen (freeze.c): the record stays as it is */
        my_rec = NULL;
        ft_thread_altstack_free();
        return;
    }
    FT_STORE(t->mask, 0);
    t->exit_tsc = ft_rdtsc();
    FT_STORE(t->state, (uint32_t)FT_THR_EXITED);
    q_push(&q_exited, (uint32_t)(t - ft_threads()));
    ft_rt.pthreads[t - ft_threads()] = 0;
    ft_unlock();
    my_rec = NULL;
    ft_thread_altstack_free();
}

void ft_registry_init(void)
{
    struct ft_root *r = &funtrace_root;
    uint64_t cap = FT_DEFAULT_MAX_THREADS;
    const char *s = getenv("FUNTRACE_MAX_THREADS");
    void *p;
    if (s && *s) {
        uint64_t v = strtoull(s, NULL, 10);
        if (v >= 2 && v <= 1000000)
            cap = v;
        else
            ft_warn("FUNTRACE_MAX_THREADS must be 2..1000000; using 4096", s);
    }
    p = mmap(NULL, cap * sizeof(struct ft_thread), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        cap = 64;
        p = mmap(NULL, cap * sizeof(struct ft_thread), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    ft_rt.pthreads = mmap(NULL, cap * (sizeof(pthread_t) + 2 * sizeof(uint32_t)), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED || ft_rt.pthreads == MAP_FAILED) {
        ft_warn("cannot allocate the thread registry", NULL);
        return;
    }
    r->threads = (uint64_t)(uintptr_t)p;
    r->threads_cap = (uint32_t)cap;
    q_exited.v = (uint32_t *)(ft_rt.pthreads + cap);
    q_evicted.v = q_exited.v + cap;
    q_exited.cap = q_evicted.cap = (uint32_t)cap;
    /* the hooks' validity check: a record pointer inside the registry,
     * its hot line too */
    ft_hot.reg_base = (uint64_t)(uintptr_t)p;
    ft_hot.reg_span = cap * sizeof(struct ft_thread) - 63;
    r->threads_used = 0;
    pthread_key_create(&ft_rt.exit_key, thread_exit);
}

/* Off every thread's path (the housekeeper, at generation boundaries):
 * fault in the pages a new thread will touch first -- the next registry
 * record and the first page of the next rings of the default size.  Under
 * lock (the next record is not in use until the lock is released). */
void ft_registry_prefault(void)
{
    struct ft_root *r = &funtrace_root;
    struct ft_thread *th = ft_threads();
    if (!th)
        return;
    if (r->threads_used < r->threads_cap)
        FT_STORE(th[r->threads_used].state, FT_LOAD(th[r->threads_used].state));
    ft_ring_prefault(r->default_buf_size, 16);
}

/* ---- pausing and masks ----------------------------------------------- */

/* Other threads' masks are only written under ft_rt.lock, like every change
 * of a record's ring or state, so a mask is never computed from a ring the
 * record no longer has. */
void ft_apply_masks(void)
{
    struct ft_thread *th = ft_threads();
    uint32_t n = FT_LOAD(funtrace_root.threads_used);
    for (uint32_t i = 0; i < n; i++)
        if (FT_LOAD(th[i].state) == FT_THR_ALIVE)
            FT_STORE(th[i].mask, ft_mask_for(&th[i]));
}

/* Pause every thread for a snapshot: takes ft_rt.lock and keeps it until
 * ft_resume_all() (so threads are neither created nor retired meanwhile).
 * may_block = 0 (signal handlers, funtrace_write_snapshot_fd): only try the
 * lock for ~1000 yields, and never if this thread is inside the runtime;
 * returns 0 if not paused (the snapshot is then read live). */
int ft_pause_all(int may_block)
{
    int tries;
    if (ft_in_runtime)
        return 0;
    if (may_block) {
        pthread_mutex_lock(&ft_rt.lock);
    } else {
        for (tries = 0; pthread_mutex_trylock(&ft_rt.lock) != 0; tries++) {
            if (tries == 1000)
                return 0;
            sched_yield();
        }
    }
    ft_in_runtime++;
    ft_rt.pause_depth++;
    ft_apply_masks();
    return 1;
}

void ft_resume_all(void)
{
    ft_rt.pause_depth--;
    ft_apply_masks();
    pthread_mutex_unlock(&ft_rt.lock);
    ft_in_runtime--;
}

/* ---- names ------------------------------------------------------------ */

void ft_thread_set_name_by_pthread(pthread_t th, const char *name)
{
    struct ft_thread *t = ft_threads();
    uint32_t n;
    if (!t || !ft_lock())
        return;
    char buf[FT_THREAD_NAME_LEN];
    int found = 0;
    uint32_t tid;
    memset(buf, 0, sizeof buf);
    ft_strlcpy(buf, name, sizeof buf);
    n = funtrace_root.threads_used;
    for (uint32_t i = 0; i < n; i++) {
        if (t[i].state == FT_THR_ALIVE && pthread_equal(ft_rt.pthreads[i], th)) {
            memcpy(t[i].name, buf, sizeof buf);
            found = 1;
        }
    }
    if (!found) { /* no record yet: its record, when created, takes the name */
        if (!ft_tid_of(th, &tid)) {
            names_unsure = 1;
        } else {
            char old[FT_THREAD_NAME_LEN];
            struct pending_name *p;
            (void)pending_take(tid, old); /* a second name replaces the first */
            p = &pending[pending_next]; /* the oldest entry is dropped */
            pending_next = (pending_next + 1) % FT_PENDING_NAMES;
            p->tid = tid;
            memcpy(p->name, buf, sizeof buf);
        }
    }
    ft_unlock();
}

/* t's name from /proc/self/task/TID/comm */
static void refresh_one(struct ft_thread *t)
{
    char path[64], buf[FT_THREAD_NAME_LEN + 1], name[FT_THREAD_NAME_LEN];
    size_t l = ft_strlcpy(path, "/proc/self/task/", sizeof path);
    ssize_t got;
    int fd;
    l += ft_u64_to_dec(path + l, t->tid);
    ft_strlcpy(path + l, "/comm", sizeof path - l);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    got = read(fd, buf, FT_THREAD_NAME_LEN);
    close(fd);
    if (got <= 0)
        return;
    buf[got] = 0;
    if (buf[got - 1] == '\n')
        buf[got - 1] = 0;
    memset(name, 0, sizeof name);
    ft_strlcpy(name, buf, sizeof name);
    if (memcmp(name, t->name, sizeof name))
        memcpy(t->name, name, sizeof name);
}

/* record k's name was just read as one of the first ng guessed[] (at most
 * 64 compares, at a generation boundary): the round-robin skips it */
static int read_above(uint32_t k, uint32_t ng)
{
    for (uint32_t i = 0; i < ng; i++)
        if (guessed[i].idx == k)
            return 1;
    return 0;
}

/* refresh up to 64 alive threads' names (catches prctl(PR_SET_NAME) and
 * writes to comm): the records that took the main thread's name since the
 * last refresh, then round-robin; under lock */
void ft_refresh_names(void)
{
    struct ft_thread *th = ft_threads();
    uint32_t n = funtrace_root.threads_used, done = 0, i;
    uint32_t ng = n_guessed < FT_GUESSED_NAMES ? n_guessed : FT_GUESSED_NAMES; /* (memory a crash
                                           handler overwrote, e.g. a memory test: never past the array) */
    /* first the records created since the last refresh with a guessed name */
    for (i = 0; i < ng; i++) {
        struct ft_thread *t = &th[guessed[i].idx];
        if (guessed[i].idx < n && t->seq == guessed[i].seq && t->state == FT_THR_ALIVE) {
            refresh_one(t);
            done++;
        } else {
            guessed[i].idx = UINT32_MAX; /* not read: the round-robin may */
        }
    }
    n_guessed = 0;
    if (!n)
        return;
    for (i = 0; i < n && done < 64; i++) {
        uint32_t k = (ft_rt.name_refresh_next + i) % n;
        if (th[k].state != FT_THR_ALIVE || read_above(k, ng))
            continue;
        done++;
        refresh_one(&th[k]);
    }
    ft_rt.name_refresh_next = (ft_rt.name_refresh_next + i) % n;
}

/* ---- fork ------------------------------------------------------------- */

/* In the child of fork(): only the calling thread exists.  Drop every other
 * record and ring, give this thread a fresh ring in record 0. */
void ft_registry_after_fork_child(void)
{
    struct ft_root *r = &funtrace_root;
    struct ft_thread *th = ft_threads();
    uint32_t n = r->threads_used, i;
    int had = my_rec != NULL;
    uint64_t size = had ? my_rec->ring_size : r->default_buf_size;
    if (!th)
        return;
    for (i = 0; i < n; i++) {
        if (th[i].ring)
            ft_ring_free((void *)(uintptr_t)th[i].ring, th[i].ring_size, ft_ring_dirty(&th[i]));
        memset(&th[i], 0, sizeof th[i]);
        ft_rt.pthreads[i] = 0;
    }
    r->threads_used = 0;
    ft_rt.ring_bytes = 0;
    q_exited.head = q_exited.n = 0;
    q_evicted.head = q_evicted.n = 0;
    ft_rt.pause_depth = 0;
    ft_rt.name_refresh_next = 0;
    memset(pending, 0, sizeof pending);
    pending_next = 0;
    names_unsure = 0;
    n_guessed = 0;
    main_idx = UINT32_MAX;
    my_rec = NULL;
    if (ft_self == &ft_thread_dummy_dead || ft_self_s == &ft_thread_dummy_dead) {
        /* ignored thread stays ignored */
        if (!had)
            return;
    }
    ft_self = &ft_thread_dummy_init;
    ft_self_s = &ft_thread_dummy_init;
    if (had) {
        struct ft_thread *t = record_create(size ? size : r->default_buf_size, FT_THR_ALIVE);
        if (t && t->state == FT_THR_ALIVE) {
            my_rec = t;
            pthread_setspecific(ft_rt.exit_key, t);
            set_hot_ptr(t);
        } else {
            set_hot_ptr(&ft_thread_dummy_dead);
        }
    }
}

/* ---- API -------------------------------------------------------------- */

FT_EXPORT void funtrace_ignore_this_thread(void)
{
    struct ft_thread *t = my_rec;
    ft_self = &ft_thread_dummy_dead;
    ft_self_s = &ft_thread_dummy_dead;
    if (!t) {
        /* no record yet: create an IGNORED one so readers see the thread */
        if (!ft_rt.initialized)
            ft_init();
        if (!ft_lock())
            return;
        t = record_create(0, FT_THR_IGNORED);
        ft_unlock();
        if (t)
            pthread_setspecific(ft_rt.exit_key, NULL);
        return;
    }
    if (!ft_lock())
        return;
    FT_STORE(t->mask, 0);
    FT_STORE(t->state, (uint32_t)FT_THR_IGNORED);
    ring_put(t);
    ft_rt.pthreads[t - ft_threads()] = 0;
    ft_unlock();
    pthread_setspecific(ft_rt.exit_key, NULL);
    my_rec = NULL;
}

FT_EXPORT void funtrace_set_thread_log_buf_size(int log_buf_size)
{
    struct ft_thread *t;
    uint64_t size;
    if (log_buf_size < 5) {
        funtrace_ignore_this_thread();
        return;
    }
    /* rings of 2^5 bytes and more, as the original funtrace accepts */
    if (log_buf_size > 30)
        log_buf_size = 30;
    size = 1ull << log_buf_size;
    if (!ft_rt.initialized)
        ft_init();
    t = my_rec;
    if (!t) {
        if (ft_self == &ft_thread_dummy_dead || ft_self_s == &ft_thread_dummy_dead)
            ft_self = ft_self_s = &ft_thread_dummy_init; /* un-ignore */
        if (!ft_lock())
            return;
        t = record_create(size, FT_THR_ALIVE);
        ft_unlock();
        if (!t || t->state != FT_THR_ALIVE)
            return;
        my_rec = t;
        pthread_setspecific(ft_rt.exit_key, t);
        set_hot_ptr(t);
        return;
    }
    if (t->ring_size == size)
        return;
    /* The thread gets a NEW record (created first, so it cannot take the old
     * slot) and the old one is retired: EVICTED, ring freed. */
    struct ft_thread *old = t;
    if (!ft_lock())
        return;
    ft_self = ft_self_s = &ft_thread_dummy_dead;
    FT_STORE(old->mask, 0);
    t = record_create(size, FT_THR_ALIVE);
    if (t)
        memcpy(t->name, old->name, FT_THREAD_NAME_LEN); /* the same thread */
    old->exit_tsc = ft_rdtsc();
    old->flags |= FT_THRF_RETIRED;
    FT_STORE(old->state, (uint32_t)FT_THR_EVICTED);
    q_push(&q_evicted, (uint32_t)(old - ft_threads()));
    ring_put(old);
    if (!t || t->state != FT_THR_ALIVE) {
        ft_rt.pthreads[old - ft_threads()] = 0;
        ft_unlock();
        my_rec = NULL;
        pthread_setspecific(ft_rt.exit_key, NULL);
        return;
    }
    ft_rt.pthreads[old - ft_threads()] = 0;
    ft_unlock();
    my_rec = t;
    pthread_setspecific(ft_rt.exit_key, t);
    set_hot_ptr(t);
}

FT_EXPORT void funtrace_disable_tracing(void)
{
    ft_lock_wait();
    FT_STORE(funtrace_root.enabled, 0u);
    ft_apply_masks();
    ft_unlock();
    ft_xray_set(0); /* XRay: unpatch the sleds */
}

FT_EXPORT void funtrace_enable_tracing(void)
{
    ft_xray_set(1);
    ft_lock_wait();
    FT_STORE(funtrace_root.enabled, 1u);
    ft_apply_masks();
    ft_unlock();
}
