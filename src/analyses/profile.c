/* profile.c - jp_profile_load: resolves a path to one host file or a run's files, decodes each
 * XSpace, builds the model and runs every analysis in order. */
#include <dirent.h>
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

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

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
        char **slot = jp_vec_push(files, sizeof(char *));
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!slot || !(*slot = malloc(len))) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
        else snprintf(*slot, len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (files->n > 1) qsort(files->data, files->n, sizeof(char *), cmp_str);
    return rc;
}

/* PATH is a file, a run directory, or a log directory whose newest run is meant. */
int jp_profile_files(const char *path, jp_vec *files, jp_error *err) {
    struct stat st;
    if (stat(path, &st) != 0) return jp_error_set(err, JP_ERR_NOT_FOUND, 0, "%s: no such file or directory", path);
    if (!S_ISDIR(st.st_mode)) {
        char **slot = jp_vec_push(files, sizeof(char *));
        if (!slot || !(*slot = strdup(path))) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
        return JP_OK;
    }
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

static int analyze(jp_model *m, jp_profile *p, jp_error *err) {
    int (*const steps[])(const jp_model *, jp_arena *, jp_analysis *) = {
        jp_ops_analyze, jp_lines_analyze, jp_steps_analyze, jp_roofline_analyze, jp_scopes_analyze, jp_compiles_analyze, jp_transfers_analyze,
        jp_kernels_analyze, jp_memory_analyze, jp_findings_analyze,
    };
    jp_analysis *a = &p->analysis;
    a->hosts = jp_arena_alloc(&p->arena, (m->hosts.n ? m->hosts.n : 1) * sizeof *a->hosts);
    if (!a->hosts) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    for (size_t h = 0; h < m->hosts.n; h++) a->hosts[h] = JP_VEC_AT(&m->hosts, jp_model_host, h).name;
    a->n_hosts = m->hosts.n;
    a->n_events = m->n_events;
    if (jp_hosts_analyze(m, &p->arena, a) != JP_OK) /* aligns the hosts' clocks: before the rest */
        return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory analysing");
    a->span_ps = m->last_ps - m->first_ps;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i](m, &p->arena, a) != JP_OK) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory analysing");
    a->platform = JP_PLATFORM_CPU;
    for (size_t i = 0; i < a->n_devices; i++)
        if (a->devices[i].platform != JP_PLATFORM_CPU) a->platform = a->devices[i].platform;
    return JP_OK;
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
        const char *file = JP_VEC_AT(files, char *, i);
        const char *host = jp_profile_host_of(&p->arena, file);
        if (!host) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
        name_add(&hosts, host, strlen(host));
        if (opt && opt->host && *opt->host && !strstr(host, opt->host)) continue;
        struct stat st;
        if (opt && opt->on_file && stat(file, &st) == 0) opt->on_file(opt->ctx, file, (uint64_t)st.st_size);
        jp_xspace *xs;
        int rc = jp_xspace_open_lazy(&xs, file, err); /* the model reads each line once */
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

/* What was read: the file given, or the run directory whose files were (a log directory given
 * means its newest run, and the outputs say which one that was). */
static const char *analysed_path(jp_arena *a, const char *path, const jp_vec *files) {
    struct stat st;
    const char *first = files->n ? JP_VEC_AT(files, char *, 0) : NULL, *slash = first ? strrchr(first, '/') : NULL;
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
        rc = analyze(&m, p, err);
        p->analysis.path = analysed_path(&p->arena, path, &files);
    }
    for (size_t i = 0; i < files.n; i++) free(JP_VEC_AT(&files, char *, i));
    jp_vec_free(&files);
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
    if (rc == JP_OK) rc = analyze(&m, p, err);
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
