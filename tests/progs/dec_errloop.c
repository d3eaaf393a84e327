/* dec_errloop.c -- errors as siglongjmps to a main loop's sigsetjmp that
 * never returns (PostgreSQL's PostgresMain and ereport(ERROR)):
 *   main -> serve: sigsetjmp(top, 1); then requests 0..5: handle -> check,
 *   and for the odd ones check -> fail --siglongjmp--> serve -> recover;
 *   then serve -> crash_here (SIGSEGV) */
#include <setjmp.h>

#define NI __attribute__((noinline))
#define NREQ 6
volatile int sink;
int *volatile nullp;
static sigjmp_buf top;

NI void fail(int i) { siglongjmp(top, i + 1); }
NI void check(int i)
{
    if (i % 2)
        fail(i);
    sink++;
}
NI void leaf(void) { sink++; }
NI void handle(int i)
{
    check(i);
    leaf();
}
NI void recover(void) { sink++; }
NI void crash_here(void) { *nullp = 1; }

NI void serve(void)
{
    static volatile int next;
    if (sigsetjmp(top, 1))
        recover();
    while (next < NREQ)
        handle(next++);
    crash_here();
}

int main(void)
{
    serve();
    return 0;
}
