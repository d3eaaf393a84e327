/* dec_sjlj_coro.c -- coroutines switched by sigsetjmp/siglongjmp, as QEMU's
 * (util/coroutine-ucontext.c): a coroutine's stack is entered once with
 * swapcontext, whose trampoline saves its place with sigsetjmp and jumps
 * back; from then on every switch is co_switch's sigsetjmp of the running
 * coroutine and siglongjmp to the other's.  A scheduler in main runs NFIB
 * coroutines round-robin; each step yields in its middle.  With
 * "sigaltstack" a coroutine's stack is entered as QEMU's
 * util/coroutine-sigaltstack.c (and GNU Pth's sjlj mode) do instead: a
 * signal handler run on that stack (sigaltstack) saves its place with
 * sigsetjmp and returns; co_new then siglongjmps there, into the frame
 * that returned, and that code goes on as the coroutine (bootstrap).
 *   dec_sjlj_coro [ROUNDS [fiber|main [sigaltstack]]]   ROUNDS steps per
 *   coroutine (default 3); then crash in main, or with "fiber" in coroutine
 *   1's last step */
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#define NFIB 3
#define STACK (64 * 1024)

struct co {
    sigjmp_buf env;
    ucontext_t uc;
};

static struct co sched_co, fibs[NFIB];
static sigjmp_buf *entry_env;
static char stacks[NFIB][STACK];
static int rounds, crash_in_fiber, done[NFIB];
volatile int sink;
int *volatile nullp;

__attribute__((noinline)) void leaf(int x) { sink += x; }
__attribute__((noinline)) void crash_here(void) { *nullp = 1; }

/* qemu_coroutine_switch */
__attribute__((noinline)) void co_switch(struct co *from, struct co *to)
{
    if (!sigsetjmp(from->env, 0))
        siglongjmp(to->env, 1);
}

__attribute__((noinline)) void yield(int f) { co_switch(&fibs[f], &sched_co); }

__attribute__((noinline)) void step(int f, int i)
{
    leaf(i);
    yield(f);
    leaf(i);
    if (crash_in_fiber && f == 1 && i == rounds - 1)
        crash_here();
}

__attribute__((noinline)) void fiber(int f)
{
    for (int i = 0; i < rounds; i++)
        step(f, i);
}

/* the coroutine: saves its place, jumps back to its creator (co_new,
 * co_new_sas); a finished coroutine switches away for good */
__attribute__((noinline)) void bootstrap(int f)
{
    if (!sigsetjmp(fibs[f].env, 0))
        siglongjmp(*entry_env, 1);
    fiber(f);
    done[f] = 1;
    co_switch(&fibs[f], &sched_co);
    abort();
}

/* the first frame of a stack makecontext made */
__attribute__((noinline)) void trampoline(int f) { bootstrap(f); }

__attribute__((noinline)) void co_new(int f)
{
    sigjmp_buf old_env;
    ucontext_t old_uc;
    getcontext(&fibs[f].uc);
    fibs[f].uc.uc_stack.ss_sp = stacks[f];
    fibs[f].uc.uc_stack.ss_size = STACK;
    fibs[f].uc.uc_link = NULL;
    makecontext(&fibs[f].uc, (void (*)(void))trampoline, 1, f);
    entry_env = &old_env;
    if (!sigsetjmp(old_env, 0))
        swapcontext(&old_uc, &fibs[f].uc); /* swapcontext in, siglongjmp back out */
}

static sigjmp_buf tr_reenter;
static volatile sig_atomic_t tr_called;
static int tr_f;

/* the sigaltstack way: the signal handler, on the coroutine's stack, saves
 * its place and returns; jumped back into later, it runs the coroutine
 * (bootstrap: the stack's first frame then) */
__attribute__((noinline)) void trampoline_sig(int sig)
{
    (void)sig;
    tr_called = 1;
    if (!sigsetjmp(tr_reenter, 0))
        return;
    bootstrap(tr_f);
}

__attribute__((noinline)) void co_new_sas(int f)
{
    sigjmp_buf old_env;
    stack_t ss = {.ss_sp = stacks[f], .ss_size = STACK}, off = {.ss_flags = SS_DISABLE};
    struct sigaction sa = {.sa_handler = trampoline_sig, .sa_flags = SA_ONSTACK}, osa;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, &osa);
    sigaltstack(&ss, NULL);
    tr_called = 0;
    tr_f = f;
    raise(SIGUSR2);
    while (!tr_called)
        ;
    sigaltstack(&off, NULL);
    sigaction(SIGUSR2, &osa, NULL);
    entry_env = &old_env;
    if (!sigsetjmp(old_env, 0))
        siglongjmp(tr_reenter, 1);
}

__attribute__((noinline)) void resume(int f) { co_switch(&sched_co, &fibs[f]); }

__attribute__((noinline)) void schedule(void)
{
    int live;
    do {
        live = 0;
        for (int f = 0; f < NFIB; f++)
            if (!done[f]) {
                resume(f);
                live = 1;
            }
    } while (live);
}

int main(int argc, char **argv)
{
    rounds = argc > 1 ? atoi(argv[1]) : 3;
    crash_in_fiber = argc > 2 && !strcmp(argv[2], "fiber");
    int sas = argc > 3 && !strcmp(argv[3], "sigaltstack");
    for (int f = 0; f < NFIB; f++)
        if (sas)
            co_new_sas(f);
        else
            co_new(f);
    schedule();
    crash_here();
    return 0;
}
