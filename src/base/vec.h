/* vec.h - growable arrays on the heap and an interning string table (internal). */
#ifndef JP_BASE_VEC_H
#define JP_BASE_VEC_H

#include <stddef.h>
#include <stdint.h>

#include "jaxprof/jaxprof.h"

/* A growable array of fixed-size elements. Zero-initialise, then push; jp_vec_free releases it. */
typedef struct jp_vec {
    void *data;  /* elements, or NULL while empty */
    size_t n;    /* elements in use */
    size_t cap;  /* elements allocated */
} jp_vec;

/* Appends one zeroed element of `size` bytes; returns it, or NULL when out of memory. */
void *jp_vec_push(jp_vec *v, size_t size);
void jp_vec_free(jp_vec *v);

#define JP_VEC_AT(v, type, i) (((type *)(v)->data)[i])

/* Interned strings: equal text gives the same NUL-terminated pointer, so the analyses compare
 * names by pointer. Strings live in the given arena; the table itself is on the heap. */
typedef struct jp_intern {
    const char **slots; /* open addressing, power-of-two size */
    uint32_t *lens;     /* length of each slot's string */
    size_t cap;
    size_t n;
    jp_arena *arena;    /* owns the strings */
} jp_intern;

void jp_intern_init(jp_intern *t, jp_arena *arena);
void jp_intern_deinit(jp_intern *t);
/* The interned copy of s[0..len), or NULL when out of memory. */
const char *jp_intern_str(jp_intern *t, const char *s, size_t len);
/* The interned copy of s[0..len) when there is one, else NULL; never adds (safe on a shared table). */
const char *jp_intern_lookup(const jp_intern *t, const char *s, size_t len);
static inline const char *jp_intern_view(jp_intern *t, jp_str s) { return jp_intern_str(t, s.ptr, s.len); }

/* A map from a key of three words to a uint32 value (an index into some array). */
typedef struct jp_map {
    uint64_t *keys;  /* 3 words per slot */
    uint32_t *vals;  /* UINT32_MAX marks an empty slot */
    size_t cap;
    size_t n;
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

/* Sorts n elements of `size` bytes by the 64-bit key at byte `key_off` of each (int64_t when
 * is_signed, else uint64_t), ascending and stable: elements with equal keys keep their order, as
 * with glibc's qsort and a comparator on that key alone. An LSD radix sort, byte by byte, skipping
 * bytes all keys share. Falls back to qsort with `cmp` when a scratch copy cannot be allocated. */
void jp_sort_by_key64(void *base, size_t n, size_t size, size_t key_off, int is_signed,
                      int (*cmp)(const void *, const void *));

/* qsort comparator for int64_t, ascending. */
int jp_cmp_i64(const void *a, const void *b);

static inline uint64_t jp_ptr_key(const void *p) { return (uint64_t)(uintptr_t)p; }

#endif
