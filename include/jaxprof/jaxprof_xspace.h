/* jaxprof_xspace.h - libjaxprof's XSpace reader: an .xplane.pb[.gz] decoded without copying, its
 * planes, lines, events and stats. For tools and tests that read the raw profile rather than
 * jaxprof's analysis. This header may change between releases (the stable API is jaxprof.h). */
#ifndef JAXPROF_XSPACE_H
#define JAXPROF_XSPACE_H

#include "jaxprof.h" /* beside this header, in the tree and installed alike */

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * The profile model: an XSpace decoded without copying. Strings and byte runs are views into the
 * file's bytes as read (or inflated); arrays live in the profile's arena. A jp_xspace is immutable after
 * open except for jp_stat_str's decompression cache, so share it between threads only for reading
 * numeric stats and names.
 * ------------------------------------------------------------------------------------------- */

typedef struct jp_str {
    const char *ptr; /* not NUL-terminated */
    size_t len;
} jp_str;

typedef struct jp_bytes {
    const uint8_t *ptr;
    size_t len;
} jp_bytes;

typedef struct jp_event {
    uint64_t metadata_id;    /* key into the plane's event metadata */
    int64_t offset_ps;       /* start relative to the line's timestamp_ns */
    int64_t duration_ps;     /* 0 for instants */
    int64_t num_occurrences; /* > 0 only for aggregated events (no offset) */
    jp_bytes raw;            /* the XEvent message, walked by jp_stats_* for its stats */
} jp_event;

typedef struct jp_line {
    int64_t id;           /* thread id on host planes, stream id on GPU; may repeat within a plane */
    int64_t display_id;
    jp_str name;
    jp_str display_name;
    int64_t timestamp_ns; /* events' offsets are relative to this */
    int64_t duration_ps;
    jp_event *events;     /* in file order; NULL in a lazy XSpace (read them with jp_event_reader) */
    size_t n_events;
    jp_bytes raw;         /* the XLine message */
} jp_line;

typedef struct jp_event_meta {
    int64_t id;
    jp_str name;
    jp_str display_name;
    jp_bytes metadata; /* opaque payload, e.g. a serialized HloProto on /host:metadata */
    jp_bytes raw;      /* the XEventMetadata message: its stats apply to every such event */
} jp_event_meta;

typedef struct jp_stat_meta {
    int64_t id;
    jp_str name;
    jp_str description;
} jp_stat_meta;

typedef struct jp_plane {
    int64_t id;
    jp_str name;                /* "/host:CPU", "/device:GPU:0", "/host:metadata", ... */
    jp_line *lines;
    size_t n_lines;
    jp_event_meta *event_meta;  /* sorted by id */
    size_t n_event_meta;
    jp_stat_meta *stat_meta;    /* sorted by id */
    size_t n_stat_meta;
    jp_bytes raw;               /* the XPlane message, for its own stats */
} jp_plane;

typedef struct jp_xspace jp_xspace;

/* Opens an .xplane.pb (or gzip-compressed .xplane.pb.gz, detected by content) and decodes it,
 * with the default inflate limits (jaxprof.h, at jp_size_parse). On failure returns a negative
 * status, *out is NULL, and err names the file and byte offset. */
int jp_xspace_open(jp_xspace **out, const char *path, jp_error *err);
/* Decodes len bytes at data, which must outlive the result; `name` is used in error messages. */
int jp_xspace_parse(jp_xspace **out, const void *data, size_t len, const char *name, jp_error *err);
/* Opens like jp_xspace_open but leaves the events undecoded: every line has its n_events and raw
 * bytes and events == NULL. A consumer that reads each line once streams them with
 * jp_event_reader instead of holding every decoded event at once. The checks are those of
 * jp_xspace_open except for the events: jp_event_reader_next checks an event's fields as it reads
 * it, and jp_stats_next its stats, so a corrupt event is reported by whichever call meets it (and
 * one never read is never reported). */
int jp_xspace_open_lazy(jp_xspace **out, const char *path, jp_error *err);
int jp_xspace_parse_lazy(jp_xspace **out, const void *data, size_t len, const char *name, jp_error *err);
void jp_xspace_close(jp_xspace *xs);

const jp_plane *jp_xspace_planes(const jp_xspace *xs, size_t *n_planes);
/* Hostnames recorded in the XSpace (may be empty). */
const jp_str *jp_xspace_hostnames(const jp_xspace *xs, size_t *n);
/* The profiler's own errors and warnings (XSpace fields 2 and 3: "GPU events dropped", a tracer
 * that failed to start), in file order; may be empty. Views into the input, like every jp_str. */
const jp_str *jp_xspace_errors(const jp_xspace *xs, size_t *n);
const jp_str *jp_xspace_warnings(const jp_xspace *xs, size_t *n);
/* Total events over all planes and lines. */
uint64_t jp_xspace_event_count(const jp_xspace *xs);
/* Bytes of the decoded input (after gunzip). */
size_t jp_xspace_input_size(const jp_xspace *xs);
/* The decoded input itself (after gunzip): every jp_str/jp_bytes of the model points into it. */
jp_bytes jp_xspace_input(const jp_xspace *xs);
/* A promise that nobody will read the input bytes [p, p+len) again (the model's event stream, done
 * with a line's events): where the input is a file read by jp_xspace_open_lazy, the whole pages
 * inside that range go back to the system and would read as zeros. Does nothing for other inputs
 * (jp_xspace_open, whose events may be read again; gzip; jp_xspace_parse*) or ranges outside. */
void jp_xspace_discard(const jp_xspace *xs, const void *p, size_t len);

/* Reads a line's events one at a time from its raw bytes, for any XSpace, lazy or not. */
typedef struct jp_event_reader {
    const uint8_t *p, *end; /* the rest of the XLine message */
    const uint8_t *origin;  /* the input's first byte, for error offsets */
} jp_event_reader;

jp_event_reader jp_line_event_reader(const jp_xspace *xs, const jp_line *line);
/* Decodes the next event into *ev: returns 1, 0 after the last one, or a negative status with err
 * set (file-relative byte offset) for a corrupt event. Its stats are left to jp_stats_next. */
int jp_event_reader_next(jp_event_reader *r, jp_event *ev, jp_error *err);


/* Metadata by id, or NULL. Borrowed from the plane. */
const jp_event_meta *jp_plane_event_meta_view(const jp_plane *plane, uint64_t id);
const jp_stat_meta *jp_plane_stat_meta_view(const jp_plane *plane, uint64_t id);

/* Event start in picoseconds since the session start. */
static inline int64_t jp_event_start_ps(const jp_line *line, const jp_event *ev) {
    return line->timestamp_ns * 1000 + ev->offset_ps;
}

/* ---- stats ---------------------------------------------------------------------------------- */

typedef enum jp_stat_kind {
    JP_STAT_NONE = 0,
    JP_STAT_DOUBLE,
    JP_STAT_UINT,
    JP_STAT_INT,
    JP_STAT_STR,        /* v.s */
    JP_STAT_BYTES,      /* v.s holds the bytes */
    JP_STAT_REF,        /* v.u: id of an XStatMetadata whose name is the string value */
    JP_STAT_COMPRESSED  /* v.s holds gzip bytes; jp_stat_str inflates them */
} jp_stat_kind;

typedef struct jp_stat {
    uint64_t metadata_id; /* key into the plane's stat metadata: the stat's name */
    int kind;             /* jp_stat_kind */
    union {
        double d;
        uint64_t u;
        int64_t i;
        jp_str s;
    } v;
} jp_stat;

/* Walks the stats of one message (an event, event metadata or plane: pass its raw bytes). */
typedef struct jp_stats_iter {
    const uint8_t *p, *end, *origin;
    uint32_t field; /* the stats field number in that message: 4, 5 or 6 */
} jp_stats_iter;

jp_stats_iter jp_stats_of_event(const jp_xspace *xs, const jp_event *ev);
jp_stats_iter jp_stats_of_event_meta(const jp_xspace *xs, const jp_event_meta *em);
jp_stats_iter jp_stats_of_plane(const jp_xspace *xs, const jp_plane *plane);
/* Returns 1 and fills *out for the next stat, 0 at the end, negative on malformed bytes. */
int jp_stats_next(jp_stats_iter *it, jp_stat *out, jp_error *err);

/* The stat's value as text where it is one: STR, REF (resolved), COMPRESSED (inflated into the
 * profile's arena on first use, the same view after). Returns 0 and an empty string for other
 * kinds. All compressed stats of one XSpace together may inflate to 16 times its size, at least 64
 * MiB, at most 1 GiB (or the max_inflate of the load that opened it): past that, JP_ERR_LIMIT
 * naming the stat's byte. Not thread-safe: one thread per XSpace. */
int jp_stat_str(jp_xspace *xs, const jp_plane *plane, const jp_stat *st, jp_str *out, jp_error *err);
/* The stat's value as an integer (UINT, INT, DOUBLE truncated); 0 for others. */
int64_t jp_stat_int(const jp_stat *st);

/* 1 when s equals the NUL-terminated lit. */
static inline int jp_str_eq(jp_str s, const char *lit) {
    size_t i = 0;
    for (; i < s.len; i++)
        if (lit[i] == '\0' || lit[i] != s.ptr[i]) return 0;
    return lit[i] == '\0';
}

#ifdef __cplusplus
}
#endif
#endif /* JAXPROF_XSPACE_H */
