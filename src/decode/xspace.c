/* xspace.c - decodes an XSpace (.xplane.pb[.gz]) into the jp_plane/jp_line/jp_event model without
 * copying strings: every name is a view into the bytes read or inflated. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/map.h"
#include "base/vec.h"
#include "decode/pb.h"
#include "decode/chrome.h"
#include "decode/xspace.h"

struct jp_xspace {
    jp_arena arena;        /* every array of the model, decompressed stat strings */
    jp_plane *planes;
    size_t n_planes;
    jp_str *hostnames;
    size_t n_hostnames;
    jp_str *notes[2];      /* the XSpace's own errors and warnings (fields 2 and 3), views */
    size_t n_notes[2];
    uint64_t n_events;     /* over all planes */
    const uint8_t *data;   /* the serialized XSpace */
    size_t size;
    uint8_t *file;         /* the file's bytes, read into anonymous pages we own, or NULL */
    size_t file_cap;       /* bytes mapped at file */
    uint8_t *inflated;     /* heap copy when the file was gzip, or NULL */
    int lazy;              /* events left undecoded (jp_xspace_open_lazy) */
    uint64_t max_inflate;  /* the caller's inflate limit (jp_load_options.max_inflate), 0: the defaults */
    const char *name;      /* the path or name errors give (arena) */
    uint64_t stat_inflated; /* bytes the compressed stats inflated to, together (bounded) */
    jp_map stat_cache;     /* (value address, length) -> index into stat_strs: each inflates once */
    jp_vec stat_strs;      /* jp_str, the inflated values (arena) */
    const char *warning;   /* what decoding doubts though the input decoded (arena), or NULL */
    int chrome;            /* the input was a Chrome trace, read as the XSpace it describes (chrome.c) */
};

enum {
    XSPACE_PLANES = 1, XSPACE_ERRORS = 2, XSPACE_WARNINGS = 3, XSPACE_HOSTNAMES = 4,
    PLANE_ID = 1, PLANE_NAME = 2, PLANE_LINES = 3, PLANE_EVENT_META = 4, PLANE_STAT_META = 5, PLANE_STATS = 6,
    LINE_ID = 1, LINE_NAME = 2, LINE_TIMESTAMP = 3, LINE_EVENTS = 4, LINE_DURATION = 9, LINE_DISPLAY_ID = 10,
    LINE_DISPLAY_NAME = 11,
    EVENT_META_ID = 1, EVENT_OFFSET = 2, EVENT_DURATION = 3, EVENT_STATS = 4, EVENT_OCCURRENCES = 5,
    EMETA_ID = 1, EMETA_NAME = 2, EMETA_METADATA = 3, EMETA_DISPLAY_NAME = 4, EMETA_STATS = 5,
    SMETA_ID = 1, SMETA_NAME = 2, SMETA_DESCRIPTION = 3,
    MAP_KEY = 1, MAP_VALUE = 2,
    STAT_META_ID = 1, STAT_DOUBLE = 2, STAT_UINT = 3, STAT_INT = 4, STAT_STR = 5, STAT_BYTES = 6, STAT_REF = 7,
    STAT_COMPRESSED = 8,
};

/* Gzip bombs: a file may inflate to INFLATE_RATIO times its size (real profiles: 2 to 7), at least
 * INFLATE_FLOOR, at most the machine's memory; the caller's max_inflate (jp_load_options) sets the
 * limit instead, for a genuine file that compresses better. */
enum { INFLATE_RATIO = 64 };
static const uint64_t INFLATE_FLOOR = (uint64_t)256 << 20;

/* Compressed stats (compressed_str_value) are bounded together, not one by one: each got the file's
 * allowance before, so a 2 MB file of stats that inflate to 200 MB each took 2.46 GB and 15 s (12
 * MB: out of memory). What they inflate to stays in the arena while the profile is open, so the
 * bound is on the total: 16 times the XSpace's size (a stat is a part of the file, and text
 * compresses 3 to 10 times), at least 64 MiB (a small profile may still carry one big compressed
 * HLO text), at most 1 GiB whatever the file's size. The caller's max_inflate sets it instead. */
enum { STAT_INFLATE_RATIO = 16 };
static const uint64_t STAT_INFLATE_FLOOR = (uint64_t)64 << 20, STAT_INFLATE_CEILING = (uint64_t)1 << 30;

/* ---- small helpers ---------------------------------------------------------------------------- */

static int wrong_wire(const jp_pb_field *f, const char *what, uint32_t expected, jp_error *err) {
    static const char *names[] = {"varint", "fixed64", "length-delimited", "", "", "fixed32"};
    return jp_error_set(err, JP_ERR_CORRUPT, f->offset,
                        "corrupt %s at byte %llu: field %u has wire type %u, expected %s", what,
                        (unsigned long long)f->offset, f->number, f->wire, names[expected]);
}

static int want(const jp_pb_field *f, uint32_t wire, const char *what, jp_error *err) {
    return f->wire == wire ? JP_OK : wrong_wire(f, what, wire, err);
}

static jp_str str_of(const jp_pb_field *f) {
    jp_str s = {(const char *)f->data, f->len};
    return s;
}

static jp_bytes bytes_of(const jp_pb_field *f) {
    jp_bytes b = {f->data, f->len};
    return b;
}

static void *alloc_array(jp_xspace *xs, size_t n, size_t size, jp_error *err) {
    if (n == 0) return NULL;
    if (n > SIZE_MAX / size) {
        jp_error_set(err, JP_ERR_LIMIT, 0, "array of %zu items too large", n);
        return NULL;
    }
    void *p = jp_arena_alloc(&xs->arena, n * size);
    if (!p) jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory decoding the profile");
    return p;
}

/* Counts the LEN fields numbered `number` in a message (the first of the two passes). */
static int count_fields(jp_pb c, uint32_t number, const char *what, size_t *count, jp_error *err) {
    jp_pb_field f;
    *count = 0;
    while (!jp_pb_done(&c)) {
        int rc = jp_pb_next(&c, &f, what, err);
        if (rc) return rc;
        if (f.number == number) {
            if ((rc = want(&f, JP_PB_LEN, what, err))) return rc;
            (*count)++;
        }
    }
    return JP_OK;
}

/* ---- stats ---------------------------------------------------------------------------------- */

/* The shape nearly every writer emits: a one-byte metadata id, then one value field with a
 * one-byte tag (a varint of up to 9 bytes, a double, or a string shorter than 128 bytes) that ends
 * the message. Decodes such a stat without the general field walk and returns 1; returns 0, having
 * decoded nothing, for any other bytes, which then take the general path (so results and errors
 * are the same either way). */
/* The kind + 1 of a varint value in XStat field `number` (a one-byte tag: below 16), 0 for none. */
static const uint8_t VARINT_KIND[16] = {[STAT_UINT] = JP_STAT_UINT + 1, [STAT_INT] = JP_STAT_INT + 1,
                                        [STAT_REF] = JP_STAT_REF + 1};

static inline int decode_stat_common(const uint8_t *p, const uint8_t *end, jp_stat *st) {
    size_t n = (size_t)(end - p);
    if (n < 4 || p[0] != (STAT_META_ID << 3 | JP_PB_VARINT) || p[1] >= 0x80 || p[2] >= 0x80) return 0;
    unsigned number = p[2] >> 3, wire = p[2] & 7;
    if (wire == JP_PB_VARINT && VARINT_KIND[number]) {
        uint64_t u;
        size_t k = jp_pb_varint9(p + 3, n - 3, &u);
        if (!k || 3 + k != n) return 0;
        memset(st, 0, sizeof *st);
        st->kind = VARINT_KIND[number] - 1;
        st->v.u = u;
    } else if (wire == JP_PB_I64 && number == STAT_DOUBLE && n == 11) {
        uint64_t u = 0;
        for (int i = 7; i >= 0; i--) u = u << 8 | p[3 + i];
        memset(st, 0, sizeof *st);
        st->kind = JP_STAT_DOUBLE;
        memcpy(&st->v.d, &u, sizeof st->v.d);
    } else if (wire == JP_PB_LEN && (number == STAT_STR || number == STAT_BYTES || number == STAT_COMPRESSED) &&
               p[3] < 0x80 && (size_t)p[3] + 4 == n) {
        memset(st, 0, sizeof *st);
        st->kind = number == STAT_STR ? JP_STAT_STR : number == STAT_BYTES ? JP_STAT_BYTES : JP_STAT_COMPRESSED;
        st->v.s = (jp_str){(const char *)p + 4, p[3]};
    } else {
        return 0;
    }
    st->metadata_id = p[1];
    return 1;
}

static int decode_stat(jp_pb c, jp_stat *st, jp_error *err) {
    jp_pb_field f;
    if (decode_stat_common(c.p, c.end, st)) return JP_OK;
    memset(st, 0, sizeof *st);
    while (!jp_pb_done(&c)) {
        int rc = jp_pb_next(&c, &f, "XStat", err);
        if (rc) return rc;
        switch (f.number) {
        case STAT_META_ID:
            if ((rc = want(&f, JP_PB_VARINT, "XStat", err))) return rc;
            st->metadata_id = f.u;
            break;
        case STAT_DOUBLE:
            if ((rc = want(&f, JP_PB_I64, "XStat", err))) return rc;
            st->kind = JP_STAT_DOUBLE;
            memcpy(&st->v.d, &f.u, sizeof st->v.d);
            break;
        case STAT_UINT:
        case STAT_INT:
        case STAT_REF:
            if ((rc = want(&f, JP_PB_VARINT, "XStat", err))) return rc;
            st->kind = f.number == STAT_UINT ? JP_STAT_UINT : f.number == STAT_INT ? JP_STAT_INT : JP_STAT_REF;
            st->v.u = f.u;
            break;
        case STAT_STR:
        case STAT_BYTES:
        case STAT_COMPRESSED:
            if ((rc = want(&f, JP_PB_LEN, "XStat", err))) return rc;
            st->kind = f.number == STAT_STR ? JP_STAT_STR : f.number == STAT_BYTES ? JP_STAT_BYTES : JP_STAT_COMPRESSED;
            st->v.s = str_of(&f);
            break;
        default: break;
        }
    }
    return JP_OK;
}

static jp_stats_iter stats_iter(const jp_xspace *xs, jp_bytes raw, uint32_t field) {
    jp_stats_iter it = {raw.ptr, raw.ptr + raw.len, xs->data, field};
    return it;
}

jp_stats_iter jp_stats_of_event(const jp_xspace *xs, const jp_event *ev) {
    return stats_iter(xs, ev->raw, EVENT_STATS);
}

jp_stats_iter jp_stats_of_event_meta(const jp_xspace *xs, const jp_event_meta *em) {
    return stats_iter(xs, em->raw, EMETA_STATS);
}

jp_stats_iter jp_stats_of_plane(const jp_xspace *xs, const jp_plane *plane) {
    return stats_iter(xs, plane->raw, PLANE_STATS);
}

int jp_stats_next(jp_stats_iter *it, jp_stat *out, jp_error *err) {
    jp_pb c = {it->p, it->end, it->origin};
    jp_pb_field f;
    while (!jp_pb_done(&c)) {
        int rc = jp_pb_next(&c, &f, "stats", err);
        if (rc) return rc;
        if (f.number == it->field && f.wire == JP_PB_LEN) {
            it->p = c.p;
            rc = decode_stat(jp_pb_sub(&c, &f), out, err);
            return rc ? rc : 1;
        }
    }
    it->p = c.p;
    return 0;
}

/* Validates every stat of a message at load, so later walks cannot fail. */
static int check_stats(const jp_xspace *xs, jp_bytes raw, uint32_t field, jp_error *err) {
    jp_stats_iter it = stats_iter(xs, raw, field);
    jp_stat st;
    int rc;
    while ((rc = jp_stats_next(&it, &st, err)) == 1) {}
    return rc;
}

int64_t jp_stat_int(const jp_stat *st) {
    switch (st->kind) {
    case JP_STAT_UINT: return (int64_t)st->v.u;
    case JP_STAT_INT: return st->v.i;
    case JP_STAT_DOUBLE:
        return st->v.d >= -9.2e18 && st->v.d <= 9.2e18 ? (int64_t)st->v.d : 0;
    default: return 0;
    }
}

static int inflate_all(const uint8_t *in, size_t in_len, uint64_t limit, const char *why, uint8_t **out,
                       size_t *out_len, jp_error *err);

/* What all compressed stats of xs may inflate to together; *why names the rule. */
static uint64_t stat_inflate_limit(const jp_xspace *xs, const char **why) {
    uint64_t limit;
    if (xs->max_inflate) {
        *why = "max_inflate";
        return xs->max_inflate;
    }
    *why = "16 times the XSpace's size, at least 64 MiB, at most 1 GiB, for all compressed stats together";
    limit = (uint64_t)xs->size > STAT_INFLATE_CEILING / STAT_INFLATE_RATIO ? STAT_INFLATE_CEILING
                                                                           : (uint64_t)xs->size * STAT_INFLATE_RATIO;
    return limit < STAT_INFLATE_FLOOR ? STAT_INFLATE_FLOOR : limit;
}

/* A compressed stat's value, inflated into the arena on first use and the same view after: the
 * total inflated is bounded (stat_inflate_limit), and a viewer asking for one event's details
 * again and again must neither spend that allowance nor grow the arena each time. */
static int inflate_stat(jp_xspace *xs, jp_str in, jp_str *out, jp_error *err) {
    uint32_t k = jp_map_get(&xs->stat_cache, jp_ptr_key(in.ptr), in.len, 0);
    if (k != UINT32_MAX) {
        *out = JP_VEC_AT(&xs->stat_strs, jp_str, k);
        return JP_OK;
    }
    const uint8_t *at = (const uint8_t *)in.ptr;
    uint64_t offset = at >= xs->data && at <= xs->data + xs->size ? (uint64_t)(at - xs->data) : 0;
    const char *why;
    uint64_t limit = stat_inflate_limit(xs, &why), left = limit > xs->stat_inflated ? limit - xs->stat_inflated : 0;
    uint8_t *buf;
    size_t len;
    int rc = inflate_all(at, in.len, left, why, &buf, &len, err);
    if (rc == JP_ERR_LIMIT)
        return jp_error_set(err, rc, offset,
                            "compressed stat at byte %llu: the profile's compressed stats inflate to more than %llu "
                            "bytes (the limit: %s); if the file is genuine, raise the max_inflate limit",
                            (unsigned long long)offset, (unsigned long long)limit, why);
    if (rc) { /* say which stat: the offset inflate_all gives is inside the stat's bytes */
        char inner[JP_ERROR_MSG_MAX];
        snprintf(inner, sizeof inner, "%s", err ? err->msg : "");
        return jp_error_set(err, rc, offset, "compressed stat at byte %llu: %s", (unsigned long long)offset, inner);
    }
    char *copy = jp_arena_strndup(&xs->arena, (const char *)buf, len);
    free(buf);
    jp_str *slot = copy ? jp_vec_push(&xs->stat_strs, sizeof *slot) : NULL;
    if (!slot) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory inflating a stat");
    xs->stat_inflated += len;
    *slot = (jp_str){copy, len};
    *out = *slot;
    /* cached only once it exists: a stat that failed fails again, the same way, when asked again */
    if (jp_map_get_or_put(&xs->stat_cache, jp_ptr_key(in.ptr), in.len, 0, (uint32_t)(xs->stat_strs.n - 1), NULL) ==
        UINT32_MAX)
        return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory inflating a stat");
    return JP_OK;
}

int jp_stat_str(jp_xspace *xs, const jp_plane *plane, const jp_stat *st, jp_str *out, jp_error *err) {
    out->ptr = "";
    out->len = 0;
    switch (st->kind) {
    case JP_STAT_STR:
        *out = st->v.s;
        return JP_OK;
    case JP_STAT_REF: {
        const jp_stat_meta *sm = jp_plane_stat_meta_view(plane, st->v.u);
        if (sm) *out = sm->name;
        return JP_OK;
    }
    case JP_STAT_COMPRESSED: return inflate_stat(xs, st->v.s, out, err);
    default: return JP_OK;
    }
}

/* ---- discarding what was read ---------------------------------------------------------------- */

void jp_xspace_discard(const jp_xspace *xs, const void *p, size_t len) {
    /* only a lazy XSpace: its events are read once, by the model's stream; an eager one is opened
     * by exporters and the timeline, which read its events again after analysing them */
    const uint8_t *file = xs->lazy && xs->data == xs->file ? xs->file : NULL, *from = p;
    if (!file || from < file || from > file + xs->size || len > (size_t)(file + xs->size - from)) return;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    size_t start = (size_t)(from - file), end = start + len, ps = (size_t)page;
    start = (start + ps - 1) / ps * ps; /* whole pages only: neighbours may still be in use */
    end = end / ps * ps;
    if (end > start) madvise((void *)(uintptr_t)(file + start), end - start, MADV_DONTNEED);
}

/* ---- events and lines ------------------------------------------------------------------------ */

/* How decode_event treats an event's stats. */
typedef struct stat_walk {
    int check;              /* decode each one, so a bad one is an error */
    jp_stat_visitor visit;  /* and hand each good one `filter` passes to visit(ctx, stat), when set */
    void *ctx;
    jp_stat_filter filter;
} stat_walk;

/* Hands a decoded stat to the walk's visitor when it has one and its filter passes the stat. */
static inline void visit_stat(const stat_walk *stats, const jp_stat *st) {
    if (stats->visit && (st->metadata_id >= stats->filter.n || stats->filter.wanted[st->metadata_id]))
        stats->visit(stats->ctx, st);
}

/* The fields nearly every event is made of, read without the general field walk: a one-byte tag,
 * then a varint of at most 9 bytes (metadata id, offset, duration) or a stat of decode_stat_common's
 * shape in a one-byte length. Returns 1 having read the field at c->p, 0 (having read nothing) for
 * anything else, which the general walk then reads with the same result. */
static inline int event_field_fast(jp_pb *c, jp_event *ev, const stat_walk *stats) {
    const uint8_t *p = c->p;
    size_t avail = (size_t)(c->end - p);
    if (avail < 2) return 0;
    if (p[0] == (EVENT_STATS << 3 | JP_PB_LEN)) {
        jp_stat st;
        if (!stats->check || p[1] >= 0x80 || avail - 2 < p[1] || !decode_stat_common(p + 2, p + 2 + p[1], &st)) return 0;
        c->p = p + 2 + p[1];
        visit_stat(stats, &st);
        return 1;
    }
    unsigned number = p[0] >> 3;
    if ((p[0] & 7) != JP_PB_VARINT || number < EVENT_META_ID || number > EVENT_DURATION) return 0;
    uint64_t v;
    size_t n = jp_pb_varint9(p + 1, avail - 1, &v);
    if (!n) return 0;
    c->p = p + 1 + n;
    if (number == EVENT_META_ID) ev->metadata_id = v;
    else if (number == EVENT_OFFSET) ev->offset_ps = (int64_t)v;
    else ev->duration_ps = (int64_t)v;
    return 1;
}

/* One walk validates an event's fields and, as `stats` says, its stats. The errors are those of a
 * walk over the fields followed by check_stats: a field error anywhere wins over a bad stat, so the
 * first bad stat is only noted (the visitor sees no stat after it), and decoded again for its
 * message once the fields are known to be sound. */
static int decode_event(jp_pb c, jp_event *ev, stat_walk stats, jp_error *err) {
    jp_pb_field f;
    const uint8_t *bad_stat = NULL; /* payload of the first stat that failed to decode */
    size_t bad_len = 0;
    memset(ev, 0, sizeof *ev);
    ev->raw.ptr = c.p;
    ev->raw.len = (size_t)(c.end - c.p);
    while (!jp_pb_done(&c)) {
        if (!bad_stat && event_field_fast(&c, ev, &stats)) continue;
        int rc = jp_pb_next(&c, &f, "XEvent", err);
        if (rc) return rc;
        if (f.number == EVENT_STATS) {
            jp_stat st;
            if (!stats.check || f.wire != JP_PB_LEN || bad_stat) continue;
            if (decode_stat(jp_pb_sub(&c, &f), &st, NULL) != JP_OK) {
                bad_stat = f.data;
                bad_len = f.len;
            } else {
                visit_stat(&stats, &st);
            }
            continue;
        }
        if (f.number > EVENT_OCCURRENCES) continue;
        if ((rc = want(&f, JP_PB_VARINT, "XEvent", err))) return rc;
        switch (f.number) {
        case EVENT_META_ID: ev->metadata_id = f.u; break;
        case EVENT_OFFSET: ev->offset_ps = (int64_t)f.u; break;
        case EVENT_DURATION: ev->duration_ps = (int64_t)f.u; break;
        case EVENT_OCCURRENCES: ev->num_occurrences = (int64_t)f.u; break;
        default: break;
        }
    }
    if (!bad_stat) return JP_OK;
    jp_stat st;
    return decode_stat(jp_pb_make(bad_stat, bad_len, c.origin), &st, err);
}

/* Decodes a line's fields; its events too unless the XSpace is lazy, when they are only counted
 * (their framing is checked) and left to jp_event_reader. */
static int decode_line(jp_xspace *xs, jp_pb c, jp_line *line, jp_error *err) {
    jp_pb_field f;
    size_t n = 0;
    memset(line, 0, sizeof *line);
    line->raw = (jp_bytes){c.p, (size_t)(c.end - c.p)};
    int rc = xs->lazy ? JP_OK : count_fields(c, LINE_EVENTS, "XLine", &n, err);
    if (rc) return rc;
    line->events = alloc_array(xs, n, sizeof(jp_event), err);
    if (n && !line->events) return err ? err->code : JP_ERR_NOMEM;
    while (!jp_pb_done(&c)) {
        if ((rc = jp_pb_next(&c, &f, "XLine", err))) return rc;
        switch (f.number) {
        case LINE_EVENTS:
            if ((rc = want(&f, JP_PB_LEN, "XLine", err))) return rc;
            if (!xs->lazy && (rc = decode_event(jp_pb_sub(&c, &f), &line->events[line->n_events], (stat_walk){1, NULL, NULL, {NULL, 0}}, err))) return rc;
            line->n_events++;
            break;
        case LINE_NAME:
        case LINE_DISPLAY_NAME:
            if ((rc = want(&f, JP_PB_LEN, "XLine", err))) return rc;
            *(f.number == LINE_NAME ? &line->name : &line->display_name) = str_of(&f);
            break;
        case LINE_ID:
        case LINE_TIMESTAMP:
        case LINE_DURATION:
        case LINE_DISPLAY_ID:
            if ((rc = want(&f, JP_PB_VARINT, "XLine", err))) return rc;
            if (f.number == LINE_ID) line->id = (int64_t)f.u;
            else if (f.number == LINE_TIMESTAMP) line->timestamp_ns = (int64_t)f.u;
            else if (f.number == LINE_DURATION) line->duration_ps = (int64_t)f.u;
            else line->display_id = (int64_t)f.u;
            break;
        default: break;
        }
    }
    xs->n_events += line->n_events;
    return JP_OK;
}

jp_event_reader jp_line_event_reader(const jp_xspace *xs, const jp_line *line) {
    jp_event_reader r = {line->raw.ptr, line->raw.ptr + line->raw.len, xs->data};
    return r;
}

static int reader_next(jp_event_reader *r, jp_event *ev, stat_walk stats, jp_error *err) {
    jp_pb c = {r->p, r->end, r->origin};
    jp_pb_field f;
    while (!jp_pb_done(&c)) {
        int rc = jp_pb_next(&c, &f, "XLine", err);
        if (rc) return rc;
        if (f.number != LINE_EVENTS) continue;
        if ((rc = want(&f, JP_PB_LEN, "XLine", err))) return rc;
        r->p = c.p;
        rc = decode_event(jp_pb_sub(&c, &f), ev, stats, err);
        return rc ? rc : 1;
    }
    r->p = c.p;
    return 0;
}

int jp_event_reader_next(jp_event_reader *r, jp_event *ev, jp_error *err) {
    return reader_next(r, ev, (stat_walk){0, NULL, NULL, {NULL, 0}}, err); /* jp_stats_next checks the stats */
}

int jp_event_reader_next_stats(jp_event_reader *r, jp_event *ev, jp_stat_filter filter, jp_stat_visitor visit,
                               void *ctx, jp_error *err) {
    return reader_next(r, ev, (stat_walk){1, visit, ctx, filter}, err);
}

/* ---- metadata maps ---------------------------------------------------------------------------- */

/* A map<int64, Message> entry: returns the key and a cursor over the value. */
static int map_entry(jp_pb c, const char *what, uint64_t *key, jp_pb *value, jp_error *err) {
    jp_pb_field f;
    *key = 0;
    *value = jp_pb_make(c.p, 0, c.origin);
    while (!jp_pb_done(&c)) {
        int rc = jp_pb_next(&c, &f, what, err);
        if (rc) return rc;
        if (f.number == MAP_KEY) {
            if ((rc = want(&f, JP_PB_VARINT, what, err))) return rc;
            *key = f.u;
        } else if (f.number == MAP_VALUE) {
            if ((rc = want(&f, JP_PB_LEN, what, err))) return rc;
            *value = jp_pb_sub(&c, &f);
        }
    }
    return JP_OK;
}

static int decode_event_meta(const jp_xspace *xs, jp_pb entry, jp_event_meta *em, jp_error *err) {
    uint64_t key;
    jp_pb c;
    int rc = map_entry(entry, "XPlane.event_metadata", &key, &c, err);
    if (rc) return rc;
    memset(em, 0, sizeof *em);
    em->id = (int64_t)key;
    em->raw.ptr = c.p;
    em->raw.len = (size_t)(c.end - c.p);
    jp_pb_field f;
    while (!jp_pb_done(&c)) {
        if ((rc = jp_pb_next(&c, &f, "XEventMetadata", err))) return rc;
        switch (f.number) {
        case EMETA_ID:
            if ((rc = want(&f, JP_PB_VARINT, "XEventMetadata", err))) return rc;
            em->id = (int64_t)f.u;
            break;
        case EMETA_NAME:
        case EMETA_DISPLAY_NAME:
        case EMETA_METADATA:
            if ((rc = want(&f, JP_PB_LEN, "XEventMetadata", err))) return rc;
            if (f.number == EMETA_NAME) em->name = str_of(&f);
            else if (f.number == EMETA_DISPLAY_NAME) em->display_name = str_of(&f);
            else em->metadata = bytes_of(&f);
            break;
        default: break;
        }
    }
    return check_stats(xs, em->raw, EMETA_STATS, err);
}

static int decode_stat_meta(jp_pb entry, jp_stat_meta *sm, jp_error *err) {
    uint64_t key;
    jp_pb c;
    int rc = map_entry(entry, "XPlane.stat_metadata", &key, &c, err);
    if (rc) return rc;
    memset(sm, 0, sizeof *sm);
    sm->id = (int64_t)key;
    jp_pb_field f;
    while (!jp_pb_done(&c)) {
        if ((rc = jp_pb_next(&c, &f, "XStatMetadata", err))) return rc;
        if (f.number == SMETA_ID) {
            if ((rc = want(&f, JP_PB_VARINT, "XStatMetadata", err))) return rc;
            sm->id = (int64_t)f.u;
        } else if (f.number == SMETA_NAME || f.number == SMETA_DESCRIPTION) {
            if ((rc = want(&f, JP_PB_LEN, "XStatMetadata", err))) return rc;
            *(f.number == SMETA_NAME ? &sm->name : &sm->description) = str_of(&f);
        }
    }
    return JP_OK;
}

/* jp_event_meta and jp_stat_meta both begin with `int64_t id`: one comparator sorts and searches
 * both tables. */
_Static_assert(offsetof(jp_event_meta, id) == 0 && offsetof(jp_stat_meta, id) == 0, "id must lead");

static int by_leading_id(const void *a, const void *b) {
    int64_t x, y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    return (x > y) - (x < y);
}

static int64_t leading_id(const void *base, size_t size, size_t i) {
    int64_t id;
    memcpy(&id, (const char *)base + i * size, sizeof id);
    return id;
}

/* Looks `id` up in an array sorted by leading id. Writers mostly number metadata 0 or 1 upwards,
 * so the entry at index id-1 or id is tried first; it is taken only when no neighbour shares its id
 * (then it is the one match bsearch would find too), otherwise bsearch decides as before. */
static const void *find_by_id(const void *base, size_t n, size_t size, uint64_t id) {
    int64_t key = (int64_t)id;
    if (!n) return NULL;
    for (uint64_t guess = id ? id - 1 : 0; guess <= id && guess < n; guess++) {
        size_t i = (size_t)guess;
        if (leading_id(base, size, i) == key && (i == 0 || leading_id(base, size, i - 1) != key) &&
            (i + 1 == n || leading_id(base, size, i + 1) != key))
            return (const char *)base + i * size;
    }
    return bsearch(&key, base, n, size, by_leading_id);
}

const jp_event_meta *jp_plane_event_meta_view(const jp_plane *plane, uint64_t id) {
    return find_by_id(plane->event_meta, plane->n_event_meta, sizeof(jp_event_meta), id);
}

const jp_stat_meta *jp_plane_stat_meta_view(const jp_plane *plane, uint64_t id) {
    return find_by_id(plane->stat_meta, plane->n_stat_meta, sizeof(jp_stat_meta), id);
}

/* ---- planes and the space ---------------------------------------------------------------------- */

/* Two passes: count lines and metadata entries to size the arrays exactly, then fill them. */
static int decode_plane(jp_xspace *xs, jp_pb c, jp_plane *plane, jp_error *err) {
    jp_pb_field f;
    size_t n_lines = 0, n_em = 0, n_sm = 0;
    memset(plane, 0, sizeof *plane);
    plane->raw.ptr = c.p;
    plane->raw.len = (size_t)(c.end - c.p);
    for (jp_pb scan = c; !jp_pb_done(&scan);) {
        int rc = jp_pb_next(&scan, &f, "XPlane", err);
        if (rc) return rc;
        if (f.number == PLANE_LINES || f.number == PLANE_EVENT_META || f.number == PLANE_STAT_META) {
            if ((rc = want(&f, JP_PB_LEN, "XPlane", err))) return rc;
            n_lines += f.number == PLANE_LINES;
            n_em += f.number == PLANE_EVENT_META;
            n_sm += f.number == PLANE_STAT_META;
        }
    }
    plane->lines = alloc_array(xs, n_lines, sizeof(jp_line), err);
    plane->event_meta = alloc_array(xs, n_em, sizeof(jp_event_meta), err);
    plane->stat_meta = alloc_array(xs, n_sm, sizeof(jp_stat_meta), err);
    if ((n_lines && !plane->lines) || (n_em && !plane->event_meta) || (n_sm && !plane->stat_meta))
        return err ? err->code : JP_ERR_NOMEM;
    while (!jp_pb_done(&c)) {
        int rc = jp_pb_next(&c, &f, "XPlane", err);
        if (rc) return rc;
        switch (f.number) {
        case PLANE_ID:
            if ((rc = want(&f, JP_PB_VARINT, "XPlane", err))) return rc;
            plane->id = (int64_t)f.u;
            break;
        case PLANE_NAME:
            if ((rc = want(&f, JP_PB_LEN, "XPlane", err))) return rc;
            plane->name = str_of(&f);
            break;
        case PLANE_LINES:
            rc = decode_line(xs, jp_pb_sub(&c, &f), &plane->lines[plane->n_lines++], err);
            break;
        case PLANE_EVENT_META:
            rc = decode_event_meta(xs, jp_pb_sub(&c, &f), &plane->event_meta[plane->n_event_meta++], err);
            break;
        case PLANE_STAT_META:
            rc = decode_stat_meta(jp_pb_sub(&c, &f), &plane->stat_meta[plane->n_stat_meta++], err);
            break;
        default: break;
        }
        if (rc) return rc;
    }
    if (plane->n_event_meta > 1)
        qsort(plane->event_meta, plane->n_event_meta, sizeof(jp_event_meta), by_leading_id);
    if (plane->n_stat_meta > 1)
        qsort(plane->stat_meta, plane->n_stat_meta, sizeof(jp_stat_meta), by_leading_id);
    return check_stats(xs, plane->raw, PLANE_STATS, err);
}

/* A file cut exactly between two planes is a valid, shorter XSpace: nothing in the bytes says that
 * planes are missing. But the profilers write every plane and then the hostnames (XSpace field 4,
 * serialized after the planes, field 1): every capture in tests/data/real that holds hostnames ends
 * with them, as do the ones jax.profiler writes here. One of them (XProf's TPU test file) holds no
 * hostnames at all, so their absence alone cannot be an error: with events it is a warning
 * (jp_xspace_warning), without any event, where the profile would read as valid and empty, an
 * error. */
static int cut_after_planes(jp_xspace *xs, jp_error *err) {
    const char *form = "file ends at byte %zu, right after plane %zu: the file looks truncated (no hostnames field "
                       "follows the planes)%s";
    if (!xs->n_events) return jp_error_set(err, JP_ERR_TRUNCATED, xs->size, form, xs->size, xs->n_planes, "");
    char text[256];
    int n = snprintf(text, sizeof text, form, xs->size, xs->n_planes,
                     xs->inflated ? " (offset in the decompressed data)" : "");
    size_t len = n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1;
    xs->warning = jp_arena_strndup(&xs->arena, text, len); /* NULL when out of memory: no warning */
    return JP_OK;
}

/* A JSON text can never be an XSpace ('{' and '[' are wire type 3, which XSpace never uses), and
 * the JSON most often given to us is the Chrome trace jax.profiler writes beside the .xplane.pb:
 * say what the file is and what to read instead, not "wire type 3". *at: where the text starts. */
static int is_json_text(const uint8_t *p, size_t n, size_t *at) {
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n')) i++;
    *at = i;
    return i < n && (p[i] == '{' || p[i] == '[');
}

/* A Chrome trace: its XSpace replaces the JSON (which is freed when it was inflated here). */
static int convert_chrome(jp_xspace *xs, jp_error *err) {
    uint8_t *space;
    size_t len;
    int rc = jp_chrome_to_xspace(xs->data, xs->size, &space, &len, err);
    if (rc != JP_OK) return rc;
    free(xs->inflated);
    xs->inflated = space, xs->data = space, xs->size = len;
    xs->chrome = 1;
    return JP_OK;
}

static int decode_space(jp_xspace *xs, jp_error *err) {
    size_t json_at;
    if (!xs->chrome && is_json_text(xs->data, xs->size, &json_at)) {
        int rc = convert_chrome(xs, err);
        return rc == JP_OK ? decode_space(xs, err) : rc;
    }
    jp_pb c = jp_pb_make(xs->data, xs->size, xs->data);
    jp_pb_field f;
    size_t n_planes = 0, n_hosts = 0, n_notes[2] = {0, 0};
    for (jp_pb scan = c; !jp_pb_done(&scan);) {
        int rc = jp_pb_next(&scan, &f, "XSpace", err);
        if (rc) return rc;
        if (f.number >= XSPACE_PLANES && f.number <= XSPACE_HOSTNAMES) {
            if ((rc = want(&f, JP_PB_LEN, "XSpace", err))) return rc;
            n_planes += f.number == XSPACE_PLANES;
            n_hosts += f.number == XSPACE_HOSTNAMES;
            if (f.number == XSPACE_ERRORS || f.number == XSPACE_WARNINGS) n_notes[f.number - XSPACE_ERRORS]++;
        }
    }
    xs->planes = alloc_array(xs, n_planes, sizeof(jp_plane), err);
    xs->hostnames = alloc_array(xs, n_hosts, sizeof(jp_str), err);
    for (int k = 0; k < 2; k++) xs->notes[k] = alloc_array(xs, n_notes[k], sizeof(jp_str), err);
    if ((n_planes && !xs->planes) || (n_hosts && !xs->hostnames) || (n_notes[0] && !xs->notes[0]) ||
        (n_notes[1] && !xs->notes[1]))
        return err ? err->code : JP_ERR_NOMEM;
    int last_is_plane = 0;
    while (!jp_pb_done(&c)) {
        int rc = jp_pb_next(&c, &f, "XSpace", err);
        if (rc) return rc;
        last_is_plane = f.number == XSPACE_PLANES;
        if (f.number == XSPACE_PLANES) {
            if ((rc = decode_plane(xs, jp_pb_sub(&c, &f), &xs->planes[xs->n_planes++], err))) return rc;
        } else if (f.number == XSPACE_HOSTNAMES) {
            xs->hostnames[xs->n_hostnames++] = str_of(&f);
        } else if (f.number == XSPACE_ERRORS || f.number == XSPACE_WARNINGS) {
            int k = f.number == XSPACE_WARNINGS;
            xs->notes[k][xs->n_notes[k]++] = str_of(&f);
        }
    }
    return last_is_plane && !n_hosts ? cut_after_planes(xs, err) : JP_OK;
}

static int is_gzip(const uint8_t *p, size_t len) { return len >= 2 && p[0] == 0x1f && p[1] == 0x8b; }

int jp_size_parse(const char *text, uint64_t *out) {
    if (!text || *text < '0' || *text > '9') return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    static const char units[] = "KMGT";
    const char *unit = *end ? strchr(units, *end) : NULL;
    if (errno || (*end && (!unit || end[1]))) return -1;
    unsigned shift = unit ? 10u * (unsigned)(unit - units + 1) : 0;
    if (shift && v > (UINT64_MAX >> shift)) return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

/* The most bytes in_len bytes of gzip may inflate to (max_inflate when the caller set one); *why
 * says which rule set it. */
static uint64_t inflate_limit(size_t in_len, uint64_t max_inflate, const char **why) {
    if (max_inflate) {
        *why = "max_inflate";
        return max_inflate;
    }
    uint64_t limit = (uint64_t)in_len * INFLATE_RATIO;
    if (limit < INFLATE_FLOOR) limit = INFLATE_FLOOR;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t memory = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
    *why = limit > memory ? "the machine's memory" : "64 times the compressed size, at least 256 MiB";
    return limit > memory ? memory : limit;
}

/* Whether the bytes left after the last gzip member may be ignored: none, or zeros (padding to a
 * block, as tar and tape writers leave; gzip itself ignores it). */
static int only_padding(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

/* Inflates a whole gzip stream into a malloc'd buffer: every member of a concatenated file (what
 * `cat a.gz b.gz` makes, which gzip reads as one), refusing anything but padding after the last. */
static int inflate_all(const uint8_t *in, size_t in_len, uint64_t limit, const char *why, uint8_t **out,
                       size_t *out_len, jp_error *err) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return jp_error_set(err, JP_ERR_NOMEM, 0, "zlib init failed");
    size_t cap = in_len < ((size_t)1 << 20) ? ((size_t)1 << 20) : in_len * 4, len = 0;
    if (cap > limit) cap = (size_t)limit;
    uint8_t *buf = malloc(cap ? cap : 1);
    int rc = buf ? JP_OK : jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory inflating");
    size_t consumed = 0;
    while (rc == JP_OK) {
        if (len == cap) {
            if (cap >= limit) {
                rc = jp_error_set(err, JP_ERR_LIMIT, consumed,
                                  "gzip data at byte %zu inflates beyond %llu bytes (the limit: %s); if the file is "
                                  "genuine, raise the max_inflate limit",
                                  consumed, (unsigned long long)limit, why);
                break;
            }
            size_t bigger_cap = (uint64_t)cap * 2 > limit ? (size_t)limit : cap * 2;
            uint8_t *bigger = realloc(buf, bigger_cap);
            if (!bigger) {
                rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory inflating");
                break;
            }
            buf = bigger;
            cap = bigger_cap;
        }
        size_t in_chunk = in_len - consumed > UINT32_MAX ? UINT32_MAX : in_len - consumed;
        size_t out_chunk = cap - len > UINT32_MAX ? UINT32_MAX : cap - len;
        z.next_in = (Bytef *)(uintptr_t)(in + consumed);
        z.avail_in = (uInt)in_chunk;
        z.next_out = buf + len;
        z.avail_out = (uInt)out_chunk;
        int zr = inflate(&z, Z_NO_FLUSH);
        consumed += in_chunk - z.avail_in;
        len += out_chunk - z.avail_out;
        if (zr == Z_STREAM_END) {
            if (only_padding(in + consumed, in_len - consumed)) break;
            if (!is_gzip(in + consumed, in_len - consumed)) {
                rc = jp_error_set(err, JP_ERR_CORRUPT, consumed,
                                  "corrupt gzip data at byte %zu: %zu bytes after the end of the gzip data are not "
                                  "gzip (damaged, or something was appended)", consumed, in_len - consumed);
            } else if (inflateReset(&z) != Z_OK) { /* the next member */
                rc = jp_error_set(err, JP_ERR_NOMEM, 0, "zlib reset failed");
            }
        } else if (zr == Z_BUF_ERROR && consumed == in_len && z.avail_out > 0) {
            rc = jp_error_set(err, JP_ERR_TRUNCATED, consumed, "truncated gzip data at byte %zu", consumed);
        } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
            rc = jp_error_set(err, JP_ERR_CORRUPT, consumed, "corrupt gzip data at byte %zu: %s", consumed,
                              z.msg ? z.msg : "inflate failed");
        } else if (consumed == in_len && z.avail_out > 0) {
            rc = jp_error_set(err, JP_ERR_TRUNCATED, consumed, "truncated gzip data at byte %zu", consumed);
        }
    }
    inflateEnd(&z);
    if (rc != JP_OK) {
        free(buf);
        return rc;
    }
    *out = buf;
    *out_len = len;
    return JP_OK;
}

static void file_free(jp_xspace *xs) {
    if (xs->file) munmap(xs->file, xs->file_cap);
    xs->file = NULL;
    xs->file_cap = 0;
}

static jp_xspace *xspace_new(void) {
    jp_xspace *xs = calloc(1, sizeof *xs);
    if (xs) jp_arena_init(&xs->arena, 0);
    return xs;
}

static int finish(jp_xspace *xs, jp_xspace **out, const char *name, jp_error *err) {
    int rc;
    if (!(xs->name = jp_arena_strndup(&xs->arena, name, strlen(name)))) {
        rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    } else if (xs->size == 0) {
        rc = jp_error_set(err, JP_ERR_TRUNCATED, 0, "empty input at byte 0: expected an XSpace");
    } else if (is_gzip(xs->data, xs->size)) {
        const char *why;
        uint64_t limit = inflate_limit(xs->size, xs->max_inflate, &why);
        rc = inflate_all(xs->data, xs->size, limit, why, &xs->inflated, &xs->size, err);
        if (rc == JP_OK) xs->data = xs->inflated;
        file_free(xs); /* the compressed bytes are done with */
        if (rc == JP_OK && xs->size == 0) rc = jp_error_set(err, JP_ERR_TRUNCATED, 0, "empty XSpace at byte 0 after gunzip");
        if (rc == JP_OK) rc = decode_space(xs, err);
        if (rc != JP_OK && err && err->code != JP_ERR_NOMEM && xs->inflated) {
            size_t n = strlen(err->msg);
            snprintf(err->msg + n, sizeof err->msg - n, " (offset in the decompressed data)");
        }
    } else {
        rc = decode_space(xs, err);
    }
    if (rc != JP_OK) {
        jp_xspace_close(xs);
        *out = NULL;
        return jp_error_prefix(err, rc, name); /* every error names its file */
    }
    *out = xs;
    return JP_OK;
}

int jp_xspace_parse_limited(jp_xspace **out, const void *data, size_t len, const char *name, int lazy,
                            uint64_t max_inflate, jp_error *err) {
    jp_error_clear(err);
    *out = NULL;
    jp_xspace *xs = xspace_new();
    if (!xs) return jp_error_set(err, JP_ERR_NOMEM, 0, "%s: out of memory", name);
    xs->lazy = lazy;
    xs->max_inflate = max_inflate;
    xs->data = data;
    xs->size = len;
    return finish(xs, out, name ? name : "<memory>", err);
}

int jp_xspace_parse(jp_xspace **out, const void *data, size_t len, const char *name, jp_error *err) {
    return jp_xspace_parse_limited(out, data, len, name, 0, 0, err);
}

int jp_xspace_parse_lazy(jp_xspace **out, const void *data, size_t len, const char *name, jp_error *err) {
    return jp_xspace_parse_limited(out, data, len, name, 1, 0, err);
}

int jp_xspace_open(jp_xspace **out, const char *path, jp_error *err) {
    return jp_xspace_open_listed(out, path, NULL, 0, 0, err);
}

int jp_xspace_open_lazy(jp_xspace **out, const char *path, jp_error *err) {
    return jp_xspace_open_listed(out, path, NULL, 1, 0, err);
}

/* Whether the file at fd is no longer what `was` described: written to, resized or replaced. */
static int changed_since(int fd, const struct stat *was, struct stat *now) {
    return fstat(fd, now) != 0 || now->st_size != was->st_size || now->st_mtim.tv_sec != was->st_mtim.tv_sec ||
           now->st_mtim.tv_nsec != was->st_mtim.tv_nsec || now->st_ctim.tv_sec != was->st_ctim.tv_sec ||
           now->st_ctim.tv_nsec != was->st_ctim.tv_nsec;
}

/* Reads the file at fd, as `st` describes it, into anonymous pages of xs's own: a mapping of the
 * file itself would let anyone who truncates it while we read kill the process (SIGBUS). A file
 * written to or truncated meanwhile is refused (a read racing a truncation can return zeros for
 * bytes past the new end, which would decode as nonsense): the caller may simply try again. */
static int read_file(jp_xspace *xs, int fd, const struct stat *st, const char *path, jp_error *err) {
    size_t size = (size_t)st->st_size;
    void *buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return jp_error_set(err, JP_ERR_NOMEM, 0, "%s: out of memory reading %zu bytes", path, size);
    xs->file = buf;
    xs->file_cap = size;
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, xs->file + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return jp_error_set(err, JP_ERR_IO, got, "%s: read failed at byte %zu: %s", path, got, strerror(errno));
        if (n == 0) break; /* shrank since the fstat */
        got += (size_t)n;
    }
    struct stat now = *st;
    if (changed_since(fd, st, &now) || got != size) {
        if (now.st_size < st->st_size)
            return jp_error_set(err, JP_ERR_TRUNCATED, (uint64_t)now.st_size,
                                "%s: truncated at byte %lld while being read (it had %lld bytes)", path,
                                (long long)now.st_size, (long long)st->st_size);
        return jp_error_set(err, JP_ERR_IO, got, "%s: changed while being read; read it again once it is written", path);
    }
    xs->data = xs->file;
    xs->size = got;
    return JP_OK;
}

int jp_xspace_open_listed(jp_xspace **out, const char *path, const jp_file_id *expect, int lazy, uint64_t max_inflate,
                          jp_error *err) {
    jp_error_clear(err);
    *out = NULL;
    /* O_NONBLOCK: opening a FIFO would otherwise wait for a writer for ever; the fstat below
     * refuses it (and any other non-regular file) at once. Reads of a regular file ignore it. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (expect ? O_NOFOLLOW : 0));
    if (fd < 0) {
        return jp_error_set(err, errno == ENOENT ? JP_ERR_NOT_FOUND : JP_ERR_IO, 0, "%s: cannot open: %s", path,
                            errno != ELOOP ? strerror(errno)
                            : expect       ? "a symbolic link" /* O_NOFOLLOW met one */
                                           : "too many levels of symbolic links");
    }
    struct stat st;
    int rc = JP_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        rc = jp_error_set(err, JP_ERR_IO, 0, "%s: not a regular file", path);
    else if (expect && ((uint64_t)st.st_dev != expect->dev || (uint64_t)st.st_ino != expect->ino))
        rc = jp_error_set(err, JP_ERR_IO, 0, "%s: replaced by another file while being opened", path);
    jp_xspace *xs = rc == JP_OK ? xspace_new() : NULL;
    if (rc == JP_OK && !xs) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "%s: out of memory", path);
    if (rc == JP_OK && st.st_size > 0) rc = read_file(xs, fd, &st, path, err);
    close(fd);
    if (rc != JP_OK) {
        jp_xspace_close(xs);
        return rc;
    }
    xs->lazy = lazy;
    xs->max_inflate = max_inflate;
    return finish(xs, out, path, err);
}

void jp_xspace_close(jp_xspace *xs) {
    if (!xs) return;
    jp_map_deinit(&xs->stat_cache);
    jp_vec_free(&xs->stat_strs);
    jp_arena_deinit(&xs->arena);
    file_free(xs);
    free(xs->inflated);
    free(xs);
}

const jp_plane *jp_xspace_planes(const jp_xspace *xs, size_t *n_planes) {
    *n_planes = xs->n_planes;
    return xs->planes;
}

const jp_str *jp_xspace_hostnames(const jp_xspace *xs, size_t *n) {
    *n = xs->n_hostnames;
    return xs->hostnames;
}

const jp_str *jp_xspace_errors(const jp_xspace *xs, size_t *n) {
    *n = xs->n_notes[0];
    return xs->notes[0];
}

const jp_str *jp_xspace_warnings(const jp_xspace *xs, size_t *n) {
    *n = xs->n_notes[1];
    return xs->notes[1];
}

uint64_t jp_xspace_event_count(const jp_xspace *xs) { return xs->n_events; }

const char *jp_xspace_name(const jp_xspace *xs) { return xs->name ? xs->name : "<memory>"; }

int jp_xspace_inflated(const jp_xspace *xs) { return xs->inflated != NULL; }

const char *jp_xspace_warning(const jp_xspace *xs) { return xs->warning; }

size_t jp_xspace_input_size(const jp_xspace *xs) { return xs->size; }

jp_bytes jp_xspace_input(const jp_xspace *xs) {
    jp_bytes b = {xs->data, xs->size};
    return b;
}
