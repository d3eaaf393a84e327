/*
 * unwind.h -- unwind a thread of a core or of a stopped live thread with
 * libunwind's remote unwinder, over our own accessors: target memory first
 * (core segments / process_vm_readv), then the mapped files on disk (text and
 * .eh_frame are usually not in a core; maps.c mmaps each file once), unwind
 * tables from each object's .eh_frame_hdr (located through NT_FILE /
 * /proc/PID/maps), registers from NT_PRSTATUS / PTRACE_GETREGS.
 * (libunwind-coredump 1.6's own accessors read backing files at the wrong
 * offset for multi-segment ELF objects.)
 */
#ifndef FT_CE_UNWIND_H
#define FT_CE_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include "funtrace_rawwrite.h"
#include "maps.h"

/* How many frames a stack keeps (FINSTACK): by default the innermost 448 and
 * the outermost 64 of up to CE_WALK_LIMIT frames walked; the frames between
 * are counted, not kept (FT_STKF_CUT).  `coreextract --max-frames N` (and
 * ft_live_opts.max_frames) changes the number kept. */
#define CE_MAX_FRAMES 512
#define CE_MAX_FRAMES_LIMIT (1u << 20)
#define CE_WALK_LIMIT (1u << 20)
/* the outermost frames kept when a stack is cut: 1/8 of the kept ones, at most 64 */
#define CE_KEEP_OUTER(max) ((max) / 8 < 64 ? (max) / 8 : 64)

/* One unwinder per target, for all its threads: libunwind's parsed frame
 * state (by pc) and each object's checked .eh_frame_hdr are kept, so threads
 * stopped in the same code are unwound from the cache. */
struct ce_unwinder;

/* is_exec(exec_ctx, addr): is addr in executable memory of the target?
 * (unwinding stops at the first return address that is not).  Never NULL;
 * if libunwind cannot make an address space, ce_unwind returns only the pc
 * (truncated). */
struct ce_unwinder *ce_unwinder_new(const struct ft_reader *mem, struct ce_maps *maps,
                                    int (*is_exec)(void *ctx, uint64_t addr), void *exec_ctx);
void ce_unwinder_free(struct ce_unwinder *u);

/* What became of a stack walk (ce_unwind). */
struct ce_unwind_info {
    int truncated;     /* the walk stopped before the outermost frame: an
                          error, a frame whose stack pointer does not move up
                          (a repeated or inner frame: a corrupt or looping
                          stack -- the step out of a signal frame may switch
                          stacks and is exempt), or CE_WALK_LIMIT frames */
    uint32_t cut_at;   /* frames were cut: pcs[cut_at..] are the outermost
                          ones, and ncut frames walked before them are not kept */
    uint32_t ncut;
};

/* Unwind one thread from its registers (FT_NREGS, user_regs_struct order)
 * into pcs (innermost first, pcs[0] = rip), keeping at most max (>= 2)
 * frames: when the walk finds more, the innermost max - CE_KEEP_OUTER(max)
 * and the outermost CE_KEEP_OUTER(max) are kept and the count of the others
 * is in info->ncut.  Returns the number of pcs kept. */
size_t ce_unwind(struct ce_unwinder *u, const uint64_t regs[FT_NREGS], uint64_t *pcs, size_t max,
                 struct ce_unwind_info *info);

/* FINSTACK flags for a walk: TRUNCATED, CUT */
uint32_t ce_unwind_flags(const struct ce_unwind_info *info);

/* write one FINSTACK chunk (info may be NULL: nothing cut) */
int ce_emit_stack(const struct ft_writer *w, struct ft_emit_stats *st, uint32_t tid,
                  uint32_t unwinder, uint32_t flags, const uint64_t regs[FT_NREGS],
                  const uint64_t *pcs, uint32_t n, const struct ce_unwind_info *info);

#endif
