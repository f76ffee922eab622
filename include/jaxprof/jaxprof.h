/* jaxprof.h - the one public header of libjaxprof, the C core of the jaxprof profiling toolkit. */
#ifndef JAXPROF_H
#define JAXPROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define JP_VERSION "0.1.0"

/* ---------------------------------------------------------------------------------------------
 * Errors. Every fallible function returns an int status (JP_OK or a negative jp_status) and fills
 * an optional caller-owned jp_error. Nothing in the library keeps global error state.
 * ------------------------------------------------------------------------------------------- */

typedef enum jp_status {
    JP_OK = 0,
    JP_ERR_IO = -1,        /* the OS refused: open, read, stat, opendir */
    JP_ERR_NOMEM = -2,     /* an allocation failed */
    JP_ERR_TRUNCATED = -3, /* input ended inside a structure */
    JP_ERR_CORRUPT = -4,   /* input bytes are not what the format allows */
    JP_ERR_ARG = -5,       /* the caller passed an invalid argument */
    JP_ERR_NOT_FOUND = -6, /* the thing asked for does not exist */
    JP_ERR_LIMIT = -7      /* a safety limit (depth, count, size) was reached */
} jp_status;

#define JP_ERROR_MSG_MAX 512

typedef struct jp_error {
    int code;                   /* a jp_status; JP_OK when nothing went wrong */
    uint64_t offset;            /* byte offset into the input for decode errors, else 0 */
    char msg[JP_ERROR_MSG_MAX]; /* human-readable, names the file when there is one */
} jp_error;

/* Static name of a status code ("ok", "io error", ...). Never NULL. Thread-safe. */
const char *jp_status_str(int status);

/* ---------------------------------------------------------------------------------------------
 * Arena. One per loaded object: many small allocations, one free. Not thread-safe.
 * ------------------------------------------------------------------------------------------- */

typedef struct jp_arena_block jp_arena_block;

typedef struct jp_arena {
    jp_arena_block *head; /* newest block; allocations are carved from its tail */
    size_t block_size;    /* default size of a new block in bytes */
    size_t total;         /* bytes obtained from malloc, for memory accounting */
} jp_arena;

/* Prepares caller storage; block_size 0 picks a default. Allocates nothing yet. */
void jp_arena_init(jp_arena *a, size_t block_size);
/* Frees every block; the arena may be reused after jp_arena_init. */
void jp_arena_deinit(jp_arena *a);
/* Returns size bytes aligned for any type, or NULL on overflow/out of memory. */
void *jp_arena_alloc(jp_arena *a, size_t size);
/* Copies len bytes of s plus a NUL terminator into the arena. */
char *jp_arena_strndup(jp_arena *a, const char *s, size_t len);

/* ---------------------------------------------------------------------------------------------
 * Finding profiles on disk. A run is a directory holding one or more <host>.xplane.pb[.gz] files,
 * as jax.profiler writes them under <log_dir>/plugins/profile/<run>/ (jaxprof's Profiler nests them
 * under <log_dir>/step_XXXXXXXX/). Symbolic links are never followed.
 * ------------------------------------------------------------------------------------------- */

typedef struct jp_run {
    const char *path;  /* the run directory: log_dir joined with the relative path */
    const char *name;  /* last component of path (JAX's timestamp name) */
    int64_t mtime_ns;  /* newest modification time among its xplane files */
    uint32_t n_files;  /* number of xplane files (hosts) */
    uint64_t bytes;    /* total size of its xplane files */
} jp_run;

typedef struct jp_runs {
    jp_arena arena; /* owns every string and the array below */
    jp_run *runs;   /* sorted oldest first (mtime, then path): the newest run is last */
    size_t count;   /* number of runs found; 0 is not an error */
} jp_runs;

/* Walks log_dir (depth <= 16) and fills out. On failure out is left empty but still needs deinit.
 * Thread-safe for distinct outputs. */
int jp_runs_find(jp_runs *out, const char *log_dir, jp_error *err);
void jp_runs_deinit(jp_runs *runs);
/* The newest run, or NULL when there is none. Borrowed from runs. */
const jp_run *jp_runs_latest_view(const jp_runs *runs);


/* ---------------------------------------------------------------------------------------------
 * The profile model: an XSpace decoded without copying. Strings and byte runs are views into the
 * mapped (or inflated) file; arrays live in the profile's arena. A jp_xspace is immutable after
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
    jp_event *events;     /* in file order */
    size_t n_events;
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

/* Opens an .xplane.pb (or gzip-compressed .xplane.pb.gz, detected by content) and decodes it.
 * On failure returns a negative status, *out is NULL, and err names the file and byte offset. */
int jp_xspace_open(jp_xspace **out, const char *path, jp_error *err);
/* Decodes len bytes at data, which must outlive the result; `name` is used in error messages. */
int jp_xspace_parse(jp_xspace **out, const void *data, size_t len, const char *name, jp_error *err);
void jp_xspace_close(jp_xspace *xs);

const jp_plane *jp_xspace_planes(const jp_xspace *xs, size_t *n_planes);
/* Hostnames recorded in the XSpace (may be empty). */
const jp_str *jp_xspace_hostnames(const jp_xspace *xs, size_t *n);
/* Total events over all planes and lines. */
uint64_t jp_xspace_event_count(const jp_xspace *xs);
/* Bytes of the decoded input (after gunzip). */
size_t jp_xspace_input_size(const jp_xspace *xs);

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
 * profile's arena on first use). Returns 0 and an empty string for other kinds. */
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
#endif /* JAXPROF_H */
