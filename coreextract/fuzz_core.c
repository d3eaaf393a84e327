/*
 * fuzz_core.c -- libFuzzer harness: one input = one core file.  Runs what
 * `coreextract CORE` runs -- core parsing, mappings and build-ids, root search
 * (symbols, then the magic scan), ft_raw_emit, unwinding of every thread --
 * writing the raw to a null sink.  Build: make fuzz-coreextract; seeds:
 * coreextract/fuzz_seeds.sh DIR (small real cores).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "corefile.h"
#include "maps.h"
#include "rootfind.h"
#include "unwind.h"
#include "util.h"

static int null_write(void *ctx, const void *p, size_t n)
{
    (void)ctx; (void)p; (void)n;
    return 0;
}

static int is_exec(void *ctx, uint64_t addr)
{
    const struct core_seg *s = core_seg_at(ctx, addr);
    return s && (s->flags & PF_X);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("core", 0);
    if (fd < 0) return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    struct core c;
    char err[256];
    if (core_open(&c, fd, err, sizeof err) != 0) {
        core_close(&c);
        close(fd);
        return 0;
    }
    struct ft_reader rd = { &c, core_read };
    struct ce_maps maps;
    core_load_maps(&c, &rd, &maps, 64);
    size_t nwr;
    struct root_range *wr = core_writable_ranges(&c, &nwr);
    struct root_search rs;
    memset(&rs, 0, sizeof rs);
    rs.rd = &rd;
    rs.maps = &maps;
    rs.writable = wr;
    rs.nwritable = nwr;
    struct root_found rf;
    struct ft_writer w = { NULL, null_write };
    struct ft_emit_stats st;
    memset(&st, 0, sizeof st);
    if (root_find(&rs, &rf) == 0) {
        struct ft_source_info si;
        memset(&si, 0, sizeof si);
        si.source = FT_SRC_CORE;
        si.map = core_map;
        si.map_ctx = &c;
        ft_raw_emit(&rd, rf.addr, &si, &w, &st);
    }
    uint64_t pcs[64];
    struct ce_unwinder *u = ce_unwinder_new(&rd, &maps, is_exec, &c);
    for (size_t i = 0; i < c.nthreads && i < 8; i++) {
        struct ce_unwind_info ui;
        size_t n = ce_unwind(u, c.threads[i].regs, pcs, 64, &ui);
        ce_emit_stack(&w, &st, c.threads[i].tid, FT_UNW_LIBUNWIND, ce_unwind_flags(&ui), c.threads[i].regs, pcs,
                      (uint32_t)n, &ui);
    }
    ce_unwinder_free(u);
    free(wr);
    maps_free(&maps);
    core_close(&c);
    close(fd);
    return 0;
}
