/*
 * hooks_pg.S -- __fentry__ and __return__ for gcc -pg -mfentry
 * -minstrument-return=call.
 *
 * They are called as the first instruction of a function (before the
 * prologue) and right before its `ret`, where every argument register (rdi
 * rsi rdx rcx r8 r9, al = number of vector registers of a variadic call),
 * the static chain (r10), r11 (live in no_caller_saved_registers functions),
 * the return value registers (rax rdx xmm0 xmm1 st0) and - in __return__ -
 * a tail-called function's arguments may be live.  So:
 *
 *  - every general register they touch is saved and restored: rax rdx rcx
 *    r11 (exact mode), rax rcx r11 and rdx only around the rdtsc of a time
 *    word (sampled mode).  Exact mode writes ONE 8-byte entry per event
 *    (FT_FMT_EXACT8: address bits 31..2 | tag, TSC bits 31..0 above), with
 *    an escape entry before it when the address's or the TSC's high half
 *    differs from the thread's (addr_hi / tsc_hi in its record).  r10 and every other register are never touched.
 *  - the arithmetic flags (CF PF AF ZF SF OF) are NOT preserved: the SysV
 *    ABI makes them call-clobbered, and no caller can have them live at the
 *    two points where these hooks are called (a function's entry, and
 *    between its epilogue and `ret`); gcc's no_caller_saved_registers
 *    functions do not preserve them either.  Saving them (lahf/seto/sahf,
 *    with r10) cost ~1.1 ns per call+return in sampled mode (measured when
 *    these hooks were chosen; BENCHMARKS.md as of commit 551de6c).
 *  - DF, the only flag the ABI requires to be in a given state (clear) at a
 *    call, is never touched: no string instruction, no cld/std, no popf.
 *  - no vector or x87 register is touched on the hot path.  The cold path
 *    is only a compare for a paused/disabled/exited thread; on a thread's
 *    first event it calls ft_asm_slow, which saves every remaining general
 *    register and the whole extended state (xsave; fxsave without OSXSAVE)
 *    before calling C.
 *
 * The mode test comes first (a predicted branch on a byte written once, in a
 * cache line of its own), so sampled mode never goes through a failed exact
 * attempt.  It is a single compare against the sampled mode (1): below it is
 * the exact mode (0), dispatched out of line (label 40: one taken branch,
 * which costs nothing measurable next to exact mode's rdtsc), equal is
 * sampled, falling through (no taken branch: ~0.3 ns per call+return of
 * sampled mode's ~3, paired runs when this layout was chosen), above is
 * FT_MODE_OFF set (tracing frozen process-wide, runtime/freeze.c: 0x80 /
 * 0x81), which returns at once without touching TLS, the record or the
 * stack beyond the return address.  With FT_BENCH_NOMODE defined (the
 * bench's control, bench/build.mk) the hooks are the exact path alone.
 *
 * The mask (pause control) is read ONCE per event, to test pos & mask: 0 is
 * paused, else the slot is pos itself (mask = ring | (ring_size - 1) while
 * recording and pos lies in the ring, so pos & mask == pos: testing instead
 * of masking keeps the mask off the chain of pos from one event's store to
 * the next event's load, ~0.1 ns per call+return in sampled mode).  The new
 * pos is wrapped with the record's `wrap` (ring | (ring_size - 1), set when
 * the record is created and never changed while it is in use), not with a
 * second read of mask: a pauser may store mask = 0 at any moment, and
 * (slot + size) & 0 would commit pos = 0 (outside the ring: the thread would
 * never record again).
 *
 * Record layout (struct ft_thread): pos, mask, countdown, wrap at the offsets
 * in ft_hook_offsets.h, which hooks_cyg.c static_asserts against offsetof().
 */
#include "ft_hook_offsets.h"
#define POS FT_THR_OFF_POS
#define MASK FT_THR_OFF_MASK
#define COUNTDOWN FT_THR_OFF_COUNTDOWN
#define WRAP FT_THR_OFF_WRAP
#define AHI FT_THR_OFF_ADDR_HI
#define THI FT_THR_OFF_TSC_HI
#define SELF FT_THR_OFF_SELF
#define RA_EXACT 32   /* the return address, above the exact path's 4 pushes */
#define RA_SAMPLED 24 /* ... above the sampled path's 3 pushes */
#define ESC_ADDR_HI ((1 << 2) | 3) /* FT_E8_ESCAPE(FT_E8_ADDR_HI, 0) */
#define ESC_TSC_HI ((2 << 2) | 3)  /* FT_E8_ESCAPE(FT_E8_TSC_HI, 0) */

    .text

.macro PUSH r
    pushq \r
    .cfi_adjust_cfa_offset 8
.endm
.macro POP r
    popq \r
    .cfi_adjust_cfa_offset -8
.endm

/* The validity check (both modes): the thread's record pointer must lie in
 * the registry mapping (ft_hot.reg_base, reg_span: a pointer that does not
 * is the dummy record, or garbage) and the record must name itself (self ==
 * its address; a record overwritten by anything else -- a memory test's
 * patterns -- does not).  A thread that fails it is not traced: the hook
 * returns, it never dereferences garbage.  \reg: the record, \tmp: scratch,
 * \notrec: where a pointer outside the registry goes, \bad: return. */
.macro CHECK reg, tmp, notrec, bad
    movq \reg, \tmp
    subq ft_hot+FT_HOT_OFF_REG_BASE(%rip), \tmp
    cmpq ft_hot+FT_HOT_OFF_REG_SPAN(%rip), \tmp
    jae \notrec
    cmpq \reg, SELF(\reg)
    jne \bad
.endm

.macro FT_HOOK name, isret
    .globl \name
    .type \name, @function
    .p2align 5
\name:
    .cfi_startproc
#ifndef FT_BENCH_NOMODE
    cmpb $FT_HOT_MODE_SAMPLED, ft_hot+FT_HOT_OFF_MODE(%rip) /* below: FT_MODE_EXACT (0) */
    jb 40f                          /* exact: out of line */
    jne 20f                         /* above FT_MODE_SAMPLED: FT_MODE_OFF set */
    /* ---- sampled mode: 4-byte items (FT_FMT_SAMPLED4) ---- */
    PUSH %r11
    PUSH %rax
    PUSH %rcx                       /* CFA = rsp + 32 */
    movq %fs:ft_self_s@tpoff, %rcx  /* the thread's record */
    CHECK %rcx, %rax, 17f, 18f
    movq POS(%rcx), %r11            /* the slot */
    testq %r11, MASK(%rcx)          /* 0 => paused / disabled / exited */
    jz 18f
  .if \isret
    decq COUNTDOWN(%rcx)            /* returns count ((k + 1) / 2 of them: k events) */
    jle 16f                         /* a return when a stamp is due: a stamped return */
  .endif
19:
    movq RA_SAMPLED(%rsp), %rax     /* the address (one load for both halves) */
    rorq $32, %rax                  /* eax: bits 63..32 */
    cmpl %eax, AHI(%rcx)
    jne 14f                         /* changed: an ADDR_HI escape first */
    rorq $32, %rax                  /* eax: bits 31..0 */
    andl $-4, %eax                  /* tag 0: call */
  .if \isret
    incl %eax                       /* tag 1: return */
  .endif
    movl %eax, (%r11)               /* the item (one store) */
    addq $4, %r11
    andq WRAP(%rcx), %r11
    movq %r11, POS(%rcx)            /* commit pos */
18:
    POP %rcx
    POP %rax
    POP %r11                        /* CFA = rsp + 8 */
    ret
14: /* ADDR_HI escape (FT_S4_ESCAPE(FT_S4_ADDR_HI, bits 58..32)), committed on its own */
    .cfi_def_cfa_offset 32
    movl %eax, AHI(%rcx)
    andl $0x7FFFFFF, %eax
    shll $5, %eax
    orl $3, %eax
    movl %eax, (%r11)
    addq $4, %r11
    andq WRAP(%rcx), %r11
    movq %r11, POS(%rcx)
    jmp 19b                         /* the high half now matches */
  .if \isret /* (only returns are stamped) */
16: /* a stamp is due: a stamped return (TSC bits 31..3 | 7, no address) if
     * the previous item is this function's call (a leaf return: the decoder
     * takes the address from there), else a plain return now and the stamp
     * at the next leaf return (countdown stays <= 0) */
    PUSH %rdx
    movq WRAP(%rcx), %rax
    leaq 1(%rax), %rdx
    andq %rax, %rdx                 /* ring = wrap & (wrap + 1) (aligned to 2 * size) */
    leaq -4(%r11), %rax             /* the previous slot, wrapped */
    cmpq %rdx, %rax
    jae 12f
    movq WRAP(%rcx), %rax
    subq $3, %rax
12:
    movl (%rax), %eax
    testl %eax, %eax
    jz 10f
    testl $1, %eax                  /* tags 0 and 2 (calls) have bit 0 clear */
    jnz 10f
    rdtsc
    cmpl %edx, THI(%rcx)
    jne 13f                         /* changed: a TSC_HI escape first */
11:
    andl $-8, %eax
    orl $7, %eax
    movl %eax, (%r11)
    addq $4, %r11
    andq WRAP(%rcx), %r11
    movq %r11, POS(%rcx)
    movq ft_hot+FT_HOT_OFF_SAMPLE_RETS(%rip), %rax /* ft_hot.sample_rets */
    movq %rax, COUNTDOWN(%rcx)
    POP %rdx
    jmp 18b
13: /* TSC_HI escape (FT_S4_ESCAPE(FT_S4_TSC_HI, bits 58..32)); eax (low half) is kept */
    .cfi_def_cfa_offset 40
    movl %edx, THI(%rcx)
    andl $0x7FFFFFF, %edx
    shll $5, %edx
    orl $11, %edx
    movl %edx, (%r11)
    addq $4, %r11
    andq WRAP(%rcx), %r11
    movq %r11, POS(%rcx)
    jmp 11b
10: /* not a leaf return: a plain return */
    .cfi_def_cfa_offset 40
    POP %rdx
    jmp 19b
  .endif
17: /* sampled, not a registry record: dummy_init (cold path), else nothing */
    .cfi_def_cfa_offset 32
    leaq ft_thread_dummy_init(%rip), %r11
    cmpq %r11, %rcx
    jne 18b
    PUSH %rdx
    movq RA_SAMPLED+8(%rsp), %rax
  .if \isret
    btsq $63, %rax
  .endif
    call ft_asm_slow
    POP %rdx
    jmp 18b
#endif /* FT_BENCH_NOMODE */
40: /* ---- exact mode: 8-byte entries (FT_FMT_EXACT8) ---- */
    .cfi_def_cfa_offset 8
    PUSH %r11
    PUSH %rax
    PUSH %rdx
    PUSH %rcx                       /* CFA = rsp + 40 */
    movq %fs:ft_self@tpoff, %rcx    /* the thread's record */
    CHECK %rcx, %rax, 2f, 1f
    movq POS(%rcx), %r11            /* the slot (pos & mask == pos while recording) */
    testq %r11, MASK(%rcx)          /* pos & mask == 0 => paused / disabled / exited */
    jz 1f
    movl RA_EXACT+4(%rsp), %eax     /* address bits 63..32 */
    cmpl %eax, AHI(%rcx)
    jne 4f                          /* changed: an ADDR_HI escape first */
5:
    rdtsc                           /* edx:eax; clears both upper halves */
    cmpl %edx, THI(%rcx)
    jne 6f                          /* changed: a TSC_HI escape first */
7:
    shlq $32, %rax                  /* TSC bits 31..0 -> 63..32 */
    movl RA_EXACT(%rsp), %edx       /* address bits 31..0 */
    andl $-4, %edx                  /* tag 0: call */
  .if \isret
    incl %edx                       /* tag 1: return */
  .endif
    orq %rdx, %rax
    movq %rax, (%r11)               /* 1: the entry (one store) */
    addq $8, %r11
    andq WRAP(%rcx), %r11
    movq %r11, POS(%rcx)            /* 2: commit pos */
1:
    POP %rcx
    POP %rdx
    POP %rax
    POP %r11                        /* CFA = rsp + 8 */
    ret
2:  /* not a registry record: no record yet (dummy_init: cold path), or the
     * dummy_dead record (ignored / exited), or garbage: nothing */
    .cfi_def_cfa_offset 40
    leaq ft_thread_dummy_init(%rip), %r11
    cmpq %r11, %rcx
    jne 1b
    movq RA_EXACT(%rsp), %rax
  .if \isret
    btsq $63, %rax
  .endif
    call ft_asm_slow                /* create the record, write the event */
    jmp 1b
4:  /* ADDR_HI escape: eax = the new high half.  The record's value first, so
     * that a signal handler's events in between stay consistent */
    movl %eax, AHI(%rcx)
    shlq $32, %rax
    orq $ESC_ADDR_HI, %rax
    movq %rax, (%r11)
    addq $8, %r11
    andq WRAP(%rcx), %r11
    movq %r11, POS(%rcx)            /* the escape is committed on its own */
    jmp 5b
6:  /* TSC_HI escape: edx = the new high half; eax (TSC low half) is kept */
    movl %edx, THI(%rcx)
    shlq $32, %rdx
    orq $ESC_TSC_HI, %rdx
    movq %rdx, (%r11)
    addq $8, %r11
    andq WRAP(%rcx), %r11
    movq %r11, POS(%rcx)
    jmp 7b

20: /* frozen: record nothing */
    .cfi_def_cfa_offset 8
    ret
    .cfi_endproc
    .size \name, .-\name
.endm

FT_HOOK __fentry__, 0
FT_HOOK __return__, 1

/* ft_asm_slow: call ft_slow_event(word = %rax) preserving every register the
 * hooks did not save (rdi rsi r8 r9 r10 r11 rbx, the vector/x87 state; rax
 * too).  Clobbers rcx and rdx, which both hooks save.
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
    pushq %r10
    pushq %r11
    pushq %rbx
    pushq %rax
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
    .size ft_asm_slow, .-ft_asm_slow

    .section .note.GNU-stack,"",@progbits
