/* sjlj_cost.c -- ns per setjmp + longjmp, for bench/xray_exc: main -> d1
 * loops calling protect, whose _setjmp is jumped back to by jumper's
 * _longjmp (1 frame left), as an interpreter's error handling does (Lua's
 * luaD_rawrunprotected and luaD_throw).  Built plain and with the funtrace
 * wrappers, which log each setjmp and longjmp (runtime/setjmps.c).  With
 * "unlogged", the same through libc's own _setjmp and _longjmp (found with
 * dlsym(RTLD_NEXT): past the runtime's interposers), so that the markers'
 * cost is the difference between the two runs of one build.
 *   sjlj_cost [N [unlogged]]   prints "ns_per_jump X" */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NI __attribute__((noinline))
static volatile int sink;
static jmp_buf jb;
static int unlogged;

/* libc's _setjmp, jumped to with the caller's stack (it returns twice: a
 * call through a pointer cannot say so) */
__attribute__((used)) static void *sj_real;
static void (*lj_real)(struct __jmp_buf_tag *, int); /* (does not return) */
int sj_unlogged(struct __jmp_buf_tag *env) __attribute__((returns_twice));
__asm__(".text\n"
        ".globl sj_unlogged\n"
        ".type sj_unlogged, @function\n"
        "sj_unlogged:\n"
        "jmp *sj_real(%rip)\n"
        ".size sj_unlogged, .-sj_unlogged\n");

NI void jumper(int i)
{
    sink++;
    if (i >= 0) {
        if (unlogged)
            lj_real(jb, 1);
        else
            _longjmp(jb, 1);
    }
}
NI void protect(int i)
{
    if (unlogged) {
        if (!sj_unlogged(jb))
            jumper(i);
    } else if (!_setjmp(jb)) {
        jumper(i);
    }
}
NI void d1(int n)
{
    for (int i = 0; i < n; i++)
        protect(i);
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000000;
    unlogged = argc > 2 && !strcmp(argv[2], "unlogged");
    sj_real = dlsym(RTLD_NEXT, "_setjmp");
    lj_real = (void (*)(struct __jmp_buf_tag *, int))dlsym(RTLD_NEXT, "_longjmp");
    if (!sj_real || !lj_real) {
        fprintf(stderr, "sjlj_cost: libc's _setjmp or _longjmp not found\n");
        return 1;
    }
    d1(n / 10); /* warm up */
    double t0 = now_ns();
    d1(n);
    printf("ns_per_jump %.2f\n", (now_ns() - t0) / n);
    return 0;
}
