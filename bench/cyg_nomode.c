/* cyg_nomode.c -- bench control (not a hook of the product): the runtime's
 * -finstrument-functions hooks, runtime/hooks_cyg.c compiled as they are but
 * with the mode test compiled out (ft_hook_mode = FT_MODE_EXACT), linked with
 * the rest of the runtime instead of hooks_cyg.o.  bench/run compares the
 * exact mode of this build with the runtime's to show what the mode test
 * costs the exact path. */
#include "ft_internal.h"
#undef ft_hook_mode
#define ft_hook_mode FT_MODE_EXACT
#include "hooks_cyg.c"
