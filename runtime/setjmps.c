/*
 * setjmps.c -- setjmp in the trace.  _setjmp, setjmp and __sigsetjmp (what
 * the setjmp and sigsetjmp macros call) are interposed and log
 * FT_JMP_SET_ADDR with the stack pointer their jmp_buf resumes at (FORMAT.md
 * 1.4); the longjmp family logs FT_JMP_LONG_ADDR with the target jmp_buf's
 * (interpose.c).  With both, the decoder knows which frame a longjmp
 * resumes: the frames above it end at the jump, and a jump to a frame on
 * another stack (coroutines switched by setjmp/longjmp, as QEMU's and GNU
 * Pth's) is a stack switch, not a return into the frame that jumped.
 *
 * A setjmp returns twice, so its interposer cannot be a C function (the
 * second return would come back to a frame that is gone): it is a stub
 * that logs through ft_setjmp_logged, then jumps to the real function with
 * the caller's stack, arguments and return address untouched.  The stack
 * pointer the real setjmp saves is the stub's at entry + 8 (past the return
 * address), the one jmp_target_sp (interpose.c) reads back at a longjmp.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>

#include "ft_interposing.h"
#include "ft_internal.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* the real functions, by the stubs' `which` */
#define SJ_UNDER 0  /* _setjmp */
#define SJ_PLAIN 1  /* setjmp */
#define SJ_SIG 2    /* __sigsetjmp */

void *ft_setjmp_logged(uintptr_t sp, void *ret, unsigned which) FT_HIDDEN;

static void *real_sj[3];

static void *real_of(unsigned which)
{
    switch (which) {
    case SJ_UNDER:
        return FT_REAL(&real_sj[SJ_UNDER], _setjmp);
    case SJ_PLAIN:
        return FT_REAL(&real_sj[SJ_PLAIN], setjmp);
    default:
        return FT_REAL(&real_sj[SJ_SIG], __sigsetjmp);
    }
}

/* resolve the real functions now (a signal handler must not call dlsym) */
void ft_setjmp_init(void)
{
    for (unsigned w = SJ_UNDER; w <= SJ_SIG; w++)
        (void)real_of(w);
}

/* logs the SET marker (sp: the caller's stack pointer once the setjmp
 * returns; ret: its return address) and returns the real function */
void *ft_setjmp_logged(uintptr_t sp, void *ret, unsigned which)
{
    void *real = real_of(which);
    if (!real)
        abort(); /* (a setjmp that cannot save: nothing sensible to return) */
    ft_log_ctx(FT_JMP_SET_ADDR, (const void *)sp, ret);
    return real;
}

/* the stub: entry %rsp + 8 is the caller's stack pointer after the return
 * (after the two pushes and the alignment, 32(%rsp)); the arguments (rdi,
 * rsi) are kept across the call, and the real function is jumped to */
#define SETJMP_STUB(name, which)                                                                               \
    __asm__(".text\n"                                                                                          \
            ".p2align 4\n"                                                                                     \
            ".weak " STR(FT_ITP(name)) "\n"                                                                    \
            ".type " STR(FT_ITP(name)) ", @function\n" STR(FT_ITP(name)) ":\n"                                 \
            ".cfi_startproc\n"                                                                                 \
            "push %rdi\n"                                                                                      \
            ".cfi_adjust_cfa_offset 8\n"                                                                       \
            "push %rsi\n"                                                                                      \
            ".cfi_adjust_cfa_offset 8\n"                                                                       \
            "sub $8, %rsp\n"                                                                                   \
            ".cfi_adjust_cfa_offset 8\n"                                                                       \
            "lea 32(%rsp), %rdi\n"                                                                             \
            "mov 24(%rsp), %rsi\n"                                                                             \
            "mov $" STR(which) ", %edx\n"                                                                      \
            "call ft_setjmp_logged\n"                                                                          \
            "add $8, %rsp\n"                                                                                   \
            ".cfi_adjust_cfa_offset -8\n"                                                                      \
            "pop %rsi\n"                                                                                       \
            ".cfi_adjust_cfa_offset -8\n"                                                                      \
            "pop %rdi\n"                                                                                       \
            ".cfi_adjust_cfa_offset -8\n"                                                                      \
            "jmp *%rax\n"                                                                                      \
            ".cfi_endproc\n"                                                                                   \
            ".size " STR(FT_ITP(name)) ", .-" STR(FT_ITP(name)) "\n")

SETJMP_STUB(_setjmp, SJ_UNDER);
SETJMP_STUB(setjmp, SJ_PLAIN);
SETJMP_STUB(__sigsetjmp, SJ_SIG);
