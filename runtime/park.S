/*
 * park.S -- ft_park_syscall(nr, a1..a6): the blocking syscall of a runtime
 * thread (the housekeeper's timed wait, the PSI thread's poll), after which
 * the thread parks while a fatal-signal episode is open (freeze.c), whether
 * tracing is frozen or not (FUNTRACE_CRASH_HANDLERS=trace).
 *
 * While blocked the thread does not count in ft_rt_awake (the episode's
 * start does not wait for it).  When the syscall returns it counts itself
 * awake again, then checks ft_hot.park (Dekker-style against the episode's
 * start, which sets it and then reads ft_rt_awake): if set it stops counting
 * and waits on ft_hot.freeze_seq (a futex in the read-only page) until the
 * episode ends -- using registers only, never its stack or any other
 * writable memory, which a program's crash handler may be rewriting
 * meanwhile.
 */
#include "ft_hook_offsets.h"

#define SYS_futex 202
#define FUTEX_WAIT_PRIVATE 128

    .text
    .globl ft_park_syscall
    .hidden ft_park_syscall
    .type ft_park_syscall, @function
    .p2align 4
ft_park_syscall:
    .cfi_startproc
    pushq %r12
    .cfi_adjust_cfa_offset 8
    .cfi_offset %r12, -16
    movq %rdi, %rax                 /* nr */
    movq %rsi, %rdi                 /* a1 */
    movq %rdx, %rsi                 /* a2 */
    movq %rcx, %rdx                 /* a3 */
    movq %r8, %r10                  /* a4 */
    movq %r9, %r8                   /* a5 */
    movq 16(%rsp), %r9              /* a6 (7th argument, on the stack) */
    lock decl ft_rt_awake(%rip)
    syscall
    movq %rax, %r12                 /* the result, kept across the park */
1:  lock incl ft_rt_awake(%rip)
    cmpl $0, ft_hot+FT_HOT_OFF_PARK(%rip)
    je 3f
    lock decl ft_rt_awake(%rip)
2:  movl ft_hot+FT_HOT_OFF_FREEZE_SEQ(%rip), %edx   /* val */
    cmpl $0, ft_hot+FT_HOT_OFF_PARK(%rip)
    je 1b
    leaq ft_hot+FT_HOT_OFF_FREEZE_SEQ(%rip), %rdi
    movl $FUTEX_WAIT_PRIVATE, %esi
    xorl %r10d, %r10d               /* no timeout */
    movl $SYS_futex, %eax
    syscall
    jmp 2b
3:  movq %r12, %rax
    popq %r12
    .cfi_adjust_cfa_offset -8
    .cfi_restore %r12
    ret
    .cfi_endproc
    .size ft_park_syscall, .-ft_park_syscall

    .section .note.GNU-stack,"",@progbits
