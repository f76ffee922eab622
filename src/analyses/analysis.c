/* analysis.c - helpers every analysis shares: copying model vectors, Python stacks and formatting
 * text into the analysis' arena. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "analyses/analyses.h"
#include "base/sort.h"

void *jp_analysis_copy(jp_arena *a, const jp_vec *v, size_t elem) {
    void *p = jp_arena_alloc(a, (v->n ? v->n : 1) * elem);
    if (p && v->n) memcpy(p, v->data, v->n * elem);
    return p;
}

const char *jp_analysis_printf(jp_arena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? jp_arena_alloc(a, (size_t)n + 1) : NULL;
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

int jp_analysis_stack(jp_arena *a, const jp_hlo_frame *f, const jp_source_frame **stack, uint32_t *n_stack) {
    uint32_t n = 0;
    for (const jp_hlo_frame *p = f; p && n < JP_HLO_MAX_STACK; p = p->parent) n++;
    if (!n) return JP_OK;
    jp_source_frame *s = jp_arena_alloc(a, n * sizeof *s);
    if (!s) return JP_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++, f = f->parent) s[i] = (jp_source_frame){f->file, f->function, f->line, f->library};
    *stack = s;
    *n_stack = n;
    return JP_OK;
}

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
