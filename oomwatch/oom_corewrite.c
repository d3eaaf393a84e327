/*
 * oom_corewrite.c -- ELF core writer for a stopped live process (see
 * oom_corewrite.h; the threads are stopped by oom_ptrace.c).
 */
#define _GNU_SOURCE
#include "oom_corewrite.h"
#include "elfinfo.h"
#include "maps.h"
#include "procmem.h"
#include "util.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>
#include <unistd.h>

#define PAGE 4096ull
#define COPY_CHUNK (1u << 20)

/* coredump_filter bits (Documentation/filesystems/proc.rst) */
#define CDF_ANON_PRIVATE 0x01u
#define CDF_ANON_SHARED 0x02u
#define CDF_FILE_PRIVATE 0x04u
#define CDF_FILE_SHARED 0x08u
#define CDF_ELF_HEADERS 0x10u
#define CDF_HUGE_PRIVATE 0x20u
#define CDF_HUGE_SHARED 0x40u

struct cmap {
    uint64_t start, end, offset, inode;
    uint32_t pflags;   /* PF_R/PF_W/PF_X */
    int shared;
    int has_anon;      /* smaps Anonymous or Swap > 0 */
    int dontdump;      /* VmFlags dd or io */
    int huge;          /* VmFlags ht */
    char *path;
    uint64_t dump;     /* bytes to dump from start */
};

struct cmaps {
    struct cmap *v;
    size_t n, cap;
};

static void seterr(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

/* ---- /proc/PID/smaps -------------------------------------------------- */

static int parse_smaps(int pid, struct cmaps *m)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/smaps", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    struct cmap *cur = NULL;
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = 0;
        size_t tok = strcspn(line, " ");
        if (tok && line[tok - 1] == ':') {
            if (!cur)
                continue;
            unsigned long long kb;
            if ((!strncmp(line, "Anonymous:", 10) && sscanf(line + 10, "%llu", &kb) == 1 && kb) ||
                (!strncmp(line, "Swap:", 5) && sscanf(line + 5, "%llu", &kb) == 1 && kb))
                cur->has_anon = 1;
            if (!strncmp(line, "VmFlags:", 8)) {
                for (char *s = line + 8; *s;) {
                    while (*s == ' ')
                        s++;
                    if (!strncmp(s, "dd", 2) && (s[2] == ' ' || !s[2]))
                        cur->dontdump = 1;
                    if (!strncmp(s, "io", 2) && (s[2] == ' ' || !s[2]))
                        cur->dontdump = 1;
                    if (!strncmp(s, "ht", 2) && (s[2] == ' ' || !s[2]))
                        cur->huge = 1;
                    s += strcspn(s, " ");
                }
            }
            continue;
        }
        struct ce_maps_line ml;
        if (maps_parse_line(line, &ml) != 0)
            continue;
        void *v = m->v;
        if (ce_grow(&v, m->n, &m->cap, sizeof *m->v, 64) != 0)
            break;
        m->v = v;
        cur = &m->v[m->n++];
        memset(cur, 0, sizeof *cur);
        cur->start = ml.start;
        cur->end = ml.end;
        cur->offset = ml.offset;
        cur->inode = ml.inode;
        cur->pflags = (ml.prot & FT_MAPF_R ? PF_R : 0) | (ml.prot & FT_MAPF_W ? PF_W : 0) |
                      (ml.prot & FT_MAPF_X ? PF_X : 0);
        cur->shared = ml.shared;
        cur->path = strdup(ml.path);
    }
    free(line);
    fclose(f);
    return 0;
}

static void free_maps(struct cmaps *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->v[i].path);
    free(m->v);
}

static int is_elf_at(int memfd, uint64_t addr)
{
    unsigned char b[4];
    return pread(memfd, b, 4, (off_t)addr) == 4 && !memcmp(b, ELFMAG, SELFMAG);
}

/* Bytes of the mapping to dump, following the kernel's vma_dump_size(). */
static uint64_t dump_size(const struct cmap *c, unsigned filter, int memfd)
{
    uint64_t whole = c->end - c->start;
    if (c->dontdump || !(c->pflags & PF_R))
        return 0;
    if (!strcmp(c->path, "[vdso]") || !strcmp(c->path, "[vsyscall]"))
        return whole;
    if (c->huge)
        return (filter & (c->shared ? CDF_HUGE_SHARED : CDF_HUGE_PRIVATE)) ? whole : 0;
    if (c->shared) {
        size_t pl = strlen(c->path);
        int anon = c->inode == 0 || !strncmp(c->path, "/dev/zero", 9) || !strncmp(c->path, "/SYSV", 5) ||
                   (pl > 10 && !strcmp(c->path + pl - 10, " (deleted)"));
        return (filter & (anon ? CDF_ANON_SHARED : CDF_FILE_SHARED)) ? whole : 0;
    }
    if (c->has_anon && (filter & CDF_ANON_PRIVATE))
        return whole;
    if (c->inode == 0)
        return 0;
    if (filter & CDF_FILE_PRIVATE)
        return whole;
    if ((filter & CDF_ELF_HEADERS) && c->offset == 0 && is_elf_at(memfd, c->start))
        return PAGE;
    return 0;
}

/* ---- notes ------------------------------------------------------------- */

struct buf {
    unsigned char *p;
    size_t n, cap;
    int oom;
};

static void put(struct buf *b, const void *d, size_t len)
{
    if (b->oom)
        return;
    if (b->n + len > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->n + len)
            nc *= 2;
        unsigned char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    if (d)
        memcpy(b->p + b->n, d, len);
    else
        memset(b->p + b->n, 0, len);
    b->n += len;
}

static void pad4(struct buf *b)
{
    static const char z[4];
    if (b->n & 3)
        put(b, z, 4 - (b->n & 3));
}

static void note(struct buf *b, uint32_t type, const void *desc, size_t len)
{
    Elf64_Nhdr nh = {.n_namesz = 5, .n_descsz = (Elf64_Word)len, .n_type = type};
    put(b, &nh, sizeof nh);
    put(b, "CORE\0\0\0", 8); /* "CORE\0" padded to 4 */
    put(b, desc, len);
    pad4(b);
}

static size_t read_file(const char *path, void *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t n = 0;
    while (n < cap) {
        ssize_t r = read(fd, (char *)buf + n, cap - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    return n;
}

/* /proc/PID[/task/TID]/stat fields after the comm */
struct pstat {
    char state;
    int ppid, pgrp, sid;
    unsigned long flags, utime, stime;
    long cutime, cstime;
    long nice;
};

static int read_stat(const char *path, struct pstat *s)
{
    char buf[2048];
    size_t n = read_file(path, buf, sizeof buf - 1);
    buf[n] = 0;
    char *rp = strrchr(buf, ')');
    memset(s, 0, sizeof *s);
    if (!rp)
        return -1;
    long prio;
    int r = sscanf(rp + 2, "%c %d %d %d %*d %*d %lu %*u %*u %*u %*u %lu %lu %ld %ld %ld %ld", &s->state,
                   &s->ppid, &s->pgrp, &s->sid, &s->flags, &s->utime, &s->stime, &s->cutime,
                   &s->cstime, &prio, &s->nice);
    return r >= 4 ? 0 : -1;
}

static void ticks_tv(unsigned long t, struct timeval *tv)
{
    long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0)
        hz = 100;
    tv->tv_sec = (time_t)(t / (unsigned long)hz);
    tv->tv_usec = (suseconds_t)((t % (unsigned long)hz) * 1000000 / (unsigned long)hz);
}

static unsigned long status_hex(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    return p ? strtoul(p + strlen(key), NULL, 16) : 0;
}

static void note_prstatus(struct buf *b, int pid, const struct ftc_thread *t)
{
    struct elf_prstatus ps;
    struct pstat st;
    char path[96], status[4096];
    memset(&ps, 0, sizeof ps);
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, t->tid);
    read_stat(path, &st);
    snprintf(path, sizeof path, "/proc/%d/task/%d/status", pid, t->tid);
    size_t n = read_file(path, status, sizeof status - 1);
    status[n] = 0;
    ps.pr_info.si_signo = t->pending_sig;
    ps.pr_cursig = (short)t->pending_sig;
    ps.pr_sigpend = status_hex(status, "\nSigPnd:") | status_hex(status, "\nShdPnd:");
    ps.pr_sighold = status_hex(status, "\nSigBlk:");
    ps.pr_pid = t->tid;
    ps.pr_ppid = st.ppid;
    ps.pr_pgrp = st.pgrp;
    ps.pr_sid = st.sid;
    ticks_tv(st.utime, &ps.pr_utime);
    ticks_tv(st.stime, &ps.pr_stime);
    _Static_assert(sizeof ps.pr_reg == sizeof t->regs, "elf_gregset_t is user_regs_struct");
    memcpy(&ps.pr_reg, &t->regs, sizeof t->regs);
    ps.pr_fpvalid = t->have_fp;
    note(b, NT_PRSTATUS, &ps, sizeof ps);
}

static void note_prpsinfo(struct buf *b, int pid)
{
    struct elf_prpsinfo pi;
    struct pstat st;
    char path[64], status[4096];
    memset(&pi, 0, sizeof pi);
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    read_stat(path, &st);
    static const char states[] = "RSDTZW";
    const char *sp = strchr(states, st.state);
    pi.pr_state = (char)(sp && st.state ? sp - states : 0);
    pi.pr_sname = st.state ? st.state : '.';
    pi.pr_zomb = st.state == 'Z';
    pi.pr_nice = (char)st.nice;
    pi.pr_flag = st.flags;
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    size_t n = read_file(path, status, sizeof status - 1);
    status[n] = 0;
    const char *u = strstr(status, "\nUid:"), *g = strstr(status, "\nGid:");
    pi.pr_uid = u ? (unsigned)strtoul(u + 5, NULL, 10) : 0;
    pi.pr_gid = g ? (unsigned)strtoul(g + 5, NULL, 10) : 0;
    pi.pr_pid = pid;
    pi.pr_ppid = st.ppid;
    pi.pr_pgrp = st.pgrp;
    pi.pr_sid = st.sid;
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    n = read_file(path, pi.pr_fname, sizeof pi.pr_fname - 1);
    pi.pr_fname[n] = 0;
    pi.pr_fname[strcspn(pi.pr_fname, "\n")] = 0;
    snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
    n = read_file(path, pi.pr_psargs, sizeof pi.pr_psargs - 1);
    for (size_t i = 0; i + 1 < n; i++)
        if (!pi.pr_psargs[i])
            pi.pr_psargs[i] = ' ';
    pi.pr_psargs[n] = 0;
    note(b, NT_PRPSINFO, &pi, sizeof pi);
}

static void note_auxv(struct buf *b, int pid)
{
    char path[64];
    unsigned char auxv[8192];
    snprintf(path, sizeof path, "/proc/%d/auxv", pid);
    size_t n = read_file(path, auxv, sizeof auxv);
    if (n)
        note(b, NT_AUXV, auxv, n);
}

/* NT_FILE: count, page size, {start, end, offset in pages}[count], names */
static void note_file(struct buf *b, const struct cmaps *m)
{
    struct buf d = {0};
    uint64_t count = 0, ps = PAGE;
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].inode && m->v[i].path[0] == '/')
            count++;
    put(&d, &count, 8);
    put(&d, &ps, 8);
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].inode && m->v[i].path[0] == '/') {
            uint64_t e[3] = {m->v[i].start, m->v[i].end, m->v[i].offset / PAGE};
            put(&d, e, sizeof e);
        }
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].inode && m->v[i].path[0] == '/') {
            const char *p = m->v[i].path;
            size_t pl = strlen(p);
            if (pl > 10 && !strcmp(p + pl - 10, " (deleted)"))
                pl -= 10;
            put(&d, p, pl);
            put(&d, "", 1);
        }
    if (!d.oom)
        note(b, NT_FILE, d.p, d.n);
    b->oom |= d.oom;
    free(d.p);
}

/* ---- memory copy ------------------------------------------------------- */

static int all_zero(const unsigned char *p, size_t n)
{
    const uint64_t *w = (const uint64_t *)p;
    for (size_t i = 0; i < n / 8; i++)
        if (w[i])
            return 0;
    return 1;
}

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
    const char *p = buf;
    while (len) {
        ssize_t r = pwrite(fd, p, len, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        len -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

/* Copy [addr, addr+len) to file offset off; unreadable and zero pages become
 * holes.  anon: a private anonymous mapping, whose untouched pages are holes
 * without being read (reading them would populate them: procmem.h) */
static int copy_range(struct procmem *pm, int fd, uint64_t addr, uint64_t len, uint64_t off, int anon,
                      unsigned char *buf, struct ftc_stats *st)
{
    while (len) {
        size_t n = len > COPY_CHUNK ? COPY_CHUNK : (size_t)len;
        size_t got = procmem_read(pm, addr, buf, n, anon);
        got &= ~(size_t)(PAGE - 1);
        if (got < n) {
            /* page by page for the rest of the chunk */
            for (size_t o = got; o < n; o += PAGE) {
                if (procmem_read(pm, addr + o, buf + o, PAGE, anon) != PAGE) {
                    memset(buf + o, 0, PAGE);
                    st->pages_unreadable++;
                }
            }
        }
        for (size_t o = 0; o < n; o += PAGE) {
            if (all_zero(buf + o, PAGE))
                continue;
            size_t run = PAGE;
            while (o + run < n && !all_zero(buf + o + run, PAGE))
                run += PAGE;
            if (pwrite_all(fd, buf + o, run, off + o) != 0)
                return -1;
            st->bytes_data += run;
            o += run - PAGE;
        }
        addr += n;
        off += n;
        len -= n;
    }
    return 0;
}

/* ---- the core ---------------------------------------------------------- */

int ftc_write(const struct ftc_proc *p, int fd, uint64_t max_file, struct ftc_stats *st, char *err,
              size_t errlen)
{
    struct cmaps m = {0};
    struct buf notes = {0};
    unsigned char *copybuf = NULL;
    Elf64_Phdr *ph = NULL;
    int memfd = -1, ret = -1;
    struct procmem pm = {.pagemap_fd = -1, .mem_fd = -1};
    char path[64];

    memset(st, 0, sizeof *st);
    if (parse_smaps(p->pid, &m) != 0 || m.n == 0) {
        seterr(err, errlen, "pid %d: cannot read /proc/%d/smaps: %s", p->pid, p->pid,
               m.n ? "empty" : strerror(errno));
        goto out;
    }
    snprintf(path, sizeof path, "/proc/%d/mem", p->pid);
    memfd = open(path, O_RDONLY | O_CLOEXEC);
    if (memfd < 0) {
        seterr(err, errlen, "pid %d: cannot open %s: %s", p->pid, path, strerror(errno));
        goto out;
    }
    procmem_open(&pm, p->pid, memfd);
    char fbuf[32] = "";
    snprintf(path, sizeof path, "/proc/%d/coredump_filter", p->pid);
    size_t fl = read_file(path, fbuf, sizeof fbuf - 1);
    fbuf[fl] = 0;
    unsigned filter = fl ? (unsigned)strtoul(fbuf, NULL, 16) : 0x33u;
    for (size_t i = 0; i < m.n; i++)
        m.v[i].dump = dump_size(&m.v[i], filter, memfd);

    /* notes: thread 0 carries PRPSINFO, AUXV, FILE (the kernel's order) */
    for (size_t i = 0; i < p->n; i++) {
        note_prstatus(&notes, p->pid, &p->t[i]);
        if (i == 0) {
            note_prpsinfo(&notes, p->pid);
            note_auxv(&notes, p->pid);
            note_file(&notes, &m);
        }
        if (p->t[i].have_fp)
            note(&notes, NT_FPREGSET, &p->t[i].fpregs, sizeof p->t[i].fpregs);
        st->nthreads++;
        st->nthreads_partial += p->t[i].regs_partial;
    }
    if (notes.oom) {
        seterr(err, errlen, "out of memory building the notes");
        goto out;
    }
    size_t nph = 1 + m.n;
    ph = calloc(nph, sizeof *ph);
    copybuf = malloc(COPY_CHUNK);
    if (!ph || !copybuf) {
        seterr(err, errlen, "out of memory");
        goto out;
    }
    uint64_t off = sizeof(Elf64_Ehdr) + nph * sizeof(Elf64_Phdr);
    ph[0].p_type = PT_NOTE;
    ph[0].p_offset = off;
    ph[0].p_filesz = notes.n;
    ph[0].p_align = 4;
    off = (off + notes.n + PAGE - 1) & ~(PAGE - 1);
    for (size_t i = 0; i < m.n; i++) {
        Elf64_Phdr *h = &ph[1 + i];
        h->p_type = PT_LOAD;
        h->p_offset = off;
        h->p_vaddr = m.v[i].start;
        h->p_filesz = m.v[i].dump;
        h->p_memsz = m.v[i].end - m.v[i].start;
        h->p_flags = m.v[i].pflags;
        h->p_align = PAGE;
        off += m.v[i].dump;
    }
    uint64_t total = off;
    if (max_file && total > max_file) {
        seterr(err, errlen, "pid %d: the core would be %llu bytes, over the limit of %llu", p->pid,
               (unsigned long long)total, (unsigned long long)max_file);
        goto out;
    }

    Elf64_Ehdr eh;
    Elf64_Shdr xsh; /* more than 65,534 mappings: the count after the memory (PN_XNUM) */
    int xnum = elf_core_ehdr(&eh, nph);
    if (xnum) {
        elf_core_xnum(&eh, &xsh, nph, total);
        total += sizeof xsh;
    }

    if (ftruncate(fd, 0) != 0 || pwrite_all(fd, &eh, sizeof eh, 0) != 0 ||
        pwrite_all(fd, ph, nph * sizeof *ph, sizeof eh) != 0 ||
        pwrite_all(fd, notes.p, notes.n, ph[0].p_offset) != 0) {
        seterr(err, errlen, "cannot write the core: %s", strerror(errno));
        goto out;
    }
    for (size_t i = 0; i < m.n; i++) {
        if (!ph[1 + i].p_filesz)
            continue;
        const struct cmap *c = &m.v[i];
        if (copy_range(&pm, fd, ph[1 + i].p_vaddr, ph[1 + i].p_filesz, ph[1 + i].p_offset,
                       procmem_is_private_anon(c->inode, c->shared, c->path ? c->path : ""), copybuf, st) != 0) {
            seterr(err, errlen, "cannot write the core: %s", strerror(errno));
            goto out;
        }
    }
    if (xnum && pwrite_all(fd, &xsh, sizeof xsh, eh.e_shoff) != 0) {
        seterr(err, errlen, "cannot write the core: %s", strerror(errno));
        goto out;
    }
    if (ftruncate(fd, (off_t)total) != 0) {
        seterr(err, errlen, "cannot write the core: %s", strerror(errno));
        goto out;
    }
    st->nloads = (unsigned)m.n;
    st->bytes_file = total;
    ret = 0;
out:
    procmem_close(&pm);
    if (memfd >= 0)
        close(memfd);
    free(copybuf);
    free(ph);
    free(notes.p);
    free_maps(&m);
    return ret;
}
