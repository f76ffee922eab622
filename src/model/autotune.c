/* autotune.c - device work of XLA's compiler. While it compiles a GPU program, XLA's autotuner runs
 * candidate kernels of each GEMM fusion (as modules named after the fusion, "gemm_fusion_dot.28")
 * and its redzone and buffer-comparison kernels. They carry no program id and no HLO, and they are
 * not the user's program: counted as ops, they would top the op table of any capture that compiles.
 * An op is marked autotuning when it is such (a GPU op outside every HloProto whose events name no
 * program) and at least half of its time runs while a host compiles. */
#include <stdlib.h>

#include "model/build_int.h"

typedef struct window {
    int64_t start_ps, end_ps;
} window;

static int cmp_window(const void *a, const void *b) {
    const window *x = a, *y = b;
    return (x->start_ps > y->start_ps) - (x->start_ps < y->start_ps);
}

/* The compile spans of every host, sorted and merged into disjoint windows; *n of them. */
static window *compile_windows(const jp_model *m, size_t *n) {
    *n = 0;
    for (size_t i = 0; i < m->spans.n; i++) *n += JP_VEC_AT(&m->spans, jp_span, i).part == JP_PART_COMPILE;
    window *w = malloc((*n ? *n : 1) * sizeof *w);
    if (!w) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < m->spans.n; i++) {
        const jp_span *s = &JP_VEC_AT(&m->spans, jp_span, i);
        if (s->part == JP_PART_COMPILE) w[k++] = (window){s->start_ps, s->end_ps};
    }
    if (k > 1) qsort(w, k, sizeof *w, cmp_window);
    size_t u = 0;
    for (size_t i = 1; i < k; i++) {
        if (w[i].start_ps > w[u].end_ps) w[++u] = w[i];
        else if (w[i].end_ps > w[u].end_ps) w[u].end_ps = w[i].end_ps;
    }
    *n = k ? u + 1 : 0;
    return w;
}

/* The part of [start, end) inside the windows. */
static int64_t inside(const window *w, size_t n, int64_t start, int64_t end) {
    size_t lo = 0, hi = n; /* the first window ending after start */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w[mid].end_ps <= start) lo = mid + 1;
        else hi = mid;
    }
    int64_t sum = 0;
    for (size_t i = lo; i < n && w[i].start_ps < end; i++) {
        int64_t a = w[i].start_ps > start ? w[i].start_ps : start, b = w[i].end_ps < end ? w[i].end_ps : end;
        if (b > a) sum += b - a;
    }
    return sum;
}

static int candidate(const jp_model *m, const jp_opdef *d) {
    return !d->opcode && !d->with_program && d->device < m->devices.n &&
           JP_VEC_AT(&m->devices, jp_device, d->device).platform == JP_PLATFORM_GPU;
}

int jp_model_mark_autotuning(jp_model *m) {
    size_t n_win;
    window *w = compile_windows(m, &n_win);
    int64_t(*time)[2] = calloc(m->opdefs.n ? m->opdefs.n : 1, sizeof *time); /* inside, total */
    if (!w || !time) {
        free(w);
        free(time);
        return JP_ERR_NOMEM;
    }
    for (size_t i = 0; n_win && i < m->ops.n; i++) {
        const jp_op_ev *e = &JP_VEC_AT(&m->ops, jp_op_ev, i);
        if (!candidate(m, &JP_VEC_AT(&m->opdefs, jp_opdef, e->op))) continue;
        time[e->op][0] += inside(w, n_win, e->start_ps, e->end_ps);
        time[e->op][1] += e->end_ps - e->start_ps;
    }
    for (size_t i = 0; n_win && i < m->opdefs.n; i++)
        if (time[i][1] > 0 && 2 * time[i][0] >= time[i][1]) JP_VEC_AT(&m->opdefs, jp_opdef, i).autotuning = 1;
    free(w);
    free(time);
    return JP_OK;
}
