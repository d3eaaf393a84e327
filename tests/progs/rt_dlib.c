/* rt_dlib: a small instrumented shared library, built twice (LIBNUM=1, 2) */
#include "rt_common.h"
#ifndef LIBNUM
#define LIBNUM 1
#endif
volatile int lib_sink;
NI void lib_inner(int x) { lib_sink += x + LIBNUM; }
NI int lib_fn(int x) { lib_inner(x); return LIBNUM; }
