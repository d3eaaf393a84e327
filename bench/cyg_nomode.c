/* cyg_nomode.c -- bench control (not a hook of the product): the runtime's
 * -finstrument-functions hooks, runtime/hooks_cyg.c compiled as they are but
 * with the sampled-mode test compiled out (ft_sampled_mode = 0), linked with
 * the rest of the runtime instead of hooks_cyg.o.  bench/run compares the
 * exact mode of this build with the runtime's to show what the mode test
 * costs the exact path. */
#include "ft_internal.h"
#undef ft_sampled_mode
#define ft_sampled_mode 0
#include "hooks_cyg.c"
