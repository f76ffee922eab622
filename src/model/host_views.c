/* host_views.c - one host of a finished multi-host model: its records as views, and moving them on
 * the time axis (clock alignment). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "decode/xnames.h"
#include "model/build_int.h"

size_t jp_model_first_at_line(const void *base, size_t n, size_t size, size_t line_off, uint32_t line) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t l;
        memcpy(&l, (const char *)base + mid * size + line_off, sizeof l);
        if (l < line) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static jp_vec sub(const jp_vec *v, size_t size, size_t from, size_t to) {
    return (jp_vec){v->n ? (char *)v->data + from * size : NULL, to - from, 0};
}

/* Host h's run of a vector sorted by line (line_off: where an element keeps its line). */
static jp_vec line_run(const jp_model *m, size_t h, const jp_vec *v, size_t size, size_t line_off) {
    const jp_model_host *hs = m->hosts.data;
    size_t from = jp_model_first_at_line(v->data, v->n, size, line_off, hs[h].first_line);
    size_t to = h + 1 < m->hosts.n ? jp_model_first_at_line(v->data, v->n, size, line_off, hs[h + 1].first_line) : v->n;
    return sub(v, size, from, to);
}

/* The event vectors narrowed to host h (executions and device steps left as they are). */
static void narrow_to_host(const jp_model *m, size_t h, jp_model *view) {
    const jp_model_host *hs = &JP_VEC_AT(&m->hosts, jp_model_host, h), *next = h + 1 < m->hosts.n ? hs + 1 : NULL;
    *view = *m;
    view->hosts = sub(&m->hosts, sizeof *hs, h, h + 1);
    view->ops = line_run(m, h, &m->ops, sizeof(jp_op_ev), offsetof(jp_op_ev, line));
    view->host = line_run(m, h, &m->host, sizeof(jp_host_ev), offsetof(jp_host_ev, line));
    view->launch_calls = line_run(m, h, &m->launch_calls, sizeof(jp_launch_call), offsetof(jp_launch_call, line));
    view->launch_work = line_run(m, h, &m->launch_work, sizeof(jp_launch_ev), offsetof(jp_launch_ev, line));
    view->spans = sub(&m->spans, sizeof(jp_span), hs->first_span, next ? next->first_span : m->spans.n);
    view->xfers = sub(&m->xfers, sizeof(jp_xfer_ev), hs->first_xfer, next ? next->first_xfer : m->xfers.n);
    view->mem = sub(&m->mem, sizeof(jp_mem_ev), hs->first_mem, next ? next->first_mem : m->mem.n);
    view->first_ps = hs->first_ps <= hs->last_ps ? hs->first_ps : 0;
    view->last_ps = hs->first_ps <= hs->last_ps ? hs->last_ps : 0;
}

static int copy_host_execs(const jp_vec *from, uint32_t h, jp_vec *to) {
    to->n = 0;
    for (size_t i = 0; i < from->n; i++) {
        const jp_exec *x = &JP_VEC_AT(from, jp_exec, i);
        if (x->host != h) continue;
        jp_exec *y = jp_vec_push(to, sizeof *y);
        if (!y) return JP_ERR_NOMEM;
        *y = *x;
    }
    return JP_OK;
}

int jp_model_host_view(const jp_model *m, size_t h, jp_model *view, jp_vec scratch[2]) {
    narrow_to_host(m, h, view);
    if (copy_host_execs(&m->execs, (uint32_t)h, &scratch[0]) || copy_host_execs(&m->device_steps, (uint32_t)h, &scratch[1]))
        return JP_ERR_NOMEM;
    view->execs = sub(&scratch[0], sizeof(jp_exec), 0, scratch[0].n);
    view->device_steps = sub(&scratch[1], sizeof(jp_exec), 0, scratch[1].n);
    return JP_OK;
}

static void shift_execs(jp_vec *v, uint32_t h, int64_t delta) {
    for (size_t i = 0; i < v->n; i++) {
        jp_exec *x = &JP_VEC_AT(v, jp_exec, i);
        if (x->host == h) x->start_ps += delta, x->end_ps += delta;
    }
    if (v->n > 1) qsort(v->data, v->n, sizeof(jp_exec), jp_exec_cmp_start);
}

void jp_model_shift_host(jp_model *m, size_t h, int64_t delta) {
    if (!delta) return;
    jp_model view;
    narrow_to_host(m, h, &view);
    for (size_t i = 0; i < view.ops.n; i++) {
        jp_op_ev *e = &JP_VEC_AT(&view.ops, jp_op_ev, i);
        e->start_ps += delta, e->end_ps += delta, e->nest_end_ps += delta;
    }
    for (size_t i = 0; i < view.host.n; i++) {
        jp_host_ev *e = &JP_VEC_AT(&view.host, jp_host_ev, i);
        e->start_ps += delta, e->end_ps += delta;
    }
    for (size_t i = 0; i < view.spans.n; i++) {
        jp_span *e = &JP_VEC_AT(&view.spans, jp_span, i);
        e->start_ps += delta, e->end_ps += delta;
    }
    for (size_t i = 0; i < view.xfers.n; i++) {
        jp_xfer_ev *e = &JP_VEC_AT(&view.xfers, jp_xfer_ev, i);
        e->start_ps += delta, e->end_ps += delta;
    }
    for (size_t i = 0; i < view.mem.n; i++) JP_VEC_AT(&view.mem, jp_mem_ev, i).t_ps += delta;
    for (size_t i = 0; i < view.launch_calls.n; i++) {
        jp_launch_call *e = &JP_VEC_AT(&view.launch_calls, jp_launch_call, i);
        e->start_ps += delta, e->end_ps += delta;
    }
    for (size_t i = 0; i < view.launch_work.n; i++) {
        jp_launch_ev *e = &JP_VEC_AT(&view.launch_work, jp_launch_ev, i);
        e->start_ps += delta, e->end_ps += delta;
    }
    shift_execs(&m->execs, (uint32_t)h, delta);
    shift_execs(&m->device_steps, (uint32_t)h, delta);
    jp_model_host *hs = &JP_VEC_AT(&m->hosts, jp_model_host, h);
    if (hs->first_ps > hs->last_ps) return;
    hs->first_ps += delta, hs->last_ps += delta;
    m->first_ps = INT64_MAX, m->last_ps = INT64_MIN;
    for (size_t i = 0; i < m->hosts.n; i++) {
        const jp_model_host *o = &JP_VEC_AT(&m->hosts, jp_model_host, i);
        if (o->first_ps > o->last_ps) continue;
        if (o->first_ps < m->first_ps) m->first_ps = o->first_ps;
        if (o->last_ps > m->last_ps) m->last_ps = o->last_ps;
    }
}
