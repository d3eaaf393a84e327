# coreextract/oomwatch.mk -- funtrace-oomwatch (pre-OOM dumps), sharing
# coreextract's live reader (coreextract/live.h, libfuntrace_live.a built by
# coreextract/build.mk) and rawwrite (libfuntrace_read.a, runtime/build.mk).
#
#   make funtrace-oomwatch     just this tool (and the libraries it needs)
#   make SAN=1 funtrace-oomwatch   ASan+UBSan build in build-san/

# own flags (as coreextract's): the sanitizer list spelled so that its comma
# survives $(if)
OOMW_COMMA := ,
OOMW_SANFLAGS := $(if $(SAN),-fsanitize=address$(OOMW_COMMA)undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
OOMW_CFLAGS := $(CSTD) $(WARN) $(OPT) -g $(OOMW_SANFLAGS) -Iruntime/include -Icoreextract -MMD -MP
OOMW_SRCS := $(wildcard coreextract/oomwatch*.c coreextract/oom_*.c)
OOMW_OBJS := $(patsubst coreextract/%.c,$(OBJ)/oomwatch/%.o,$(OOMW_SRCS))
OOMW_LIBS := $(LIB)/libfuntrace_live.a $(LIB)/libfuntrace_read.a
# what the live reader needs (coreextract/build.mk's list when it is there)
OOMW_LDLIBS := $(if $(CE_LDLIBS),$(CE_LDLIBS),-lelf $(shell pkg-config --libs libunwind-generic 2>/dev/null))

ALL_TARGETS += $(BIN)/funtrace-oomwatch
INSTALL_STEPS += install -m 755 $(BIN)/funtrace-oomwatch $(DESTDIR)$(PREFIX)/bin/;

.PHONY: funtrace-oomwatch
funtrace-oomwatch: $(BIN)/funtrace-oomwatch

$(BIN)/funtrace-oomwatch: $(OOMW_OBJS) $(OOMW_LIBS)
	@mkdir -p $(@D)
	$(CC) $(OOMW_SANFLAGS) -o $@ $(OOMW_OBJS) $(OOMW_LIBS) $(OOMW_LDLIBS)

$(OBJ)/oomwatch/%.o: coreextract/%.c
	@mkdir -p $(@D)
	$(CC) $(OOMW_CFLAGS) -c -o $@ $<
