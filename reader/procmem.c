/* procmem.c -- reading a live process's memory without populating it (see procmem.h) */
#define _GNU_SOURCE
#include "procmem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define PM_PAGE 4096ull
#define PM_PRESENT (1ull << 63)
#define PM_SWAPPED (1ull << 62)
#define PM_CHUNK 512 /* pages whose pagemap entries are read at once */

/* a page neither present nor swapped out: never written (or given back) */
static int untouched(uint64_t pagemap_entry)
{
    return !(pagemap_entry & (PM_PRESENT | PM_SWAPPED));
}

void procmem_init(struct procmem *pm, int pid, int pagemap_fd, int mem_fd)
{
    memset(pm, 0, sizeof *pm);
    pm->pid = pid;
    pm->pagemap_fd = pagemap_fd;
    pm->mem_fd = mem_fd;
}

void procmem_open(struct procmem *pm, int pid, int mem_fd)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/pagemap", pid);
    procmem_init(pm, pid, open(path, O_RDONLY | O_CLOEXEC), mem_fd);
}

void procmem_close(struct procmem *pm)
{
    if (pm->pagemap_fd >= 0)
        close(pm->pagemap_fd);
    pm->pagemap_fd = -1;
}

int procmem_is_private_anon(uint64_t inode, int shared, const char *path)
{
    if (inode || shared)
        return 0;
    return !path[0] || !strcmp(path, "[heap]") || !strncmp(path, "[stack", 6) || !strncmp(path, "[anon:", 6);
}

/* read [addr, addr + len) from the target as it is (faulting pages in) */
static size_t read_as_is(const struct procmem *pm, uint64_t addr, uint8_t *buf, size_t len)
{
    if (pm->read)
        return pm->read(pm->read_ctx, addr, buf, len);
    size_t done = 0;
    while (done < len) {
        ssize_t r;
        if (pm->mem_fd >= 0) {
            r = pread(pm->mem_fd, buf + done, len - done, (off_t)(addr + done));
        } else {
            struct iovec li = {buf + done, len - done};
            struct iovec ri = {(void *)(uintptr_t)(addr + done), len - done};
            r = process_vm_readv(pm->pid, &li, 1, &ri, 1, 0);
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        done += (size_t)r;
    }
    return done;
}

size_t procmem_read(struct procmem *pm, uint64_t addr, void *buf, size_t len, int private_anon)
{
    uint8_t *out = buf;
    if (!private_anon || pm->pagemap_fd < 0)
        return read_as_is(pm, addr, out, len);
    uint64_t ent[PM_CHUNK];
    size_t done = 0;
    while (done < len) {
        uint64_t a = addr + done, page = a / PM_PAGE;
        uint64_t last = (addr + len - 1) / PM_PAGE;
        size_t np = last - page + 1 < PM_CHUNK ? (size_t)(last - page + 1) : PM_CHUNK;
        ssize_t r = pread(pm->pagemap_fd, ent, np * sizeof *ent, (off_t)(page * sizeof *ent));
        if (r < (ssize_t)sizeof *ent) /* no entries: read as it is */
            return done + read_as_is(pm, a, out + done, len - done);
        np = (size_t)r / sizeof *ent;
        /* runs of pages of one kind: untouched (zeros) or to be read */
        for (size_t i = 0; i < np && done < len;) {
            int zero = untouched(ent[i]);
            size_t j = i + 1;
            while (j < np && untouched(ent[j]) == zero)
                j++;
            uint64_t end = (page + j) * PM_PAGE; /* the run: [addr + done, end) */
            size_t n = end - (addr + done) < len - done ? (size_t)(end - (addr + done)) : len - done;
            if (zero) {
                memset(out + done, 0, n);
                pm->zero_pages += j - i;
            } else {
                size_t got = read_as_is(pm, addr + done, out + done, n);
                if (got < n)
                    return done + got;
            }
            done += n;
            i = j;
        }
    }
    return done;
}
