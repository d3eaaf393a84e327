# gdb/build.mk -- the gdb extension: build/share/funtrace/gdb/funtrace.py
# (auto-loaded through the runtime's .debug_gdb_scripts entry from
# $(PREFIX)/share/funtrace/gdb/funtrace.py).
GDB_EXT := $(SHARE)/gdb/funtrace.py

$(GDB_EXT): gdb/funtrace.py
	@mkdir -p $(dir $@)
	cp $< $@

ALL_TARGETS += $(GDB_EXT)
INSTALL_STEPS += install -m 644 $(GDB_EXT) $(DESTDIR)$(PREFIX)/share/funtrace/gdb/funtrace.py;
