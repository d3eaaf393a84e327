// exc_cases.cc -- C++ exceptions for tests/test_exceptions.py: each case is a
// function of main's, run 3 times, then a snapshot (funtrace.raw); with a
// second argument "crash", a SIGSEGV instead (a core).
//   caught     case_caught -> handler (traced catcher) -> setup, pass_outer
//              -> pass_mid -> pass_inner -> raise_int (throws int);
//              handler catches it and calls on_caught
//   untraced   the same with an untraced catcher (handler_untraced: NOFUNTRACE)
//   nested     nested_outer's try (catch int) around nested_inner's try (catch
//              const char *): an int passes the inner try; a const char *
//              thrown later is caught by the inner one
//   rethrow    rethrow_outer (catch int) -> relay (catch int: on_relay, throw;)
//              -> raise_int
//   self       self_catch throws and catches in the same function
//   cleanups   cleanups (catch int) -> guard_outer -> guard_inner -> pass_inner
//              -> raise_int; each guard_* has a Guard whose destructor (run
//              by its landing pad while the int unwinds it) calls on_cleanup
// Every traced function does work after its calls: no tail calls.
#include <funtrace.h>
#include <cstring>

#define NI __attribute__((noinline))
volatile int sink;

NI void raise_int(int i) { sink++; if (i >= 0) throw i; sink++; }
NI void raise_str(int i) { sink++; if (i >= 0) throw "str"; sink++; }
NI void pass_inner(int i) { raise_int(i); sink++; }
NI void pass_mid(int i) { pass_inner(i); sink++; }
NI void pass_outer(int i) { pass_mid(i); sink++; }
NI void setup() { sink++; }
NI void on_caught() { sink++; }

NI void handler(int i)
{
    setup();
    try {
        pass_outer(i);
    } catch (int) {
        on_caught();
    }
    sink++;
}
NI NOFUNTRACE void handler_untraced(int i)
{
    setup();
    try {
        pass_outer(i);
    } catch (int) {
        on_caught();
    }
    sink++;
}
NI void case_caught(int i) { handler(i); sink++; }
NI void case_untraced(int i) { handler_untraced(i); sink++; }

NI void nested_inner(int i, int str)
{
    try {
        if (str)
            raise_str(i);
        else
            pass_mid(i);
    } catch (const char *) {
        on_caught();
    }
    sink++;
}
NI void nested_outer(int i)
{
    try {
        nested_inner(i, 0);
    } catch (int) {
        on_caught();
    }
    nested_inner(i, 1);
    sink++;
}

NI void on_relay() { sink++; }
NI void relay(int i)
{
    try {
        raise_int(i);
    } catch (int) {
        on_relay();
        throw;
    }
    sink++;
}
NI void rethrow_outer(int i)
{
    try {
        relay(i);
    } catch (int) {
        on_caught();
    }
    sink++;
}

NI void after_self() { sink++; }
NI void self_catch(int i)
{
    try {
        if (i >= 0)
            throw i;
        sink++;
    } catch (int) {
        sink++;
    }
    after_self();
}

NI void on_cleanup(int v) { sink += v; }
struct Guard {
    int v;
    NI ~Guard() { on_cleanup(v); }
};
NI void guard_inner(int i)
{
    Guard g{2};
    pass_inner(i);
    sink++;
}
NI void guard_outer(int i)
{
    Guard g{1};
    guard_inner(i);
    sink++;
}
NI void cleanups(int i)
{
    try {
        guard_outer(i);
    } catch (int) {
        on_caught();
    }
    sink++;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "caught";
    for (int i = 0; i < 3; i++) {
        if (!strcmp(c, "caught"))
            case_caught(i);
        else if (!strcmp(c, "untraced"))
            case_untraced(i);
        else if (!strcmp(c, "nested"))
            nested_outer(i);
        else if (!strcmp(c, "rethrow"))
            rethrow_outer(i);
        else if (!strcmp(c, "self"))
            self_catch(i);
        else if (!strcmp(c, "cleanups"))
            cleanups(i);
        else
            return 2;
    }
    if (argc > 2 && !strcmp(argv[2], "crash"))
        *(volatile int *)0 = 0; /* a core instead of the snapshot */
    funtrace_pause_and_write_current_snapshot();
    return 0;
}
