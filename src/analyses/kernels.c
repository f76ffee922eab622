/* kernels.c - GPU kernel statistics by kernel name and launch configuration. */
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"

static const int64_t SMALL_KERNEL_PS = 100000000; /* 0.1 ms */

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
    jp_vec v = {0};
    jp_map idx = {0};
    int rc = JP_OK;
    for (size_t i = 0; i < m->kernels.n && rc == JP_OK; i++) {
        const jp_kernel_ev *e = &JP_VEC_AT(&m->kernels, jp_kernel_ev, i);
        uint32_t k = jp_map_get_or_put(&idx, jp_ptr_key(e->name), jp_ptr_key(e->details), 0, (uint32_t)v.n, NULL);
        if (k == UINT32_MAX || (k == v.n && !jp_vec_push(&v, sizeof(jp_kernel_stat)))) {
            rc = JP_ERR_NOMEM;
            break;
        }
        jp_kernel_stat *s = &JP_VEC_AT(&v, jp_kernel_stat, k);
        if (!s->count) {
            s->name = e->name;
            s->op = e->op;
            s->min_ps = INT64_MAX;
            parse_details(e->details, s);
        }
        s->count++;
        s->total_ps += e->dur_ps;
        if (e->dur_ps < s->min_ps) s->min_ps = e->dur_ps;
        if (e->dur_ps > s->max_ps) s->max_ps = e->dur_ps;
        if (e->dur_ps < SMALL_KERNEL_PS) a->n_small_kernels++;
    }
    if (rc == JP_OK) {
        if (v.n > 1) qsort(v.data, v.n, sizeof(jp_kernel_stat), cmp_kernel);
        a->kernels = jp_analysis_copy(arena, &v, sizeof(jp_kernel_stat));
        a->n_kernels = v.n;
        if (!a->kernels) rc = JP_ERR_NOMEM;
    }
    jp_vec_free(&v);
    jp_map_deinit(&idx);
    return rc;
}
