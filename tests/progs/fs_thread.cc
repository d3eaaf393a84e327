// fs_thread: a std::thread whose function loops over a traced call forever
// (its ring wraps: the thread's own start is long overwritten); the main
// thread faults.  The thread's enclosing frames come from its final stack:
// start_thread, libstdc++'s execute_native_thread_routine, _M_run and the
// functions inlined into it, child, child_inf -- in that order.
#include <thread>
#include <unistd.h>

volatile int sink;
__attribute__((noinline)) void leaf() { sink++; }
void child_inf() { for (;;) leaf(); }
void child() { child_inf(); }

int main()
{
    std::thread t(child);
    usleep(200000);
    *(volatile int *)(long)(sink - sink) = 1;
    t.join();
}
