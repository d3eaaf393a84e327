/*
 * symwarm.h -- a second thread that loads the debug information of some
 * modules while the decoder reads the rings.
 *
 * Loading a module's DWARF is libdw inflating its compressed debug sections:
 * ~40 ms for the C library's (libc6-dbg), which every final stack ending in
 * abort() or a blocking call needs, whatever the raw's size.  The thread
 * loads the DWARF, the symbol table, and the compile unit and line table of
 * each given address; the decoder's own thread meanwhile reads the rings.
 *
 * Each module (one Dwfl of its own: see symtab.h) has a claim word.  Before
 * the decoder's thread touches a module it calls sw_claim: a module the
 * warming thread has not started is taken back (the warming thread skips
 * it), a module it is working on is waited for.  libdw needs no more: the
 * two threads never use one Dwfl at the same time.
 */
#ifndef FT_DECODER_SYMWARM_H
#define FT_DECODER_SYMWARM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <elfutils/libdwfl.h>

struct sw_item {
    atomic_int *claim;  /* the module's claim word: 0 when no warming concerns it */
    Dwfl_Module *mod;
    uint64_t vaddr;     /* an address in the module (its file's vaddr) */
};

struct symwarm;
/* warms the modules of items[0..n) (grouped by module, in the order given)
 * on a new thread; NULL if there is nothing to do or no thread could be
 * made (then nothing is claimed).  The items are copied. */
struct symwarm *sw_start(const struct sw_item *items, size_t n);
/* before using the module of claim word *claim (any thread but the warming
 * one); cheap once the module is settled */
void sw_claim(struct symwarm *w, atomic_int *claim);
/* waits for the thread and frees w (NULL: nothing) */
void sw_end(struct symwarm *w);

#endif
