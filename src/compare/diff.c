/* diff.c - comparing two analyses (jp_diff_new): step time with a noise estimate, the breakdown,
 * ops and scopes aggregated per step, aligned across XLA and Flax renumbering (diff_align.c),
 * paired (diff_pair.c) and classified, and findings; the regression gate is diff_gate.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/result_names.h"
#include "base/error.h"
#include "compare/diff_int.h"

#define DEFAULT_MIN_CHANGE_PCT 5.0
#define DEFAULT_MIN_SHARE_PCT 0.5
#define NOISE_SE 2.0 /* an op's noise: this many standard errors of its change (as the step time's) */

/* The diff and the arena that holds every array it points to; jp_diff_free recovers the box. */
typedef struct diff_box {
    jp_diff pub;    /* handed out; the first member, so a jp_diff * is a diff_box * */
    jp_arena arena; /* rows, findings and the working arrays of jp_diff_new */
} diff_box;

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

void *jp_diff_alloc(jp_arena *ar, size_t n, size_t size) {
    if (n == 0) n = 1;
    if (n > SIZE_MAX / size) return NULL;
    void *p = jp_arena_alloc(ar, n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

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

static int cmp_op(const void *x, const void *y) {
    const agg *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    if (!c) c = strcmp(a->name, b->name);
    return c ? c : (a->device > b->device) - (a->device < b->device);
}

/* Scopes by kind and the path used for pairing (a renumbered layer's base path takes the new one). */
int jp_diff_cmp_scope(const void *x, const void *y) {
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

int jp_diff_same_op(const void *x, const void *y) {
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
    agg *v = jp_diff_alloc(ar, n, sizeof *v);
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
    if (n > 1) qsort(v, n, sizeof *v, cmp_op);
    *n_out = merge_and_scale(v, n, jp_diff_same_op, per_step);
    return v;
}

static agg *aggregate_scopes(jp_arena *ar, const jp_analysis *a, double per_step, size_t *n_out) {
    size_t n = a->scopes ? a->n_scopes : 0;
    agg *v = jp_diff_alloc(ar, n, sizeof *v);
    if (!v) return NULL;
    for (size_t i = 0; i < n; i++) {
        const jp_scope_stat *s = &a->scopes[i];
        int kind = s->kind == JP_SCOPE_DEVICE ? JP_SCOPE_DEVICE : JP_SCOPE_HOST;
        v[i] = (agg){.key = "", .module = "", .name = nz(s->path), .category = kind ? "host" : "device",
                     .op_name = "", .scope = nz(s->path), .op_key = "", .scope_key = nz(s->path), .kind = kind,
                     .count = (double)s->count,
                     .self_ps = (double)s->self_ps, .total_ps = (double)s->total_ps};
    }
    if (n > 1) qsort(v, n, sizeof *v, jp_diff_cmp_scope);
    *n_out = merge_and_scale(v, n, jp_diff_cmp_scope, per_step);
    return v;
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
    int c = jp_diff_cmp_double(fabs(b->delta_ps), fabs(a->delta_ps));
    if (!c) c = jp_diff_cmp_double(fmax(b->base_ps, b->new_ps), fmax(a->base_ps, a->new_ps));
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
    jp_diff_row *rows = jp_diff_alloc(ar, nb + nn, sizeof *rows);
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

/* Renumbered modules and layers are mapped first, so that the passes pair what was renamed. */
static int align_and_pair_ops(jp_arena *ar, agg *b, size_t nb, agg *n, size_t nn) {
    int mapped = jp_diff_map_modules(ar, b, nb, n, nn);
    if (mapped < 0) return JP_ERR_NOMEM;
    if (mapped && nb > 1) qsort(b, nb, sizeof *b, cmp_op); /* keys are distinct again: no merge */
    if (jp_diff_map_layers(ar, b, nb, n, nn) != JP_OK) return JP_ERR_NOMEM;
    return jp_diff_pair_ops(ar, b, nb, n, nn);
}

static int diff_ops(jp_arena *ar, jp_diff *d, const jp_analysis *base, const jp_analysis *nw, double base_div,
                    double new_div, base_ops *paired) {
    size_t nb, nn;
    agg *b = aggregate_ops(ar, base, base_div, &nb), *n = aggregate_ops(ar, nw, new_div, &nn);
    if (!b || !n) return JP_ERR_NOMEM;
    if (align_and_pair_ops(ar, b, nb, n, nn) != JP_OK) return JP_ERR_NOMEM;
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
    int mapped = jp_diff_map_scope_rows(ar, ops->v, ops->n, b, nb);
    if (mapped < 0) return JP_ERR_NOMEM;
    if (mapped && nb > 1) qsort(b, nb, sizeof *b, jp_diff_cmp_scope);
    jp_diff_pair_scopes(b, nb, n, nn);
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
    d->findings = jp_diff_alloc(ar, nb + nn, sizeof *d->findings);
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
