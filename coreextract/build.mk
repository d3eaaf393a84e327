# coreextract/build.mk -- coreextract (cores and live pids -> raw), linking
# the shared reader (reader/, libfuntrace_reader.a).
#
#   make coreextract           the tool (SAN=1: ASan+UBSan build in build-san/)
#   make fuzz-coreextract      libFuzzer harness (clang) -> $(BUILD)/fuzz/coreextract-fuzz
#                              (not part of `all`); seeds: coreextract/fuzz_seeds.sh

CE_TOOL_SRCS := main.c extract_core.c corefile.c corestream.c ringlike.c input.c output.c
CE_TOOL_OBJS := $(patsubst %.c,$(OBJ)/coreextract/%.o,$(CE_TOOL_SRCS))
CE_LDLIBS := $(RD_LDLIBS) -lzstd -llz4 -llzma

ALL_TARGETS += $(BIN)/coreextract
SAN_TARGETS += $(BIN)/coreextract
INSTALL_STEPS += install -m 755 $(BIN)/coreextract $(DESTDIR)$(PREFIX)/bin/;

.PHONY: coreextract fuzz-coreextract
coreextract: $(BIN)/coreextract

$(OBJ)/coreextract/%.o: coreextract/%.c
	@mkdir -p $(@D)
	$(CC) $(TOOL_CFLAGS) $(UNW_CFLAGS) -Icoreextract -c -o $@ $<

$(BIN)/coreextract: $(CE_TOOL_OBJS) $(RD_LIB)
	@mkdir -p $(@D)
	$(CC) $(TOOL_LDFLAGS) -o $@ $(CE_TOOL_OBJS) $(RD_LIB) $(CE_LDLIBS)

# libFuzzer: the core parser + root finding + extraction + unwinding, all
# instrumented by clang (the reader's sources compiled into the harness), over
# one input = one core file.
CE_FUZZ := $(BUILD)/fuzz/coreextract-fuzz
CE_FUZZ_SRCS := coreextract/fuzz_core.c coreextract/corefile.c reader/maps.c reader/elfinfo.c \
                reader/rootfind.c reader/unwind.c reader/util.c reader/rawwrite.c reader/rawwrite_ring.c
fuzz-coreextract: $(CE_FUZZ)
$(CE_FUZZ): $(CE_FUZZ_SRCS) $(wildcard coreextract/*.h reader/*.h runtime/include/*.h)
	@mkdir -p $(@D)
	clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	    -Iruntime/include -Ireader -Icoreextract $(UNW_CFLAGS) -o $@ $(CE_FUZZ_SRCS) $(CE_LDLIBS)
