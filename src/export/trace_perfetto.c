/* trace_perfetto.c - the Perfetto protobuf writer: a perfetto.protos.Trace of TracePackets holding
 * process/thread TrackDescriptors and TrackEvents (BEGIN/END pairs, instants, flows), with event
 * and argument names interned on one packet sequence. Field numbers follow Perfetto's
 * trace_packet.proto, track_event.proto, track_descriptor.proto, debug_annotation.proto and
 * interned_data.proto. */
#include <stdio.h>
#include <stdlib.h>

#include "base/map.h"
#include "export/pbwrite.h"
#include "export/trace.h"

/* Field numbers. */
enum {
    TRACE_PACKET = 1,
    PKT_TIMESTAMP = 8, PKT_SEQUENCE_ID = 10, PKT_TRACK_EVENT = 11, PKT_INTERNED = 12, PKT_FLAGS = 13,
    PKT_TRACK_DESCRIPTOR = 60,
    TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5,
    PD_PID = 1, PD_NAME = 6,
    THD_PID = 1, THD_TID = 2, THD_NAME = 5,
    TE_ANNOTATIONS = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK = 11, TE_NAME = 23, TE_FLOWS = 47,
    TE_TERMINATING_FLOWS = 48,
    DA_NAME_IID = 1, DA_INT = 4, DA_UINT = 3, DA_DOUBLE = 5, DA_STRING = 6, DA_NAME = 10,
    ID_EVENT_NAMES = 2, ID_ANNOTATION_NAMES = 3, IN_IID = 1, IN_NAME = 2,
};
enum { SLICE_BEGIN = 1, SLICE_END = 2, INSTANT = 3 };
enum { SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2, SEQUENCE_ID = 1 };

typedef struct perfetto {
    jp_pbw pkt;
    jp_map names;        /* event name key -> iid */
    jp_map arg_names;    /* argument name key -> iid */
    uint32_t next_iid;
    int started;         /* the first packet (which clears incremental state) was written */
    uint64_t track;      /* uuid of the thread being written */
    jp_vec open_ends;    /* int64_t end times of the open slices on that thread, innermost last */
} perfetto;

/* Starts a TracePacket on our sequence; the very first one clears the incremental state. */
static void packet_open(perfetto *pf, int64_t ts, int has_ts) {
    jp_pbw *b = &pf->pkt;
    b->n = 0;
    b->depth = 0;
    if (has_ts) jp_pbw_uint(b, PKT_TIMESTAMP, (uint64_t)ts);
    jp_pbw_uint(b, PKT_SEQUENCE_ID, SEQUENCE_ID);
    jp_pbw_uint(b, PKT_FLAGS, pf->started ? SEQ_NEEDS_STATE : SEQ_CLEARED | SEQ_NEEDS_STATE);
    pf->started = 1;
}

/* Writes the packet as one `packet` field of the Trace message. */
static int packet_flush(jp_trace_writer *w) {
    perfetto *pf = w->state;
    jp_pbw *b = &pf->pkt;
    if (b->failed) return JP_ERR_NOMEM;
    uint8_t head[11];
    size_t n = 0;
    head[n++] = TRACE_PACKET << 3 | 2;
    for (size_t v = b->n; ; v >>= 7) {
        head[n++] = (uint8_t)(v >= 0x80 ? (v & 0x7f) | 0x80 : v);
        if (v < 0x80) break;
    }
    jp_trace_put(w->sink, head, n);
    jp_trace_put(w->sink, b->p, b->n);
    return JP_OK;
}

/* Thread tracks are numbered by their tid (unique in the trace, written on every event, so kept
 * small); process tracks live above 2^32, out of the tids' way. */
static uint64_t thread_uuid(uint32_t tid) { return tid; }
static uint64_t process_uuid(uint32_t pid) { return (uint64_t)1 << 32 | pid; }

static void begin(jp_trace_writer *w) { (void)w; }

static void process(jp_trace_writer *w, uint32_t pid, jp_str name, uint32_t sort_index) {
    (void)sort_index; /* the pid order is the sort order */
    perfetto *pf = w->state;
    jp_pbw *b = &pf->pkt;
    packet_open(pf, 0, 0);
    jp_pbw_open(b, PKT_TRACK_DESCRIPTOR);
    jp_pbw_uint(b, TD_UUID, process_uuid(pid));
    jp_pbw_open(b, TD_PROCESS);
    jp_pbw_uint(b, PD_PID, pid);
    jp_pbw_bytes(b, PD_NAME, name.ptr, name.len);
    jp_pbw_close(b);
    jp_pbw_close(b);
    packet_flush(w);
}

static void thread(jp_trace_writer *w, uint32_t pid, uint32_t tid, jp_str name, uint32_t sort_index) {
    (void)sort_index;
    perfetto *pf = w->state;
    jp_pbw *b = &pf->pkt;
    pf->track = thread_uuid(tid);
    pf->open_ends.n = 0;
    packet_open(pf, 0, 0);
    jp_pbw_open(b, PKT_TRACK_DESCRIPTOR);
    jp_pbw_uint(b, TD_UUID, pf->track);
    jp_pbw_uint(b, TD_PARENT, process_uuid(pid));
    jp_pbw_open(b, TD_THREAD);
    jp_pbw_uint(b, THD_PID, pid);
    jp_pbw_uint(b, THD_TID, tid);
    jp_pbw_bytes(b, THD_NAME, name.ptr, name.len);
    jp_pbw_close(b);
    jp_pbw_close(b);
    packet_flush(w);
}

/* The iid of a name, interned by address (every name outlives the export): *fresh tells that it
 * must be added to the packet's InternedData. 0 (write it inline) for empty names or no memory. */
static uint32_t intern(perfetto *pf, jp_map *m, jp_str name, int *fresh) {
    if (!name.ptr || !name.len) return 0;
    int found;
    uint32_t iid = jp_map_get_or_put(m, jp_ptr_key(name.ptr), name.len, 0, pf->next_iid, &found);
    if (iid == UINT32_MAX) return 0;
    if (!found) pf->next_iid++;
    *fresh = !found;
    return iid;
}

static void end_slice(jp_trace_writer *w, int64_t ts) {
    perfetto *pf = w->state;
    packet_open(pf, ts, 1);
    jp_pbw_open(&pf->pkt, PKT_TRACK_EVENT);
    jp_pbw_uint(&pf->pkt, TE_TYPE, SLICE_END);
    jp_pbw_uint(&pf->pkt, TE_TRACK, pf->track);
    jp_pbw_close(&pf->pkt);
    packet_flush(w);
}

/* Closes the open slices that end at or before t, innermost first. */
static void close_until(jp_trace_writer *w, int64_t t) {
    perfetto *pf = w->state;
    while (pf->open_ends.n > 0) {
        int64_t end = JP_VEC_AT(&pf->open_ends, int64_t, pf->open_ends.n - 1);
        if (end > t) break;
        pf->open_ends.n--;
        end_slice(w, end);
    }
}

static void put_annotation(perfetto *pf, const jp_trace_arg *a, uint32_t name_iid) {
    jp_pbw *b = &pf->pkt;
    jp_pbw_open(b, TE_ANNOTATIONS);
    if (name_iid) jp_pbw_uint(b, DA_NAME_IID, name_iid);
    else jp_pbw_bytes(b, DA_NAME, a->name.ptr, a->name.len);
    switch (a->kind) {
    case JP_STAT_INT: jp_pbw_uint(b, DA_INT, (uint64_t)a->v.i); break;
    case JP_STAT_UINT: jp_pbw_uint(b, DA_UINT, a->v.u); break;
    case JP_STAT_DOUBLE: {
        uint64_t bits;
        memcpy(&bits, &a->v.d, sizeof bits);
        jp_pbw_fixed64(b, DA_DOUBLE, bits);
        break;
    }
    case JP_STAT_STR: jp_pbw_bytes(b, DA_STRING, a->v.s.ptr, a->v.s.len); break;
    default: {
        char text[40];
        int n = snprintf(text, sizeof text, "<%zu bytes>", a->v.s.len);
        jp_pbw_bytes(b, DA_STRING, text, (size_t)n);
        break;
    }
    }
    jp_pbw_close(b);
}

/* InternedData for the names this event uses for the first time; fills the iids (0: inline). */
static void put_interned(perfetto *pf, const jp_trace_event *ev, uint32_t *name_iid, uint32_t *arg_iids) {
    jp_pbw *b = &pf->pkt;
    int opened = 0, fresh = 0;
    *name_iid = intern(pf, &pf->names, ev->name, &fresh);
    if (*name_iid && fresh) {
        jp_pbw_open(b, PKT_INTERNED), opened = 1;
        jp_pbw_open(b, ID_EVENT_NAMES);
        jp_pbw_uint(b, IN_IID, *name_iid);
        jp_pbw_bytes(b, IN_NAME, ev->name.ptr, ev->name.len);
        jp_pbw_close(b);
    }
    for (size_t i = 0; i < ev->n_args; i++) {
        fresh = 0;
        arg_iids[i] = intern(pf, &pf->arg_names, ev->args[i].name, &fresh);
        if (!arg_iids[i] || !fresh) continue;
        if (!opened) jp_pbw_open(b, PKT_INTERNED), opened = 1;
        jp_pbw_open(b, ID_ANNOTATION_NAMES);
        jp_pbw_uint(b, IN_IID, arg_iids[i]);
        jp_pbw_bytes(b, IN_NAME, ev->args[i].name.ptr, ev->args[i].name.len);
        jp_pbw_close(b);
    }
    if (opened) jp_pbw_close(b);
}

static int event(jp_trace_writer *w, const jp_trace_event *ev) {
    perfetto *pf = w->state;
    jp_pbw *b = &pf->pkt;
    close_until(w, ev->ts_ns);
    uint32_t stack_iids[32], *arg_iids = stack_iids;
    if (ev->n_args > 32 && !(arg_iids = malloc(ev->n_args * sizeof *arg_iids))) return JP_ERR_NOMEM;
    uint32_t name_iid;
    packet_open(pf, ev->ts_ns, 1);
    put_interned(pf, ev, &name_iid, arg_iids);
    jp_pbw_open(b, PKT_TRACK_EVENT);
    jp_pbw_uint(b, TE_TYPE, ev->instant ? INSTANT : SLICE_BEGIN);
    jp_pbw_uint(b, TE_TRACK, pf->track);
    if (name_iid) jp_pbw_uint(b, TE_NAME_IID, name_iid);
    else jp_pbw_bytes(b, TE_NAME, ev->name.ptr, ev->name.len);
    for (size_t i = 0; i < ev->n_args; i++) put_annotation(pf, &ev->args[i], arg_iids[i]);
    if (ev->flow_out) jp_pbw_fixed64(b, TE_FLOWS, ev->flow_out);
    if (ev->flow_in) jp_pbw_fixed64(b, TE_TERMINATING_FLOWS, ev->flow_in);
    jp_pbw_close(b);
    if (arg_iids != stack_iids) free(arg_iids);
    int rc = packet_flush(w);
    if (rc == JP_OK && !ev->instant) {
        int64_t *slot = jp_vec_push(&pf->open_ends, sizeof(int64_t));
        if (!slot) return JP_ERR_NOMEM;
        *slot = ev->ts_ns + ev->dur_ns;
    }
    return rc;
}

static void thread_end(jp_trace_writer *w) { close_until(w, INT64_MAX); }

static void end(jp_trace_writer *w, const jp_trace_stats *stats, const char *source) {
    (void)w, (void)stats, (void)source;
}

static void release(jp_trace_writer *w) {
    perfetto *pf = w->state;
    if (!pf) return;
    free(pf->pkt.p);
    jp_map_deinit(&pf->names);
    jp_map_deinit(&pf->arg_names);
    jp_vec_free(&pf->open_ends);
    free(pf);
    w->state = NULL;
}

int jp_trace_perfetto_init(jp_trace_writer *w, jp_trace_sink *sink) {
    *w = (jp_trace_writer){.sink = sink, .begin = begin, .process = process, .thread = thread, .event = event,
                           .thread_end = thread_end, .end = end, .free = release};
    perfetto *pf = calloc(1, sizeof *pf);
    if (!pf) return JP_ERR_NOMEM;
    pf->next_iid = 1;
    w->state = pf;
    return JP_OK;
}
