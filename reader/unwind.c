/* unwind.c -- libunwind remote unwinding over a core or live memory (see unwind.h) */
#include "unwind.h"

#include "elfinfo.h"
#include "util.h"

#include <libunwind.h>
#include <stdlib.h>
#include <string.h>

extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
                                              unw_proc_info_t *pi, int need_unwind_info, void *arg);

/* libunwind x86-64 register number -> user_regs_struct index */
static const int8_t regmap[17] = {
    [UNW_X86_64_RAX] = 10, [UNW_X86_64_RDX] = 12, [UNW_X86_64_RCX] = 11, [UNW_X86_64_RBX] = 5,
    [UNW_X86_64_RSI] = 13, [UNW_X86_64_RDI] = 14, [UNW_X86_64_RBP] = 4, [UNW_X86_64_RSP] = 19,
    [UNW_X86_64_R8] = 9, [UNW_X86_64_R9] = 8, [UNW_X86_64_R10] = 7, [UNW_X86_64_R11] = 6,
    [UNW_X86_64_R12] = 3, [UNW_X86_64_R13] = 2, [UNW_X86_64_R14] = 1, [UNW_X86_64_R15] = 0,
    [UNW_X86_64_RIP] = 16,
};

struct ce_unwinder {
    unw_addr_space_t as;
    const struct ft_reader *mem;
    struct ce_maps *maps;
    int (*is_exec)(void *ctx, uint64_t addr);
    void *exec_ctx;
    const uint64_t *regs;          /* the thread being unwound */
};

static int src_read(struct ce_unwinder *u, uint64_t addr, void *buf, size_t len)
{
    if (u->mem->read(u->mem->ctx, addr, buf, len) == len) return 0;
    if (maps_file_read(u->maps, addr, buf, len) == len) return 0;
    return -1;
}

/* The .eh_frame indexes built here (an object without .eh_frame_hdr:
 * ehframe.h) are searched by libunwind as a hdr's table, read through
 * acc_mem: object i's is at SYN_BASE + i * SYN_STRIDE, a non-canonical
 * address that no target memory has. */
#define SYN_BASE 0x8000000000000000ull
#define SYN_STRIDE (1ull << 40)

static int syn_read(struct ce_unwinder *u, uint64_t addr, unw_word_t *val)
{
    uint64_t i = (addr - SYN_BASE) / SYN_STRIDE, off = (addr - SYN_BASE) % SYN_STRIDE;
    if (i >= u->maps->nobjs) return -UNW_EINVAL;
    const struct ce_obj *o = &u->maps->objs[i];
    uint64_t size = (uint64_t)o->nehf * sizeof *o->ehf;
    if (o->ehf_state != 1 || off > size || size - off < sizeof *val) return -UNW_EINVAL;
    memcpy(val, (const uint8_t *)o->ehf + off, sizeof *val);
    return 0;
}

static int acc_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
    (void)as;
    if (write) return -UNW_EINVAL;
    if (addr >= SYN_BASE) return syn_read(arg, addr, val);
    return src_read(arg, addr, val, sizeof *val) == 0 ? 0 : -UNW_EINVAL;
}

static int acc_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg)
{
    (void)as;
    struct ce_unwinder *u = arg;
    if (write || reg < 0 || reg > UNW_X86_64_RIP) return -UNW_EBADREG;
    *val = u->regs[regmap[reg]];
    return 0;
}

static int acc_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write, void *arg)
{
    (void)as; (void)reg; (void)val; (void)write; (void)arg;
    return -UNW_EBADREG;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
    (void)as; (void)c; (void)arg;
    return -UNW_EINVAL;
}

static int acc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len, unw_word_t *off,
                    void *arg)
{
    (void)as; (void)addr; (void)buf; (void)len; (void)off; (void)arg;
    return -UNW_ENOINFO;
}

static int acc_dyn(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
    (void)as; (void)addr; (void)arg;
    return -UNW_ENOINFO;
}

static void acc_put(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
    (void)as; (void)pi; (void)arg; /* libunwind frees table-format info itself */
}

/* check an object's .eh_frame_hdr once: version 1; eh_frame_ptr any 4-byte
 * encoding; fde_count udata4; table datarel|sdata4 */
static int eh_hdr_ok(struct ce_unwinder *u, struct ce_obj *o)
{
    if (o->eh_state == 0) {
        uint8_t h[12];
        uint32_t fde_count = 0;
        o->eh_state = -1;
        if (o->info_ok && o->eh_hdr && src_read(u, o->eh_hdr, h, sizeof h) == 0 && h[0] == 1 &&
            (h[1] & 0x0f) == 0x0b && h[2] == 0x03 && h[3] == 0x3b) {
            memcpy(&fde_count, h + 8, 4);
            if (fde_count > 0 && fde_count <= (1u << 26)) {
                o->fde_count = fde_count;
                o->eh_state = 1;
            }
        }
    }
    return o->eh_state == 1;
}

/* no .eh_frame_hdr: index the object's .eh_frame from its file once (a
 * program linked -static by gcc has none) */
static int eh_index_ok(struct ce_obj *o)
{
    if (o->ehf_state == 0) {
        uint64_t addr, len;
        const uint8_t *sec;
        o->ehf_state = -1;
        if (o->info_ok && o->file && elf_section_in_file(o->file, o->file_size, ".eh_frame", &addr, &sec, &len) == 0) {
            o->nehf = eh_frame_index(sec, len, addr, &o->ehf);
            o->ehf_addr = o->bias + addr;
            if (o->nehf && o->nehf <= (1u << 26)) o->ehf_state = 1;
        }
    }
    return o->ehf_state == 1;
}

static int acc_find(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi, int need, void *arg)
{
    struct ce_unwinder *u = arg;
    struct ce_obj *o = maps_obj_at(u->maps, ip);
    if (!o || ip < o->text_lo || ip >= o->text_hi) return -UNW_ENOINFO;
    unw_dyn_info_t di;
    memset(&di, 0, sizeof di);
    di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
    di.start_ip = o->text_lo;
    di.end_ip = o->text_hi;
    if (eh_hdr_ok(u, o)) {
        di.u.rti.segbase = o->eh_hdr;
        di.u.rti.table_data = o->eh_hdr + 12;
        di.u.rti.table_len = (uint64_t)o->fde_count * 8 / sizeof(unw_word_t);
    } else if (eh_index_ok(o)) {
        di.u.rti.segbase = o->ehf_addr;
        di.u.rti.table_data = SYN_BASE + (uint64_t)(o - u->maps->objs) * SYN_STRIDE;
        di.u.rti.table_len = (uint64_t)o->nehf * sizeof *o->ehf / sizeof(unw_word_t);
    } else {
        return -UNW_ENOINFO;
    }
    return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need, arg);
}

static unw_accessors_t accessors = {
    .find_proc_info = acc_find,
    .put_unwind_info = acc_put,
    .get_dyn_info_list_addr = acc_dyn,
    .access_mem = acc_mem,
    .access_reg = acc_reg,
    .access_fpreg = acc_fpreg,
    .resume = acc_resume,
    .get_proc_name = acc_name,
};

struct ce_unwinder *ce_unwinder_new(const struct ft_reader *mem, struct ce_maps *maps,
                                    int (*is_exec)(void *ctx, uint64_t addr), void *exec_ctx)
{
    struct ce_unwinder *u = ce_xcalloc(1, sizeof *u);
    u->mem = mem;
    u->maps = maps;
    u->is_exec = is_exec;
    u->exec_ctx = exec_ctx;
    u->as = unw_create_addr_space(&accessors, 0);
    /* frame states cached by pc in this address space, for all threads */
    if (u->as) unw_set_caching_policy(u->as, UNW_CACHE_GLOBAL);
    return u;
}

void ce_unwinder_free(struct ce_unwinder *u)
{
    if (!u) return;
    if (u->as) unw_destroy_addr_space(u->as);
    free(u);
}

/* keep frame number k (0-based, innermost first) of the walk: the first
 * `inner` frames in place, the others in a ring of `outer` slots after them */
static void keep(uint64_t *pcs, size_t inner, size_t outer, uint64_t k, uint64_t pc)
{
    if (k < inner)
        pcs[k] = pc;
    else
        pcs[inner + (k - inner) % outer] = pc;
}

size_t ce_unwind(struct ce_unwinder *u, const uint64_t regs[FT_NREGS], uint64_t *pcs, size_t max,
                 struct ce_unwind_info *info)
{
    memset(info, 0, sizeof *info);
    if (max == 0) return 0;
    if (max < 2) max = 2;
    size_t outer = CE_KEEP_OUTER(max), inner;
    if (outer < 1) outer = 1;
    inner = max - outer;
    uint64_t n = 0; /* frames walked */
    keep(pcs, inner, outer, n++, regs[16]);
    unw_cursor_t cur;
    u->regs = regs;
    if (!u->as || unw_init_remote(&cur, u->as, u) < 0) {
        info->truncated = 1;
        u->regs = NULL;
        return 1;
    }
    unw_word_t pip = regs[16], psp = regs[19];
    for (;;) {
        /* stepping out of a signal frame restores the interrupted context,
         * which may be on another stack (sigaltstack): no sp order there.
         * (libunwind 1.6 answers unw_is_signal_frame for the frame the last
         * step left -- known only after stepping out of it; other versions
         * for the frame at the cursor: both are asked.) */
        int from_signal = unw_is_signal_frame(&cur) > 0;
        int r = unw_step(&cur);
        if (r < 0) { info->truncated = 1; break; }
        if (r == 0) break;
        from_signal |= unw_is_signal_frame(&cur) > 0;
        unw_word_t ip = 0, sp = 0;
        unw_get_reg(&cur, UNW_REG_IP, &ip);
        unw_get_reg(&cur, UNW_REG_SP, &sp);
        if (ip == 0) break;
        if (u->is_exec && !u->is_exec(u->exec_ctx, ip)) break; /* garbage: end of the stack */
        /* a caller's frame is always above its callee's: a frame whose sp
         * did not move up repeats or precedes one already seen */
        if ((ip == pip && sp == psp) || (!from_signal && sp <= psp)) { info->truncated = 1; break; }
        if (n == CE_WALK_LIMIT) { info->truncated = 1; break; }
        keep(pcs, inner, outer, n++, ip);
        pip = ip;
        psp = sp;
    }
    u->regs = NULL;
    if (n <= max) { /* the ring never wrapped: frames inner.. are in order */
        return (size_t)n;
    }
    /* rotate the ring of the outermost frames into order */
    uint64_t tmp[64];
    size_t first = (size_t)((n - inner) % outer); /* oldest slot = the outermost-but-outer-1 frame */
    for (size_t i = 0; i < outer; i++) tmp[i] = pcs[inner + (first + i) % outer];
    memcpy(pcs + inner, tmp, outer * sizeof *tmp);
    info->cut_at = (uint32_t)inner;
    info->ncut = (uint32_t)(n - max);
    return max;
}

uint32_t ce_unwind_flags(const struct ce_unwind_info *info)
{
    return (info->truncated ? FT_STKF_TRUNCATED : 0) | (info->ncut ? FT_STKF_CUT : 0);
}

int ce_emit_stack(const struct ft_writer *w, struct ft_emit_stats *st, uint32_t tid,
                  uint32_t unwinder, uint32_t flags, const uint64_t regs[FT_NREGS],
                  const uint64_t *pcs, uint32_t n, const struct ce_unwind_info *info)
{
    struct ft_raw_stack h;
    memset(&h, 0, sizeof h);
    h.tid = tid;
    h.unwinder = unwinder;
    h.nframes = n;
    h.flags = flags;
    if (info && info->ncut && info->cut_at < n) {
        h.flags |= FT_STKF_CUT;
        h.cut_at = info->cut_at;
        h.ncut = info->ncut;
    }
    memcpy(h.regs, regs, sizeof h.regs);
    if (ft_raw_chunk_header(w, FT_CHUNK_STACK, sizeof h + 8ull * n, st)) return -1;
    if (w->write(w->ctx, &h, sizeof h)) return -1;
    if (n && w->write(w->ctx, pcs, 8ull * n)) return -1;
    if (st) st->bytes += sizeof h + 8ull * n;
    return 0;
}
