/* plugin.h -- the interface every example plugin (libplugin_a.so, libplugin_b.so) exports */
#ifndef EXAMPLE_PLUGIN_H
#define EXAMPLE_PLUGIN_H
const char *plugin_name(void);
/* does some work and returns a result; n < 0 makes plugin a crash (SIGSEGV) */
long plugin_run(long n);
#endif
