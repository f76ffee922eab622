/* diff.c - comparing two analyses (jp_diff_new): step time with a noise estimate, the breakdown,
 * ops paired across XLA and Flax renumbering, scopes and findings; and the regression gate
 * (jp_diff_check). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/result_names.h"
#include "base/error.h"
#include "base/intern.h"
#include "base/text.h"
#include "base/vec.h"

enum {
    PAIR_LIMIT = 1 << 16, /* candidate pairs per group tried exhaustively; bigger groups pair by rank,
                           * and layer groups with more instance pairs are not aligned */
    WHY_OPS = 5,          /* ops named in jp_diff_check's paragraph */
    LAYER_DEPTH_MAX = 64, /* scope components searched for numbered layers ("MLP/Dense_2") */
    INDEX_DIGITS_MAX = 9  /* a longer number after "_" is part of a name, not a layer index */
};

#define DEFAULT_MIN_CHANGE_PCT 5.0
#define DEFAULT_MIN_SHARE_PCT 0.5
#define SHAPE_COUNT_TOLERANCE 0.10 /* the scope pass: occurrences per step may differ by this fraction */
#define PS_PER_MS 1e9
#define NOISE_SE 2.0 /* an op's noise: this many standard errors of its change (as the step time's) */

/* The diff and the arena that holds every array it points to; jp_diff_free recovers the box. */
typedef struct diff_box {
    jp_diff pub;    /* handed out; the first member, so a jp_diff * is a diff_box * */
    jp_arena arena; /* rows, findings and the working arrays of jp_diff_new */
} diff_box;

/* One op (summed over devices) or one scope of one run, per step, while pairing. */
/* A key rewritten for pairing: a buffer of its own in the diff's arena, grown when needed. */
typedef struct keybuf {
    char *s;    /* NULL until the key is first rewritten */
    size_t cap; /* bytes at s */
} keybuf;

typedef struct agg {
    const char *key;       /* module used for pairing: a renumbered base module takes the new name */
    const char *module;    /* ops: HLO module as the run names it; scopes: "" */
    const char *name;      /* ops: HLO instruction; scopes: path */
    const char *category;  /* ops: category; scopes: "device" or "host" */
    const char *op_name;   /* ops: metadata op_name ("" unknown); scopes: "" */
    const char *scope;     /* ops: user scope path; scopes: path */
    const char *op_key;    /* op_name used for pairing: a renumbered base layer takes its new index */
    const char *scope_key; /* scope (scopes: path) used for pairing, renumbered likewise */
    int kind;              /* scopes: jp_scope_kind; ops: 0 */
    uint32_t device;       /* ops: device of the entry, so merging keeps the first device's strings */
    double count;          /* occurrences, summed then per step */
    double self_ps;        /* self time, summed then per step */
    double total_ps;       /* total time, summed then per step */
    double occurrences;    /* ops: occurrences as recorded, over which flops and bytes are summed */
    double flops, bytes;   /* ops: summed over occurrences and devices; 0 unknown */
    double var;            /* ops: variance of self_ps from the run's own spread (summed, then per
                            * step: divided by the steps squared); 0 unknown */
    int basis;             /* ops: jp_noise_basis of var */
    uint32_t lone;         /* 1 + depth of the scope component naming a layer found in one run only
                            * (its ops are added or removed, never paired); 0 otherwise */
    size_t scan;           /* layer alignment: offset in scope_key of the next component, or SIZE_MAX */
    size_t op_scan;        /* layer alignment: offset in op_key after the last layer found in it */
    keybuf op_buf, scope_buf; /* where op_key and scope_key live once rewritten */
    struct agg *partner;   /* the other run's entry it is paired with, or NULL */
    int match;             /* jp_match of that pairing */
} agg;

typedef int (*group_cmp)(const agg *, const agg *);

const char *jp_change_name(int change) {
    static const char *const names[JP_CHANGE_COUNT] = {"unchanged", "slower", "faster", "added", "removed"};
    return change >= 0 && change < JP_CHANGE_COUNT ? names[change] : "unknown";
}

const char *jp_noise_basis_name(int basis) {
    static const char *const names[JP_NOISE_BASIS_COUNT] = {"none", "executions", "steps"};
    return basis >= 0 && basis < JP_NOISE_BASIS_COUNT ? names[basis] : "unknown";
}

const char *jp_match_name(int match) {
    static const char *const names[JP_MATCH_COUNT] = {"none", "name", "op_name", "shape"};
    return match >= 0 && match < JP_MATCH_COUNT ? names[match] : "unknown";
}

/* ---- small helpers ------------------------------------------------------------------------- */

static const char *nz(const char *s) { return s ? s : ""; }

/* n elements of size bytes from the arena (one element when n is 0), NULL on overflow. */
static void *alloc_array(jp_arena *ar, size_t n, size_t size) {
    if (n == 0) n = 1;
    if (n > SIZE_MAX / size) return NULL;
    void *p = jp_arena_alloc(ar, n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

static int cmp_double(double x, double y) { return x < y ? -1 : x > y; }

/* ---- steps --------------------------------------------------------------------------------- */

/* One run's step statistics as the diff needs them. */
typedef struct step_side {
    size_t n;                   /* steps, or 1 when the run has none (its whole span) */
    size_t real_n;              /* steps found */
    double mean, median, p90;   /* per step */
    double sample_sd;           /* sample standard deviation of step durations (0 under 2 steps) */
    double part[JP_PART_COUNT]; /* breakdown per step */
} step_side;

static step_side step_side_of(const jp_analysis *a) {
    step_side s = {0};
    s.real_n = a->steps ? a->n_steps : 0;
    if (s.real_n == 0) {
        s.n = 1;
        s.mean = s.median = s.p90 = (double)a->span_ps;
        return s;
    }
    const jp_step_summary *sum = &a->step_summary;
    s.n = s.real_n;
    s.mean = sum->mean_ps;
    s.median = sum->median_ps;
    s.p90 = sum->p90_ps;
    for (int p = 0; p < JP_PART_COUNT; p++) s.part[p] = (double)sum->part_ps[p] / (double)s.n;
    if (s.n < 2) return s;
    /* The summary's std is the population one; the standard error of a mean wants the sample one. */
    double mean = 0, var = 0;
    for (size_t i = 0; i < s.n; i++) mean += (double)a->steps[i].dur_ps / (double)s.n;
    for (size_t i = 0; i < s.n; i++) var += pow((double)a->steps[i].dur_ps - mean, 2);
    s.sample_sd = sqrt(var / (double)(s.n - 1));
    return s;
}

/* Change of the mean step and its noise: two standard errors of the difference of the two means
 * (Welch), as a percentage of the base mean. With fewer than 2 steps on a side the spread is
 * unknown and the noise is reported as 0. */
static void diff_steps(jp_diff_steps *out, const step_side *b, const step_side *n) {
    out->base_n = b->n;
    out->new_n = n->n;
    out->base_mean_ps = b->mean;
    out->new_mean_ps = n->mean;
    out->base_median_ps = b->median;
    out->new_median_ps = n->median;
    out->base_p90_ps = b->p90;
    out->new_p90_ps = n->p90;
    out->change_pct = b->mean > 0 ? 100.0 * (n->mean - b->mean) / b->mean : 0;
    out->noise_pct = 0;
    if (b->real_n >= 2 && n->real_n >= 2 && b->mean > 0) {
        double se = sqrt(b->sample_sd * b->sample_sd / (double)b->real_n +
                         n->sample_sd * n->sample_sd / (double)n->real_n);
        out->noise_pct = 2.0 * se / b->mean * 100.0;
    }
    out->significant = fabs(out->change_pct) > out->noise_pct;
    for (int p = 0; p < JP_PART_COUNT; p++) {
        out->base_part_ps[p] = b->part[p];
        out->new_part_ps[p] = n->part[p];
    }
}

/* ---- aggregation --------------------------------------------------------------------------- */

static int cmp_agg_op(const void *x, const void *y) {
    const agg *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    if (!c) c = strcmp(a->name, b->name);
    return c ? c : (a->device > b->device) - (a->device < b->device);
}

/* Scopes by kind and the path used for pairing (a renumbered layer's base path takes the new one). */
static int cmp_agg_scope(const void *x, const void *y) {
    const agg *a = x, *b = y;
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
    return strcmp(a->scope_key, b->scope_key);
}

/* Merges neighbours with the same key (the array is sorted), summing counts and times; the first
 * of them keeps its strings. Then divides by the run's steps. Returns the new length. */
static size_t merge_and_scale(agg *v, size_t n, int (*cmp)(const void *, const void *), double per_step) {
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (w > 0 && cmp(&v[w - 1], &v[i]) == 0) {
            v[w - 1].count += v[i].count;
            v[w - 1].self_ps += v[i].self_ps;
            v[w - 1].total_ps += v[i].total_ps;
            v[w - 1].occurrences += v[i].occurrences;
            v[w - 1].flops += v[i].flops;
            v[w - 1].bytes += v[i].bytes;
            v[w - 1].var += v[i].var; /* independent parts: variances add */
            if (v[i].basis < v[w - 1].basis) v[w - 1].basis = v[i].basis;
        } else {
            v[w++] = v[i];
        }
    }
    for (size_t i = 0; i < w; i++) {
        v[i].count /= per_step;
        v[i].self_ps /= per_step;
        v[i].total_ps /= per_step;
        v[i].var /= per_step * per_step;
    }
    return w;
}

static int same_op_key(const void *x, const void *y) {
    const agg *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    return c ? c : strcmp(a->name, b->name);
}

/* The variance of an op's summed self time from the run's own spread, and where it comes from:
 * with JP_NOISE_MIN_STEPS steps or more, its time per step across them (n_steps x sd^2; when the
 * analysis measured it: step_sd_ps > 0); else its executions taken as independent (count x their
 * sample variance); else unknown. */
static double op_variance(const jp_op_stat *op, size_t n_steps, int *basis) {
    *basis = JP_NOISE_NONE;
    if (n_steps >= JP_NOISE_MIN_STEPS && op->step_sd_ps > 0) {
        *basis = JP_NOISE_STEPS;
        return (double)n_steps * op->step_sd_ps * op->step_sd_ps;
    }
    if (op->count < 2) return 0;
    double n = (double)op->count, mean = (double)op->self_ps / n;
    double var = (op->self_sumsq - n * mean * mean) / (n - 1);
    *basis = JP_NOISE_EXECUTIONS;
    return var > 0 ? n * var : 0; /* rounding can leave a tiny negative */
}

/* A multi-device profile lists the same op once per device: one entry per (module, name), sorted. */
static agg *aggregate_ops(jp_arena *ar, const jp_analysis *a, double per_step, size_t *n_out) {
    size_t n = a->ops ? a->n_ops : 0;
    agg *v = alloc_array(ar, n, sizeof *v);
    if (!v) return NULL;
    for (size_t i = 0; i < n; i++) {
        const jp_op_stat *op = &a->ops[i];
        v[i] = (agg){.key = nz(op->module), .module = nz(op->module), .name = nz(op->name),
                     .category = nz(op->category), .op_name = nz(op->op_name), .scope = nz(op->scope),
                     .op_key = nz(op->op_name), .scope_key = nz(op->scope), .device = op->device,
                     .count = (double)op->count, .self_ps = (double)op->self_ps, .total_ps = (double)op->total_ps,
                     .occurrences = (double)op->count, .flops = op->flops > 0 ? op->flops : 0,
                     .bytes = op->bytes > 0 ? op->bytes : 0};
        v[i].var = op_variance(op, a->steps ? a->n_steps : 0, &v[i].basis);
    }
    if (n > 1) qsort(v, n, sizeof *v, cmp_agg_op);
    *n_out = merge_and_scale(v, n, same_op_key, per_step);
    return v;
}

static agg *aggregate_scopes(jp_arena *ar, const jp_analysis *a, double per_step, size_t *n_out) {
    size_t n = a->scopes ? a->n_scopes : 0;
    agg *v = alloc_array(ar, n, sizeof *v);
    if (!v) return NULL;
    for (size_t i = 0; i < n; i++) {
        const jp_scope_stat *s = &a->scopes[i];
        int kind = s->kind == JP_SCOPE_DEVICE ? JP_SCOPE_DEVICE : JP_SCOPE_HOST;
        v[i] = (agg){.key = "", .module = "", .name = nz(s->path), .category = kind ? "host" : "device",
                     .op_name = "", .scope = nz(s->path), .op_key = "", .scope_key = nz(s->path), .kind = kind,
                     .count = (double)s->count,
                     .self_ps = (double)s->self_ps, .total_ps = (double)s->total_ps};
    }
    if (n > 1) qsort(v, n, sizeof *v, cmp_agg_scope);
    *n_out = merge_and_scale(v, n, cmp_agg_scope, per_step);
    return v;
}

/* ---- modules renumbered with a ".N" suffix ------------------------------------------------- */

/* Length of s without a trailing ".<digits>". */
static size_t stem_len(const char *s) {
    size_t n = strlen(s), i = n;
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') i--;
    return i < n && i > 1 && s[i - 1] == '.' ? i - 1 : n;
}

static int cmp_stem(const void *x, const void *y) {
    const char *a = *(const char *const *)x, *b = *(const char *const *)y;
    size_t la = stem_len(a), lb = stem_len(b);
    int c = strncmp(a, b, la < lb ? la : lb);
    if (!c && la != lb) c = la < lb ? -1 : 1;
    return c ? c : strcmp(a, b);
}

static int same_stem(const char *a, const char *b) {
    size_t la = stem_len(a);
    return la == stem_len(b) && strncmp(a, b, la) == 0;
}

/* Distinct modules of sorted entries. */
static const char **distinct_modules(jp_arena *ar, const agg *v, size_t n, size_t *n_out) {
    const char **m = alloc_array(ar, n, sizeof *m);
    size_t k = 0;
    for (size_t i = 0; m && i < n; i++)
        if (k == 0 || strcmp(m[k - 1], v[i].key) != 0) m[k++] = v[i].key;
    *n_out = k;
    return m;
}

/* Writes to out the modules of a (sorted, distinct) missing from b (sorted, distinct). */
static size_t only_in(const char *const *a, size_t na, const char *const *b, size_t nb, const char **out) {
    size_t w = 0, j = 0;
    for (size_t i = 0; i < na; i++) {
        while (j < nb && strcmp(b[j], a[i]) < 0) j++;
        if (j == nb || strcmp(b[j], a[i]) != 0) out[w++] = a[i];
    }
    return w;
}

typedef struct module_map {
    const char *from; /* base module */
    const char *to;   /* new module it was renumbered to */
} module_map;

static int cmp_map_from(const void *x, const void *y) {
    return strcmp(((const module_map *)x)->from, ((const module_map *)y)->from);
}

/* Pairs modules that differ only in a trailing ".N": a stem held by exactly one module on each
 * side. Both lists are sorted by stem. Returns the number of pairs written to map. */
static size_t pair_stems(const char *const *bm, size_t ub, const char *const *nm, size_t un, module_map *map) {
    size_t n_map = 0, i = 0, j = 0;
    while (i < ub && j < un) {
        if (!same_stem(bm[i], nm[j])) {
            if (cmp_stem(&bm[i], &nm[j]) < 0) i++;
            else j++;
            continue;
        }
        size_t i2 = i, j2 = j;
        while (i2 < ub && same_stem(bm[i2], bm[i])) i2++;
        while (j2 < un && same_stem(nm[j2], nm[j])) j2++;
        if (i2 - i == 1 && j2 - j == 1) map[n_map++] = (module_map){bm[i], nm[j]};
        i = i2;
        j = j2;
    }
    return n_map;
}

/* A recompiled function can come back as "jit_f.2" where the base had "jit_f.1" (or "jit_f"). A
 * base module missing from the new run whose stem (name without ".N") is shared by exactly one new
 * module missing from the base gets its ops keyed under the new name, so the three passes pair
 * them. Sorting keeps this O(m log m) in modules plus O(n log m) in ops. Returns 1 when a module
 * was mapped (the base entries then need re-sorting), 0 when none, -1 out of memory. */
static int map_renumbered_modules(jp_arena *ar, agg *b, size_t nb, const agg *n, size_t nn) {
    size_t mb, mn;
    const char **bm = distinct_modules(ar, b, nb, &mb), **nm = distinct_modules(ar, n, nn, &mn);
    const char **ob = alloc_array(ar, mb, sizeof *ob), **on = alloc_array(ar, mn, sizeof *on);
    module_map *map = alloc_array(ar, mb, sizeof *map);
    if (!bm || !nm || !ob || !on || !map) return -1;
    size_t ub = only_in(bm, mb, nm, mn, ob), un = only_in(nm, mn, bm, mb, on);
    if (ub == 0 || un == 0) return 0;
    qsort(ob, ub, sizeof *ob, cmp_stem);
    qsort(on, un, sizeof *on, cmp_stem);
    size_t n_map = pair_stems(ob, ub, on, un, map);
    if (n_map == 0) return 0;
    qsort(map, n_map, sizeof *map, cmp_map_from);
    for (size_t k = 0; k < nb; k++) {
        module_map probe = {b[k].key, NULL};
        const module_map *hit = bsearch(&probe, map, n_map, sizeof *map, cmp_map_from);
        if (hit) b[k].key = hit->to;
    }
    return 1;
}

/* ---- layers renumbered by an insertion ----------------------------------------------------- */

/* Flax names a submodule by its class and the order it was made in (Dense_0, Dense_1, ...), so a
 * layer inserted before others renumbers them: what was MLP/Dense_2 is MLP/Dense_3, and MLP/Dense_2
 * is now the inserted layer. Pairing by name or op_name would compare the old output layer with
 * the new hidden one. So, before any pairing, the numbered instances of each parent path and class
 * ("MLP/" + "Dense") are aligned across the runs by what their ops compute (align_instances), and
 * the base run's op_name and scope keys take the new numbers. Depth by depth, outermost first, so
 * a renumbered Block_1 -> Block_2 is mapped before the Dense_N inside it are grouped. */

/* One op under a numbered scope component ("Dense_2") at the depth being aligned. */
typedef struct member {
    agg *op;           /* the op, whose keys a renumbering rewrites */
    const char *group; /* parent path and class, "MLP/Dense", interned: one pointer per group */
    size_t at;         /* offset of the component in op->scope_key; its parent path is before it */
    size_t stem_len;   /* "Dense" */
    size_t comp_len;   /* "Dense_2" */
    size_t tok;        /* offset of the same name in op->op_key */
    uint64_t entry;    /* hash of what the op computes, the layer's number left out (entry_hash) */
    uint32_t index;    /* 2 */
    uint32_t to;       /* base: the number its layer has in the new run */
    int side;          /* 0 base, 1 new */
} member;

/* The members of one layer instance ("MLP/Dense_2" of one run) inside a group. */
typedef struct instance {
    size_t lo, hi;   /* its members: group[lo, hi), ordered by entry */
    uint64_t digest; /* sum of its entries: equal sums of equally many entries are the same ops */
    uint32_t index;  /* its number */
    size_t partner;  /* the other run's instance it is aligned with, or SIZE_MAX */
} instance;

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Whether s[at, end) reads "<stem>_<number>" (a canonical number of at most INDEX_DIGITS_MAX
 * digits, so "Dense_01" is a name); fills stem_len and index. */
static int numbered(const char *s, size_t at, size_t end, size_t *stem_len, uint32_t *index) {
    size_t d = end;
    while (d > at && is_digit(s[d - 1])) d--;
    size_t digits = end - d;
    if (digits == 0 || digits > INDEX_DIGITS_MAX || d < at + 2 || s[d - 1] != '_') return 0;
    if (digits > 1 && s[d] == '0') return 0;
    uint32_t v = 0;
    for (size_t i = d; i < end; i++) v = v * 10 + (uint32_t)(s[i] - '0');
    *stem_len = d - 1 - at;
    *index = v;
    return 1;
}

/* Offset of the first whole occurrence of name (len bytes) in s at or after from: preceded by the
 * start, '/' or '(' and followed by the end, '/' or ')', as a scope's name sits in an op_name
 * ("jit(f)/transpose(jvp(MLP))/Dense_2/dot_general"). SIZE_MAX when there is none. */
static size_t find_name(const char *s, size_t from, const char *name, size_t len) {
    size_t n = strlen(s);
    for (size_t i = from; len > 0 && i + len <= n; i++) {
        const char *p = memchr(s + i, name[0], n - len + 1 - i);
        if (!p) break;
        i = (size_t)(p - s);
        int starts = i == 0 || s[i - 1] == '/' || s[i - 1] == '(';
        int ends = s[i + len] == '\0' || s[i + len] == '/' || s[i + len] == ')';
        if (starts && ends && memcmp(p, name, len) == 0) return i;
    }
    return SIZE_MAX;
}

static double per_occurrence(double v, const agg *a) { return a->occurrences > 0 ? v / a->occurrences : 0; }

/* Ops of the same shape do the same work per occurrence: FLOPs, then bytes (0 unknown). */
static int cmp_shape(const agg *a, const agg *b) {
    int c = cmp_double(per_occurrence(a->flops, a), per_occurrence(b->flops, b));
    return c ? c : cmp_double(per_occurrence(a->bytes, a), per_occurrence(b->bytes, b));
}

/* One alignment group: the same parent path and class (interned, so the same pointer). The order
 * of groups does not matter, only that each is contiguous. */
static int cmp_group(const member *x, const member *y) {
    uintptr_t a = (uintptr_t)x->group, b = (uintptr_t)y->group;
    return (a > b) - (a < b);
}

/* Mixes n bytes into h, eight at a time (a multiply-xorshift hash: fast, not cryptographic). */
static uint64_t mix(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (; n >= 8; c += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, c, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 32;
    }
    uint64_t w = n; /* the tail, with its length so "a" and "a\0" differ */
    for (size_t i = 0; i < n; i++) w = w << 8 | c[i];
    h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
    return h ^ h >> 31;
}

/* What an op of a layer computes, the layer's own number left out: module, category, the op_name
 * around the layer's name (the primitive, forward or gradient), FLOPs and bytes per occurrence.
 * Instances are compared many times over, so each op's entry is hashed once (two entries are
 * taken as equal when their 64-bit hashes are). */
static uint64_t entry_hash(const member *x) {
    const agg *a = x->op;
    double shape[2] = {per_occurrence(a->flops, a), per_occurrence(a->bytes, a)};
    const char *tail = a->op_key + x->tok + x->comp_len;
    uint64_t h = mix(0x243F6A8885A308D3ULL, a->key, strlen(a->key));
    h = mix(h, a->category, strlen(a->category));
    h = mix(h, a->op_key, x->tok);
    h = mix(h, tail, strlen(tail));
    return mix(h, shape, sizeof shape);
}

static int cmp_member(const void *p, const void *q) {
    const member *x = p, *y = q;
    int c = cmp_group(x, y);
    if (!c) c = x->side - y->side;
    if (!c) c = (x->index > y->index) - (x->index < y->index);
    return c ? c : (x->entry > y->entry) - (x->entry < y->entry); /* equal entries are interchangeable */
}

/* Ops two instances have in common, as multisets of entries (both ordered by entry), or any
 * number up to `need` when they cannot reach it. */
static size_t common_ops(const member *g, const instance *p, const instance *q, size_t need) {
    size_t i = p->lo, j = q->lo, k = 0;
    if (p->hi - p->lo == q->hi - q->lo && p->digest == q->digest) return p->hi - p->lo;
    while (i < p->hi && j < q->hi) {
        size_t rest = p->hi - i < q->hi - j ? p->hi - i : q->hi - j;
        if (k + rest < need) return k;
        int c = (g[i].entry > g[j].entry) - (g[i].entry < g[j].entry);
        if (c < 0) i++;
        else if (c > 0) j++;
        else k++, i++, j++;
    }
    return k;
}

/* The worth of aligning two instances: 0 unless they share most of the larger one's ops (else
 * they are different layers), then the ops shared, scaled so that one op outweighs keeping every
 * number, plus 1 when the number is kept. */
static uint64_t align_weight(const member *g, const instance *p, const instance *q, uint64_t scale) {
    size_t np = p->hi - p->lo, nq = q->hi - q->lo, most = np > nq ? np : nq;
    if (2 * (np < nq ? np : nq) <= most) return 0; /* too different in size to share most ops */
    size_t k = common_ops(g, p, q, most / 2 + 1);
    if (2 * k <= most) return 0;
    return (uint64_t)k * scale + (p->index == q->index);
}

/* Aligns the m base instances with the n new ones in order (an insertion or a removal keeps the
 * order of the others), most ops shared first, then most numbers kept: an edit-distance table of
 * (m+1)(n+1) cells (m n <= PAIR_LIMIT, the caller sees to it). */
static int align_instances(const member *g, instance *bi, size_t m, instance *ni, size_t n) {
    size_t w = n + 1;
    uint64_t *t = calloc((m + 1) * w, sizeof *t), scale = (m < n ? m : n) + 1;
    if (!t) return JP_ERR_NOMEM;
    for (size_t i = 1; i <= m; i++)
        for (size_t j = 1; j <= n; j++) {
            uint64_t best = t[(i - 1) * w + j] > t[i * w + j - 1] ? t[(i - 1) * w + j] : t[i * w + j - 1];
            uint64_t a = align_weight(g, &bi[i - 1], &ni[j - 1], scale);
            if (a && t[(i - 1) * w + j - 1] + a > best) best = t[(i - 1) * w + j - 1] + a;
            t[i * w + j] = best;
        }
    for (size_t i = m, j = n; i > 0 && j > 0;) {
        uint64_t a = align_weight(g, &bi[i - 1], &ni[j - 1], scale);
        if (a && t[i * w + j] == t[(i - 1) * w + j - 1] + a) {
            bi[i - 1].partner = j - 1;
            ni[j - 1].partner = i - 1;
            i--, j--;
        } else if (t[i * w + j] == t[(i - 1) * w + j]) {
            i--;
        } else {
            j--;
        }
    }
    free(t);
    return JP_OK;
}

/* Instances left unaligned: one whose number the other run also left unaligned is the same layer
 * changed in place (a width edited) and keeps its number. Both lists are ordered by number. */
static void keep_numbers(instance *bi, size_t m, instance *ni, size_t n) {
    for (size_t i = 0, j = 0; i < m; i++) {
        if (bi[i].partner != SIZE_MAX) continue;
        while (j < n && ni[j].index < bi[i].index) j++;
        if (j < n && ni[j].index == bi[i].index && ni[j].partner == SIZE_MAX) {
            bi[i].partner = j;
            ni[j].partner = i;
        }
    }
}

/* Splits one side of a group (members ordered by number) into instances; returns how many. */
static size_t split_instances(const member *g, size_t lo, size_t hi, instance *out) {
    size_t k = 0;
    for (size_t i = lo; i < hi; i++) {
        if (k > 0 && out[k - 1].index == g[i].index) {
            out[k - 1].hi = i + 1;
            continue;
        }
        out[k++] = (instance){i, i + 1, 0, g[i].index, SIZE_MAX};
    }
    for (size_t j = 0; j < k; j++)
        for (size_t x = out[j].lo; x < out[j].hi; x++) out[j].digest += g[x].entry;
    return k;
}

/* Whether both runs hold the same instances with the same ops: nothing to align (most groups). */
static int same_instances(const instance *bi, size_t m, const instance *ni, size_t n) {
    if (m != n) return 0;
    for (size_t i = 0; i < m; i++)
        if (bi[i].index != ni[i].index || bi[i].hi - bi[i].lo != ni[i].hi - ni[i].lo || bi[i].digest != ni[i].digest)
            return 0;
    return 1;
}

/* Records the outcome on the members: a base instance's new number, or the ops of an instance
 * found in one run only marked lone (added or removed: never paired). */
static void settle(member *g, const instance *inst, size_t k, const instance *other, uint32_t depth) {
    for (size_t i = 0; i < k; i++)
        for (size_t x = inst[i].lo; x < inst[i].hi; x++) {
            if (inst[i].partner == SIZE_MAX) g[x].op->lone = depth + 1;
            else g[x].to = other[inst[i].partner].index;
        }
}

/* Aligns one group (base members first, then new ones, each ordered by number). A class found in
 * one run only is left alone: nothing to align it with. */
static int align_group(member *g, size_t len, uint32_t depth) {
    size_t s = 0;
    while (s < len && g[s].side == 0) s++;
    if (s == 0 || s == len) return JP_OK;
    instance *bi = malloc(len * sizeof *bi);
    if (!bi) return JP_ERR_NOMEM;
    size_t m = split_instances(g, 0, s, bi);
    instance *ni = bi + m;
    size_t n = split_instances(g, s, len, ni);
    int rc = JP_OK;
    if (m <= PAIR_LIMIT / n && !same_instances(bi, m, ni, n)) { /* too many instances: left as numbered */
        rc = align_instances(g, bi, m, ni, n);
        if (rc == JP_OK) {
            keep_numbers(bi, m, ni, n);
            settle(g, bi, m, ni, depth);
            settle(g, ni, n, bi, depth);
        }
    }
    free(bi);
    return rc;
}

/* Replaces (*key)[from, to) by text (len bytes) in kb's buffer, which *key then points to. */
static int splice(jp_arena *ar, keybuf *kb, const char **key, size_t from, size_t to, const char *text, size_t len) {
    size_t n = strlen(*key), need = n - (to - from) + len + 1;
    if (*key != kb->s || need > kb->cap) {
        size_t cap = need + need / 2 + 16;
        char *buf = jp_arena_alloc(ar, cap);
        if (!buf) return JP_ERR_NOMEM;
        memcpy(buf, *key, n + 1);
        *kb = (keybuf){buf, cap};
    }
    memmove(kb->s + from + len, kb->s + to, n - to + 1);
    memcpy(kb->s + from, text, len);
    *key = kb->s;
    return JP_OK;
}

/* Gives a base op of a renumbered layer its new number in both keys; its scans move with the text. */
static int renumber(jp_arena *ar, const member *x) {
    char digits[16];
    int len = snprintf(digits, sizeof digits, "%u", (unsigned)x->to);
    if (len <= 0 || (size_t)len >= sizeof digits) return JP_ERR_LIMIT;
    agg *op = x->op;
    size_t old = x->comp_len - x->stem_len - 1, from = x->at + x->stem_len + 1, tfrom = x->tok + x->stem_len + 1;
    if (splice(ar, &op->scope_buf, &op->scope_key, from, from + old, digits, (size_t)len) ||
        splice(ar, &op->op_buf, &op->op_key, tfrom, tfrom + old, digits, (size_t)len))
        return JP_ERR_NOMEM;
    if (op->scan != SIZE_MAX) op->scan = op->scan - old + (size_t)len;
    op->op_scan = op->op_scan - old + (size_t)len;
    return JP_OK;
}

/* Where collect_members appends. */
typedef struct members {
    member *m;        /* room for every op of both runs */
    size_t n;         /* members so far */
    size_t left;      /* ops with scope components still to come */
    jp_intern groups; /* parent path + class of every group */
} members;

/* Appends the ops of one run whose next scope component names a layer, and moves every op's scan
 * past that component. An op whose op_name lacks the name (never seen: scopes are made from
 * op_names) is not aligned. Returns JP_ERR_NOMEM or JP_OK. */
static int collect_members(agg *v, size_t nv, int side, members *out) {
    for (size_t i = 0; i < nv; i++) {
        agg *op = &v[i];
        if (op->lone || op->scan == SIZE_MAX) continue;
        const char *s = op->scope_key, *slash = strchr(s + op->scan, '/');
        size_t at = op->scan, end = slash ? (size_t)(slash - s) : at + strlen(s + at);
        op->scan = slash ? end + 1 : SIZE_MAX;
        out->left += slash != NULL;
        member x = {.op = op, .at = at, .comp_len = end - at, .side = side};
        if (!numbered(s, at, end, &x.stem_len, &x.index)) continue;
        x.tok = find_name(op->op_key, op->op_scan, s + at, end - at);
        if (x.tok == SIZE_MAX) continue;
        op->op_scan = x.tok + x.comp_len;
        x.to = x.index;
        x.entry = entry_hash(&x);
        x.group = jp_intern_str(&out->groups, s, at + x.stem_len);
        if (!x.group) return JP_ERR_NOMEM;
        out->m[out->n++] = x;
    }
    return JP_OK;
}

/* Aligns one depth: groups the members, aligns each group, renumbers the base's moved layers. */
static int align_depth(jp_arena *ar, member *m, size_t k, uint32_t depth) {
    if (k > 1) qsort(m, k, sizeof *m, cmp_member);
    for (size_t i = 0; i < k;) {
        size_t j = i + 1;
        while (j < k && cmp_group(&m[i], &m[j]) == 0) j++;
        if (align_group(m + i, j - i, depth) != JP_OK) return JP_ERR_NOMEM;
        i = j;
    }
    for (size_t i = 0; i < k; i++)
        if (m[i].side == 0 && !m[i].op->lone && m[i].to != m[i].index && renumber(ar, &m[i]) != JP_OK)
            return JP_ERR_NOMEM;
    return JP_OK;
}

/* Maps renumbered layers in the base run's keys and marks layers found in one run only, depth by
 * depth (at most LAYER_DEPTH_MAX). O(n log n) per depth with numbered components; the alignment
 * of a group is O(m n) instance comparisons, m and n its instances on each side. */
static int map_renumbered_layers(jp_arena *ar, agg *b, size_t nb, agg *n, size_t nn) {
    if (nb > SIZE_MAX - nn) return JP_ERR_NOMEM;
    members ms = {.m = alloc_array(ar, nb + nn, sizeof *ms.m)};
    if (!ms.m) return JP_ERR_NOMEM;
    jp_intern_init(&ms.groups, ar);
    int rc = JP_OK;
    for (uint32_t depth = 0; depth < LAYER_DEPTH_MAX && rc == JP_OK; depth++) {
        ms.n = ms.left = 0;
        rc = collect_members(b, nb, 0, &ms);
        if (rc == JP_OK) rc = collect_members(n, nn, 1, &ms);
        if (rc == JP_OK) rc = align_depth(ar, ms.m, ms.n, depth);
        if (ms.left == 0) break;
    }
    jp_intern_deinit(&ms.groups);
    return rc;
}

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
    double fb = per_occurrence(b->flops, b), fn = per_occurrence(n->flops, n);
    double yb = per_occurrence(b->bytes, b), yn = per_occurrence(n->bytes, n);
    return (fb > 0 && fn > 0 && fb != fn) || (yb > 0 && yn > 0 && yb != yn);
}

/* Whether two ops' metadata op_names contradict: both known and different. XLA numbers fusions
 * per compilation, so after a code change "fusion" may name another computation than before; the
 * op_name (the JAX source path) tells them apart. */
static int op_names_conflict(const agg *b, const agg *n) {
    return b->op_key[0] && n->op_key[0] && strcmp(b->op_key, n->op_key) != 0;
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
    if (!c) c = cmp_double(a->c1, b->c1);
    if (!c) c = cmp_double(a->c2, b->c2);
    if (!c) c = (a->i > b->i) - (a->i < b->i);
    return c ? c : (a->j > b->j) - (a->j < b->j);
}

static int cmp_rank(const void *x, const void *y) {
    const agg *a = *(agg *const *)x, *b = *(agg *const *)y;
    int c = cmp_double(a->count, b->count);
    if (!c) c = cmp_double(a->self_ps, b->self_ps);
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
    if (nb > PAIR_LIMIT / nn) {
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
    agg **lb = alloc_array(ar, nb, sizeof *lb), **ln = alloc_array(ar, nn, sizeof *ln);
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
    const char **keys = alloc_array(ar, n, sizeof *keys);
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

/* ---- scope rows under renumbered layers ---------------------------------------------------- */

static int cmp_agg_ptr_scope(const void *x, const void *y) {
    return strcmp((*(const agg *const *)x)->scope, (*(const agg *const *)y)->scope);
}

/* First of moved (sorted by scope) not before path, or (slash) not before path + "/". */
static size_t lower_bound_scope(const agg *const *moved, size_t k, const char *path, size_t len, int slash) {
    size_t lo = 0, hi = k;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *s = moved[mid]->scope;
        int c = strncmp(s, path, len);
        if (!c) c = slash ? (unsigned char)s[len] - '/' : (unsigned char)s[len] != 0;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* An op of moved whose scope is path or lies under it, or NULL. */
static const agg *op_under(const agg *const *moved, size_t k, const char *path) {
    size_t len = strlen(path), i = lower_bound_scope(moved, k, path, len, 0);
    if (i < k && strcmp(moved[i]->scope, path) == 0) return moved[i];
    i = lower_bound_scope(moved, k, path, len, 1);
    if (i < k && strncmp(moved[i]->scope, path, len) == 0 && moved[i]->scope[len] == '/') return moved[i];
    return NULL;
}

/* Bytes of the first n components of a scope path. */
static size_t components_len(const char *s, size_t n) {
    size_t i = 0;
    for (size_t c = 0; s[i]; i++)
        if (s[i] == '/' && ++c == n) break;
    return i;
}

static size_t components(const char *s) {
    size_t n = 1;
    for (; *s; s++) n += *s == '/';
    return n;
}

/* A base device scope row under a renumbered layer takes the path its ops were given: the first
 * components of the renumbered scope of any op under it (they all share them), and a row inside a
 * layer of the base run only is lone. Returns 1 when a row changed, 0 when none, -1 out of memory. */
static int map_scope_rows(jp_arena *ar, const agg *ops, size_t n_ops, agg *rows, size_t n_rows) {
    const agg **moved = alloc_array(ar, n_ops, sizeof *moved);
    if (!moved) return -1;
    size_t k = 0;
    for (size_t i = 0; i < n_ops; i++)
        if (ops[i].lone || ops[i].scope_key != ops[i].scope) moved[k++] = &ops[i];
    if (k == 0) return 0;
    qsort(moved, k, sizeof *moved, cmp_agg_ptr_scope);
    int changed = 0;
    for (size_t r = 0; r < n_rows; r++) {
        agg *row = &rows[r];
        const agg *op = row->kind == JP_SCOPE_DEVICE ? op_under(moved, k, row->name) : NULL;
        if (!op) continue;
        size_t depth = components(row->name);
        if (op->lone && op->lone <= depth) {
            row->lone = op->lone;
            continue;
        }
        size_t len = components_len(op->scope_key, depth);
        if (strlen(row->name) == len && memcmp(row->name, op->scope_key, len) == 0) continue;
        char *key = jp_arena_alloc(ar, len + 1);
        if (!key) return -1;
        memcpy(key, op->scope_key, len);
        key[len] = '\0';
        row->scope_key = key;
        changed = 1;
    }
    return changed;
}

/* ---- rows ---------------------------------------------------------------------------------- */

static void fill_row(jp_diff_row *r, const agg *b, const agg *n) {
    const agg *src = n ? n : b;
    *r = (jp_diff_row){.name = src->name, .base_name = b ? b->name : "", .module = src->module,
                       .category = src->category, .scope = src->scope,
                       .match = b && n ? n->match : JP_MATCH_NONE};
    if (b) {
        r->base_count = b->count;
        r->base_ps = b->self_ps;
        r->base_total_ps = b->total_ps;
    }
    if (n) {
        r->new_count = n->count;
        r->new_ps = n->self_ps;
        r->new_total_ps = n->total_ps;
    }
    if (b && n) {
        r->noise_ps = NOISE_SE * sqrt(b->var + n->var);
        r->noise_basis = b->basis < n->basis ? b->basis : n->basis;
    }
}

/* Added and removed by presence; a paired row is slower or faster when its self time per step
 * moved by more than min_change_pct of itself, by at least min_share_pct of the base mean step
 * (so a tiny op doubling does not count), and by more than its noise (an op's own spread in the
 * two runs: two runs of the same code differ by that much). A row with no base time that gained
 * some counts as beyond any percentage. */
static void classify(jp_diff_row *r, int in_base, int in_new, const jp_diff_options *o, double base_step_ps) {
    r->delta_ps = r->new_ps - r->base_ps;
    r->delta_pct = 0;
    if (!in_base || !in_new) {
        r->change = in_new ? JP_CHANGE_ADDED : JP_CHANGE_REMOVED;
        return;
    }
    if (r->base_ps > 0) r->delta_pct = 100.0 * r->delta_ps / r->base_ps;
    int big_pct = r->base_ps > 0 ? fabs(r->delta_pct) > o->min_change_pct : r->delta_ps != 0;
    int big_share = fabs(r->delta_ps) >= o->min_share_pct / 100.0 * base_step_ps;
    int beyond_noise = fabs(r->delta_ps) > r->noise_ps;
    r->change = !(big_pct && big_share && beyond_noise) ? JP_CHANGE_UNCHANGED : r->delta_ps > 0 ? JP_CHANGE_SLOWER : JP_CHANGE_FASTER;
}

/* Changed rows first, each part by |delta| descending, then by the larger time, then by names:
 * a total order, so the output never depends on qsort. */
static int cmp_row(const void *x, const void *y) {
    const jp_diff_row *a = x, *b = y;
    int ua = a->change == JP_CHANGE_UNCHANGED, ub = b->change == JP_CHANGE_UNCHANGED;
    if (ua != ub) return ua - ub;
    int c = cmp_double(fabs(b->delta_ps), fabs(a->delta_ps));
    if (!c) c = cmp_double(fmax(b->base_ps, b->new_ps), fmax(a->base_ps, a->new_ps));
    if (!c) c = strcmp(a->name, b->name);
    if (!c) c = strcmp(a->module, b->module);
    if (!c) c = strcmp(a->base_name, b->base_name);
    return c ? c : strcmp(a->category, b->category);
}

/* Rows from two paired entry arrays: every new entry (paired or added), then base entries left
 * unpaired (removed). Returns the row array (n_out rows) or NULL. */
static jp_diff_row *build_rows(jp_arena *ar, const agg *b, size_t nb, const agg *n, size_t nn,
                               const jp_diff_options *o, double base_step_ps, size_t *n_out) {
    if (nb > SIZE_MAX - nn) return NULL;
    jp_diff_row *rows = alloc_array(ar, nb + nn, sizeof *rows);
    if (!rows) return NULL;
    size_t k = 0;
    for (size_t j = 0; j < nn; j++) {
        fill_row(&rows[k], n[j].partner, &n[j]);
        classify(&rows[k++], n[j].partner != NULL, 1, o, base_step_ps);
    }
    for (size_t i = 0; i < nb; i++) {
        if (b[i].partner) continue;
        fill_row(&rows[k], &b[i], NULL);
        classify(&rows[k++], 1, 0, o, base_step_ps);
    }
    *n_out = k;
    return rows;
}

/* ---- ops, scopes, findings ----------------------------------------------------------------- */

/* The base run's ops as paired, which the scope rows follow. */
typedef struct base_ops {
    const agg *v;
    size_t n;
} base_ops;

static int any_free(const agg *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (is_free(&v[i])) return 1;
    return 0;
}

/* Pairs the ops: renumbered modules and layers mapped first, then the same name with agreeing
 * op_name and shape, the fallback passes, and the bare name last (see exact_rule). */
static int pair_ops(jp_arena *ar, agg *b, size_t nb, agg *n, size_t nn) {
    int mapped = map_renumbered_modules(ar, b, nb, n, nn);
    if (mapped < 0) return JP_ERR_NOMEM;
    if (mapped && nb > 1) qsort(b, nb, sizeof *b, cmp_agg_op); /* keys are distinct again: no merge */
    if (map_renumbered_layers(ar, b, nb, n, nn) != JP_OK) return JP_ERR_NOMEM;
    pair_exact(b, nb, n, nn, same_op_key, &(exact_ctx){EXACT_STRICT, NULL, NULL});
    for (int p = 0; p < PASS_COUNT; p++)
        if (pair_pass(ar, b, nb, n, nn, (pass_kind)p) != JP_OK) return JP_ERR_NOMEM;
    if (!any_free(b, nb) || !any_free(n, nn)) return JP_OK; /* the scope sets would go unused */
    scope_set sb, sn;
    if (scope_set_of(ar, b, nb, &sb) != JP_OK || scope_set_of(ar, n, nn, &sn) != JP_OK) return JP_ERR_NOMEM;
    pair_exact(b, nb, n, nn, same_op_key, &(exact_ctx){EXACT_RENAMED, &sb, &sn});
    return JP_OK;
}

static int diff_ops(jp_arena *ar, jp_diff *d, const jp_analysis *base, const jp_analysis *nw, double base_div,
                    double new_div, base_ops *paired) {
    size_t nb, nn;
    agg *b = aggregate_ops(ar, base, base_div, &nb), *n = aggregate_ops(ar, nw, new_div, &nn);
    if (!b || !n) return JP_ERR_NOMEM;
    if (pair_ops(ar, b, nb, n, nn) != JP_OK) return JP_ERR_NOMEM;
    *paired = (base_ops){b, nb};
    d->ops = build_rows(ar, b, nb, n, nn, &d->options, d->steps.base_mean_ps, &d->n_ops);
    if (!d->ops) return JP_ERR_NOMEM;
    if (d->n_ops > 1) qsort(d->ops, d->n_ops, sizeof *d->ops, cmp_row);
    for (size_t i = 0; i < d->n_ops; i++) {
        d->op_changes[d->ops[i].change]++;
        d->op_matches[d->ops[i].match]++;
    }
    return JP_OK;
}

static int diff_scopes(jp_arena *ar, jp_diff *d, const jp_analysis *base, const jp_analysis *nw, double base_div,
                       double new_div, const base_ops *ops) {
    size_t nb, nn;
    agg *b = aggregate_scopes(ar, base, base_div, &nb), *n = aggregate_scopes(ar, nw, new_div, &nn);
    if (!b || !n) return JP_ERR_NOMEM;
    int mapped = map_scope_rows(ar, ops->v, ops->n, b, nb);
    if (mapped < 0) return JP_ERR_NOMEM;
    if (mapped && nb > 1) qsort(b, nb, sizeof *b, cmp_agg_scope);
    pair_exact(b, nb, n, nn, cmp_agg_scope, &(exact_ctx){EXACT_ANY, NULL, NULL});
    d->scopes = build_rows(ar, b, nb, n, nn, &d->options, d->steps.base_mean_ps, &d->n_scopes);
    if (!d->scopes) return JP_ERR_NOMEM;
    /* Device scopes before host scopes, each ordered like the ops. */
    size_t n_device = 0;
    for (size_t i = 0; i < d->n_scopes; i++) {
        jp_diff_row *r = &d->scopes[i];
        d->scope_changes[r->change]++;
        if (strcmp(r->category, "device") == 0) {
            jp_diff_row t = d->scopes[n_device];
            d->scopes[n_device++] = *r;
            *r = t;
        }
    }
    if (n_device > 1) qsort(d->scopes, n_device, sizeof *d->scopes, cmp_row);
    if (d->n_scopes - n_device > 1) qsort(d->scopes + n_device, d->n_scopes - n_device, sizeof *d->scopes, cmp_row);
    return JP_OK;
}

static int has_finding(const jp_analysis *a, size_t upto, const char *id) {
    for (size_t i = 0; i < upto; i++)
        if (strcmp(nz(a->findings[i].id), id) == 0) return 1;
    return 0;
}

/* Findings whose id is in one run only, once per id: appeared (new order), then gone (base order).
 * Findings are a handful per run, so the quadratic lookup is cheaper than sorting. */
static int diff_findings(jp_arena *ar, jp_diff *d, const jp_analysis *base, const jp_analysis *nw) {
    size_t nb = base->findings ? base->n_findings : 0, nn = nw->findings ? nw->n_findings : 0;
    if (nb > SIZE_MAX - nn) return JP_ERR_NOMEM;
    d->findings = alloc_array(ar, nb + nn, sizeof *d->findings);
    if (!d->findings) return JP_ERR_NOMEM;
    const jp_analysis *sides[2] = {nw, base};
    size_t counts[2] = {nn, nb};
    for (int s = 0; s < 2; s++) {
        const jp_analysis *a = sides[s], *other = sides[1 - s];
        size_t n_other = counts[1 - s];
        for (size_t i = 0; i < counts[s]; i++) {
            const jp_finding *f = &a->findings[i];
            if (has_finding(a, i, nz(f->id)) || has_finding(other, n_other, nz(f->id))) continue;
            d->findings[d->n_findings++] =
                (jp_diff_finding){nz(f->id), nz(f->title), f->severity, s == 0};
        }
    }
    return JP_OK;
}

/* ---- jp_diff_new / jp_diff_free ------------------------------------------------------------ */

static int options_of(const jp_diff_options *opt, jp_diff_options *out, jp_error *err) {
    *out = (jp_diff_options){DEFAULT_MIN_CHANGE_PCT, DEFAULT_MIN_SHARE_PCT};
    if (!opt) return JP_OK;
    if (!(opt->min_change_pct >= 0) || !(opt->min_share_pct >= 0) || isinf(opt->min_change_pct) ||
        isinf(opt->min_share_pct))
        return jp_error_set(err, JP_ERR_ARG, 0, "diff thresholds must be finite and >= 0 (got %g%% and %g%%)",
                            opt->min_change_pct, opt->min_share_pct);
    if (opt->min_change_pct > 0) out->min_change_pct = opt->min_change_pct;
    if (opt->min_share_pct > 0) out->min_share_pct = opt->min_share_pct;
    return JP_OK;
}

int jp_diff_new(jp_diff **out, const jp_analysis *base, const jp_analysis *new_run, const jp_diff_options *opt,
                jp_error *err) {
    jp_error_clear(err);
    if (!out) return jp_error_set(err, JP_ERR_ARG, 0, "jp_diff_new: out is NULL");
    *out = NULL;
    if (!base || !new_run) return jp_error_set(err, JP_ERR_ARG, 0, "jp_diff_new: an analysis is NULL");
    diff_box *box = calloc(1, sizeof *box);
    if (!box) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory comparing profiles");
    jp_arena_init(&box->arena, 0);
    jp_diff *d = &box->pub;
    d->base_path = nz(base->path);
    d->new_path = nz(new_run->path);
    int rc = options_of(opt, &d->options, err);
    if (rc) {
        jp_diff_free(d);
        return rc;
    }
    step_side sb = step_side_of(base), sn = step_side_of(new_run);
    diff_steps(&d->steps, &sb, &sn);
    base_ops paired = {NULL, 0};
    rc = diff_ops(&box->arena, d, base, new_run, (double)sb.n, (double)sn.n, &paired);
    if (rc == JP_OK) rc = diff_scopes(&box->arena, d, base, new_run, (double)sb.n, (double)sn.n, &paired);
    if (rc == JP_OK) rc = diff_findings(&box->arena, d, base, new_run);
    if (rc) {
        jp_diff_free(d);
        return jp_error_set(err, rc, 0, "out of memory comparing %s with %s", nz(base->path), nz(new_run->path));
    }
    *out = d;
    return JP_OK;
}

void jp_diff_free(jp_diff *d) {
    if (!d) return;
    diff_box *box = (diff_box *)d;
    jp_arena_deinit(&box->arena);
    free(box);
}

/* ---- jp_diff_check ------------------------------------------------------------------------- */

/* "1.80 ms" for step-sized times, "45.0 µs" below a tenth of a millisecond. */
static void add_time(jp_text *t, double ps, int sign) {
    double ms = ps / PS_PER_MS;
    if (fabs(ms) >= 0.1) jp_text_printf(t, sign ? "%+.2f ms" : "%.2f ms", ms);
    else jp_text_printf(t, sign ? "%+.1f \xC2\xB5s" : "%.1f \xC2\xB5s", ms * 1000.0);
}

static void add_pct(jp_text *t, double pct) { jp_text_printf(t, fabs(pct) >= 10 ? "%+.0f%%" : "%+.1f%%", pct); }

static void add_op_name(jp_text *t, const jp_diff_row *r) {
    jp_text_printf(t, "%s%s%s", r->module, r->module[0] ? "/" : "", r->name);
    if (r->base_name[0] && strcmp(r->base_name, r->name) != 0) jp_text_printf(t, " (was %s)", r->base_name);
}

/* Does this row break the op limit? A slower row by more than the limit (rows already pass the
 * share threshold), one with no base time, or an added op taking min_share_pct of the step. */
static int op_trips(const jp_diff *d, const jp_diff_row *r, double limit) {
    if (r->change == JP_CHANGE_SLOWER) return r->delta_pct > limit || r->base_ps <= 0;
    if (r->change == JP_CHANGE_ADDED) return r->new_ps >= d->options.min_share_pct / 100.0 * d->steps.base_mean_ps;
    return 0;
}

static int step_trips(const jp_diff *d, double limit) {
    return limit >= 0 && d->steps.significant && d->steps.change_pct > limit;
}

/* Whether row r is one add_slow_ops names (with its pass's change, want). */
static int slow_op_listed(const jp_diff *d, const jp_diff_row *r, int want, double limit) {
    return r->change == want && (limit < 0 || op_trips(d, r, limit));
}

/* How many rows add_slow_ops would name (before its WHY_OPS cut). */
static size_t slow_ops_total(const jp_diff *d, double limit) {
    size_t total = 0;
    for (size_t i = 0; i < d->n_ops; i++)
        total += slow_op_listed(d, &d->ops[i], JP_CHANGE_SLOWER, limit) || slow_op_listed(d, &d->ops[i], JP_CHANGE_ADDED, limit);
    return total;
}

/* "jit_f/dot.3 +1.80 ms/step (+40%), ...; added: jit_f/x 0.50 ms/step": up to WHY_OPS rows in
 * |delta| order, those breaking the op limit when `limit` >= 0, else every slower or added row. */
static void add_slow_ops(jp_text *t, const jp_diff *d, double limit) {
    size_t shown = 0, total = 0;
    for (int pass = 0; pass < 2; pass++) {
        int want = pass == 0 ? JP_CHANGE_SLOWER : JP_CHANGE_ADDED;
        size_t in_pass = 0;
        for (size_t i = 0; i < d->n_ops; i++) {
            const jp_diff_row *r = &d->ops[i];
            if (!slow_op_listed(d, r, want, limit)) continue;
            total++;
            if (shown == WHY_OPS) continue;
            jp_text_printf(t, "%s", in_pass ? ", " : pass && shown ? "; added: " : pass ? "added: " : "");
            add_op_name(t, r);
            jp_text_printf(t, " ");
            add_time(t, want == JP_CHANGE_SLOWER ? r->delta_ps : r->new_ps, want == JP_CHANGE_SLOWER);
            jp_text_printf(t, "/step");
            if (want == JP_CHANGE_SLOWER && r->base_ps > 0) {
                jp_text_printf(t, " (");
                add_pct(t, r->delta_pct);
                if (r->noise_ps > 0) jp_text_printf(t, ", noise \xC2\xB1%.1f%%", 100.0 * r->noise_ps / r->base_ps);
                jp_text_printf(t, ")");
            }
            in_pass++;
            shown++;
        }
    }
    if (total > shown) jp_text_printf(t, "; and %zu more", total - shown);
}

static void add_step_numbers(jp_text *t, const jp_diff_steps *s) {
    jp_text_printf(t, "(%.2f \xE2\x86\x92 %.2f ms per step, noise \xC2\xB1%.1f%%)", s->base_mean_ps / PS_PER_MS,
             s->new_mean_ps / PS_PER_MS, s->noise_pct);
}

static void explain_trip(jp_text *t, const jp_diff *d, int step_trip, int op_trip, double step_limit, double op_limit) {
    const jp_diff_steps *s = &d->steps;
    if (step_trip) {
        jp_text_printf(t, "Step time rose %.1f%% ", s->change_pct);
        add_step_numbers(t, s);
        jp_text_printf(t, ", over the %g%% limit.", step_limit);
    }
    if (op_trip) {
        jp_text_printf(t, "%sOps over the %g%% limit: ", step_trip ? " " : "", op_limit);
        add_slow_ops(t, d, op_limit);
        jp_text_printf(t, ".");
        return;
    }
    if (slow_ops_total(d, -1) == 0) {
        jp_text_printf(t, " No single op got slower beyond the thresholds (%g%% and %g%% of the step) and its noise.",
                       d->options.min_change_pct, d->options.min_share_pct);
        return;
    }
    jp_text_puts(t, " Ops that got slower: ");
    add_slow_ops(t, d, -1);
    jp_text_puts(t, ".");
}

static void explain_hold(jp_text *t, const jp_diff *d, double step_limit, double op_limit) {
    const jp_diff_steps *s = &d->steps;
    jp_text_printf(t, "Within limits: step time changed ");
    add_pct(t, s->change_pct);
    jp_text_printf(t, " ");
    add_step_numbers(t, s);
    if (step_limit >= 0)
        jp_text_printf(t, s->change_pct > step_limit ? ", within noise of the %g%% limit" : ", limit %g%%", step_limit);
    if (op_limit >= 0) jp_text_printf(t, "; no op slower than the %g%% limit beyond its noise", op_limit);
    jp_text_printf(t, ".");
}

int jp_diff_check(const jp_diff *d, const jp_diff_gate *gate, char *why, size_t cap) {
    jp_text t = jp_text_make(why, why ? cap : 0); /* a long paragraph: cut with "...", whole characters */
    if (!d) {
        jp_text_puts(&t, "No diff to check.");
        return 0;
    }
    double step_limit = gate ? gate->max_step_slowdown_pct : -1, op_limit = gate ? gate->max_op_slowdown_pct : -1;
    if (!(step_limit >= 0)) step_limit = -1; /* NaN means off too */
    if (!(op_limit >= 0)) op_limit = -1;
    int step_trip = step_trips(d, step_limit), op_trip = 0;
    for (size_t i = 0; op_limit >= 0 && i < d->n_ops && !op_trip; i++) op_trip = op_trips(d, &d->ops[i], op_limit);
    if (step_trip || op_trip) explain_trip(&t, d, step_trip, op_trip, step_limit, op_limit);
    else explain_hold(&t, d, step_limit, op_limit);
    return step_trip || op_trip;
}
