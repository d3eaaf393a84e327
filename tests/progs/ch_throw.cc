// ch_throw: a SIGSEGV handler that throws a C++ exception, caught in main
// outside the handler (the episode ends: tracing resumes); then abort().
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

volatile int sink;
__attribute__((noinline)) void w_probe(volatile int *p) { *p = 1; }
__attribute__((noinline)) void after_recovery() { sink++; }

static void thrower(int, siginfo_t *, void *)
{
    throw std::runtime_error("bad address");
}

int main()
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = thrower;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, nullptr);
    try {
        w_probe((volatile int *)0x30);
    } catch (const std::exception &e) {
        after_recovery();
        printf("caught %s\n", e.what());
        fflush(stdout);
    }
    abort();
}
