/* interval.h - time spans and their unions: the overlap measures (device idle, hidden communication,
 * work during compiles) are taken on sorted disjoint unions of spans. */
#ifndef JP_BASE_INTERVAL_H
#define JP_BASE_INTERVAL_H

#include <stddef.h>
#include <stdint.h>

/* A time span [start, end) in ps. */
typedef struct jp_interval {
    int64_t start, end;
} jp_interval;

/* Sorts v[0..n) by start (stable). */
void jp_intervals_sort(jp_interval *v, size_t n);
/* Merges v[0..n) (sorted by start) into disjoint intervals at v's front; returns how many. */
size_t jp_intervals_merge_sorted(jp_interval *v, size_t n);
/* Time of [start, end) covered by the sorted disjoint intervals u[0..n) (a binary search, then a
 * walk over the ones that meet it). */
int64_t jp_intervals_covered(const jp_interval *u, size_t n, int64_t start, int64_t end);
/* jp_intervals_covered with the search starting at *hint (0 at first; set to where this one
 * ended): spans asked about in time order cost a step or two each instead of a binary search's
 * cache misses over a large union. */
int64_t jp_intervals_covered_from(const jp_interval *u, size_t n, int64_t start, int64_t end, size_t *hint);

#endif
