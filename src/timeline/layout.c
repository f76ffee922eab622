/* layout.c - trace time, plane order, nesting lanes, host files and flow ends, shared by the trace
 * exporter and the viewer's timeline index. */
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/error.h"
#include "decode/xnames.h"
#include "timeline/layout.h"
#include "profile/profile.h"

/* Profiles whose first event starts within a day of time 0 keep their own time origin. */
#define ORIGIN_LIMIT_PS ((int64_t)86400 * 1000000000000)

int jp_layout_event_span(jp_xspace *xs, const jp_line *ln, const jp_event *ev, int64_t *start_ps, int64_t *dur_ps,
                         jp_error *err) {
    return jp_xn_event_span(xs, ln, ev, start_ps, dur_ps, err);
}

int jp_layout_origin(jp_xspace *const *xs, size_t n, const int64_t *shift_ps, jp_error *err, int64_t *base_ps) {
    int64_t base = INT64_MAX;
    for (size_t h = 0; h < n; h++) {
        size_t n_planes;
        const jp_plane *planes = jp_xspace_planes(xs[h], &n_planes);
        for (size_t p = 0; p < n_planes; p++)
            for (size_t l = 0; l < planes[p].n_lines; l++)
                for (size_t e = 0; e < planes[p].lines[l].n_events; e++) {
                    int64_t start = 0, dur = 0;
                    int rc = jp_layout_event_span(xs[h], &planes[p].lines[l], &planes[p].lines[l].events[e], &start,
                                                  &dur, err);
                    if (rc) return rc;
                    start += shift_ps ? shift_ps[h] : 0;
                    if (start < base) base = start;
                }
    }
    *base_ps = base == INT64_MAX || (base >= 0 && base < ORIGIN_LIMIT_PS) ? 0 : base;
    return JP_OK;
}

int jp_layout_host_shifts(jp_xspace *const *xs, const char *const *files, size_t n, const jp_analysis *a,
                          jp_arena *arena, int64_t **shift_ps, jp_error *err) {
    int64_t *shift = jp_arena_alloc(arena, (n ? n : 1) * sizeof *shift);
    if (!shift) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    memset(shift, 0, (n ? n : 1) * sizeof *shift);
    *shift_ps = shift;
    if (n < 2) return JP_OK;
    jp_profile *p = NULL;
    int rc = a ? JP_OK : jp_profile_from_xspaces(&p, xs, files, n, files[0], NULL, err);
    if (rc) return rc;
    const jp_analysis *an = a ? a : jp_profile_analysis(p);
    for (size_t h = 0; h < n && h < an->n_host_stats; h++) shift[h] = an->host_stats[h].offset_ps;
    jp_profile_free(p);
    return JP_OK;
}

int jp_layout_plane_rank(const jp_plane *pl) {
    jp_xn_plane kind = jp_xn_plane_kind(pl);
    if (kind == JP_XN_DEVICE || kind == JP_XN_CUSTOM) return 0;
    return jp_str_eq(pl->name, JP_XN_PLANE_HOST_CPU) ? 1 : 2;
}

int jp_layout_plane_has_line(const jp_plane *pl, const char *name) {
    for (size_t i = 0; i < pl->n_lines; i++)
        if (jp_str_eq(pl->lines[i].name, name)) return 1;
    return 0;
}

int jp_layout_plane_gets_gpu_rows(const jp_plane *pl) {
    return jp_xn_plane_kind(pl) == JP_XN_DEVICE && jp_xn_device_platform(pl) == JP_PLATFORM_GPU &&
           !jp_xn_plane_has_derived(pl);
}

static int by_start_then_longest(const void *pa, const void *pb) {
    const jp_layout_item *a = pa, *b = pb;
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
    if (a->end_ns != b->end_ns) return a->end_ns > b->end_ns ? -1 : 1;
    if (a->instant != b->instant) return a->instant ? 1 : -1; /* a slice opens before an instant in it */
    return a->index < b->index ? -1 : a->index > b->index;
}

uint32_t jp_layout_lanes(jp_vec *lanes, jp_layout_item *items, size_t n) {
    qsort(items, n, sizeof *items, by_start_then_longest);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        jp_layout_item *it = &items[i];
        uint32_t k = 0;
        for (;; k++) {
            if (k == used) {
                if (used == lanes->n && !jp_vec_push(lanes, sizeof(jp_vec))) return 0;
                JP_VEC_AT(lanes, jp_vec, used).n = 0;
                used++;
            }
            jp_vec *open = &JP_VEC_AT(lanes, jp_vec, k);
            while (open->n && JP_VEC_AT(open, int64_t, open->n - 1) <= it->start_ns) open->n--;
            it->depth = (uint32_t)open->n;
            if (it->instant) break;
            if (open->n == 0 || JP_VEC_AT(open, int64_t, open->n - 1) >= it->end_ns) {
                int64_t *end = jp_vec_push(open, sizeof(int64_t));
                if (!end) return 0;
                *end = it->end_ns;
                break;
            }
        }
        it->lane = k;
    }
    return used ? (uint32_t)used : 1;
}

void jp_layout_lanes_free(jp_vec *lanes) {
    for (size_t i = 0; i < lanes->n; i++) jp_vec_free(&JP_VEC_AT(lanes, jp_vec, i));
    jp_vec_free(lanes);
}

int jp_layout_open_hosts(const char *path, const char *host, uint64_t max_inflate, jp_arena *a, jp_vec *xs,
                         jp_vec *files, jp_vec *hosts, jp_error *err) {
    jp_vec found = {0};
    int rc = jp_profile_files(path, &found, err);
    for (size_t i = 0; rc == JP_OK && i < found.n; i++) {
        const jp_profile_file *pf = &JP_VEC_AT(&found, jp_profile_file, i);
        const char *file = pf->path, *name = jp_profile_host_of(a, file);
        if (!name) {
            rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
            break;
        }
        if (host && *host && !strstr(name, host)) continue;
        jp_xspace **slot = jp_vec_push(xs, sizeof *slot);
        const char **f = jp_vec_push(files, sizeof *f), **h = jp_vec_push(hosts, sizeof *h);
        if (!slot || !f || !h || !(*f = jp_arena_strndup(a, file, strlen(file)))) {
            if (slot) xs->n--;
            rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
            break;
        }
        *h = name;
        if ((rc = jp_profile_file_open(pf, 0, max_inflate, slot, err)) != JP_OK) xs->n--;
    }
    if (rc == JP_OK && xs->n == 0)
        rc = jp_error_set(err, JP_ERR_NOT_FOUND, 0, host && *host ? "no host matches '%s'" : "%s: no profile found",
                          host && *host ? host : path);
    jp_profile_files_free(&found);
    return rc;
}

/* ---- flows ---------------------------------------------------------------------------------------- */

int jp_layout_flow_stats_of(const jp_plane *pl, jp_layout_flow_stats *fs) {
    *fs = (jp_layout_flow_stats){UINT64_MAX, UINT64_MAX, UINT64_MAX, jp_layout_plane_rank(pl) == 0};
    for (size_t i = 0; i < pl->n_stat_meta; i++) {
        jp_str name = pl->stat_meta[i].name;
        uint64_t id = (uint64_t)pl->stat_meta[i].id;
        if (jp_str_eq(name, JP_XN_STAT_CORRELATION_ID)) fs->correlation = id;
        else if (jp_str_eq(name, JP_XN_STAT_FLOW_PRODUCER)) fs->producer = id;
        else if (jp_str_eq(name, JP_XN_STAT_FLOW_CONSUMER)) fs->consumer = id;
    }
    return fs->correlation != UINT64_MAX || fs->producer != UINT64_MAX || fs->consumer != UINT64_MAX;
}

int jp_layout_flow_end(const jp_layout_flow_stats *fs, const jp_stat *st, int *source) {
    *source = JP_LAYOUT_FLOW_PRODUCER;
    if (st->metadata_id == fs->correlation) return *source = JP_LAYOUT_FLOW_CORRELATION, !fs->is_device;
    if (st->metadata_id == fs->producer) return 1;
    if (st->metadata_id == fs->consumer) return 0;
    return -1;
}

int jp_layout_event_flows(jp_xspace *xs, const jp_plane *pl, const jp_layout_flow_stats *fs, const jp_event *ev,
                          jp_layout_flow_fn fn, void *ctx, jp_error *err) {
    const jp_event_meta *em = jp_plane_event_meta_view(pl, ev->metadata_id);
    jp_stats_iter its[2] = {em ? jp_stats_of_event_meta(xs, em) : (jp_stats_iter){0}, jp_stats_of_event(xs, ev)};
    for (int i = em ? 0 : 1; i < 2; i++) {
        jp_stat st;
        int rc, source, is_start;
        while ((rc = jp_stats_next(&its[i], &st, err)) == 1) {
            if ((is_start = jp_layout_flow_end(fs, &st, &source)) < 0) continue;
            if ((rc = fn(ctx, source, is_start, jp_stat_int(&st))) != 0) return rc;
        }
        if (rc < 0) return rc;
    }
    return JP_OK;
}

/* ---- GPU rows ------------------------------------------------------------------------------------ */

static int kernel_by_start(const void *pa, const void *pb) {
    const jp_layout_kernel *a = pa, *b = pb;
    return a->start_ps < b->start_ps ? -1 : a->start_ps > b->start_ps;
}

/* The stat metadata ids a kernel's attribution and kind are read from (UINT64_MAX when absent). */
typedef struct kernel_ids {
    uint64_t op, module, run_id; /* hlo_op, hlo_module, run_id */
    uint64_t memcpy_details;     /* tells a copy from a kernel (jp_xn_gpu_event_kind) */
} kernel_ids;

static kernel_ids kernel_ids_of(const jp_plane *pl) {
    kernel_ids k = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};
    for (size_t i = 0; i < pl->n_stat_meta; i++) {
        jp_str n = pl->stat_meta[i].name;
        uint64_t id = (uint64_t)pl->stat_meta[i].id;
        if (jp_str_eq(n, JP_XN_STAT_HLO_OP)) k.op = id;
        else if (jp_str_eq(n, JP_XN_STAT_HLO_MODULE)) k.module = id;
        else if (jp_str_eq(n, JP_XN_STAT_RUN_ID)) k.run_id = id;
        else if (jp_str_eq(n, JP_XN_STAT_MEMCPY_DETAILS)) k.memcpy_details = id;
    }
    return k;
}

/* Reads a stream event's span and attribution into *k; *kind is what the event is to the model
 * (jp_xn_gpu_event_kind), so that exactly the ops table's occurrences reach the XLA rows. */
static int read_kernel(jp_xspace *xs, const jp_plane *pl, const kernel_ids *ids, const jp_line *ln, const jp_event *e,
                       int64_t shift_ps, jp_layout_kernel *k, int *kind, jp_error *err) {
    *k = (jp_layout_kernel){.kernels = 1};
    int64_t dur = 0;
    jp_str details = {"", 0};
    int rc = jp_layout_event_span(xs, ln, e, &k->start_ps, &dur, err);
    k->start_ps += shift_ps;
    k->end_ps = k->start_ps + dur;
    const jp_event_meta *em = jp_plane_event_meta_view(pl, e->metadata_id);
    jp_stats_iter its[2] = {em ? jp_stats_of_event_meta(xs, em) : (jp_stats_iter){0}, jp_stats_of_event(xs, e)};
    for (int i = em ? 0 : 1; rc == JP_OK && i < 2; i++) {
        jp_stat st;
        while ((rc = jp_stats_next(&its[i], &st, err)) == 1) {
            if (st.metadata_id == ids->run_id) k->run_id = jp_stat_int(&st);
            else if (st.metadata_id == ids->op) rc = jp_stat_str(xs, pl, &st, &k->op, err);
            else if (st.metadata_id == ids->module) rc = jp_stat_str(xs, pl, &st, &k->module, err);
            else if (st.metadata_id == ids->memcpy_details) rc = jp_stat_str(xs, pl, &st, &details, err);
            if (rc < 0) break;
        }
    }
    jp_str name = em ? em->name : (jp_str){"", 0};
    *kind = jp_xn_gpu_event_kind(name, jp_xn_gpu_name_kind(name), details);
    return rc < 0 ? rc : JP_OK;
}

/* The events kept are those the model counts as occurrences of an HLO op on this device (its
 * stream lines, not aggregated, kernels and memsets, hlo_op set): one per kernel in the ops
 * table, and merged here into the runs the XLA Ops row shows, so the two count the same kernels. */
int jp_layout_gpu_kernels(jp_xspace *xs, const jp_plane *pl, int64_t shift_ps, jp_vec *out, jp_error *err) {
    kernel_ids ids = kernel_ids_of(pl);
    int rc = JP_OK;
    for (size_t l = 0; rc == JP_OK && l < pl->n_lines; l++) {
        const jp_line *ln = &pl->lines[l];
        if (!jp_xn_device_line_is_stream(pl, ln)) continue;
        for (size_t e = 0; rc == JP_OK && e < ln->n_events; e++) {
            if (ln->events[e].num_occurrences > 0) continue; /* aggregated: no place in time */
            jp_layout_kernel k;
            int kind;
            rc = read_kernel(xs, pl, &ids, ln, &ln->events[e], shift_ps, &k, &kind, err);
            if (rc || k.op.len == 0 || !jp_xn_gpu_is_op_work(kind)) continue;
            jp_layout_kernel *slot = jp_vec_push(out, sizeof k);
            if (!slot) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
            *slot = k;
        }
    }
    if (rc == JP_OK && out->n > 1) qsort(out->data, out->n, sizeof(jp_layout_kernel), kernel_by_start);
    return rc;
}

static int same_str(jp_str a, jp_str b) { return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0); }

int jp_layout_merge_kernels(const jp_layout_kernel *k, size_t n, int by_op, jp_vec *runs, jp_error *err) {
    runs->n = 0;
    jp_layout_kernel *cur = NULL;
    for (size_t i = 0; i < n; i++) {
        int same = cur && same_str(k[i].module, k[i - 1].module) && k[i].run_id == k[i - 1].run_id &&
                   (!by_op || same_str(k[i].op, k[i - 1].op));
        if (same) {
            if (k[i].end_ps > cur->end_ps) cur->end_ps = k[i].end_ps;
            cur->kernels++;
            continue;
        }
        if (!(cur = jp_vec_push(runs, sizeof *cur))) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
        *cur = k[i];
    }
    return JP_OK;
}
