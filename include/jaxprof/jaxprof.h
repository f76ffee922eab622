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

#ifdef __cplusplus
}
#endif
#endif /* JAXPROF_H */
