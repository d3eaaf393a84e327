/*
 * alt_pg.S -- bench-only PROTOTYPES of the runtime's __fentry__/__return__
 * (runtime/hooks_pg.S), linked instead of it with the rest of the runtime to
 * measure hot-path changes before they are proposed.  Never part of `make all`.
 *
 *   ALT_MIN=0   preserve every register and the flags, like the runtime
 *               (6 pushes, lahf/seto/sahf).
 *   ALT_MIN=1   preserve every general register but not the arithmetic flags:
 *               no ABI makes them live at function entry or before ret (the
 *               SysV ABI: not preserved across calls; even gcc's
 *               no_caller_saved_registers functions do not preserve EFLAGS).
 *               Saves rax rdx rcx r11 (exact) or rax rcx r11 (sampled; rdx
 *               only for a time word); r10 (static chain) is never touched.
 *   ALT_KEEP_R11=0  (with ALT_MIN=1) do not save r11 either: a scratch
 *               register at both points in the SysV ABI, but live in
 *               no_caller_saved_registers functions.
 *   ALT_DISPATCH=0  sampled mode reached through the exact path's cold branch
 *                   (the runtime's way);
 *   ALT_DISPATCH=1  the hook tests ft_sampled_mode first (one predicted branch
 *                   on a read-only byte in the exact path).
 *
 * Record layout (struct ft_thread): pos at 0, mask at 8, countdown at 16.
 */
#ifndef ALT_MIN
#define ALT_MIN 1
#endif
#ifndef ALT_DISPATCH
#define ALT_DISPATCH 1
#endif
#ifndef ALT_KEEP_R11
#define ALT_KEEP_R11 1
#endif
#define POS 0
#define MASK 8
#define COUNTDOWN 16

    .text

#if ALT_MIN
/* ---------------------------------------------------------------- minimal */
#if ALT_KEEP_R11
#define RA3 32 /* return address above the exact path's pushes */
#define RA2 24 /* ... and the sampled path's */
#else
#define RA3 24
#define RA2 16
#endif

.macro PUSH r
    pushq \r
    .cfi_adjust_cfa_offset 8
.endm
.macro POP r
    popq \r
    .cfi_adjust_cfa_offset -8
.endm
.macro PUSH11
#if ALT_KEEP_R11
    PUSH %r11
#endif
.endm
.macro POP11
#if ALT_KEEP_R11
    POP %r11
#endif
.endm

.macro FT_HOOK name, isret
    .globl \name
    .type \name, @function
    .p2align 5
\name:
    .cfi_startproc
#if ALT_DISPATCH
    cmpb $0, ft_sampled_mode(%rip)
    jne 3f
#endif
    PUSH11
    PUSH %rax
    PUSH %rdx
    PUSH %rcx
    .cfi_remember_state
    movq %fs:ft_self@tpoff, %rcx
    movq POS(%rcx), %r11
    andq MASK(%rcx), %r11
    jz 2f
    movq RA3(%rsp), %rax
  .if \isret
    btsq $63, %rax
  .endif
    movq %rax, (%r11)               /* 1: word */
    rdtsc
    shlq $32, %rdx
    orq %rdx, %rax
    movq %rax, 8(%r11)              /* 2: tsc */
    addq $16, %r11
    andq MASK(%rcx), %r11
    movq %r11, POS(%rcx)            /* 3: commit pos */
1:
    POP %rcx
    POP %rdx
    POP %rax
    POP11
    ret
    .cfi_restore_state
2:  /* exact cold: paused / ignored / exited, or no record yet */
#if !ALT_DISPATCH
    cmpb $0, ft_sampled_mode(%rip)
    jne 9f
#endif
    leaq ft_thread_dummy_init(%rip), %r11
    cmpq %r11, %rcx
    jne 1b
    movq RA3(%rsp), %rax
  .if \isret
    btsq $63, %rax
  .endif
    call alt_asm_slow
    jmp 1b
#if !ALT_DISPATCH
9:  POP %rcx                        /* keep the sampled path's frame shape */
    POP %rdx
    POP %rax
    POP11
#endif
3:  /* sampled mode: 8-byte words, a time word every ft_sample_k events */
    PUSH11
    PUSH %rax
    PUSH %rcx
    .cfi_remember_state
    movq %fs:ft_self_s@tpoff, %rcx
    movq POS(%rcx), %r11
    andq MASK(%rcx), %r11
    jz 7f
    decq COUNTDOWN(%rcx)
    jle 6f
5:
    movq RA2(%rsp), %rax
  .if \isret
    btsq $63, %rax
  .endif
    movq %rax, (%r11)               /* event word */
    addq $8, %r11
    andq MASK(%rcx), %r11
    movq %r11, POS(%rcx)
8:
    POP %rcx
    POP %rax
    POP11
    ret
    .cfi_restore_state
    .cfi_remember_state
6:  /* time word */
    PUSH %rdx
    rdtsc
    shlq $32, %rdx
    orq %rdx, %rax
    movabsq $0xE000000000000000, %rdx   /* FT_TIME_WORD_TAG */
    orq %rdx, %rax
    movq %rax, (%r11)
    addq $8, %r11
    andq MASK(%rcx), %r11
    movq ft_sample_k(%rip), %rax
    movq %rax, COUNTDOWN(%rcx)
    POP %rdx
    jmp 5b
    .cfi_restore_state
7:  /* sampled cold */
    leaq ft_thread_dummy_init(%rip), %r11
    cmpq %r11, %rcx
    jne 8b
    PUSH %rdx
    movq RA2+8(%rsp), %rax
  .if \isret
    btsq $63, %rax
  .endif
    call alt_asm_slow
    POP %rdx
    jmp 8b
    .cfi_endproc
    .size \name, .-\name
.endm

#else
/* --------------------------------------------- preserve-everything (runtime) */
#define RETADDR 48 /* 6 pushes */
.macro FT_HOOK name, isret
    .globl \name
    .type \name, @function
    .p2align 5
\name:
    .cfi_startproc
    pushq %rax
    .cfi_adjust_cfa_offset 8
    lahf
    seto %al
    pushq %rax
    .cfi_adjust_cfa_offset 8
    pushq %rdx
    .cfi_adjust_cfa_offset 8
    pushq %rcx
    .cfi_adjust_cfa_offset 8
    pushq %r11
    .cfi_adjust_cfa_offset 8
    pushq %r10
    .cfi_adjust_cfa_offset 8
    .cfi_remember_state
#if ALT_DISPATCH
    cmpb $0, ft_sampled_mode(%rip)
    jne 3f
#endif
    movq %fs:ft_self@tpoff, %rcx
    movq MASK(%rcx), %r10
    movq POS(%rcx), %r11
    andq %r10, %r11
    jz 2f
    movq RETADDR(%rsp), %rax
  .if \isret
    btsq $63, %rax
  .endif
    movq %rax, (%r11)
    rdtsc
    shlq $32, %rdx
    orq %rdx, %rax
    movq %rax, 8(%r11)
    addq $16, %r11
    andq %r10, %r11
    movq %r11, POS(%rcx)
1:
    popq %r10
    .cfi_adjust_cfa_offset -8
    popq %r11
    .cfi_adjust_cfa_offset -8
    popq %rcx
    .cfi_adjust_cfa_offset -8
    popq %rdx
    .cfi_adjust_cfa_offset -8
    popq %rax
    .cfi_adjust_cfa_offset -8
    addb $0x7f, %al
    sahf
    popq %rax
    .cfi_adjust_cfa_offset -8
    ret
    .cfi_restore_state
2:
#if !ALT_DISPATCH
    cmpb $0, ft_sampled_mode(%rip)
    jne 3f
#endif
4:
    leaq ft_thread_dummy_init(%rip), %r11
    cmpq %r11, %rcx
    jne 1b
    movq RETADDR(%rsp), %rax
  .if \isret
    btsq $63, %rax
  .endif
    call alt_asm_slow
    jmp 1b
3:
    movq %fs:ft_self_s@tpoff, %rcx
    movq MASK(%rcx), %r10
    movq POS(%rcx), %r11
    andq %r10, %r11
    jz 4b
    decq COUNTDOWN(%rcx)
    jg 5f
    rdtsc
    shlq $32, %rdx
    orq %rdx, %rax
    movabsq $0xE000000000000000, %rdx
    orq %rdx, %rax
    movq %rax, (%r11)
    addq $8, %r11
    andq %r10, %r11
    movq ft_sample_k(%rip), %rax
    movq %rax, COUNTDOWN(%rcx)
5:
    movq RETADDR(%rsp), %rax
  .if \isret
    btsq $63, %rax
  .endif
    movq %rax, (%r11)
    addq $8, %r11
    andq %r10, %r11
    movq %r11, POS(%rcx)
    jmp 1b
    .cfi_endproc
    .size \name, .-\name
.endm
#endif

FT_HOOK __fentry__, 0
FT_HOOK __return__, 1

/* alt_asm_slow: call ft_slow_event(word = %rax) preserving every register the
 * hooks did not save (rdi rsi r8 r9 r10 r11 rbx, vector/x87 state); the
 * runtime's ft_asm_slow plus r10/r11. */
    .type alt_asm_slow, @function
    .p2align 4
alt_asm_slow:
    .cfi_startproc
    pushq %rbp
    .cfi_adjust_cfa_offset 8
    .cfi_offset %rbp, -16
    movq %rsp, %rbp
    .cfi_def_cfa_register %rbp
    pushq %rdi
    pushq %rsi
    pushq %r8
    pushq %r9
    pushq %r10
    pushq %r11
    pushq %rbx
    pushq %rax
    movq %rax, %rdi
    movl ft_xsave_size(%rip), %eax
    testl %eax, %eax
    jnz 1f
    movl $1, %eax
    cpuid
    movl $1, %eax
    btl $27, %ecx
    jnc 2f
    movl $0xd, %eax
    xorl %ecx, %ecx
    cpuid
    movl %ebx, %eax
    cmpl $576, %eax
    jae 2f
    movl $1, %eax
2:
    movl %eax, ft_xsave_size(%rip)
1:
    cmpl $1, %eax
    je 3f
    subq %rax, %rsp
    andq $-64, %rsp
    xorl %eax, %eax
    movq %rax, 512(%rsp)
    movq %rax, 520(%rsp)
    movq %rax, 528(%rsp)
    movq %rax, 536(%rsp)
    movq %rax, 544(%rsp)
    movq %rax, 552(%rsp)
    movq %rax, 560(%rsp)
    movq %rax, 568(%rsp)
    movl $-1, %eax
    movl $-1, %edx
    xsave (%rsp)
    call ft_slow_event
    movl $-1, %eax
    movl $-1, %edx
    xrstor (%rsp)
    jmp 4f
3:
    subq $512, %rsp
    andq $-64, %rsp
    fxsave (%rsp)
    call ft_slow_event
    fxrstor (%rsp)
4:
    leaq -64(%rbp), %rsp
    popq %rax
    popq %rbx
    popq %r11
    popq %r10
    popq %r9
    popq %r8
    popq %rsi
    popq %rdi
    popq %rbp
    .cfi_def_cfa %rsp, 8
    ret
    .cfi_endproc
    .size alt_asm_slow, .-alt_asm_slow

    .section .note.GNU-stack,"",@progbits
