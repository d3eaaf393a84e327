# sched/build.mk -- funtrace-sched: sets up (as root), shows and removes the
# tracefs instance the scheduling-state capture reads (reader/sched_*.c,
# linked from the shared reader).
#
#   make funtrace-sched           the tool (SAN=1: ASan+UBSan build in build-san/)

SCHED_SRCS := $(wildcard sched/*.c)
SCHED_OBJS := $(patsubst sched/%.c,$(OBJ)/sched/%.o,$(SCHED_SRCS))

ALL_TARGETS += $(BIN)/funtrace-sched
SAN_TARGETS += $(BIN)/funtrace-sched
INSTALL_STEPS += install -m 755 $(BIN)/funtrace-sched $(DESTDIR)$(PREFIX)/bin/;

.PHONY: funtrace-sched
funtrace-sched: $(BIN)/funtrace-sched

$(BIN)/funtrace-sched: $(SCHED_OBJS) $(RD_LIB)
	@mkdir -p $(@D)
	$(CC) $(TOOL_LDFLAGS) -o $@ $(SCHED_OBJS) $(RD_LIB) $(RD_LDLIBS)

$(OBJ)/sched/%.o: sched/%.c
	@mkdir -p $(@D)
	$(CC) $(TOOL_CFLAGS) -c -o $@ $<
