/* rt_common.h -- shared bits of the runtime test programs */
#ifndef RT_COMMON_H
#define RT_COMMON_H
#include <funtrace.h>
#ifdef __clang__
#define NI __attribute__((noinline))
#else
#define NI __attribute__((noinline, noclone))
#endif
#endif
