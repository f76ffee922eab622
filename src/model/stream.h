/* stream.h - the events of an XSpace in the order the model reads them, each with the stats the
 * model wants, decoded on the caller's thread or ahead of it on a second one (internal).
 *
 * The model (build.c) consumes; the stream parses. Parsing touches only the XSpace, which is
 * read-only, so it may run on another thread: nothing it writes is shared with the model until a
 * chunk of parsed events is handed over. Interning and every model record stay on the caller. */
#ifndef JP_MODEL_STREAM_H
#define JP_MODEL_STREAM_H

#include "base/arena.h"
#include "jaxprof/jaxprof_xspace.h"

/* The stats the model reads, resolved to ids once per plane. */
enum stat_key {
    K_HLO_OP, K_HLO_MODULE, K_PROGRAM_ID, K_RUN_ID, K_STEP_NUM, K_ROOT, K_KERNEL_DETAILS,
    K_MEMCPY_DETAILS, K_ALLOCATOR, K_BYTES_ALLOCATED, K_PEAK_BYTES, K_FLOPS, K_BYTES_ACCESSED,
    K_HLO_CATEGORY, K_HLO_PROTO, K_PEAK_TFLOPS, K_PEAK_HBM_GBPS, K_FLOW_P, K_FLOW_C, K_TF_OP, K_SOURCE,
    K_DEVICE_DURATION, K_ANNOTATION, K_BYTES_RESERVED, K_INDEX_ON_HOST, K_DEVICE_ORDINAL,
    K_CORRELATION_ID, /* launch.c: a host launch call and the device work it queued */
    K_CUDA_GRAPH_ID, K_CUDA_GRAPH_NODE, /* graphs.c: a kernel of a command buffer and its node */
    K_COUNT
};

typedef struct jp_stat_keys {
    uint64_t ids[K_COUNT]; /* stat metadata id per key, UINT64_MAX when the plane lacks it */
    uint32_t small[64];    /* per stat metadata id below 64: bit k set when ids[k] is that id */
} jp_stat_keys;

void jp_stat_keys_init(jp_stat_keys *keys, const jp_plane *plane);

/* What one event says about itself: its metadata's stats, then its own (which win). Only `has`
 * is cleared per event; a key's values are valid while its bit is set (read them through
 * jp_info_str, jp_info_int, jp_info_dbl, which give "" and 0 otherwise). */
typedef struct jp_key_value {
    jp_str s;                /* string value: text, reference name, or compressed bytes */
    const jp_stat_meta *ref; /* the stat metadata a reference points at, else NULL */
    int64_t i;
    double d;
    jp_bytes b;              /* bytes values */
} jp_key_value;

typedef struct jp_ev_info {
    uint32_t has;        /* bit k: key k was seen */
    uint32_t compressed; /* bit k: s holds compressed bytes (jp_stat_str inflates them) */
    jp_key_value v[K_COUNT];
} jp_ev_info;

static inline int jp_info_has(const jp_ev_info *info, int k) { return (info->has >> k) & 1; }
static inline jp_str jp_info_str(const jp_ev_info *info, int k) {
    return jp_info_has(info, k) ? info->v[k].s : (jp_str){"", 0};
}
static inline int64_t jp_info_int(const jp_ev_info *info, int k) { return jp_info_has(info, k) ? info->v[k].i : 0; }
static inline double jp_info_dbl(const jp_ev_info *info, int k) { return jp_info_has(info, k) ? info->v[k].d : 0; }

/* Adds the wanted stats walked by `it` to info (the has bits are not cleared). */
int jp_read_stats(const jp_plane *plane, const jp_stat_keys *keys, jp_stats_iter it, jp_ev_info *info,
                  jp_error *err);

/* Which planes and lines the model reads; the stream delivers exactly these, in this order. */
typedef enum jp_plane_role { JP_ROLE_SKIP, JP_ROLE_METADATA, JP_ROLE_HOST, JP_ROLE_DEVICE } jp_plane_role;
int jp_plane_role_of(const jp_plane *plane, const jp_load_options *opt);
/* Whether opt's device filter keeps the device (plane) named `name`. */
int jp_device_selected(jp_str name, const jp_load_options *opt);
/* Every line of a host plane; a device plane's stream lines (jp_xn_device_line_is_stream). */
int jp_line_wanted(const jp_plane *plane, const jp_line *line);

typedef struct jp_parsed {
    jp_event ev;
    const jp_event_meta *em; /* NULL when the event's metadata is missing */
    jp_ev_info info;
} jp_parsed;

typedef struct jp_stream jp_stream;

/* threads: 1 parses on the caller's thread as it asks; 2 parses ahead on a second thread. */
int jp_stream_open(jp_stream **out, jp_xspace *xs, const jp_load_options *opt, int threads, jp_error *err);
/* The next event of `line`, which must be the line the plan is at: 1 with *out set, 0 after the
 * line's last event (the next call starts the next line), or a negative status. *out is the
 * caller's to change until the next call. Input bytes of a line's events already returned are
 * discarded (jp_xspace_discard) as the stream moves on: nothing may keep a view into them. */
int jp_stream_next(jp_stream *s, const jp_line *line, jp_parsed **out, jp_error *err);
/* Stops a second thread if one runs, and frees everything. */
void jp_stream_close(jp_stream *s);

#endif
