/* ce_plugin.c -- an instrumented shared library dlopen'd by ce_crash plugin */
#define NOINLINE __attribute__((noinline))
volatile int ce_plugin_sink;
NOINLINE void ce_plugin_inner(int *p) { *p = ce_plugin_sink; }
NOINLINE void ce_plugin_entry(void)
{
    ce_plugin_sink++;
    ce_plugin_inner((int *)0);
}
