/* sort.h - a stable radix sort on a 64-bit key, and the int64 comparator beside it (internal). */
#ifndef JP_BASE_SORT_H
#define JP_BASE_SORT_H

#include <stddef.h>

/* Sorts n elements of `size` bytes by the 64-bit key at byte `key_off` of each (int64_t when
 * is_signed, else uint64_t), ascending and stable: elements with equal keys keep their order, as
 * with glibc's qsort and a comparator on that key alone. Input that is a few sorted runs (at most
 * 64: events of a few lines or streams, each in time order, as most of the model's vectors are) is
 * merged in one pass (two runs side by side, more by a tournament over their heads); else an LSD
 * radix sort, byte by byte, skipping bytes all keys share. Falls back to qsort with `cmp` when a scratch copy cannot
 * be allocated. */
void jp_sort_by_key64(void *base, size_t n, size_t size, size_t key_off, int is_signed,
                      int (*cmp)(const void *, const void *));

/* qsort comparator for int64_t, ascending. */
int jp_cmp_i64(const void *a, const void *b);

#endif
