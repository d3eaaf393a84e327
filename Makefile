# funtrace: one Makefile builds everything into $(BUILD)/ (bin, lib, share/funtrace).
# Each component contributes a fragment (runtime/build.mk, coreextract/build.mk, ...)
# that appends its final artifacts to ALL_TARGETS and its install steps to INSTALL_STEPS.
#
#   make                 build everything into build/
#   make SAN=1           build the host tools (coreextract, funtrace-decode,
#                        funtrace-oomwatch) with ASan+UBSan into build-san/
#   make clean           remove build/ (and build-san/)
#   make install PREFIX=/usr/local
#   make test            run the pytest suite (same command as README)
#   make test-slow       the slow tier (fuzzing, sanitized sweeps, bench/run --quick, ...)
#   make test-realprogs  the real-programs tier (third-party programs, cached builds)
BUILD    ?= $(if $(SAN),build-san,build)
PREFIX   ?= /usr/local
CC       ?= gcc
CXX      ?= g++
OPT      ?= -O2
WARN     := -Wall -Wextra
CSTD     := -std=gnu11
comma    := ,
# objects linked into traced programs (the runtime, the reader's raw writer)
# carry no path of this tree in their debug info
FILE_PREFIX_MAP := -ffile-prefix-map=$(CURDIR)=.
# the sanitizer flags: defined here once, used by every host tool and the reader
SANFLAGS := $(if $(SAN),-fsanitize=address$(comma)undefined -fno-sanitize-recover=all -fno-omit-frame-pointer,)
# flags for host tools (coreextract, decoder, oomwatch); the runtime sets its own
TOOL_CFLAGS := $(CSTD) $(WARN) $(OPT) -g $(SANFLAGS) -Iruntime/include -Ireader -MMD -MP
TOOL_LDFLAGS := $(SANFLAGS)
# libunwind (the reader's unwinder) and the libraries every reader user links
UNW_CFLAGS := $(shell pkg-config --cflags libunwind-generic 2>/dev/null)
UNW_LIBS := $(shell pkg-config --libs libunwind-generic 2>/dev/null)

BIN := $(BUILD)/bin
LIB := $(BUILD)/lib
OBJ := $(BUILD)/obj
SHARE := $(BUILD)/share/funtrace

ALL_TARGETS :=
INSTALL_STEPS :=
# run after INSTALL_STEPS: what makes gdb load the installed files (gdb/build.mk)
INSTALL_LAST :=

.PHONY: all clean install test test-slow test-realprogs
all: all-targets

-include cli/build.mk
-include reader/build.mk
-include runtime/build.mk
-include wrapper/build.mk
-include funcount/build.mk
-include coreextract/build.mk
-include oomwatch/build.mk
-include sched/build.mk
-include decoder/build.mk
-include gdb/build.mk
-include examples/build.mk
-include bench/build.mk
-include man/build.mk

.PHONY: all-targets
# SAN=1 builds only the host tools: the runtime (linked into traced programs)
# and the reader objects it shares with them are never sanitized
all-targets: $(if $(SAN),$(SAN_TARGETS),$(ALL_TARGETS))

clean:
	rm -rf build build-san

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include \
	    $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/funtrace/gdb
	$(INSTALL_STEPS)
	$(INSTALL_LAST)

test: all
	/usr/bin/python3 -m pytest tests

# the slow tier: the tests marked slow (tests/conftest.py), left out of `make test`
test-slow: all
	FUNTRACE_SLOW=1 /usr/bin/python3 -m pytest tests -m slow

# the real-programs tier (tests/realprogs: redis, unbound, memcached from their
# Debian source packages; builds cached in /var/cache/funtrace-realprogs)
test-realprogs: all
	FUNTRACE_REALPROGS=1 /usr/bin/python3 -m pytest tests/realprogs

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)
