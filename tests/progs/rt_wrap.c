/* rt_wrap: overflow a small ring (FUNTRACE_BUF=4096): 1000 calls of
 * wrap_early, then 40 of wrap_late; a second thread resizes its own ring after a
 * first traced call. */
#include <pthread.h>
#include "rt_common.h"

volatile int sink;
NI void wrap_early(void) { sink++; }
NI void wrap_late(void) { sink++; }
NI void wrap_thread_fn(void) { sink++; }
static void *thread_main(void *a)
{
    (void)a;
    wrap_thread_fn(); /* in the FUNTRACE_BUF ring */
    funtrace_set_thread_log_buf_size(13);
    wrap_thread_fn(); /* in the new 8 KiB ring */
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, NULL);
    for (int i = 0; i < 1000; i++)
        wrap_early();
    for (int i = 0; i < 40; i++)
        wrap_late();
    funtrace_pause_and_write_current_snapshot();
    return 0;
}
