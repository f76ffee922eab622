/* profile.c - jp_profile_load: decodes the XSpaces of a profile's files (files.c), builds the
 * model and runs every analysis in order, then narrows to a step window when asked. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyses/analyses.h"
#include "base/error.h"
#include "base/text.h"
#include "profile/profile.h"

struct jp_profile {
    jp_arena arena;       /* the analysis and every string it points to */
    jp_analysis analysis;
};

typedef int (*analysis_fn)(const jp_model *, jp_arena *, jp_analysis *);

/* An analysis that failed: its own status (not always "out of memory"), named by the analysis. */
static int analysis_failed(const char *name, int rc, jp_error *err) {
    return jp_error_set(err, rc, 0, "%s analysis: %s", name, jp_status_str(rc));
}

/* Every analysis after the hosts', in order; steps_fn finds the steps (or keeps the ones given). */
static int run_analyses(const jp_model *m, jp_arena *arena, jp_analysis *a, analysis_fn steps_fn, int op_spread,
                        jp_error *err) {
    const struct {
        analysis_fn fn;
        const char *name; /* for its error */
    } steps[] = {
        {jp_ops_analyze, "ops"}, {jp_lines_analyze, "lines"}, {steps_fn, "steps"}, {jp_ops_spread_analyze, "op spread"},
        {jp_roofline_analyze, "roofline"},
        {jp_scopes_analyze, "scopes"}, {jp_compiles_analyze, "compiles"}, {jp_transfers_analyze, "transfers"},
        {jp_kernels_analyze, "kernels"}, {jp_memory_analyze, "memory"}, {jp_buffers_analyze, "buffers"},
        {jp_health_analyze, "health"},
        {jp_launch_analyze, "launch"},
        {jp_comm_analyze, "comm"},
        {jp_findings_analyze, "findings"},
    };
    a->span_ps = m->last_ps - m->first_ps;
    a->first_ps = m->first_ps;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        if (steps[i].fn == jp_ops_spread_analyze && !op_spread) continue; /* only diffs read it */
        int rc = steps[i].fn(m, arena, a);
        if (rc != JP_OK) return analysis_failed(steps[i].name, rc, err);
    }
    a->platform = JP_PLATFORM_CPU;
    for (size_t i = 0; i < a->n_devices; i++)
        if (a->devices[i].platform != JP_PLATFORM_CPU) a->platform = a->devices[i].platform;
    return JP_OK;
}

/* ---- step window (jp_load_options.has_steps) ---------------------------------------------------- */

/* A step number: 1 to 18 decimal digits (no sign: steps count from 0). 0, or -1 when it is not. */
static int step_number(const char *p, size_t n, int64_t *out) {
    if (n == 0 || n > 18 || strspn(p, "0123456789") < n) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) v = v * 10 + (p[i] - '0');
    *out = v;
    return 0;
}

int jp_steps_parse(const char *spec, int64_t *first, int64_t *last, jp_error *err) {
    const char *colon = spec ? strchr(spec, ':') : NULL;
    int64_t a = INT64_MIN, b = INT64_MAX;
    int ok = spec != NULL;
    if (ok && !colon) {
        ok = step_number(spec, strlen(spec), &a) == 0;
        b = a;
    } else if (ok) { /* an empty side is an open end */
        size_t na = (size_t)(colon - spec), nb = strlen(colon + 1);
        ok = (na == 0 || step_number(spec, na, &a) == 0) && (nb == 0 || step_number(colon + 1, nb, &b) == 0);
    }
    if (!ok)
        return jp_error_set(err, JP_ERR_ARG, 0, "bad step range '%s': want N, A:B, A: or :B (step numbers)", spec ? spec : "");
    if (a > b) return jp_error_set(err, JP_ERR_ARG, 0, "bad step range '%s': the first step is after the last", spec);
    *first = a;
    *last = b;
    return JP_OK;
}

/* "5", "5 or more", "5 or less", "3 to 5": the range asked for, in words. */
static void range_words(const jp_load_options *opt, char *buf, size_t cap) {
    long long a = (long long)opt->first_step, b = (long long)opt->last_step;
    if (opt->first_step == INT64_MIN && opt->last_step == INT64_MAX) snprintf(buf, cap, "any number");
    else if (opt->first_step == INT64_MIN) snprintf(buf, cap, "%lld or less", b);
    else if (opt->last_step == INT64_MAX) snprintf(buf, cap, "%lld or more", a);
    else if (a == b) snprintf(buf, cap, "%lld", a);
    else snprintf(buf, cap, "%lld to %lld", a, b);
}

/* No step in the range: say which steps there are ("steps are 0-29"). */
static int no_step(const jp_analysis *a, const jp_load_options *opt, jp_error *err) {
    char want[64];
    range_words(opt, want, sizeof want);
    if (!a->n_steps) return jp_error_set(err, JP_ERR_NOT_FOUND, 0, "no step numbered %s: this profile has no steps", want);
    int64_t lo = a->steps[0].step_num, hi = lo;
    for (size_t i = 1; i < a->n_steps; i++) {
        if (a->steps[i].step_num < lo) lo = a->steps[i].step_num;
        if (a->steps[i].step_num > hi) hi = a->steps[i].step_num;
    }
    if (lo == hi) return jp_error_set(err, JP_ERR_NOT_FOUND, 0, "no step numbered %s (the only step is %lld)", want, (long long)lo);
    return jp_error_set(err, JP_ERR_NOT_FOUND, 0, "no step numbered %s (steps are %lld-%lld)", want, (long long)lo, (long long)hi);
}

/* The full analysis' steps in the range, copied into the arena with what the window's own
 * analyses add up again (FLOPs, compiles) cleared, and the time they cover: [*from, *to). */
static jp_step *select_steps(const jp_analysis *a, const jp_load_options *opt, jp_arena *arena, size_t *n,
                             int64_t *from, int64_t *to, int64_t *host_from, int64_t *host_to) {
    *n = 0;
    for (size_t i = 0; i < a->n_steps; i++) *n += a->steps[i].step_num >= opt->first_step && a->steps[i].step_num <= opt->last_step;
    jp_step *out = *n ? jp_arena_alloc(arena, *n * sizeof *out) : NULL;
    size_t k = 0;
    for (size_t i = 0; out && i < a->n_steps; i++) {
        const jp_step *s = &a->steps[i];
        if (s->step_num < opt->first_step || s->step_num > opt->last_step) continue;
        if (!k || s->start_ps < *from) *from = s->start_ps;
        if (!k || s->start_ps + s->dur_ps > *to) *to = s->start_ps + s->dur_ps;
        if (!k) *host_from = *from, *host_to = *to;
        if (s->start_ps < *host_from) *host_from = s->start_ps;
        if (s->start_ps + s->dur_ps > *host_to) *host_to = s->start_ps + s->dur_ps;
        if (s->host_dur_ps > 0 && s->host_start_ps < *host_from) *host_from = s->host_start_ps;
        if (s->host_dur_ps > 0 && s->host_start_ps + s->host_dur_ps > *host_to) *host_to = s->host_start_ps + s->host_dur_ps;
        out[k] = *s;
        out[k].flops = 0, out[k].n_compiles = 0, out[k].outlier = 0;
        k++;
    }
    return out;
}

/* The model vectors a window narrows: their element size and where each keeps its start time. */
enum { N_WINDOWED = 7 };
static const struct {
    size_t member, size, t_off;
} WINDOWED[N_WINDOWED] = {
    {offsetof(jp_model, ops), sizeof(jp_op_ev), offsetof(jp_op_ev, start_ps)},
    {offsetof(jp_model, host), sizeof(jp_host_ev), offsetof(jp_host_ev, start_ps)},
    {offsetof(jp_model, xfers), sizeof(jp_xfer_ev), offsetof(jp_xfer_ev, start_ps)},
    {offsetof(jp_model, mem), sizeof(jp_mem_ev), offsetof(jp_mem_ev, t_ps)},
    {offsetof(jp_model, spans), sizeof(jp_span), offsetof(jp_span, start_ps)},
    {offsetof(jp_model, execs), sizeof(jp_exec), offsetof(jp_exec, start_ps)},
    {offsetof(jp_model, device_steps), sizeof(jp_exec), offsetof(jp_exec, start_ps)},
};

/* Copies the elements of from whose start lies in [lo, hi) into to (a fresh heap vector). */
static int keep_in_window(const jp_vec *from, size_t size, size_t t_off, int64_t lo, int64_t hi, jp_vec *to) {
    *to = (jp_vec){0};
    for (size_t i = 0; i < from->n; i++) {
        const char *e = (const char *)from->data + i * size;
        int64_t t;
        memcpy(&t, e + t_off, sizeof t);
        if (t < lo || t >= hi) continue;
        void *slot = jp_vec_push(to, size);
        if (!slot) return JP_ERR_NOMEM; /* the caller frees what was copied */
        memcpy(slot, e, size);
    }
    return JP_OK;
}

/* A view of m holding only the events that start in [lo, hi), host events those in [host_lo,
 * host_hi) (the steps' spans and their markers: the host issues a step before its device work
 * runs, and what it did then, a compile, is the step's): like jp_model_host_view, it shares
 * m's tables (devices, op definitions, strings), and its narrowed vectors are heap copies in
 * owned[] for the caller to free. Kernels are summed while reading, so none can be narrowed. */
static int window_view(const jp_model *m, int64_t lo, int64_t hi, int64_t host_lo, int64_t host_hi, jp_model *view,
                       jp_vec owned[N_WINDOWED]) {
    *view = *m;
    view->whole = m;
    view->kernels = (jp_vec){0};
    view->first_ps = lo, view->last_ps = hi;
    int rc = JP_OK;
    for (size_t i = 0; i < N_WINDOWED; i++) {
        const jp_vec *from = (const jp_vec *)((const char *)m + WINDOWED[i].member);
        int host = WINDOWED[i].member == offsetof(jp_model, host);
        if (rc == JP_OK)
            rc = keep_in_window(from, WINDOWED[i].size, WINDOWED[i].t_off, host ? host_lo : lo, host ? host_hi : hi, &owned[i]);
        else owned[i] = (jp_vec){0};
        *(jp_vec *)((char *)view + WINDOWED[i].member) = owned[i];
    }
    return rc;
}

/* The steps step of a window: the full analysis' steps were put in place before; only their
 * summary is computed again (finding steps in the narrowed model would be wrong: a later step's
 * marker can start inside the window). */
static int keep_steps(const jp_model *m, jp_arena *arena, jp_analysis *a) {
    (void)m, (void)arena;
    jp_steps_summarize(a);
    return JP_OK;
}

/* Replaces p's analysis by one of the selected steps alone: every analysis run again over the
 * events that start in the steps' time window. Multi-host tables (per host, stragglers) stay out:
 * they are whole-run comparisons of hosts. */
static int analyze_window(jp_profile *p, const jp_model *m, const jp_load_options *opt, jp_error *err) {
    const jp_analysis *full = &p->analysis;
    jp_analysis w = {.hosts = full->hosts, .n_hosts = full->n_hosts, .host_start_ns = full->host_start_ns,
                     .n_events = full->n_events, .clock_method = full->clock_method, .warnings = full->warnings, .n_warnings = full->n_warnings};
    int64_t lo = 0, hi = 0, host_lo = 0, host_hi = 0;
    w.steps = select_steps(full, opt, &p->arena, &w.n_steps, &lo, &hi, &host_lo, &host_hi);
    if (!w.n_steps) return no_step(full, opt, err);
    if (!w.steps) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    w.step_summary.method = full->step_summary.method;
    w.step_window = 1;
    jp_model view;
    jp_vec owned[N_WINDOWED];
    int rc = window_view(m, lo, hi, host_lo, host_hi, &view, owned);
    if (rc != JP_OK) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    if (rc == JP_OK) rc = run_analyses(&view, &p->arena, &w, keep_steps, opt->op_spread, err);
    for (size_t i = 0; i < N_WINDOWED; i++) jp_vec_free(&owned[i]);
    if (rc == JP_OK) p->analysis = w;
    return rc;
}

/* How many hosts are read (and analysed alone) at once: --threads (1: everything on the calling thread), by default
 * one per CPU, never more than there are hosts. */
static size_t host_workers(const jp_load_options *opt, size_t n_hosts) {
    if (!opt || opt->threads == 1 || n_hosts < 2) return 1;
    long cpus = opt->threads > 1 ? opt->threads : sysconf(_SC_NPROCESSORS_ONLN);
    size_t w = cpus > 1 ? (size_t)cpus : 1;
    if (w > JP_LOAD_THREADS_MAX) w = JP_LOAD_THREADS_MAX;
    return w < n_hosts ? w : n_hosts;
}

static int analyze(jp_model *m, jp_profile *p, const jp_load_options *opt, jp_error *err) {
    jp_analysis *a = &p->analysis;
    a->hosts = jp_arena_alloc(&p->arena, (m->hosts.n ? m->hosts.n : 1) * sizeof *a->hosts);
    int64_t *start_ns = jp_arena_alloc(&p->arena, (m->hosts.n ? m->hosts.n : 1) * sizeof *start_ns);
    if (!a->hosts || !start_ns) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    for (size_t h = 0; h < m->hosts.n; h++) {
        a->hosts[h] = JP_VEC_AT(&m->hosts, jp_model_host, h).name;
        start_ns[h] = JP_VEC_AT(&m->hosts, jp_model_host, h).start_ns;
    }
    a->host_start_ns = start_ns;
    a->n_hosts = m->hosts.n;
    a->n_events = m->n_events;
    if (m->warnings.n && !(a->warnings = jp_arena_alloc(&p->arena, m->warnings.n * sizeof *a->warnings)))
        return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    for (size_t i = 0; i < m->warnings.n; i++) a->warnings[i] = JP_VEC_AT(&m->warnings, const char *, i);
    a->n_warnings = m->warnings.n;
    int rc = jp_hosts_analyze(m, &p->arena, a, host_workers(opt, m->hosts.n)); /* aligns the clocks: before the rest */
    if (rc != JP_OK) return analysis_failed("hosts", rc, err);
    rc = run_analyses(m, &p->arena, a, jp_steps_analyze, opt && opt->op_spread, err);
    return rc == JP_OK && opt && opt->has_steps ? analyze_window(p, m, opt, err) : rc;
}

/* What --host and --device may match, for the error when they match nothing: "a, b, c". */
typedef struct names_seen {
    char text[384]; /* "a, b, c", cut with "..." when there are more than fit */
    jp_text list;   /* on text (names_init) */
} names_seen;

static void names_init(names_seen *ns) { ns->list = jp_text_make(ns->text, sizeof ns->text); }

static int listed(const names_seen *ns, const char *name, size_t n) {
    for (const char *p = ns->text; *p;) {
        size_t k = strcspn(p, ",");
        if (k == n && memcmp(p, name, n) == 0) return 1;
        p += k + (p[k] ? 2 : 0); /* past ", " */
    }
    return 0;
}

static void name_add(names_seen *ns, const char *name, size_t n) {
    if (listed(ns, name, n)) return;
    if (ns->list.len) jp_text_puts(&ns->list, ", ");
    jp_text_put(&ns->list, name, n);
}

/* A device plane as --device names it (not a custom one: XLA's trace planes). */
static int is_device_plane(jp_str name) {
    return name.len > 8 && memcmp(name.ptr, "/device:", 8) == 0 && !(name.len > 15 && memcmp(name.ptr, "/device:CUSTOM:", 15) == 0);
}

/* The devices of one host as --device names them: its device planes, else its CPU. */
static void devices_add(names_seen *ns, const jp_str *names, size_t n) {
    size_t before = ns->list.len;
    for (size_t i = 0; i < n; i++) name_add(ns, names[i].ptr, names[i].len);
    if (ns->list.len == before) name_add(ns, "/host:CPU (device 0)", 20);
}

static void devices_of(const jp_xspace *xs, names_seen *ns) {
    size_t n_planes, before = ns->list.len;
    const jp_plane *planes = jp_xspace_planes(xs, &n_planes);
    for (size_t i = 0; i < n_planes; i++)
        if (is_device_plane(planes[i].name)) name_add(ns, planes[i].name.ptr, planes[i].name.len);
    if (ns->list.len == before) name_add(ns, "/host:CPU (device 0)", 20);
}

/* --device that selected nothing is a mistake, not an idle profile: say what there is. */
static int check_device(const jp_model *m, const jp_load_options *opt, const names_seen *devices, jp_error *err) {
    if (!opt || !opt->device || !*opt->device || m->devices.n) return JP_OK;
    return jp_error_set(err, JP_ERR_NOT_FOUND, 0, "no device matches '%s' (devices: %s)", opt->device,
                        devices->list.len ? devices->text : "none");
}

/* One selected host file, and, when hosts are read in parallel, the model its worker built. */
typedef struct host_job {
    const jp_profile_file *file;
    const char *host;
    jp_arena arena;   /* the part's memory: the profile's once merged */
    jp_model part;    /* the host alone (jp_model.part) */
    jp_vec devices;   /* jp_str: its device plane names (arena copies), for check_device */
    int state;        /* JOB_WAITING, JOB_TAKEN, JOB_BUILT */
    int rc;           /* of its build: on any failure the caller builds the host itself */
} host_job;

enum { JOB_WAITING, JOB_TAKEN, JOB_BUILT };

static void announce(const jp_load_options *opt, const char *file) {
    struct stat st;
    if (opt && opt->on_file && stat(file, &st) == 0) opt->on_file(opt->ctx, file, (uint64_t)st.st_size);
}

/* Decodes one host's file into m (the XSpace is closed right after: the model keeps only interned
 * copies of what it needs). */
static int add_host(jp_model *m, const host_job *j, const jp_load_options *opt, names_seen *devices, jp_error *err) {
    jp_xspace *xs;
    int rc = jp_profile_file_open(j->file, 1, opt ? opt->max_inflate : 0, &xs, err); /* lazy: the model reads each line once */
    if (rc) return rc;
    rc = jp_model_add_xspace(m, xs, j->host, opt, err);
    devices_of(xs, devices);
    jp_xspace_close(xs);
    return rc ? jp_error_prefix(err, rc, j->file->path) : JP_OK;
}

static int add_hosts_in_turn(jp_model *m, host_job *jobs, size_t n, const jp_load_options *opt, names_seen *devices,
                             jp_error *err) {
    for (size_t i = 0; i < n; i++) {
        announce(opt, jobs[i].file->path);
        int rc = add_host(m, &jobs[i], opt, devices, err);
        if (rc) return rc;
    }
    return JP_OK;
}

/* ---- hosts in parallel (docs/design.md "Speed") ------------------------------------------------
 * Workers build each host into a model of its own (a part), taking files in order; the calling
 * thread merges the parts in file order into m (model/merge.c), which gives the model the hosts
 * read one after another give. At most `window` files are taken and not yet merged: that many
 * XSpaces and parts at once bound the memory. A host whose part failed or cannot be merged
 * exactly is built by the calling thread, once the workers have stopped, with every host after
 * it: its error, or its records, are then the sequential build's by construction. */
typedef struct host_pool {
    pthread_mutex_t lock;        /* guards next, merged, fail_at, stop and the jobs' state */
    pthread_cond_t changed;
    pthread_mutex_t intern_lock; /* m's intern table, behind every part's front */
    host_job *jobs;
    size_t n, next, merged, window, fail_at;
    int stop;
    jp_model *m;
    jp_load_options opt;         /* the caller's, one parse thread per worker */
} host_pool;

/* The device plane names of xs, copied into a (devices_add replays them). */
static int device_names(const jp_xspace *xs, jp_arena *a, jp_vec *out) {
    size_t n_planes;
    const jp_plane *planes = jp_xspace_planes(xs, &n_planes);
    for (size_t i = 0; i < n_planes; i++) {
        if (!is_device_plane(planes[i].name)) continue;
        jp_str *s = jp_vec_push(out, sizeof *s);
        if (!s || !(s->ptr = jp_arena_strndup(a, planes[i].name.ptr, planes[i].name.len))) return JP_ERR_NOMEM;
        s->len = planes[i].name.len;
    }
    return JP_OK;
}

static int build_part(host_pool *pool, host_job *j) {
    jp_error err; /* discarded: a failed host is built again by the caller, for its exact error */
    jp_arena_init(&j->arena, 0);
    jp_model_init(&j->part, &j->arena);
    jp_intern_init_front(&j->part.intern, &pool->m->intern, &pool->intern_lock);
    j->part.part = 1;
    jp_xspace *xs;
    int rc = jp_profile_file_open(j->file, 1, pool->opt.max_inflate, &xs, &err);
    if (rc) return rc;
    rc = jp_model_add_xspace(&j->part, xs, j->host, &pool->opt, &err);
    if (rc == JP_OK) rc = device_names(xs, &j->arena, &j->devices);
    jp_xspace_close(xs);
    return rc;
}

static void *host_worker(void *arg) {
    host_pool *pool = arg;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->stop && pool->next < pool->n && pool->next <= pool->fail_at && pool->next >= pool->merged + pool->window)
            pthread_cond_wait(&pool->changed, &pool->lock);
        if (pool->stop || pool->next == pool->n || pool->next > pool->fail_at) break; /* past a failure: useless */
        size_t i = pool->next++;
        pool->jobs[i].state = JOB_TAKEN;
        pthread_mutex_unlock(&pool->lock);
        int rc = build_part(pool, &pool->jobs[i]);
        pthread_mutex_lock(&pool->lock);
        pool->jobs[i].rc = rc;
        pool->jobs[i].state = JOB_BUILT;
        if (rc && i < pool->fail_at) pool->fail_at = i;
        pthread_cond_broadcast(&pool->changed);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

static void job_free(host_job *j) {
    if (j->state != JOB_BUILT) return;
    jp_model_deinit(&j->part);
    jp_arena_deinit(&j->arena);
    jp_vec_free(&j->devices);
    j->state = JOB_WAITING;
}

/* Waits for job i's part and merges it into m: 0, 1 when the caller must build the host itself,
 * or an error. */
static int merge_next(jp_profile *p, host_pool *pool, size_t i, names_seen *devices, jp_error *err) {
    host_job *j = &pool->jobs[i];
    pthread_mutex_lock(&pool->lock);
    while (j->state != JOB_BUILT) pthread_cond_wait(&pool->changed, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
    int rc = j->rc == JP_OK ? jp_model_merge(pool->m, &j->part) : 1;
    if (rc < 0) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory building the model");
    if (rc == 0) {
        jp_arena_adopt(&p->arena, &j->arena);
        devices_add(devices, j->devices.data, j->devices.n);
        job_free(j);
        pthread_mutex_lock(&pool->lock);
        pool->merged = i + 1;
        pthread_cond_broadcast(&pool->changed);
        pthread_mutex_unlock(&pool->lock);
    }
    return rc;
}

/* Runs workers over jobs[0..n) and merges their parts in order; *done: how many were merged.
 * 0 when all were, 1 when jobs[*done] (announced) must be built in place, or an error. */
static int run_pool(jp_profile *p, jp_model *m, host_job *jobs, size_t n, size_t workers, const jp_load_options *opt,
                    names_seen *devices, jp_error *err, size_t *done) {
    host_pool pool = {.jobs = jobs, .n = n, .window = workers, .fail_at = SIZE_MAX, .m = m, .opt = *opt};
    pool.opt.threads = 1, pool.opt.on_file = NULL; /* progress is the calling thread's */
    jp_arena strings, *own = m->intern.arena; /* the workers intern under intern_lock, into strings */
    jp_arena_init(&strings, 0);
    m->intern.arena = &strings;
    pthread_mutex_init(&pool.lock, NULL);
    pthread_mutex_init(&pool.intern_lock, NULL);
    pthread_cond_init(&pool.changed, NULL);
    pthread_t tid[JP_LOAD_THREADS_MAX];
    size_t started = 0, i = 0;
    while (started < workers && started < n && pthread_create(&tid[started], NULL, host_worker, &pool) == 0) started++;
    int rc = started ? JP_OK : 1; /* no thread: the first host in place, announced here */
    if (!started) announce(opt, jobs[0].file->path);
    for (; started && i < n; i++) {
        announce(opt, jobs[i].file->path);
        if ((rc = merge_next(p, &pool, i, devices, err)) != 0) break;
    }
    pthread_mutex_lock(&pool.lock);
    pool.stop = 1;
    pthread_cond_broadcast(&pool.changed);
    pthread_mutex_unlock(&pool.lock);
    for (size_t t = 0; t < started; t++) pthread_join(tid[t], NULL);
    for (size_t k = i; k < n; k++) job_free(&jobs[k]); /* parts past a refused one are built again */
    pthread_cond_destroy(&pool.changed);
    pthread_mutex_destroy(&pool.intern_lock);
    pthread_mutex_destroy(&pool.lock);
    jp_arena_adopt(own, &strings);
    m->intern.arena = own;
    *done = i;
    return rc;
}

/* A host the merge refused (it read what earlier hosts hold) is built in place on the calling
 * thread, then the workers go on from the next; a host that failed is built in place for its
 * error, which ends the load. */
static int add_hosts_parallel(jp_profile *p, jp_model *m, host_job *jobs, size_t n, size_t workers,
                              const jp_load_options *opt, names_seen *devices, jp_error *err) {
    for (size_t i = 0; i < n;) {
        size_t done;
        int rc = run_pool(p, m, jobs + i, n - i, workers, opt, devices, err, &done);
        if (rc <= 0) return rc;
        i += done;
        if ((rc = add_host(m, &jobs[i], opt, devices, err)) != JP_OK) return rc;
        i++;
    }
    return JP_OK;
}

/* Decodes each selected host's file into the model, in parallel when there are several. */
static int add_hosts(jp_profile *p, jp_model *m, const jp_vec *files, const jp_load_options *opt, jp_error *err) {
    size_t used = 0;
    names_seen hosts, devices;
    names_init(&hosts);
    names_init(&devices);
    host_job *jobs = calloc(files->n ? files->n : 1, sizeof *jobs);
    if (!jobs) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    for (size_t i = 0; i < files->n; i++) {
        const jp_profile_file *f = &JP_VEC_AT(files, jp_profile_file, i);
        const char *host = jp_profile_host_of(&p->arena, f->path);
        if (!host) {
            free(jobs);
            return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
        }
        name_add(&hosts, host, strlen(host));
        if (opt && opt->host && *opt->host && !strstr(host, opt->host)) continue;
        jobs[used++] = (host_job){.file = f, .host = host};
    }
    size_t workers = host_workers(opt, used);
    int rc = workers > 1 ? add_hosts_parallel(p, m, jobs, used, workers, opt, &devices, err)
                         : add_hosts_in_turn(m, jobs, used, opt, &devices, err);
    free(jobs);
    if (rc) return rc;
    if (!used)
        return jp_error_set(err, JP_ERR_NOT_FOUND, 0, "no host matches '%s' (hosts: %s)", opt && opt->host ? opt->host : "",
                            hosts.text);
    rc = check_device(m, opt, &devices, err);
    return rc ? rc : jp_model_finish(m, err);
}

/* What was read: the file given, or the run directory whose files were (a log directory given
 * means its newest run, and the outputs say which one that was). */
static const char *analysed_path(jp_arena *a, const char *path, const jp_vec *files) {
    struct stat st;
    const char *first = files->n ? JP_VEC_AT(files, jp_profile_file, 0).path : NULL, *slash = first ? strrchr(first, '/') : NULL;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode) || !slash) return jp_arena_strndup(a, path, strlen(path));
    return jp_arena_strndup(a, first, (size_t)(slash - first));
}

jp_profile *jp_profile_empty(void) {
    jp_profile *p = calloc(1, sizeof *p);
    if (p) jp_arena_init(&p->arena, 0);
    return p;
}

jp_arena *jp_profile_arena(jp_profile *p) { return &p->arena; }
jp_analysis *jp_profile_results(jp_profile *p) { return &p->analysis; }

void jp_profile_adopt(jp_profile *p, jp_profile *child) {
    jp_arena_adopt(&p->arena, &child->arena);
    jp_profile_free(child);
}

int jp_profile_load(jp_profile **out, const char *path, const jp_load_options *opt, jp_error *err) {
    jp_error_clear(err);
    *out = NULL;
    if (opt && opt->use_summaries) {
        int rc = jp_pod_load(out, path, opt, err);
        if (rc || *out) return rc;
    }
    jp_profile *p = calloc(1, sizeof *p);
    if (!p) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    jp_arena_init(&p->arena, 0);
    jp_vec files = {0};
    jp_model m;
    jp_model_init(&m, &p->arena);
    int rc = jp_profile_files(path, &files, err);
    if (rc == JP_OK) rc = add_hosts(p, &m, &files, opt, err);
    if (rc == JP_OK) rc = analyze(&m, p, opt, err);
    if (rc == JP_OK && !(p->analysis.path = analysed_path(&p->arena, path, &files)))
        rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    jp_profile_files_free(&files);
    jp_model_deinit(&m);
    if (rc) {
        jp_profile_free(p);
        return rc;
    }
    *out = p;
    return JP_OK;
}

/* The host an XSpace in memory is named by when the caller gives no name: the machine it was
 * captured on (its hostnames field, as a file JAX writes is named), else "memory". */
static void own_hostname(const jp_xspace *xs, char *buf, size_t cap) {
    size_t n = 0;
    const jp_str *names = jp_xspace_hostnames(xs, &n);
    size_t len = n && names[0].len && !memchr(names[0].ptr, '/', names[0].len) ? names[0].len : 0;
    if (len >= cap) len = cap - 1;
    memcpy(buf, len ? names[0].ptr : "memory", len ? len : sizeof "memory");
    if (len) buf[len] = '\0';
}

int jp_profile_parse(jp_profile **out, const void *data, size_t len, const char *name, const jp_load_options *opt,
                     jp_error *err) {
    *out = NULL;
    char host[256];
    jp_xspace *xs;
    int rc = jp_xspace_parse_limited(&xs, data, len, name ? name : "<memory>", 1, opt ? opt->max_inflate : 0, err);
    if (rc) return rc;
    if (!name) own_hostname(xs, host, sizeof host), name = host;
    rc = jp_profile_from_xspaces(out, &xs, &name, 1, name, opt, err);
    jp_xspace_close(xs);
    return rc;
}

int jp_profile_from_xspaces(jp_profile **out, jp_xspace *const *xs, const char *const *files, size_t n,
                            const char *path, const jp_load_options *opt, jp_error *err) {
    jp_error_clear(err);
    *out = NULL;
    jp_profile *p = calloc(1, sizeof *p);
    if (!p) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    jp_arena_init(&p->arena, 0);
    jp_model m;
    jp_model_init(&m, &p->arena);
    int rc = JP_OK;
    names_seen devices;
    names_init(&devices);
    for (size_t i = 0; rc == JP_OK && i < n; i++) {
        const char *host = jp_profile_host_of(&p->arena, files[i]);
        rc = host ? jp_model_add_xspace(&m, xs[i], host, opt, err) : jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
        if (rc) jp_error_prefix(err, rc, files[i]);
        devices_of(xs[i], &devices);
    }
    if (rc == JP_OK) rc = check_device(&m, opt, &devices, err);
    if (rc == JP_OK) rc = jp_model_finish(&m, err);
    if (rc == JP_OK) rc = analyze(&m, p, opt, err);
    if (rc == JP_OK && !(p->analysis.path = jp_arena_strndup(&p->arena, path, strlen(path))))
        rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    jp_model_deinit(&m);
    if (rc) {
        jp_profile_free(p);
        return rc;
    }
    *out = p;
    return JP_OK;
}

void jp_profile_free(jp_profile *p) {
    if (!p) return;
    jp_arena_deinit(&p->arena);
    free(p);
}

const jp_analysis *jp_profile_analysis(const jp_profile *p) { return &p->analysis; }
