/*
 * crash -- several threads at work when one of them crashes with SIGSEGV.
 *
 * main starts four named worker threads and waits for them.  "parser-1" and
 * "parser-2" handle five records each (worker_main -> process_item ->
 * parse_record -> checksum) and then block in wait_for_more_work; "hasher"
 * handles two records and then spins in hash_forever -> mix_round; "loader"
 * handles records 400-402, waits until the three others and main (in
 * wait_for_workers) have reached those states, then gets record 403, which is
 * damaged: parse_record calls corrupt_record, which writes through a NULL data
 * pointer -> SIGSEGV.  Because the crash waits for the others, what every
 * thread was doing is the same on every run: run it with `ulimit -c unlimited`
 * and the core holds the funtrace rings of all five threads (examples/demo.sh).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* keep every level of the call chain a real call, even with optimization */
#define TRACED __attribute__((noinline))

#define RECORD_LEN 64
#define BAD_RECORD 403 /* the loader's fourth record (its records are 400, 401, ...) */

struct record {
    int id;
    int len;
    unsigned char *data;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int ready; /* threads that reached their final state */
static volatile unsigned long sink;
/* where a damaged record's buffer points (nothing: it was lost) */
static unsigned char *volatile lost_buffer;

TRACED static unsigned checksum(const unsigned char *p, int n)
{
    unsigned sum = 0;
    for (int i = 0; i < n; i++)
        sum = sum * 31 + p[i];
    return sum;
}

TRACED static void corrupt_record(struct record *r)
{
    /* the bug this example is about: the buffer was dropped while the
     * record was still queued, and the record is patched in place */
    r->data = lost_buffer;
    r->data[r->len - 1] = 0; /* NULL pointer write: SIGSEGV */
}

TRACED static unsigned parse_record(struct record *r)
{
    if (r->id == BAD_RECORD)
        corrupt_record(r);
    return checksum(r->data, r->len);
}

TRACED static unsigned process_item(const char *who, int id)
{
    unsigned char buf[RECORD_LEN];
    for (int i = 0; i < RECORD_LEN; i++)
        buf[i] = (unsigned char)(id * 7 + i + who[0]);
    struct record r = {.id = id, .len = RECORD_LEN, .data = buf};
    return parse_record(&r);
}

/* marks this thread ready and blocks forever (until the process dies) */
TRACED static void wait_for_more_work(void)
{
    pthread_mutex_lock(&lock);
    ready++;
    pthread_cond_broadcast(&changed);
    for (;;)
        pthread_cond_wait(&changed, &lock);
}

TRACED static unsigned long mix_round(unsigned long x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdUL;
    x ^= x >> 33;
    return x;
}

/* mixes for a while, marks this thread ready and keeps mixing forever */
TRACED static void hash_forever(void)
{
    unsigned long x = 1;
    for (int i = 0; i < 1000; i++)
        sink = x = mix_round(x);
    pthread_mutex_lock(&lock);
    ready++;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    for (;;)
        sink = x = mix_round(x);
}

TRACED static void wait_for_others(int n)
{
    pthread_mutex_lock(&lock);
    while (ready < n)
        pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
}

enum role { PARSER, HASHER, LOADER };
struct worker {
    const char *name;
    enum role role;
    int first_record; /* this worker's records are first_record, +1, ... */
    pthread_t thread;
};

TRACED static void *worker_main(void *arg)
{
    struct worker *w = arg;
    pthread_setname_np(pthread_self(), w->name);
    switch (w->role) {
    case PARSER:
        for (int id = w->first_record; id < w->first_record + 5; id++)
            sink += process_item(w->name, id);
        wait_for_more_work();
        break;
    case HASHER:
        for (int id = w->first_record; id < w->first_record + 2; id++)
            sink += process_item(w->name, id);
        hash_forever();
        break;
    case LOADER:
        for (int id = w->first_record; id < BAD_RECORD; id++)
            sink += process_item(w->name, id);
        wait_for_others(4); /* the three others and main */
        sink += process_item(w->name, BAD_RECORD); /* crashes */
        break;
    }
    return NULL;
}

static struct worker workers[] = {
    {"parser-1", PARSER, 100, 0},
    {"parser-2", PARSER, 200, 0},
    {"hasher", HASHER, 300, 0},
    {"loader", LOADER, 400, 0},
};
#define NWORKERS (int)(sizeof workers / sizeof workers[0])

TRACED static void start_workers(void)
{
    for (int i = 0; i < NWORKERS; i++) {
        int err = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
        if (err) {
            fprintf(stderr, "crash: pthread_create: %s\n", strerror(err));
            exit(1);
        }
    }
}

TRACED static void wait_for_workers(void)
{
    pthread_mutex_lock(&lock);
    ready++;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < NWORKERS; i++)
        pthread_join(workers[i].thread, NULL);
}

int main(void)
{
    printf("crash: pid %d: %d workers; \"loader\" will crash on record %d\n", (int)getpid(),
           NWORKERS, BAD_RECORD);
    fflush(stdout);
    start_workers();
    wait_for_workers(); /* never returns: the loader crashes first */
    return 0;
}
