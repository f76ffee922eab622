/* roofline.c - each op against its device's compute and memory roofs and the time it wastes below
 * them, the FLOPs and bytes of each step and the step as one point on the roofline, model FLOPs
 * utilization (MFU): step FLOPs over step time over the devices' peak, device utilization per
 * device (XProf's duty cycle), the KPIs' rates of the hardware, and op time by precision. */
#include "analyses/analyses.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Which roof bounds an op and how close it comes: an op of intensity I (FLOP/byte) can reach
 * min(peak FLOP/s, I x peak bytes/s); below the ridge I = peak FLOP/s / peak bytes/s the memory
 * roof is the lower one. Rates use the op's total time, as XProf's roofline does. */
static void place_op(const jp_device *d, jp_op_stat *o) {
    double secs = (double)o->total_ps / 1e12;
    o->bound = JP_BOUND_UNKNOWN;
    o->roof_pct = 0;
    o->wasted_ps = 0;
    if (secs <= 0 || d->peak_flops <= 0 || d->peak_bw <= 0 || o->bytes <= 0 || o->no_rate) return;
    /* a custom call (a library kernel: attention, a vendor GEMM XLA did not describe) does work
     * nobody counted: 0 FLOPs there is unknown, not a copy, and would read as memory bound */
    if (o->flops <= 0 && strcmp(o->category, "custom-call") == 0) return;
    if (o->flops / o->bytes >= d->peak_flops / d->peak_bw) {
        o->bound = JP_BOUND_COMPUTE;
        o->roof_pct = 100 * o->flops / secs / d->peak_flops;
    } else {
        o->bound = JP_BOUND_MEMORY;
        o->roof_pct = 100 * o->bytes / secs / d->peak_bw;
    }
    /* the time it would not need at its roof: an op at 25 % of its roof wastes 3/4 of its time */
    double frac = o->roof_pct < 100 ? o->roof_pct / 100 : 1;
    o->wasted_ps = (int64_t)llround((double)o->self_ps * (1 - frac));
}

/* The summed peaks of the devices that ran ops; 0 when one of them has an unknown peak. */
static void summed_peaks(const jp_analysis *a, double *flops, double *bw) {
    *flops = *bw = 0;
    for (size_t i = 0; i < a->n_devices; i++) {
        if (!a->devices[i].n_ops) continue;
        if (a->devices[i].peak_flops <= 0 || a->devices[i].peak_bw <= 0) {
            *flops = *bw = 0;
            return;
        }
        *flops += a->devices[i].peak_flops, *bw += a->devices[i].peak_bw;
    }
}

/* Each step as one program on the roofline: its FLOPs and bytes over its time against the summed
 * roofs of the devices that ran ops (XProf's program-level roofline), -1 when unknown. */
static void place_steps(jp_analysis *a) {
    double peak, bw;
    summed_peaks(a, &peak, &bw);
    for (size_t i = 0; i < a->n_steps; i++) {
        jp_step *s = &a->steps[i];
        double secs = (double)s->dur_ps / 1e12;
        s->roof_pct = -1;
        if (peak <= 0 || secs <= 0 || s->flops <= 0 || s->bytes <= 0) continue;
        s->roof_pct = s->flops / s->bytes >= peak / bw ? 100 * s->flops / secs / peak : 100 * s->bytes / secs / bw;
    }
}

/* Each op occurrence's FLOPs go to the step it starts in; MFU divides the steps' FLOPs by their
 * time and by the summed peaks of the devices that ran ops. */
static void step_flops(const jp_model *m, jp_analysis *a) {
    double flops = 0, step_ps = 0, peak = 0;
    long k = -1;
    for (size_t i = 0; i < m->ops.n; i++) {
        const jp_op_ev *e = &JP_VEC_AT(&m->ops, jp_op_ev, i);
        const jp_opdef *d = &JP_VEC_AT(&m->opdefs, jp_opdef, e->op);
        if ((d->flops <= 0 && d->bytes <= 0) || (k = jp_step_at_hint(a, k, e->start_ps)) < 0) continue;
        double f = jp_opdef_event_share(d) * d->flops;
        a->steps[k].flops += f, flops += f;
        if (jp_op_async_half(d->name) != 2) a->steps[k].bytes += jp_opdef_event_share(d) * d->bytes;
    }
    for (size_t i = 0; i < a->n_steps; i++) step_ps += (double)a->steps[i].dur_ps;
    a->step_flops = a->n_steps ? flops / (double)a->n_steps : 0; /* known without any peak */
    for (size_t i = 0; i < a->n_devices; i++)
        if (a->devices[i].n_ops) {
            if (a->devices[i].peak_flops <= 0) return; /* one unknown peak leaves MFU unknown */
            peak += a->devices[i].peak_flops;
        }
    a->mfu_pct = step_ps > 0 && peak > 0 && flops > 0 ? 100 * flops / (step_ps / 1e12) / peak : -1;
}

/* The part of a device's busy union (in time order) that lies inside the steps (in time order,
 * not overlapping), ps. */
static double busy_in_steps(const jp_device *d, const jp_step *s, size_t n_steps) {
    double busy = 0;
    size_t k = 0;
    for (size_t i = 0; i < d->n_busy; i++) {
        int64_t lo = d->busy[i][0], hi = d->busy[i][1];
        while (k < n_steps && s[k].start_ps + s[k].dur_ps <= lo) k++;
        for (size_t j = k; j < n_steps && s[j].start_ps < hi; j++) {
            int64_t a = lo > s[j].start_ps ? lo : s[j].start_ps, b = s[j].start_ps + s[j].dur_ps;
            if (hi < b) b = hi;
            if (b > a) busy += (double)(b - a);
        }
    }
    return busy;
}

/* Steps the profile marked (StepTraceAnnotation, a device Steps line), not inferred from repeated
 * executions or dispatches. */
static int steps_marked(const jp_analysis *a) {
    const char *m = a->step_summary.method;
    return m && (strcmp(m, "StepTraceAnnotation") == 0 || strcmp(m, "device Steps line") == 0);
}

/* Σ over the devices that ran ops of their busy share of their own first-to-last activity;
 * *n_dev counts them. */
static double window_utilization(const jp_analysis *a, size_t *n_dev) {
    double sum = 0;
    for (size_t d = 0; d < a->n_devices; d++) {
        const jp_device *dev = &a->devices[d];
        if (!dev->n_ops || dev->last_ps <= dev->first_ps) continue;
        sum += 100 * (double)dev->busy_ps / (double)(dev->last_ps - dev->first_ps);
        ++*n_dev;
    }
    return sum;
}

/* Σ over the devices that ran ops of their busy share of the steps' step_ps; *n_dev counts them. */
static double step_utilization(const jp_analysis *a, double step_ps, size_t *n_dev) {
    double sum = 0;
    for (size_t d = 0; d < a->n_devices; d++) {
        if (!a->devices[d].n_ops || !a->devices[d].n_busy) continue;
        sum += 100 * busy_in_steps(&a->devices[d], a->steps, a->n_steps) / step_ps;
        ++*n_dev;
    }
    return sum;
}

/* Device utilization per device, as XProf's duty cycle, averaged over the devices that ran ops:
 * the step breakdown counts an instant as compute when any device computes, which reads 8.5 %
 * where 8 GPUs are each busy 2.4 % of the time. With marked steps it is each device's busy time
 * inside the steps over the steps' time. Steps inferred from executions cannot say which part of
 * the capture is the loop (on the TPU inference capture, 100 executions back to back are busy
 * throughout while the device idles 13.4 % of its window around them), so there it is each
 * device's busy time over its own first-to-last activity, XProf's duty cycle itself. */
static void device_utilization(jp_analysis *a) {
    a->device_util_pct = -1;
    double step_ps = 0;
    size_t n_dev = 0;
    for (size_t i = 0; i < a->n_steps; i++) step_ps += (double)a->steps[i].dur_ps;
    if (step_ps <= 0) return;
    double sum = steps_marked(a) ? step_utilization(a, step_ps, &n_dev) : window_utilization(a, &n_dev);
    if (n_dev) a->device_util_pct = sum / (double)n_dev;
}

/* ---- op time by precision ---------------------------------------------------------------------- */

enum { PREC_16, PREC_32, PREC_8, PREC_OTHER, PREC_UNKNOWN, PREC_COUNT };
static const char *const PRECISION[PREC_COUNT] = {"16-bit", "32-bit", "8-bit", "other", "unknown"};

/* The precision class of an HLO element type name ("bf16" -> 16-bit). Integers count by width too:
 * an int8 matmul is 8-bit work; s32 index arithmetic is "other". */
static int precision_of(const char *dtype) {
    static const char *const p16[] = {"bf16", "f16"}, *const p8[] = {"s8", "u8"};
    if (!dtype || !*dtype) return PREC_UNKNOWN;
    for (int i = 0; i < 2; i++)
        if (strcmp(dtype, p16[i]) == 0) return PREC_16;
    if (strcmp(dtype, "f32") == 0) return PREC_32;
    for (int i = 0; i < 2; i++)
        if (strcmp(dtype, p8[i]) == 0) return PREC_8;
    return strncmp(dtype, "f8", 2) == 0 ? PREC_8 : PREC_OTHER;
}

static int cmp_precision(const void *x, const void *y) {
    const jp_precision_stat *a = x, *b = y;
    if (a->self_ps != b->self_ps) return a->self_ps < b->self_ps ? 1 : -1;
    return strcmp(a->precision, b->precision);
}

/* The ops' self time and FLOPs by precision class, classes with ops only, the most time first; the
 * autotuner's kernels are no op of the program. */
static int precision_split(jp_arena *arena, jp_analysis *a) {
    jp_precision_stat sum[PREC_COUNT];
    for (int p = 0; p < PREC_COUNT; p++) sum[p] = (jp_precision_stat){PRECISION[p], 0, 0, 0};
    for (size_t i = 0; i < a->n_ops; i++) {
        if (a->ops[i].autotuning) continue;
        jp_precision_stat *s = &sum[precision_of(a->ops[i].dtype)];
        s->self_ps += a->ops[i].self_ps, s->flops += a->ops[i].flops, s->n_ops++;
    }
    a->precision = jp_arena_alloc(arena, PREC_COUNT * sizeof *a->precision);
    if (!a->precision) return JP_ERR_NOMEM;
    a->n_precision = 0;
    a->precision_ps = 0;
    for (int p = 0; p < PREC_COUNT; p++)
        if (sum[p].n_ops) a->precision[a->n_precision++] = sum[p], a->precision_ps += sum[p].self_ps;
    qsort(a->precision, a->n_precision, sizeof *a->precision, cmp_precision);
    return JP_OK;
}

int jp_roofline_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    for (size_t i = 0; i < a->n_ops; i++) place_op(&a->devices[a->ops[i].device], &a->ops[i]);
    a->mfu_pct = -1;
    step_flops(m, a);
    place_steps(a);
    device_utilization(a);
    return precision_split(arena, a);
}
