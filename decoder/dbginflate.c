/*
 * dbginflate.c -- see dbginflate.h
 */
#define _GNU_SOURCE
#include "dbginflate.h"
#include "dbgcache.h"
#include "elfinfo.h" /* the reader's note parser */

#include <elf.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <libdeflate.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return a > 1 ? (v + a - 1) / a * a : v;
}

/* the new layout: the file's bytes, each inflated section, the section
 * header table; 0 if there is nothing to inflate or the file is not one we
 * read */
static size_t plan(const unsigned char *p, size_t size, Elf64_Shdr *sh, size_t *shoff)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
    size_t end = size, n = eh->e_shnum, ninfl = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(sh[i].sh_flags & SHF_COMPRESSED) || sh[i].sh_type == SHT_NOBITS)
            continue;
        if (sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset || sh[i].sh_size < sizeof(Elf64_Chdr))
            return 0;
        Elf64_Chdr ch;
        memcpy(&ch, p + sh[i].sh_offset, sizeof ch);
        if (ch.ch_type != ELFCOMPRESS_ZLIB || ch.ch_size > (1ull << 32))
            continue; /* zstd, or absurd: libdw's business */
        end = align_up(end, ch.ch_addralign);
        sh[i].sh_offset = end;
        sh[i].sh_size = ch.ch_size;
        sh[i].sh_addralign = ch.ch_addralign;
        sh[i].sh_flags &= ~(uint64_t)SHF_COMPRESSED;
        end += ch.ch_size;
        ninfl++;
    }
    if (!ninfl)
        return 0;
    *shoff = align_up(end, 8);
    return *shoff + n * sizeof *sh;
}

/* the file's GNU build-id note (in its SHT_NOTE sections: a debug file's
 * program headers may not point at them) equals bid[0..len) */
static int build_id_is(const unsigned char *p, size_t size, const Elf64_Shdr *sh, size_t n,
                       const unsigned char *bid, size_t len)
{
    uint8_t got[FT_BUILD_ID_MAX];
    for (size_t i = 0; i < n; i++) {
        if (sh[i].sh_type != SHT_NOTE || sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset)
            continue;
        uint32_t gl = elf_build_id_in_notes(p + sh[i].sh_offset, sh[i].sh_size, got);
        if (gl)
            return gl == len && !memcmp(got, bid, len);
    }
    return 0;
}

/* the longest build-id looked up (a raw's hold up to FT_BUILD_ID_MAX bytes;
 * libdwfl gives a file's own, of any length: SHA-1's 20 in practice) */
#define DBG_BID_MAX 64

/* bid[0..n) in hex (the debug directory's and the cache's names); 0 when n
 * is not 2..DBG_BID_MAX */
static int bid_hex(const unsigned char *bid, size_t n, char hex[2 * DBG_BID_MAX + 1])
{
    if (n < 2 || n > DBG_BID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        sprintf(hex + 2 * i, "%02x", bid[i]);
    return 1;
}

int dbg_inflated_fd(int fd, const unsigned char *bid, size_t bidlen)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(Elf64_Ehdr))
        return -1;
    size_t size = (size_t)st.st_size;
    const unsigned char *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        return -1;
    int out = -1;
    char *cpath = NULL, *tmp = NULL;
    Elf64_Shdr *sh = NULL, *osh;
    unsigned char *q = MAP_FAILED;
    size_t total = 0, shoff = 0;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_shentsize != sizeof(Elf64_Shdr) || !eh->e_shnum ||
        eh->e_shoff > size || (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum)
        goto done;
    osh = (Elf64_Shdr *)(p + eh->e_shoff);
    if (!(sh = malloc(eh->e_shnum * sizeof *sh)))
        goto done;
    memcpy(sh, osh, eh->e_shnum * sizeof *sh);
    if (bid && !build_id_is(p, size, sh, eh->e_shnum, bid, bidlen))
        goto done;
    if (!(total = plan(p, size, sh, &shoff)))
        goto done;
    /* inflated before (dbgcache.h), or inflated into a new cache entry, or
     * else into memory */
    char hex[2 * DBG_BID_MAX + 1];
    cpath = bid && bid_hex(bid, bidlen, hex) ? dbg_cache_path(&st, hex) : NULL;
    if (cpath && (out = dbg_cache_open(cpath, total, sh, eh->e_shnum, shoff)) >= 0)
        goto done;
    /* (its blocks allocated first: a write through the mapping into a full
     * file system, or past a memory limit, would be a SIGBUS) */
    int entry = 0; /* out is a new cache entry's file */
    if (cpath)
        entry = (out = dbg_cache_create(cpath, &tmp)) >= 0;
    if (entry && fallocate(out, 0, 0, (off_t)total) != 0) {
        close(out);
        out = -1;
        entry = 0;
        dbg_cache_discard(tmp);
        tmp = NULL;
    }
    if (out < 0 && (out = memfd_create("funtrace-debuginfo", MFD_CLOEXEC)) >= 0 &&
        fallocate(out, 0, 0, (off_t)total) != 0)
        goto fail;
    if (out < 0)
        goto fail;
    q = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, out, 0);
    if (q == MAP_FAILED)
        goto fail;
    /* the file's header, program headers and other sections (the inflated
     * sections' compressed bytes are left out: a hole, never touched) */
    memcpy(q, p, sizeof *eh);
    if (eh->e_phoff < size && (uint64_t)eh->e_phnum * eh->e_phentsize <= size - eh->e_phoff)
        memcpy(q + eh->e_phoff, p + eh->e_phoff, (size_t)eh->e_phnum * eh->e_phentsize);
    for (size_t i = 0; i < eh->e_shnum; i++)
        if (sh[i].sh_flags == osh[i].sh_flags && sh[i].sh_type != SHT_NOBITS && osh[i].sh_offset <= size &&
            osh[i].sh_size <= size - osh[i].sh_offset)
            memcpy(q + osh[i].sh_offset, p + osh[i].sh_offset, osh[i].sh_size);
    struct libdeflate_decompressor *dd = libdeflate_alloc_decompressor();
    if (!dd)
        goto fail;
    for (size_t i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_flags == osh[i].sh_flags)
            continue; /* not inflated */
        size_t got = 0;
        const unsigned char *z = p + osh[i].sh_offset + sizeof(Elf64_Chdr);
        if (libdeflate_zlib_decompress(dd, z, osh[i].sh_size - sizeof(Elf64_Chdr), q + sh[i].sh_offset,
                                       sh[i].sh_size, &got) != LIBDEFLATE_SUCCESS ||
            got != sh[i].sh_size) {
            libdeflate_free_decompressor(dd);
            goto fail;
        }
    }
    libdeflate_free_decompressor(dd);
    memcpy(q + shoff, sh, eh->e_shnum * sizeof *sh);
    ((Elf64_Ehdr *)q)->e_shoff = shoff;
    if (entry) {
        munmap(q, total);
        q = MAP_FAILED;
        dbg_cache_publish(out, tmp, cpath); /* (failed: out is the inflated file still) */
        tmp = NULL;
    }
    goto done;
fail:
    if (out >= 0)
        close(out);
    out = -1;
done:
    dbg_cache_discard(tmp);
    free(cpath);
    if (q != MAP_FAILED)
        munmap(q, total);
    free(sh);
    munmap((void *)p, size);
    return out;
}

static const char *debug_dir = "/usr/lib/debug";

void dbg_set_debug_dir(const char *dir)
{
    debug_dir = dir && *dir ? dir : "/usr/lib/debug";
}

char *dbg_build_id_path(const unsigned char *bid, size_t n)
{
    char hex[2 * DBG_BID_MAX + 1];
    if (!bid_hex(bid, n, hex))
        return NULL;
    char *p;
    if (asprintf(&p, "%s/.build-id/%.2s/%s.debug", debug_dir, hex, hex + 2) < 0)
        return NULL;
    return p;
}

int dbg_find_debuginfo_inflated(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                                const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                                char **debuginfo_file_name)
{
    /* the build-id's file in the debug directory, as libdwfl looks it up
     * first (libdwfl would open it itself, compressed: it is not asked) */
    const unsigned char *bid;
    GElf_Addr vaddr;
    int n = dwfl_module_build_id(mod, &bid, &vaddr);
    char *path = n > 0 ? dbg_build_id_path(bid, (size_t)n) : NULL;
    if (path) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            int m = dbg_inflated_fd(fd, bid, (size_t)n);
            close(fd);
            if (m >= 0) {
                *debuginfo_file_name = path;
                return m;
            }
        }
        free(path);
    }
    return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                        debuginfo_file_name);
}
