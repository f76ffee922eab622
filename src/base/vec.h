/* vec.h - a growable array of fixed-size elements on the heap (internal). */
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

#endif
