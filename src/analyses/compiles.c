/* compiles.c - XLA compilations seen in the capture, and those inside the steady state. */
#include <string.h>

#include "analyses/analyses.h"

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
        long step = jp_step_at(a, h->start_ps);
        *c = (jp_compile){h->name, h->module, h->start_ps, h->end_ps - h->start_ps,
                          step >= 0 ? a->steps[step].step_num : -1, step > 0};
        if (step >= 0) a->steps[step].n_compiles++;
    }
    a->compiles = jp_analysis_copy(arena, &v, sizeof(jp_compile));
    a->n_compiles = v.n;
    jp_vec_free(&v);
    return a->compiles ? JP_OK : JP_ERR_NOMEM;
}
