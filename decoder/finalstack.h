/*
 * finalstack.h -- a thread's final stack for the text view (finalstack.c).
 */
#ifndef FT_DECODER_FINALSTACK_H
#define FT_DECODER_FINALSTACK_H

#include "decstate.h"
#include "outbuf.h"

/* "  final stack (UNWINDER, N frames):" and its frames, symbolized in the
 * newest generation's address space */
void final_stack_print(struct dec *d, const struct ftr_stack *fs, struct outbuf *o);

#endif
