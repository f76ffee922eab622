/* vec.c - growable arrays: doubling on the heap, elements zeroed as they are pushed. */
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

int jp_vec_reserve(jp_vec *v, size_t n, size_t size) {
    if (n <= v->cap) return JP_OK;
    if (n > SIZE_MAX / size) return JP_ERR_NOMEM;
    void *data = realloc(v->data, n * size);
    if (!data) return JP_ERR_NOMEM;
    v->data = data;
    v->cap = n;
    return JP_OK;
}

void jp_vec_free(jp_vec *v) {
    free(v->data);
    v->data = NULL;
    v->n = v->cap = 0;
}
