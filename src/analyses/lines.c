/* lines.c - device time tied back to the user's code: self time by source line, and the flame
 * tree of device time by Python call stack (jp_line_stat, jp_flame_node). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"

enum { TOP_OPS = 5 }; /* ops named per line */

/* ---- the common directory of the user's files ---------------------------------------------- */

/* Shortens *len so that first[0..*len) is a prefix of every user file of the stack. */
static void common_prefix(const jp_source_frame *stack, uint32_t n_stack, const char **first, size_t *len) {
    for (uint32_t k = 0; k < n_stack; k++) {
        const char *f = stack[k].file;
        if (stack[k].library || !*f) continue;
        if (!*first) *first = f, *len = strlen(f);
        size_t j = 0;
        while (j < *len && f[j] == (*first)[j]) j++;
        *len = j;
    }
}

/* The longest directory prefix ("/a/b/") shared by every file of a user frame, so text output
 * can show "model.py:12" instead of a long absolute path. */
static const char *source_prefix(jp_intern *t, const jp_analysis *a) {
    const char *first = NULL;
    size_t len = 0;
    for (size_t i = 0; i < a->n_ops; i++) {
        common_prefix(a->ops[i].stack, a->ops[i].n_stack, &first, &len);
        for (uint32_t k = 0; k < a->ops[i].n_shares; k++)
            common_prefix(a->ops[i].shares[k].stack, a->ops[i].shares[k].n_stack, &first, &len);
    }
    while (len > 0 && first[len - 1] != '/') len--;
    return jp_intern_str(t, first ? first : "", len);
}

static const char *relative(const jp_analysis *a, const char *file) {
    size_t n = strlen(a->source_prefix);
    return strncmp(file, a->source_prefix, n) == 0 ? file + n : file;
}

/* ---- lines ---------------------------------------------------------------------------------- */

static int cmp_line(const void *x, const void *y) {
    const jp_line_stat *a = x, *b = y;
    if (a->self_ps != b->self_ps) return a->self_ps < b->self_ps ? 1 : -1;
    return strcmp(a->source, b->source);
}

/* The first frame of a stack that is the user's (its source line). */
static const jp_source_frame *line_frame(const jp_source_frame *stack, uint32_t n_stack) {
    for (uint32_t k = 0; k < n_stack; k++)
        if (!stack[k].library) return &stack[k];
    return n_stack ? &stack[0] : NULL;
}

/* One line's part of an op: the whole op, or one share of a fusion split over its lines. */
typedef struct op_part {
    const char *source, *function;
    const jp_source_frame *stack;
    uint32_t n_stack;
    int64_t ps;      /* self time */
    double weight;   /* of the op's flops */
    int split;       /* a share of a fusion split by modelled cost: an estimate */
} op_part;

/* Walks the parts of op o, the last share first: *k counts down from n_parts(o). Each share gets
 * its weight's part of the self time, rounded, and the first (largest) share what is left, so the
 * parts sum exactly to the op's self time. */
static uint32_t n_parts(const jp_op_stat *o) { return o->n_shares && o->self_ps > 0 ? o->n_shares : 1; }

static op_part part_of(const jp_op_stat *o, uint32_t k, int64_t *rest) {
    if (!o->n_shares || o->self_ps <= 0) return (op_part){o->source, o->function, o->stack, o->n_stack, o->self_ps, 1, 0};
    const jp_line_share *sh = &o->shares[k];
    int64_t ps = *rest;
    if (k > 0) {
        double want = (double)o->self_ps * sh->weight;
        ps = want <= 0 ? 0 : want >= (double)*rest ? *rest : (int64_t)(want + 0.5);
        *rest -= ps;
    }
    return (op_part){sh->source, sh->function, sh->stack, sh->n_stack, ps, sh->weight, 1};
}

typedef struct op_of_line {
    uint32_t line;   /* index into the line table */
    uint32_t op;     /* index into a->ops */
    int64_t self_ps; /* the op's self time on that line */
} op_of_line;

static int cmp_op_of_line(const void *x, const void *y) {
    const op_of_line *a = x, *b = y;
    if (a->line != b->line) return a->line < b->line ? -1 : 1;
    if (a->self_ps != b->self_ps) return a->self_ps < b->self_ps ? 1 : -1;
    return (a->op > b->op) - (a->op < b->op);
}

/* Names the ops of each line, the largest self time on it first: one sort of (line, op) pairs. */
static int name_ops(jp_arena *arena, const jp_analysis *a, jp_line_stat *lines, op_of_line *v, size_t n) {
    if (n) qsort(v, n, sizeof *v, cmp_op_of_line);
    for (size_t i = 0, j; i < n; i = j) {
        char buf[512];
        jp_text ops = jp_text_make(buf, sizeof buf); /* long op names: cut with "...", never skipped */
        for (j = i; j < n && v[j].line == v[i].line; j++) {
            if (j - i >= TOP_OPS) continue;
            if (j > i) jp_text_puts(&ops, ", ");
            jp_text_puts(&ops, a->ops[v[j].op].name);
        }
        if (!(lines[v[i].line].ops = jp_arena_strndup(arena, ops.buf, ops.len))) return JP_ERR_NOMEM;
    }
    return JP_OK;
}

/* Adds one part of op i to its line (made on first sight) and notes the pair for name_ops. */
static int add_part(jp_vec *v, jp_map *idx, jp_vec *pairs, const jp_op_stat *o, uint32_t i, const op_part *p) {
    uint32_t k = jp_map_get_or_put(idx, jp_ptr_key(p->source), 0, 0, (uint32_t)v->n, NULL);
    jp_line_stat *s = k == UINT32_MAX ? NULL : k == v->n ? jp_vec_push(v, sizeof *s) : &JP_VEC_AT(v, jp_line_stat, k);
    op_of_line *pair = s ? jp_vec_push(pairs, sizeof *pair) : NULL;
    if (!pair) return JP_ERR_NOMEM;
    if (!s->source) {
        const jp_source_frame *f = line_frame(p->stack, p->n_stack);
        *s = (jp_line_stat){p->source, f ? f->file : "", f ? f->line : 0, p->function, 0, 0, 0, 0, 0, NULL};
    }
    *pair = (op_of_line){k, i, p->ps};
    s->count += o->count;
    s->self_ps += p->ps;
    if (p->split) s->split_ps += p->ps;
    s->flops += o->flops * p->weight;
    s->n_ops++;
    return JP_OK;
}

static int line_table(jp_arena *arena, jp_analysis *a) {
    jp_vec v = {0}, pairs = {0};
    jp_map idx = {0};
    int rc = JP_OK;
    for (size_t i = 0; i < a->n_ops && rc == JP_OK; i++) {
        const jp_op_stat *o = &a->ops[i];
        int64_t rest = o->self_ps;
        for (uint32_t k = n_parts(o); k-- > 0 && rc == JP_OK;) {
            op_part p = part_of(o, k, &rest);
            if (!*p.source || (p.split && p.ps == 0)) continue; /* a share too small to round to 1 ps */
            rc = add_part(&v, &idx, &pairs, o, (uint32_t)i, &p);
            a->line_self_ps += p.ps;
        }
    }
    a->lines = rc ? NULL : jp_analysis_copy(arena, &v, sizeof(jp_line_stat));
    a->n_lines = v.n;
    jp_vec_free(&v);
    jp_map_deinit(&idx);
    if (!rc && !a->lines) rc = JP_ERR_NOMEM;
    if (!rc) rc = name_ops(arena, a, a->lines, pairs.data, pairs.n);
    jp_vec_free(&pairs);
    if (rc) return rc;
    qsort(a->lines, a->n_lines, sizeof *a->lines, cmp_line);
    return JP_OK;
}

/* ---- flame tree ----------------------------------------------------------------------------- */

typedef struct flame_build {
    jp_vec nodes;    /* jp_flame_node, in insertion order */
    jp_map children; /* (parent, name, kind) -> node */
    jp_intern *intern;
    const jp_analysis *a;
} flame_build;

static uint32_t child(flame_build *b, uint32_t parent, const char *name, const char *file, uint32_t line, int kind) {
    int found;
    uint32_t k = jp_map_get_or_put(&b->children, parent, jp_ptr_key(name), (uint64_t)kind, (uint32_t)b->nodes.n, &found);
    if (k == UINT32_MAX || found) return k;
    jp_flame_node *n = jp_vec_push(&b->nodes, sizeof *n);
    if (!n) return UINT32_MAX;
    uint32_t depth = parent == UINT32_MAX ? 0 : JP_VEC_AT(&b->nodes, jp_flame_node, parent).depth + 1;
    *n = (jp_flame_node){name, file, line, parent, depth, kind, 0, 0, 0};
    return k;
}

/* "[flax]": the package a library file belongs to (the directory after site-packages), or
 * "[python]" for the standard library. */
static const char *library_label(jp_intern *t, const char *file) {
    static const char *const roots[] = {"/site-packages/", "/dist-packages/"};
    for (size_t i = 0; i < 2; i++) {
        const char *p = strstr(file, roots[i]);
        if (!p) continue;
        p += strlen(roots[i]);
        size_t n = strcspn(p, "/.");
        char buf[96];
        jp_text label = jp_text_make(buf, sizeof buf);
        jp_text_putc(&label, '[');
        jp_text_put_clipped(&label, p, n, 80);
        jp_text_putc(&label, ']');
        return jp_intern_str(t, label.buf, label.len);
    }
    static const char *const known[] = {"jax", "flax", "optax", "orbax", "chex", "haiku", "equinox"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        char dir[32];
        int w = snprintf(dir, sizeof dir, "/%s/", known[i]);
        if (strstr(file, dir)) {
            snprintf(dir, sizeof dir, "[%s]", known[i]);
            return jp_intern_str(t, dir, (size_t)w);
        }
    }
    return jp_intern_str(t, "[python]", 8);
}

static uint32_t frame_node(flame_build *b, uint32_t parent, const jp_source_frame *f) {
    char buf[600]; /* "function (file:line)": each part clipped so that the line always shows */
    jp_text text = jp_text_make(buf, sizeof buf);
    const char *file = relative(b->a, f->file), *function = *f->function ? f->function : "?";
    jp_text_put_clipped(&text, function, strlen(function), 150);
    jp_text_puts(&text, " (");
    jp_text_put_clipped(&text, file, strlen(file), 400);
    jp_text_printf(&text, ":%u)", f->line);
    const char *name = jp_intern_str(b->intern, text.buf, text.len);
    const char *rel = jp_intern_str(b->intern, file, strlen(file));
    return name && rel ? child(b, parent, name, rel, f->line, JP_FLAME_FRAME) : UINT32_MAX;
}

/* The path of one op (or one line's share of a fusion) from the root: its frames outermost first,
 * each run of consecutive library frames folded into one node named after the package of its
 * innermost frame (the library the user's code called, or that called the user's code). */
static uint32_t op_parent(flame_build *b, const op_part *p) {
    uint32_t node = 0;
    const char *empty = jp_intern_str(b->intern, "", 0);
    if (!p->n_stack) {
        const char *label = *p->source ? p->source : jp_intern_str(b->intern, "[no source]", 11);
        return label ? child(b, node, label, empty, 0, *p->source ? JP_FLAME_FRAME : JP_FLAME_NO_SOURCE) : UINT32_MAX;
    }
    for (uint32_t k = p->n_stack; k-- > 0 && node != UINT32_MAX;) {
        const jp_source_frame *f = &p->stack[k];
        if (!f->library) {
            node = frame_node(b, node, f);
            continue;
        }
        while (k > 0 && p->stack[k - 1].library) k--; /* the run's innermost frame names it */
        const char *label = library_label(b->intern, p->stack[k].file);
        node = label ? child(b, node, label, empty, 0, JP_FLAME_LIBRARY) : UINT32_MAX;
    }
    return node;
}

/* Hangs one part of op o under its path, adding its time up to the root. */
static int add_leaf(flame_build *b, const jp_op_stat *o, const op_part *p) {
    const char *empty = jp_intern_str(b->intern, "", 0);
    uint32_t parent = op_parent(b, p), leaf = parent == UINT32_MAX || !empty ? UINT32_MAX
                                              : child(b, parent, o->name, empty, 0, JP_FLAME_OP);
    if (leaf == UINT32_MAX) return JP_ERR_NOMEM;
    JP_VEC_AT(&b->nodes, jp_flame_node, leaf).self_ps += p->ps;
    for (uint32_t k = leaf; k != UINT32_MAX; k = JP_VEC_AT(&b->nodes, jp_flame_node, k).parent) {
        jp_flame_node *n = &JP_VEC_AT(&b->nodes, jp_flame_node, k);
        n->total_ps += p->ps;
        if (p->split) n->split_ps += p->ps;
    }
    return JP_OK;
}

static int cmp_total_desc(const void *x, const void *y) {
    const jp_flame_node *a = *(const jp_flame_node *const *)x, *b = *(const jp_flame_node *const *)y;
    if (a->total_ps != b->total_ps) return a->total_ps < b->total_ps ? 1 : -1;
    return strcmp(a->name, b->name);
}

/* Writes nodes depth first, children by total time, into out (parents renumbered). An explicit
 * stack of (node, new parent index) keeps deep trees off the C stack. */
static int flatten(const flame_build *b, jp_flame_node *out) {
    size_t n = b->nodes.n, *first = calloc(n + 1, sizeof *first), written = 0;
    const jp_flame_node **kids = malloc(n * sizeof *kids), **stack = malloc(n * sizeof *stack);
    uint32_t *new_parent = malloc(n * sizeof *new_parent);
    const jp_flame_node *base = b->nodes.data;
    if (!first || !kids || !stack || !new_parent) {
        free(first), free(kids), free(stack), free(new_parent);
        return JP_ERR_NOMEM;
    }
    for (size_t i = 1; i < n; i++) first[base[i].parent + 1]++;
    for (size_t i = 0; i < n; i++) first[i + 1] += first[i];
    for (size_t i = 1, *fill = first; i < n; i++) kids[fill[base[i].parent]++] = &base[i];
    for (size_t i = n; i-- > 1;) first[i] = first[i - 1]; /* fill moved each start to the next one's */
    first[0] = 0;
    for (size_t i = 0; i < n; i++) qsort(kids + first[i], first[i + 1] - first[i], sizeof *kids, cmp_total_desc);
    size_t top = 0;
    stack[top++] = &base[0];
    new_parent[0] = UINT32_MAX;
    while (top) {
        const jp_flame_node *node = stack[--top];
        size_t idx = (size_t)(node - base), me = written++;
        out[me] = *node;
        out[me].parent = new_parent[idx];
        for (size_t k = first[idx + 1]; k-- > first[idx];) { /* pushed in reverse: popped largest first */
            new_parent[kids[k] - base] = (uint32_t)me;
            stack[top++] = kids[k];
        }
    }
    free(first), free(kids), free(stack), free(new_parent);
    return JP_OK;
}

static int flame_tree(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    flame_build b = {{0}, {0}, (jp_intern *)&m->intern, a};
    int rc = JP_OK;
    const char *empty = jp_intern_str(b.intern, "", 0), *root = jp_intern_str(b.intern, "all", 3);
    if (!empty || !root || child(&b, UINT32_MAX, root, empty, 0, JP_FLAME_ROOT) == UINT32_MAX) rc = JP_ERR_NOMEM;
    for (size_t i = 0; i < a->n_ops && rc == JP_OK; i++) {
        const jp_op_stat *o = &a->ops[i];
        if (o->self_ps <= 0) continue;
        int64_t rest = o->self_ps;
        for (uint32_t k = n_parts(o); k-- > 0 && rc == JP_OK;) {
            op_part p = part_of(o, k, &rest);
            if (p.ps > 0) rc = add_leaf(&b, o, &p);
        }
    }
    if (rc == JP_OK) {
        a->flame = jp_arena_alloc(arena, (b.nodes.n ? b.nodes.n : 1) * sizeof *a->flame);
        rc = a->flame ? flatten(&b, a->flame) : JP_ERR_NOMEM;
        a->n_flame = b.nodes.n;
    }
    jp_vec_free(&b.nodes);
    jp_map_deinit(&b.children);
    return rc;
}

int jp_lines_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    a->source_prefix = source_prefix((jp_intern *)&m->intern, a);
    if (!a->source_prefix) return JP_ERR_NOMEM;
    int rc = line_table(arena, a);
    return rc ? rc : flame_tree(m, arena, a);
}
