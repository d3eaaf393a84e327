/*
 * gdb_autoload.c -- a .debug_gdb_scripts entry (type 4, inline Python) in
 * every traced executable: when gdb loads the executable (or its core) and
 * auto-loading is allowed for it (see "info auto-load"; e.g.
 * `-iex 'add-auto-load-safe-path /'`), the script below finds funtrace.py
 * in $FUNTRACE_GDB_DIR, then in the build tree and the install prefix the
 * runtime was built for, and runs it once.
 */
#ifndef FT_GDB_DIR_BUILD
#define FT_GDB_DIR_BUILD ""
#endif
#ifndef FT_GDB_DIR_PREFIX
#define FT_GDB_DIR_PREFIX "/usr/local/share/funtrace/gdb"
#endif

__asm__(
    ".pushsection .debug_gdb_scripts, \"MS\",@progbits,1\n"
    ".byte 4\n"
    ".ascii \"funtrace-autoload\\n\"\n"
    ".ascii \"import gdb, os\\n\"\n"
    ".ascii \"if not getattr(gdb, '_funtrace_loaded', False):\\n\"\n"
    ".ascii \"    for _ft_d in (os.environ.get('FUNTRACE_GDB_DIR', ''), '" FT_GDB_DIR_BUILD "', '" FT_GDB_DIR_PREFIX "'):\\n\"\n"
    ".ascii \"        _ft_p = os.path.join(_ft_d, 'funtrace.py') if _ft_d else ''\\n\"\n"
    ".ascii \"        if _ft_p and os.path.isfile(_ft_p):\\n\"\n"
    ".ascii \"            gdb._funtrace_loaded = True\\n\"\n"
    ".ascii \"            exec(compile(open(_ft_p).read(), _ft_p, 'exec'), {'__name__': 'funtrace', '__file__': _ft_p})\\n\"\n"
    ".ascii \"            break\\n\"\n"
    ".byte 0\n"
    ".popsection\n");
