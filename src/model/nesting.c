/* nesting.c - finishing a model: events ordered by line and time, self time and depth by nesting,
 * executions grouped by run_id. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "decode/xnames.h"
#include "model/build_int.h"

int jp_exec_cmp_start(const void *a, const void *b) {
    int64_t x = ((const jp_exec *)a)->start_ps, y = ((const jp_exec *)b)->start_ps;
    return (x > y) - (x < y);
}

static int cmp_op_ev(const void *a, const void *b) {
    const jp_op_ev *x = a, *y = b;
    if (x->line != y->line) return x->line < y->line ? -1 : 1;
    if (x->start_ps != y->start_ps) return x->start_ps < y->start_ps ? -1 : 1;
    return (x->nest_end_ps < y->nest_end_ps) - (x->nest_end_ps > y->nest_end_ps); /* parents first */
}

static int cmp_host_ev(const void *a, const void *b) {
    const jp_host_ev *x = a, *y = b;
    if (x->line != y->line) return x->line < y->line ? -1 : 1;
    if (x->start_ps != y->start_ps) return x->start_ps < y->start_ps ? -1 : 1;
    return (x->end_ps < y->end_ps) - (x->end_ps > y->end_ps);
}

/* Self time by nesting: on one line, an event fully inside an open one is its child; a parent's
 * self time is its duration minus its direct children's durations. One stack walk per line. */
#define MAX_DEPTH JP_NEST_MAX_DEPTH
_Static_assert(MAX_DEPTH <= 256, "jp_host_ev.depth is 8 bits");

/* The walk below, one record at a time as the line is read (same pops, same depth), so that the
 * error can name the event's byte while its XSpace is open; finish's walk then finds no error on
 * the lines checked here. */
int jp_build_nest_track(jp_build_ctx *c, jp_nest_track *t, uint32_t line, int64_t start, int64_t end) {
    if (t->line != line) {
        t->line = line;
        t->in_order = 1;
        t->depth = 0;
    } else if (start < t->last_start || (start == t->last_start && end > t->last_end)) {
        t->in_order = 0; /* out of nesting order: jp_model_finish sorts it and checks it */
    }
    t->last_start = start, t->last_end = end;
    if (!t->in_order) return JP_OK;
    while (t->depth && (start >= t->ends[t->depth - 1] || end > t->ends[t->depth - 1])) t->depth--;
    if (t->depth < MAX_DEPTH) {
        t->ends[t->depth++] = end;
        return JP_OK;
    }
    jp_str name = c->ln ? (c->ln->name.len ? c->ln->name : c->ln->display_name) : (jp_str){"", 0};
    return jp_error_set(c->err, JP_ERR_LIMIT, c->ev_offset,
                        "XEvent at byte %llu: events nested more than %d deep on line '%.*s' of plane '%.*s' (host "
                        "%s, the event at %lld ps): jaxprof reads at most %d levels",
                        (unsigned long long)c->ev_offset, MAX_DEPTH, (int)(name.len > 200 ? 200 : name.len), name.ptr,
                        (int)(c->plane->name.len > 200 ? 200 : c->plane->name.len), c->plane->name.ptr, c->host,
                        (long long)start, MAX_DEPTH);
}

/* JP_ERR_LIMIT for an event nested deeper than MAX_DEPTH: naming where (the host's file, the line
 * counted within that host, the event's time) rather than dropping the event from nesting, which
 * would leave its parent's self time and its children's depths silently wrong. */
static int too_deep(const jp_model *m, uint32_t line, int64_t start_ps, jp_error *err) {
    const jp_model_host *hs = m->hosts.data, *h = NULL;
    for (size_t i = 0; i < m->hosts.n && hs[i].first_line <= line; i++) h = &hs[i];
    return jp_error_set(err, JP_ERR_LIMIT, 0,
                        "%s: events nested more than %d deep on line %u (the event at %lld ps): jaxprof reads at "
                        "most %d levels", h ? h->name : "profile", MAX_DEPTH, line - (h ? h->first_line : 0),
                        (long long)start_ps, MAX_DEPTH);
}

static int nest_ops(jp_model *m, jp_error *err) {
    jp_op_ev *ev = m->ops.data;
    size_t stack[MAX_DEPTH], depth = 0;
    for (size_t i = 0; i < m->ops.n; i++) {
        while (depth && (ev[stack[depth - 1]].line != ev[i].line || ev[i].start_ps >= ev[stack[depth - 1]].nest_end_ps ||
                         ev[i].nest_end_ps > ev[stack[depth - 1]].nest_end_ps))
            depth--;
        if (depth) {
            /* a child takes from its parent the time it spans inside it, or its own busy time when
             * that is less (a TPU op's device duration; an XLA:CPU async op runs on past its span) */
            jp_op_ev *parent = &ev[stack[depth - 1]];
            int64_t child = ev[i].nest_end_ps - ev[i].start_ps;
            if (ev[i].dur_ps < child) child = ev[i].dur_ps;
            parent->self_ps = parent->self_ps > child ? parent->self_ps - child : 0;
        }
        if (depth == MAX_DEPTH) return too_deep(m, ev[i].line, ev[i].start_ps, err);
        stack[depth++] = i;
    }
    return JP_OK;
}

/* The same walk for host threads, also giving each compile event the module of its enclosing
 * PjitFunction(f) dispatch ("jit_f"). */
static int nest_host(jp_model *m, jp_error *err) {
    jp_host_ev *ev = m->host.data;
    size_t stack[MAX_DEPTH], depth = 0;
    for (size_t i = 0; i < m->host.n; i++) {
        while (depth && (ev[stack[depth - 1]].line != ev[i].line || ev[i].start_ps >= ev[stack[depth - 1]].end_ps ||
                         ev[i].end_ps > ev[stack[depth - 1]].end_ps))
            depth--;
        ev[i].depth = (uint8_t)depth; /* < MAX_DEPTH: one more is an error below */
        for (size_t k = 0; k < depth && !ev[i].recursive; k++) ev[i].recursive = ev[stack[k]].name == ev[i].name;
        /* An event inside a dispatch or a runtime event is the runtime's ("Build buffer allocations"
         * inside PJRT_LoadedExecutable_Execute), whatever its name: no user code runs in there. */
        if (depth && ev[i].kind == JP_HOST_USER &&
            (ev[stack[depth - 1]].is_dispatch || ev[stack[depth - 1]].kind == JP_HOST_RUNTIME))
            ev[i].kind = JP_HOST_RUNTIME;
        if (depth && ev[stack[depth - 1]].kind != JP_HOST_STEP) {
            jp_host_ev *parent = &ev[stack[depth - 1]];
            int64_t d = ev[i].end_ps - ev[i].start_ps;
            parent->self_ps = parent->self_ps > d ? parent->self_ps - d : 0;
        }
        if (ev[i].kind == JP_HOST_COMPILE) {
            for (size_t k = depth; k-- > 0;) {
                const char *n = ev[stack[k]].name;
                if (!ev[stack[k]].is_dispatch) continue;
                char buf[JP_MODULE_NAME_MAX];
                jp_text module = jp_text_make(buf, sizeof buf);
                jp_host_dispatch_module(n, &module);
                if (!(ev[i].module = jp_intern_str(&m->intern, module.buf, module.len))) return jp_build_nomem(err);
                break;
            }
        }
        if (depth == MAX_DEPTH) return too_deep(m, ev[i].line, ev[i].start_ps, err);
        stack[depth++] = i;
    }
    return JP_OK;
}

/* The host whose devices include device d. */
static uint32_t host_of_device(const jp_model *m, uint32_t d) {
    uint32_t h = (uint32_t)m->hosts.n;
    while (h > 1 && JP_VEC_AT(&m->hosts, jp_model_host, h - 1).first_device > d) h--;
    return h ? h - 1 : 0;
}

/* XLA:CPU (and GPU when present) tag each op with the run_id of its execution. */
static int group_executions(jp_model *m) {
    jp_map index = {0};
    const jp_op_ev *ev = m->ops.data;
    const jp_opdef *defs = m->opdefs.data;
    size_t before = m->execs.n;
    int rc = JP_OK;
    for (size_t i = 0; i < m->ops.n && rc == JP_OK; i++) {
        if (!ev[i].run_id || before) continue; /* TPU profiles already have their XLA Modules */
        const char *module = defs[ev[i].op].module;
        int found;
        uint32_t k = jp_map_get_or_put(&index, jp_ptr_key(module), (uint64_t)ev[i].run_id, defs[ev[i].op].device,
                                       (uint32_t)m->execs.n, &found);
        if (k == UINT32_MAX) { rc = JP_ERR_NOMEM; break; }
        if (!found) {
            jp_exec *x = jp_vec_push(&m->execs, sizeof *x);
            if (!x) { rc = JP_ERR_NOMEM; break; }
            uint32_t program = defs[ev[i].op].shared_name ? jp_map_get(&m->run_program, (uint64_t)ev[i].run_id, 0, 0)
                                                          : UINT32_MAX;
            *x = (jp_exec){.module = module, .run_id = ev[i].run_id,
                           .program_id = program == UINT32_MAX ? -1 : (int64_t)program,
                           .start_ps = ev[i].start_ps, .end_ps = ev[i].end_ps,
                           .host = host_of_device(m, defs[ev[i].op].device), .device = defs[ev[i].op].device};
        }
        jp_exec *x = &JP_VEC_AT(&m->execs, jp_exec, k);
        if (ev[i].start_ps < x->start_ps) x->start_ps = ev[i].start_ps;
        if (ev[i].end_ps > x->end_ps) x->end_ps = ev[i].end_ps;
    }
    jp_map_deinit(&index);
    if (rc == JP_OK && m->execs.n > 1) qsort(m->execs.data, m->execs.n, sizeof(jp_exec), jp_exec_cmp_start);
    return rc;
}

/* qsort unless the array is in order already, as events read line by line mostly are; glibc's
 * qsort is a stable merge sort, so skipping it on sorted input changes nothing. */
static void sort_unless_sorted(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
    const char *p = base;
    size_t i = 1;
    while (i < n && cmp(p + (i - 1) * size, p + i * size) <= 0) i++;
    if (i < n) qsort(base, n, size, cmp);
}

int jp_model_finish(jp_model *m, jp_error *err) {
    if (m->ops.n > 1) sort_unless_sorted(m->ops.data, m->ops.n, sizeof(jp_op_ev), cmp_op_ev);
    int rc = nest_ops(m, err);
    if (rc) return rc;
    if (m->host.n > 1) sort_unless_sorted(m->host.data, m->host.n, sizeof(jp_host_ev), cmp_host_ev);
    if ((rc = nest_host(m, err))) return rc;
    if (group_executions(m) || jp_model_mark_autotuning(m)) return jp_build_nomem(err);
    if (m->device_steps.n > 1) qsort(m->device_steps.data, m->device_steps.n, sizeof(jp_exec), jp_exec_cmp_start);
    if (m->first_ps > m->last_ps) m->first_ps = m->last_ps = 0;
    return JP_OK;
}
