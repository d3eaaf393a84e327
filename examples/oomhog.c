/*
 * oomhog -- grows its memory steadily until it hits a limit.
 *
 * Every step loads one 1 MiB chunk: load_chunk -> grow_cache -> alloc_block
 * -> touch_block (every page is written, so the memory is really used), and
 * every 8th chunk is also indexed: index_chunk -> hash_block.  It prints its
 * progress every 16 MiB.  Without --limit-mb it grows until malloc fails (it
 * then aborts, leaving a core) or until it is killed, e.g. by the OOM killer
 * or halted by funtrace-oomwatch in a memory-limited cgroup; with --limit-mb N
 * it stops by itself after N MiB.
 *
 *   oomhog [--limit-mb N] [--step-ms MS] [--pause-at-mb N] [--hold]
 *     --limit-mb N     stop after N MiB (exit 0)            default: no limit
 *     --step-ms MS     pause between 1 MiB steps            default: 1
 *     --pause-at-mb N  at N MiB, wait for SIGUSR1, then go on growing
 *                      (a watcher can act at a known size before the limit)
 *     --hold           at the limit, sleep instead of exiting (to be inspected live)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TRACED __attribute__((noinline))
#define BLOCK_SIZE (1u << 20)
#define PAGE 4096u

struct block {
    struct block *next;
    unsigned long hash;
    unsigned char *data;
};

static struct block *cache; /* every block ever loaded, newest first */
static unsigned long cache_mb;

TRACED static void touch_block(unsigned char *p, unsigned long seed)
{
    for (unsigned off = 0; off < BLOCK_SIZE; off += PAGE)
        p[off] = (unsigned char)(seed + off / PAGE);
}

TRACED static struct block *alloc_block(unsigned long seed)
{
    struct block *b = malloc(sizeof *b);
    unsigned char *data = malloc(BLOCK_SIZE);
    if (!b || !data) {
        fprintf(stderr, "oomhog: malloc failed after %lu MiB: aborting\n", cache_mb);
        abort();
    }
    touch_block(data, seed);
    b->data = data;
    b->hash = 0;
    return b;
}

TRACED static void grow_cache(unsigned long seed)
{
    struct block *b = alloc_block(seed);
    b->next = cache;
    cache = b;
    cache_mb++;
}

TRACED static unsigned long hash_block(const unsigned char *p)
{
    unsigned long h = 1469598103934665603UL;
    for (unsigned off = 0; off < BLOCK_SIZE; off += PAGE)
        h = (h ^ p[off]) * 1099511628211UL;
    return h;
}

TRACED static void index_chunk(struct block *b)
{
    b->hash = hash_block(b->data);
}

TRACED static void load_chunk(unsigned long n)
{
    grow_cache(n);
    if (n % 8 == 7)
        index_chunk(cache);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

static long parse_num(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : -1;
    if (!s || errno || *end || v < 0) {
        fprintf(stderr, "oomhog: %s needs a non-negative number\n", opt);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    long limit_mb = -1, step_ms = 1, pause_mb = -1;
    int hold = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--limit-mb"))
            limit_mb = parse_num(argv[i], argv[i + 1]), i++;
        else if (!strcmp(argv[i], "--step-ms"))
            step_ms = parse_num(argv[i], argv[i + 1]), i++;
        else if (!strcmp(argv[i], "--pause-at-mb"))
            pause_mb = parse_num(argv[i], argv[i + 1]), i++;
        else if (!strcmp(argv[i], "--hold"))
            hold = 1;
        else {
            fprintf(stderr, "usage: oomhog [--limit-mb N] [--step-ms MS] [--pause-at-mb N] [--hold]\n");
            return 2;
        }
    }
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    if (pause_mb >= 0)  /* blocked before the first line: a SIGUSR1 sent early is kept, not fatal */
        sigprocmask(SIG_BLOCK, &usr1, NULL);
    printf("oomhog: pid %d: growing 1 MiB at a time%s\n", (int)getpid(),
           limit_mb < 0 ? " until something stops me" : "");
    fflush(stdout);
    for (unsigned long n = 0; limit_mb < 0 || (long)n < limit_mb; n++) {
        load_chunk(n);
        if (cache_mb % 16 == 0) {
            printf("oomhog: %lu MiB\n", cache_mb);
            fflush(stdout);
        }
        if ((long)cache_mb == pause_mb) {
            printf("oomhog: pausing at %lu MiB until SIGUSR1\n", cache_mb);
            fflush(stdout);
            int sig;
            sigwait(&usr1, &sig);
            printf("oomhog: growing again\n");
            fflush(stdout);
        }
        if (step_ms)
            sleep_ms(step_ms);
    }
    printf("oomhog: reached --limit-mb %ld: %lu MiB in use\n", limit_mb, cache_mb);
    fflush(stdout);
    while (hold)
        pause();
    return 0;
}
