/*
 * viewtee.h -- one view that hands what it gets to several views of one
 * kind (viewtee.c): the replay drives one view, the pipeline attaches many.
 */
#ifndef FT_DECODER_VIEWTEE_H
#define FT_DECODER_VIEWTEE_H

#include <stddef.h>
#include "view.h"

/* a tee over v[0..n) (all of kind `kind`; the tee does not own them) */
struct view *view_tee_new(int kind, struct view *const *v, size_t n);

#endif
