/* launch.c - launch and idle causes: each device event (kernel, copy, memset) matched to the host
 * API call that queued it by their correlation_id; per (device, kernel) the call's time, the queue
 * time and the launch delay; per device its idle gaps split by cause (waiting for the host, kernel
 * to kernel, other) and the launch queue's depth. Definitions and their sources (HTA, nsys) are in
 * docs/design.md "Launch and idle causes". */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"

typedef struct item {      /* one device event, with its launch call's start when found */
    int64_t start, end;
    int64_t call_start;    /* NO_CALL when its call is unknown */
    uint32_t stream;       /* index into jp_model.launch_lines (its device: that line's) */
    uint32_t stat;         /* index into the stats vector, with MEMBER set for a later event of a
                            * call that launched several (a CUDA graph's kernels: one cuGraphLaunch) */
} item;

#define MEMBER 0x80000000u /* item.stat: not the launch itself, another event of its call */

#define NO_CALL INT64_MIN

enum { MERGE_RUNS_MAX = 16 }; /* a device's streams merged by picking the least of their heads; more are sorted */

/* The two ends of a launch as matching reads them, from whichever record holds them (model.h). */
typedef struct call_rec { int64_t start_ps, end_ps; const char *name; } call_rec;
typedef struct work_rec {
    int64_t start_ps, end_ps;
    const char *name;
    uint64_t correlation;
    uint32_t device, line;
    int kernel;
} work_rec;

static int cmp_stat(const void *x, const void *y) {
    const jp_launch_stat *a = x, *b = y;
    if (a->delay_ps != b->delay_ps) return a->delay_ps < b->delay_ps ? 1 : -1;
    if (a->device != b->device) return a->device < b->device ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* The rows by (device, name): a map, and before it a direct-mapped cache of recent pairs, as a
 * capture runs a few hundred kernels millions of times. */
enum { STAT_CACHE = 1024 };
typedef struct stat_index {
    jp_map map;
    struct { const char *name; uint32_t device, at; } cache[STAT_CACHE];
} stat_index;

/* The stat row of (device, name), created on first sight; NULL when out of memory. */
static jp_launch_stat *stat_for(stat_index *index, jp_vec *stats, const char *name, uint32_t device, int kernel,
                                uint32_t *at) {
    size_t slot = (size_t)(((uintptr_t)name >> 4) ^ ((uintptr_t)device * 40503u)) % STAT_CACHE;
    if (index->cache[slot].name == name && index->cache[slot].device == device) {
        *at = index->cache[slot].at;
        return &JP_VEC_AT(stats, jp_launch_stat, *at);
    }
    int found;
    uint32_t k = jp_map_get_or_put(&index->map, device, jp_ptr_key(name), 0, (uint32_t)stats->n, &found);
    if (k == UINT32_MAX) return NULL;
    jp_launch_stat *s = found ? &JP_VEC_AT(stats, jp_launch_stat, k) : jp_vec_push(stats, sizeof *s);
    if (!s) return NULL;
    if (!found) *s = (jp_launch_stat){.name = name, .api = "", .device = device, .kernel = (uint8_t)kernel};
    index->cache[slot].name = name, index->cache[slot].device = device, index->cache[slot].at = k;
    *at = k;
    return s;
}

/* Adds one device event [start, end) to its row, and the call's times when it is the call's first
 * event (a later event of a call that launched several adds only its device time). */
static void count_launch(jp_launch_stat *s, int64_t start, int64_t end, const call_rec *call) {
    s->count++;
    s->kernel_ps += end - start;
    if (!call) return;
    int64_t api = call->end_ps - call->start_ps, queue = start - call->end_ps, delay = start - call->start_ps;
    if (!s->matched) s->api = call->name;
    s->matched++;
    s->api_ps += api;
    s->queue_ps += queue;
    s->delay_ps += delay;
    if (s->matched == 1 || queue > s->queue_max_ps) s->queue_max_ps = queue;
    if (s->matched == 1 || delay > s->delay_max_ps) s->delay_max_ps = delay;
}

/* The launch queue of one device, as walk_items leaves it: a launch is outstanding from its call's
 * start to its work's end (HTA's queue length, over all the device's streams). */
typedef struct queue { int64_t *starts, *ends; size_t k; } queue;

/* The gap from `idle` (when the work before ended) to it->start, added to its cause, by HTA's rule:
 * the host, when its launch call began after the device went idle; kernel to kernel, when it was
 * queued before and the gap is short; else other. The part of a host wait during which a host
 * compiled (`compiles`, merged) is other: the host was not slow to launch, it was compiling, which
 * compiles and findings report apart. 1 when the gap is the host's. */
static int idle_gap(int64_t *host, int64_t *kernel, int64_t *other, const item *it, int64_t idle,
                    const jp_interval *compiles, size_t n_compiles) {
    int64_t gap = it->start - idle;
    if (it->call_start != NO_CALL && it->call_start > idle) {
        int64_t compiling = jp_intervals_covered(compiles, n_compiles, idle, it->start);
        *host += gap - compiling;
        *other += compiling;
        return 1;
    }
    if (it->call_start != NO_CALL && gap < JP_LAUNCH_K2K_PS) *kernel += gap;
    else *other += gap;
    return 0;
}

/* Adds item v to its stream's row, rows[v->stream] (HTA's per-stream view,
 * _analyze_idle_time_for_stream): items by start are each stream's by start too, so the row keeps
 * its stream's end of work so far (last_ps) and adds its busy time and gaps. */
static inline void stream_add(jp_launch_stream *rows, const jp_launch_line *lines, const item *v,
                              const jp_interval *compiles, size_t n_compiles) {
    jp_launch_stream *s = &rows[v->stream];
    if (!s->events) {
        const jp_launch_line *l = &lines[v->stream];
        *s = (jp_launch_stream){.device = l->device, .name = l->name, .id = l->id, .first_ps = v->start,
                                .last_ps = v->start};
    } else if (v->start > s->last_ps) {
        idle_gap(&s->idle_host_ps, &s->idle_kernel_ps, &s->idle_other_ps, v, s->last_ps, compiles, n_compiles);
    }
    s->events++;
    s->n_launched += v->call_start != NO_CALL && !(v->stat & MEMBER);
    int64_t from = v->start > s->last_ps ? v->start : s->last_ps;
    if (v->end > from) s->busy_ps += v->end - from;
    if (v->end > s->last_ps) s->last_ps = v->end;
}

/* Device items (one device; order[0..n) by start), in one walk: each gap of their union goes to
 * the cause of the event that ends it (idle_gap), and each stream's to its row (stream_add); each
 * launch's call start and end go to q (a call launching several events is outstanding until its
 * last ends). */
static void walk_items(jp_device *d, jp_launch_stream *rows, const jp_launch_line *lines, const item *items,
                       const uint32_t *order, size_t n, jp_launch_stat *stats, const jp_interval *compiles,
                       size_t n_compiles, queue *q) {
    int64_t busy_end = items[order[0]].end;
    for (size_t i = 0; i < n; i++) {
        const item *v = &items[order[i]];
        if (v->call_start != NO_CALL && !(v->stat & MEMBER)) q->starts[q->k] = v->call_start, q->ends[q->k++] = v->end;
        else if (v->call_start != NO_CALL && q->k && v->end > q->ends[q->k - 1] && v->call_start == q->starts[q->k - 1])
            q->ends[q->k - 1] = v->end;
        if (i && v->start > busy_end &&
            idle_gap(&d->idle_host_ps, &d->idle_kernel_ps, &d->idle_other_ps, v, busy_end, compiles, n_compiles))
            stats[v->stat & ~MEMBER].n_host_wait++;
        if (v->end > busy_end) busy_end = v->end;
        stream_add(rows, lines, v, compiles, n_compiles);
    }
}

/* The queue's depth over time on one device, built as its changes come (in time order): every change
 * while they fit JP_QUEUE_POINTS_MAX points; past that, the points so far and the rest go into
 * buckets (the span over half the points, in whole ns), each keeping its most outstanding, and,
 * where buckets without a change follow one, a point with the depth they carry: at most two points
 * a bucket, so within the bound. Only the final depth of an instant counts (ends and starts at
 * one instant make no depth that never was). */
enum { QCAP = JP_QUEUE_POINTS_MAX + 4 };
typedef struct qseries {
    jp_queue_point *p, *tmp;  /* QCAP each */
    size_t n;
    int64_t t0, span, bucket, cur_b;
    uint32_t cur_max;
    uint64_t changes;
} qseries;

/* What queue_depth keeps in registers between changes: a change at t goes to the current bucket
 * while t < b_end (buckets, as t only grows), else to the next point while n < room (points). */
typedef struct qrun {
    size_t n, room;
    int64_t b_end;
    uint32_t last, cur_max;
    uint64_t changes;
} qrun;

static void qs_emit(qseries *q, int64_t t, uint32_t d) {
    if (q->n < QCAP) q->p[q->n++] = (jp_queue_point){t, d};
}

static void qs_bucket(qseries *q, int64_t t, uint32_t before, uint32_t d) {
    int64_t b = (t - q->t0) / q->bucket;
    uint32_t hi = d > before ? d : before;
    if (q->cur_b < 0) {
        q->cur_b = b, q->cur_max = hi;
    } else if (b == q->cur_b) {
        if (d > q->cur_max) q->cur_max = d;
    } else {
        qs_emit(q, q->t0 + q->cur_b * q->bucket, q->cur_max);
        if (b > q->cur_b + 1 && before != q->cur_max) qs_emit(q, q->t0 + (q->cur_b + 1) * q->bucket, before);
        q->cur_b = b, q->cur_max = hi;
    }
}

/* A change to a new bucket, or the one past the points: the points so far go into buckets first. */
static void qs_slow(qseries *q, qrun *r, int64_t t, uint32_t d) {
    q->n = r->n, q->cur_max = r->cur_max;
    if (!q->bucket) { /* too many: the points so far into buckets, then on */
        size_t n = q->n;
        memcpy(q->tmp, q->p, n * sizeof *q->p);
        /* whole ns, so that the JSON's ms (ns resolution) give the buckets' bounds exactly */
        q->bucket = (q->span / (JP_QUEUE_POINTS_MAX / 2 - 1) / 1000 + 1) * 1000, q->cur_b = -1, q->n = 0;
        for (size_t i = 0; i < n; i++) qs_bucket(q, q->tmp[i].t_ps, i ? q->tmp[i - 1].depth : 0, q->tmp[i].depth);
    }
    qs_bucket(q, t, r->last, d);
    /* a bucket below 0 (work ending before the first call: clocks apart) takes this way every time */
    r->n = q->n, r->cur_max = q->cur_max, r->room = 0;
    r->b_end = q->cur_b >= 0 ? q->t0 + (q->cur_b + 1) * q->bucket : INT64_MIN;
}

/* Depth d is final at instant t. */
static inline void qs_change(qseries *q, qrun *r, int64_t t, uint32_t d) {
    if (d == r->last) return;
    r->changes++;
    if (t < r->b_end) {
        if (d > r->cur_max) r->cur_max = d;
    } else if (r->n < r->room) {
        q->p[r->n++] = (jp_queue_point){t, d};
    } else {
        qs_slow(q, r, t, d);
    }
    r->last = d;
}

/* Ends device `device`'s series and keeps it (points in the arena). JP_ERR_NOMEM or JP_OK. */
static int qs_finish(qseries *q, const qrun *r, uint32_t device, jp_arena *arena, jp_vec *out) {
    q->n = r->n, q->cur_max = r->cur_max, q->changes = r->changes;
    if (q->bucket && q->cur_b >= 0) qs_emit(q, q->t0 + q->cur_b * q->bucket, q->cur_max);
    if (!q->changes) return JP_OK;
    jp_queue_point *p = jp_arena_alloc(arena, q->n * sizeof *p);
    jp_queue_series *s = p ? jp_vec_push(out, sizeof *s) : NULL;
    if (!s) return JP_ERR_NOMEM;
    memcpy(p, q->p, q->n * sizeof *p);
    *s = (jp_queue_series){device, q->changes, q->bucket, p, q->n};
    return JP_OK;
}

/* The queue's depth over time: the sorted call starts and the sorted ends, merged (an end before a
 * start at one instant: no depth that never was); its most, time-weighted mean and series (qs,
 * kept by qs_finish). */
static void queue_depth(jp_device *d, queue *q, qseries *qs, qrun *r) {
    int64_t *starts = q->starts, *ends = q->ends;
    size_t k = q->k;
    jp_sort_by_key64(starts, k, sizeof *starts, 0, 1, jp_cmp_i64);
    jp_sort_by_key64(ends, k, sizeof *ends, 0, 1, jp_cmp_i64);
    long depth = 0, most = d->queue_max;
    double area = 0;
    int64_t t = k ? starts[0] : 0;
    qs->n = 0, qs->bucket = 0, qs->cur_b = -1, qs->t0 = t, qs->span = k ? ends[k - 1] - starts[0] : 0;
    *r = (qrun){.room = JP_QUEUE_POINTS_MAX, .b_end = INT64_MIN};
    for (size_t i = 0, j = 0; j < k;) {
        int start = i < k && starts[i] < ends[j];
        int64_t now = start ? starts[i++] : ends[j++];
        if (now != t) qs_change(qs, r, t, (uint32_t)depth); /* the depth at t is final */
        if (depth > 0) area += (double)depth * (double)(now - t);
        t = now;
        depth += start ? 1 : -1;
        if (depth > most) most = depth;
    }
    qs_change(qs, r, t, (uint32_t)depth);
    d->queue_max = (uint32_t)most;
    d->queue_mean = k && ends[k - 1] > starts[0] ? area / (double)(ends[k - 1] - starts[0]) : 0;
}

/* ---- the model's records of launches (model.h "The two ends of a launch") ---------------------- */

/* One host's records: [from, to) of each vector holding launches, by line. */
typedef struct host_run { size_t calls[2], ops[2], work[2]; } host_run;

static void run_of(const void *base, size_t n, size_t size, size_t line_off, const jp_model *m, size_t h, size_t out[2]) {
    const jp_model_host *hs = m->hosts.data;
    out[0] = jp_model_first_at_line(base, n, size, line_off, hs[h].first_line);
    out[1] = h + 1 < m->hosts.n ? jp_model_first_at_line(base, n, size, line_off, hs[h + 1].first_line) : n;
}

static void host_run_of(const jp_model *m, size_t h, host_run *r) {
    run_of(m->launch_calls.data, m->launch_calls.n, sizeof(jp_launch_call), offsetof(jp_launch_call, line), m, h, r->calls);
    run_of(m->ops.data, m->ops.n, sizeof(jp_op_ev), offsetof(jp_op_ev, line), m, h, r->ops);
    run_of(m->launch_work.data, m->launch_work.n, sizeof(jp_launch_ev), offsetof(jp_launch_ev, line), m, h, r->work);
}

static call_rec call_at(const jp_model *m, uint32_t c) {
    const jp_launch_call *l = &JP_VEC_AT(&m->launch_calls, jp_launch_call, c);
    if (c + 16 < m->launch_calls.n) __builtin_prefetch(l + 16); /* a stream's next calls follow, a few apart */
    return (call_rec){l->start_ps, l->end_ps, JP_VEC_AT(&m->launch_names, const char *, l->name)};
}

/* The calls of one host by correlation id (index into launch_calls): a dense table over the ids'
 * range when it is at most 4 slots a call (CUPTI and ROCm number their launches 1, 2, 3, ...),
 * else a map. */
typedef struct call_index {
    uint64_t lo;
    uint32_t *dense;       /* [id - lo] -> a call, UINT32_MAX for none; NULL: the map */
    size_t n_dense;
    jp_map map;
} call_index;

static uint32_t call_of(const call_index *ix, uint64_t correlation) {
    if (!ix->dense) return jp_map_get(&ix->map, correlation, 0, 0);
    return correlation >= ix->lo && correlation - ix->lo < ix->n_dense ? ix->dense[correlation - ix->lo] : UINT32_MAX;
}

/* JP_ERR_NOMEM, JP_ERR_LIMIT (more calls than a uint32 index holds) or JP_OK. */
static int calls_index(const jp_model *m, size_t h, const host_run *r, call_index *ix) {
    memset(ix, 0, sizeof *ix);
    const jp_launch_call *l = m->launch_calls.data;
    size_t first = r->calls[0], last = r->calls[1];
    if (first == last) return JP_OK;
    if (last >= UINT32_MAX) return JP_ERR_LIMIT;
    const jp_model_host *hs = &JP_VEC_AT(&m->hosts, jp_model_host, h); /* the ids' range, noted while reading */
    uint64_t lo = hs->call_lo, hi = hs->call_hi;
    ix->lo = lo;
    if (hi - lo < 4 * (uint64_t)(last - first) + 4096 && (ix->dense = malloc((size_t)(hi - lo + 1) * sizeof *ix->dense))) {
        ix->n_dense = (size_t)(hi - lo + 1);
        memset(ix->dense, 0xff, ix->n_dense * sizeof *ix->dense);
        for (size_t i = first; i < last; i++) /* the first call of an id wins */
            if (ix->dense[l[i].correlation - lo] == UINT32_MAX) ix->dense[l[i].correlation - lo] = (uint32_t)i;
        return JP_OK;
    }
    for (size_t i = first; i < last; i++)
        if (jp_map_get_or_put(&ix->map, l[i].correlation, 0, 0, (uint32_t)i, NULL) == UINT32_MAX) return JP_ERR_NOMEM;
    return JP_OK;
}

/* The device work of one host in line order, each line in time order: op events carrying a launch
 * and the work kept apart, merged by (line, start). */
typedef struct work_cursor {
    const jp_model *m;
    size_t op, op_end, apart, apart_end;
} work_cursor;

/* The next op event from c->op on with a launch: its index, or op_end when none. */
static size_t next_launched(const work_cursor *c, size_t i) {
    while (i < c->op_end && !JP_VEC_AT(&c->m->ops, jp_op_ev, i).launch) i++;
    return i;
}

/* The next device work, 1, or 0 after the last. */
static int next_work(work_cursor *c, work_rec *w) {
    const jp_op_ev *e = c->op < c->op_end ? &JP_VEC_AT(&c->m->ops, jp_op_ev, c->op) : NULL;
    const jp_launch_ev *l = c->apart < c->apart_end ? &JP_VEC_AT(&c->m->launch_work, jp_launch_ev, c->apart) : NULL;
    if (e && l && (l->line < e->line || (l->line == e->line && l->start_ps < e->start_ps))) e = NULL;
    if (e) {
        const char *const *names = c->m->launch_names.data;
        *w = (work_rec){e->start_ps, e->end_ps, names[jp_op_launch_name(e->launch)], jp_op_launch_id(e->launch),
                        JP_VEC_AT(&c->m->opdefs, jp_opdef, e->op).device, e->line, (e->launch & JP_OP_LAUNCH_KERNEL) != 0};
        c->op = next_launched(c, c->op + 1);
        return 1;
    }
    if (!l) return 0;
    *w = (work_rec){l->start_ps, l->end_ps, l->name, l->correlation, jp_launch_device(l), l->line, jp_launch_is_kernel(l)};
    c->apart++;
    return 1;
}

/* Where matched device events gather until their device is done: one device's run at a time (a
 * device is one plane, whose lines are numbered in a row, so its work is one run of the records). */
typedef struct gather {
    item *items;
    size_t n, cap;
    size_t run_head[MERGE_RUNS_MAX], n_runs; /* where the items' runs by start begin, noted as they come */
    uint32_t device;       /* the items' device */
    jp_analysis *a;
    jp_vec stats;          /* jp_launch_stat rows */
    stat_index *index;
    jp_interval *compiles; /* the hosts' compile spans, merged: launches made in them are left out */
    size_t n_compiles;
    const jp_launch_line *lines; /* the model's launch_lines */
    jp_launch_stream *streams;   /* a row per line (events 0: none yet) */
    qseries queue;               /* the device's queue series being built */
    jp_vec series;               /* jp_queue_series, per device with launches */
    jp_arena *arena;
} gather;

/* Whether a host compiled at t: most launches come after the last compile, found without a search. */
static int in_compile(const gather *g, int64_t t) {
    if (!g->n_compiles || t < g->compiles[0].start || t >= g->compiles[g->n_compiles - 1].end) return 0;
    return jp_intervals_covered(g->compiles, g->n_compiles, t, t + 1) > 0;
}

/* Room for one more item. JP_ERR_NOMEM or JP_OK. */
static int gather_room(gather *g) {
    if (g->n < g->cap) return JP_OK;
    size_t cap = g->cap ? 2 * g->cap : 4096;
    if (cap > SIZE_MAX / sizeof *g->items) return JP_ERR_NOMEM;
    item *v = realloc(g->items, cap * sizeof *v);
    if (!v) return JP_ERR_NOMEM;
    g->items = v, g->cap = cap;
    return JP_OK;
}

/* The items in order of start, stable, as indices: a device's streams come one after another,
 * each in time order, so the items are a few sorted runs (k, starting at head[], as gathered),
 * merged here by picking the least head rather than moved (32 bytes each) pass after pass. More
 * runs are sorted in place. NULL when out of memory. */
static uint32_t *by_start(item *v, size_t n, size_t head[MERGE_RUNS_MAX], size_t k) {
    uint32_t *order = n <= UINT32_MAX ? malloc((n ? n : 1) * sizeof *order) : NULL;
    size_t end[MERGE_RUNS_MAX];
    if (!order || k <= 1 || k > MERGE_RUNS_MAX) {
        if (order && k > MERGE_RUNS_MAX) jp_sort_by_key64(v, n, sizeof *v, offsetof(item, start), 1, jp_cmp_i64);
        for (size_t i = 0; order && i < n; i++) order[i] = (uint32_t)i;
        return order;
    }
    for (size_t r = 0; r < k; r++) end[r] = r + 1 < k ? head[r + 1] : n;
    for (size_t i = 0; i < n;) {
        size_t best = k, next = k; /* the least head and the least of the others; ties to the earlier run */
        for (size_t r = 0; r < k; r++) {
            if (head[r] == end[r]) continue;
            if (best == k || v[head[r]].start < v[head[best]].start) next = best, best = r;
            else if (next == k || v[head[r]].start < v[head[next]].start) next = r;
        }
        /* the best run gives all it holds before the next run's head: one comparison an item while
         * the compute stream runs on and the copy streams wait */
        int64_t bound = next < k ? v[head[next]].start : INT64_MAX;
        do order[i++] = (uint32_t)head[best]++;
        while (head[best] < end[best] && (v[head[best]].start < bound || (v[head[best]].start == bound && best < next)));
    }
    return order;
}

/* The idle split and launch queue of the device gathered, which is then let go. JP_ERR_NOMEM or JP_OK. */
static int flush(gather *g) {
    item *items = g->items;
    size_t n = g->n, k = g->n_runs;
    g->n = 0, g->n_runs = 0;
    if (!n) return JP_OK;
    uint32_t *order = by_start(items, n, g->run_head, k);
    queue q = {malloc(2 * n * sizeof *q.starts), NULL, 0};
    if (!order || !q.starts) {
        free(order), free(q.starts);
        return JP_ERR_NOMEM;
    }
    q.ends = q.starts + n;
    jp_device *d = &g->a->devices[g->device];
    walk_items(d, g->streams, g->lines, items, order, n, g->stats.data, g->compiles, g->n_compiles, &q);
    qrun r;
    queue_depth(d, &q, &g->queue, &r);
    free(order), free(q.starts);
    return qs_finish(&g->queue, &r, g->device, g->arena, &g->series);
}

/* The events one launch call queued: one for a kernel launch or a copy, a graph's kernels for
 * cuGraphLaunch (hipGraphLaunch). They come one after another on their stream. Only a graph launch
 * groups its events: ROCm may give one id to two kernels of separate launches (the MI300 conv
 * capture: an Im3d2Col and a transpose under one hipStreamWaitEvent). */
typedef struct launch_group {
    uint32_t call, device, stat; /* the call (UINT32_MAX: none open), its device, its first event's row */
    call_rec c;
    int64_t work_ps;             /* the events' device time */
    uint32_t kernels;
} launch_group;

/* A launch of kernels whose device time all together is shorter than its call is a short one: the
 * host could not launch them as fast as they ran (one kernel, or a whole graph). */
static void end_group(const launch_group *grp, jp_launch_stat *stats) {
    if (grp->call == UINT32_MAX || !grp->kernels) return;
    stats[grp->stat].n_short += grp->work_ps < grp->c.end_ps - grp->c.start_ps;
}

/* Matches one device event w to its call (c: the call, UINT32_MAX none), adding to its row and
 * gathering it. JP_ERR_NOMEM or JP_OK. */
static int match_one(const jp_model *m, gather *g, launch_group *grp, const work_rec *w, uint32_t stream, uint32_t c) {
    call_rec call = c == UINT32_MAX ? (call_rec){0, 0, NULL} : call_at(m, c);
    int64_t made = call.name ? call.start_ps : w->start_ps;
    if (in_compile(g, made)) return JP_OK; /* the autotuner's */
    uint32_t at = 0;
    jp_launch_stat *s = stat_for(g->index, &g->stats, w->name, w->device, w->kernel, &at);
    if (!s || gather_room(g)) return JP_ERR_NOMEM;
    int member = call.name && c == grp->call && w->device == grp->device && strstr(call.name, "GraphLaunch");
    if (!member) end_group(grp, g->stats.data), *grp = (launch_group){c, w->device, at, call, 0, 0};
    count_launch(s, w->start_ps, w->end_ps, member || !call.name ? NULL : &call);
    g->a->devices[w->device].n_launched += call.name && !member; /* a launch matched to its call */
    if (call.name) grp->work_ps += w->end_ps - w->start_ps, grp->kernels += (uint32_t)w->kernel;
    g->device = w->device;
    if (!g->n || w->start_ps < g->items[g->n - 1].start) { /* a new run by start */
        if (g->n_runs < MERGE_RUNS_MAX) g->run_head[g->n_runs] = g->n;
        g->n_runs++;
    }
    g->items[g->n++] = (item){w->start_ps, w->end_ps, call.name ? call.start_ps : NO_CALL, stream,
                              at | (member ? MEMBER : 0)};
    return JP_OK;
}

/* The launch_lines entry of global line `line`, UINT32_MAX when none. */
static uint32_t stream_of(const jp_model *m, uint32_t line) {
    const jp_launch_line *l = m->launch_lines.data;
    size_t i = jp_model_first_at_line(l, m->launch_lines.n, sizeof *l, offsetof(jp_launch_line, line), line);
    return i < m->launch_lines.n && l[i].line == line && i < UINT32_MAX ? (uint32_t)i : UINT32_MAX;
}

/* Matches the device work of one host to its calls, adding to the rows and gathering it device
 * by device. JP_ERR_NOMEM, JP_ERR_LIMIT or JP_OK. */
static int match_host(const jp_model *m, size_t h, gather *g) {
    host_run r;
    host_run_of(m, h, &r);
    work_cursor cur = {m, r.ops[0], r.ops[1], r.work[0], r.work[1]};
    cur.op = next_launched(&cur, cur.op);
    if (cur.op == cur.op_end && cur.apart == cur.apart_end) return JP_OK; /* no device work */
    call_index ix;
    int rc = calls_index(m, h, &r, &ix);
    launch_group grp = {.call = UINT32_MAX};
    work_rec w;
    uint32_t line = UINT32_MAX, stream = UINT32_MAX; /* the last work's line and its launch_lines entry */
    while (rc == JP_OK && next_work(&cur, &w)) {
        if (w.device >= g->a->n_devices) continue;
        if (w.line != line) line = w.line, stream = stream_of(m, line);
        if (stream == UINT32_MAX) continue; /* every line with launches is noted while reading */
        if (g->n && g->device != w.device && (rc = flush(g))) break;
        rc = match_one(m, g, &grp, &w, stream, call_of(&ix, w.correlation));
    }
    end_group(&grp, g->stats.data);
    free(ix.dense);
    jp_map_deinit(&ix.map);
    return rc;
}

/* Matches every device event to its call, host by host, filling the rows and the devices' idle
 * split and queue. JP_ERR_NOMEM, JP_ERR_LIMIT or JP_OK. */
static int match(const jp_model *m, gather *g) {
    g->index = calloc(1, sizeof *g->index);
    g->lines = m->launch_lines.data;
    g->streams = calloc(m->launch_lines.n ? m->launch_lines.n : 1, sizeof *g->streams);
    g->queue.p = malloc(2 * QCAP * sizeof *g->queue.p);
    g->queue.tmp = g->queue.p ? g->queue.p + QCAP : NULL;
    int rc = g->index && g->streams && g->queue.p ? JP_OK : JP_ERR_NOMEM;
    for (size_t h = 0; rc == JP_OK && h < m->hosts.n; h++) rc = match_host(m, h, g);
    if (rc == JP_OK) rc = flush(g);
    if (g->index) jp_map_deinit(&g->index->map);
    free(g->index);
    free(g->items);
    free(g->queue.p);
    return rc;
}

/* The streams with work, in the lines' order, and the queue series, into the analysis. */
static int keep_streams(const jp_model *m, jp_arena *arena, gather *g, jp_analysis *a) {
    size_t n = 0;
    for (size_t i = 0; i < m->launch_lines.n; i++) n += g->streams[i].events > 0;
    a->launch_streams = jp_arena_alloc(arena, (n ? n : 1) * sizeof *a->launch_streams);
    if (!a->launch_streams) return JP_ERR_NOMEM;
    for (size_t i = 0; i < m->launch_lines.n; i++)
        if (g->streams[i].events) a->launch_streams[a->n_launch_streams++] = g->streams[i];
    a->queue_series = jp_analysis_copy(arena, &g->series, sizeof(jp_queue_series));
    a->n_queue_series = a->queue_series ? g->series.n : 0;
    return a->queue_series ? JP_OK : JP_ERR_NOMEM;
}

/* The hosts' compile spans as sorted disjoint intervals (*n of them), NULL when out of memory. While
 * XLA compiles, the launches are its autotuner's (candidate kernels, redzone checks), not the
 * program's: their API and queue times would describe the compiler. */
static jp_interval *compile_spans(const jp_model *m, size_t *n) {
    jp_interval *w = malloc((m->spans.n ? m->spans.n : 1) * sizeof *w);
    size_t k = 0;
    for (size_t i = 0; w && m->n_compile_spans && i < m->spans.n; i++) {
        const jp_span *sp = &JP_VEC_AT(&m->spans, jp_span, i);
        if (sp->part == JP_PART_COMPILE) w[k++] = (jp_interval){sp->start_ps, sp->end_ps};
    }
    if (w) jp_intervals_sort(w, k);
    *n = w ? jp_intervals_merge_sorted(w, k) : 0;
    return w;
}

int jp_launch_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    /* a step window's launches are the whole capture's (design.md), left out in its compiles */
    const jp_model *whole = m->whole ? m->whole : m;
    if (!whole->launch_names.n && !whole->launch_work.n) return JP_OK; /* no device work with a launch */
    gather g = {.a = a, .arena = arena};
    g.compiles = compile_spans(m, &g.n_compiles);
    int rc = g.compiles ? match(whole, &g) : JP_ERR_NOMEM;
    free(g.compiles);
    if (rc == JP_OK) rc = keep_streams(whole, arena, &g, a);
    free(g.streams);
    jp_vec_free(&g.series);
    jp_vec stats = g.stats;
    for (size_t i = 0; rc == JP_OK && i < stats.n; i++)
        a->devices[JP_VEC_AT(&stats, jp_launch_stat, i).device].n_short += JP_VEC_AT(&stats, jp_launch_stat, i).n_short;
    if (rc == JP_OK && stats.n) {
        qsort(stats.data, stats.n, sizeof(jp_launch_stat), cmp_stat);
        a->launches = jp_analysis_copy(arena, &stats, sizeof(jp_launch_stat));
        a->n_launches = a->launches ? stats.n : 0;
        if (!a->launches) rc = JP_ERR_NOMEM;
    }
    jp_vec_free(&stats);
    return rc;
}
