// exc_pthread_exit.cc -- a C++ program that uses nothing of its C++ runtime but
// the personality routine: a thread ("worker") leaves through pthread_exit
// from worker_leave, under worker_inner and worker_outer, each with a Guard
// whose destructor (run by the forced unwinding's landing pads) calls
// on_cleanup.  main joins it and writes a snapshot (funtrace.raw).
#include <pthread.h>
#include <funtrace.h>

#define NI __attribute__((noinline))
volatile int sink;

NI void on_cleanup(int v) { sink += v; }
struct Guard {
    int v;
    NI ~Guard() { on_cleanup(v); }
};
NI void worker_leave() { pthread_exit(nullptr); }
NI void worker_inner()
{
    Guard g{2};
    worker_leave();
    sink++;
}
NI void worker_outer()
{
    Guard g{1};
    worker_inner();
    sink++;
}
NI void *worker(void *)
{
    pthread_setname_np(pthread_self(), "worker");
    worker_outer();
    return nullptr;
}

int main()
{
    pthread_t t;
    if (pthread_create(&t, nullptr, worker, nullptr) || pthread_join(t, nullptr))
        return 1;
    funtrace_pause_and_write_current_snapshot();
    return 0;
}
