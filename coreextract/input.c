/* input.c -- plain, stdin and compressed cores (see input.h) */
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

enum fmt { F_PLAIN, F_ZSTD, F_LZ4, F_XZ };

static enum fmt detect(const uint8_t *h, size_t n)
{
    if (n >= 4 && memcmp(h, "\x28\xb5\x2f\xfd", 4) == 0) return F_ZSTD;
    if (n >= 4 && memcmp(h, "\x04\x22\x4d\x18", 4) == 0) return F_LZ4;
    if (n >= 6 && memcmp(h, "\xfd\x37\x7a\x58\x5a\x00", 6) == 0) return F_XZ;
    return F_PLAIN;
}

/* input stream: head bytes already read, then the fd */
struct src {
    int fd;
    const uint8_t *head;
    size_t head_len, head_pos;
    int eof;
    struct progress prog; /* on a terminal, for a long copy */
};

static ssize_t src_read(struct src *s, uint8_t *buf, size_t n)
{
    if (s->head_pos < s->head_len) {
        size_t k = s->head_len - s->head_pos;
        if (k > n) k = n;
        memcpy(buf, s->head + s->head_pos, k);
        s->head_pos += k;
        return (ssize_t)k;
    }
    for (;;) {
        ssize_t r = read(s->fd, buf, n);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) s->eof = 1;
        return r;
    }
}

static int make_temp(char *err, size_t errlen)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/coreextract-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create a temporary file in %s: %s", dir, strerror(errno));
        return -1;
    }
    unlink(path);
    return fd;
}

#define WERR() snprintf(err, errlen, "cannot write the temporary file: %s", strerror(errno))

/* the next block of input; -1 with err on a read error */
static ssize_t in_read(struct src *s, uint8_t *ib, char *err, size_t errlen)
{
    ssize_t r = src_read(s, ib, IOBUF);
    if (r < 0) snprintf(err, errlen, "read error: %s", strerror(errno));
    if (r > 0) progress_add(&s->prog, (uint64_t)r);
    return r;
}

static int copy_plain(struct src *s, int out, uint8_t *ib, char *err, size_t errlen)
{
    for (;;) {
        ssize_t r = in_read(s, ib, err, errlen);
        if (r < 0) return -1;
        if (r == 0) return 0;
        if (ce_write_all(out, ib, (size_t)r)) { WERR(); return -1; }
    }
}

static int unzstd(struct src *s, int out, uint8_t *ib, uint8_t *ob, int *trunc, char *err, size_t errlen)
{
    ZSTD_DStream *z = ZSTD_createDStream();
    if (!z) { snprintf(err, errlen, "zstd: out of memory"); return -1; }
    ZSTD_initDStream(z);
    size_t last = 0;
    int rc = 0;
    uint64_t inpos = 0;
    for (;;) {
        ssize_t r = in_read(s, ib, err, errlen);
        if (r < 0) { rc = -1; break; }
        if (r == 0) break;
        ZSTD_inBuffer in = { ib, (size_t)r, 0 };
        while (in.pos < in.size) {
            ZSTD_outBuffer o = { ob, IOBUF, 0 };
            last = ZSTD_decompressStream(z, &o, &in);
            if (ZSTD_isError(last)) {
                snprintf(err, errlen, "corrupt zstd data near compressed byte %llu: %s",
                         (unsigned long long)(inpos + in.pos), ZSTD_getErrorName(last));
                rc = -1;
                goto done;
            }
            if (ce_write_all(out, ob, o.pos)) { WERR(); rc = -1; goto done; }
        }
        inpos += (uint64_t)r;
    }
    /* flush what is buffered */
    for (;;) {
        ZSTD_inBuffer in = { NULL, 0, 0 };
        ZSTD_outBuffer o = { ob, IOBUF, 0 };
        size_t k = ZSTD_decompressStream(z, &o, &in);
        if (ZSTD_isError(k) || o.pos == 0) break;
        if (ce_write_all(out, ob, o.pos)) { WERR(); rc = -1; goto done; }
    }
    if (last != 0) *trunc = 1;
done:
    ZSTD_freeDStream(z);
    return rc;
}

static int unlz4(struct src *s, int out, uint8_t *ib, uint8_t *ob, int *trunc, char *err, size_t errlen)
{
    LZ4F_dctx *d;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION))) {
        snprintf(err, errlen, "lz4: out of memory");
        return -1;
    }
    size_t hint = 1;
    int rc = 0;
    uint64_t inpos = 0;
    for (;;) {
        ssize_t r = in_read(s, ib, err, errlen);
        if (r < 0) { rc = -1; break; }
        if (r == 0) break;
        size_t ipos = 0;
        while (ipos < (size_t)r) {
            size_t osz = IOBUF, isz = (size_t)r - ipos;
            hint = LZ4F_decompress(d, ob, &osz, ib + ipos, &isz, NULL);
            if (LZ4F_isError(hint)) {
                snprintf(err, errlen, "corrupt lz4 data near compressed byte %llu: %s",
                         (unsigned long long)(inpos + ipos), LZ4F_getErrorName(hint));
                rc = -1;
                goto done;
            }
            ipos += isz;
            if (ce_write_all(out, ob, osz)) { WERR(); rc = -1; goto done; }
            if (hint == 0 && ipos < (size_t)r) { /* next frame */
                LZ4F_resetDecompressionContext(d);
            }
        }
        inpos += (uint64_t)r;
    }
    if (rc == 0 && hint != 0) *trunc = 1;
done:
    LZ4F_freeDecompressionContext(d);
    return rc;
}

static int unxz(struct src *s, int out, uint8_t *ib, uint8_t *ob, int *trunc, char *err, size_t errlen)
{
    lzma_stream z = LZMA_STREAM_INIT;
    if (lzma_stream_decoder(&z, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK) {
        snprintf(err, errlen, "xz: cannot initialise the decoder");
        return -1;
    }
    int rc = 0;
    lzma_action act = LZMA_RUN;
    for (;;) {
        if (z.avail_in == 0 && act == LZMA_RUN) {
            ssize_t r = in_read(s, ib, err, errlen);
            if (r < 0) { rc = -1; break; }
            if (r == 0) act = LZMA_FINISH;
            z.next_in = ib;
            z.avail_in = (size_t)r;
        }
        z.next_out = ob;
        z.avail_out = IOBUF;
        lzma_ret ret = lzma_code(&z, act);
        size_t produced = IOBUF - z.avail_out;
        if (produced && ce_write_all(out, ob, produced)) { WERR(); rc = -1; break; }
        if (ret == LZMA_STREAM_END) break;
        if (ret == LZMA_BUF_ERROR && act == LZMA_FINISH) { *trunc = 1; break; }
        if (ret != LZMA_OK) {
            if (act == LZMA_FINISH && ret == LZMA_DATA_ERROR) { *trunc = 1; break; }
            snprintf(err, errlen, "corrupt xz data near compressed byte %llu (lzma error %d)",
                     (unsigned long long)z.total_in, (int)ret);
            rc = -1;
            break;
        }
    }
    lzma_end(&z);
    return rc;
}

int ce_input_open(const char *path, struct ce_input *in, char *err, size_t errlen)
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
        close(fd);
        return -1;
    }
    uint8_t head[8];
    size_t hn = 0;
    int regular = S_ISREG(st.st_mode);
    if (regular) {
        ssize_t r = pread(fd, head, sizeof head, 0);
        hn = r > 0 ? (size_t)r : 0;
    } else {
        while (hn < sizeof head) {
            ssize_t r = read(fd, head + hn, sizeof head - hn);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            hn += (size_t)r;
        }
    }
    enum fmt f = detect(head, hn);
    if (cli_input_kind(head, hn) == CLI_IS_RAW) {
        snprintf(err, errlen, "this is already a raw trace: decode it with funtrace-decode");
        if (!is_stdin) close(fd);
        return -1;
    }
    if (f == F_PLAIN && regular) {
        in->fd = fd;
        return 0;
    }
    if (f == F_PLAIN && (hn < SELFMAG || memcmp(head, ELFMAG, SELFMAG) != 0)) {
        /* a pipe or device that is not a core: say so now instead of
         * spooling it (an endless input like /dev/zero would never end) */
        snprintf(err, errlen, "not an ELF file");
        if (!is_stdin) close(fd);
        return -1;
    }
    static const char *names[] = { "", "zstd", "lz4", "xz" };
    snprintf(in->how, sizeof in->how, "%s%s%s", is_stdin ? "stdin" : "", is_stdin && f ? ", " : "", names[f]);
    int out = make_temp(err, errlen);
    if (out < 0) {
        if (!is_stdin) close(fd);
        return -1;
    }
    struct src s = { fd, head, regular ? 0 : hn, 0, 0, { 0 } };
    progress_begin(&s.prog, is_stdin ? "reading the core from stdin" : "decompressing the core",
                   regular ? (uint64_t)st.st_size : 0);
    uint8_t *ib = ce_xmalloc(IOBUF), *ob = ce_xmalloc(IOBUF);
    int rc;
    switch (f) {
    case F_ZSTD: rc = unzstd(&s, out, ib, ob, &in->truncated, err, errlen); break;
    case F_LZ4: rc = unlz4(&s, out, ib, ob, &in->truncated, err, errlen); break;
    case F_XZ: rc = unxz(&s, out, ib, ob, &in->truncated, err, errlen); break;
    default: rc = copy_plain(&s, out, ib, err, errlen); break;
    }
    progress_end(&s.prog);
    free(ib);
    free(ob);
    if (!is_stdin) close(fd);
    if (rc) {
        close(out);
        return -1;
    }
    in->fd = out;
    in->is_temp = 1;
    return 0;
}

void ce_input_close(struct ce_input *in)
{
    if (in->fd > 0) close(in->fd);
    in->fd = -1;
}
