# wrapper/build.mk -- the compiler wrappers' helper tools:
#   funtrace-instrcheck  after linking: how many functions call the hooks
#                        (one warning line when none or very few do)
#   funtrace-asmfilter   the -funtrace-instr-thresh/-no-trace/-do-trace
#                        assembly post-processing
# The wrappers themselves (runtime/funtrace-cc.sh) are installed by
# runtime/build.mk.

WR_COMMON := $(OBJ)/wrapper/strset.o
WR_TOOLS := $(BIN)/funtrace-instrcheck $(BIN)/funtrace-asmfilter

ALL_TARGETS += $(WR_TOOLS)
INSTALL_STEPS += install -m 755 $(WR_TOOLS) $(DESTDIR)$(PREFIX)/bin/;

$(OBJ)/wrapper/%.o: wrapper/%.c
	@mkdir -p $(@D)
	$(CC) $(TOOL_CFLAGS) -Iwrapper -c -o $@ $<

$(BIN)/funtrace-instrcheck: $(OBJ)/wrapper/instrcheck.o $(WR_COMMON)
	@mkdir -p $(@D)
	$(CC) $(TOOL_LDFLAGS) -o $@ $^ -lelf

$(BIN)/funtrace-asmfilter: $(OBJ)/wrapper/asmfilter.o $(WR_COMMON)
	@mkdir -p $(@D)
	$(CC) $(TOOL_LDFLAGS) -o $@ $^
