/*
 * procmem.h -- reading a live process's memory without populating it.
 *
 * Reading a page of another process (process_vm_readv, /proc/PID/mem)
 * faults it in: a private anonymous page that was never written becomes a
 * real page of the target's, charged to its memory cgroup (seen on Linux
 * 6.18: 64 MiB of untouched mapping read = 64 MiB more RSS), and a task
 * parked at its cgroup's memory limit cannot get it at all (the read fails
 * there).  A funtrace ring is mostly untouched until it wraps, so a reader
 * would inflate the very process it inspects, or fail at an OOM halt.
 *
 * /proc/PID/pagemap tells which pages exist: in a private anonymous mapping
 * a page that is neither present nor swapped out was never written (or was
 * given back, MADV_DONTNEED): it reads as zeros, so it is filled with zeros
 * here and the target is not touched.  Everything else is read as before.
 * Without access to pagemap every page is read (the old behaviour).
 */
#ifndef FT_READER_PROCMEM_H
#define FT_READER_PROCMEM_H

#include <stddef.h>
#include <stdint.h>

struct procmem {
    int pid;
    int pagemap_fd;        /* -1: unavailable, every page is read */
    int mem_fd;            /* /proc/PID/mem if given, else -1: process_vm_readv */
    /* optional: how the pages that exist are read (e.g. through gdb), like
     * process_vm_readv (the bytes read from addr on); NULL: mem_fd or
     * process_vm_readv */
    size_t (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
    void *read_ctx;
    uint64_t zero_pages;   /* pages filled with zeros without reading them */
};

/* open /proc/PID/pagemap (a failure is not an error: pages are then read);
 * mem_fd: an open /proc/PID/mem to read through, or -1 for process_vm_readv */
void procmem_open(struct procmem *pm, int pid, int mem_fd);
/* the same with a pagemap fd opened by the caller (-1: none); async-signal-
 * safe, as procmem_read and procmem_close are (the runtime's snapshots) */
void procmem_init(struct procmem *pm, int pid, int pagemap_fd, int mem_fd);
/* closes the pagemap fd (not mem_fd) */
void procmem_close(struct procmem *pm);

/* Read [addr, addr + len) of the target into buf, like process_vm_readv:
 * the bytes read from addr on until the first unreadable page (or len).
 * private_anon: the range lies in private anonymous mappings (inode 0, not
 * shared: "", [heap], [stack], [anon:...]), where untouched pages are
 * zero-filled instead of read. */
size_t procmem_read(struct procmem *pm, uint64_t addr, void *buf, size_t len, int private_anon);

/* a /proc/PID/maps line's mapping (maps_parse_line) is private anonymous */
int procmem_is_private_anon(uint64_t inode, int shared, const char *path);

#endif
