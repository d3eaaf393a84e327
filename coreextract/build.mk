# coreextract/build.mk -- coreextract (cores and live pids -> raw), linking
# the shared reader (reader/, libfuntrace_reader.a).
#
#   make coreextract           the tool (SAN=1: ASan+UBSan build in build-san/)
#   make fuzz [FUZZ_TIME=S]    build both fuzz harnesses and run each S seconds (below)
#   make fuzz-coreextract      the libFuzzer harness only -> $(BUILD)/fuzz/coreextract-fuzz
#   make fuzz-coreextract-afl  the AFL++ harness only -> $(BUILD)/fuzz/coreextract-afl

CE_TOOL_SRCS := main.c extract_core.c corestream.c corekeep.c coreplan.c ringlike.c slimcore.c input.c output.c
CE_TOOL_OBJS := $(patsubst %.c,$(OBJ)/coreextract/%.o,$(CE_TOOL_SRCS))
CE_LDLIBS := $(RD_LDLIBS) -lzstd -llz4 -llzma

ALL_TARGETS += $(BIN)/coreextract
SAN_TARGETS += $(BIN)/coreextract
INSTALL_STEPS += install -m 755 $(BIN)/coreextract $(DESTDIR)$(PREFIX)/bin/;

.PHONY: coreextract fuzz-coreextract
coreextract: $(BIN)/coreextract

$(OBJ)/coreextract/%.o: coreextract/%.c
	@mkdir -p $(@D)
	$(CC) $(TOOL_CFLAGS) $(UNW_CFLAGS) -Icoreextract -Icli -c -o $@ $<

$(BIN)/coreextract: $(CE_TOOL_OBJS) $(RD_LIB) $(CLI_LIB)
	@mkdir -p $(@D)
	$(CC) $(TOOL_LDFLAGS) -o $@ $(CE_TOOL_OBJS) $(RD_LIB) $(CLI_LIB) $(CE_LDLIBS)

# Fuzzing (FUZZING.md): one harness, coreextract/fuzz_core.c, over everything
# `coreextract CORE` runs (the reader's and coreextract's sources compiled into
# it, instrumented), built twice: for libFuzzer (clang, ASan+UBSan) and for
# AFL++ (afl-clang-fast and its libAFLDriver, UBSan only: ~3x the executions
# per second; what it finds is replayed through the ASan build).  `make fuzz`
# builds both and runs each for FUZZ_TIME seconds (default 60) from the seed
# cores kept in the tree (coreextract/fuzz/seeds, made by
# coreextract/fuzz_seeds.sh), then replays AFL++'s queue, crashes and hangs
# with the ASan+UBSan binary; crashes land in $(BUILD)/fuzz/ and are kept as
# regression tests in coreextract/fuzz/regressions (tests/test_fuzz.py).
CE_FUZZ := $(BUILD)/fuzz/coreextract-fuzz
CE_AFL := $(BUILD)/fuzz/coreextract-afl
CE_FUZZ_SRCS := coreextract/fuzz_core.c $(addprefix coreextract/,$(filter-out main.c,$(CE_TOOL_SRCS))) $(RD_SRCS) \
                $(wildcard cli/*.c)
# hot leaf functions left out of the coverage instrumentation (see the file)
CE_NOCOV := coreextract/fuzz/nocov.txt
CE_FUZZ_DEPS := $(CE_FUZZ_SRCS) $(CE_NOCOV) $(wildcard coreextract/*.h reader/*.h runtime/include/*.h cli/*.h)
# RW_MAX_THREADS: a corrupt root may claim a registry of a million records, each
# read and found missing; the same code with 65536 costs a sixteenth per run
CE_FUZZ_CFLAGS := -std=gnu11 -g -O1 -fno-sanitize-recover=all -Iruntime/include -Ireader -Icoreextract -Icli \
                  -DRW_MAX_THREADS=65536u -DFT_VERSION='"$(FT_VERSION)"' $(UNW_CFLAGS)
# the libFuzzer build's sanitizers (long campaigns: `undefined` alone runs ~3x
# faster; replay the corpus with the default build afterwards)
CE_FUZZ_SAN ?= address,undefined
# more flags for that build, e.g. -fno-sanitize-coverage=trace-cmp (~1.4x faster, no comparison guidance)
CE_FUZZ_EXTRA ?=
CE_SEEDS := coreextract/fuzz/seeds
# a smaller quarantine: the harness frees ~1 MB per run
CE_ASAN_ENV := ASAN_OPTIONS=quarantine_size_mb=32
FUZZ_TIME ?= 60
# AFL++: no CPU governor check, no UI; a crash's core is not needed
CE_AFL_ENV := AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_AUTORESUME=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_AFFINITY=1

.PHONY: fuzz fuzz-coreextract fuzz-coreextract-afl
fuzz-coreextract: $(CE_FUZZ)
fuzz-coreextract-afl: $(CE_AFL)
# the libFuzzer build's own flags, in a file rewritten only when they change:
# `make fuzz-coreextract CE_FUZZ_SAN=undefined` rebuilds the harness
CE_FUZZ_FLAGS := $(BUILD)/fuzz/coreextract-fuzz.flags
.PHONY: ce-fuzz-flags-force
$(CE_FUZZ_FLAGS): ce-fuzz-flags-force
	@mkdir -p $(@D)
	@echo '$(CE_FUZZ_SAN) $(CE_FUZZ_EXTRA)' | cmp -s - $@ || echo '$(CE_FUZZ_SAN) $(CE_FUZZ_EXTRA)' > $@
$(CE_FUZZ): $(CE_FUZZ_DEPS) $(CE_FUZZ_FLAGS)
	@mkdir -p $(@D)
	clang $(CE_FUZZ_CFLAGS) -fsanitize=fuzzer,$(CE_FUZZ_SAN) $(CE_FUZZ_EXTRA) -fsanitize-coverage-ignorelist=$(CE_NOCOV) \
	    -o $@ $(CE_FUZZ_SRCS) $(CE_LDLIBS)
$(CE_AFL): $(CE_FUZZ_DEPS)
	@mkdir -p $(@D)
	AFL_QUIET=1 AFL_LLVM_DENYLIST=$(CE_NOCOV) afl-clang-fast $(CE_FUZZ_CFLAGS) -fsanitize=fuzzer,undefined \
	    -o $@ $(CE_FUZZ_SRCS) $(CE_LDLIBS)

fuzz: $(CE_FUZZ) $(CE_AFL)
	@mkdir -p $(BUILD)/fuzz/libfuzzer-corpus $(BUILD)/fuzz/libfuzzer-crashes
	$(CE_ASAN_ENV) $(CE_FUZZ) -max_total_time=$(FUZZ_TIME) -max_len=1048576 -timeout=20 -rss_limit_mb=4096 \
	    -close_fd_mask=3 -print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/libfuzzer-crashes/ \
	    $(BUILD)/fuzz/libfuzzer-corpus $(CE_SEEDS)
	$(CE_AFL_ENV) afl-fuzz -V $(FUZZ_TIME) -m none -t 20000 -i $(CE_SEEDS) \
	    -o $(BUILD)/fuzz/afl -- $(CE_AFL)
	@grep -E '^(execs_done|saved_crashes|saved_hangs) ' $(BUILD)/fuzz/afl/default/fuzzer_stats
	$(CE_ASAN_ENV) $(CE_FUZZ) -runs=0 -close_fd_mask=3 -timeout=20 -rss_limit_mb=4096 \
	    -artifact_prefix=$(BUILD)/fuzz/libfuzzer-crashes/ $(BUILD)/fuzz/afl/default/queue \
	    $(BUILD)/fuzz/afl/default/crashes $(BUILD)/fuzz/afl/default/hangs
