/* chrome.c - a Chrome trace (the .trace.json[.gz] jax.profiler writes beside the .xplane.pb, and
 * the same shape other tools write) rewritten as the XSpace it was made from, as far as the JSON
 * keeps it: a plane per process, a line per thread, an event per slice with its args as stats. The
 * decoder then reads it as any XSpace, so every command works on it (docs/design.md, "Chrome-trace
 * input"). What the JSON does not keep (the HloProtos: buffers, the HLO's FLOPs and Python stacks)
 * is said in the XSpace's own warnings, which every report shows as capture health. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/intern.h"
#include "base/map.h"
#include "base/vec.h"
#include "decode/chrome.h"
#include "export/pbwrite.h"
#include "yyjson.h"

enum { /* XSpace field numbers (tensorflow/tsl/profiler/protobuf/xplane.proto) */
    XS_PLANES = 1, XS_WARNINGS = 3,
    PL_ID = 1, PL_NAME = 2, PL_LINES = 3, PL_EVENT_META = 4, PL_STAT_META = 5,
    LN_ID = 1, LN_NAME = 2, LN_TIMESTAMP_NS = 3, LN_EVENTS = 4,
    EV_META = 1, EV_OFFSET_PS = 2, EV_DURATION_PS = 3, EV_STATS = 4,
    EM_ID = 1, EM_NAME = 2, EM_DISPLAY_NAME = 4,
    SM_ID = 1, SM_NAME = 2,
    ST_META = 1, ST_DOUBLE = 2, ST_UINT = 3, ST_INT = 4, ST_STR = 5,
    MAP_KEY = 1, MAP_VALUE = 2,
};

/* What the JSON lacks, in every report's capture health. */
static const char CHROME_NOTE[] =
    JP_CHROME_NOTE_PREFIX " (JSON), not the .xplane.pb: no HLO protos, so no memory at the peak (buffers), no "
    "FLOPs or Python stacks from the HLO; op args (hlo_category, model_flops, bytes_accessed, source) stand in "
    "where the trace has them. Give the .xplane.pb of the same capture for everything";

/* One slice or instant, read from the JSON: views into the document. */
typedef struct slice {
    int64_t pid, tid;
    int64_t start_ps, dur_ps;
    yyjson_val *name, *args;
    uint32_t order; /* place in the file: the sort is stable */
    char phase;     /* 'X', or 'B'/'E' until paired */
} slice;

typedef struct converter {
    yyjson_doc *doc;
    jp_arena arena;
    jp_intern names;
    jp_map process_name, thread_name; /* pid / (pid, tid) -> yyjson_val * index into vals */
    jp_vec vals;                      /* yyjson_val * */
    jp_vec slices;                    /* slice */
    jp_vec open;                      /* size_t: B slices waiting for their E, of the current thread */
    jp_pbw out;
    jp_error *err;
} converter;

static int nomem(converter *c) { return jp_error_set(c->err, JP_ERR_NOMEM, 0, "out of memory reading the Chrome trace"); }

static int64_t us_to_ps(yyjson_val *v) { return (int64_t)llround(yyjson_get_num(v) * 1e6); }

/* A pid or tid: a JSON integer (a real is cut to one); anything else is 0. */
static int64_t id_of(yyjson_val *v) {
    if (yyjson_is_uint(v)) return (int64_t)yyjson_get_uint(v);
    if (yyjson_is_sint(v)) return yyjson_get_sint(v);
    double d = yyjson_get_num(v);
    return isfinite(d) && fabs(d) < 9e18 ? (int64_t)d : 0;
}

/* ---- reading the JSON ------------------------------------------------------------------------------ */

static int remember(converter *c, jp_map *m, int64_t pid, int64_t tid, yyjson_val *name) {
    yyjson_val **slot = jp_vec_push(&c->vals, sizeof *slot);
    if (!slot) return nomem(c);
    *slot = name;
    uint32_t k = jp_map_get_or_put(m, (uint64_t)pid, (uint64_t)tid, 0, (uint32_t)(c->vals.n - 1), NULL);
    return k == UINT32_MAX ? nomem(c) : JP_OK;
}

static yyjson_val *recalled(const converter *c, const jp_map *m, int64_t pid, int64_t tid) {
    uint32_t k = jp_map_get(m, (uint64_t)pid, (uint64_t)tid, 0);
    return k != UINT32_MAX ? JP_VEC_AT(&c->vals, yyjson_val *, k) : NULL;
}

/* A process_name / thread_name metadata event. */
static int read_metadata(converter *c, yyjson_val *ev, int64_t pid, int64_t tid) {
    const char *what = yyjson_get_str(yyjson_obj_get(ev, "name"));
    yyjson_val *name = yyjson_obj_get(yyjson_obj_get(ev, "args"), "name");
    if (!what || !yyjson_is_str(name)) return JP_OK;
    if (strcmp(what, "process_name") == 0) return remember(c, &c->process_name, pid, 0, name);
    if (strcmp(what, "thread_name") == 0) return remember(c, &c->thread_name, pid, tid, name);
    return JP_OK;
}

static int read_event(converter *c, yyjson_val *ev, uint32_t order) {
    const char *ph = yyjson_get_str(yyjson_obj_get(ev, "ph"));
    int64_t pid = id_of(yyjson_obj_get(ev, "pid")), tid = id_of(yyjson_obj_get(ev, "tid"));
    if (!ph) return JP_OK; /* the empty {} jax.profiler ends its list with */
    if (ph[0] == 'M') return read_metadata(c, ev, pid, tid);
    if (!strchr("XBEiI", ph[0]) || !ph[0]) return JP_OK; /* counters, flows, async: no slice */
    yyjson_val *ts = yyjson_obj_get(ev, "ts");
    if (!yyjson_is_num(ts) || !isfinite(yyjson_get_num(ts))) return JP_OK;
    slice *s = jp_vec_push(&c->slices, sizeof *s);
    if (!s) return nomem(c);
    yyjson_val *dur = yyjson_obj_get(ev, "dur");
    *s = (slice){pid, tid, us_to_ps(ts), ph[0] == 'X' && yyjson_is_num(dur) ? us_to_ps(dur) : 0,
                 yyjson_obj_get(ev, "name"), yyjson_obj_get(ev, "args"), order, ph[0] == 'B' || ph[0] == 'E' ? ph[0] : 'X'};
    if (s->dur_ps < 0) s->dur_ps = 0;
    return JP_OK;
}

static int cmp_thread_then_order(const void *x, const void *y) {
    const slice *a = x, *b = y;
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

/* Pairs each thread's B and E events in file order (an E closes the latest open B) into X slices;
 * an E with no B and a B never closed are dropped. */
static int pair_begin_end(converter *c) {
    slice *s = c->slices.data;
    qsort(s, c->slices.n, sizeof *s, cmp_thread_then_order);
    for (size_t i = 0; i < c->slices.n; i++) {
        if (i && (s[i].pid != s[i - 1].pid || s[i].tid != s[i - 1].tid)) c->open.n = 0;
        if (s[i].phase == 'B') {
            size_t *slot = jp_vec_push(&c->open, sizeof *slot);
            if (!slot) return nomem(c);
            *slot = i;
        } else if (s[i].phase == 'E' && c->open.n) {
            slice *b = &s[JP_VEC_AT(&c->open, size_t, --c->open.n)];
            b->dur_ps = s[i].start_ps > b->start_ps ? s[i].start_ps - b->start_ps : 0;
            b->phase = 'X';
        }
    }
    size_t kept = 0;
    for (size_t i = 0; i < c->slices.n; i++)
        if (s[i].phase == 'X') s[kept++] = s[i];
    c->slices.n = kept;
    return JP_OK;
}

/* Threads together, each by start, a parent before what it holds (longer first), then file order. */
static int cmp_slice(const void *x, const void *y) {
    const slice *a = x, *b = y;
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    if (a->start_ps != b->start_ps) return a->start_ps < b->start_ps ? -1 : 1;
    if (a->dur_ps != b->dur_ps) return a->dur_ps > b->dur_ps ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

/* ---- writing the XSpace ---------------------------------------------------------------------------- */

/* One plane's metadata, numbered from 1 as written: interned names -> ids. */
typedef struct plane_meta {
    jp_map event_ids, stat_ids;   /* (name, display name) / name -> id */
    jp_vec events, stats;         /* const char *[2] (name, display name) / const char *, by id - 1 */
} plane_meta;

static void plane_meta_free(plane_meta *m) {
    jp_map_deinit(&m->event_ids), jp_map_deinit(&m->stat_ids);
    jp_vec_free(&m->events), jp_vec_free(&m->stats);
}

static const char *interned(converter *c, const char *s, size_t len) { return jp_intern_str(&c->names, s ? s : "", s ? len : 0); }

/* The id of a name in one of a plane's metadata tables, given out on first sight. */
static uint64_t meta_id(jp_map *ids, jp_vec *list, const char *a, const char *b) {
    int found;
    uint32_t k = jp_map_get_or_put(ids, (uint64_t)(uintptr_t)a, (uint64_t)(uintptr_t)b, 0, (uint32_t)list->n, &found);
    if (k == UINT32_MAX) return 0;
    if (!found) {
        const char **slot = jp_vec_push(list, 2 * sizeof *slot);
        if (!slot) return 0;
        slot[0] = a, slot[1] = b;
    }
    return (uint64_t)k + 1;
}

/* A string arg as the stat the profiler wrote before its JSON writer made it text: a whole
 * integer as an integer, a number as a double, anything else as the string. */
static void write_string_value(jp_pbw *b, const char *s, size_t len) {
    char *end;
    if (len && len < 64 && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))) {
        char buf[64];
        memcpy(buf, s, len);
        buf[len] = '\0';
        long long i = strtoll(buf, &end, 10);
        if (*end == '\0' && !(i == LLONG_MAX || i == LLONG_MIN)) return jp_pbw_uint(b, ST_INT, (uint64_t)i);
        unsigned long long u = buf[0] != '-' ? strtoull(buf, &end, 10) : 0;
        if (buf[0] != '-' && *end == '\0' && u != ULLONG_MAX) return jp_pbw_uint(b, ST_UINT, u);
        double d = strtod(buf, &end);
        if (*end == '\0' && isfinite(d)) {
            uint64_t bits;
            memcpy(&bits, &d, sizeof bits);
            return jp_pbw_fixed64(b, ST_DOUBLE, bits);
        }
    }
    jp_pbw_bytes(b, ST_STR, s, len);
}

static void write_value(jp_pbw *b, yyjson_val *v) {
    double d;
    uint64_t bits;
    switch (yyjson_get_type(v)) {
    case YYJSON_TYPE_BOOL: jp_pbw_uint(b, ST_INT, yyjson_get_bool(v)); break;
    case YYJSON_TYPE_STR: write_string_value(b, yyjson_get_str(v), yyjson_get_len(v)); break;
    case YYJSON_TYPE_NUM:
        if (yyjson_is_uint(v)) jp_pbw_uint(b, ST_UINT, yyjson_get_uint(v));
        else if (yyjson_is_sint(v)) jp_pbw_uint(b, ST_INT, (uint64_t)yyjson_get_sint(v));
        else {
            d = yyjson_get_real(v);
            memcpy(&bits, &d, sizeof bits);
            jp_pbw_fixed64(b, ST_DOUBLE, bits);
        }
        break;
    default: jp_pbw_bytes(b, ST_STR, "<JSON value>", 12); break; /* arrays and objects: not a stat's shape */
    }
}

static int write_stat(converter *c, plane_meta *m, const char *key, size_t key_len, yyjson_val *v) {
    uint64_t id = meta_id(&m->stat_ids, &m->stats, interned(c, key, key_len), NULL);
    if (!id) return nomem(c);
    jp_pbw_open(&c->out, EV_STATS);
    jp_pbw_uint(&c->out, ST_META, id);
    write_value(&c->out, v);
    jp_pbw_close(&c->out);
    return JP_OK;
}

/* An event's args as its stats. TPU op args give XProf's "model_flops" where the xplane has
 * "flops" too (the same number): it stands in for the flops the model reads. */
static int write_args(converter *c, plane_meta *m, yyjson_val *args) {
    yyjson_val *key, *val;
    yyjson_obj_iter it = yyjson_obj_iter_with(args);
    int rc = JP_OK;
    while (rc == JP_OK && (key = yyjson_obj_iter_next(&it))) {
        val = yyjson_obj_iter_get_val(key);
        rc = write_stat(c, m, yyjson_get_str(key), yyjson_get_len(key), val);
    }
    yyjson_val *model = yyjson_obj_get(args, "model_flops");
    if (rc == JP_OK && model && !yyjson_obj_get(args, "flops")) rc = write_stat(c, m, "flops", 5, model);
    return rc;
}

/* A device op's metadata is named by its HLO text where the args keep it (as libtpu names it),
 * with the op's name as its display name; every other event by its name alone. */
static int write_event(converter *c, plane_meta *m, const slice *s, int64_t line_start_ps) {
    const char *name = interned(c, yyjson_get_str(s->name), yyjson_get_len(s->name));
    yyjson_val *long_name = yyjson_obj_get(s->args, "long_name");
    const char *full = yyjson_is_str(long_name) ? interned(c, yyjson_get_str(long_name), yyjson_get_len(long_name)) : NULL;
    uint64_t id = name ? meta_id(&m->event_ids, &m->events, full ? full : name, full ? name : NULL) : 0;
    if (!id) return nomem(c);
    jp_pbw_open(&c->out, LN_EVENTS);
    jp_pbw_uint(&c->out, EV_META, id);
    jp_pbw_uint(&c->out, EV_OFFSET_PS, (uint64_t)(s->start_ps - line_start_ps));
    if (s->dur_ps) jp_pbw_uint(&c->out, EV_DURATION_PS, (uint64_t)s->dur_ps);
    int rc = yyjson_is_obj(s->args) ? write_args(c, m, s->args) : JP_OK;
    jp_pbw_close(&c->out);
    return rc;
}

static int64_t floor_ns(int64_t ps) { return ps >= 0 ? ps / 1000 : -((-ps + 999) / 1000); }

/* One thread's slices s[0..n) as a line. */
static int write_line(converter *c, plane_meta *m, const slice *s, size_t n) {
    yyjson_val *name = recalled(c, &c->thread_name, s->pid, s->tid);
    char fallback[32];
    int len = snprintf(fallback, sizeof fallback, "%lld", (long long)s->tid);
    int64_t ts_ns = floor_ns(s[0].start_ps); /* the first starts first: offsets are never negative */
    jp_pbw_open(&c->out, PL_LINES);
    jp_pbw_uint(&c->out, LN_ID, (uint64_t)s->tid);
    if (name) jp_pbw_bytes(&c->out, LN_NAME, yyjson_get_str(name), yyjson_get_len(name));
    else jp_pbw_bytes(&c->out, LN_NAME, fallback, (size_t)len);
    jp_pbw_uint(&c->out, LN_TIMESTAMP_NS, (uint64_t)ts_ns);
    int rc = JP_OK;
    for (size_t i = 0; rc == JP_OK && i < n; i++) rc = write_event(c, m, &s[i], ts_ns * 1000);
    jp_pbw_close(&c->out);
    return rc;
}

static void write_metadata(converter *c, const plane_meta *m) {
    for (size_t i = 0; i < m->events.n; i++) {
        const char *const *e = (const char *const *)m->events.data + 2 * i;
        jp_pbw_open(&c->out, PL_EVENT_META);
        jp_pbw_uint(&c->out, MAP_KEY, i + 1);
        jp_pbw_open(&c->out, MAP_VALUE);
        jp_pbw_uint(&c->out, EM_ID, i + 1);
        jp_pbw_bytes(&c->out, EM_NAME, e[0], strlen(e[0]));
        if (e[1]) jp_pbw_bytes(&c->out, EM_DISPLAY_NAME, e[1], strlen(e[1]));
        jp_pbw_close(&c->out);
        jp_pbw_close(&c->out);
    }
    for (size_t i = 0; i < m->stats.n; i++) {
        const char *name = ((const char *const *)m->stats.data)[2 * i];
        jp_pbw_open(&c->out, PL_STAT_META);
        jp_pbw_uint(&c->out, MAP_KEY, i + 1);
        jp_pbw_open(&c->out, MAP_VALUE);
        jp_pbw_uint(&c->out, SM_ID, i + 1);
        jp_pbw_bytes(&c->out, SM_NAME, name, strlen(name));
        jp_pbw_close(&c->out);
        jp_pbw_close(&c->out);
    }
}

/* One process's slices s[0..n) as a plane. */
static int write_plane(converter *c, const slice *s, size_t n) {
    yyjson_val *name = recalled(c, &c->process_name, s->pid, 0);
    char fallback[40];
    int len = snprintf(fallback, sizeof fallback, "pid %lld", (long long)s->pid);
    plane_meta m = {0};
    jp_pbw_open(&c->out, XS_PLANES);
    jp_pbw_uint(&c->out, PL_ID, (uint64_t)s->pid);
    if (name) jp_pbw_bytes(&c->out, PL_NAME, yyjson_get_str(name), yyjson_get_len(name));
    else jp_pbw_bytes(&c->out, PL_NAME, fallback, (size_t)len);
    int rc = JP_OK;
    for (size_t i = 0, j; rc == JP_OK && i < n; i = j) {
        for (j = i + 1; j < n && s[j].tid == s[i].tid; j++) {
        }
        rc = write_line(c, &m, s + i, j - i);
    }
    if (rc == JP_OK) write_metadata(c, &m);
    jp_pbw_close(&c->out);
    plane_meta_free(&m);
    return rc;
}

static int write_space(converter *c) {
    const slice *s = c->slices.data;
    int rc = JP_OK;
    for (size_t i = 0, j; rc == JP_OK && i < c->slices.n; i = j) {
        for (j = i + 1; j < c->slices.n && s[j].pid == s[i].pid; j++) {
        }
        rc = write_plane(c, s + i, j - i);
    }
    jp_pbw_bytes(&c->out, XS_WARNINGS, CHROME_NOTE, sizeof CHROME_NOTE - 1);
    if (rc == JP_OK && c->out.failed) rc = jp_error_set(c->err, JP_ERR_LIMIT, 0, "the Chrome trace is too large to read");
    return rc;
}

/* ---- the entry point ------------------------------------------------------------------------------ */

static int parse_json(converter *c, const uint8_t *json, size_t len) {
    yyjson_read_err e;
    c->doc = yyjson_read_opts((char *)(uintptr_t)json, len, YYJSON_READ_ALLOW_INF_AND_NAN, NULL, &e);
    if (c->doc) return JP_OK;
    if (e.code == YYJSON_READ_ERROR_MEMORY_ALLOCATION) return nomem(c);
    return jp_error_set(c->err, e.code == YYJSON_READ_ERROR_UNEXPECTED_END ? JP_ERR_TRUNCATED : JP_ERR_CORRUPT, e.pos,
                        "not a valid Chrome trace at byte %zu: JSON %s", e.pos, e.msg);
}

/* The events: {"traceEvents": [...]} or a bare [...], both Chrome forms. */
static yyjson_val *event_list(converter *c) {
    yyjson_val *root = yyjson_doc_get_root(c->doc);
    return yyjson_is_arr(root) ? root : yyjson_obj_get(root, "traceEvents");
}

int jp_chrome_to_xspace(const uint8_t *json, size_t len, uint8_t **out, size_t *out_len, jp_error *err) {
    converter c = {.err = err};
    jp_arena_init(&c.arena, 0);
    jp_intern_init(&c.names, &c.arena);
    *out = NULL, *out_len = 0;
    int rc = parse_json(&c, json, len);
    yyjson_val *events = rc == JP_OK ? event_list(&c) : NULL;
    if (rc == JP_OK && !yyjson_is_arr(events))
        rc = jp_error_set(err, JP_ERR_CORRUPT, 0, "JSON, but not a Chrome trace (no traceEvents list)");
    yyjson_val *ev;
    yyjson_arr_iter it = yyjson_arr_iter_with(events);
    for (uint32_t order = 0; rc == JP_OK && (ev = yyjson_arr_iter_next(&it)); order++)
        if (yyjson_is_obj(ev)) rc = read_event(&c, ev, order);
    if (rc == JP_OK) rc = pair_begin_end(&c);
    if (rc == JP_OK) qsort(c.slices.data, c.slices.n, sizeof(slice), cmp_slice);
    if (rc == JP_OK) rc = write_space(&c);
    if (rc == JP_OK) *out = c.out.p, *out_len = c.out.n;
    else free(c.out.p);
    yyjson_doc_free(c.doc);
    jp_map_deinit(&c.process_name), jp_map_deinit(&c.thread_name);
    jp_vec_free(&c.vals), jp_vec_free(&c.slices), jp_vec_free(&c.open);
    jp_intern_deinit(&c.names);
    jp_arena_deinit(&c.arena);
    return rc;
}
