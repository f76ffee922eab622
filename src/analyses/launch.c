/* launch.c - launch and idle causes: each device event (kernel, copy, memset) matched to the host
 * API call that queued it by their correlation_id; per (device, kernel) the call's time, the queue
 * time and the launch delay; per device its idle gaps split by cause (waiting for the host, kernel
 * to kernel, other) and the launch queue's depth. Definitions and their sources (HTA, nsys) are in
 * docs/design.md "Launch and idle causes". */
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"

typedef struct item {      /* one device event, with its launch call when found */
    int64_t start, end;
    int64_t call_start, call_end; /* valid when matched */
    uint32_t device;
    uint32_t stat;         /* index into the stats vector */
    uint8_t matched;
} item;

typedef struct depth_ev {  /* a change of the launch queue's depth */
    int64_t t;
    int delta;             /* +1: a launch call began; -1: its device work ended */
} depth_ev;

static int cmp_item(const void *x, const void *y) {
    const item *a = x, *b = y;
    if (a->device != b->device) return a->device < b->device ? -1 : 1;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    return (a->end > b->end) - (a->end < b->end);
}

static int cmp_depth(const void *x, const void *y) {
    const depth_ev *a = x, *b = y;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    return a->delta - b->delta; /* ends before starts at one instant: no depth that never was */
}

static int cmp_stat(const void *x, const void *y) {
    const jp_launch_stat *a = x, *b = y;
    if (a->delay_ps != b->delay_ps) return a->delay_ps < b->delay_ps ? 1 : -1;
    if (a->device != b->device) return a->device < b->device ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* The stat row of (device, name), created on first sight; NULL when out of memory. */
static jp_launch_stat *stat_for(jp_map *index, jp_vec *stats, const jp_launch_ev *l, uint32_t *at) {
    int found;
    uint32_t k = jp_map_get_or_put(index, l->device, jp_ptr_key(l->name), 0, (uint32_t)stats->n, &found);
    if (k == UINT32_MAX) return NULL;
    if (found) return *at = k, &JP_VEC_AT(stats, jp_launch_stat, k);
    jp_launch_stat *s = jp_vec_push(stats, sizeof *s);
    if (!s) return NULL;
    *s = (jp_launch_stat){.name = l->name, .api = "", .device = l->device, .kernel = l->kernel};
    *at = k;
    return s;
}

/* Adds one device event to its row (and the call's times when matched). */
static void count_launch(jp_launch_stat *s, const jp_launch_ev *dev, const jp_launch_ev *call) {
    s->count++;
    s->kernel_ps += dev->end_ps - dev->start_ps;
    if (!call) return;
    int64_t api = call->end_ps - call->start_ps, queue = dev->start_ps - call->end_ps,
            delay = dev->start_ps - call->start_ps;
    if (!s->matched) s->api = call->name;
    s->matched++;
    s->n_short += dev->kernel && dev->end_ps - dev->start_ps < api;
    s->api_ps += api;
    s->queue_ps += queue;
    s->delay_ps += delay;
    if (s->matched == 1 || queue > s->queue_max_ps) s->queue_max_ps = queue;
    if (s->matched == 1 || delay > s->delay_max_ps) s->delay_max_ps = delay;
}

/* Device items[0..n) (one device, by start): each gap of their union goes to the cause of the
 * event that ends it. HTA's rule: the host, when that event's launch call began after the device
 * went idle; kernel to kernel, when it was queued before and the gap is short; else other. */
static void split_idle(jp_device *d, item *v, size_t n, jp_launch_stat *stats) {
    int64_t busy_end = v[0].end;
    for (size_t i = 1; i < n; i++) {
        if (v[i].start > busy_end) {
            int64_t gap = v[i].start - busy_end;
            if (v[i].matched && v[i].call_start > busy_end) {
                d->idle_host_ps += gap;
                stats[v[i].stat].n_host_wait++;
            } else if (v[i].matched && gap < JP_LAUNCH_K2K_PS) {
                d->idle_kernel_ps += gap;
            } else {
                d->idle_other_ps += gap;
            }
        }
        if (v[i].end > busy_end) busy_end = v[i].end;
    }
}

/* The launch queue of one device: launches outstanding from the call's start to the work's end
 * (HTA's queue length, over all the device's streams). JP_ERR_NOMEM or JP_OK. */
static int queue_depth(jp_device *d, const item *v, size_t n) {
    depth_ev *e = malloc((n ? 2 * n : 1) * sizeof *e);
    if (!e) return JP_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].matched) {
            e[k++] = (depth_ev){v[i].call_start, +1};
            e[k++] = (depth_ev){v[i].end, -1};
        }
    if (k > 1) qsort(e, k, sizeof *e, cmp_depth);
    long depth = 0;
    double area = 0;
    for (size_t i = 0; i < k; i++) {
        if (i) area += (double)depth * (double)(e[i].t - e[i - 1].t);
        depth += e[i].delta;
        if (depth > (long)d->queue_max) d->queue_max = (uint32_t)depth;
    }
    d->queue_mean = k > 1 && e[k - 1].t > e[0].t ? area / (double)(e[k - 1].t - e[0].t) : 0;
    free(e);
    return JP_OK;
}

/* Matches every device event to its call, fills the rows and the items. JP_ERR_NOMEM or JP_OK. */
static int match(const jp_model *m, size_t n_devices, jp_vec *stats, item *items, size_t *n_items) {
    const jp_launch_ev *l = m->launches.data;
    jp_map calls = {0}, index = {0};
    int rc = JP_OK;
    for (size_t i = 0; i < m->launches.n && rc == JP_OK; i++) /* the first call of an id wins */
        if (l[i].device == UINT32_MAX &&
            jp_map_get_or_put(&calls, l[i].host, l[i].correlation, 0, (uint32_t)i, NULL) == UINT32_MAX)
            rc = JP_ERR_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < m->launches.n && rc == JP_OK; i++) {
        if (l[i].device == UINT32_MAX || l[i].device >= n_devices) continue;
        uint32_t c = jp_map_get(&calls, l[i].host, l[i].correlation, 0), at = 0;
        const jp_launch_ev *call = c == UINT32_MAX ? NULL : &l[c];
        jp_launch_stat *s = stat_for(&index, stats, &l[i], &at);
        if (!s) {
            rc = JP_ERR_NOMEM;
            break;
        }
        count_launch(s, &l[i], call);
        items[n++] = (item){l[i].start_ps, l[i].end_ps, call ? call->start_ps : 0, call ? call->end_ps : 0,
                            l[i].device, at, call != NULL};
    }
    jp_map_deinit(&calls);
    jp_map_deinit(&index);
    *n_items = n;
    return rc;
}

int jp_launch_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    if (!m->launches.n) return JP_OK;
    item *items = malloc(m->launches.n * sizeof *items);
    jp_vec stats = {0};
    size_t n = 0;
    int rc = items ? match(m, a->n_devices, &stats, items, &n) : JP_ERR_NOMEM;
    if (rc == JP_OK && n > 1) qsort(items, n, sizeof *items, cmp_item);
    for (size_t i = 0, j; rc == JP_OK && i < n; i = j) { /* one device at a time */
        jp_device *d = &a->devices[items[i].device];
        for (j = i; j < n && items[j].device == items[i].device; j++) d->n_launched += items[j].matched;
        split_idle(d, &items[i], j - i, stats.data);
        rc = queue_depth(d, &items[i], j - i);
    }
    for (size_t i = 0; rc == JP_OK && i < stats.n; i++)
        a->devices[JP_VEC_AT(&stats, jp_launch_stat, i).device].n_short += JP_VEC_AT(&stats, jp_launch_stat, i).n_short;
    if (rc == JP_OK && stats.n) {
        qsort(stats.data, stats.n, sizeof(jp_launch_stat), cmp_stat);
        a->launches = jp_analysis_copy(arena, &stats, sizeof(jp_launch_stat));
        a->n_launches = a->launches ? stats.n : 0;
        if (!a->launches) rc = JP_ERR_NOMEM;
    }
    free(items);
    jp_vec_free(&stats);
    return rc;
}
