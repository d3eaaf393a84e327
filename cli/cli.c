/*
 * cli.c -- see cli.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "funtrace_abi.h"

#ifndef FT_VERSION
#error "FT_VERSION (the project version) comes from the Makefile"
#endif

static const char *prog = "funtrace";

void cli_init(const char *name)
{
    prog = name;
}

const char *cli_prog(void)
{
    return prog;
}

int cli_version(void)
{
    printf("%s (funtrace) %s; FORMAT: ABI %u, raw %u\n", prog, FT_VERSION, FT_ABI_VERSION, FT_RAW_VERSION);
    return 0;
}

void cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see %s --help)\n", prog);
    va_end(ap);
}

void cli_bad_option(int c, char **argv)
{
    extern int optind, optopt;
    /* getopt leaves optind after the offending element */
    const char *arg = optind > 0 ? argv[optind - 1] : "?";
    char shortopt[3] = {'-', (char)optopt, 0};
    /* an unknown short option inside a cluster (-xz): name the letter */
    if (optopt && arg[0] == '-' && arg[1] != '-')
        arg = shortopt;
    if (c == ':')
        cli_usage_error("option '%s' needs a value", arg);
    else
        cli_usage_error("unknown option '%s'", arg);
}

int cli_input_kind(const unsigned char *h, unsigned long n)
{
    static const unsigned char elf[] = {0x7f, 'E', 'L', 'F'};
    static const unsigned char zstd[] = {0x28, 0xb5, 0x2f, 0xfd}, lz4[] = {0x04, 0x22, 0x4d, 0x18},
                               xz[] = {0xfd, '7', 'z', 'X', 'Z', 0};
    if (n >= 18 && !memcmp(h, elf, 4))
        return h[16] == 4 && h[17] == 0 ? CLI_IS_CORE : CLI_IS_OTHER; /* e_type ET_CORE */
    if ((n >= 4 && (!memcmp(h, zstd, 4) || !memcmp(h, lz4, 4))) || (n >= 6 && !memcmp(h, xz, 6)))
        return CLI_IS_CORE; /* coreextract reads compressed cores */
    /* a raw starts with a chunk (8-byte magic, 8-byte length): FUNTRACE in
     * ours and the original funtrace's (FORMAT.md 2.1) */
    if (n >= FT_CHUNK_MAGIC_LEN && (!memcmp(h, FT_CHUNK_FUNTRACE, FT_CHUNK_MAGIC_LEN) ||
                                    !memcmp(h, FT_CHUNK_HEADER, FT_CHUNK_MAGIC_LEN)))
        return CLI_IS_RAW;
    return CLI_IS_OTHER;
}
