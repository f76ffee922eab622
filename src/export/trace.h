/* trace.h - what the trace exporter hands its two writers (Chrome JSON, Perfetto protobuf): an
 * output buffer, processes, threads and one thread's events in nesting order (internal). */
#ifndef JP_OUTPUTS_TRACE_H
#define JP_OUTPUTS_TRACE_H

#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "base/vec.h"
#include "jaxprof/jaxprof_xspace.h"

/* Buffered output to a plain or gzip file; a failed write sticks in `failed`. */
typedef struct jp_trace_sink {
    uint8_t *buf;      /* pending bytes */
    size_t n, cap;     /* bytes pending, buffer size */
    FILE *file;        /* plain output, or NULL */
    gzFile gz;         /* gzip output, or NULL */
    uint64_t written;  /* bytes handed to the file (before compression) */
    int failed;        /* 1 after a write error */
} jp_trace_sink;

/* Hands pending bytes to the file. Returns 0, or -1 once a write failed. */
int jp_trace_sink_flush(jp_trace_sink *s);

/* Makes room for `need` more bytes; returns where to write them, or NULL after a failure. */
static inline uint8_t *jp_trace_sink_reserve(jp_trace_sink *s, size_t need) {
    if (s->n + need > s->cap && jp_trace_sink_flush(s) != 0) return NULL;
    return need <= s->cap ? s->buf + s->n : NULL;
}

static inline void jp_trace_put(jp_trace_sink *s, const void *p, size_t len) {
    while (len > 0 && !s->failed) {
        size_t room = s->cap - s->n;
        if (room == 0) {
            if (jp_trace_sink_flush(s) != 0) return;
            room = s->cap;
        }
        size_t k = len < room ? len : room;
        memcpy(s->buf + s->n, p, k);
        s->n += k;
        p = (const uint8_t *)p + k;
        len -= k;
    }
}

static inline void jp_trace_puts(jp_trace_sink *s, const char *text) { jp_trace_put(s, text, strlen(text)); }

/* One argument of an event: a stat with its name resolved and its string value readable. */
typedef struct jp_trace_arg {
    jp_str name;
    int kind;      /* JP_STAT_INT, UINT, DOUBLE, STR or BYTES (written as "<N bytes>") */
    union {
        int64_t i;
        uint64_t u;
        double d;
        jp_str s;
    } v;
} jp_trace_arg;

/* One slice or instant, ready to write. Times are nanoseconds since the trace's start. */
typedef struct jp_trace_event {
    jp_str name;                /* like every jp_str here, valid for the whole export, so writers
                                 * may intern names by address */
    int64_t ts_ns, dur_ns;
    int instant;                /* 1: no duration */
    uint64_t flow_out, flow_in; /* flow started here / ending here, 0 for none */
    const jp_trace_arg *args;
    size_t n_args;
} jp_trace_event;

/* A writer: the format's callbacks, called in this order: begin, then for each process its
 * process() and for each of its threads thread(), that thread's events sorted by start (parents
 * before children) and thread_end(); finally end(). Threads never interleave. */
typedef struct jp_trace_writer jp_trace_writer;
struct jp_trace_writer {
    jp_trace_sink *sink;
    void *state; /* the format's own */
    void (*begin)(jp_trace_writer *w);
    void (*process)(jp_trace_writer *w, uint32_t pid, jp_str name, uint32_t sort_index);
    void (*thread)(jp_trace_writer *w, uint32_t pid, uint32_t tid, jp_str name, uint32_t sort_index);
    int (*event)(jp_trace_writer *w, const jp_trace_event *ev); /* 0 or JP_ERR_NOMEM */
    void (*thread_end)(jp_trace_writer *w);
    void (*end)(jp_trace_writer *w, const jp_trace_stats *stats, const char *source);
    void (*free)(jp_trace_writer *w);
};

/* Set up a writer over a sink; 0 or JP_ERR_NOMEM. */
int jp_trace_chrome_init(jp_trace_writer *w, jp_trace_sink *sink);
int jp_trace_perfetto_init(jp_trace_writer *w, jp_trace_sink *sink);

#endif
