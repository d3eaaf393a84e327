/* slimcore.c -- a core of what was kept (see slimcore.h) */
#include "slimcore.h"
#include "elfinfo.h"
#include "util.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAGE 4096u

static int pw(int fd, const void *p, uint64_t n, uint64_t off)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = pwrite(fd, b, n > (1u << 30) ? (1u << 30) : (size_t)n, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        b += w;
        n -= (uint64_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

static int write_all(int fd, const struct core *c)
{
    uint64_t nph = 1 + c->nsegs, notes = 0;
    for (size_t i = 0; i < c->nnotes; i++) notes += c->notes[i].n;
    Elf64_Ehdr eh;
    int xnum = elf_core_ehdr(&eh, nph);
    uint64_t off = sizeof eh + nph * sizeof(Elf64_Phdr);
    Elf64_Phdr ph;
    memset(&ph, 0, sizeof ph);
    ph.p_type = PT_NOTE;
    ph.p_offset = off;
    ph.p_filesz = notes;
    ph.p_align = 4;
    if (pw(fd, &ph, sizeof ph, sizeof eh)) return -1;
    uint64_t noff = off;
    for (size_t i = 0; i < c->nnotes; i++) {
        if (pw(fd, c->notes[i].p, c->notes[i].n, noff)) return -1;
        noff += c->notes[i].n;
    }
    off = (noff + PAGE - 1) & ~(uint64_t)(PAGE - 1);
    for (size_t i = 0; i < c->nsegs; i++) {
        const struct core_seg *s = &c->segs[i];
        uint64_t keep = s->kind == CORE_DROPPED ? 0 : s->avail;
        off += (s->vaddr - off) & (PAGE - 1); /* p_offset = p_vaddr modulo the page size */
        memset(&ph, 0, sizeof ph);
        ph.p_type = PT_LOAD;
        ph.p_flags = s->flags;
        ph.p_offset = off;
        ph.p_vaddr = s->vaddr;
        ph.p_memsz = s->memsz;
        ph.p_filesz = keep;
        ph.p_align = PAGE;
        if (pw(fd, &ph, sizeof ph, sizeof eh + (1 + i) * sizeof ph)) return -1;
        if (s->kind == CORE_BYTES && keep && pw(fd, s->data, keep, off)) return -1;
        off += keep; /* CORE_ZERO: a hole */
    }
    if (xnum) {
        Elf64_Shdr sh;
        elf_core_xnum(&eh, &sh, nph, off);
        if (pw(fd, &sh, sizeof sh, off)) return -1;
        off += sizeof sh;
    }
    if (pw(fd, &eh, sizeof eh, 0)) return -1;
    return ftruncate(fd, (off_t)off);
}

int core_write_slim(const struct core *c, const char *path, char *err, size_t errlen)
{
    if (c->nsegs + 1 >= UINT32_MAX) { /* sh_info is 32 bits */
        snprintf(err, errlen, "cannot write %s: too many pieces of memory", path);
        return -1;
    }
    size_t n = strlen(path) + 8;
    char *tmp = ce_xmalloc(n);
    snprintf(tmp, n, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int rc = -1;
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
    } else if (write_all(fd, c) != 0 || fsync(fd) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
    } else if (close(fd) != 0) {
        fd = -1;
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
    } else {
        fd = -1;
        if (rename(tmp, path) != 0) snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        else rc = 0;
    }
    if (fd >= 0) close(fd);
    if (rc) unlink(tmp);
    free(tmp);
    return rc;
}
