/* rt_garbage: the runtime state a hook reads is overwritten while traced
 * code runs -- as a memory test in a crash handler does (save a region,
 * fill it with patterns, restore it) -- and the process must not crash:
 *   1. the thread's record (its hot line among it) filled with patterns
 *      (0x00, 0xFF, 0xAA, 0x55, each byte = its own address's low byte),
 *   2. the thread's TLS record pointer (ft_self / ft_self_s) pointing at
 *      garbage: unmapped memory, the middle of a record, a pattern,
 * while traced functions (gb_during) are called; then both are restored,
 * gb_after is called and a snapshot written to ./funtrace.raw.
 * FORMAT.md 1.4 "Hot path": the validity check makes such a thread
 * untraced while its state is garbage, never a crash. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "rt_common.h"
#include "funtrace_abi.h"

extern struct ft_root funtrace_root;
extern __thread void *ft_self __attribute__((tls_model("initial-exec")));
extern __thread void *ft_self_s __attribute__((tls_model("initial-exec")));

volatile int sink;
NI void gb_during(int i) { sink += i; }
NI void gb_after(void) { sink++; }
NI void gb_before(void) { sink--; }

static struct ft_thread *my_record(void)
{
    struct ft_thread *th = (struct ft_thread *)(uintptr_t)funtrace_root.threads;
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    for (uint32_t i = 0; i < funtrace_root.threads_used; i++)
        if (th[i].tid == tid && th[i].state == FT_THR_ALIVE)
            return &th[i];
    return NULL;
}

int main(void)
{
    gb_before(); /* the record exists from here on */
    struct ft_thread *rec = my_record();
    if (!rec) {
        printf("no record\n");
        return 1;
    }
    static struct ft_thread saved;
    memcpy(&saved, rec, sizeof saved);
    static const int pats[] = {0x00, 0xFF, 0xAA, 0x55, -1};
    for (unsigned p = 0; p < sizeof pats / sizeof pats[0]; p++) {
        unsigned char *b = (unsigned char *)rec;
        for (size_t i = 0; i < sizeof *rec; i++)
            b[i] = pats[p] >= 0 ? (unsigned char)pats[p] : (unsigned char)(uintptr_t)(b + i);
        for (int i = 0; i < 100; i++)
            gb_during(i);
        memcpy(rec, &saved, sizeof saved);
    }
    void **selfp = funtrace_root.time_mode ? &ft_self_s : &ft_self;
    void *self = *selfp;
    void *bad[] = {(void *)(uintptr_t)0xdead0000ull, (void *)((char *)rec + 8), (void *)(uintptr_t)0xAAAAAAAAAAAAAAAAull,
                   (void *)((char *)(uintptr_t)funtrace_root.threads +
                            (uint64_t)funtrace_root.threads_cap * sizeof(struct ft_thread) - 8)};
    for (unsigned k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        *selfp = bad[k];
        for (int i = 0; i < 100; i++)
            gb_during(i);
        *selfp = self;
    }
    gb_after();
    funtrace_pause_and_write_current_snapshot();
    printf("survived\n");
    return 0;
}
