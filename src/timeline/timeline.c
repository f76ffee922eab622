/* timeline.c - jp_timeline_new: indexes every event of a run once by track and nesting depth (the
 * exporter's layout, derived rows included) and its flows by time; the queries are in
 * timeline_query.c and timeline_event.c. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/map.h"
#include "base/text.h"
#include "timeline/layout.h"
#include "timeline/timeline_int.h"
#include "profile/profile.h"

/* Scratch while the index is built. */
typedef struct builder {
    jp_timeline *tl;       /* being filled */
    jp_error *err;         /* the caller's */
    const jp_analysis *a;  /* the analysis of the same files: steps */
    jp_vec items;          /* jp_layout_item (tag: name index), for the current row */
    jp_vec lanes;          /* jp_vec of int64_t: open slice ends per lane */
    jp_map names;          /* (plane serial, metadata id) or (0, interned name) -> name index */
    uint32_t plane_serial; /* distinguishes planes in `names` */
    uint32_t host;         /* index of the xplane being indexed */
    const char *process;   /* the process name of the plane being indexed (arena) */
    int64_t *shift_ps;     /* per xplane: its host's offset on the shared time axis */
    jp_layout_flow_stats flow; /* the current plane's flow stats */
    int plane_flows;       /* 1 when the current plane may hold flow ends */
    jp_map flow_ids;       /* (source, host, id) -> index into pending */
    jp_vec pending;        /* pending_flow: every flow seen, complete or not */
    jp_vec planes;         /* seen_plane: every plane walked, in order (the analysis rows' homes) */
} builder;

/* A plane as the walk met it: where an analysis row of one of its devices goes. */
typedef struct seen_plane {
    jp_xspace *xs;
    const jp_plane *plane;
    uint32_t host;
    const char *process;
} seen_plane;

/* A flow while the index is built; `seen` has bit 0 once its start is known, bit 1 its end. */
typedef struct pending_flow {
    tl_flow f;     /* the ends known so far */
    unsigned seen; /* which */
    /* A launch (a correlation flow), for the Launch delay rows: the call's start and name, and
     * the earliest start of the work it queued (a CUDA graph's call queues several events). */
    int source;
    int64_t call_ns, work_ns;
    uint32_t call_name, work_name, work_plane; /* name indexes; index into builder.planes */
} pending_flow;

/* The event whose flow ends are being noted. */
typedef struct flow_site {
    builder *b;              /* the builder */
    uint32_t track, index;   /* where the event is indexed */
    int64_t start_ns, end_ns; /* its span */
    uint32_t name;           /* its name index */
} flow_site;

static int nomem(jp_error *err) { return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory indexing the timeline"); }

/* ---- names -------------------------------------------------------------------------------------- */

static int push_name(builder *b, jp_str s) {
    jp_str *slot = jp_vec_push(&b->tl->names, sizeof *slot);
    if (!slot) return nomem(b->err);
    *slot = s;
    return JP_OK;
}

/* The name index of an event metadata id on the current plane, added on first sight. */
static int name_of(builder *b, const jp_plane *pl, uint64_t metadata_id, uint32_t *out) {
    int found = 0;
    uint32_t id = jp_map_get_or_put(&b->names, b->plane_serial, metadata_id, 0, (uint32_t)b->tl->names.n, &found);
    if (id == UINT32_MAX) return nomem(b->err);
    if (!found) {
        const jp_event_meta *em = jp_plane_event_meta_view(pl, metadata_id);
        int rc = push_name(b, em ? (em->name.len ? em->name : em->display_name) : (jp_str){"", 0});
        if (rc) return rc;
    }
    *out = id;
    return JP_OK;
}

/* The name index of a derived event's name: one per distinct text. */
static int name_of_text(builder *b, jp_str s, uint32_t *out) {
    const char *p = jp_intern_view(&b->tl->intern, s);
    int found = 0;
    uint32_t id = p ? jp_map_get_or_put(&b->names, 0, jp_ptr_key(p), 0, (uint32_t)b->tl->names.n, &found) : UINT32_MAX;
    if (id == UINT32_MAX) return nomem(b->err);
    if (!found && push_name(b, (jp_str){p, s.len}) != JP_OK) return JP_ERR_NOMEM;
    *out = id;
    return JP_OK;
}

/* ---- rows to tracks ----------------------------------------------------------------------------- */

static int collect_line(builder *b, const jp_layout_row *r) {
    const jp_line *ln = r->line;
    for (size_t i = 0; i < ln->n_events; i++) {
        int64_t start = 0, dur = 0;
        int rc = jp_layout_event_span(r->xs, ln, &ln->events[i], &start, &dur, b->err);
        jp_layout_item *it = rc ? NULL : jp_vec_push(&b->items, sizeof *it);
        if (rc) return rc;
        if (!it) return nomem(b->err);
        start += b->shift_ps[b->host];
        *it = (jp_layout_item){.start_ns = jp_layout_ns(b->tl->base_ps, start),
                               .end_ns = jp_layout_ns(b->tl->base_ps, start + dur), .index = (uint32_t)i,
                               .instant = dur == 0};
        if ((rc = name_of(b, r->plane, ln->events[i].metadata_id, &it->tag)) != JP_OK) return rc;
    }
    return JP_OK;
}

/* A derived row's records are on the shared axis already (the analysis', or shifted when read). */
static int collect_records(builder *b, const jp_layout_row *r) {
    for (size_t i = 0; i < r->n_recs; i++) {
        const jp_layout_record *rec = &r->recs[i];
        jp_layout_item *it = jp_vec_push(&b->items, sizeof *it);
        if (!it) return nomem(b->err);
        *it = (jp_layout_item){.start_ns = jp_layout_ns(b->tl->base_ps, rec->start_ps),
                               .end_ns = jp_layout_ns(b->tl->base_ps, rec->end_ps), .index = (uint32_t)i,
                               .instant = rec->end_ps == rec->start_ps};
        int rc = name_of_text(b, rec->name, &it->tag);
        if (rc) return rc;
    }
    return JP_OK;
}

/* Allocates a level's arrays for n events in the arena. */
static int level_alloc(jp_arena *a, tl_level *lv, size_t n) {
    lv->start_ns = jp_arena_alloc(a, n * sizeof(int64_t));
    lv->dur_ns = jp_arena_alloc(a, n * sizeof(int64_t));
    lv->busy_before = jp_arena_alloc(a, (n + 1) * sizeof(int64_t));
    lv->name = jp_arena_alloc(a, n * sizeof(uint32_t));
    lv->src = jp_arena_alloc(a, n * sizeof(uint32_t));
    return lv->start_ns && lv->dur_ns && lv->busy_before && lv->name && lv->src ? JP_OK : JP_ERR_NOMEM;
}

/* Records one end of a flow; the first event seen at each end of a flow is the one drawn. */
static int note_flow_end(void *ctx, int source, int is_start, int64_t id) {
    flow_site *site = ctx;
    builder *b = site->b;
    int found = 0;
    if (b->pending.n >= UINT32_MAX - 1) return jp_error_set(b->err, JP_ERR_LIMIT, 0, "over 2^32 flows");
    uint32_t fresh = (uint32_t)b->pending.n;
    uint32_t k = jp_map_get_or_put(&b->flow_ids, (uint64_t)source, b->host, (uint64_t)id, fresh, &found);
    if (k == UINT32_MAX) return nomem(b->err);
    pending_flow *p = found ? &JP_VEC_AT(&b->pending, pending_flow, k) : jp_vec_push(&b->pending, sizeof *p);
    if (!p) return nomem(b->err);
    if (!found) memset(p, 0, sizeof *p), p->source = source;
    unsigned bit = is_start ? 1u : 2u;
    if (!is_start && (!(p->seen & bit) || site->start_ns < p->work_ns)) /* the earliest work */
        p->work_ns = site->start_ns, p->work_name = site->name, p->work_plane = (uint32_t)(b->planes.n - 1);
    if (p->seen & bit) return 0;
    if (is_start) p->call_ns = site->start_ns, p->call_name = site->name;
    p->seen |= bit;
    if (is_start) p->f.from_ns = site->end_ns, p->f.from_track = site->track, p->f.from_index = site->index;
    else p->f.to_ns = site->start_ns, p->f.to_track = site->track, p->f.to_index = site->index;
    return 0;
}

/* Appends one item to its level of track t (the last track pushed) and notes its flow ends. */
static int place(builder *b, tl_track *t, const jp_layout_item *it) {
    tl_level *lv = &t->levels[it->depth];
    size_t index = lv->first + lv->n;
    lv->start_ns[lv->n] = it->start_ns;
    lv->dur_ns[lv->n] = it->end_ns - it->start_ns;
    if (it->end_ns > b->tl->end_ns) b->tl->end_ns = it->end_ns;
    lv->name[lv->n] = it->tag;
    lv->src[lv->n++] = it->index;
    if (!t->line || !b->plane_flows) return JP_OK;
    flow_site site = {b, (uint32_t)(b->tl->tracks.n - 1), (uint32_t)index, it->start_ns, it->end_ns, it->tag};
    return jp_layout_event_flows(t->xs, t->plane, &b->flow, &t->line->events[it->index], note_flow_end, &site, b->err);
}

/* Sizes the levels of track t for the items of one lane (counted per depth). */
static int size_levels(builder *b, tl_track *t, const jp_layout_item *items, size_t n, uint32_t lane) {
    uint32_t max_depth = 0;
    for (size_t i = 0; i < n; i++)
        if (items[i].lane == lane && items[i].depth > max_depth) max_depth = items[i].depth;
    jp_arena *a = &b->tl->arena;
    t->n_levels = max_depth + 1;
    if (!(t->levels = jp_arena_alloc(a, t->n_levels * sizeof(tl_level)))) return nomem(b->err);
    memset(t->levels, 0, t->n_levels * sizeof(tl_level));
    for (size_t i = 0; i < n; i++)
        if (items[i].lane == lane) t->levels[items[i].depth].n++;
    size_t first = 0;
    for (uint32_t d = 0; d < t->n_levels; d++) {
        tl_level *lv = &t->levels[d];
        if (level_alloc(a, lv, lv->n ? lv->n : 1) != JP_OK) return nomem(b->err);
        lv->first = first;
        first += lv->n;
        lv->n = 0;
    }
    t->n_events = first;
    return JP_OK;
}

/* Fills track t with the items of one lane, in start order, then sums each level's durations. */
static int fill_track(builder *b, tl_track *t, const jp_layout_item *items, size_t n, uint32_t lane) {
    int rc = size_levels(b, t, items, n, lane);
    for (size_t i = 0; i < n && rc == JP_OK; i++)
        if (items[i].lane == lane) rc = place(b, t, &items[i]);
    for (uint32_t d = 0; rc == JP_OK && d < t->n_levels; d++) {
        tl_level *lv = &t->levels[d];
        lv->busy_before[0] = 0;
        for (size_t i = 0; i < lv->n; i++) lv->busy_before[i + 1] = lv->busy_before[i] + lv->dur_ns[i];
    }
    return rc;
}

/* Indexes one row: its events laid out on lanes, one track per lane. */
static int index_row(builder *b, const jp_layout_row *r, const char *process) {
    b->items.n = 0;
    size_t n_in = r->line ? r->line->n_events : r->n_recs;
    if (n_in > UINT32_MAX) return jp_error_set(b->err, JP_ERR_LIMIT, 0, "a line holds over 2^32 events");
    int rc = r->line ? collect_line(b, r) : collect_records(b, r);
    if (rc || b->items.n == 0) return rc;
    jp_layout_item *items = b->items.data;
    size_t n = b->items.n;
    uint32_t n_lanes = jp_layout_lanes(&b->lanes, items, n);
    if (n_lanes == 0) return nomem(b->err);
    for (uint32_t lane = 0; lane < n_lanes && rc == JP_OK; lane++) {
        char buf[TL_NAME_MAX_LEN + 32];
        jp_text name = jp_text_make(buf, sizeof buf); /* clipped on a whole character: the lane always shows */
        jp_text_put_clipped(&name, r->name.ptr, r->name.len, TL_NAME_MAX_LEN);
        if (lane) jp_text_printf(&name, " (overlap %u)", lane);
        tl_track *t = jp_vec_push(&b->tl->tracks, sizeof *t);
        if (!t) return nomem(b->err);
        *t = (tl_track){.process = process, .xs = r->xs, .plane = r->plane, .line = r->line, .recs = r->recs,
                        .kind = r->kind, .host = b->host};
        if (!(t->thread = jp_arena_strndup(&b->tl->arena, name.buf, name.len))) return nomem(b->err);
        rc = fill_track(b, t, items, n, lane);
    }
    b->tl->n_events += n;
    if (!r->line) b->tl->n_derived += n;
    if (r->kind >= JP_LAYOUT_ROW_COMM_EXPOSED) b->tl->n_analysis += n;
    return rc;
}

/* ---- rows (jp_layout_walk) ---------------------------------------------------------------------- */

/* A derived row's records, and the steps they name, copied into the arena: the tracks keep them,
 * and the analysis is borrowed for the build only. */
static int keep_records(builder *b, jp_layout_row *r) {
    jp_layout_record *recs = jp_arena_alloc(&b->tl->arena, r->n_recs * sizeof *recs);
    jp_step *steps = r->kind == JP_LAYOUT_ROW_STEPS ? jp_arena_alloc(&b->tl->arena, r->n_recs * sizeof *steps) : NULL;
    if (!recs || (r->kind == JP_LAYOUT_ROW_STEPS && !steps)) return nomem(b->err);
    memcpy(recs, r->recs, r->n_recs * sizeof *recs);
    for (size_t i = 0; steps && i < r->n_recs; i++) {
        steps[i] = *recs[i].step;
        recs[i].step = &steps[i];
    }
    r->recs = recs;
    return JP_OK;
}

static int index_layout_row(void *ctx, const jp_layout_row *r) {
    builder *b = ctx;
    if (r->line) return index_row(b, r, b->process);
    if (r->n_recs == 0) return JP_OK;
    jp_layout_row kept = *r;
    int rc = keep_records(b, &kept);
    return rc ? rc : index_row(b, &kept, b->process);
}

/* ---- planes and hosts ------------------------------------------------------------------------------ */

/* "host: plane" (several hosts) or "plane", each clipped to TL_NAME_MAX_LEN bytes on a whole
 * character. (snprintf's length used to be copied as is: a host name past 206 bytes read past
 * the buffer.) */
static const char *process_name(builder *b, const jp_plane *pl, const char *host) {
    char buf[2 * TL_NAME_MAX_LEN + 8];
    jp_text name = jp_text_make(buf, sizeof buf);
    if (b->tl->xs.n > 1) {
        jp_text_put_clipped(&name, host, strlen(host), TL_NAME_MAX_LEN);
        jp_text_puts(&name, ": ");
    }
    jp_text_put_clipped(&name, pl->name.ptr, pl->name.len, TL_NAME_MAX_LEN);
    return jp_arena_strndup(&b->tl->arena, name.buf, name.len);
}

/* jp_layout_walk's plane callback: the plane's process name, name serial and flow stats. */
static int begin_plane(void *ctx, jp_xspace *xs, const jp_plane *pl, uint32_t host) {
    builder *b = ctx;
    (void)xs;
    b->host = host;
    b->process = process_name(b, pl, JP_VEC_AT(&b->tl->hosts, const char *, host));
    if (!b->process) return nomem(b->err);
    b->plane_serial++;
    b->plane_flows = jp_layout_flow_stats_of(pl, &b->flow);
    seen_plane *sp = jp_vec_push(&b->planes, sizeof *sp);
    if (!sp) return nomem(b->err);
    *sp = (seen_plane){xs, pl, host, b->process};
    return JP_OK;
}

/* ---- analysis rows: exposed communication and launch delay, after the walk -------------------------- */

/* Indexes recs[0..n) as one derived row of kind on plane sp, after every row of the walk. */
static int analysis_row(builder *b, const seen_plane *sp, int kind, const char *name, jp_layout_record *recs, size_t n) {
    if (n == 0) return JP_OK;
    b->host = sp->host;
    b->process = sp->process;
    jp_layout_row r = {.xs = sp->xs, .plane = sp->plane, .host = sp->host, .kind = kind, .name = {name, strlen(name)},
                       .recs = recs, .n_recs = n};
    return index_layout_row(b, &r);
}

/* The plane device dev's row goes on: the plane of its name on its host (a GPU, a TPU), else that
 * host's /host:CPU (XLA:CPU's devices run on its threads), else the first plane; NULL when none.
 * *own tells whether the plane is the device's own. */
static const seen_plane *device_plane(const builder *b, const jp_device *dev, int *own) {
    const seen_plane *cpu = NULL, *v = b->planes.data;
    for (size_t i = 0; i < b->planes.n; i++) {
        if (strcmp(JP_VEC_AT(&b->tl->hosts, const char *, v[i].host), dev->host ? dev->host : "") != 0) continue;
        if (jp_str_eq(v[i].plane->name, dev->name)) return *own = 1, &v[i];
        if (!cpu && jp_str_eq(v[i].plane->name, "/host:CPU")) cpu = &v[i];
    }
    *own = 0;
    return cpu ? cpu : b->planes.n ? &v[0] : NULL;
}

/* Per device, an "Exposed communication" row: the analysis' spans where a collective ran on it and
 * no compute op did (comm.c), each whole. On a device without a plane of its own (XLA:CPU) the row
 * goes to its host's CPU plane and names the device. */
static int comm_rows(builder *b) {
    const jp_analysis *a = b->a;
    jp_vec recs = {0};
    int rc = JP_OK;
    for (size_t i = 0, j; rc == JP_OK && i < a->n_comm_exposed; i = j) {
        uint32_t d = a->comm_exposed[i].device;
        recs.n = 0;
        for (j = i; j < a->n_comm_exposed && a->comm_exposed[j].device == d; j++) {
            jp_layout_record *r = jp_vec_push(&recs, sizeof *r);
            if (!r) return jp_vec_free(&recs), nomem(b->err);
            *r = (jp_layout_record){.start_ps = a->comm_exposed[j].start_ps, .end_ps = a->comm_exposed[j].end_ps,
                                    .name = {"exposed communication", 21}};
        }
        int own = 0;
        const seen_plane *sp = d < a->n_devices ? device_plane(b, &a->devices[d], &own) : NULL;
        if (!sp) continue;
        char name[TL_NAME_MAX_LEN];
        snprintf(name, sizeof name, "Exposed communication%s%s", own ? "" : " ", own ? "" : a->devices[d].name);
        rc = analysis_row(b, sp, JP_LAYOUT_ROW_COMM_EXPOSED, name, recs.data, recs.n);
    }
    jp_vec_free(&recs);
    return rc;
}

static int by_plane_then_call(const void *pa, const void *pb) {
    const pending_flow *x = pa, *y = pb;
    if (x->work_plane != y->work_plane) return x->work_plane < y->work_plane ? -1 : 1;
    return (x->call_ns > y->call_ns) - (x->call_ns < y->call_ns);
}

enum { LAUNCH_LANES = 8 }; /* Launch delay rows drawn one launch a slice; the rest merged */

/* Merges the launches of `deep` (by call start) into the union of their spans, each segment named
 * by how many launches it holds (kernels) and kept in `out`. */
static int merge_deep(builder *b, const jp_vec *deep, jp_vec *out) {
    const jp_layout_record *d = deep->data;
    out->n = 0;
    for (size_t i = 0; i < deep->n; i++) {
        jp_layout_record *last = out->n ? &JP_VEC_AT(out, jp_layout_record, out->n - 1) : NULL;
        if (last && d[i].start_ps <= last->end_ps) {
            if (d[i].end_ps > last->end_ps) last->end_ps = d[i].end_ps;
            last->kernels++;
            continue;
        }
        if (!(last = jp_vec_push(out, sizeof *last))) return nomem(b->err);
        *last = (jp_layout_record){.start_ps = d[i].start_ps, .end_ps = d[i].end_ps, .kernels = 1};
    }
    jp_layout_record *m = out->data;
    for (size_t i = 0; i < out->n; i++) {
        char name[64];
        int len = snprintf(name, sizeof name, "%lld launch%s queued deeper", (long long)m[i].kernels, m[i].kernels == 1 ? "" : "es");
        const char *copy = jp_arena_strndup(&b->tl->arena, name, (size_t)len);
        if (!copy) return nomem(b->err);
        m[i].name = (jp_str){copy, (size_t)len};
    }
    return JP_OK;
}

/* One device plane's launches p[0..n) (by call start) as Launch delay rows: each launch on the first
 * of LAUNCH_LANES rows where it overlaps no other, from its call's start to its work's start; the
 * launches none can take (the queue deeper than that) merged into one more row, each slice saying
 * how many launches it holds: bounded rows, and every launch drawn or counted. */
static int launch_plane_rows(builder *b, const seen_plane *sp, const pending_flow *p, size_t n, jp_vec *lane) {
    const jp_str *names = b->tl->names.data;
    int64_t lane_end[LAUNCH_LANES];
    for (int k = 0; k <= LAUNCH_LANES + 1; k++) lane[k].n = 0;
    for (size_t j = 0; j < n; j++) {
        int64_t work = p[j].work_ns > p[j].call_ns ? p[j].work_ns : p[j].call_ns; /* never before its call */
        jp_layout_record r = {.start_ps = b->tl->base_ps + p[j].call_ns * 1000, .end_ps = b->tl->base_ps + work * 1000,
                              .name = names[p[j].work_name], .call = names[p[j].call_name]};
        int k = 0;
        while (k < LAUNCH_LANES && lane[k].n && lane_end[k] > r.start_ps) k++;
        jp_layout_record *slot = jp_vec_push(&lane[k], sizeof *slot);
        if (!slot) return nomem(b->err);
        *slot = r;
        if (k < LAUNCH_LANES) lane_end[k] = r.end_ps;
    }
    int rc = merge_deep(b, &lane[LAUNCH_LANES], &lane[LAUNCH_LANES + 1]);
    for (int k = 0; rc == JP_OK && k < LAUNCH_LANES; k++) {
        char name[48];
        snprintf(name, sizeof name, k ? "Launch delay (overlap %d)" : "Launch delay", k);
        rc = analysis_row(b, sp, JP_LAYOUT_ROW_LAUNCH_DELAY, name, lane[k].data, lane[k].n);
    }
    if (rc == JP_OK)
        rc = analysis_row(b, sp, JP_LAYOUT_ROW_LAUNCH_DELAY, "Launch delay (deeper, merged)", lane[LAUNCH_LANES + 1].data,
                          lane[LAUNCH_LANES + 1].n);
    return rc;
}

/* Per device plane, Launch delay rows: each launch whose call and work were both indexed (a
 * correlation flow), from the call's start to the earliest start of its work, named by that work
 * (the call in its details); launch_plane_rows lays them out. */
static int launch_rows(builder *b) {
    pending_flow *p = b->pending.data;
    size_t n = 0;
    for (size_t i = 0; i < b->pending.n; i++)
        if (p[i].seen == 3 && p[i].source == JP_LAYOUT_FLOW_CORRELATION) p[n++] = p[i]; /* in place: flows are done */
    b->pending.n = n;
    if (n > 1) qsort(p, n, sizeof *p, by_plane_then_call);
    jp_vec lane[LAUNCH_LANES + 2] = {{0}}; /* the lanes, the deeper launches, and those merged */
    int rc = JP_OK;
    for (size_t i = 0, j; rc == JP_OK && i < n; i = j) {
        for (j = i; j < n && p[j].work_plane == p[i].work_plane;) j++;
        rc = launch_plane_rows(b, &JP_VEC_AT(&b->planes, seen_plane, p[i].work_plane), p + i, j - i, lane);
    }
    for (int k = 0; k < LAUNCH_LANES + 2; k++) jp_vec_free(&lane[k]);
    return rc;
}

/* ---- flows --------------------------------------------------------------------------------------- */

static int by_from(const void *pa, const void *pb) {
    const tl_flow *a = pa, *b = pb;
    if (a->from_ns != b->from_ns) return a->from_ns < b->from_ns ? -1 : 1;
    if (a->from_track != b->from_track) return a->from_track < b->from_track ? -1 : 1;
    return a->from_index < b->from_index ? -1 : a->from_index > b->from_index;
}

/* A flow's arrival time with its index, to sort the by-arrival permutation. */
typedef struct arrival {
    int64_t to_ns;  /* the flow's to_ns */
    uint32_t index; /* into jp_timeline.flows */
} arrival;

static int by_arrival(const void *pa, const void *pb) {
    const arrival *a = pa, *b = pb;
    if (a->to_ns != b->to_ns) return a->to_ns < b->to_ns ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Keeps the flows whose both ends were indexed, sorted by departure, with a permutation sorted
 * by arrival: a window then finds its flows by two binary searches. */
static int finish_flows(builder *b) {
    jp_timeline *tl = b->tl;
    const pending_flow *p = b->pending.data;
    size_t n = 0;
    for (size_t i = 0; i < b->pending.n; i++) n += p[i].seen == 3;
    if (n == 0) return JP_OK;
    tl->flows = jp_arena_alloc(&tl->arena, n * sizeof *tl->flows);
    tl->flows_by_to = jp_arena_alloc(&tl->arena, n * sizeof *tl->flows_by_to);
    arrival *arr = malloc(n * sizeof *arr);
    if (!tl->flows || !tl->flows_by_to || !arr) {
        free(arr);
        return nomem(b->err);
    }
    for (size_t i = 0; i < b->pending.n; i++)
        if (p[i].seen == 3) tl->flows[tl->n_flows++] = p[i].f;
    qsort(tl->flows, n, sizeof *tl->flows, by_from);
    for (size_t i = 0; i < n; i++) arr[i] = (arrival){tl->flows[i].to_ns, (uint32_t)i};
    qsort(arr, n, sizeof *arr, by_arrival);
    for (size_t i = 0; i < n; i++) tl->flows_by_to[i] = arr[i].index;
    free(arr);
    return JP_OK;
}

/* Every plane's rows in the exporter's order (jp_layout_walk), then the flows. */
static int index_all(builder *b, const jp_vec *files) {
    jp_xspace *const *all = b->tl->xs.data;
    int rc = jp_layout_host_shifts(all, files->data, files->n, b->a, &b->tl->arena, &b->shift_ps, b->err);
    if (rc == JP_OK) rc = jp_layout_origin(all, b->tl->xs.n, b->shift_ps, b->err, &b->tl->base_ps);
    jp_layout_walker w = {begin_plane, index_layout_row, b};
    if (rc == JP_OK) {
        rc = jp_layout_walk(all, b->tl->xs.n, b->shift_ps, b->a, &b->tl->arena, &w, b->err);
        if (rc) jp_error_prefix(b->err, rc, JP_VEC_AT(files, const char *, b->host)); /* a bad stat or time: whose file */
    }
    if (rc == JP_OK) rc = finish_flows(b);
    if (rc == JP_OK) rc = comm_rows(b);
    return rc == JP_OK ? launch_rows(b) : rc;
}

/* Opens the hosts, analyses them when the caller has no analysis, and indexes everything. */
static int build(builder *b, const char *path, const char *host, uint64_t max_inflate) {
    jp_timeline *tl = b->tl;
    jp_vec files = {0};
    jp_profile *own = NULL;
    int rc = jp_layout_open_hosts(path, host, max_inflate, &tl->arena, &tl->xs, &files, &tl->hosts, b->err);
    if (rc == JP_OK && !b->a) {
        rc = jp_profile_from_xspaces(&own, tl->xs.data, files.data, files.n, path, NULL, b->err);
        b->a = own ? jp_profile_analysis(own) : NULL;
    }
    if (rc == JP_OK) rc = index_all(b, &files);
    jp_profile_free(own);
    jp_vec_free(&files);
    return rc;
}

int jp_timeline_new(jp_timeline **out, const char *path, const char *host, uint64_t max_inflate, const jp_analysis *a,
                    jp_error *err) {
    jp_error_clear(err);
    if (!out || !path) return jp_error_set(err, JP_ERR_ARG, 0, "timeline: no profile path");
    *out = NULL;
    jp_timeline *tl = calloc(1, sizeof *tl);
    if (!tl) return nomem(err);
    jp_arena_init(&tl->arena, 0);
    jp_arena_init(&tl->hlo_arena, 0);
    jp_intern_init(&tl->intern, &tl->arena);
    jp_intern_init(&tl->hlo_intern, &tl->hlo_arena);
    builder b = {.tl = tl, .err = err, .a = a};
    int rc = build(&b, path, host, max_inflate);
    jp_layout_lanes_free(&b.lanes);
    jp_vec_free(&b.items), jp_vec_free(&b.pending), jp_vec_free(&b.planes);
    jp_map_deinit(&b.names), jp_map_deinit(&b.flow_ids);
    if (rc != JP_OK) {
        jp_timeline_free(tl);
        return rc;
    }
    *out = tl;
    return JP_OK;
}

void jp_timeline_free(jp_timeline *tl) {
    if (!tl) return;
    for (size_t i = 0; i < tl->xs.n; i++) jp_xspace_close(JP_VEC_AT(&tl->xs, jp_xspace *, i));
    jp_vec_free(&tl->xs), jp_vec_free(&tl->hosts), jp_vec_free(&tl->tracks), jp_vec_free(&tl->names);
    jp_vec_free(&tl->hlo);
    jp_intern_deinit(&tl->intern), jp_intern_deinit(&tl->hlo_intern);
    if (tl->have_library) regfree(&tl->library);
    jp_arena_deinit(&tl->arena), jp_arena_deinit(&tl->hlo_arena);
    free(tl);
}

uint64_t jp_timeline_event_count(const jp_timeline *tl) { return tl ? tl->n_events : 0; }
uint64_t jp_timeline_analysis_count(const jp_timeline *tl) { return tl ? tl->n_analysis : 0; }
size_t jp_timeline_track_count(const jp_timeline *tl) { return tl ? tl->tracks.n : 0; }
int64_t jp_timeline_end_ns(const jp_timeline *tl) { return tl ? tl->end_ns : 0; }
