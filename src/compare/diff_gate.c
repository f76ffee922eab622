/* diff_gate.c - the regression gate (jp_diff_check): whether a diff breaks the step or op slowdown
 * limit, and a paragraph saying why, naming the ops that broke it. */
#include <math.h>
#include <string.h>

#include "base/error.h"
#include "base/text.h"
#include "jaxprof/jaxprof_results.h"

enum {
    WHY_OPS = 5 /* ops named in jp_diff_check's paragraph */
};

#define PS_PER_MS 1e9

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
