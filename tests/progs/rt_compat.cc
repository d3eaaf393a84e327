/* rt_compat.c built as C++ (the original API from C++ code) */
#include "rt_compat.c"
