# bench/build.mk -- the benchmark programs (NOT part of `make all`), built into
# $(BUILD)/bench/ by `make bench`; bench/run builds them and runs them.
#
#   hp-*         the hook microbenchmark (bench/hotpath.c), once per mode:
#                none (plain gcc), pg / finstr (funtrace-gcc), clang
#                (funtrace-clang), floor-* (linked with the bench-local floor
#                hooks bench/floor_*.{S,c} instead of the runtime),
#                proto-* (the runtime with the hook prototypes of bench/proto/)
#   thr-*        thread create+join (bench/threads.c), none / pg
#   dl-*, libdl-*.so   dlopen+dlclose (bench/dlopen_main.c, dlopen_lib.c)
#   bigcore-*    the core / snapshot maker for the coreextract, gdb and decoder
#                benchmarks (bench/bigcore.c), pg / finstr
#   runstat      wall time + peak RSS of a command

BB := $(BUILD)/bench
BENCH_GCC := gcc
BENCH_CLANG := clang
BENCH_HAVE_CLANG := $(shell command -v $(BENCH_CLANG) 2>/dev/null)
BENCH_CFLAGS := -std=gnu11 -Wall -Wextra -O2 -g -pthread -Iruntime/include
BENCH_PG := -pg -mfentry -minstrument-return=call
# what the funtrace wrappers add when linking an executable (minus the
# runtime archive): used for the prototype links
BENCH_RT_LDFLAGS := -ldl -pthread -Wl,--export-dynamic-symbol=funtrace_root \
    -Wl,--export-dynamic-symbol=__fentry__ -Wl,--export-dynamic-symbol=__return__ \
    -Wl,--export-dynamic-symbol=__cyg_profile_func_enter \
    -Wl,--export-dynamic-symbol=__cyg_profile_func_exit \
    -Wl,--export-dynamic-symbol=__cxa_begin_catch -Wl,--export-dynamic-symbol=dlopen \
    -Wl,--export-dynamic-symbol=dlclose -Wl,--export-dynamic-symbol=pthread_setname_np \
    '-Wl,--export-dynamic-symbol=funtrace_*'
BENCH_WRAP_DEPS := $(BIN)/funtrace-gcc $(BIN)/funtrace-clang $(LIB)/libfuntrace.a

BENCH_HP := $(BB)/hp-none $(BB)/hp-pg $(BB)/hp-finstr $(BB)/hp-floor-pg \
    $(BB)/hp-floor-pg-counter $(BB)/hp-floor-finstr $(BB)/hp-proto-pg \
    $(BB)/hp-proto-pg-keepregs $(BB)/hp-proto-finstr
ifneq ($(BENCH_HAVE_CLANG),)
BENCH_HP += $(BB)/hp-clang $(BB)/hp-floor-clang $(BB)/hp-proto-clang
endif
BENCH_PROGS := $(BENCH_HP) $(BB)/thr-none $(BB)/thr-pg $(BB)/dl-none $(BB)/dl-pg \
    $(BB)/libdl-none.so $(BB)/libdl-pg.so $(BB)/bigcore-pg $(BB)/bigcore-finstr $(BB)/runstat
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
$(BB)/obj/floor_cyg.o: bench/floor_cyg.c bench/floor.h
	@mkdir -p $(@D)
	$(BENCH_GCC) $(BENCH_CFLAGS) -fno-instrument-functions -c -o $@ $<

$(BB)/hp-floor-pg: $(HP_DEPS) $(BB)/obj/floor_pg.o $(BB)/obj/floor_rec.o
	$(BENCH_GCC) $(BENCH_CFLAGS) $(BENCH_PG) -o $@ $(HP_SRC) $(filter %.o,$^)
$(BB)/hp-floor-pg-counter: $(HP_DEPS) $(BB)/obj/floor_pg_counter.o $(BB)/obj/floor_rec.o
	$(BENCH_GCC) $(BENCH_CFLAGS) $(BENCH_PG) -o $@ $(HP_SRC) $(filter %.o,$^)
$(BB)/hp-floor-finstr: $(HP_DEPS) $(BB)/obj/floor_cyg.o $(BB)/obj/floor_rec.o
	$(BENCH_GCC) $(BENCH_CFLAGS) -finstrument-functions -o $@ $(HP_SRC) $(filter %.o,$^)
$(BB)/hp-floor-clang: $(HP_DEPS) $(BB)/obj/floor_cyg.o $(BB)/obj/floor_rec.o
	$(BENCH_CLANG) $(BENCH_CFLAGS) -finstrument-functions-after-inlining -o $@ $(HP_SRC) $(filter %.o,$^)

# the hook prototypes, linked with the rest of the runtime's objects
BENCH_RT_NOPG := $(filter-out $(OBJ)/runtime/hooks_pg.S.o,$(RT_OBJS))
BENCH_RT_NOCYG := $(filter-out $(OBJ)/runtime/hooks_cyg.o,$(RT_OBJS))
$(BB)/obj/alt_pg.o: bench/proto/alt_pg.S
	@mkdir -p $(@D)
	$(BENCH_GCC) -DALT_MIN=1 -DALT_DISPATCH=1 -c -o $@ $<
$(BB)/obj/alt_pg_keepregs.o: bench/proto/alt_pg.S
	@mkdir -p $(@D)
	$(BENCH_GCC) -DALT_MIN=0 -DALT_DISPATCH=1 -c -o $@ $<
$(BB)/obj/alt_cyg.o: bench/proto/alt_cyg.c runtime/ft_internal.h
	@mkdir -p $(@D)
	$(BENCH_GCC) $(filter-out -MMD -MP,$(RT_CFLAGS)) -DALT_DISPATCH=1 -c -o $@ $<
$(BB)/hp-proto-pg: $(HP_DEPS) $(BB)/obj/alt_pg.o $(BENCH_RT_NOPG)
	$(BENCH_GCC) $(BENCH_CFLAGS) $(BENCH_PG) -o $@ $(HP_SRC) $(filter %.o,$^) $(BENCH_RT_LDFLAGS)
$(BB)/hp-proto-pg-keepregs: $(HP_DEPS) $(BB)/obj/alt_pg_keepregs.o $(BENCH_RT_NOPG)
	$(BENCH_GCC) $(BENCH_CFLAGS) $(BENCH_PG) -o $@ $(HP_SRC) $(filter %.o,$^) $(BENCH_RT_LDFLAGS)
$(BB)/hp-proto-finstr: $(HP_DEPS) $(BB)/obj/alt_cyg.o $(BENCH_RT_NOCYG)
	$(BENCH_GCC) $(BENCH_CFLAGS) -finstrument-functions -o $@ $(HP_SRC) $(filter %.o,$^) $(BENCH_RT_LDFLAGS)
$(BB)/hp-proto-clang: $(HP_DEPS) $(BB)/obj/alt_cyg.o $(BENCH_RT_NOCYG)
	$(BENCH_CLANG) $(BENCH_CFLAGS) -finstrument-functions-after-inlining -o $@ $(HP_SRC) $(filter %.o,$^) $(BENCH_RT_LDFLAGS)

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
