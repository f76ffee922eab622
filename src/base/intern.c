/* intern.c - the interning string table: open addressing over arena-owned copies. */
#include "base/intern.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

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
    size_t mask = t->cap - 1, i = (size_t)jp_hash_bytes(s, len) & mask;
    while (t->slots[i] && !(t->lens[i] == len && memcmp(t->slots[i], s, len) == 0)) i = (i + 1) & mask;
    return i;
}

void jp_intern_init_front(jp_intern *t, jp_intern *shared, pthread_mutex_t *lock) {
    jp_intern_init(t, NULL);
    t->shared = shared;
    t->lock = lock;
}

static int intern_grow(jp_intern *t) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    jp_intern bigger = {calloc(cap, sizeof(char *)), calloc(cap, sizeof(uint32_t)), cap, t->n, t->arena, t->shared,
                        t->lock};
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
    if (len > UINT32_MAX) return NULL;
    const char *hit = t->cap ? t->slots[intern_find(t, s ? s : "", len)] : NULL;
    if (hit || !t->shared) return hit;
    pthread_mutex_lock(t->lock);
    hit = jp_intern_lookup(t->shared, s, len);
    pthread_mutex_unlock(t->lock);
    return hit;
}

/* A front's miss: the shared table's pointer, taken under its lock. */
static const char *shared_str(jp_intern *t, const char *s, size_t len) {
    pthread_mutex_lock(t->lock);
    const char *p = jp_intern_str(t->shared, s, len);
    pthread_mutex_unlock(t->lock);
    return p;
}

const char *jp_intern_str(jp_intern *t, const char *s, size_t len) {
    if (len > UINT32_MAX) return NULL;
    if ((t->n + 1) * 2 > t->cap && intern_grow(t) != JP_OK) return NULL;
    size_t i = intern_find(t, s ? s : "", len);
    if (!t->slots[i]) {
        const char *copy = t->shared ? shared_str(t, s, len) : jp_arena_strndup(t->arena, s ? s : "", len);
        if (!copy) return NULL;
        t->slots[i] = copy;
        t->lens[i] = (uint32_t)len;
        t->n++;
    }
    return t->slots[i];
}
