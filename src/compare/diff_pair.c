/* diff_pair.c - pairing the ops and scope rows of two runs: exact names first, then fallback passes
 * by op_name and shape, op_name alone, and scope, each pairing only what the ones before left
 * (renamed fusions, resized layers); an entry left unpaired is added or removed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "compare/diff_int.h"

#define SHAPE_COUNT_TOLERANCE 0.10 /* the scope pass: occurrences per step may differ by this fraction */

typedef int (*group_cmp)(const agg *, const agg *);

/* ---- pairing ------------------------------------------------------------------------------- */

/* Whatever pass paired them, ops of one module and name are reported as a name match. */
static void link(agg *b, agg *n, int match) {
    b->partner = n;
    n->partner = b;
    b->match = n->match = strcmp(b->key, n->key) == 0 && strcmp(b->name, n->name) == 0 ? JP_MATCH_NAME : match;
}

/* Still to pair: neither paired nor in a layer of one run only. */
static int is_free(const agg *a) { return !a->partner && !a->lone; }

/* Pass 3's condition: occurrences per step within 10% of each other. */
static int counts_close(const agg *b, const agg *n) {
    return fabs(b->count - n->count) <= SHAPE_COUNT_TOLERANCE * fmax(b->count, n->count);
}

/* Whether two ops' shapes contradict: FLOPs or bytes per occurrence known on both sides and
 * different. The same op at another size still pairs by op_name, a pass later. */
static int shapes_conflict(const agg *b, const agg *n) {
    double fb = jp_diff_per_occurrence(b->flops, b), fn = jp_diff_per_occurrence(n->flops, n);
    double yb = jp_diff_per_occurrence(b->bytes, b), yn = jp_diff_per_occurrence(n->bytes, n);
    return (fb > 0 && fn > 0 && fb != fn) || (yb > 0 && yn > 0 && yb != yn);
}

/* Whether two ops' metadata op_names contradict: both known and different. XLA numbers fusions
 * per compilation, so after a code change "fusion" may name another computation than before; the
 * op_name (the JAX source path) tells them apart. */
static int op_names_conflict(const agg *b, const agg *n) {
    return b->op_key[0] && n->op_key[0] && strcmp(b->op_key, n->op_key) != 0;
}

/* Ops of the same shape do the same work per occurrence: FLOPs, then bytes (0 unknown). */
static int cmp_shape(const agg *a, const agg *b) {
    int c = jp_diff_cmp_double(jp_diff_per_occurrence(a->flops, a), jp_diff_per_occurrence(b->flops, b));
    return c ? c : jp_diff_cmp_double(jp_diff_per_occurrence(a->bytes, a), jp_diff_per_occurrence(b->bytes, b));
}

/* The passes after exact names, in order; each pairs only what the ones before left. */
typedef enum pass_kind {
    PASS_OP_SHAPE, /* module, category, op_name and shape: an op XLA renamed */
    PASS_OP_NAME,  /* module, category and op_name: renamed and resized */
    PASS_SCOPE,    /* module, category, scope, counts within 10%, shapes agreeing: op_name renamed */
    PASS_COUNT
} pass_kind;

/* A candidate pair inside one group, ranked by (other_name, c1, c2) then position. */
typedef struct cand {
    int other_name; /* 1 when the two names differ: the same name is tried first */
    double c1, c2;  /* closeness, smaller first */
    size_t i, j;    /* positions in the group's base and new lists */
} cand;

static int cmp_cand(const void *x, const void *y) {
    const cand *a = x, *b = y;
    int c = a->other_name - b->other_name;
    if (!c) c = jp_diff_cmp_double(a->c1, b->c1);
    if (!c) c = jp_diff_cmp_double(a->c2, b->c2);
    if (!c) c = (a->i > b->i) - (a->i < b->i);
    return c ? c : (a->j > b->j) - (a->j < b->j);
}

static int cmp_rank(const void *x, const void *y) {
    const agg *a = *(agg *const *)x, *b = *(agg *const *)y;
    int c = jp_diff_cmp_double(a->count, b->count);
    if (!c) c = jp_diff_cmp_double(a->self_ps, b->self_ps);
    return c ? c : strcmp(a->name, b->name);
}

/* Whether pass p may pair the two at all (the scope pass asks more than a shared key). */
static int may_pair(const agg *b, const agg *n, pass_kind p) {
    return p != PASS_SCOPE || (counts_close(b, n) && !shapes_conflict(b, n));
}

static int pass_match(pass_kind p) { return p == PASS_SCOPE ? JP_MATCH_SHAPE : JP_MATCH_OP_NAME; }

/* A group too big for every pair (thousands of same-category ops after a module lost its name):
 * both sides in order of (count, self time), walked together, which pairs like with like. */
static void pair_by_rank(agg **b, size_t nb, agg **n, size_t nn, pass_kind p) {
    qsort(b, nb, sizeof *b, cmp_rank);
    qsort(n, nn, sizeof *n, cmp_rank);
    size_t i = 0, j = 0;
    while (i < nb && j < nn) {
        if (may_pair(b[i], n[j], p)) link(b[i++], n[j++], pass_match(p));
        else if (b[i]->count < n[j]->count) i++;
        else j++;
    }
}

/* Pairs the entries of one group, closest first: the same name, then the op_name passes by
 * occurrences per step then self time, the scope pass by self time then occurrences. Returns
 * JP_ERR_NOMEM or JP_OK. */
static int pair_group(agg **b, size_t nb, agg **n, size_t nn, pass_kind p) {
    if (nb > JP_DIFF_PAIR_LIMIT / nn) {
        pair_by_rank(b, nb, n, nn, p);
        return JP_OK;
    }
    cand *c = malloc(nb * nn * sizeof *c);
    if (!c) return JP_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < nb; i++)
        for (size_t j = 0; j < nn; j++) {
            if (!may_pair(b[i], n[j], p)) continue;
            double dc = fabs(b[i]->count - n[j]->count), ds = fabs(b[i]->self_ps - n[j]->self_ps);
            int other = strcmp(b[i]->name, n[j]->name) != 0;
            c[k++] = p == PASS_SCOPE ? (cand){other, ds, dc, i, j} : (cand){other, dc, ds, i, j};
        }
    qsort(c, k, sizeof *c, cmp_cand);
    for (size_t m = 0; m < k; m++)
        if (!b[c[m].i]->partner && !n[c[m].j]->partner) link(b[c[m].i], n[c[m].j], pass_match(p));
    free(c);
    return JP_OK;
}

static int group_op_name(const agg *a, const agg *b) {
    int c = strcmp(a->key, b->key);
    if (!c) c = strcmp(a->category, b->category);
    return c ? c : strcmp(a->op_key, b->op_key);
}

static int group_op_shape(const agg *a, const agg *b) {
    int c = group_op_name(a, b);
    return c ? c : cmp_shape(a, b);
}

static int group_scope(const agg *a, const agg *b) {
    int c = strcmp(a->key, b->key);
    if (!c) c = strcmp(a->category, b->category);
    return c ? c : strcmp(a->scope_key, b->scope_key);
}

static const group_cmp PASS_GROUPS[PASS_COUNT] = {group_op_shape, group_op_name, group_scope};

/* Leftovers in the order of their pass's groups, then by name. */
static int cmp_by_op_shape(const void *x, const void *y) {
    const agg *a = *(agg *const *)x, *b = *(agg *const *)y;
    int c = group_op_shape(a, b);
    return c ? c : strcmp(a->name, b->name);
}

static int cmp_by_op_name(const void *x, const void *y) {
    const agg *a = *(agg *const *)x, *b = *(agg *const *)y;
    int c = group_op_name(a, b);
    return c ? c : strcmp(a->name, b->name);
}

static int cmp_by_scope(const void *x, const void *y) {
    const agg *a = *(agg *const *)x, *b = *(agg *const *)y;
    int c = group_scope(a, b);
    return c ? c : strcmp(a->name, b->name);
}

static int (*const PASS_ORDERS[PASS_COUNT])(const void *, const void *) = {cmp_by_op_shape, cmp_by_op_name,
                                                                            cmp_by_scope};

/* Entries still free (for the op_name passes only those with an op_name), into out. */
static size_t leftovers(agg *v, size_t n, pass_kind p, agg **out) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (is_free(&v[i]) && (p == PASS_SCOPE || v[i].op_key[0])) out[k++] = &v[i];
    return k;
}

/* One fallback pass: the leftovers of both runs sorted by the pass's key, walked together group by
 * group. Sorting keeps it O(n log n); only ops sharing a key are compared with each other. */
static int pair_pass(jp_arena *ar, agg *b, size_t nb, agg *n, size_t nn, pass_kind p) {
    agg **lb = jp_diff_alloc(ar, nb, sizeof *lb), **ln = jp_diff_alloc(ar, nn, sizeof *ln);
    if (!lb || !ln) return JP_ERR_NOMEM;
    size_t kb = leftovers(b, nb, p, lb), kn = leftovers(n, nn, p, ln);
    if (kb == 0 || kn == 0) return JP_OK;
    group_cmp same = PASS_GROUPS[p];
    qsort(lb, kb, sizeof *lb, PASS_ORDERS[p]);
    qsort(ln, kn, sizeof *ln, PASS_ORDERS[p]);
    size_t i = 0, j = 0;
    while (i < kb && j < kn) {
        int c = same(lb[i], ln[j]);
        if (c) {
            if (c < 0) i++;
            else j++;
            continue;
        }
        size_t i2 = i, j2 = j;
        while (i2 < kb && same(lb[i2], lb[i]) == 0) i2++;
        while (j2 < kn && same(ln[j2], ln[j]) == 0) j2++;
        if (pair_group(lb + i, i2 - i, ln + j, j2 - j, p) != JP_OK) return JP_ERR_NOMEM;
        i = i2;
        j = j2;
    }
    return JP_OK;
}

/* The distinct scope keys of one run's ops, sorted, to ask whether a scope exists there. */
typedef struct scope_set {
    const char **keys;
    size_t n;
} scope_set;

static int cmp_str_ptr(const void *x, const void *y) { return strcmp(*(const char *const *)x, *(const char *const *)y); }

static int scope_set_of(jp_arena *ar, const agg *v, size_t n, scope_set *out) {
    const char **keys = jp_diff_alloc(ar, n, sizeof *keys);
    if (!keys) return JP_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) keys[i] = v[i].scope_key;
    if (n > 1) qsort(keys, n, sizeof *keys, cmp_str_ptr);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || strcmp(keys[k - 1], keys[i]) != 0) keys[k++] = keys[i];
    *out = (scope_set){keys, k};
    return JP_OK;
}

/* An unknown scope ("") counts as present anywhere: nothing says it is new. */
static int has_scope(const scope_set *s, const char *scope) {
    return !scope[0] || bsearch(&scope, s->keys, s->n, sizeof *s->keys, cmp_str_ptr) != NULL;
}

/* How pair_exact decides on two free entries of one key and name. */
typedef enum exact_rule {
    EXACT_ANY,     /* scope rows: the path (renumbered) is the identity */
    EXACT_STRICT,  /* ops, first pass: op_names and shapes agree or are unknown */
    EXACT_RENAMED  /* ops, last pass: the same scope, or a renamed one (the base's scope is gone
                    * from the new run and the new one's absent from the base); an op of a new
                    * scope never pairs with one whose scope is still there */
} exact_rule;

typedef struct exact_ctx {
    exact_rule rule;
    const scope_set *base, *new_run; /* EXACT_RENAMED: the scopes of each run */
} exact_ctx;

static int exact_ok(const agg *b, const agg *n, const exact_ctx *x) {
    if (x->rule == EXACT_ANY) return 1;
    if (x->rule == EXACT_STRICT) return !op_names_conflict(b, n) && !shapes_conflict(b, n);
    return strcmp(b->scope_key, n->scope_key) == 0 ||
           (!has_scope(x->new_run, b->scope_key) && !has_scope(x->base, n->scope_key));
}

/* Pairs free entries with an equal (key, name), or for scope rows (kind, path key), both arrays
 * sorted by cmp, when the rule allows. A base run may hold a lone row under the key a renumbered
 * one took: an entry that is not free only moves its own side on. */
static void pair_exact(agg *b, size_t nb, agg *n, size_t nn, int (*cmp)(const void *, const void *),
                       const exact_ctx *x) {
    size_t i = 0, j = 0;
    while (i < nb && j < nn) {
        int c = cmp(&b[i], &n[j]);
        if (c < 0 || (c == 0 && !is_free(&b[i]))) i++;
        else if (c > 0 || !is_free(&n[j])) j++;
        else {
            if (exact_ok(&b[i], &n[j], x)) link(&b[i], &n[j], JP_MATCH_NAME);
            i++, j++;
        }
    }
}

static int any_free(const agg *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (is_free(&v[i])) return 1;
    return 0;
}

/* The same name with agreeing op_name and shape first, the fallback passes, and the bare name last
 * (see exact_rule). */
int jp_diff_pair_ops(jp_arena *ar, agg *b, size_t nb, agg *n, size_t nn) {
    pair_exact(b, nb, n, nn, jp_diff_same_op, &(exact_ctx){EXACT_STRICT, NULL, NULL});
    for (int p = 0; p < PASS_COUNT; p++)
        if (pair_pass(ar, b, nb, n, nn, (pass_kind)p) != JP_OK) return JP_ERR_NOMEM;
    if (!any_free(b, nb) || !any_free(n, nn)) return JP_OK; /* the scope sets would go unused */
    scope_set sb, sn;
    if (scope_set_of(ar, b, nb, &sb) != JP_OK || scope_set_of(ar, n, nn, &sn) != JP_OK) return JP_ERR_NOMEM;
    pair_exact(b, nb, n, nn, jp_diff_same_op, &(exact_ctx){EXACT_RENAMED, &sb, &sn});
    return JP_OK;
}

void jp_diff_pair_scopes(agg *b, size_t nb, agg *n, size_t nn) {
    pair_exact(b, nb, n, nn, jp_diff_cmp_scope, &(exact_ctx){EXACT_ANY, NULL, NULL});
}
