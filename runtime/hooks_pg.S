/*
 * hooks_pg.S -- __fentry__ and __return__ for gcc -pg -mfentry
 * -minstrument-return=call.
 *
 * They run at function entry (before the prologue) and right before the
 * return, where every argument register (rdi rsi rdx rcx r8 r9, al = number
 * of vector registers for variadic calls), the static chain (r10), r11, the
 * return value registers (rax rdx xmm0 xmm1 st0) and - in __return__ - a
 * tail-called function's arguments are live.  So they preserve EVERY
 * register they touch: rax rdx rcx r10 r11 are saved on the stack, and the
 * arithmetic flags (CF PF AF ZF SF via lahf/sahf, OF via seto and a
 * restoring add).  DF is never touched.  No vector register is touched on
 * the hot path; the cold path (ft_asm_slow, once per thread) saves the whole
 * extended state with xsave (fxsave without OSXSAVE) before calling C.
 *
 * Record layout (struct ft_thread): pos at 0, mask at 8, countdown at 16.
 */
#define POS 0
#define MASK 8
#define COUNTDOWN 16
#define RETADDR 48 /* 6 pushes */

    .text

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
    pushq %rax                      /* flags image: ah = SF ZF AF PF CF, al = OF */
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
    movq %fs:ft_self@tpoff, %rcx    /* the thread's record */
    movq MASK(%rcx), %r10
    movq POS(%rcx), %r11
    andq %r10, %r11                 /* slot; 0 => cold path */
    jz 2f
    movq RETADDR(%rsp), %rax        /* an address inside the traced function */
  .if \isret
    btsq $63, %rax                  /* FT_F_RET */
  .endif
    movq %rax, (%r11)               /* 1: word */
    rdtsc
    shlq $32, %rdx
    orq %rdx, %rax
    movq %rax, 8(%r11)              /* 2: tsc */
    addq $16, %r11
    andq %r10, %r11
    movq %r11, POS(%rcx)            /* 3: commit pos */
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
    addb $0x7f, %al                 /* OF = (al == 1) */
    sahf                            /* SF ZF AF PF CF */
    popq %rax
    .cfi_adjust_cfa_offset -8
    ret
    .cfi_restore_state
2:  /* cold: sampled mode, paused/ignored/exited thread, or no record yet */
    cmpb $0, ft_sampled_mode(%rip)
    jne 3f
4:
    leaq ft_thread_dummy_init(%rip), %r11
    cmpq %r11, %rcx
    jne 1b                          /* paused, disabled, ignored, exited */
    movq RETADDR(%rsp), %rax
  .if \isret
    btsq $63, %rax
  .endif
    call ft_asm_slow                /* create the record, write the event */
    jmp 1b
3:  /* sampled mode: 8-byte words, a time word every ft_sample_k events */
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
    movabsq $0xE000000000000000, %rdx   /* FT_TIME_WORD_TAG */
    orq %rdx, %rax
    movq %rax, (%r11)               /* time word */
    addq $8, %r11
    andq %r10, %r11
    movq ft_sample_k(%rip), %rax
    movq %rax, COUNTDOWN(%rcx)
5:
    movq RETADDR(%rsp), %rax
  .if \isret
    btsq $63, %rax
  .endif
    movq %rax, (%r11)               /* event word */
    addq $8, %r11
    andq %r10, %r11
    movq %r11, POS(%rcx)
    jmp 1b
    .cfi_endproc
    .size \name, .-\name
.endm

FT_HOOK __fentry__, 0
FT_HOOK __return__, 1

/* ft_asm_slow: call ft_slow_event(word = %rax) preserving every register
 * the hooks did not already save (rdi rsi r8 r9 rbx, vector/x87 state).
 * ft_xsave_size: 0 = not yet known (computed here with cpuid, because this
 * may run before the runtime's constructor), 1 = fxsave, else xsave size. */
    .type ft_asm_slow, @function
    .p2align 4
ft_asm_slow:
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
    pushq %rbx
    pushq %rax                      /* keeps 16-byte alignment bookkeeping simple */
    movq %rax, %rdi                 /* the event word */
    movl ft_xsave_size(%rip), %eax
    testl %eax, %eax
    jnz 1f
    /* first use: CPUID.1:ECX.OSXSAVE[27] ? CPUID.(0xD,0):EBX : fxsave */
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
    movq %rax, 512(%rsp)            /* xsave header must be clean for xrstor */
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
    leaq -48(%rbp), %rsp
    popq %rax
    popq %rbx
    popq %r9
    popq %r8
    popq %rsi
    popq %rdi
    popq %rbp
    .cfi_def_cfa %rsp, 8
    ret
    .cfi_endproc
    .size ft_asm_slow, .-ft_asm_slow

    .section .note.GNU-stack,"",@progbits
