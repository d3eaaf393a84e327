/*
 * outfile.h -- an output file that is never left half-written (outfile.c):
 * PATH is written as PATH.tmp.PID in the same directory and renamed to PATH
 * once complete; on a write error, an early exit or a fatal signal the
 * temporary file is removed and an existing PATH stays untouched.  "-" is
 * stdout; a device, FIFO or terminal is written in place.
 */
#ifndef FT_DECODER_OUTFILE_H
#define FT_DECODER_OUTFILE_H

struct outfile {
    int fd;
    char *final; /* the file asked for (symlinks resolved) */
    char *tmp;   /* FINAL.tmp.PID being written; NULL: written in place */
    int slot;    /* in the list of temporary files to remove on exit */
};

/* 0, or an errno */
int outfile_open(struct outfile *f, const char *path);
/* writing is over (err: the first write error, 0 if none): close it and
 * move it into place; 0, or an errno (then nothing is left behind) */
int outfile_close(struct outfile *f, int err);
/* remove every temporary file being written (async-signal-safe: for a
 * signal handler about to end the process) */
void outfile_drop_all(void);

#endif
