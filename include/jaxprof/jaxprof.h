/* jaxprof.h - the stable API of libjaxprof, the C core of the jaxprof profiling toolkit: errors, runs
 * on disk, loading a profile, rendering its sections, exports, and comparing two profiles through an
 * opaque diff with a regression gate. Results are reached through jp_render (text, JSON, CSV) and the
 * writers; their C layouts are in jaxprof_results.h, the XSpace reader in jaxprof_xspace.h, the HTTP
 * server and viewer in jaxprof_serve.h. Those three may change between releases; this one changes
 * only by additions. Thread safety is stated per function; "distinct outputs" means distinct objects
 * or files written by each thread. No function keeps global mutable state; configuration comes in
 * options, never from the environment (the one getenv is a test-only fault hook, JAXPROF_TEST_FAULT,
 * src/profile/testfault.h). Messages name options as the structs here spell them ("max_inflate",
 * "columns"); a client maps them to its own flags. */
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

/* The allocator state inside jp_runs and jp_run_summary: private to the library (one free releases
 * every string those hold); callers never read or write it. */
typedef struct jp_arena_block jp_arena_block;

typedef struct jp_arena {
    jp_arena_block *head; /* newest block; allocations are carved from its tail */
    size_t block_size;    /* default size of a new block in bytes */
    size_t total;         /* bytes obtained from malloc, for memory accounting */
} jp_arena;

/* ---------------------------------------------------------------------------------------------
 * Finding profiles on disk. A run is a directory holding one or more <host>.xplane.pb[.gz] files,
 * as jax.profiler writes them under <log_dir>/plugins/profile/<run>/ (jaxprof's Profiler nests them
 * under <log_dir>/step_XXXXXXXX/). A directory of host summaries alone (a pod's
 * <host>.jaxprof-summary.json files copied to one place) is a run too, of n_files 0: report,
 * hosts, findings and the viewer's Overview merge it. Symbolic links are never followed.
 * ------------------------------------------------------------------------------------------- */

typedef struct jp_run {
    const char *path;  /* the run directory: log_dir joined with the relative path */
    const char *name;  /* last component of path (JAX's timestamp name) */
    int64_t mtime_ns;  /* newest modification time among its xplane files (its summaries, in a
                        * run of summaries alone) */
    uint32_t n_files;  /* number of xplane files (hosts); 0 in a run of summaries alone */
    uint64_t bytes;    /* total size of its xplane files (its summaries, in a run of them alone) */
    const char *const *hosts; /* n_files host names (each file's name without .xplane.pb[.gz]),
                               * in the order of their file names: the order they load in */
    const char *const *files; /* n_files xplane file names, in the same order as hosts */
    const char *const *summarized; /* hosts here only as their summary ("<host>.jaxprof-summary.json"
                                    * with no file of theirs: the other processes of a pod's run as
                                    * process 0 keeps it, or every host of a pod's summaries copied
                                    * to one place), by name */
    uint32_t n_summarized;
} jp_run;

typedef struct jp_runs {
    jp_arena arena; /* owns every string and the array below */
    jp_run *runs;   /* sorted oldest first (mtime, then path): the newest run is last */
    size_t count;   /* number of runs found; 0 is not an error */
} jp_runs;

/* Walks log_dir (depth <= 16) and fills out. On failure out is left empty but still needs deinit.
 * Thread-safe for distinct outputs. */
int jp_runs_find(jp_runs *out, const char *log_dir, jp_error *err);
/* Threads: the owner, once no thread reads runs. */
void jp_runs_deinit(jp_runs *runs);
/* The newest run, or NULL when there is none. Borrowed from runs.
 * Threads: any number at once (runs is only read). */
const jp_run *jp_runs_latest_view(const jp_runs *runs);
/* Length of the host name in an xplane file's name ("<host>.xplane.pb" or "<host>.xplane.pb.gz"),
 * or 0 when name is not one. The one place that knows these names. Threads: any (reads only name). */
size_t jp_xplane_host_len(const char *name);
/* The same for a Chrome trace jax.profiler writes beside it ("<host>.trace.json[.gz]"): a run
 * directory's host files when it holds no xplane file (captures kept as JSON alone). */
size_t jp_trace_json_host_len(const char *name);
/* The same for a host summary (`jaxprof summarize`: "<host>.jaxprof-summary.json"). */
size_t jp_summary_host_len(const char *name);

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
 * or loaded is not a failure: out->error says why. JP_ERR_NOMEM only; deinit out in every case.
 * Threads: distinct outputs on distinct threads. */
int jp_run_summarize(jp_run_summary *out, const jp_run *run, const struct jp_load_options *opt, jp_error *err);
/* Threads: the owner, once no thread reads s. */
void jp_run_summary_deinit(jp_run_summary *s);

/* The one JSON schema of a run, shared by `jaxprof list --json`, the viewer's /api/runs and Python's
 * Run: writes the members "name", "path" (as given: the caller decides relative to what), "hosts"
 * (a list of host names), "bytes" (of the xplane files) and "mtime_ms" (newest xplane file), then,
 * with a summary, "files" ([{name, bytes}]), "steps" ({count, first, last}, first and last null
 * without steps; null when not loaded), "duration_ms" and "error" (null when loaded). Members only:
 * the caller writes the braces and may add members of its own before.
 * Threads: any number at once (run and summary are only read), each to its own out. */
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
 * each uncompressed trace file already in run_dir. Symbolic links are refused.
 * Threads: distinct out_dirs on distinct threads. */
int jp_runs_extract(const char *run_dir, const char *out_dir, const jp_extract_options *opt,
                    void (*on_file)(void *ctx, const char *path), void *ctx, jp_error *err);

/* ---------------------------------------------------------------------------------------------
 * Loading. jp_profile_load reads a profile (one .xplane.pb[.gz], a run directory holding one file
 * per host, or a log directory: its newest run), builds the model (ops with their HLO metadata,
 * host events, transfers, allocations) and runs every analysis once. The results (a jp_analysis,
 * laid out in jaxprof_results.h) are owned by the profile and immutable after load: any number of
 * threads may render one at once.
 * ------------------------------------------------------------------------------------------- */

#define JP_JSON_SCHEMA_VERSION 1

enum { JP_THREADED_MIN_EVENTS = 500000 }; /* below, a second thread costs more than it saves */
enum { JP_LOAD_THREADS_MAX = 256 };        /* the most hosts read at once (jp_load_options.threads) */

typedef struct jp_load_options {
    const char *host;   /* keep only hosts whose name contains this; NULL keeps all */
    const char *device; /* keep only devices whose name contains this, or ends in ":<index>"; NULL all */
    /* Called before each host file is decoded (progress display); may be NULL. */
    void (*on_file)(void *ctx, const char *file, uint64_t bytes);
    void *ctx;
    /* Threads for reading, the results the same whatever the count. 1: everything on the calling
     * thread. N > 1: a run of several host files reads up to N of them at once (one worker thread
     * each, at most JP_LOAD_THREADS_MAX, never more than there are files; each worker parses on
     * its own thread), and one file is parsed ahead on a second thread while the calling one
     * builds the model. 0: one worker per online CPU for several files; for one file 2 when the
     * machine has two CPUs and its XSpace holds JP_THREADED_MIN_EVENTS events or more, at least
     * half of them on device planes (GPU, TPU: on host-heavy profiles the model is the
     * bottleneck), else 1. on_file is always called on the calling thread, in file order. */
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
    /* The most bytes a gzip'd host file may inflate to, and all compressed stats of one file
     * together; 0: the defaults (jp_size_parse, below). Raise it for a genuine file that
     * compresses better; a bomb is refused with JP_ERR_LIMIT either way. The library reads no
     * environment variable: the CLI fills this from --max-inflate or JAXPROF_MAX_INFLATE, the
     * Python package from JAXPROF_MAX_INFLATE. */
    uint64_t max_inflate;
    /* 1: a run directory whose hosts have summaries beside their files (`jaxprof summarize`,
     * <host>.jaxprof-summary.json, as each process of a jax.distributed job writes them) is read
     * from those: only the multi-host tables, the devices and the findings are filled, and hosts
     * without a valid, current summary are read from their files (docs/design.md "Pods"). 0: the
     * files are read and summaries ignored. A run without summaries is read the same either way. */
    int use_summaries;
} jp_load_options;

/* The CPU calibration file `jaxprof calibrate` writes and every client reads, the one place that
 * knows its path: <cache_dir>/cpu_peaks, else <xdg_cache_home>/jaxprof/cpu_peaks, else
 * <home>/.cache/jaxprof/cpu_peaks (callers pass $JAXPROF_CACHE_DIR, $XDG_CACHE_HOME, $HOME; NULL or
 * "" skips one). 0 with the path in buf, or JP_ERR_NOT_FOUND (all three empty) / JP_ERR_LIMIT (the
 * path does not fit cap). Thread-safe. */
int jp_cpu_peaks_path(const char *cache_dir, const char *xdg_cache_home, const char *home, char *buf, size_t cap,
                      jp_error *err);

/* Parses a step range as `--steps` takes it: "N", "A:B", "A:" or ":B" (decimal, inclusive). 0, or
 * JP_ERR_ARG with err saying why (an empty end, a non-number, A > B). Thread-safe. */
int jp_steps_parse(const char *spec, int64_t *first, int64_t *last, jp_error *err);
/* Parses a duration as every jaxprof option takes one: a decimal number with an optional unit
 * (ns, us, µs, ms, s, min), e.g. "500us", "2.5s"; a bare number is in units of bare_ps
 * picoseconds (each option keeps its old unit). 0 and *ps, or -1 (no sign, no exponent, at most
 * about 100 days). Thread-safe. */
int jp_duration_parse(const char *text, int64_t bare_ps, int64_t *ps);

/* Gzip input may inflate to 64 times its size, at least 256 MiB, at most the machine's memory, and
 * all compressed stats of one file together to 16 times its size, at least 64 MiB, at most 1 GiB
 * (a bomb is refused with JP_ERR_LIMIT); jp_load_options.max_inflate (a size as jp_size_parse
 * reads it, for a client taking one from its user) sets both limits instead. Concatenated gzip
 * members are read as one stream; bytes after the last member other than zero padding are
 * JP_ERR_CORRUPT.
 *
 * Parses a byte count: digits with an optional K, M, G or T (powers of 1024) suffix. 0, or -1.
 * Threads: any (reads only text). */
int jp_size_parse(const char *text, uint64_t *out);

typedef struct jp_analysis jp_analysis; /* the results; layout in jaxprof_results.h */
typedef struct jp_profile jp_profile;


/* JP_ERR_ARG when out_path is one of the files jp_profile_load(path) would read (the same device
 * and inode, whatever the names or links), so that writing it would destroy the input, or when it
 * is named like a host file (*.xplane.pb[.gz]) in the run directory path names (or resolves to),
 * so that the next load would read it as one more host; JP_OK otherwise. Every writer below that knows its input
 * (jp_trace_export, jp_html_write, jp_html_diff_write, jp_flame_*_write: the analysis's path) runs
 * it first. Threads: any (reads file metadata only). */
int jp_profile_output_check(const char *path, const char *out_path, jp_error *err);
/* A number that changes when the files a profile path names change (one added, removed, replaced,
 * resized or written to), its run's host summaries included (a run of them alone is stamped, not
 * refused), for a cache of loaded profiles to notice (the viewer's). Reads only
 * directory entries and file metadata. Threads: any (reads directory entries and metadata only). */
int jp_profile_stamp(const char *path, uint64_t *out, jp_error *err);

/* Loads and analyses; opt may be NULL. On failure *out is NULL and err names the file.
 * Threads: distinct profiles on distinct threads; opt is only read and may be shared. */
int jp_profile_load(jp_profile **out, const char *path, const jp_load_options *opt, jp_error *err);
/* Same from one serialized XSpace (or its gzip) in memory, as one host called `name` (NULL: the
 * host the XSpace names, as JAX names its file, else "memory").
 * Threads: as jp_profile_load; data is only read. */
int jp_profile_parse(jp_profile **out, const void *data, size_t len, const char *name, const jp_load_options *opt,
                     jp_error *err);
/* Threads: the owner, once no thread uses the profile, its analysis or a diff of it. */
void jp_profile_free(jp_profile *p);
/* Host summaries (docs/design.md "Pods"; schema in docs/summary-schema.md): each host file of path
 * (a file, a run directory, or a log directory's newest run; opt->host keeps some) read alone and
 * its summary written beside it as <host>.jaxprof-summary.json, or to out_path when path holds one
 * file. on_written (may be NULL) hears each path written. A run read with
 * jp_load_options.use_summaries then reads these instead of the files. Threads: distinct outputs. */
int jp_summarize(const char *path, const char *out_path, const jp_load_options *opt, const jp_temp_hook *hook,
                 void (*on_written)(void *ctx, const char *written), void *ctx, jp_error *err);

/* The results, borrowed from the profile. Threads: any number at once. */
const jp_analysis *jp_profile_analysis(const jp_profile *p);

/* ---------------------------------------------------------------------------------------------
 * Outputs. One renderer per format over the same analysis; sections are the CLI commands.
 * ------------------------------------------------------------------------------------------- */

typedef enum jp_section {
    JP_SECTION_REPORT = 0, JP_SECTION_OPS, JP_SECTION_STEPS, JP_SECTION_SCOPES, JP_SECTION_KERNELS,
    JP_SECTION_MEMORY, JP_SECTION_TRANSFERS, JP_SECTION_COMPILES, JP_SECTION_FINDINGS, JP_SECTION_HOSTS,
    JP_SECTION_LINES, JP_SECTION_FLAME,
    JP_SECTION_LAUNCH,
    JP_SECTION_COMM,
    JP_SECTION_COUNT
} jp_section;
/* JP_FORMAT_SUMMARY: report's compact JSON for scripts and assistants (docs/json-schema.md). */
typedef enum jp_format { JP_FORMAT_TEXT = 0, JP_FORMAT_JSON, JP_FORMAT_CSV, JP_FORMAT_SUMMARY } jp_format;

/* Section by its command name ("ops"), or -1. Threads: any (static table). */
int jp_section_from_name(const char *name);
const char *jp_section_name(int section);

/* The section registry (src/render/sections.c): one row per jp_section value, in enum order, saying
 * what the section is called, what it shows and what it takes. jp_render enforces the flags; the
 * CLI's usage and help, the viewer's API and the tests read the rows. A new section is a value
 * before JP_SECTION_COUNT, its row there (naming its table: jp_render renders the table as text,
 * CSV and JSON), its analysis and its test. */
typedef enum jp_section_flag {
    JP_SECTION_IN_REPORT = 1u << 0,    /* its table is one of the JSON report's, in enum order */
    JP_SECTION_REPORT_ALL = 1u << 1,   /* ...and there every row, whatever the view (steps, findings) */
    JP_SECTION_WHOLE_RUN = 1u << 2,    /* covers the whole run: refuses an analysis of a step window */
    JP_SECTION_TAKES_MODULE = 1u << 3, /* jp_view.module applies (one module in detail) */
    JP_SECTION_TABLES = 1u << 4,       /* several tables: jp_view.columns does not apply */
    JP_SECTION_NO_CSV = 1u << 5,       /* has no CSV form */
    JP_SECTION_SPLIT_NOTE = 1u << 6,   /* its times are partly estimated: text and JSON say how much */
    JP_SECTION_SECOND_TABLE = 1u << 7, /* a second table after its own (jp_section_second_table): every
                                        * row in JSON, a capped part in text; jp_view.table picks it alone */
    JP_SECTION_SUMMARIES = 1u << 8,    /* a run's host summaries can answer it (jp_load_options.use_summaries) */
} jp_section_flag;

typedef struct jp_section_def {
    int id;                    /* its jp_section value (the row's index) */
    const char *name;          /* the command and the JSON "section" key: "ops" */
    const char *summary;       /* one line: what it shows */
    const char *help;          /* what it shows, in full (lines of at most 100 columns) */
    const char *whole_run_why; /* JP_SECTION_WHOLE_RUN: why it takes no step window; else NULL */
    unsigned flags;            /* jp_section_flag bits */
    int table;                 /* its table, which declares the columns and where the analysis keeps
                                * the rows: a library table id (src/render/columns.h), or -1 (the
                                * report, made of the other sections' tables) */
} jp_section_def;

/* The registry row of a section, or NULL when section is not one. Static storage: thread-safe. */
const jp_section_def *jp_section_get(int section);
/* The second table of a JP_SECTION_SECOND_TABLE section (a library table id), else -1. */
int jp_section_second_table(int section);

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
    const char *group;   /* ops: rows summed by "category", "module", "scope" or "source" (the
                          * filter picks the ops first; the key becomes the row's name); NULL = a
                          * row per op */
    const char *table;   /* a section with a second table (comm: "comm_instances", launch:
                          * "launch_streams"): that table alone, the view applying to it (text,
                          * CSV and JSON); NULL = the section as it is */
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
 * escaped instead (jp_json_fput_str), HTML entity-escaped.
 * Threads: distinct outputs on distinct threads. */
void jp_text_fput_safe(FILE *out, const char *s, size_t len, int keep_layout);

/* Writes one section in one format to out. Fails with JP_ERR_ARG for an unknown sort key or a bad
 * regex, JP_ERR_IO when writing fails.
 * Threads: any number at once on one analysis (it is only read), each to its own out. */
int jp_render(const jp_analysis *a, int section, int format, const jp_view *view, FILE *out,
              jp_error *err);

/* Flame graph exports (jp_flame_*) of jp_analysis.flame: one sample per leaf (an op under its
 * call stack) with its self time in nanoseconds, so both total the ops' self time. Folded stacks
 * are "frame;frame;op 1234" lines (flamegraph.pl, speedscope, inferno); the pprof profile is a
 * gzip'd perftools.profiles.Profile (pprof -http, speedscope). Files are written through a
 * temporary one (jp_temp_hook above); temp may be NULL.
 * Threads: as jp_render, each thread to its own out or out_path. */
int jp_flame_folded(const jp_analysis *a, FILE *out, jp_error *err);
int jp_flame_folded_write(const jp_analysis *a, const char *out_path, const jp_temp_hook *temp, jp_error *err);
int jp_flame_pprof_write(const jp_analysis *a, const char *out_path, const jp_temp_hook *temp, jp_error *err);

/* HTML report (jp_html_*): the report section as one self-contained page (inline CSS and SVG
 * charts, no script, nothing loaded from elsewhere): header, step summary with a per-step stacked
 * breakdown chart, overall breakdown, KPIs, top 20 ops (by self time) and scopes (by total time),
 * findings. Every string from the profile is HTML-escaped. Thread-safe for distinct outputs. */
int jp_html_report(const jp_analysis *a, FILE *out, jp_error *err);
/* Writes the page through a temporary file renamed to out_path (jp_temp_hook above; temp may be
 * NULL), so a failure never leaves a half file under the final name. JP_ERR_IO names the file.
 * Threads: as jp_render, each thread to its own out_path. */
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

typedef struct jp_diff jp_diff; /* opaque here; layout in jaxprof_results.h */

typedef struct jp_diff_options {
    double min_change_pct;   /* a row is slower/faster when |delta_pct| exceeds this; 0 means 5 */
    double min_share_pct;    /* ... and |delta_ps| is at least this % of the base mean step; 0 means 0.5 */
} jp_diff_options;

/* Compares two analyses; opt may be NULL.
 * Threads: any number at once, even over the same analyses (they are only read). */
int jp_diff_new(jp_diff **out, const jp_analysis *base, const jp_analysis *new_run, const jp_diff_options *opt,
                jp_error *err);
/* Threads: the owner, once no thread reads d. */
void jp_diff_free(jp_diff *d);

/* Writes the diff in one format (text, JSON with JP_JSON_SCHEMA_VERSION, CSV of the op rows);
 * view.top limits rows per table (0: text 15, JSON/CSV all), view.filter keeps rows whose names
 * match. Threads: any number at once on one diff (it is only read), each to its own out. */
int jp_diff_render(const jp_diff *d, int format, const jp_view *view, FILE *out, jp_error *err);

typedef struct jp_diff_gate {
    double max_step_slowdown_pct; /* trips when steps.change_pct exceeds it and is significant; < 0 off */
    double max_op_slowdown_pct;   /* trips when a slower row's delta_pct exceeds it, or an added op
                                   * takes at least min_share_pct of the step; < 0 off */
} jp_diff_gate;

/* Checks the gate: 0 when it holds, 1 when it trips. why (may be NULL) receives one paragraph
 * that says which limit tripped, by how much, and names the ops that got slower (past cap bytes
 * cut with "..." on a whole UTF-8 character; always NUL-terminated when cap > 0).
 * Threads: any number at once on one diff, each with its own why. */
int jp_diff_check(const jp_diff *d, const jp_diff_gate *gate, char *why, size_t cap);
/* A buffer for why that holds any explanation whole. */
#define JP_DIFF_WHY_MAX 4096
/* As jp_diff_render; with a gate (not NULL), the JSON document ends with "gate":{
 * "max_step_slowdown_pct"|null, "max_op_slowdown_pct"|null, "tripped", "explanation"} from
 * jp_diff_check. Text and CSV are unaffected. Threads: as jp_diff_render. */
int jp_diff_render_gated(const jp_diff *d, const jp_diff_gate *gate, int format, const jp_view *view, FILE *out,
                         jp_error *err);

/* The diff as one self-contained HTML page (like jp_html_report): step change, breakdown bars,
 * op and scope tables, findings. Written like jp_html_write.
 * Threads: as jp_diff_render, each thread to its own out_path. */
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
    uint64_t max_inflate;    /* as jp_load_options.max_inflate */
    jp_temp_hook temp;       /* told of the temporary output file (see Outputs, at jp_temp_hook); zero: nobody */
} jp_trace_options;

/* Options that keep everything: Chrome JSON, compression by the output name. Threads: any. */
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
 * "perfetto_trace.pftrace" (static string). Threads: any (static strings). */
const char *jp_trace_default_name(int format);
/* The default output for a profile path: jp_trace_default_name inside the run directory that
 * path resolves to. Fails with JP_ERR_NOT_FOUND when path holds no profile, JP_ERR_LIMIT when the
 * result does not fit in cap bytes. Threads: any, each with its own buf. */
int jp_trace_default_path(const char *path, int format, char *buf, size_t cap, jp_error *err);

/* ---- SQL over a profile (docs/sql.md) ---------------------------------------------------------
 * A profile as an SQLite database: every analysis table with --json's columns and values, and
 * every event with its stats. jp_sql_export writes it to a file; jp_sql_open queries it in memory,
 * or opens a database file an export wrote (read-only). */
typedef struct jp_sql jp_sql;

/* path: a profile (as jp_profile_load, opt applying) or an SQLite database file. A profile's
 * analysis tables are loaded at once, its events when a query first names one of their tables.
 * Threads: one jp_sql per thread. */
int jp_sql_open(jp_sql **out, const char *path, const jp_load_options *opt, jp_error *err);
/* Runs every statement of sql, writing each result set to out as an aligned table (a text column at
 * most `width` characters wide, 21 to 60; otherwise 60), CSV or JSON (an array of row objects per
 * statement). A statement SQLite refuses is JP_ERR_ARG with its message. */
int jp_sql_run(jp_sql *q, const char *sql, int format, int width, FILE *out, jp_error *err);
void jp_sql_close(jp_sql *q);
/* Writes the profile's whole database (analysis and events) to out_path through a temporary file
 * renamed into place (see Outputs, at jp_temp_hook; temp may be NULL). */
int jp_sql_export(const char *path, const char *out_path, const jp_load_options *opt, const jp_temp_hook *temp,
                  jp_error *err);
/* 1 when path is an SQLite database file (by its header), else 0. */
int jp_sql_is_database(const char *path);
/* 1 when sql ends a statement (a semicolon outside strings and comments): an interactive prompt
 * runs what was typed then. */
int jp_sql_complete(const char *sql);

#ifdef __cplusplus
}
#endif
#endif /* JAXPROF_H */
