# funcount/build.mk -- the call-counting mode:
#   libfuntrace_count.a   the counting runtime, linked instead of libfuntrace.a
#                         by `funtrace-gcc -funtrace-count` (same objects)
#   funtrace-count        the report (calls, share, size, location) and the
#                         exclusion file of the hottest short functions
# The hooks' counting path uses only general registers (count_pg.S keeps
# them; ft_count_hit is built with -mgeneral-regs-only), never instrumented.

FC_LIB := $(LIB)/libfuntrace_count.a
# (+ the runtime's XRay sled patcher, the same object: FUNTRACE_INSTR=xray
# sleds call __fentry__/__return__, which here count)
FC_OBJS := $(OBJ)/funcount/count.o $(OBJ)/funcount/api_stubs.o $(OBJ)/funcount/count_pg.S.o \
           $(OBJ)/runtime/xray.o
FC_CFLAGS := $(CSTD) $(WARN) -O2 -g -fPIC -fno-instrument-functions -fno-stack-protector \
             -mgeneral-regs-only -Iruntime/include -MMD -MP

ALL_TARGETS += $(FC_LIB) $(BIN)/funtrace-count
INSTALL_STEPS += install -m 644 $(FC_LIB) $(DESTDIR)$(PREFIX)/lib/; \
	install -m 755 $(BIN)/funtrace-count $(DESTDIR)$(PREFIX)/bin/;

$(OBJ)/funcount/count.o $(OBJ)/funcount/api_stubs.o: $(OBJ)/funcount/%.o: funcount/%.c
	@mkdir -p $(@D)
	$(CC) $(FC_CFLAGS) -c $< -o $@

$(OBJ)/funcount/%.S.o: funcount/%.S
	@mkdir -p $(@D)
	$(CC) -g -c $< -o $@

$(FC_LIB): $(FC_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(OBJ)/funcount/report.o: funcount/report.c
	@mkdir -p $(@D)
	$(CC) $(TOOL_CFLAGS) -Icli -c -o $@ $<

$(BIN)/funtrace-count: $(OBJ)/funcount/report.o $(CLI_LIB)
	@mkdir -p $(@D)
	$(CC) $(TOOL_LDFLAGS) -o $@ $^ -ldw -lelf
