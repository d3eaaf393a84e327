# bench/build.mk -- the benchmark programs (NOT part of `make all`), built into
# $(BUILD)/bench/ by `make bench`; bench/run builds them and runs them.
#
#   hp-*         the hook microbenchmark (bench/hotpath.c), once per mode:
#                none (plain gcc), pg / finstr (funtrace-gcc), clang
#                (funtrace-clang), floor-* (linked with the bench-local floor
#                hooks bench/floor_*.{S,c} instead of the runtime; the -pg
#                ones are compiled with -pg but linked without it, so they get
#                crt1.o, not gcrt1.o, and never write gmon.out),
#                empty-* (linked with bench/floor_empty.S: hooks that only
#                return, the instrumentation's own cost),
#                pg-nomode / finstr-nomode (control: the runtime with its own
#                hook source minus the mode test, see below)
#   thr-*        thread create+join (bench/threads.c), none / pg
#   dl-*, libdl-*.so   dlopen+dlclose (bench/dlopen_main.c, dlopen_lib.c)
#   bigcore-*    the core / snapshot maker for the coreextract, gdb and decoder
#                benchmarks (bench/bigcore.c), pg / finstr
#   runstat      wall time + peak RSS of a command
#   speedprobe   how fast the CPU runs right now (a fixed dependent chain, ns)

BB := $(BUILD)/bench
BENCH_GCC := gcc
BENCH_CLANG := clang
BENCH_HAVE_CLANG := $(shell command -v $(BENCH_CLANG) 2>/dev/null)
BENCH_CFLAGS := -std=gnu11 -Wall -Wextra -O2 -g -pthread -Iruntime/include
BENCH_PG := -pg -mfentry -minstrument-return=call
# what the funtrace wrappers add when linking an executable (minus the
# runtime archive): used for the control links
BENCH_RT_LDFLAGS := -ldl -pthread -Wl,--export-dynamic-symbol=funtrace_root \
    -Wl,--export-dynamic-symbol=__fentry__ -Wl,--export-dynamic-symbol=__return__ \
    -Wl,--export-dynamic-symbol=__cyg_profile_func_enter \
    -Wl,--export-dynamic-symbol=__cyg_profile_func_exit \
    -Wl,--export-dynamic-symbol=__cxa_begin_catch -Wl,--export-dynamic-symbol=dlopen \
    -Wl,--export-dynamic-symbol=dlclose -Wl,--export-dynamic-symbol=pthread_setname_np \
    '-Wl,--export-dynamic-symbol=funtrace_*'
BENCH_WRAP_DEPS := $(BIN)/funtrace-gcc $(BIN)/funtrace-clang $(LIB)/libfuntrace.a

BENCH_HP := $(BB)/hp-none $(BB)/hp-pg $(BB)/hp-finstr $(BB)/hp-floor-pg \
    $(BB)/hp-floor-pg-counter $(BB)/hp-floor-finstr $(BB)/hp-pg-nomode \
    $(BB)/hp-finstr-nomode $(BB)/hp-empty-pg $(BB)/hp-empty-finstr
ifneq ($(BENCH_HAVE_CLANG),)
BENCH_HP += $(BB)/hp-clang $(BB)/hp-floor-clang $(BB)/hp-empty-clang
endif
BENCH_PROGS := $(BENCH_HP) $(BB)/thr-none $(BB)/thr-pg $(BB)/dl-none $(BB)/dl-pg \
    $(BB)/libdl-none.so $(BB)/libdl-pg.so $(BB)/bigcore-pg $(BB)/bigcore-finstr $(BB)/runstat $(BB)/speedprobe
# the tools the benchmarks measure
BENCH_TOOLS := $(BIN)/coreextract $(BIN)/funtrace-decode $(SHARE)/gdb/funtrace.py

.PHONY: bench
bench: $(BENCH_PROGS) $(BENCH_TOOLS)

HP_SRC := bench/hotpath.c
HP_DEPS := $(HP_SRC) runtime/include/funtrace_abi.h

$(BB)/hp-none: $(HP_DEPS)
	@mkdir -p $(@D)
	$(BENCH_GCC) $(BENCH_CFLAGS) -o $@ $(HP_SRC)
$(BB)/hp-pg: $(HP_DEPS) $(BENCH_WRAP_DEPS)
	@mkdir -p $(@D)
	FUNTRACE_INSTR=pg $(BIN)/funtrace-gcc $(BENCH_CFLAGS) -o $@ $(HP_SRC)
$(BB)/hp-finstr: $(HP_DEPS) $(BENCH_WRAP_DEPS)
	@mkdir -p $(@D)
	FUNTRACE_INSTR=finstr $(BIN)/funtrace-gcc $(BENCH_CFLAGS) -o $@ $(HP_SRC)
$(BB)/hp-clang: $(HP_DEPS) $(BENCH_WRAP_DEPS)
	@mkdir -p $(@D)
	FUNTRACE_INSTR= $(BIN)/funtrace-clang $(BENCH_CFLAGS) -o $@ $(HP_SRC)

# the floor hooks
$(BB)/obj/floor_rec.o: bench/floor_rec.c bench/floor.h
	@mkdir -p $(@D)
	$(BENCH_GCC) $(BENCH_CFLAGS) -fno-instrument-functions -ftls-model=initial-exec -c -o $@ $<
$(BB)/obj/floor_pg.o: bench/floor_pg.S
	@mkdir -p $(@D)
	$(BENCH_GCC) -c -o $@ $<
$(BB)/obj/floor_pg_counter.o: bench/floor_pg.S
	@mkdir -p $(@D)
	$(BENCH_GCC) -DBENCH_COUNTER -c -o $@ $<
$(BB)/obj/floor_empty.o: bench/floor_empty.S
	@mkdir -p $(@D)
	$(BENCH_GCC) -c -o $@ $<
$(BB)/obj/floor_cyg.o: bench/floor_cyg.c bench/floor.h
	@mkdir -p $(@D)
	$(BENCH_GCC) $(BENCH_CFLAGS) -fno-instrument-functions -c -o $@ $<

# -pg objects linked WITHOUT -pg: gcc -pg at link time brings gcrt1.o, whose
# atexit(_mcleanup) writes gmon.out into the working directory (the runtime
# defines no-op __monstartup/_mcleanup for that; the floor binaries don't
# have the runtime).  -mfentry code only calls __fentry__, never mcount.
$(BB)/obj/hotpath_pg.o: $(HP_DEPS)
	@mkdir -p $(@D)
	$(BENCH_GCC) $(BENCH_CFLAGS) $(BENCH_PG) -c -o $@ $(HP_SRC)
$(BB)/hp-floor-pg: $(BB)/obj/hotpath_pg.o $(BB)/obj/floor_pg.o $(BB)/obj/floor_rec.o
	$(BENCH_GCC) $(BENCH_CFLAGS) -o $@ $^
$(BB)/hp-floor-pg-counter: $(BB)/obj/hotpath_pg.o $(BB)/obj/floor_pg_counter.o $(BB)/obj/floor_rec.o
	$(BENCH_GCC) $(BENCH_CFLAGS) -o $@ $^
$(BB)/hp-empty-pg: $(BB)/obj/hotpath_pg.o $(BB)/obj/floor_empty.o
	$(BENCH_GCC) $(BENCH_CFLAGS) -o $@ $^
$(BB)/hp-empty-finstr: $(HP_DEPS) $(BB)/obj/floor_empty.o
	$(BENCH_GCC) $(BENCH_CFLAGS) -finstrument-functions -o $@ $(HP_SRC) $(filter %.o,$^)
$(BB)/hp-empty-clang: $(HP_DEPS) $(BB)/obj/floor_empty.o
	$(BENCH_CLANG) $(BENCH_CFLAGS) -finstrument-functions-after-inlining -o $@ $(HP_SRC) $(filter %.o,$^)
$(BB)/hp-floor-finstr: $(HP_DEPS) $(BB)/obj/floor_cyg.o $(BB)/obj/floor_rec.o
	$(BENCH_GCC) $(BENCH_CFLAGS) -finstrument-functions -o $@ $(HP_SRC) $(filter %.o,$^)
$(BB)/hp-floor-clang: $(HP_DEPS) $(BB)/obj/floor_cyg.o $(BB)/obj/floor_rec.o
	$(BENCH_CLANG) $(BENCH_CFLAGS) -finstrument-functions-after-inlining -o $@ $(HP_SRC) $(filter %.o,$^)

# Control for "the exact mode is not slower because the sampled mode exists":
# the runtime's own hooks with the mode test taken out, linked with
# the rest of the runtime's objects.  -pg: runtime/hooks_pg.S assembled with
# FT_BENCH_NOMODE (the exact path alone, from the hooks' entry: no compare,
# no branch to it); finstr: runtime/hooks_cyg.c compiled with
# ft_hook_mode = FT_MODE_EXACT (bench/cyg_nomode.c).
BENCH_RT_NOPG := $(filter-out $(OBJ)/runtime/hooks_pg.S.o,$(RT_OBJS) $(RD_RAW_OBJS))
BENCH_RT_NOCYG := $(filter-out $(OBJ)/runtime/hooks_cyg.o,$(RT_OBJS) $(RD_RAW_OBJS))
BENCH_RT_HDRS := $(wildcard runtime/*.h runtime/include/*.h)
$(BB)/obj/hooks_pg_nomode.o: runtime/hooks_pg.S $(BENCH_RT_HDRS)
	@mkdir -p $(@D)
	@grep -q 'FT_BENCH_NOMODE' $< || { echo "bench/build.mk: runtime/hooks_pg.S has no FT_BENCH_NOMODE build any more" >&2; exit 1; }
	$(BENCH_GCC) -DFT_BENCH_NOMODE -Iruntime/include -Iruntime -c -o $@ $<
$(BB)/obj/cyg_nomode.o: bench/cyg_nomode.c runtime/hooks_cyg.c $(BENCH_RT_HDRS)
	@mkdir -p $(@D)
	$(BENCH_GCC) $(filter-out -MMD -MP,$(RT_CFLAGS)) -c -o $@ $<
$(BB)/hp-pg-nomode: $(BB)/obj/hotpath_pg.o $(BB)/obj/hooks_pg_nomode.o $(BENCH_RT_NOPG)
	$(BENCH_GCC) $(BENCH_CFLAGS) $(BENCH_PG) -o $@ $^ $(BENCH_RT_LDFLAGS)
$(BB)/hp-finstr-nomode: $(HP_DEPS) $(BB)/obj/cyg_nomode.o $(BENCH_RT_NOCYG)
	$(BENCH_GCC) $(BENCH_CFLAGS) -finstrument-functions -o $@ $(HP_SRC) $(filter %.o,$^) $(BENCH_RT_LDFLAGS)

# thread create+join, dlopen+dlclose
$(BB)/thr-none: bench/threads.c
	@mkdir -p $(@D)
	$(BENCH_GCC) $(BENCH_CFLAGS) -o $@ $<
$(BB)/thr-pg: bench/threads.c $(BENCH_WRAP_DEPS)
	@mkdir -p $(@D)
	FUNTRACE_INSTR=pg $(BIN)/funtrace-gcc $(BENCH_CFLAGS) -o $@ $<
$(BB)/dl-none: bench/dlopen_main.c
	@mkdir -p $(@D)
	$(BENCH_GCC) $(BENCH_CFLAGS) -o $@ $< -ldl
$(BB)/dl-pg: bench/dlopen_main.c $(BENCH_WRAP_DEPS)
	@mkdir -p $(@D)
	FUNTRACE_INSTR=pg $(BIN)/funtrace-gcc $(BENCH_CFLAGS) -o $@ $< -ldl
$(BB)/libdl-none.so: bench/dlopen_lib.c
	@mkdir -p $(@D)
	$(BENCH_GCC) $(BENCH_CFLAGS) -shared -fPIC -o $@ $<
$(BB)/libdl-pg.so: bench/dlopen_lib.c $(BENCH_WRAP_DEPS)
	@mkdir -p $(@D)
	FUNTRACE_INSTR=pg $(BIN)/funtrace-gcc $(BENCH_CFLAGS) -shared -fPIC -o $@ $<

# core / snapshot maker
$(BB)/bigcore-pg: bench/bigcore.c $(BENCH_WRAP_DEPS)
	@mkdir -p $(@D)
	FUNTRACE_INSTR=pg $(BIN)/funtrace-gcc $(BENCH_CFLAGS) -o $@ $<
$(BB)/bigcore-finstr: bench/bigcore.c $(BENCH_WRAP_DEPS)
	@mkdir -p $(@D)
	FUNTRACE_INSTR=finstr $(BIN)/funtrace-gcc $(BENCH_CFLAGS) -o $@ $<

$(BB)/runstat: bench/runstat.c
	@mkdir -p $(@D)
	$(BENCH_GCC) $(BENCH_CFLAGS) -o $@ $<
$(BB)/speedprobe: bench/speedprobe.c
	@mkdir -p $(@D)
	$(BENCH_GCC) $(BENCH_CFLAGS) -o $@ $<
