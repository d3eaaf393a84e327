/*
 * gdb_torn -- crash with the slot at the write position half-written (argv[1]
 * = "torn": word set, tsc 0) or written but not committed ("uncommitted":
 * word and a newer tsc, pos not advanced), as if the thread had died inside
 * the hot path.  Exact-mode (-pg) rings only (FT_FMT_EXACT8: "torn" is an
 * uncommitted escape, as no entry can tear).  Used by tests/test_gdb.py.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "funtrace_abi.h"
#include "funtrace.h"

#define TRACED __attribute__((noinline))

extern struct ft_root funtrace_root;
static volatile unsigned long sink;

TRACED void torn_step(int i) { sink += (unsigned long)i; }
TRACED void torn_last_committed(void) { sink++; }
TRACED void torn_victim(void) { sink--; }

NOFUNTRACE static uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* not instrumented: nothing is recorded between the damage and the crash */
NOFUNTRACE static void damage_and_crash(int uncommitted)
{
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    struct ft_thread *threads = (struct ft_thread *)(uintptr_t)funtrace_root.threads;
    for (uint32_t i = 0; i < funtrace_root.threads_used; i++) {
        struct ft_thread *t = &threads[i];
        if (t->tid != tid || t->state != FT_THR_ALIVE || !t->mask)
            continue;
        if (t->fmt == FT_FMT_EXACT8) {
            /* one 8-byte store per item: nothing tears; "torn" is an escape
             * written but not committed (the thread died inside the escape
             * path): not emitted, counted as dropped */
            uint64_t *slot = (uint64_t *)(uintptr_t)(t->pos & t->mask);
            uint64_t a = (uint64_t)(uintptr_t)&torn_victim + 3; /* rounded up: inside it (FORMAT.md 1.4) */
            *slot = uncommitted ? (rdtsc() << 32) | (a & FT_E8_ADDR_LO_MASK) | FT_E8_CALL
                                : FT_E8_ESCAPE(FT_E8_TSC_HI, rdtsc() >> 32);
            continue;
        }
        struct ft_entry *slot = (struct ft_entry *)(uintptr_t)(t->pos & t->mask);
        slot->word = (uint64_t)(uintptr_t)&torn_victim;
        slot->tsc = uncommitted ? rdtsc() : 0;
    }
    *(volatile int *)(uintptr_t)sink = 1; /* sink is small: SIGSEGV */
}

int main(int argc, char **argv)
{
    for (int i = 0; i < 10; i++)
        torn_step(i);
    torn_last_committed();
    sink = 0;
    damage_and_crash(argc > 1 && strcmp(argv[1], "uncommitted") == 0);
    return 0;
}
