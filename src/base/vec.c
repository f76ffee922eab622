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

void jp_vec_free(jp_vec *v) {
    free(v->data);
    v->data = NULL;
    v->n = v->cap = 0;
}
