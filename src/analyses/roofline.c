/* roofline.c - each op against its device's compute and memory roofs, the FLOPs of each step,
 * and model FLOPs utilization (MFU): step FLOPs over step time over the devices' peak. */
#include "analyses/analyses.h"

#include <string.h>

/* "copy-start.4", "all-gather-done": each half of an asynchronous pair carries the whole
 * transfer's bytes, but neither one's time is the transfer's (the start only issues it, the done
 * only waits for what is left), so their rates mean nothing. XProf places them anyway: 546,269x
 * its roof for a copy-start and 1.1 million x for a copy-done on the v6e capture. */
static int is_async_half(const char *name) {
    static const char *const halves[] = {"-start", "-done"};
    for (int i = 0; i < 2; i++) {
        const char *p = strstr(name, halves[i]);
        size_t n = strlen(halves[i]);
        if (p && (p[n] == '\0' || p[n] == '.')) return 1;
    }
    return 0;
}

/* Which roof bounds an op and how close it comes: an op of intensity I (FLOP/byte) can reach
 * min(peak FLOP/s, I x peak bytes/s); below the ridge I = peak FLOP/s / peak bytes/s the memory
 * roof is the lower one. Rates use the op's total time, as XProf's roofline does. */
static void place_op(const jp_device *d, jp_op_stat *o) {
    double secs = (double)o->total_ps / 1e12;
    o->bound = JP_BOUND_UNKNOWN;
    o->roof_pct = 0;
    if (secs <= 0 || d->peak_flops <= 0 || d->peak_bw <= 0 || o->bytes <= 0 || is_async_half(o->name)) return;
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
}

/* Each op occurrence's FLOPs go to the step it starts in; MFU divides the steps' FLOPs by their
 * time and by the summed peaks of the devices that ran ops. */
static void step_flops(const jp_model *m, jp_analysis *a) {
    double flops = 0, step_ps = 0, peak = 0;
    for (size_t i = 0; i < m->ops.n; i++) {
        const jp_op_ev *e = &JP_VEC_AT(&m->ops, jp_op_ev, i);
        const jp_opdef *d = &JP_VEC_AT(&m->opdefs, jp_opdef, e->op);
        long k = d->flops > 0 ? jp_step_at(a, e->start_ps) : -1;
        if (k >= 0) a->steps[k].flops += d->flops, flops += d->flops;
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

int jp_roofline_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    (void)arena;
    for (size_t i = 0; i < a->n_ops; i++) place_op(&a->devices[a->ops[i].device], &a->ops[i]);
    a->mfu_pct = -1;
    step_flops(m, a);
    return JP_OK;
}
