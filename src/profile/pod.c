/* pod.c - a run read from its hosts' summaries (jp_load_options.use_summaries): each host's summary
 * where it has a valid, current one, its file otherwise, then the same cross-host merge as a run
 * read whole (jp_hosts_merge), so clocks, stragglers and per-host steps come out the same. What
 * only the raw events give (the merged op tables, scopes, timeline) stays empty: the analysis says
 * how many hosts came from summaries (jp_analysis.n_summarized). docs/design.md "Pods". */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyses/analyses.h"
#include "base/error.h"
#include "find/runs.h"
#include "pod/summary.h"
#include "profile/profile.h"

typedef struct pod_host {
    const char *name;  /* arena */
    const char *file;  /* the capture file (an entry of files), NULL when there is none */
    char *summary;     /* heap path of its summary, NULL when there is none */
} pod_host;

typedef struct pod {
    jp_profile *p;
    jp_arena *arena;
    const char *dir;   /* the run directory */
    jp_vec hosts;      /* pod_host */
    jp_vec warnings;   /* const char * (arena) */
    const jp_load_options *opt;
} pod;

static pod_host *host_named(pod *pd, const char *name, size_t len) {
    for (size_t i = 0; i < pd->hosts.n; i++) {
        pod_host *h = &JP_VEC_AT(&pd->hosts, pod_host, i);
        if (strlen(h->name) == len && memcmp(h->name, name, len) == 0) return h;
    }
    pod_host *h = jp_vec_push(&pd->hosts, sizeof *h);
    if (h) *h = (pod_host){.name = jp_arena_strndup(pd->arena, name, len)};
    return h && h->name ? h : NULL;
}

static int add_summary(void *ctx, const char *name, const struct stat *st) {
    (void)st;
    pod *pd = ctx;
    size_t len = jp_summary_host_len(name);
    if (!len) return JP_OK;
    pod_host *h = host_named(pd, name, len);
    size_t n = strlen(pd->dir) + strlen(name) + 2;
    if (!h || !(h->summary = malloc(n))) return JP_ERR_NOMEM;
    snprintf(h->summary, n, "%s/%s", pd->dir, name);
    return JP_OK;
}

/* Hosts in the order a run read whole has them: by their capture file's name ("<host>.xplane.pb"). */
static int by_file_name(const void *x, const void *y) {
    const pod_host *a = x, *b = y;
    size_t n = strlen(a->name), m = strlen(b->name), k = n < m ? n : m;
    int c = memcmp(a->name, b->name, k);
    if (c || n == m) return c;
    return n < m ? (unsigned char)'.' - (unsigned char)b->name[k] : (unsigned char)a->name[k] - (unsigned char)'.';
}

static void warn(pod *pd, const char *text) {
    const char **w = jp_vec_push(&pd->warnings, sizeof *w);
    if (w) *w = text ? text : "out of memory";
}

static uint64_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The host's summary when it is valid, of this host and of its file as it is now; else NULL and
 * a warning saying why (the caller reads the file). */
static int read_summary(pod *pd, const pod_host *h, jp_host_summary *s) {
    jp_error e;
    int rc = jp_summary_read(pd->arena, h->summary, s, &e);
    const char *instead = h->file ? "; its file is read instead" : "; the host has no capture file here and is left out";
    if (rc == JP_ERR_NOMEM) return rc;
    if (rc) warn(pd, jp_analysis_printf(pd->arena, "%s%s", e.msg, instead));
    else if (strcmp(s->in.name, h->name) != 0)
        warn(pd, jp_analysis_printf(pd->arena, "%s: the summary is of host %s, not %s%s", h->summary, s->in.name, h->name,
                                    instead)), rc = JP_ERR_CORRUPT;
    else if (h->file && strcmp(s->file, base_name(h->file)) == 0 && file_size(h->file) != s->file_bytes)
        warn(pd, jp_analysis_printf(pd->arena, "%s: older than %s (which has changed since it was summarised)%s",
                                    h->summary, h->file, instead)), rc = JP_ERR_CORRUPT;
    return rc;
}

/* The host read from its file and summarised in memory, as `jaxprof summarize` would. */
static int summarise_file(pod *pd, const pod_host *h, jp_host_summary *s, jp_error *err) {
    jp_load_options one = pd->opt ? *pd->opt : (jp_load_options){0};
    one.use_summaries = 0, one.host = NULL, one.has_steps = 0;
    jp_profile *sub;
    int rc = jp_profile_load(&sub, h->file, &one, err);
    if (rc) return rc;
    rc = jp_summary_of(jp_profile_analysis(sub), base_name(h->file), file_size(h->file), pd->arena, s, err);
    jp_profile_adopt(pd->p, sub);
    return rc;
}

/* Every op's device from its summary's own list to the run's (the summaries' lists one after the
 * other, in host order), as in a run read whole. */
static int join_devices(pod *pd, jp_host_summary *s, size_t n, jp_analysis *a) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += s[i].n_devices;
    jp_device *d = jp_arena_alloc(pd->arena, (total ? total : 1) * sizeof *d);
    if (!d) return JP_ERR_NOMEM;
    a->devices = d;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < s[i].in.n_ops; k++) s[i].in.ops[k].device += (uint32_t)a->n_devices;
        for (size_t k = 0; k < s[i].n_devices; k++) {
            d[a->n_devices] = s[i].devices[k];
            d[a->n_devices++].host = s[i].in.name;
        }
    }
    double busy = 0, window = 0; /* sums over any number of hosts: in double, and op_busy_ps saturates */
    for (size_t k = 0; k < a->n_devices; k++) {
        if (__builtin_add_overflow(a->op_busy_ps, d[k].busy_ps, &a->op_busy_ps)) a->op_busy_ps = INT64_MAX;
        if (d[k].busy_ps > 0) busy += (double)d[k].busy_ps, window += (double)(d[k].last_ps - d[k].first_ps);
    }
    a->device_idle_pct = window > 0 ? 100.0 * (window - busy) / window : 0;
    return JP_OK;
}

/* The devices' activity and the span on the shared axis, as a run read whole has them: every host's
 * times moved by its offset. */
static void place_on_axis(const jp_host_summary *s, size_t n, jp_analysis *a) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0, d = 0; i < n; i++) {
        int64_t offset = a->n_host_stats ? a->host_stats[i].offset_ps : 0;
        for (size_t k = 0; k < s[i].n_devices; k++, d++)
            if (a->devices[d].busy_ps > 0 || a->devices[d].last_ps) a->devices[d].first_ps += offset, a->devices[d].last_ps += offset;
        if (s[i].first_ps + offset < lo) lo = s[i].first_ps + offset;
        if (s[i].first_ps + s[i].span_ps + offset > hi) hi = s[i].first_ps + s[i].span_ps + offset;
    }
    a->first_ps = n ? lo : 0;
    a->span_ps = n ? hi - lo : 0;
}

/* The hosts' findings, each rule once: the first host (in host order) among the most severe that
 * raised it speaks for all, its title saying on how many hosts it was found. */
static int join_findings(pod *pd, const jp_host_summary *s, size_t n, jp_analysis *a) {
    for (int sev = JP_RATING_ABOVE_PEAK; sev >= JP_RATING_GOOD; sev--)
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < s[i].n_findings; k++) {
                const jp_finding *f = &s[i].findings[k];
                int seen = f->severity != sev;
                for (size_t j = 0; !seen && j < a->n_findings; j++) seen = strcmp(a->findings[j].id, f->id) == 0;
                if (seen || a->n_findings == JP_FINDINGS_MAX) continue;
                size_t on = 0;
                for (size_t h = 0; h < n; h++)
                    for (size_t q = 0; q < s[h].n_findings; q++) on += strcmp(s[h].findings[q].id, f->id) == 0;
                jp_finding g = *f;
                g.title = jp_analysis_printf(pd->arena, "%s (%zu of %zu hosts)", f->title, on, n);
                g.evidence = jp_analysis_printf(pd->arena, "%s: %s", s[i].in.name, f->evidence);
                if (!g.title || !g.evidence) return JP_ERR_NOMEM;
                a->findings[a->n_findings++] = g;
            }
    return JP_OK;
}

static int join_health(pod *pd, const jp_host_summary *s, size_t n, jp_analysis *a) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += s[i].n_health;
    jp_health *h = jp_arena_alloc(pd->arena, (total ? total : 1) * sizeof *h);
    if (!h) return JP_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < s[i].n_health; k++) h[a->n_health++] = s[i].health[k];
    a->health = h;
    return JP_OK;
}

/* The analysis of the hosts side by side, from their summaries. */
static int merge(pod *pd, jp_host_summary *s, size_t n, size_t n_summarized, jp_error *err) {
    jp_analysis *a = jp_profile_results(pd->p);
    jp_host_input *in = malloc((n ? n : 1) * sizeof *in);
    const char **names = jp_arena_alloc(pd->arena, (n ? n : 1) * sizeof *names);
    int64_t *start_ns = jp_arena_alloc(pd->arena, (n ? n : 1) * sizeof *start_ns);
    int rc = in && names && start_ns ? JP_OK : JP_ERR_NOMEM;
    double step_total = 0;
    for (size_t i = 0; rc == JP_OK && i < n; i++) {
        in[i] = s[i].in, names[i] = s[i].in.name, start_ns[i] = s[i].in.start_ns;
        a->n_events += s[i].n_events;
        step_total += (double)s[i].in.step_summary.total_ps / (double)n; /* the mean host's */
        if (s[i].platform != JP_PLATFORM_CPU) a->platform = s[i].platform;
    }
    a->hosts = names, a->n_hosts = n, a->host_start_ns = start_ns, a->n_summarized = n_summarized;
    if (rc == JP_OK) rc = join_devices(pd, s, n, a);
    if (rc == JP_OK) rc = jp_hosts_merge(in, n, pd->arena, a);
    if (rc == JP_OK) place_on_axis(s, n, a);
    if (rc == JP_OK) rc = jp_findings_hosts_analyze(pd->arena, a, step_total);
    if (rc == JP_OK) rc = join_findings(pd, s, n, a);
    if (rc == JP_OK) rc = join_health(pd, s, n, a);
    a->warnings = jp_analysis_copy(pd->arena, &pd->warnings, sizeof(const char *));
    a->n_warnings = pd->warnings.n;
    a->step_summary.method = "none";
    a->mfu_pct = -1, a->device_util_pct = -1;
    free(in);
    return rc ? jp_error_set(err, rc, 0, "merging the hosts: %s", jp_status_str(rc)) : JP_OK;
}

int jp_pod_from_summaries(jp_profile **out, jp_host_summary *s, size_t n, const char *path, jp_error *err) {
    *out = NULL;
    pod pd = {.p = jp_profile_empty(), .dir = path};
    if (!pd.p) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    pd.arena = jp_profile_arena(pd.p);
    int rc = merge(&pd, s, n, n, err);
    const char *kept = rc ? NULL : jp_arena_strndup(pd.arena, path, strlen(path));
    if (!rc && !kept) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    if (rc) jp_profile_free(pd.p);
    else jp_profile_results(pd.p)->path = kept, *out = pd.p;
    return rc;
}

/* Each host (those --host keeps) from its summary, else from its file. */
static int read_hosts(pod *pd, jp_error *err) {
    size_t n = 0, n_summarized = 0;
    jp_host_summary *s = calloc(pd->hosts.n ? pd->hosts.n : 1, sizeof *s);
    int rc = s ? JP_OK : jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    const char *only = pd->opt && pd->opt->host && *pd->opt->host ? pd->opt->host : NULL;
    for (size_t i = 0; rc == JP_OK && i < pd->hosts.n; i++) {
        const pod_host *h = &JP_VEC_AT(&pd->hosts, pod_host, i);
        if (only && !strstr(h->name, only)) continue;
        int bad = h->summary ? read_summary(pd, h, &s[n]) : JP_ERR_NOT_FOUND;
        if (bad == JP_ERR_NOMEM) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
        else if (!bad) n++, n_summarized++;
        else if (h->file && (rc = summarise_file(pd, h, &s[n], err)) == JP_OK) n++;
    }
    if (rc == JP_OK && !n)
        rc = jp_error_set(err, JP_ERR_NOT_FOUND, 0, "%s: no host %s%s has a readable summary or capture file", pd->dir,
                          only ? "matching " : "", only ? only : "");
    if (rc == JP_OK) rc = merge(pd, s, n, n_summarized, err);
    free(s);
    return rc;
}

/* The run directory path names and its capture files (jp_profile_run_dir); none for a file. */
static int find_run(const char *path, jp_vec *files, char **dir, jp_error *err) {
    struct stat st;
    *dir = NULL;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return JP_OK; /* a file: no summaries */
    jp_error e;
    int rc = jp_profile_files(path, files, &e);
    if (rc && rc != JP_ERR_NOT_FOUND) return jp_error_set(err, rc, e.offset, "%s", e.msg);
    *dir = jp_profile_run_dir(path, files);
    return *dir ? JP_OK : jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
}

static int list_hosts(pod *pd, const jp_vec *files, jp_error *err) {
    for (size_t i = 0; i < files->n; i++) {
        const char *file = JP_VEC_AT(files, jp_profile_file, i).path;
        const char *name = jp_profile_host_of(pd->arena, file);
        pod_host *h = name ? host_named(pd, name, strlen(name)) : NULL;
        if (!h) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
        h->file = file;
    }
    int rc = jp_run_dir_each(pd->dir, add_summary, pd, err);
    if (rc == JP_ERR_NOMEM) rc = jp_error_set(err, rc, 0, "out of memory");
    if (pd->hosts.n > 1) qsort(pd->hosts.data, pd->hosts.n, sizeof(pod_host), by_file_name);
    return rc;
}

static int has_summary(const pod *pd) {
    for (size_t i = 0; i < pd->hosts.n; i++)
        if (JP_VEC_AT(&pd->hosts, pod_host, i).summary) return 1;
    return 0;
}

int jp_pod_load(jp_profile **out, const char *path, const jp_load_options *opt, jp_error *err) {
    *out = NULL;
    jp_vec files = {0};
    char *dir;
    int rc = find_run(path, &files, &dir, err);
    pod pd = {.p = dir ? jp_profile_empty() : NULL, .dir = dir, .opt = opt};
    if (rc == JP_OK && dir && !pd.p) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    if (rc == JP_OK && pd.p) {
        pd.arena = jp_profile_arena(pd.p);
        rc = list_hosts(&pd, &files, err);
    }
    int pod_run = rc == JP_OK && pd.p && has_summary(&pd);
    if (pod_run) rc = read_hosts(&pd, err);
    if (pod_run && rc == JP_OK && !(jp_profile_results(pd.p)->path = jp_arena_strndup(pd.arena, dir, strlen(dir))))
        rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    for (size_t i = 0; i < pd.hosts.n; i++) free(JP_VEC_AT(&pd.hosts, pod_host, i).summary);
    jp_vec_free(&pd.hosts);
    jp_vec_free(&pd.warnings);
    jp_profile_files_free(&files);
    free(dir);
    if (pod_run && rc == JP_OK) *out = pd.p;
    else jp_profile_free(pd.p);
    return rc;
}

size_t jp_pod_summary_only(const char *run_dir) {
    jp_vec files = {0};
    char *dir;
    jp_error err;
    jp_profile *p = NULL;
    int rc = find_run(run_dir, &files, &dir, &err);
    pod pd = {.p = rc == JP_OK && dir ? (p = jp_profile_empty()) : NULL, .dir = dir};
    size_t n = 0;
    if (pd.p) {
        pd.arena = jp_profile_arena(pd.p);
        if (list_hosts(&pd, &files, &err) == JP_OK)
            for (size_t i = 0; i < pd.hosts.n; i++) n += JP_VEC_AT(&pd.hosts, pod_host, i).summary && !JP_VEC_AT(&pd.hosts, pod_host, i).file;
    }
    for (size_t i = 0; i < pd.hosts.n; i++) free(JP_VEC_AT(&pd.hosts, pod_host, i).summary);
    jp_vec_free(&pd.hosts);
    jp_profile_files_free(&files);
    free(dir);
    jp_profile_free(p);
    return n;
}
