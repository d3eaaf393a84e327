/*
 * faults.c -- fatal-signal episodes (see faults.h).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "faults.h"
#include "symtab.h"
#include "textfmt.h"
#include "tracefacts.h"

const struct ft_fault *dec_original_fault(const struct ftr_trace *t)
{
    for (uint32_t i = t->nfaults; i > 0; i--)
        if (t->faults[i - 1].state == FT_FAULT_ACTIVE)
            return &t->faults[i - 1];
    return NULL;
}

int64_t dec_tsc_ns(const struct dec *d, uint64_t tsc)
{
    size_t gi = d->ngens - 1;
    while (gi > 0 && !d->gens[gi].synthetic && tsc < d->gens[gi].start_tsc)
        gi--;
    return ft_clock_ns(&d->gens[gi].clk, tsc);
}

static const char *code_name(int sig, int code)
{
    switch (code) {
    case SI_USER: return "SI_USER";
    case SI_KERNEL: return "SI_KERNEL";
    case SI_QUEUE: return "SI_QUEUE";
    case SI_TIMER: return "SI_TIMER";
    case SI_MESGQ: return "SI_MESGQ";
    case SI_ASYNCIO: return "SI_ASYNCIO";
    case SI_SIGIO: return "SI_SIGIO";
    case SI_TKILL: return "SI_TKILL";
    }
    static const char *const segv[] = {NULL, "SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR"};
    static const char *const bus[] = {NULL, "BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR", "BUS_MCEERR_AR",
                                      "BUS_MCEERR_AO"};
    static const char *const fpe[] = {NULL, "FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF",
                                      "FPE_FLTUND", "FPE_FLTRES", "FPE_FLTINV", "FPE_FLTSUB"};
    static const char *const ill[] = {NULL, "ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP",
                                      "ILL_PRVOPC", "ILL_PRVREG", "ILL_COPROC", "ILL_BADSTK"};
#define PICK(tab) (code > 0 && (size_t)code < sizeof tab / sizeof *tab ? tab[code] : NULL)
    switch (sig) {
    case SIGSEGV: return PICK(segv);
    case SIGBUS: return PICK(bus);
    case SIGFPE: return PICK(fpe);
    case SIGILL: return PICK(ill);
    }
#undef PICK
    return NULL;
}

void fmt_si_code(char *buf, size_t n, int sig, int code)
{
    const char *nm = code_name(sig, code);
    if (nm)
        snprintf(buf, n, "si_code %d (%s)", code, nm);
    else
        snprintf(buf, n, "si_code %d", code);
}

static int has_addr(int sig, int code)
{
    return code > 0 && (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL);
}

static const char *thread_name(const struct dec *d, uint64_t tid)
{
    for (size_t i = 0; i < d->nth; i++)
        if (d->th[i].rt->tid == tid)
            return d->th[i].rt->name;
    return NULL;
}

/* "SIGSEGV (Segmentation fault), si_code 1 (SEGV_MAPERR), fault address 0x28" */
static void put_signal(struct outbuf *o, int sig, int code, uint64_t addr, uint32_t sender)
{
    char c[64];
    fmt_si_code(c, sizeof c, sig, code);
    ob_printf(o, "%s (%s), %s", sig_name(sig), strsignal(sig), c);
    if (has_addr(sig, code))
        ob_printf(o, ", fault address 0x%llx", (unsigned long long)addr);
    if (sender)
        ob_printf(o, ", sent by pid %u", sender);
}

static void put_thread(const struct dec *d, struct outbuf *o, uint64_t tid)
{
    const char *tn = thread_name(d, tid);
    ob_printf(o, ", thread %llu", (unsigned long long)tid);
    if (tn) {
        ob_str(o, " \"");
        ob_text(o, tn);
        ob_char(o, '"');
    }
}

/* " at pc 0x... in fn (file:line)" */
static void put_pc(struct dec *d, struct outbuf *o, uint64_t pc)
{
    if (!pc)
        return;
    ob_printf(o, ", pc 0x%llx", (unsigned long long)pc);
    if (d->o.sym.no_symbols)
        return;
    int space = d->gens[d->ngens - 1].space;
    const struct func *fn = sym_func(d->sym, sym_lookup(d->sym, space, pc));
    ob_str(o, " in ");
    ob_text(o, fn->name);
    const char *file = NULL;
    int line = 0;
    if (sym_pc_line(d->sym, space, pc, &file, &line) && file) {
        const char *b = strrchr(file, '/');
        ob_str(o, " (");
        ob_text(o, b ? b + 1 : file);
        ob_printf(o, ":%d)", line);
    }
}

static int same_signal(const struct ft_raw_crash *c, const struct ft_fault *f)
{
    return c->signo == f->signo && c->si_code == f->si_code && c->tid == f->tid &&
           (!has_addr(f->signo, f->si_code) || c->addr == f->addr);
}

int faults_print_header(struct dec *d, struct outbuf *o, const char *indent)
{
    const struct ftr_trace *t = &d->t;
    const struct ft_fault *f = dec_original_fault(t);
    if (!f)
        return 0;
    int same = t->has_crash && t->crash.signo && same_signal(&t->crash, f);
    if (same)
        return 1;
    ob_printf(o, "%sfault:      ", indent);
    put_signal(o, f->signo, f->si_code, f->addr, f->sender_pid);
    put_thread(d, o, f->tid);
    put_pc(d, o, f->pc);
    ob_char(o, '\n');
    ob_printf(o, "%s            the original fault, recorded when it reached the program's own handler%s\n", indent,
              t->has_crash && t->crash.signo ? "; the process then ended with:" : "");
    return 0;
}

/* the newest episode ended with its handler returning, and then the same
 * signal ended the process (abort(): the handler returns, abort raises
 * SIGABRT again with the default action) */
static const struct ft_fault *returned_then_died(const struct ftr_trace *t)
{
    if (!t->nfaults || !t->has_crash || !t->crash.signo || dec_signal_snapshot(t))
        return NULL;
    const struct ft_fault *f = &t->faults[t->nfaults - 1];
    if (f->state != FT_FAULT_RETURNED || f->signo != t->crash.signo || f->tid != t->crash.tid)
        return NULL;
    return f;
}

void faults_print_after(struct dec *d, struct outbuf *o, const char *indent)
{
    const struct ftr_trace *t = &d->t;
    const struct ft_fault *f = dec_original_fault(t), *died = returned_then_died(t);
    char b[64];
    if (f && !(f->flags & FT_FAULTF_DEFAULT)) {
        ob_printf(o, "%shandler:    the program's own handler for %s ran after the fault", indent, sig_name(f->signo));
        if (f->flags & FT_FAULTF_FROZEN)
            ob_str(o, "; tracing was frozen meanwhile, so the rings end at the fault");
        else
            ob_str(o, " and was traced (FUNTRACE_CRASH_HANDLERS=trace)");
        if (f->nested) {
            ob_printf(o, "; %u more fatal signal%s came meanwhile (the last: %s", f->nested, f->nested == 1 ? "" : "s",
                      sig_name(f->nested_signo));
            put_thread(d, o, f->nested_tid);
            ob_char(o, ')');
        }
        if (f->flags & FT_FAULTF_PARTIAL)
            ob_str(o, "; the runtime's own threads did not all stop in time");
        ob_char(o, '\n');
    } else if (died) {
        fmt_dur(b, sizeof b, dec_tsc_ns(d, died->end_tsc) - dec_tsc_ns(d, died->tsc));
        ob_printf(o, "%shandler:    the program's own handler for %s returned after %s%s; the signal then came again "
                  "and ended the process\n", indent, sig_name(died->signo), b,
                  died->flags & FT_FAULTF_FROZEN ? " (tracing frozen meanwhile)" : "");
    }
    /* episodes the program survived */
    uint32_t nrec = 0;
    const struct ft_fault *last = NULL;
    for (uint32_t i = 0; i < t->nfaults; i++)
        if (t->faults[i].state != FT_FAULT_ACTIVE && &t->faults[i] != died) {
            nrec++;
            last = &t->faults[i];
        }
    uint64_t older = t->faults_total > t->nfaults ? t->faults_total - t->nfaults : 0;
    if (!nrec && !older)
        return;
    ob_printf(o, "%srecovered:  ", indent);
    if (nrec)
        ob_printf(o, "%u fatal signal%s handled by the program, which went on (instants in the timelines)", nrec,
                  nrec == 1 ? "" : "s");
    if (older)
        ob_printf(o, "%s%llu older episode%s not kept (the runtime keeps the last %u)", nrec ? "; " : "",
                  (unsigned long long)older, older == 1 ? "" : "s", FT_FAULT_SLOTS);
    ob_char(o, '\n');
    if (last) {
        static const char *const how[] = {"", "", "its handler returned", "its handler left with longjmp",
                                          "an exception left its handler"};
        ob_printf(o, "%s            the last: ", indent);
        put_signal(o, last->signo, last->si_code, last->addr, last->sender_pid);
        put_thread(d, o, last->tid);
        fmt_dur(b, sizeof b, dec_tsc_ns(d, last->end_tsc) - dec_tsc_ns(d, last->tsc));
        ob_printf(o, "; %s after %s\n", last->state < 5 ? how[last->state] : "?", b);
    }
}

static void episode_text(struct dec *d, const struct ft_fault *f, char *buf, size_t n)
{
    char c[64], dur[48];
    static const char *const how[] = {"", "", "the program's handler returned", "the program's handler left with longjmp",
                                      "an exception left the program's handler"};
    fmt_si_code(c, sizeof c, f->signo, f->si_code);
    size_t k = (size_t)snprintf(buf, n, "%s (%s", sig_name(f->signo), c);
    if (k < n && has_addr(f->signo, f->si_code))
        k += (size_t)snprintf(buf + k, n - k, ", address 0x%llx", (unsigned long long)f->addr);
    if (k < n && f->sender_pid)
        k += (size_t)snprintf(buf + k, n - k, ", sent by pid %u", f->sender_pid);
    if (k < n)
        k += (size_t)snprintf(buf + k, n - k, ")");
    if (k >= n)
        return;
    if (f->state == FT_FAULT_ACTIVE) {
        snprintf(buf + k, n - k, "%s",
                 f->flags & FT_FAULTF_DEFAULT ? ": fatal"
                 : f->flags & FT_FAULTF_FROZEN ? ": the program's handler ran (not traced: tracing frozen)"
                                               : ": the program's handler ran");
    } else {
        fmt_dur(dur, sizeof dur, dec_tsc_ns(d, f->end_tsc) - dec_tsc_ns(d, f->tsc));
        snprintf(buf + k, n - k, ": %s after %s%s; tracing went on", f->state < 5 ? how[f->state] : "?", dur,
                 f->flags & FT_FAULTF_FROZEN ? " (not traced: tracing was frozen)" : "");
    }
}

void faults_print_thread(struct dec *d, const struct dthread *th, int64_t lo_ns, int64_t hi_ns, struct outbuf *o)
{
    const struct ftr_trace *t = &d->t;
    for (uint32_t i = 0; i < t->nfaults; i++) {
        const struct ft_fault *f = &t->faults[i];
        if (f->tid != th->rt->tid)
            continue;
        int64_t ns = dec_tsc_ns(d, f->tsc);
        if (ns < lo_ns || ns >= hi_ns)
            continue;
        char b1[64], text[256];
        if (d->o.wallclock && d->have_wall)
            fmt_wall(b1, sizeof b1, ns + d->wall_off, 0);
        else
            fmt_dur(b1, sizeof b1, ns - d->end_ns);
        episode_text(d, f, text, sizeof text);
        ob_printf(o, "  %18s  %12s  ** ", b1, "");
        ob_text(o, text);
        ob_str(o, " **\n");
    }
}

void faults_instants(struct dec *d, struct dthread *th, struct view *out, int64_t lo_ns, int64_t hi_ns)
{
    const struct ftr_trace *t = &d->t;
    if (!out || !out->ops->instant)
        return;
    for (uint32_t i = 0; i < t->nfaults; i++) {
        const struct ft_fault *f = &t->faults[i];
        int64_t ns = dec_tsc_ns(d, f->tsc);
        if (f->tid != th->rt->tid || ns < lo_ns || ns >= hi_ns)
            continue;
        static const char *const state[] = {"free", "active", "handler returned", "handler left with longjmp",
                                            "exception caught outside the handler"};
        char name[96], addr[32], pc[32];
        snprintf(name, sizeof name, "%s %s", sig_name(f->signo),
                 f->state == FT_FAULT_ACTIVE ? "(the original fault)" : "(recovered)");
        snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)f->addr);
        snprintf(pc, sizeof pc, "0x%llx", (unsigned long long)f->pc);
        struct view_arg args[] = {
            {"signal", NULL, f->signo},
            {"signal_name", sig_name(f->signo), 0},
            {"si_code", NULL, f->si_code},
            {"fault_address", addr, 0},
            {"pc", pc, 0},
            {"thread", NULL, f->tid},
            {"sender_pid", NULL, f->sender_pid},
            {"outcome", f->state < 5 ? state[f->state] : "?", 0},
            {"tracing_frozen", NULL, (f->flags & FT_FAULTF_FROZEN) != 0},
            {"handler_ns", NULL, f->end_tsc ? dec_tsc_ns(d, f->end_tsc) - ns : -1},
            {"nested_signals", NULL, f->nested},
            {"episode", NULL, (int64_t)f->seq},
        };
        out->ops->instant(out, d, th, ns, name, args, sizeof args / sizeof args[0]);
    }
}
