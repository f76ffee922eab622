/* files.c - which host files a profile path names (a file, a run directory, a log directory's
 * newest run), opening them, and the stamp and output checks built on that list. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/arena.h"
#include "base/error.h"
#include "find/runs.h"
#include "profile/profile.h"
#include "profile/testfault.h"

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

int jp_profile_file_open(const jp_profile_file *f, int lazy, uint64_t max_inflate, jp_xspace **out, jp_error *err) {
    return jp_xspace_open_listed(out, f->path, f->listed ? &f->id : NULL, lazy, max_inflate, err);
}

/* A run directory being listed into files. */
typedef struct run_listing {
    const char *dir; /* the run directory */
    jp_vec *files;   /* jp_profile_file */
    jp_error *err;
} run_listing;

static int add_listed(void *ctx, const char *name, const struct stat *st) {
    run_listing *l = ctx;
    return jp_xplane_host_len(name) ? add_file(l->files, l->dir, name, st, l->err) : JP_OK;
}

static int add_listed_trace(void *ctx, const char *name, const struct stat *st) {
    run_listing *l = ctx;
    return jp_trace_json_host_len(name) ? add_file(l->files, l->dir, name, st, l->err) : JP_OK;
}

/* The xplane files directly inside dir, sorted by name (one per host), as jp_runs_find counts
 * them; where there is none, its Chrome traces (a capture kept as JSON alone). */
static int list_run_files(const char *dir, jp_vec *files, jp_error *err) {
    run_listing l = {dir, files, err};
    int rc = jp_run_dir_each(dir, add_listed, &l, err);
    if (rc == JP_OK && !files->n) rc = jp_run_dir_each(dir, add_listed_trace, &l, err);
    if (files->n > 1) qsort(files->data, files->n, sizeof(jp_profile_file), cmp_path);
    return rc;
}

/* PATH is a file, a run directory, or a log directory whose newest run is meant. */
int jp_profile_files(const char *path, jp_vec *files, jp_error *err) {
    struct stat st;
    int fault = jp_test_fault(path, err); /* test-only: JAXPROF_TEST_FAULT (testfault.h) */
    if (fault) return fault;
    if (stat(path, &st) != 0) /* say why: a loop of links, a denied directory, ... are not "no such file" */
        return errno == ENOENT || errno == ENOTDIR
                   ? jp_error_set(err, JP_ERR_NOT_FOUND, 0, "%s: no such file or directory", path)
                   : jp_error_set(err, JP_ERR_IO, 0, "%s: cannot open: %s", path,
                                  errno == ELOOP ? "too many levels of symbolic links" : strerror(errno));
    if (!S_ISDIR(st.st_mode)) return add_file(files, NULL, path, NULL, err);
    int rc = list_run_files(path, files, err);
    if (rc || files->n) return rc;
    jp_runs runs;
    rc = jp_runs_find(&runs, path, err);
    const jp_run *latest = rc == JP_OK ? jp_runs_latest_view(&runs) : NULL;
    if (rc == JP_OK && !latest) rc = jp_error_set(err, JP_ERR_NOT_FOUND, 0, "%s: no *.xplane.pb profile found", path);
    if (latest && !latest->n_files) /* a pod's summaries alone: what reads them says so (pod.c) */
        rc = jp_error_set(err, JP_ERR_NOT_FOUND, 0, "%s: holds host summaries alone, no *.xplane.pb: they give the hosts "
                          "side by side and the findings (report, hosts, findings, the viewer's Overview); this "
                          "needs the capture files", latest->path);
    else if (latest) rc = list_run_files(latest->path, files, err);
    if (latest && rc == JP_OK && !files->n) /* its files went away (or became links) since it was found */
        rc = jp_error_set(err, JP_ERR_NOT_FOUND, 0, "%s: no *.xplane.pb profile found", latest->path);
    jp_runs_deinit(&runs);
    return rc;
}

char *jp_profile_run_dir(const char *path, const jp_vec *files) {
    jp_runs runs = {0};
    jp_error err;
    const jp_run *latest = !files->n && jp_runs_find(&runs, path, &err) == JP_OK ? jp_runs_latest_view(&runs) : NULL;
    const char *first = files->n ? JP_VEC_AT(files, jp_profile_file, 0).path : latest ? latest->path : path;
    const char *slash = files->n ? strrchr(first, '/') : NULL;
    size_t len = slash ? (size_t)(slash - first) : strlen(first);
    char *dir = malloc(len + 1);
    if (dir) memcpy(dir, first, len), dir[len] = '\0';
    jp_runs_deinit(&runs);
    return dir;
}

const char *jp_profile_host_of(jp_arena *a, const char *file) {
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t n = jp_xplane_host_len(base);
    if (!n) n = jp_trace_json_host_len(base);
    return jp_arena_strndup(a, base, n ? n : strlen(base));
}

/* One step of FNV-1a over the 8 bytes of v. */
static uint64_t stamp_mix(uint64_t h, uint64_t v) {
    for (int i = 0; i < 8; i++, v >>= 8) h = (h ^ (v & 0xff)) * 0x100000001b3ull;
    return h;
}

/* The stamp of one file: its identity, size and times, mixed onto h (i its place in the run). */
static uint64_t stamp_file(uint64_t h, uint64_t i, const struct stat *st) {
    const uint64_t parts[] = {i, (uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
                              (uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec,
                              (uint64_t)st->st_ctim.tv_sec, (uint64_t)st->st_ctim.tv_nsec};
    for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) h = stamp_mix(h, parts[k]);
    return h;
}

/* Adds each host summary's stamp to *ctx: a sum, so the directory's order does not matter. */
static int stamp_summary(void *ctx, const char *name, const struct stat *st) {
    if (jp_summary_host_len(name)) *(uint64_t *)ctx += stamp_file(0xcbf29ce484222325ull, 0, st) | 1;
    return JP_OK;
}

int jp_profile_stamp(const char *path, uint64_t *out, jp_error *err) {
    jp_error_clear(err);
    jp_vec files = {0};
    int rc = jp_profile_files(path, &files, err);
    uint64_t h = 0xcbf29ce484222325ull, summaries = 0;
    for (size_t i = 0; rc == JP_OK && i < files.n; i++) {
        const jp_profile_file *f = &JP_VEC_AT(&files, jp_profile_file, i);
        struct stat st;
        if ((f->listed ? lstat(f->path, &st) : stat(f->path, &st)) != 0) continue; /* gone: the stamp changes */
        h = stamp_file(h, i, &st);
    }
    /* the run's summaries count too: a pod's run is read from them (and holds nothing else when
     * they were copied to one place alone) */
    struct stat st;
    char *dir = (rc == JP_OK || rc == JP_ERR_NOT_FOUND) && stat(path, &st) == 0 && S_ISDIR(st.st_mode)
                    ? jp_profile_run_dir(path, &files)
                    : NULL;
    jp_error ignored;
    if (dir && jp_run_dir_each(dir, stamp_summary, &summaries, &ignored) == JP_OK && summaries && !files.n)
        rc = JP_OK, jp_error_clear(err);
    free(dir);
    *out = stamp_mix(stamp_mix(h, files.n), summaries);
    jp_profile_files_free(&files);
    return rc;
}

/* The directory part of path ("." when none) and stat(2) of it; 0 on success. */
static int stat_dir_of(const char *path, struct stat *st) {
    const char *slash = strrchr(path, '/');
    char dir[4096];
    int n = !slash ? snprintf(dir, sizeof dir, ".") : snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    return n > 0 && (size_t)n < sizeof dir ? stat(dir, st) : -1;
}

/* 1 when out_path is named like a host file (*.xplane.pb[.gz]) and sits in the directory of the
 * input file `file`: the next load of the run would read it as one more host. */
static int joins_the_run(const char *out_path, const char *file) {
    const char *base = strrchr(out_path, '/');
    struct stat od, id;
    if (!jp_xplane_host_len(base ? base + 1 : out_path)) return 0;
    return stat_dir_of(out_path, &od) == 0 && stat_dir_of(file, &id) == 0 && od.st_dev == id.st_dev &&
           od.st_ino == id.st_ino;
}

int jp_profile_output_check(const char *path, const char *out_path, jp_error *err) {
    jp_error_clear(err);
    struct stat out, in;
    int exists = stat(out_path, &out) == 0;
    jp_vec files = {0};
    int rc = jp_profile_files(path, &files, err);
    for (size_t i = 0; rc == JP_OK && exists && i < files.n; i++) {
        const char *file = JP_VEC_AT(&files, jp_profile_file, i).path;
        if (stat(file, &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
            rc = jp_error_set(err, JP_ERR_ARG, 0, "%s: the output would overwrite the input %s; write elsewhere",
                              out_path, file);
    }
    for (size_t i = 0; rc == JP_OK && i < files.n; i++) { /* only a run directory is read whole again */
        const jp_profile_file *f = &JP_VEC_AT(&files, jp_profile_file, i);
        if (f->listed && joins_the_run(out_path, f->path))
            rc = jp_error_set(err, JP_ERR_ARG, 0,
                              "%s: the output would become part of the profile it is made from (a host file in the "
                              "run directory of %s); write elsewhere", out_path, f->path);
    }
    if (rc == JP_ERR_NOT_FOUND) rc = JP_OK, jp_error_clear(err); /* no input: the load will say so */
    jp_profile_files_free(&files);
    return rc;
}
