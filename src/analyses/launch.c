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
    uint32_t device;
    uint32_t stat;         /* index into the stats vector, with MEMBER set for a later event of a
                            * call that launched several (a CUDA graph's kernels: one cuGraphLaunch) */
    uint32_t stream;       /* index into jp_model.launch_lines */
} item;

#define MEMBER 0x80000000u /* item.stat: not the launch itself, another event of its call */

#define NO_CALL INT64_MIN

static int cmp_item(const void *x, const void *y) {
    const item *a = x, *b = y;
    if (a->device != b->device) return a->device < b->device ? -1 : 1;
    return (a->start > b->start) - (a->start < b->start);
}

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
static jp_launch_stat *stat_for(stat_index *index, jp_vec *stats, const jp_launch_ev *l, uint32_t *at) {
    uint32_t device = jp_launch_device(l);
    size_t slot = (size_t)(((uintptr_t)l->name >> 4) ^ ((uintptr_t)device * 40503u)) % STAT_CACHE;
    if (index->cache[slot].name == l->name && index->cache[slot].device == device) {
        *at = index->cache[slot].at;
        return &JP_VEC_AT(stats, jp_launch_stat, *at);
    }
    int found;
    uint32_t k = jp_map_get_or_put(&index->map, device, jp_ptr_key(l->name), 0, (uint32_t)stats->n, &found);
    if (k == UINT32_MAX) return NULL;
    jp_launch_stat *s = found ? &JP_VEC_AT(stats, jp_launch_stat, k) : jp_vec_push(stats, sizeof *s);
    if (!s) return NULL;
    if (!found) *s = (jp_launch_stat){.name = l->name, .api = "", .device = device,
                                   .kernel = (uint8_t)jp_launch_is_kernel(l)};
    index->cache[slot].name = l->name, index->cache[slot].device = device, index->cache[slot].at = k;
    *at = k;
    return s;
}

/* Adds one device event to its row, and the call's times when it is the call's first event (a
 * later event of a call that launched several adds only its device time). */
static void count_launch(jp_launch_stat *s, const jp_launch_ev *dev, const jp_launch_call *call) {
    s->count++;
    s->kernel_ps += dev->end_ps - dev->start_ps;
    if (!call) return;
    int64_t api = call->end_ps - call->start_ps, queue = dev->start_ps - call->end_ps,
            delay = dev->start_ps - call->start_ps;
    if (!s->matched) s->api = call->name;
    s->matched++;
    s->api_ps += api;
    s->queue_ps += queue;
    s->delay_ps += delay;
    if (s->matched == 1 || queue > s->queue_max_ps) s->queue_max_ps = queue;
    if (s->matched == 1 || delay > s->delay_max_ps) s->delay_max_ps = delay;
}

/* Device items[0..n) (one device, by start): each gap of their union goes to the cause of the
 * event that ends it. HTA's rule: the host, when that event's launch call began after the device
 * went idle; kernel to kernel, when it was queued before and the gap is short; else other. The part
 * of a host wait during which a host compiled (`compiles`, merged) is other: the host was not
 * slow to launch, it was compiling, which compiles and findings report apart. */
/* The gap from `idle` (when the work before ended) to it->start, added to its cause; 1 when it
 * is the host's (the rule above). */
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

static void split_idle(jp_device *d, item *v, size_t n, jp_launch_stat *stats, const jp_interval *compiles,
                       size_t n_compiles) {
    int64_t busy_end = v[0].end;
    for (size_t i = 1; i < n; i++) {
        if (v[i].start > busy_end &&
            idle_gap(&d->idle_host_ps, &d->idle_kernel_ps, &d->idle_other_ps, &v[i], busy_end, compiles, n_compiles))
            stats[v[i].stat & ~MEMBER].n_host_wait++;
        if (v[i].end > busy_end) busy_end = v[i].end;
    }
}

/* The same split per stream (HTA's per-stream view, _analyze_idle_time_for_stream): device items
 * v[0..n) by start are each stream's by start too, so one pass keeps each stream's end of work so
 * far (its last_ps) in its row, rows[stream], and adds its busy time and gaps there. */
static void split_streams(jp_launch_stream *rows, const jp_launch_line *lines, const item *v, size_t n,
                          const jp_interval *compiles, size_t n_compiles) {
    for (size_t i = 0; i < n; i++) {
        jp_launch_stream *s = &rows[v[i].stream];
        if (!s->events) {
            const jp_launch_line *l = &lines[v[i].stream];
            *s = (jp_launch_stream){.device = v[i].device, .name = l->name, .id = l->id, .first_ps = v[i].start,
                                    .last_ps = v[i].start};
        } else if (v[i].start > s->last_ps) {
            idle_gap(&s->idle_host_ps, &s->idle_kernel_ps, &s->idle_other_ps, &v[i], s->last_ps, compiles, n_compiles);
        }
        s->events++;
        s->n_launched += v[i].call_start != NO_CALL && !(v[i].stat & MEMBER);
        int64_t from = v[i].start > s->last_ps ? v[i].start : s->last_ps;
        if (v[i].end > from) s->busy_ps += v[i].end - from;
        if (v[i].end > s->last_ps) s->last_ps = v[i].end;
    }
}

/* Sorts n elements of `size` bytes (at most 32) by the int64 key at their start, ascending and
 * stable. Device events come stream by stream, each stream in time order: a few sorted runs,
 * merged pairwise (a pass per doubling of the run length) rather than radix-sorted; many runs
 * go to the radix sort. JP_ERR_NOMEM or JP_OK. */
enum { MERGE_RUNS_MAX = 64 };
static int64_t key_at(const unsigned char *e) {
    int64_t k;
    memcpy(&k, e, sizeof k);
    return k;
}

static int sort_runs(void *base, size_t n, size_t size) {
    unsigned char *v = base;
    size_t runs[MERGE_RUNS_MAX + 1], n_runs = 0;
    for (size_t i = 0; i < n && n_runs <= MERGE_RUNS_MAX; i++)
        if (i == 0 || key_at(v + i * size) < key_at(v + (i - 1) * size)) runs[n_runs++] = i;
    if (n_runs <= 1) return JP_OK;
    if (n_runs > MERGE_RUNS_MAX) {
        jp_sort_by_key64(base, n, size, 0, 1, jp_cmp_i64);
        return JP_OK;
    }
    unsigned char *tmp = malloc(n * size), *src = v, *dst = tmp;
    if (!tmp) return JP_ERR_NOMEM;
    runs[n_runs] = n;
    while (n_runs > 1) { /* merge runs 2k and 2k+1 from src into dst */
        size_t out = 0;
        for (size_t r = 0; r < n_runs; r += 2) {
            size_t i = runs[r], mid = runs[r + 1], j = mid, end = r + 2 <= n_runs ? runs[r + 2] : n;
            if (r + 1 == n_runs) mid = j = end = n; /* an odd run out: copied as it is */
            runs[out++] = i;
            size_t at = i;
            while (i < mid && j < end) { /* ties from the left run first: stable */
                const unsigned char *take = key_at(src + j * size) < key_at(src + i * size) ? src + size * j++ : src + size * i++;
                memcpy(dst + size * at++, take, size);
            }
            memcpy(dst + size * at, src + size * i, (mid - i) * size);
            at += mid - i;
            memcpy(dst + size * at, src + size * j, (end - j) * size);
        }
        runs[out] = n;
        n_runs = out;
        unsigned char *t = src;
        src = dst, dst = t;
    }
    if (src != v) memcpy(v, src, n * size);
    free(tmp);
    return JP_OK;
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
    int64_t pend_t;           /* the instant whose depth is not yet final (ends and starts at one instant) */
    uint32_t pend_d, last, cur_max;
    uint64_t changes;
} qseries;

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

static void qs_commit(qseries *q, int64_t t, uint32_t d) {
    if (d == q->last) return;
    uint32_t before = q->last;
    q->changes++, q->last = d;
    if (!q->bucket && q->n < JP_QUEUE_POINTS_MAX) {
        q->p[q->n++] = (jp_queue_point){t, d};
        return;
    }
    if (!q->bucket) { /* too many: the points so far into buckets, then on */
        size_t n = q->n;
        memcpy(q->tmp, q->p, n * sizeof *q->p);
        /* whole ns, so that the JSON's ms (ns resolution) give the buckets' bounds exactly */
        q->bucket = (q->span / (JP_QUEUE_POINTS_MAX / 2 - 1) / 1000 + 1) * 1000, q->cur_b = -1, q->n = 0;
        for (size_t i = 0; i < n; i++) qs_bucket(q, q->tmp[i].t_ps, i ? q->tmp[i - 1].depth : 0, q->tmp[i].depth);
    }
    qs_bucket(q, t, before, d);
}

static void qs_add(qseries *q, int64_t t, uint32_t d) {
    if (t != q->pend_t) qs_commit(q, q->pend_t, q->pend_d), q->pend_t = t;
    q->pend_d = d;
}

/* Ends device `device`'s series and keeps it (points in the arena). JP_ERR_NOMEM or JP_OK. */
static int qs_finish(qseries *q, uint32_t device, jp_arena *arena, jp_vec *out) {
    qs_commit(q, q->pend_t, q->pend_d);
    if (q->bucket && q->cur_b >= 0) qs_emit(q, q->t0 + q->cur_b * q->bucket, q->cur_max);
    if (!q->changes) return JP_OK;
    jp_queue_point *p = jp_arena_alloc(arena, q->n * sizeof *p);
    jp_queue_series *s = p ? jp_vec_push(out, sizeof *s) : NULL;
    if (!s) return JP_ERR_NOMEM;
    memcpy(p, q->p, q->n * sizeof *p);
    *s = (jp_queue_series){device, q->changes, q->bucket, p, q->n};
    return JP_OK;
}

/* The launch queue of one device: launches outstanding from the call's start to the work's end
 * (HTA's queue length, over all the device's streams): the sorted call starts and the sorted ends,
 * merged (an end before a start at one instant: no depth that never was), and its series in q.
 * JP_ERR_NOMEM or JP_OK. */
static int queue_depth(jp_device *d, const item *v, size_t n, qseries *q) {
    int64_t *starts = malloc((n ? 2 * n : 1) * sizeof *starts), *ends = starts + n;
    if (!starts) return JP_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) /* a call launching several events is outstanding until its last ends */
        if (v[i].call_start != NO_CALL && !(v[i].stat & MEMBER)) starts[k] = v[i].call_start, ends[k++] = v[i].end;
        else if (v[i].call_start != NO_CALL && k && v[i].end > ends[k - 1] && v[i].call_start == starts[k - 1])
            ends[k - 1] = v[i].end;
    if (sort_runs(starts, k, sizeof *starts) || sort_runs(ends, k, sizeof *ends)) {
        free(starts);
        return JP_ERR_NOMEM;
    }
    long depth = 0;
    double area = 0;
    int64_t t = k ? starts[0] : 0;
    q->n = 0, q->bucket = 0, q->changes = 0, q->last = 0, q->pend_d = 0, q->pend_t = t, q->t0 = t;
    q->span = k ? ends[k - 1] - starts[0] : 0;
    for (size_t i = 0, j = 0; j < k;) {
        int start = i < k && starts[i] < ends[j];
        int64_t now = start ? starts[i++] : ends[j++];
        if (depth > 0) area += (double)depth * (double)(now - t);
        t = now;
        depth += start ? 1 : -1;
        if (depth > (long)d->queue_max) d->queue_max = (uint32_t)depth;
        qs_add(q, now, (uint32_t)depth);
    }
    d->queue_mean = k && ends[k - 1] > starts[0] ? area / (double)(ends[k - 1] - starts[0]) : 0;
    free(starts);
    return JP_OK;
}

/* The calls of one host by correlation id: a dense table over the ids' range when it is at most
 * 4 slots a call (CUPTI and ROCm number their launches 1, 2, 3, ...), else a map. */
typedef struct call_index {
    uint64_t lo;
    uint32_t *dense;       /* [id - lo] -> index into launch_calls, UINT32_MAX for none; NULL: map */
    size_t n_dense;
    jp_map map;
} call_index;

static int calls_index(const jp_launch_call *l, const jp_launch_host *h, call_index *ix) {
    memset(ix, 0, sizeof *ix);
    if (!h->n_calls) return JP_OK;
    ix->lo = h->lo;
    size_t first = h->first_call, last = h->first_call + h->n_calls;
    if (h->hi - h->lo < 4 * (uint64_t)h->n_calls + 4096 &&
        (ix->dense = malloc((size_t)(h->hi - h->lo + 1) * sizeof *ix->dense))) {
        ix->n_dense = (size_t)(h->hi - h->lo + 1);
        memset(ix->dense, 0xff, ix->n_dense * sizeof *ix->dense);
        for (size_t i = first; i < last; i++) /* the first call of an id wins */
            if (ix->dense[l[i].correlation - ix->lo] == UINT32_MAX)
                ix->dense[l[i].correlation - ix->lo] = (uint32_t)i;
        return JP_OK;
    }
    for (size_t i = first; i < last; i++)
        if (jp_map_get_or_put(&ix->map, l[i].correlation, 0, 0, (uint32_t)i, NULL) == UINT32_MAX)
            return JP_ERR_NOMEM;
    return JP_OK;
}

static uint32_t call_of(const call_index *ix, uint64_t correlation) {
    if (!ix->dense) return jp_map_get(&ix->map, correlation, 0, 0);
    return correlation >= ix->lo && correlation - ix->lo < ix->n_dense ? ix->dense[correlation - ix->lo] : UINT32_MAX;
}

/* Where matched device events gather until their device is done: one device's run at a time
 * when each device's work is one run of the records (planes are read in turn), else all of it. */
typedef struct gather {
    item *items;
    size_t n;
    int all_at_once;
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

/* Orders items by (device, start): they come device by device (planes are read in turn), each
 * device's streams one after another, so each device's run is a few sorted runs to merge.
 * JP_ERR_NOMEM or JP_OK. */
static int order_items(item *v, size_t n) {
    for (size_t i = 1; i < n; i++)
        if (v[i].device < v[i - 1].device) {
            qsort(v, n, sizeof *v, cmp_item);
            return JP_OK;
        }
    int rc = JP_OK;
    for (size_t i = 0, j; i < n && rc == JP_OK; i = j) {
        for (j = i + 1; j < n && v[j].device == v[i].device; j++) {}
        rc = sort_runs(&v[i], j - i, sizeof *v);
    }
    return rc;
}

/* The idle split and launch queue of the devices gathered, which are then let go. JP_ERR_NOMEM or JP_OK. */
static int flush(gather *g) {
    item *items = g->items;
    size_t n = g->n;
    int rc = order_items(items, n);
    for (size_t i = 0, j; rc == JP_OK && i < n; i = j) { /* one device at a time */
        jp_device *d = &g->a->devices[items[i].device];
        for (j = i; j < n && items[j].device == items[i].device; j++)
            d->n_launched += items[j].call_start != NO_CALL && !(items[j].stat & MEMBER);
        split_idle(d, &items[i], j - i, g->stats.data, g->compiles, g->n_compiles);
        split_streams(g->streams, g->lines, &items[i], j - i, g->compiles, g->n_compiles);
        rc = queue_depth(d, &items[i], j - i, &g->queue);
        if (rc == JP_OK) rc = qs_finish(&g->queue, items[i].device, g->arena, &g->series);
    }
    g->n = 0;
    return rc;
}

/* The events one launch call queued: one for a kernel launch or a copy, a graph's kernels for
 * cuGraphLaunch (hipGraphLaunch). They come one after another on their stream. Only a graph launch
 * groups its events: ROCm may give one id to two kernels of separate launches (the MI300 conv
 * capture: an Im3d2Col and a transpose under one hipStreamWaitEvent). */
typedef struct launch_group {
    uint32_t call, device, stat; /* the call (UINT32_MAX: none open), its device, its first event's row */
    const jp_launch_call *c;
    int64_t work_ps;             /* the events' device time */
    uint32_t kernels;
} launch_group;

/* A launch of kernels whose device time all together is shorter than its call is a short one: the
 * host could not launch them as fast as they ran (one kernel, or a whole graph). */
static void end_group(const launch_group *grp, jp_launch_stat *stats) {
    if (grp->call == UINT32_MAX || !grp->kernels) return;
    stats[grp->stat].n_short += grp->work_ps < grp->c->end_ps - grp->c->start_ps;
}

/* Matches the device events of one host's run to their calls, adding to the rows and gathering
 * them. JP_ERR_NOMEM or JP_OK. */
static int match_host(const jp_model *m, const jp_launch_host *h, gather *g) {
    const jp_launch_call *calls = m->launch_calls.data;
    const jp_launch_ev *l = m->launch_work.data;
    call_index ix;
    int rc = calls_index(calls, h, &ix);
    launch_group grp = {.call = UINT32_MAX};
    for (size_t i = h->first_work; i < h->first_work + h->n_work && rc == JP_OK; i++) {
        uint32_t device = jp_launch_device(&l[i]);
        if (device >= g->a->n_devices) continue;
        if (!g->all_at_once && g->n && g->items[g->n - 1].device != device && (rc = flush(g))) break;
        uint32_t c = call_of(&ix, l[i].correlation), at = 0;
        const jp_launch_call *call = c == UINT32_MAX ? NULL : &calls[c];
        int64_t made = call ? call->start_ps : l[i].start_ps;
        if (jp_intervals_covered(g->compiles, g->n_compiles, made, made + 1)) continue; /* the autotuner's */
        jp_launch_stat *s = stat_for(g->index, &g->stats, &l[i], &at);
        if (!s) {
            rc = JP_ERR_NOMEM;
            break;
        }
        int member = call && c == grp.call && device == grp.device && strstr(call->name, "GraphLaunch");
        if (!member) end_group(&grp, g->stats.data), grp = (launch_group){c, device, at, call, 0, 0};
        count_launch(s, &l[i], member ? NULL : call);
        if (call) grp.work_ps += l[i].end_ps - l[i].start_ps, grp.kernels += (uint32_t)jp_launch_is_kernel(&l[i]);
        g->items[g->n++] = (item){l[i].start_ps, l[i].end_ps, call ? call->start_ps : NO_CALL, device,
                                  at | (member ? MEMBER : 0), l[i].stream};
    }
    end_group(&grp, g->stats.data);
    free(ix.dense);
    jp_map_deinit(&ix.map);
    return rc;
}

/* Matches every device event to its call, host by host, filling the rows and the devices' idle
 * split and queue. JP_ERR_NOMEM or JP_OK. */
static int match(const jp_model *m, gather *g) {
    size_t cap = 0;
    for (size_t h = 0; h < m->launch_hosts.n; h++) {
        const jp_launch_host *lh = &JP_VEC_AT(&m->launch_hosts, jp_launch_host, h);
        g->all_at_once |= lh->device_back;
        if (lh->longest_run > cap) cap = lh->longest_run;
    }
    if (g->all_at_once) cap = m->launch_work.n;
    g->items = malloc((cap ? cap : 1) * sizeof *g->items);
    g->index = calloc(1, sizeof *g->index);
    g->lines = m->launch_lines.data;
    g->streams = calloc(m->launch_lines.n ? m->launch_lines.n : 1, sizeof *g->streams);
    g->queue.p = malloc(2 * QCAP * sizeof *g->queue.p);
    g->queue.tmp = g->queue.p ? g->queue.p + QCAP : NULL;
    int rc = g->items && g->index && g->streams && g->queue.p ? JP_OK : JP_ERR_NOMEM;
    for (size_t h = 0; rc == JP_OK && h < m->launch_hosts.n; h++)
        rc = match_host(m, &JP_VEC_AT(&m->launch_hosts, jp_launch_host, h), g);
    if (rc == JP_OK) rc = flush(g);
    if (g->index) jp_map_deinit(&g->index->map);
    free(g->index);
    free(g->items);
    free(g->queue.p);
    return rc;
}

/* The hosts' compile spans as sorted disjoint intervals (*n of them), NULL when out of memory. While
 * XLA compiles, the launches are its autotuner's (candidate kernels, redzone checks), not the
 * program's: their API and queue times would describe the compiler. */
static jp_interval *compile_spans(const jp_model *m, size_t *n) {
    jp_interval *w = malloc((m->spans.n ? m->spans.n : 1) * sizeof *w);
    size_t k = 0;
    for (size_t i = 0; w && i < m->spans.n; i++) {
        const jp_span *sp = &JP_VEC_AT(&m->spans, jp_span, i);
        if (sp->part == JP_PART_COMPILE) w[k++] = (jp_interval){sp->start_ps, sp->end_ps};
    }
    if (w) jp_intervals_sort(w, k);
    *n = w ? jp_intervals_merge_sorted(w, k) : 0;
    return w;
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

int jp_launch_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    if (!m->launch_work.n) return JP_OK;
    gather g = {.a = a, .arena = arena};
    g.compiles = compile_spans(m, &g.n_compiles);
    int rc = g.compiles ? match(m, &g) : JP_ERR_NOMEM;
    free(g.compiles);
    if (rc == JP_OK) rc = keep_streams(m, arena, &g, a);
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
