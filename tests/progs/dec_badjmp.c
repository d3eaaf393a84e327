/* dec_badjmp.c -- a longjmp into a frame that returned, the crash: deep()
 * (5 calls down from main) sigsetjmps and returns; then main -> jumper ->
 * siglongjmp to it.  Built with _FORTIFY_SOURCE, the jump is glibc's
 * __longjmp_chk, which finds the target below the stack in use and aborts
 * ("longjmp causes uninitialized stack frame") before jumping. */
#include <setjmp.h>

#define NI __attribute__((noinline))
static sigjmp_buf jb;
volatile int sink;

NI void deep(void)
{
    volatile char pad[4096]; /* (deep's frame well below jumper's) */
    pad[sink & 4095] = (char)sink;
    if (sigsetjmp(jb, 0))
        sink++;
    sink += pad[0];
}
NI void d3(void) { deep(); sink++; }
NI void d2(void) { d3(); sink++; }
NI void d1(void) { d2(); sink++; }
NI void jumper(void) { siglongjmp(jb, 1); }

int main(void)
{
    d1();
    jumper();
    return 0;
}
