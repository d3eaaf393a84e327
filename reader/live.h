/*
 * live.h -- read the funtrace trace out of a live (running, stopped, frozen
 * or OOM-halted) process with process_vm_readv, without stopping it.
 *
 * Used by `coreextract --pid PID` and by funtrace-oomwatch.  Link with
 * build/lib/libfuntrace_reader.a (the shared reader), plus
 * $(pkg-config --libs libunwind-generic) and -lelf.
 *
 * ft_live_extract writes one complete raw trace (FUNTRACE ... ENDTRACE) to w:
 * root found via the `funtrace_root` symbol of /proc/PID/exe (+ load bias from
 * /proc/PID/maps), else by scanning the writable mappings for the root magic;
 * MAPPINGS from /proc/PID/maps; ft_source_info.live = 1, so each ring's pos is
 * re-read after copying and events that may have been overwritten meanwhile
 * are dropped (FT_TSF_COPY_RACED).  FINSTACK chunks only with opts->stacks
 * (each thread is briefly stopped with PTRACE_SEIZE + PTRACE_INTERRUPT, unwound
 * with libunwind's remote unwinder over process_vm_readv -- unwind.h -- and
 * detached).
 *
 * Returns the coreextract exit codes:
 *   FT_EXIT_OK (0)       trace extracted
 *   FT_EXIT_NOTRACE (1)  process readable but no funtrace root in it
 *   FT_EXIT_BADINPUT (2) no such pid / permission denied / unreadable / bad args
 *   FT_EXIT_PARTIAL (3)  trace written but parts missing (header has PARTIAL)
 *   FT_EXIT_WRITE (4)    the output could not be written
 * st (may be NULL) receives the emit statistics; st->problem holds one line
 * saying what went wrong (or "" on success).  Nothing is printed unless
 * opts->verbose (progress lines to stderr, "coreextract: " prefixed).
 * Not async-signal-safe (uses malloc and stdio for /proc parsing).
 */
#ifndef FUNTRACE_CE_LIVE_H
#define FUNTRACE_CE_LIVE_H

#include <stdint.h>
#include "funtrace_rawwrite.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FT_EXIT_OK 0
#define FT_EXIT_NOTRACE 1
#define FT_EXIT_BADINPUT 2
#define FT_EXIT_PARTIAL 3
#define FT_EXIT_WRITE 4

struct ft_live_opts {
    int stacks;           /* also write FINSTACK per thread (stops each thread briefly) */
    int verbose;          /* progress to stderr */
    uint32_t extra_flags; /* OR'ed into ft_raw_header.flags */
    uint32_t max_frames;  /* appended: frames kept per stack (0: the default, unwind.h) */
};

int ft_live_extract(int pid, const struct ft_live_opts *opts, const struct ft_writer *w,
                    struct ft_emit_stats *st);

#ifdef __cplusplus
}
#endif
#endif
