// dec_catch.cc -- a caught exception for the --no-symbols decoder tests:
//   main -> catcher -> l1 -> l2 -> l3 -> thrower (throws), caught in catcher,
//        -> catcher -> after;  then main -> crash_here (SIGSEGV)
#define NI __attribute__((noinline))
volatile int sink;

NI void thrower(int i) { if (i >= 0) throw i; sink++; }
NI void l3(int i) { thrower(i); sink++; }
NI void l2(int i) { l3(i); sink++; }
NI void l1(int i) { l2(i); sink++; }
NI void after() { sink++; }
NI void catcher(int i)
{
    try {
        l1(i);
    } catch (int) {
        sink++;
    }
    after();
}
NI void crash_here() { *(volatile int *)(long)(sink - sink) = 1; }

int main()
{
    catcher(1);
    crash_here();
    return 0;
}
