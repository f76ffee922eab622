/* findings.c - the KPI table rated good/warning/bad, and named problems, each with the numbers
 * behind it and a fix. A finding is only raised with evidence from this profile. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "analyses/analyses.h"

enum { MAX_KPIS = 5, MAX_FINDINGS = 8 };

const char *jp_rating_name(int rating) {
    switch (rating) {
    case JP_RATING_GOOD: return "good";
    case JP_RATING_WARNING: return "warning";
    case JP_RATING_BAD: return "bad";
    default: return "n/a";
    }
}

typedef struct ctx {
    const jp_model *m;
    jp_arena *arena;
    jp_analysis *a;
    double step_total;                 /* summed step time, ps */
    double part[JP_PART_COUNT];        /* summed over steps, ps */
} ctx;

/* Higher is better when good_above, else lower is better. */
static int rate(double v, double good, double bad, int good_above) {
    if (good_above) return v > good ? JP_RATING_GOOD : v >= bad ? JP_RATING_WARNING : JP_RATING_BAD;
    return v < good ? JP_RATING_GOOD : v <= bad ? JP_RATING_WARNING : JP_RATING_BAD;
}

static void kpi(ctx *c, const char *name, double value, const char *unit, int rating) {
    c->a->kpis[c->a->n_kpis++] = (jp_kpi){name, value, unit, rating};
}

static double ms(double ps) { return ps / 1e9; }

static double device_share(const ctx *c) {
    double busy = c->part[JP_PART_COMPUTE] + c->part[JP_PART_COLLECTIVE] + c->part[JP_PART_H2D] +
                  c->part[JP_PART_D2H] + c->part[JP_PART_D2D];
    return c->step_total > 0 ? busy / c->step_total : 0;
}

static void kpis(ctx *c) {
    const jp_analysis *a = c->a;
    if (c->step_total > 0) {
        double util = 100 * device_share(c);
        kpi(c, "device utilization", util, "%", rate(util, 80, 50, 1));
        double host = 100 * c->part[JP_PART_HOST] / c->step_total;
        kpi(c, "host overhead", host, "%", rate(host, 10, 20, 0));
    } else {
        kpi(c, "device utilization", 0, "%", JP_RATING_NA);
        kpi(c, "host overhead", 0, "%", JP_RATING_NA);
    }
    uint64_t n = 0;
    int64_t total = 0;
    if (a->n_kernels) {
        for (size_t i = 0; i < a->n_kernels; i++) n += a->kernels[i].count, total += a->kernels[i].total_ps;
    } else {
        for (size_t i = 0; i < a->n_ops; i++) n += a->ops[i].count, total += a->ops[i].self_ps;
    }
    double mean_ms = n ? ms((double)total / (double)n) : 0;
    kpi(c, a->n_kernels ? "kernel duration" : "op duration", mean_ms, "ms",
        n ? rate(mean_ms, 1, 0.1, 1) : JP_RATING_NA);
    double bytes = 0, peak_bw = 0;
    for (size_t i = 0; i < a->n_ops; i++) bytes += a->ops[i].bytes;
    for (size_t i = 0; i < a->n_devices; i++) peak_bw += a->devices[i].peak_bw;
    double bw = a->op_busy_ps > 0 && peak_bw > 0 && bytes > 0
                    ? 100 * bytes / ((double)a->op_busy_ps / 1e12) / peak_bw : 0;
    kpi(c, "memory bandwidth", bw, "%", bw > 0 ? rate(bw, 60, 40, 1) : JP_RATING_NA);
    double compile_s = 0;
    for (size_t i = 0; i < a->n_compiles; i++) compile_s += (double)a->compiles[i].dur_ps / 1e12;
    kpi(c, "compilation time", compile_s, "s", rate(compile_s, 2, 10, 0));
}

static void finding(ctx *c, const char *id, int severity, const char *title, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void finding(ctx *c, const char *id, int severity, const char *title, const char *fix, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    const char *evidence = jp_analysis_printf(c->arena, "%s", buf);
    if (evidence && c->a->n_findings < MAX_FINDINGS)
        c->a->findings[c->a->n_findings++] = (jp_finding){id, severity, title, evidence, fix};
}

/* ---- the named patterns -------------------------------------------------------------------- */

/* Many dispatches of tiny executables per step: un-jitted jnp calls, or a loop around small jits. */
static void many_small_ops(ctx *c) {
    const jp_analysis *a = c->a;
    if (a->n_steps < 2) return;
    uint64_t dispatches = 0;
    const jp_scope_stat *top = NULL; /* the most frequent dispatch */
    for (size_t i = 0; i < c->m->host.n; i++) {
        const jp_host_ev *h = &JP_VEC_AT(&c->m->host, jp_host_ev, i);
        dispatches += h->is_dispatch && jp_step_at(a, h->start_ps) >= 0;
    }
    for (size_t i = 0; i < a->n_scopes; i++)
        if (a->scopes[i].kind == JP_SCOPE_HOST && !strncmp(a->scopes[i].path, "PjitFunction(", 13) &&
            (!top || a->scopes[i].count > top->count))
            top = &a->scopes[i];
    double per_step = (double)dispatches / (double)a->n_steps;
    double busy_per = dispatches ? c->part[JP_PART_COMPUTE] / (double)dispatches : 0;
    if (per_step >= 20 && busy_per < 1e8) {
        finding(c, "many_small_ops", device_share(c) < 0.5 ? JP_RATING_BAD : JP_RATING_WARNING,
                "Many small device ops dispatched one by one",
                "jax.jit the whole step function so XLA fuses these ops into one executable: one "
                "dispatch per step instead of many, and no Python between ops.",
                "%.0f jitted dispatches per step (e.g. %s) averaging %.1f us of device compute each; "
                "device busy %.0f%% of step time",
                per_step, top ? top->path : "?", busy_per / 1e6, 100 * device_share(c));
        return;
    }
    uint64_t kernels = 0;
    for (size_t i = 0; i < a->n_kernels; i++) kernels += a->kernels[i].count;
    if (kernels && (double)kernels / (double)a->n_steps >= 100 && a->n_small_kernels * 2 >= kernels)
        finding(c, "many_small_ops", JP_RATING_WARNING, "Many small kernels",
                "Let XLA fuse more: jit larger functions, avoid Python loops of small ops inside jit "
                "(use lax.scan/vmap), and check for layout-changing transposes between ops.",
                "%.0f kernels per step, %.0f%% of them under 0.1 ms; top kernel %s",
                (double)kernels / (double)a->n_steps, 100.0 * (double)a->n_small_kernels / (double)kernels,
                a->kernels[0].name);
}

/* The user annotation with the most self time inside steps: the likely source of idle time. */
static const jp_scope_stat *top_user_scope(const jp_analysis *a) {
    const jp_scope_stat *best = NULL;
    for (size_t i = 0; i < a->n_scopes; i++) {
        const jp_scope_stat *s = &a->scopes[i];
        if (s->kind == JP_SCOPE_HOST && s->user && (!best || s->self_ps > best->self_ps)) best = s;
    }
    return best;
}

static void idle_and_host(ctx *c) {
    const jp_analysis *a = c->a;
    if (a->n_steps < 2 || c->step_total <= 0) return;
    double util = device_share(c), host = c->part[JP_PART_HOST] / c->step_total;
    size_t worst = 0;
    for (size_t i = 1; i < a->n_steps; i++)
        if (a->steps[i].part_ps[JP_PART_IDLE] + a->steps[i].part_ps[JP_PART_HOST] >
            a->steps[worst].part_ps[JP_PART_IDLE] + a->steps[worst].part_ps[JP_PART_HOST])
            worst = i;
    const jp_scope_stat *u = top_user_scope(a);
    char hint[256] = "";
    if (u && u->self_ps > 0)
        snprintf(hint, sizeof hint, "; host annotation '%s' takes %.2f ms per step", u->path,
                 ms((double)u->self_ps / (double)a->n_steps));
    if (util < 0.5)
        finding(c, "device_idle", JP_RATING_BAD, "Device idle between ops",
                "Overlap input with compute: prefetch batches on a background thread (or "
                "jax.device_put the next batch ahead), and avoid blocking calls (block_until_ready, "
                ".item(), np.asarray) inside the step.",
                "device busy %.0f%% of step time; %.2f ms idle or host-only per step; worst step %lld "
                "(%.2f ms of %.2f ms without device work)%s",
                100 * util, ms((c->part[JP_PART_IDLE] + c->part[JP_PART_HOST]) / (double)a->n_steps),
                (long long)a->steps[worst].step_num,
                ms((double)(a->steps[worst].part_ps[JP_PART_IDLE] + a->steps[worst].part_ps[JP_PART_HOST])),
                ms((double)a->steps[worst].dur_ps), hint);
    if (host > 0.2)
        finding(c, "host_bound", JP_RATING_BAD, "Steps are host-bound",
                "Move work off the Python thread: jit more of the step, prepare data asynchronously, "
                "and keep logging/metrics out of the hot loop (fetch them every N steps).",
                "host-only time is %.0f%% of step time (%.2f ms per step)%s", 100 * host,
                ms(c->part[JP_PART_HOST] / (double)a->n_steps), hint);
}

static void large_transfers(ctx *c) {
    const jp_analysis *a = c->a;
    if (a->n_steps < 1 || c->step_total <= 0) return;
    double t = c->part[JP_PART_H2D] + c->part[JP_PART_D2H] + c->part[JP_PART_D2D];
    uint64_t count = 0, bytes = 0;
    const jp_transfer_stat *big = &a->transfers[0];
    for (int k = 0; k < JP_XFER_COUNT; k++) {
        count += a->transfers[k].count;
        bytes += a->transfers[k].bytes;
        if (a->transfers[k].total_ps > big->total_ps) big = &a->transfers[k];
    }
    if (t / c->step_total < 0.1) return;
    char size[64] = "sizes not recorded";
    if (bytes) snprintf(size, sizeof size, "%.1f MB per step", (double)bytes / 1e6 / (double)a->n_steps);
    finding(c, "large_transfers", t / c->step_total >= 0.25 ? JP_RATING_BAD : JP_RATING_WARNING,
            "Large host<->device transfers",
            "Keep data on the device: jax.device_put datasets or batches once (or prefetch them), "
            "avoid numpy arrays inside the step, and fetch results to the host only every N steps.",
            "transfers take %.0f%% of step time (%.2f ms per step, %.1f per step, %s); mostly %s, "
            "longest %.2f ms",
            100 * t / c->step_total, ms(t / (double)a->n_steps), (double)count / (double)a->n_steps, size,
            big->kind, ms((double)big->max_ps));
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

static void dominant_op(ctx *c) {
    const jp_analysis *a = c->a;
    const jp_op_stat *top = NULL;
    for (size_t i = 0; i < a->n_ops; i++)
        if (!top || a->ops[i].self_ps > top->self_ps) top = &a->ops[i];
    if (!top || a->op_self_ps <= 0) return;
    double share = (double)top->self_ps / (double)a->op_self_ps;
    if (share <= 0.5) return;
    finding(c, "dominant_op", JP_RATING_WARNING, "One op dominates device time", dominant_fix(top->category),
            "%s (%s, %s) takes %.0f%% of device time: %llu runs, %.2f ms each%s%s", top->name, top->category,
            top->module, 100 * share, (unsigned long long)top->count,
            ms((double)top->total_ps / (double)top->count), *top->scope ? ", scope " : "", top->scope);
}

static void recompilation(ctx *c) {
    const jp_analysis *a = c->a;
    uint64_t n = 0;
    double total = 0;
    const jp_compile *first = NULL;
    for (size_t i = 0; i < a->n_compiles; i++) {
        if (!a->compiles[i].steady) continue;
        n++;
        total += (double)a->compiles[i].dur_ps;
        if (!first) first = &a->compiles[i];
    }
    if (!n) return;
    finding(c, "recompilation", JP_RATING_BAD, "Recompilation in the steady state",
            "Keep shapes and static arguments fixed across steps: pad or bucket variable-length inputs, "
            "pass Python scalars as arrays (or mark them static_argnums only if they never change), and "
            "do not create new jitted closures inside the loop.",
            "%llu compilations after the first step taking %.1f ms in total; first in step %lld (%s)",
            (unsigned long long)n, ms(total), (long long)first->step_num, *first->module ? first->module : "?");
}

int jp_findings_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    ctx c = {m, arena, a, 0, {0}};
    a->kpis = jp_arena_alloc(arena, MAX_KPIS * sizeof(jp_kpi));
    a->findings = jp_arena_alloc(arena, MAX_FINDINGS * sizeof(jp_finding));
    if (!a->kpis || !a->findings) return JP_ERR_NOMEM;
    c.step_total = (double)a->step_summary.total_ps;
    for (int p = 0; p < JP_PART_COUNT; p++) c.part[p] = (double)a->step_summary.part_ps[p];
    kpis(&c);
    recompilation(&c);
    many_small_ops(&c);
    idle_and_host(&c);
    large_transfers(&c);
    dominant_op(&c);
    /* most severe first, stable otherwise */
    for (size_t i = 1; i < a->n_findings; i++)
        for (size_t j = i; j > 0 && a->findings[j].severity > a->findings[j - 1].severity; j--) {
            jp_finding t = a->findings[j];
            a->findings[j] = a->findings[j - 1];
            a->findings[j - 1] = t;
        }
    return JP_OK;
}
