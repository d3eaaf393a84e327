# decoder/build.mk -- funtrace-decode (raw -> Chrome JSON / text / summary).
#
#   make funtrace-decode          the tool: $(BIN)/funtrace-decode
#                                 (SAN=1: ASan+UBSan build in build-san/bin)
#   make fuzz-decoder             libFuzzer harness over the raw parser and the
#                                 stack replay (clang), run for FUZZ_TIME seconds
#                                 (default 60) on decoder/fuzz/corpus (not in `all`)

DEC_GEN := $(OBJ)/decoder/gen
DEC_CFLAGS := $(TOOL_CFLAGS) -Idecoder -Icli -I$(DEC_GEN)
DEC_LDFLAGS := $(TOOL_LDFLAGS)
DEC_LDLIBS := -ldw -lelf -ldl -lstdc++ -lprotobuf-c -ldeflate -pthread

# raw.c + raw.h: the reusable raw reader
DEC_LIB_SRCS := raw.c outbuf.c xalloc.c clock.c hmap.c demangle.c symtab.c gencuts.c genestimate.c ringevents.c ring8.c ring4.c replay.c json.c symwarm.c dbginflate.c dbgcache.c \
                text.c finalstack.c foldcycle.c summary.c tracefacts.c textfmt.c viewtee.c textwindow.c timearg.c filter.c outfile.c batchtree.c report.c flamegraph.c perfetto.c pfwire.c outputs.c decwarn.c decode.c \
                sched_states.c sched_views.c faults.c pltname.c
DEC_LIB_OBJS := $(patsubst %.c,$(OBJ)/decoder/%.o,$(DEC_LIB_SRCS)) $(DEC_GEN)/perfetto_subset.pb-c.o
DEC_BIN := $(BIN)/funtrace-decode

ALL_TARGETS += $(DEC_BIN)
SAN_TARGETS += $(DEC_BIN)
INSTALL_STEPS += install -m 755 $(DEC_BIN) $(DESTDIR)$(PREFIX)/bin/;

.PHONY: funtrace-decode fuzz-decoder
funtrace-decode: $(DEC_BIN)

$(OBJ)/decoder/%.o: decoder/%.c
	@mkdir -p $(@D)
	$(CC) $(DEC_CFLAGS) -c -o $@ $<
# replay.c: gcc's SLP vectorizer joins the replay's paired stores (prev_ns
# and last_ns, ...) into 16-byte vector stores that the next event loads back
# as 8-byte scalars, and that forwarding is slow: 2-3% of a decode
$(OBJ)/decoder/replay.o: DEC_CFLAGS += -fno-tree-slp-vectorize

# --perfetto: the C code for perfetto_subset.proto, made by protoc-c (protobuf-c)
$(DEC_GEN)/perfetto_subset.pb-c.c $(DEC_GEN)/perfetto_subset.pb-c.h: decoder/perfetto_subset.proto
	@mkdir -p $(DEC_GEN)
	protoc-c --proto_path=decoder --c_out=$(DEC_GEN) $<
$(DEC_GEN)/perfetto_subset.pb-c.o: $(DEC_GEN)/perfetto_subset.pb-c.c
	$(CC) $(DEC_CFLAGS) -c -o $@ $<
$(OBJ)/decoder/perfetto.o $(OBJ)/decoder/pfwire.o: $(DEC_GEN)/perfetto_subset.pb-c.h

$(DEC_BIN): $(DEC_LIB_OBJS) $(OBJ)/decoder/main.o $(CLI_LIB) $(RD_LIB)
	@mkdir -p $(@D)
	$(CC) $(DEC_LDFLAGS) -o $@ $^ $(DEC_LDLIBS)

# ---- fuzzing (clang libFuzzer + ASan/UBSan) --------------------------------
DEC_FUZZ_BIN := $(BUILD)/fuzz/decoder-fuzz
DEC_FUZZ_FLAGS := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -g -O1 \
                  $(CSTD) -Iruntime/include -Ireader -Idecoder -Icli -DFT_VERSION='"$(FT_VERSION)"'
FUZZ_TIME ?= 60

# (the reader's ELF note parser, dbginflate.c's, built with the harness's flags too)
$(DEC_FUZZ_BIN): decoder/fuzz_raw.c $(addprefix decoder/,$(DEC_LIB_SRCS)) $(CLI_SRCS) $(wildcard decoder/*.h cli/*.h) \
                 $(DEC_GEN)/perfetto_subset.pb-c.c reader/elfinfo.c reader/elfinfo.h
	@mkdir -p $(@D)
	clang $(DEC_FUZZ_FLAGS) -I$(DEC_GEN) -o $@ decoder/fuzz_raw.c $(addprefix decoder/,$(DEC_LIB_SRCS)) \
	    $(DEC_GEN)/perfetto_subset.pb-c.c reader/elfinfo.c $(CLI_SRCS) $(DEC_LDLIBS)

fuzz-decoder: $(DEC_FUZZ_BIN)
	@mkdir -p $(BUILD)/fuzz/decoder-corpus $(BUILD)/fuzz/decoder-artifacts decoder/fuzz/corpus
	$(DEC_FUZZ_BIN) -max_total_time=$(FUZZ_TIME) -max_len=65536 -timeout=10 -close_fd_mask=2 \
	    -artifact_prefix=$(BUILD)/fuzz/decoder-artifacts/ \
	    $(BUILD)/fuzz/decoder-corpus decoder/fuzz/corpus
