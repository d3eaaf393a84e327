/*
 * cli.h -- the command-line conventions every funtrace program shares
 * (cli.c): the --version line, the wording of usage errors, and the hint
 * for an input given to the wrong program.
 */
#ifndef FT_CLI_H
#define FT_CLI_H

/* the program's name in messages ("funtrace-decode") */
void cli_init(const char *prog);
const char *cli_prog(void);

/* --version: one line on stdout, "PROG (funtrace) VERSION; FORMAT: ABI N,
 * raw N"; returns 0 (the exit status) */
int cli_version(void);

/* a usage error: "PROG: MESSAGE (see PROG --help)" on stderr */
void cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* getopt_long returned '?' (unknown option) or ':' (an option without its
 * value; the option string must start with ':'): the usage error for it */
void cli_bad_option(int c, char **argv);

/* what a file given as an input is, by its first bytes: CLI_IS_CORE (an ELF
 * core file, possibly compressed), CLI_IS_RAW (a funtrace raw trace, ours
 * or the original funtrace's), CLI_IS_OTHER */
#define CLI_IS_OTHER 0
#define CLI_IS_CORE 1
#define CLI_IS_RAW 2
int cli_input_kind(const unsigned char *head, unsigned long len);

#endif
