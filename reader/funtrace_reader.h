/*
 * funtrace_reader.h -- the public C API of the shared reader: get the funtrace
 * trace out of a process's memory (a core, a stopped or a running process),
 * given only a function that reads that memory.
 *
 * Library: libfuntrace_reader.so (and .a), installed with funtrace
 * (`make install`: <prefix>/lib, <prefix>/include/funtrace_reader.h).  It is
 * the C code coreextract, funtrace-oomwatch and the runtime's snapshots write
 * raw files with (root check and scan, ring planning, the raw writer,
 * funtrace_rawwrite.h), behind a small interface with no structs, for callers
 * in other languages: the gdb extension uses it through Python's ctypes, with a
 * read function that goes through gdb's memory access (so it works wherever
 * gdb does: cores, attached processes, gdbserver targets).
 *
 *   struct ftr *h = ftr_new("core", my_read, my_ctx);
 *   ftr_core_file(h, "core");                 // a core: its file, for the notes
 *   // or, a process: ftr_proc_maps(h, maps_text, len); ftr_signal(h, ...);
 *   if (ftr_find_root(h, symbol_address_or_0) != FTR_OK) fail(ftr_message(h));
 *   ftr_add_stack(h, "gdb", tid, truncated, regs, pcs, n);   // optional, any order
 *   int rc = ftr_write(h, "funtrace.raw");    // FTR_OK, FTR_PARTIAL, else error
 *   puts(ftr_report(h));                      // what was written, one line each
 *   ftr_free(h);
 *
 * Every function accepts a NULL handle (and then fails or does nothing).
 * Errors are one line (ftr_message), never printed by the library.  Not
 * thread-safe per handle; handles are independent.  Strings returned stay
 * valid until the next call on the same handle.
 */
#ifndef FUNTRACE_READER_H
#define FUNTRACE_READER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FTR_API __attribute__((visibility("default")))

/* Bumped when a function below changes incompatibly, or one is added that
 * the gdb extension needs (callers check it).  2: ftr_local_pid. */
#define FTR_API_VERSION 2u
FTR_API unsigned ftr_api_version(void);

/* Results: 0 is success, the others are the exit codes of coreextract (README). */
#define FTR_OK 0        /* done */
#define FTR_NOTRACE 1   /* the target holds no funtrace trace (message says why) */
#define FTR_BADINPUT 2  /* unusable input: not a core, bad arguments */
#define FTR_PARTIAL 3   /* written, but parts of the trace were missing */
#define FTR_WRITE 4     /* the output could not be written */

/* Reads target memory: up to len bytes at addr into buf; returns how many
 * bytes were read from addr on (0..len).  A short count means the bytes after
 * it are unreadable.  A function that can only fail as a whole (a debugger's
 * memory read) may return 0 whenever any byte is unreadable: the library
 * then narrows the readable prefix down page by page itself. */
typedef size_t (*ftr_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

struct ftr;

/* A new extraction of `kind` (FORMAT.md 2.4):
 *   "core"     a core file (raw source "core"; give its file: ftr_core_file)
 *   "stopped"  a process that does not run while it is read, e.g. stopped
 *              under a debugger (source "live", read as stable memory; its TSC
 *              at the time of reading is estimated from the newest generation)
 *   "live"     a running process (source "live"; each ring's write position is
 *              re-read after copying it and what may have been overwritten
 *              meanwhile is dropped, COPY_RACED)
 * NULL if kind is unknown, read is NULL or memory is short. */
FTR_API struct ftr *ftr_new(const char *kind, ftr_read_fn read, void *ctx);
FTR_API void ftr_free(struct ftr *h);

/* The last error (or problem) as one line; "" if none. */
FTR_API const char *ftr_message(const struct ftr *h);

/* "core": the core file the memory comes from.  Only the memory the file
 * holds counts (pages the kernel did not dump, or that a truncated core lacks,
 * are missing -- whatever the read function says about them); the file's
 * notes give the threads (their order), the signal and the file mappings
 * (NT_FILE, build-ids read through the read function, else from the files on
 * disk).  FTR_OK, or FTR_BADINPUT (not a core file, unreadable). */
FTR_API int ftr_core_file(struct ftr *h, const char *path);

/* "stopped" / "live": the process's /proc/PID/maps text (len bytes; it
 * need not be NUL-terminated): the file mappings and the writable memory the
 * root scan searches.  FTR_OK. */
FTR_API int ftr_proc_maps(struct ftr *h, const char *text, size_t len);

/* "stopped" / "live": the process runs on this machine as pid (not behind a
 * remote debugger connection, whose pids are another machine's): the ring
 * pages it never wrote (/proc/PID/pagemap: neither present nor swapped out)
 * are taken as zeros instead of being read through the read function, which
 * would fault them in -- turning an untouched ring into memory of the
 * process's (reader/procmem.h).  Without access to pagemap, nothing changes.
 * FTR_OK, or FTR_BADINPUT (a core, pid <= 0). */
FTR_API int ftr_local_pid(struct ftr *h, int pid);

/* "stopped" / "live": the signal the process stopped with, if it is one of
 * its own (a crash, a kill; not the debugger's stop), received by thread tid.
 * fault_addr (si_addr) is kept for SIGSEGV/SIGBUS/SIGFPE/SIGILL with
 * code > 0, sender_pid (si_pid) for code <= 0, as a core's NT_SIGINFO is
 * (FORMAT.md 2.2 SIGINFO).  signo 0: none. */
FTR_API void ftr_signal(struct ftr *h, int signo, int code, int err, uint32_t tid, uint64_t fault_addr,
                        uint32_t sender_pid);

/* Find the root: at symbol_addr (the address of the ftr_root_symbol() symbol,
 * 0 if unknown), else by scanning the writable memory (the core's, or
 * ftr_proc_maps') for the root magic.  FTR_OK, or FTR_NOTRACE with the reason
 * in ftr_message: "no funtrace runtime in this process", "funtrace runtime not
 * initialized in this process (...)", "no valid funtrace root (...)". */
FTR_API int ftr_find_root(struct ftr *h, uint64_t symbol_addr);
FTR_API const char *ftr_root_symbol(void);

/* A final stack (FINSTACK): thread tid's registers (ftr_stack_regs() names
 * them, in order) and its pcs, innermost first, as `unwinder` ("gdb",
 * "libunwind" or "ptrace") found them; truncated: unwinding stopped early.
 * Of more than ftr_stack_max() frames the innermost and outermost ones are
 * kept and the count of the ones between is recorded (FT_STKF_CUT).  Stacks
 * are written in the core's thread order (else in the order they were added);
 * the thread that got the signal is flagged crashed.  FTR_OK, FTR_BADINPUT. */
FTR_API int ftr_add_stack(struct ftr *h, const char *unwinder, uint32_t tid, int truncated,
                          const uint64_t *regs, const uint64_t *pcs, uint32_t n);
/* the register names of regs[], space-separated (gdb's names, the order of
 * the kernel's struct user_regs_struct) */
FTR_API const char *ftr_stack_regs(void);
FTR_API unsigned ftr_stack_max(void);

/* Write the raw trace (FORMAT.md section 2) to path: through path.tmp.PID,
 * renamed when complete, removed on failure.  FTR_OK, FTR_PARTIAL (written;
 * ftr_report says what is missing), FTR_WRITE (nothing left behind; message
 * says why), FTR_NOTRACE (no root found yet). */
FTR_API int ftr_write(struct ftr *h, const char *path);

/* After ftr_write: what was written, one line each (no trailing newline):
 *   wrote PATH: N threads, M events, G generations, B bytes
 *   from core CORE, pid P, root 0xADDR [(found by scanning memory)]
 *   thread T got SIGNAME [at 0xADDR | sent by pid P]      (when there is a signal)
 *   warning: trace incomplete[, core truncated at S of E bytes]: WHAT   (partial;
 *            the same words coreextract uses)  */
FTR_API const char *ftr_report(struct ftr *h);

#ifdef __cplusplus
}
#endif
#endif
