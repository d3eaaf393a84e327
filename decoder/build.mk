# decoder/build.mk -- funtrace-decode (raw -> Chrome JSON / text / summary).
#
#   make funtrace-decode          the tool: $(BIN)/funtrace-decode
#                                 (SAN=1: ASan+UBSan build in build-san/bin)
#   make fuzz-decoder             libFuzzer harness over the raw parser and the
#                                 stack replay (clang), run for FUZZ_TIME seconds
#                                 (default 60) on decoder/fuzz/corpus (not in `all`)

DEC_CFLAGS := $(TOOL_CFLAGS) -Idecoder
DEC_LDFLAGS := $(TOOL_LDFLAGS)
DEC_LDLIBS := -ldw -lelf -ldl -lstdc++

# raw.c + raw.h: the reusable raw reader
DEC_LIB_SRCS := raw.c outbuf.c xalloc.c clock.c hmap.c demangle.c symtab.c gencuts.c ringevents.c replay.c json.c \
                text.c summary.c textfmt.c decode.c \
                sched_states.c sched_views.c
DEC_LIB_OBJS := $(patsubst %.c,$(OBJ)/decoder/%.o,$(DEC_LIB_SRCS))
DEC_BIN := $(BIN)/funtrace-decode

ALL_TARGETS += $(DEC_BIN)
SAN_TARGETS += $(DEC_BIN)
INSTALL_STEPS += install -m 755 $(DEC_BIN) $(DESTDIR)$(PREFIX)/bin/;

.PHONY: funtrace-decode fuzz-decoder
funtrace-decode: $(DEC_BIN)

$(OBJ)/decoder/%.o: decoder/%.c
	@mkdir -p $(@D)
	$(CC) $(DEC_CFLAGS) -c -o $@ $<

$(DEC_BIN): $(DEC_LIB_OBJS) $(OBJ)/decoder/main.o
	@mkdir -p $(@D)
	$(CC) $(DEC_LDFLAGS) -o $@ $^ $(DEC_LDLIBS)

# ---- fuzzing (clang libFuzzer + ASan/UBSan) --------------------------------
DEC_FUZZ_BIN := $(BUILD)/fuzz/decoder-fuzz
DEC_FUZZ_FLAGS := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -g -O1 \
                  $(CSTD) -Iruntime/include -Idecoder
FUZZ_TIME ?= 60

$(DEC_FUZZ_BIN): decoder/fuzz_raw.c $(addprefix decoder/,$(DEC_LIB_SRCS)) $(wildcard decoder/*.h)
	@mkdir -p $(@D)
	clang $(DEC_FUZZ_FLAGS) -o $@ decoder/fuzz_raw.c $(addprefix decoder/,$(DEC_LIB_SRCS)) $(DEC_LDLIBS)

fuzz-decoder: $(DEC_FUZZ_BIN)
	@mkdir -p $(BUILD)/fuzz/decoder-corpus $(BUILD)/fuzz/decoder-artifacts
	$(DEC_FUZZ_BIN) -max_total_time=$(FUZZ_TIME) -max_len=65536 -timeout=10 \
	    -artifact_prefix=$(BUILD)/fuzz/decoder-artifacts/ \
	    $(BUILD)/fuzz/decoder-corpus decoder/fuzz/corpus
