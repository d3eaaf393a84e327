/*
 * server -- snapshot the trace of an unusually slow request, from inside.
 *
 * Several threads ("server-1", "server-2", ...) serve fake requests in a loop:
 * handle_request -> parse_request -> lookup_user -> render_response ->
 * format_line.  Every Nth request is made slow (lookup_user calls
 * slow_disk_read, which sleeps).  Each thread times its requests with
 * funtrace_time(); the first request slower than --slow-ms takes a snapshot
 * of the trace since that request started
 * (funtrace_pause_and_get_snapshot_starting_at_time), writes it with
 * funtrace_write_snapshot and stops the server, which then exits cleanly.
 * Decode the file with funtrace-decode: it holds the slow request, on its
 * thread, and whatever the other threads did meanwhile.
 *
 *   server [--threads N] [--requests N] [--slow-every N] [--slow-ms MS] [--out FILE]
 *     defaults: 3 threads, 3000 requests in all, every 500th request is
 *     slow (0: none), threshold 20 ms, snapshot file server-slow.raw
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "funtrace.h"

#define TRACED __attribute__((noinline))
#define SLOW_DISK_MS 60

static long nrequests = 3000, slow_every = 500, slow_ms = 20, nthreads = 3;
static const char *out_path = "server-slow.raw";

static long next_request;  /* atomic: next request id to serve */
static int stop;           /* atomic: a snapshot was taken, stop serving */
static int snapshot_taken; /* atomic: only the first slow request snapshots */
static long slow_id = -1;
static double slow_latency_ms;
static int snapshot_ok;

struct request {
    long id;
    char text[64];
    int user;
    char reply[128];
};

TRACED static void slow_disk_read(void)
{
    struct timespec ts = {0, SLOW_DISK_MS * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

TRACED static void parse_request(struct request *r)
{
    snprintf(r->text, sizeof r->text, "GET /user/%ld", r->id % 97);
    r->user = atoi(strrchr(r->text, '/') + 1);
}

TRACED static int lookup_user(struct request *r)
{
    if (slow_every > 0 && r->id % slow_every == slow_every - 1)
        slow_disk_read(); /* the cache missed: an unusually slow request */
    return r->user * 7 + 1;
}

TRACED static int format_line(char *out, size_t cap, long id, int score)
{
    return snprintf(out, cap, "200 OK request=%ld score=%d", id, score);
}

TRACED static void render_response(struct request *r, int score)
{
    format_line(r->reply, sizeof r->reply, r->id, score);
}

TRACED static void handle_request(struct request *r)
{
    parse_request(r);
    render_response(r, lookup_user(r));
}

/* called by the thread that saw the slow request, once */
TRACED static void save_snapshot(uint64_t since)
{
    struct funtrace_snapshot *snap = funtrace_pause_and_get_snapshot_starting_at_time(since);
    funtrace_write_snapshot(out_path, snap);
    funtrace_free_snapshot(snap);
    struct stat st;
    snapshot_ok = stat(out_path, &st) == 0 && st.st_size > 0;
}

static void *serve(void *arg)
{
    char name[16];
    snprintf(name, sizeof name, "server-%ld", (long)(intptr_t)arg);
    pthread_setname_np(pthread_self(), name);
    double ticks_per_ms = (double)funtrace_ticks_per_second() / 1000.0;
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        long id = __atomic_fetch_add(&next_request, 1, __ATOMIC_RELAXED);
        if (id >= nrequests)
            break;
        struct request r = {.id = id};
        uint64_t start = funtrace_time();
        handle_request(&r);
        double ms = (double)(funtrace_time() - start) / ticks_per_ms;
        if (ms > (double)slow_ms && !__atomic_exchange_n(&snapshot_taken, 1, __ATOMIC_ACQ_REL)) {
            slow_id = id;
            slow_latency_ms = ms;
            save_snapshot(start);
            __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
        }
    }
    return NULL;
}

static long parse_num(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : -1;
    if (!s || errno || *end || v < 0) {
        fprintf(stderr, "server: %s needs a non-negative number\n", opt);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--threads"))
            nthreads = parse_num(a, v), i++;
        else if (!strcmp(a, "--requests"))
            nrequests = parse_num(a, v), i++;
        else if (!strcmp(a, "--slow-every"))
            slow_every = parse_num(a, v), i++;
        else if (!strcmp(a, "--slow-ms"))
            slow_ms = parse_num(a, v), i++;
        else if (!strcmp(a, "--out") && v)
            out_path = v, i++;
        else {
            fprintf(stderr, "usage: server [--threads N] [--requests N] [--slow-every N] "
                            "[--slow-ms MS] [--out FILE]\n");
            return 2;
        }
    }
    if (nthreads < 1 || nthreads > 64) {
        fprintf(stderr, "server: --threads must be 1..64\n");
        return 2;
    }
    pthread_t threads[64];
    for (long i = 0; i < nthreads; i++)
        if (pthread_create(&threads[i], NULL, serve, (void *)(intptr_t)(i + 1))) {
            fprintf(stderr, "server: pthread_create failed\n");
            return 1;
        }
    for (long i = 0; i < nthreads; i++)
        pthread_join(threads[i], NULL);

    long served = next_request < nrequests ? next_request : nrequests;
    if (slow_id < 0) {
        printf("server: %ld requests, none slower than %ld ms: no snapshot\n", served, slow_ms);
        return 0;
    }
    if (!snapshot_ok) {
        fprintf(stderr, "server: request %ld took %.1f ms but writing the snapshot to %s failed\n",
                slow_id, slow_latency_ms, out_path);
        return 1;
    }
    printf("server: request %ld took %.1f ms (threshold %ld ms): snapshot written to %s\n", slow_id,
           slow_latency_ms, slow_ms, out_path);
    return 0;
}
