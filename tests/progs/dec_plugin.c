/* dec_plugin.c -- a plugin built twice: -DPLUGIN_A (plugin_a_work) and
 * -DPLUGIN_B (plugin_b_work); both export plugin_run. */
#define NI __attribute__((noinline))
static volatile int dec_sink;
#ifdef PLUGIN_A
NI void plugin_a_work(void) { dec_sink += 1; }
NI void plugin_a_helper(void) { plugin_a_work(); }
void plugin_run(void) { plugin_a_helper(); plugin_a_work(); }
#else
NI void plugin_b_work(void) { dec_sink += 2; }
NI void plugin_b_helper(void) { plugin_b_work(); plugin_b_work(); }
void plugin_run(void) { plugin_b_helper(); }
#endif
