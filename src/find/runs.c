/* runs.c - locating profile runs (directories of <host>.xplane.pb files, or of their summaries alone)
 * under a log directory. */
#include "base/arena.h"
#include "base/error.h"
#include "find/runs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_DEPTH = 16, PATH_CAP = 4096 };

/* Growable heap array of runs while walking; copied into the arena at the end. */
typedef struct run_vec {
    jp_run *items;
    size_t count, cap;
} run_vec;

typedef struct walk {
    jp_arena *arena; /* the result's arena: paths are copied here */
    run_vec found;   /* runs seen so far */
    char path[PATH_CAP]; /* the directory being visited, NUL-terminated */
    jp_error *err;
} walk;

/* The names jax.profiler gives a host's file; the one place that knows them. */
static const char *const XPLANE_SUFFIXES[] = {".xplane.pb", ".xplane.pb.gz"};
static const char *const TRACE_JSON_SUFFIXES[] = {".trace.json", ".trace.json.gz"};
static const char *const SUMMARY_SUFFIXES[] = {".jaxprof-summary.json"}; /* jaxprof summarize */

/* The length of name without the first of suffixes[0..n) it ends in, 0 when none. */
static size_t host_len(const char *name, const char *const *suffixes, size_t n_suffixes) {
    size_t n = strlen(name);
    for (size_t i = 0; i < n_suffixes; i++) {
        size_t k = strlen(suffixes[i]);
        if (n > k && memcmp(name + n - k, suffixes[i], k) == 0) return n - k;
    }
    return 0;
}

#define HOST_LEN(name, suffixes) host_len(name, suffixes, sizeof suffixes / sizeof *suffixes)

size_t jp_xplane_host_len(const char *name) { return HOST_LEN(name, XPLANE_SUFFIXES); }
size_t jp_trace_json_host_len(const char *name) { return HOST_LEN(name, TRACE_JSON_SUFFIXES); }
size_t jp_summary_host_len(const char *name) { return HOST_LEN(name, SUMMARY_SUFFIXES); }

int jp_run_dir_each(const char *dir, jp_run_dir_fn each, void *ctx, jp_error *err) {
    DIR *d = opendir(dir);
    if (!d) return jp_error_set(err, JP_ERR_IO, 0, "%s: cannot open directory: %s", dir, strerror(errno));
    struct dirent *e;
    int rc = JP_OK;
    while (rc == JP_OK && (e = readdir(d))) {
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) rc = each(ctx, e->d_name, &st);
    }
    closedir(d);
    return rc;
}

static int64_t mtime_ns(const struct stat *st) {
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + (int64_t)st->st_mtim.tv_nsec;
}

static int push_run(walk *w, const jp_run *run) {
    run_vec *v = &w->found;
    if (v->count == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        jp_run *items = realloc(v->items, cap * sizeof *items);
        if (!items) return jp_error_set(w->err, JP_ERR_NOMEM, 0, "out of memory listing runs");
        v->items = items;
        v->cap = cap;
    }
    v->items[v->count++] = *run;
    return JP_OK;
}

static int by_name(const void *pa, const void *pb) {
    return strcmp(*(char *const *)pa, *(char *const *)pb);
}

/* The xplane file names of one directory while it is visited: arena copies. */
typedef struct name_list {
    char **items; /* heap array of arena strings */
    size_t count, cap;
} name_list;

static int add_name(walk *w, name_list *l, const char *name) {
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        char **items = realloc(l->items, cap * sizeof *items);
        if (!items) return jp_error_set(w->err, JP_ERR_NOMEM, 0, "out of memory listing runs");
        l->items = items, l->cap = cap;
    }
    char *copy = jp_arena_strndup(w->arena, name, strlen(name));
    if (!copy) return jp_error_set(w->err, JP_ERR_NOMEM, 0, "out of memory listing runs");
    l->items[l->count++] = copy;
    return JP_OK;
}

/* The run's files in file-name order (the order they load in) and their hosts, each host the
 * file's name cut at jp_xplane_host_len (a Chrome trace's at jp_trace_json_host_len). The arrays live in the arena: files->items is freed
 * once the directory is visited. */
static int set_hosts(walk *w, jp_run *run, name_list *files) {
    if (!files->count) return JP_OK; /* a run of summaries alone */
    qsort(files->items, files->count, sizeof *files->items, by_name);
    const char **names = files->count < SIZE_MAX / (2 * sizeof *names)
                             ? jp_arena_alloc(w->arena, 2 * files->count * sizeof *names)
                             : NULL;
    if (!names) return jp_error_set(w->err, JP_ERR_NOMEM, 0, "out of memory listing runs");
    const char **hosts = names + files->count;
    for (size_t i = 0; i < files->count; i++) {
        names[i] = files->items[i];
        size_t len = jp_xplane_host_len(files->items[i]);
        hosts[i] = jp_arena_strndup(w->arena, files->items[i], len ? len : jp_trace_json_host_len(files->items[i]));
        if (!hosts[i]) return jp_error_set(w->err, JP_ERR_NOMEM, 0, "out of memory listing runs");
    }
    run->files = names;
    run->hosts = hosts;
    return JP_OK;
}

/* The hosts of summaries whose host has no file in the run, by name. */
static int set_summarized(walk *w, jp_run *run, name_list *summaries) {
    if (summaries->count > 1) qsort(summaries->items, summaries->count, sizeof *summaries->items, by_name);
    const char **names = jp_arena_alloc(w->arena, (summaries->count ? summaries->count : 1) * sizeof *names);
    if (!names) return jp_error_set(w->err, JP_ERR_NOMEM, 0, "out of memory listing runs");
    run->summarized = names;
    for (size_t i = 0; i < summaries->count; i++) {
        size_t len = jp_summary_host_len(summaries->items[i]);
        int has_file = 0;
        for (uint32_t k = 0; !has_file && k < run->n_files; k++)
            has_file = strlen(run->hosts[k]) == len && memcmp(run->hosts[k], summaries->items[i], len) == 0;
        if (has_file) continue;
        summaries->items[i][len] = '\0'; /* the arena copy, cut to its host */
        names[run->n_summarized++] = summaries->items[i];
    }
    return JP_OK;
}

static int record_run(walk *w, size_t path_len, const jp_run *stats, name_list *files, name_list *summaries) {
    jp_run run = *stats;
    run.path = jp_arena_strndup(w->arena, w->path, path_len);
    if (!run.path) return jp_error_set(w->err, JP_ERR_NOMEM, 0, "out of memory listing runs");
    const char *slash = strrchr(run.path, '/');
    run.name = slash && slash[1] ? slash + 1 : run.path;
    int rc = set_hosts(w, &run, files);
    if (rc == JP_OK) rc = set_summarized(w, &run, summaries);
    return rc ? rc : push_run(w, &run);
}

/* Visits w->path (length path_len): records it if it holds xplane files (else Chrome traces, else
 * host summaries), then descends into its subdirectories. Directories that cannot be opened below
 * the top are skipped, not fatal. */
static int visit(walk *w, size_t path_len, int depth) {
    DIR *dir = opendir(w->path);
    if (!dir) {
        if (depth > 0) return JP_OK;
        return jp_error_set(w->err, errno == ENOENT ? JP_ERR_NOT_FOUND : JP_ERR_IO, 0,
                            "%s: cannot open directory: %s", w->path,
                            errno == ELOOP ? "too many levels of symbolic links" : strerror(errno));
    }
    /* the xplane files; the Chrome traces, for a run of them alone; the host summaries, for a
     * run of them alone (a pod's summaries copied to one place) */
    jp_run here = {0}, traced = {0}, summed = {0};
    name_list files = {0}, traces = {0}, summaries = {0};
    int rc = JP_OK;
    struct dirent *de;
    while (rc == JP_OK && (de = readdir(dir)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        struct stat st;
        if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        int reg = S_ISREG(st.st_mode), xplane = reg && jp_xplane_host_len(de->d_name);
        int trace = reg && !xplane && jp_trace_json_host_len(de->d_name), summary = reg && jp_summary_host_len(de->d_name);
        if (xplane || trace || summary) {
            jp_run *r = xplane ? &here : trace ? &traced : &summed;
            rc = add_name(w, xplane ? &files : trace ? &traces : &summaries, de->d_name);
            r->n_files += !summary;
            r->bytes += (uint64_t)st.st_size;
            if (mtime_ns(&st) > r->mtime_ns) r->mtime_ns = mtime_ns(&st);
        } else if (S_ISDIR(st.st_mode) && depth < MAX_DEPTH) {
            size_t name_len = strlen(de->d_name);
            if (path_len + 1 + name_len >= PATH_CAP) {
                rc = jp_error_set(w->err, JP_ERR_LIMIT, 0, "%s/%s: path too long", w->path, de->d_name);
                break;
            }
            w->path[path_len] = '/';
            memcpy(w->path + path_len + 1, de->d_name, name_len + 1);
            rc = visit(w, path_len + 1 + name_len, depth + 1);
            w->path[path_len] = '\0';
        }
    }
    closedir(dir);
    if (rc == JP_OK && here.n_files > 0) rc = record_run(w, path_len, &here, &files, &summaries);
    else if (rc == JP_OK && traced.n_files > 0) rc = record_run(w, path_len, &traced, &traces, &summaries);
    else if (rc == JP_OK && summaries.count > 0) rc = record_run(w, path_len, &summed, &files, &summaries);
    free(files.items);
    free(traces.items);
    free(summaries.items);
    return rc;
}

static int by_time_then_path(const void *pa, const void *pb) {
    const jp_run *a = pa, *b = pb;
    if (a->mtime_ns != b->mtime_ns) return a->mtime_ns < b->mtime_ns ? -1 : 1;
    return strcmp(a->path, b->path);
}

int jp_runs_find(jp_runs *out, const char *log_dir, jp_error *err) {
    jp_arena_init(&out->arena, 0);
    out->runs = NULL;
    out->count = 0;
    jp_error_clear(err);
    if (!log_dir || !*log_dir) return jp_error_set(err, JP_ERR_ARG, 0, "empty log directory");

    walk *w = calloc(1, sizeof *w);
    if (!w) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory listing runs");
    w->arena = &out->arena;
    w->err = err;
    size_t len = strlen(log_dir);
    while (len > 1 && log_dir[len - 1] == '/') len--; /* "logs/" and "logs" name the same runs */
    int rc;
    if (len >= PATH_CAP) {
        rc = jp_error_set(err, JP_ERR_LIMIT, 0, "%s: path too long", log_dir);
    } else {
        memcpy(w->path, log_dir, len);
        w->path[len] = '\0';
        rc = visit(w, len, 0);
    }
    if (rc == JP_OK && w->found.count > 0) {
        qsort(w->found.items, w->found.count, sizeof(jp_run), by_time_then_path);
        out->runs = jp_arena_alloc(&out->arena, w->found.count * sizeof(jp_run));
        if (out->runs) {
            memcpy(out->runs, w->found.items, w->found.count * sizeof(jp_run));
            out->count = w->found.count;
        } else {
            rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory listing runs");
        }
    }
    free(w->found.items);
    free(w);
    if (rc != JP_OK) jp_runs_deinit(out);
    return rc;
}

void jp_runs_deinit(jp_runs *runs) {
    jp_arena_deinit(&runs->arena);
    runs->runs = NULL;
    runs->count = 0;
}

const jp_run *jp_runs_latest_view(const jp_runs *runs) {
    return runs->count ? &runs->runs[runs->count - 1] : NULL;
}
