/* summarize.c - jp_summarize: each host file of a profile path read alone and its summary written
 * beside it, as every process of a jax.distributed job does after its capture (docs/design.md
 * "Pods"). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/outfile.h"
#include "pod/summary.h"
#include "profile/profile.h"

typedef struct summary_job {
    const jp_analysis *a;
    const char *file;     /* base name of the capture */
    uint64_t file_bytes;
} summary_job;

static int write_job(const void *obj, FILE *out, jp_error *err) {
    const summary_job *j = obj;
    return jp_summary_write(j->a, j->file, j->file_bytes, out, err);
}

/* "<dir>/<host>.jaxprof-summary.json" for the capture file at path (malloc'd), or NULL. */
static char *beside(const char *path, const char *host) {
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) + 1 : 0, n = dir + strlen(host) + sizeof JP_SUMMARY_SUFFIX;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%.*s%s%s", (int)dir, path, host, JP_SUMMARY_SUFFIX);
    return out;
}

static int summarize_file(const char *path, const char *out_path, const jp_load_options *opt, const jp_temp_hook *hook,
                          void (*on_written)(void *, const char *), void *ctx, jp_error *err) {
    jp_load_options one = opt ? *opt : (jp_load_options){0};
    one.use_summaries = 0, one.host = NULL, one.has_steps = 0;
    jp_profile *p;
    int rc = jp_profile_load(&p, path, &one, err);
    if (rc) return rc;
    const jp_analysis *a = jp_profile_analysis(p);
    struct stat st;
    const char *slash = strrchr(path, '/');
    summary_job job = {a, slash ? slash + 1 : path, stat(path, &st) == 0 ? (uint64_t)st.st_size : 0};
    char *own = out_path ? NULL : beside(path, a->n_hosts ? a->hosts[0] : "host");
    if (!out_path && !own) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    const char *dest = out_path ? out_path : own;
    if (rc == JP_OK) rc = jp_outfile_write(dest, hook, write_job, &job, err);
    if (rc == JP_OK && on_written) on_written(ctx, dest);
    free(own);
    jp_profile_free(p);
    return rc;
}

int jp_summarize(const char *path, const char *out_path, const jp_load_options *opt, const jp_temp_hook *hook,
                 void (*on_written)(void *ctx, const char *written), void *ctx, jp_error *err) {
    jp_error_clear(err);
    jp_vec files = {0};
    int rc = jp_profile_files(path, &files, err);
    if (rc == JP_OK && out_path && files.n > 1)
        rc = jp_error_set(err, JP_ERR_ARG, 0, "%s holds %zu host files: -o names one summary; leave it out to write each "
                          "beside its file", path, files.n);
    for (size_t i = 0; rc == JP_OK && i < files.n; i++) {
        const char *file = JP_VEC_AT(&files, jp_profile_file, i).path;
        if (opt && opt->host && *opt->host && !strstr(file, opt->host)) continue;
        rc = summarize_file(file, out_path, opt, hook, on_written, ctx, err);
    }
    jp_profile_files_free(&files);
    return rc;
}
