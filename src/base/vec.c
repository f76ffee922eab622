/* vec.c - growable arrays: doubling on the heap, elements zeroed as they are pushed. */
#include "base/vec.h"

#include <stdlib.h>
#include <string.h>

int jp_vec_grow(jp_vec *v, size_t size) {
    size_t cap = v->cap ? v->cap * 2 : 16;
    if (cap > SIZE_MAX / size) return -1;
    void *data = realloc(v->data, cap * size);
    if (!data) return -1;
    v->data = data;
    v->cap = cap;
    return 0;
}

void jp_vec_free(jp_vec *v) {
    free(v->data);
    v->data = NULL;
    v->n = v->cap = 0;
}
