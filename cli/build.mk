# cli/build.mk -- the command-line conventions every program links
# (libfuntrace_cli.a): the --version line, the usage-error wording, the hint
# for an input given to the wrong program, progress on a terminal.

# the project version (one place: the programs' --version, funtrace.pc, the
# wrappers and the man pages take it from here)
FT_VERSION := 1.0.0
# the FORMAT versions, from the ABI header (for the scripts and man pages)
FT_ABI := $(shell sed -n 's/^\#define FT_ABI_VERSION \([0-9]*\)u.*/\1/p' runtime/include/funtrace_abi.h)
FT_RAW := $(shell sed -n 's/^\#define FT_RAW_VERSION \([0-9]*\)u.*/\1/p' runtime/include/funtrace_abi.h)

CLI_SRCS := $(wildcard cli/*.c)
CLI_OBJS := $(patsubst cli/%.c,$(OBJ)/cli/%.o,$(CLI_SRCS))
CLI_LIB := $(LIB)/libfuntrace_cli.a
CLI_CFLAGS := $(TOOL_CFLAGS) -Icli -DFT_VERSION='"$(FT_VERSION)"'

ALL_TARGETS += $(CLI_LIB)
SAN_TARGETS += $(CLI_LIB)

$(OBJ)/cli/%.o: cli/%.c
	@mkdir -p $(@D)
	$(CC) $(CLI_CFLAGS) -c -o $@ $<

$(CLI_LIB): $(CLI_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^
