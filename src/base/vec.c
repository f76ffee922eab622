/* vec.c - growable arrays, string interning and a small hash map for the model builders. */
#include "base/vec.h"

#include <stdlib.h>
#include <string.h>

void *jp_vec_push(jp_vec *v, size_t size) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        if (cap > SIZE_MAX / size) return NULL;
        void *data = realloc(v->data, cap * size);
        if (!data) return NULL;
        v->data = data;
        v->cap = cap;
    }
    void *slot = (char *)v->data + v->n * size;
    memset(slot, 0, size);
    v->n++;
    return slot;
}

void jp_vec_free(jp_vec *v) {
    free(v->data);
    v->data = NULL;
    v->n = v->cap = 0;
}

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* Eight bytes per step, each word folded in by a multiply: kernel details and op names run to
 * hundreds of bytes and are hashed once per event. No seed needed (inputs are not adversarial to a
 * hash table that only slows down, never fails, on collisions). */
static uint64_t hash_bytes(const char *s, size_t len) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ len, w;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    if (i < len) {
        w = 0;
        memcpy(&w, s + i, len - i);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
    }
    return mix(h);
}

void jp_intern_init(jp_intern *t, jp_arena *arena) {
    memset(t, 0, sizeof *t);
    t->arena = arena;
}

void jp_intern_deinit(jp_intern *t) {
    free(t->slots);
    free(t->lens);
    memset(t, 0, sizeof *t);
}

static size_t intern_find(const jp_intern *t, const char *s, size_t len) {
    size_t mask = t->cap - 1, i = (size_t)hash_bytes(s, len) & mask;
    while (t->slots[i] && !(t->lens[i] == len && memcmp(t->slots[i], s, len) == 0)) i = (i + 1) & mask;
    return i;
}

static int intern_grow(jp_intern *t) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    jp_intern bigger = {calloc(cap, sizeof(char *)), calloc(cap, sizeof(uint32_t)), cap, t->n, t->arena};
    if (!bigger.slots || !bigger.lens) {
        free(bigger.slots);
        free(bigger.lens);
        return JP_ERR_NOMEM;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i]) continue;
        size_t j = intern_find(&bigger, t->slots[i], t->lens[i]);
        bigger.slots[j] = t->slots[i];
        bigger.lens[j] = t->lens[i];
    }
    free(t->slots);
    free(t->lens);
    *t = bigger;
    return JP_OK;
}

const char *jp_intern_lookup(const jp_intern *t, const char *s, size_t len) {
    if (!t->cap || len > UINT32_MAX) return NULL;
    return t->slots[intern_find(t, s ? s : "", len)];
}

const char *jp_intern_str(jp_intern *t, const char *s, size_t len) {
    if (len > UINT32_MAX) return NULL;
    if ((t->n + 1) * 2 > t->cap && intern_grow(t) != JP_OK) return NULL;
    size_t i = intern_find(t, s ? s : "", len);
    if (!t->slots[i]) {
        char *copy = jp_arena_strndup(t->arena, s ? s : "", len);
        if (!copy) return NULL;
        t->slots[i] = copy;
        t->lens[i] = (uint32_t)len;
        t->n++;
    }
    return t->slots[i];
}

void jp_map_deinit(jp_map *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static size_t map_find(const jp_map *m, uint64_t a, uint64_t b, uint64_t c) {
    size_t mask = m->cap - 1, i = (size_t)mix(a ^ mix(b ^ mix(c))) & mask;
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

int jp_cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t key64(const unsigned char *elem, size_t key_off, int is_signed) {
    uint64_t k;
    memcpy(&k, elem + key_off, sizeof k);
    return is_signed ? k ^ ((uint64_t)1 << 63) : k; /* signed order as unsigned */
}

/* memcpy with the common element sizes spelled out, so that they compile to plain moves. */
static inline void copy_elem(unsigned char *dst, const unsigned char *src, size_t size) {
    switch (size) {
    case 8: memcpy(dst, src, 8); break;
    case 16: memcpy(dst, src, 16); break;
    case 24: memcpy(dst, src, 24); break;
    case 32: memcpy(dst, src, 32); break;
    default: memcpy(dst, src, size); break;
    }
}

void jp_sort_by_key64(void *base, size_t n, size_t size, size_t key_off, int is_signed,
                      int (*cmp)(const void *, const void *)) {
    if (n < 2) return;
    if (n < 256 || size > 64 || n > SIZE_MAX / size) { /* small: not worth the passes */
        qsort(base, n, size, cmp);
        return;
    }
    unsigned char *tmp = malloc(n * size);
    size_t(*counts)[256] = calloc(8, sizeof *counts);
    if (!tmp || !counts) {
        free(tmp);
        free(counts);
        qsort(base, n, size, cmp);
        return;
    }
    unsigned char *src = base, *dst = tmp;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = key64(src + i * size, key_off, is_signed);
        for (int b = 0; b < 8; b++) counts[b][(k >> (8 * b)) & 0xff]++;
    }
    for (int b = 0; b < 8; b++) {
        size_t *c = counts[b], pos = 0;
        if (c[(key64(src, key_off, is_signed) >> (8 * b)) & 0xff] == n) continue; /* all share it */
        for (int d = 0; d < 256; d++) {
            size_t k = c[d];
            c[d] = pos;
            pos += k;
        }
        for (size_t i = 0; i < n; i++) {
            const unsigned char *e = src + i * size;
            copy_elem(dst + c[(key64(e, key_off, is_signed) >> (8 * b)) & 0xff]++ * size, e, size);
        }
        unsigned char *t = src;
        src = dst;
        dst = t;
    }
    if (src != base) memcpy(base, src, n * size);
    free(tmp);
    free(counts);
}
