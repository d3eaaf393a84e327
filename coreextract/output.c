/* output.c -- stdout or FILE via FILE.tmp + rename (see output.h) */
#include "output.h"
#include "live.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ce_out_open(struct ce_out *out, const char *path, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->o = ce_xcalloc(1, sizeof *out->o);
    out->w.ctx = out->o;
    out->w.write = ce_fdout_write;
    if (!path || strcmp(path, "-") == 0) {
        if (isatty(1)) {
            snprintf(err, errlen, "refusing to write binary raw data to a terminal; use -o FILE or redirect stdout");
            return FT_EXIT_BADINPUT;
        }
        out->o->fd = 1;
        return 0;
    }
    out->path = ce_xstrdup(path);
    size_t n = strlen(path) + 8;
    out->tmp = ce_xmalloc(n);
    snprintf(out->tmp, n, "%s.tmp", path);
    out->o->fd = open(out->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out->o->fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", out->tmp, strerror(errno));
        return FT_EXIT_WRITE;
    }
    return 0;
}

int ce_out_commit(struct ce_out *out, char *err, size_t errlen)
{
    if (ce_fdout_flush(out->o) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", out->tmp ? out->tmp : "stdout", strerror(out->o->err));
        return -1;
    }
    if (!out->path) return 0;
    if (close(out->o->fd) != 0) {
        out->o->fd = -1;
        snprintf(err, errlen, "cannot write %s: %s", out->tmp, strerror(errno));
        return -1;
    }
    out->o->fd = -1;
    if (rename(out->tmp, out->path) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", out->tmp, out->path, strerror(errno));
        return -1;
    }
    free(out->tmp);
    out->tmp = NULL;
    return 0;
}

void ce_out_abort(struct ce_out *out)
{
    if (out->path && out->tmp) {
        if (out->o && out->o->fd >= 0) close(out->o->fd);
        unlink(out->tmp);
    }
    free(out->tmp);
    free(out->path);
    free(out->o);
    memset(out, 0, sizeof *out);
}
