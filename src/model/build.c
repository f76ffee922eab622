/* build.c - turns decoded XSpaces into the jp_model: reads the planes in order (HLO metadata
 * first), hands each to its reader (metadata.c, host.c, devices.c), and keeps the per-plane caches
 * and stat helpers they share (build_int.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "decode/xnames.h"
#include "decode/xspace.h"
#include "model/build_int.h"

void jp_model_init(jp_model *m, jp_arena *arena) {
    memset(m, 0, sizeof *m);
    m->arena = arena;
    jp_intern_init(&m->intern, arena);
    m->first_ps = INT64_MAX;
    m->last_ps = INT64_MIN;
}

void jp_model_deinit(jp_model *m) {
    jp_vec *vecs[] = {&m->hosts, &m->devices, &m->hlo, &m->opdefs, &m->ops, &m->host, &m->xfers,
                      &m->kernels, &m->mem, &m->execs, &m->device_steps, &m->spans, &m->warnings,
                      &m->capture_notes, &m->launch_calls, &m->launch_work,
                      &m->launch_names, &m->launch_lines, &m->tpu_runs, &m->hlo_misses, &m->kernel_renames};
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) jp_vec_free(vecs[i]);
    jp_map_deinit(&m->hlo_miss_index);
    jp_map_deinit(&m->rename_heads);
    jp_map_deinit(&m->op_index);
    jp_map_deinit(&m->run_program);
    jp_map_deinit(&m->kernel_index);
    jp_map_deinit(&m->launch_name_index);
    jp_intern_deinit(&m->intern);
}

int jp_model_warn(jp_model *m, const char *fmt, ...) {
    char text[JP_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1;
    for (size_t i = 0; i < len; i++) /* names come from the file: no terminal escapes */
        if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f) text[i] = '?';
    for (size_t i = 0; i < m->warnings.n; i++)
        if (strcmp(JP_VEC_AT(&m->warnings, const char *, i), text) == 0) return JP_OK;
    const char **slot = jp_vec_push(&m->warnings, sizeof *slot);
    if (!slot) return JP_ERR_NOMEM;
    if (!(*slot = jp_arena_strndup(m->arena, text, len))) {
        m->warnings.n--;
        return JP_ERR_NOMEM;
    }
    return JP_OK;
}

int jp_build_nomem(jp_error *err) { return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory building the model"); }

int jp_build_event_times(const jp_build_ctx *c, const jp_line *ln, const jp_event *ev, int64_t *start, int64_t *dur) {
    int rc = jp_xn_event_span(c->xs, ln, ev, start, dur, c->err);
    if (rc) return rc;
    if (*dur > JP_XN_TIME_LIMIT_PS - c->m->total_dur_ps) {
        unsigned long long at = (unsigned long long)(ev->raw.ptr - jp_xspace_input(c->xs).ptr);
        return jp_error_set(c->err, JP_ERR_LIMIT, at, "XEvent at byte %llu: event durations add up to more than %lld ps",
                            at, (long long)JP_XN_TIME_LIMIT_PS);
    }
    c->m->total_dur_ps += *dur;
    return JP_OK;
}

/* ---- stats ------------------------------------------------------------------------------------ */

/* Inflates the compressed string values the stream left as bytes (rare: writers compress only
 * long strings). */
static int inflate_values(jp_build_ctx *c, jp_ev_info *info) {
    for (uint32_t mask = info->compressed, k = 0; mask; k++, mask >>= 1) {
        if (!(mask & 1) || !jp_info_has(info, (int)k)) continue;
        jp_stat st = {.kind = JP_STAT_COMPRESSED, .v.s = info->v[k].s};
        int rc = jp_stat_str(c->xs, c->plane, &st, &info->v[k].s, c->err);
        if (rc < 0) return rc;
    }
    info->compressed = 0;
    return JP_OK;
}

int jp_build_read_stats(jp_build_ctx *c, jp_stats_iter it, jp_ev_info *info) {
    int rc = jp_read_stats(c->plane, &c->keys, it, info, c->err);
    return rc < 0 ? rc : inflate_values(c, info);
}

/* The interned string value of key k ("" when absent), or NULL when out of memory. A reference's
 * name is interned once per plane. */
const char *jp_build_info_interned(jp_build_ctx *c, const jp_ev_info *info, int k) {
    const jp_stat_meta *ref = jp_info_has(info, k) ? info->v[k].ref : NULL;
    if (!ref) return jp_intern_view(&c->m->intern, jp_info_str(info, k));
    const char **slot = &c->ref_names[ref - c->plane->stat_meta];
    if (!*slot) *slot = jp_intern_view(&c->m->intern, ref->name);
    return *slot;
}

/* Events whose metadata id names no metadata of the plane read as ops with an empty name: at the
 * end of their line, one warning says how many there were and where the first one is. */
static int warn_unknown_metadata(jp_build_ctx *c, const jp_line *ln) {
    jp_str line = ln->name.len ? ln->name : ln->display_name;
    int rc = jp_model_warn(c->m, "%s: %llu event%s on %.*s/%.*s name%s metadata ids the plane does not define "
                           "(first at byte %llu%s)", jp_xspace_name(c->xs), (unsigned long long)c->n_unknown,
                           c->n_unknown == 1 ? "" : "s", (int)(c->plane->name.len > 200 ? 200 : c->plane->name.len),
                           c->plane->name.ptr, (int)(line.len > 200 ? 200 : line.len), line.ptr,
                           c->n_unknown == 1 ? "s" : "", (unsigned long long)c->unknown_at,
                           jp_xspace_inflated(c->xs) ? " of the decompressed data" : "");
    c->n_unknown = 0;
    return rc ? jp_build_nomem(c->err) : 0;
}

/* The next event of line ln from the stream, its compressed values inflated: 1, 0 after the
 * line's last, or a negative status. */
int jp_build_next_event(jp_build_ctx *c, const jp_line *ln, jp_parsed **pe) {
    int rc = jp_stream_next(c->stream, ln, pe, c->err);
    if (rc == 1) {
        if (ln != c->ln) c->ln = ln, c->n_unknown = 0; /* a line left early leaves no count behind */
        c->ev_offset = (uint64_t)((*pe)->ev.raw.ptr - jp_xspace_input(c->xs).ptr);
        if (!(*pe)->em && !c->n_unknown++) c->unknown_at = c->ev_offset;
    } else if (rc == 0 && c->n_unknown) {
        rc = warn_unknown_metadata(c, ln);
    }
    if (rc == 1 && (*pe)->info.compressed && (rc = inflate_values(c, &(*pe)->info)) == JP_OK) rc = 1;
    return rc;
}

/* The interned name of an event's metadata ("" without one), or NULL when out of memory. */
const char *jp_build_event_name(jp_build_ctx *c, const jp_event_meta *em) {
    if (!em) return jp_intern_str(&c->m->intern, "", 0);
    const char **slot = &c->em_names[em - c->plane->event_meta];
    if (!*slot) *slot = jp_intern_view(&c->m->intern, em->name);
    return *slot;
}

/* ---- planes ---------------------------------------------------------------------------------- */

/* Reads one plane with `reader`, its caches set up before and released after. */
static int read_plane(jp_build_ctx *c, const jp_plane *plane, const jp_load_options *opt,
                      int (*reader)(jp_build_ctx *c, const jp_load_options *opt)) {
    c->plane = plane;
    jp_stat_keys_init(&c->keys, plane);
    c->em_names = calloc(plane->n_event_meta + 1, sizeof *c->em_names);
    c->em_xfer = calloc(plane->n_event_meta + 1, sizeof *c->em_xfer);
    c->ref_names = calloc(plane->n_stat_meta + 1, sizeof *c->ref_names);
    int rc = c->em_names && c->em_xfer && c->ref_names ? reader(c, opt) : jp_build_nomem(c->err);
    free(c->em_names);
    free(c->em_xfer);
    free(c->ref_names);
    c->em_names = c->ref_names = NULL;
    c->em_xfer = NULL;
    return rc;
}

/* Parsing moves to a second thread when it pays: two CPUs, enough events that handing chunks over
 * costs less than it saves (a 10 MB, 183 k-event profile is slower threaded), and most of them on
 * device planes. Host events cost the model more (classification, nesting, flows) than they cost to
 * parse, so on a host-heavy (XLA:CPU) profile the parser would wait on the model, and the hand-over
 * made it 4-19% slower in docs/benchmarks.md, where GPU profiles gain 11-13%. */
static int parse_threads(const jp_xspace *xs, const jp_load_options *opt) {
    if (opt && opt->threads > 0) return opt->threads > 1 ? 2 : 1;
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || jp_xspace_event_count(xs) < JP_THREADED_MIN_EVENTS) return 1;
    size_t n_planes;
    const jp_plane *planes = jp_xspace_planes(xs, &n_planes);
    uint64_t on_devices = 0;
    for (size_t i = 0; i < n_planes; i++)
        if (jp_plane_role_of(&planes[i], opt) == JP_ROLE_DEVICE)
            for (size_t l = 0; l < planes[i].n_lines; l++) on_devices += planes[i].lines[l].n_events;
    return on_devices * 2 >= jp_xspace_event_count(xs) ? 2 : 1;
}

static int read_planes(jp_build_ctx *c, const jp_plane *planes, size_t n_planes, const jp_load_options *opt) {
    for (size_t i = 0; i < n_planes; i++) /* HLO metadata first: ops look their modules up */
        if (jp_plane_role_of(&planes[i], opt) == JP_ROLE_METADATA) {
            int rc = read_plane(c, &planes[i], opt, jp_build_read_metadata);
            if (rc < 0) return rc;
        }
    for (size_t i = 0; i < n_planes; i++) {
        int role = jp_plane_role_of(&planes[i], opt), rc = JP_OK;
        if (role == JP_ROLE_HOST) rc = read_plane(c, &planes[i], opt, jp_build_read_host);
        else if (role == JP_ROLE_DEVICE) rc = read_plane(c, &planes[i], opt, jp_build_read_device);
        if (rc < 0) return rc;
    }
    return JP_OK;
}

/* When the capture started on the host's wall clock: the profile_start_time stat (ns since the
 * epoch) of the "Task Environment" plane that JAX writes since 0.4.36; 0 when absent. */
static int64_t capture_start_ns(const jp_xspace *xs, const jp_plane *planes, size_t n_planes) {
    for (size_t i = 0; i < n_planes; i++) {
        if (!jp_str_eq(planes[i].name, JP_XN_PLANE_TASK_ENV)) continue;
        jp_stats_iter it = jp_stats_of_plane(xs, &planes[i]);
        jp_stat st;
        while (jp_stats_next(&it, &st, NULL) == 1) {
            const jp_stat_meta *sm = jp_plane_stat_meta_view(&planes[i], st.metadata_id);
            if (sm && jp_str_eq(sm->name, JP_XN_STAT_PROFILE_START)) return jp_stat_int(&st) > 0 ? jp_stat_int(&st) : 0;
        }
    }
    return 0;
}

/* The XSpace's own errors and warnings, copied: the model outlives the file's bytes. */
static int add_capture_notes(jp_model *m, const jp_xspace *xs, const char *host) {
    for (int k = 0; k < 2; k++) {
        size_t n;
        const jp_str *notes = k ? jp_xspace_warnings(xs, &n) : jp_xspace_errors(xs, &n);
        for (size_t i = 0; i < n; i++) {
            jp_health *h = jp_vec_push(&m->capture_notes, sizeof *h);
            if (!h) return JP_ERR_NOMEM;
            *h = (jp_health){k ? "warning" : "error", host, jp_arena_strndup(m->arena, notes[i].ptr, notes[i].len)};
            if (!h->text) return JP_ERR_NOMEM;
        }
    }
    return JP_OK;
}

int jp_model_add_xspace(jp_model *m, jp_xspace *xs, const char *host, const jp_load_options *opt, jp_error *err) {
    size_t n_planes;
    const jp_plane *planes = jp_xspace_planes(xs, &n_planes);
    const char *name = jp_intern_str(&m->intern, host, strlen(host));
    jp_model_host *h = name && m->hosts.n < UINT32_MAX ? jp_vec_push(&m->hosts, sizeof *h) : NULL;
    if (!h) return jp_build_nomem(err);
    *h = (jp_model_host){name, capture_start_ns(xs, planes, n_planes), INT64_MAX, INT64_MIN, m->n_lines,
                         (uint32_t)m->devices.n, m->spans.n, m->xfers.n, m->mem.n, UINT64_MAX, 0};
    m->n_events += jp_xspace_event_count(xs);
    int64_t first = m->first_ps, last = m->last_ps; /* the events read below set this host's span */
    m->first_ps = INT64_MAX;
    m->last_ps = INT64_MIN;
    jp_build_ctx c = {.m = m, .xs = xs, .host = h->name, .host_index = (uint32_t)(m->hosts.n - 1), .err = err,
                      .op_nest.line = UINT32_MAX, .host_nest.line = UINT32_MAX,
                      .host_span.line = UINT32_MAX};
    for (size_t i = 0; i < n_planes; i++) c.has_devices |= jp_plane_role_of(&planes[i], NULL) == JP_ROLE_DEVICE;
    int rc = add_capture_notes(m, xs, h->name) ? jp_build_nomem(err) : JP_OK;
    if (rc == JP_OK) rc = jp_stream_open(&c.stream, xs, opt, parse_threads(xs, opt), err);
    if (rc == JP_OK) rc = read_planes(&c, planes, n_planes, opt);
    if (rc == JP_OK) rc = jp_build_resolve_graphs(&c);
    jp_stream_close(c.stream);
    jp_vec_free(&c.graph_kernels);
    size_t n_names;
    const jp_str *names = jp_xspace_hostnames(xs, &n_names);
    double cal_tflops = 0, cal_gbps = 0;
    char why[JP_ERROR_MSG_MAX] = "";
    int calibrated = opt && n_names &&
                     jp_cpu_peaks_read(opt->cpu_peaks_file, names[0], &cal_tflops, &cal_gbps, why, sizeof why);
    if (opt && n_names && why[0] && rc == JP_OK && jp_model_warn(m, "CPU peaks: %s", why)) rc = jp_build_nomem(err);
    const char *doubt = jp_xspace_warning(xs);
    if (doubt && rc == JP_OK && jp_model_warn(m, "%s: %s", jp_xspace_name(xs), doubt)) rc = jp_build_nomem(err);
    for (size_t d = h->first_device; opt && d < m->devices.n; d++) {
        jp_device *dev = &JP_VEC_AT(&m->devices, jp_device, d);
        if (calibrated && dev->platform == JP_PLATFORM_CPU && dev->peak_flops <= 0) {
            dev->peak_flops = cal_tflops * 1e12, dev->peak_bw = cal_gbps * 1e9;
            dev->peak_source = "calibrated";
        }
        jp_device_override_peaks(dev, opt->peak_tflops, opt->peak_gbps);
    }
    h = &JP_VEC_AT(&m->hosts, jp_model_host, m->hosts.n - 1);
    h->first_ps = m->first_ps;
    h->last_ps = m->last_ps;
    m->first_ps = first < m->first_ps ? first : m->first_ps;
    m->last_ps = last > m->last_ps ? last : m->last_ps;
    return rc;
}
