/* ops.c - per-op statistics (count, total, self, min/max, FLOPs, bytes) and per-device busy time. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"

/* One span's interval, sorted by start to take a device's union. */
typedef struct interval {
    int64_t start_ps, end_ps;
} interval;

static int cmp_interval_start(const void *a, const void *b) {
    const interval *x = a, *y = b;
    return (x->start_ps > y->start_ps) - (x->start_ps < y->start_ps);
}

/* Adds the union of n intervals (sorted by start) to device d and keeps it as d->busy, written
 * over iv's front (iv lives in the analysis' arena): later analyses take the device's busy time
 * inside the steps from it without sorting the spans again. */
static void add_union(jp_device *d, interval *iv, size_t n) {
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        if (iv[i].start_ps > iv[k].end_ps) iv[++k] = iv[i];
        else if (iv[i].end_ps > iv[k].end_ps) iv[k].end_ps = iv[i].end_ps;
    }
    for (size_t i = 0; i <= k; i++) d->busy_ps += iv[i].end_ps - iv[i].start_ps;
    d->first_ps = iv[0].start_ps;
    d->last_ps = iv[k].end_ps;
    d->busy = (const int64_t(*)[2])(void *)iv;
    d->n_busy = k + 1;
}

/* Busy time is the union of a device's op and transfer intervals: overlapping streams or threads
 * count once. Spans are bucketed by device as 16-byte intervals (a counting sort), then each
 * device's bucket is sorted by start: half the memory of sorting copies of every span, which set
 * the report's high-water mark on big GPU profiles. */
static int device_busy(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    size_t n_dev = a->n_devices, *first = calloc(n_dev + 1, sizeof *first);
    int64_t active = 0; /* summed first-to-last windows of the devices */
    interval *iv = jp_arena_alloc(arena, (m->spans.n ? m->spans.n : 1) * sizeof *iv); /* the unions' home */
    if (!first || !iv) {
        free(first);
        return JP_ERR_NOMEM;
    }
    for (size_t i = 0; i < m->spans.n; i++) {
        uint32_t dev = JP_VEC_AT(&m->spans, jp_span, i).device;
        if (dev < n_dev) first[dev + 1]++;
    }
    for (size_t d = 0; d < n_dev; d++) first[d + 1] += first[d];
    for (size_t i = 0; i < m->spans.n; i++) { /* first[d] walks to the end of bucket d */
        const jp_span *sp = &JP_VEC_AT(&m->spans, jp_span, i);
        if (sp->device < n_dev) iv[first[sp->device]++] = (interval){sp->start_ps, sp->end_ps};
    }
    for (size_t d = 0, lo = 0; d < n_dev; lo = first[d++]) {
        size_t n = first[d] - lo;
        if (n == 0) continue;
        jp_sort_by_key64(iv + lo, n, sizeof *iv, offsetof(interval, start_ps), 1, cmp_interval_start);
        add_union(&a->devices[d], iv + lo, n);
        a->op_busy_ps += a->devices[d].busy_ps;
        active += a->devices[d].last_ps - a->devices[d].first_ps;
    }
    a->device_idle_pct = active > 0 ? 100.0 * (double)(active - a->op_busy_ps) / (double)active : 0;
    free(first);
    return JP_OK;
}

static int cmp_op_total(const void *a, const void *b) {
    const jp_op_stat *x = a, *y = b;
    if (x->total_ps != y->total_ps) return x->total_ps < y->total_ps ? 1 : -1;
    int c = strcmp(x->module, y->module);
    if (!c) c = strcmp(x->name, y->name);
    return c ? c : (x->program_id > y->program_id) - (x->program_id < y->program_id);
}

/* "copy-start.4", "all-gather-done": each half of an asynchronous pair carries the whole
 * transfer's bytes, but neither one's time is the transfer's (the start only issues it, the done
 * only waits for what is left), so their rates mean nothing: XProf shows 546,269x its roof for a
 * copy-start and 1.1 million x for a copy-done on the v6e capture. 1 for a start, 2 for a done. */
int jp_op_async_half(const char *name) {
    static const char *const halves[] = {"-start", "-done"};
    for (int i = 0; i < 2; i++) {
        const char *p = strstr(name, halves[i]);
        size_t n = strlen(halves[i]);
        if (p && (p[n] == '\0' || p[n] == '.')) return i + 1;
    }
    return 0;
}

/* A rematerialised op: XLA's rematerialization pass clones an instruction as "<name>.remat" (then
 * ".remat2", ...), and jax.checkpoint lowers the recomputed forward pass under the name-stack
 * component "rematted_computation" (a fusion reports its dot's op_name, hlo.c). */
static int is_remat(const char *name, const char *op_name) {
    for (const char *p = name ? strstr(name, ".remat") : NULL; p; p = strstr(p + 1, ".remat")) {
        const char *q = p + 6;
        while (*q >= '0' && *q <= '9') q++;
        if (*q == '\0' || *q == '.') return 1;
    }
    return op_name && strstr(op_name, "rematted_computation") != NULL;
}

/* Adds count occurrences of an op (their sums and extremes) to row r. */
static inline void add_stats(jp_op_stat *r, const jp_op_stat *o) {
    r->count += o->count;
    r->total_ps += o->total_ps;
    r->self_ps += o->self_ps;
    if (o->min_ps < r->min_ps) r->min_ps = o->min_ps;
    if (o->max_ps > r->max_ps) r->max_ps = o->max_ps;
    r->flops += o->flops;
    r->bytes += o->bytes;
    r->hlo_flops += o->hlo_flops;
    r->xla_flops += o->xla_flops;
    r->transcendentals += o->transcendentals;
    r->self_sumsq += o->self_sumsq;
}

/* The op's Python stack as an array, innermost frame first, and a fusion's line shares, each
 * with its stack (copied into the analysis). */
static int copy_stacks(jp_arena *arena, const jp_opdef *d, jp_op_stat *o) {
    if (jp_analysis_stack(arena, d->frame, &o->stack, &o->n_stack)) return JP_ERR_NOMEM;
    if (!d->n_shares) return JP_OK;
    jp_line_share *shares = jp_arena_alloc(arena, d->n_shares * sizeof *shares);
    if (!shares) return JP_ERR_NOMEM;
    for (uint32_t k = 0; k < d->n_shares; k++) {
        const jp_hlo_share *h = &d->shares[k];
        shares[k] = (jp_line_share){h->source, h->function, NULL, 0, h->weight};
        if (jp_analysis_stack(arena, h->frame, &shares[k].stack, &shares[k].n_stack)) return JP_ERR_NOMEM;
    }
    o->shares = shares;
    o->n_shares = d->n_shares;
    return JP_OK;
}

/* Sums the rows of one (module, program, name) on several devices into the first one's row and
 * drops ops that were defined but never ran (filtered devices); returns the rows left, SIZE_MAX
 * when out of memory. Rows keep the order of first sight; def[k] gets the opdef of row k. */
static size_t merge_devices(jp_op_stat *ops, size_t n_ops, uint32_t *def) {
    jp_map rows = {0};
    size_t n = 0;
    for (size_t i = 0; i < n_ops; i++) {
        const jp_op_stat *o = &ops[i];
        if (!o->count) continue;
        int found;
        uint32_t k = jp_map_get_or_put(&rows, jp_ptr_key(o->module), jp_ptr_key(o->name), (uint64_t)o->program_id,
                                       (uint32_t)n, &found);
        if (k == UINT32_MAX) {
            n = SIZE_MAX;
            break;
        }
        if (!found) {
            def[n] = (uint32_t)i;
            ops[n] = *o;
            ops[n++].n_devices = 1;
            continue;
        }
        add_stats(&ops[k], o);
        ops[k].n_devices++;
    }
    jp_map_deinit(&rows);
    return n;
}

/* The opdefs the model's events use, in index order, into *used (malloc'd); row[i] is opdef i's
 * place there (UINT32_MAX: none). A host's view shares the merged model's opdefs, every host's:
 * rows for all of them would cost each host the whole run's ops table. Returns the count, SIZE_MAX
 * when out of memory (*used and *row then NULL). */
static size_t used_opdefs(const jp_model *m, uint32_t **used, uint32_t **row) {
    size_t n = 0, n_defs = m->opdefs.n ? m->opdefs.n : 1;
    *row = malloc(n_defs * sizeof **row);
    *used = malloc(n_defs * sizeof **used);
    if (!*row || !*used) {
        free(*row), free(*used);
        *row = *used = NULL;
        return SIZE_MAX;
    }
    memset(*row, 0, n_defs * sizeof **row);
    for (size_t i = 0; i < m->ops.n; i++) (*row)[JP_VEC_AT(&m->ops, jp_op_ev, i).op] = 1;
    for (size_t i = 0; i < m->opdefs.n; i++) {
        if (!(*row)[i]) {
            (*row)[i] = UINT32_MAX;
            continue;
        }
        (*row)[i] = (uint32_t)n;
        (*used)[n++] = (uint32_t)i;
    }
    return n;
}

static jp_op_stat op_row(const jp_opdef *d) {
    return (jp_op_stat){.module = d->module, .name = d->name, .category = d->category, .op_name = d->op_name,
                        .scope = d->scope, .source = d->source, .function = d->function, .device = d->device,
                        .min_ps = INT64_MAX, .program_id = d->program_id, .no_rate = jp_op_async_half(d->name),
                        .no_xla_op = d->no_xla_op, .autotuning = d->autotuning, .dtype = d->dtype ? d->dtype : "",
                        .remat = is_remat(d->name, d->op_name)};
}

/* Every event's time and modelled cost summed into its opdef's row (rows: one per used opdef). */
static void sum_events(const jp_model *m, const uint32_t *row, jp_op_stat *rows, jp_analysis *a) {
    for (size_t i = 0; i < m->ops.n; i++) {
        const jp_op_ev *e = &JP_VEC_AT(&m->ops, jp_op_ev, i);
        const jp_opdef *d = &JP_VEC_AT(&m->opdefs, jp_opdef, e->op);
        jp_op_stat *r = &rows[row[e->op]];
        double share = jp_opdef_event_share(d);
        jp_op_stat one = {.count = 1, .total_ps = e->dur_ps, .self_ps = e->self_ps, .min_ps = e->dur_ps,
                          .max_ps = e->dur_ps, .flops = share * d->flops, .bytes = share * d->bytes,
                          .hlo_flops = share * d->hlo_flops, .xla_flops = share * d->xla_flops,
                          .transcendentals = share * d->transcendentals,
                          .self_sumsq = (double)e->self_ps * (double)e->self_ps};
        add_stats(r, &one);
        a->op_self_ps += e->self_ps;
        a->devices[d->device].n_ops++;
        if (r->no_rate != 2) /* the transfer's bytes once: a done repeats its start's */
            a->devices[d->device].bytes_accessed += one.bytes;
    }
}

int jp_ops_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    a->devices = jp_analysis_copy(arena, &m->devices, sizeof(jp_device));
    a->n_devices = m->devices.n;
    uint32_t *used, *row;
    size_t n_used = used_opdefs(m, &used, &row);
    jp_op_stat *rows = n_used != SIZE_MAX ? malloc((n_used ? n_used : 1) * sizeof *rows) : NULL;
    uint32_t *def = n_used != SIZE_MAX ? malloc((n_used ? n_used : 1) * sizeof *def) : NULL;
    size_t n = SIZE_MAX;
    if (a->devices && rows && def) {
        for (size_t i = 0; i < n_used; i++) rows[i] = op_row(&JP_VEC_AT(&m->opdefs, jp_opdef, used[i]));
        sum_events(m, row, rows, a);
        for (size_t i = 0; i < n_used; i++) rows[i].no_rate = rows[i].no_rate != 0; /* 1 or 0, as documented */
        n = merge_devices(rows, n_used, def);
    }
    a->ops = n != SIZE_MAX ? jp_arena_alloc(arena, (n ? n : 1) * sizeof *a->ops) : NULL;
    if (a->ops) memcpy(a->ops, rows, n * sizeof *a->ops);
    for (size_t i = 0; a->ops && i < n; i++) /* the stacks of the op's first device's definition */
        if (copy_stacks(arena, &JP_VEC_AT(&m->opdefs, jp_opdef, used[def[i]]), &a->ops[i])) a->ops = NULL;
    free(used), free(row), free(rows), free(def);
    if (!a->ops) return JP_ERR_NOMEM;
    a->n_ops = n;
    qsort(a->ops, n, sizeof *a->ops, cmp_op_total);
    return device_busy(m, arena, a);
}

/* ---- spread across steps ------------------------------------------------------------------------ */

enum { SPREAD_CELLS_MAX = 1 << 21 }; /* ops x steps sums kept at once (16 MiB); more: no step spread */

/* The row of a->ops for every opdef (one program's op on several devices shares one), UINT32_MAX
 * for none. */
static uint32_t *rows_of_opdefs(const jp_model *m, const jp_analysis *a) {
    uint32_t *row = malloc((m->opdefs.n ? m->opdefs.n : 1) * sizeof *row);
    jp_map rows = {0};
    int ok = row != NULL;
    for (size_t i = 0; ok && i < a->n_ops; i++)
        ok = jp_map_get_or_put(&rows, jp_ptr_key(a->ops[i].module), jp_ptr_key(a->ops[i].name),
                               (uint64_t)a->ops[i].program_id, (uint32_t)i, NULL) != UINT32_MAX;
    for (size_t d = 0; ok && d < m->opdefs.n; d++) {
        const jp_opdef *def = &JP_VEC_AT(&m->opdefs, jp_opdef, d);
        row[d] = jp_map_get(&rows, jp_ptr_key(def->module), jp_ptr_key(def->name), (uint64_t)def->program_id);
    }
    jp_map_deinit(&rows);
    if (!ok) free(row);
    return ok ? row : NULL;
}

/* Each op's self time summed per step (a table of ops x steps), then its sample standard deviation
 * across the steps: how much the op's time per step moves by itself, which the diff compares a
 * change against. Events outside every step are left out. */
int jp_ops_spread_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    (void)arena;
    size_t n_steps = a->steps ? a->n_steps : 0;
    if (n_steps < 2 || a->n_ops == 0 || a->n_ops > SPREAD_CELLS_MAX / n_steps) return JP_OK;
    uint32_t *row = rows_of_opdefs(m, a);
    double *sum = calloc(a->n_ops * n_steps, sizeof *sum);
    if (!row || !sum) {
        free(row), free(sum);
        return JP_ERR_NOMEM;
    }
    long at = -1;
    for (size_t i = 0; i < m->ops.n; i++) {
        const jp_op_ev *e = &JP_VEC_AT(&m->ops, jp_op_ev, i);
        at = jp_step_at_hint(a, at, e->start_ps);
        if (at >= 0 && e->op < m->opdefs.n && row[e->op] != UINT32_MAX)
            sum[(size_t)row[e->op] * n_steps + (size_t)at] += (double)e->self_ps;
    }
    for (size_t r = 0; r < a->n_ops; r++) {
        const double *v = &sum[r * n_steps];
        double mean = 0, var = 0;
        for (size_t s = 0; s < n_steps; s++) mean += v[s] / (double)n_steps;
        for (size_t s = 0; s < n_steps; s++) var += (v[s] - mean) * (v[s] - mean);
        a->ops[r].step_sd_ps = sqrt(var / (double)(n_steps - 1));
    }
    free(row), free(sum);
    return JP_OK;
}
