/* comm.c - communication (jaxprof comm): per collective op and per device, the time its
 * collectives took, the part of it hidden behind compute on the same device and the exposed rest;
 * message size, replica-group size and bus bandwidth by the nccl-tests convention; per instance
 * the wait across devices, the device that arrived last, and robust stragglers. Works from the
 * model's op events per device (docs/design.md "Communication"). */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"

typedef struct comm_ev { /* one collective instance on one device */
    int64_t start, end;  /* (end: after overlap, sort_instances' key) */
    int64_t dur;         /* its time: the device's own measure of a synchronous op (TPU: as XProf),
                          * start to done of an async pair */
    uint32_t key;        /* its opdef (a done half: its start's), which pairs the halves */
    uint32_t row;        /* its row: the first opdef of the key's (module, name, program) on any device */
    uint32_t device;
    uint32_t k;          /* its index among the key's instances on its device, in time order */
    uint8_t half;        /* 0 synchronous, 1 an async start, 2 an async done */
    int64_t hidden;      /* the part of [start, end) a compute op covered on its device */
} comm_ev;

typedef struct inst_key { int64_t start; uint64_t at; } inst_key; /* a time and what has it */

static int cmp_hidden(const void *x, const void *y) {
    const comm_ev *a = x, *b = y;
    return (a->hidden > b->hidden) - (a->hidden < b->hidden);
}

/* v by device, key, start and half, equal ones in their order (as glibc's stable qsort left them
 * with a comparator on the four): stable sorts by the last key to the
 * first (half, start, then device and key), on 64-bit keys; `hidden`, free until overlap, holds the
 * half and then (device, key). Each pass is a merge of the lines' runs or a radix sort, not 56-byte
 * elements moved n log n times. */
static void sort_events(comm_ev *v, size_t n) {
    for (size_t i = 0; i < n; i++) v[i].hidden = v[i].half;
    jp_sort_by_key64(v, n, sizeof *v, offsetof(comm_ev, hidden), 1, cmp_hidden);
    jp_sort_by_key64(v, n, sizeof *v, offsetof(comm_ev, start), 1, jp_cmp_i64);
    for (size_t i = 0; i < n; i++) v[i].hidden = (int64_t)((uint64_t)v[i].device << 32 | v[i].key);
    jp_sort_by_key64(v, n, sizeof *v, offsetof(comm_ev, hidden), 1, cmp_hidden);
    for (size_t i = 0; i < n; i++) v[i].hidden = 0;
}

static int cmp_end(const void *x, const void *y) {
    const comm_ev *a = x, *b = y;
    return (a->end > b->end) - (a->end < b->end);
}

/* v by row, instance and device, equal ones in their order: two stable passes as in sort_events,
 * on (device) and then (row, instance) in `end`, which nothing reads after overlap. v comes by
 * device, each device's events by key and start, so both are a merge of a run a device. */
static void sort_instances(comm_ev *v, size_t n) {
    for (size_t i = 0; i < n; i++) v[i].end = v[i].device;
    jp_sort_by_key64(v, n, sizeof *v, offsetof(comm_ev, end), 1, cmp_end);
    for (size_t i = 0; i < n; i++) v[i].end = (int64_t)((uint64_t)v[i].row << 32 | v[i].k);
    jp_sort_by_key64(v, n, sizeof *v, offsetof(comm_ev, end), 1, cmp_end);
}

static int cmp_i64(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* "all-reduce-start" -> "all-reduce": the collective's kind from its HLO opcode, else its name
 * (XLA:CPU names ops after JAX's primitive, "psum_invariant.7", so the opcode comes first). */
static const char *comm_type(const jp_opdef *d) {
    static const char *const kinds[] = {"ragged-all-to-all", "all-reduce", "all-gather", "reduce-scatter",
                                        "all-to-all", "collective-permute", "collective-broadcast", "send", "recv"};
    for (int pass = 0; pass < 2; pass++) {
        const char *s = pass ? d->name : d->opcode;
        for (size_t i = 0; s && i < sizeof kinds / sizeof kinds[0]; i++)
            if (strncmp(s, kinds[i], strlen(kinds[i])) == 0) return kinds[i];
    }
    return d->category;
}

/* The nccl-tests bus-bandwidth factor of a kind over n devices (doc/PERFORMANCE.md); -1 unknown. */
static double bus_factor(const char *type, uint32_t n) {
    if (strcmp(type, "collective-permute") == 0 || strcmp(type, "collective-broadcast") == 0 ||
        strcmp(type, "send") == 0 || strcmp(type, "recv") == 0)
        return 1;
    if (n == 0) return -1;
    double f = (double)(n - 1) / n;
    if (strcmp(type, "all-reduce") == 0) return 2 * f;
    if (strcmp(type, "all-gather") == 0 || strcmp(type, "reduce-scatter") == 0 || strcmp(type, "all-to-all") == 0 ||
        strcmp(type, "ragged-all-to-all") == 0)
        return f;
    return -1;
}

/* The opdef a done half counts under: its start's on the same device, module and program, else
 * its own. Looked up once per opdef (memo[op], UINT32_MAX until then): a GPU profile has thousands. */
static uint32_t start_of(const jp_model *m, uint32_t op, uint32_t *memo) {
    if (memo[op] != UINT32_MAX) return memo[op];
    const jp_opdef *d = &JP_VEC_AT(&m->opdefs, jp_opdef, op);
    memo[op] = op;
    for (size_t i = 0; d->async_start && i < m->opdefs.n; i++) {
        const jp_opdef *s = &JP_VEC_AT(&m->opdefs, jp_opdef, i);
        if (s->name == d->async_start && s->module == d->module && s->device == d->device &&
            s->program_id == d->program_id) {
            memo[op] = (uint32_t)i;
            break;
        }
    }
    return memo[op];
}

/* Whether op is an async half (jp_op_async_half of its opcode or name), asked once per opdef:
 * half[op] is 0xff until then (a string search per event cost as much as the rest of the pass). */
static int async_half(const jp_opdef *d, uint32_t op, uint8_t *half) {
    if (half[op] == 0xff) half[op] = (uint8_t)jp_op_async_half(d->opcode ? d->opcode : d->name);
    return half[op];
}

/* The collective instances and each device's compute spans from the op events; an async done
 * closes the start before it (same key and device) into one instance. */
static int collect_events(const jp_model *m, jp_vec *evs, jp_vec *comp, jp_map *rows, uint32_t *memo, uint8_t *halves) {
    for (size_t i = 0; i < m->ops.n; i++) {
        const jp_op_ev *e = &JP_VEC_AT(&m->ops, jp_op_ev, i);
        const jp_opdef *d = &JP_VEC_AT(&m->opdefs, jp_opdef, e->op);
        if (d->device >= m->devices.n) continue;
        if (!d->collective) {
            if (async_half(d, e->op, halves)) continue; /* a launch or a wait: no compute */
            jp_vec *cv = &comp[d->device]; /* a call only to grow */
            jp_interval *c = cv->n < cv->cap ? &JP_VEC_AT(cv, jp_interval, cv->n++) : jp_vec_push(cv, sizeof *c);
            if (!c) return JP_ERR_NOMEM;
            *c = (jp_interval){e->start_ps, e->end_ps};
            continue;
        }
        comm_ev *c = evs->n < evs->cap ? &JP_VEC_AT(evs, comm_ev, evs->n++) : jp_vec_push(evs, sizeof *c);
        if (!c) return JP_ERR_NOMEM;
        uint8_t half = d->async_start ? 2 : jp_op_async_half(d->name) == 1 ? 1 : 0;
        uint32_t key = start_of(m, e->op, memo);
        const jp_opdef *k = &JP_VEC_AT(&m->opdefs, jp_opdef, key);
        uint32_t row = jp_map_get_or_put(rows, jp_ptr_key(k->module), jp_ptr_key(k->name), (uint64_t)k->program_id, key,
                                         NULL);
        if (row == UINT32_MAX) return JP_ERR_NOMEM;
        *c = (comm_ev){e->start_ps, e->end_ps, e->dur_ps, key, row, d->device, 0, half, 0};
    }
    comm_ev *v = evs->data;
    sort_events(v, evs->n);
    size_t k = 0;
    for (size_t i = 0; i < evs->n; i++) { /* pair each start with the done after it */
        if (v[i].half == 2 && k && v[k - 1].half == 1 && v[k - 1].key == v[i].key && v[k - 1].device == v[i].device) {
            if (v[i].end > v[k - 1].end) v[k - 1].end = v[i].end;
            v[k - 1].dur = v[k - 1].end - v[k - 1].start;
            v[k - 1].half = 3; /* closed */
            continue;
        }
        v[k++] = v[i];
    }
    evs->n = k;
    for (size_t i = 0; i < k; i++) v[i].k = i && v[i - 1].key == v[i].key && v[i - 1].device == v[i].device ? v[i - 1].k + 1 : 0;
    return JP_OK;
}

static int collect(const jp_model *m, jp_vec *evs, jp_vec *comp, jp_map *rows) {
    size_t n = m->opdefs.n ? m->opdefs.n : 1;
    uint32_t *memo = malloc(n * sizeof *memo);
    uint8_t *half = malloc(n);
    int rc = memo && half ? JP_OK : JP_ERR_NOMEM;
    if (rc == JP_OK) {
        memset(memo, 0xff, n * sizeof *memo);
        memset(half, 0xff, n);
        rc = collect_events(m, evs, comp, rows, memo, half);
    }
    free(memo);
    free(half);
    return rc;
}

typedef struct step_acc { int64_t hidden, exposed; uint32_t devices, last_device; } step_acc;

/* Appends the parts of [s, e) on device d that no compute interval cu[*j..ncu) covers to out (the
 * viewer's exposed-communication row); *j moves past the intervals that end before s, as the
 * segments come in time order. */
static int push_exposed(jp_vec *out, uint32_t d, int64_t s, int64_t e, const jp_interval *cu, size_t ncu, size_t *j) {
    while (*j < ncu && cu[*j].end <= s) (*j)++;
    int64_t at = s;
    for (size_t k = *j; at < e; k++) {
        int64_t gap_end = k < ncu && cu[k].start < e ? cu[k].start : e;
        if (gap_end > at) {
            jp_comm_span *x = jp_vec_push(out, sizeof *x);
            if (!x) return JP_ERR_NOMEM;
            *x = (jp_comm_span){at, gap_end, d};
        }
        if (gap_end == e) break;
        if (cu[k].end > at) at = cu[k].end;
    }
    return JP_OK;
}

/* Device d's collective union against its compute union: its totals, and each union segment's
 * hidden and exposed time added to the step it starts in. */
static int device_overlap(jp_analysis *a, uint32_t d, const comm_ev *v, size_t n, const jp_interval *cu, size_t ncu,
                          step_acc *steps, jp_vec *exposed) {
    jp_interval *u = malloc((n ? n : 1) * sizeof *u);
    if (!u) return JP_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) u[i] = (jp_interval){v[i].start, v[i].end};
    jp_intervals_sort(u, n);
    size_t nu = jp_intervals_merge_sorted(u, n);
    jp_device *dev = &a->devices[d];
    long hint = -1;
    size_t at = 0, cov = 0; /* cursors: the union is in time order, each search starts where the last ended */
    for (size_t i = 0; i < nu; i++) {
        int64_t len = u[i].end - u[i].start, hid = jp_intervals_covered_from(cu, ncu, u[i].start, u[i].end, &cov);
        if (push_exposed(exposed, d, u[i].start, u[i].end, cu, ncu, &at) != JP_OK) {
            free(u);
            return JP_ERR_NOMEM;
        }
        dev->comm_ps += len, dev->comm_hidden_ps += hid;
        long s = jp_step_at_hint(a, hint, u[i].start);
        if (s < 0) continue;
        hint = s;
        step_acc *acc = &steps[s];
        acc->hidden += hid, acc->exposed += len - hid;
        if (acc->last_device != d + 1) acc->devices++, acc->last_device = d + 1;
    }
    free(u);
    dev->comm_overlap_pct = dev->comm_ps ? 100.0 * (double)dev->comm_hidden_ps / (double)dev->comm_ps : -1;
    a->comm_ps += dev->comm_ps, a->comm_hidden_ps += dev->comm_hidden_ps;
    return JP_OK;
}

/* The hidden time of each instance of one device, v[0..n) (by op, then start), found in order of
 * start: the cursor into the compute union cu then only moves on (op by op, it went through the
 * whole union once an op). JP_ERR_NOMEM or JP_OK. */
static int hide(comm_ev *v, size_t n, const jp_interval *cu, size_t ncu) {
    inst_key *key = malloc((n ? n : 1) * sizeof *key);
    if (!key) return JP_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) key[i] = (inst_key){v[i].start, i};
    jp_sort_by_key64(key, n, sizeof *key, offsetof(inst_key, start), 1, jp_cmp_i64);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        comm_ev *e = &v[key[i].at];
        e->hidden = jp_intervals_covered_from(cu, ncu, e->start, e->end, &at);
        if (e->hidden > e->dur) e->hidden = e->dur;
    }
    free(key);
    return JP_OK;
}

/* Per device: hidden time of each instance, the device's union totals, the steps' split. */
static int overlap(const jp_model *m, jp_analysis *a, comm_ev *v, size_t n, jp_vec *comp, jp_vec *exposed) {
    step_acc *steps = calloc(a->n_steps ? a->n_steps : 1, sizeof *steps);
    if (!steps) return JP_ERR_NOMEM;
    int rc = JP_OK;
    for (size_t i = 0, j; i < n && rc == JP_OK; i = j) {
        uint32_t d = v[i].device;
        for (j = i; j < n && v[j].device == d;) j++;
        jp_interval *cu = comp[d].data;
        jp_intervals_sort(cu, comp[d].n);
        size_t ncu = jp_intervals_merge_sorted(cu, comp[d].n);
        if (hide(v + i, j - i, cu, ncu)) rc = JP_ERR_NOMEM;
        if (rc == JP_OK && d < a->n_devices) rc = device_overlap(a, d, v + i, j - i, cu, ncu, steps, exposed);
    }
    for (size_t s = 0; s < a->n_steps && rc == JP_OK; s++) {
        if (!steps[s].devices) continue;
        a->steps[s].comm_hidden_ps = steps[s].hidden / steps[s].devices;
        a->steps[s].comm_exposed_ps = steps[s].exposed / steps[s].devices;
    }
    (void)m;
    free(steps);
    return rc;
}

/* Median of n values (sorted in place). */
static double median(int64_t *x, size_t n) {
    qsort(x, n, sizeof *x, cmp_i64);
    return n % 2 ? (double)x[n / 2] : ((double)x[n / 2 - 1] + (double)x[n / 2]) / 2;
}

typedef struct tally { uint32_t *late, *strag; } tally;

static const char *device_name(const jp_analysis *a, uint32_t d) { return d < a->n_devices ? a->devices[d].name : ""; }

/* The stragglers among an instance's n >= 3 devices: the modified z-score of each start, into its
 * row (the largest, and the device with it when above 3.5) and the op's tallies. */
static void stragglers(jp_comm_instance *row, jp_comm_stat *s, const comm_ev *v, size_t n, int64_t *scratch,
                       tally *t, const jp_analysis *a) {
    for (size_t i = 0; i < n; i++) scratch[i] = v[i].start;
    double med = median(scratch, n);
    for (size_t i = 0; i < n; i++) scratch[i] = (int64_t)fabs((double)v[i].start - med);
    double mad = median(scratch, n);
    if (mad <= 0) return;
    for (size_t i = 0; i < n; i++) {
        double z = 0.6745 * ((double)v[i].start - med) / mad;
        if (z > row->z_max) {
            row->z_max = z;
            if (z > 3.5) row->straggler = device_name(a, v[i].device);
        }
        if (z <= 3.5) continue;
        row->n_straggler++;
        if (v[i].device < a->n_devices) s->n_straggler++, t->strag[v[i].device]++;
    }
}

/* The step at t, as jp_step_at gives it, tried first at *hint and the step after it (an op's
 * instances come in time order, about one a step), which it then keeps. */
static long step_near(const jp_analysis *a, long *hint, int64_t t) {
    for (long h = *hint < 0 ? 0 : *hint, last = h + 1; h <= last && (size_t)h < a->n_steps; h++) {
        const jp_step *s = &a->steps[h];
        if (s->start_ps > t) break;
        if ((size_t)h + 1 == a->n_steps || s[1].start_ps > t) {
            *hint = h;
            return t < s->start_ps + s->dur_ps ? h : -1;
        }
    }
    return jp_step_at(a, t);
}

/* One instance across devices (v[0..n)): the wait, the last to arrive, the stragglers by the
 * modified z-score 0.6745 (x - median) / MAD of start times (Iglewicz and Hoaglin: > 3.5); its
 * row, written to *row (its step found from *hint). */
static void instance(jp_comm_stat *s, const comm_ev *v, size_t n, int64_t *scratch, tally *t, jp_analysis *a,
                     long *hint, jp_comm_instance *row) {
    size_t n_dev = a->n_devices;
    int64_t lo = INT64_MAX, hi = INT64_MIN, last = INT64_MIN, first = INT64_MAX;
    uint32_t late = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t exposed = v[i].dur - v[i].hidden;
        if (exposed < lo) lo = exposed;
        if (exposed > hi) hi = exposed;
        if (v[i].start > last) last = v[i].start, late = v[i].device;
        if (v[i].start < first) first = v[i].start;
    }
    long step = step_near(a, hint, first);
    *row = (jp_comm_instance){.module = s->module, .name = s->name, .type = s->type, .index = v[0].k,
                              .step_num = step >= 0 ? a->steps[step].step_num : INT64_MIN, .n_devices = (uint32_t)n,
                              .start_ps = first, .last_start_ps = last, .exposed_min_ps = lo, .exposed_max_ps = hi,
                              .wait_ps = hi - lo, .last_device = n > 1 ? device_name(a, late) : "", .z_max = -1,
                              .straggler = ""};
    if (n < 2) return;
    for (size_t i = 0; i < n; i++) /* each device's wait: its exposed time beyond the last to arrive */
        if (v[i].device < n_dev) a->devices[v[i].device].comm_wait_ps += v[i].dur - v[i].hidden - lo;
    s->wait_ps += hi - lo;
    if (hi - lo > s->wait_max_ps) s->wait_max_ps = hi - lo;
    if (late < n_dev) t->late[late]++;
    if (n >= 3) stragglers(row, s, v, n, scratch, t, a);
}

static const char *most(const jp_analysis *a, const uint32_t *c, size_t n, uint32_t *best) {
    size_t arg = 0;
    *best = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i] > *best) *best = c[i], arg = i;
    return *best ? a->devices[arg].name : "";
}

/* One row per op across devices: v sorted by row, instance, device; each instance's row in
 * a->comm_instances (counted first, so written in place). */
static int rows(const jp_model *m, jp_arena *arena, jp_analysis *a, comm_ev *v, size_t n) {
    size_t n_keys = 0, n_inst = 0;
    for (size_t i = 0; i < n; i++) {
        n_keys += !i || v[i].row != v[i - 1].row;
        n_inst += !i || v[i].row != v[i - 1].row || v[i].k != v[i - 1].k;
    }
    jp_comm_stat *out = jp_arena_alloc(arena, (n_keys ? n_keys : 1) * sizeof *out);
    jp_comm_instance *inst = jp_arena_alloc(arena, (n_inst ? n_inst : 1) * sizeof *inst);
    int64_t *scratch = malloc((n ? n : 1) * sizeof *scratch);
    uint32_t *counts = calloc(2 * (a->n_devices ? a->n_devices : 1) + 1, sizeof *counts);
    uint8_t *seen = calloc(a->n_devices ? a->n_devices : 1, 1);
    if (!out || !inst || !scratch || !counts || !seen) {
        free(scratch), free(counts), free(seen);
        return JP_ERR_NOMEM;
    }
    size_t r = 0, ni = 0;
    for (size_t i = 0, j; i < n; i = j) {
        const jp_opdef *d = &JP_VEC_AT(&m->opdefs, jp_opdef, v[i].row);
        jp_comm_stat *s = &out[r++];
        *s = (jp_comm_stat){.module = d->module, .name = d->name, .type = comm_type(d), .bytes = d->coll_bytes,
                            .group_size = d->group_size, .busbw = -1};
        memset(counts, 0, (2 * a->n_devices + 1) * sizeof *counts);
        memset(seen, 0, a->n_devices);
        tally t = {counts, counts + a->n_devices};
        long hint = -1;
        for (j = i; j < n && v[j].row == v[i].row;) {
            size_t k = j;
            while (k < n && v[k].row == v[i].row && v[k].k == v[j].k) {
                s->count++, s->total_ps += v[k].dur, s->hidden_ps += v[k].hidden;
                if (v[k].device < a->n_devices && !seen[v[k].device]) seen[v[k].device] = 1, s->n_devices++;
                k++;
            }
            instance(s, v + j, k - j, scratch, &t, a, &hint, &inst[ni++]);
            j = k;
        }
        s->exposed_ps = s->total_ps - s->hidden_ps;
        double secs = (double)s->total_ps / 1e12;
        if (s->bytes > 0 && secs > 0) s->algbw = s->bytes * (double)s->count / secs;
        double f = bus_factor(s->type, s->group_size);
        if (s->algbw > 0 && f >= 0) s->busbw = s->algbw * f;
        s->last_device = most(a, t.late, a->n_devices, &s->n_late);
        uint32_t ns;
        s->straggler = most(a, t.strag, a->n_devices, &ns);
    }
    free(scratch), free(counts), free(seen);
    a->comms = out;
    a->n_comms = r;
    a->comm_instances = inst;
    a->n_comm_instances = ni;
    return JP_OK;
}

static int cmp_instance(const void *x, const void *y) { /* by earliest start, then op and index */
    const jp_comm_instance *a = x, *b = y;
    if (a->start_ps != b->start_ps) return a->start_ps < b->start_ps ? -1 : 1;
    int c = strcmp(a->module, b->module);
    if (!c) c = strcmp(a->name, b->name);
    return c ? c : (a->index > b->index) - (a->index < b->index);
}

/* a->comm_instances in cmp_instance's order, equal ones in their order (as glibc's stable qsort
 * left them): stable by start on 16-byte keys, each row (128 bytes) moved once in place, cycle by
 * cycle, and only those that start together compared by op and index. JP_ERR_NOMEM or JP_OK. */
static int order_instances(jp_analysis *a) {
    size_t n = a->n_comm_instances;
    jp_comm_instance *v = a->comm_instances;
    if (n < 2) return JP_OK;
    inst_key *key = malloc(n * sizeof *key);
    if (!key) return JP_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) key[i] = (inst_key){v[i].start_ps, i};
    jp_sort_by_key64(key, n, sizeof *key, offsetof(inst_key, start), 1, jp_cmp_i64);
    for (size_t i = 0; i < n; i++) { /* row key[j].at goes to j; UINT64_MAX: j is done */
        if (key[i].at == UINT64_MAX) continue;
        jp_comm_instance first = v[i];
        size_t j = i;
        for (size_t from; (from = (size_t)key[j].at) != i; j = from) v[j] = v[from], key[j].at = UINT64_MAX;
        v[j] = first, key[j].at = UINT64_MAX;
    }
    free(key);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && v[j].start_ps == v[i].start_ps;) j++;
        if (j - i > 1) qsort(v + i, j - i, sizeof *v, cmp_instance);
    }
    return JP_OK;
}

static int cmp_stat(const void *x, const void *y) {
    const jp_comm_stat *a = x, *b = y;
    if (a->total_ps != b->total_ps) return a->total_ps < b->total_ps ? 1 : -1;
    int c = strcmp(a->module, b->module);
    return c ? c : strcmp(a->name, b->name);
}

/* 1 when some op is a collective: without one there is nothing to do (and no pass over the ops). */
static int any_collective(const jp_model *m) {
    for (size_t i = 0; i < m->opdefs.n; i++)
        if (JP_VEC_AT(&m->opdefs, jp_opdef, i).collective) return 1;
    return 0;
}

int jp_comm_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    size_t nd = m->devices.n;
    for (size_t i = 0; i < a->n_devices; i++) a->devices[i].comm_overlap_pct = -1;
    if (!any_collective(m)) return JP_OK;
    jp_vec evs = {0}, exposed = {0};
    jp_map rows_of = {0};
    jp_vec *comp = calloc(nd ? nd : 1, sizeof *comp);
    if (!comp) return JP_ERR_NOMEM;
    int rc = collect(m, &evs, comp, &rows_of);
    jp_map_deinit(&rows_of);
    comm_ev *v = evs.data;
    if (rc == JP_OK) rc = overlap(m, a, v, evs.n, comp, &exposed);
    if (rc == JP_OK && exposed.n) { /* kept with the analysis, for the viewer's timeline */
        a->comm_exposed = jp_arena_alloc(arena, exposed.n * sizeof *a->comm_exposed);
        if (!a->comm_exposed) rc = JP_ERR_NOMEM;
        else memcpy(a->comm_exposed, exposed.data, exposed.n * sizeof *a->comm_exposed), a->n_comm_exposed = exposed.n;
    }
    jp_vec_free(&exposed);
    if (rc == JP_OK) sort_instances(v, evs.n);
    if (rc == JP_OK) rc = rows(m, arena, a, v, evs.n);
    if (rc == JP_OK && a->n_comms > 1) qsort(a->comms, a->n_comms, sizeof *a->comms, cmp_stat);
    if (rc == JP_OK) rc = order_instances(a);
    for (size_t i = 0; i < nd; i++) jp_vec_free(&comp[i]);
    free(comp);
    jp_vec_free(&evs);
    return rc;
}
