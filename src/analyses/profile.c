/* profile.c - jp_profile_load: resolves a path to one host file or a run's files, decodes each
 * XSpace, builds the model and runs every analysis in order. */
#include <dirent.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyses/analyses.h"
#include "base/error.h"

struct jp_profile {
    jp_arena arena;       /* the analysis and every string it points to */
    jp_analysis analysis;
};

void *jp_analysis_copy(jp_arena *a, const jp_vec *v, size_t elem) {
    void *p = jp_arena_alloc(a, (v->n ? v->n : 1) * elem);
    if (p && v->n) memcpy(p, v->data, v->n * elem);
    return p;
}

const char *jp_analysis_printf(jp_arena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? jp_arena_alloc(a, (size_t)n + 1) : NULL;
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static const char *xplane_suffix(const char *name) {
    static const char *const suffixes[] = {".xplane.pb", ".xplane.pb.gz"};
    size_t n = strlen(name);
    for (size_t i = 0; i < 2; i++) {
        size_t k = strlen(suffixes[i]);
        if (n > k && strcmp(name + n - k, suffixes[i]) == 0) return name + n - k;
    }
    return NULL;
}

static int cmp_path(const void *a, const void *b) {
    return strcmp(((const jp_profile_file *)a)->path, ((const jp_profile_file *)b)->path);
}

/* Appends a file; id NULL: named by the caller, opened as named (symbolic links followed). */
static int add_file(jp_vec *files, const char *dir, const char *name, const struct stat *id, jp_error *err) {
    jp_profile_file *f = jp_vec_push(files, sizeof *f);
    size_t len = (dir ? strlen(dir) + 1 : 0) + strlen(name) + 1;
    if (!f || !(f->path = malloc(len))) {
        if (f) files->n--;
        return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    }
    if (dir) snprintf(f->path, len, "%s/%s", dir, name);
    else memcpy(f->path, name, len);
    f->listed = id != NULL;
    f->id = id ? (jp_file_id){(uint64_t)id->st_dev, (uint64_t)id->st_ino} : (jp_file_id){0, 0};
    return JP_OK;
}

void jp_profile_files_free(jp_vec *files) {
    for (size_t i = 0; i < files->n; i++) free(JP_VEC_AT(files, jp_profile_file, i).path);
    jp_vec_free(files);
}

int jp_profile_file_open(const jp_profile_file *f, int lazy, jp_xspace **out, jp_error *err) {
    if (f->listed) return jp_xspace_open_listed(out, f->path, &f->id, lazy, err);
    return lazy ? jp_xspace_open_lazy(out, f->path, err) : jp_xspace_open(out, f->path, err);
}

/* The xplane files directly inside dir, sorted by name (one per host). Only regular files, as
 * jp_runs_find counts them: a symlink could pull in a profile from outside the log directory. */
static int list_run_files(const char *dir, jp_vec *files, jp_error *err) {
    DIR *d = opendir(dir);
    if (!d) return jp_error_set(err, JP_ERR_IO, 0, "%s: cannot open directory", dir);
    struct dirent *e;
    int rc = JP_OK;
    while (rc == JP_OK && (e = readdir(d))) {
        struct stat st;
        if (!xplane_suffix(e->d_name) || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        rc = add_file(files, dir, e->d_name, &st, err);
    }
    closedir(d);
    if (files->n > 1) qsort(files->data, files->n, sizeof(jp_profile_file), cmp_path);
    return rc;
}

/* PATH is a file, a run directory, or a log directory whose newest run is meant. */
int jp_profile_files(const char *path, jp_vec *files, jp_error *err) {
    struct stat st;
    if (stat(path, &st) != 0) return jp_error_set(err, JP_ERR_NOT_FOUND, 0, "%s: no such file or directory", path);
    if (!S_ISDIR(st.st_mode)) return add_file(files, NULL, path, NULL, err);
    int rc = list_run_files(path, files, err);
    if (rc || files->n) return rc;
    jp_runs runs;
    rc = jp_runs_find(&runs, path, err);
    const jp_run *latest = rc == JP_OK ? jp_runs_latest_view(&runs) : NULL;
    if (rc == JP_OK && !latest) rc = jp_error_set(err, JP_ERR_NOT_FOUND, 0, "%s: no *.xplane.pb profile found", path);
    if (latest) rc = list_run_files(latest->path, files, err);
    jp_runs_deinit(&runs);
    return rc;
}

const char *jp_profile_host_of(jp_arena *a, const char *file) {
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    const char *suffix = xplane_suffix(base);
    return jp_arena_strndup(a, base, suffix ? (size_t)(suffix - base) : strlen(base));
}

typedef int (*analysis_fn)(const jp_model *, jp_arena *, jp_analysis *);

/* Every analysis after the hosts', in order; steps_fn finds the steps (or keeps the ones given). */
static int run_analyses(const jp_model *m, jp_arena *arena, jp_analysis *a, analysis_fn steps_fn, jp_error *err) {
    const analysis_fn fns[] = {
        jp_ops_analyze, jp_lines_analyze, steps_fn, jp_roofline_analyze, jp_scopes_analyze, jp_compiles_analyze, jp_transfers_analyze,
        jp_kernels_analyze, jp_memory_analyze, jp_findings_analyze,
    };
    a->span_ps = m->last_ps - m->first_ps;
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (fns[i](m, arena, a) != JP_OK) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory analysing");
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
                             int64_t *from, int64_t *to) {
    *n = 0;
    for (size_t i = 0; i < a->n_steps; i++) *n += a->steps[i].step_num >= opt->first_step && a->steps[i].step_num <= opt->last_step;
    jp_step *out = *n ? jp_arena_alloc(arena, *n * sizeof *out) : NULL;
    size_t k = 0;
    for (size_t i = 0; out && i < a->n_steps; i++) {
        const jp_step *s = &a->steps[i];
        if (s->step_num < opt->first_step || s->step_num > opt->last_step) continue;
        if (!k || s->start_ps < *from) *from = s->start_ps;
        if (!k || s->start_ps + s->dur_ps > *to) *to = s->start_ps + s->dur_ps;
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

/* A view of m holding only the events that start in [lo, hi): like jp_model_host_view, it shares
 * m's tables (devices, op definitions, strings), and its narrowed vectors are heap copies in
 * owned[] for the caller to free. Kernels are summed while reading, so none can be narrowed. */
static int window_view(const jp_model *m, int64_t lo, int64_t hi, jp_model *view, jp_vec owned[N_WINDOWED]) {
    *view = *m;
    view->kernels = (jp_vec){0};
    view->first_ps = lo, view->last_ps = hi;
    int rc = JP_OK;
    for (size_t i = 0; i < N_WINDOWED; i++) {
        const jp_vec *from = (const jp_vec *)((const char *)m + WINDOWED[i].member);
        if (rc == JP_OK) rc = keep_in_window(from, WINDOWED[i].size, WINDOWED[i].t_off, lo, hi, &owned[i]);
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
    jp_analysis w = {.hosts = full->hosts, .n_hosts = full->n_hosts, .n_events = full->n_events,
                     .clock_method = full->clock_method};
    int64_t lo = 0, hi = 0;
    w.steps = select_steps(full, opt, &p->arena, &w.n_steps, &lo, &hi);
    if (!w.n_steps) return no_step(full, opt, err);
    if (!w.steps) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    w.step_summary.method = full->step_summary.method;
    jp_model view;
    jp_vec owned[N_WINDOWED];
    int rc = window_view(m, lo, hi, &view, owned);
    if (rc != JP_OK) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    if (rc == JP_OK) rc = run_analyses(&view, &p->arena, &w, keep_steps, err);
    for (size_t i = 0; i < N_WINDOWED; i++) jp_vec_free(&owned[i]);
    if (rc == JP_OK) p->analysis = w;
    return rc;
}

static int analyze(jp_model *m, jp_profile *p, const jp_load_options *opt, jp_error *err) {
    jp_analysis *a = &p->analysis;
    a->hosts = jp_arena_alloc(&p->arena, (m->hosts.n ? m->hosts.n : 1) * sizeof *a->hosts);
    if (!a->hosts) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    for (size_t h = 0; h < m->hosts.n; h++) a->hosts[h] = JP_VEC_AT(&m->hosts, jp_model_host, h).name;
    a->n_hosts = m->hosts.n;
    a->n_events = m->n_events;
    if (jp_hosts_analyze(m, &p->arena, a) != JP_OK) /* aligns the hosts' clocks: before the rest */
        return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory analysing");
    int rc = run_analyses(m, &p->arena, a, jp_steps_analyze, err);
    return rc == JP_OK && opt && opt->has_steps ? analyze_window(p, m, opt, err) : rc;
}

/* What --host and --device may match, for the error when they match nothing: "a, b, c". */
typedef struct names_seen {
    char text[384];
    size_t len;
} names_seen;

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
    int w = snprintf(ns->text + ns->len, sizeof ns->text - ns->len, "%s%.*s", ns->len ? ", " : "", (int)n, name);
    ns->len = w < 0 ? ns->len : ns->len + (size_t)w < sizeof ns->text ? ns->len + (size_t)w : sizeof ns->text - 1;
}

/* The devices of one XSpace as --device names them: its device planes, else its CPU. */
static void devices_of(const jp_xspace *xs, names_seen *ns) {
    size_t n_planes, before = ns->len;
    const jp_plane *planes = jp_xspace_planes(xs, &n_planes);
    for (size_t i = 0; i < n_planes; i++) {
        jp_str name = planes[i].name;
        if (name.len > 8 && memcmp(name.ptr, "/device:", 8) == 0 && !(name.len > 15 && memcmp(name.ptr, "/device:CUSTOM:", 15) == 0))
            name_add(ns, name.ptr, name.len);
    }
    if (ns->len == before) name_add(ns, "/host:CPU (device 0)", 20);
}

/* --device that selected nothing is a mistake, not an idle profile: say what there is. */
static int check_device(const jp_model *m, const jp_load_options *opt, const names_seen *devices, jp_error *err) {
    if (!opt || !opt->device || !*opt->device || m->devices.n) return JP_OK;
    return jp_error_set(err, JP_ERR_NOT_FOUND, 0, "no device matches '%s' (devices: %s)", opt->device,
                        devices->len ? devices->text : "none");
}

/* Decodes each selected host's file into the model; each XSpace is closed right after, since
 * the model keeps only interned copies of what it needs. */
static int add_hosts(jp_profile *p, jp_model *m, const jp_vec *files, const jp_load_options *opt, jp_error *err) {
    size_t used = 0;
    names_seen hosts = {0}, devices = {0};
    for (size_t i = 0; i < files->n; i++) {
        const jp_profile_file *f = &JP_VEC_AT(files, jp_profile_file, i);
        const char *file = f->path, *host = jp_profile_host_of(&p->arena, file);
        if (!host) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
        name_add(&hosts, host, strlen(host));
        if (opt && opt->host && *opt->host && !strstr(host, opt->host)) continue;
        struct stat st;
        if (opt && opt->on_file && stat(file, &st) == 0) opt->on_file(opt->ctx, file, (uint64_t)st.st_size);
        jp_xspace *xs;
        int rc = jp_profile_file_open(f, 1, &xs, err); /* lazy: the model reads each line once */
        if (rc) return rc;
        rc = jp_model_add_xspace(m, xs, host, opt, err);
        devices_of(xs, &devices);
        jp_xspace_close(xs);
        if (rc) return jp_error_prefix(err, rc, file);
        used++;
    }
    if (!used)
        return jp_error_set(err, JP_ERR_NOT_FOUND, 0, "no host matches '%s' (hosts: %s)", opt && opt->host ? opt->host : "",
                            hosts.text);
    int rc = check_device(m, opt, &devices, err);
    return rc ? rc : jp_model_finish(m, err);
}

/* One step of FNV-1a over the 8 bytes of v. */
static uint64_t stamp_mix(uint64_t h, uint64_t v) {
    for (int i = 0; i < 8; i++, v >>= 8) h = (h ^ (v & 0xff)) * 0x100000001b3ull;
    return h;
}

int jp_profile_stamp(const char *path, uint64_t *out, jp_error *err) {
    jp_error_clear(err);
    jp_vec files = {0};
    int rc = jp_profile_files(path, &files, err);
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; rc == JP_OK && i < files.n; i++) {
        const jp_profile_file *f = &JP_VEC_AT(&files, jp_profile_file, i);
        struct stat st;
        if ((f->listed ? lstat(f->path, &st) : stat(f->path, &st)) != 0) continue; /* gone: the stamp changes */
        const uint64_t parts[] = {i, (uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_size,
                                  (uint64_t)st.st_mtim.tv_sec, (uint64_t)st.st_mtim.tv_nsec,
                                  (uint64_t)st.st_ctim.tv_sec, (uint64_t)st.st_ctim.tv_nsec};
        for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) h = stamp_mix(h, parts[k]);
    }
    *out = stamp_mix(h, files.n);
    jp_profile_files_free(&files);
    return rc;
}

int jp_profile_output_check(const char *path, const char *out_path, jp_error *err) {
    jp_error_clear(err);
    struct stat out, in;
    if (stat(out_path, &out) != 0) return JP_OK; /* nothing there yet: nothing to destroy */
    jp_vec files = {0};
    int rc = jp_profile_files(path, &files, err);
    for (size_t i = 0; rc == JP_OK && i < files.n; i++) {
        const char *file = JP_VEC_AT(&files, jp_profile_file, i).path;
        if (stat(file, &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
            rc = jp_error_set(err, JP_ERR_ARG, 0, "%s: the output would overwrite the input %s; write elsewhere",
                              out_path, file);
    }
    if (rc == JP_ERR_NOT_FOUND) rc = JP_OK, jp_error_clear(err); /* no input: the load will say so */
    jp_profile_files_free(&files);
    return rc;
}

/* What was read: the file given, or the run directory whose files were (a log directory given
 * means its newest run, and the outputs say which one that was). */
static const char *analysed_path(jp_arena *a, const char *path, const jp_vec *files) {
    struct stat st;
    const char *first = files->n ? JP_VEC_AT(files, jp_profile_file, 0).path : NULL, *slash = first ? strrchr(first, '/') : NULL;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode) || !slash) return jp_arena_strndup(a, path, strlen(path));
    return jp_arena_strndup(a, first, (size_t)(slash - first));
}

int jp_profile_load(jp_profile **out, const char *path, const jp_load_options *opt, jp_error *err) {
    jp_error_clear(err);
    *out = NULL;
    jp_profile *p = calloc(1, sizeof *p);
    if (!p) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    jp_arena_init(&p->arena, 0);
    jp_vec files = {0};
    jp_model m;
    jp_model_init(&m, &p->arena);
    int rc = jp_profile_files(path, &files, err);
    if (rc == JP_OK) rc = add_hosts(p, &m, &files, opt, err);
    if (rc == JP_OK) {
        rc = analyze(&m, p, opt, err);
        p->analysis.path = analysed_path(&p->arena, path, &files);
    }
    jp_profile_files_free(&files);
    jp_model_deinit(&m);
    if (rc) {
        jp_profile_free(p);
        return rc;
    }
    *out = p;
    return JP_OK;
}

int jp_profile_parse(jp_profile **out, const void *data, size_t len, const char *name, const jp_load_options *opt,
                     jp_error *err) {
    *out = NULL;
    name = name ? name : "<memory>";
    jp_xspace *xs;
    int rc = jp_xspace_parse_lazy(&xs, data, len, name, err);
    if (rc) return rc;
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
    names_seen devices = {0};
    for (size_t i = 0; rc == JP_OK && i < n; i++) {
        const char *host = jp_profile_host_of(&p->arena, files[i]);
        rc = host ? jp_model_add_xspace(&m, xs[i], host, opt, err) : jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
        if (rc) jp_error_prefix(err, rc, files[i]);
        devices_of(xs[i], &devices);
    }
    if (rc == JP_OK) rc = check_device(&m, opt, &devices, err);
    if (rc == JP_OK) rc = jp_model_finish(&m, err);
    if (rc == JP_OK) rc = analyze(&m, p, opt, err);
    if (rc == JP_OK) p->analysis.path = jp_arena_strndup(&p->arena, path, strlen(path));
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
