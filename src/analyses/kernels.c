/* kernels.c - GPU kernel statistics by kernel name and launch configuration. */
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"

/* kernel_details is "regs:32 static_shared:0 dynamic_shared:0 grid:8,1,1 block:128,1,1
 * occ_pct:50.0"; unknown keys are ignored, missing ones stay 0. */
static void parse_details(const char *d, jp_kernel_stat *k) {
    while (*d) {
        while (*d == ' ' || *d == '\n' || *d == ',') d++;
        const char *colon = strchr(d, ':');
        if (!colon) return;
        size_t klen = (size_t)(colon - d);
        const char *v = colon + 1;
        uint32_t *dims = NULL, *one = NULL;
        if (klen == 4 && memcmp(d, "regs", 4) == 0) one = &k->registers;
        else if (klen == 13 && memcmp(d, "static_shared", 13) == 0) one = &k->static_shared;
        else if (klen == 14 && memcmp(d, "dynamic_shared", 14) == 0) one = &k->dynamic_shared;
        else if (klen == 4 && memcmp(d, "grid", 4) == 0) dims = k->grid;
        else if (klen == 5 && memcmp(d, "block", 5) == 0) dims = k->block;
        else if (klen == 7 && memcmp(d, "occ_pct", 7) == 0) k->occupancy = strtod(v, NULL);
        if (one) *one = (uint32_t)strtoul(v, NULL, 10);
        for (int i = 0; dims && i < 3; i++) {
            char *end;
            dims[i] = (uint32_t)strtoul(v, &end, 10);
            if (*end != ',') break;
            v = end + 1;
        }
        d = v + strcspn(v, " \n");
    }
}

static int cmp_kernel(const void *a, const void *b) {
    const jp_kernel_stat *x = a, *y = b;
    if (x->total_ps != y->total_ps) return x->total_ps < y->total_ps ? 1 : -1;
    return strcmp(x->name, y->name);
}

int jp_kernels_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    jp_kernel_stat *out = jp_arena_alloc(arena, (m->kernels.n ? m->kernels.n : 1) * sizeof *out);
    if (!out) return JP_ERR_NOMEM;
    for (size_t i = 0; i < m->kernels.n; i++) {
        const jp_kernel_sum *k = &JP_VEC_AT(&m->kernels, jp_kernel_sum, i);
        jp_kernel_stat *s = &out[i];
        memset(s, 0, sizeof *s);
        s->name = k->name;
        s->op = k->op;
        parse_details(k->details, s);
        s->count = k->count;
        s->total_ps = k->total_ps;
        s->min_ps = k->min_ps;
        s->max_ps = k->max_ps;
        s->autotuning = k->autotuning;
        if (!k->autotuning) a->n_small_kernels += k->n_small; /* the program's kernels only */
    }
    if (m->kernels.n > 1) qsort(out, m->kernels.n, sizeof *out, cmp_kernel); /* glibc's is stable */
    a->kernels = out;
    a->n_kernels = m->kernels.n;
    return JP_OK;
}
