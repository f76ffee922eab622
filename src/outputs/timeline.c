/* timeline.c - jp_timeline_*: indexes every event of a run once by track and nesting depth, and its
 * flows by time, then answers time-window queries with runs of sub-pixel events merged and flows
 * sampled, so every answer stays bounded. */
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "base/error.h"
#include "base/vec.h"
#include "outputs/layout.h"
#include "outputs/timeline.h"

enum {
    DEFAULT_CAP = 20000, /* entries in a window answer when the query names no cap */
    NAME_MAX_LEN = 200,  /* bytes of a line or plane name kept in a track name */
    FLOW_CAP = 5000,     /* flows in a window answer: more arrows than this are only ink */
    FLOW_SCAN = 4        /* a window looks at no more than FLOW_SCAN * FLOW_CAP flows */
};

/* The events of one depth of one track: disjoint and sorted by start, hence sorted by end too. */
typedef struct level {
    int64_t *start_ns; /* start in trace time */
    int64_t *dur_ns;   /* duration; 0 for instants */
    uint32_t *name;    /* index into jp_timeline.names */
    uint32_t *src;     /* index into the line's events */
    size_t n;          /* events at this depth */
    size_t first;      /* track-wide index of the first of them (depth-major numbering) */
} level;

/* One thread of the layout: a line, or one of its overlap lanes. */
typedef struct tl_track {
    const char *process;   /* plane name; "host: plane" when there are several hosts */
    const char *thread;    /* line name, with " (overlap N)" for lanes past the first */
    jp_xspace *xs;         /* the xplane its events come from */
    const jp_plane *plane; /* their plane, for metadata and stats */
    const jp_line *line;   /* their line */
    uint32_t host;         /* index into jp_timeline.hosts */
    level *levels;         /* by depth, 0 outermost */
    uint32_t n_levels;     /* depths used */
    size_t n_events;       /* over all levels */
} tl_track;

/* A flow whose both ends were indexed: an arrow from the end of one event to the start of another. */
typedef struct tl_flow {
    int64_t from_ns, to_ns;         /* where the arrow leaves (start event's end) and arrives (end event's start) */
    uint32_t from_track, from_index; /* the start event: track and track-wide index */
    uint32_t to_track, to_index;     /* the end event */
} tl_flow;

struct jp_timeline {
    jp_arena arena;    /* track names, level and flow arrays, host names */
    jp_vec xs;         /* jp_xspace *: the open xplanes, one per host kept */
    jp_vec hosts;      /* const char *: host name of each xplane (in the arena) */
    tl_flow *flows;    /* complete flows sorted by from_ns */
    uint32_t *flows_by_to; /* indexes into flows, sorted by to_ns */
    size_t n_flows;    /* complete flows */
    jp_vec tracks;     /* track, in the exporter's thread order */
    jp_vec names;      /* jp_str: one per (plane, event metadata) seen */
    uint64_t n_events; /* events indexed */
    int64_t end_ns;    /* latest event end in trace time, 0 when empty */
    int64_t base_ps;   /* profile time of the trace's time 0 */
};

/* Scratch while the index is built. */
typedef struct builder {
    jp_timeline *tl;       /* being filled */
    jp_error *err;         /* the caller's */
    jp_vec items;          /* jp_layout_item (tag: name index), for the current line */
    jp_vec lanes;          /* jp_vec of int64_t: open slice ends per lane */
    jp_map names;          /* (plane serial, metadata id) -> name index */
    uint32_t plane_serial; /* distinguishes planes in `names` */
    uint32_t host;         /* index of the xplane being indexed */
    int64_t *shift_ps;     /* per xplane: its host's offset on the shared time axis */
    jp_layout_flow_stats flow; /* the current plane's flow stats */
    int plane_flows;       /* 1 when the current plane may hold flow ends */
    jp_map flow_ids;       /* (source, host, id) -> index into pending */
    jp_vec pending;        /* pending_flow: every flow seen, complete or not */
} builder;

/* A flow while the index is built; `seen` has bit 0 once its start is known, bit 1 its end. */
typedef struct pending_flow {
    tl_flow f;     /* the ends known so far */
    unsigned seen; /* which */
} pending_flow;

/* The event whose flow ends are being noted. */
typedef struct flow_site {
    builder *b;              /* the builder */
    uint32_t track, index;   /* where the event is indexed */
    int64_t start_ns, end_ns; /* its span */
} flow_site;

static int nomem(jp_error *err) { return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory indexing the timeline"); }

/* ---- JSON text ---------------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    size_t k = s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3 : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
    if (k == 0 || k > n) return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0) || (s[0] == 0xF0 && s[1] < 0x90) ||
        (s[0] == 0xF4 && s[1] >= 0x90))
        return 0; /* overlong, surrogate, or past U+10FFFF */
    return k;
}

void jp_timeline_json_strn(FILE *out, const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', out);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        size_t k;
        if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f) fprintf(out, "\\u%04x", c);
        else if (c < 0x80) fputc(c, out);
        else if ((k = utf8_len(p + i, n - i)) != 0) fwrite(p + i, 1, k, out), i += k - 1;
        else fputs("\\ufffd", out); /* a byte that is not UTF-8: JSON must be */
    }
    fputc('"', out);
}

/* ---- times -------------------------------------------------------------------------------------- */

/* The name index of an event metadata id on the current plane, added on first sight. */
static int name_of(builder *b, const jp_plane *pl, uint64_t metadata_id, uint32_t *out) {
    int found = 0;
    uint32_t fresh = (uint32_t)b->tl->names.n;
    uint32_t id = jp_map_get_or_put(&b->names, b->plane_serial, metadata_id, 0, fresh, &found);
    if (id == UINT32_MAX) return nomem(b->err);
    if (!found) {
        jp_str *s = jp_vec_push(&b->tl->names, sizeof *s);
        if (!s) return nomem(b->err);
        const jp_event_meta *em = jp_plane_event_meta_view(pl, metadata_id);
        *s = em ? (em->name.len ? em->name : em->display_name) : (jp_str){"", 0};
    }
    *out = id;
    return JP_OK;
}

static int collect_items(builder *b, jp_xspace *xs, const jp_plane *pl, const jp_line *ln) {
    b->items.n = 0;
    if (ln->n_events > UINT32_MAX) return jp_error_set(b->err, JP_ERR_LIMIT, 0, "a line holds over 2^32 events");
    for (size_t i = 0; i < ln->n_events; i++) {
        int64_t start = 0, dur = 0;
        int rc = jp_layout_event_span(xs, ln, &ln->events[i], &start, &dur, b->err);
        jp_layout_item *it = rc ? NULL : jp_vec_push(&b->items, sizeof *it);
        if (rc) return rc;
        start += b->shift_ps[b->host];
        if (!it) return nomem(b->err);
        *it = (jp_layout_item){.start_ns = jp_layout_ns(b->tl->base_ps, start),
                               .end_ns = jp_layout_ns(b->tl->base_ps, start + dur), .index = (uint32_t)i,
                     .instant = dur == 0};
        if ((rc = name_of(b, pl, ln->events[i].metadata_id, &it->tag)) != JP_OK) return rc;
    }
    return JP_OK;
}

/* Allocates a level's arrays for n events in the arena. */
static int level_alloc(jp_arena *a, level *lv, size_t n) {
    lv->start_ns = jp_arena_alloc(a, n * sizeof(int64_t));
    lv->dur_ns = jp_arena_alloc(a, n * sizeof(int64_t));
    lv->name = jp_arena_alloc(a, n * sizeof(uint32_t));
    lv->src = jp_arena_alloc(a, n * sizeof(uint32_t));
    return lv->start_ns && lv->dur_ns && lv->name && lv->src ? JP_OK : JP_ERR_NOMEM;
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
    if (!found) memset(p, 0, sizeof *p);
    unsigned bit = is_start ? 1u : 2u;
    if (p->seen & bit) return 0;
    p->seen |= bit;
    if (is_start) p->f.from_ns = site->end_ns, p->f.from_track = site->track, p->f.from_index = site->index;
    else p->f.to_ns = site->start_ns, p->f.to_track = site->track, p->f.to_index = site->index;
    return 0;
}

/* Appends one item to its level of track t (the last track pushed) and notes its flow ends. */
static int place(builder *b, tl_track *t, const jp_layout_item *it) {
    level *lv = &t->levels[it->depth];
    size_t index = lv->first + lv->n;
    lv->start_ns[lv->n] = it->start_ns;
    lv->dur_ns[lv->n] = it->end_ns - it->start_ns;
    if (it->end_ns > b->tl->end_ns) b->tl->end_ns = it->end_ns;
    lv->name[lv->n] = it->tag;
    lv->src[lv->n++] = it->index;
    if (!b->plane_flows) return JP_OK;
    flow_site site = {b, (uint32_t)(b->tl->tracks.n - 1), (uint32_t)index, it->start_ns, it->end_ns};
    return jp_layout_event_flows(t->xs, t->plane, &b->flow, &t->line->events[it->index], note_flow_end, &site, b->err);
}

/* Fills track t with the items of one lane: counts per depth, then copies in start order. */
static int fill_track(builder *b, tl_track *t, const jp_layout_item *items, size_t n, uint32_t lane) {
    uint32_t max_depth = 0;
    for (size_t i = 0; i < n; i++)
        if (items[i].lane == lane && items[i].depth > max_depth) max_depth = items[i].depth;
    jp_arena *a = &b->tl->arena;
    t->n_levels = max_depth + 1;
    if (!(t->levels = jp_arena_alloc(a, t->n_levels * sizeof(level)))) return nomem(b->err);
    memset(t->levels, 0, t->n_levels * sizeof(level));
    for (size_t i = 0; i < n; i++)
        if (items[i].lane == lane) t->levels[items[i].depth].n++;
    size_t first = 0;
    for (uint32_t d = 0; d < t->n_levels; d++) {
        level *lv = &t->levels[d];
        if (level_alloc(a, lv, lv->n ? lv->n : 1) != JP_OK) return nomem(b->err);
        lv->first = first;
        first += lv->n;
        lv->n = 0;
    }
    t->n_events = first;
    int rc = JP_OK;
    for (size_t i = 0; i < n && rc == JP_OK; i++)
        if (items[i].lane == lane) rc = place(b, t, &items[i]);
    return rc;
}

/* Indexes one line: its events laid out on lanes, one track per lane. */
static int index_line(builder *b, jp_xspace *xs, const jp_plane *pl, const jp_line *ln, const char *process) {
    int rc = collect_items(b, xs, pl, ln);
    if (rc || b->items.n == 0) return rc;
    jp_layout_item *items = b->items.data;
    size_t n = b->items.n;
    uint32_t n_lanes = jp_layout_lanes(&b->lanes, items, n);
    if (n_lanes == 0) return nomem(b->err);
    jp_str name = ln->display_name.len ? ln->display_name : ln->name;
    if (name.len == 0) name = (jp_str){"(unnamed line)", 14};
    for (uint32_t lane = 0; lane < n_lanes && rc == JP_OK; lane++) {
        char buf[NAME_MAX_LEN + 32];
        int len = snprintf(buf, sizeof buf, lane ? "%.*s (overlap %u)" : "%.*s", (int)(name.len > NAME_MAX_LEN ? NAME_MAX_LEN : name.len),
                           name.ptr, lane);
        tl_track *t = jp_vec_push(&b->tl->tracks, sizeof *t);
        if (!t) return nomem(b->err);
        *t = (tl_track){.process = process, .xs = xs, .plane = pl, .line = ln, .host = b->host};
        if (!(t->thread = jp_arena_strndup(&b->tl->arena, buf, (size_t)len))) return nomem(b->err);
        rc = fill_track(b, t, items, n, lane);
    }
    b->tl->n_events += n;
    return rc;
}

/* ---- planes and hosts ------------------------------------------------------------------------------ */

static int index_plane(builder *b, jp_xspace *xs, const jp_plane *pl, const char *host) {
    char buf[2 * NAME_MAX_LEN + 8];
    int len = b->tl->xs.n > 1 ? snprintf(buf, sizeof buf, "%s: %.*s", host, (int)(pl->name.len > NAME_MAX_LEN ? NAME_MAX_LEN : pl->name.len), pl->name.ptr)
                              : snprintf(buf, sizeof buf, "%.*s", (int)(pl->name.len > NAME_MAX_LEN ? NAME_MAX_LEN : pl->name.len), pl->name.ptr);
    const char *process = jp_arena_strndup(&b->tl->arena, buf, (size_t)len);
    if (!process) return nomem(b->err);
    b->plane_serial++;
    b->plane_flows = jp_layout_flow_stats_of(pl, &b->flow);
    int rc = JP_OK;
    for (size_t l = 0; rc == JP_OK && l < pl->n_lines; l++) rc = index_line(b, xs, pl, &pl->lines[l], process);
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

static int index_all(builder *b, const jp_vec *files) {
    jp_xspace *const *all = b->tl->xs.data;
    int rc = jp_layout_host_shifts(all, files->data, files->n, NULL, &b->tl->arena, &b->shift_ps, b->err);
    if (rc == JP_OK) rc = jp_layout_origin(all, b->tl->xs.n, b->shift_ps, b->err, &b->tl->base_ps);
    for (size_t h = 0; rc == JP_OK && h < b->tl->xs.n; h++) {
        jp_xspace *xs = JP_VEC_AT(&b->tl->xs, jp_xspace *, h);
        size_t n;
        const jp_plane *planes = jp_xspace_planes(xs, &n);
        b->host = (uint32_t)h;
        for (int rank = 0; rank < 3; rank++)
            for (size_t p = 0; rc == JP_OK && p < n; p++)
                if (jp_layout_plane_rank(&planes[p]) == rank)
                    rc = index_plane(b, xs, &planes[p], JP_VEC_AT(&b->tl->hosts, const char *, h));
    }
    return rc == JP_OK ? finish_flows(b) : rc;
}

int jp_timeline_new(jp_timeline **out, const char *path, const char *host, jp_error *err) {
    jp_error_clear(err);
    if (!out || !path) return jp_error_set(err, JP_ERR_ARG, 0, "timeline: no profile path");
    *out = NULL;
    jp_timeline *tl = calloc(1, sizeof *tl);
    if (!tl) return nomem(err);
    jp_arena_init(&tl->arena, 0);
    builder b = {.tl = tl, .err = err};
    jp_vec files = {0};
    int rc = jp_layout_open_hosts(path, host, &tl->arena, &tl->xs, &files, &tl->hosts, err);
    if (rc == JP_OK) rc = index_all(&b, &files);
    jp_layout_lanes_free(&b.lanes);
    jp_vec_free(&b.items), jp_vec_free(&files), jp_vec_free(&b.pending);
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
    jp_arena_deinit(&tl->arena);
    free(tl);
}

uint64_t jp_timeline_event_count(const jp_timeline *tl) { return tl ? tl->n_events : 0; }
size_t jp_timeline_track_count(const jp_timeline *tl) { return tl ? tl->tracks.n : 0; }
int64_t jp_timeline_end_ns(const jp_timeline *tl) { return tl ? tl->end_ns : 0; }
size_t jp_timeline_flow_count(const jp_timeline *tl) { return tl ? tl->n_flows : 0; }

/* ---- window queries --------------------------------------------------------------------------------- */

/* One element of an answer: an event, or a merged run of short ones. */
typedef struct entry {
    int64_t start_ns, dur_ns; /* trace time */
    int64_t name;             /* name index, -1 for a merged run */
    uint64_t extra;           /* the event's track-wide index, or the run's event count */
    uint32_t track, depth;    /* where it is drawn */
} entry;

/* What one pass over a window found. */
typedef struct window_pass {
    const jp_timeline_query *q; /* the window */
    const uint8_t *host_on;     /* by host index: 1 when its tracks are answered */
    double res_ns;              /* events shorter than this merge with close neighbours; < 1: none */
    size_t cap;                 /* entries allowed */
    int truncate;               /* 1: stop at cap; 0: fail as soon as cap is passed */
    jp_vec entries;             /* entry */
    uint64_t total, returned, aggregated; /* events seen, sent alone, sent merged */
    int truncated;              /* 1 when entries were left out */
    jp_vec flows;               /* uint32_t: indexes into jp_timeline.flows answered */
    jp_vec flow_tracks;         /* uint32_t: tracks the answered flows touch, sorted, unique */
    int flows_truncated;        /* 1 when flows were left out */
} window_pass;

/* First index of lv whose event ends at or after t (ends are sorted: a level's events are disjoint). */
static size_t first_ending_from(const level *lv, int64_t t) {
    size_t lo = 0, hi = lv->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (lv->start_ns[mid] + lv->dur_ns[mid] < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Appends an entry; 0, 1 when the cap stops the pass, or JP_ERR_NOMEM. */
static int push_entry(window_pass *w, entry e) {
    if (w->entries.n >= w->cap) {
        w->truncated = 1;
        return 1;
    }
    entry *slot = jp_vec_push(&w->entries, sizeof e);
    if (!slot) return JP_ERR_NOMEM;
    *slot = e;
    return 0;
}

static int visible(const level *lv, size_t i, int64_t from) {
    return lv->dur_ns[i] == 0 ? lv->start_ns[i] >= from : lv->start_ns[i] + lv->dur_ns[i] > from;
}

/* One level's events in the window: long ones alone, runs of short ones (each shorter than a
 * pixel, gaps under a pixel) as one merged entry. */
static int scan_level(window_pass *w, const level *lv, uint32_t track, uint32_t depth) {
    int64_t from = w->q->start_ns, to = w->q->end_ns;
    double res = w->res_ns;
    size_t i = first_ending_from(lv, from);
    while (i < lv->n && lv->start_ns[i] < to) {
        if (!visible(lv, i, from)) {
            i++;
            continue;
        }
        size_t j = i;
        int64_t run_end = lv->start_ns[i] + lv->dur_ns[i];
        if (res >= 1 && (double)lv->dur_ns[i] < res)
            while (j + 1 < lv->n && lv->start_ns[j + 1] < to && (double)lv->dur_ns[j + 1] < res &&
                   (double)(lv->start_ns[j + 1] - run_end) < res) {
                j++;
                if (lv->start_ns[j] + lv->dur_ns[j] > run_end) run_end = lv->start_ns[j] + lv->dur_ns[j];
            }
        size_t count = j - i + 1;
        entry e = {.start_ns = lv->start_ns[i], .dur_ns = run_end - lv->start_ns[i], .track = track, .depth = depth};
        e.name = count == 1 ? (int64_t)lv->name[i] : -1;
        e.extra = count == 1 ? lv->first + i : count;
        int rc = push_entry(w, e);
        if (rc) return rc;
        w->total += count;
        *(count == 1 ? &w->returned : &w->aggregated) += count;
        i = j + 1;
    }
    return 0;
}

static int run_pass(const jp_timeline *tl, window_pass *w) {
    w->entries.n = 0;
    w->total = w->returned = w->aggregated = 0;
    w->truncated = 0;
    const tl_track *tracks = tl->tracks.data;
    for (size_t t = 0; t < tl->tracks.n; t++) {
        if (!w->host_on[tracks[t].host]) continue;
        for (uint32_t d = 0; d < tracks[t].n_levels; d++) {
            int rc = scan_level(w, &tracks[t].levels[d], (uint32_t)t, d);
            if (rc) return rc;
        }
    }
    return 0;
}

/* ---- flows of a window ---------------------------------------------------------------------------- */

static int64_t departure(const jp_timeline *tl, size_t i) { return tl->flows[i].from_ns; }
static int64_t arrival_at(const jp_timeline *tl, size_t i) { return tl->flows[tl->flows_by_to[i]].to_ns; }

/* First position whose time (by `at`, ascending over positions) is >= t. */
static size_t first_flow_from(const jp_timeline *tl, int64_t (*at)(const jp_timeline *, size_t), int64_t t) {
    size_t lo = 0, hi = tl->n_flows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (at(tl, mid) < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int push_u32(jp_vec *v, uint32_t x) {
    uint32_t *slot = jp_vec_push(v, sizeof x);
    if (!slot) return JP_ERR_NOMEM;
    *slot = x;
    return 0;
}

static int cmp_u32(const void *pa, const void *pb) {
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return a < b ? -1 : a > b;
}

/* Answers flow k unless its host is filtered out. */
static int pick_flow(const jp_timeline *tl, window_pass *w, uint32_t k) {
    const tl_flow *f = &tl->flows[k];
    if (!w->host_on[JP_VEC_AT(&tl->tracks, tl_track, f->from_track).host]) return 0;
    if (push_u32(&w->flows, k) || push_u32(&w->flow_tracks, f->from_track) || push_u32(&w->flow_tracks, f->to_track))
        return JP_ERR_NOMEM;
    return 0;
}

/* Keeps every m-th answered flow so that at most FLOW_CAP remain, spread over the window. */
static void thin_flows(window_pass *w) {
    if (w->flows.n <= FLOW_CAP) return;
    uint32_t *k = w->flows.data;
    size_t m = (w->flows.n + FLOW_CAP - 1) / FLOW_CAP, kept = 0;
    for (size_t i = 0; i < w->flows.n; i += m) k[kept++] = k[i];
    w->flows.n = kept;
    w->flows_truncated = 1;
}

/* The flows that depart or arrive inside the window: two binary searches give the departures
 * (flows sorted by from_ns) and the arrivals (flows_by_to); an arrival whose departure is also
 * inside was already taken. Past FLOW_SCAN * FLOW_CAP candidates the ranges are sampled at a
 * stride, so the work per window stays bounded however many flows the profile holds. */
static int window_flows(const jp_timeline *tl, window_pass *w) {
    int64_t from = w->q->start_ns, to = w->q->end_ns;
    size_t lo1 = first_flow_from(tl, departure, from), hi1 = first_flow_from(tl, departure, to);
    size_t lo2 = first_flow_from(tl, arrival_at, from), hi2 = first_flow_from(tl, arrival_at, to);
    size_t n = (hi1 - lo1) + (hi2 - lo2), stride = n > FLOW_SCAN * FLOW_CAP ? n / (FLOW_SCAN * FLOW_CAP) + 1 : 1;
    w->flows_truncated = stride > 1;
    for (size_t i = lo1; i < hi1; i += stride)
        if (pick_flow(tl, w, (uint32_t)i)) return JP_ERR_NOMEM;
    for (size_t i = lo2; i < hi2; i += stride) {
        uint32_t k = tl->flows_by_to[i];
        if (tl->flows[k].from_ns >= from && tl->flows[k].from_ns < to) continue;
        if (pick_flow(tl, w, k)) return JP_ERR_NOMEM;
    }
    thin_flows(w);
    if (w->flows_truncated) { /* the tracks of the flows thinned out go too */
        w->flow_tracks.n = 0;
        for (size_t i = 0; i < w->flows.n; i++) {
            const tl_flow *f = &tl->flows[JP_VEC_AT(&w->flows, uint32_t, i)];
            if (push_u32(&w->flow_tracks, f->from_track) || push_u32(&w->flow_tracks, f->to_track)) return JP_ERR_NOMEM;
        }
    }
    uint32_t *t = w->flow_tracks.data;
    if (w->flow_tracks.n) qsort(t, w->flow_tracks.n, sizeof *t, cmp_u32);
    size_t u = 0;
    for (size_t i = 0; i < w->flow_tracks.n; i++)
        if (u == 0 || t[i] != t[u - 1]) t[u++] = t[i];
    w->flow_tracks.n = u;
    return 0;
}

/* ---- the answer ------------------------------------------------------------------------------------ */

/* The depth of a track's event, from its track-wide index (depth-major numbering). */
static uint32_t depth_of(const tl_track *t, size_t index) {
    uint32_t d = 0;
    while (d + 1 < t->n_levels && index >= t->levels[d].first + t->levels[d].n) d++;
    return d;
}

static void write_track_head(const jp_timeline *tl, uint32_t id, int first, FILE *out) {
    const tl_track *t = &JP_VEC_AT(&tl->tracks, tl_track, id);
    const char *host = JP_VEC_AT(&tl->hosts, const char *, t->host);
    fprintf(out, "%s{\"id\":%u,\"host\":", first ? "" : ",", id);
    jp_timeline_json_strn(out, host, strlen(host));
    fputs(",\"process\":", out);
    jp_timeline_json_strn(out, t->process, strlen(t->process));
    fputs(",\"thread\":", out);
    jp_timeline_json_strn(out, t->thread, strlen(t->thread));
    fputs(",\"events\":[", out);
}

/* Writes the tracks in id order: those with entries, and those only a flow touches (no events),
 * so every arrow has both its rows. remap numbers the names in order of first use. */
static uint32_t write_tracks(const jp_timeline *tl, const window_pass *w, uint32_t *remap, FILE *out) {
    const entry *e = w->entries.data;
    const uint32_t *ft = w->flow_tracks.data;
    size_t nf = w->flow_tracks.n, f = 0, written = 0;
    uint32_t n_names = 0;
    for (size_t i = 0; i < w->entries.n; i++) {
        if (i == 0 || e[i].track != e[i - 1].track) {
            if (i) fputs("]}", out);
            for (; f < nf && ft[f] <= e[i].track; f++)
                if (ft[f] < e[i].track) write_track_head(tl, ft[f], written++ == 0, out), fputs("]}", out);
            write_track_head(tl, e[i].track, written++ == 0, out);
        } else {
            fputc(',', out);
        }
        int64_t name = e[i].name;
        if (name >= 0) {
            if (remap[name] == 0) remap[name] = ++n_names;
            name = remap[name] - 1;
        }
        fprintf(out, "[%.3f,%.3f,%lld,%u,%llu]", (double)e[i].start_ns / 1e3, (double)e[i].dur_ns / 1e3, (long long)name,
                e[i].depth, (unsigned long long)e[i].extra);
    }
    if (w->entries.n) fputs("]}", out);
    for (; f < nf; f++) write_track_head(tl, ft[f], written++ == 0, out), fputs("]}", out);
    return n_names;
}

/* "flows":[[from_track,from_index,from_depth,from_us,to_track,to_index,to_depth,to_us],...] */
static void write_flows(const jp_timeline *tl, const window_pass *w, FILE *out) {
    fputs(",\"flows\":[", out);
    const tl_track *tracks = tl->tracks.data;
    for (size_t i = 0; i < w->flows.n; i++) {
        const tl_flow *f = &tl->flows[JP_VEC_AT(&w->flows, uint32_t, i)];
        fprintf(out, "%s[%u,%u,%u,%.3f,%u,%u,%u,%.3f]", i ? "," : "", f->from_track, f->from_index,
                depth_of(&tracks[f->from_track], f->from_index), (double)f->from_ns / 1e3, f->to_track, f->to_index,
                depth_of(&tracks[f->to_track], f->to_index), (double)f->to_ns / 1e3);
    }
    fprintf(out, "],\"flows_truncated\":%s", w->flows_truncated ? "true" : "false");
}

/* Writes the answer of a finished pass. */
static void write_window(const jp_timeline *tl, const window_pass *w, uint32_t *remap, FILE *out) {
    const jp_timeline_query *q = w->q;
    fprintf(out, "{\"start_ms\":%.6f,\"end_ms\":%.6f,\"px_ns\":%.3f,\"hosts\":[", (double)q->start_ns / 1e6,
            (double)q->end_ns / 1e6, w->res_ns);
    for (size_t h = 0; h < tl->hosts.n; h++) {
        const char *host = JP_VEC_AT(&tl->hosts, const char *, h);
        if (h) fputc(',', out);
        jp_timeline_json_strn(out, host, strlen(host));
    }
    fputs("],\"tracks\":[", out);
    uint32_t n_names = write_tracks(tl, w, remap, out);
    fputs("],\"names\":[", out);
    const entry *e = w->entries.data;
    const jp_str *names = tl->names.data;
    uint32_t written = 0;
    for (size_t i = 0; i < w->entries.n && written < n_names; i++) { /* names in order of first use */
        if (e[i].name < 0 || remap[e[i].name] != written + 1) continue;
        const jp_str *s = &names[e[i].name];
        if (written++) fputc(',', out);
        jp_timeline_json_strn(out, s->ptr, s->len);
    }
    fputc(']', out);
    write_flows(tl, w, out);
    fprintf(out, ",\"total_events\":%llu,\"returned_events\":%llu,\"aggregated\":%llu,\"entries\":%zu,\"truncated\":%s}\n",
            (unsigned long long)w->total, (unsigned long long)w->returned, (unsigned long long)w->aggregated,
            w->entries.n, w->truncated ? "true" : "false");
}

/* Passes over the window, coarsening 4x whenever the entries pass the cap; once a pixel is wider
 * than the window every level gives at most a few entries, and a last pass simply stops at cap. */
static int query(const jp_timeline *tl, window_pass *w) {
    double span = (double)(w->q->end_ns - w->q->start_ns);
    for (;;) {
        w->truncate = w->res_ns > 4 * span;
        int rc = run_pass(tl, w);
        if (rc < 0) return rc;
        if (rc == 0 || w->truncate) return window_flows(tl, w);
        w->res_ns = w->res_ns < 1 ? 1 : w->res_ns * 4;
    }
}

/* Marks the hosts whose name contains q->host (all for NULL or ""); JP_ERR_NOT_FOUND for none. */
static int select_hosts(const jp_timeline *tl, const jp_timeline_query *q, uint8_t *host_on, jp_error *err) {
    int any = 0;
    for (size_t h = 0; h < tl->hosts.n; h++) {
        host_on[h] = !q->host || !*q->host || strstr(JP_VEC_AT(&tl->hosts, const char *, h), q->host) != NULL;
        any |= host_on[h];
    }
    return any ? JP_OK : jp_error_set(err, JP_ERR_NOT_FOUND, 0, "no host matches '%s'", q->host);
}

int jp_timeline_window(const jp_timeline *tl, const jp_timeline_query *q, FILE *out, jp_error *err) {
    jp_error_clear(err);
    if (!tl || !q || !out || q->px == 0) return jp_error_set(err, JP_ERR_ARG, 0, "timeline: bad window query");
    window_pass w = {.q = q, .cap = q->cap ? q->cap : DEFAULT_CAP};
    w.res_ns = q->end_ns > q->start_ns ? (double)(q->end_ns - q->start_ns) / q->px : 0;
    uint32_t *remap = calloc(tl->names.n ? tl->names.n : 1, sizeof *remap);
    uint8_t *host_on = calloc(tl->hosts.n ? tl->hosts.n : 1, 1);
    w.host_on = host_on;
    int rc = remap && host_on ? select_hosts(tl, q, host_on, err) : JP_ERR_NOMEM;
    if (rc == JP_OK && q->end_ns > q->start_ns) rc = query(tl, &w);
    if (rc == JP_OK) write_window(tl, &w, remap, out);
    free(remap), free(host_on);
    jp_vec_free(&w.entries), jp_vec_free(&w.flows), jp_vec_free(&w.flow_tracks);
    if (rc == JP_OK && ferror(out)) rc = jp_error_set(err, JP_ERR_IO, 0, "timeline: write failed");
    return rc == JP_ERR_NOMEM ? nomem(err) : rc;
}

/* ---- one event --------------------------------------------------------------------------------------- */

/* Writes a stats message's stats as "name":value pairs; *first tracks the commas. */
static int write_stats(const tl_track *t, jp_stats_iter it, int *first, FILE *out, jp_error *err) {
    jp_stat st;
    int rc;
    while ((rc = jp_stats_next(&it, &st, err)) == 1) {
        const jp_stat_meta *sm = jp_plane_stat_meta_view(t->plane, st.metadata_id);
        jp_str name = sm ? sm->name : (jp_str){"stat", 4};
        if (!*first) fputc(',', out);
        *first = 0;
        jp_timeline_json_strn(out, name.ptr, name.len);
        fputc(':', out);
        jp_str s;
        switch (st.kind) {
        case JP_STAT_INT: fprintf(out, "%lld", (long long)st.v.i); break;
        case JP_STAT_UINT: fprintf(out, "%llu", (unsigned long long)st.v.u); break;
        case JP_STAT_DOUBLE: fprintf(out, st.v.d == st.v.d && st.v.d - st.v.d == 0 ? "%.17g" : "null", st.v.d); break;
        case JP_STAT_BYTES: fprintf(out, "\"<%zu bytes>\"", st.v.s.len); break;
        default:
            if ((rc = jp_stat_str(t->xs, t->plane, &st, &s, err)) < 0) return rc;
            jp_timeline_json_strn(out, s.ptr, s.len);
        }
    }
    return rc;
}

int jp_timeline_event(const jp_timeline *tl, size_t track_id, size_t index, FILE *out, jp_error *err) {
    jp_error_clear(err);
    if (!tl || !out) return jp_error_set(err, JP_ERR_ARG, 0, "timeline: bad event query");
    if (track_id >= tl->tracks.n) return jp_error_set(err, JP_ERR_NOT_FOUND, 0, "no track %zu", track_id);
    const tl_track *t = &JP_VEC_AT(&tl->tracks, tl_track, track_id);
    if (index >= t->n_events) return jp_error_set(err, JP_ERR_NOT_FOUND, 0, "no event %zu on track %zu", index, track_id);
    uint32_t d = 0;
    while (index >= t->levels[d].first + t->levels[d].n) d++;
    const level *lv = &t->levels[d];
    size_t i = index - lv->first;
    const jp_str *name = &JP_VEC_AT(&tl->names, jp_str, lv->name[i]);
    fprintf(out, "{\"track\":%zu,\"index\":%zu,\"process\":", track_id, index);
    jp_timeline_json_strn(out, t->process, strlen(t->process));
    fputs(",\"thread\":", out);
    jp_timeline_json_strn(out, t->thread, strlen(t->thread));
    fputs(",\"name\":", out);
    jp_timeline_json_strn(out, name->ptr, name->len);
    fprintf(out, ",\"start_us\":%.3f,\"dur_us\":%.3f,\"depth\":%u,\"args\":{", (double)lv->start_ns[i] / 1e3,
            (double)lv->dur_ns[i] / 1e3, d);
    const jp_event *ev = &t->line->events[lv->src[i]];
    const jp_event_meta *em = jp_plane_event_meta_view(t->plane, ev->metadata_id);
    int first = 1, rc = em ? write_stats(t, jp_stats_of_event_meta(t->xs, em), &first, out, err) : JP_OK;
    if (rc >= 0) rc = write_stats(t, jp_stats_of_event(t->xs, ev), &first, out, err);
    if (rc < 0) return rc;
    fputs("}}\n", out);
    return ferror(out) ? jp_error_set(err, JP_ERR_IO, 0, "timeline: write failed") : JP_OK;
}
