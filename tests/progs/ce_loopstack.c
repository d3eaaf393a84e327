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
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
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

int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, looper, NULL) != 0) {
        fprintf(stderr, "ce_loopstack: pthread_create failed\n");
        return 1;
    }
    pthread_setname_np(t, "looper");
    while (!entered) usleep(1000);
    usleep(50000); /* let it reach the syscall */
    ce_fault(NULL);
    return 0;
}
