/* ehframe.h -- the lookup table of an .eh_frame that has no .eh_frame_hdr.
 *
 * A program linked -static by gcc has .eh_frame but no .eh_frame_hdr
 * (gcc passes --eh-frame-hdr only to dynamic links; its static unwinder
 * registers the frames itself), and libunwind finds FDEs only through the
 * hdr's binary-search table.  eh_frame_index builds that table from the
 * section itself, in the hdr's layout, so that the unwinder searches it
 * the same way.  (The section itself: elf_section_in_file, elfinfo.h.) */
#ifndef FT_EHFRAME_H
#define FT_EHFRAME_H

#include <stddef.h>
#include <stdint.h>

/* one entry of the table, as .eh_frame_hdr's (datarel sdata4 pairs):
 * relative to the section's address */
struct eh_entry {
    int32_t start;                 /* the FDE's initial location */
    int32_t fde;                   /* the FDE's offset */
};

/* The entries of the section sec[0..len) at address addr, sorted by start
 * (malloc'ed, *out; NULL if none): their number.  FDEs whose location
 * cannot be read (an encoding other than absolute or pc-relative, a
 * discarded function at 0, a record that runs past the section) are left
 * out; a malformed record ends the walk. */
size_t eh_frame_index(const uint8_t *sec, uint64_t len, uint64_t addr, struct eh_entry **out);

#endif
