#!/bin/sh
# install-gdbinit.sh PREFIX GDB_INIT_DIR [DESTDIR] -- the last step of `make install`:
# a loader for PREFIX/share/funtrace/gdb/funtrace.py in gdb's system-wide
# gdbinit directory, so that every gdb session has the `funtrace` command.
# Written atomically (a temporary name gdb ignores, then rename).  Where the
# directory is unknown or not writable (a private PREFIX without root), it
# says how to load the extension instead, and succeeds.
prefix=$1 dir=$2 destdir=$3
ext="$prefix/share/funtrace/gdb/funtrace.py"
if [ -z "$dir" ]; then
    echo "gdb: no system-wide gdbinit directory (gdb --configuration); to have the funtrace command, add to ~/.config/gdb/gdbinit: source $ext"
    exit 0
fi
d="$destdir$dir"
if ! mkdir -p "$d" 2>/dev/null || [ ! -w "$d" ]; then
    echo "gdb: cannot write $d (not root?); to have the funtrace command, add to ~/.config/gdb/gdbinit: source $ext"
    exit 0
fi
sed "s|@EXTENSION@|$ext|g" "$(dirname "$0")/gdbinit-stub.py.in" > "$d/.funtrace.py.tmp" &&
    chmod 644 "$d/.funtrace.py.tmp" &&
    mv -f "$d/.funtrace.py.tmp" "$d/funtrace.py" || { rm -f "$d/.funtrace.py.tmp"; exit 1; }
echo "gdb: every gdb now has the funtrace command ($dir/funtrace.py loads $ext)"
