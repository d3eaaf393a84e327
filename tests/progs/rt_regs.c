/* rt_regs: the hooks must preserve every register a caller can have live.
 * 1. a variadic function taking doubles (al = number of vector registers)
 *    called 1,000,000 times;
 * 2. code whose values live in rdx (3rd argument, high half of a 128-bit
 *    return), r10 (a GNU C nested function's static chain), st0 (long double);
 * 3. direct calls of the hooks (__fentry__/__return__ under -pg,
 *    __cyg_profile_func_* otherwise) from assembly with every GPR and
 *    xmm0-15 set to known values, from a new thread whose FIRST event is such
 *    a call (cold path: the thread's record is created), then repeatedly
 *    (hot path; in sampled mode with k = 2 alternately with and without a
 *    time word).  The -pg hooks must give back rax rcx rdx rsi rdi r8 r9 r10
 *    r11 and xmm0-15 unchanged.
 *
 * The arithmetic flags (CF PF AF ZF SF OF) are NOT checked: the SysV ABI
 * makes them call-clobbered, and the hooks are only called where no caller
 * can have them live (a function's first instruction, and right before its
 * ret), so the hooks do not preserve them (FORMAT.md 1.4).  DF is checked:
 * the ABI requires it clear at every call and on return, and the hooks never
 * touch it - it comes back clear, and (the -pg hooks' hot path, which runs
 * no C code) a DF deliberately set comes back set.
 * Prints "bad=N" and exits 1 if anything was wrong. */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "rt_common.h"

NI double vsum(int n, ...)
{
    va_list ap;
    double s = 0;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        s += va_arg(ap, double);
    va_end(ap);
    return s;
}

NI long mixed(long a, long b, long c, double x, long d, long e, long f, long g, double y)
{
    return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + (long)(x * 8) + (long)(y * 16);
}

NI __int128 wide(long hi, long lo) { return ((__int128)hi << 64) | (unsigned long)lo; }
NI long double ldouble(long double x) { return x * 2.5L; }

struct pair { long a, b; };
NI struct pair mkpair(long x) { struct pair p = { x, ~x }; return p; }

static long nested_user(long base)
{
    long bump = 3;
#ifndef __clang__
    NI long inner(long v) { return v + base + bump; } /* static chain in r10 */
    return inner(base);
#else
    return base + base + bump; /* clang has no nested functions */
#endif
}

/* regcheck(hook, in, out, flags): load rax rcx rdx rsi rdi r8 r9 r10 r11
 * and xmm0..15 from in[], set rflags = flags, call hook, store them to out[]
 * (out[9] = rflags after the call, xmm at out[16..47]); DF is cleared again
 * before returning to C. */
__asm__(
    ".text\n"
    ".globl regcheck\n"
    ".type regcheck,@function\n"
    "regcheck:\n"
    "  pushq %rbx\n pushq %rbp\n pushq %r12\n pushq %r13\n pushq %r14\n pushq %r15\n"
    "  subq $8, %rsp\n"
    "  movq %rdi, %r12\n movq %rsi, %r14\n movq %rdx, %r13\n movq %rcx, %r15\n"
    "  movdqu 128(%r14), %xmm0\n movdqu 144(%r14), %xmm1\n movdqu 160(%r14), %xmm2\n movdqu 176(%r14), %xmm3\n"
    "  movdqu 192(%r14), %xmm4\n movdqu 208(%r14), %xmm5\n movdqu 224(%r14), %xmm6\n movdqu 240(%r14), %xmm7\n"
    "  movdqu 256(%r14), %xmm8\n movdqu 272(%r14), %xmm9\n movdqu 288(%r14), %xmm10\n movdqu 304(%r14), %xmm11\n"
    "  movdqu 320(%r14), %xmm12\n movdqu 336(%r14), %xmm13\n movdqu 352(%r14), %xmm14\n movdqu 368(%r14), %xmm15\n"
    "  movq 0(%r14), %rax\n movq 8(%r14), %rcx\n movq 16(%r14), %rdx\n movq 24(%r14), %rsi\n"
    "  movq 32(%r14), %rdi\n movq 40(%r14), %r8\n movq 48(%r14), %r9\n movq 56(%r14), %r10\n"
    "  movq 64(%r14), %r11\n"
    "  pushq %r15\n popfq\n"
    "  call *%r12\n"
    "  pushfq\n popq %rbx\n cld\n"
    "  movq %rax, 0(%r13)\n movq %rcx, 8(%r13)\n movq %rdx, 16(%r13)\n movq %rsi, 24(%r13)\n"
    "  movq %rdi, 32(%r13)\n movq %r8, 40(%r13)\n movq %r9, 48(%r13)\n movq %r10, 56(%r13)\n"
    "  movq %r11, 64(%r13)\n movq %rbx, 72(%r13)\n"
    "  movdqu %xmm0, 128(%r13)\n movdqu %xmm1, 144(%r13)\n movdqu %xmm2, 160(%r13)\n movdqu %xmm3, 176(%r13)\n"
    "  movdqu %xmm4, 192(%r13)\n movdqu %xmm5, 208(%r13)\n movdqu %xmm6, 224(%r13)\n movdqu %xmm7, 240(%r13)\n"
    "  movdqu %xmm8, 256(%r13)\n movdqu %xmm9, 272(%r13)\n movdqu %xmm10, 288(%r13)\n movdqu %xmm11, 304(%r13)\n"
    "  movdqu %xmm12, 320(%r13)\n movdqu %xmm13, 336(%r13)\n movdqu %xmm14, 352(%r13)\n movdqu %xmm15, 368(%r13)\n"
    "  addq $8, %rsp\n"
    "  popq %r15\n popq %r14\n popq %r13\n popq %r12\n popq %rbp\n popq %rbx\n"
    "  ret\n"
    ".size regcheck, .-regcheck\n");
void regcheck(void (*hook)(void), const uint64_t *in, uint64_t *out, uint64_t flags);

#define FL_ARITH 0x8d5ull /* CF PF AF ZF SF OF (+ the always-1 bit 1) */
#define FL_DF 0x400ull

void __fentry__(void);
void __return__(void);
void __cyg_profile_func_enter(void *, void *);
void __cyg_profile_func_exit(void *, void *);

/* hook called with every GPR and xmm register set; set_df: call it with
 * DF set (only for code that runs no C: the -pg hooks' hot path) */
static NOFUNTRACE int check_hook(const char *what, void (*hook)(void), int cyg, int set_df)
{
    uint64_t in[48], out[48];
    uint64_t flags = FL_ARITH | 2 | (set_df ? FL_DF : 0);
    int bad = 0;
    for (int i = 0; i < 48; i++)
        in[i] = 0x0101010101010101ull * (uint64_t)(i + 1) ^ 0x8000000000000000ull;
    in[4] = (uint64_t)(uintptr_t)&vsum; /* rdi: a function address for the cyg hooks */
    memset(out, 0, sizeof out);
    regcheck(hook, in, out, flags);
    if ((out[9] & FL_DF) != (flags & FL_DF)) {
        printf("%s: DF %s\n", what, set_df ? "cleared" : "set");
        bad++;
    }
    /* the cyg hooks are ordinary C functions: only callee-saved state is
     * promised (regcheck keeps rbx rbp r12-r15 itself), nothing to check */
    if (!cyg) {
        for (int i = 0; i < 9; i++)
            if (out[i] != in[i]) {
                printf("%s: register %d changed %#lx -> %#lx\n", what, i, (unsigned long)in[i], (unsigned long)out[i]);
                bad++;
            }
        for (int i = 16; i < 48; i++)
            if (out[i] != in[i]) {
                printf("%s: xmm word %d changed\n", what, i - 16);
                bad++;
            }
    }
    return bad;
}

static NOFUNTRACE int check_hooks(int set_df)
{
    int bad = 0;
#if defined(__clang__) || !defined(RT_PG)
    (void)set_df;
    bad += check_hook("cyg_enter", (void (*)(void))__cyg_profile_func_enter, 1, 0);
    bad += check_hook("cyg_exit", (void (*)(void))__cyg_profile_func_exit, 1, 0);
#else
    bad += check_hook("__fentry__", __fentry__, 0, set_df);
    bad += check_hook("__return__", __return__, 0, set_df);
#endif
    return bad;
}

/* not instrumented: the first event of this thread is regcheck's call */
static NOFUNTRACE void *hook_thread(void *a)
{
    int *bad = a;
    *bad += check_hooks(0); /* first event of this thread: cold path, then hot */
    for (int i = 0; i < 4; i++)
        *bad += check_hooks(i & 1); /* hot path */
    return NULL;
}

int main(void)
{
    long bad = 0;
    for (int i = 0; i < 1000000; i++) {
        double r = vsum(3, (double)i, 0.5, 0.25);
        if (r != (double)i + 0.75)
            bad++;
    }
    printf("vsum wrong results: %ld\n", bad);
    for (long i = 0; i < 1000; i++) {
        if (mixed(i, 1, 2, 0.5, 3, 4, 5, 6, 0.25) != i + 2 + 6 + 4 * 3 + 5 * 4 + 6 * 5 + 7 * 6 + 4 + 4)
            bad++;
        __int128 w = wide(i, ~i);
        if ((long)(w >> 64) != i || (long)w != ~i)
            bad++;
        if (ldouble((long double)i) != (long double)i * 2.5L)
            bad++;
        struct pair p = mkpair(i);
        if (p.a != i || p.b != ~i)
            bad++;
        if (nested_user(i) != 2 * i + 3)
            bad++;
    }
    pthread_t t;
    int hbad = 0;
    pthread_create(&t, NULL, hook_thread, &hbad);
    pthread_join(t, NULL);
    bad += hbad;
    printf("bad=%ld\n", bad);
    return bad ? 1 : 0;
}
