// exc_escape.cc -- exceptions thrown while another is in flight, for
// tests/test_exceptions.py:
//   rethrow  main -> outer -> relay: catch (...) { on_relay(); throw; } --
//            the rethrow finds no handler: std::terminate, whose handler
//            (libstdc++'s verbose one) rethrows it again to print what()
//            and catches it, then abort() (SIGABRT).  At the end relay's
//            __cxa_rethrow is still running; the handler's is not.
//   dtor     main -> catcher (catch int) -> guarded: a Guard whose untraced
//            destructor throws and catches an int of its own while
//            guarded's int unwinds it; then on_caught, after, and a snapshot
//            (funtrace.raw), exit 0.  Both throws end at their catches.
#include <funtrace.h>
#include <cstdio>
#include <cstring>

#define NI __attribute__((noinline))
volatile int sink;

NI void raise_int(int i) { sink++; if (i >= 0) throw i; sink++; }
NI void on_relay() { sink++; }
NI void relay(int i)
{
    try {
        raise_int(i);
    } catch (...) {
        on_relay();
        throw;
    }
    sink++;
}
NI void outer(int i) { relay(i); sink++; }

struct Guard {
    NI NOFUNTRACE ~Guard()
    {
        try {
            if (sink >= 0)
                throw 2;
        } catch (int) {
            sink++;
        }
    }
};
NI void guarded(int i)
{
    Guard g;
    raise_int(i);
    sink++;
}
NI void on_caught() { sink++; }
NI void catcher(int i)
{
    try {
        guarded(i);
    } catch (int) {
        on_caught();
    }
    sink++;
}
NI void after() { sink++; }

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    if (!strcmp(c, "rethrow")) {
        outer(1);
    } else if (!strcmp(c, "dtor")) {
        catcher(1);
        after();
        funtrace_pause_and_write_current_snapshot();
    } else {
        fprintf(stderr, "usage: exc_escape rethrow|dtor\n");
        return 2;
    }
    return 0;
}
