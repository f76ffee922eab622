/* autotune.c - device work of XLA's compiler. While it compiles a GPU program, XLA's autotuner runs
 * candidate kernels of each GEMM fusion (as modules named after the fusion, "gemm_fusion_dot.28")
 * and its redzone and buffer-comparison kernels. They carry no program id and no HLO, and they are
 * not the user's program: counted as ops, they would top the op table of any capture that compiles.
 * An op is marked autotuning when it is such (a GPU op outside every HloProto whose events name no
 * program) and at least half of its time runs while a host compiles. */
#include <stdlib.h>

#include "base/interval.h"
#include "model/build_int.h"

/* The compile spans of every host, sorted and merged into disjoint intervals; *n of them. */
static jp_interval *compile_windows(const jp_model *m, size_t *n) {
    *n = 0;
    for (size_t i = 0; m->n_compile_spans && i < m->spans.n; i++)
        *n += JP_VEC_AT(&m->spans, jp_span, i).part == JP_PART_COMPILE;
    jp_interval *w = malloc((*n ? *n : 1) * sizeof *w);
    if (!w) return NULL;
    size_t k = 0;
    for (size_t i = 0; *n && i < m->spans.n; i++) {
        const jp_span *s = &JP_VEC_AT(&m->spans, jp_span, i);
        if (s->part == JP_PART_COMPILE) w[k++] = (jp_interval){s->start_ps, s->end_ps};
    }
    jp_intervals_sort(w, k);
    *n = jp_intervals_merge_sorted(w, k);
    return w;
}

static int candidate(const jp_model *m, const jp_opdef *d) {
    return !d->opcode && !d->with_program && d->device < m->devices.n &&
           JP_VEC_AT(&m->devices, jp_device, d->device).platform == JP_PLATFORM_GPU;
}

int jp_model_mark_autotuning(jp_model *m) {
    int64_t(*time)[2] = calloc(m->opdefs.n ? m->opdefs.n : 1, sizeof *time); /* inside, total */
    if (!time) return JP_ERR_NOMEM;
    size_t n_candidates = 0;
    for (size_t i = 0; i < m->opdefs.n; i++) { /* -1: no candidate (asked once per op, not per event) */
        time[i][1] = candidate(m, &JP_VEC_AT(&m->opdefs, jp_opdef, i)) ? 0 : -1;
        n_candidates += time[i][1] == 0;
    }
    if (!n_candidates) { /* a program's ops all have HLO or a program id: no pass over spans or events */
        free(time);
        return JP_OK;
    }
    size_t n_win;
    jp_interval *w = compile_windows(m, &n_win);
    if (!w) {
        free(time);
        return JP_ERR_NOMEM;
    }
    for (size_t i = 0; n_win && i < m->ops.n; i++) {
        const jp_op_ev *e = &JP_VEC_AT(&m->ops, jp_op_ev, i);
        if (time[e->op][1] < 0) continue;
        time[e->op][0] += jp_intervals_covered(w, n_win, e->start_ps, e->end_ps);
        time[e->op][1] += e->end_ps - e->start_ps;
    }
    for (size_t i = 0; n_win && i < m->opdefs.n; i++)
        if (time[i][1] > 0 && 2 * time[i][0] >= time[i][1]) JP_VEC_AT(&m->opdefs, jp_opdef, i).autotuning = 1;
    for (size_t i = 0; i < m->kernels.n; i++) { /* a kernel sum without program ids is its first op's */
        jp_kernel_sum *k = &JP_VEC_AT(&m->kernels, jp_kernel_sum, i);
        k->autotuning = !k->with_program && k->opdef < m->opdefs.n && JP_VEC_AT(&m->opdefs, jp_opdef, k->opdef).autotuning;
    }
    free(w);
    free(time);
    return JP_OK;
}
