/*
 * pltname.h -- the function a PLT entry jumps to, as gdb names such an
 * entry (name@plt): for a pc caught inside one (a thread stopped between a
 * call and the function it calls).
 */
#ifndef FT_DECODER_PLTNAME_H
#define FT_DECODER_PLTNAME_H

#include <gelf.h>
#include <stdint.h>

/* if vaddr (an address of elf's, bias added: the module's) lies in an entry
 * of .plt, .plt.sec or .plt.got that jumps through a GOT slot with a
 * JUMP_SLOT or GLOB_DAT relocation: the symbol of that relocation (elf's
 * string: not to be freed) and *entry, the entry's address; else NULL */
const char *plt_target(Elf *elf, GElf_Addr bias, uint64_t vaddr, uint64_t *entry);

#endif
