/*
 * abort -- a C++ exception escapes a thread: std::terminate -> abort (SIGABRT).
 *
 * main starts a "loader" thread that loads a configuration through
 * load_with_fallback -> load_config -> parse_section -> parse_value.  The
 * primary configuration has a malformed value: parse_value throws
 * std::invalid_argument, load_with_fallback catches it and loads the fallback
 * configuration instead.  The fallback has a value out of range: parse_value
 * throws std::out_of_range, which nothing catches; it escapes the thread's
 * function, so the C++ runtime calls std::terminate, which calls abort().
 * The trace shows the caught exception (the frames it unwound, the catch in
 * load_with_fallback) and then the calls that were still open when the
 * process aborted.
 */
#include <pthread.h>
#include <stdexcept>
#include <string>
#include <thread>
#include <cstdio>
#include <cstdlib>

#define TRACED __attribute__((noinline))

struct setting {
    const char *key;
    const char *value;
};

static const setting primary[] = {{"threads", "4"}, {"port", "80x"}, {nullptr, nullptr}};
static const setting fallback[] = {{"threads", "2"}, {"port", "99999"}, {nullptr, nullptr}};

TRACED static int parse_value(const setting &s)
{
    size_t used = 0;
    int v = 0;
    try {
        v = std::stoi(s.value, &used);
    } catch (const std::exception &) {
        used = 0;
    }
    if (used != std::string(s.value).size())
        throw std::invalid_argument(std::string("malformed value for ") + s.key + ": " + s.value);
    if (v < 0 || v > 65535)
        throw std::out_of_range(std::string("value out of range for ") + s.key + ": " + s.value);
    return v;
}

TRACED static int parse_section(const setting *section)
{
    int sum = 0;
    for (const setting *s = section; s->key; s++)
        sum += parse_value(*s);
    return sum;
}

TRACED static int load_config(const char *name, const setting *section)
{
    std::printf("abort: loading %s configuration\n", name);
    std::fflush(stdout);
    return parse_section(section);
}

TRACED static int load_with_fallback()
{
    try {
        return load_config("primary", primary);
    } catch (const std::invalid_argument &e) {
        std::printf("abort: %s; trying the fallback\n", e.what());
        std::fflush(stdout);
    }
    return load_config("fallback", fallback); /* throws out_of_range: uncaught */
}

TRACED static void loader_main()
{
    pthread_setname_np(pthread_self(), "loader");
    load_with_fallback();
}

int main()
{
    std::thread loader(loader_main);
    loader.join(); /* never returns: the uncaught exception aborts the process */
    return 0;
}
