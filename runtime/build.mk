# runtime/build.mk -- the in-process runtime, its headers, the compiler
# wrappers and funtrace.pc.
#
# Every runtime/*.c and runtime/*.S goes into libfuntrace.a (but exc_events.c:
# libfuntrace_cxx.a, and built with -DFT_CXX_WRAP libfuntrace_cxxwrap.a), with the shared
# raw writer's objects (reader/rawwrite*.c, compiled once by reader/build.mk)
# for the snapshots; libfuntrace_static.a is the same with the libc
# interposers built for ld --wrap (-DFT_STATIC_WRAP: ft_interposing.h), for
# programs linked -static.  The runtime is never instrumented, -O2, PIC, hidden
# visibility except the API/hooks, initial-exec TLS.

RT_C_SRCS := $(filter-out runtime/exc_events.c,$(wildcard runtime/*.c))
RT_S_SRCS := $(wildcard runtime/*.S)
RT_OBJS := $(patsubst runtime/%.c,$(OBJ)/runtime/%.o,$(RT_C_SRCS)) \
           $(patsubst runtime/%.S,$(OBJ)/runtime/%.S.o,$(RT_S_SRCS))
# libfuntrace_static.a, for programs linked -static: the same, but the libc
# interposers built with -DFT_STATIC_WRAP (ld --wrap's names: ft_interposing.h)
# (fcontext.c's interposers are left out of it: ld --wrap would keep
# libboost_context.a's out of the program)
RT_WRAPPED := interpose signals modules contexts setjmps
RT_DYNAMIC_ONLY := fcontext
RT_STATIC_OBJS := $(filter-out $(patsubst %,$(OBJ)/runtime/%.o,$(RT_WRAPPED) $(RT_DYNAMIC_ONLY)),$(RT_OBJS)) \
                  $(patsubst %,$(OBJ)/runtime/%.static.o,$(RT_WRAPPED))
# the C++ runtime's interposers (exceptions): an archive of their own, which the
# wrappers leave out of programs linked with a static C++ runtime (exc_events.c)
RT_CXX_OBJS := $(OBJ)/runtime/exc_events.o
# ... and the same interposers under ld --wrap's names, for the C++ programs
# linked with their C++ runtime statically
RT_CXXWRAP_OBJS := $(OBJ)/runtime/exc_events.wrap.o
# (no path of this tree in traced programs: FILE_PREFIX_MAP, Makefile)
RT_CFLAGS := $(CSTD) $(WARN) -O2 -g -fPIC -fvisibility=hidden -ftls-model=initial-exec \
             -fno-instrument-functions -fno-omit-frame-pointer -fno-stack-protector \
             -Iruntime/include -Iruntime -Ireader -MMD -MP $(FILE_PREFIX_MAP)

# the functions interposed under ld --wrap's names (ft_interposing.h, and
# exc_events.c built with FT_CXX_WRAP): one list each, substituted into the
# wrappers and funtrace.pc as a -Wl,--wrap=NAME,... flag
RT_WRAP_LIBC := sigaction signal bsd_signal sysv_signal __sysv_signal longjmp _longjmp siglongjmp \
                __longjmp_chk _setjmp setjmp __sigsetjmp pthread_setname_np swapcontext setcontext
RT_WRAP_CXX := __cxa_begin_catch __cxa_end_catch __cxa_throw __cxa_rethrow __gxx_personality_v0 \
               __gcc_personality_v0
rt_wrap_flag = -Wl,$(subst $(eval) ,$(comma),$(patsubst %,--wrap=%,$(strip $(1))))
comma := ,
RT_SED_WRAP := s/@FT_WRAP_LIBC@/$(call rt_wrap_flag,$(RT_WRAP_LIBC))/; s/@FT_WRAP_CXX@/$(call rt_wrap_flag,$(RT_WRAP_CXX))/

RT_LIB := $(LIB)/libfuntrace.a
RT_STATIC_LIB := $(LIB)/libfuntrace_static.a
RT_CXX_LIB := $(LIB)/libfuntrace_cxx.a
RT_CXXWRAP_LIB := $(LIB)/libfuntrace_cxxwrap.a
RT_HEADERS := $(BUILD)/include/funtrace.h $(BUILD)/include/funtrace_abi.h
RT_WRAPPERS := $(BIN)/funtrace-gcc $(BIN)/funtrace-g++ $(BIN)/funtrace-clang $(BIN)/funtrace-clang++
RT_PC := $(LIB)/pkgconfig/funtrace.pc

ALL_TARGETS += $(RT_LIB) $(RT_STATIC_LIB) $(RT_CXX_LIB) $(RT_CXXWRAP_LIB) $(RT_HEADERS) $(RT_WRAPPERS) $(RT_PC)

$(OBJ)/runtime/%.o: runtime/%.c
	@mkdir -p $(@D)
	$(CC) $(RT_CFLAGS) -c $< -o $@

$(OBJ)/runtime/%.static.o: runtime/%.c
	@mkdir -p $(@D)
	$(CC) $(RT_CFLAGS) -DFT_STATIC_WRAP -c $< -o $@

$(OBJ)/runtime/%.wrap.o: runtime/%.c
	@mkdir -p $(@D)
	$(CC) $(RT_CFLAGS) -DFT_CXX_WRAP -c $< -o $@

$(OBJ)/runtime/%.S.o: runtime/%.S
	@mkdir -p $(@D)
	$(CC) -Iruntime/include -Iruntime -MMD -MP -g $(FILE_PREFIX_MAP) -c $< -o $@

$(RT_LIB): $(RT_OBJS) $(RD_RAW_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(RT_STATIC_LIB): $(RT_STATIC_OBJS) $(RD_RAW_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(RT_CXX_LIB): $(RT_CXX_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(RT_CXXWRAP_LIB): $(RT_CXXWRAP_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/include/%.h: runtime/include/%.h
	@mkdir -p $(@D)
	cp $< $@

$(RT_WRAPPERS): runtime/funtrace-cc.sh runtime/include/funtrace_abi.h runtime/build.mk
	@mkdir -p $(@D)
	sed -e 's/@FT_VERSION@/$(FT_VERSION)/; s/@FT_ABI@/$(FT_ABI)/; s/@FT_RAW@/$(FT_RAW)/; $(RT_SED_WRAP)' $< > $@.tmp
	chmod 755 $@.tmp
	mv $@.tmp $@

$(RT_PC): runtime/funtrace.pc.in runtime/build.mk
	@mkdir -p $(@D)
	sed -e 's/@FT_VERSION@/$(FT_VERSION)/; $(RT_SED_WRAP)' $< > $@

INSTALL_STEPS += install -m 644 $(RT_LIB) $(DESTDIR)$(PREFIX)/lib/libfuntrace.a; \
	install -m 644 $(RT_STATIC_LIB) $(DESTDIR)$(PREFIX)/lib/libfuntrace_static.a; \
	install -m 644 $(RT_CXX_LIB) $(DESTDIR)$(PREFIX)/lib/libfuntrace_cxx.a; \
	install -m 644 $(RT_CXXWRAP_LIB) $(DESTDIR)$(PREFIX)/lib/libfuntrace_cxxwrap.a; \
	install -m 644 $(RT_HEADERS) $(DESTDIR)$(PREFIX)/include/; \
	install -m 755 $(RT_WRAPPERS) $(DESTDIR)$(PREFIX)/bin/; \
	install -m 644 $(RT_PC) $(DESTDIR)$(PREFIX)/lib/pkgconfig/funtrace.pc;
