/*
 * api_busy -- makes 4000 traced calls (64000 bytes of exact-mode ring: 16
 * pages), prints "ready" and parks in pause() forever, so that a test can read
 * a ring that spans many pages from outside (tests/test_reader_api.py).
 */
#include <stdio.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void api_step(int i) { sink += (unsigned long)i; }

int main(void)
{
    for (int i = 0; i < 4000; i++)
        api_step(i);
    printf("ready\n");
    fflush(stdout);
    for (;;)
        pause();
}
