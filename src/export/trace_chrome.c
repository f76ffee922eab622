/* trace_chrome.c - the Chrome trace event JSON writer: one event per line, "X" slices, "i"
 * instants, "M" names and sort order, "s"/"f" flow arrows; streamed, no document tree. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/json.h"
#include "export/trace.h"

typedef struct chrome {
    uint32_t pid, tid; /* the thread being written */
    int any;           /* 1 once an element of traceEvents was written (comma before the next) */
} chrome;

/* Escaped straight into the sink's buffer. A trace has a name per event, most of them plain ASCII:
 * those are copied here without a call (a 1M-event export was 1.5% slower with one). */
static void put_json_str(jp_trace_sink *s, const char *p, size_t len) {
    size_t pos = jp_json_plain_len(p, len);
    jp_trace_put(s, "\"", 1);
    jp_trace_put(s, p, pos);
    while (pos < len) {
        if (!jp_trace_sink_reserve(s, JP_JSON_UNIT_MAX)) return; /* the write failed: s->failed says so */
        s->n += jp_json_escape((char *)s->buf + s->n, s->cap - s->n, p, len, &pos);
    }
    jp_trace_put(s, "\"", 1);
}

static void putf(jp_trace_sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(jp_trace_sink *s, const char *fmt, ...) {
    char buf[128];
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    if (n > 0 && (size_t)n < sizeof buf) {
        jp_trace_put(s, buf, (size_t)n);
    } else if (n > 0) { /* never cut JSON: a longer piece is formatted again on the heap */
        char *big = malloc((size_t)n + 1);
        if (big && vsnprintf(big, (size_t)n + 1, fmt, again) == n) jp_trace_put(s, big, (size_t)n);
        else s->failed = 1;
        free(big);
    }
    va_end(again);
    va_end(ap);
}

/* Microseconds with nanosecond digits, exact (no floating point on the way). The magnitude is
 * taken unsigned: -INT64_MIN does not exist. */
static void put_us(jp_trace_sink *s, int64_t ns) {
    uint64_t mag = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
    if (ns < 0) jp_trace_put(s, "-", 1);
    putf(s, "%" PRIu64 ".%03" PRIu64, mag / 1000, mag % 1000);
}

static void element(jp_trace_writer *w) {
    chrome *c = w->state;
    jp_trace_puts(w->sink, c->any ? ",\n" : "\n");
    c->any = 1;
}

static void begin(jp_trace_writer *w) { jp_trace_puts(w->sink, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":["); }

static void metadata(jp_trace_writer *w, const char *what, uint32_t pid, const uint32_t *tid, jp_str name,
                     uint32_t sort_index) {
    char sort_what[32];
    snprintf(sort_what, sizeof sort_what, "%s_sort_index", what);
    for (int pass = 0; pass < 2; pass++) {
        element(w);
        putf(w->sink, "{\"ph\":\"M\",\"pid\":%" PRIu32, pid);
        if (tid) putf(w->sink, ",\"tid\":%" PRIu32, *tid);
        if (pass == 0) {
            putf(w->sink, ",\"name\":\"%s_name\",\"args\":{\"name\":", what);
            put_json_str(w->sink, name.ptr, name.len);
            jp_trace_puts(w->sink, "}}");
        } else {
            putf(w->sink, ",\"name\":\"%s\",\"args\":{\"sort_index\":%" PRIu32 "}}", sort_what, sort_index);
        }
    }
}

static void process(jp_trace_writer *w, uint32_t pid, jp_str name, uint32_t sort_index) {
    metadata(w, "process", pid, NULL, name, sort_index);
}

static void thread(jp_trace_writer *w, uint32_t pid, uint32_t tid, jp_str name, uint32_t sort_index) {
    chrome *c = w->state;
    c->pid = pid;
    c->tid = tid;
    metadata(w, "thread", pid, &tid, name, sort_index);
}

static void put_arg_value(jp_trace_sink *s, const jp_trace_arg *a) {
    switch (a->kind) {
    case JP_STAT_INT: putf(s, "%" PRId64, a->v.i); break;
    case JP_STAT_UINT: putf(s, "%" PRIu64, a->v.u); break;
    case JP_STAT_DOUBLE:
        if (isfinite(a->v.d)) putf(s, "%.17g", a->v.d);
        else jp_trace_puts(s, isnan(a->v.d) ? "\"NaN\"" : a->v.d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        break;
    case JP_STAT_STR: put_json_str(s, a->v.s.ptr, a->v.s.len); break;
    default: putf(s, "\"<%zu bytes>\"", a->v.s.len); break;
    }
}

static void put_flow(jp_trace_writer *w, const char *ph, uint64_t id, int64_t ts_ns) {
    chrome *c = w->state;
    element(w);
    putf(w->sink, "{\"ph\":\"%s\",\"cat\":\"flow\",\"name\":\"flow\",\"id\":%" PRIu64 ",\"pid\":%" PRIu32
                  ",\"tid\":%" PRIu32 ",\"ts\":", ph, id, c->pid, c->tid);
    put_us(w->sink, ts_ns);
    jp_trace_puts(w->sink, ph[0] == 'f' ? ",\"bp\":\"e\"}" : "}");
}

static int event(jp_trace_writer *w, const jp_trace_event *ev) {
    chrome *c = w->state;
    jp_trace_sink *s = w->sink;
    element(w);
    putf(s, "{\"ph\":\"%s\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":", ev->instant ? "i" : "X", c->pid, c->tid);
    put_us(s, ev->ts_ns);
    if (ev->instant) {
        jp_trace_puts(s, ",\"s\":\"t\"");
    } else {
        jp_trace_puts(s, ",\"dur\":");
        put_us(s, ev->dur_ns);
    }
    jp_trace_puts(s, ",\"name\":");
    put_json_str(s, ev->name.ptr, ev->name.len);
    if (ev->n_args) {
        jp_trace_puts(s, ",\"args\":{");
        for (size_t i = 0; i < ev->n_args; i++) {
            if (i) jp_trace_put(s, ",", 1);
            put_json_str(s, ev->args[i].name.ptr, ev->args[i].name.len);
            jp_trace_put(s, ":", 1);
            put_arg_value(s, &ev->args[i]);
        }
        jp_trace_put(s, "}", 1);
    }
    jp_trace_put(s, "}", 1);
    /* A v1 flow binds to the slice enclosing its timestamp on its thread: this event's start. */
    if (ev->flow_out) put_flow(w, "s", ev->flow_out, ev->ts_ns);
    if (ev->flow_in) put_flow(w, "f", ev->flow_in, ev->ts_ns);
    return JP_OK;
}

static void thread_end(jp_trace_writer *w) { (void)w; }

static void end(jp_trace_writer *w, const jp_trace_stats *st, const char *source) {
    jp_trace_sink *s = w->sink;
    jp_trace_puts(s, "\n],\"otherData\":{\"generator\":\"jaxprof " JP_VERSION "\",\"source\":");
    put_json_str(s, source, strlen(source));
    putf(s, ",\"events_in\":%" PRIu64 ",\"events_out\":%" PRIu64 ",\"events_cut\":%" PRIu64, st->events_in,
         st->events_out, st->events_cut);
    putf(s, ",\"derived\":%" PRIu64 ",\"flows\":%" PRIu64 ",\"overlap_tracks\":%" PRIu64 "}}\n", st->derived,
         st->flows, st->overlap_tracks);
}

static void release(jp_trace_writer *w) {
    free(w->state);
    w->state = NULL;
}

int jp_trace_chrome_init(jp_trace_writer *w, jp_trace_sink *sink) {
    *w = (jp_trace_writer){.sink = sink, .begin = begin, .process = process, .thread = thread, .event = event,
                           .thread_end = thread_end, .end = end, .free = release};
    w->state = calloc(1, sizeof(chrome));
    return w->state ? JP_OK : JP_ERR_NOMEM;
}
