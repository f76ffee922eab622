/* timeline.c - jp_timeline_*: indexes every event of a run once by track and nesting depth, then
 * answers time-window queries with runs of sub-pixel events merged, so every answer stays bounded. */
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "base/error.h"
#include "base/vec.h"
#include "outputs/layout.h"
#include "outputs/timeline.h"

enum { DEFAULT_CAP = 20000, NAME_MAX_LEN = 200 };

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
    level *levels;         /* by depth, 0 outermost */
    uint32_t n_levels;     /* depths used */
    size_t n_events;       /* over all levels */
} tl_track;

struct jp_timeline {
    jp_arena arena;    /* track names and level arrays */
    jp_vec xs;         /* jp_xspace *: the open xplanes, one per host kept */
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
} builder;

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
    for (size_t i = 0; i < n; i++) {
        if (items[i].lane != lane) continue;
        level *lv = &t->levels[items[i].depth];
        lv->start_ns[lv->n] = items[i].start_ns;
        lv->dur_ns[lv->n] = items[i].end_ns - items[i].start_ns;
        if (items[i].end_ns > b->tl->end_ns) b->tl->end_ns = items[i].end_ns;
        lv->name[lv->n] = items[i].tag;
        lv->src[lv->n++] = items[i].index;
    }
    return JP_OK;
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
        *t = (tl_track){.process = process, .xs = xs, .plane = pl, .line = ln};
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
    int rc = JP_OK;
    for (size_t l = 0; rc == JP_OK && l < pl->n_lines; l++) rc = index_line(b, xs, pl, &pl->lines[l], process);
    return rc;
}

static int index_all(builder *b, const jp_vec *hosts) {
    int rc = jp_layout_origin(b->tl->xs.data, b->tl->xs.n, &b->tl->base_ps, b->err);
    for (size_t h = 0; rc == JP_OK && h < b->tl->xs.n; h++) {
        jp_xspace *xs = JP_VEC_AT(&b->tl->xs, jp_xspace *, h);
        size_t n;
        const jp_plane *planes = jp_xspace_planes(xs, &n);
        for (int rank = 0; rank < 3; rank++)
            for (size_t p = 0; rc == JP_OK && p < n; p++)
                if (jp_layout_plane_rank(&planes[p]) == rank) rc = index_plane(b, xs, &planes[p], JP_VEC_AT(hosts, const char *, h));
    }
    return rc;
}

int jp_timeline_new(jp_timeline **out, const char *path, const char *host, jp_error *err) {
    jp_error_clear(err);
    if (!out || !path) return jp_error_set(err, JP_ERR_ARG, 0, "timeline: no profile path");
    *out = NULL;
    jp_timeline *tl = calloc(1, sizeof *tl);
    if (!tl) return nomem(err);
    jp_arena_init(&tl->arena, 0);
    builder b = {.tl = tl, .err = err};
    jp_vec files = {0}, hosts = {0};
    int rc = jp_layout_open_hosts(path, host, &tl->arena, &tl->xs, &files, &hosts, err);
    if (rc == JP_OK) rc = index_all(&b, &hosts);
    jp_layout_lanes_free(&b.lanes);
    jp_vec_free(&b.items), jp_vec_free(&files), jp_vec_free(&hosts);
    jp_map_deinit(&b.names);
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
    jp_vec_free(&tl->xs), jp_vec_free(&tl->tracks), jp_vec_free(&tl->names);
    jp_arena_deinit(&tl->arena);
    free(tl);
}

uint64_t jp_timeline_event_count(const jp_timeline *tl) { return tl ? tl->n_events : 0; }
size_t jp_timeline_track_count(const jp_timeline *tl) { return tl ? tl->tracks.n : 0; }
int64_t jp_timeline_end_ns(const jp_timeline *tl) { return tl ? tl->end_ns : 0; }

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
    double res_ns;              /* events shorter than this merge with close neighbours; < 1: none */
    size_t cap;                 /* entries allowed */
    int truncate;               /* 1: stop at cap; 0: fail as soon as cap is passed */
    jp_vec entries;             /* entry */
    uint64_t total, returned, aggregated; /* events seen, sent alone, sent merged */
    int truncated;              /* 1 when entries were left out */
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
    for (size_t t = 0; t < tl->tracks.n; t++)
        for (uint32_t d = 0; d < tracks[t].n_levels; d++) {
            int rc = scan_level(w, &tracks[t].levels[d], (uint32_t)t, d);
            if (rc) return rc;
        }
    return 0;
}

/* Writes the answer of a finished pass. */
static void write_window(const jp_timeline *tl, const window_pass *w, uint32_t *remap, FILE *out) {
    const jp_timeline_query *q = w->q;
    fprintf(out, "{\"start_ms\":%.6f,\"end_ms\":%.6f,\"px_ns\":%.3f,\"tracks\":[", (double)q->start_ns / 1e6,
            (double)q->end_ns / 1e6, w->res_ns);
    const entry *e = w->entries.data;
    const tl_track *tracks = tl->tracks.data;
    uint32_t n_names = 0;
    for (size_t i = 0; i < w->entries.n; i++) {
        if (i == 0 || e[i].track != e[i - 1].track) {
            const tl_track *t = &tracks[e[i].track];
            fprintf(out, "%s{\"id\":%u,\"process\":", i ? "]}," : "", e[i].track);
            jp_timeline_json_strn(out, t->process, strlen(t->process));
            fputs(",\"thread\":", out);
            jp_timeline_json_strn(out, t->thread, strlen(t->thread));
            fputs(",\"events\":[", out);
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
    fputs(w->entries.n ? "]}],\"names\":[" : "],\"names\":[", out);
    const jp_str *names = tl->names.data;
    uint32_t written = 0;
    for (size_t i = 0; i < w->entries.n && written < n_names; i++) { /* names in order of first use */
        if (e[i].name < 0 || remap[e[i].name] != written + 1) continue;
        const jp_str *s = &names[e[i].name];
        if (written++) fputc(',', out);
        jp_timeline_json_strn(out, s->ptr, s->len);
    }
    fprintf(out, "],\"total_events\":%llu,\"returned_events\":%llu,\"aggregated\":%llu,\"entries\":%zu,\"truncated\":%s}\n",
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
        if (rc == 0 || w->truncate) return JP_OK;
        w->res_ns = w->res_ns < 1 ? 1 : w->res_ns * 4;
    }
}

int jp_timeline_window(const jp_timeline *tl, const jp_timeline_query *q, FILE *out, jp_error *err) {
    jp_error_clear(err);
    if (!tl || !q || !out || q->px == 0) return jp_error_set(err, JP_ERR_ARG, 0, "timeline: bad window query");
    window_pass w = {.q = q, .cap = q->cap ? q->cap : DEFAULT_CAP};
    w.res_ns = q->end_ns > q->start_ns ? (double)(q->end_ns - q->start_ns) / q->px : 0;
    uint32_t *remap = calloc(tl->names.n ? tl->names.n : 1, sizeof *remap);
    int rc = remap ? (q->end_ns > q->start_ns ? query(tl, &w) : JP_OK) : JP_ERR_NOMEM;
    if (rc == JP_OK) write_window(tl, &w, remap, out);
    free(remap);
    jp_vec_free(&w.entries);
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
