/*
 * finalstack.c -- a thread's final stack as the text view prints it: one
 * frame per line with its inlined callers, runs of frames at one return
 * address and mutual recursions folded.
 */
#include <stdio.h>

#include "finalstack.h"

/* A recursion in a final stack: the frames from k on that repeat a cycle of
 * *period (1..4) frames (a run at one address, a mutual recursion a -> b ->
 * a ...).  Returns the end of the repeating part (k + *period at least); the
 * longest wins, ties go to the shortest period. */
static uint32_t cycle(const uint64_t *pcs, uint32_t n, uint32_t k, uint32_t *period)
{
    uint32_t best = k + 1;
    *period = 1;
    for (uint32_t p = 1; p <= 4 && k + p <= n; p++) {
        uint32_t e = k + p;
        while (e < n && pcs[e] == pcs[e - p])
            e++;
        if (e - k >= 3 * p && e > best) {
            best = e;
            *period = p;
        }
    }
    return best;
}

void final_stack_print(struct dec *d, const struct ftr_stack *fs, struct outbuf *o)
{
    static const char *unw[] = {"?", "libunwind", "gdb", "ptrace"};
    ob_printf(o, "  final stack (%s, %u frames%s):\n", fs->h.unwinder < 4 ? unw[fs->h.unwinder] : "?",
              fs->npcs, fs->h.flags & FT_STKF_TRUNCATED ? ", truncated" : "");
    int space = d->gens[d->ngens - 1].space;
    for (uint32_t k = 0; k < fs->npcs; k++) {
        uint32_t p, e = cycle(fs->pcs, fs->npcs, k, &p);
        ob_printf(o, "    #%-3u 0x%016llx  ", k, (unsigned long long)fs->pcs[k]);
        sym_describe_pc(d->sym, space, fs->pcs[k], k > 0, o, "                              ");
        if (p == 1 && e - k > 2) {
            ob_printf(o, "    ... #%u..#%u: %u more frames at the same address ...\n", k + 1, e - 1, e - k - 1);
            k = e - 1;
        } else if (p > 1 && e - k >= 3 * p) {
            for (uint32_t j = k + 1; j < k + p; j++) { /* the first cycle in full */
                ob_printf(o, "    #%-3u 0x%016llx  ", j, (unsigned long long)fs->pcs[j]);
                sym_describe_pc(d->sym, space, fs->pcs[j], 1, o, "                              ");
            }
            ob_printf(o, "    ... #%u..#%u: %u more frames repeating ", k + p, e - 1, e - k - p);
            for (uint32_t j = k; j < k + p; j++) {
                uint64_t pc = fs->pcs[j];
                if (j > k)
                    ob_str(o, " <- ");
                ob_text(o, sym_func(d->sym, sym_lookup(d->sym, space, j && pc ? pc - 1 : pc))->name);
            }
            ob_str(o, " ...\n");
            k = e - 1;
        }
    }
}
