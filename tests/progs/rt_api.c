/* rt_api: the snapshot API, disable/enable, ignore_this_thread */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include "rt_common.h"

volatile int sink;
NI void api_before(void) { sink++; }
NI void api_after(void) { sink++; }
NI void api_disabled(void) { sink++; }
NI void api_enabled(void) { sink++; }
NI void api_ignored(void) { sink++; }
static void *ignoring(void *a)
{
    (void)a;
    pthread_setname_np(pthread_self(), "ignored");
    funtrace_ignore_this_thread();
    api_ignored();
    return NULL;
}

int main(void)
{
    pthread_t t;
    struct funtrace_snapshot *s;
    uint64_t t0;
    api_before();
    s = funtrace_pause_and_get_snapshot();
    if (!s)
        return 1;
    funtrace_write_snapshot("full.raw", s);
    funtrace_free_snapshot(s);
    usleep(20000);
    t0 = funtrace_time();
    api_after();
    s = funtrace_pause_and_get_snapshot_starting_at_time(t0);
    funtrace_write_snapshot("recent.raw", s);
    funtrace_free_snapshot(s);
    /* the age is taken before the call reads the clock again: 5 ms more,
     * so the window surely holds api_after's call (api_before is 20 ms older) */
    s = funtrace_pause_and_get_snapshot_up_to_age(funtrace_time() - t0 + funtrace_ticks_per_second() / 200);
    funtrace_write_snapshot("age.raw", s);
    funtrace_free_snapshot(s);
    funtrace_disable_tracing();
    api_disabled();
    funtrace_enable_tracing();
    api_enabled();
    pthread_create(&t, NULL, ignoring, NULL);
    pthread_join(t, NULL);
    funtrace_pause_and_write_current_snapshot();
    printf("hz=%llu\n", (unsigned long long)funtrace_ticks_per_second());
    return 0;
}
