/* compiles.c - XLA compilations seen in the capture, and those inside the steady state. */
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"

/* The capture's step module: the one with the most execution time among those run at least
 * twice (the module steps are inferred from without markers); NULL without executions. */
static const char *step_module(const jp_model *m) {
    const jp_exec *x = m->execs.data;
    int64_t *total = calloc(m->execs.n ? m->execs.n : 1, sizeof *total);
    uint32_t *count = calloc(m->execs.n ? m->execs.n : 1, sizeof *count);
    jp_map idx = {0};
    const char *best = NULL;
    int64_t best_total = -1;
    for (size_t i = 0; total && count && i < m->execs.n; i++) {
        uint32_t k = jp_map_get_or_put(&idx, jp_ptr_key(x[i].module), 0, 0, (uint32_t)idx.n, NULL);
        if (k == UINT32_MAX) break;
        total[k] += x[i].end_ps - x[i].start_ps;
        if (++count[k] >= 2 && total[k] > best_total) best_total = total[k], best = x[i].module;
    }
    free(total);
    free(count);
    jp_map_deinit(&idx);
    return best;
}

/* 1 when the first step is a warm-up: it compiles the step module itself, so the capture began
 * with the program's first step, where compiling is expected. A first step that compiles only
 * other modules (a helper recompiled, a new function) is steady state like any other step: the
 * step module was compiled before the capture began. Without executions, it is a warm-up. */
static int first_step_warms_up(const jp_model *m, const jp_analysis *a) {
    const char *mod = step_module(m);
    if (!mod) return 1;
    for (size_t i = 0; i < m->host.n; i++) {
        const jp_host_ev *h = &JP_VEC_AT(&m->host, jp_host_ev, i);
        if (h->kind == JP_HOST_COMPILE && jp_step_issued_at(a, h->start_ps) == 0 && strcmp(h->module, mod) == 0) return 1;
    }
    return 0;
}

int jp_compiles_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    jp_vec v = {0};
    int warm_up = a->n_steps ? first_step_warms_up(m, a) : 1;
    for (size_t i = 0; i < m->host.n; i++) {
        const jp_host_ev *h = &JP_VEC_AT(&m->host, jp_host_ev, i);
        if (h->kind != JP_HOST_COMPILE || strncmp(h->name, "backend_compile", 15) != 0) continue;
        jp_compile *c = jp_vec_push(&v, sizeof *c);
        if (!c) {
            jp_vec_free(&v);
            return JP_ERR_NOMEM;
        }
        long step = jp_step_issued_at(a, h->start_ps);
        *c = (jp_compile){h->name, h->module, h->start_ps, h->end_ps - h->start_ps,
                          step >= 0 ? a->steps[step].step_num : -1, step > 0 || (step == 0 && !warm_up)};
        if (step >= 0) a->steps[step].n_compiles++;
    }
    a->compiles = jp_analysis_copy(arena, &v, sizeof(jp_compile));
    a->n_compiles = v.n;
    jp_vec_free(&v);
    return a->compiles ? JP_OK : JP_ERR_NOMEM;
}
