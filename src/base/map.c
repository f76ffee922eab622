/* map.c - the three-word-key hash map: open addressing, linear probing, doubling at half full. */
#include "base/map.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "jaxprof/jaxprof.h"

void jp_map_deinit(jp_map *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static size_t map_find(const jp_map *m, uint64_t a, uint64_t b, uint64_t c) {
    size_t mask = m->cap - 1, i = (size_t)jp_hash_mix(a ^ jp_hash_mix(b ^ jp_hash_mix(c))) & mask;
    while (m->vals[i] != UINT32_MAX &&
           !(m->keys[3 * i] == a && m->keys[3 * i + 1] == b && m->keys[3 * i + 2] == c))
        i = (i + 1) & mask;
    return i;
}

static int map_grow(jp_map *m) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    jp_map bigger = {malloc(cap * 3 * sizeof(uint64_t)), malloc(cap * sizeof(uint32_t)), cap, m->n};
    if (!bigger.keys || !bigger.vals) {
        free(bigger.keys);
        free(bigger.vals);
        return JP_ERR_NOMEM;
    }
    memset(bigger.vals, 0xff, cap * sizeof(uint32_t));
    for (size_t i = 0; i < m->cap; i++) {
        if (m->vals[i] == UINT32_MAX) continue;
        size_t j = map_find(&bigger, m->keys[3 * i], m->keys[3 * i + 1], m->keys[3 * i + 2]);
        memcpy(&bigger.keys[3 * j], &m->keys[3 * i], 3 * sizeof(uint64_t));
        bigger.vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    *m = bigger;
    return JP_OK;
}

uint32_t *jp_map_value(jp_map *m, uint64_t a, uint64_t b, uint64_t c, uint32_t fresh, int *found) {
    if ((m->n + 1) * 2 > m->cap && map_grow(m) != JP_OK) return NULL;
    size_t i = map_find(m, a, b, c);
    int hit = m->vals[i] != UINT32_MAX;
    if (!hit) {
        m->keys[3 * i] = a;
        m->keys[3 * i + 1] = b;
        m->keys[3 * i + 2] = c;
        m->vals[i] = fresh;
        m->n++;
    }
    if (found) *found = hit;
    return &m->vals[i];
}

uint32_t jp_map_get_or_put(jp_map *m, uint64_t a, uint64_t b, uint64_t c, uint32_t fresh, int *found) {
    uint32_t *v = jp_map_value(m, a, b, c, fresh, found);
    return v ? *v : UINT32_MAX;
}

uint32_t jp_map_get(const jp_map *m, uint64_t a, uint64_t b, uint64_t c) {
    return m->cap ? m->vals[map_find(m, a, b, c)] : UINT32_MAX;
}
