/* hosts.c - multi-host profiles: each host analysed alone, the hosts' clocks put on one axis
 * (see jaxprof.h), and each step's straggler. Runs first: the other analyses then read a model
 * whose hosts are aligned. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"

enum { STRAGGLER_MIN_PS = 1000000000 }; /* 1 ms: less is scheduling noise (CPU hosts measured 0.1-0.5 ms) */
/* Capture starts or clocks farther apart than an hour are not one job's simultaneous capture:
 * such an offset is no guide, and refusing it keeps every shifted time far from int64 limits
 * (the model bounds event times to +-2^61 ps; offsets stay under 2^53). */
#define MAX_WALL_GAP_NS ((int64_t)3600 * 1000000000)
#define MAX_OFFSET_PS (MAX_WALL_GAP_NS * 1000)

static int64_t median_i64(int64_t *v, size_t n) {
    qsort(v, n, sizeof *v, jp_cmp_i64);
    return n % 2 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2;
}

/* Host h of the model alone, on its own clock: its ops (with their roofs) and steps, as the host's
 * file read alone gives them and its summary records them. */
static int analyse_alone(const jp_model *m, size_t h, jp_arena *arena, jp_host_input *in) {
    jp_model view;
    jp_analysis alone = {0};
    jp_vec scratch[2] = {{0}, {0}};
    int rc = jp_model_host_view(m, h, &view, scratch);
    if (rc == JP_OK) rc = jp_ops_analyze(&view, arena, &alone);
    if (rc == JP_OK) rc = jp_steps_analyze(&view, arena, &alone);
    if (rc == JP_OK) rc = jp_roofline_analyze(&view, arena, &alone); /* its ops' roofs, as the host read alone has them */
    jp_vec_free(&scratch[0]);
    jp_vec_free(&scratch[1]);
    const jp_model_host *mh = &JP_VEC_AT(&m->hosts, jp_model_host, h);
    *in = jp_host_input_of(&alone, mh->name, mh->start_ns);
    return rc;
}

jp_host_input jp_host_input_of(const jp_analysis *alone, const char *name, int64_t start_ns) {
    return (jp_host_input){.name = name, .start_ns = start_ns, .steps = alone->steps, .n_steps = alone->n_steps,
                           .step_summary = alone->step_summary, .ops = alone->ops, .n_ops = alone->n_ops,
                           .op_self_ps = alone->op_self_ps};
}

/* Each host alone on up to `threads` threads: a thread takes hosts in turn, each into an arena of
 * its own (the arena is not thread-safe), moved into `arena` once all are done. The model is only
 * read (views share its vectors); every host's result is the one a single thread computes. */
typedef struct alone_pool {
    const jp_model *m;
    jp_host_input *w;
    size_t n, next;
    pthread_mutex_t lock;
    int rc;
} alone_pool;

typedef struct alone_thread {
    alone_pool *pool;
    jp_arena arena;
    pthread_t tid;
} alone_thread;

static void *alone_worker(void *arg) {
    alone_thread *t = arg;
    alone_pool *pool = t->pool;
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        size_t h = pool->rc == JP_OK && pool->next < pool->n ? pool->next++ : pool->n;
        pthread_mutex_unlock(&pool->lock);
        if (h == pool->n) return NULL;
        int rc = analyse_alone(pool->m, h, &t->arena, &pool->w[h]);
        pthread_mutex_lock(&pool->lock);
        if (rc != JP_OK && pool->rc == JP_OK) pool->rc = rc;
        pthread_mutex_unlock(&pool->lock);
    }
}

static int alone_in_turn(const jp_model *m, jp_host_input *w, size_t n, jp_arena *arena) {
    int rc = JP_OK;
    for (size_t h = 0; rc == JP_OK && h < n; h++) rc = analyse_alone(m, h, arena, &w[h]);
    return rc;
}

static int analyse_hosts(const jp_model *m, jp_host_input *w, size_t n, jp_arena *arena, size_t threads) {
    if (threads > n) threads = n;
    alone_thread *t = threads > 1 ? calloc(threads, sizeof *t) : NULL;
    if (!t) return alone_in_turn(m, w, n, arena); /* one thread, or no memory for more */
    alone_pool pool = {.m = m, .w = w, .n = n, .rc = JP_OK};
    pthread_mutex_init(&pool.lock, NULL);
    size_t started = 0;
    for (; started < threads; started++) {
        t[started].pool = &pool;
        jp_arena_init(&t[started].arena, 0);
        if (pthread_create(&t[started].tid, NULL, alone_worker, &t[started]) != 0) break;
    }
    for (size_t i = 0; i < started; i++) {
        pthread_join(t[i].tid, NULL);
        jp_arena_adopt(arena, &t[i].arena);
    }
    pthread_mutex_destroy(&pool.lock);
    free(t);
    return started ? pool.rc : alone_in_turn(m, w, n, arena);
}

/* Capture starts on the wall clock, as offsets from the earliest (into wall[]); all 0 unless
 * every host recorded one and they lie within MAX_WALL_GAP_NS. Returns 1 when they were used. */
static int wall_offsets(const jp_host_input *in, size_t n, int64_t *wall) {
    int64_t lo = INT64_MAX, hi = 0;
    memset(wall, 0, n * sizeof *wall);
    for (size_t h = 0; h < n; h++) {
        if (in[h].start_ns <= 0) return 0;
        lo = in[h].start_ns < lo ? in[h].start_ns : lo;
        hi = in[h].start_ns > hi ? in[h].start_ns : hi;
    }
    if (hi - lo > MAX_WALL_GAP_NS) return 0;
    for (size_t h = 0; h < n; h++) wall[h] = (in[h].start_ns - lo) * 1000;
    return 1;
}

/* Host h's offset from the collective ends it shares with the reference r (already placed at
 * ref_offset; by_num maps r's step numbers to its steps): the median over shared steps of how far
 * r's end lies from h's. */
static void sync_offset(const jp_host_input *r, const jp_map *by_num, int64_t ref_offset, const jp_host_input *w,
                        jp_host_stat *hs, int64_t *diff) {
    size_t n = 0;
    for (size_t i = 0; i < w->n_steps; i++) {
        int64_t sync = w->steps[i].sync_ps;
        uint32_t k = sync == INT64_MIN ? UINT32_MAX : jp_map_get(by_num, (uint64_t)w->steps[i].step_num, 0, 0);
        if (k != UINT32_MAX && r->steps[k].sync_ps != INT64_MIN) diff[n++] = r->steps[k].sync_ps + ref_offset - sync;
    }
    if (!n) return;
    int64_t offset = median_i64(diff, n);
    if (offset > MAX_OFFSET_PS || offset < -MAX_OFFSET_PS) return; /* keeps the wall clock (or none) */
    hs->offset_ps = offset;
    for (size_t i = 0; i < n; i++) diff[i] = llabs(diff[i] - hs->offset_ps);
    hs->sync_spread_ps = median_i64(diff, n);
    hs->n_sync = (uint32_t)n;
    hs->clock = "collective ends";
}

static int has_sync(const jp_host_input *w) {
    for (size_t i = 0; i < w->n_steps; i++)
        if (w->steps[i].sync_ps != INT64_MIN) return 1;
    return 0;
}

/* Fills every host's offset and clock; returns the sentence for jp_analysis.clock_method. */
static const char *align(const jp_host_input *w, size_t n, jp_host_stat *hs, int64_t *wall_ps) {
    size_t r = 0, max_steps = 1;
    int wall = wall_offsets(w, n, wall_ps), synced = 0;
    while (r < n && !has_sync(&w[r])) r++;
    for (size_t h = 0; h < n; h++) {
        hs[h].offset_ps = wall_ps[h];
        hs[h].clock = wall ? "wall clock" : "none";
        if (w[h].n_steps > max_steps) max_steps = w[h].n_steps;
    }
    int64_t *diff = malloc(max_steps * sizeof *diff);
    jp_map by_num = {0}; /* the reference's step numbers */
    for (size_t i = 0; diff && r < n && i < w[r].n_steps; i++)
        jp_map_get_or_put(&by_num, (uint64_t)w[r].steps[i].step_num, 0, 0, (uint32_t)i, NULL);
    for (size_t h = 0; diff && r < n && h < n; h++) {
        if (h != r) sync_offset(&w[r], &by_num, hs[r].offset_ps, &w[h], &hs[h], diff);
        synced |= hs[h].n_sync > 0;
    }
    jp_map_deinit(&by_num);
    free(diff);
    if (synced) hs[r].clock = "reference";
    int64_t lo = INT64_MAX; /* the smallest offset becomes 0: times stay at or after 0 */
    for (size_t h = 0; h < n; h++) lo = hs[h].offset_ps < lo ? hs[h].offset_ps : lo;
    for (size_t h = 0; h < n; h++) hs[h].offset_ps -= lo;
    if (synced)
        return wall ? "ends of the last collective of shared steps (median over steps), from capture start times"
                    : "ends of the last collective of shared steps (median over steps)";
    return wall ? "capture start times (each host's wall clock); no shared steps with collectives to refine them"
                : "none: no capture start times and no shared steps with collectives; captures taken to start together";
}

/* ---- stragglers ------------------------------------------------------------------------------ */

typedef struct host_step {
    int64_t step_num;
    uint32_t host;
    const jp_step *step;
} host_step;

static int cmp_host_step(const void *a, const void *b) {
    const host_step *x = a, *y = b;
    if (x->step_num != y->step_num) return x->step_num < y->step_num ? -1 : 1;
    return (x->host > y->host) - (x->host < y->host);
}

/* One step number across the hosts that ran it (g[0..n)): waits, and a straggler if any. */
static void judge_step(const host_step *g, size_t n, jp_host_stat *hs, int64_t *scratch, jp_vec *out) {
    size_t in = 0, slow = 0;
    for (size_t i = 0; i < n; i++) {
        if (g[i].step->part_ps[JP_PART_COLLECTIVE] <= 0) continue; /* not in the collectives */
        if (!in || g[i].step->part_ps[JP_PART_COLLECTIVE] < g[slow].step->part_ps[JP_PART_COLLECTIVE]) slow = i;
        in++;
    }
    if (in < 2) return;
    int64_t least = g[slow].step->part_ps[JP_PART_COLLECTIVE];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t c = g[i].step->part_ps[JP_PART_COLLECTIVE];
        if (c > 0) hs[g[i].host].wait_ps += c - least;
        if (c > 0 && i != slow) scratch[k++] = c;
    }
    int64_t behind = median_i64(scratch, k) - least;
    for (size_t i = 0; i < n; i++) scratch[i] = g[i].step->dur_ps;
    int64_t step_ps = median_i64(scratch, n);
    if (behind < STRAGGLER_MIN_PS || behind < step_ps / 10) return;
    jp_straggler *s = jp_vec_push(out, sizeof *s);
    if (!s) return;
    *s = (jp_straggler){g[0].step_num, g[slow].host, behind, step_ps};
    hs[g[slow].host].n_straggling++;
}

static int find_stragglers(jp_host_stat *hs, size_t n_hosts, jp_arena *arena, jp_analysis *a) {
    size_t n = 0;
    for (size_t h = 0; h < n_hosts; h++) n += hs[h].n_steps;
    host_step *all = malloc((n ? n : 1) * sizeof *all);
    int64_t *scratch = malloc((n ? n : 1) * sizeof *scratch); /* a group may repeat a host's step number */
    jp_vec out = {0};
    int rc = all && scratch ? JP_OK : JP_ERR_NOMEM;
    n = 0;
    for (size_t h = 0; rc == JP_OK && h < n_hosts; h++)
        for (size_t i = 0; i < hs[h].n_steps; i++) all[n++] = (host_step){hs[h].steps[i].step_num, (uint32_t)h, &hs[h].steps[i]};
    if (rc == JP_OK && n > 1) qsort(all, n, sizeof *all, cmp_host_step);
    for (size_t i = 0, j; rc == JP_OK && i < n; i = j) {
        for (j = i + 1; j < n && all[j].step_num == all[i].step_num;) j++;
        judge_step(&all[i], j - i, hs, scratch, &out);
    }
    if (rc == JP_OK) {
        a->stragglers = jp_analysis_copy(arena, &out, sizeof(jp_straggler));
        a->n_stragglers = out.n;
        if (!a->stragglers) rc = JP_ERR_NOMEM;
    }
    jp_vec_free(&out);
    free(all);
    free(scratch);
    return rc;
}

const jp_straggler *jp_analysis_straggler(const jp_analysis *a, int64_t step_num) {
    size_t lo = 0, hi = a->n_stragglers;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->stragglers[mid].step_num < step_num) lo = mid + 1;
        else hi = mid;
    }
    return lo < a->n_stragglers && a->stragglers[lo].step_num == step_num ? &a->stragglers[lo] : NULL;
}

/* ---- the analysis ---------------------------------------------------------------------------- */

static void fill_host(jp_host_stat *hs, const jp_host_input *in) {
    hs->name = in->name;
    hs->steps = in->steps;
    hs->n_steps = in->n_steps;
    hs->step_summary = in->step_summary;
    hs->ops = in->ops;
    hs->n_ops = in->n_ops;
    hs->op_self_ps = in->op_self_ps;
    hs->collective_ps = in->step_summary.part_ps[JP_PART_COLLECTIVE];
    for (size_t i = 0; i < hs->n_steps; i++) {
        hs->steps[i].start_ps += hs->offset_ps;
        if (hs->steps[i].sync_ps != INT64_MIN) hs->steps[i].sync_ps += hs->offset_ps;
    }
}

int jp_hosts_merge(jp_host_input *in, size_t n, jp_arena *arena, jp_analysis *a) {
    a->clock_method = "";
    if (!n) return JP_OK;
    jp_host_stat *hs = jp_arena_alloc(arena, n * sizeof *hs);
    int64_t *wall_ps = malloc(n * sizeof *wall_ps);
    int rc = hs && wall_ps ? JP_OK : JP_ERR_NOMEM;
    if (rc == JP_OK) {
        memset(hs, 0, n * sizeof *hs);
        a->clock_method = align(in, n, hs, wall_ps);
        for (size_t h = 0; h < n; h++) fill_host(&hs[h], &in[h]);
        a->host_stats = hs;
        a->n_host_stats = n;
        rc = find_stragglers(hs, n, arena, a);
    }
    if (rc == JP_OK && n == 1) /* a pod's one host (--host): its steps and ops, nothing to align */
        hs[0].clock = "reference", hs[0].offset_ps = 0, a->clock_method = "one host: nothing to align";
    free(wall_ps);
    return rc;
}

int jp_hosts_analyze(jp_model *m, jp_arena *arena, jp_analysis *a, size_t threads) {
    size_t n = m->hosts.n;
    a->clock_method = "";
    if (n < 2) return JP_OK;
    jp_host_input *in = calloc(n, sizeof *in);
    int rc = in ? analyse_hosts(m, in, n, arena, threads) : JP_ERR_NOMEM;
    if (rc == JP_OK) rc = jp_hosts_merge(in, n, arena, a);
    for (size_t h = 0; rc == JP_OK && h < n; h++) jp_model_shift_host(m, h, a->host_stats[h].offset_ps);
    free(in);
    return rc;
}
