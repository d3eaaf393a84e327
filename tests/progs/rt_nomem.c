/* rt_nomem: snapshots taken when no memory can be mapped any more.
 * After a known call, the program grows its stack, then lowers RLIMIT_AS to
 * the address space it already uses, so every mmap (and malloc) fails; it
 * checks that, then raises SIGTRAP (the FUNTRACE_SIGNAL snapshot, appended to
 * ./funtrace.raw) and finally writes through a bad pointer (SIGSEGV: the
 * FUNTRACE_ON_CRASH snapshot).  Prints "limited" before the signal. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#include "rt_common.h"

volatile int sink;

NI void nm_before(void) { sink++; }
NI void nm_after(void) { sink++; }
NI void nm_crash(void) { *(volatile int *)16 = 1; }

/* grow the stack's mapping by 512 KiB now, while it still can grow */
NI void grow_stack(void)
{
    volatile char big[512 * 1024];
    for (size_t i = 0; i < sizeof big; i += 4096)
        big[i] = 1;
    sink += big[4096];
}

static unsigned long vm_size_bytes(void)
{
    static char buf[8192];
    int fd = open("/proc/self/status", O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    char *p = strstr(buf, "VmSize:");
    return p ? strtoul(p + 7, NULL, 10) * 1024 : 0;
}

int main(void)
{
    nm_before();
    grow_stack();
    printf("start\n");
    fflush(stdout);
    struct rlimit rl;
    getrlimit(RLIMIT_AS, &rl);
    rl.rlim_cur = vm_size_bytes();
    if (!rl.rlim_cur || setrlimit(RLIMIT_AS, &rl) != 0)
        return 3;
    if (mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED)
        return 4; /* the limit does not bite: the test would prove nothing */
    static const char msg[] = "limited\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        return 5;
    nm_after();
    raise(SIGTRAP);
    nm_crash();
    return 0;
}
