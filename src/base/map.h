/* map.h - a hash map from a key of three 64-bit words to a uint32 value (internal). */
#ifndef JP_BASE_MAP_H
#define JP_BASE_MAP_H

#include <stddef.h>
#include <stdint.h>

/* A map from a key of three words to a uint32 value (an index into some array). Zero-initialise;
 * jp_map_deinit releases it. Not thread-safe; jp_map_get alone may run on a map no one changes. */
typedef struct jp_map {
    uint64_t *keys;  /* 3 words per slot */
    uint32_t *vals;  /* UINT32_MAX marks an empty slot */
    size_t cap;      /* slots allocated, a power of two (0 before the first key) */
    size_t n;        /* keys held */
} jp_map;

void jp_map_deinit(jp_map *m);
/* Looks the key up; when absent inserts `fresh` and returns it. Returns UINT32_MAX when out of
 * memory. *found (optional) tells which happened. */
uint32_t jp_map_get_or_put(jp_map *m, uint64_t a, uint64_t b, uint64_t c, uint32_t fresh, int *found);

/* The value stored under the key, or UINT32_MAX when there is none; never adds. */
uint32_t jp_map_get(const jp_map *m, uint64_t a, uint64_t b, uint64_t c);

/* As jp_map_get_or_put, returning the stored value's slot so callers can update it (never store UINT32_MAX);
 * NULL when out of memory. The pointer is valid until the next insertion. */
uint32_t *jp_map_value(jp_map *m, uint64_t a, uint64_t b, uint64_t c, uint32_t fresh, int *found);

/* A pointer as a key word (interned strings are keyed by address). */
static inline uint64_t jp_ptr_key(const void *p) { return (uint64_t)(uintptr_t)p; }

#endif
