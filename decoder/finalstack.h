/*
 * finalstack.h -- a thread's final stack (FINSTACK) as gdb's `bt` shows it:
 * every machine frame with its inlined callers, innermost first; the frame
 * a signal interrupted resolved at its pc (not pc - 1); the signal
 * trampoline as "<signal handler called>"; frames the unwinder left out
 * (FT_STKF_CUT) and an unwinding that stopped early (FT_STKF_TRUNCATED) as
 * markers.  Used by the --text view and by the replay (replay.c), so the
 * timeline's enclosing frames and the printed stack agree.
 */
#ifndef FT_DECODER_FINALSTACK_H
#define FT_DECODER_FINALSTACK_H

#include "decstate.h"
#include "outbuf.h"

#define FSF_INLINED 0x1u  /* inlined into the next frame out (same machine frame) */
#define FSF_SIGTRAMP 0x2u /* the signal trampoline: "<signal handler called>" */
#define FSF_CUT 0x4u      /* marker: ncut machine frames left out here */
#define FSF_OUTER 0x8u    /* marker: unwinding stopped here, outer frames unknown */
#define FSF_EXACT 0x10u   /* looked up at pc itself (frame 0, or interrupted by a signal) */
#define FSF_TAILCALL 0x20u /* not on the machine stack: it tail-called the frame inside it
                              (from the debug info's call sites, as gdb shows it) */

struct fs_frame {
    uint32_t phys;      /* index in the FINSTACK pcs */
    uint64_t pc;
    uint32_t func;      /* function id (markers: a special one) */
    const char *file;   /* NULL: no line information */
    int line;
    uint32_t flags;     /* FSF_* */
    uint32_t ncut;      /* FSF_CUT */
};

/* the frames of fs, innermost first (malloc'd into *out, count returned) */
size_t fs_frames(struct dec *d, const struct ftr_stack *fs, struct fs_frame **out);

/* --text: "  final stack (...):" and its frames, cycles of up to FS_MAX_PERIOD
 * frames folded */
#define FS_MAX_PERIOD 16
void final_stack_print(struct dec *d, const struct ftr_stack *fs, struct outbuf *o);

#endif
