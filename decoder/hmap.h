/*
 * hmap.h -- two small open-addressing hash maps: (u64,u64) -> u32 and
 * string -> u32 (the string map owns copies of its keys).
 */
#ifndef FT_DECODER_HMAP_H
#define FT_DECODER_HMAP_H

#include <stddef.h>
#include <stdint.h>

#define HMAP_NONE UINT32_MAX

struct hm_ent {
    uint64_t a, b;
    uint32_t v; /* HMAP_NONE: empty slot */
    uint32_t pad;
};

struct hmap {
    struct hm_ent *e;
    size_t cap, n; /* cap: power of two */
};

static inline uint64_t hm_hash(uint64_t a, uint64_t b)
{
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
    return h ^ (h >> 29);
}

/* value or HMAP_NONE */
static inline uint32_t hm_get(const struct hmap *m, uint64_t a, uint64_t b)
{
    if (!m->cap)
        return HMAP_NONE;
    size_t mask = m->cap - 1, i = (size_t)hm_hash(a, b) & mask;
    for (;;) {
        const struct hm_ent *e = &m->e[i];
        if (e->v == HMAP_NONE)
            return HMAP_NONE;
        if (e->a == a && e->b == b)
            return e->v;
        i = (i + 1) & mask;
    }
}

/* 0, -1 on allocation failure; overwrites an existing key */
int hm_put(struct hmap *m, uint64_t a, uint64_t b, uint32_t v);
void hm_free(struct hmap *m);

struct smap {
    char **k;
    uint32_t *v;
    size_t cap, n;
};
uint32_t sm_get(const struct smap *m, const char *k);
int sm_put(struct smap *m, const char *k, uint32_t v);
void sm_free(struct smap *m);

#endif
