/*
 * api_stubs.c -- funtrace.h's API in the call-counting runtime: programs that
 * call it link and run unchanged; no trace is kept, so the snapshot calls
 * return NULL / -2 ("runtime not initialized") and write nothing.
 */
#include <stdint.h>
#include <time.h>

#include "funtrace.h"

#define FC_API __attribute__((visibility("default")))

FC_API void funtrace_pause_and_write_current_snapshot(void) {}
FC_API struct funtrace_snapshot *funtrace_pause_and_get_snapshot(void) { return 0; }
FC_API struct funtrace_snapshot *funtrace_pause_and_get_snapshot_starting_at_time(uint64_t t)
{
    (void)t;
    return 0;
}
FC_API struct funtrace_snapshot *funtrace_pause_and_get_snapshot_up_to_age(uint64_t age)
{
    (void)age;
    return 0;
}
FC_API void funtrace_write_snapshot(const char *f, struct funtrace_snapshot *s)
{
    (void)f;
    (void)s;
}
FC_API void funtrace_free_snapshot(struct funtrace_snapshot *s) { (void)s; }
FC_API int funtrace_write_snapshot_fd(int fd)
{
    (void)fd;
    return -2;
}
FC_API uint64_t funtrace_time(void)
{
    unsigned lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}
FC_API uint64_t funtrace_ticks_per_second(void) { return 0; }
FC_API void funtrace_ignore_this_thread(void) {}
FC_API void funtrace_set_thread_log_buf_size(int l) { (void)l; }
FC_API void funtrace_disable_tracing(void) {}
FC_API void funtrace_enable_tracing(void) {}
