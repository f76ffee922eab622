/* vec.h - a growable array of fixed-size elements on the heap (internal). */
#ifndef JP_BASE_VEC_H
#define JP_BASE_VEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "jaxprof/jaxprof.h"

/* A growable array of fixed-size elements. Zero-initialise, then push; jp_vec_free releases it. */
typedef struct jp_vec {
    void *data;  /* elements, or NULL while empty */
    size_t n;    /* elements in use */
    size_t cap;  /* elements allocated */
} jp_vec;

/* Doubles v's room for elements of `size` bytes (16 at first): 0, or -1 when out of memory. */
int jp_vec_grow(jp_vec *v, size_t size);
void jp_vec_free(jp_vec *v);

/* Appends one zeroed element of `size` bytes; returns it, or NULL when out of memory. Inline: the
 * model pushes millions of records, and with `size` known where it is called the zeroing is a few
 * stores (often dropped, as the caller writes the whole record next) instead of a memset call. */
static inline void *jp_vec_push(jp_vec *v, size_t size) {
    if (v->n == v->cap && jp_vec_grow(v, size) != 0) return NULL;
    void *slot = (char *)v->data + v->n * size;
    memset(slot, 0, size);
    v->n++;
    return slot;
}

#define JP_VEC_AT(v, type, i) (((type *)(v)->data)[i])

#endif
