/*
 * ce_crash.c -- crashing programs with known last events, for the coreextract
 * tests.  Usage: ce_crash MODE [N]
 *   segv-thread  a worker thread runs ce_step1, ce_step2, then faults in ce_fault
 *   abort        the main thread runs ce_step1, ce_step2, then ce_do_abort -> abort()
 *   exited       a thread runs ce_exited_work and exits; then main faults
 *   many N       N workers each run ce_worker_mark(i); then main faults
 *   loop N       the main thread calls ce_step1 N times (wraps small rings), then faults
 *   live         like many 4, but never crashes: workers and main call
 *                ce_live_tick forever (for --pid), printing "ready" when set up
 *   busy         like live, plus one thread calling ce_step1 in a tight loop
 *   plugin LIB   dlopen LIB, call its ce_plugin_entry(), which faults inside LIB
 *   heap N       N MiB of malloc'ed memory filled with a pattern, then fault
 *   maps N       map one-page mappings (alternately readable and not, so they
 *                stay separate) until the process has about N, then one of 4096
 *                pages; print "mappings M", then fault (a core with M+ program
 *                headers; the pages are never touched, so they hold no data)
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

volatile int ce_sink;
char *volatile ce_heap;
static pthread_barrier_t all_ready;

NOINLINE void ce_step1(int i) { ce_sink += i; }
NOINLINE void ce_step2(int i) { ce_sink += 2 * i; }
NOINLINE void ce_fault(int *p) { *p = ce_sink; } /* p == NULL */
NOINLINE void ce_do_abort(void) { abort(); }
NOINLINE void ce_exited_work(void) { ce_sink += 7; }
NOINLINE void ce_worker_mark(int i) { ce_sink += i; }
NOINLINE void ce_live_tick(int i) { ce_sink += i; }
static volatile int waiting;
NOINLINE void ce_wait_forever(void)
{
    __atomic_add_fetch(&waiting, 1, __ATOMIC_SEQ_CST);
    for (;;) pause();
}

static void *segv_worker(void *arg)
{
    (void)arg;
    ce_step1(1);
    ce_step2(2);
    ce_fault(NULL);
    return NULL;
}

static void *exited_worker(void *arg)
{
    (void)arg;
    ce_exited_work();
    return NULL;
}

static void *many_worker(void *arg)
{
    int i = (int)(long)arg;
    ce_worker_mark(i);
    pthread_barrier_wait(&all_ready);
    ce_wait_forever();
    return NULL;
}

static void *busy_worker(void *arg)
{
    (void)arg;
    for (int i = 0;; i++) ce_step1(i);
    return NULL;
}

static void *live_worker(void *arg)
{
    int i = (int)(long)arg;
    for (;;) {
        ce_live_tick(i);
        usleep(1000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "segv-thread";
    int n = argc > 2 ? atoi(argv[2]) : 0;
    pthread_t t;
    if (strcmp(mode, "segv-thread") == 0) {
        pthread_create(&t, NULL, segv_worker, NULL);
        for (;;) pause();
    } else if (strcmp(mode, "abort") == 0) {
        ce_step1(1);
        ce_step2(2);
        ce_do_abort();
    } else if (strcmp(mode, "exited") == 0) {
        pthread_create(&t, NULL, exited_worker, NULL);
        pthread_join(t, NULL);
        ce_step1(3);
        ce_fault(NULL);
    } else if (strcmp(mode, "many") == 0) {
        pthread_barrier_init(&all_ready, NULL, (unsigned)n + 1);
        for (long i = 0; i < n; i++) {
            if (pthread_create(&t, NULL, many_worker, (void *)i) != 0) {
                perror("pthread_create");
                return 3;
            }
        }
        pthread_barrier_wait(&all_ready);
        while (__atomic_load_n(&waiting, __ATOMIC_SEQ_CST) < n) usleep(1000);
        ce_step1(4);
        ce_fault(NULL);
    } else if (strcmp(mode, "loop") == 0) {
        for (int i = 0; i < n; i++) ce_step1(i);
        ce_fault(NULL);
    } else if (strcmp(mode, "live") == 0 || strcmp(mode, "busy") == 0) {
        if (strcmp(mode, "busy") == 0) pthread_create(&t, NULL, busy_worker, NULL);
        for (long i = 0; i < (n ? n : 4); i++) pthread_create(&t, NULL, live_worker, (void *)i);
        printf("ready\n");
        fflush(stdout);
        for (;;) {
            ce_live_tick(-1);
            usleep(1000);
        }
    } else if (strcmp(mode, "heap") == 0) {
        char *p = malloc((size_t)n << 20);
        if (!p) return 3;
        memset(p, 0x5a, (size_t)n << 20);
        ce_heap = p; /* escapes: the memset stays */
        ce_step1(7);
        ce_fault(NULL);
    } else if (strcmp(mode, "maps") == 0) {
        int m = 0;
        char line[512];
        FILE *f = fopen("/proc/self/maps", "r");
        while (f && fgets(line, sizeof line, f)) m++;
        if (f) fclose(f);
        for (int i = 0; m < n; i++, m++)
            if (mmap(NULL, 4096, (i & 1) ? PROT_NONE : PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
                break;
        if (mmap(NULL, 4096 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED) m++;
        printf("mappings %d\n", m);
        fflush(stdout);
        ce_step1(6);
        ce_fault(NULL);
    } else if (strcmp(mode, "plugin") == 0) {
        void *h = dlopen(argv[2], RTLD_NOW);
        if (!h) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            return 3;
        }
        void (*entry)(void) = (void (*)(void))dlsym(h, "ce_plugin_entry");
        ce_step1(5);
        entry();
    }
    return 2;
}
