/* viewer.c - jp_viewer_*: the built-in viewer's JSON API: routes requests, maps opaque run ids to
 * runs found under the log directory, keeps the last few decoded runs in an LRU cache, and compares
 * two of them with the diff engine. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "render/charts.h"
#include "timeline/timeline.h"
#include "serve/assets.h"
#include "jaxprof/jaxprof_serve.h"
#include "profile/profile.h"

enum {
    CACHE_SLOTS = 4,       /* decoded runs kept */
    REL_MAX = 4096,        /* bytes of a run path relative to the log directory */
    PARAM_MAX = 256,       /* bytes of one decoded query value */
    MODULE_MAX = 16384,    /* a ?module= name: jit_<function __name__>(id) has no length limit of its own */
    DEFAULT_PX = 1000,     /* timeline width when ?px= is absent */
    MAX_PX = 1000000,      /* widest timeline asked for */
    TRACKS_MAX_BYTES = 16384, /* a ?tracks= list: the server takes no longer request head anyway */
    MAX_TRACKS = 1 << 20   /* track ids one ?tracks= may name */
};

_Static_assert(CACHE_SLOTS >= 2, "a diff pins one slot and must find another to load into");

/* Largest |time| in ms a query may name: keeps the conversion to ns far from overflow. */
#define TIME_MS_MAX 1e12

/* One decoded run: its analysis and, once asked for, its timeline. */
typedef struct cached {
    char *rel;             /* run path relative to the log directory (heap); NULL: free slot */
    char *host;            /* host filter ("" for every host) (heap) */
    char *steps;           /* step window as ?steps= gave it ("" for the whole run) (heap) */
    int pod;               /* 1: merged from the hosts' summaries (jp_load_options.use_summaries) */
    jp_profile *profile;   /* the analysis, or NULL until asked for */
    jp_timeline *timeline; /* the timeline index, or NULL until asked for */
    uint64_t stamp;        /* jp_profile_stamp of the run's files when it was loaded */
    uint64_t used;         /* tick of the last use, for LRU eviction */
    int pinned;            /* held by the request in progress (a diff's base): never evicted */
} cached;

/* The last diff answered, as its JSON bytes: the diff itself borrows strings from both analyses, so
 * keeping only its rendering leaves nothing that an eviction could leave dangling. */
typedef struct last_diff {
    char *base_rel;        /* base run path relative to the log directory (heap); NULL: none yet */
    char *new_rel;         /* new run path, likewise (heap) */
    char *host;            /* host filter ("" for every host) (heap) */
    uint64_t stamps[2];    /* jp_profile_stamp of base and new when diffed */
    char *json;            /* jp_diff_render's JSON (heap) */
    size_t len;            /* bytes of json */
} last_diff;

struct jp_viewer {
    char *log_dir;              /* as given, trailing slashes removed (heap) */
    jp_runs runs;               /* the runs found; refreshed by /api/runs and on unknown ids */
    cached cache[CACHE_SLOTS];  /* decoded runs */
    uint64_t tick;              /* counts cache uses */
    last_diff diff;             /* the last /api/diff answer */
    char *cpu_peaks_file;       /* jp_load_options.cpu_peaks_file for every analysis (heap), or NULL */
    uint64_t max_inflate;       /* jp_load_options.max_inflate for every run read, 0: the defaults */
};

/* What a run request names, once routed. */
typedef struct run_request {
    const jp_run *run;     /* the run, from v->runs */
    const char *rel;       /* its path relative to the log directory (inside run->path) */
    char host[PARAM_MAX];  /* ?host=, "" when absent */
    char steps[PARAM_MAX]; /* ?steps=N or A:B (jp_steps_parse), "" when absent */
    const char *what;      /* the section, "timeline" or "event" */
    const char *query;     /* the raw query string */
} run_request;

/* ---- responses -------------------------------------------------------------------------------- */

static int respond_json(jp_http_response *resp, int status, const char *body, size_t len) {
    return jp_http_respond_bytes(resp, status, "application/json", body, len, NULL);
}

static int respond_error(jp_http_response *resp, int status, const char *msg) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return jp_http_respond_status(resp, 500);
    fputs("{\"error\":", f);
    jp_json_fput_cstr(f, msg);
    fputs("}\n", f);
    int bad = fclose(f) != 0;
    int rc = bad ? jp_http_respond_status(resp, 500) : respond_json(resp, status, buf, len);
    free(buf);
    return rc;
}

/* A library error as an HTTP answer: 404 for what does not exist, 400 for bad arguments, else 500. */
static int respond_failure(jp_http_response *resp, const jp_error *err) {
    int status = err->code == JP_ERR_NOT_FOUND ? 404 : err->code == JP_ERR_ARG ? 400 : 500;
    return respond_error(resp, status, err->msg[0] ? err->msg : jp_status_str(err->code));
}

/* ---- the run list and ids ----------------------------------------------------------------------- */

/* The run's path relative to the log directory ("." for the directory itself). */
static const char *relative_path(const jp_viewer *v, const jp_run *run) {
    size_t n = strlen(v->log_dir);
    if (strncmp(run->path, v->log_dir, n) != 0) return run->path; /* jp_runs_find joins, so never */
    const char *rel = run->path + n;
    while (*rel == '/') rel++;
    return *rel ? rel : ".";
}

static void write_id(FILE *f, const char *rel) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)rel; *p; p++) fprintf(f, "%02x", *p);
    fputc('"', f);
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Decodes an id of n lowercase hex digits into out (cap bytes); 0, or -1 when it is not one. */
static int decode_id(const char *id, size_t n, char *out, size_t cap) {
    if (n == 0 || n % 2 || n / 2 >= cap) return -1;
    for (size_t i = 0; i < n; i += 2) {
        int hi = hex_digit(id[i]), lo = hex_digit(id[i + 1]);
        if (hi < 0 || lo < 0 || (hi | lo) == 0) return -1;
        out[i / 2] = (char)(hi * 16 + lo);
    }
    out[n / 2] = '\0';
    return 0;
}

static int refresh_runs(jp_viewer *v, jp_error *err) {
    jp_runs fresh;
    int rc = jp_runs_find(&fresh, v->log_dir, err);
    if (rc != JP_OK) return rc;
    jp_runs_deinit(&v->runs);
    v->runs = fresh;
    return JP_OK;
}

/* The listed run whose relative path is rel, or NULL. Only these are ever opened. */
static const jp_run *run_by_rel(const jp_viewer *v, const char *rel) {
    for (size_t i = 0; i < v->runs.count; i++)
        if (strcmp(relative_path(v, &v->runs.runs[i]), rel) == 0) return &v->runs.runs[i];
    return NULL;
}

static int serve_runs(jp_viewer *v, jp_http_response *resp) {
    jp_error err;
    if (refresh_runs(v, &err) != JP_OK) return respond_failure(resp, &err);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return jp_http_respond_status(resp, 500);
    fputc('[', f);
    for (size_t i = 0; i < v->runs.count; i++) {
        const jp_run *r = &v->runs.runs[i];
        const char *rel = relative_path(v, r);
        fputs(i ? ",{\"id\":" : "{\"id\":", f);
        write_id(f, rel);
        fputc(',', f);
        jp_run_write_json(f, r, rel, NULL); /* the schema `jaxprof list --json` writes */
        fputc('}', f);
    }
    fputs("]\n", f);
    int bad = fclose(f) != 0;
    int rc = bad ? jp_http_respond_status(resp, 500) : respond_json(resp, 200, buf, len);
    free(buf);
    return rc;
}

/* ---- query parameters ----------------------------------------------------------------------------- */

/* The percent-decoded value of key in query into out (cap bytes): 1 found, 0 absent, -1 malformed. */
static int query_param(const char *query, const char *key, char *out, size_t cap) {
    size_t key_len = strlen(key);
    for (const char *p = query; *p;) {
        size_t n = strcspn(p, "&");
        if (n > key_len && strncmp(p, key, key_len) == 0 && p[key_len] == '=') {
            size_t k = 0;
            for (size_t i = key_len + 1; i < n; i++) {
                int c = (unsigned char)p[i];
                if (c == '+') c = ' ';
                else if (c == '%') {
                    int hi = i + 2 < n ? hex_digit((char)(p[i + 1] | 0x20)) : -1;
                    int lo = hi >= 0 ? hex_digit((char)(p[i + 2] | 0x20)) : -1;
                    if (lo < 0) return -1;
                    c = hi * 16 + lo;
                    i += 2;
                }
                if (c < 0x20 || k + 1 >= cap) return -1;
                out[k++] = (char)c;
            }
            out[k] = '\0';
            return 1;
        }
        p += n + (p[n] == '&');
    }
    return 0;
}

/* A number parameter within [lo, hi]; *out keeps its default when absent. 0, or -1 when malformed. */
static int number_param(const char *query, const char *key, double lo, double hi, double *out) {
    char buf[64];
    int got = query_param(query, key, buf, sizeof buf);
    if (got <= 0) return got;
    char *end;
    double d = strtod(buf, &end);
    if (end == buf || *end || !isfinite(d) || d < lo || d > hi) return -1;
    *out = d;
    return 0;
}

/* ---- the cache -------------------------------------------------------------------------------------- */

static void slot_clear(cached *c) {
    jp_profile_free(c->profile);
    jp_timeline_free(c->timeline);
    free(c->rel);
    free(c->host);
    free(c->steps);
    memset(c, 0, sizeof *c);
}

/* Whether slot c is a better one to empty than pick: free beats used, unpinned beats pinned, then
 * the least recently used. */
static int better_victim(const cached *c, const cached *pick) {
    if (c->pinned != pick->pinned) return !c->pinned;
    if (!c->rel || !pick->rel) return !c->rel && pick->rel;
    return c->used < pick->used;
}

/* The slot of (rel, host, steps): the cached one, else a free or the least recently used one,
 * emptied. A pinned slot is never emptied: at most one is pinned at a time, so another slot is
 * always left. */
static cached *cache_slot(jp_viewer *v, const char *rel, const char *host, const char *steps, int pod) {
    cached *pick = &v->cache[0];
    for (size_t i = 0; i < CACHE_SLOTS; i++) {
        cached *c = &v->cache[i];
        if (c->rel && strcmp(c->rel, rel) == 0 && strcmp(c->host, host) == 0 && strcmp(c->steps, steps) == 0 &&
            c->pod == pod)
            return c;
        if (better_victim(c, pick)) pick = c;
    }
    assert(!pick->pinned);
    slot_clear(pick);
    pick->rel = strdup(rel);
    pick->host = strdup(host);
    pick->steps = strdup(steps);
    pick->pod = pod;
    if (!pick->rel || !pick->host || !pick->steps) slot_clear(pick);
    return pick;
}

/* The slot holding the run's analysis (loaded on first use; steps: "" or a jp_steps_parse range)
 * into *out; *hit tells whether it was cached. The slot stays valid until the next cache_slot
 * call unless it is pinned. */
static int cached_profile_as(jp_viewer *v, const char *rel, const jp_run *run, const char *host, const char *steps,
                             int pod, cached **out, int *hit, jp_error *err) {
    jp_load_options opt = {.host = host[0] ? host : NULL, .cpu_peaks_file = v->cpu_peaks_file, .has_steps = steps[0] != 0,
                           .op_spread = 1, /* the compare page's op noise */
                           .max_inflate = v->max_inflate, .use_summaries = pod};
    if (opt.has_steps && jp_steps_parse(steps, &opt.first_step, &opt.last_step, err) != JP_OK) return JP_ERR_ARG;
    uint64_t stamp;
    int rc = jp_profile_stamp(run->path, &stamp, err);
    if (rc != JP_OK) return rc;
    cached *c = cache_slot(v, rel, host, steps, pod);
    if (!c->rel) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    c->used = ++v->tick;
    if (c->profile && c->stamp != stamp) { /* its files changed since: what is cached is stale */
        jp_profile_free(c->profile);
        jp_timeline_free(c->timeline);
        c->profile = NULL;
        c->timeline = NULL;
    }
    *hit = c->profile != NULL;
    if (!c->profile) {
        if ((rc = jp_profile_load(&c->profile, run->path, &opt, err)) != JP_OK) return rc;
        c->stamp = stamp; /* taken before the load: a change during it shows next time */
    }
    *out = c;
    return JP_OK;
}

/* The run's analysis from its files (every page but the summaries' own). */
static int cached_profile(jp_viewer *v, const char *rel, const jp_run *run, const char *host, const char *steps,
                          cached **out, int *hit, jp_error *err) {
    return cached_profile_as(v, rel, run, host, steps, 0, out, hit, err);
}

/* The run's timeline index (built on first use) into *out; *hit tells whether it was cached. One
 * index covers every host: ?host= filters each window instead, so track ids stay the same when the
 * viewer switches hosts and "all hosts" costs no second index. It is built from the whole run's
 * analysis in the same slot (the overview's, usually loaded already), for the Steps rows. */
static int cached_timeline(jp_viewer *v, const run_request *r, jp_timeline **out, int *hit, jp_error *err) {
    cached *c = NULL;
    int rc = cached_profile(v, r->rel, r->run, "", "", &c, hit, err);
    if (rc != JP_OK) return rc;
    *hit = c->timeline != NULL;
    if (!c->timeline && (rc = jp_timeline_new(&c->timeline, r->run->path, NULL, v->max_inflate,
                                               jp_profile_analysis(c->profile), err)) != JP_OK)
        return rc;
    *out = c->timeline;
    return JP_OK;
}

/* ---- run endpoints ----------------------------------------------------------------------------------- */

/* Section name as the API spells it ("overview" is the report), or -1. */
static int api_section(const char *name) {
    if (strcmp(name, "overview") == 0) return JP_SECTION_REPORT;
    if (strcmp(name, "report") == 0) return -1;
    return jp_section_from_name(name);
}

/* Runs one writer into memory and sends its bytes as 200 JSON, or its error. */
typedef int (*writer_fn)(const void *obj, const void *arg, FILE *out, jp_error *err);

static int respond_written_as(jp_http_response *resp, const char *type, writer_fn fn, const void *obj, const void *arg,
                              int hit) {
    char *buf = NULL;
    size_t len = 0;
    jp_error err = {0};
    FILE *f = open_memstream(&buf, &len);
    if (!f) return jp_http_respond_status(resp, 500);
    int rc = fn(obj, arg, f, &err);
    if (fclose(f) != 0 && rc == JP_OK) rc = jp_error_set(&err, JP_ERR_NOMEM, 0, "out of memory");
    rc = rc == JP_OK ? jp_http_respond_bytes(resp, 200, type, buf, len, NULL) : respond_failure(resp, &err);
    free(buf);
    if (rc == JP_OK) rc = jp_http_response_header(resp, "X-Jaxprof-Cache", hit ? "hit" : "miss", NULL);
    return rc;
}

static int respond_written(jp_http_response *resp, writer_fn fn, const void *obj, const void *arg, int hit) {
    return respond_written_as(resp, "application/json", fn, obj, arg, hit);
}

/* A section request: the section and its view (NULL: the section's own). */
typedef struct section_request {
    int section;          /* jp_section */
    const jp_view *view;  /* ?module= for memory, else NULL */
} section_request;

static int write_section(const void *obj, const void *arg, FILE *out, jp_error *err) {
    const section_request *s = arg;
    return jp_render(jp_profile_analysis(obj), s->section, JP_FORMAT_JSON, s->view, out, err);
}

static int write_window(const void *obj, const void *arg, FILE *out, jp_error *err) {
    return jp_timeline_window(obj, arg, out, err);
}

/* An event request: the index (which decodes HLO modules into itself on demand) and the event. */
typedef struct event_request {
    jp_timeline *tl;     /* the run's index */
    size_t track, index; /* the event */
} event_request;

static int write_event(const void *obj, const void *arg, FILE *out, jp_error *err) {
    (void)obj;
    const event_request *e = arg;
    return jp_timeline_event(e->tl, e->track, e->index, out, err);
}

static int write_aggregate(const void *obj, const void *arg, FILE *out, jp_error *err) {
    return jp_timeline_aggregate(obj, arg, out, err);
}

static int serve_section(jp_viewer *v, const run_request *r, int section, jp_http_response *resp) {
    cached *c = NULL;
    int hit = 0;
    jp_error err;
    unsigned flags = jp_section_get(section)->flags; /* checked before the run is loaded */
    char why[128];
    snprintf(why, sizeof why, "%s covers the whole run: it takes no ?steps=", jp_section_name(section));
    if (r->steps[0] && (flags & JP_SECTION_WHOLE_RUN)) return respond_error(resp, 400, why);
    char module[MODULE_MAX];  /* ?module=: memory's one module in detail (jp_view.module) */
    int got = query_param(r->query, "module", module, sizeof module);
    if (got < 0 || (got && !(flags & JP_SECTION_TAKES_MODULE))) return respond_error(resp, 400, "bad module parameter (memory only)");
    char group[PARAM_MAX], filter[PARAM_MAX]; /* ?group=: the ops summed by category, module, scope or
                                                * source, over the ops ?filter= (a regex) keeps */
    int grouped = query_param(r->query, "group", group, sizeof group);
    int filtered = query_param(r->query, "filter", filter, sizeof filter);
    if (grouped < 0 || filtered < 0 || ((grouped || filtered) && section != JP_SECTION_OPS))
        return respond_error(resp, 400, "bad group or filter parameter (ops only)");
    jp_view view = {.module = got ? module : NULL, .group = grouped ? group : NULL, .filter = filtered ? filter : NULL};
    section_request s = {section, got || grouped || filtered ? &view : NULL};
    /* a run some of whose hosts are only a summary (process 0's copy of a pod's run): the sections
     * summaries answer show every host from them; the others read the files there are */
    int pod = (flags & JP_SECTION_SUMMARIES) && !r->steps[0] && jp_pod_summary_only(r->run->path) > 0;
    if (cached_profile_as(v, r->rel, r->run, r->host, r->steps, pod, &c, &hit, &err) != JP_OK)
        return respond_failure(resp, &err);
    return respond_written(resp, write_section, c->profile, &s, hit);
}

static int serve_timeline(jp_viewer *v, const run_request *r, jp_http_response *resp) {
    double start = 0, end = -1, px = DEFAULT_PX;
    if (number_param(r->query, "start_ms", -TIME_MS_MAX, TIME_MS_MAX, &start) != 0 ||
        number_param(r->query, "end_ms", -TIME_MS_MAX, TIME_MS_MAX, &end) != 0 ||
        number_param(r->query, "px", 1, MAX_PX, &px) != 0)
        return respond_error(resp, 400, "start_ms and end_ms need milliseconds, px a width of 1 to 1000000");
    jp_timeline *tl = NULL;
    int hit = 0;
    jp_error err;
    if (cached_timeline(v, r, &tl, &hit, &err) != JP_OK) return respond_failure(resp, &err);
    jp_timeline_query q = {.start_ns = (int64_t)llround(start * 1e6), .px = (uint32_t)px, .host = r->host};
    q.end_ns = end < 0 ? jp_timeline_end_ns(tl) + 1 : (int64_t)llround(end * 1e6);
    return respond_written(resp, write_window, tl, &q, hit);
}

static int serve_event(jp_viewer *v, const run_request *r, jp_http_response *resp) {
    double track = -1, index = -1;
    if (number_param(r->query, "track", 0, 4e9, &track) != 0 || number_param(r->query, "index", 0, 1e15, &index) != 0 ||
        track < 0 || index < 0 || track != floor(track) || index != floor(index))
        return respond_error(resp, 400, "event needs ?track=T&index=I (whole numbers)");
    event_request e = {NULL, (size_t)track, (size_t)index};
    int hit = 0;
    jp_error err;
    if (cached_timeline(v, r, &e.tl, &hit, &err) != JP_OK) return respond_failure(resp, &err);
    return respond_written(resp, write_event, NULL, &e, hit);
}

/* Parses ?tracks= ("3,5,8-12") into *ids (heap, *n entries); -1 when malformed. */
static int parse_tracks(const char *s, uint32_t **ids, size_t *n) {
    size_t cap = 0;
    *ids = NULL, *n = 0;
    while (*s) {
        char *end;
        unsigned long a = strtoul(s, &end, 10), b = a;
        if (end == s || *s == '-' || *s == '+' || a > UINT32_MAX) return -1;
        if (*end == '-' && ((b = strtoul(end + 1, &end, 10)) < a || b > UINT32_MAX || b - a > MAX_TRACKS)) return -1;
        for (unsigned long t = a; t <= b; t++) {
            if (*n == cap) {
                uint32_t *grown = *n < MAX_TRACKS ? realloc(*ids, (cap = cap ? 2 * cap : 64) * sizeof **ids) : NULL;
                if (!grown) return -1;
                *ids = grown;
            }
            (*ids)[(*n)++] = (uint32_t)t;
        }
        if (*end != ',' && *end) return -1;
        s = *end ? end + 1 : end;
    }
    return *n ? 0 : -1;
}

/* The charts the viewer embeds, drawn by the code that draws them in the HTML report (charts.c). */
static const char *const CHARTS[] = {"chart/steps", "chart/roofline"};

static int chart_of(const char *what) {
    for (int i = 0; i < (int)(sizeof CHARTS / sizeof CHARTS[0]); i++)
        if (strcmp(what, CHARTS[i]) == 0) return i;
    return -1;
}

static int write_chart(const void *obj, const void *arg, FILE *out, jp_error *err) {
    (void)err;
    const jp_analysis *a = jp_profile_analysis(obj);
    if (*(const int *)arg == 1) jp_chart_roofline(a, out);
    else jp_chart_steps(a, out);
    return JP_OK;
}

/* "chart/steps", "chart/roofline" (with ?host= and ?steps= like a section): the chart as an HTML
 * fragment, the bytes the report's section holds. */
static int serve_chart(jp_viewer *v, const run_request *r, int chart, jp_http_response *resp) {
    cached *c = NULL;
    int hit = 0;
    jp_error err;
    if (cached_profile(v, r->rel, r->run, r->host, r->steps, &c, &hit, &err) != JP_OK) return respond_failure(resp, &err);
    return respond_written_as(resp, "text/html; charset=utf-8", write_chart, c->profile, &chart, hit);
}

/* "timeline/aggregate?start_us=&end_us=[&tracks=]": the exact totals of a range (jp_timeline_aggregate). */
static int serve_aggregate(jp_viewer *v, const run_request *r, jp_http_response *resp) {
    double start = 0, end = -1;
    if (number_param(r->query, "start_us", -TIME_MS_MAX, TIME_MS_MAX, &start) != 0 ||
        number_param(r->query, "end_us", -TIME_MS_MAX, TIME_MS_MAX, &end) != 0 || end <= start)
        return respond_error(resp, 400, "aggregate needs ?start_us=&end_us= (microseconds, start < end)");
    char *list = malloc(TRACKS_MAX_BYTES);
    int got = list ? query_param(r->query, "tracks", list, TRACKS_MAX_BYTES) : -1;
    jp_timeline_range q = {.start_ns = (int64_t)llround(start * 1e3), .end_ns = (int64_t)llround(end * 1e3), .host = r->host};
    uint32_t *ids = NULL;
    int bad = got < 0 || (got > 0 && parse_tracks(list, &ids, &q.n_tracks) != 0);
    free(list);
    q.tracks = ids;
    jp_timeline *tl = NULL;
    int hit = 0, rc;
    jp_error err;
    if (bad) rc = respond_error(resp, 400, "tracks needs track ids: 3,5,8-12");
    else if (cached_timeline(v, r, &tl, &hit, &err) != JP_OK) rc = respond_failure(resp, &err);
    else rc = respond_written(resp, write_aggregate, tl, &q, hit);
    free(ids);
    return rc;
}

/* "/api/run/<id>/<what>": finds the run (listing again once when the id is unknown) and answers. */
static int serve_run(jp_viewer *v, const char *rest, const char *query, jp_http_response *resp) {
    const char *slash = strchr(rest, '/');
    char rel[REL_MAX];
    int aggregate = slash && strcmp(slash + 1, "timeline/aggregate") == 0, chart = slash ? chart_of(slash + 1) : -1;
    if (!slash || (strchr(slash + 1, '/') && !aggregate && chart < 0) ||
        decode_id(rest, (size_t)(slash - rest), rel, sizeof rel) != 0)
        return respond_error(resp, 404, "no such run");
    run_request r = {.what = slash + 1, .query = query};
    int section = aggregate || chart >= 0 ? -1 : api_section(r.what);
    if (section < 0 && !aggregate && chart < 0 && strcmp(r.what, "timeline") != 0 && strcmp(r.what, "event") != 0)
        return respond_error(resp, 404, "unknown endpoint");
    if (query_param(query, "host", r.host, sizeof r.host) < 0) return respond_error(resp, 400, "bad host parameter");
    if (query_param(query, "steps", r.steps, sizeof r.steps) < 0) return respond_error(resp, 400, "bad steps parameter");
    jp_error err;
    if (!(r.run = run_by_rel(v, rel)) && refresh_runs(v, &err) == JP_OK) r.run = run_by_rel(v, rel);
    if (!r.run) return respond_error(resp, 404, "no such run");
    r.rel = relative_path(v, r.run);
    if (section >= 0) return serve_section(v, &r, section, resp);
    if (aggregate) return serve_aggregate(v, &r, resp);
    if (chart >= 0) return serve_chart(v, &r, chart, resp);
    return strcmp(r.what, "timeline") == 0 ? serve_timeline(v, &r, resp) : serve_event(v, &r, resp);
}

/* ---- the diff endpoint ---------------------------------------------------------------------------------- */

/* What /api/diff names, once routed. */
typedef struct diff_request {
    const jp_run *base, *new_run;  /* the runs, from v->runs */
    const char *base_rel;          /* their paths relative to the log directory (inside run->path) */
    const char *new_rel;
    char host[PARAM_MAX];          /* ?host=, "" when absent */
    uint64_t stamps[2];            /* jp_profile_stamp of base and new */
} diff_request;

/* The run path named by the id in ?key= into rel (REL_MAX bytes): 1, 0 when absent, -1 when it is
 * not an id. */
static int rel_param(const char *query, const char *key, char *rel) {
    char id[2 * REL_MAX];
    int got = query_param(query, key, id, sizeof id);
    if (got <= 0) return got;
    return decode_id(id, strlen(id), rel, REL_MAX) == 0 ? 1 : -1;
}

/* Compares two analyses and renders the diff as JSON into *json (heap, *len bytes). The diff borrows
 * from both analyses and is freed before returning: only its bytes outlive this call. */
static int render_diff(const jp_profile *base, const jp_profile *new_run, char **json, size_t *len, jp_error *err) {
    jp_diff *d = NULL;
    int rc = jp_diff_new(&d, jp_profile_analysis(base), jp_profile_analysis(new_run), NULL, err);
    if (rc != JP_OK) return rc;
    *json = NULL;
    FILE *f = open_memstream(json, len);
    if (!f) {
        jp_diff_free(d);
        return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    }
    rc = jp_diff_render(d, JP_FORMAT_JSON, NULL, f, err);
    if (fclose(f) != 0 && rc == JP_OK) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    jp_diff_free(d);
    if (rc != JP_OK) {
        free(*json);
        *json = NULL;
    }
    return rc;
}

/* Loads both analyses and diffs them. The base's slot is pinned while the new run loads, so that
 * loading cannot evict (and free) the analysis the diff is about to read; the same run twice finds
 * the same slot. Nothing else runs in between: one server thread calls jp_viewer_handle. */
static int diff_runs(jp_viewer *v, const diff_request *q, char **json, size_t *len, jp_error *err) {
    cached *base = NULL, *new_slot = NULL;
    int hit = 0;
    int rc = cached_profile(v, q->base_rel, q->base, q->host, "", &base, &hit, err);
    if (rc != JP_OK) return rc;
    base->pinned = 1;
    rc = cached_profile(v, q->new_rel, q->new_run, q->host, "", &new_slot, &hit, err);
    if (rc == JP_OK) rc = render_diff(base->profile, new_slot->profile, json, len, err);
    base->pinned = 0;
    return rc;
}

static void last_diff_clear(last_diff *d) {
    free(d->base_rel);
    free(d->new_rel);
    free(d->host);
    free(d->json);
    memset(d, 0, sizeof *d);
}

static int last_diff_matches(const last_diff *d, const diff_request *q) {
    return d->base_rel && strcmp(d->base_rel, q->base_rel) == 0 && strcmp(d->new_rel, q->new_rel) == 0 &&
           strcmp(d->host, q->host) == 0 && d->stamps[0] == q->stamps[0] && d->stamps[1] == q->stamps[1];
}

/* Keeps json (taking ownership) as the answer for q; keeps nothing when memory runs out. */
static void last_diff_keep(last_diff *d, const diff_request *q, char *json, size_t len) {
    last_diff_clear(d);
    d->json = json;
    d->len = len;
    d->base_rel = strdup(q->base_rel);
    d->new_rel = strdup(q->new_rel);
    d->host = strdup(q->host);
    memcpy(d->stamps, q->stamps, sizeof d->stamps);
    if (!d->base_rel || !d->new_rel || !d->host) last_diff_clear(d);
}

/* "/api/diff?base=<id>&new=<id>[&host=]": the diff of two listed runs, from the last answer when it
 * asked the same. */
static int serve_diff(jp_viewer *v, const char *query, jp_http_response *resp) {
    diff_request q = {0};
    char base_rel[REL_MAX], new_rel[REL_MAX];
    int got_base = rel_param(query, "base", base_rel), got_new = rel_param(query, "new", new_rel);
    if (got_base == 0 || got_new == 0) return respond_error(resp, 400, "diff needs ?base=<run id>&new=<run id>");
    if (got_base < 0 || got_new < 0) return respond_error(resp, 404, "no such run");
    if (query_param(query, "host", q.host, sizeof q.host) < 0) return respond_error(resp, 400, "bad host parameter");
    q.base = run_by_rel(v, base_rel);
    q.new_run = run_by_rel(v, new_rel);
    jp_error err;
    if ((!q.base || !q.new_run) && refresh_runs(v, &err) == JP_OK) { /* both again: the list moved */
        q.base = run_by_rel(v, base_rel);
        q.new_run = run_by_rel(v, new_rel);
    }
    if (!q.base || !q.new_run) return respond_error(resp, 404, "no such run");
    q.base_rel = relative_path(v, q.base);
    q.new_rel = relative_path(v, q.new_run);
    if (jp_profile_stamp(q.base->path, &q.stamps[0], &err) != JP_OK || jp_profile_stamp(q.new_run->path, &q.stamps[1], &err) != JP_OK)
        return respond_failure(resp, &err);
    int hit = last_diff_matches(&v->diff, &q);
    if (!hit) {
        char *json = NULL;
        size_t len = 0;
        err = (jp_error){0};
        if (diff_runs(v, &q, &json, &len, &err) != JP_OK) return respond_failure(resp, &err);
        last_diff_keep(&v->diff, &q, json, len);
        if (!v->diff.json) return jp_http_respond_status(resp, 500);
    }
    int rc = respond_json(resp, 200, v->diff.json, v->diff.len);
    if (rc == JP_OK) rc = jp_http_response_header(resp, "X-Jaxprof-Cache", hit ? "hit" : "miss", NULL);
    return rc;
}

/* The API's index: the run endpoints of every section in the registry ("overview" is the report),
 * then the rest. */
static int respond_api_index(jp_http_response *resp) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return jp_http_respond_status(resp, 500);
    fputs("{\"api\":[\"/api/runs\"", f);
    for (int s = 0; s < JP_SECTION_COUNT; s++) {
        const jp_section_def *d = jp_section_get(s);
        fprintf(f, ",\"/api/run/<id>/%s%s%s\"", s == JP_SECTION_REPORT ? "overview" : d->name,
                d->flags & JP_SECTION_WHOLE_RUN ? "" : "?steps=A:B", d->flags & JP_SECTION_TAKES_MODULE ? "&module=" : "");
    }
    fputs(",\"/api/run/<id>/timeline?start_ms=&end_ms=&px=&host=\","
          "\"/api/run/<id>/timeline/aggregate?start_us=&end_us=&tracks=&host=\","
          "\"/api/run/<id>/event?track=&index=\",\"/api/diff?base=&new=&host=\"]}\n", f);
    int bad = fclose(f) != 0;
    int rc = bad ? jp_http_respond_status(resp, 500) : respond_json(resp, 200, buf, len);
    free(buf);
    return rc;
}

int jp_viewer_handle(jp_viewer *v, const jp_http_request *req, jp_http_response *resp) {
    if (!v || !req || !resp) return JP_ERR_ARG;
    if (strcmp(req->path, "/api") == 0 || strcmp(req->path, "/api/") == 0)
        return respond_api_index(resp);
    if (strcmp(req->path, "/api/runs") == 0) return serve_runs(v, resp);
    if (strncmp(req->path, "/api/run/", 9) == 0) return serve_run(v, req->path + 9, req->query, resp);
    if (strcmp(req->path, "/api/diff") == 0) return serve_diff(v, req->query, resp);
    const jp_asset *page = strncmp(req->path, "/api/", 5) != 0 ? jp_asset_find(req->path) : NULL;
    if (page) return jp_http_respond_bytes(resp, 200, page->content_type, page->data, page->len, NULL);
    return respond_error(resp, 404, "not found");
}

/* ---- crash isolation: which worker answers a request ------------------------------------------------ */

/* Appends the id of rel (its hex) to key (cap bytes, already holding *len), cutting what does not fit. */
static void key_put_id(char *key, size_t cap, size_t *len, const char *rel) {
    for (const unsigned char *p = (const unsigned char *)rel; *p && *len + 3 <= cap; p++)
        *len += (size_t)snprintf(key + *len, cap - *len, "%02x", *p);
}

/* The listed run whose relative path is rel, listing the runs again once when it is not known. */
static const jp_run *known_run(jp_viewer *v, const char *rel) {
    jp_error err;
    const jp_run *run = run_by_rel(v, rel);
    if (!run && refresh_runs(v, &err) == JP_OK) run = run_by_rel(v, rel);
    return run;
}

/* "run <id>" or "diff <id> <id>" into key; always NUL-terminated (cap > 0). */
static void write_key(char *key, size_t cap, const char *what, const char *rel, const char *rel2) {
    size_t len = (size_t)snprintf(key, cap, "%s", what);
    if (len >= cap) len = cap - 1;
    key_put_id(key, cap, &len, rel);
    if (rel2 && len + 2 <= cap) {
        key[len++] = ' ';
        key[len] = '\0';
        key_put_id(key, cap, &len, rel2);
    }
}

int jp_viewer_route(jp_viewer *v, const jp_http_request *req, char *key, size_t cap) {
    if (!v || !req || !key || cap == 0) return 0;
    char rel[REL_MAX], rel2[REL_MAX];
    if (strncmp(req->path, "/api/run/", 9) == 0) {
        const char *rest = req->path + 9, *slash = strchr(rest, '/');
        const jp_run *run = NULL;
        if (!slash || decode_id(rest, (size_t)(slash - rest), rel, sizeof rel) != 0 || !(run = known_run(v, rel))) return 0;
        write_key(key, cap, "run ", relative_path(v, run), NULL);
        return 1;
    }
    if (strcmp(req->path, "/api/diff") != 0 || rel_param(req->query, "base", rel) != 1 || rel_param(req->query, "new", rel2) != 1)
        return 0;
    const jp_run *base = known_run(v, rel), *new_run = base ? known_run(v, rel2) : NULL;
    if (!base || !new_run) return 0;
    base = run_by_rel(v, rel); /* again: the second look may have listed the runs anew */
    if (!base) return 0;
    write_key(key, cap, "diff ", relative_path(v, base), relative_path(v, new_run));
    return 1;
}

/* The run path whose id starts key_id (up to a space or the end) into rel (REL_MAX bytes); 0 or -1. */
static int key_rel(const char *key_id, char *rel) {
    return decode_id(key_id, strcspn(key_id, " "), rel, REL_MAX);
}

void jp_viewer_respond_failed(jp_viewer *v, const char *key, int status, const char *why, jp_http_response *resp) {
    (void)v;
    char rel[REL_MAX], rel2[REL_MAX], msg[2 * REL_MAX + 512];
    const char *second = strncmp(key, "diff ", 5) == 0 ? strchr(key + 5, ' ') : NULL;
    if (strncmp(key, "run ", 4) == 0 && key_rel(key + 4, rel) == 0)
        snprintf(msg, sizeof msg, "analysis of %s failed: %s", rel, why);
    else if (second && key_rel(key + 5, rel) == 0 && key_rel(second + 1, rel2) == 0)
        snprintf(msg, sizeof msg, "diff of %s and %s failed: %s", rel, rel2, why);
    else
        snprintf(msg, sizeof msg, "%.200s failed: %s", key, why);
    respond_error(resp, status, msg);
}

/* ---- life cycle ----------------------------------------------------------------------------------------- */

int jp_viewer_new(jp_viewer **out, const char *log_dir, jp_error *err) {
    jp_error_clear(err);
    if (!out || !log_dir || !*log_dir) return jp_error_set(err, JP_ERR_ARG, 0, "viewer: no log directory");
    *out = NULL;
    jp_viewer *v = calloc(1, sizeof *v);
    if (!v || !(v->log_dir = strdup(log_dir))) {
        free(v);
        return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    }
    size_t n = strlen(v->log_dir);
    while (n > 1 && v->log_dir[n - 1] == '/') v->log_dir[--n] = '\0';
    int rc = jp_runs_find(&v->runs, v->log_dir, err);
    if (rc != JP_OK) {
        free(v->log_dir);
        free(v);
        return rc;
    }
    *out = v;
    return JP_OK;
}

void jp_viewer_free(jp_viewer *v) {
    if (!v) return;
    for (size_t i = 0; i < CACHE_SLOTS; i++) slot_clear(&v->cache[i]);
    last_diff_clear(&v->diff);
    jp_runs_deinit(&v->runs);
    free(v->log_dir);
    free(v->cpu_peaks_file);
    free(v);
}

int jp_viewer_set_cpu_peaks_file(jp_viewer *v, const char *path) {
    char *copy = path ? strdup(path) : NULL;
    if (path && !copy) return JP_ERR_NOMEM;
    free(v->cpu_peaks_file);
    v->cpu_peaks_file = copy;
    return JP_OK;
}

void jp_viewer_set_max_inflate(jp_viewer *v, uint64_t max_inflate) { v->max_inflate = max_inflate; }
