/* input.c -- plain, stdin and compressed cores as byte streams (see input.h) */
#define _GNU_SOURCE
#include "cli.h"
#include "progress.h"
#include "input.h"
#include "util.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <lz4frame.h>
#include <lzma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define IOBUF (1 << 17)
#define PIPE_WANT (1 << 20) /* pipe buffer asked for (fs.pipe-max-size's default) */

enum fmt { F_PLAIN, F_ZSTD, F_LZ4, F_XZ };

static enum fmt detect(const uint8_t *h, size_t n)
{
    if (n >= 4 && memcmp(h, "\x28\xb5\x2f\xfd", 4) == 0) return F_ZSTD;
    if (n >= 4 && memcmp(h, "\x04\x22\x4d\x18", 4) == 0) return F_LZ4;
    if (n >= 6 && memcmp(h, "\xfd\x37\x7a\x58\x5a\x00", 6) == 0) return F_XZ;
    return F_PLAIN;
}

struct ce_src {
    enum fmt f;
    int fd;                       /* -1: memory */
    const uint8_t *mem;
    size_t mem_len, mem_pos;
    uint8_t head[8];              /* read for detection, replayed first */
    size_t head_len, head_pos;
    uint8_t *ib;                  /* compressed input */
    size_t ilen, ipos;
    int in_eof, ended, truncated;
    uint64_t consumed;            /* compressed bytes handed to the decoder */
    ZSTD_DStream *z;
    size_t zlast;
    LZ4F_dctx *l;
    size_t lhint;
    lzma_stream x;
    int x_init;
    struct progress prog;         /* on a terminal, for a long read */
};

/* raw bytes of the input: the replayed head, then the fd or memory */
static ssize_t raw_read(struct ce_src *s, uint8_t *buf, size_t n, char *err, size_t errlen)
{
    if (s->head_pos < s->head_len) {
        size_t k = s->head_len - s->head_pos;
        if (k > n) k = n;
        memcpy(buf, s->head + s->head_pos, k);
        s->head_pos += k;
        return (ssize_t)k;
    }
    if (s->fd < 0) {
        size_t k = s->mem_len - s->mem_pos;
        if (k > n) k = n;
        memcpy(buf, s->mem + s->mem_pos, k);
        s->mem_pos += k;
        return (ssize_t)k;
    }
    for (;;) {
        ssize_t r = read(s->fd, buf, n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) snprintf(err, errlen, "read error: %s", strerror(errno));
        if (r > 0) progress_add(&s->prog, (uint64_t)r);
        return r;
    }
}

/* compressed input available in ib (refilled when used up); 0, or -1 */
static int fill_in(struct ce_src *s, char *err, size_t errlen)
{
    if (s->ipos < s->ilen || s->in_eof) return 0;
    ssize_t r = raw_read(s, s->ib, IOBUF, err, errlen);
    if (r < 0) return -1;
    s->ilen = (size_t)r;
    s->ipos = 0;
    if (r == 0) s->in_eof = 1;
    return 0;
}

static ssize_t zstd_read(struct ce_src *s, uint8_t *buf, size_t n, char *err, size_t errlen)
{
    for (;;) {
        if (fill_in(s, err, errlen)) return -1;
        /* at the end of the input after a complete frame: done (asking
         * again would return the next frame's header size) */
        if (s->in_eof && s->ipos == s->ilen && s->zlast == 0) return 0;
        ZSTD_inBuffer in = { s->ib, s->ilen, s->ipos };
        ZSTD_outBuffer o = { buf, n, 0 };
        size_t k = ZSTD_decompressStream(s->z, &o, &in);
        s->consumed += in.pos - s->ipos;
        s->ipos = in.pos;
        if (ZSTD_isError(k)) {
            snprintf(err, errlen, "corrupt zstd data near compressed byte %llu: %s",
                     (unsigned long long)s->consumed, ZSTD_getErrorName(k));
            return -1;
        }
        s->zlast = k;
        if (o.pos) return (ssize_t)o.pos;
        if (s->in_eof && s->ipos == s->ilen) {
            if (s->zlast != 0) s->truncated = 1;
            return 0;
        }
    }
}

static ssize_t lz4_read(struct ce_src *s, uint8_t *buf, size_t n, char *err, size_t errlen)
{
    for (;;) {
        if (fill_in(s, err, errlen)) return -1;
        if (s->in_eof && s->ipos == s->ilen) {
            if (s->lhint != 0) s->truncated = 1;
            return 0;
        }
        if (s->lhint == 0 && s->consumed) LZ4F_resetDecompressionContext(s->l); /* next frame */
        size_t osz = n, isz = s->ilen - s->ipos;
        size_t h = LZ4F_decompress(s->l, buf, &osz, s->ib + s->ipos, &isz, NULL);
        if (LZ4F_isError(h)) {
            snprintf(err, errlen, "corrupt lz4 data near compressed byte %llu: %s",
                     (unsigned long long)s->consumed, LZ4F_getErrorName(h));
            return -1;
        }
        s->ipos += isz;
        s->consumed += isz;
        s->lhint = h;
        if (osz) return (ssize_t)osz;
    }
}

static ssize_t xz_read(struct ce_src *s, uint8_t *buf, size_t n, char *err, size_t errlen)
{
    for (;;) {
        if (s->ended) return 0;
        if (fill_in(s, err, errlen)) return -1;
        s->x.next_in = s->ib + s->ipos;
        s->x.avail_in = s->ilen - s->ipos;
        s->x.next_out = buf;
        s->x.avail_out = n;
        lzma_ret ret = lzma_code(&s->x, s->in_eof ? LZMA_FINISH : LZMA_RUN);
        size_t used = (s->ilen - s->ipos) - s->x.avail_in;
        s->ipos += used;
        s->consumed += used;
        size_t produced = n - s->x.avail_out;
        if (ret == LZMA_STREAM_END) s->ended = 1;
        else if (s->in_eof && (ret == LZMA_BUF_ERROR || ret == LZMA_DATA_ERROR)) {
            s->ended = 1;
            s->truncated = 1;
        } else if (ret != LZMA_OK) {
            snprintf(err, errlen, "corrupt xz data near compressed byte %llu (lzma error %d)",
                     (unsigned long long)s->consumed, (int)ret);
            return -1;
        }
        if (produced) return (ssize_t)produced;
    }
}

ssize_t ce_src_read(struct ce_src *s, void *buf_, size_t n, char *err, size_t errlen)
{
    uint8_t *buf = buf_;
    size_t got = 0;
    while (got < n) {
        ssize_t r;
        switch (s->f) {
        case F_ZSTD: r = zstd_read(s, buf + got, n - got, err, errlen); break;
        case F_LZ4: r = lz4_read(s, buf + got, n - got, err, errlen); break;
        case F_XZ: r = xz_read(s, buf + got, n - got, err, errlen); break;
        default:
            r = raw_read(s, buf + got, n - got, err, errlen);
            if (r > 0) s->consumed += (uint64_t)r;
            break;
        }
        if (r < 0) return -1;
        if (r == 0) break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int ce_src_truncated(const struct ce_src *s) { return s->truncated; }
uint64_t ce_src_consumed(const struct ce_src *s) { return s->consumed; }

/* a source of format f over fd (or memory), with the head bytes to replay */
static struct ce_src *src_new(enum fmt f, int fd, const uint8_t *head, size_t hn, char *err, size_t errlen)
{
    struct ce_src *s = ce_xcalloc(1, sizeof *s);
    s->f = f;
    s->fd = fd;
    memcpy(s->head, head, hn);
    s->head_len = hn;
    if (f != F_PLAIN) s->ib = ce_xmalloc(IOBUF);
    int ok = 1;
    if (f == F_ZSTD) ok = (s->z = ZSTD_createDStream()) != NULL && !ZSTD_isError(ZSTD_initDStream(s->z));
    if (f == F_LZ4) ok = !LZ4F_isError(LZ4F_createDecompressionContext(&s->l, LZ4F_VERSION));
    if (f == F_XZ) {
        lzma_stream init = LZMA_STREAM_INIT;
        s->x = init;
        ok = lzma_stream_decoder(&s->x, UINT64_MAX, LZMA_CONCATENATED) == LZMA_OK;
        s->x_init = ok;
    }
    if (!ok) {
        snprintf(err, errlen, "cannot initialise the decompressor");
        ce_src_free(s);
        return NULL;
    }
    return s;
}

void ce_src_free(struct ce_src *s)
{
    if (!s) return;
    progress_end(&s->prog);
    if (s->z) ZSTD_freeDStream(s->z);
    if (s->l) LZ4F_freeDecompressionContext(s->l);
    if (s->x_init) lzma_end(&s->x);
    free(s->ib);
    free(s);
}

struct ce_src *ce_src_mem(const uint8_t *p, size_t n)
{
    char err[128];
    struct ce_src *s = src_new(detect(p, n), -1, NULL, 0, err, sizeof err);
    if (s) {
        s->mem = p;
        s->mem_len = n;
    }
    return s;
}

int ce_input_open(const char *path, int one_pass, struct ce_input *in, char *err, size_t errlen)
{
    memset(in, 0, sizeof *in);
    in->fd = -1;
    int fd;
    int is_stdin = strcmp(path, "-") == 0;
    if (is_stdin) {
        fd = 0;
    } else {
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            snprintf(err, errlen, "cannot open: %s", strerror(errno));
            return -1;
        }
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot stat: %s", strerror(errno));
        if (!is_stdin) close(fd);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "is a directory");
        if (!is_stdin) close(fd);
        return -1;
    }
    uint8_t head[8];
    size_t hn = 0;
    int regular = S_ISREG(st.st_mode);
    if (regular) {
        ssize_t r = pread(fd, head, sizeof head, 0);
        hn = r > 0 ? (size_t)r : 0;
    } else {
        if (S_ISFIFO(st.st_mode)) (void)fcntl(fd, F_SETPIPE_SZ, PIPE_WANT); /* fewer, larger reads */
        while (hn < sizeof head) {
            ssize_t r = read(fd, head + hn, sizeof head - hn);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            hn += (size_t)r;
        }
    }
    in->fd = fd;
    enum fmt f = detect(head, hn);
    if (cli_input_kind(head, hn) == CLI_IS_RAW) {
        snprintf(err, errlen, "this is already a raw trace: decode it with funtrace-decode");
        ce_input_close(in);
        return -1;
    }
    if (f == F_PLAIN && regular && !one_pass) {
        in->is_file = 1;
        return 0;
    }
    if (f == F_PLAIN && (hn < SELFMAG || memcmp(head, ELFMAG, SELFMAG) != 0)) {
        /* a pipe or device that is not a core: say so now instead of reading
         * it (an endless input like /dev/zero would never end) */
        snprintf(err, errlen, hn ? "not an ELF file" : "empty input");
        ce_input_close(in);
        return -1;
    }
    static const char *names[] = { "", "zstd", "lz4", "xz" };
    snprintf(in->how, sizeof in->how, "%s%s%s", is_stdin ? "stdin" : f ? "" : "a file", is_stdin && f ? ", " : "",
             names[f]);
    /* a regular compressed file is read from its start; a pipe replays its head */
    if (regular) hn = 0;
    in->src = src_new(f, fd, head, hn, err, errlen);
    if (!in->src) {
        ce_input_close(in);
        return -1;
    }
    progress_begin(&in->src->prog, is_stdin ? "reading the core from stdin" : f ? "decompressing the core" : "reading the core",
                   regular ? (uint64_t)st.st_size : 0);
    return 0;
}

void ce_input_close(struct ce_input *in)
{
    ce_src_free(in->src);
    in->src = NULL;
    if (in->fd > 0) close(in->fd);
    in->fd = -1;
}
