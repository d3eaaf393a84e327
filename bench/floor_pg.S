/*
 * floor_pg.S -- the bench-local floor hook for gcc -pg -mfentry
 * -minstrument-return=call: the minimal ring store and nothing else:
 *     slot = pos & mask; store address; store rdtsc; pos = slot + 16
 * (the next slot = pos & mask wraps at the end of the ring)
 * preserving only what must be preserved at these two points: rax and rdx
 * (argument / return value registers that rdtsc clobbers) and rcx (argument
 * register).  r11 is a scratch register at function entry and before ret in
 * the SysV ABI, and the arithmetic flags are not live at either point.
 * With -DBENCH_COUNTER the TSC is replaced by a per-thread counter (shows what
 * rdtsc itself costs).
 */
#define POS 0
#define MASK 8

    .text
.macro FLOOR name, isret
    .globl \name
    .type \name, @function
    .p2align 5
\name:
    .cfi_startproc
    pushq %rax
    .cfi_adjust_cfa_offset 8
    pushq %rdx
    .cfi_adjust_cfa_offset 8
    pushq %rcx
    .cfi_adjust_cfa_offset 8
    movq %fs:bench_self@tpoff, %rcx
    movq POS(%rcx), %r11
    andq MASK(%rcx), %r11
    movq 24(%rsp), %rax
  .if \isret
    btsq $63, %rax
  .endif
    movq %rax, (%r11)
#ifdef BENCH_COUNTER
    movq POS(%rcx), %rax
#else
    rdtsc
    shlq $32, %rdx
    orq %rdx, %rax
#endif
    movq %rax, 8(%r11)
    addq $16, %r11
    movq %r11, POS(%rcx)
    popq %rcx
    .cfi_adjust_cfa_offset -8
    popq %rdx
    .cfi_adjust_cfa_offset -8
    popq %rax
    .cfi_adjust_cfa_offset -8
    ret
    .cfi_endproc
    .size \name, .-\name
.endm

FLOOR __fentry__, 0
FLOOR __return__, 1

    .section .note.GNU-stack,"",@progbits
