# gdb/build.mk -- the gdb extension: build/share/funtrace/gdb/funtrace.py (it
# finds libfuntrace_reader.so in ../../../lib and funtrace-decode in
# ../../../bin, in the build tree as in an installed prefix).
#
# `make install` puts it in $(PREFIX)/share/funtrace/gdb and then, last, a
# three-line loader for it into gdb's system-wide gdbinit directory
# (gdb/install-gdbinit.sh; GDB_INIT_DIR: what `gdb --configuration` says,
# /etc/gdb/gdbinit.d on Debian), so that every gdb has the `funtrace` command:
# no -x, no -iex, no safe-path setting, no warning (gdb reads that directory
# at start-up and trusts it; `gdb -nx` skips it).  GDB_INIT_DIR= (empty), or a
# directory we cannot write: not installed, and the install says how to load
# the extension by hand.  Files gdb may be reading meanwhile are replaced
# atomically (rename).
GDB_EXT := $(SHARE)/gdb/funtrace.py
GDB_INIT_DIR ?= $(shell gdb --configuration 2>/dev/null | sed -n 's/.*--with-system-gdbinit-dir=\([^ ]*\).*/\1/p' | head -n 1)

$(GDB_EXT): gdb/funtrace.py
	@mkdir -p $(dir $@)
	cp $< $@

ALL_TARGETS += $(GDB_EXT)

# install -m MODE SRC DIR NAME, atomically (DIR/.NAME.tmp, then rename)
gdb_install_atomic = install -d $(3) && install -m $(1) $(2) $(3)/.$(4).tmp && mv -f $(3)/.$(4).tmp $(3)/$(4)

INSTALL_STEPS += $(call gdb_install_atomic,644,$(GDB_EXT),$(DESTDIR)$(PREFIX)/share/funtrace/gdb,funtrace.py);
INSTALL_LAST += sh gdb/install-gdbinit.sh "$(PREFIX)" "$(GDB_INIT_DIR)" "$(DESTDIR)";
