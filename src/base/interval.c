/* interval.c - sorting, merging and measuring time spans (interval.h). */
#include "base/interval.h"

#include "base/sort.h"

static int cmp_interval_start(const void *x, const void *y) {
    int64_t p = ((const jp_interval *)x)->start, q = ((const jp_interval *)y)->start;
    return (p > q) - (p < q);
}

void jp_intervals_sort(jp_interval *v, size_t n) {
    jp_sort_by_key64(v, n, sizeof *v, offsetof(jp_interval, start), 1, cmp_interval_start);
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

/* The sum over u[lo..) of what lies in [start, end). */
static int64_t covered_at(const jp_interval *u, size_t n, size_t lo, int64_t start, int64_t end) {
    int64_t sum = 0;
    for (size_t i = lo; i < n && u[i].start < end; i++)
        sum += (u[i].end < end ? u[i].end : end) - (u[i].start > start ? u[i].start : start);
    return sum;
}

/* The first i in [lo, hi) with u[i].end > start, given that it lies there. */
static size_t first_ending_after(const jp_interval *u, size_t lo, size_t hi, int64_t start) {
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (u[mid].end <= start) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

int64_t jp_intervals_covered(const jp_interval *u, size_t n, int64_t start, int64_t end) {
    if (!n || end <= u[0].start || start >= u[n - 1].end) return 0; /* outside them all: no search */
    return covered_at(u, n, first_ending_after(u, 0, n, start), start, end);
}

int64_t jp_intervals_covered_from(const jp_interval *u, size_t n, int64_t start, int64_t end, size_t *hint) {
    if (!n || end <= u[0].start || start >= u[n - 1].end) return 0;
    size_t h = *hint < n ? *hint : n - 1, lo, hi, step = 1;
    if (u[h].end <= start) { /* right of h: gallop on */
        while (h + step < n && u[h + step].end <= start) h += step, step *= 2;
        lo = h + 1, hi = h + step < n ? h + step + 1 : n;
    } else { /* at or left of h */
        while (h >= step && u[h - step].end > start) h -= step, step *= 2;
        lo = h >= step ? h - step + 1 : 0, hi = h + 1;
    }
    *hint = first_ending_after(u, lo, hi, start);
    return covered_at(u, n, *hint, start, end);
}
