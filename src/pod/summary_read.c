/* summary_read.c - reads a host summary (summary.h) and checks it field by field: a summary that
 * is cut, of another schema version, or whose fields have the wrong type or an impossible value is
 * refused with the file and the field named, and the caller falls back to the raw file. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyses/result_names.h"
#include "base/error.h"
#include "decode/xnames.h"
#include "pod/summary.h"
#include "yyjson.h"

typedef struct reader {
    jp_arena *arena;
    const char *path;
    jp_error *err;
    int rc;              /* the first error; later reads do nothing */
    const char *where;   /* the array being read ("steps"), "" at the top */
    size_t index;        /* the element of it */
} reader;

static void fail(reader *r, const char *key, const char *what) {
    if (r->rc) return;
    if (*r->where)
        r->rc = jp_error_set(r->err, JP_ERR_CORRUPT, 0, "%s: bad host summary: %s[%zu].%s %s (jaxprof summarize writes it anew)",
                             r->path, r->where, r->index, key, what);
    else
        r->rc = jp_error_set(r->err, JP_ERR_CORRUPT, 0, "%s: bad host summary: %s %s (jaxprof summarize writes it anew)",
                             r->path, key, what);
}

static yyjson_val *field(reader *r, yyjson_val *obj, const char *key) {
    yyjson_val *v = yyjson_obj_get(obj, key);
    if (!v) fail(r, key, "is missing");
    return v;
}

static int64_t get_int(reader *r, yyjson_val *obj, const char *key) {
    yyjson_val *v = field(r, obj, key);
    if (v && yyjson_is_int(v) && (yyjson_is_sint(v) || yyjson_get_uint(v) <= (uint64_t)INT64_MAX)) return yyjson_get_sint(v);
    if (v) fail(r, key, "is not an integer");
    return 0;
}

static int64_t get_count(reader *r, yyjson_val *obj, const char *key) {
    int64_t v = get_int(r, obj, key);
    if (v < 0) fail(r, key, "is negative");
    return v;
}

/* A time as the model bounds its events' (JP_XN_TIME_LIMIT_PS, 26 days): within it, sums over a
 * host's steps and hosts stay far from int64's limits. `signed_ok`: may be negative. */
static int64_t get_time(reader *r, yyjson_val *obj, const char *key, int signed_ok) {
    int64_t v = get_int(r, obj, key);
    if (v > JP_XN_TIME_LIMIT_PS || v < (signed_ok ? -JP_XN_TIME_LIMIT_PS : 0))
        fail(r, key, signed_ok ? "is beyond +-2^61 ps" : "is negative or beyond 2^61 ps");
    return v;
}

/* A number; null (what a non-finite value is written as) reads as NaN. */
static double get_num(reader *r, yyjson_val *obj, const char *key) {
    yyjson_val *v = field(r, obj, key);
    if (v && yyjson_is_null(v)) return NAN;
    if (v && yyjson_is_num(v)) return yyjson_get_num(v);
    if (v) fail(r, key, "is not a number");
    return 0;
}

/* A duration held as a double (the step summary's statistics): within [0, 2^61] ps as get_time
 * bounds an integer one, since the renderers turn it into int64 picoseconds. */
static double get_duration_num(reader *r, yyjson_val *obj, const char *key) {
    double v = get_num(r, obj, key);
    if (!(v >= 0 && v <= (double)JP_XN_TIME_LIMIT_PS)) fail(r, key, "is not a duration within 2^61 ps");
    return v;
}

static const char *get_str(reader *r, yyjson_val *obj, const char *key) {
    yyjson_val *v = field(r, obj, key);
    if (v && !yyjson_is_str(v)) fail(r, key, "is not a string");
    if (!v || !yyjson_is_str(v)) return "";
    const char *s = jp_arena_strndup(r->arena, yyjson_get_str(v), yyjson_get_len(v));
    if (!s && !r->rc) r->rc = jp_error_set(r->err, JP_ERR_NOMEM, 0, "out of memory");
    return s ? s : "";
}

/* One of names (n of them, by their index), or -1 with the error set. */
static int get_name(reader *r, yyjson_val *obj, const char *key, const char *(*name_of)(int), int lo, int hi) {
    const char *s = get_str(r, obj, key);
    for (int i = lo; i <= hi; i++)
        if (strcmp(s, name_of(i)) == 0) return i;
    fail(r, key, "is not a known value");
    return lo;
}

static void get_parts(reader *r, yyjson_val *obj, const char *key, int64_t *part_ps) {
    yyjson_val *v = field(r, obj, key);
    if (v && !yyjson_is_obj(v)) fail(r, key, "is not an object");
    for (int p = 0; v && yyjson_is_obj(v) && p < JP_PART_COUNT; p++) part_ps[p] = get_time(r, v, jp_part_name(p), 0);
}

/* The array at key, its elements each read by `one` into a new arena array of `size`-byte items. */
static void *get_array(reader *r, yyjson_val *obj, const char *key, size_t size, size_t max, size_t *n,
                       void (*one)(reader *, yyjson_val *, void *)) {
    yyjson_val *v = field(r, obj, key);
    *n = 0;
    if (v && !yyjson_is_arr(v)) fail(r, key, "is not an array");
    if (!v || !yyjson_is_arr(v) || r->rc) return NULL;
    if (yyjson_arr_size(v) > max) fail(r, key, "has more elements than a summary holds");
    char *items = r->rc ? NULL : jp_arena_alloc(r->arena, (yyjson_arr_size(v) ? yyjson_arr_size(v) : 1) * size);
    if (!items && !r->rc) r->rc = jp_error_set(r->err, JP_ERR_NOMEM, 0, "out of memory");
    const char *outer = r->where;
    r->where = key;
    yyjson_val *item;
    yyjson_arr_iter it = yyjson_arr_iter_with(v);
    for (size_t i = 0; items && !r->rc && (item = yyjson_arr_iter_next(&it)); i++) {
        r->index = i;
        memset(items + i * size, 0, size);
        if (!yyjson_is_obj(item)) fail(r, "", "is not an object");
        else one(r, item, items + i * size);
        *n = i + 1;
    }
    r->where = outer;
    return items;
}

static void read_step(reader *r, yyjson_val *o, void *out) {
    jp_step *s = out;
    s->step_num = get_int(r, o, "step");
    s->start_ps = get_time(r, o, "start_ps", 1);
    s->dur_ps = get_time(r, o, "dur_ps", 0);
    get_parts(r, o, "parts_ps", s->part_ps);
    s->n_ops = (uint64_t)get_count(r, o, "ops");
    s->n_compiles = (uint32_t)get_count(r, o, "compiles");
    s->flops = get_num(r, o, "flops");
    s->outlier = get_int(r, o, "outlier") != 0;
    s->host_start_ps = get_time(r, o, "host_start_ps", 1);
    s->host_dur_ps = get_time(r, o, "host_dur_ps", 0);
    s->no_device_work = get_int(r, o, "no_device_work") != 0;
    s->gap_ps = get_time(r, o, "gap_ps", 0);
    s->bytes = get_num(r, o, "bytes");
    s->roof_pct = get_num(r, o, "roof_pct");
    s->comm_hidden_ps = get_time(r, o, "comm_hidden_ps", 0);
    s->comm_exposed_ps = get_time(r, o, "comm_exposed_ps", 0);
    yyjson_val *sync = field(r, o, "sync_ps");
    s->sync_ps = sync && yyjson_is_null(sync) ? INT64_MIN : get_time(r, o, "sync_ps", 1);
    int64_t parts = 0;
    for (int p = 0; p < JP_PART_COUNT; p++) parts += s->part_ps[p]; /* each within 2^61: no overflow */
    if (!r->rc && parts != s->dur_ps) fail(r, "parts_ps", "do not sum to dur_ps");
}

static void read_device(reader *r, yyjson_val *o, void *out) {
    jp_device *d = out;
    d->name = get_str(r, o, "name");
    d->platform = get_name(r, o, "platform", jp_platform_name, JP_PLATFORM_CPU, JP_PLATFORM_TPU);
    d->busy_ps = get_time(r, o, "busy_ps", 0);
    d->first_ps = get_time(r, o, "first_ps", 1);
    d->last_ps = get_time(r, o, "last_ps", 1);
    d->n_ops = (uint64_t)get_count(r, o, "ops");
    d->peak_flops = get_num(r, o, "peak_flops");
    d->peak_bw = get_num(r, o, "peak_bw");
    d->peak_source = get_str(r, o, "peak_source");
    d->bytes_accessed = get_num(r, o, "bytes_accessed");
    d->idle_host_ps = get_int(r, o, "idle_host_ps");
    d->idle_kernel_ps = get_int(r, o, "idle_kernel_ps");
    d->idle_other_ps = get_int(r, o, "idle_other_ps");
    d->n_launched = (uint64_t)get_count(r, o, "launched");
    d->n_short = (uint64_t)get_count(r, o, "short");
    d->queue_max = (uint32_t)get_count(r, o, "queue_max");
    d->queue_mean = get_num(r, o, "queue_mean");
    d->comm_ps = get_int(r, o, "comm_ps");
    d->comm_hidden_ps = get_int(r, o, "comm_hidden_ps");
    d->comm_overlap_pct = get_num(r, o, "comm_overlap_pct");
    d->comm_wait_ps = get_int(r, o, "comm_wait_ps");
}

/* An op's Python stack: [file, line, function, library] frames, innermost first. */
static void read_stack(reader *r, yyjson_val *o, jp_op_stat *p) {
    yyjson_val *v = field(r, o, "stack");
    size_t n = v && yyjson_is_arr(v) ? yyjson_arr_size(v) : 0;
    if (v && (!yyjson_is_arr(v) || n > JP_HLO_MAX_STACK)) fail(r, "stack", "is not an array of at most 64 frames");
    jp_source_frame *frames = r->rc || !n ? NULL : jp_arena_alloc(r->arena, n * sizeof *frames);
    if (n && !frames && !r->rc) r->rc = jp_error_set(r->err, JP_ERR_NOMEM, 0, "out of memory");
    for (size_t i = 0; frames && !r->rc && i < n; i++) {
        yyjson_val *f = yyjson_arr_get(v, i), *file = yyjson_arr_get(f, 0), *line = yyjson_arr_get(f, 1),
                   *fn = yyjson_arr_get(f, 2), *lib = yyjson_arr_get(f, 3);
        if (!yyjson_is_arr(f) || yyjson_arr_size(f) != 4 || !yyjson_is_str(file) || !yyjson_is_uint(line) ||
            yyjson_get_uint(line) > UINT32_MAX || !yyjson_is_str(fn) || !yyjson_is_int(lib)) {
            fail(r, "stack", "holds a frame that is not [file, line, function, library]");
            break;
        }
        frames[i] = (jp_source_frame){jp_arena_strndup(r->arena, yyjson_get_str(file), yyjson_get_len(file)),
                                      jp_arena_strndup(r->arena, yyjson_get_str(fn), yyjson_get_len(fn)),
                                      (uint32_t)yyjson_get_uint(line), yyjson_get_sint(lib) != 0};
        if ((!frames[i].file || !frames[i].function) && !r->rc) r->rc = jp_error_set(r->err, JP_ERR_NOMEM, 0, "out of memory");
    }
    p->stack = frames, p->n_stack = frames ? (uint32_t)n : 0;
}

static void read_op(reader *r, yyjson_val *o, void *out) {
    jp_op_stat *p = out;
    p->name = get_str(r, o, "name");
    p->module = get_str(r, o, "module");
    p->category = get_str(r, o, "category");
    p->op_name = get_str(r, o, "op_name");
    p->scope = get_str(r, o, "scope");
    p->source = get_str(r, o, "source");
    p->function = get_str(r, o, "function");
    p->dtype = get_str(r, o, "dtype");
    p->device = (uint32_t)get_count(r, o, "device");
    p->n_devices = (uint32_t)get_count(r, o, "devices");
    p->count = (uint64_t)get_count(r, o, "count");
    p->total_ps = get_count(r, o, "total_ps");
    p->self_ps = get_int(r, o, "self_ps");
    p->min_ps = get_int(r, o, "min_ps");
    p->max_ps = get_int(r, o, "max_ps");
    p->flops = get_num(r, o, "flops");
    p->bytes = get_num(r, o, "bytes");
    p->hlo_flops = get_num(r, o, "hlo_flops");
    p->xla_flops = get_num(r, o, "xla_flops");
    p->transcendentals = get_num(r, o, "transcendentals");
    p->self_sumsq = get_num(r, o, "self_sumsq");
    p->step_sd_ps = get_num(r, o, "step_sd_ps");
    p->bound = (int)get_int(r, o, "bound");
    p->roof_pct = get_num(r, o, "roof_pct");
    p->program_id = get_int(r, o, "program_id");
    p->no_xla_op = get_int(r, o, "no_xla_op") != 0;
    p->autotuning = get_int(r, o, "autotuning") != 0;
    p->no_rate = get_int(r, o, "no_rate") != 0;
    p->remat = get_int(r, o, "remat") != 0;
    p->wasted_ps = get_int(r, o, "wasted_ps");
    read_stack(r, o, p);
    if (p->bound < JP_BOUND_UNKNOWN || p->bound > JP_BOUND_MEMORY) fail(r, "bound", "is not 0, 1 or 2");
}

static void read_finding(reader *r, yyjson_val *o, void *out) {
    jp_finding *f = out;
    f->id = get_str(r, o, "id");
    f->severity = get_name(r, o, "severity", jp_rating_name, JP_RATING_GOOD, JP_RATING_ABOVE_PEAK);
    f->title = get_str(r, o, "title");
    f->evidence = get_str(r, o, "evidence");
    f->fix = get_str(r, o, "fix");
}

static void read_health(reader *r, yyjson_val *o, void *out) {
    jp_health *h = out;
    h->kind = get_str(r, o, "kind");
    h->host = get_str(r, o, "host");
    h->text = get_str(r, o, "text");
}

static void read_step_summary(reader *r, yyjson_val *top, jp_step_summary *s) {
    yyjson_val *o = field(r, top, "step_summary");
    if (o && !yyjson_is_obj(o)) fail(r, "step_summary", "is not an object");
    if (!o || !yyjson_is_obj(o)) return;
    s->method = get_str(r, o, "method");
    s->mean_ps = get_duration_num(r, o, "mean_ps");
    s->median_ps = get_duration_num(r, o, "median_ps");
    s->p90_ps = get_duration_num(r, o, "p90_ps");
    s->std_ps = get_duration_num(r, o, "std_ps");
    s->min_ps = get_duration_num(r, o, "min_ps");
    s->max_ps = get_duration_num(r, o, "max_ps");
    get_parts(r, o, "parts_ps", s->part_ps);
    s->total_ps = get_time(r, o, "total_ps", 0);
    s->n_no_device = (size_t)get_count(r, o, "no_device_steps");
    s->gap_ps = get_time(r, o, "gap_ps", 0);
    get_parts(r, o, "part_median_ps", s->part_median_ps);
}

/* Every op's device and every step in order: what the merge and the renderers index by. */
static void check_links(reader *r, const jp_host_summary *s) {
    for (size_t i = 0; !r->rc && i < s->in.n_ops; i++)
        if (s->in.ops[i].device >= s->n_devices) r->where = "ops", r->index = i, fail(r, "device", "names no device");
    int64_t total = 0; /* the steps' time together within 2^62: the merge's sums over steps cannot overflow */
    for (size_t i = 0; !r->rc && i < s->in.n_steps; i++) {
        if (i && s->in.steps[i].start_ps < s->in.steps[i - 1].start_ps)
            r->where = "steps", r->index = i, fail(r, "start_ps", "is before the previous step's");
        if ((total += s->in.steps[i].dur_ps) > 2 * JP_XN_TIME_LIMIT_PS)
            r->where = "steps", r->index = i, fail(r, "dur_ps", "takes the steps past 2^62 ps together");
    }
}

static void read_top(reader *r, yyjson_val *top, jp_host_summary *s) {
    yyjson_val *version = yyjson_obj_get(top, "jaxprof_host_summary");
    if (!version || !yyjson_is_int(version)) {
        fail(r, "jaxprof_host_summary", "(the schema version) is missing: not a jaxprof host summary");
        return;
    }
    if (yyjson_get_sint(version) != JP_SUMMARY_VERSION) {
        r->rc = jp_error_set(r->err, JP_ERR_CORRUPT, 0, "%s: host summary schema version %lld; this jaxprof reads version %d "
                             "(jaxprof summarize writes it anew)", r->path, (long long)yyjson_get_sint(version), JP_SUMMARY_VERSION);
        return;
    }
    s->in.name = get_str(r, top, "host");
    s->file = get_str(r, top, "file");
    s->file_bytes = (uint64_t)get_count(r, top, "file_bytes");
    s->in.start_ns = get_count(r, top, "capture_start_ns");
    if (s->in.start_ns > (int64_t)1 << 62) fail(r, "capture_start_ns", "is past 2^62 ns (the year 2116)");
    s->platform = get_name(r, top, "platform", jp_platform_name, JP_PLATFORM_CPU, JP_PLATFORM_TPU);
    s->n_events = (uint64_t)get_count(r, top, "events");
    s->first_ps = get_time(r, top, "first_ps", 1);
    s->span_ps = get_time(r, top, "span_ps", 0);
    s->in.op_self_ps = get_time(r, top, "op_self_ps", 0);
    s->n_ops_total = (size_t)get_count(r, top, "ops_total");
    read_step_summary(r, top, &s->in.step_summary);
    s->devices = get_array(r, top, "devices", sizeof(jp_device), 1 << 12, &s->n_devices, read_device);
    s->in.steps = get_array(r, top, "steps", sizeof(jp_step), 1 << 20, &s->in.n_steps, read_step);
    s->in.ops = get_array(r, top, "ops", sizeof(jp_op_stat), JP_SUMMARY_TOP_OPS, &s->in.n_ops, read_op);
    s->findings = get_array(r, top, "findings", sizeof(jp_finding), 1 << 10, &s->n_findings, read_finding);
    s->health = get_array(r, top, "capture_health", sizeof(jp_health), 1 << 16, &s->n_health, read_health);
    if (!r->rc && !*s->in.name) fail(r, "host", "is empty");
    check_links(r, s);
}

/* The whole file, malloc'd; JP_ERR_IO or JP_ERR_LIMIT naming it. Opened as the xplane reader opens
 * its files: no link followed, a FIFO or other non-regular file refused at once, not waited on. */
static int read_all(const char *path, char **data, size_t *len, jp_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) return jp_error_set(err, JP_ERR_IO, 0, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    int rc = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? JP_OK : jp_error_set(err, JP_ERR_IO, 0, "%s: not a regular file", path);
    if (!rc && st.st_size > JP_SUMMARY_MAX_BYTES)
        rc = jp_error_set(err, JP_ERR_LIMIT, JP_SUMMARY_MAX_BYTES, "%s: larger than a host summary can be (%d MiB)", path,
                          JP_SUMMARY_MAX_BYTES >> 20);
    size_t cap = rc ? 0 : (size_t)st.st_size + 1; /* one more: a file that grew since is read to that byte and refused */
    if (!rc && !(*data = malloc(cap))) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    *len = 0;
    while (!rc && *len < cap) {
        ssize_t n = read(fd, *data + *len, cap - *len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) rc = jp_error_set(err, JP_ERR_IO, *len, "%s: read failed at byte %zu: %s", path, *len, strerror(errno));
        if (n <= 0) break;
        *len += (size_t)n;
    }
    if (!rc && *len != (size_t)st.st_size) rc = jp_error_set(err, JP_ERR_IO, 0, "%s: changed while being read", path);
    close(fd);
    return rc;
}

int jp_summary_parse(jp_arena *arena, const char *text, size_t len, const char *path, jp_host_summary *out,
                     jp_error *err) {
    memset(out, 0, sizeof *out);
    yyjson_read_err e;
    yyjson_doc *doc = yyjson_read_opts((char *)(uintptr_t)text, len, 0, NULL, &e);
    int rc = JP_OK;
    if (!doc)
        rc = jp_error_set(err, e.code == YYJSON_READ_ERROR_UNEXPECTED_END ? JP_ERR_TRUNCATED : JP_ERR_CORRUPT, e.pos,
                          "%s: bad host summary at byte %zu: %s", path, e.pos, e.msg);
    yyjson_val *top = doc ? yyjson_doc_get_root(doc) : NULL;
    if (!rc && !yyjson_is_obj(top)) rc = jp_error_set(err, JP_ERR_CORRUPT, 0, "%s: bad host summary: not a JSON object", path);
    if (!rc) {
        reader r = {.arena = arena, .path = path, .err = err, .where = ""};
        read_top(&r, top, out);
        rc = r.rc;
        out->path = rc ? "" : jp_arena_strndup(arena, path, strlen(path));
        if (!rc && !out->path) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    }
    yyjson_doc_free(doc);
    return rc;
}

int jp_summary_read(jp_arena *arena, const char *path, jp_host_summary *out, jp_error *err) {
    memset(out, 0, sizeof *out);
    char *data = NULL;
    size_t len = 0;
    int rc = read_all(path, &data, &len, err);
    if (!rc) rc = jp_summary_parse(arena, data, len, path, out, err);
    free(data);
    return rc;
}
