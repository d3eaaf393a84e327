/*
 * slice.h -- one call as the replay hands it to the views: a function, its
 * depth in the thread's stack, when it ran, and what is unusual about it.
 */
#ifndef FT_DECODER_SLICE_H
#define FT_DECODER_SLICE_H

#include <stdint.h>

/* slice flags */
#define SL_FROM_PREV   0x001u /* began in an earlier generation (clipped) */
#define SL_TO_NEXT     0x002u /* goes on in the next generation (clipped) */
#define SL_OPEN        0x004u /* still open at the end of the trace */
#define SL_ABANDONED   0x008u /* its return is missing (longjmp, tail call, ...) */
#define SL_UNWOUND     0x010u /* unwound by a C++ exception (popped by a catch) */
#define SL_START_UNK   0x020u /* open when the ring starts: began earlier */
#define SL_UNMEASURED  0x040u /* sampled mode: an end point was interpolated */
#define SL_PENDING     0x080u /* end not known yet */
#define SL_BOUND       0x100u /* sampled mode: an end point lies in a loose bracket:
                                 the duration is at most ub (ringevents.c) */
#define SL_CUT_START   0x200u /* started before --since: clipped to it (filter.c) */
#define SL_CUT_END     0x400u /* went on past --until: clipped to it (filter.c) */
#define SL_SUSPENDED   0x800u /* ends where its context was switched away from
                                 (swapcontext): the call goes on when it is resumed;
                                 VIEW_CALLS: open at the end in a suspended context */
#define SL_RESUMED     0x1000u /* starts where its context was resumed */
#define SL_WAS_SUSP    0x2000u /* a piece of a call that was suspended before it
                                 (cdur: the whole call, suspensions included) */
#define SL_MOVED       0x4000u /* with SL_SUSPENDED at the end: its context was resumed
                                 by another thread later (a fiber that moved) */
#define SL_JUMPED      0x8000u /* with SL_ABANDONED: left by a longjmp whose setjmp the
                                 ring holds (it ends at the jump) */

struct slice {
    uint32_t func;       /* symtab function id */
    uint16_t flags;      /* SL_* */
    uint16_t depth;      /* 0 = outermost frame (saturates at 65535) */
    int64_t start, end;  /* ns (see replay.h for which clock) */
    /* (the views read the slices once each: what only a few slices need is
       not here but in the thread's side arrays, by slice (decstate.h) --
       SL_BOUND's upper bound in slice_ub, SL_OWN_CDUR's call duration in
       slice_cdur: 24 bytes a slice) */
};

/* the slices whose call lasted other than end - start: pieces of a call
 * (clipped at a generation boundary, at a context switch, by --since or
 * --until); their cdur is in the thread's slice_cdur */
#define SL_OWN_CDUR \
    (SL_FROM_PREV | SL_TO_NEXT | SL_SUSPENDED | SL_RESUMED | SL_WAS_SUSP | SL_CUT_START | SL_CUT_END)

/* slice i of s's whole call's duration (a piece's call, over every
 * generation; -1: not known -- a piece going on in the next generation,
 * when the replay was not asked to measure its calls first: replay.h); cd:
 * the batch's slice_cdur */
static inline int64_t slice_cdur(const struct slice *s, const int64_t *cd, size_t i)
{
    return (s[i].flags & SL_OWN_CDUR) && cd ? cd[i] : s[i].end - s[i].start;
}

#endif
