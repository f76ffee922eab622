/* ops.c - per-op statistics (count, total, self, min/max, FLOPs, bytes) and per-device busy time. */
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"

static int cmp_span_device(const void *a, const void *b) {
    const jp_span *x = a, *y = b;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    return (x->start_ps > y->start_ps) - (x->start_ps < y->start_ps);
}

/* Busy time is the union of a device's op and transfer intervals: overlapping streams or threads
 * count once. */
static int device_busy(const jp_model *m, jp_analysis *a) {
    size_t n = 0;
    jp_span *spans = malloc((m->spans.n ? m->spans.n : 1) * sizeof *spans);
    if (!spans) return JP_ERR_NOMEM;
    for (size_t i = 0; i < m->spans.n; i++)
        if (JP_VEC_AT(&m->spans, jp_span, i).device != UINT32_MAX) spans[n++] = JP_VEC_AT(&m->spans, jp_span, i);
    qsort(spans, n, sizeof *spans, cmp_span_device);
    for (size_t i = 0; i < n;) {
        jp_device *d = &a->devices[spans[i].device];
        int64_t lo = spans[i].start_ps, hi = spans[i].end_ps;
        d->first_ps = lo;
        for (; i < n && &a->devices[spans[i].device] == d; i++) {
            if (spans[i].start_ps > hi) {
                d->busy_ps += hi - lo;
                lo = spans[i].start_ps;
            }
            if (spans[i].end_ps > hi) hi = spans[i].end_ps;
        }
        d->busy_ps += hi - lo;
        d->last_ps = hi;
        a->op_busy_ps += d->busy_ps;
    }
    free(spans);
    return JP_OK;
}

static int cmp_op_total(const void *a, const void *b) {
    const jp_op_stat *x = a, *y = b;
    if (x->total_ps != y->total_ps) return x->total_ps < y->total_ps ? 1 : -1;
    int c = strcmp(x->module, y->module);
    return c ? c : strcmp(x->name, y->name);
}

int jp_ops_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    a->devices = jp_analysis_copy(arena, &m->devices, sizeof(jp_device));
    a->n_devices = m->devices.n;
    a->ops = jp_arena_alloc(arena, (m->opdefs.n ? m->opdefs.n : 1) * sizeof(jp_op_stat));
    if (!a->devices || !a->ops) return JP_ERR_NOMEM;
    for (size_t i = 0; i < m->opdefs.n; i++) {
        const jp_opdef *d = &JP_VEC_AT(&m->opdefs, jp_opdef, i);
        a->ops[i] = (jp_op_stat){d->module, d->name, d->category, d->op_name, d->scope, d->source, d->device,
                                 0, 0, 0, INT64_MAX, 0, 0, 0};
    }
    for (size_t i = 0; i < m->ops.n; i++) {
        const jp_op_ev *e = &JP_VEC_AT(&m->ops, jp_op_ev, i);
        jp_op_stat *s = &a->ops[e->op];
        const jp_opdef *d = &JP_VEC_AT(&m->opdefs, jp_opdef, e->op);
        s->count++;
        s->total_ps += e->dur_ps;
        s->self_ps += e->self_ps;
        a->op_self_ps += e->self_ps;
        if (e->dur_ps < s->min_ps) s->min_ps = e->dur_ps;
        if (e->dur_ps > s->max_ps) s->max_ps = e->dur_ps;
        s->flops += d->flops;
        s->bytes += d->bytes;
        a->devices[d->device].n_ops++;
    }
    size_t n = 0; /* drop ops that were defined but never ran (filtered devices) */
    for (size_t i = 0; i < m->opdefs.n; i++)
        if (a->ops[i].count) a->ops[n++] = a->ops[i];
    a->n_ops = n;
    qsort(a->ops, n, sizeof *a->ops, cmp_op_total);
    return device_busy(m, a);
}
