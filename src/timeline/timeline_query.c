/* timeline_query.c - jp_timeline_window and jp_timeline_aggregate: a time window answered with
 * runs of sub-pixel events merged (each with its busy time per pixel) and flows sampled, so every
 * answer stays bounded; and the exact per-name totals of a time range over some tracks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "timeline/timeline_int.h"

enum {
    DEFAULT_CAP = 20000,   /* entries in a window answer when the query names no cap */
    DENSITY_PER_ENTRY = 16, /* density digits allowed per entry of the cap, before coarsening */
    FLOW_CAP = 5000,       /* flows in a window answer: more arrows than this are only ink */
    FLOW_SCAN = 4,         /* a window looks at no more than FLOW_SCAN * FLOW_CAP flows */
    AGG_ROWS_MAX = 10000   /* name rows in a range answer */
};

/* ---- levels ------------------------------------------------------------------------------------- */

/* First index of lv whose event ends at or after t (ends are sorted: a level's events are disjoint). */
static size_t first_ending_from(const tl_level *lv, int64_t t) {
    size_t lo = 0, hi = lv->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (lv->start_ns[mid] + lv->dur_ns[mid] < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* First index of lv in [lo, hi) whose event starts at or after t, else hi. */
static size_t first_starting_from(const tl_level *lv, size_t lo, size_t hi, int64_t t) {
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (lv->start_ns[mid] < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Busy time of the level's events [0, p) up to t, where p is the first of [lo, hi) starting at or
 * after t (so *hint can carry p to the next, later t). */
static int64_t busy_until(const tl_level *lv, size_t *hint, size_t hi, int64_t t) {
    size_t p = first_starting_from(lv, *hint, hi, t);
    *hint = p;
    int64_t busy = lv->busy_before[p];
    if (p > 0) {
        int64_t over = lv->start_ns[p - 1] + lv->dur_ns[p - 1] - t; /* the part of the last one after t */
        if (over > 0) busy -= over;
    }
    return busy;
}

int64_t jp_timeline_self_ns(const tl_track *t, uint32_t d, size_t i) {
    const tl_level *lv = &t->levels[d];
    if (d + 1 >= t->n_levels) return lv->dur_ns[i];
    const tl_level *c = &t->levels[d + 1];
    size_t a = first_starting_from(c, 0, c->n, lv->start_ns[i]);
    size_t b = first_starting_from(c, a, c->n, lv->start_ns[i] + lv->dur_ns[i]);
    return lv->dur_ns[i] - (c->busy_before[b] - c->busy_before[a]);
}

uint32_t jp_timeline_depth_of(const tl_track *t, size_t index) {
    uint32_t d = 0;
    while (d + 1 < t->n_levels && index >= t->levels[d].first + t->levels[d].n) d++;
    return d;
}

/* Marks the hosts whose name contains host (all for NULL or ""); JP_ERR_NOT_FOUND for none. */
static int select_hosts(const jp_timeline *tl, const char *host, uint8_t *host_on, jp_error *err) {
    int any = 0;
    for (size_t h = 0; h < tl->hosts.n; h++) {
        host_on[h] = !host || !*host || strstr(JP_VEC_AT(&tl->hosts, const char *, h), host) != NULL;
        any |= host_on[h];
    }
    return any ? JP_OK : jp_error_set(err, JP_ERR_NOT_FOUND, 0, "no host matches '%s'", host);
}

/* An event is in a range starting at `from` when it ends after it (an instant: lies at or after it). */
static int visible(const tl_level *lv, size_t i, int64_t from) {
    return lv->dur_ns[i] == 0 ? lv->start_ns[i] >= from : lv->start_ns[i] + lv->dur_ns[i] > from;
}

/* ---- window queries --------------------------------------------------------------------------------- */

/* One element of an answer: an event, or a merged run of short ones. */
typedef struct entry {
    int64_t start_ns, dur_ns; /* trace time */
    int64_t name;             /* name index, -1 for a merged run */
    uint64_t extra;           /* the event's track-wide index, or the run's event count */
    uint32_t track, depth;    /* where it is drawn */
    int64_t busy_ns;          /* a merged run: its events' summed durations */
    int64_t bucket;           /* a merged run: the bucket its density digits start at */
    size_t dens_at, dens_len; /* a merged run: its digits in window_pass.density */
} entry;

/* What one pass over a window found. */
typedef struct window_pass {
    const jp_timeline_query *q; /* the window */
    const uint8_t *host_on;     /* by host index: 1 when its tracks are answered */
    double res_ns;              /* events shorter than this merge with close neighbours; < 1: none */
    size_t cap;                 /* entries allowed */
    int truncate;               /* 1: stop at cap; 0: fail as soon as cap is passed */
    jp_vec entries;             /* entry */
    jp_vec density;             /* char: the merged runs' density digits */
    uint64_t total, returned, aggregated; /* events seen, sent alone, sent merged */
    int truncated;              /* 1 when entries were left out */
    jp_vec flows;               /* uint32_t: indexes into jp_timeline.flows answered */
    jp_vec flow_tracks;         /* uint32_t: tracks the answered flows touch, sorted, unique */
    int flows_truncated;        /* 1 when flows were left out */
} window_pass;

/* Appends an entry; 0, 1 when the cap stops the pass, or JP_ERR_NOMEM. */
static int push_entry(window_pass *w, entry e) {
    if (w->entries.n >= w->cap || w->density.n > w->cap * DENSITY_PER_ENTRY) {
        w->truncated = 1;
        return 1;
    }
    entry *slot = jp_vec_push(&w->entries, sizeof e);
    if (!slot) return JP_ERR_NOMEM;
    *slot = e;
    return 0;
}

/* Start of bucket k of the window: buckets are res_ns wide from the window's start. */
static int64_t bucket_start(const window_pass *w, int64_t k) { return w->q->start_ns + (int64_t)((double)k * w->res_ns); }

/* Appends the density digit of a bucket `width` ns wide that is busy for `busy` ns: 0 idle, else
 * 1 + 15 x the busy fraction rounded down, at most f. Common fractions (1/4, 1/2, 3/4) fall
 * mid-level, so a regular load does not flicker between two digits. */
static int push_digit(window_pass *w, int64_t busy, int64_t width) {
    double frac = width > 0 ? (double)busy / (double)width : 1.0;
    int level = busy <= 0 ? 0 : frac >= 14.0 / 15.0 ? 15 : 1 + (int)(frac * 15.0);
    char *c = jp_vec_push(&w->density, 1);
    if (!c) return JP_ERR_NOMEM;
    *c = "0123456789abcdef"[level];
    return 0;
}

/* A run of short events being scanned, with the busy time of the buckets it has passed. */
typedef struct run_scan {
    size_t j;            /* its last event so far */
    int64_t end;         /* the latest end so far (the last event's: a level's events are disjoint) */
    int64_t busy;        /* the durations of its events so far */
    int64_t k;           /* the bucket being filled */
    int64_t lo, hi;      /* its start and end */
    int64_t busy_at_lo;  /* the run's busy time before lo */
} run_scan;

/* Closes bucket r->k: the run's busy time before its end, minus that before its start, is its digit. */
static int close_bucket(window_pass *w, run_scan *r) {
    int64_t at_hi = r->busy - (r->end > r->hi ? r->end - r->hi : 0);
    if (push_digit(w, at_hi - r->busy_at_lo, r->hi - r->lo)) return JP_ERR_NOMEM;
    r->busy_at_lo = at_hi;
    r->lo = r->hi;
    r->hi = bucket_start(w, ++r->k + 1);
    return 0;
}

/* Extends the run of short events starting at i (each shorter than res, gaps under res) as far as
 * it goes, writing the digit of each bucket as the scan passes its end: the busy time comes from
 * the durations summed on the way, so the density costs a compare per event. This loop is the
 * scan of a zoomed-out window (every event of it): its state stays in locals, and res is compared
 * as whole nanoseconds (an integer is under res exactly when it is under res rounded up). */
static int extend_run(window_pass *w, const tl_level *lv, run_scan *r) {
    const int64_t *start = lv->start_ns, *dur = lv->dur_ns;
    const int64_t to = w->q->end_ns, under = (int64_t)ceil(w->res_ns);
    int64_t end = r->end, busy = r->busy, hi = r->hi;
    size_t j = r->j;
    const size_t last = lv->n - 1;
    while (j < last) {
        int64_t s1 = start[j + 1], d1 = dur[j + 1];
        if (s1 >= to || d1 >= under || s1 - end >= under) break;
        j++;
        while (s1 >= hi) { /* the run passed the end of the bucket being filled */
            r->end = end, r->busy = busy;
            if (close_bucket(w, r)) return JP_ERR_NOMEM;
            hi = r->hi;
        }
        busy += d1;
        if (s1 + d1 > end) end = s1 + d1;
    }
    r->j = j, r->end = end, r->busy = busy;
    return 0;
}

/* One run from event i: a merged entry with its density when short events follow it, else i alone. */
static int scan_run(window_pass *w, const tl_level *lv, size_t i, entry *e) {
    int64_t from = w->q->start_ns, s = lv->start_ns[i], end = s + lv->dur_ns[i];
    run_scan r = {.j = i, .end = end, .busy = lv->dur_ns[i]};
    e->dens_at = w->density.n;
    if (w->res_ns >= 1 && (double)lv->dur_ns[i] < w->res_ns) {
        r.k = (int64_t)((double)((s > from ? s : from) - from) / w->res_ns);
        r.lo = bucket_start(w, r.k), r.hi = bucket_start(w, r.k + 1);
        r.busy_at_lo = s < r.lo ? (end < r.lo ? end : r.lo) - s : 0; /* the part of i before the window */
        e->bucket = r.k;
        if (extend_run(w, lv, &r)) return JP_ERR_NOMEM;
    }
    e->start_ns = s;
    e->dur_ns = r.end - s;
    if (r.j == i) { /* alone: no digits */
        w->density.n = e->dens_at;
        return 0;
    }
    int64_t last = (r.end < w->q->end_ns ? r.end : w->q->end_ns) - 1;
    while (r.lo <= last)
        if (close_bucket(w, &r)) return JP_ERR_NOMEM;
    e->busy_ns = r.busy;
    e->dens_len = w->density.n - e->dens_at;
    e->extra = r.j - i + 1;
    return 0;
}

/* One level's events in the window: long ones alone, runs of short ones (each shorter than a
 * pixel, gaps under a pixel) as one merged entry with its density. */
static int scan_level(window_pass *w, const tl_level *lv, uint32_t track, uint32_t depth) {
    int64_t from = w->q->start_ns, to = w->q->end_ns;
    size_t i = first_ending_from(lv, from);
    while (i < lv->n && lv->start_ns[i] < to) {
        if (!visible(lv, i, from)) {
            i++;
            continue;
        }
        entry e = {.track = track, .depth = depth};
        if (scan_run(w, lv, i, &e)) return JP_ERR_NOMEM;
        size_t count = e.extra ? e.extra : 1;
        e.name = count == 1 ? (int64_t)lv->name[i] : -1;
        if (count == 1) e.extra = lv->first + i;
        int rc = push_entry(w, e);
        if (rc) return rc;
        w->total += count;
        *(count == 1 ? &w->returned : &w->aggregated) += count;
        i += count;
    }
    return 0;
}

static int run_pass(const jp_timeline *tl, window_pass *w) {
    w->entries.n = w->density.n = 0;
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

/* The tracks the answered flows touch, sorted and unique (again after thinning). */
static int flow_tracks(const jp_timeline *tl, window_pass *w) {
    if (w->flows_truncated) {
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
    return flow_tracks(tl, w);
}

/* ---- the window answer ------------------------------------------------------------------------------ */

static const char *kind_name(int kind) {
    static const char *const names[] = {"source", "steps", "xla_ops", "xla_modules", "exposed_comm", "launch_delay"};
    return kind >= JP_LAYOUT_ROW_LINE && kind <= JP_LAYOUT_ROW_LAUNCH_DELAY ? names[kind] : "source";
}

static void write_track_head(const jp_timeline *tl, uint32_t id, int first, FILE *out) {
    const tl_track *t = &JP_VEC_AT(&tl->tracks, tl_track, id);
    const char *host = JP_VEC_AT(&tl->hosts, const char *, t->host);
    fprintf(out, "%s{\"id\":%u,\"host\":", first ? "" : ",", id);
    jp_json_fput_cstr(out, host);
    fputs(",\"process\":", out);
    jp_json_fput_cstr(out, t->process);
    fputs(",\"thread\":", out);
    jp_json_fput_cstr(out, t->thread);
    fprintf(out, ",\"kind\":\"%s\",\"levels\":%u,\"events\":[", kind_name(t->kind), t->n_levels);
}

/* Decimal digits of v at p; returns the end. (A window writes thousands of entries: printf's
 * parsing and floating point were most of a narrow window's time.) */
static char *put_u64(char *p, uint64_t v) {
    char tmp[20];
    int n = 0;
    do tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n) *p++ = tmp[--n];
    return p;
}

static char *put_i64(char *p, int64_t v) {
    if (v < 0) *p++ = '-';
    return put_u64(p, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

/* Nanoseconds as microseconds with three decimals, exactly. */
static char *put_us(char *p, int64_t ns) {
    uint64_t u = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns, r = u % 1000;
    if (ns < 0) *p++ = '-';
    p = put_u64(p, u / 1000);
    *p++ = '.';
    *p++ = (char)('0' + r / 100), *p++ = (char)('0' + r / 10 % 10), *p++ = (char)('0' + r % 10);
    return p;
}

static void write_entry(const window_pass *w, const entry *e, int64_t name, FILE *out) {
    char buf[8 * 24], *p = buf; /* at most 7 numbers of at most 22 characters, and punctuation */
    *p++ = '[';
    p = put_us(p, e->start_ns), *p++ = ',';
    p = put_us(p, e->dur_ns), *p++ = ',';
    p = put_i64(p, name), *p++ = ',';
    p = put_u64(p, e->depth), *p++ = ',';
    p = put_u64(p, e->extra);
    if (name < 0) {
        *p++ = ',', p = put_us(p, e->busy_ns), *p++ = ',', p = put_i64(p, e->bucket), *p++ = ',', *p++ = '"';
        fwrite(buf, 1, (size_t)(p - buf), out);
        fwrite((const char *)w->density.data + e->dens_at, 1, e->dens_len, out);
        p = buf, *p++ = '"';
    }
    *p++ = ']';
    fwrite(buf, 1, (size_t)(p - buf), out);
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
        write_entry(w, &e[i], name, out);
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
                jp_timeline_depth_of(&tracks[f->from_track], f->from_index), (double)f->from_ns / 1e3, f->to_track,
                f->to_index, jp_timeline_depth_of(&tracks[f->to_track], f->to_index), (double)f->to_ns / 1e3);
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
        jp_json_fput_cstr(out, host);
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
        jp_json_fput_str(out, s->ptr, s->len);
    }
    fputc(']', out);
    write_flows(tl, w, out);
    fprintf(out, ",\"total_events\":%llu,\"returned_events\":%llu,\"aggregated\":%llu,\"entries\":%zu,\"truncated\":%s,"
            "\"analysis_events\":%llu}\n",
            (unsigned long long)w->total, (unsigned long long)w->returned, (unsigned long long)w->aggregated,
            w->entries.n, w->truncated ? "true" : "false", (unsigned long long)tl->n_analysis);
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

int jp_timeline_window(const jp_timeline *tl, const jp_timeline_query *q, FILE *out, jp_error *err) {
    jp_error_clear(err);
    if (!tl || !q || !out || q->px == 0) return jp_error_set(err, JP_ERR_ARG, 0, "timeline: bad window query");
    window_pass w = {.q = q, .cap = q->cap ? q->cap : DEFAULT_CAP};
    w.res_ns = q->end_ns > q->start_ns ? (double)(q->end_ns - q->start_ns) / q->px : 0;
    uint32_t *remap = calloc(tl->names.n ? tl->names.n : 1, sizeof *remap);
    uint8_t *host_on = calloc(tl->hosts.n ? tl->hosts.n : 1, 1);
    w.host_on = host_on;
    int rc = remap && host_on ? select_hosts(tl, q->host, host_on, err) : JP_ERR_NOMEM;
    if (rc == JP_OK && q->end_ns > q->start_ns) rc = query(tl, &w);
    if (rc == JP_OK) write_window(tl, &w, remap, out);
    free(remap), free(host_on);
    jp_vec_free(&w.entries), jp_vec_free(&w.density), jp_vec_free(&w.flows), jp_vec_free(&w.flow_tracks);
    if (rc == JP_OK && ferror(out)) rc = jp_error_set(err, JP_ERR_IO, 0, "timeline: write failed");
    return rc == JP_ERR_NOMEM ? jp_error_set(err, rc, 0, "out of memory answering a timeline window") : rc;
}

/* ---- range totals -------------------------------------------------------------------------------------- */

/* The totals of one name (or, summed, of the range). */
typedef struct agg {
    uint64_t count;                    /* slices overlapping the range */
    int64_t total, self, in, self_in;  /* their wall and self time, whole and inside the range */
} agg;

/* What a range query sums into. */
typedef struct agg_pass {
    const jp_timeline *tl;       /* the index */
    int64_t from, to;            /* the range */
    agg *by_name;                /* by name index */
    jp_vec touched;              /* uint32_t: name indexes with a count */
    agg sum;                     /* over every slice */
} agg_pass;

static int add_slice(agg_pass *p, uint32_t name, int64_t dur, int64_t self, int64_t in, int64_t self_in) {
    agg *a = &p->by_name[name];
    if (a->count++ == 0 && push_u32(&p->touched, name)) return JP_ERR_NOMEM;
    a->total += dur, a->self += self, a->in += in, a->self_in += self_in;
    p->sum.count++;
    p->sum.total += dur, p->sum.self += self, p->sum.in += in, p->sum.self_in += self_in;
    return 0;
}

/* Self time of a slice [s, e) inside [lo, hi) ⊆ [s, e): its part there minus its children's part
 * there; children are the only events of the next level inside [s, e), so the next level's busy
 * time over [lo, hi) is theirs. */
static int64_t self_inside(const tl_level *c, int64_t lo, int64_t hi) {
    if (!c) return hi - lo;
    size_t h0 = 0, h1 = 0;
    return (hi - lo) - (busy_until(c, &h1, c->n, hi) - busy_until(c, &h0, c->n, lo));
}

/* Sums the slices of one level that overlap the range. Children (the next level) are walked in
 * step with their parents, so a level costs one pass over both. */
static int sum_level(agg_pass *p, const tl_level *lv, const tl_level *c) {
    size_t i = first_ending_from(lv, p->from), k = 0;
    if (c && i < lv->n) k = first_starting_from(c, 0, c->n, lv->start_ns[i]);
    for (; i < lv->n && lv->start_ns[i] < p->to; i++) {
        if (!visible(lv, i, p->from)) continue;
        int64_t s = lv->start_ns[i], e = s + lv->dur_ns[i], self = lv->dur_ns[i];
        if (c) {
            while (k < c->n && c->start_ns[k] < s) k++;
            size_t k0 = k;
            while (k < c->n && c->start_ns[k] < e) k++;
            self -= c->busy_before[k] - c->busy_before[k0];
        }
        int64_t lo = s > p->from ? s : p->from, hi = e < p->to ? e : p->to;
        int inside = lo == s && hi == e;
        int64_t in = hi > lo ? hi - lo : 0, self_in = inside ? self : in > 0 ? self_inside(c, lo, hi) : 0;
        if (add_slice(p, lv->name[i], lv->dur_ns[i], self, in, self_in)) return JP_ERR_NOMEM;
    }
    return 0;
}

static int sum_track(agg_pass *p, const tl_track *t) {
    int rc = 0;
    for (uint32_t d = 0; rc == 0 && d < t->n_levels; d++)
        rc = sum_level(p, &t->levels[d], d + 1 < t->n_levels ? &t->levels[d + 1] : NULL);
    return rc;
}

/* One row of the answer: a name and its totals. */
typedef struct name_row {
    jp_str name; /* the text (names from different planes with the same text fold into one row) */
    agg a;       /* its totals */
} name_row;

static int by_text(const void *pa, const void *pb) {
    const jp_str *a = &((const name_row *)pa)->name, *b = &((const name_row *)pb)->name;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->ptr, b->ptr, n) : 0;
    return c ? c : a->len < b->len ? -1 : a->len > b->len;
}

static int by_total(const void *pa, const void *pb) {
    const name_row *a = pa, *b = pb;
    if (a->a.total != b->a.total) return a->a.total > b->a.total ? -1 : 1;
    return by_text(pa, pb);
}

/* The touched names as rows, equal texts folded, by total time; n rows into *out (heap). */
static int fold_rows(const agg_pass *p, name_row **out, size_t *n) {
    const uint32_t *idx = p->touched.data;
    const jp_str *names = p->tl->names.data;
    name_row *rows = malloc((p->touched.n ? p->touched.n : 1) * sizeof *rows);
    if (!rows) return JP_ERR_NOMEM;
    for (size_t i = 0; i < p->touched.n; i++) rows[i] = (name_row){names[idx[i]], p->by_name[idx[i]]};
    qsort(rows, p->touched.n, sizeof *rows, by_text);
    size_t u = 0;
    for (size_t i = 0; i < p->touched.n; i++) {
        if (u && by_text(&rows[u - 1], &rows[i]) == 0) {
            agg *a = &rows[u - 1].a, *b = &rows[i].a;
            a->count += b->count, a->total += b->total, a->self += b->self, a->in += b->in, a->self_in += b->self_in;
        } else {
            rows[u++] = rows[i];
        }
    }
    qsort(rows, u, sizeof *rows, by_total);
    *out = rows;
    *n = u;
    return JP_OK;
}

static void write_agg(const agg *a, FILE *out) {
    fprintf(out, "\"total_ns\":%lld,\"self_ns\":%lld,\"in_range_ns\":%lld,\"self_in_range_ns\":%lld",
            (long long)a->total, (long long)a->self, (long long)a->in, (long long)a->self_in);
}

static void write_aggregate(const agg_pass *p, const jp_vec *tracks, const name_row *rows, size_t n, FILE *out) {
    fprintf(out, "{\"start_us\":%.3f,\"end_us\":%.3f,\"tracks\":[", (double)p->from / 1e3, (double)p->to / 1e3);
    for (size_t i = 0; i < tracks->n; i++) fprintf(out, "%s%u", i ? "," : "", JP_VEC_AT(tracks, uint32_t, i));
    fprintf(out, "],\"slices\":%llu,", (unsigned long long)p->sum.count);
    write_agg(&p->sum, out);
    fputs(",\"rows\":[", out);
    size_t shown = n < AGG_ROWS_MAX ? n : AGG_ROWS_MAX;
    for (size_t i = 0; i < shown; i++) {
        fputs(i ? ",{\"name\":" : "{\"name\":", out);
        jp_json_fput_str(out, rows[i].name.ptr, rows[i].name.len);
        fprintf(out, ",\"count\":%llu,", (unsigned long long)rows[i].a.count);
        write_agg(&rows[i].a, out);
        fputc('}', out);
    }
    fprintf(out, "],\"rows_truncated\":%s}\n", shown < n ? "true" : "false");
}

/* The track ids a range names: its list (checked), or every track of the hosts picked. */
static int range_tracks(const jp_timeline *tl, const jp_timeline_range *r, jp_vec *ids, jp_error *err) {
    if (r->tracks) {
        for (size_t i = 0; i < r->n_tracks; i++) {
            if (r->tracks[i] >= tl->tracks.n) return jp_error_set(err, JP_ERR_NOT_FOUND, 0, "no track %u", r->tracks[i]);
            if (push_u32(ids, r->tracks[i])) return JP_ERR_NOMEM;
        }
        return JP_OK;
    }
    uint8_t *host_on = calloc(tl->hosts.n ? tl->hosts.n : 1, 1);
    int rc = host_on ? select_hosts(tl, r->host, host_on, err) : JP_ERR_NOMEM;
    for (size_t t = 0; rc == JP_OK && t < tl->tracks.n; t++)
        if (host_on[JP_VEC_AT(&tl->tracks, tl_track, t).host] && push_u32(ids, (uint32_t)t)) rc = JP_ERR_NOMEM;
    free(host_on);
    return rc;
}

/* Sums every named track once (a track listed twice counts once) and writes the answer. */
static int aggregate(agg_pass *p, jp_vec *ids, FILE *out) {
    uint32_t *t = ids->data;
    if (ids->n) qsort(t, ids->n, sizeof *t, cmp_u32);
    size_t u = 0;
    for (size_t i = 0; i < ids->n; i++)
        if (u == 0 || t[i] != t[u - 1]) t[u++] = t[i];
    ids->n = u;
    for (size_t i = 0; i < ids->n; i++)
        if (sum_track(p, &JP_VEC_AT(&p->tl->tracks, tl_track, t[i]))) return JP_ERR_NOMEM;
    name_row *rows = NULL;
    size_t n = 0;
    int rc = fold_rows(p, &rows, &n);
    if (rc == JP_OK) write_aggregate(p, ids, rows, n, out);
    free(rows);
    return rc;
}

int jp_timeline_aggregate(const jp_timeline *tl, const jp_timeline_range *r, FILE *out, jp_error *err) {
    jp_error_clear(err);
    if (!tl || !r || !out || r->end_ns <= r->start_ns || (r->n_tracks && !r->tracks))
        return jp_error_set(err, JP_ERR_ARG, 0, "timeline: a range needs start < end");
    agg_pass p = {.tl = tl, .from = r->start_ns, .to = r->end_ns};
    jp_vec ids = {0};
    p.by_name = calloc(tl->names.n ? tl->names.n : 1, sizeof *p.by_name);
    int rc = p.by_name ? range_tracks(tl, r, &ids, err) : JP_ERR_NOMEM;
    if (rc == JP_OK) rc = aggregate(&p, &ids, out);
    free(p.by_name);
    jp_vec_free(&p.touched), jp_vec_free(&ids);
    if (rc == JP_OK && ferror(out)) rc = jp_error_set(err, JP_ERR_IO, 0, "timeline: write failed");
    return rc == JP_ERR_NOMEM ? jp_error_set(err, rc, 0, "out of memory summing a timeline range") : rc;
}
