/*
 * ce_loopstack.c -- a thread whose stack unwinds into itself, then a crash.
 *
 * The thread "looper" runs ce_loop_frame, hand-written assembly whose CFI
 * says CFA = rsp (no frame at all) and return address at CFA-8, where it
 * stored the address of its own loop: every unwind step out of it lands on
 * the same function at the same stack pointer, forever.  It waits in pause()
 * inside that loop.  Once it is there, main calls ce_fault (SIGSEGV) -> a
 * core.  An unwinder must stop after the first frame (gdb: "previous frame
 * identical to this frame") instead of repeating a pc.
 *
 * The thread "sigalt" runs on a stack in .bss (low addresses) and sits in a
 * SIGUSR1 handler running on an mmapped alternate signal stack (high
 * addresses): unwinding out of its signal frame moves the stack pointer DOWN,
 * legitimately -- an unwinder must follow it to the interrupted frames.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

void ce_loop_frame(volatile int *entered);
__asm__(".text\n"
        ".globl ce_loop_frame\n"
        ".type ce_loop_frame,@function\n"
        "ce_loop_frame:\n"
        ".cfi_startproc\n"
        ".cfi_def_cfa_offset 0\n"   /* CFA = rsp */
        ".cfi_offset 16, -8\n"      /* return address at [rsp - 8] */
        "    lea 1f(%rip), %rax\n"
        "    mov %rax, -8(%rsp)\n"  /* red zone: untouched by syscalls */
        "    movl $1, (%rdi)\n"     /* *entered = 1 */
        "    nop\n"
        "1:  mov $34, %eax\n"       /* SYS_pause */
        "    syscall\n"
        "    jmp 1b\n"
        ".cfi_endproc\n"
        ".size ce_loop_frame, .-ce_loop_frame\n");

static volatile int entered;
volatile int ce_sink;

NOINLINE void ce_fault(int *p) { *p = ce_sink; } /* p == NULL */

static void *looper(void *arg)
{
    (void)arg;
    ce_loop_frame(&entered);
    return NULL;
}

static volatile int in_handler;
static char sigalt_stack[256 << 10] __attribute__((aligned(4096)));

NOINLINE void ce_in_handler(void)
{
    in_handler = 1;
    for (;;) pause();
}

static void on_usr1(int sig)
{
    (void)sig;
    ce_in_handler();
}

NOINLINE void ce_raise_usr1(void)
{
    pthread_kill(pthread_self(), SIGUSR1);
}

static void *sigalt(void *arg)
{
    (void)arg;
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_size = 64 << 10;
    ss.ss_sp = mmap(NULL, ss.ss_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ss.ss_sp == MAP_FAILED || sigaltstack(&ss, NULL) != 0) {
        perror("ce_loopstack: sigaltstack");
        _exit(1);
    }
    ce_raise_usr1();
    return NULL;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t, u;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, sigalt_stack, sizeof sigalt_stack);
    if (pthread_create(&t, NULL, looper, NULL) != 0 || pthread_create(&u, &attr, sigalt, NULL) != 0) {
        fprintf(stderr, "ce_loopstack: pthread_create failed\n");
        return 1;
    }
    pthread_setname_np(t, "looper");
    pthread_setname_np(u, "sigalt");
    while (!entered || !in_handler) usleep(1000);
    usleep(50000); /* let it reach the syscall */
    ce_fault(NULL);
    return 0;
}
