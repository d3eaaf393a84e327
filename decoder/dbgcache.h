/*
 * dbgcache.h -- inflated debug files kept on disk between decodes.
 *
 * Inflating the C library's compressed debug file (dbginflate.c) is most of
 * a small decode's time (~60 ms of ~85).  Each inflated copy is kept as a
 * file in the cache directory:
 *   $FUNTRACE_CACHE_DIR/debug (empty: no cache), else
 *   $XDG_CACHE_HOME/funtrace/debug, else $HOME/.cache/funtrace/debug,
 * named by the build-id and by the compressed file's identity (device,
 * inode, size, modification time), so that a replaced or another copy of a
 * debug file is never answered by an older one's.  An entry is written to an
 * unnamed file (O_TMPFILE), synced and linked into place: complete or
 * absent, and nothing is left by a decoder killed meanwhile (where the file
 * system has no O_TMPFILE: a named temporary file, renamed; one left by a
 * killed decoder is removed by the next entry's writer once an hour old, and
 * so is an entry not used for 30 days: a use brings its time up to date).  One
 * whose size or section headers are not the ones the compressed file gives
 * is not used (and is replaced).  Anything that fails leaves the decode as
 * it was without the cache (an inflated copy in memory).  The directory can
 * be deleted at any time.
 */
#ifndef FT_DECODER_DBGCACHE_H
#define FT_DECODER_DBGCACHE_H

#include <elf.h>
#include <stddef.h>
#include <sys/stat.h>

/* the cache entry's path for the debug file src (fstat) with build-id
 * bid_hex (malloc'd); NULL when there is no cache directory */
char *dbg_cache_path(const struct stat *src, const char *bid_hex);

/* the entry at path, open, if it is total bytes long and has the section
 * header table sh[0..shnum) at shoff; else -1 */
int dbg_cache_open(const char *path, size_t total, const Elf64_Shdr *sh, size_t shnum, size_t shoff);

/* a new temporary file in path's directory (made), open for writing;
 * *tmp: NULL (unnamed), or its name (malloc'd).  -1 when it cannot be made */
int dbg_cache_create(const char *path, char **tmp);

/* fd, written in full: synced and linked (unnamed) or renamed from tmp to
 * path (0); on failure tmp is removed (-1: fd is still the inflated file,
 * unnamed).  Frees tmp */
int dbg_cache_publish(int fd, char *tmp, const char *path);

/* give up the temporary file tmp (removed, freed) */
void dbg_cache_discard(char *tmp);

#endif
