/* jaxprof.h - the public header of libjaxprof, the C core of the jaxprof profiling toolkit (its HTTP
 * server and viewer API are in jaxprof_serve.h). */
#ifndef JAXPROF_H
#define JAXPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
    const char *const *hosts; /* n_files host names (each file's name without .xplane.pb[.gz]),
                               * in the order of their file names: the order they load in */
    const char *const *files; /* n_files xplane file names, in the same order as hosts */
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
/* Length of the host name in an xplane file's name ("<host>.xplane.pb" or "<host>.xplane.pb.gz"),
 * or 0 when name is not one. The one place that knows these names. */
size_t jp_xplane_host_len(const char *name);

/* One regular file directly inside a run directory (links are not followed). */
typedef struct jp_run_file {
    const char *name; /* its name in the run directory */
    uint64_t bytes;   /* its size */
} jp_run_file;

/* What `jaxprof list` says about one run: every file in it and, when it loads, its steps and span. */
typedef struct jp_run_summary {
    jp_arena arena;                /* owns files and their names */
    jp_run_file *files;            /* every regular file directly in the run, sorted by name */
    size_t n_files;
    uint64_t bytes;                /* sum of their sizes (all files, not only xplanes) */
    int loaded;                    /* 1 when jp_profile_load read the run */
    size_t n_steps;                /* steps the analysis found */
    int64_t first_step, last_step; /* their step numbers, when n_steps > 0 */
    double duration_ms;            /* the profile's span, when loaded */
    char error[JP_ERROR_MSG_MAX];  /* why listing or loading failed (file names relative to the
                                    * run), "" when loaded */
} jp_run_summary;

struct jp_load_options; /* below */
/* Lists run's files and loads it (opt as jp_profile_load; may be NULL). A run that cannot be read
 * or loaded is not a failure: out->error says why. JP_ERR_NOMEM only; deinit out in every case. */
int jp_run_summarize(jp_run_summary *out, const jp_run *run, const struct jp_load_options *opt, jp_error *err);
void jp_run_summary_deinit(jp_run_summary *s);

/* The one JSON schema of a run, shared by `jaxprof list --json`, the viewer's /api/runs and Python's
 * Run: writes the members "name", "path" (as given: the caller decides relative to what), "hosts"
 * (a list of host names), "bytes" (of the xplane files) and "mtime_ms" (newest xplane file), then,
 * with a summary, "files" ([{name, bytes}]), "steps" ({count, first, last}, first and last null
 * without steps; null when not loaded), "duration_ms" and "error" (null when loaded). Members only:
 * the caller writes the braces and may add members of its own before. */
void jp_run_write_json(FILE *out, const jp_run *run, const char *path, const jp_run_summary *summary);

/* Outputs. Every writer that takes an out_path (jp_runs_extract, jp_trace_export, jp_html_write,
 * jp_html_diff_write, jp_flame_pprof_write, jp_flame_folded_write) writes
 * "<dir>/.<name>.<16 random hex digits>.tmp" beside it, created new (O_EXCL|O_NOFOLLOW: never an
 * existing file, never through a planted link, mode 0644 less the umask), fsyncs it and renames it
 * over out_path; a failure removes it, so out_path is either the old file or the whole new one.
 * Only a regular file at out_path is ever replaced: a FIFO or character device there (/dev/stdout,
 * /dev/null, a pipe a reader reads; also at the end of symbolic links) is written in place as a
 * stream; any other symbolic link, a directory, a block device or a socket is refused (JP_ERR_ARG).
 * A caller that must also remove the temporary file when a signal ends the process (the CLI)
 * passes a jp_temp_hook; NULL for none. */
typedef struct jp_temp_hook {
    void (*on_temp)(void *ctx, const char *tmp_path); /* the name just before the file is created
                                                       * (again per retried name), NULL once it is
                                                       * renamed or removed; on the writing thread */
    void *ctx;                                        /* passed back */
} jp_temp_hook;

typedef struct jp_extract_options {
    int force;         /* 1: replace an output that exists and differs from its .gz's contents */
    jp_temp_hook temp; /* told of each temporary output file; zero: nobody */
} jp_extract_options;

/* Unpacks one run for tools that cannot read gzip: every regular *.gz file directly inside run_dir
 * (xplane.pb.gz, *.trace.json.gz, perfetto_trace.json.gz) is decompressed into out_dir (created when
 * missing; NULL means run_dir itself) under its name without ".gz", written like every output (see
 * jp_temp_hook); files that are not compressed are left where they are. An output that already
 * exists with the same bytes is left as it is; with different bytes it is replaced only with
 * opt->force, else the extract stops with JP_ERR_ARG naming both files (opt may be NULL: no force,
 * no hook). on_file (may be NULL) receives the path of every usable file: each one written, then
 * each uncompressed trace file already in run_dir. Symbolic links are refused. */
int jp_runs_extract(const char *run_dir, const char *out_dir, const jp_extract_options *opt,
                    void (*on_file)(void *ctx, const char *path), void *ctx, jp_error *err);


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

/* Opens an .xplane.pb (or gzip-compressed .xplane.pb.gz, detected by content) and decodes it.
 * On failure returns a negative status, *out is NULL, and err names the file and byte offset. */
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
/* Gzip input may inflate to 64 times its size, at least 256 MiB, at most the machine's memory
 * (a bomb is refused with JP_ERR_LIMIT); the environment variable JAXPROF_MAX_INFLATE, a size as
 * jp_size_parse reads it, sets the limit instead. Concatenated gzip members are read as one stream;
 * bytes after the last member other than zero padding are JP_ERR_CORRUPT.
 *
 * Parses a byte count: digits with an optional K, M, G or T (powers of 1024) suffix. 0, or -1. */
int jp_size_parse(const char *text, uint64_t *out);
void jp_xspace_close(jp_xspace *xs);

const jp_plane *jp_xspace_planes(const jp_xspace *xs, size_t *n_planes);
/* Hostnames recorded in the XSpace (may be empty). */
const jp_str *jp_xspace_hostnames(const jp_xspace *xs, size_t *n);
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

struct jp_stat; /* below */
typedef void (*jp_stat_visitor)(void *ctx, const struct jp_stat *stat);
/* The same, decoding the event's stats in the same walk: each goes to visit(ctx, stat) in order,
 * and a corrupt one is an error, as jp_stats_next would report it (the stats before it were
 * visited). */
int jp_event_reader_next_stats(jp_event_reader *r, jp_event *ev, jp_stat_visitor visit, void *ctx, jp_error *err);

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
 * MiB, at most 1 GiB (JAXPROF_MAX_INFLATE sets it instead): past that, JP_ERR_LIMIT naming the
 * stat's byte. Not thread-safe: one thread per XSpace. */
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

/* ---------------------------------------------------------------------------------------------
 * Analysis. jp_profile_load reads a profile (one .xplane.pb[.gz], a run directory holding one file
 * per host, or a log directory: its newest run), builds the model (ops with their HLO metadata,
 * host events, transfers, allocations) and runs every analysis once. The results below are plain
 * arrays owned by the profile, immutable after load: safe to read from several threads.
 * Times are picoseconds since the session start; strings are NUL-terminated and interned.
 * ------------------------------------------------------------------------------------------- */

#define JP_JSON_SCHEMA_VERSION 1

typedef enum jp_platform { JP_PLATFORM_CPU = 0, JP_PLATFORM_GPU, JP_PLATFORM_TPU } jp_platform;
/* The platform's one spelling in every output (text, CSV, JSON, HTML, the viewer): "cpu", "gpu" or
 * "tpu", as JAX's Device.platform writes it; "?" for a value outside jp_platform. Thread-safe. */
const char *jp_platform_name(int platform);

enum { JP_THREADED_MIN_EVENTS = 500000 }; /* below, a second thread costs more than it saves */

typedef struct jp_load_options {
    const char *host;   /* keep only hosts whose name contains this; NULL keeps all */
    const char *device; /* keep only devices whose name contains this, or ends in ":<index>"; NULL all */
    /* Called before each host file is decoded (progress display); may be NULL. */
    void (*on_file)(void *ctx, const char *file, uint64_t bytes);
    void *ctx;
    /* 1: everything on the calling thread; 2: a second thread parses events ahead while the
     * calling one builds the model (same results); 0: 2 when the machine has two CPUs and an XSpace
     * holds JP_THREADED_MIN_EVENTS events or more, at least half of them on device planes (GPU,
     * TPU: on host-heavy profiles the model is the bottleneck), else 1. */
    int threads;
    /* POSIX extended regex on a Python frame's file: frames that match are library code, which an
     * op's source line skips to reach the user's own frame. NULL: the default rule
     * (site-packages, the standard library, JAX/Flax/Optax source trees; docs/design.md); "": no
     * frame is library code (the innermost frame is the source line). */
    const char *library_frames;
    /* Device peaks for the roofline and MFU, overriding what the profile says (0: keep); the
     * only source for CPU profiles, whose planes record no peaks. */
    double peak_tflops, peak_gbps;
    /* A CPU calibration written by `jaxprof calibrate` ("hostname=", "peak_tflops=", "peak_gbps="
     * lines): CPU devices without peaks take them when the profile's hostname is the file's.
     * NULL: none (the CLI passes its cache file). */
    const char *cpu_peaks_file;
    /* has_steps: analyse only what ran in steps first_step..last_step (step numbers, inclusive;
     * INT64_MIN / INT64_MAX leave an end open). The whole profile is analysed first; then every
     * table is computed again over the events that start in [start of the first selected step,
     * end of the last), with the steps table being those steps (docs/design.md, "Step window").
     * Kernel tables are summed while reading and come back empty. No step in the range:
     * JP_ERR_NOT_FOUND naming the steps there are. */
    int has_steps;
    int64_t first_step, last_step;
    /* 1: also each op's spread of self time across the steps (jp_op_stat.step_sd_ps), which only
     * the diff's noise reads (a table of ops x steps): jaxprof diff, jaxprof.diff and the viewer
     * set it; without it step_sd_ps is 0 and the diff's noise comes from the executions. */
    int op_spread;
} jp_load_options;

/* Parses a step range as `--steps` takes it: "N", "A:B", "A:" or ":B" (decimal, inclusive). 0, or
 * JP_ERR_ARG with err saying why (an empty end, a non-number, A > B). Thread-safe. */
int jp_steps_parse(const char *spec, int64_t *first, int64_t *last, jp_error *err);
/* Parses a duration as every jaxprof option takes one: a decimal number with an optional unit
 * (ns, us, µs, ms, s, min), e.g. "500us", "2.5s"; a bare number is in units of bare_ps
 * picoseconds (each option keeps its old unit). 0 and *ps, or -1 (no sign, no exponent, at most
 * about 100 days). Thread-safe. */
int jp_duration_parse(const char *text, int64_t bare_ps, int64_t *ps);

typedef struct jp_device {
    const char *name;     /* "/host:CPU" (XLA:CPU thunks), "/device:GPU:0", ... */
    const char *host;     /* hostname (file name without .xplane.pb) */
    int platform;         /* jp_platform */
    int64_t busy_ps;      /* union of its op and transfer intervals */
    int64_t first_ps;     /* first activity start, 0 when idle */
    int64_t last_ps;      /* last activity end */
    uint64_t n_ops;       /* op occurrences (GPU: kernels) */
    double peak_flops;    /* FLOP/s, 0 when unknown (see peak_source) */
    double peak_bw;       /* memory bytes/s, 0 when unknown */
    const char *peak_source; /* "device" (its own stats), "clock x cores" (GPU capabilities, then
                              * "; memory: <chip> data sheet ..." where the runtime's own bandwidth
                              * is off the data sheet, as ROCm's is), "table"
                              * (TPU chip by name), "calibrated" (CPU, jaxprof calibrate), "flag"
                              * (jp_load_options), "" unknown */
    double bytes_accessed; /* summed over its op occurrences, 0 when the profile does not say */
    const int64_t (*busy)[2]; /* the union of its op spans as [start, end) ps, in time order */
    size_t n_busy;
} jp_device;

/* One frame of the Python call stack JAX recorded for an op (current JAX writes the stack into
 * the HLO; older ones only a source file and line). */
typedef struct jp_source_frame {
    const char *file;     /* the path as traced */
    const char *function; /* "" when unknown */
    uint32_t line;
    int library;          /* matches the library-frame rule (jp_load_options.library_frames) */
} jp_source_frame;

/* One source line's share of a fusion whose fused instructions come from several lines: the
 * fusion's time is split over them by the modelled cost of those instructions (FLOPs, or bytes
 * when it does no FLOPs). An estimate, not a measurement (docs/design.md "Source lines"). */
typedef struct jp_line_share {
    const char *source;   /* "file:line", as jp_op_stat.source */
    const char *function; /* "" when unknown */
    const jp_source_frame *stack; /* the Python stack of the line's first fused instruction */
    uint32_t n_stack;
    double weight;        /* its fraction of the fusion's modelled cost; an op's shares sum to 1 */
} jp_line_share;

/* Roofline: an op of arithmetic intensity I = flops / bytes on a device with peaks P (FLOP/s) and
 * B (bytes/s) can reach at most min(P, I * B) FLOP/s; it is memory bound when I < P / B. */
typedef enum jp_bound { JP_BOUND_UNKNOWN = 0, JP_BOUND_COMPUTE, JP_BOUND_MEMORY } jp_bound;

#define JP_CATEGORY_NO_XLA_OP "kernel, no XLA op" /* jp_op_stat.category of a no_xla_op row */

typedef struct jp_op_stat {
    const char *module;   /* HLO module ("jit_train_step") */
    const char *name;     /* HLO instruction ("dot.3", "loop_fusion.1") */
    const char *category; /* "matmul", "loop fusion", "collective", ... (see docs/design.md) */
    const char *op_name;  /* metadata.op_name, "" when unknown */
    const char *scope;    /* user scope path derived from op_name, "" when unknown */
    const char *source;   /* "file:line" of the innermost frame of user code that made the op (library
                           * frames skipped), else metadata.source_file:line; "" when unknown */
    const char *function; /* the function of that line, "" when unknown */
    const jp_source_frame *stack; /* the whole recorded Python stack, innermost frame first */
    uint32_t n_stack;     /* frames in stack; 0 when the HLO holds no stack */
    const jp_line_share *shares; /* a fusion of instructions from several lines: each line's share,
                                  * the largest first (jaxprof lines and flame split its time by
                                  * them); NULL otherwise */
    uint32_t n_shares;
    uint32_t device;      /* index into jp_analysis.devices */
    uint64_t count;       /* occurrences */
    int64_t total_ps;     /* sum of durations */
    int64_t self_ps;      /* total minus time covered by nested ops on the same line; the
                           * report's "%time" is self_ps / jp_analysis.op_self_ps */
    int64_t min_ps, max_ps;
    double flops;         /* summed over occurrences: XLA's own count where the profile holds one
                           * (TPU, GPU op stats), else hlo_flops; 0 when unknown */
    double bytes;         /* bytes accessed, summed, from the same source; 0 when unknown */
    double hlo_flops;     /* summed, counted by jaxprof from the HLO (docs/design.md); 0 without HLO */
    double xla_flops;     /* summed, the profile's own flops stat (libtpu, XLA:GPU); 0 without one */
    double transcendentals; /* summed exp/log/tanh/... elements, from the HLO (XLA counts them apart) */
    double self_sumsq;    /* summed squares of each occurrence's self time (ps^2): their spread */
    double step_sd_ps;    /* sample standard deviation of its self time per step across the steps (a
                           * step it did not run in counts 0); 0 with fewer than 2 steps. The diff's
                           * noise estimate for the op (docs/design.md "Diff") */
    int bound;            /* jp_bound: the roof it sits under, UNKNOWN without peaks or counts */
    double roof_pct;      /* its FLOP/s (compute bound) or bytes/s (memory bound), % of that roof */
    uint32_t n_devices;   /* devices it ran on: an op of an SPMD program runs on every chip, and
                           * its row sums them (as XProf does); device is then the first of them.
                           * jp_load_options.device keeps one device for a per-device view */
    int64_t program_id;   /* the compiled program (XLA's program_id) when its module's name has
                           * several in the profile: each program's op is a row of its own with
                           * that program's FLOPs and bytes; -1 when the name has one program */
    int no_xla_op;        /* 1: a GPU kernel no XLA op launched (ROCm's __amd_rocclr_copyBuffer, a
                           * library's helper kernel), listed under its kernel name with category
                           * JP_CATEGORY_NO_XLA_OP; XProf leaves these out of its op tables, the text
                           * report lists them apart from the HLO ops */
    int no_rate;          /* 1: an asynchronous start or done half ("copy-start.4", "all-gather-done"):
                           * its time is the launch or the wait, not the work, so no FLOP/s, GB/s or
                           * roof is computed for it (its FLOPs and bytes are still listed; a done's
                           * bytes, which repeat its start's, stay out of the bandwidth KPI) */
} jp_op_stat;

enum jp_part { /* the parts of a step, in the priority order of the breakdown sweep */
    JP_PART_COMPUTE, JP_PART_COLLECTIVE, JP_PART_H2D, JP_PART_D2H, JP_PART_D2D,
    JP_PART_COMPILE, JP_PART_HOST, JP_PART_IDLE, JP_PART_COUNT
};
const char *jp_part_name(int part);

/* Device time by the line of user code that made the ops (jaxprof lines). An op's self time goes
 * to its source line: the innermost frame of its recorded Python stack outside library code. */
typedef struct jp_line_stat {
    const char *source;   /* "file:line" as in jp_op_stat.source */
    const char *file;     /* the path, "" when the op has only a source string */
    uint32_t line;
    const char *function; /* "" when unknown */
    uint64_t count;       /* op occurrences */
    int64_t self_ps;      /* the self time of its ops */
    int64_t split_ps;     /* the part of self_ps that is a fusion's time split over its lines by
                           * modelled cost (jp_line_share): an estimate */
    double flops;         /* of its ops */
    uint32_t n_ops;       /* distinct ops */
    const char *ops;      /* its ops by self time, at most five: "dot.3, fusion.2, ..." */
} jp_line_stat;

enum jp_flame_kind { JP_FLAME_ROOT = 0, JP_FLAME_FRAME, JP_FLAME_LIBRARY, JP_FLAME_OP, JP_FLAME_NO_SOURCE };

/* Device time by Python call stack as a tree, in depth-first order (children by total time):
 * the root, then each op's frames from the outermost to the innermost, consecutive library frames
 * folded into one "[package]" node, and the op itself as the leaf. Ops without a recorded stack
 * hang under "[no source]" (or their source line, when that is all the profile has). Self time
 * sits on the leaves only, so the root's total is the ops' self time (jp_analysis.op_self_ps). */
typedef struct jp_flame_node {
    const char *name;     /* "train_step (train.py:42)", "[flax]", "dot.3", ... */
    const char *file;     /* frames: the path relative to source_prefix; else "" */
    uint32_t line;        /* frames: the line; else 0 */
    uint32_t parent;      /* index of the parent, UINT32_MAX for the root */
    uint32_t depth;       /* 0 for the root */
    int kind;             /* jp_flame_kind */
    int64_t total_ps, self_ps;
    int64_t split_ps;     /* the part of total_ps that is a fusion's time split over its lines by
                           * modelled cost (jp_line_share): an estimate */
} jp_flame_node;

typedef struct jp_step {
    int64_t step_num;              /* from StepTraceAnnotation, or the execution index */
    int64_t start_ps, dur_ps;
    int64_t part_ps[JP_PART_COUNT]; /* sums exactly to dur_ps */
    uint64_t n_ops;                /* op occurrences starting in the step */
    uint32_t n_compiles;           /* compile events starting in the step */
    double flops;                  /* of the op occurrences starting in the step */
    int outlier;                   /* 1 when dur_ps > 1.5 x the median */
    int64_t host_start_ps, host_dur_ps; /* when the host issued the step: its marker (every host's
                                    * StepTraceAnnotation of that number), or the dispatch it was
                                    * inferred from; 0, 0 when unknown (device steps, executions).
                                    * Host events in it (compiles) belong to the step even when the
                                    * step's device-ended span [start, start + dur) began later */
    int no_device_work;            /* 1 when no device op ran in the step (a transfer alone does
                                    * not count): it is left out of the summary */
    int64_t gap_ps;                /* steps inferred from host dispatches: the time after the step
                                    * until the next dispatch, when neither host dispatch nor device
                                    * work of the step ran (the program's Python between calls); in
                                    * no step. 0 otherwise */
} jp_step;

typedef struct jp_step_summary {
    const char *method; /* "StepTraceAnnotation", "executions of <module>", "none" */
    double mean_ps, median_ps, p90_ps, std_ps, min_ps, max_ps;
    int64_t part_ps[JP_PART_COUNT]; /* summed over steps */
    int64_t total_ps;               /* summed step time */
    size_t n_no_device;             /* steps with no device work, left out of the numbers above
                                     * (unless every step is such a step) */
    int64_t gap_ps;                 /* summed dispatch gaps (jp_step.gap_ps): not step time */
    int64_t part_median_ps[JP_PART_COUNT]; /* each part's median over the steps: the typical step,
                                            * from which an outlier's excess is measured */
} jp_step_summary;

typedef enum jp_scope_kind { JP_SCOPE_DEVICE = 0, JP_SCOPE_HOST } jp_scope_kind;

typedef struct jp_scope_stat {
    const char *path;  /* "train_step/loss/forward" or a TraceAnnotation name */
    int kind;          /* jp_scope_kind */
    int user;          /* host scopes: 1 for user annotations, 0 for JAX/XLA runtime TraceMes */
    uint32_t depth;    /* device: number of path components - 1; host: nesting depth seen first */
    uint64_t count;    /* op occurrences (device) or events (host) */
    int64_t total_ps;  /* device: ops under the path; host: sum of durations */
    int64_t self_ps;   /* device: ops exactly at the path; host: minus nested host events */
    int64_t wall_ps;   /* host: the wall time its events cover, the union over threads (total_ps
                        * sums the threads, so it can exceed the wall time); device: total_ps */
} jp_scope_stat;

typedef struct jp_compile {
    const char *name;   /* the compile event ("backend_compile_and_load", ...) */
    const char *module; /* module compiled, "" when the profile does not say */
    int64_t start_ps, dur_ps;
    int64_t step_num;   /* the step it happened in, or -1 */
    int steady;         /* 1 when inside the steady state: any step after the first, and the first
                         * one too unless it compiles the capture's step module (a warm-up) */
} jp_compile;

enum jp_xfer_kind { JP_XFER_H2D, JP_XFER_D2H, JP_XFER_D2D, JP_XFER_COUNT };

typedef struct jp_transfer_stat {
    const char *kind;  /* "H2D", "D2H", "D2D" */
    uint64_t count;
    uint64_t bytes;    /* 0 when the profile does not record sizes (XLA:CPU) */
    int64_t total_ps;
    int64_t max_ps;
} jp_transfer_stat;

typedef struct jp_kernel_stat {
    const char *name;   /* kernel name */
    const char *op;     /* HLO op of its first occurrence, "" when unknown */
    uint32_t registers, static_shared, dynamic_shared;
    uint32_t grid[3], block[3];
    double occupancy;   /* percent, 0 when unknown */
    uint64_t count;
    int64_t total_ps, min_ps, max_ps;
} jp_kernel_stat;

typedef struct jp_memory_sample {
    int64_t t_ps;
    int64_t bytes_in_use;
} jp_memory_sample;

typedef struct jp_memory_stat {
    const char *allocator;   /* its name, or "device N" (libtpu's index_on_host) */
    int64_t peak_bytes;      /* most bytes in use (allocated + reserved) during the capture */
    int64_t peak_t_ps;
    int64_t lifetime_peak_bytes; /* the allocator's own peak_bytes_in_use since it was created
                                  * (may predate the capture), 0 when not recorded */
    uint64_t n_events;    /* allocation + deallocation events */
    jp_memory_sample *samples; /* at most 1000, evenly spaced over the events */
    size_t n_samples;
} jp_memory_stat;

/* ---- memory at the peak: XLA's buffer assignment, per compiled module ----------------------
 * From the BufferAssignmentProto that the HloProto in /host:metadata carries next to the module
 * (CPU captures too): what XProf's memory viewer shows for memory colour 0 (device memory; host
 * memory on CPU), plus each buffer's Python source. Program order is the order of the heap
 * simulator's events. docs/design.md "Memory at the peak" defines the timeline and the peak. */

typedef enum jp_buffer_kind {
    JP_BUFFER_PARAMETER = 0, /* an entry parameter, donated or not: live for the whole program */
    JP_BUFFER_OUTPUT,        /* may be live out of the program: live for the whole program */
    JP_BUFFER_CONSTANT,      /* a constant: live for the whole program */
    JP_BUFFER_TEMPORARY,     /* on the heap: live from its definition to its last use */
    JP_BUFFER_SMALL,         /* the one row that sums every buffer under 16 KiB live at the peak */
    JP_BUFFER_KIND_COUNT
} jp_buffer_kind;
/* "parameter", "output", "constant", "temporary", "small"; "?" out of range. */
const char *jp_buffer_kind_name(int kind);

typedef struct jp_buffer {
    int64_t id;                   /* XLA's logical buffer id; -1 for the small row */
    int64_t bytes;                /* as allocated (padded and tiled): what it costs */
    int64_t unpadded_bytes;       /* the dense size of its shape, without layout padding */
    int kind;                     /* jp_buffer_kind */
    const char *instruction;      /* the HLO instruction that defines it, "{i,j}" added for an
                                   * element of a tuple; "" for the small row */
    const char *opcode;           /* that instruction's opcode, "" when unknown */
    const char *shape;            /* "f32[4096,4096]" (no layout), "" when unknown */
    const char *op_name;          /* the instruction's own metadata.op_name, "" when none */
    const char *source;           /* "file:line" of the user's code, as jp_op_stat.source */
    const char *function;         /* the function of that line, "" when unknown */
    const jp_source_frame *stack; /* the whole recorded Python stack, innermost frame first */
    uint32_t n_stack;             /* frames in stack; 0 when the HLO holds no stack */
    uint32_t n_small;             /* the small row: how many buffers it sums; else 0 */
    int64_t start, end;           /* its life in program order: the heap event that allocated it
                                   * and the one that freed it (the last event when never freed);
                                   * -1 and -1 for buffers live for the whole program */
} jp_buffer;

typedef struct jp_module_memory {
    const char *name;             /* the module as XProf names it: "jit_step(6)" */
    const char *host;             /* the host whose metadata holds it */
    uint64_t runs;                /* its executions in the profile; 0: compiled, never run */
    int64_t peak_bytes;           /* most bytes live at once: always_live_bytes + the heap's peak */
    int64_t peak_unpadded_bytes;  /* the same without layout padding */
    int64_t peak_index;           /* the heap event at which the heap first reaches its peak;
                                   * -1 without heap events */
    const char *peak_instruction; /* the instruction that event processes, "" without one */
    const char *peak_computation; /* and its computation (a while body, ...), "" without one */
    int64_t always_live_bytes;    /* the allocations live for the whole program (parameters,
                                   * outputs, constants; thread-local ones left out, as XProf) */
    int64_t kind_bytes[JP_BUFFER_KIND_COUNT]; /* always_live_bytes by kind (temporary, small: 0) */
    int64_t total_bytes;          /* every allocation but thread-local ones: the peak with
                                   * fragmentation */
    int64_t parameter_bytes;      /* entry parameters: memory_analysis()'s argument size */
    int64_t output_bytes;         /* maybe-live-out allocations: its output size */
    int64_t alias_bytes;          /* parameters aliased with an output (donated): its alias size */
    int64_t temp_bytes;           /* total_bytes - always_live_bytes: its temp size */
    int64_t *timeline;            /* n_timeline points: bytes live just before each heap event,
                                   * then after the last one; always_live_bytes included */
    const char **timeline_instructions; /* the instruction each event processes; "" at the end */
    size_t n_timeline;            /* heap events + 1, or 0 without heap events */
    jp_buffer *buffers;           /* live at the peak, largest first (ties in program order), the
                                   * small row last */
    size_t n_buffers;
    const char *note;             /* why the heap part is missing (e.g. a buffer freed twice), or "" */
} jp_module_memory;

/* ABOVE_PEAK: a rate above the physical peak it is compared with, which no hardware reaches: the
 * peak is wrong or the work is misattributed. Never rated good (docs/design.md "Device peaks"). */
typedef enum jp_rating {
    JP_RATING_NA = -1, JP_RATING_GOOD = 0, JP_RATING_WARNING, JP_RATING_BAD, JP_RATING_ABOVE_PEAK
} jp_rating;
const char *jp_rating_name(int rating);

typedef struct jp_kpi {
    const char *name;  /* "device utilization", "kernel duration", ... */
    double value;
    const char *unit;  /* "%", "ms", "s" */
    int rating;        /* jp_rating; NA when the profile cannot tell */
} jp_kpi;

typedef struct jp_finding {
    const char *id;       /* stable id: "many_small_ops", "device_idle", ... */
    int severity;         /* jp_rating: WARNING or BAD */
    const char *title;
    const char *evidence; /* numbers, names and steps behind it */
    const char *fix;      /* what to change */
} jp_finding;

/* Multi-host profiles (a run with one file per host or process, as jax.distributed jobs write):
 * each host is also analysed alone, and the hosts' clocks are put on one time axis.
 *
 * Clock alignment. Every host's events are timed from its own capture's start. Where the files
 * record that start on the wall clock (the Task Environment plane's profile_start_time), hosts
 * are first placed by it. Then, where two hosts share numbered steps that end in collectives, the
 * end of each step's last collective is one instant seen by both (a collective completes on every
 * participant together), so the median difference of those ends over the shared steps gives the
 * offset; it corrects wall-clock skew between machines. A host without such steps keeps the
 * wall-clock placement. Every time in jp_analysis (the merged model) is on that shared axis.
 *
 * Stragglers. In a synchronous job every host waits in its collectives for the last one to
 * arrive, so in each shared step the host with the least collective time is the one the others
 * waited for. It is named the step's straggler when the others' median collective time exceeds
 * its own by at least 10% of the step and 1 ms; that excess is how long it held them back. */

typedef struct jp_host_stat {
    const char *name;            /* as in jp_analysis.hosts */
    int64_t offset_ps;           /* added to the host's own times to put them on the shared axis */
    const char *clock;           /* how offset_ps was found: "reference", "collective ends",
                                  * "wall clock" or "none" (session starts taken as simultaneous) */
    uint32_t n_sync;             /* shared steps behind a "collective ends" offset */
    int64_t sync_spread_ps;      /* median distance of those steps' own offsets from offset_ps */
    jp_step *steps;              /* the host's own steps and breakdown, on the shared axis */
    size_t n_steps;
    jp_step_summary step_summary;
    jp_op_stat *ops;             /* its ops by total time (device indexes jp_analysis.devices) */
    size_t n_ops;
    int64_t op_self_ps;          /* sum of its ops' self time */
    int64_t collective_ps;       /* collective part of its steps */
    int64_t wait_ps;             /* of that, the time beyond the least collective time of any
                                  * host in the same step: waiting for others */
    uint32_t n_straggling;       /* steps where it was the straggler */
} jp_host_stat;

typedef struct jp_straggler {
    int64_t step_num;
    uint32_t host;               /* index into host_stats */
    int64_t behind_ps;           /* the others' median collective time minus its own */
    int64_t step_ps;             /* the step's median time over the hosts */
} jp_straggler;

typedef struct jp_analysis {
    const char *path;           /* the xplane file, or the run directory */
    const char **hosts;
    size_t n_hosts;
    int platform;               /* of the devices analysed */
    int64_t span_ps;            /* first to last event */
    uint64_t n_events;          /* events decoded */
    jp_device *devices;
    size_t n_devices;
    jp_op_stat *ops;            /* sorted by total time, descending */
    size_t n_ops;
    int64_t op_busy_ps;         /* sum over devices of busy time (overlap counted once) */
    double device_idle_pct;     /* idle share of the devices' own active windows: sum over devices
                                 * of (last - first activity - busy) / sum of (last - first), as
                                 * XProf's device idle time; the KPIs use the steps instead */
    int64_t op_self_ps;         /* sum of every op's self time (parallel threads/streams add up) */
    jp_step *steps;             /* in time order */
    size_t n_steps;
    jp_step_summary step_summary;
    double step_flops;          /* FLOPs per step, the mean over steps (0 without steps or counts) */
    double device_util_pct;     /* each device's busy time (the union of its ops and transfers) inside
                                 * the steps over the steps' time, averaged over the devices that ran
                                 * ops, as XProf's duty cycle; -1 without steps */
    double mfu_pct;             /* model FLOPs utilization: the steps' FLOPs / their time / the summed
                                 * peak FLOP/s of the devices that ran ops; -1 when unknown */
    jp_line_stat *lines;        /* device time by source line, by self time */
    size_t n_lines;
    int64_t line_self_ps;       /* the ops' self time that has a source line */
    const char *source_prefix;  /* the directory every user frame's file shares ("/home/me/proj/"),
                                 * which text output leaves out; "" when none */
    jp_flame_node *flame;       /* device time by Python call stack (see jp_flame_node) */
    size_t n_flame;
    jp_scope_stat *scopes;      /* device scopes then host scopes, each by total time */
    size_t n_scopes;
    jp_compile *compiles;
    size_t n_compiles;
    jp_transfer_stat transfers[JP_XFER_COUNT];
    jp_kernel_stat *kernels;    /* by total time */
    size_t n_kernels;
    uint64_t n_small_kernels;   /* kernel launches under 0.1 ms */
    jp_memory_stat *memory;     /* allocator events, per allocator */
    size_t n_memory;
    jp_module_memory *modules;  /* memory at the peak per compiled module (one entry per host and
                                 * module), largest peak first */
    size_t n_modules;
    jp_kpi *kpis;
    size_t n_kpis;
    jp_finding *findings;       /* most severe first; empty on a healthy profile */
    size_t n_findings;
    jp_host_stat *host_stats;   /* one per host, in hosts' order, when there are 2 or more; else NULL */
    size_t n_host_stats;
    const char *clock_method;   /* how the hosts' clocks were aligned, one sentence; "" for one host */
    jp_straggler *stragglers;   /* by step */
    size_t n_stragglers;
    const char **warnings;      /* what loading met that the analysis stands without, one sentence
                                 * each naming the file (events whose metadata id names no metadata,
                                 * a file that looks cut after a plane, an ignored CPU peaks file) */
    size_t n_warnings;
    int step_window;            /* 1: the analysis of a step window alone (jp_load_options.has_steps) */
} jp_analysis;

typedef struct jp_profile jp_profile;

/* The straggler of step number step_num in a multi-host analysis, or NULL (binary search). */
const jp_straggler *jp_analysis_straggler(const jp_analysis *a, int64_t step_num);

/* JP_ERR_ARG when out_path is one of the files jp_profile_load(path) would read (the same device
 * and inode, whatever the names or links), so that writing it would destroy the input, or when it
 * is named like a host file (*.xplane.pb[.gz]) in the run directory path names (or resolves to),
 * so that the next load would read it as one more host; JP_OK otherwise. Every writer below that knows its input
 * (jp_trace_export, jp_html_write, jp_html_diff_write, jp_flame_*_write: the analysis's path) runs
 * it first. */
int jp_profile_output_check(const char *path, const char *out_path, jp_error *err);
/* A number that changes when the files a profile path names change (one added, removed, replaced,
 * resized or written to), for a cache of loaded profiles to notice (the viewer's). Reads only
 * directory entries and file metadata. */
int jp_profile_stamp(const char *path, uint64_t *out, jp_error *err);

/* Loads and analyses; opt may be NULL. On failure *out is NULL and err names the file. */
int jp_profile_load(jp_profile **out, const char *path, const jp_load_options *opt, jp_error *err);
/* Same from one serialized XSpace (or its gzip) in memory, as one host called `name`. */
int jp_profile_parse(jp_profile **out, const void *data, size_t len, const char *name, const jp_load_options *opt,
                     jp_error *err);
void jp_profile_free(jp_profile *p);
/* The results, borrowed from the profile. */
const jp_analysis *jp_profile_analysis(const jp_profile *p);

/* ---------------------------------------------------------------------------------------------
 * Outputs. One renderer per format over the same analysis; sections are the CLI commands.
 * ------------------------------------------------------------------------------------------- */


typedef enum jp_section {
    JP_SECTION_REPORT = 0, JP_SECTION_OPS, JP_SECTION_STEPS, JP_SECTION_SCOPES, JP_SECTION_KERNELS,
    JP_SECTION_MEMORY, JP_SECTION_TRANSFERS, JP_SECTION_COMPILES, JP_SECTION_FINDINGS, JP_SECTION_HOSTS,
    JP_SECTION_LINES, JP_SECTION_FLAME, JP_SECTION_COUNT
} jp_section;
typedef enum jp_format { JP_FORMAT_TEXT = 0, JP_FORMAT_JSON, JP_FORMAT_CSV } jp_format;

/* Section by its command name ("ops"), or -1. */
int jp_section_from_name(const char *name);
const char *jp_section_name(int section);

/* The section registry (src/render/sections.c): one row per jp_section value, in enum order, saying
 * what the section is called, what it shows and what it takes. jp_render enforces the flags; the
 * CLI's usage and help, the viewer's API and the tests read the rows. A new section is a value
 * before JP_SECTION_COUNT, its row there, its analysis and its test. */
typedef enum jp_section_flag {
    JP_SECTION_IN_REPORT = 1u << 0,    /* its table is one of the JSON report's, in enum order */
    JP_SECTION_REPORT_ALL = 1u << 1,   /* ...and there every row, whatever the view (steps, findings) */
    JP_SECTION_WHOLE_RUN = 1u << 2,    /* covers the whole run: refuses an analysis of a step window */
    JP_SECTION_TAKES_MODULE = 1u << 3, /* jp_view.module applies (one module in detail) */
    JP_SECTION_TABLES = 1u << 4,       /* several tables: jp_view.columns does not apply */
    JP_SECTION_NO_CSV = 1u << 5,       /* has no CSV form */
    JP_SECTION_SPLIT_NOTE = 1u << 6,   /* its times are partly estimated: text and JSON say how much */
} jp_section_flag;

typedef struct jp_section_def {
    int id;                    /* its jp_section value (the row's index) */
    const char *name;          /* the command and the JSON "section" key: "ops" */
    const char *summary;       /* one line: what it shows */
    const char *help;          /* what it shows, in full (lines of at most 100 columns) */
    const char *whole_run_why; /* JP_SECTION_WHOLE_RUN: why it takes no step window; else NULL */
    unsigned flags;            /* jp_section_flag bits */
} jp_section_def;

/* The registry row of a section, or NULL when section is not one. Static storage: thread-safe. */
const jp_section_def *jp_section_get(int section);

typedef struct jp_view {
    size_t top;          /* rows per table; 0 means all */
    const char *sort;    /* column key ("total", "self", "count", "avg", "name"), optionally ":asc" or
                          * ":desc" after it (default: numbers largest first, names A to Z); NULL =
                          * the table's own order */
    const char *filter;  /* POSIX extended regex on the row's names; NULL = all rows */
    int width;           /* text width in columns; 0 means 100 */
    const char *columns; /* "name,self_ms,scope": the columns shown, in that order, by key or stem
                          * (text, CSV and JSON); NULL = the table's own (text shows a subset) */
    const char *module;  /* memory: one module in detail (its timeline and every buffer at the
                          * peak), by jp_module_memory.name or plain module name; NULL = the list
                          * of modules that ran */
} jp_view;

/* Writes len bytes of s to out as one quoted JSON string, by the rules every jaxprof JSON output
 * follows: `"` and `\` escaped; control characters (U+0000-U+001F, U+007F) escaped as \b \f \n \r \t
 * or \u00xx; well-formed UTF-8 copied; every other byte (invalid UTF-8: overlong forms, surrogates,
 * past U+10FFFF, cut short) written as \ufffd. The result is always valid JSON and UTF-8. s may be
 * NULL when len is 0. Thread-safe for distinct outputs. */
void jp_json_fput_str(FILE *out, const char *s, size_t len);

/* Writes len bytes of s to out for a terminal: every control character (C0 but, with keep_layout,
 * newline and tab; DEL; C1, U+0080-U+009F, also as a stray 8-bit byte) and every byte that cannot
 * start or continue a UTF-8 sequence becomes '?', so
 * no name can move the cursor, clear the screen or set the title. Every text output of jaxprof
 * (jp_render and jp_diff_render in JP_FORMAT_TEXT, the CLI's messages) goes through it; JSON is
 * escaped instead (jp_json_fput_str), HTML entity-escaped. */
void jp_text_fput_safe(FILE *out, const char *s, size_t len, int keep_layout);

/* Writes one section in one format to out. Fails with JP_ERR_ARG for an unknown sort key or a bad
 * regex, JP_ERR_IO when writing fails. */
int jp_render(const jp_analysis *a, int section, int format, const jp_view *view, FILE *out,
              jp_error *err);

/* Flame graph exports (jp_flame_*) of jp_analysis.flame: one sample per leaf (an op under its
 * call stack) with its self time in nanoseconds, so both total the ops' self time. Folded stacks
 * are "frame;frame;op 1234" lines (flamegraph.pl, speedscope, inferno); the pprof profile is a
 * gzip'd perftools.profiles.Profile (pprof -http, speedscope). Files are written through a
 * temporary one (jp_temp_hook above); temp may be NULL. */
int jp_flame_folded(const jp_analysis *a, FILE *out, jp_error *err);
int jp_flame_folded_write(const jp_analysis *a, const char *out_path, const jp_temp_hook *temp, jp_error *err);
int jp_flame_pprof_write(const jp_analysis *a, const char *out_path, const jp_temp_hook *temp, jp_error *err);

/* HTML report (jp_html_*): the report section as one self-contained page (inline CSS and SVG
 * charts, no script, nothing loaded from elsewhere): header, step summary with a per-step stacked
 * breakdown chart, overall breakdown, KPIs, top 20 ops (by self time) and scopes (by total time),
 * findings. Every string from the profile is HTML-escaped. Thread-safe for distinct outputs. */
int jp_html_report(const jp_analysis *a, FILE *out, jp_error *err);
/* Writes the page through a temporary file renamed to out_path (jp_temp_hook above; temp may be
 * NULL), so a failure never leaves a half file under the final name. JP_ERR_IO names the file. */
int jp_html_write(const jp_analysis *a, const char *out_path, const jp_temp_hook *temp, jp_error *err);

/* ---------------------------------------------------------------------------------------------
 * Comparing two profiles (jp_diff_*): step time with a noise estimate, the breakdown, per-op and
 * per-scope self time per step (added, removed, slower, faster, unchanged), findings that appeared
 * or disappeared, and a regression gate. First, layers renumbered by an insertion (Flax's Dense_2
 * -> Dense_3 when a Dense goes in before it) are aligned across the runs by what their ops compute
 * (category, op_name around the number, FLOPs and bytes per occurrence), in order, keeping numbers
 * on ties; a layer of one run only (the inserted one) has its ops added or removed, never paired.
 * Then ops pair by module + name when op_names (renumbered) and shapes agree; leftovers within
 * their module by category + op_name + shape, by category + op_name, by category + scope +
 * occurrences per step, which survives XLA renumbering ("fusion.12" vs "fusion.14", or a name
 * handed to other code); and last by bare name, but an op of a new scope never with one whose
 * scope is still there. Each row says how it was paired; scope rows follow the renumbering. A
 * diff borrows strings from both analyses: they must outlive it.
 * ------------------------------------------------------------------------------------------- */

typedef enum jp_change {
    JP_CHANGE_UNCHANGED = 0, JP_CHANGE_SLOWER, JP_CHANGE_FASTER, JP_CHANGE_ADDED, JP_CHANGE_REMOVED, JP_CHANGE_COUNT
} jp_change;
const char *jp_change_name(int change); /* "unchanged", "slower", "faster", "added", "removed" */

typedef enum jp_match {
    JP_MATCH_NONE = 0, /* added or removed */
    JP_MATCH_NAME,     /* same module and op name (scopes: same kind and path, renumbered) */
    JP_MATCH_OP_NAME,  /* same module, category and metadata op_name (renumbered); op renamed */
    JP_MATCH_SHAPE,    /* same module, category, scope and occurrences per step; op renamed */
    JP_MATCH_COUNT
} jp_match;
const char *jp_match_name(int match); /* "none", "name", "op_name", "shape" */

typedef struct jp_diff_row {
    const char *name;      /* op: the new run's name (the base's when removed); scope: its path */
    const char *base_name; /* the base run's name ("" when added); differs after a renumbering
                            * (an op by XLA; a scope under a renumbered layer: its old path) */
    const char *module;    /* op: HLO module; scope: "" */
    const char *category;  /* op: category; scope: "device" or "host" */
    const char *scope;     /* op: user scope path; scope: its path */
    int change;            /* jp_change */
    int match;             /* jp_match */
    double base_count, new_count; /* occurrences per step */
    double base_ps, new_ps;       /* self time per step (summed over devices) */
    double base_total_ps, new_total_ps; /* total time per step (scopes: including nested) */
    double delta_ps;              /* new_ps - base_ps */
    double delta_pct;             /* 100 * delta / base; 0 when added or removed */
    double noise_ps;              /* ops: two standard errors of delta_ps from each run's own spread of
                                   * the op (jp_noise_basis); a paired op within it is unchanged.
                                   * 0: unknown (and always for scopes) */
    int noise_basis;              /* jp_noise_basis: the least informed of the two runs' estimates */
} jp_diff_row;

/* Where an op's noise in a diff comes from, per run: its self time per step across at least
 * JP_NOISE_MIN_STEPS steps (where the analysis measured it: step_sd_ps > 0); else per execution
 * (at least two); else nothing. */
enum jp_noise_basis { JP_NOISE_NONE = 0, JP_NOISE_EXECUTIONS, JP_NOISE_STEPS, JP_NOISE_BASIS_COUNT };
enum { JP_NOISE_MIN_STEPS = 3 };
const char *jp_noise_basis_name(int basis); /* "none", "executions", "steps" */

typedef struct jp_diff_steps {
    size_t base_n, new_n;                  /* steps found (1 when a run has none: its whole span) */
    double base_mean_ps, new_mean_ps;
    double base_median_ps, new_median_ps;
    double base_p90_ps, new_p90_ps;
    double change_pct;                     /* 100 * (new mean - base mean) / base mean */
    double noise_pct;                      /* 2 standard errors of that difference, % of base mean
                                            * (0 with fewer than 2 steps on a side) */
    int significant;                       /* |change_pct| > noise_pct */
    double base_part_ps[JP_PART_COUNT];    /* breakdown per step */
    double new_part_ps[JP_PART_COUNT];
} jp_diff_steps;

typedef struct jp_diff_finding {
    const char *id;
    const char *title;
    int severity;  /* jp_rating */
    int appeared;  /* 1: only in the new run; 0: only in the base run */
} jp_diff_finding;

typedef struct jp_diff_options {
    double min_change_pct;   /* a row is slower/faster when |delta_pct| exceeds this; 0 means 5 */
    double min_share_pct;    /* ... and |delta_ps| is at least this % of the base mean step; 0 means 0.5 */
} jp_diff_options;

typedef struct jp_diff {
    const char *base_path, *new_path;
    jp_diff_steps steps;
    jp_diff_row *ops;        /* by |delta_ps| descending, unchanged rows last */
    size_t n_ops;
    jp_diff_row *scopes;     /* device scopes then host scopes, each by |delta_ps| descending */
    size_t n_scopes;
    size_t op_changes[JP_CHANGE_COUNT];    /* rows per jp_change */
    size_t scope_changes[JP_CHANGE_COUNT];
    size_t op_matches[JP_MATCH_COUNT];     /* op rows per jp_match */
    jp_diff_finding *findings;             /* appeared first */
    size_t n_findings;
    jp_diff_options options;               /* as applied (defaults filled in) */
} jp_diff;

/* Compares two analyses; opt may be NULL. */
int jp_diff_new(jp_diff **out, const jp_analysis *base, const jp_analysis *new_run, const jp_diff_options *opt,
                jp_error *err);
void jp_diff_free(jp_diff *d);

/* Writes the diff in one format (text, JSON with JP_JSON_SCHEMA_VERSION, CSV of the op rows);
 * view.top limits rows per table (0: text 15, JSON/CSV all), view.filter keeps rows whose names
 * match. */
int jp_diff_render(const jp_diff *d, int format, const jp_view *view, FILE *out, jp_error *err);

typedef struct jp_diff_gate {
    double max_step_slowdown_pct; /* trips when steps.change_pct exceeds it and is significant; < 0 off */
    double max_op_slowdown_pct;   /* trips when a slower row's delta_pct exceeds it, or an added op
                                   * takes at least min_share_pct of the step; < 0 off */
} jp_diff_gate;

/* Checks the gate: 0 when it holds, 1 when it trips. why (may be NULL) receives one paragraph
 * that says which limit tripped, by how much, and names the ops that got slower (past cap bytes
 * cut with "..." on a whole UTF-8 character; always NUL-terminated when cap > 0). */
int jp_diff_check(const jp_diff *d, const jp_diff_gate *gate, char *why, size_t cap);
/* A buffer for why that holds any explanation whole. */
#define JP_DIFF_WHY_MAX 4096
/* As jp_diff_render; with a gate (not NULL), the JSON document ends with "gate":{
 * "max_step_slowdown_pct"|null, "max_op_slowdown_pct"|null, "tripped", "explanation"} from
 * jp_diff_check. Text and CSV are unaffected. */
int jp_diff_render_gated(const jp_diff *d, const jp_diff_gate *gate, int format, const jp_view *view, FILE *out,
                         jp_error *err);

/* The diff as one self-contained HTML page (like jp_html_report): step change, breakdown bars,
 * op and scope tables, findings. Written like jp_html_write. */
int jp_html_diff_write(const jp_diff *d, const char *out_path, const jp_temp_hook *temp, jp_error *err);

/* ---------------------------------------------------------------------------------------------
 * Trace export. Writes every event of a profile as a timeline that Perfetto UI, chrome://tracing
 * and TensorBoard's trace viewer load: each plane a process, each line a thread, each event a
 * slice (or an instant when it has no duration) with its stats as arguments. Nothing is capped:
 * events in = events out + events cut on purpose by the window, step or duration options. Partial
 * overlaps on one line, which a strict nesting viewer would drop, move to an extra
 * "<line> (overlap N)" thread. Times are the profile's own (0: the capture's start, the same as
 * jaxprof report's); a profile on an absolute clock is shifted to start at 0. Derived rows (Steps,
 * XLA Modules, XLA Ops) are added where the source has only raw GPU streams, with flow arrows from
 * each launch to its kernel.
 * ------------------------------------------------------------------------------------------- */

typedef enum jp_trace_format {
    JP_TRACE_CHROME = 0, /* Chrome trace event JSON */
    JP_TRACE_PERFETTO    /* Perfetto TracePacket/TrackEvent protobuf */
} jp_trace_format;

typedef struct jp_trace_options {
    int format;              /* jp_trace_format */
    int gzip_level;          /* 1..9 compresses, 0 writes plain bytes, -1 decides by a ".gz" name (level 1) */
    int64_t window_start_ps; /* keep events that overlap [start, end) in trace time (0 is the capture's */
    int64_t window_end_ps;   /* start, as in jaxprof report); end <= start keeps everything */
    int64_t first_step;      /* keep the time of steps first..last (by step number); */
    int64_t last_step;       /* last < first disables the step cut */
    int64_t min_duration_ps; /* drop slices shorter than this; 0 keeps all (instants are kept) */
    const char *host;        /* as jp_load_options.host */
    jp_temp_hook temp;       /* told of the temporary output file (see Outputs, at jp_temp_hook); zero: nobody */
} jp_trace_options;

/* Options that keep everything: Chrome JSON, compression by the output name. */
jp_trace_options jp_trace_options_default(void);

typedef struct jp_trace_stats {
    uint64_t events_in;      /* events in the xplanes */
    uint64_t events_out;     /* of those, written as slices or instants */
    uint64_t events_cut;     /* of those, left out by the window, steps or min duration */
    uint64_t derived;        /* events of derived rows written in addition */
    uint64_t flows;          /* flow arrows written */
    uint64_t overlap_tracks; /* extra threads made for partial overlaps */
    uint64_t bytes;          /* bytes written to the output file */
} jp_trace_stats;

/* Exports the profile at path (file, run directory or log directory, as jp_profile_load) into
 * out_path. stats may be NULL. Writes a temporary file and renames it (see Outputs, at jp_temp_hook), so a failed
 * export never leaves a half file under the final name. Thread-safe for distinct outputs. */
int jp_trace_export(const char *path, const char *out_path, const jp_trace_options *opt, jp_trace_stats *stats,
                    jp_error *err);
/* File name the exporter uses by default in a run directory: "perfetto_trace.json.gz" or
 * "perfetto_trace.pftrace" (static string). */
const char *jp_trace_default_name(int format);
/* The default output for a profile path: jp_trace_default_name inside the run directory that
 * path resolves to. Fails with JP_ERR_NOT_FOUND when path holds no profile, JP_ERR_LIMIT when the
 * result does not fit in cap bytes. */
int jp_trace_default_path(const char *path, int format, char *buf, size_t cap, jp_error *err);

#ifdef __cplusplus
}
#endif
#endif /* JAXPROF_H */
