/* trace.c - jp_trace_export: writes every row of a profile's XSpaces (their lines and derived rows,
 * from jp_layout_walk), each laid out on strictly nesting threads, with flow ids, through the
 * Chrome JSON or Perfetto writer, streaming into a plain or gzip file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/map.h"
#include "base/outfile.h"
#include "base/text.h"
#include "timeline/layout.h"
#include "export/trace.h"
#include "jaxprof/jaxprof_results.h"
#include "profile/profile.h"

enum { SINK_BUFFER = 1 << 20 };


/* One plane being exported. */
typedef struct plane_ctx {
    jp_xspace *xs;
    const jp_plane *plane;
    uint32_t host;          /* host index, for flow ids */
    int64_t shift_ps;       /* the host's offset on the shared time axis (multi-host) */
    uint32_t pid;
    int process_written;
    jp_layout_flow_stats flow; /* the stats marking flow ends */
    int has_flows;          /* 1 when the plane has any flow stat */
    jp_str process_name;
} plane_ctx;

typedef struct exporter {
    const jp_trace_options *opt;
    const char *out_path;   /* for write errors */
    jp_trace_stats *st;
    jp_error *err;
    jp_trace_writer w;
    const jp_analysis *a;
    jp_arena arena;         /* step names, process names, unknown-metadata names */
    int64_t base_ps;        /* the first event's start: time 0 of the trace */
    int64_t *shift_ps;      /* per host: its offset on the shared time axis (in arena) */
    int64_t from_ps, to_ps; /* absolute times kept */
    uint32_t next_tid;
    size_t n_hosts;
    jp_vec items;           /* jp_layout_item, for the current row */
    jp_vec args;            /* jp_trace_arg, for the current event */
    jp_vec lanes;           /* jp_vec of int64_t: open slice ends per lane */
    const char *const *hosts; /* host names, one per XSpace */
    uint32_t next_pid;      /* the next process id */
    plane_ctx pc;           /* the plane being written (jp_layout_walk's) */
    jp_map flows;           /* (source, host, id in the profile) -> flow number << 2 | ends seen */
    uint32_t n_flows;       /* flow numbers given out */
    jp_map unknown;         /* metadata id -> index into unknown_names */
    jp_vec unknown_names;   /* jp_str "<unknown metadata ID>", in arena, one per id met */
} exporter;

static int nomem(exporter *x) { return jp_error_set(x->err, JP_ERR_NOMEM, 0, "out of memory exporting the trace"); }

/* ---- the output file -------------------------------------------------------------------------- */

int jp_trace_sink_flush(jp_trace_sink *s) {
    if (s->failed) return -1;
    if (s->n == 0) return 0;
    int ok = s->gz ? gzwrite(s->gz, s->buf, (unsigned)s->n) == (int)s->n : fwrite(s->buf, 1, s->n, s->file) == s->n;
    if (!ok) {
        s->failed = 1;
        return -1;
    }
    s->written += s->n;
    s->n = 0;
    return 0;
}

/* Opens a stream (gzip at level > 0) on the output's temporary file. */
static int sink_open(jp_trace_sink *s, const jp_outfile *of, int level, jp_error *err) {
    memset(s, 0, sizeof *s);
    s->cap = SINK_BUFFER;
    if (!(s->buf = malloc(s->cap))) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    if (level > 0) {
        char mode[4] = {'w', 'b', (char)('0' + (level > 9 ? 9 : level)), 0};
        int fd = jp_outfile_dup(of);
        s->gz = fd >= 0 ? gzdopen(fd, mode) : NULL;
        if (s->gz) gzbuffer(s->gz, SINK_BUFFER);
        else if (fd >= 0) close(fd);
    } else {
        s->file = jp_outfile_stdio(of);
    }
    if (!s->gz && !s->file) {
        int saved = errno;
        free(s->buf);
        s->buf = NULL;
        return jp_error_create(err, of->out_path, saved);
    }
    return JP_OK;
}

/* Flushes and closes; reports the first write error. */
static int sink_close(jp_trace_sink *s, const char *path, jp_error *err) {
    int rc = jp_trace_sink_flush(s) == 0 ? JP_OK : JP_ERR_IO;
    int saved = errno;
    if (s->gz && gzclose(s->gz) != Z_OK) rc = JP_ERR_IO, saved = errno;
    if (s->file && fclose(s->file) != 0) rc = JP_ERR_IO, saved = errno;
    s->gz = NULL;
    s->file = NULL;
    free(s->buf);
    s->buf = NULL;
    if (rc) return jp_error_set(err, rc, 0, "%s: write failed: %s", path, saved ? strerror(saved) : "error");
    return JP_OK;
}

/* ---- options ------------------------------------------------------------------------------------ */

jp_trace_options jp_trace_options_default(void) {
    jp_trace_options o;
    memset(&o, 0, sizeof o);
    o.format = JP_TRACE_CHROME;
    o.gzip_level = -1;
    o.first_step = 0;
    o.last_step = -1;
    return o;
}

const char *jp_trace_default_name(int format) {
    return format == JP_TRACE_PERFETTO ? "perfetto_trace.pftrace" : "perfetto_trace.json.gz";
}

static int gzip_level(const jp_trace_options *opt, const char *out_path) {
    if (opt->gzip_level >= 0) return opt->gzip_level;
    size_t n = strlen(out_path);
    return n > 3 && strcmp(out_path + n - 3, ".gz") == 0 ? 1 : 0;
}

int jp_trace_default_path(const char *path, int format, char *buf, size_t cap, jp_error *err) {
    jp_error_clear(err);
    jp_vec files = {0};
    int rc = jp_profile_files(path, &files, err);
    if (rc == JP_OK && files.n == 0) rc = jp_error_set(err, JP_ERR_NOT_FOUND, 0, "%s: no profile found", path);
    if (rc == JP_OK) {
        const char *file = JP_VEC_AT(&files, jp_profile_file, 0).path, *slash = strrchr(file, '/');
        int dir_len = slash ? (int)(slash - file) : 1;
        const char *dir = slash ? file : ".";
        int n = snprintf(buf, cap, "%.*s/%s", dir_len, dir, jp_trace_default_name(format));
        if (n < 0 || (size_t)n >= cap) rc = jp_error_set(err, JP_ERR_LIMIT, 0, "%s: output path too long", path);
    }
    jp_profile_files_free(&files);
    return rc;
}

/* ---- times -------------------------------------------------------------------------------------- */

static int kept(const exporter *x, int64_t start, int64_t dur) {
    if (dur == 0) return start >= x->from_ps && start < x->to_ps;
    if (dur < x->opt->min_duration_ps) return 0;
    return start < x->to_ps && start + dur > x->from_ps;
}

/* a + b for b >= 0, INT64_MAX instead of overflowing. */
static int64_t add_saturating(int64_t a, int64_t b) { return a > 0 && b > INT64_MAX - a ? INT64_MAX : a + b; }

/* The absolute interval kept: the window (relative to time 0) within the steps asked for. */
static int find_window(exporter *x) {
    const jp_trace_options *o = x->opt;
    x->from_ps = INT64_MIN;
    x->to_ps = INT64_MAX;
    if (o->window_end_ps > o->window_start_ps && o->window_start_ps >= 0) { /* an open end is INT64_MAX */
        x->from_ps = add_saturating(x->base_ps, o->window_start_ps);
        x->to_ps = add_saturating(x->base_ps, o->window_end_ps);
    }
    if (o->last_step < o->first_step) return JP_OK;
    int64_t from = INT64_MAX, to = INT64_MIN;
    for (size_t i = 0; i < x->a->n_steps; i++) {
        const jp_step *s = &x->a->steps[i];
        if (s->step_num < o->first_step || s->step_num > o->last_step) continue;
        if (s->start_ps < from) from = s->start_ps;
        if (s->start_ps + s->dur_ps > to) to = s->start_ps + s->dur_ps;
    }
    if (from > to) {
        if (x->a->n_steps == 0) return jp_error_set(x->err, JP_ERR_NOT_FOUND, 0, "the profile has no steps");
        return jp_error_set(x->err, JP_ERR_NOT_FOUND, 0, "no step numbered %lld..%lld (the profile has steps %lld..%lld)",
                            (long long)o->first_step, (long long)o->last_step, (long long)x->a->steps[0].step_num,
                            (long long)x->a->steps[x->a->n_steps - 1].step_num);
    }
    if (from > x->from_ps) x->from_ps = from;
    if (to < x->to_ps) x->to_ps = to;
    return JP_OK;
}

/* ---- laying a row out on threads ----------------------------------------------------------------- */

/* ---- one event's arguments and flows ------------------------------------------------------------ */

/* The flow id to write for one end, 0 for none: only flows whose both ends exist are written
 * (a launch whose kernel was not captured has no arrow). Ids are renumbered 1, 2, ... in order of
 * appearance: profile ids use high bits that JavaScript numbers (Chrome JSON viewers) cannot hold
 * exactly. x->flows maps (source, host, id) to (number << 2 | ends seen), from find_flows. */
static uint64_t flow_id(exporter *x, int source, uint32_t host, int64_t id) {
    uint32_t *slot = jp_map_value(&x->flows, (uint64_t)source, host, (uint64_t)id, 0, NULL);
    if (!slot || (*slot & 3) != 3) return 0;
    if ((*slot >> 2) == 0) *slot |= ++x->n_flows << 2;
    return *slot >> 2;
}

static int add_stats(exporter *x, const plane_ctx *pc, jp_stats_iter it, jp_trace_event *ev) {
    jp_stat st;
    int rc;
    while ((rc = jp_stats_next(&it, &st, x->err)) == 1) {
        int source, out = jp_layout_flow_end(&pc->flow, &st, &source);
        uint64_t id = out >= 0 ? flow_id(x, source, pc->host, jp_stat_int(&st)) : 0;
        if (id) *(out ? &ev->flow_out : &ev->flow_in) = id;
        const jp_stat_meta *sm = jp_plane_stat_meta_view(pc->plane, st.metadata_id);
        jp_trace_arg a = {.name = sm ? sm->name : (jp_str){"stat", 4}, .kind = st.kind};
        switch (st.kind) {
        case JP_STAT_INT: a.v.i = st.v.i; break;
        case JP_STAT_UINT: a.v.u = st.v.u; break;
        case JP_STAT_DOUBLE: a.v.d = st.v.d; break;
        case JP_STAT_BYTES: a.v.s = st.v.s; break;
        default:
            a.kind = JP_STAT_STR;
            if ((rc = jp_stat_str(pc->xs, pc->plane, &st, &a.v.s, x->err)) < 0) return rc;
        }
        /* An event's own stat replaces its metadata's stat of the same name. */
        jp_trace_arg *args = x->args.data;
        size_t k = 0;
        while (k < x->args.n && !(args[k].name.ptr == a.name.ptr && args[k].name.len == a.name.len)) k++;
        jp_trace_arg *slot = k < x->args.n ? &args[k] : jp_vec_push(&x->args, sizeof a);
        if (!slot) return nomem(x);
        *slot = a;
    }
    return rc;
}

/* "<unknown metadata ID>", the name of an event whose metadata id names no metadata of its plane
 * (`report` warns of them): one arena copy per id, as the Perfetto writer interns names by address. */
static int unknown_meta_name(exporter *x, uint64_t id, jp_str *out) {
    int found;
    uint32_t k = jp_map_get_or_put(&x->unknown, id, 0, 0, (uint32_t)x->unknown_names.n, &found);
    if (k == UINT32_MAX) return nomem(x);
    if (!found) {
        char text[48];
        int n = snprintf(text, sizeof text, "<unknown metadata %llu>", (unsigned long long)id);
        jp_str *slot = jp_vec_push(&x->unknown_names, sizeof *slot);
        char *copy = slot ? jp_arena_strndup(&x->arena, text, (size_t)n) : NULL;
        if (!copy) return nomem(x);
        *slot = (jp_str){copy, (size_t)n};
    }
    *out = JP_VEC_AT(&x->unknown_names, jp_str, k);
    return JP_OK;
}

static int write_source_event(exporter *x, const plane_ctx *pc, const jp_line *ln, const jp_layout_item *it) {
    const jp_event *e = &ln->events[it->index];
    const jp_event_meta *em = jp_plane_event_meta_view(pc->plane, e->metadata_id);
    jp_trace_event ev = {.ts_ns = it->start_ns, .dur_ns = it->end_ns - it->start_ns, .instant = it->instant};
    ev.name = em ? (em->name.len ? em->name : em->display_name) : (jp_str){"", 0};
    if (!em && unknown_meta_name(x, e->metadata_id, &ev.name) != JP_OK) return JP_ERR_NOMEM;
    x->args.n = 0;
    int rc = em ? add_stats(x, pc, jp_stats_of_event_meta(pc->xs, em), &ev) : JP_OK;
    if (rc >= 0) rc = add_stats(x, pc, jp_stats_of_event(pc->xs, e), &ev);
    if (rc < 0) return rc;
    if (e->num_occurrences > 0) { /* aggregated: no time of its own, placed at the line's start */
        jp_trace_arg *a = jp_vec_push(&x->args, sizeof *a);
        if (!a) return nomem(x);
        *a = (jp_trace_arg){.name = {"num_occurrences", 15}, .kind = JP_STAT_INT, .v.i = e->num_occurrences};
    }
    ev.args = x->args.data;
    ev.n_args = x->args.n;
    x->st->flows += ev.flow_out != 0;
    x->st->events_out++;
    return x->w.event(&x->w, &ev) ? nomem(x) : JP_OK;
}

/* A derived event with the args the exporter writes for it: a step's number; an XLA op's module and
 * kernels; an XLA module execution's kernels and run id. */
static int write_derived_event(exporter *x, int kind, const jp_layout_record *d, const jp_layout_item *it) {
    jp_trace_event ev = {.name = d->name, .ts_ns = it->start_ns, .dur_ns = it->end_ns - it->start_ns};
    jp_trace_arg args[2], kernels = {.name = {"kernels", 7}, .kind = JP_STAT_INT, .v.i = d->kernels};
    if (kind == JP_LAYOUT_ROW_STEPS) {
        args[0] = (jp_trace_arg){.name = {"step_num", 8}, .kind = JP_STAT_INT, .v.i = d->step->step_num};
        ev.n_args = 1;
    } else if (kind == JP_LAYOUT_ROW_XLA_OPS) {
        args[0] = (jp_trace_arg){.name = {"hlo_module", 10}, .kind = JP_STAT_STR, .v.s = d->module};
        args[1] = kernels;
        ev.n_args = 2;
    } else {
        args[0] = kernels;
        args[1] = (jp_trace_arg){.name = {"run_id", 6}, .kind = JP_STAT_INT, .v.i = d->run_id};
        ev.n_args = 2;
    }
    ev.args = args;
    x->st->derived++;
    return x->w.event(&x->w, &ev) ? nomem(x) : JP_OK;
}

/* ---- rows ---------------------------------------------------------------------------------------- */

static void ensure_process(exporter *x, plane_ctx *pc) {
    if (pc->process_written) return;
    pc->process_written = 1;
    x->w.process(&x->w, pc->pid, pc->process_name, pc->pid);
}

/* The events of a row that pass the filters, as items. */
static int collect_items(exporter *x, const plane_ctx *pc, const jp_layout_row *r) {
    x->items.n = 0;
    size_t n = r->line ? r->line->n_events : r->n_recs;
    for (size_t i = 0; i < n; i++) {
        int64_t start = 0, dur = 0;
        if (r->line) {
            int rc = jp_layout_event_span(pc->xs, r->line, &r->line->events[i], &start, &dur, x->err);
            if (rc) return rc;
            start += pc->shift_ps;
        } else {
            start = r->recs[i].start_ps;
            dur = r->recs[i].end_ps - start;
        }
        if (!kept(x, start, dur)) {
            if (r->line) x->st->events_cut++;
            continue;
        }
        jp_layout_item *it = jp_vec_push(&x->items, sizeof *it);
        if (!it) return nomem(x);
        *it = (jp_layout_item){.start_ns = jp_layout_ns(x->base_ps, start),
                               .end_ns = jp_layout_ns(x->base_ps, start + dur), .index = (uint32_t)i, .instant = dur == 0};
    }
    return JP_OK;
}

/* Writes one row: its items on the row's thread and, for partial overlaps, extra threads. */
static int write_row(exporter *x, plane_ctx *pc, const jp_layout_row *r) {
    int rc = collect_items(x, pc, r);
    if (rc || x->items.n == 0) return rc;
    jp_layout_item *items = x->items.data;
    size_t n = x->items.n;
    uint32_t n_lanes = jp_layout_lanes(&x->lanes, items, n);
    if (n_lanes == 0) return nomem(x);
    x->st->overlap_tracks += n_lanes - 1;
    ensure_process(x, pc);
    for (uint32_t lane = 0; lane < n_lanes && rc == JP_OK; lane++) {
        char name[300];
        jp_str thread_name = r->name;
        if (lane > 0) { /* the row's name clipped on a whole character, so the lane always shows */
            jp_text t = jp_text_make(name, sizeof name);
            jp_text_put_clipped(&t, r->name.ptr, r->name.len, 200);
            jp_text_printf(&t, " (overlap %u)", lane);
            thread_name = (jp_str){t.buf, t.len};
        }
        uint32_t tid = x->next_tid++;
        x->w.thread(&x->w, pc->pid, tid, thread_name, tid);
        for (size_t i = 0; i < n && rc == JP_OK; i++) {
            if (items[i].lane != lane) continue;
            rc = r->line ? write_source_event(x, pc, r->line, &items[i])
                         : write_derived_event(x, r->kind, &r->recs[items[i].index], &items[i]);
        }
        x->w.thread_end(&x->w);
        if (rc == JP_OK && x->w.sink->failed) /* disk full: stop now, not after the last event */
            rc = jp_error_set(x->err, JP_ERR_IO, 0, "%s: write failed: %s", x->out_path, strerror(errno));
    }
    return rc;
}

/* ---- planes -------------------------------------------------------------------------------------- */

static void resolve_flows(plane_ctx *pc) {
    pc->has_flows = jp_layout_flow_stats_of(pc->plane, &pc->flow);
}

static int process_name(exporter *x, plane_ctx *pc, const char *host) {
    if (x->n_hosts == 1) {
        pc->process_name = pc->plane->name;
        return JP_OK;
    }
    size_t len = pc->plane->name.len + strlen(host) + 4;
    char *s = jp_arena_alloc(&x->arena, len);
    if (!s) return nomem(x);
    snprintf(s, len, "%s: %.*s", host, (int)pc->plane->name.len, pc->plane->name.ptr);
    pc->process_name = (jp_str){s, strlen(s)};
    return JP_OK;
}

/* What mark_flow_end needs: the exporter and the plane whose events are walked. */
typedef struct flow_marker {
    exporter *x;
    const plane_ctx *pc;
} flow_marker;

static int mark_flow_end(void *ctx, int source, int is_start, int64_t id) {
    flow_marker *m = ctx;
    uint32_t *slot = jp_map_value(&m->x->flows, (uint64_t)source, m->pc->host, (uint64_t)id, 0, NULL);
    if (!slot) return nomem(m->x);
    *slot |= is_start ? 1u : 2u;
    return 0;
}

/* Marks which ends of each flow are written (bit 0: start, bit 1: end), so flow_id writes only
 * pairs: an end on an event that the window or --min-duration-us leaves out does not count. */
static int find_flows(exporter *x, plane_ctx *pc) {
    if (!pc->has_flows) return JP_OK;
    flow_marker m = {x, pc};
    for (size_t l = 0; l < pc->plane->n_lines; l++) {
        const jp_line *ln = &pc->plane->lines[l];
        for (size_t e = 0; e < ln->n_events; e++) {
            int64_t start, dur;
            int rc = jp_layout_event_span(pc->xs, ln, &ln->events[e], &start, &dur, x->err);
            if (rc == JP_OK && kept(x, start + pc->shift_ps, dur))
                rc = jp_layout_event_flows(pc->xs, pc->plane, &pc->flow, &ln->events[e], mark_flow_end, &m, x->err);
            if (rc) return rc;
        }
    }
    return JP_OK;
}

/* jp_layout_walk's plane callback: the plane's process id, name and flow stats. */
static int begin_plane(void *ctx, jp_xspace *xs, const jp_plane *pl, uint32_t host) {
    exporter *x = ctx;
    x->pc = (plane_ctx){.xs = xs, .plane = pl, .host = host, .shift_ps = x->shift_ps[host], .pid = x->next_pid++};
    resolve_flows(&x->pc);
    return process_name(x, &x->pc, x->hosts[host]);
}

static int write_layout_row(void *ctx, const jp_layout_row *r) {
    exporter *x = ctx;
    return write_row(x, &x->pc, r);
}

/* Every plane of every host, devices first, each with its rows (jp_layout_walk); the flows are
 * found first, so that only those with both ends written get ids. */
static int export_all(exporter *x, jp_xspace *const *xs, const char *const *hosts, size_t n_hosts) {
    int rc = JP_OK;
    for (size_t h = 0; rc == JP_OK && h < n_hosts; h++) {
        size_t n;
        const jp_plane *planes = jp_xspace_planes(xs[h], &n);
        for (size_t p = 0; rc == JP_OK && p < n; p++) {
            plane_ctx pc = {.xs = xs[h], .plane = &planes[p], .host = (uint32_t)h, .shift_ps = x->shift_ps[h]};
            resolve_flows(&pc);
            rc = find_flows(x, &pc);
        }
    }
    x->hosts = hosts;
    x->next_pid = 1;
    jp_layout_walker w = {begin_plane, write_layout_row, x};
    return rc == JP_OK ? jp_layout_walk(xs, n_hosts, x->shift_ps, x->a, &x->arena, &w, x->err) : rc;
}

/* ---- the entry point ----------------------------------------------------------------------------- */

/* Streams the trace into a temporary file beside the output and renames it into place. */
static int write_file(exporter *x, jp_xspace *const *xs, const char *const *hosts, size_t n, const char *path) {
    jp_outfile of;
    jp_trace_sink sink;
    int rc = jp_outfile_open(&of, x->out_path, &x->opt->temp, x->err);
    if (rc == JP_OK) rc = sink_open(&sink, &of, gzip_level(x->opt, x->out_path), x->err);
    if (rc != JP_OK) {
        jp_outfile_abort(&of);
        return rc;
    }
    rc = x->opt->format == JP_TRACE_PERFETTO ? jp_trace_perfetto_init(&x->w, &sink) : jp_trace_chrome_init(&x->w, &sink);
    if (rc == JP_OK) {
        x->w.begin(&x->w);
        rc = export_all(x, xs, hosts, n);
        if (rc == JP_OK) x->w.end(&x->w, x->st, path);
    } else {
        rc = nomem(x);
    }
    if (x->w.free) x->w.free(&x->w);
    x->st->bytes = sink.written + sink.n;
    int closed = sink_close(&sink, x->out_path, rc ? NULL : x->err);
    if (rc == JP_OK) rc = closed;
    if (rc == JP_OK) return jp_outfile_commit(&of, x->err);
    jp_outfile_abort(&of);
    return rc;
}

static int write_trace(exporter *x, jp_xspace *const *xs, const char *const *files, const char *const *hosts,
                       size_t n, const char *path) {
    jp_profile *prof;
    int rc = jp_profile_from_xspaces(&prof, xs, files, n, path, NULL, x->err);
    if (rc) return rc;
    x->a = jp_profile_analysis(prof);
    rc = jp_layout_host_shifts(xs, files, n, x->a, &x->arena, &x->shift_ps, x->err);
    if (rc == JP_OK) rc = jp_layout_origin(xs, n, x->shift_ps, x->err, &x->base_ps);
    if (rc == JP_OK) rc = find_window(x);
    if (rc == JP_OK) rc = write_file(x, xs, hosts, n, path);
    jp_profile_free(prof);
    return rc;
}

int jp_trace_export(const char *path, const char *out_path, const jp_trace_options *opt, jp_trace_stats *stats,
                    jp_error *err) {
    jp_error_clear(err);
    jp_trace_stats local;
    jp_trace_options defaults = jp_trace_options_default();
    exporter x = {.opt = opt ? opt : &defaults, .out_path = out_path, .st = stats ? stats : &local, .err = err,
                  .next_tid = 1};
    memset(x.st, 0, sizeof *x.st);
    if (!path || !out_path || !*out_path) return jp_error_set(err, JP_ERR_ARG, 0, "export needs a profile and an output path");
    int rc = jp_profile_output_check(path, out_path, err);
    if (rc != JP_OK) return rc;
    jp_arena_init(&x.arena, 0);
    jp_vec xs = {0}, names = {0}, hosts = {0}; /* open XSpaces, their files, their host names */
    rc = jp_layout_open_hosts(path, x.opt->host, x.opt->max_inflate, &x.arena, &xs, &names, &hosts, err);
    for (size_t i = 0; i < xs.n; i++) x.st->events_in += jp_xspace_event_count(JP_VEC_AT(&xs, jp_xspace *, i));
    if (rc == JP_OK) {
        x.n_hosts = xs.n;
        rc = write_trace(&x, xs.data, names.data, hosts.data, xs.n, path);
    }
    for (size_t i = 0; i < xs.n; i++) jp_xspace_close(JP_VEC_AT(&xs, jp_xspace *, i));
    jp_vec_free(&xs), jp_vec_free(&names), jp_vec_free(&hosts);
    jp_vec_free(&x.items), jp_vec_free(&x.args);
    jp_map_deinit(&x.flows);
    jp_map_deinit(&x.unknown), jp_vec_free(&x.unknown_names);
    jp_layout_lanes_free(&x.lanes);
    jp_arena_deinit(&x.arena);
    return rc;
}
