/* compiles.c - XLA compilations seen in the capture, and those inside the steady state. */
#include <string.h>

#include "analyses/analyses.h"

/* The step a host event at t belongs to: the step whose marker (or dispatch) holds it, as the host
 * was then doing that step's work, even when the step's device-ended span began later (the host
 * runs ahead of an asynchronous device); else the step whose span holds it; else -1. */
static long step_of_host_time(const jp_analysis *a, int64_t t) {
    for (size_t i = 0; i < a->n_steps; i++) {
        const jp_step *s = &a->steps[i];
        if (s->host_dur_ps > 0 && t >= s->host_start_ps && t < s->host_start_ps + s->host_dur_ps) return (long)i;
    }
    return jp_step_at(a, t);
}

int jp_compiles_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    jp_vec v = {0};
    for (size_t i = 0; i < m->host.n; i++) {
        const jp_host_ev *h = &JP_VEC_AT(&m->host, jp_host_ev, i);
        if (h->kind != JP_HOST_COMPILE || strncmp(h->name, "backend_compile", 15) != 0) continue;
        jp_compile *c = jp_vec_push(&v, sizeof *c);
        if (!c) {
            jp_vec_free(&v);
            return JP_ERR_NOMEM;
        }
        long step = step_of_host_time(a, h->start_ps);
        *c = (jp_compile){h->name, h->module, h->start_ps, h->end_ps - h->start_ps,
                          step >= 0 ? a->steps[step].step_num : -1, step > 0};
        if (step >= 0) a->steps[step].n_compiles++;
    }
    a->compiles = jp_analysis_copy(arena, &v, sizeof(jp_compile));
    a->n_compiles = v.n;
    jp_vec_free(&v);
    return a->compiles ? JP_OK : JP_ERR_NOMEM;
}
