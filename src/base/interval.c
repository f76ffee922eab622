/* interval.c - sorting, merging and measuring time spans (interval.h). */
#include "base/interval.h"

#include "base/sort.h"

static int cmp_interval_start(const void *x, const void *y) {
    int64_t p = ((const jp_interval *)x)->start, q = ((const jp_interval *)y)->start;
    return (p > q) - (p < q);
}

/* Spans come from event vectors ordered by line, each line in time order: a few sorted runs. */
void jp_intervals_sort(jp_interval *v, size_t n) {
    jp_sort_runs_by_key64(v, n, sizeof *v, offsetof(jp_interval, start), cmp_interval_start);
}

size_t jp_intervals_merge_sorted(jp_interval *v, size_t n) {
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out && v[i].start <= v[out - 1].end) {
            if (v[i].end > v[out - 1].end) v[out - 1].end = v[i].end;
        } else {
            v[out++] = v[i];
        }
    }
    return out;
}

int64_t jp_intervals_covered(const jp_interval *u, size_t n, int64_t start, int64_t end) {
    size_t lo = 0, hi = n; /* the first interval ending after start */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (u[mid].end <= start) lo = mid + 1;
        else hi = mid;
    }
    int64_t sum = 0;
    for (size_t i = lo; i < n && u[i].start < end; i++)
        sum += (u[i].end < end ? u[i].end : end) - (u[i].start > start ? u[i].start : start);
    return sum;
}
