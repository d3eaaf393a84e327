# examples/build.mk -- the example programs, built with funtrace's own compiler
# wrappers (as a user would build theirs) into $(BUILD)/examples/.
#
#   make examples        just these

EX := $(BUILD)/examples
EX_CC := $(BIN)/funtrace-gcc
EX_CXX := $(BIN)/funtrace-g++
# what an example depends on besides its sources: rebuilt when the runtime is
EX_TOOLCHAIN := $(EX_CC) $(EX_CXX) $(LIB)/libfuntrace.a
EX_CFLAGS := -O1 -g -pthread -Wall -Wextra -Iruntime/include -Iexamples
EX_PROGRAMS := $(EX)/crash $(EX)/abort $(EX)/oomhog $(EX)/server $(EX)/plugin
EX_PLUGINS := $(EX)/libplugin_a.so $(EX)/libplugin_b.so

.PHONY: examples
examples: $(EX_PROGRAMS) $(EX_PLUGINS)

ALL_TARGETS += $(EX_PROGRAMS) $(EX_PLUGINS)

$(EX)/crash $(EX)/oomhog $(EX)/server: $(EX)/%: examples/%.c $(EX_TOOLCHAIN)
	@mkdir -p $(@D)
	$(EX_CC) $(EX_CFLAGS) -o $@ $<

$(EX)/abort: examples/abort.cc $(EX_TOOLCHAIN)
	@mkdir -p $(@D)
	$(EX_CXX) $(EX_CFLAGS) -o $@ $<

# the plugins are found next to the executable at run time
$(EX)/plugin: examples/plugin_main.c examples/plugin.h $(EX_TOOLCHAIN) | $(EX_PLUGINS)
	@mkdir -p $(@D)
	$(EX_CC) $(EX_CFLAGS) -o $@ $< -ldl

$(EX)/libplugin_%.so: examples/plugin_%.c examples/plugin.h $(EX_TOOLCHAIN)
	@mkdir -p $(@D)
	$(EX_CC) $(EX_CFLAGS) -shared -fPIC -o $@ $<
