/* scopes.c - device time by user scope (the op_name path JAX records under jax.named_scope) and
 * host time by TraceAnnotation name, both with self and total time. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "base/sort.h"

static int cmp_scope(const void *a, const void *b) {
    const jp_scope_stat *x = a, *y = b;
    if (x->kind != y->kind) return x->kind - y->kind;
    if (x->total_ps != y->total_ps) return x->total_ps < y->total_ps ? 1 : -1;
    return strcmp(x->path, y->path);
}

static jp_scope_stat *scope_for(jp_vec *v, jp_map *idx, const char *path, int kind) {
    uint32_t k = jp_map_get_or_put(idx, jp_ptr_key(path), (uint64_t)kind, 0, (uint32_t)v->n, NULL);
    if (k == UINT32_MAX) return NULL;
    if (k == v->n) {
        jp_scope_stat *s = jp_vec_push(v, sizeof *s);
        if (!s) return NULL;
        s->path = path;
        s->kind = kind;
        s->depth = UINT32_MAX;
    }
    return &JP_VEC_AT(v, jp_scope_stat, k);
}

/* An op's self time counts toward its scope and every enclosing one ("f", "f/loss",
 * "f/loss/dense"), so a parent's total is the sum over its subtree and nothing counts twice. */
static int device_scopes(const jp_model *m, const jp_analysis *a, jp_vec *v, jp_map *idx) {
    jp_intern *t = (jp_intern *)&m->intern;
    for (size_t i = 0; i < a->n_ops; i++) {
        const jp_op_stat *op = &a->ops[i];
        const char *path = *op->scope ? op->scope : "(no scope)";
        uint32_t depth = 0;
        for (const char *p = path;; p++) {
            if (*p != '/' && *p != '\0') continue;
            const char *prefix = jp_intern_str(t, path, (size_t)(p - path));
            jp_scope_stat *s = prefix ? scope_for(v, idx, prefix, JP_SCOPE_DEVICE) : NULL;
            if (!s) return JP_ERR_NOMEM;
            s->depth = depth++;
            s->count += op->count;
            s->total_ps += op->self_ps;
            if (*p == '\0') {
                s->self_ps += op->self_ps;
                break;
            }
        }
    }
    return JP_OK;
}

typedef struct scope_iv { /* one host event of a scope, for its wall time */
    uint64_t scope;          /* index into the scopes */
    int64_t start, end;
} scope_iv;

static int cmp_iv_start(const void *a, const void *b) {
    const scope_iv *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

static int cmp_iv_scope(const void *a, const void *b) {
    const scope_iv *x = a, *y = b;
    return (x->scope > y->scope) - (x->scope < y->scope);
}

/* Each host scope's wall_ps: the union of its events' intervals over every thread, so that a
 * scope open on 8 threads at once counts the wall time once. */
static int host_wall_times(jp_vec *v, scope_iv *iv, size_t n) {
    /* by scope, then start: two stable sorts on one key each (a thread's events come in time order,
     * so the first merges runs), a tenth of a comparison sort's time on a Python-traced capture */
    jp_sort_by_key64(iv, n, sizeof *iv, offsetof(scope_iv, start), 1, cmp_iv_start);
    jp_sort_by_key64(iv, n, sizeof *iv, offsetof(scope_iv, scope), 0, cmp_iv_scope);
    for (size_t i = 0; i < n;) {
        jp_scope_stat *s = &JP_VEC_AT(v, jp_scope_stat, iv[i].scope);
        int64_t lo = iv[i].start, hi = iv[i].end, wall = 0;
        size_t j = i + 1;
        for (; j < n && iv[j].scope == iv[i].scope; j++) {
            if (iv[j].start > hi) {
                wall += hi - lo;
                lo = iv[j].start;
            }
            if (iv[j].end > hi) hi = iv[j].end;
        }
        s->wall_ps = wall + (hi - lo);
        i = j;
    }
    return JP_OK;
}

static int host_scopes(const jp_model *m, jp_vec *v, jp_map *idx) {
    scope_iv *iv = malloc((m->host.n ? m->host.n : 1) * sizeof *iv);
    size_t n_iv = 0;
    if (!iv) return JP_ERR_NOMEM;
    for (size_t i = 0; i < m->host.n; i++) {
        const jp_host_ev *h = &JP_VEC_AT(&m->host, jp_host_ev, i);
        if (h->kind != JP_HOST_USER && h->kind != JP_HOST_RUNTIME && h->kind != JP_HOST_COMPILE) continue;
        jp_scope_stat *s = scope_for(v, idx, h->name, JP_SCOPE_HOST);
        if (!s) {
            free(iv);
            return JP_ERR_NOMEM;
        }
        s->user = h->kind == JP_HOST_USER;
        if (h->depth < s->depth) s->depth = h->depth;
        s->self_ps += h->self_ps;
        if (h->recursive) continue; /* its time is already inside the outer event's total */
        s->count++;
        s->total_ps += h->end_ps - h->start_ps;
        iv[n_iv++] = (scope_iv){(uint64_t)(s - (jp_scope_stat *)v->data), h->start_ps, h->end_ps};
    }
    int rc = host_wall_times(v, iv, n_iv);
    free(iv);
    return rc;
}

int jp_scopes_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    jp_vec v = {0};
    jp_map idx = {0};
    int rc = device_scopes(m, a, &v, &idx);
    if (rc == JP_OK) rc = host_scopes(m, &v, &idx);
    for (size_t i = 0; rc == JP_OK && i < v.n; i++) {
        jp_scope_stat *s = &JP_VEC_AT(&v, jp_scope_stat, i);
        if (s->kind == JP_SCOPE_DEVICE) s->wall_ps = s->total_ps;
    }
    if (rc == JP_OK) {
        if (v.n > 1) qsort(v.data, v.n, sizeof(jp_scope_stat), cmp_scope);
        a->scopes = jp_analysis_copy(arena, &v, sizeof(jp_scope_stat));
        a->n_scopes = v.n;
        if (!a->scopes) rc = JP_ERR_NOMEM;
    }
    jp_vec_free(&v);
    jp_map_deinit(&idx);
    return rc;
}
