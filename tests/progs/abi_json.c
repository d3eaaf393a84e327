/*
 * abi_json.c -- prints the in-memory ABI as JSON, generated from
 * funtrace_abi.h's field table (FT_ABI_FIELDS) and its structs, so that the
 * test suite needs no table of its own (tests/rawfile.py `abi()`):
 *   {"abi_version": 1,
 *    "structs": {"ROOT": {"id": 0, "size": 440}, ...},
 *    "fields": [{"id": 0, "name": "ROOT_PID", "struct": "ROOT",
 *                "member": "pid", "offset": 216, "width": 8}, ...],
 *    "raw_sizes": {"ft_raw_header": 128, ...}}
 */
#include <stdio.h>

#include "funtrace_abi.h"

static int first = 1;

static void field(int id, const char *name, const char *st, const char *member, size_t off, size_t width)
{
    printf("%s\n  {\"id\": %d, \"name\": \"%s\", \"struct\": \"%s\", \"member\": \"%s\", "
           "\"offset\": %zu, \"width\": %zu}",
           first ? "" : ",", id, name, st, member, off, width);
    first = 0;
}

int main(void)
{
    printf("{\"abi_version\": %u,\n\"structs\": {", FT_ABI_VERSION);
    printf("\"ROOT\": {\"id\": %d, \"size\": %zu}, ", FT_S_ROOT, sizeof(struct ft_root));
    printf("\"THREAD\": {\"id\": %d, \"size\": %zu}, ", FT_S_THREAD, sizeof(struct ft_thread));
    printf("\"MODULE\": {\"id\": %d, \"size\": %zu}, ", FT_S_MODULE, sizeof(struct ft_module));
    printf("\"GEN\": {\"id\": %d, \"size\": %zu}},\n\"fields\": [", FT_S_GEN, sizeof(struct ft_gen));
#define X(ID, S, m) field(FT_F_##ID, #ID, #S, #m, FT_FIELD_OFFSET(S, m), FT_FIELD_WIDTH(S, m));
    FT_ABI_FIELDS(X)
#undef X
    printf("],\n\"raw_sizes\": {\"ft_raw_header\": %zu, \"ft_raw_crash\": %zu, \"ft_raw_mapping\": %zu, "
           "\"ft_raw_thread\": %zu, \"ft_raw_stack\": %zu, \"ft_raw_threadid\": %zu}}\n",
           sizeof(struct ft_raw_header), sizeof(struct ft_raw_crash), sizeof(struct ft_raw_mapping),
           sizeof(struct ft_raw_thread), sizeof(struct ft_raw_stack), sizeof(struct ft_raw_threadid));
    return 0;
}
