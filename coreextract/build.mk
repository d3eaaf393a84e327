# coreextract/build.mk -- coreextract (cores and live pids -> raw) and
# libfuntrace_live.a (the live reader, linked by funtrace-oomwatch).
#
#   make coreextract           the tool (SAN=1: ASan+UBSan build in build-san/)
#   make fuzz-coreextract      libFuzzer harness (clang) -> $(BUILD)/fuzz/coreextract-fuzz
#                              (not part of `all`); seeds: coreextract/fuzz_seeds.sh

CE_LIVE_SRCS := live.c maps.c elfinfo.c rootfind.c unwind.c util.c
CE_TOOL_SRCS := main.c core_extract.c corefile.c input.c output.c
CE_LIVE_OBJS := $(patsubst %.c,$(OBJ)/coreextract/%.o,$(CE_LIVE_SRCS))
CE_TOOL_OBJS := $(patsubst %.c,$(OBJ)/coreextract/%.o,$(CE_TOOL_SRCS))
CE_UNW_CFLAGS := $(shell pkg-config --cflags libunwind-generic 2>/dev/null)
CE_UNW_LIBS := $(shell pkg-config --libs libunwind-generic 2>/dev/null)
CE_LDLIBS := -lelf $(CE_UNW_LIBS) -lzstd -llz4 -llzma
CE_LIVE_LIB := $(LIB)/libfuntrace_live.a

ALL_TARGETS += $(BIN)/coreextract $(CE_LIVE_LIB)
INSTALL_STEPS += install -m 755 $(BIN)/coreextract $(DESTDIR)$(PREFIX)/bin/;

.PHONY: coreextract fuzz-coreextract
coreextract: $(BIN)/coreextract

$(OBJ)/coreextract/%.o: coreextract/%.c
	@mkdir -p $(@D)
	$(CC) $(TOOL_CFLAGS) $(CE_UNW_CFLAGS) -Icoreextract -c -o $@ $<

$(CE_LIVE_LIB): $(CE_LIVE_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(BIN)/coreextract: $(CE_TOOL_OBJS) $(CE_LIVE_LIB) $(LIB)/libfuntrace_read.a
	@mkdir -p $(@D)
	$(CC) $(TOOL_LDFLAGS) -o $@ $(CE_TOOL_OBJS) $(CE_LIVE_LIB) $(LIB)/libfuntrace_read.a $(CE_LDLIBS)

# libFuzzer: the core parser + root finding + extraction + unwinding, all
# instrumented (rawwrite.c and rawwrite_ring.c compiled in), over one input = one core file.
CE_FUZZ := $(BUILD)/fuzz/coreextract-fuzz
CE_FUZZ_SRCS := coreextract/fuzz_core.c coreextract/corefile.c coreextract/maps.c coreextract/elfinfo.c \
                coreextract/rootfind.c coreextract/unwind.c coreextract/util.c runtime/rawwrite.c \
                runtime/rawwrite_ring.c
fuzz-coreextract: $(CE_FUZZ)
$(CE_FUZZ): $(CE_FUZZ_SRCS) $(wildcard coreextract/*.h runtime/include/*.h) runtime/rawwrite_int.h
	@mkdir -p $(@D)
	clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	    -Iruntime/include -Icoreextract $(CE_UNW_CFLAGS) -o $@ $(CE_FUZZ_SRCS) $(CE_LDLIBS)
