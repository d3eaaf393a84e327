/* ft_interposing.h -- how the runtime's interposers of libc functions are
 * named and find the real functions (interpose.c, signals.c, modules.c,
 * contexts.c, setjmps.c; fcontext.c, not built with FT_STATIC_WRAP).
 *
 * Built normally (libfuntrace.a): the interposer of NAME is NAME, weak and
 * exported, and the real function is the next definition,
 * dlsym(RTLD_NEXT, "NAME") (ft_real_next).
 *
 * Built with FT_STATIC_WRAP (libfuntrace_static.a, which the wrappers link
 * into programs linked -static or -static-pie): there, our weak NAME would
 * keep libc.a's out of the program (an archive member is only linked for a
 * symbol still undefined) and dlsym finds nothing, so every sigaction() of
 * the program failed.  The interposer is __wrap_NAME instead, the wrappers
 * link with ld --wrap=NAME (the program's references to NAME are the
 * interposer's), and the real function is __real_NAME: libc.a's NAME, which
 * that reference keeps in the program.  dlopen and dlclose are not
 * interposed there (the module table is rescanned by the housekeeper). */
#ifndef FT_INTERPOSING_H
#define FT_INTERPOSING_H

#include <setjmp.h>
#include <signal.h>
#include <pthread.h>

/* FT_ITP(NAME): the interposer's name; FT_REAL(CACHE, NAME): the real
 * function (void *, NULL if not found; CACHE: a void * kept between calls) */
#ifndef FT_STATIC_WRAP
#define FT_ITP(name) name
#define FT_REAL(cache, name) ft_real_next((cache), #name)
#else
#define FT_ITP(name) __wrap_##name
#define FT_REAL(cache, name) ((void)(cache), (void *)&__real_##name)
int __real_pthread_setname_np(pthread_t th, const char *name);
int __real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
__sighandler_t __real_signal(int sig, __sighandler_t h);
__sighandler_t __real_bsd_signal(int sig, __sighandler_t h);
__sighandler_t __real_sysv_signal(int sig, __sighandler_t h);
__sighandler_t __real___sysv_signal(int sig, __sighandler_t h);
void __real_longjmp(struct __jmp_buf_tag env[1], int val) __attribute__((noreturn));
void __real__longjmp(struct __jmp_buf_tag env[1], int val) __attribute__((noreturn));
void __real_siglongjmp(struct __jmp_buf_tag env[1], int val) __attribute__((noreturn));
void __real___longjmp_chk(struct __jmp_buf_tag env[1], int val) __attribute__((noreturn));
int __real__setjmp(struct __jmp_buf_tag env[1]);
int __real_setjmp(struct __jmp_buf_tag env[1]);
int __real___sigsetjmp(struct __jmp_buf_tag env[1], int savemask);
struct ucontext_t;
int __real_swapcontext(struct ucontext_t *oucp, const struct ucontext_t *ucp);
int __real_setcontext(const struct ucontext_t *ucp);
#endif

/* the next definition of name after ours, found once (*cache) */
void *ft_real_next(void **cache, const char *name);

#endif
