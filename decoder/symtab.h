/*
 * symtab.h -- addresses -> functions (libdwfl), per generation.
 *
 * Module instances come from the MODULES table (each valid for the
 * generations gen_loaded <= g < gen_unloaded) and, as a fallback, from the
 * MAPPINGS (or original PROCMAPS) chunk.  Every distinct ELF file gets its own
 * Dwfl, reported at bias 0, so the same library loaded at different
 * addresses, or different libraries loaded at the same address in different
 * generations, never clash.  Each (address space, address) is symbolized
 * once: address -> (file, vaddr) -> symbol -> function id, all hashed.
 */
#ifndef FT_DECODER_SYMTAB_H
#define FT_DECODER_SYMTAB_H

#include <stdint.h>
#include "raw.h"
#include "outbuf.h"
#include "hmap.h"

struct func {
    char *name;     /* display name (demangled, clone suffix stripped) */
    char *jname;    /* JSON string literal, unique per function */
    char *uname;    /* the same unquoted: name, or "name (file:line)" / "name [module]"
                       when another function has the same name */
    const char *file; /* source file or NULL */
    uint32_t line;
    int32_t modfile; /* -1: no module */
    uint64_t vaddr; /* symbol start in the file (or the address itself) */
    uint32_t match; /* functions with equal match ids are "the same" for call/return matching */
    uint8_t ignored; /* thunks */
    uint8_t instr;   /* 0 unknown, 1 instrumented, 2 not (see sym_instrumented) */
    uint8_t seen;    /* appears in a trace event */
    uint8_t used;    /* appears in the output */
    uint8_t unknown; /* no symbol: name is module+0xoff or 0xaddr */
    uint8_t throws;  /* __cxa_throw, __cxa_rethrow: never return (exc_events.c) */
    uint8_t unwind_exit; /* 0 unknown, 1 / 2: see sym_exit_on_unwind */
    uint8_t special; /* a marker, not a function (sym_special) */
};

struct sym_opts {
    int nsubst;
    char **subst_from, **subst_to;
    int no_symbols;  /* never open ELF files: names are module+0xoffset */
    const char *debug_dir; /* build-id debug files are DIR/.build-id/xx/yyyy.debug (NULL: /usr/lib/debug) */
    int quiet;
};

typedef void (*sym_warn_fn)(void *ctx, const char *msg);

struct symtab;
struct symtab *sym_new(const struct ftr_trace *t, const struct sym_opts *o, sym_warn_fn warn, void *ctx);
void sym_free(struct symtab *s);

/* the address space of generation number g (synthetic: no generation info,
 * use every module).  Returns a space id. */
int sym_space(struct symtab *s, uint64_t g, int synthetic);

uint32_t sym_lookup_slow(struct symtab *s, int space, uint64_t addr);

/* the first member of struct symtab: the (space, address) -> function cache */
struct symtab_hot {
    struct hmap addr_cache;
};
/* function id of addr in space (cached) */
static inline uint32_t sym_lookup(struct symtab *s, int space, uint64_t addr)
{
    uint32_t v = hm_get(&((struct symtab_hot *)s)->addr_cache, addr, (uint64_t)space);
    return v != HMAP_NONE ? v : sym_lookup_slow(s, space, addr);
}

/* Loads, on a second thread, the debug information of the modules holding
 * pcs[0..n) in space (the final stacks' frames: symwarm.h) while the caller
 * goes on reading the rings; a lookup in such a module waits for it.  Call
 * it before any lookup, at most once. */
void sym_warm(struct symtab *s, int space, const uint64_t *pcs, size_t n);
struct func *sym_func(struct symtab *s, uint32_t id);
uint32_t sym_nfuncs(const struct symtab *s);
/* 1 if the function's code carries entry instrumentation (-pg fentry call,
 * XRay entry sled or the -finstrument-functions "load own address"
 * sequence), 0 if not or unknown */
int sym_instrumented(struct symtab *s, uint32_t id);
/* 1 if the function's -finstrument-functions exit hook also runs when a C++
 * exception unwinds it (gcc's C++ code, or -fexceptions: the hook is called
 * from a cleanup landing pad), 0 if not (clang; gcc's C code; -fno-exceptions).
 * From its compile unit's DW_AT_producer and DW_AT_language; without debug
 * info, 0 for a module whose .comment names clang, else 1. */
int sym_exit_on_unwind(struct symtab *s, uint32_t id);

/* The frames gdb's `bt` shows for one machine frame at pc: the function
 * holding the code at pc and, first, the functions inlined into it there,
 * innermost first, each with the source line it is at (the innermost: the
 * line of pc; an inlined function's caller: the line of the call).  Inlined
 * functions get the function id of their out-of-line copy when the module
 * has one (its symbol), else one of their own (not instrumented).  exact:
 * pc itself (frame 0, a frame a signal interrupted), else pc - 1 (a return
 * address).  Returns the number of frames written (>= 1 when max > 0). */
struct sym_frame {
    uint32_t func;
    const char *file;   /* NULL: no line information */
    int line;
    int inlined;        /* 1: inlined into the next frame out */
};
size_t sym_frames(struct symtab *s, int space, uint64_t pc, int exact, struct sym_frame *out, size_t max);
/* The functions gdb shows between a frame and its caller that are not on
 * the machine stack: the caller's call (returning at ret) went to h, which
 * tail-called ... the function holding callee_pc (exact: callee_pc itself,
 * else callee_pc - 1).  From the DWARF call sites (DW_TAG_call_site with
 * DW_AT_call_tail_call), followed while the chain is unique, as gdb does.
 * Innermost first; each at the return address of its tail call. */
struct sym_tailcall {
    uint32_t func;
    uint64_t pc;
    const char *file;
    int line;
};
size_t sym_tailcalls(struct symtab *s, int space, uint64_t ret, uint64_t callee_pc, int callee_exact,
                     struct sym_tailcall *out, size_t max);
/* pc is the rt_sigreturn trampoline a signal handler returns to */
int sym_is_sigtramp(struct symtab *s, int space, uint64_t pc);
/* a function id that is only a name, for markers in stacks ("<signal
 * handler called>"); one per name */
uint32_t sym_special(struct symtab *s, const char *name);

/* source file and line of the instruction at pc (not pc - 1); 0 if unknown */
int sym_pc_line(struct symtab *s, int space, uint64_t pc, const char **file, int *line);

/* path after --substitute-path rewriting (malloc'd) */
char *sym_subst(const struct symtab *s, const char *path);

/* counters for the summary */
struct sym_stats {
    uint32_t files, files_missing, buildid_mismatch, unknown_addrs;
};
void sym_stats(const struct symtab *s, struct sym_stats *st);

#endif
