/* memory.c - per-allocator peak and a sampled timeline from allocation/deallocation events. */
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"

enum { MAX_SAMPLES = 1000 };

static int cmp_mem(const void *a, const void *b) {
    const jp_mem_ev *x = a, *y = b;
    int c = strcmp(x->allocator, y->allocator);
    if (c) return c;
    return (x->t_ps > y->t_ps) - (x->t_ps < y->t_ps);
}

static int allocator_stats(jp_arena *arena, const jp_mem_ev *ev, size_t n, jp_memory_stat *out) {
    size_t stride = (n + MAX_SAMPLES - 1) / MAX_SAMPLES;
    out->allocator = ev[0].allocator;
    out->n_events = n;
    out->samples = jp_arena_alloc(arena, ((n + stride - 1) / stride) * sizeof(jp_memory_sample));
    if (!out->samples) return JP_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].in_use > out->peak_bytes) out->peak_bytes = ev[i].in_use, out->peak_t_ps = ev[i].t_ps;
        if (ev[i].peak > out->lifetime_peak_bytes) out->lifetime_peak_bytes = ev[i].peak;
        if (i % stride == 0) out->samples[out->n_samples++] = (jp_memory_sample){ev[i].t_ps, ev[i].in_use};
    }
    return JP_OK;
}

int jp_memory_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    size_t n = m->mem.n, n_alloc = 0;
    if (!n) return JP_OK;
    jp_mem_ev *ev = jp_analysis_copy(arena, &m->mem, sizeof *ev);
    if (!ev) return JP_ERR_NOMEM;
    qsort(ev, n, sizeof *ev, cmp_mem);
    for (size_t i = 0; i < n; i++) n_alloc += !i || ev[i].allocator != ev[i - 1].allocator;
    a->memory = jp_arena_alloc(arena, n_alloc * sizeof(jp_memory_stat));
    if (!a->memory) return JP_ERR_NOMEM;
    memset(a->memory, 0, n_alloc * sizeof(jp_memory_stat));
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && ev[j].allocator == ev[i].allocator) j++;
        int rc = allocator_stats(arena, ev + i, j - i, &a->memory[a->n_memory++]);
        if (rc) return rc;
        i = j;
    }
    return JP_OK;
}
