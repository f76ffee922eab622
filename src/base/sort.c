/* sort.c - the stable LSD radix sort on a 64-bit key that the big single-key sorts use. */
#include "base/sort.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
