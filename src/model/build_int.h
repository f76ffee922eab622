/* build_int.h - what the model builder's files share (internal to src/model): the context of the
 * plane being read and the helpers that add records. build.c reads planes in order and hands each
 * to metadata.c, host.c or devices.c; records.c adds ops, spans and transfers; nesting.c orders and
 * nests once every host is in; host_views.c narrows a finished model to one host. */
#ifndef JP_MODEL_BUILD_INT_H
#define JP_MODEL_BUILD_INT_H

#include "model/model.h"
#include "model/stream.h"

/* The plane being read, with its per-plane caches. */
/* Events nest at most this deep on one line (nesting.c keeps a stack of this size). */
enum { JP_NEST_MAX_DEPTH = 256 };

/* The nesting of one line's records (ops, or host events) as they are read, so that an event
 * nested too deep is reported with its byte offset while the XSpace is still open. It holds while
 * the line comes in the order nesting.c sorts it (by start, the longer of two first), as writers
 * save it; a line that does not is left to jp_model_finish, whose error then names no byte. */
typedef struct jp_nest_track {
    uint32_t line;                    /* the line tracked, UINT32_MAX before the first */
    int in_order;                     /* its records so far came in nesting order */
    int64_t last_start, last_end;     /* the previous record's span */
    size_t depth;                     /* open records */
    int64_t ends[JP_NEST_MAX_DEPTH];  /* their ends, outermost first */
} jp_nest_track;

/* A kernel (or memset) run inside a CUDA graph, its op event still under the graph's op until
 * graphs.c finds the instruction it ran. */
typedef struct jp_graph_kernel {
    size_t ev;               /* its op event (index into m->ops) */
    int64_t start_ps;
    uint64_t graph, node, correlation; /* cuda_graph_id, cuda_graph_node_id, the launch's correlation_id */
    int64_t program;         /* the event's program_id, -1 without one */
    const struct jp_hlo_module *module; /* its module's HLO, which has a schedule (n_sequences > 0) */
    const char *kernel;      /* interned kernel name */
    uint32_t op;             /* the command buffer's opdef */
    uint32_t kernel_sum;     /* its entry in m->kernels, UINT32_MAX for a memset */
    uint8_t memset;
} jp_graph_kernel;

enum { JP_LAUNCH_NAME_CACHE = 1024, JP_OP_CACHE = 1024 };

typedef struct jp_build_ctx {
    jp_model *m;
    jp_xspace *xs;
    jp_stream *stream;     /* the events of the planes read, in order */
    const jp_plane *plane;
    const char *host;
    uint32_t host_index;   /* into m->hosts */
    struct { const char *name; uint32_t index; } launch_names[JP_LAUNCH_NAME_CACHE]; /* m->launch_names look-ups */
    struct { const char *module, *name; uint64_t key; uint32_t op; } op_cache[JP_OP_CACHE]; /* jp_build_op_for's */
    int has_devices;       /* the XSpace has device planes: the host CPU is no device of its own */
    jp_stat_keys keys;     /* of plane */
    int64_t noted_run;     /* the run_id last put in m->run_program: a line's ops come run by run */
    /* Per-plane caches, indexed like plane->event_meta and plane->stat_meta, filled on first use:
     * most events share a few metadata entries and name their ops by stat references, so each
     * name is interned once per plane instead of once per event. */
    const char **em_names;   /* interned event metadata names */
    uint8_t *em_xfer;        /* event_transfer_kind + 1, 0: not known */
    const char **ref_names;  /* interned stat metadata names (the values of reference stats) */
    const jp_line *ln;       /* the line of the event being read */
    uint64_t ev_offset;      /* the byte offset of that event in the input, for errors */
    uint64_t n_unknown;      /* events of the line so far whose metadata id names no metadata */
    uint64_t unknown_at;     /* the byte offset of the first of them */
    jp_nest_track op_nest, host_nest; /* nesting of the line's ops and host events */
    /* The last host-time span kept of a line: a host event inside it adds no span (host.c) */
    struct {
        uint32_t line;
        int64_t start, end;
    } host_span;
    jp_vec graph_kernels;  /* jp_graph_kernel of this XSpace, resolved once its planes are read */
    /* The last HLO module lookup (jp_build_op_for): a run's ops all name one module and program,
     * so the search of m->hlo is made once a run, not once an op. */
    struct {
        const char *module;
        int64_t program_id;
        size_t n_hlo;                /* m->hlo.n when looked up: more modules read, look again */
        const struct jp_hlo_module *hm;
        size_t programs;
        uint64_t slot;
    } hlo_memo;
    jp_error *err;
} jp_build_ctx;

/* Feeds one record of global line `line` spanning [start, end) to t: JP_ERR_LIMIT, naming the
 * event being read (c->ev_offset) and where it is, when it nests deeper than JP_NEST_MAX_DEPTH. */
int jp_build_nest_track(jp_build_ctx *c, jp_nest_track *t, uint32_t line, int64_t start, int64_t end);

/* JP_ERR_NOMEM with the builder's message. */
int jp_build_nomem(jp_error *err);
/* An event's start and duration (ps), checked against JP_XN_TIME_LIMIT_PS, and counted into the
 * model's summed durations (JP_ERR_LIMIT past the limit). */
int jp_build_event_times(const jp_build_ctx *c, const jp_line *ln, const jp_event *ev, int64_t *start, int64_t *dur);
/* Adds the wanted stats walked by `it` to info, compressed values inflated. */
int jp_build_read_stats(jp_build_ctx *c, jp_stats_iter it, jp_ev_info *info);
/* The interned string value of key k ("" when absent), or NULL when out of memory. A reference's
 * name is interned once per plane. */
const char *jp_build_info_interned(jp_build_ctx *c, const jp_ev_info *info, int k);
/* The next event of line ln from the stream, its compressed values inflated: 1, 0 after the
 * line's last, or a negative status. */
int jp_build_next_event(jp_build_ctx *c, const jp_line *ln, jp_parsed **pe);
/* The interned name of an event's metadata ("" without one), or NULL when out of memory. */
const char *jp_build_event_name(jp_build_ctx *c, const jp_event_meta *em);
/* The program id in a module's name, "jit_dot(21)", as newer JAX writes it into the metadata
 * entry's name and TPU XLA Modules events name runs; -1 when the name holds none (or more than 18
 * digits, no int64). */
int64_t jp_build_program_id_in_name(jp_str name);

/* ---- records (records.c) ---- */

/* A new device named `name` of the current host; its index, or UINT32_MAX when out of memory. */
uint32_t jp_build_add_device(jp_build_ctx *c, jp_str name, int platform);
/* The tf_op stat without TensorFlow's empty ":type" (interned), or NULL when out of memory. */
const char *jp_build_framework_op(jp_build_ctx *c, const jp_ev_info *info);
/* The op a TensorFlow annotation names, its "#args#" dropped (interned), or NULL. */
const char *jp_build_annotation_op(jp_build_ctx *c, const jp_ev_info *info);
/* The opdef for (device, module, name), created with its HLO metadata on first sight; UINT32_MAX
 * when out of memory. */
uint32_t jp_build_op_for(jp_build_ctx *c, uint32_t device, const char *module, const char *name, int64_t program_id,
                         const jp_ev_info *info);
int jp_build_add_span(jp_model *m, int64_t start, int64_t end, uint32_t device, int part);
/* The activity span of an op event: compute or collective on its device. */
int jp_build_add_op_span(jp_model *m, const jp_op_ev *e);
/* with_span = 0 defers the activity span (XLA:CPU ops may still be extended to their end event). */
/* The event's program_id stat, -1 when it has none (0 is a program id). */
static inline int64_t jp_build_program_id(const jp_ev_info *info) {
    return jp_info_has(info, K_PROGRAM_ID) ? info->v[K_PROGRAM_ID].i : -1;
}
/* An op event of run run_id (0: none) of program program_id (-1: not written on this event). */
int jp_build_add_op_event(jp_build_ctx *c, uint32_t op, uint32_t line, int64_t start, int64_t dur, int64_t run_id,
                          int64_t program_id, int with_span);
int jp_build_add_xfer(jp_build_ctx *c, uint32_t device, int kind, int64_t start, int64_t dur, uint64_t bytes);
/* Counts one kernel (or memset) event of op def under its name. */
void jp_build_count_kernel(jp_opdef *def, const char *kernel);

/* The execution of execs[0..n) (sorted by start) containing t, or NULL (devices.c). */
const jp_exec *jp_build_exec_at(const jp_exec *execs, size_t n, int64_t t);

/* ---- command buffers (graphs.c) ---- */

/* Which instruction of one computation's schedule each kernel of one command-buffer execution ran,
 * the kernels in the order they ran: out[i] indexes seq->instrs, or -1 (matched nothing, or a
 * memset before no kernel). Returns how many kernels matched, -1 when out of memory. */
long jp_graph_align(const char *const *kernels, const uint8_t *is_memset, size_t n, const struct jp_hlo_sequence *seq,
                    int32_t *out);
/* Moves every kernel of c->graph_kernels to the op it ran, once the XSpace's planes are read. */
int jp_build_resolve_graphs(jp_build_ctx *c);

/* The launch of device work (devices.c), the event being read when it carries a correlation_id
 * (`name` its interned name, NULL when out of memory; on line `ln`, global number `line`, noted in
 * m->launch_lines): packed for its op event (*packed, 0 when
 * there is nothing to pack), or kept in m->launch_work when `op_event` is 0 (a copy) or it does not
 * fit. JP_ERR_NOMEM or JP_OK. */
int jp_build_device_launch(jp_build_ctx *c, const jp_ev_info *info, const char *name, uint32_t device, const jp_line *ln,
                           uint32_t line, int64_t start, int64_t dur, int kernel, int op_event, uint64_t *packed);
/* A launch call (host.c: a host event carrying a correlation_id beside GPUs). JP_ERR_NOMEM or JP_OK. */
int jp_build_launch_call(jp_build_ctx *c, const jp_ev_info *info, const char *name, uint32_t line, int64_t start,
                         int64_t dur);

/* ---- the plane readers ---- */

int jp_build_read_metadata(jp_build_ctx *c, const jp_load_options *opt); /* metadata.c: HLO modules */
int jp_build_read_host(jp_build_ctx *c, const jp_load_options *opt);     /* host.c: threads, XLA:CPU ops */
int jp_build_read_device(jp_build_ctx *c, const jp_load_options *opt);   /* devices.c: TPU and GPU */

#endif
