/*
 * oom_corewrite.h -- write an ELF core of a live process without gdb/gcore.
 *
 * gdb and gcore hang on tasks that are frozen (cgroup.freeze) or parked at a
 * cgroup v1 OOM (oom_kill_disable): they PTRACE_ATTACH and wait for a
 * SIGSTOP that is never delivered.  This writer stops the threads with
 * PTRACE_SEIZE + PTRACE_INTERRUPT (which also stops a v2-frozen task: the
 * interrupt trap takes precedence over the freezer trap), waits with a
 * deadline, reads the registers with PTRACE_GETREGS/GETFPREGS, copies
 * memory from /proc/PID/mem and writes an ELF64 ET_CORE file:
 *
 *   PT_NOTE  NT_PRSTATUS (+ NT_FPREGSET) per thread, the main thread first;
 *            NT_PRPSINFO, NT_AUXV (/proc/PID/auxv), NT_FILE (/proc/PID/maps)
 *   PT_LOAD  one per mapping, p_filesz chosen like the kernel does from
 *            /proc/PID/coredump_filter (default 0x33) and /proc/PID/smaps:
 *            private mappings with anonymous pages and anonymous shared
 *            memory whole, the first page of an ELF file mapping (build-id),
 *            nothing for VM_DONTDUMP/VM_IO ([vvar]) or unreadable mappings;
 *            pages that cannot be read or are all zero are left as holes.
 *
 * A thread that does not reach a ptrace stop before the deadline (a task
 * still parked at an OOM) keeps what /proc/PID/task/TID/syscall shows (stack
 * pointer and pc); it is counted in ftc_stats.nthreads_partial.
 * Not async-signal-safe (malloc, stdio).
 */
#ifndef FUNTRACE_OOM_COREWRITE_H
#define FUNTRACE_OOM_COREWRITE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>

struct ftc_thread {
    int tid;
    int attached;     /* PTRACE_SEIZE succeeded: detach at the end */
    int stopped;      /* reached a ptrace stop: registers exact */
    int regs_partial; /* only sp/pc (from /proc/PID/task/TID/syscall) */
    int pending_sig;  /* stopped at a signal delivery: re-injected at detach */
    int have_fp;
    struct user_regs_struct regs;
    struct user_fpregs_struct fpregs;
};

struct ftc_proc {
    int pid;
    size_t n, cap;
    struct ftc_thread *t;
};

struct ftc_stats {
    unsigned nthreads;
    unsigned nthreads_partial;
    unsigned nloads;        /* PT_LOAD segments */
    uint64_t bytes_file;    /* core file size */
    uint64_t bytes_data;    /* bytes of memory written (holes excluded) */
    uint64_t pages_unreadable;
};

/* Seize and stop every thread of pid (re-listing /proc/PID/task until no new
 * thread appears).  Returns 0 if every thread stopped, 1 if some did not
 * (their registers are partial), -1 on failure (err says why; nothing left
 * attached). */
int ftc_attach(int pid, int timeout_ms, struct ftc_proc *p, char *err, size_t errlen);
/* ftc_attach in two steps: ftc_seize seizes and interrupts every thread
 * without waiting (0 / -1); ftc_stop waits for the stops (same returns as
 * ftc_attach; on -1 p is released).  Between the two, the caller can wake
 * tasks that cannot stop yet (raise the limit of an OOM-parked cgroup): they
 * then stop before running any user code. */
int ftc_seize(int pid, struct ftc_proc *p, char *err, size_t errlen);
int ftc_stop(struct ftc_proc *p, int timeout_ms, char *err, size_t errlen);

/* Write the core to fd (a regular file, written with pwrite from offset 0
 * and truncated to its final size).  max_file: refuse (before writing
 * anything) if the file would be larger (0: no limit).  0, or -1 with err
 * set. */
int ftc_write(const struct ftc_proc *p, int fd, uint64_t max_file, struct ftc_stats *st, char *err,
              size_t errlen);

/* Detach from every thread (they resume, or return to the freezer) and free p.
 * A thread that never reached its stop cannot be detached: it stays traced
 * (and would stop later) until the tracer exits, when the kernel detaches
 * it.  Run attach/write/detach in a short-lived child process (as
 * funtrace-oomwatch does) so that its exit releases every thread. */
void ftc_detach(struct ftc_proc *p);

#endif
