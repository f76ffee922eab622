/* findings.c - the KPI table rated good/warning/bad, and named problems, each with the numbers
 * behind it and a fix. A finding is only raised with evidence from this profile. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"

enum { MAX_FINDINGS = JP_FINDINGS_MAX }; /* more than the rules below can raise at once (about 17 today) */

const char *jp_rating_name(int rating) {
    switch (rating) {
    case JP_RATING_GOOD: return "good";
    case JP_RATING_WARNING: return "warning";
    case JP_RATING_BAD: return "bad";
    case JP_RATING_ABOVE_PEAK: return "above peak";
    default: return "n/a";
    }
}

/* What makes one step slow (slow_step, below): the device waiting on the host, a compile, copies. */
enum { CAUSE_WAIT = 0, CAUSE_COMPILE, CAUSE_COPY, N_CAUSES };

typedef struct ctx {
    const jp_model *m;
    jp_arena *arena;
    jp_analysis *a;
    double step_total;                 /* summed step time, ps */
    double part[JP_PART_COUNT];        /* summed over steps, ps */
    unsigned char *slow;               /* per step: 1 when slow_step explains it (NULL: none can be) */
    size_t n_slow;                     /* steps marked slow */
    size_t n_typical;                  /* steps neither slow nor without device work (is_typical) */
    double median_step;                /* median step time, ps (slow steps included) */
    double slow_bound;                 /* the excess a slow step's causes must reach, ps */
    double cause_median[N_CAUSES];     /* per slow_step cause: its median over the steps, ps */
    int64_t *tracing;                  /* per step: host-only time tracing functions that compiled, ps */
    double typ_total;                  /* summed time of the typical steps (all but the slow), ps */
    double typ_part[JP_PART_COUNT];    /* their parts, summed, ps */
    jp_interval *busy;                 /* device activity of every device (device_busy), computed once */
    size_t n_busy;
} ctx;

/* The KPI table (docs/profile-format.md), the one place its thresholds are written: each row in
 * the unit the KPI is shown in. The findings below test the same rows (kpi_bad), so a KPI rated
 * "bad" and the finding that explains it can never disagree on where "bad" starts. */
typedef struct kpi_rule {
    const char *name; /* as shown; the duration row says "kernel duration" when kernels were recorded */
    const char *unit; /* "%", "ms" or "s" */
    double good;      /* strictly better than this: good */
    double bad;       /* strictly worse than this: bad; in between (inclusive): warning */
    int good_above;   /* 1: higher is better (utilization), 0: lower is better (overhead) */
} kpi_rule;

enum { KPI_UTIL, KPI_HOST, KPI_DURATION, KPI_BANDWIDTH, KPI_MFU, KPI_COMPILE, KPI_COUNT };

static const kpi_rule KPI[KPI_COUNT] = {
    [KPI_UTIL] = {"device utilization", "%", 80, 50, 1},
    [KPI_HOST] = {"host overhead", "%", 10, 20, 0},
    /* bad below the model's small-kernel size: JAX's per-dispatch host cost is as large as the work */
    [KPI_DURATION] = {"op duration", "ms", 1, JP_SMALL_KERNEL_PS / 1e9, 1},
    [KPI_BANDWIDTH] = {"memory bandwidth", "%", 60, 40, 1},
    [KPI_MFU] = {"MFU", "%", 40, 20, 1},
    [KPI_COMPILE] = {"compilation time", "s", 2, 10, 0},
};

/* The rating of value (in the row's unit) by KPI row k. */
static int rate(int k, double v) {
    const kpi_rule *r = &KPI[k];
    if (r->good_above) return v > r->good ? JP_RATING_GOOD : v >= r->bad ? JP_RATING_WARNING : JP_RATING_BAD;
    return v < r->good ? JP_RATING_GOOD : v <= r->bad ? JP_RATING_WARNING : JP_RATING_BAD;
}

/* 1 when value (in the row's unit) is rated bad by KPI row k: where a finding starts. */
static int kpi_bad(int k, double v) { return rate(k, v) == JP_RATING_BAD; }

/* Appends KPI row k with its value, rated unless na; name overrides the row's name when set. */
static void kpi(ctx *c, int k, const char *name, double value, int na) {
    const kpi_rule *r = &KPI[k];
    c->a->kpis[c->a->n_kpis++] = (jp_kpi){name ? name : r->name, value, r->unit, na ? JP_RATING_NA : rate(k, value)};
}

static double ms(double ps) { return ps / 1e9; }

static double device_share(const ctx *c) {
    double busy = c->part[JP_PART_COMPUTE] + c->part[JP_PART_COLLECTIVE] + c->part[JP_PART_H2D] +
                  c->part[JP_PART_D2H] + c->part[JP_PART_D2D];
    return c->step_total > 0 ? busy / c->step_total : 0;
}

/* Share of step time in which the device computes (ops and collectives, transfers excluded). */
static double compute_share(const ctx *c) {
    return c->step_total > 0 ? (c->part[JP_PART_COMPUTE] + c->part[JP_PART_COLLECTIVE]) / c->step_total : 0;
}

/* Memory bandwidth use: each device's bytes accessed over its busy time, as a share of its own
 * peak, averaged over the devices that have both (every chip has its own HBM: dividing all chips'
 * bytes by their summed busy time and summed peaks would understate it by the number of chips).
 * *worst gets the highest device's share, which no device can take above 100 %. */
static double memory_bandwidth(const jp_analysis *a, double *worst) {
    double sum = 0;
    size_t n = 0;
    *worst = 0;
    for (size_t i = 0; i < a->n_devices; i++) {
        const jp_device *d = &a->devices[i];
        if (d->busy_ps <= 0 || d->peak_bw <= 0 || d->bytes_accessed <= 0) continue;
        double pct = 100 * d->bytes_accessed / ((double)d->busy_ps / 1e12) / d->peak_bw;
        if (pct > *worst) *worst = pct;
        sum += pct;
        n++;
    }
    return n ? sum / (double)n : 0;
}

/* A share of a physical peak above 100 % is no rating's "good": the peak or the work is wrong. */
static void kpi_of_peak(ctx *c, int k, double pct, double worst, int na) {
    kpi(c, k, NULL, pct, na);
    if (!na && worst > 100) c->a->kpis[c->a->n_kpis - 1].rating = JP_RATING_ABOVE_PEAK;
}

static void kpis(ctx *c) {
    const jp_analysis *a = c->a;
    int no_steps = c->step_total <= 0;
    /* per device, as XProf's duty cycle: the sweep's share counts an instant busy when any device is */
    double util = a->device_util_pct >= 0 ? a->device_util_pct : 100 * device_share(c);
    kpi(c, KPI_UTIL, NULL, no_steps ? 0 : util, no_steps);
    kpi(c, KPI_HOST, NULL, no_steps ? 0 : 100 * c->part[JP_PART_HOST] / c->step_total, no_steps);
    uint64_t n = 0;
    int64_t total = 0;
    if (a->n_kernels) {
        for (size_t i = 0; i < a->n_kernels; i++) n += a->kernels[i].count, total += a->kernels[i].total_ps;
    } else {
        for (size_t i = 0; i < a->n_ops; i++) n += a->ops[i].count, total += a->ops[i].self_ps;
    }
    kpi(c, KPI_DURATION, a->n_kernels ? "kernel duration" : NULL, n ? ms((double)total / (double)n) : 0, !n);
    double worst_bw, bw = memory_bandwidth(a, &worst_bw);
    kpi_of_peak(c, KPI_BANDWIDTH, bw, worst_bw, !(bw > 0));
    kpi_of_peak(c, KPI_MFU, a->mfu_pct > 0 ? a->mfu_pct : 0, a->mfu_pct, !(a->mfu_pct > 0));
    double compile_s = 0;
    for (size_t i = 0; i < a->n_compiles; i++) compile_s += (double)a->compiles[i].dur_ps / 1e12;
    kpi(c, KPI_COMPILE, NULL, compile_s, 0);
}

enum { EVIDENCE_MAX = 1024 }; /* bytes of a finding's evidence, the NUL included */

static void finding(ctx *c, const char *id, int severity, const char *title, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void finding(ctx *c, const char *id, int severity, const char *title, const char *fix, const char *fmt, ...) {
    char buf[EVIDENCE_MAX];
    jp_text text = jp_text_make(buf, sizeof buf); /* names of any length: cut with "...", whole characters */
    va_list ap;
    va_start(ap, fmt);
    jp_text_vprintf(&text, fmt, ap);
    va_end(ap);
    const char *evidence = jp_analysis_printf(c->arena, "%s", buf);
    if (evidence && c->a->n_findings < MAX_FINDINGS)
        c->a->findings[c->a->n_findings++] = (jp_finding){id, severity, title, evidence, fix};
}

/* ---- the named patterns --------------------------------------------------------------------
 * The rules read the step breakdown (steps.c), where every instant of a step goes to the first
 * open part of compute > collective > transfers > compile > host > idle. Host work that overlaps
 * device work (normal asynchronous dispatch: the host queues step N+1 while the device runs step
 * N) is therefore never held against a loop; only host time during which the device has nothing
 * to do is. Thresholds follow the KPI table of docs/profile-format.md where it has a row. */

/* Counts and times per distinct interned name; the first MAX_NAMES names are kept. */
enum { MAX_NAMES = 64 };
typedef struct name_count {
    const char *name;
    uint64_t n;
    int64_t ps;
    int64_t covered_to; /* host_while_idle: the latest end of its events so far, in time order */
} name_count;

static name_count *tally(name_count *t, size_t *n, const char *name) {
    for (size_t i = 0; i < *n; i++)
        if (t[i].name == name) return &t[i];
    if (*n == MAX_NAMES) return NULL;
    t[*n] = (name_count){name, 0, 0, INT64_MIN};
    return &t[(*n)++];
}

/* The entry with the largest count (by_ps 0) or time (by_ps 1), other than `skip`; NULL if none. */
static const name_count *top_of(const name_count *t, size_t n, int by_ps, const name_count *skip) {
    const name_count *best = NULL;
    for (size_t i = 0; i < n; i++) {
        if (&t[i] == skip) continue;
        if (!best || (by_ps ? t[i].ps > best->ps : t[i].n > best->n)) best = &t[i];
    }
    return best;
}

/* many_small_ops: the host launches executables one at a time (un-jitted jnp calls, or a Python
 * loop around small jitted functions), so launch overhead rather than compute sets the pace.
 * Fires when steps hold >= 20 top-level dispatches each on average (a jitted step needs one to
 * three) and the device computes < 0.1 ms per dispatch: the KPI table's "bad" kernel duration,
 * below which JAX's per-dispatch host cost (tens of us) is as large as the work itself. A
 * dispatch nested in another one on the same thread (PjitFunction re-entered on a cache miss)
 * counts once. GPU/TPU also: >= 100 kernels per step, at least half of them under 0.1 ms. */
static void many_small_ops(ctx *c) {
    const jp_analysis *a = c->a;
    if (a->n_steps < 2) return;
    name_count t[MAX_NAMES];
    size_t nt = 0;
    uint64_t dispatches = 0;
    uint32_t open_line = UINT32_MAX;
    int64_t open_end = 0;
    for (size_t i = 0; i < c->m->host.n; i++) { /* sorted by thread, then start, parents first */
        const jp_host_ev *h = &JP_VEC_AT(&c->m->host, jp_host_ev, i);
        if (!h->is_dispatch || (h->line == open_line && h->start_ps < open_end)) continue;
        open_line = h->line;
        open_end = h->end_ps;
        if (jp_step_at(a, h->start_ps) < 0) continue;
        dispatches++;
        name_count *nc = tally(t, &nt, h->name);
        if (nc) nc->n++;
    }
    double steps = (double)a->n_steps, per_step = (double)dispatches / steps;
    double busy_per = dispatches ? c->part[JP_PART_COMPUTE] / (double)dispatches : 0;
    if (per_step >= 20 && kpi_bad(KPI_DURATION, ms(busy_per))) {
        const name_count *t1 = top_of(t, nt, 0, NULL), *t2 = top_of(t, nt, 0, t1);
        char top_buf[512];
        jp_text top = jp_text_make(top_buf, sizeof top_buf);
        if (t1 && t2)
            jp_text_printf(&top, ": %s %.0f, %s %.0f%s", t1->name, (double)t1->n / steps, t2->name,
                           (double)t2->n / steps, nt > 2 ? ", ..." : "");
        else if (t1)
            jp_text_printf(&top, ": %s", t1->name);
        finding(c, "many_small_ops", kpi_bad(KPI_UTIL, 100 * device_share(c)) ? JP_RATING_BAD : JP_RATING_WARNING,
                "Many small device ops dispatched one by one",
                "jax.jit the whole step function so XLA fuses these ops into one executable: one "
                "dispatch per step instead of many, and no Python between ops.",
                "%.0f jitted dispatches per step%s; %.1f \xC2\xB5s of device compute per dispatch on average; "
                "device busy %.0f%% of step time, host-only %.0f%%",
                per_step, top.buf, busy_per / 1e6, 100 * device_share(c),
                c->step_total > 0 ? 100 * c->part[JP_PART_HOST] / c->step_total : 0);
        return;
    }
    uint64_t kernels = 0; /* the program's: the autotuner's kernels while it compiles are not */
    const jp_kernel_stat *top = NULL;
    for (size_t i = 0; i < a->n_kernels; i++)
        if (!a->kernels[i].autotuning) kernels += a->kernels[i].count, top = top ? top : &a->kernels[i];
    if (kernels && (double)kernels / (double)a->n_steps >= 100 && a->n_small_kernels * 2 >= kernels)
        finding(c, "many_small_ops", JP_RATING_WARNING, "Many small kernels",
                "Let XLA fuse more: jit larger functions, avoid Python loops of small ops inside jit "
                "(use lax.scan/vmap), and check for layout-changing transposes between ops.",
                "%.0f kernels per step, %.0f%% of them under 0.1 ms; top kernel %s",
                (double)kernels / (double)a->n_steps, 100.0 * (double)a->n_small_kernels / (double)kernels,
                top->name);
}

/* Device activity of every device (ops and transfers) as sorted disjoint intervals: the union of
 * the devices' own unions (ops.c), far fewer than the spans; NULL (n 0) when there is none or
 * memory runs out. The caller frees. */
static jp_interval *device_busy(const jp_analysis *a, size_t *n) {
    size_t k = 0;
    for (size_t d = 0; d < a->n_devices; d++) k += a->devices[d].n_busy;
    jp_interval *v = malloc((k ? k : 1) * sizeof *v);
    *n = 0;
    if (!v) return NULL;
    k = 0;
    for (size_t d = 0; d < a->n_devices; d++)
        for (size_t i = 0; i < a->devices[d].n_busy; i++) v[k++] = (jp_interval){a->devices[d].busy[i][0], a->devices[d].busy[i][1]};
    if (a->n_devices > 1) jp_intervals_sort(v, k);
    *n = jp_intervals_merge_sorted(v, k);
    return v;
}

/* Device activity (c->busy) and compilation, as sorted disjoint intervals; NULL (n 0) when memory
 * runs out. The caller frees. */
static jp_interval *busy_with_compiles(const ctx *c, size_t *n) {
    const jp_model *m = c->m;
    size_t k = c->n_busy + m->n_compile_spans; /* at most that many compile spans: no pass to count them */
    jp_interval *v = malloc((k ? k : 1) * sizeof *v);
    *n = 0;
    if (!v) return NULL;
    memcpy(v, c->busy, c->n_busy * sizeof *v);
    k = c->n_busy;
    for (size_t i = 0; m->n_compile_spans && i < m->spans.n; i++) {
        const jp_span *sp = &JP_VEC_AT(&m->spans, jp_span, i);
        if (sp->part == JP_PART_COMPILE && sp->end_ps > sp->start_ps) v[k++] = (jp_interval){sp->start_ps, sp->end_ps};
    }
    jp_intervals_sort(v, k);
    *n = jp_intervals_merge_sorted(v, k);
    return v;
}

/* 1 when step i is one that slow_step explains: the loop-wide rules leave it out. */
static int is_slow(const ctx *c, size_t i) { return c->slow && c->slow[i]; }

/* 1 when step i is a typical step, the loop-wide rules' sample: not slow (slow_step explains it)
 * and with device work (a step the device recorded nothing of is out of the step summary too). */
static int is_typical(const ctx *c, size_t i) {
    return !is_slow(c, i) && !(c->a->steps[i].no_device_work && c->a->step_summary.n_no_device);
}

/* The step (an index) that issued host event h (jp_step_issued_at) when that is `step`, or any
 * typical step when step is -1; else -1. */
static long step_of(const ctx *c, const jp_host_ev *h, long step, size_t *hint) {
    long at = jp_step_issued_at_from(c->a, h->start_ps, hint);
    return at >= 0 && (step < 0 ? is_typical(c, (size_t)at) : at == step) ? at : -1;
}

typedef struct ev_at {
    int64_t start;
    size_t i; /* index into the model's host events */
} ev_at;

static int cmp_ev_at(const void *x, const void *y) {
    int64_t p = ((const ev_at *)x)->start, q = ((const ev_at *)y)->start;
    return (p > q) - (p < q);
}

/* Per name, the time host events of `kind` that start inside a step (`step`, or any typical: -1)
 * spend while the device is idle: user annotations (where the device's waiting comes from: an
 * input pipeline, a sleep, logging) or JAX runtime events (self time, where host overhead goes).
 * Wall time: events are taken in time order and each counts only past the end of the name's
 * earlier ones, so one name open on several threads at once counts that time once (a per-step
 * time never exceeds the step). Returns the largest. */
static const name_count *host_while_idle(const ctx *c, int kind, long step, name_count *t, size_t *nt) {
    size_t nb = c->n_busy, ne = 0;
    const jp_interval *busy = c->busy;
    ev_at *order = malloc((c->m->host.n ? c->m->host.n : 1) * sizeof *order);
    *nt = 0;
    size_t hint = 0;
    for (size_t i = 0; order && i < c->m->host.n; i++) {
        const jp_host_ev *h = &JP_VEC_AT(&c->m->host, jp_host_ev, i);
        if (h->kind == kind && step_of(c, h, step, &hint) >= 0) order[ne++] = (ev_at){h->start_ps, i};
    }
    jp_sort_by_key64(order, ne, sizeof *order, offsetof(ev_at, start), 1, cmp_ev_at);
    for (size_t e = 0; e < ne; e++) {
        const jp_host_ev *h = &JP_VEC_AT(&c->m->host, jp_host_ev, order[e].i);
        name_count *nc = tally(t, nt, h->name);
        if (!nc) continue;
        nc->n++;
        int64_t from = h->start_ps > nc->covered_to ? h->start_ps : nc->covered_to;
        if (h->end_ps > nc->covered_to) nc->covered_to = h->end_ps;
        if (from >= h->end_ps) continue;
        int64_t d = h->end_ps - from, idle = d - jp_intervals_covered(busy, nb, from, h->end_ps);
        if (kind != JP_HOST_USER) /* runtime events nest: their self time, scaled to the idle part */
            idle = d > 0 ? (int64_t)((double)idle * (double)(h->self_ps < d ? h->self_ps : d) / (double)d) : 0;
        nc->ps += idle;
    }
    free(order);
    const name_count *top = top_of(t, *nt, 1, NULL);
    return top && top->ps > 0 ? top : NULL;
}

/* The Python functions (python tracer events "$file:line function") that spend the most self time
 * while the device is idle inside steps (`step`, or all: -1), up to three, written as
 * "f (file:line) 1.20 ms, ..." per step to out; nothing when the tracer was off. The tracer
 * records every function, so names are tallied in a map rather than the bounded table the
 * annotations use. */
static void python_while_idle(const ctx *c, long step, jp_text *out) {
    size_t nb = c->n_busy;
    const jp_interval *busy = c->busy;
    jp_map idx = {0};
    jp_vec tally = {0}; /* name_count */
    size_t step_hint = 0, busy_hint = 0; /* a thread's events come in time order: searches start there */
    for (size_t i = 0; i < c->m->host.n; i++) {
        const jp_host_ev *h = &JP_VEC_AT(&c->m->host, jp_host_ev, i);
        long in = h->kind != JP_HOST_PYTHON || h->self_ps <= 0 ? -1 : step_of(c, h, step, &step_hint);
        if (in < 0) continue;
        /* only the part inside its step: a call blocking past the step's end is not step time */
        const jp_step *st = &c->a->steps[in];
        int64_t stop = h->end_ps < st->start_ps + st->dur_ps ? h->end_ps : st->start_ps + st->dur_ps;
        int64_t full = h->end_ps - h->start_ps, d = stop - h->start_ps;
        int64_t idle = d - jp_intervals_covered_from(busy, nb, h->start_ps, stop, &busy_hint);
        idle = full > 0 ? (int64_t)((double)idle * (double)h->self_ps / (double)full) : 0;
        int found;
        uint32_t k = jp_map_get_or_put(&idx, jp_ptr_key(h->name), 0, 0, (uint32_t)tally.n, &found);
        name_count *nc = k == UINT32_MAX ? NULL
                         : found        ? &JP_VEC_AT(&tally, name_count, k)
                                        : jp_vec_push(&tally, sizeof *nc);
        if (!nc) break;
        if (!found) *nc = (name_count){h->name, 0, 0, INT64_MIN};
        nc->n++, nc->ps += idle;
    }
    const name_count *prev = NULL;
    double steps = step < 0 ? (double)(c->n_typical ? c->n_typical : 1) : 1;
    for (int rank = 0; rank < 3; rank++) { /* the three largest, in order */
        const name_count *best = NULL;
        for (size_t i = 0; i < tally.n; i++) {
            const name_count *t = &JP_VEC_AT(&tally, name_count, i);
            int below = !prev || t->ps < prev->ps || (t->ps == prev->ps && t > prev);
            if (below && t->ps > 0 && (!best || t->ps > best->ps)) best = t;
        }
        if (!best || (double)best->ps / steps < 1e6) break; /* under 1 us per step */
        const char *name = best->name[0] == '$' ? best->name + 1 : best->name;
        double per_step = ms((double)best->ps / steps);
        jp_text_printf(out, "%s%s %.2f ms", prev ? ", " : "", name, per_step);
        prev = best;
    }
    jp_map_deinit(&idx);
    jp_vec_free(&tally);
}

/* ---- the capture's own noise ----------------------------------------------------------------
 * A finding must hold against the noise of the capture it reads. Host jitter (the OS leaving the
 * Python thread waiting some milliseconds on a busy machine before it sees its result, a garbage
 * collection) comes and goes from step to step; work the program does every step (a slow loader,
 * Python between dispatches) does not. So a rule about the loop as a whole (device_idle,
 * host_bound) reads each typical step's share (slow steps are slow_step's, and left out) and
 * fires only when the median share, less three robust standard deviations of the shares (1.4826
 * x their median absolute deviation), is still past its threshold. One step has no spread: its
 * share is the level. */

static int cmp_double(const void *x, const void *y) {
    double p = *(const double *)x, q = *(const double *)y;
    return (p > q) - (p < q);
}

/* Share of a step's time in which its device waits: no compute, collective or transfer, in %. */
static double step_wait(const jp_step *s) {
    int64_t busy = 0;
    for (int p = JP_PART_COMPUTE; p <= JP_PART_D2D; p++) busy += s->part_ps[p];
    return s->dur_ps > 0 ? 100.0 - 100.0 * (double)busy / (double)s->dur_ps : 0;
}

/* Share of a step's time that is host-only, in %. */
static double step_host(const jp_step *s) {
    return s->dur_ps > 0 ? 100.0 * (double)s->part_ps[JP_PART_HOST] / (double)s->dur_ps : 0;
}

/* The median (in *median) and robust standard deviation (in *sigma) of value(step) over the
 * typical steps; returns the level that holds against their spread: median - 3 sigma. */
static double steady_level(const ctx *c, double (*value)(const jp_step *), double *median, double *sigma) {
    size_t n = 0;
    double *v = malloc((c->a->n_steps ? c->a->n_steps : 1) * sizeof *v);
    *median = *sigma = 0;
    if (!v) return 0;
    for (size_t i = 0; i < c->a->n_steps; i++)
        if (is_typical(c, i)) v[n++] = value(&c->a->steps[i]);
    if (n) {
        qsort(v, n, sizeof *v, cmp_double);
        *median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
        for (size_t i = 0; i < n; i++) v[i] = fabs(v[i] - *median);
        qsort(v, n, sizeof *v, cmp_double);
        *sigma = 1.4826 * (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
    }
    free(v);
    return *median - 3 * *sigma;
}

/* With several devices the step breakdown counts an instant as busy when any device works, while
 * the utilization KPI is each device's own busy share (XProf's duty cycle): says so, with the
 * KPI's number, so that the two percentages are not read as one (8 GPUs: 70% against 31%). */
static const char *per_device_note(const ctx *c, char *buf, size_t cap) {
    size_t n = 0;
    for (size_t d = 0; d < c->a->n_devices; d++) n += c->a->devices[d].n_ops > 0;
    jp_text t = jp_text_make(buf, cap);
    if (n > 1 && c->a->device_util_pct >= 0)
        jp_text_printf(&t, "; \"device busy\" counts an instant when any of the %zu devices works; each is busy "
                       "%.0f%% of the step time on average (the device utilization KPI)", n, c->a->device_util_pct);
    return buf;
}

/* device_idle: the device waits (no compute, collective or transfer) for more of the typical step
 * than the KPI table's "good" device utilization leaves (20%), against the steps' spread (see
 * above): warning; bad past its "bad" (50%). 20% of every step without device work is what XProf
 * calls "potentially input-bound" (its threshold is 3% of unexplained time; ours is the KPI's).
 * The evidence splits
 * the rest into host-only work, compilation and time with nothing recorded, names the worst step
 * and the user annotation the host spends the idle time in; the fix follows the largest cause.
 * host_bound: host-only time (a host event open while no device works and nothing compiles)
 * above 20% of the typical step, the KPI table's "bad" host overhead, against the steps' spread;
 * the evidence names where that time goes. They are two KPIs, so both may fire on one profile. */
static void idle_and_host(ctx *c) {
    const jp_analysis *a = c->a;
    const double total = c->typ_total, *part = c->typ_part;
    if (!c->n_typical || total <= 0) return;
    double steps = (double)c->n_typical;
    double util = (part[JP_PART_COMPUTE] + part[JP_PART_COLLECTIVE] + part[JP_PART_H2D] + part[JP_PART_D2H] +
                   part[JP_PART_D2D]) / total;
    double host = part[JP_PART_HOST], comp = part[JP_PART_COMPILE], idle = part[JP_PART_IDLE];
    size_t worst = 0;
    int64_t worst_gap = -1;
    for (size_t i = 0; i < a->n_steps; i++) {
        if (!is_typical(c, i)) continue;
        const int64_t *p = a->steps[i].part_ps;
        int64_t gap = p[JP_PART_HOST] + p[JP_PART_COMPILE] + p[JP_PART_IDLE];
        if (gap > worst_gap) worst_gap = gap, worst = i;
    }
    name_count t[MAX_NAMES];
    size_t nt;
    const name_count *wait = host_while_idle(c, JP_HOST_USER, -1, t, &nt);
    char hint_buf[640], py_buf[400];
    jp_text hint = jp_text_make(hint_buf, sizeof hint_buf), py = jp_text_make(py_buf, sizeof py_buf);
    if (wait && (double)wait->ps < 0.01 * (host + idle)) wait = NULL; /* under 1% of the wait: not where it goes */
    if (wait)
        jp_text_printf(&hint, "; the host spends %.2f ms per step in annotation '%s' while the device is idle",
                       ms((double)wait->ps / steps), wait->name);
    python_while_idle(c, -1, &py);
    if (py.len)
        jp_text_printf(&hint, "; slowest Python functions while the device is idle (self time per step): %s", py.buf);
    char typical_buf[160];
    jp_text typical = jp_text_make(typical_buf, sizeof typical_buf);
    if (c->n_slow) jp_text_printf(&typical, "; %zu slow step%s left out", c->n_slow, c->n_slow == 1 ? "" : "s");
    double med, sigma, level = steady_level(c, step_wait, &med, &sigma);
    int idle_rating = rate(KPI_UTIL, 100 - level);
    if (idle_rating > JP_RATING_GOOD) {
        int bad = idle_rating == JP_RATING_BAD;
        double gap = host + comp + idle;
        const char *fix;
        if (comp >= host && comp >= idle)
            fix = "Most of the device's idle time is compilation: fix the recompilation first (fixed "
                  "shapes and static arguments, jit functions once outside the loop).";
        else if (wait && (double)wait->ps >= 0.5 * gap)
            fix = jp_analysis_printf(c->arena,
                                     "The device waits for '%s': prepare the next batch while the device "
                                     "computes (a background thread or a prefetching loader such as "
                                     "tf.data/grain prefetch, and jax.device_put of the next batch ahead) "
                                     "and keep sleeps and blocking I/O out of the step.",
                                     wait->name);
        else if (host >= idle)
            fix = "The host cannot keep the device fed: jit more of the step so one dispatch does the "
                  "work of many, move Python work (logging, metrics, numpy) out of the loop, and avoid "
                  "blocking calls (.item(), np.asarray, block_until_ready) inside the step.";
        else
            fix = "Nothing is recorded while the device waits: look for blocking calls, sleeps or I/O "
                  "outside annotations and for other processes competing for the host; wrap the input "
                  "pipeline in jax.profiler.TraceAnnotation to see it.";
        if (!fix) fix = "Overlap input with compute: prefetch batches and avoid blocking calls in the step.";
        const char *title = bad ? "Device idle most of the step" : "Device idle a large part of every step";
        char devs_buf[200];
        finding(c, "device_idle", idle_rating, title, fix,
                "device busy %.0f%% of step time (%s below %.0f%%); it waits %.0f%% of the median step, %.0f%% "
                "or more against the spread of %zu step%s (robust standard deviation %.0f%%%s); per step %.2f ms "
                "host-only, %.2f ms compiling, %.2f ms with nothing recorded; worst step %lld (%.2f ms of %.2f ms "
                "without device work)%s%s",
                100 * util, bad ? "bad" : "warning", bad ? KPI[KPI_UTIL].bad : KPI[KPI_UTIL].good, med, level,
                c->n_typical, c->n_typical == 1 ? "" : "s", sigma, typical.buf, ms(host / steps),
                ms(comp / steps),
                ms(idle / steps), (long long)a->steps[worst].step_num, ms((double)worst_gap),
                ms((double)a->steps[worst].dur_ps), hint.buf, per_device_note(c, devs_buf, sizeof devs_buf));
    }
    level = steady_level(c, step_host, &med, &sigma);
    if (kpi_bad(KPI_HOST, level)) {
        name_count rt[MAX_NAMES];
        size_t nrt;
        const name_count *r = host_while_idle(c, JP_HOST_RUNTIME, -1, rt, &nrt);
        char where_buf[320];
        jp_text where = jp_text_make(where_buf, sizeof where_buf);
        if (r)
            jp_text_printf(&where, "; busiest JAX runtime event %s (%.2f ms self time per step)", r->name,
                           ms((double)r->ps / steps));
        finding(c, "host_bound", JP_RATING_BAD, "Steps are host-bound",
                "Move work off the Python thread: jit more of the step, prepare data asynchronously, "
                "and keep logging/metrics out of the hot loop (fetch them every N steps).",
                "host-only time is %.0f%% of step time (bad above %.0f%%); %.0f%% of the median step, %.0f%% or "
                "more against the spread of %zu step%s (robust standard deviation %.0f%%%s); %.2f ms per step%s%s",
                100 * host / total, KPI[KPI_HOST].bad, med, level, c->n_typical,
                c->n_typical == 1 ? "" : "s", sigma, typical.buf, ms(host / steps), hint.buf, where.buf);
    }
}

/* large_transfers: host<->device copies that no computation hides (the breakdown gives compute
 * priority, so only exposed copy time counts) take >= 10% of the typical steps' time (a slow
 * step's one copy is slow_step's to name), bad from 25%. The KPI
 * table has no transfer row: 10% is where keeping data on the device pays off measurably. On
 * XLA:CPU the copy is the PjRt client's "H2D Dispatch" on a worker thread (jax.device_put of a
 * host buffer it cannot alias); it records no byte counts, so time is the measure there. */
static void large_transfers(ctx *c) {
    const jp_analysis *a = c->a;
    if (!c->n_typical || c->typ_total <= 0) return;
    double t = c->typ_part[JP_PART_H2D] + c->typ_part[JP_PART_D2H] + c->typ_part[JP_PART_D2D];
    double share = t / c->typ_total, steps = (double)a->n_steps, typical = (double)c->n_typical;
    if (share < 0.1) return;
    char kinds_buf[512];
    jp_text kinds = jp_text_make(kinds_buf, sizeof kinds_buf);
    for (int k = 0; k < JP_XFER_COUNT; k++) {
        const jp_transfer_stat *x = &a->transfers[k];
        if (!x->count) continue;
        jp_text_printf(&kinds, "; %s: %llu copies (%.1f per step, ", x->kind, (unsigned long long)x->count,
                       (double)x->count / steps);
        if (x->bytes) jp_text_printf(&kinds, "%.1f MiB per step", (double)x->bytes / 1048576.0 / steps);
        else jp_text_puts(&kinds, "no sizes recorded");
        jp_text_printf(&kinds, "), %.2f ms in total, longest %.2f ms", ms((double)x->total_ps), ms((double)x->max_ps));
    }
    finding(c, "large_transfers", share >= 0.25 ? JP_RATING_BAD : JP_RATING_WARNING,
            "Large host<->device transfers",
            "Keep data on the device: jax.device_put datasets or batches once (or prefetch them), "
            "avoid numpy arrays inside the step, and fetch results to the host only every N steps.",
            "copies not hidden by compute take %.0f%% of step time (warning from 10%%; %.2f ms per step%s)%s",
            100 * share, ms(t / typical), c->n_slow ? "; slow steps left out" : "", kinds.buf);
}

static const char *dominant_fix(const char *category) {
    if (strstr(category, "matmul") || strstr(category, "convolution"))
        return "This matmul/convolution is the model's cost: check its shapes (pad dims to multiples "
               "of 128 on accelerators), use bf16 inputs where accuracy allows, and make sure it is not "
               "recomputed (remat) or larger than needed.";
    if (strstr(category, "collective"))
        return "Communication dominates: overlap collectives with compute, shard to reduce the data "
               "moved, or use a faster interconnect layout.";
    return "One op dominates: look at its shapes and whether XLA could fuse or avoid it (e.g. a "
           "transpose or copy from layout changes, or a reduction over a large axis).";
}

/* dominant_op: one op holds > 50% of all op self time (the KPI table's pattern) while the device
 * computes at least half of the step time, so that op, not the host or the input, sets the step
 * time. When the device mostly waits, device_idle/host_bound name the real bottleneck, and one op
 * "dominating" a few microseconds of device work would be noise. */
static void dominant_op(ctx *c) {
    const jp_analysis *a = c->a;
    const jp_op_stat *top = NULL;
    for (size_t i = 0; i < a->n_ops; i++)
        if (!top || a->ops[i].self_ps > top->self_ps) top = &a->ops[i];
    if (!top || !top->count || a->op_self_ps <= 0) return;
    double share = (double)top->self_ps / (double)a->op_self_ps;
    if (share <= 0.5 || (c->step_total > 0 && compute_share(c) < 0.5)) return;
    int64_t collective = 0, waiting = 0; /* multi-host: collectives that mostly wait are a straggler's doing */
    for (size_t h = 0; h < a->n_host_stats; h++)
        collective += a->host_stats[h].collective_ps, waiting += a->host_stats[h].wait_ps;
    if (jp_hlo_is_collective(top->category) && waiting * 2 >= collective && collective > 0) return;
    char where_buf[512];
    jp_text where = jp_text_make(where_buf, sizeof where_buf);
    if (*top->scope || *top->source)
        jp_text_printf(&where, "; %s%s%s%s", *top->scope ? "scope " : "", top->scope,
                       *top->scope && *top->source ? ", " : "", *top->source ? top->source : "");
    finding(c, "dominant_op", JP_RATING_WARNING, "One op dominates device time", dominant_fix(top->category),
            "%s (%s, module %s) takes %.0f%% of device op time (over 50%%): %llu runs, %.2f ms each; device "
            "computes %.0f%% of step time%s",
            top->name, top->category, top->module, 100 * share, (unsigned long long)top->count,
            ms((double)top->total_ps / (double)top->count), 100 * compute_share(c), where.buf);
}

/* Sorts step numbers and writes the distinct ones as ranges of consecutive numbers ("1-7, 9",
 * at most 8 ranges, then "...") to out; returns how many distinct numbers there are. */
static size_t step_ranges(int64_t *at, size_t n, jp_text *out) {
    qsort(at, n, sizeof *at, jp_cmp_i64);
    size_t distinct = 0, n_ranges = 0;
    for (size_t i = 0; i < n; i++)
        if (!distinct || at[i] != at[distinct - 1]) at[distinct++] = at[i];
    for (size_t i = 0; i < distinct; i++) {
        size_t j = i; /* the range at[i..j] */
        while (j + 1 < distinct && at[j + 1] == at[j] + 1) j++;
        if (n_ranges == 8) jp_text_puts(out, ", ...");
        else if (i == j) jp_text_printf(out, "%s%lld", n_ranges ? ", " : "", (long long)at[i]);
        else jp_text_printf(out, "%s%lld-%lld", n_ranges ? ", " : "", (long long)at[i], (long long)at[j]);
        if (n_ranges++ == 8) break;
        i = j;
    }
    return distinct;
}

/* recompilation: XLA compilations (backend_compile*) in the steady state (jp_compile.steady): any
 * step after the first, and the first too unless it compiles the step module itself. That first
 * step may be the program's first, which compiles legitimately; otherwise (a capture from step 10
 * of a loop whose helper recompiles every 5 steps) its compiles are steady state like any later
 * step's, which should hit the cache. Bad when one module is
 * compiled more than once there (a true recompilation: shapes, dtypes or static arguments change
 * between calls) or compilation takes >= 10% of step time; a single compile of a new function in
 * the steady state is a warning. */
static void recompilation(ctx *c) {
    const jp_analysis *a = c->a;
    uint64_t n = 0;
    double total = 0;
    name_count t[MAX_NAMES];
    size_t nt = 0;
    int64_t *at = malloc((a->n_compiles ? a->n_compiles : 1) * sizeof *at); /* their step numbers */
    if (!at) return;
    for (size_t i = 0; i < a->n_compiles; i++) {
        const jp_compile *k = &a->compiles[i];
        if (!k->steady) continue;
        at[n++] = k->step_num;
        total += (double)k->dur_ps;
        name_count *nc = tally(t, &nt, *k->module ? k->module : "?");
        if (nc) nc->n++, nc->ps += k->dur_ps;
    }
    char steps_buf[256];
    jp_text steps = jp_text_make(steps_buf, sizeof steps_buf);
    size_t distinct = step_ranges(at, n, &steps);
    free(at);
    if (!n) return;
    const name_count *top = top_of(t, nt, 1, NULL); /* the module whose compiles cost the most */
    double share = c->step_total > 0 ? total / c->step_total : 0;
    int bad = share >= 0.1;
    for (size_t i = 0; i < nt; i++) bad |= t[i].n >= 2;
    finding(c, "recompilation", bad ? JP_RATING_BAD : JP_RATING_WARNING, "Recompilation in the steady state",
            "Keep shapes and static arguments fixed across steps: pad or bucket variable-length inputs, "
            "pass Python scalars as arrays (or mark them static_argnums only if they never change), and "
            "do not create new jitted closures inside the loop.",
            "%llu compilations in the steady state, in step%s %s, taking %.1f ms (%.0f%% of step time); "
            "%s compiled %llu time%s there (%.1f ms), the most of any module",
            (unsigned long long)n, distinct > 1 ? "s" : "", steps.buf, ms(total), 100 * share, top ? top->name : "?",
            top ? (unsigned long long)top->n : 0ULL, top && top->n == 1 ? "" : "s", top ? ms((double)top->ps) : 0.0);
}

/* ---- single slow steps -----------------------------------------------------------------------
 * slow_step: a step much slower than the typical one, for a cause its breakdown names:
 *   - wait: the device waited on the host (host-only time and time with nothing recorded: a slow
 *     batch, I/O, a sleep, Python outside any jitted call), told apart by what the host was in;
 *   - compile: compilation in the steady state (jp_compile.steady; a warm-up compile is expected);
 *   - copy: host<->device copies that no compute hid.
 * A cause's excess is its time in the step minus its median over the steps (the typical step).
 * Compute that grows is no cause: the same ops taking longer is the host's load (XLA:CPU shares
 * the machine) or the clocks, not something the program did in that step. The step is reported
 * when its causes' excess holds against the capture's noise: it is
 *   - at least half the median step (the outlier mark's 1.5x),
 *   - at least 3 robust standard deviations of the step times (1.4826 x their median absolute
 *     deviation): in a loop whose steps vary that much anyway, a smaller bump is its usual spread,
 *   - at least SLOW_STEP_MIN_PS: host jitter. On a busy machine the OS leaves the Python thread
 *     waiting some milliseconds now and then (measured on a 2-core machine at load 6: up to 3 ms
 *     of one step's idle, 6 ms of its compute), which no capture-internal spread predicts from 5
 *     steps; a one-off step that costs less than 10 ms is not worth acting on either.
 * Needs 3 steps (a median of two is no typical step). Up to SLOW_STEPS_MAX steps, the largest
 * excess first, each its own finding; bad when its excess is >= 10% of all step time. */
enum { SLOW_STEPS_MAX = 3 };
#define SLOW_STEP_MIN_PS 10e9 /* 10 ms */

/* Per step (by start), the host-only time inside dispatches that compiled: a PjitFunction(f) that
 * holds a compile event spends the rest of its time tracing and lowering f in Python, and that
 * belongs to the compile, not to a wait on the host. 0s when memory runs out. */
static void tracing_per_step(const ctx *c, int64_t *out) {
    const jp_model *m = c->m;
    size_t nb = 0;
    jp_interval *busy = NULL; /* device activity and compiles, made at the first dispatch that compiled */
    int no_memory = 0;
    uint32_t open_line = UINT32_MAX;
    int64_t open_end = 0;
    for (size_t i = 0; i < c->a->n_steps; i++) out[i] = 0;
    for (size_t i = 0; !no_memory && i < m->host.n; i++) { /* sorted by thread, then start, parents first */
        const jp_host_ev *d = &JP_VEC_AT(&m->host, jp_host_ev, i);
        if (!d->is_dispatch || (d->line == open_line && d->start_ps < open_end)) continue;
        open_line = d->line, open_end = d->end_ps;
        long step = jp_step_issued_at(c->a, d->start_ps);
        int compiled = 0;
        for (size_t j = i + 1; step >= 0 && !compiled && j < m->host.n; j++) {
            const jp_host_ev *h = &JP_VEC_AT(&m->host, jp_host_ev, j);
            if (h->line != d->line || h->start_ps >= d->end_ps) break;
            compiled = h->kind == JP_HOST_COMPILE;
        }
        if (compiled && !busy) no_memory = !(busy = busy_with_compiles(c, &nb));
        if (compiled && busy) out[step] += d->end_ps - d->start_ps - jp_intervals_covered(busy, nb, d->start_ps, d->end_ps);
    }
    free(busy);
}

/* A step's time in each cause; tracing (ps) moves from the wait to the compile. */
static void cause_times(const jp_step *s, int64_t tracing, int64_t out[N_CAUSES]) {
    int64_t wait = s->part_ps[JP_PART_HOST] + s->part_ps[JP_PART_IDLE];
    if (tracing > wait) tracing = wait;
    out[CAUSE_WAIT] = wait - tracing;
    out[CAUSE_COMPILE] = s->part_ps[JP_PART_COMPILE] + tracing;
    out[CAUSE_COPY] = s->part_ps[JP_PART_H2D] + s->part_ps[JP_PART_D2H] + s->part_ps[JP_PART_D2D];
}

/* The median of v[0..n) (n > 0); sorts v. */
static double median_of(int64_t *v, size_t n) {
    qsort(v, n, sizeof *v, jp_cmp_i64);
    return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

/* The steady-state compiles of step i (the compiles analysis puts each in the step that issued it):
 * their count and time, and up to two of them by time as "jit_f 96.2 ms, jit_g 58.4 ms" into out. */
static size_t step_compiles(const jp_analysis *a, size_t i_step, int64_t *total, jp_text *out) {
    const jp_compile *top[2] = {NULL, NULL};
    size_t n = 0;
    *total = 0;
    for (size_t i = 0; i < a->n_compiles; i++) {
        const jp_compile *k = &a->compiles[i];
        if (!k->steady || k->step_num != a->steps[i_step].step_num) continue;
        n++;
        *total += k->dur_ps;
        if (!top[0] || k->dur_ps > top[0]->dur_ps) top[1] = top[0], top[0] = k;
        else if (!top[1] || k->dur_ps > top[1]->dur_ps) top[1] = k;
    }
    for (int i = 0; i < 2 && top[i]; i++)
        jp_text_printf(out, "%s%s %.1f ms", i ? ", " : "", *top[i]->module ? top[i]->module : top[i]->name,
                       ms((double)top[i]->dur_ps));
    if (n > 2) jp_text_puts(out, ", ...");
    return n;
}

/* Copies (transfer spans) starting in [from, to). */
static size_t step_copies(const jp_model *m, int64_t from, int64_t to) {
    size_t n = 0;
    for (size_t i = 0; i < m->spans.n; i++) {
        const jp_span *sp = &JP_VEC_AT(&m->spans, jp_span, i);
        n += sp->part >= JP_PART_H2D && sp->part <= JP_PART_D2D && sp->start_ps >= from && sp->start_ps < to;
    }
    return n;
}

/* What the host did while the device waited in step i, with the fix that follows, appended to
 * evidence and fix: the annotation or Python functions it sat in, else nothing recorded. */
static void describe_wait(ctx *c, size_t i, double excess, jp_text *evidence, jp_text *fix) {
    const jp_step *s = &c->a->steps[i];
    const int64_t *med = c->a->step_summary.part_median_ps;
    name_count t[MAX_NAMES];
    size_t nt;
    const name_count *ann = host_while_idle(c, JP_HOST_USER, (long)i, t, &nt), *rt = NULL;
    char py_buf[400];
    jp_text py = jp_text_make(py_buf, sizeof py_buf);
    python_while_idle(c, (long)i, &py);
    jp_text_printf(evidence, "the device waited on the host +%.1f ms (host-only %.1f ms, typical %.1f; nothing "
                   "recorded %.1f ms, typical %.1f)", ms(excess), ms((double)s->part_ps[JP_PART_HOST]),
                   ms((double)med[JP_PART_HOST]), ms((double)s->part_ps[JP_PART_IDLE]), ms((double)med[JP_PART_IDLE]));
    if (ann && (double)ann->ps >= 0.5 * excess) {
        jp_text_printf(evidence, " while the host was in annotation '%s' (%.1f ms)", ann->name, ms((double)ann->ps));
        jp_text_printf(fix, "The device waited for '%s' in this step: prepare batches ahead in a background "
                       "thread or a prefetching loader, so that one slow batch overlaps compute. ", ann->name);
    } else if ((rt = host_while_idle(c, JP_HOST_RUNTIME, (long)i, t, &nt)) && (double)rt->ps >= 0.5 * excess) {
        jp_text_printf(evidence, " while the host was in JAX's runtime: '%s' (%.1f ms self time)", rt->name,
                       ms((double)rt->ps));
        jp_text_printf(fix, "The host spent the wait inside JAX's runtime ('%s'), not in your code. %s", rt->name,
                       i == 0 ? "This is the capture's first step: a program's first executions do one-time setup "
                                "(buffer allocation, loading the executable), so start the capture a step later "
                                "to see the steady state. "
                              : "If it recurs, look at the runtime event in the timeline (jaxprof view) for what it "
                                "waits on (argument transfers, allocation). ");
    } else if (py.len) {
        jp_text_printf(evidence, " while the host ran (Python self time) %s", py.buf);
        jp_text_puts(fix, "The device waited while the host ran the Python above: take it off the step's path "
                          "(a background thread, a prefetching loader) or do it every N steps. ");
    } else {
        jp_text_puts(evidence, ": the host ran code outside any jitted call or annotation (data loading, I/O, "
                               "a sleep, garbage collection)");
        jp_text_puts(fix, "The host ran untraced code while the device waited: wrap the loader in "
                          "jax.profiler.TraceAnnotation (or capture with the Python tracer, jaxprof run "
                          "--python-trace) to name it, and prefetch batches in a background thread so that one "
                          "slow batch overlaps compute. ");
    }
}

/* One slow_step finding for step i, whose excess over the median step is `excess` (ps) and whose
 * causes' excesses are cause[]. */
static void report_slow_step(ctx *c, size_t i, double median, double excess, const double cause[N_CAUSES],
                             const int64_t *others) {
    const jp_step *s = &c->a->steps[i];
    int64_t from = s->start_ps, to = s->start_ps + s->dur_ps;
    char ev_buf[EVIDENCE_MAX], fix_buf[768], names_buf[256];
    jp_text ev = jp_text_make(ev_buf, sizeof ev_buf), fix = jp_text_make(fix_buf, sizeof fix_buf);
    jp_text_printf(&ev, "step %lld took %.1f ms, %.1fx the median step (%.1f ms; the others %.1f-%.1f ms): +%.1f ms, "
                   "%.0f%% of all step time, past the noise bound of %.1f ms. Where the excess went: ",
                   (long long)s->step_num, ms((double)s->dur_ps), (double)s->dur_ps / median, ms(median),
                   ms((double)others[0]), ms((double)others[1]), ms(excess), 100 * excess / c->step_total,
                   ms(c->slow_bound));
    int done[N_CAUSES] = {0};
    for (int rank = 0; rank < N_CAUSES; rank++) { /* largest cause first */
        int k = -1;
        for (int j = 0; j < N_CAUSES; j++)
            if (!done[j] && cause[j] > 0 && (k < 0 || cause[j] > cause[k])) k = j;
        if (k < 0 || cause[k] < 0.05 * excess) break; /* under 5%: not a cause worth naming */
        done[k] = 1;
        if (rank) jp_text_puts(&ev, "; ");
        if (k == CAUSE_WAIT) {
            describe_wait(c, i, cause[k], &ev, &fix);
        } else if (k == CAUSE_COMPILE) {
            int64_t total;
            jp_text names = jp_text_make(names_buf, sizeof names_buf);
            size_t n = step_compiles(c->a, i, &total, &names);
            jp_text_printf(&ev, "compiling +%.1f ms (tracing and lowering included; %zu XLA compile%s in the steady "
                           "state, %.1f ms: %s)", ms(cause[k]), n, n == 1 ? "" : "s", ms((double)total), names.buf);
            jp_text_puts(&fix, "A function compiled in this step: if that recurs (a new shape or static argument "
                               "every few steps), keep shapes and static arguments fixed (pad or bucket inputs, "
                               "pass numbers as arrays) or compile it once before the loop; jaxprof compiles lists "
                               "them. ");
        } else {
            jp_text_printf(&ev, "copies not hidden by compute +%.1f ms (%zu in this step)", ms(cause[k]),
                           step_copies(c->m, from, to));
            jp_text_puts(&fix, "A host<->device copy held this step up: put the data on the device ahead of the "
                               "step (prefetch with jax.device_put) or keep it there. ");
        }
    }
    if (fix.len && fix.buf[fix.len - 1] == ' ') fix.buf[--fix.len] = '\0';
    const char *title = jp_analysis_printf(c->arena, "Step %lld took %.1fx the median step time",
                                           (long long)s->step_num, (double)s->dur_ps / median);
    const char *fix_text = jp_analysis_printf(c->arena, "%s", fix.buf);
    finding(c, "slow_step", excess >= 0.1 * c->step_total ? JP_RATING_BAD : JP_RATING_WARNING,
            title ? title : "One step much slower than the others", fix_text ? fix_text : "", "%s", ev.buf);
}

/* 1 when step i holds a steady-state compile; its compile time then counts as a cause. */
static int compiles_in_step(const jp_analysis *a, size_t i) {
    int64_t total;
    char scratch[8];
    jp_text none = jp_text_make(scratch, sizeof scratch);
    return step_compiles(a, i, &total, &none) > 0;
}

/* Each cause's excess in step i over its median (the warm-up compile is none). */
static void cause_excess(const ctx *c, size_t i, double out[N_CAUSES]) {
    const jp_analysis *a = c->a;
    const double *med = c->cause_median;
    int64_t t[N_CAUSES];
    cause_times(&a->steps[i], c->tracing[i], t);
    for (int k = 0; k < N_CAUSES; k++) out[k] = (double)t[k] - med[k];
    if (!compiles_in_step(a, i)) out[CAUSE_COMPILE] = 0;
}

/* Marks the slow steps (c->slow, c->n_slow) by the rule above; c->slow stays NULL with fewer
 * than 3 steps or no memory. */
static void mark_slow_steps(ctx *c) {
    const jp_analysis *a = c->a;
    size_t n = a->n_steps;
    if (n < 3 || c->step_total <= 0) return;
    int64_t *v = malloc(n * sizeof *v);
    c->slow = jp_arena_alloc(c->arena, n);
    c->tracing = jp_arena_alloc(c->arena, n * sizeof *c->tracing);
    if (!v || !c->slow || !c->tracing) {
        free(v);
        c->slow = NULL;
        return;
    }
    tracing_per_step(c, c->tracing);
    for (int k = 0; k < N_CAUSES; k++) {
        for (size_t i = 0; i < n; i++) {
            int64_t t[N_CAUSES];
            cause_times(&a->steps[i], c->tracing[i], t);
            v[i] = t[k];
        }
        c->cause_median[k] = median_of(v, n);
    }
    for (size_t i = 0; i < n; i++) v[i] = a->steps[i].dur_ps;
    c->median_step = median_of(v, n);
    for (size_t i = 0; i < n; i++) v[i] = (int64_t)fabs((double)a->steps[i].dur_ps - c->median_step);
    double sigma = 1.4826 * median_of(v, n);
    c->slow_bound = fmax(fmax(0.5 * c->median_step, 3 * sigma), SLOW_STEP_MIN_PS);
    for (size_t i = 0; i < n; i++) {
        double cause[N_CAUSES], explained = 0;
        cause_excess(c, i, cause);
        for (int k = 0; k < N_CAUSES; k++) explained += cause[k] > 0 ? cause[k] : 0;
        c->slow[i] = explained >= c->slow_bound;
        c->n_slow += c->slow[i];
    }
    free(v);
}

/* One finding per slow step, the SLOW_STEPS_MAX slowest. */
static void slow_steps(ctx *c) {
    const jp_analysis *a = c->a;
    size_t n = a->n_steps, last = n; /* the slowest reported so far */
    for (int reported = 0; c->slow && reported < SLOW_STEPS_MAX; reported++) {
        size_t worst = n;
        for (size_t i = 0; i < n; i++) {
            const jp_step *s = &a->steps[i];
            const jp_step *prev = last < n ? &a->steps[last] : NULL; /* slowest first, ties by index */
            int after_last = !prev || s->dur_ps < prev->dur_ps || (s->dur_ps == prev->dur_ps && i > last);
            if (c->slow[i] && after_last && (worst == n || s->dur_ps > a->steps[worst].dur_ps)) worst = i;
        }
        if (worst == n) break;
        last = worst;
        int64_t range[2] = {INT64_MAX, INT64_MIN}; /* the other steps' times */
        for (size_t i = 0; i < n; i++) {
            if (i == worst) continue;
            if (a->steps[i].dur_ps < range[0]) range[0] = a->steps[i].dur_ps;
            if (a->steps[i].dur_ps > range[1]) range[1] = a->steps[i].dur_ps;
        }
        double cause[N_CAUSES];
        cause_excess(c, worst, cause);
        report_slow_step(c, worst, c->median_step, (double)a->steps[worst].dur_ps - c->median_step, cause, range);
    }
}

/* What a host did instead of entering its collectives in the given steps: the largest part of
 * those steps other than collectives, as a phrase appended to out. */
static const char *straggler_activity(const jp_host_stat *hs, const int64_t *steps, size_t n, jp_text *out) {
    int64_t part[JP_PART_COUNT] = {0};
    for (size_t i = 0; i < hs->n_steps; i++)
        for (size_t k = 0; k < n; k++)
            if (hs->steps[i].step_num == steps[k])
                for (int p = 0; p < JP_PART_COUNT; p++) part[p] += hs->steps[i].part_ps[p];
    int top = JP_PART_COMPUTE;
    for (int p = 0; p < JP_PART_COUNT; p++)
        if (p != JP_PART_COLLECTIVE && part[p] > part[top]) top = p;
    double t = ms((double)part[top]);
    if (top == JP_PART_IDLE) jp_text_printf(out, "idle for %.1f ms (no traced work: sleep, input, untraced Python)", t);
    else if (top == JP_PART_HOST) jp_text_printf(out, "busy on the host for %.1f ms", t);
    else jp_text_printf(out, "busy in %s for %.1f ms", jp_part_name(top), t);
    return out->buf;
}

/* The host that held the others back longest, summed over its steps as the straggler. By time, not
 * by count: on a busy machine every host straggles by a few ms now and then, and those steps must
 * not outvote the one host that held the job for 80 ms twice. */
static uint32_t most_held_host(const jp_analysis *a, double *held_by) {
    for (uint32_t h = 0; h < a->n_host_stats; h++) held_by[h] = 0;
    for (size_t i = 0; i < a->n_stragglers; i++)
        if (a->stragglers[i].host < a->n_host_stats) held_by[a->stragglers[i].host] += (double)a->stragglers[i].behind_ps;
    uint32_t top = 0;
    for (uint32_t h = 1; h < a->n_host_stats; h++)
        if (held_by[h] > held_by[top]) top = h;
    return top;
}

/* straggler (multi-host): the other hosts waited in their collectives for one host, in steps that
 * add up to at least 5% of step time (bad from 25%). Names the host that held the others back
 * longest and what it did meanwhile. */
static void straggler(ctx *c) {
    const jp_analysis *a = c->a;
    if (!a->n_stragglers || !a->n_host_stats || c->step_total <= 0) return;
    double held = 0; /* summed over steps and, from summaries, any number of hosts: in double */
    for (size_t i = 0; i < a->n_stragglers; i++) held += (double)a->stragglers[i].behind_ps;
    double share = held / c->step_total;
    int64_t *at = malloc(a->n_stragglers * sizeof *at);
    double *held_by = malloc(a->n_host_stats * sizeof *held_by);
    if (share < 0.05 || !at || !held_by) {
        free(at);
        free(held_by);
        return;
    }
    uint32_t top = most_held_host(a, held_by);
    free(held_by);
    size_t n = 0;
    double top_held = 0;
    for (size_t i = 0; i < a->n_stragglers; i++)
        if (a->stragglers[i].host == top) at[n++] = a->stragglers[i].step_num, top_held += (double)a->stragglers[i].behind_ps;
    char steps_buf[256], doing_buf[160];
    jp_text steps = jp_text_make(steps_buf, sizeof steps_buf), doing = jp_text_make(doing_buf, sizeof doing_buf);
    step_ranges(at, n, &steps);
    const jp_host_stat *hs = &a->host_stats[top];
    finding(c, "straggler", share >= 0.25 ? JP_RATING_BAD : JP_RATING_WARNING, "One host holds the others back",
            "See what that host does in those steps (jaxprof report --host NAME; jaxprof view shows the hosts "
            "side by side): an uneven input pipeline or data shard, host work on one process (checkpoints, "
            "logging, garbage collection) or a slower device. Balance the work or move it off the step path.",
            "%s was the straggler in %u of %zu steps (%s): the other hosts waited %.1f ms per step for it in "
            "collectives, while it was %s; waiting for stragglers took %.0f%% of step time",
            hs->name, hs->n_straggling, hs->n_steps, steps.buf, ms(top_held) / (double)n,
            straggler_activity(hs, at, n, &doing), 100 * share);
    free(at);
}

/* peak_temporaries: a compiled module's memory peak (XLA's buffer assignment, buffers.c) is mostly
 * one to three temporaries: > 50% of the peak in <= 3 temporary buffers live there. Those are the
 * tensors that rematerialisation (jax.checkpoint) or smaller microbatches shrink, so naming them
 * with their lines tells the user where an out-of-memory comes from. Only peaks of >= 64 MiB
 * count: below that no accelerator (they have GBs) runs out of memory and a few small
 * temporaries dominate any tiny module. Warning; bad when they hold >= 80% of a peak of >= 1 GiB,
 * where memory, not compute, limits the batch size. The module with the largest peak that
 * qualifies, among the modules that ran. */
enum { PEAK_MIN_BYTES = 64 << 20, PEAK_TOP_BUFFERS = 3 };

static double mib(int64_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

enum { SIZE_TEXT_MAX = 32 }; /* bytes of a size_text, the NUL included */

/* "64.0 MiB", or "5.00 GiB" from 1 GiB on (TPU modules hold tens of GiB), written into buf. */
static const char *size_text(char (*buf)[SIZE_TEXT_MAX], int64_t bytes) {
    jp_text t = jp_text_make(*buf, sizeof *buf);
    if (bytes >= (int64_t)1 << 30) jp_text_printf(&t, "%.2f GiB", mib(bytes) / 1024);
    else jp_text_printf(&t, "%.1f MiB", mib(bytes));
    return t.buf;
}

/* The file's last path component: evidence stays short and names the line the user knows. */
static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Up to PEAK_TOP_BUFFERS of the module's largest temporaries at the peak (buffers are largest
 * first); their bytes into *sum; how many. */
static size_t top_temporaries(const jp_module_memory *mod, const jp_buffer **top, int64_t *sum) {
    size_t n = 0;
    *sum = 0;
    for (size_t i = 0; i < mod->n_buffers && n < PEAK_TOP_BUFFERS; i++)
        if (mod->buffers[i].kind == JP_BUFFER_TEMPORARY) top[n++] = &mod->buffers[i], *sum += mod->buffers[i].bytes;
    return n;
}

/* Whether the program keyed `key` ("jit_step(6)") differentiates anything: JAX names the ops of a
 * backward pass "transpose(jvp(...))" in their op_name. 1 yes, 0 no, -1 its HLO is not here. */
static int has_backward_pass(const jp_model *m, const char *key) {
    int found = -1;
    for (size_t i = 0; i < m->hlo.n; i++) {
        const jp_hlo_module *h = &JP_VEC_AT(&m->hlo, jp_hlo_module, i);
        if (!h->key || strcmp(h->key, key) != 0) continue;
        found = 0;
        for (size_t k = 0; k < h->n_instrs; k++)
            if (h->instrs[k].op_name && strstr(h->instrs[k].op_name, "transpose(jvp(")) return 1;
    }
    return found;
}

static void peak_temporaries(ctx *c) {
    const jp_analysis *a = c->a;
    const jp_module_memory *mod = NULL;
    const jp_buffer *top[PEAK_TOP_BUFFERS];
    int64_t held = 0;
    size_t n = 0;
    for (size_t i = 0; i < a->n_modules && !mod; i++) { /* largest peak first */
        const jp_module_memory *m = &a->modules[i];
        if (!m->runs || m->peak_bytes < PEAK_MIN_BYTES) continue;
        n = top_temporaries(m, top, &held);
        if (n && held * 2 > m->peak_bytes) mod = m;
    }
    if (!mod) return;
    char what_buf[640];
    jp_text what = jp_text_make(what_buf, sizeof what_buf);
    for (size_t i = 0; i < n; i++) {
        const jp_buffer *b = top[i];
        char size[SIZE_TEXT_MAX];
        jp_text_printf(&what, "%s%s %s %s%s%s%s%s", i ? "; " : "", b->instruction, b->shape, size_text(&size, b->bytes),
                       *b->source ? " at " : "", *b->source ? base_name(b->source) : "", *b->op_name ? " " : "",
                       *b->op_name ? b->op_name : "");
    }
    double share = (double)held / (double)mod->peak_bytes;
    char sizes[2][SIZE_TEXT_MAX];
    const char *donate = "";
    int64_t both = mod->kind_bytes[JP_BUFFER_PARAMETER] < mod->kind_bytes[JP_BUFFER_OUTPUT]
                       ? mod->kind_bytes[JP_BUFFER_PARAMETER] : mod->kind_bytes[JP_BUFFER_OUTPUT];
    if (!mod->alias_bytes && both >= 1 << 20) { /* parameters and outputs both large, none donated */
        donate = jp_analysis_printf(c->arena, " Nothing is donated: if the step returns updated versions of its "
                                    "inputs (parameters, optimizer state), jax.jit(..., donate_argnums=...) lets "
                                    "outputs reuse the inputs' memory, up to %.1f MiB here.", mib(both));
    }
    /* rematerialisation trades memory for recomputation in a backward pass: advice for training
     * steps only; a program with no gradient ops (inference) gets the advice that applies to it */
    const char *shrink =
        has_backward_pass(c->m, mod->name) != 0
            ? "Shrink these temporaries: wrap the code that makes them in jax.checkpoint (jax.remat, e.g. per "
              "layer) so they are recomputed in the backward pass instead of kept, or use smaller microbatches "
              "(accumulate gradients over several) since they grow with the batch."
            : "Shrink these temporaries: the program has no backward pass (no gradient ops in its HLO), so "
              "rematerialisation does not apply; process the batch in smaller chunks (jax.lax.map or a loop over "
              "slices), keep fewer copies in flight, or hold them in a smaller dtype.";
    const char *fix = jp_analysis_printf(c->arena, "%s%s jaxprof memory --module %s lists every buffer at the peak.",
                                         shrink, donate ? donate : "", mod->name);
    finding(c, "peak_temporaries", share >= 0.8 && mod->peak_bytes >= (int64_t)1 << 30 ? JP_RATING_BAD : JP_RATING_WARNING,
            "A few temporaries make most of the memory peak", fix ? fix : shrink,
            "%s peaks at %s (%lld bytes) at %s; %zu temporar%s %s of it (%.0f%%, over 50%%): %s; "
            "live all along: parameters %.2f MiB, outputs %.2f MiB",
            mod->name, size_text(&sizes[0], mod->peak_bytes), (long long)mod->peak_bytes,
            *mod->peak_instruction ? mod->peak_instruction : "its start", n, n == 1 ? "y holds" : "ies hold",
            size_text(&sizes[1], held), 100 * share, what.buf, mib(mod->kind_bytes[JP_BUFFER_PARAMETER]),
            mib(mod->kind_bytes[JP_BUFFER_OUTPUT]));
}

/* rate_above_peak: a measured rate above the peak it is compared with (an op past its roof, the
 * memory bandwidth KPI past 100 %) is physically impossible: the peak is wrong (ROCm's reported
 * bandwidth is half the data sheet's) or the work is misattributed (one program's FLOPs applied to
 * another's runs, a kernel's time that is only a launch). Names the op furthest past its roof
 * and the peak used, with where that peak came from. */
static void rate_above_peak(ctx *c) {
    const jp_analysis *a = c->a;
    const jp_op_stat *top = NULL;
    size_t n = 0;
    for (size_t i = 0; i < a->n_ops; i++) {
        const jp_op_stat *o = &a->ops[i];
        if (o->bound == JP_BOUND_UNKNOWN || o->roof_pct <= 100) continue;
        n++;
        if (!top || o->roof_pct > top->roof_pct) top = o;
    }
    const jp_kpi *bw = NULL;
    for (size_t i = 0; i < a->n_kpis; i++)
        if (a->kpis[i].rating == JP_RATING_ABOVE_PEAK) bw = &a->kpis[i];
    if (!top && !bw) return;
    char what_buf[512];
    jp_text what = jp_text_make(what_buf, sizeof what_buf);
    if (top) {
        const jp_device *d = &a->devices[top->device];
        double secs = (double)top->total_ps / 1e12, memory = top->bound == JP_BOUND_MEMORY;
        jp_text_printf(&what, "%zu op%s above their roof; %s (module %s) at %.4g %s = %.0f%% of %s's peak %.4g %s "
                       "(peak from: %s)", n, n == 1 ? "" : "s", top->name, top->module,
                       memory ? top->bytes / secs / 1e9 : top->flops / secs / 1e12, memory ? "GB/s" : "TFLOP/s",
                       top->roof_pct, d->name, memory ? d->peak_bw / 1e9 : d->peak_flops / 1e12,
                       memory ? "GB/s" : "TFLOP/s", *d->peak_source ? d->peak_source : "unknown");
    }
    if (bw) jp_text_printf(&what, "%s%s %.0f%% of peak", top ? "; " : "", bw->name, bw->value);
    finding(c, "rate_above_peak", JP_RATING_WARNING, "Measured rates above the device's peak",
            "A rate above the hardware's peak is impossible: check the peak against the chip's data sheet "
            "(--peak-tflops/--peak-gbps set it) and the op's FLOPs and bytes (jaxprof ops --json: flops, bytes, "
            "program_id) before acting on its rating.",
            "%s", what.buf);
}

/* The capture itself is incomplete (a->health, health.c): the profiler's own errors and warnings,
 * quoted, then empty device planes and modules without HLO. The fix follows what is missing. */
static void capture_health(ctx *c) {
    const jp_analysis *a = c->a;
    if (!a->n_health) return;
    char buf[EVIDENCE_MAX];
    jp_text what = jp_text_make(buf, sizeof buf);
    int bad = 0, profiler = 0, empty = 0, no_hlo = 0;
    for (size_t i = 0; i < a->n_health; i++) {
        const jp_health *h = &a->health[i];
        int own = strcmp(h->kind, "error") == 0 || strcmp(h->kind, "warning") == 0;
        profiler |= own, empty |= strcmp(h->kind, "empty device") == 0, no_hlo |= strcmp(h->kind, "no HLO") == 0;
        bad |= strcmp(h->kind, "error") == 0 || strcmp(h->kind, "empty device") == 0;
        jp_text_printf(&what, own ? "%s%s (%s): \"%s\"" : "%s%s (%s): %s", i ? "; " : "", h->kind, h->host, h->text);
    }
    char fix_buf[768];
    jp_text fix = jp_text_make(fix_buf, sizeof fix_buf);
    if (profiler)
        jp_text_puts(&fix, "The profiler reported trouble while capturing: where events were dropped (a full CUPTI "
                           "buffer), raise advanced_configuration gpu_max_activity_api_events and "
                           "gpu_max_callback_api_events, or capture less (lower host_tracer_level, "
                           "python_tracer_level 0, a shorter trace: the `lean` preset of ProfilerConfig). ");
    if (empty)
        jp_text_puts(&fix, "A device recorded nothing while programs ran on it: check device_tracer_level (1) and that "
                           "the device tracer could start (CUPTI permissions, one profiler per process). ");
    if (no_hlo)
        jp_text_puts(&fix, "Modules without an HloProto have no FLOPs, bytes or memory: capture with "
                           "enable_hlo_proto=True, and compile inside the trace or run them once more in it.");
    const char *fixed = jp_analysis_printf(c->arena, "%s", fix_buf);
    finding(c, "capture_health", bad ? JP_RATING_BAD : JP_RATING_WARNING, "The capture is incomplete",
            fixed ? fixed : "", "%s", buf);
}

/* ---- launch and idle causes (launch.c; docs/design.md "Launch and idle causes") ----------------
 * A device's window is its first to last activity; the idle split covers the gaps between its
 * correlated device work. Both rules need JP_LAUNCH_MIN launches matched to their calls. */
enum { JP_LAUNCH_MIN = 20 };

static double window_ps(const jp_device *d) { return d->last_ps > d->first_ps ? (double)(d->last_ps - d->first_ps) : 0; }

/* The summed api time and device time of the device's launches matched to their calls. */
static void launch_sums(const jp_analysis *a, size_t dev, double *api, double *work) {
    *api = *work = 0;
    for (size_t i = 0; i < a->n_launches; i++) {
        const jp_launch_stat *l = &a->launches[i];
        if (l->device != dev || !l->matched) continue;
        *api += (double)l->api_ps;
        *work += (double)l->kernel_ps * (double)l->matched / (double)l->count;
    }
}

/* Whether launching the device's work took the host at least as long as the device took to run
 * it: a host launching back to back cannot then keep the device busy. */
static int launch_limited(const jp_analysis *a, size_t dev) {
    double api, work;
    launch_sums(a, dev, &api, &work);
    return api > 0 && api >= work;
}

/* The device whose host-wait idle is the largest share of its window, among those with enough
 * launches (and, when `limited`, whose launches took the host as long as their work took it). */
static size_t worst_host_wait(const jp_analysis *a, int limited, double *share) {
    size_t worst = SIZE_MAX;
    *share = 0;
    for (size_t d = 0; d < a->n_devices; d++) {
        const jp_device *dv = &a->devices[d];
        double w = window_ps(dv);
        if (dv->n_launched < JP_LAUNCH_MIN || w <= 0 || (limited && !launch_limited(a, d))) continue;
        if ((double)dv->idle_host_ps / w > *share) *share = (double)dv->idle_host_ps / w, worst = d;
    }
    return worst;
}

/* launch_bound: the host's launch calls for a device's work took at least as long as that work ran
 * on the device (HTA flags kernels shorter than their call one by one; summed, this says the host
 * launching flat out could not keep the device busy), and the device waits for the host >= 10% of
 * its window. Bad from 30%. */
static void launch_bound(ctx *c) {
    const jp_analysis *a = c->a;
    double share;
    size_t d = worst_host_wait(a, 1, &share);
    if (d == SIZE_MAX || share < 0.10) return;
    const jp_device *dv = &a->devices[d];
    double api, work;
    launch_sums(a, d, &api, &work);
    finding(c, "launch_bound", share >= 0.30 ? JP_RATING_BAD : JP_RATING_WARNING, "Kernels are launch-bound",
            "Give each launch more work: jit larger functions so XLA fuses more per kernel, loop on the device "
            "(lax.scan, lax.fori_loop) instead of in Python, raise the batch size, and keep XLA's command buffers "
            "(CUDA graphs) on (XLA_FLAGS=--xla_gpu_enable_command_buffer) so one launch replays many kernels.",
            "%s: its %llu launches took the host %.2f ms of API calls for %.2f ms of device work; %llu are kernels "
            "shorter than their launch call; it waits for the host %.2f ms, %.0f%% of its %.2f ms window; %.1f "
            "launches outstanding on average (most %u)",
            dv->name, (unsigned long long)dv->n_launched, ms(api), ms(work), (unsigned long long)dv->n_short,
            ms((double)dv->idle_host_ps), 100 * share, ms(window_ps(dv)), dv->queue_mean, dv->queue_max);
}

/* host_wait_idle: a device waits for the host (its next launch call began only after it went
 * idle) >= 10% of its window, bad from 30%; not where launch_bound already explains it. */
static void host_wait_idle(ctx *c) {
    const jp_analysis *a = c->a;
    double share, limited_share;
    size_t d = worst_host_wait(a, 0, &share);
    if (d == SIZE_MAX || share < 0.10) return;
    if (worst_host_wait(a, 1, &limited_share) != SIZE_MAX && limited_share >= 0.10) return; /* launch_bound's */
    const jp_device *dv = &a->devices[d];
    double idle = (double)(dv->idle_host_ps + dv->idle_kernel_ps + dv->idle_other_ps);
    finding(c, "host_wait_idle", share >= 0.30 ? JP_RATING_BAD : JP_RATING_WARNING, "The device waits for the host",
            "Keep the host ahead of the device: dispatch asynchronously (no block_until_ready, .item(), "
            "np.asarray or printing of device values inside the step), prefetch the next batch to the device "
            "while this one computes, and move Python work (logging, metrics) out of the step.",
            "%s idles %.2f ms (%.0f%% of its %.2f ms window) before work whose launch call began only after it "
            "went idle; of its idle between launches %.0f%% is waiting for the host, %.0f%% kernel to kernel, "
            "%.0f%% other; %.1f launches outstanding on average (most %u)",
            dv->name, ms((double)dv->idle_host_ps), 100 * share, ms(window_ps(dv)),
            idle > 0 ? 100 * (double)dv->idle_host_ps / idle : 0, idle > 0 ? 100 * (double)dv->idle_kernel_ps / idle : 0,
            idle > 0 ? 100 * (double)dv->idle_other_ps / idle : 0, dv->queue_mean, dv->queue_max);
}

/* communication_bound / poor_overlap (comm.c): the steps' collective time per device (the mean
 * over the devices that ran collectives), exposed and hidden. Exposed time of 20% of step time or
 * more is communication bound (40%: bad); else collectives of 10% or more of step time with under
 * a quarter of them hidden behind compute is poor overlap. The evidence names the collectives
 * with the most exposed time. */
static void communication(ctx *c) {
    const jp_analysis *a = c->a;
    double hidden = 0, exposed = 0;
    int all_idle = a->step_summary.n_no_device == a->n_steps;
    for (size_t i = 0; i < a->n_steps; i++)
        if (all_idle || !a->steps[i].no_device_work)
            hidden += (double)a->steps[i].comm_hidden_ps, exposed += (double)a->steps[i].comm_exposed_ps;
    if (!(c->step_total > 0) || !(hidden + exposed > 0) || !a->n_comms) return;
    double exp_pct = 100 * exposed / c->step_total, comm_pct = 100 * (hidden + exposed) / c->step_total;
    double hid_pct = 100 * hidden / (hidden + exposed);
    const jp_comm_stat *top[3] = {0};
    for (size_t i = 0; i < a->n_comms; i++) /* the three with the most exposed time */
        for (int k = 0; k < 3; k++) {
            if (top[k] && top[k]->exposed_ps >= a->comms[i].exposed_ps) continue;
            for (int j = 2; j > k; j--) top[j] = top[j - 1];
            top[k] = &a->comms[i];
            break;
        }
    char names[512];
    jp_text t = jp_text_make(names, sizeof names);
    for (int k = 0; k < 3 && top[k]; k++) {
        jp_text_printf(&t, "%s%s (%s, %s) %.2f ms exposed over %u device%s", k ? "; " : "", top[k]->name,
                       top[k]->type, top[k]->module, ms((double)top[k]->exposed_ps), top[k]->n_devices,
                       top[k]->n_devices == 1 ? "" : "s");
        if (top[k]->busbw >= 0) jp_text_printf(&t, ", busbw %.2f GB/s", top[k]->busbw / 1e9);
    }
    if (exp_pct >= 20) {
        finding(c, "communication_bound", exp_pct >= 40 ? JP_RATING_BAD : JP_RATING_WARNING,
                "Collectives not hidden by compute take much of the step",
                "Overlap communication with compute: let XLA schedule collectives asynchronously (on GPU "
                "the latency-hiding scheduler, --xla_gpu_enable_latency_hiding_scheduler=true), give it "
                "independent work to overlap (e.g. the next layer's weights gathered while this one "
                "computes), move less data (reduce-scatter + all-gather instead of all-reduce, bf16 "
                "gradients, a larger batch per device), or shard so fewer devices share each collective.",
                "exposed collective time is %.0f%% of step time per device (over 20%%); collectives %.0f%% of "
                "the step, %.0f%% of them hidden behind compute; top: %s",
                exp_pct, comm_pct, hid_pct, names);
    } else if (comm_pct >= 10 && hid_pct < 25) {
        finding(c, "poor_overlap", JP_RATING_WARNING, "Collectives barely overlap compute",
                "Give the scheduler work to run beside each collective: asynchronous collectives (on GPU "
                "--xla_gpu_enable_latency_hiding_scheduler=true), collectives issued early (gradients "
                "reduced per layer during the backward pass), or compute that does not depend on them.",
                "collectives take %.0f%% of step time per device and only %.0f%% of them is hidden behind "
                "compute (under 25%%); top: %s",
                comm_pct, hid_pct, names);
    }
}

/* The device that straggled (comm.c: the largest modified z-score of an instance's starts, above
 * 3.5 among >= 3 devices) in the most collective instances, its count and the others' wait in them
 * (each instance's spread of exposed time), and its worst instance. */
typedef struct late_device {
    size_t device;                   /* index into a->devices; SIZE_MAX: none */
    uint32_t instances;
    int64_t wait_ps;
    const jp_comm_instance *worst;   /* the one with the longest wait */
} late_device;

static late_device most_late_device(const jp_analysis *a, uint32_t *count, int64_t *wait, size_t *worst) {
    late_device best = {.device = SIZE_MAX};
    for (size_t i = 0; i < a->n_comm_instances; i++) {
        const jp_comm_instance *in = &a->comm_instances[i];
        for (size_t d = 0; in->straggler[0] && d < a->n_devices; d++) {
            if (strcmp(in->straggler, a->devices[d].name) != 0) continue;
            count[d]++, wait[d] += in->wait_ps;
            if (worst[d] == SIZE_MAX || in->wait_ps > a->comm_instances[worst[d]].wait_ps) worst[d] = i;
            break;
        }
    }
    for (size_t d = 0; d < a->n_devices; d++)
        if (count[d] && (best.device == SIZE_MAX || count[d] > best.instances ||
                         (count[d] == best.instances && wait[d] > best.wait_ps)))
            best = (late_device){d, count[d], wait[d], &a->comm_instances[worst[d]]};
    return best;
}

/* straggling_device: within a host, one device reaches its collectives late (XLA:CPU's and a GPU
 * node's devices alike; across hosts `straggler` says it per host) in at least 3 instances, and the
 * others' waiting for it adds up to >= 5% of step time (bad from 15%); without steps, of the span. */
static void straggling_device(ctx *c) {
    const jp_analysis *a = c->a;
    double whole = c->step_total > 0 ? c->step_total : (double)a->span_ps;
    if (!a->n_comm_instances || !a->n_devices || !(whole > 0)) return;
    uint32_t *count = calloc(a->n_devices, sizeof *count);
    int64_t *wait = calloc(a->n_devices, sizeof *wait);
    size_t *worst = malloc(a->n_devices * sizeof *worst);
    late_device late = {.device = SIZE_MAX};
    if (count && wait && worst) {
        for (size_t d = 0; d < a->n_devices; d++) worst[d] = SIZE_MAX;
        late = most_late_device(a, count, wait, worst);
    }
    free(count), free(wait), free(worst);
    double pct = late.device == SIZE_MAX ? 0 : 100 * (double)late.wait_ps / whole;
    if (late.instances < 3 || pct < 5) return;
    size_t eligible = 0; /* the instances a straggler could be found in */
    for (size_t i = 0; i < a->n_comm_instances; i++) eligible += a->comm_instances[i].n_devices >= 3;
    const jp_comm_instance *w = late.worst;
    finding(c, "straggling_device", pct >= 15 ? JP_RATING_BAD : JP_RATING_WARNING,
            "One device reaches its collectives late",
            "Find what that device does before its collectives that the others do not: an uneven shard "
            "(padding, a larger slice of the batch), work only it runs (a branch on the device index, host "
            "callbacks, logging or metrics kept on one device), or a slower or throttled chip. `jaxprof comm "
            "--table comm_instances` lists every instance; the Timeline's exposed-communication rows show the "
            "waits.",
            "%s started late (modified z-score of its start above 3.5 among the devices) in %u of %zu collective "
            "instances on 3 or more devices; the others waited %.2f ms for it there, %.0f%% of %s; worst: %s "
            "(%s) instance %" PRIu64 ", z %.1f, wait %.2f ms",
            a->devices[late.device].name, late.instances, eligible, ms((double)late.wait_ps), pct,
            c->step_total > 0 ? "step time" : "the capture", w->name, w->module, w->index, w->z_max,
            ms((double)w->wait_ps));
}

int jp_findings_hosts_analyze(jp_arena *arena, jp_analysis *a, double step_total) {
    ctx c = {.arena = arena, .a = a, .step_total = step_total};
    a->n_findings = 0;
    if (!(a->findings = jp_arena_alloc(arena, MAX_FINDINGS * sizeof(jp_finding)))) return JP_ERR_NOMEM;
    straggler(&c);
    return JP_OK;
}

int jp_findings_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    ctx c = {.m = m, .arena = arena, .a = a};
    a->kpis = jp_arena_alloc(arena, KPI_COUNT * sizeof(jp_kpi)); /* one per row of the KPI table */
    a->findings = jp_arena_alloc(arena, MAX_FINDINGS * sizeof(jp_finding));
    if (!a->kpis || !a->findings || !(c.busy = device_busy(a, &c.n_busy))) return JP_ERR_NOMEM;
    c.step_total = (double)a->step_summary.total_ps;
    for (int p = 0; p < JP_PART_COUNT; p++) c.part[p] = (double)a->step_summary.part_ps[p];
    kpis(&c);
    straggler(&c);
    straggling_device(&c);
    recompilation(&c);
    mark_slow_steps(&c);
    for (size_t i = 0; i < a->n_steps; i++) {
        if (!is_typical(&c, i)) continue;
        c.n_typical++;
        for (int p = 0; p < JP_PART_COUNT; p++)
            c.typ_part[p] += (double)a->steps[i].part_ps[p], c.typ_total += (double)a->steps[i].part_ps[p];
    }
    slow_steps(&c);
    many_small_ops(&c);
    idle_and_host(&c);
    rate_above_peak(&c);
    large_transfers(&c);
    dominant_op(&c);
    peak_temporaries(&c);
    capture_health(&c);
    launch_bound(&c);
    host_wait_idle(&c);
    communication(&c);
    free(c.busy);
    /* most severe first, stable otherwise */
    for (size_t i = 1; i < a->n_findings; i++)
        for (size_t j = i; j > 0 && a->findings[j].severity > a->findings[j - 1].severity; j--) {
            jp_finding t = a->findings[j];
            a->findings[j] = a->findings[j - 1];
            a->findings[j - 1] = t;
        }
    return JP_OK;
}
