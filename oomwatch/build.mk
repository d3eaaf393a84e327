# oomwatch/build.mk -- funtrace-oomwatch (pre-OOM dumps), linking the shared
# reader (reader/live.h: ft_live_extract; libfuntrace_reader.a).
#
#   make funtrace-oomwatch         just this tool (and the reader)
#   make SAN=1 funtrace-oomwatch   ASan+UBSan build in build-san/

OOMW_SRCS := $(wildcard oomwatch/*.c)
OOMW_OBJS := $(patsubst oomwatch/%.c,$(OBJ)/oomwatch/%.o,$(OOMW_SRCS))

ALL_TARGETS += $(BIN)/funtrace-oomwatch
SAN_TARGETS += $(BIN)/funtrace-oomwatch
INSTALL_STEPS += install -m 755 $(BIN)/funtrace-oomwatch $(DESTDIR)$(PREFIX)/bin/;

.PHONY: funtrace-oomwatch
funtrace-oomwatch: $(BIN)/funtrace-oomwatch

$(BIN)/funtrace-oomwatch: $(OOMW_OBJS) $(RD_LIB) $(CLI_LIB)
	@mkdir -p $(@D)
	$(CC) $(TOOL_LDFLAGS) -o $@ $(OOMW_OBJS) $(RD_LIB) $(CLI_LIB) $(RD_LDLIBS)

$(OBJ)/oomwatch/%.o: oomwatch/%.c
	@mkdir -p $(@D)
	$(CC) $(TOOL_CFLAGS) -Ioomwatch -Icli -c -o $@ $<
