/* test_diff.c - jp_diff_new and jp_diff_check on hand-built analyses (static arrays, exact times
 * in picoseconds) and on the committed capture diffed with itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/result_names.h"

#ifndef JP_TEST_DATA
#define JP_TEST_DATA "tests/data"
#endif

#define MS 1000000000LL /* picoseconds per millisecond */
#define MAX_OPS 32
#define MAX_STEPS 16

/* One run built by hand: the analysis points into the arrays beside it. */
typedef struct run {
    jp_analysis a;
    jp_op_stat ops[MAX_OPS];
    jp_step steps[MAX_STEPS];
    jp_scope_stat scopes[16];
    jp_finding findings[4];
} run;

static void run_init(run *r, const char *path) {
    memset(r, 0, sizeof *r);
    r->a.path = path;
    r->a.ops = r->ops;
    r->a.steps = r->steps;
    r->a.scopes = r->scopes;
    r->a.findings = r->findings;
    r->a.step_summary.method = "none";
}

static int cmp_i64(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Steps of the given durations (compute 3/4, idle the rest) and their summary, as steps.c makes it. */
static void run_steps(run *r, const int64_t *durs, size_t n) {
    assert_true(n <= MAX_STEPS);
    int64_t sorted[MAX_STEPS];
    jp_step_summary *s = &r->a.step_summary;
    *s = (jp_step_summary){0};
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        jp_step *st = &r->steps[i];
        *st = (jp_step){.step_num = (int64_t)i, .start_ps = (int64_t)i * 100 * MS, .dur_ps = durs[i]};
        st->part_ps[JP_PART_COMPUTE] = durs[i] / 4 * 3;
        st->part_ps[JP_PART_IDLE] = durs[i] - st->part_ps[JP_PART_COMPUTE];
        for (int p = 0; p < JP_PART_COUNT; p++) s->part_ps[p] += st->part_ps[p];
        s->total_ps += durs[i];
        sum += (double)durs[i];
        sorted[i] = durs[i];
    }
    qsort(sorted, n, sizeof *sorted, cmp_i64);
    s->method = "StepTraceAnnotation";
    s->mean_ps = sum / (double)n;
    s->median_ps = n % 2 ? (double)sorted[n / 2] : ((double)sorted[n / 2 - 1] + (double)sorted[n / 2]) / 2;
    size_t rank = (size_t)ceil(0.9 * (double)n);
    s->p90_ps = (double)sorted[rank - 1];
    r->a.n_steps = n;
    r->a.span_ps = (int64_t)n * 100 * MS;
}

/* n steps of dur_ps each. */
static void run_flat_steps(run *r, int64_t dur_ps, size_t n) {
    int64_t d[MAX_STEPS];
    for (size_t i = 0; i < n; i++) d[i] = dur_ps;
    run_steps(r, d, n);
}

static jp_op_stat *run_op(run *r, const char *module, const char *name, const char *category, const char *op_name,
                          const char *scope, uint32_t device, uint64_t count, int64_t self_ps) {
    assert_true(r->a.n_ops < MAX_OPS);
    jp_op_stat *op = &r->ops[r->a.n_ops++];
    *op = (jp_op_stat){.module = module, .name = name, .category = category, .op_name = op_name, .scope = scope,
                       .source = "", .function = "", .device = device, .count = count,
                       .total_ps = self_ps + self_ps / 10, .self_ps = self_ps, .min_ps = 1, .max_ps = self_ps,
                       .n_devices = 1};
    return op;
}

static void run_scope(run *r, const char *path, int kind, uint64_t count, int64_t self_ps, int64_t total_ps) {
    assert_true(r->a.n_scopes < 16);
    jp_scope_stat *s = &r->scopes[r->a.n_scopes++];
    *s = (jp_scope_stat){path, kind, 1, 0, count, total_ps, self_ps, total_ps};
}

static void run_finding(run *r, const char *id, int severity) {
    jp_finding *f = &r->findings[r->a.n_findings++];
    *f = (jp_finding){id, severity, id, "evidence", "fix"};
}

static jp_diff *diff_of(const run *b, const run *n, const jp_diff_options *opt) {
    jp_diff *d = NULL;
    jp_error err;
    int rc = jp_diff_new(&d, &b->a, &n->a, opt, &err);
    if (rc) fail_msg("jp_diff_new: %d %s", rc, err.msg);
    assert_non_null(d);
    return d;
}

static const jp_diff_row *find_op(const jp_diff *d, const char *name) {
    for (size_t i = 0; i < d->n_ops; i++)
        if (strcmp(d->ops[i].name, name) == 0) return &d->ops[i];
    fail_msg("no op row %s", name);
    return NULL;
}

static const jp_diff_row *find_module_op(const jp_diff *d, const char *module, const char *name) {
    for (size_t i = 0; i < d->n_ops; i++)
        if (strcmp(d->ops[i].module, module) == 0 && strcmp(d->ops[i].name, name) == 0) return &d->ops[i];
    fail_msg("no op row %s/%s", module, name);
    return NULL;
}

static const jp_diff_row *find_scope(const jp_diff *d, const char *path, const char *kind) {
    for (size_t i = 0; i < d->n_scopes; i++)
        if (strcmp(d->scopes[i].name, path) == 0 && strcmp(d->scopes[i].category, kind) == 0) return &d->scopes[i];
    fail_msg("no scope row %s (%s)", path, kind);
    return NULL;
}

static void assert_near(double got, double want) {
    if (fabs(got - want) > 1e-9 * fmax(1.0, fabs(want))) fail_msg("got %.12g, want %.12g", got, want);
}

/* A small model: 4 steps of 10 ms, three ops, two scopes, one finding. */
static void model(run *r, const char *path) {
    run_init(r, path);
    run_flat_steps(r, 10 * MS, 4);
    run_op(r, "jit_f", "dot.3", "matmul", "jit(f)/dot_general", "model/dense", 0, 4, 16 * MS);
    run_op(r, "jit_f", "fusion.1", "loop fusion", "jit(f)/add", "model", 0, 8, 8 * MS);
    run_op(r, "jit_g", "copy.2", "data formatting", "", "", 0, 4, 4 * MS);
    run_scope(r, "model/dense", JP_SCOPE_DEVICE, 4, 16 * MS, 16 * MS);
    run_scope(r, "model", JP_SCOPE_DEVICE, 12, 8 * MS, 24 * MS);
    run_scope(r, "train_step", JP_SCOPE_HOST, 4, 2 * MS, 38 * MS);
    run_finding(r, "device_idle", JP_RATING_WARNING);
}

static const jp_diff_gate STRICT = {5, 10};

/* ---- names and arguments ------------------------------------------------------------------ */

static void names(void **state) {
    (void)state;
    assert_string_equal(jp_change_name(JP_CHANGE_UNCHANGED), "unchanged");
    assert_string_equal(jp_change_name(JP_CHANGE_SLOWER), "slower");
    assert_string_equal(jp_change_name(JP_CHANGE_FASTER), "faster");
    assert_string_equal(jp_change_name(JP_CHANGE_ADDED), "added");
    assert_string_equal(jp_change_name(JP_CHANGE_REMOVED), "removed");
    assert_string_equal(jp_change_name(JP_CHANGE_COUNT), "unknown");
    assert_string_equal(jp_change_name(-1), "unknown");
    assert_string_equal(jp_match_name(JP_MATCH_NONE), "none");
    assert_string_equal(jp_match_name(JP_MATCH_NAME), "name");
    assert_string_equal(jp_match_name(JP_MATCH_OP_NAME), "op_name");
    assert_string_equal(jp_match_name(JP_MATCH_SHAPE), "shape");
    assert_string_equal(jp_match_name(JP_MATCH_COUNT), "unknown");
}

static void bad_arguments(void **state) {
    (void)state;
    run r;
    model(&r, "a");
    static jp_diff dummy;
    jp_diff *d = &dummy; /* must be overwritten with NULL */
    jp_error err;
    assert_int_equal(jp_diff_new(&d, NULL, &r.a, NULL, &err), JP_ERR_ARG);
    assert_null(d);
    assert_int_equal(err.code, JP_ERR_ARG);
    jp_diff_options neg = {-1, 0};
    assert_int_equal(jp_diff_new(&d, &r.a, &r.a, &neg, &err), JP_ERR_ARG);
    assert_null(d);
    assert_non_null(strstr(err.msg, "-1"));
    jp_diff_options nan_share = {0, NAN};
    assert_int_equal(jp_diff_new(&d, &r.a, &r.a, &nan_share, NULL), JP_ERR_ARG);
    assert_int_equal(jp_diff_new(NULL, &r.a, &r.a, NULL, NULL), JP_ERR_ARG);
    jp_diff_free(NULL);
}

/* ---- identical runs ----------------------------------------------------------------------- */

static void identical_runs_are_unchanged(void **state) {
    (void)state;
    run r;
    model(&r, "base");
    jp_diff *d = diff_of(&r, &r, NULL);
    assert_string_equal(d->base_path, "base");
    assert_string_equal(d->new_path, "base");
    assert_near(d->options.min_change_pct, 5);
    assert_near(d->options.min_share_pct, 0.5);
    assert_int_equal(d->steps.base_n, 4);
    assert_int_equal(d->steps.new_n, 4);
    assert_near(d->steps.base_mean_ps, 10.0 * MS);
    assert_near(d->steps.new_median_ps, 10.0 * MS);
    assert_near(d->steps.base_p90_ps, 10.0 * MS);
    assert_near(d->steps.change_pct, 0);
    assert_near(d->steps.noise_pct, 0);
    assert_false(d->steps.significant);
    assert_near(d->steps.base_part_ps[JP_PART_COMPUTE], 7.5 * MS);
    assert_near(d->steps.new_part_ps[JP_PART_IDLE], 2.5 * MS);
    assert_int_equal(d->n_ops, 3);
    assert_int_equal(d->op_changes[JP_CHANGE_UNCHANGED], 3);
    assert_int_equal(d->op_matches[JP_MATCH_NAME], 3);
    for (size_t i = 0; i < d->n_ops; i++) {
        assert_int_equal(d->ops[i].change, JP_CHANGE_UNCHANGED);
        assert_int_equal(d->ops[i].match, JP_MATCH_NAME);
        assert_near(d->ops[i].delta_ps, 0);
        assert_string_equal(d->ops[i].name, d->ops[i].base_name);
    }
    /* All deltas 0: ordered by time per step, largest first. */
    assert_string_equal(d->ops[0].name, "dot.3");
    assert_string_equal(d->ops[1].name, "fusion.1");
    assert_string_equal(d->ops[2].name, "copy.2");
    assert_near(d->ops[0].base_ps, 4.0 * MS);
    assert_near(d->ops[0].base_count, 1);
    assert_near(d->ops[0].new_total_ps, 4.4 * MS);
    assert_string_equal(d->ops[0].scope, "model/dense");
    assert_string_equal(d->ops[0].category, "matmul");
    assert_int_equal(d->n_scopes, 3);
    assert_int_equal(d->scope_changes[JP_CHANGE_UNCHANGED], 3);
    assert_string_equal(d->scopes[0].category, "device");
    assert_string_equal(d->scopes[2].category, "host");
    assert_string_equal(d->scopes[2].name, "train_step");
    assert_string_equal(d->scopes[2].module, "");
    assert_near(d->scopes[2].base_total_ps, 9.5 * MS);
    assert_int_equal(d->n_findings, 0);
    char why[512];
    assert_int_equal(jp_diff_check(d, &STRICT, why, sizeof why), 0);
    assert_string_equal(why, "Within limits: step time changed +0.0% (10.00 \xE2\x86\x92 10.00 ms per step, "
                             "noise \xC2\xB1"
                             "0.0%), limit 5%; no op slower than the 10% limit beyond its noise.");
    jp_diff_free(d);
}

/* ---- slower, faster, added, removed ------------------------------------------------------- */

static void op_fifty_percent_slower(void **state) {
    (void)state;
    run b, n;
    model(&b, "base");
    model(&n, "new");
    n.ops[0].self_ps = 24 * MS; /* dot.3: 4 -> 6 ms per step */
    run_flat_steps(&n, 12 * MS, 4);
    jp_diff *d = diff_of(&b, &n, NULL);
    assert_near(d->steps.change_pct, 20);
    assert_true(d->steps.significant);
    const jp_diff_row *r = &d->ops[0];
    assert_string_equal(r->name, "dot.3");
    assert_int_equal(r->change, JP_CHANGE_SLOWER);
    assert_int_equal(r->match, JP_MATCH_NAME);
    assert_near(r->base_ps, 4.0 * MS);
    assert_near(r->new_ps, 6.0 * MS);
    assert_near(r->delta_ps, 2.0 * MS);
    assert_near(r->delta_pct, 50);
    assert_int_equal(d->op_changes[JP_CHANGE_SLOWER], 1);
    assert_int_equal(d->op_changes[JP_CHANGE_UNCHANGED], 2);
    const jp_diff_row *s = find_scope(d, "model/dense", "device");
    assert_int_equal(s->change, JP_CHANGE_UNCHANGED); /* the scope rows come from the scopes array */

    char why[512];
    jp_diff_gate ops_only = {-1, 10};
    assert_int_equal(jp_diff_check(d, &ops_only, why, sizeof why), 1);
    assert_string_equal(why, "Ops over the 10% limit: jit_f/dot.3 +2.00 ms/step (+50%).");
    jp_diff_gate lenient = {-1, 60};
    assert_int_equal(jp_diff_check(d, &lenient, why, sizeof why), 0);
    assert_non_null(strstr(why, "no op slower than the 60% limit"));
    jp_diff_gate steps_only = {5, -1};
    assert_int_equal(jp_diff_check(d, &steps_only, why, sizeof why), 1);
    assert_string_equal(why, "Step time rose 20.0% (10.00 \xE2\x86\x92 12.00 ms per step, noise \xC2\xB1"
                             "0.0%), over the 5% limit. Ops that got slower: jit_f/dot.3 +2.00 ms/step (+50%).");
    assert_int_equal(jp_diff_check(d, &STRICT, why, sizeof why), 1);
    assert_non_null(strstr(why, "Step time rose 20.0%"));
    assert_non_null(strstr(why, "Ops over the 10% limit: jit_f/dot.3"));
    jp_diff_gate off = {-1, -1};
    assert_int_equal(jp_diff_check(d, &off, why, sizeof why), 0);
    assert_int_equal(jp_diff_check(d, NULL, NULL, 0), 0);
    jp_diff_free(d);

    /* The other way round: faster, and no gate trips. */
    d = diff_of(&n, &b, NULL);
    assert_int_equal(d->ops[0].change, JP_CHANGE_FASTER);
    assert_near(d->ops[0].delta_ps, -2.0 * MS);
    assert_near(d->ops[0].delta_pct, -100.0 / 3);
    assert_int_equal(jp_diff_check(d, &STRICT, why, sizeof why), 0);
    assert_non_null(strstr(why, "step time changed -17%"));
    jp_diff_free(d);
}

/* An op's noise: two standard errors of its change from each run's own spread. With 4 steps a
 * side it is their spread per step; dot.3's +25 % (4 -> 5 ms per step) inside a noise of
 * 2 * sqrt(2^2 / 4 + 2^2 / 4) = 2.83 ms is unchanged and the op gate holds, while the same change
 * with a tenth of that spread (0.28 ms) is slower and trips it. */
static void op_within_its_noise_is_unchanged(void **state) {
    (void)state;
    run b, n;
    model(&b, "base");
    model(&n, "new");
    n.ops[0].self_ps = 20 * MS;
    b.ops[0].step_sd_ps = n.ops[0].step_sd_ps = 2.0 * MS;
    jp_diff *d = diff_of(&b, &n, NULL);
    const jp_diff_row *r = find_op(d, "dot.3");
    assert_near(r->delta_pct, 25);
    assert_near(r->noise_ps, 2 * sqrt(2.0) * MS);
    assert_int_equal(r->noise_basis, JP_NOISE_STEPS);
    assert_int_equal(r->change, JP_CHANGE_UNCHANGED);
    char why[512];
    jp_diff_gate ops_only = {-1, 20};
    assert_int_equal(jp_diff_check(d, &ops_only, why, sizeof why), 0);
    assert_non_null(strstr(why, "no op slower than the 20% limit beyond its noise"));
    jp_diff_free(d);

    b.ops[0].step_sd_ps = n.ops[0].step_sd_ps = 0.2 * MS;
    d = diff_of(&b, &n, NULL);
    r = find_op(d, "dot.3");
    assert_near(r->noise_ps, 0.2 * sqrt(2.0) * MS);
    assert_int_equal(r->change, JP_CHANGE_SLOWER);
    assert_int_equal(jp_diff_check(d, &ops_only, why, sizeof why), 1);
    assert_string_equal(why, "Ops over the 20% limit: jit_f/dot.3 +1.00 ms/step (+25%, noise \xC2\xB1" "7.1%).");
    jp_diff_free(d);
}

/* Under JP_NOISE_MIN_STEPS steps the noise comes from the op's executions, taken as independent:
 * 4 executions of 3, 5, 3, 5 ms (sample variance 4/3 ms^2) in one step are a sum of variance
 * 16/3 ms^2 a side, so the noise is 2 * sqrt(32/3) = 6.53 ms; one execution a side: unknown (0). */
static void op_noise_from_executions_with_few_steps(void **state) {
    (void)state;
    run b, n;
    run_init(&b, "base");
    run_init(&n, "new");
    run_flat_steps(&b, 20 * MS, 1);
    run_flat_steps(&n, 20 * MS, 1);
    jp_op_stat *ob = run_op(&b, "jit_f", "dot.3", "matmul", "jit(f)/dot_general", "m", 0, 4, 16 * MS);
    jp_op_stat *on = run_op(&n, "jit_f", "dot.3", "matmul", "jit(f)/dot_general", "m", 0, 4, 16 * MS + 4 * MS);
    ob->self_sumsq = (9.0 + 25 + 9 + 25) * MS * MS;
    on->self_sumsq = (4.0 * 25 + 3 * 4.0 / 3) * MS * MS; /* 4 executions of mean 5 ms, variance 4/3 ms^2 */
    run_op(&b, "jit_f", "once", "loop fusion", "jit(f)/add", "m", 0, 1, 2 * MS);
    run_op(&n, "jit_f", "once", "loop fusion", "jit(f)/add", "m", 0, 1, 4 * MS);
    jp_diff *d = diff_of(&b, &n, NULL);
    const jp_diff_row *r = find_op(d, "dot.3");
    assert_int_equal(r->noise_basis, JP_NOISE_EXECUTIONS);
    assert_near(r->noise_ps, 2 * sqrt(32.0 / 3) * MS);
    assert_int_equal(r->change, JP_CHANGE_UNCHANGED); /* +25 %, 4 ms inside 6.53 ms */
    r = find_op(d, "once");
    assert_int_equal(r->noise_basis, JP_NOISE_NONE);
    assert_near(r->noise_ps, 0);
    assert_int_equal(r->change, JP_CHANGE_SLOWER); /* no spread known: the thresholds alone */
    assert_string_equal(jp_noise_basis_name(JP_NOISE_STEPS), "steps");
    assert_string_equal(jp_noise_basis_name(JP_NOISE_EXECUTIONS), "executions");
    assert_string_equal(jp_noise_basis_name(JP_NOISE_NONE), "none");
    jp_diff_free(d);
}

static void added_and_removed(void **state) {
    (void)state;
    run b, n;
    model(&b, "base");
    model(&n, "new");
    run_op(&b, "jit_f", "gather.4", "gather", "jit(f)/gather", "model/embed", 0, 4, 2 * MS);
    run_op(&n, "jit_f", "sort.9", "sort", "jit(f)/sort", "model/topk", 0, 4, 3 * MS);
    jp_diff *d = diff_of(&b, &n, NULL);
    assert_int_equal(d->n_ops, 5);
    assert_int_equal(d->op_changes[JP_CHANGE_ADDED], 1);
    assert_int_equal(d->op_changes[JP_CHANGE_REMOVED], 1);
    assert_int_equal(d->op_matches[JP_MATCH_NONE], 2);
    assert_int_equal(d->op_matches[JP_MATCH_NAME], 3);
    /* |delta| 0.75 ms (added) before 0.5 ms (removed), then the unchanged rows. */
    assert_string_equal(d->ops[0].name, "sort.9");
    assert_int_equal(d->ops[0].change, JP_CHANGE_ADDED);
    assert_int_equal(d->ops[0].match, JP_MATCH_NONE);
    assert_string_equal(d->ops[0].base_name, "");
    assert_near(d->ops[0].new_ps, 0.75 * MS);
    assert_near(d->ops[0].delta_ps, 0.75 * MS);
    assert_near(d->ops[0].delta_pct, 0);
    assert_string_equal(d->ops[1].name, "gather.4");
    assert_string_equal(d->ops[1].base_name, "gather.4");
    assert_int_equal(d->ops[1].change, JP_CHANGE_REMOVED);
    assert_near(d->ops[1].delta_ps, -0.5 * MS);
    assert_near(d->ops[1].new_ps, 0);
    assert_string_equal(d->ops[1].scope, "model/embed");
    for (size_t i = 2; i < d->n_ops; i++) assert_int_equal(d->ops[i].change, JP_CHANGE_UNCHANGED);
    char why[512];
    assert_int_equal(jp_diff_check(d, &STRICT, why, sizeof why), 1);
    assert_string_equal(why, "Ops over the 10% limit: added: jit_f/sort.9 0.75 ms/step.");
    jp_diff_free(d);

    /* An added op under min_share_pct of the step does not trip the gate. */
    n.ops[n.a.n_ops - 1].self_ps = MS / 10; /* 0.025 ms per step < 0.05 ms */
    d = diff_of(&b, &n, NULL);
    assert_int_equal(find_op(d, "sort.9")->change, JP_CHANGE_ADDED);
    assert_int_equal(jp_diff_check(d, &STRICT, why, sizeof why), 0);
    jp_diff_free(d);
}

/* A 100% change of a tiny op is under the share threshold; a 4% change of a big one under the
 * percentage threshold. Lower thresholds in the options turn both into changes. */
static void thresholds(void **state) {
    (void)state;
    run b, n;
    model(&b, "base");
    model(&n, "new");
    run_op(&b, "jit_f", "tiny.1", "elementwise", "jit(f)/neg", "", 0, 4, MS / 25); /* 0.01 ms per step */
    run_op(&n, "jit_f", "tiny.1", "elementwise", "jit(f)/neg", "", 0, 4, MS / 25 * 2);
    n.ops[0].self_ps = 16 * MS + 16 * MS / 25; /* dot.3 +4% */
    jp_diff *d = diff_of(&b, &n, NULL);
    assert_int_equal(find_op(d, "tiny.1")->change, JP_CHANGE_UNCHANGED);
    assert_near(find_op(d, "tiny.1")->delta_pct, 100);
    assert_int_equal(find_op(d, "dot.3")->change, JP_CHANGE_UNCHANGED);
    assert_near(find_op(d, "dot.3")->delta_pct, 4);
    assert_int_equal(d->op_changes[JP_CHANGE_UNCHANGED], 4);
    /* Unchanged rows are still ordered by |delta|: dot.3 (+0.16 ms) before tiny.1 (+0.01 ms). */
    assert_string_equal(d->ops[0].name, "dot.3");
    assert_string_equal(d->ops[1].name, "tiny.1");
    char why[512];
    assert_int_equal(jp_diff_check(d, &STRICT, why, sizeof why), 0);
    jp_diff_free(d);

    jp_diff_options fine = {3, 0.05};
    d = diff_of(&b, &n, &fine);
    assert_near(d->options.min_change_pct, 3);
    assert_near(d->options.min_share_pct, 0.05);
    assert_int_equal(find_op(d, "tiny.1")->change, JP_CHANGE_SLOWER);
    assert_int_equal(find_op(d, "dot.3")->change, JP_CHANGE_SLOWER);
    assert_string_equal(d->ops[0].name, "dot.3");
    assert_string_equal(d->ops[1].name, "tiny.1");
    jp_diff_gate g = {-1, 10};
    assert_int_equal(jp_diff_check(d, &g, why, sizeof why), 1);
    assert_string_equal(why, "Ops over the 10% limit: jit_f/tiny.1 +10.0 \xC2\xB5s/step (+100%).");
    jp_diff_free(d);
}

/* ---- matching across renumbering ---------------------------------------------------------- */

static void renumbered_fusions_match_by_op_name(void **state) {
    (void)state;
    run b, n;
    model(&b, "base");
    model(&n, "new");
    n.ops[1].name = "fusion.14"; /* was fusion.1, same category and op_name */
    /* Two candidates with one op_name: paired by the closest count per step. */
    run_op(&b, "jit_f", "add_fusion.2", "loop fusion", "jit(f)/mul", "model", 0, 4, 4 * MS);
    run_op(&b, "jit_f", "add_fusion.3", "loop fusion", "jit(f)/mul", "model", 0, 8, 4 * MS);
    run_op(&n, "jit_f", "add_fusion.7", "loop fusion", "jit(f)/mul", "model", 0, 8, 4 * MS);
    run_op(&n, "jit_f", "add_fusion.9", "loop fusion", "jit(f)/mul", "model", 0, 4, 6 * MS);
    jp_diff *d = diff_of(&b, &n, NULL);
    const jp_diff_row *r = find_op(d, "fusion.14");
    assert_int_equal(r->match, JP_MATCH_OP_NAME);
    assert_int_equal(r->change, JP_CHANGE_UNCHANGED);
    assert_string_equal(r->base_name, "fusion.1");
    assert_near(r->base_ps, 2.0 * MS);
    r = find_op(d, "add_fusion.9");
    assert_int_equal(r->match, JP_MATCH_OP_NAME);
    assert_string_equal(r->base_name, "add_fusion.2");
    assert_int_equal(r->change, JP_CHANGE_SLOWER);
    assert_near(r->delta_pct, 50);
    r = find_op(d, "add_fusion.7");
    assert_string_equal(r->base_name, "add_fusion.3");
    assert_int_equal(r->change, JP_CHANGE_UNCHANGED);
    assert_int_equal(d->op_changes[JP_CHANGE_ADDED], 0);
    assert_int_equal(d->op_changes[JP_CHANGE_REMOVED], 0);
    assert_int_equal(d->op_matches[JP_MATCH_OP_NAME], 3);
    assert_int_equal(d->op_matches[JP_MATCH_NAME], 2);
    char why[512];
    jp_diff_gate g = {-1, 10};
    assert_int_equal(jp_diff_check(d, &g, why, sizeof why), 1);
    assert_string_equal(why, "Ops over the 10% limit: jit_f/add_fusion.9 (was add_fusion.2) +0.50 ms/step (+50%).");
    jp_diff_free(d);

    /* The op_name fallback stays within a module and a category. */
    model(&n, "new");
    n.ops[1].name = "fusion.14";
    n.ops[1].module = "jit_h";
    d = diff_of(&b, &n, NULL);
    assert_int_equal(find_module_op(d, "jit_h", "fusion.14")->change, JP_CHANGE_ADDED);
    assert_int_equal(find_op(d, "fusion.1")->change, JP_CHANGE_REMOVED);
    jp_diff_free(d);
}

static void renamed_ops_match_by_shape(void **state) {
    (void)state;
    run b, n;
    run_init(&b, "base");
    run_init(&n, "new");
    run_flat_steps(&b, 10 * MS, 4);
    run_flat_steps(&n, 10 * MS, 4);
    /* No op_name: paired by category, scope and count per step (within 10%), closest time. */
    run_op(&b, "jit_f", "fusion.3", "loop fusion", "", "model/layer", 0, 40, 4 * MS);
    run_op(&b, "jit_f", "fusion.4", "loop fusion", "", "model/layer", 0, 40, 12 * MS);
    run_op(&n, "jit_f", "fusion.5", "loop fusion", "", "model/layer", 0, 44, 11 * MS); /* +10% count */
    run_op(&n, "jit_f", "fusion.6", "loop fusion", "", "model/layer", 0, 40, 4 * MS);
    /* Count per step 2 vs 3: too far apart for a shape match. */
    run_op(&b, "jit_f", "reduce.1", "reduction", "", "model", 0, 8, 4 * MS);
    run_op(&n, "jit_f", "reduce.2", "reduction", "", "model", 0, 12, 4 * MS);
    /* Same count but another scope. */
    run_op(&b, "jit_f", "copy.1", "copy", "", "model/a", 0, 4, 4 * MS);
    run_op(&n, "jit_f", "copy.7", "copy", "", "model/b", 0, 4, 4 * MS);
    jp_diff *d = diff_of(&b, &n, NULL);
    const jp_diff_row *r = find_op(d, "fusion.6");
    assert_int_equal(r->match, JP_MATCH_SHAPE);
    assert_string_equal(r->base_name, "fusion.3");
    assert_int_equal(r->change, JP_CHANGE_UNCHANGED);
    r = find_op(d, "fusion.5");
    assert_int_equal(r->match, JP_MATCH_SHAPE);
    assert_string_equal(r->base_name, "fusion.4");
    assert_near(r->base_count, 10);
    assert_near(r->new_count, 11);
    assert_near(r->delta_pct, -100.0 / 12);
    assert_int_equal(r->change, JP_CHANGE_FASTER);
    assert_int_equal(find_op(d, "reduce.2")->change, JP_CHANGE_ADDED);
    assert_int_equal(find_op(d, "reduce.1")->change, JP_CHANGE_REMOVED);
    assert_int_equal(find_op(d, "copy.7")->change, JP_CHANGE_ADDED);
    assert_int_equal(find_op(d, "copy.1")->change, JP_CHANGE_REMOVED);
    assert_int_equal(d->op_matches[JP_MATCH_SHAPE], 2);
    assert_int_equal(d->op_matches[JP_MATCH_NONE], 4);
    jp_diff_free(d);
}

/* Exact names win over the fallbacks; an op_name pairing is tried before a shape one. */
static void passes_in_order(void **state) {
    (void)state;
    run b, n;
    run_init(&b, "base");
    run_init(&n, "new");
    run_op(&b, "m", "a.1", "loop fusion", "jit(f)/x", "s", 0, 4, 4 * MS);
    run_op(&b, "m", "b.1", "loop fusion", "jit(f)/y", "s", 0, 4, 4 * MS);
    run_op(&b, "m", "e.1", "loop fusion", "jit(f)/z", "t", 0, 4, 4 * MS);
    run_op(&n, "m", "a.1", "loop fusion", "jit(f)/y", "s", 0, 4, 4 * MS); /* b.1's op_name under a.1's name */
    run_op(&n, "m", "c.1", "loop fusion", "", "s", 0, 4, 4 * MS);         /* shape of a.1 */
    run_op(&n, "m", "d.1", "loop fusion", "jit(f)/y", "s", 0, 9, 4 * MS); /* op_name of b.1, farther count */
    run_op(&n, "m", "e.1", "loop fusion", "jit(f)/w", "u", 0, 1, 4 * MS); /* only the name is left */
    jp_diff *d = diff_of(&b, &n, NULL);
    assert_int_equal(find_op(d, "a.1")->match, JP_MATCH_OP_NAME);
    assert_string_equal(find_op(d, "a.1")->base_name, "b.1");
    assert_int_equal(find_op(d, "c.1")->match, JP_MATCH_SHAPE);
    assert_string_equal(find_op(d, "c.1")->base_name, "a.1");
    assert_int_equal(find_op(d, "d.1")->change, JP_CHANGE_ADDED);
    assert_int_equal(find_op(d, "e.1")->match, JP_MATCH_NAME);
    /* No steps: the span (0 here) is one step, so every change passes the share threshold. */
    assert_int_equal(d->steps.base_n, 1);
    jp_diff_free(d);
}

/* After a code change XLA may hand an old name to new code: "ynn_fusion" moved from forward to
 * the new extra scope while forward's fusion became "ynn_fusion.1". The op_name keeps them apart. */
static void reused_name_pairs_by_source(void **state) {
    (void)state;
    run b, n;
    model(&b, "base");
    model(&n, "new");
    run_op(&b, "jit_f", "ynn_fusion", "loop fusion", "jit(f)/forward/dot", "forward", 0, 4, 4 * MS);
    run_op(&n, "jit_f", "ynn_fusion", "loop fusion", "jit(f)/extra/dot", "extra", 0, 4, 3 * MS);
    run_op(&n, "jit_f", "ynn_fusion.1", "loop fusion", "jit(f)/forward/dot", "forward", 0, 4, 4 * MS);
    jp_diff *d = diff_of(&b, &n, NULL);
    const jp_diff_row *r = find_op(d, "ynn_fusion.1");
    assert_int_equal(r->match, JP_MATCH_OP_NAME);
    assert_string_equal(r->base_name, "ynn_fusion");
    assert_int_equal(r->change, JP_CHANGE_UNCHANGED);
    r = find_op(d, "ynn_fusion");
    assert_int_equal(r->change, JP_CHANGE_ADDED);
    assert_string_equal(r->scope, "extra");
    assert_int_equal(d->op_changes[JP_CHANGE_REMOVED], 0);
    jp_diff_free(d);
}

/* With nothing better for it, a name whose op_name changed still pairs by name. */
static void conflicting_op_name_falls_back_to_name(void **state) {
    (void)state;
    run b, n;
    model(&b, "base");
    model(&n, "new");
    run_op(&b, "jit_f", "copy.1", "data formatting", "jit(f)/a/copy", "a", 0, 4, 4 * MS);
    run_op(&n, "jit_f", "copy.1", "data formatting", "jit(f)/b/copy", "b", 0, 1, 4 * MS);
    jp_diff *d = diff_of(&b, &n, NULL);
    const jp_diff_row *r = find_op(d, "copy.1");
    assert_int_equal(r->match, JP_MATCH_NAME);
    assert_string_equal(r->base_name, "copy.1");
    assert_int_equal(d->op_changes[JP_CHANGE_ADDED], 0);
    jp_diff_free(d);
}

/* ---- layers renumbered by an insertion (Flax) ---------------------------------------------- */

/* One Dense layer of an MLP in a training step: its forward and gradient matmuls (4 per run,
 * flops each), named by XLA as given, under "f/MLP/<layer>" with the layer's scope row. */
static void dense(run *r, const char *layer, const char *op_name_fwd, const char *op_name_bwd, const char *fwd,
                  const char *bwd, double flops, int64_t self_ps) {
    char scope[64];
    snprintf(scope, sizeof scope, "f/MLP/%s", layer);
    /* Scope strings must outlive the run: keep them in the run's own scope rows' storage. */
    jp_scope_stat *row = &r->scopes[r->a.n_scopes];
    run_scope(r, "", JP_SCOPE_DEVICE, 8, 2 * self_ps, 2 * self_ps);
    char *path = malloc(strlen(scope) + 1);
    assert_non_null(path);
    strcpy(path, scope);
    row->path = path;
    jp_op_stat *op = run_op(r, "jit_f", fwd, "matmul", op_name_fwd, path, 0, 4, self_ps);
    op->flops = 4 * flops;
    op->bytes = 4 * flops / 8;
    op = run_op(r, "jit_f", bwd, "matmul", op_name_bwd, path, 0, 4, self_ps);
    op->flops = 4 * flops;
    op->bytes = 4 * flops / 8;
}

#define FWD(L) "jit(f)/jvp(MLP)/" L "/dot_general"
#define BWD(L) "jit(f)/transpose(jvp(MLP))/" L "/dot_general"
#define DENSE(R, L, A, B, FLOPS, T) dense(R, L, FWD(L), BWD(L), A, B, FLOPS, T)

static void run_free_paths(run *r) {
    for (size_t i = 0; i < r->a.n_scopes; i++)
        if (strncmp(r->scopes[i].path, "f/MLP/", 6) == 0) free((void *)(uintptr_t)r->scopes[i].path);
}

/* The row of a new run's op (a removed base op may carry the same name). */
static const jp_diff_row *find_new_op(const jp_diff *d, const char *name) {
    for (size_t i = 0; i < d->n_ops; i++)
        if (strcmp(d->ops[i].name, name) == 0 && d->ops[i].change != JP_CHANGE_REMOVED) return &d->ops[i];
    fail_msg("no new op row %s", name);
    return NULL;
}

/* The base op a new op was paired with, by names, or fails. */
static void assert_paired(const jp_diff *d, const char *name, const char *base_name, int match) {
    const jp_diff_row *r = find_new_op(d, name);
    if (strcmp(r->base_name, base_name) != 0) fail_msg("%s paired with '%s', want %s", name, r->base_name, base_name);
    assert_int_equal(r->match, match);
}

/* A 3-layer MLP (widths give 3, 2 and 1 MFLOP per matmul) and the same with a 1.5 MFLOP layer
 * inserted as Dense_1: Flax renumbers Dense_1 -> Dense_2 and Dense_2 -> Dense_3, and XLA hands the
 * old names to other layers' ops. The layers pair by what they compute; the inserted one is added. */
static void inserted_layer_renumbers_the_rest(void **state) {
    (void)state;
    run b, n;
    run_init(&b, "base");
    run_init(&n, "new");
    run_flat_steps(&b, 10 * MS, 4);
    run_flat_steps(&n, 10 * MS, 4);
    DENSE(&b, "Dense_0", "dot", "dot.3", 3e6, 4 * MS);
    DENSE(&b, "Dense_1", "dot.1", "dot.4", 2e6, 2 * MS);
    DENSE(&b, "Dense_2", "dot.2", "dot.5", 1e6, MS);
    DENSE(&n, "Dense_0", "dot", "dot.4", 3e6, 4 * MS);
    DENSE(&n, "Dense_1", "dot.1", "dot.5", 1.5e6, 3 * MS); /* inserted */
    DENSE(&n, "Dense_2", "dot.2", "dot.6", 2e6, 2 * MS);
    DENSE(&n, "Dense_3", "dot.3", "dot.7", 1e6, MS);
    jp_diff *d = diff_of(&b, &n, NULL);
    assert_paired(d, "dot", "dot", JP_MATCH_NAME);
    assert_paired(d, "dot.4", "dot.3", JP_MATCH_OP_NAME);
    assert_paired(d, "dot.2", "dot.1", JP_MATCH_OP_NAME); /* Dense_1 is Dense_2 now */
    assert_paired(d, "dot.6", "dot.4", JP_MATCH_OP_NAME);
    assert_paired(d, "dot.3", "dot.2", JP_MATCH_OP_NAME); /* Dense_2 is Dense_3 now */
    assert_paired(d, "dot.7", "dot.5", JP_MATCH_OP_NAME);
    assert_int_equal(find_op(d, "dot.1")->change, JP_CHANGE_ADDED); /* the inserted layer */
    assert_int_equal(find_op(d, "dot.5")->change, JP_CHANGE_ADDED);
    assert_int_equal(d->op_changes[JP_CHANGE_ADDED], 2);
    assert_int_equal(d->op_changes[JP_CHANGE_REMOVED], 0);
    assert_int_equal(d->op_changes[JP_CHANGE_UNCHANGED], 6); /* the same work takes the same time */
    /* The scope rows follow: each old layer's row pairs with its new number, shown with its old path. */
    const jp_diff_row *s = find_scope(d, "f/MLP/Dense_3", "device");
    assert_string_equal(s->base_name, "f/MLP/Dense_2");
    assert_int_equal(s->change, JP_CHANGE_UNCHANGED);
    assert_string_equal(find_scope(d, "f/MLP/Dense_2", "device")->base_name, "f/MLP/Dense_1");
    assert_int_equal(find_scope(d, "f/MLP/Dense_1", "device")->change, JP_CHANGE_ADDED);
    assert_int_equal(find_scope(d, "f/MLP/Dense_0", "device")->match, JP_MATCH_NAME);
    assert_int_equal(d->scope_changes[JP_CHANGE_ADDED], 1);
    assert_int_equal(d->scope_changes[JP_CHANGE_REMOVED], 0);
    jp_diff_free(d);

    /* The other way round the layer is removed, and the rest go back to their old numbers. */
    d = diff_of(&n, &b, NULL);
    assert_paired(d, "dot.1", "dot.2", JP_MATCH_OP_NAME);
    assert_paired(d, "dot.2", "dot.3", JP_MATCH_OP_NAME);
    assert_int_equal(d->op_changes[JP_CHANGE_REMOVED], 2);
    assert_int_equal(d->op_changes[JP_CHANGE_ADDED], 0);
    const jp_diff_row *gone = find_scope(d, "f/MLP/Dense_1", "device");
    assert_int_equal(gone->change, JP_CHANGE_REMOVED); /* not the old Dense_2, which is Dense_1 now */
    assert_string_equal(find_scope(d, "f/MLP/Dense_2", "device")->base_name, "f/MLP/Dense_3");
    jp_diff_free(d);
    run_free_paths(&b);
    run_free_paths(&n);
}

/* A layer that changed size in place keeps its number: nothing else in the run computes what it
 * did before, so it is the same layer, slower. An identical layer inserted beside an identical one
 * cannot be told apart: the one that kept its number is the old one. */
static void layer_changed_in_place_keeps_its_number(void **state) {
    (void)state;
    run b, n;
    run_init(&b, "base");
    run_init(&n, "new");
    run_flat_steps(&b, 10 * MS, 4);
    run_flat_steps(&n, 10 * MS, 4);
    DENSE(&b, "Dense_0", "dot", "dot.3", 3e6, 4 * MS);
    DENSE(&b, "Dense_1", "dot.1", "dot.4", 2e6, 2 * MS);
    DENSE(&b, "Dense_2", "dot.2", "dot.5", 1e6, MS);
    DENSE(&n, "Dense_0", "dot", "dot.3", 3e6, 4 * MS);
    DENSE(&n, "Dense_1", "dot.1", "dot.4", 4e6, 4 * MS); /* twice as wide */
    DENSE(&n, "Dense_2", "dot.2", "dot.5", 1e6, MS);
    jp_diff *d = diff_of(&b, &n, NULL);
    assert_paired(d, "dot.1", "dot.1", JP_MATCH_NAME);
    assert_int_equal(find_op(d, "dot.1")->change, JP_CHANGE_SLOWER);
    assert_int_equal(d->op_matches[JP_MATCH_NAME], 6);
    assert_int_equal(find_scope(d, "f/MLP/Dense_1", "device")->change, JP_CHANGE_SLOWER);
    jp_diff_free(d);
    run_free_paths(&b);
    run_free_paths(&n);

    run_init(&b, "base");
    run_init(&n, "new");
    DENSE(&b, "Dense_0", "dot", "dot.2", 2e6, 2 * MS);
    DENSE(&b, "Dense_1", "dot.1", "dot.3", 1e6, MS);
    DENSE(&n, "Dense_0", "dot", "dot.3", 2e6, 2 * MS);
    DENSE(&n, "Dense_1", "dot.1", "dot.4", 2e6, 2 * MS); /* a copy of Dense_0 */
    DENSE(&n, "Dense_2", "dot.2", "dot.5", 1e6, MS);
    d = diff_of(&b, &n, NULL);
    assert_paired(d, "dot", "dot", JP_MATCH_NAME);
    assert_paired(d, "dot.2", "dot.1", JP_MATCH_OP_NAME);
    assert_int_equal(find_op(d, "dot.1")->change, JP_CHANGE_ADDED);
    assert_int_equal(find_op(d, "dot.4")->change, JP_CHANGE_ADDED);
    jp_diff_free(d);
    run_free_paths(&b);
    run_free_paths(&n);
}

/* Blocks renumbered, with layers inside them: the block is mapped first, then its Dense_N are
 * grouped under the new block's path. */
static void nested_layers_follow_their_block(void **state) {
    (void)state;
    run b, n;
    run_init(&b, "base");
    run_init(&n, "new");
    static const char *const op_names[] = {
        "jit(f)/Block_0/Dense_0/dot_general", "jit(f)/Block_0/Dense_1/dot_general",
        "jit(f)/Block_1/Dense_0/dot_general", "jit(f)/Block_1/Dense_1/dot_general",
        "jit(f)/Block_2/Dense_0/dot_general", "jit(f)/Block_2/Dense_1/dot_general"};
    static const char *const scopes[] = {"f/Block_0/Dense_0", "f/Block_0/Dense_1", "f/Block_1/Dense_0",
                                         "f/Block_1/Dense_1", "f/Block_2/Dense_0", "f/Block_2/Dense_1"};
    static const double flops[] = {1e6, 2e6, 3e6, 4e6, 5e6, 6e6};
    static const char *const names[] = {"dot", "dot.1", "dot.2", "dot.3", "dot.4", "dot.5"};
    /* base: blocks A (1, 2 MFLOP) and B (3, 4); new: C (5, 6) inserted before them. */
    for (size_t i = 0; i < 4; i++)
        run_op(&b, "jit_f", names[i], "matmul", op_names[i], scopes[i], 0, 1, MS)->flops = flops[i];
    for (size_t i = 0; i < 6; i++) {
        size_t what = i < 2 ? i + 4 : i - 2; /* new Block_0 is C, Block_1 is A, Block_2 is B */
        run_op(&n, "jit_f", names[i], "matmul", op_names[i], scopes[i], 0, 1, MS)->flops = flops[what];
    }
    run_scope(&b, "f/Block_0", JP_SCOPE_DEVICE, 2, 0, 2 * MS);
    run_scope(&b, "f/Block_0/Dense_1", JP_SCOPE_DEVICE, 1, MS, MS);
    run_scope(&n, "f/Block_1", JP_SCOPE_DEVICE, 2, 0, 2 * MS);
    run_scope(&n, "f/Block_1/Dense_1", JP_SCOPE_DEVICE, 1, MS, MS);
    run_scope(&n, "f/Block_0", JP_SCOPE_DEVICE, 2, 0, 2 * MS);
    jp_diff *d = diff_of(&b, &n, NULL);
    assert_paired(d, "dot.2", "dot", JP_MATCH_OP_NAME);
    assert_paired(d, "dot.3", "dot.1", JP_MATCH_OP_NAME);
    assert_paired(d, "dot.4", "dot.2", JP_MATCH_OP_NAME);
    assert_paired(d, "dot.5", "dot.3", JP_MATCH_OP_NAME);
    assert_int_equal(find_op(d, "dot")->change, JP_CHANGE_ADDED);
    assert_int_equal(find_op(d, "dot.1")->change, JP_CHANGE_ADDED);
    assert_string_equal(find_scope(d, "f/Block_1", "device")->base_name, "f/Block_0");
    assert_string_equal(find_scope(d, "f/Block_1/Dense_1", "device")->base_name, "f/Block_0/Dense_1");
    assert_int_equal(find_scope(d, "f/Block_0", "device")->change, JP_CHANGE_ADDED);
    jp_diff_free(d);
}

/* The bare name is the last resort, and never pairs an op of a new scope with one whose scope is
 * still there (that op was handed to other code); between a scope gone and one new it still does
 * (a renamed scope: conflicting_op_name_falls_back_to_name). */
static void op_of_a_new_scope_is_added(void **state) {
    (void)state;
    run b, n;
    model(&b, "base");
    model(&n, "new");
    run_op(&b, "jit_f", "copy.1", "data formatting", "jit(f)/dense/copy", "model/dense", 0, 4, 4 * MS);
    run_op(&n, "jit_f", "copy.1", "data formatting", "jit(f)/extra/copy", "model/extra", 0, 1, 4 * MS);
    jp_diff *d = diff_of(&b, &n, NULL);
    const jp_diff_row *r = find_op(d, "copy.1");
    assert_int_equal(r->change, JP_CHANGE_ADDED);
    assert_string_equal(r->scope, "model/extra");
    assert_int_equal(d->op_changes[JP_CHANGE_REMOVED], 1);
    jp_diff_free(d);
}

/* XLA swapped two names of one op_name: the shapes (FLOPs per occurrence) tell them apart. */
static void same_op_name_pairs_by_shape(void **state) {
    (void)state;
    run b, n;
    model(&b, "base");
    model(&n, "new");
    run_op(&b, "jit_f", "relu.1", "loop fusion", "jit(f)/relu/max", "model", 0, 4, 4 * MS)->flops = 4e3;
    run_op(&b, "jit_f", "relu.2", "loop fusion", "jit(f)/relu/max", "model", 0, 4, 2 * MS)->flops = 2e3;
    run_op(&n, "jit_f", "relu.1", "loop fusion", "jit(f)/relu/max", "model", 0, 4, 2 * MS)->flops = 2e3;
    run_op(&n, "jit_f", "relu.2", "loop fusion", "jit(f)/relu/max", "model", 0, 4, 4 * MS)->flops = 4e3;
    jp_diff *d = diff_of(&b, &n, NULL);
    assert_paired(d, "relu.1", "relu.2", JP_MATCH_OP_NAME);
    assert_paired(d, "relu.2", "relu.1", JP_MATCH_OP_NAME);
    assert_int_equal(find_op(d, "relu.1")->change, JP_CHANGE_UNCHANGED);
    jp_diff_free(d);
}

static void renumbered_module(void **state) {
    (void)state;
    run b, n;
    model(&b, "base");
    model(&n, "new");
    for (size_t i = 0; i < 2; i++) {
        b.ops[i].module = "jit_f.1";
        n.ops[i].module = "jit_f.2";
    }
    jp_diff *d = diff_of(&b, &n, NULL);
    assert_int_equal(d->n_ops, 3);
    assert_int_equal(d->op_matches[JP_MATCH_NAME], 3);
    assert_string_equal(find_op(d, "dot.3")->module, "jit_f.2");
    jp_diff_free(d);

    /* Without a suffix on one side. */
    for (size_t i = 0; i < 2; i++) b.ops[i].module = "jit_f";
    d = diff_of(&b, &n, NULL);
    assert_int_equal(d->op_matches[JP_MATCH_NAME], 3);
    jp_diff_free(d);

    /* Ambiguous: two new modules share the stem, so nothing is mapped. */
    n.ops[1].module = "jit_f.3";
    d = diff_of(&b, &n, NULL);
    assert_int_equal(find_module_op(d, "jit_f.2", "dot.3")->change, JP_CHANGE_ADDED);
    assert_int_equal(find_module_op(d, "jit_f", "dot.3")->change, JP_CHANGE_REMOVED);
    assert_int_equal(d->op_changes[JP_CHANGE_REMOVED], 2);
    jp_diff_free(d);
}

/* A multi-GPU profile lists each op once per device: one row, times summed. */
static void devices_are_summed(void **state) {
    (void)state;
    run b, n;
    run_init(&b, "base");
    run_init(&n, "new");
    run_flat_steps(&b, 10 * MS, 2);
    run_flat_steps(&n, 10 * MS, 2);
    run_op(&b, "jit_f", "dot.3", "matmul", "jit(f)/dot", "m", 0, 2, 2 * MS);
    run_op(&b, "jit_f", "dot.3", "matmul", "jit(f)/dot", "m", 1, 2, 2 * MS);
    run_op(&b, "jit_f", "dot.3", "matmul", "jit(f)/dot", "m", 2, 2, 2 * MS);
    run_op(&n, "jit_f", "dot.3", "matmul", "jit(f)/dot", "m", 1, 2, 4 * MS);
    run_op(&n, "jit_f", "dot.3", "matmul", "jit(f)/dot", "m", 0, 2, 4 * MS);
    jp_diff *d = diff_of(&b, &n, NULL);
    assert_int_equal(d->n_ops, 1);
    const jp_diff_row *r = &d->ops[0];
    assert_near(r->base_ps, 3.0 * MS);
    assert_near(r->new_ps, 4.0 * MS);
    assert_near(r->base_count, 3);
    assert_near(r->new_count, 2);
    assert_near(r->base_total_ps, 3.3 * MS);
    assert_int_equal(r->change, JP_CHANGE_SLOWER);
    jp_diff_free(d);
}

/* Thousands of leftovers in one group (every op renamed, no op_name): paired by rank, fast. */
static void big_groups_pair_by_rank(void **state) {
    (void)state;
    enum { N = 3000 };
    jp_op_stat *bo = calloc(N, sizeof *bo), *no = calloc(N, sizeof *no);
    char(*names)[16] = calloc(2 * N, sizeof *names);
    assert_true(bo && no && names);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], 16, "fusion.%d", i);
        snprintf(names[N + i], 16, "fusion.%d", N + i);
        int64_t t = (int64_t)(i + 1) * 1000;
        bo[i] = (jp_op_stat){.module = "m", .name = names[i], .category = "loop fusion", .op_name = "", .scope = "s",
                             .source = "", .function = "", .count = (uint64_t)(1 + i % 7), .total_ps = t,
                             .self_ps = t, .min_ps = t, .max_ps = t, .n_devices = 1};
        no[i] = bo[i];
        no[i].name = names[N + i];
    }
    jp_analysis a = {.path = "b", .ops = bo, .n_ops = N}, c = {.path = "n", .ops = no, .n_ops = N};
    jp_diff *d = NULL;
    assert_int_equal(jp_diff_new(&d, &a, &c, NULL, NULL), JP_OK);
    assert_int_equal(d->n_ops, N);
    assert_int_equal(d->op_matches[JP_MATCH_SHAPE], N);
    assert_int_equal(d->op_changes[JP_CHANGE_UNCHANGED], N);
    for (size_t i = 0; i < d->n_ops; i++) assert_near(d->ops[i].delta_ps, 0);
    jp_diff_free(d);
    free(bo);
    free(no);
    free(names);
}

/* ---- steps -------------------------------------------------------------------------------- */

static void step_noise(void **state) {
    (void)state;
    static const int64_t base[] = {10000 * MS / 1000, 10500 * MS / 1000, 9500 * MS / 1000, 10200 * MS / 1000,
                                   9800 * MS / 1000};
    int64_t slower[5], slightly[5];
    for (int i = 0; i < 5; i++) {
        slightly[i] = base[i] / 100 * 101;
        slower[i] = base[i] / 10 * 12;
    }
    run b, n;
    run_init(&b, "base");
    run_steps(&b, base, 5);
    run_init(&n, "new");
    run_steps(&n, slightly, 5);
    /* Sample variances: base 0.145 ms^2, new 0.145 * 1.01^2; noise = 2 * sqrt(sum / 5) / 10 ms. */
    double vb = 0.145, vn = 0.145 * 1.01 * 1.01;
    jp_diff *d = diff_of(&b, &n, NULL);
    assert_near(d->steps.change_pct, 1);
    assert_near(d->steps.noise_pct, 2 * sqrt(vb / 5 + vn / 5) / 10 * 100);
    assert_true(d->steps.noise_pct > 4.8 && d->steps.noise_pct < 4.9);
    assert_false(d->steps.significant);
    assert_near(d->steps.base_median_ps, 10.0 * MS);
    assert_near(d->steps.new_p90_ps, 10.605 * MS);
    char why[512];
    jp_diff_gate g = {0.5, -1};
    assert_int_equal(jp_diff_check(d, &g, why, sizeof why), 0);
    assert_non_null(strstr(why, "within noise of the 0.5% limit"));
    jp_diff_free(d);

    run_steps(&n, slower, 5);
    d = diff_of(&b, &n, NULL);
    assert_near(d->steps.change_pct, 20);
    assert_true(d->steps.significant);
    assert_int_equal(jp_diff_check(d, &g, why, sizeof why), 1);
    assert_non_null(strstr(why, "Step time rose 20.0%"));
    assert_non_null(strstr(why, "No single op got slower beyond the thresholds"));
    jp_diff_free(d);

    /* One step on a side: no spread known, noise 0, any change significant. */
    run_init(&n, "new");
    run_steps(&n, slightly, 1);
    d = diff_of(&b, &n, NULL);
    assert_near(d->steps.noise_pct, 0);
    assert_true(d->steps.significant);
    assert_int_equal(d->steps.new_n, 1);
    jp_diff_free(d);
}

static void zero_step_runs(void **state) {
    (void)state;
    run b, n;
    run_init(&b, "base");
    run_init(&n, "new");
    b.a.span_ps = 50 * MS;
    n.a.span_ps = 60 * MS;
    run_op(&b, "jit_f", "dot.3", "matmul", "", "", 0, 3, 20 * MS);
    run_op(&n, "jit_f", "dot.3", "matmul", "", "", 0, 3, 30 * MS);
    jp_diff *d = diff_of(&b, &n, NULL);
    assert_int_equal(d->steps.base_n, 1);
    assert_int_equal(d->steps.new_n, 1);
    assert_near(d->steps.base_mean_ps, 50.0 * MS);
    assert_near(d->steps.new_median_ps, 60.0 * MS);
    assert_near(d->steps.new_p90_ps, 60.0 * MS);
    assert_near(d->steps.change_pct, 20);
    assert_near(d->steps.noise_pct, 0);
    assert_true(d->steps.significant);
    assert_near(d->steps.base_part_ps[JP_PART_COMPUTE], 0);
    assert_near(d->ops[0].base_ps, 20.0 * MS); /* the whole run is one step */
    assert_near(d->ops[0].base_count, 3);
    assert_int_equal(d->ops[0].change, JP_CHANGE_SLOWER);
    char why[512];
    assert_int_equal(jp_diff_check(d, &STRICT, why, sizeof why), 1);
    jp_diff_free(d);

    /* Empty analyses on both sides: nothing to compare, nothing trips. */
    run_init(&b, "base");
    run_init(&n, "new");
    d = diff_of(&b, &n, NULL);
    assert_int_equal(d->n_ops, 0);
    assert_int_equal(d->n_scopes, 0);
    assert_near(d->steps.change_pct, 0);
    assert_false(d->steps.significant);
    assert_int_equal(jp_diff_check(d, &STRICT, why, sizeof why), 0);
    jp_diff_free(d);
}

/* ---- scopes and findings ------------------------------------------------------------------ */

static void scopes(void **state) {
    (void)state;
    run b, n;
    model(&b, "base");
    model(&n, "new");
    n.scopes[0].self_ps = 24 * MS; /* model/dense: 4 -> 6 ms per step */
    n.scopes[0].total_ps = 24 * MS;
    n.scopes[2].self_ps = 4 * MS; /* train_step (host): 0.5 -> 1 ms per step */
    run_scope(&n, "model/extra", JP_SCOPE_DEVICE, 4, MS, MS);
    run_scope(&b, "data_loader", JP_SCOPE_HOST, 4, 8 * MS, 8 * MS);
    jp_diff *d = diff_of(&b, &n, NULL);
    assert_int_equal(d->n_scopes, 5);
    static const char *const order[][2] = {{"model/dense", "slower"}, {"model/extra", "added"},
                                           {"model", "unchanged"},    {"data_loader", "removed"},
                                           {"train_step", "slower"}};
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(d->scopes[i].name, order[i][0]);
        assert_string_equal(jp_change_name(d->scopes[i].change), order[i][1]);
        assert_string_equal(d->scopes[i].category, i < 3 ? "device" : "host");
        assert_string_equal(d->scopes[i].module, "");
        assert_string_equal(d->scopes[i].scope, order[i][0]);
    }
    assert_int_equal(d->scopes[0].match, JP_MATCH_NAME);
    assert_near(d->scopes[0].delta_ps, 2.0 * MS);
    assert_near(d->scopes[0].delta_pct, 50);
    assert_near(d->scopes[4].delta_pct, 100);
    assert_int_equal(d->scopes[1].match, JP_MATCH_NONE);
    assert_string_equal(d->scopes[1].base_name, "");
    assert_int_equal(d->scope_changes[JP_CHANGE_SLOWER], 2);
    assert_int_equal(d->scope_changes[JP_CHANGE_ADDED], 1);
    assert_int_equal(d->scope_changes[JP_CHANGE_REMOVED], 1);
    assert_int_equal(d->scope_changes[JP_CHANGE_UNCHANGED], 1);
    /* A host and a device scope of one path are distinct rows. */
    jp_diff_free(d);
    run_scope(&b, "model", JP_SCOPE_HOST, 1, MS, MS);
    run_scope(&n, "model", JP_SCOPE_HOST, 1, MS, MS);
    d = diff_of(&b, &n, NULL);
    assert_int_equal(find_scope(d, "model", "host")->match, JP_MATCH_NAME);
    assert_near(find_scope(d, "model", "device")->base_total_ps, 6.0 * MS);
    assert_near(find_scope(d, "model", "host")->base_total_ps, 0.25 * MS);
    jp_diff_free(d);
}

static void findings(void **state) {
    (void)state;
    run b, n;
    model(&b, "base"); /* device_idle */
    model(&n, "new");
    run_finding(&b, "many_small_ops", JP_RATING_WARNING);
    n.a.n_findings = 0;
    run_finding(&n, "many_small_ops", JP_RATING_WARNING);
    run_finding(&n, "host_bound", JP_RATING_BAD);
    run_finding(&n, "host_bound", JP_RATING_BAD); /* listed twice: reported once */
    jp_diff *d = diff_of(&b, &n, NULL);
    assert_int_equal(d->n_findings, 2);
    assert_string_equal(d->findings[0].id, "host_bound");
    assert_string_equal(d->findings[0].title, "host_bound");
    assert_int_equal(d->findings[0].severity, JP_RATING_BAD);
    assert_int_equal(d->findings[0].appeared, 1);
    assert_string_equal(d->findings[1].id, "device_idle");
    assert_int_equal(d->findings[1].severity, JP_RATING_WARNING);
    assert_int_equal(d->findings[1].appeared, 0);
    jp_diff_free(d);
}

/* ---- the paragraph in a short buffer ------------------------------------------------------ */

/* Every capacity gives the same verdict and a NUL-terminated text: the full paragraph when it fits,
 * else a prefix of it that never ends inside a UTF-8 sequence followed by "..." (as much of it as
 * fits), the jp_text rule. */
static void truncated_why(void **state) {
    (void)state;
    run b, n;
    model(&b, "base");
    model(&n, "new");
    n.ops[0].self_ps = 24 * MS;
    run_flat_steps(&n, 12 * MS, 4);
    jp_diff *d = diff_of(&b, &n, NULL);
    char full[1024];
    assert_int_equal(jp_diff_check(d, &STRICT, full, sizeof full), 1);
    size_t len = strlen(full);
    assert_true(len > 100);
    assert_null(strchr(full, '\n'));
    char buf[1024];
    for (size_t cap = 1; cap <= len + 1; cap++) {
        memset(buf, 'x', sizeof buf);
        assert_int_equal(jp_diff_check(d, &STRICT, buf, cap), 1);
        size_t got = strlen(buf);
        assert_true(got < cap);
        assert_int_equal(buf[cap], 'x'); /* nothing written past cap */
        if (cap == len + 1) {
            assert_string_equal(buf, full);
            continue;
        }
        size_t mark = cap - 1 < 3 ? cap - 1 : 3, keep = got - mark;
        assert_true(got >= mark);
        assert_memory_equal(buf, full, keep);
        assert_memory_equal(buf + keep, "...", mark);
        assert_true(keep + 3 >= cap - 1 - mark);                     /* at most a partial sequence dropped */
        assert_true(((unsigned char)full[keep] & 0xC0) != 0x80); /* cut at a char start */
    }
    memset(buf, 'x', sizeof buf);
    assert_int_equal(jp_diff_check(d, &STRICT, buf, 0), 1);
    assert_int_equal(buf[0], 'x');
    assert_int_equal(jp_diff_check(d, &STRICT, NULL, 100), 1);
    jp_diff_free(d);
}

/* ---- the committed capture ---------------------------------------------------------------- */

static void capture_with_itself(void **state) {
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", JP_TEST_DATA, "cpu_small.xplane.pb.gz");
    jp_profile *p = NULL, *q = NULL;
    jp_error err;
    jp_load_options opt = {.op_spread = 1}; /* as jaxprof diff loads */
    if (jp_profile_load(&p, path, &opt, &err)) fail_msg("%s", err.msg);
    if (jp_profile_load(&q, path, &opt, &err)) fail_msg("%s", err.msg);
    const jp_analysis *a = jp_profile_analysis(p);
    assert_int_equal(a->n_ops, 2);   /* the fixture's two ops, three steps, 15 scopes */
    assert_int_equal(a->n_steps, 3);
    jp_diff *d = NULL;
    assert_int_equal(jp_diff_new(&d, a, jp_profile_analysis(q), NULL, &err), JP_OK);
    assert_int_equal(d->steps.base_n, a->n_steps);
    assert_near(d->steps.base_mean_ps, a->step_summary.mean_ps);
    assert_near(d->steps.change_pct, 0);
    assert_false(d->steps.significant);
    assert_int_equal(d->n_ops, a->n_ops); /* every op pairs with itself */
    assert_int_equal(d->op_changes[JP_CHANGE_UNCHANGED], d->n_ops);
    assert_int_equal(d->op_matches[JP_MATCH_NAME], d->n_ops);
    assert_int_equal(d->n_scopes, a->n_scopes);
    assert_int_equal(d->scope_changes[JP_CHANGE_UNCHANGED], d->n_scopes);
    assert_int_equal(d->n_findings, 0);
    double self = 0;
    for (size_t i = 0; i < d->n_ops; i++) self += d->ops[i].base_ps * (double)a->n_steps;
    assert_near(self, (double)a->op_self_ps);
    char why[512];
    jp_diff_gate zero = {0, 0};
    assert_int_equal(jp_diff_check(d, &zero, why, sizeof why), 0);
    assert_non_null(strstr(why, "Within limits"));
    jp_diff_free(d);
    jp_profile_free(p);
    jp_profile_free(q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names),
        cmocka_unit_test(bad_arguments),
        cmocka_unit_test(identical_runs_are_unchanged),
        cmocka_unit_test(op_fifty_percent_slower),
        cmocka_unit_test(op_within_its_noise_is_unchanged),
        cmocka_unit_test(op_noise_from_executions_with_few_steps),
        cmocka_unit_test(added_and_removed),
        cmocka_unit_test(thresholds),
        cmocka_unit_test(renumbered_fusions_match_by_op_name),
        cmocka_unit_test(renamed_ops_match_by_shape),
        cmocka_unit_test(passes_in_order),
        cmocka_unit_test(reused_name_pairs_by_source),
        cmocka_unit_test(conflicting_op_name_falls_back_to_name),
        cmocka_unit_test(inserted_layer_renumbers_the_rest),
        cmocka_unit_test(layer_changed_in_place_keeps_its_number),
        cmocka_unit_test(nested_layers_follow_their_block),
        cmocka_unit_test(op_of_a_new_scope_is_added),
        cmocka_unit_test(same_op_name_pairs_by_shape),
        cmocka_unit_test(renumbered_module),
        cmocka_unit_test(devices_are_summed),
        cmocka_unit_test(big_groups_pair_by_rank),
        cmocka_unit_test(step_noise),
        cmocka_unit_test(zero_step_runs),
        cmocka_unit_test(scopes),
        cmocka_unit_test(findings),
        cmocka_unit_test(truncated_why),
        cmocka_unit_test(capture_with_itself),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
