/*
 * dbginflate.h -- a debug file with its compressed sections inflated, in
 * memory, for libdw.
 *
 * Distribution debug files (libc6-dbg's) keep their DWARF sections
 * zlib-compressed (SHF_COMPRESSED); libdw inflates every one of them with
 * zlib when it opens the file: ~35 ms for the C library's 10 MB.  libdeflate
 * does the same in half the time.  The copy is a memfd holding the file's
 * bytes, then each zlib-compressed section inflated, then a section header
 * table pointing at those: libdwfl opens it as it would the file.
 */
#ifndef FT_DECODER_DBGINFLATE_H
#define FT_DECODER_DBGINFLATE_H

#include <stddef.h>
#include <elfutils/libdwfl.h>

/* the ELF file open at fd with its zlib-compressed sections inflated, as a
 * new descriptor; -1 when it has none, is not a 64-bit little-endian ELF
 * file, does not have build-id bid[0..bidlen) (bid NULL: not checked), or
 * anything fails (use fd as it is: libdw inflates them itself) */
int dbg_inflated_fd(int fd, const unsigned char *bid, size_t bidlen);

/* the debug directory (default /usr/lib/debug; --debug-dir): one per
 * process, set before any lookup; dir is kept, not copied */
void dbg_set_debug_dir(const char *dir);
/* "DIR/.build-id/xx/yyyy.debug" for build-id bid[0..n) (malloc'd; NULL when
 * n is not 2..64) */
char *dbg_build_id_path(const unsigned char *bid, size_t n);

/* a Dwfl_Callbacks.find_debuginfo: the module's build-id file in the debug
 * directory, inflated; else dwfl_standard_find_debuginfo's */
int dbg_find_debuginfo_inflated(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                                const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                                char **debuginfo_file_name);

#endif
