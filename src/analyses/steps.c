/* steps.c - finds the training steps (markers, device Steps lines, or repeated executions) and
 * breaks each step's wall time into compute, collectives, transfers, compile, host and idle. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "base/interval.h"

const char *jp_part_name(int part) {
    static const char *const names[JP_PART_COUNT] = {"compute", "collective", "h2d", "d2h", "d2d",
                                                     "compile", "host", "idle"};
    return part >= 0 && part < JP_PART_COUNT ? names[part] : "?";
}

static int cmp_step(const void *a, const void *b) {
    const jp_step *x = a, *y = b;
    if (x->start_ps != y->start_ps) return x->start_ps < y->start_ps ? -1 : 1;
    return (x->step_num > y->step_num) - (x->step_num < y->step_num);
}

long jp_step_at(const jp_analysis *a, int64_t t) {
    size_t lo = 0, hi = a->n_steps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->steps[mid].start_ps <= t) lo = mid + 1;
        else hi = mid;
    }
    if (!lo) return -1;
    const jp_step *s = &a->steps[lo - 1];
    return t < s->start_ps + s->dur_ps ? (long)(lo - 1) : -1;
}

/* How many steps' markers start at or before t; *hint (an earlier t's answer, 0 at first) is
 * tried first, then the step after it, and only then a binary search. */
static size_t markers_up_to(const jp_analysis *a, int64_t t, size_t *hint) {
    const jp_step *st = a->steps;
    size_t n = a->n_steps, h = *hint <= n ? *hint : n;
    for (size_t k = h; k <= h + 1 && k <= n; k++)
        if ((k == 0 || st[k - 1].host_start_ps <= t) && (k == n || st[k].host_start_ps > t)) return *hint = k;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st[mid].host_start_ps <= t) lo = mid + 1;
        else hi = mid;
    }
    return *hint = lo;
}

long jp_step_issued_at(const jp_analysis *a, int64_t t) {
    size_t hint = 0;
    return jp_step_issued_at_from(a, t, &hint);
}

long jp_step_issued_at_from(const jp_analysis *a, int64_t t, size_t *hint) {
    size_t lo = markers_up_to(a, t, hint); /* the last step the host issued at or before t */
    const jp_step *s = lo ? &a->steps[lo - 1] : NULL;
    if (s && s->host_dur_ps > 0 && t < s->host_start_ps + s->host_dur_ps) return (long)(lo - 1);
    /* after the last marker here ended: in a step window that may be a later step's marker, which
     * the window does not hold (the device, behind the host, still runs this step); the window
     * cannot tell, so the time is no step's. The whole run, which holds the next marker, gives a
     * time between two markers to the step whose span holds it. */
    if (s && s->host_dur_ps > 0 && lo == a->n_steps) return -1;
    long k = jp_step_at(a, t);
    /* inside step k's span but before its marker began: an earlier step issued it (a step window
     * holds only its own steps), not k */
    return k >= 0 && a->steps[k].host_dur_ps > 0 && t < a->steps[k].host_start_ps ? -1 : k;
}

long jp_step_at_hint(const jp_analysis *a, long hint, int64_t t) {
    if (hint >= 0 && (size_t)hint < a->n_steps) {
        const jp_step *s = &a->steps[hint];
        if (t >= s->start_ps && t < s->start_ps + s->dur_ps && ((size_t)hint + 1 == a->n_steps || s[1].start_ps > t))
            return hint;
    }
    return jp_step_at(a, t);
}

/* StepTraceAnnotation markers; one step number seen on several hosts or threads is one step
 * spanning all of them. */
static size_t steps_from_markers(const jp_model *m, jp_vec *out) {
    jp_map by_num = {0};
    for (size_t i = 0; i < m->host.n; i++) {
        const jp_host_ev *h = &JP_VEC_AT(&m->host, jp_host_ev, i);
        if (h->kind != JP_HOST_STEP) continue;
        int found;
        uint32_t k = jp_map_get_or_put(&by_num, (uint64_t)h->step_num, 0, 0, (uint32_t)out->n, &found);
        if (k == UINT32_MAX) break;
        if (!found) {
            jp_step *s = jp_vec_push(out, sizeof *s);
            if (!s) break;
            s->step_num = h->step_num;
            s->start_ps = s->host_start_ps = h->start_ps;
            s->dur_ps = s->host_dur_ps = h->end_ps - h->start_ps;
            continue;
        }
        jp_step *s = &JP_VEC_AT(out, jp_step, k);
        int64_t end = s->start_ps + s->dur_ps;
        if (h->start_ps < s->start_ps) s->start_ps = h->start_ps;
        if (h->end_ps > end) end = h->end_ps;
        s->dur_ps = s->host_dur_ps = end - s->start_ps;
        s->host_start_ps = s->start_ps;
    }
    jp_map_deinit(&by_num);
    return out->n;
}

/* Consecutive runs of one repeated thing (executions of a module, dispatches of a function). Each
 * device runs its own: the k-th run on every device is step k (an SPMD program runs once per
 * chip), spanning the earliest of their starts to the latest of their ends. Step i then lasts
 * from its start to step i+1's start, the last one to its own end. */
static int steps_from_runs(const jp_exec *runs, size_t n, const char *module, jp_vec *out) {
    jp_map nth = {0}; /* device -> runs seen on it so far */
    int rc = JP_OK;
    for (size_t i = 0; i < n; i++) {
        if (runs[i].module != module) continue;
        uint32_t *k = jp_map_value(&nth, runs[i].device, 0, 0, 0, NULL);
        int fresh = k && *k == out->n; /* runs come by start: step k is new or already begun */
        jp_step *s = !k ? NULL : fresh ? jp_vec_push(out, sizeof *s) : &JP_VEC_AT(out, jp_step, *k);
        if (!s) {
            rc = JP_ERR_NOMEM;
            break;
        }
        int64_t end = runs[i].end_ps;
        if (fresh) {
            s->step_num = (int64_t)*k;
            s->start_ps = runs[i].start_ps;
        } else if (s->start_ps + s->dur_ps > end) {
            end = s->start_ps + s->dur_ps; /* a run starts no earlier than step k's first */
        }
        s->dur_ps = end - s->start_ps;
        (*k)++;
    }
    jp_map_deinit(&nth);
    jp_step *s = out->data;
    for (size_t i = 0; i + 1 < out->n; i++) s[i].dur_ps = s[i + 1].start_ps - s[i].start_ps;
    return rc;
}

/* The module with the most total time among those run at least twice; by_count: the one run most
 * often, the most total time between those (a dispatch's time is the host's, which a compile
 * inflates: a benchmark's 12 calls of a helper that compiled outweigh its 18 of the GEMM). */
static const char *dominant(const jp_exec *runs, size_t n, int by_count) {
    jp_map idx = {0};
    int64_t *total = calloc(n ? n : 1, sizeof *total);
    uint32_t *count = calloc(n ? n : 1, sizeof *count);
    const char *best = NULL;
    int64_t best_total = -1;
    uint32_t best_count = 0;
    for (size_t pass = 0; total && count && pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            uint32_t k = jp_map_get_or_put(&idx, jp_ptr_key(runs[i].module), 0, 0, (uint32_t)idx.n, NULL);
            if (k == UINT32_MAX) break;
            if (pass == 0) {
                total[k] += runs[i].end_ps - runs[i].start_ps;
                count[k]++;
            } else if (count[k] >= 2 && (by_count ? count[k] > best_count ||
                                                     (count[k] == best_count && total[k] > best_total)
                                                   : total[k] > best_total)) {
                best_total = total[k], best_count = count[k];
                best = runs[i].module;
            }
        }
    }
    free(total);
    free(count);
    jp_map_deinit(&idx);
    return best;
}

/* Host-side dispatches PjitFunction(f), as runs named by the function: the outermost ones, a jit
 * called inside a jit being part of its caller's run. A dispatch inside a user's annotation (a
 * TraceAnnotation or jaxprof.trace(name=...) around the loop) counts. */
static int host_dispatches(const jp_model *m, jp_vec *out) {
    uint32_t line = UINT32_MAX;
    int64_t open_end = INT64_MIN; /* the end of the last outermost dispatch on `line` */
    for (size_t i = 0; i < m->host.n; i++) { /* by line, then start: a nested one follows its caller */
        const jp_host_ev *h = &JP_VEC_AT(&m->host, jp_host_ev, i);
        if (!h->is_dispatch) continue;
        if (h->line == line && h->start_ps < open_end) continue;
        line = h->line, open_end = h->end_ps;
        jp_exec *x = jp_vec_push(out, sizeof *x);
        if (!x) return JP_ERR_NOMEM;
        *x = (jp_exec){.module = h->name, .start_ps = h->start_ps, .end_ps = h->end_ps, .device = UINT32_MAX};
    }
    if (out->n > 1) qsort(out->data, out->n, sizeof(jp_exec), jp_exec_cmp_start);
    return JP_OK;
}

/* The last step whose host_start_ps is <= t, or -1 (steps sorted by it). */
static long step_issued_before(const jp_step *s, size_t n, int64_t t) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid].host_start_ps <= t) lo = mid + 1;
        else hi = mid;
    }
    return (long)lo - 1;
}

/* GPU: the device work each dispatch launched, by correlation id. A kernel belongs to the step
 * whose dispatch began last before its launch call did (JAX launches on the dispatching thread),
 * however late the device ran it: with the host ahead, the previous step's kernels still run
 * after the next dispatch began, where the time rule alone would hand them to the next step
 * (h200_api_trace: 142/113/171 kernels for 142 each). end[k] takes each such work's end. */
static int extend_by_launches(const jp_model *m, const jp_step *s, size_t ns, int64_t *end) {
    jp_map calls = {0}; /* (correlation id, host) -> index into launch_calls */
    const jp_launch_call *c = m->launch_calls.data;
    int rc = JP_OK;
    for (size_t i = 0; i < m->launch_calls.n && rc == JP_OK; i++)
        if (jp_map_get_or_put(&calls, c[i].correlation, jp_model_line_host(m, c[i].line), 0, (uint32_t)i, NULL) ==
            UINT32_MAX)
            rc = JP_ERR_NOMEM;
    for (size_t i = 0; i < m->ops.n && rc == JP_OK && calls.n; i++) {
        const jp_op_ev *ev = &JP_VEC_AT(&m->ops, jp_op_ev, i);
        if (!(ev->launch & JP_OP_LAUNCH_SET)) continue;
        uint32_t at = jp_map_get(&calls, jp_op_launch_id(ev->launch), jp_model_line_host(m, ev->line), 0);
        long k = at == UINT32_MAX ? -1 : step_issued_before(s, ns, c[at].start_ps);
        if (k >= 0 && ev->end_ps > end[k]) end[k] = ev->end_ps;
    }
    for (size_t i = 0; i < m->launch_work.n && rc == JP_OK && calls.n; i++) { /* copies, kept apart */
        const jp_launch_ev *w = &JP_VEC_AT(&m->launch_work, jp_launch_ev, i);
        uint32_t at = jp_map_get(&calls, w->correlation, jp_model_line_host(m, w->line), 0);
        long k = at == UINT32_MAX ? -1 : step_issued_before(s, ns, c[at].start_ps);
        if (k >= 0 && w->end_ps > end[k]) end[k] = w->end_ps;
    }
    jp_map_deinit(&calls);
    return rc;
}

/* Host dispatches of one function, a step each. A step lasts from its dispatch to the later of the
 * dispatch's end and the end of the device work it launched: work whose launch call it made
 * (extend_by_launches), and the device activity that starts before the next dispatch (for the
 * last step, any after its dispatch: the capture ends after a device sync). The time from there to the next dispatch, when the program ran other Python and
 * the device nothing of this function, is the step's gap, in no step. A step starts no earlier
 * than the previous one's device work ended, so steps never overlap. */
static int steps_from_dispatches(const jp_model *m, const jp_exec *runs, size_t n, const char *module, jp_vec *out) {
    for (size_t i = 0; i < n; i++) {
        if (runs[i].module != module) continue;
        jp_step *s = jp_vec_push(out, sizeof *s);
        if (!s) return JP_ERR_NOMEM;
        s->step_num = (int64_t)(out->n - 1);
        s->start_ps = s->host_start_ps = runs[i].start_ps;
        s->dur_ps = s->host_dur_ps = runs[i].end_ps - runs[i].start_ps;
    }
    jp_step *s = out->data;
    size_t ns = out->n;
    int64_t *end = malloc((ns ? ns : 1) * sizeof *end);
    if (!end) return JP_ERR_NOMEM;
    for (size_t k = 0; k < ns; k++) end[k] = s[k].host_start_ps + s[k].host_dur_ps;
    for (size_t i = 0; i < m->spans.n; i++) {
        const jp_span *sp = &JP_VEC_AT(&m->spans, jp_span, i);
        long k = sp->device == UINT32_MAX ? -1 : step_issued_before(s, ns, sp->start_ps);
        if (k >= 0 && sp->end_ps > end[k]) end[k] = sp->end_ps;
    }
    if (extend_by_launches(m, s, ns, end)) {
        free(end);
        return JP_ERR_NOMEM;
    }
    int64_t prev_end = INT64_MIN;
    for (size_t k = 0; k < ns; k++) {
        int64_t start = s[k].host_start_ps > prev_end ? s[k].host_start_ps : prev_end;
        int64_t stop = end[k] > start ? end[k] : start;
        s[k].start_ps = start;
        s[k].dur_ps = stop - start;
        s[k].gap_ps = k + 1 < ns && s[k + 1].host_start_ps > stop ? s[k + 1].host_start_ps - stop : 0;
        prev_end = stop;
    }
    free(end);
    return JP_OK;
}

/* The marker (by original interval) containing t, or -1. */
static long marker_at(const jp_step *s, size_t n, int64_t t) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid].start_ps <= t) lo = mid + 1;
        else hi = mid;
    }
    return lo && t <= s[lo - 1].start_ps + s[lo - 1].dur_ps ? (long)lo - 1 : -1;
}

/* The next ordinal (0, 1, ...) of key: how many times it was asked for before. */
static uint32_t ordinal(jp_map *counts, const char *key) {
    uint32_t *count = jp_map_value(counts, jp_ptr_key(key), 0, 0, 0, NULL);
    return count ? (*count)++ : UINT32_MAX;
}

/* When each marked step's device work ends: the k-th dispatch PjitFunction(f) on the host ran
 * the k-th execution of module jit_f (XLA:CPU groups its ops by run_id). */
static void device_ends(const jp_model *m, const jp_step *s, size_t n, int64_t *end) {
    jp_vec dispatches = {0};
    const jp_host_ev *prev = NULL;
    for (size_t i = 0; i < m->host.n; i++) {
        const jp_host_ev *h = &JP_VEC_AT(&m->host, jp_host_ev, i);
        if (!h->is_dispatch) continue;
        int nested = prev && prev->line == h->line && prev->name == h->name && h->start_ps < prev->end_ps;
        if (!nested) prev = h;
        char buf[JP_MODULE_NAME_MAX];
        jp_text module = jp_text_make(buf, sizeof buf);
        jp_host_dispatch_module(h->name, &module);
        /* a module never executed was never interned: then there is nothing to pair it with */
        const char *mod = !nested && !module.cut ? jp_intern_lookup(&m->intern, module.buf, module.len) : NULL;
        jp_exec *d = mod ? jp_vec_push(&dispatches, sizeof *d) : NULL;
        if (d) *d = (jp_exec){.module = mod, .start_ps = h->start_ps, .end_ps = h->end_ps, .device = UINT32_MAX};
    }
    if (dispatches.n > 1) qsort(dispatches.data, dispatches.n, sizeof(jp_exec), jp_exec_cmp_start);
    const jp_exec *x = m->execs.data, *d = dispatches.data;
    /* the k-th dispatch of a module <-> its k-th execution: number both per module, in time order.
     * One dispatch runs on every device of its host (XLA:CPU's devices share the run_id): an
     * execution is a (module, run_id, host), ending when its last device's part ends. */
    jp_map nth = {0}, ordinals = {0}, runs = {0};
    int64_t *run_end = malloc((m->execs.n ? m->execs.n : 1) * sizeof *run_end);
    for (size_t j = 0; j < m->execs.n && run_end; j++) {
        int seen = 0;
        uint32_t first = x[j].run_id ? jp_map_get_or_put(&runs, jp_ptr_key(x[j].module), (uint64_t)x[j].run_id,
                                                          x[j].host, (uint32_t)j, &seen)
                                     : (uint32_t)j;
        if (first == UINT32_MAX) break;
        run_end[j] = x[j].end_ps;
        if (seen) {
            if (x[j].end_ps > run_end[first]) run_end[first] = x[j].end_ps;
            continue;
        }
        uint32_t k = ordinal(&ordinals, x[j].module);
        if (k == UINT32_MAX) break;
        jp_map_get_or_put(&nth, jp_ptr_key(x[j].module), k, 0, (uint32_t)j, NULL);
    }
    jp_map_deinit(&runs);
    jp_map_deinit(&ordinals);
    for (size_t i = 0; i < dispatches.n; i++) {
        int found;
        uint32_t k = ordinal(&ordinals, d[i].module);
        uint32_t j = k == UINT32_MAX ? UINT32_MAX : jp_map_get_or_put(&nth, jp_ptr_key(d[i].module), k, 0, UINT32_MAX - 1, &found);
        long step = run_end && k != UINT32_MAX && found && j < m->execs.n ? marker_at(s, n, d[i].start_ps) : -1;
        if (step >= 0 && run_end[j] > end[step]) end[step] = run_end[j];
    }
    free(run_end);
    jp_map_deinit(&ordinals);
    jp_map_deinit(&nth);
    jp_vec_free(&dispatches);
}

/* JAX dispatches asynchronously: a step marker closes once the host has queued the work, and the
 * device runs it later. A step therefore starts at its marker, or when the previous step's device
 * work ends if that is later (a device-bound loop), and the last step lasts until its device work
 * is done. Steps stay contiguous, so their times add up to the wall time they cover. Without
 * execution ids (GPU/TPU here) the last step still takes every device activity that started
 * after its marker began (the capture ends after a device sync, so that is its queued work). */
static void extend_marked_steps(const jp_model *m, jp_vec *steps) {
    jp_step *s = steps->data;
    size_t n = steps->n;
    int64_t *end = calloc(n, sizeof *end);
    if (!n || !end) {
        free(end);
        return;
    }
    for (size_t i = 0; i < n; i++) end[i] = s[i].start_ps + s[i].dur_ps;
    device_ends(m, s, n, end);
    const jp_step *last = &s[n - 1];
    for (size_t i = 0; i < m->spans.n; i++) {
        const jp_span *sp = &JP_VEC_AT(&m->spans, jp_span, i);
        if (sp->device != UINT32_MAX && sp->start_ps >= last->start_ps && sp->end_ps > end[n - 1])
            end[n - 1] = sp->end_ps; /* no later step: device work after its marker is its own */
    }
    int64_t start = s[0].start_ps;
    for (size_t i = 0; i < n; i++) {
        int64_t next = i + 1 < n ? s[i + 1].start_ps : end[i];
        if (i + 1 < n && end[i] > next) next = end[i];
        if (next < start) next = start;
        s[i].start_ps = start;
        s[i].dur_ps = next - start;
        start = next;
    }
    free(end);
}

/* TPU Steps lines, one step per name (numbered by it when it is a number); the same name on
 * several hosts is one step spanning all of them, as with markers. */
static int steps_from_device_lines(const jp_model *m, jp_vec *out) {
    jp_map by_name = {0};
    int rc = JP_OK;
    for (size_t i = 0; i < m->device_steps.n && rc == JP_OK; i++) {
        const jp_exec *x = &JP_VEC_AT(&m->device_steps, jp_exec, i);
        int found;
        uint32_t k = jp_map_get_or_put(&by_name, jp_ptr_key(x->module), 0, 0, (uint32_t)out->n, &found);
        jp_step *s = k == UINT32_MAX ? NULL : found ? &JP_VEC_AT(out, jp_step, k) : jp_vec_push(out, sizeof *s);
        if (!s) {
            rc = JP_ERR_NOMEM;
        } else if (!found) {
            char *end;
            long long num = strtoll(x->module, &end, 10);
            s->step_num = *end == '\0' && end != x->module ? num : (int64_t)k;
            s->start_ps = x->start_ps;
            s->dur_ps = x->end_ps - x->start_ps;
        } else {
            int64_t end = s->start_ps + s->dur_ps > x->end_ps ? s->start_ps + s->dur_ps : x->end_ps;
            if (x->start_ps < s->start_ps) s->start_ps = x->start_ps;
            s->dur_ps = end - s->start_ps;
        }
    }
    jp_map_deinit(&by_name);
    return rc;
}

static const char *find_steps(const jp_model *m, jp_arena *arena, jp_vec *steps) {
    if (steps_from_markers(m, steps)) {
        qsort(steps->data, steps->n, sizeof(jp_step), cmp_step);
        extend_marked_steps(m, steps);
        return "StepTraceAnnotation";
    }
    steps->n = 0;
    if (m->device_steps.n) return steps_from_device_lines(m, steps) == JP_OK ? "device Steps line" : NULL;
    const char *mod = dominant(m->execs.data, m->execs.n, 0);
    if (mod) {
        if (steps_from_runs(m->execs.data, m->execs.n, mod, steps)) return NULL;
        return jp_analysis_printf(arena, "executions of %s", mod);
    }
    jp_vec dispatches = {0};
    if (host_dispatches(m, &dispatches) == JP_OK && (mod = dominant(dispatches.data, dispatches.n, 1))) {
        int rc = steps_from_dispatches(m, dispatches.data, dispatches.n, mod, steps);
        jp_vec_free(&dispatches);
        if (rc) return NULL;
        return jp_analysis_printf(arena, "host dispatches of %s", mod);
    }
    jp_vec_free(&dispatches);
    return "none";
}

/* ---- the breakdown sweep ------------------------------------------------------------------
 * Every activity span opens its part at its start and closes it at its end; sweeping those times
 * in order keeps a count of open spans per part. Each instant goes to the highest-priority open
 * part (the lowest jp_part: compute > collective > transfers > compile > host), or to idle when
 * none is open. The sweep keeps each part's running total of time; a step's part is that total at
 * the step's end minus the total at its start, so its parts sum exactly to its duration (idle
 * takes the rest). Only whether a part is open matters, so each part's spans are first merged into
 * their union (sorted by start: spans come a line at a time, each line in time order, so the sort
 * merges a few runs), whose starts and ends are then both in order, where the spans' own ends are
 * not (nested spans); the sweep merges the parts' unions on the fly and visits step bounds in time
 * order. Totals are kept modulo 2^64; a step's differences are exact since they fit its duration. */

typedef struct bound {
    int64_t t;     /* a step's start or end */
    uint32_t step; /* index into the steps */
    uint8_t is_end;
} bound;

static int cmp_bound(const void *a, const void *b) {
    const bound *x = a, *y = b;
    return (x->t > y->t) - (x->t < y->t);
}

static int top_part(const uint32_t open[JP_PART_COUNT]) {
    for (int p = 0; p < JP_PART_IDLE; p++)
        if (open[p]) return p;
    return JP_PART_IDLE;
}

/* Adds (end) or subtracts (start) the running totals, plus `extra` on `part`, to a step. */
static void apply_bound(jp_step *s, const bound *b, const uint64_t acc[JP_PART_COUNT], int part, uint64_t extra) {
    for (int p = 0; p < JP_PART_IDLE; p++) {
        uint64_t v = acc[p] + (p == part ? extra : 0);
        uint64_t cur = (uint64_t)s->part_ps[p];
        s->part_ps[p] = (int64_t)(b->is_end ? cur + v : cur - v);
    }
}

/* Where each part's union stands: u[head[p]] is its next interval, u[off[p + 1]] is past its last;
 * in[p] says whether the sweep is inside u[head[p]] (its end is next) or before it (its start). */
typedef struct unions {
    const jp_interval *u;
    size_t off[JP_PART_COUNT + 1], head[JP_PART_COUNT];
    uint8_t in[JP_PART_COUNT];
} unions;

/* The next time any part opens or closes, or 0 with *any = 0 when all are done. */
static int64_t next_time(const unions *w, int *any) {
    int64_t best = 0;
    *any = 0;
    for (int p = 0; p < JP_PART_IDLE; p++) {
        if (w->head[p] == w->off[p + 1]) continue;
        const jp_interval *iv = &w->u[w->head[p]];
        int64_t t = w->in[p] ? iv->end : iv->start;
        if (!*any || t < best) best = t, *any = 1;
    }
    return best;
}

/* Each part's spans as sorted disjoint intervals in w->u (the caller frees it). JP_ERR_NOMEM or 0. */
static int part_unions(const jp_model *m, unions *w) {
    memset(w, 0, sizeof *w);
    jp_interval *u = malloc((m->spans.n ? m->spans.n : 1) * sizeof *u);
    if (!u) return JP_ERR_NOMEM;
    size_t at[JP_PART_COUNT + 1] = {0};
    for (size_t i = 0; i < m->spans.n; i++) at[JP_VEC_AT(&m->spans, jp_span, i).part + 1]++;
    for (int p = 0; p < JP_PART_COUNT; p++) at[p + 1] += at[p];
    memcpy(w->off, at, sizeof w->off);
    for (size_t i = 0; i < m->spans.n; i++) {
        const jp_span *s = &JP_VEC_AT(&m->spans, jp_span, i);
        u[at[s->part]++] = (jp_interval){s->start_ps, s->end_ps};
    }
    size_t n = 0;
    for (int p = 0; p < JP_PART_COUNT; p++) { /* each union moved down to follow the previous one */
        size_t lo = w->off[p], len = w->off[p + 1] - lo;
        jp_intervals_sort(u + lo, len);
        len = jp_intervals_merge_sorted(u + lo, len);
        memmove(u + n, u + lo, len * sizeof *u);
        w->off[p] = n;
        n += len;
    }
    w->off[JP_PART_COUNT] = n;
    memcpy(w->head, w->off, sizeof w->head);
    w->u = u;
    return JP_OK;
}

static int sweep(const jp_model *m, jp_step *steps, size_t n_steps) {
    unions w;
    bound *q = malloc((n_steps ? 2 * n_steps : 1) * sizeof *q);
    if (!q || part_unions(m, &w) != JP_OK) {
        free(q);
        return JP_ERR_NOMEM;
    }
    size_t nq = 0;
    for (size_t i = 0; i < n_steps; i++) {
        if (steps[i].dur_ps <= 0) continue; /* covers nothing: all of it is idle */
        q[nq++] = (bound){steps[i].start_ps, (uint32_t)i, 0};
        q[nq++] = (bound){steps[i].start_ps + steps[i].dur_ps, (uint32_t)i, 1};
    }
    jp_sort_by_key64(q, nq, sizeof *q, offsetof(bound, t), 1, cmp_bound);
    uint32_t open[JP_PART_COUNT] = {0};
    uint64_t acc[JP_PART_COUNT] = {0};
    size_t qi = 0;
    int any;
    int64_t now = next_time(&w, &any);
    while (any) {
        for (int p = 0; p < JP_PART_IDLE; p++) /* past every start and end at now (a union's intervals never touch) */
            while (w.head[p] < w.off[p + 1] && (w.in[p] ? w.u[w.head[p]].end : w.u[w.head[p]].start) == now) {
                w.head[p] += w.in[p];
                w.in[p] ^= 1;
            }
        for (int p = 0; p < JP_PART_IDLE; p++) open[p] = w.in[p];
        int64_t next = next_time(&w, &any);
        if (!any) break;
        int part = top_part(open);
        for (; qi < nq && q[qi].t <= now; qi++) apply_bound(&steps[q[qi].step], &q[qi], acc, part, 0);
        for (; qi < nq && q[qi].t < next; qi++)
            apply_bound(&steps[q[qi].step], &q[qi], acc, part, (uint64_t)q[qi].t - (uint64_t)now);
        acc[part] += (uint64_t)next - (uint64_t)now;
        now = next;
    }
    for (; qi < nq; qi++) apply_bound(&steps[q[qi].step], &q[qi], acc, JP_PART_IDLE, 0);
    for (size_t i = 0; i < n_steps; i++) {
        uint64_t idle = (uint64_t)steps[i].dur_ps;
        for (int p = 0; steps[i].dur_ps > 0 && p < JP_PART_IDLE; p++) idle -= (uint64_t)steps[i].part_ps[p];
        steps[i].part_ps[JP_PART_IDLE] = (int64_t)((uint64_t)steps[i].part_ps[JP_PART_IDLE] + idle);
    }
    free((void *)w.u);
    free(q);
    return JP_OK;
}

/* The index of the last boundary <= t in b[0..n) (sorted, distinct), or -1 when t < b[0]. */
static ptrdiff_t bucket_of(const int64_t *b, size_t n, int64_t t) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b[mid] <= t) lo = mid + 1;
        else hi = mid;
    }
    return (ptrdiff_t)lo - 1;
}

/* Each step's n_ops: the ops starting in [start, start + dur). The steps' starts and ends cut time
 * into buckets; ops are counted per bucket (a binary search each, no sort of the ops) and a step
 * sums the buckets it spans, so overlapping steps are counted right too. */
static int count_ops(const jp_model *m, jp_step *steps, size_t n_steps) {
    int64_t *b = malloc((2 * n_steps + 1) * sizeof *b);
    uint64_t *below = calloc(2 * n_steps + 2, sizeof *below); /* below[j + 1]: ops in buckets < j+1 */
    if (!b || !below) {
        free(b);
        free(below);
        return JP_ERR_NOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < n_steps; i++) {
        b[n++] = steps[i].start_ps;
        b[n++] = steps[i].start_ps + steps[i].dur_ps;
    }
    jp_sort_by_key64(b, n, sizeof *b, 0, 1, jp_cmp_i64);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!k || b[i] != b[k - 1]) b[k++] = b[i];
    for (size_t i = 0; i < m->ops.n; i++) {
        ptrdiff_t j = bucket_of(b, k, JP_VEC_AT(&m->ops, jp_op_ev, i).start_ps);
        if (j >= 0) below[j + 1]++;
    }
    for (size_t j = 1; j <= k; j++) below[j] += below[j - 1];
    for (size_t i = 0; i < n_steps; i++) {
        ptrdiff_t from = bucket_of(b, k, steps[i].start_ps), to = bucket_of(b, k, steps[i].start_ps + steps[i].dur_ps);
        steps[i].n_ops = to > from ? below[to] - below[from] : 0;
    }
    free(b);
    free(below);
    return JP_OK;
}

/* Steps of a device Steps line may overlap (one step spans every chip), so their sum can exceed
 * the profile's span: it saturates rather than overflow. */
static int64_t add_sat(int64_t x, int64_t y) {
    int64_t r;
    return __builtin_add_overflow(x, y, &r) ? (y > 0 ? INT64_MAX : INT64_MIN) : r;
}

/* Whether step s counts in the summary: steps with no device work are left out, unless every step
 * is one (a host-only profile), so that they do not pull the step time and utilization down. */
static int summarized(const jp_step *s, size_t n_no_device, size_t n) {
    return !s->no_device_work || n_no_device == n;
}

void jp_steps_summarize(jp_analysis *a) {
    jp_step_summary *sum = &a->step_summary;
    size_t n_all = a->n_steps, n = 0, n_no_device = 0;
    if (!n_all) return;
    for (size_t i = 0; i < n_all; i++) n_no_device += a->steps[i].no_device_work != 0;
    sum->n_no_device = n_no_device == n_all ? 0 : n_no_device;
    int64_t *d = malloc(n_all * sizeof *d);
    double mean = 0, var = 0;
    for (size_t i = 0; i < n_all; i++) {
        sum->gap_ps = add_sat(sum->gap_ps, a->steps[i].gap_ps);
        if (!summarized(&a->steps[i], n_no_device, n_all)) continue;
        if (d) d[n] = a->steps[i].dur_ps;
        n++;
        sum->total_ps = add_sat(sum->total_ps, a->steps[i].dur_ps);
        for (int p = 0; p < JP_PART_COUNT; p++) sum->part_ps[p] = add_sat(sum->part_ps[p], a->steps[i].part_ps[p]);
    }
    for (size_t i = 0; i < n_all; i++)
        if (summarized(&a->steps[i], n_no_device, n_all)) mean += (double)a->steps[i].dur_ps / (double)n;
    for (size_t i = 0; i < n_all; i++)
        if (summarized(&a->steps[i], n_no_device, n_all)) var += pow((double)a->steps[i].dur_ps - mean, 2) / (double)n;
    sum->mean_ps = mean;
    sum->std_ps = sqrt(var);
    if (!d) return;
    qsort(d, n, sizeof *d, jp_cmp_i64);
    sum->min_ps = (double)d[0];
    sum->max_ps = (double)d[n - 1];
    sum->median_ps = n % 2 ? (double)d[n / 2] : ((double)d[n / 2 - 1] + (double)d[n / 2]) / 2;
    size_t rank = (size_t)ceil(0.9 * (double)n); /* nearest-rank percentile */
    sum->p90_ps = (double)d[rank ? rank - 1 : 0];
    for (size_t i = 0; n >= 3 && i < n_all; i++)
        a->steps[i].outlier = summarized(&a->steps[i], n_no_device, n_all) && (double)a->steps[i].dur_ps > 1.5 * sum->median_ps;
    for (int p = 0; p < JP_PART_COUNT; p++) { /* the typical step, part by part (summarized steps) */
        size_t k = 0;
        for (size_t i = 0; i < n_all; i++)
            if (summarized(&a->steps[i], n_no_device, n_all)) d[k++] = a->steps[i].part_ps[p];
        qsort(d, n, sizeof *d, jp_cmp_i64);
        sum->part_median_ps[p] = n % 2 ? d[n / 2] : d[n / 2 - 1] + (d[n / 2] - d[n / 2 - 1]) / 2;
    }
    free(d);
}

/* A step in which no device op ran (no op event, no compute or collective time): the device
 * recorded none of its work (a copy alone is not the step's work: the legacy MI300 capture records
 * a buffer copy, and no kernel, for half of its dispatches). */
static void mark_no_device_work(jp_step *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        s[i].no_device_work = s[i].n_ops == 0 && s[i].part_ps[JP_PART_COMPUTE] == 0 && s[i].part_ps[JP_PART_COLLECTIVE] == 0;
}

/* Each step's sync_ps: the end of the last collective op that starts in it. */
static void mark_sync(const jp_model *m, jp_analysis *a) {
    for (size_t i = 0; i < a->n_steps; i++) a->steps[i].sync_ps = INT64_MIN;
    long hint = -1;
    for (size_t i = 0; a->n_steps && i < m->ops.n; i++) {
        const jp_op_ev *e = &JP_VEC_AT(&m->ops, jp_op_ev, i);
        if (!JP_VEC_AT(&m->opdefs, jp_opdef, e->op).collective) continue;
        long k = hint = jp_step_at_hint(a, hint, e->start_ps);
        if (k >= 0 && e->end_ps > a->steps[k].sync_ps) a->steps[k].sync_ps = e->end_ps;
    }
}

int jp_steps_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    jp_vec steps = {0};
    const char *method = find_steps(m, arena, &steps);
    int rc = method ? JP_OK : JP_ERR_NOMEM;
    if (rc == JP_OK && steps.n > 1) qsort(steps.data, steps.n, sizeof(jp_step), cmp_step);
    if (rc == JP_OK) rc = sweep(m, steps.data, steps.n);
    if (rc == JP_OK) rc = count_ops(m, steps.data, steps.n);
    if (rc == JP_OK) mark_no_device_work(steps.data, steps.n);
    if (rc == JP_OK) {
        a->steps = jp_analysis_copy(arena, &steps, sizeof(jp_step));
        a->n_steps = steps.n;
        a->step_summary.method = method;
        if (!a->steps) rc = JP_ERR_NOMEM;
    }
    if (rc == JP_OK) jp_steps_summarize(a), mark_sync(m, a);
    jp_vec_free(&steps);
    return rc;
}
