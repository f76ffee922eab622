/* layout.h - how the trace exporter and the viewer's timeline place events: trace time, plane
 * order, the rows of each plane (its lines and the derived Steps, XLA Modules and XLA Ops rows,
 * built once in layout_rows.c) and each row laid out on strictly nesting lanes (internal, shared
 * by export/trace.c and timeline/timeline.c so an exported trace and the viewer show the same
 * threads). */
#ifndef JP_TIMELINE_LAYOUT_H
#define JP_TIMELINE_LAYOUT_H

#include "base/vec.h"
#include "jaxprof/jaxprof_results.h"
#include "jaxprof/jaxprof_xspace.h"

/* One event of a line while it is laid out. */
typedef struct jp_layout_item {
    int64_t start_ns, end_ns; /* trace time */
    uint32_t index;           /* into the line's events (or the caller's records) */
    uint32_t tag;             /* the caller's, e.g. a name index */
    uint32_t lane;            /* set by jp_layout_lanes: 0 the line's own thread, k its k-th overlap thread */
    uint32_t depth;           /* set by jp_layout_lanes: slices open around it on its lane */
    uint8_t instant;          /* 1: no duration */
} jp_layout_item;

/* An event's profile time (ps) and duration, checked like the model checks them: a time out of
 * range is JP_ERR_CORRUPT naming the event's byte offset. */
int jp_layout_event_span(jp_xspace *xs, const jp_line *ln, const jp_event *ev, int64_t *start_ps, int64_t *dur_ps,
                         jp_error *err);

/* The profile time of trace time 0: the profile's own origin (XLA normalises to the capture's
 * start, the origin jaxprof report uses), or the first event for a profile on an absolute clock
 * (first event over a day from 0), which keeps nanosecond digits exact in JSON doubles. */
int jp_layout_origin(jp_xspace *const *xs, size_t n, const int64_t *shift_ps, jp_error *err, int64_t *base_ps);

/* Multi-host: how far each host's events move to sit on the shared time axis of the analysis
 * (jp_host_stat.offset_ps), for xs[0..n) in the order given; all 0 for one host. Analyses the
 * XSpaces only when there are several. *shift_ps is allocated in arena. */
int jp_layout_host_shifts(jp_xspace *const *xs, const char *const *files, size_t n, const jp_analysis *a,
                          jp_arena *arena, int64_t **shift_ps, jp_error *err);

/* Nanoseconds of trace time, rounded down: monotonic, so nesting survives the rounding. */
static inline int64_t jp_layout_ns(int64_t base_ps, int64_t ps) {
    int64_t rel = ps - base_ps;
    return rel >= 0 ? rel / 1000 : -((-rel + 999) / 1000);
}

/* 0 for devices (first, as XProf orders them), 1 for the host's CPU, 2 for the rest. */
int jp_layout_plane_rank(const jp_plane *pl);
/* 1 when the plane has a line called name ("Steps": then no derived Steps row is added). */
int jp_layout_plane_has_line(const jp_plane *pl, const char *name);
/* 1 for a GPU plane that gets XLA Modules / XLA Ops rows derived from its kernels: one whose
 * writer saved no derived rows of its own (TensorFlow's Steps, TensorFlow Ops, ...). */
int jp_layout_plane_gets_gpu_rows(const jp_plane *pl);

/* ---- GPU rows: XLA Ops and XLA Modules from the kernels a GPU ran ------------------------------ */

/* A GPU kernel with its HLO attribution, or a run of such kernels merged. */
typedef struct jp_layout_kernel {
    int64_t start_ps, end_ps, run_id; /* on the shared time axis (shift added); the execution */
    jp_str module, op;                /* hlo_module, hlo_op */
    int64_t kernels;                  /* 1 for a kernel; a merged run: how many it holds */
} jp_layout_kernel;

/* The kernels (and memsets) of a GPU plane that name their HLO op, moved by shift_ps, in start
 * order, into *out: the occurrences the ops table counts for that device (decode/xnames.h), so
 * the runs merged from them hold, per op, the table's count and time. */
int jp_layout_gpu_kernels(jp_xspace *xs, const jp_plane *pl, int64_t shift_ps, jp_vec *out, jp_error *err);
/* Merges consecutive kernels of one op (by_op) or of one module and execution into runs, as
 * XProf's XLA Ops and XLA Modules rows show them; *runs is cleared first. */
int jp_layout_merge_kernels(const jp_layout_kernel *k, size_t n, int by_op, jp_vec *runs, jp_error *err);

/* Sorts items by start (longest first) and lays them out: viewers need the slices of one thread to
 * nest strictly, so an item goes to the first lane whose innermost open slice contains it, after
 * closing the slices that ended; one no lane can hold opens a new lane (an extra thread). Instants
 * nest anywhere: lane 0. `lanes` is the caller's scratch (a jp_vec of jp_vec), reused across calls.
 * Returns the number of lanes (>= 1), or 0 when out of memory. */
uint32_t jp_layout_lanes(jp_vec *lanes, jp_layout_item *items, size_t n);
void jp_layout_lanes_free(jp_vec *lanes);

/* Opens the host files path names (as jp_profile_load) whose host name contains `host` (all for
 * NULL or ""), each inflating to at most max_inflate (jp_load_options; 0: the defaults): appends
 * each jp_xspace * to xs, its file path and host name (copied into a) to files and hosts. On
 * failure the XSpaces already in xs stay there for the caller to close. */
int jp_layout_open_hosts(const char *path, const char *host, uint64_t max_inflate, jp_arena *a, jp_vec *xs,
                         jp_vec *files, jp_vec *hosts, jp_error *err);

/* ---- rows: what becomes a thread, in the order both outputs lay them out (layout_rows.c) -------- */

/* What a row's events come from. */
typedef enum jp_layout_row_kind {
    JP_LAYOUT_ROW_LINE = 0,   /* a line of the xplane */
    JP_LAYOUT_ROW_STEPS,      /* derived: the analysis' steps */
    JP_LAYOUT_ROW_XLA_OPS,    /* derived: a GPU's kernels merged per consecutive HLO op */
    JP_LAYOUT_ROW_XLA_MODULES, /* derived: the same merged per module execution */
    /* the viewer's timeline only (timeline.c), never jp_layout_walk nor the exporter: */
    JP_LAYOUT_ROW_COMM_EXPOSED, /* a device's exposed communication (jp_analysis.comm_exposed) */
    JP_LAYOUT_ROW_LAUNCH_DELAY  /* a device's launches: each call's start to its work's start */
} jp_layout_row_kind;

/* One event of a derived row. */
typedef struct jp_layout_record {
    int64_t start_ps, end_ps; /* on the shared time axis (profile time plus the host's shift) */
    jp_str name;              /* "step 3" (a copy in the walk's arena, one per row), the op or the module */
    jp_str module;            /* XLA Ops: the op's module */
    int64_t run_id;           /* XLA Modules: the execution */
    int64_t kernels;          /* XLA rows: kernels merged into it; Launch delay: launches merged (0: one, alone) */
    const jp_step *step;      /* Steps: the analysis' step */
    jp_str call;              /* Launch delay: the launch call (name is its device work's) */
} jp_layout_record;

/* One row of a plane: a line, or a derived row's records. */
typedef struct jp_layout_row {
    jp_xspace *xs;                /* its xplane */
    const jp_plane *plane;        /* its plane */
    uint32_t host;                /* index of its xplane */
    int kind;                     /* jp_layout_row_kind */
    jp_str name;                  /* the thread name */
    const jp_line *line;          /* JP_LAYOUT_ROW_LINE: the line, else NULL */
    const jp_layout_record *recs; /* a derived row's records, valid during the call only */
    size_t n_recs;                /* how many */
} jp_layout_row;

/* What jp_layout_walk calls; a nonzero return stops the walk and is returned. */
typedef struct jp_layout_walker {
    int (*plane)(void *ctx, jp_xspace *xs, const jp_plane *pl, uint32_t host); /* before its rows */
    int (*row)(void *ctx, const jp_layout_row *r);                             /* each row in order */
    void *ctx;                                                                 /* handed to both */
} jp_layout_walker;

/* Walks the planes of xs[0..n) host by host, devices first (jp_layout_plane_rank), and each plane's
 * rows in order: a Steps row (one record per step of a, named "step N": the host's own steps when
 * there are several hosts) on the devices, or on /host:CPU when no host has a device, unless the
 * plane has a Steps line of its own or a has no steps; XLA Modules and XLA Ops rows on a GPU
 * plane that gets them (jp_layout_plane_gets_gpu_rows), from its kernels moved by shift_ps[host];
 * then its lines, named by display name, name or "(unnamed line)". Step names are copied into
 * arena; the records live until the row's call returns. */
int jp_layout_walk(jp_xspace *const *xs, size_t n, const int64_t *shift_ps, const jp_analysis *a, jp_arena *arena,
                   const jp_layout_walker *w, jp_error *err);

/* ---- flows: the events an arrow links ---------------------------------------------------------- */

/* Where a flow id comes from; with the host it keeps ids of different sources apart. */
enum { JP_LAYOUT_FLOW_CORRELATION = 1, JP_LAYOUT_FLOW_PRODUCER = 2 };

/* The stat metadata ids that mark flow ends on one plane, UINT64_MAX where the plane has none. */
typedef struct jp_layout_flow_stats {
    uint64_t correlation; /* "correlation_id": a CUDA launch on the host starts, its kernel or copy ends */
    uint64_t producer;    /* "_p": an XLA:CPU async op starts a flow */
    uint64_t consumer;    /* "_c": its "end:" event ends it */
    int is_device;        /* 1 on a /device: plane, where correlation ids end flows */
} jp_layout_flow_stats;

/* Resolves the flow stats of a plane; returns 1 when the plane may hold flow ends, 0 when not. */
int jp_layout_flow_stats_of(const jp_plane *pl, jp_layout_flow_stats *fs);

/* Which end of a flow a stat marks: 1 its start, 0 its end, -1 not a flow stat; *source its
 * namespace (JP_LAYOUT_FLOW_*). The flow's id is jp_stat_int(st). */
int jp_layout_flow_end(const jp_layout_flow_stats *fs, const jp_stat *st, int *source);

/* Called for each flow end of an event; a nonzero return stops the walk and is returned. */
typedef int (*jp_layout_flow_fn)(void *ctx, int source, int is_start, int64_t id);

/* Calls fn for each flow end an event carries, its metadata's stats first, then its own. A flow
 * links the events whose ends share (source, host, id); one is drawn only when both ends exist. */
int jp_layout_event_flows(jp_xspace *xs, const jp_plane *pl, const jp_layout_flow_stats *fs, const jp_event *ev,
                          jp_layout_flow_fn fn, void *ctx, jp_error *err);

#endif
