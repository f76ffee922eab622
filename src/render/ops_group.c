/* ops_group.c - the ops summed by category, module, scope or source line: the grouping the
 * viewer's Ops page shows (?group=), computed here once instead of in its script. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "render/ops_group.h"

enum { BY_CATEGORY, BY_MODULE, BY_SCOPE, BY_SOURCE, BY_COUNT };
static const char *const BY_NAMES[BY_COUNT] = {"category", "module", "scope", "source"};

/* The key of o under grouping `by`, "(none)" when o has none. */
static const char *group_key(const jp_op_stat *o, int by) {
    const char *k = by == BY_CATEGORY ? o->category
                    : by == BY_MODULE ? o->module
                    : by == BY_SCOPE  ? o->scope
                                      : o->source;
    return k && *k ? k : "(none)";
}

/* A fresh group row for o's key: its name and grouping field the key, nothing summed yet. */
static jp_op_stat group_row(const jp_op_stat *o, int by) {
    const char *k = group_key(o, by);
    jp_op_stat g = {.module = "", .name = k, .category = "", .op_name = "", .scope = "", .source = "", .function = "",
                    .device = o->device, .min_ps = o->min_ps, .max_ps = o->max_ps, .bound = JP_BOUND_UNKNOWN,
                    .program_id = -1, .no_rate = 1};
    if (by == BY_CATEGORY) g.category = k;
    else if (by == BY_MODULE) g.module = k;
    else if (by == BY_SCOPE) g.scope = k;
    else g.source = k;
    return g;
}

/* Adds o to its group g. A group's FLOPs and bytes are those of its ops that have rates, over all
 * its time, so its FLOP/s and GB/s are the group's achieved rates: an asynchronous start or done
 * half (no_rate) lists the whole transfer's bytes against a launch or a wait (2 TB in 2 µs: 10^6
 * GB/s), which must not enter a rate. A group of such halves only sums their work and has no rate,
 * like each of them. */
static void group_add(jp_op_stat *g, const jp_op_stat *o) {
    g->count += o->count;
    g->total_ps += o->total_ps;
    g->self_ps += o->self_ps;
    g->min_ps = o->min_ps < g->min_ps ? o->min_ps : g->min_ps;
    g->max_ps = o->max_ps > g->max_ps ? o->max_ps : g->max_ps;
    g->self_sumsq += o->self_sumsq;
    g->n_devices = o->n_devices > g->n_devices ? o->n_devices : g->n_devices;
    if (g->no_rate && !o->no_rate) { /* its first op with rates: the halves' work leaves the sums */
        g->no_rate = 0;
        g->flops = g->bytes = g->hlo_flops = g->xla_flops = g->transcendentals = 0;
    }
    if (!g->no_rate && o->no_rate) return;
    g->flops += o->flops;
    g->bytes += o->bytes;
    g->hlo_flops += o->hlo_flops;
    g->xla_flops += o->xla_flops;
    g->transcendentals += o->transcendentals;
}

typedef struct keyed {
    const char *key; /* the op's group key */
    size_t op;       /* index into jp_analysis.ops */
} keyed;

static int by_key(const void *x, const void *y) {
    const keyed *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    return c ? c : (a->op > b->op) - (a->op < b->op);
}

int jp_ops_group(const jp_analysis *a, const size_t *pick, size_t n, const char *by, jp_op_stat **rows,
                 size_t *n_rows, jp_error *err) {
    int b = 0;
    while (b < BY_COUNT && strcmp(by, BY_NAMES[b]) != 0) b++;
    if (b == BY_COUNT) return jp_error_set(err, JP_ERR_ARG, 0, "group '%s': category, module, scope or source", by);
    keyed *ks = malloc((n ? n : 1) * sizeof *ks);
    *rows = malloc((n ? n : 1) * sizeof **rows);
    if (!ks || !*rows) {
        free(ks);
        free(*rows);
        *rows = NULL;
        return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    }
    for (size_t i = 0; i < n; i++) ks[i] = (keyed){group_key(&a->ops[pick[i]], b), pick[i]};
    qsort(ks, n, sizeof *ks, by_key); /* one run per key: each group is summed in one pass */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const jp_op_stat *o = &a->ops[ks[i].op];
        if (i == 0 || strcmp(ks[i].key, ks[i - 1].key) != 0) (*rows)[k++] = group_row(o, b);
        group_add(&(*rows)[k - 1], o);
    }
    free(ks);
    *n_rows = k;
    return JP_OK;
}
