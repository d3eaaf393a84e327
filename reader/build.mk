# reader/build.mk -- the shared reader: root finding, maps, ELF info, live
# reads, unwinding and the raw writer (rawwrite*.c).  Compiled ONCE into
# $(OBJ)/reader/ and linked from there by every program that needs it:
#   libfuntrace_reader.a   coreextract, funtrace-oomwatch
#   libfuntrace_reader.so  the same objects as a shared library, exporting only
#                          the API of funtrace_reader.h (the gdb extension loads
#                          it with ctypes)
#   libfuntrace.a          the runtime's snapshots link rawwrite*.o (the same objects)
# The flags suit the runtime too (PIC, hidden, no stack protector, never
# instrumented); SAN=1 adds the sanitizers (and then the runtime is not built).

RD_SRCS := $(wildcard reader/*.c)
RD_OBJS := $(patsubst reader/%.c,$(OBJ)/reader/%.o,$(RD_SRCS))
# the part of the reader the runtime links (async-signal-safe, no libc I/O)
RD_RAW_OBJS := $(OBJ)/reader/rawwrite.o $(OBJ)/reader/rawwrite_ring.o \
               $(OBJ)/reader/sched_capture.o $(OBJ)/reader/sched_chunk.o $(OBJ)/reader/procmem.o
RD_CFLAGS := $(CSTD) $(WARN) $(OPT) -g $(SANFLAGS) -fPIC -fvisibility=hidden -fno-stack-protector \
             -fno-instrument-functions -Iruntime/include -Ireader -MMD -MP $(UNW_CFLAGS) $(FILE_PREFIX_MAP)
RD_LIB := $(LIB)/libfuntrace_reader.a
RD_SO := $(LIB)/libfuntrace_reader.so
RD_API_HEADER := $(BUILD)/include/funtrace_reader.h
# what a program linking the reader needs besides it
RD_LDLIBS := -lelf $(UNW_LIBS)

ALL_TARGETS += $(RD_LIB) $(RD_SO) $(RD_API_HEADER)
SAN_TARGETS += $(RD_LIB)
# the .so is replaced atomically: a gdb may be loading it meanwhile
INSTALL_STEPS += install -m 644 $(RD_SO) $(DESTDIR)$(PREFIX)/lib/.libfuntrace_reader.so.tmp && \
	mv -f $(DESTDIR)$(PREFIX)/lib/.libfuntrace_reader.so.tmp $(DESTDIR)$(PREFIX)/lib/libfuntrace_reader.so; \
	install -m 644 $(RD_API_HEADER) $(DESTDIR)$(PREFIX)/include/;

$(OBJ)/reader/%.o: reader/%.c
	@mkdir -p $(@D)
	$(CC) $(RD_CFLAGS) -c -o $@ $<

$(RD_LIB): $(RD_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(RD_SO): $(RD_OBJS)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-z,defs -Wl,-soname,libfuntrace_reader.so -o $@ $^ $(RD_LDLIBS)

$(RD_API_HEADER): reader/funtrace_reader.h
	@mkdir -p $(@D)
	cp $< $@
