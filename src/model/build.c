/* build.c - turns decoded XSpaces into the jp_model: classifies planes and lines, reads the stats
 * each analysis needs, attributes executed ops to HLO instructions, then orders and nests. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "model/model.h"
#include "model/stream.h"

typedef struct plane_ctx {
    jp_model *m;
    jp_xspace *xs;
    jp_stream *stream;     /* the events of the planes read, in order */
    const jp_plane *plane;
    const char *host;
    uint32_t host_index;   /* into m->hosts */
    int has_devices;       /* the XSpace has device planes: the host CPU is no device of its own */
    jp_stat_keys keys;     /* of plane */
    /* Per-plane caches, indexed like plane->event_meta and plane->stat_meta, filled on first use:
     * most events share a few metadata entries and name their ops by stat references, so each
     * name is interned once per plane instead of once per event. */
    const char **em_names;   /* interned event metadata names */
    uint8_t *em_xfer;        /* event_transfer_kind + 1, 0: not known */
    const char **ref_names;  /* interned stat metadata names (the values of reference stats) */
    jp_error *err;
} plane_ctx;

typedef jp_ev_info ev_info;

void jp_model_init(jp_model *m, jp_arena *arena) {
    memset(m, 0, sizeof *m);
    m->arena = arena;
    jp_intern_init(&m->intern, arena);
    m->first_ps = INT64_MAX;
    m->last_ps = INT64_MIN;
}

void jp_model_deinit(jp_model *m) {
    jp_vec *vecs[] = {&m->hosts, &m->devices, &m->hlo, &m->opdefs, &m->ops, &m->host, &m->xfers,
                      &m->kernels, &m->mem, &m->execs, &m->device_steps, &m->spans};
    for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) jp_vec_free(vecs[i]);
    jp_map_deinit(&m->op_index);
    jp_map_deinit(&m->kernel_index);
    jp_intern_deinit(&m->intern);
}

static int nomem(jp_error *err) { return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory building the model"); }

/* Bounds that keep every later sum of durations and difference of times far from int64 overflow:
 * an event starts within +-TIME_LIMIT_PS and lasts at most that long, and the events of one load
 * last at most TIME_LIMIT_PS together (2^61 ps, 26 days). Beyond that the input is corrupt. */
#define TIME_LIMIT_PS ((int64_t)1 << 61)

static int event_times(const plane_ctx *c, const jp_line *ln, const jp_event *ev, int64_t *start, int64_t *dur) {
    int64_t ts = ln->timestamp_ns, off = ev->offset_ps, d = ev->duration_ps > 0 ? ev->duration_ps : 0;
    unsigned long long at = (unsigned long long)(ev->raw.ptr - jp_xspace_input(c->xs).ptr);
    if (ts < -TIME_LIMIT_PS / 1000 || ts > TIME_LIMIT_PS / 1000 || off < -TIME_LIMIT_PS || off > TIME_LIMIT_PS ||
        ts * 1000 + off < -TIME_LIMIT_PS || ts * 1000 + off > TIME_LIMIT_PS || d > TIME_LIMIT_PS) {
        return jp_error_set(c->err, JP_ERR_CORRUPT, at,
                            "corrupt XEvent at byte %llu: time out of range (line at %lld ns, offset %lld ps, "
                            "duration %lld ps)", at, (long long)ts, (long long)off, (long long)d);
    }
    if (d > TIME_LIMIT_PS - c->m->total_dur_ps) {
        return jp_error_set(c->err, JP_ERR_LIMIT, at, "XEvent at byte %llu: event durations add up to more than %lld ps",
                            at, (long long)TIME_LIMIT_PS);
    }
    c->m->total_dur_ps += d;
    *start = ts * 1000 + off;
    *dur = d;
    return JP_OK;
}

static int starts_with(jp_str s, const char *prefix) {
    size_t n = strlen(prefix);
    return s.len >= n && memcmp(s.ptr, prefix, n) == 0;
}

static int contains(jp_str s, const char *needle) {
    size_t n = strlen(needle);
    if (n == 0) return 1;
    if (s.len < n) return 0;
    const char *p = s.ptr, *last = s.ptr + (s.len - n); /* the last place a match may start */
    while (p <= last && (p = memchr(p, needle[0], (size_t)(last - p) + 1)) != NULL) {
        if (memcmp(p, needle, n) == 0) return 1;
        p++;
    }
    return 0;
}

/* ---- stats ------------------------------------------------------------------------------------ */

/* Inflates the compressed string values the stream left as bytes (rare: writers compress only
 * long strings). */
static int inflate_values(plane_ctx *c, ev_info *info) {
    for (uint32_t mask = info->compressed, k = 0; mask; k++, mask >>= 1) {
        if (!(mask & 1) || !jp_info_has(info, (int)k)) continue;
        jp_stat st = {.kind = JP_STAT_COMPRESSED, .v.s = info->v[k].s};
        int rc = jp_stat_str(c->xs, c->plane, &st, &info->v[k].s, c->err);
        if (rc < 0) return rc;
    }
    info->compressed = 0;
    return JP_OK;
}

static int read_stats(plane_ctx *c, jp_stats_iter it, ev_info *info) {
    int rc = jp_read_stats(c->plane, &c->keys, it, info, c->err);
    return rc < 0 ? rc : inflate_values(c, info);
}

/* The interned string value of key k ("" when absent), or NULL when out of memory. A reference's
 * name is interned once per plane. */
static const char *info_interned(plane_ctx *c, const ev_info *info, int k) {
    const jp_stat_meta *ref = jp_info_has(info, k) ? info->v[k].ref : NULL;
    if (!ref) return jp_intern_view(&c->m->intern, jp_info_str(info, k));
    const char **slot = &c->ref_names[ref - c->plane->stat_meta];
    if (!*slot) *slot = jp_intern_view(&c->m->intern, ref->name);
    return *slot;
}

/* The next event of line ln from the stream, its compressed values inflated: 1, 0 after the
 * line's last, or a negative status. */
static int next_event(plane_ctx *c, const jp_line *ln, jp_parsed **pe) {
    int rc = jp_stream_next(c->stream, ln, pe, c->err);
    if (rc == 1 && (*pe)->info.compressed && (rc = inflate_values(c, &(*pe)->info)) == JP_OK) rc = 1;
    return rc;
}

/* The interned name of an event's metadata ("" without one), or NULL when out of memory. */
static const char *event_name(plane_ctx *c, const jp_event_meta *em) {
    if (!em) return jp_intern_str(&c->m->intern, "", 0);
    const char **slot = &c->em_names[em - c->plane->event_meta];
    if (!*slot) *slot = jp_intern_view(&c->m->intern, em->name);
    return *slot;
}

/* ---- devices, HLO, ops ---------------------------------------------------------------------- */

static uint32_t add_device(plane_ctx *c, jp_str name, int platform) {
    jp_device *d = jp_vec_push(&c->m->devices, sizeof *d);
    if (!d || !(d->name = jp_intern_view(&c->m->intern, name))) return UINT32_MAX;
    d->host = c->host;
    d->platform = platform;
    d->peak_source = "";
    return (uint32_t)(c->m->devices.n - 1);
}

static const jp_hlo_module *hlo_module_for(const jp_model *m, const char *module, int64_t program_id) {
    const jp_hlo_module *mods = m->hlo.data, *by_name = NULL;
    for (size_t i = 0; i < m->hlo.n; i++) {
        if (program_id >= 0 && mods[i].program_id == program_id) return &mods[i];
        if (!by_name && mods[i].name == module) by_name = &mods[i];
    }
    return by_name;
}

/* The tf_op stat, the framework op that an HLO op came from: "jit(f)/jit(main)/add:" as TPU
 * captures write it, in TensorFlow's "name:type" form with an empty type, which is dropped. */
static const char *framework_op(plane_ctx *c, const ev_info *info) {
    jp_str s = jp_info_str(info, K_TF_OP);
    if (s.len && s.ptr[s.len - 1] == ':') s.len--;
    return jp_intern_view(&c->m->intern, s);
}

/* The framework op a TensorFlow annotation names: "scope/op#shape=(...)#" holds the TraceMe's
 * arguments after the '#', which are dropped. */
static const char *annotation_op(plane_ctx *c, const ev_info *info) {
    jp_str s = jp_info_str(info, K_ANNOTATION);
    const char *hash = memchr(s.ptr, '#', s.len);
    if (hash) s.len = (size_t)(hash - s.ptr);
    return jp_intern_view(&c->m->intern, s);
}

/* The type of a TensorFlow op named "scope/name:Type" (interned), or NULL for other names: HLO
 * instruction names hold no ':', and a type is an identifier, which a C++ kernel name standing in
 * for its op ("void Eigen::...<...>(...)") is not after its last ':'. */
static const char *framework_type(plane_ctx *c, const char *name) {
    const char *slash = strrchr(name, '/'), *colon = strrchr(slash ? slash : name, ':');
    if (!colon || !colon[1]) return NULL;
    for (const char *p = colon + 1; *p; p++)
        if (!(*p == '_' || (*p >= '0' && *p <= '9') || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')))
            return NULL;
    return jp_intern_str(&c->m->intern, colon + 1, strlen(colon + 1));
}

/* The opdef for (device, module, name), created with its HLO metadata on first sight. */
static uint32_t op_for(plane_ctx *c, uint32_t device, const char *module, const char *name, int64_t program_id,
                       const ev_info *info) {
    jp_model *m = c->m;
    int found;
    uint32_t idx = jp_map_get_or_put(&m->op_index, device, jp_ptr_key(module), jp_ptr_key(name),
                                     (uint32_t)m->opdefs.n, &found);
    if (idx == UINT32_MAX || found) return idx;
    jp_opdef *op = jp_vec_push(&m->opdefs, sizeof *op);
    if (!op) return UINT32_MAX;
    const char *empty = jp_intern_str(&m->intern, "", 0);
    *op = (jp_opdef){.module = module, .name = name, .op_name = empty, .scope = empty, .source = empty,
                     .function = empty, .device = device};
    const jp_hlo_module *hm = hlo_module_for(m, module, program_id);
    const jp_hlo_instr *in = hm ? jp_hlo_find(hm, name) : NULL;
    if (in) {
        op->category = in->category;
        op->op_name = in->op_name;
        op->source = in->source;
        op->function = in->function;
        op->frame = in->frame;
        op->hlo_flops = op->flops = in->flops;
        op->transcendentals = in->transcendentals;
        op->bytes = in->bytes;
    } else {
        op->category = framework_type(c, name);
        if (!op->category) op->category = jp_hlo_category_of_name(name);
    }
    if (info && jp_info_str(info, K_HLO_CATEGORY).len) op->category = info_interned(c, info, K_HLO_CATEGORY);
    if (info) {
        /* XLA's own counts, where the device writes them (TPU, GPU), win over ours */
        if (jp_info_dbl(info, K_FLOPS) > 0) op->flops = op->xla_flops = jp_info_dbl(info, K_FLOPS);
        if (jp_info_dbl(info, K_BYTES_ACCESSED) > 0) op->bytes = jp_info_dbl(info, K_BYTES_ACCESSED);
        /* without the HLO (TPU captures keep it elsewhere) the op's own stats say the same */
        if (!*op->op_name && jp_info_str(info, K_TF_OP).len) op->op_name = framework_op(c, info);
        if (!*op->source && jp_info_str(info, K_SOURCE).len) op->source = info_interned(c, info, K_SOURCE);
        if (!op->op_name || !op->source) return UINT32_MAX;
    }
    op->scope = jp_hlo_scope_of(&m->intern, op->op_name);
    if (!op->category || !op->scope) return UINT32_MAX;
    op->collective = (uint8_t)jp_hlo_is_collective(op->category);
    return idx;
}

static int add_span(jp_model *m, int64_t start, int64_t end, uint32_t device, int part) {
    jp_span *s = jp_vec_push(&m->spans, sizeof *s);
    if (!s) return JP_ERR_NOMEM;
    *s = (jp_span){start, end, device, (uint8_t)part};
    return JP_OK;
}

static int add_op_span(jp_model *m, const jp_op_ev *e) {
    const jp_opdef *def = &JP_VEC_AT(&m->opdefs, jp_opdef, e->op);
    int part = def->collective ? JP_PART_COLLECTIVE : JP_PART_COMPUTE;
    return add_span(m, e->start_ps, e->end_ps, def->device, part);
}

/* with_span = 0 defers the activity span (XLA:CPU ops may still be extended to their end event). */
static int add_op_event(plane_ctx *c, uint32_t op, uint32_t line, int64_t start, int64_t dur, int64_t run_id,
                        int with_span) {
    jp_op_ev *e = jp_vec_push(&c->m->ops, sizeof *e);
    if (!e) return nomem(c->err);
    *e = (jp_op_ev){start, start + dur, dur, dur, op, line, run_id, 0, start + dur};
    return with_span && add_op_span(c->m, e) ? nomem(c->err) : JP_OK;
}

static int add_xfer(plane_ctx *c, uint32_t device, int kind, int64_t start, int64_t dur, uint64_t bytes) {
    jp_xfer_ev *x = jp_vec_push(&c->m->xfers, sizeof *x);
    if (!x) return nomem(c->err);
    *x = (jp_xfer_ev){start, start + dur, bytes, device, (uint8_t)kind};
    return add_span(c->m, start, start + dur, device, JP_PART_H2D + kind) ? nomem(c->err) : JP_OK;
}

/* libtpu times each op twice: the event's span, converted to the host's clock, places it on the
 * timeline, and device_duration_ps is the time the core spent on it by its own clock. The two can
 * disagree by a factor of two (a real v6e capture: a copy-done spans 97 ms and took 194 ms).
 * Like XProf, the op's time is the device's; the span stays its place on the timeline (busy
 * time, nesting, steps), where it abuts its neighbours as the device durations would not. */
static void use_device_duration(plane_ctx *c, const ev_info *info) {
    int64_t d = jp_info_int(info, K_DEVICE_DURATION);
    if (d <= 0 || d > TIME_LIMIT_PS) return;
    jp_op_ev *e = &JP_VEC_AT(&c->m->ops, jp_op_ev, c->m->ops.n - 1);
    e->dur_ps = e->self_ps = d;
}

/* ---- /host:metadata ----------------------------------------------------------------------- */

/* The program id newer JAX writes only into the metadata entry's name, "jit_dot(21)"; -1 when
 * the name holds none. Without it a recompiled module would be matched by name alone and get the
 * first compilation's instructions. */
static int64_t program_id_in_name(jp_str name) {
    if (name.len < 3 || name.ptr[name.len - 1] != ')') return -1;
    size_t open = name.len - 1;
    while (open > 0 && name.ptr[open - 1] >= '0' && name.ptr[open - 1] <= '9') open--;
    size_t digits = name.len - 1 - open;
    if (open == 0 || name.ptr[open - 1] != '(' || digits == 0 || digits > 18) return -1;
    int64_t id = 0;
    for (size_t i = open; i < name.len - 1; i++) id = id * 10 + (name.ptr[i] - '0');
    return id;
}

/* Every module's HloProto on the metadata plane; library marks the frames a source line skips. */
static int read_hlo_modules(plane_ctx *c, const regex_t *library) {
    jp_bytes input = jp_xspace_input(c->xs);
    for (size_t i = 0; i < c->plane->n_event_meta; i++) {
        const jp_event_meta *em = &c->plane->event_meta[i];
        ev_info info = {0};
        int rc = read_stats(c, jp_stats_of_event_meta(c->xs, em), &info);
        if (rc < 0) return rc;
        if (!jp_info_has(&info, K_HLO_PROTO) || !info.v[K_HLO_PROTO].b.len) continue;
        jp_hlo_module *hm = jp_vec_push(&c->m->hlo, sizeof *hm);
        if (!hm) return nomem(c->err);
        rc = jp_hlo_decode(info.v[K_HLO_PROTO].b, input.ptr, library, &c->m->intern, c->m->arena, hm, c->err);
        if (rc) return rc;
        hm->program_id = jp_info_has(&info, K_PROGRAM_ID) ? info.v[K_PROGRAM_ID].i : program_id_in_name(em->name);
        if (!hm->name) hm->name = jp_intern_view(&c->m->intern, em->name);
    }
    return JP_OK;
}

/* The library-frame rule for source lines: opt's regex, the default one, or none for "". */
static int compile_library_rule(plane_ctx *c, const jp_load_options *opt, regex_t *re, int *have) {
    const char *rule = opt && opt->library_frames ? opt->library_frames : JP_HLO_LIBRARY_FRAMES;
    *have = 0;
    if (!*rule) return JP_OK;
    if (regcomp(re, rule, REG_EXTENDED | REG_NOSUB) != 0)
        return jp_error_set(c->err, JP_ERR_ARG, 0, "bad --library-frames regex '%s'", rule);
    *have = 1;
    return JP_OK;
}

static int read_metadata_plane(plane_ctx *c, const jp_load_options *opt) {
    regex_t library;
    int have_library, rc = compile_library_rule(c, opt, &library, &have_library);
    if (rc) return rc;
    rc = read_hlo_modules(c, have_library ? &library : NULL);
    if (have_library) regfree(&library);
    return rc;
}

/* ---- host planes -------------------------------------------------------------------------- */

static const char *const RUNTIME_NAMES[] = {
    "ParseArguments", "shard_args", "Handle input", "Wait", "DevicePut", "BatchedCopyToDevice",
    "AllocateOutputBuffers", "RunInvariantCheckers", "HLO passes", "ThreadpoolListener",
    "MemoryAllocation", "MemoryDeallocation", "H2D", "D2H", "end: ",
    /* jax.profiler.annotate_function and IFRT TraceMes on the Python thread, not user code */
    "ExecuteReplicated.", "batched_copy_array_to_devices", "ArrayImpl.", "pickle_util.",
};
static const char *const COMPILE_NAMES[] = {
    "backend_compile", "lower_sharding_computation", "lower_jaxpr_to_module", "compile_or_get_cached",
};

static int host_kind(jp_str name, const ev_info *info) {
    if (name.len && name.ptr[0] == '$') return JP_HOST_PYTHON;
    if (jp_info_has(info, K_STEP_NUM) && jp_info_has(info, K_ROOT)) return JP_HOST_STEP;
    for (size_t i = 0; i < sizeof COMPILE_NAMES / sizeof COMPILE_NAMES[0]; i++)
        if (starts_with(name, COMPILE_NAMES[i])) return JP_HOST_COMPILE;
    if (contains(name, "::") || (name.len && name.ptr[name.len - 1] == ')' && contains(name, "(")))
        return JP_HOST_RUNTIME;
    for (size_t i = 0; i < sizeof RUNTIME_NAMES / sizeof RUNTIME_NAMES[0]; i++)
        if (starts_with(name, RUNTIME_NAMES[i])) return JP_HOST_RUNTIME;
    /* CUDA driver/runtime API calls traced by CUPTI: cuLaunchKernel, cudaMemcpyAsync, ... */
    if (name.len > 2 && starts_with(name, "cu") && (starts_with(name, "cuda") || (name.ptr[2] >= 'A' && name.ptr[2] <= 'Z')))
        return JP_HOST_RUNTIME;
    return JP_HOST_USER;
}

static int cpu_transfer_kind(jp_str name) {
    if (starts_with(name, "H2D")) return JP_XFER_H2D;
    if (starts_with(name, "D2H")) return JP_XFER_D2H;
    return -1;
}

static int add_memory_event(plane_ctx *c, jp_str name, int64_t t, const ev_info *info) {
    if (!(jp_str_eq(name, "MemoryAllocation") || jp_str_eq(name, "MemoryDeallocation"))) return 0;
    jp_mem_ev *me = jp_vec_push(&c->m->mem, sizeof *me);
    if (!me) return nomem(c->err);
    /* One allocator per name; without one, per device (libtpu says which chip of the host in
     * index_on_host: each chip has its own HBM and allocator). Memory in use counts the bytes
     * reserved beside those allocated, as XProf's memory profile does. */
    char chip[32];
    const char *alloc = jp_info_has(info, K_ALLOCATOR) ? info_interned(c, info, K_ALLOCATOR)
                        : jp_info_has(info, K_INDEX_ON_HOST)
                            ? jp_intern_str(&c->m->intern, chip,
                                            (size_t)snprintf(chip, sizeof chip, "device %lld",
                                                             (long long)jp_info_int(info, K_INDEX_ON_HOST)))
                            : jp_intern_str(&c->m->intern, "default", 7);
    int64_t in_use = jp_info_int(info, K_BYTES_ALLOCATED), reserved = jp_info_int(info, K_BYTES_RESERVED);
    if (reserved > 0 && in_use <= INT64_MAX - reserved) in_use += reserved;
    *me = (jp_mem_ev){t, alloc, in_use, jp_info_int(info, K_PEAK_BYTES)};
    return me->allocator ? 1 : nomem(c->err);
}

static int add_host_event(plane_ctx *c, const jp_event_meta *em, jp_str name, uint32_t line, int64_t start, int64_t dur,
                          const ev_info *info) {
    jp_host_ev *h = jp_vec_push(&c->m->host, sizeof *h);
    if (!h) return nomem(c->err);
    h->start_ps = start;
    h->end_ps = start + dur;
    h->self_ps = dur;
    h->line = line;
    h->kind = (uint8_t)host_kind(name, info);
    h->is_dispatch = (uint8_t)starts_with(name, "PjitFunction(");
    h->step_num = jp_info_int(info, K_STEP_NUM);
    h->name = event_name(c, em);
    h->module = jp_intern_str(&c->m->intern, "", 0);
    if (!h->name || !h->module) return nomem(c->err);
    if (h->kind == JP_HOST_STEP || dur == 0) return JP_OK;
    return add_span(c->m, start, start + dur, UINT32_MAX, h->kind == JP_HOST_COMPILE ? JP_PART_COMPILE : JP_PART_HOST)
               ? nomem(c->err) : JP_OK;
}

/* XLA:CPU runs each HLO op as a thunk TraceMe on a worker thread, tagged hlo_op/hlo_module. */
static int add_cpu_op(plane_ctx *c, uint32_t *cpu, uint32_t line, int64_t start, int64_t dur, const ev_info *info) {
    if (*cpu == UINT32_MAX) {
        *cpu = add_device(c, c->plane->name, JP_PLATFORM_CPU);
        if (*cpu == UINT32_MAX) return nomem(c->err);
    }
    const char *module = info_interned(c, info, K_HLO_MODULE), *name = info_interned(c, info, K_HLO_OP);
    if (!module || !name) return nomem(c->err);
    uint32_t op = op_for(c, *cpu, module, name, jp_info_has(info, K_PROGRAM_ID) ? info->v[K_PROGRAM_ID].i : -1, info);
    if (op == UINT32_MAX) return nomem(c->err);
    int rc = add_op_event(c, op, line, start, dur, jp_info_int(info, K_RUN_ID), 0);
    if (rc == JP_OK) JP_VEC_AT(&c->m->ops, jp_op_ev, c->m->ops.n - 1).flow = (uint64_t)jp_info_int(info, K_FLOW_P);
    return rc;
}

typedef struct op_end { /* an XLA:CPU "end: <op>" event: where an asynchronous op completed */
    uint64_t flow;        /* its consumer flow id (_c), equal to the op event's producer id (_p) */
    int64_t end_ps;
    size_t seq;           /* its place among the plane's end events: the first of one flow wins */
} op_end;

static int cmp_op_end(const void *a, const void *b) {
    const op_end *x = a, *y = b;
    if (x->flow != y->flow) return x->flow < y->flow ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The first i with e[i].flow >= flow in e[0..n) sorted by flow, searched outwards from `hint`
 * (the previous answer): ops come in time order and so, mostly, do their flow ids, so the answer
 * is near and the search stays in cache. */
static size_t flow_lower_bound(const op_end *e, size_t n, uint64_t flow, size_t hint) {
    size_t lo, hi, step = 1;
    if (hint < n && e[hint].flow < flow) { /* the answer lies right of hint */
        lo = hint + 1;
        while (hint + step < n && e[hint + step].flow < flow) {
            lo = hint + step + 1;
            step *= 2;
        }
        hi = hint + step < n ? hint + step : n;
    } else { /* at or left of hint: e[hi] >= flow, or hi == n */
        hi = hint < n ? hint : n;
        while (hi >= step && e[hi - step].flow >= flow) {
            hi -= step;
            step *= 2;
        }
        lo = hi >= step ? hi - step + 1 : 0;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e[mid].flow < flow) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* XLA:CPU runs some ops asynchronously: the op's TraceMe covers the launch, and a later
 * "end: <op>" event linked to it by a flow id marks completion. An op lasts until then. Flow ids
 * are per process, so the linking is done per host plane; then the ops get their spans. The end
 * events are sorted by flow and searched: a hash map of them would be larger and, one cache miss
 * per op, slower. */
static int link_op_ends(plane_ctx *c, size_t first_op, jp_vec *ends) {
    op_end *e = ends->data;
    size_t at = 0; /* where the previous op's end was found */
    /* ends are pushed in seq order: a stable sort by flow orders them by (flow, seq) */
    jp_sort_by_key64(e, ends->n, sizeof *e, offsetof(op_end, flow), 0, cmp_op_end);
    for (size_t i = first_op; i < c->m->ops.n; i++) {
        jp_op_ev *op = &JP_VEC_AT(&c->m->ops, jp_op_ev, i);
        const op_end *end = NULL;
        if (op->flow && ends->n) {
            at = flow_lower_bound(e, ends->n, op->flow, at);
            end = at < ends->n && e[at].flow == op->flow ? &e[at] : NULL;
        }
        if (end && end->end_ps > op->end_ps) {
            op->end_ps = end->end_ps;
            op->dur_ps = op->self_ps = op->end_ps - op->start_ps;
        }
        if (add_op_span(c->m, op)) return nomem(c->err);
    }
    return JP_OK;
}

static int read_host_lines(plane_ctx *c, int cpu_wanted, uint32_t *cpu_dev, jp_vec *ends);

static int read_host_plane(plane_ctx *c, const jp_load_options *opt) {
    uint32_t cpu = UINT32_MAX;
    int cpu_wanted = jp_device_selected((jp_str){"/host:CPU", 9}, opt);
    size_t first_op = c->m->ops.n;
    jp_vec ends = {0};
    int rc = read_host_lines(c, cpu_wanted, &cpu, &ends);
    if (rc == JP_OK) rc = link_op_ends(c, first_op, &ends);
    jp_vec_free(&ends);
    return rc;
}

static int read_host_lines(plane_ctx *c, int cpu_wanted, uint32_t *cpu_dev, jp_vec *ends) {
    uint32_t cpu = *cpu_dev;
    for (size_t l = 0; l < c->plane->n_lines; l++) {
        const jp_line *ln = &c->plane->lines[l];
        uint32_t line = c->m->n_lines++;
        int worker = starts_with(ln->name, "tf_"); /* TSL thread pools: XLA runtime threads */
        jp_parsed *pe;
        int rc;
        while ((rc = next_event(c, ln, &pe)) == 1) {
            const jp_event_meta *em = pe->em;
            const ev_info *info = &pe->info;
            jp_str name = em ? em->name : (jp_str){"", 0};
            int64_t start, dur;
            if ((rc = event_times(c, ln, &pe->ev, &start, &dur))) return rc;
            if (start < c->m->first_ps) c->m->first_ps = start;
            if (start + dur > c->m->last_ps) c->m->last_ps = start + dur;
            if ((rc = add_memory_event(c, name, start, info)) != 0) {
                if (rc < 0) return rc;
            } else if (!c->has_devices && jp_info_has(info, K_HLO_OP) && jp_info_has(info, K_HLO_MODULE)) {
                /* XLA:CPU's op thunks; beside a GPU the same stats tag the host's launch calls
                 * (cuLaunchKernel, hipModuleLaunchKernel), which are host runtime events */
                if (cpu_wanted && (rc = add_cpu_op(c, &cpu, line, start, dur, info))) return rc;
            } else if (starts_with(name, "end: ") && jp_info_has(info, K_FLOW_C)) {
                op_end *oe = jp_vec_push(ends, sizeof *oe);
                if (!oe) return nomem(c->err);
                *oe = (op_end){(uint64_t)info->v[K_FLOW_C].i, start + dur, ends->n - 1};
            } else if (!c->has_devices && cpu_transfer_kind(name) >= 0) {
                /* XLA:CPU's "H2D Dispatch" is the copy itself; beside a GPU or TPU it only queues
                 * one, which the device plane records with its size */
                if (cpu == UINT32_MAX && cpu_wanted && (cpu = add_device(c, c->plane->name, JP_PLATFORM_CPU)) == UINT32_MAX)
                    return nomem(c->err);
                if (cpu_wanted && (rc = add_xfer(c, cpu, cpu_transfer_kind(name), start, dur, 0))) return rc;
            } else if (!worker && (rc = add_host_event(c, em, name, line, start, dur, info))) {
                return rc;
            }
        }
        if (rc < 0) return rc;
    }
    *cpu_dev = cpu;
    return JP_OK;
}

/* ---- device planes ------------------------------------------------------------------------ */

/* What a GPU event's name says of a transfer: its jp_xfer_kind ("MemcpyH2D"), NAME_MEMCPY for
 * another copy ("MemcpyOther": the details decide), NAME_OTHER for the rest. */
enum { NAME_MEMCPY = JP_XFER_COUNT, NAME_OTHER };
static int name_transfer_kind(jp_str name) {
    if (contains(name, "H2D") || contains(name, "HtoD")) return JP_XFER_H2D;
    if (contains(name, "D2H") || contains(name, "DtoH")) return JP_XFER_D2H;
    if (contains(name, "D2D") || contains(name, "DtoD") || contains(name, "P2P")) return JP_XFER_D2D;
    return contains(name, "emcpy") ? NAME_MEMCPY : NAME_OTHER;
}

/* name_transfer_kind of an event's metadata name, asked once per metadata entry. */
static int event_transfer_kind(plane_ctx *c, const jp_event_meta *em) {
    if (!em) return NAME_OTHER;
    uint8_t *slot = &c->em_xfer[em - c->plane->event_meta]; /* the kind + 1; 0 until asked */
    if (!*slot) *slot = (uint8_t)(name_transfer_kind(em->name) + 1);
    return *slot - 1;
}

/* A transfer's kind from its name's (name_transfer_kind) and its memcpy details ("kind_src:host
 * kind_dst:device size:4096 ..."), or -1 for no transfer. In the details, CUPTI's pinned and
 * pageable memory kinds are host memory too: copies between them and the device are what a
 * "MemcpyOther" event may hold. */
static int gpu_transfer_kind(int name_kind, jp_str details) {
    static const char *const HOST_KINDS[] = {"host", "pinned", "pageable"};
    if (name_kind < JP_XFER_COUNT) return name_kind;
    if (!details.len && name_kind == NAME_OTHER) return -1;
    int on_host[2] = {0, 0}; /* source, destination */
    const char *const keys[2] = {"kind_src:", "kind_dst:"};
    for (int side = 0; side < 2; side++) {
        size_t n = strlen(keys[side]);
        for (size_t i = 0; i + n <= details.len; i++) {
            if (memcmp(details.ptr + i, keys[side], n) != 0 || (i && details.ptr[i - 1] != ' ')) continue;
            jp_str kind = {details.ptr + i + n, 0};
            while (i + n + kind.len < details.len && kind.ptr[kind.len] != ' ') kind.len++;
            for (size_t k = 0; k < sizeof HOST_KINDS / sizeof HOST_KINDS[0]; k++)
                on_host[side] |= jp_str_eq(kind, HOST_KINDS[k]);
            break;
        }
    }
    if (on_host[0] && !on_host[1]) return JP_XFER_H2D;
    if (!on_host[0] && on_host[1]) return JP_XFER_D2H;
    return JP_XFER_D2D;
}

static uint64_t details_uint(jp_str details, const char *key) {
    size_t n = strlen(key);
    for (size_t i = 0; i + n <= details.len; i++) {
        if (memcmp(details.ptr + i, key, n) != 0 || (i && details.ptr[i - 1] != ' ')) continue;
        uint64_t v = 0;
        for (size_t j = i + n; j < details.len && details.ptr[j] >= '0' && details.ptr[j] <= '9'; j++)
            v = v * 10 + (uint64_t)(details.ptr[j] - '0');
        return v;
    }
    return 0;
}

static int add_kernel(plane_ctx *c, const char *name, int64_t dur, const ev_info *info) {
    jp_model *m = c->m;
    const char *details = info_interned(c, info, K_KERNEL_DETAILS);
    if (!name || !details) return nomem(c->err);
    int found;
    uint32_t k = jp_map_get_or_put(&m->kernel_index, jp_ptr_key(name), jp_ptr_key(details), 0, (uint32_t)m->kernels.n,
                                   &found);
    jp_kernel_sum *sum = k == UINT32_MAX ? NULL : found ? &JP_VEC_AT(&m->kernels, jp_kernel_sum, k)
                                                        : jp_vec_push(&m->kernels, sizeof *sum);
    if (!sum) return nomem(c->err);
    if (!found) {
        *sum = (jp_kernel_sum){name, details, info_interned(c, info, K_HLO_OP), 0, 0, 0, INT64_MAX, 0};
        if (!sum->op) return nomem(c->err);
    }
    sum->count++;
    sum->n_small += dur < JP_SMALL_KERNEL_PS;
    sum->total_ps += dur;
    if (dur < sum->min_ps) sum->min_ps = dur;
    if (dur > sum->max_ps) sum->max_ps = dur;
    return JP_OK;
}

static int read_gpu_event(plane_ctx *c, uint32_t dev, uint32_t line, const jp_event_meta *em, int64_t start,
                          int64_t dur, const ev_info *info) {
    jp_str name = em ? em->name : (jp_str){"", 0};
    jp_str memcpy_details = jp_info_str(info, K_MEMCPY_DETAILS);
    int xk = gpu_transfer_kind(event_transfer_kind(c, em), memcpy_details);
    if (xk >= 0) return add_xfer(c, dev, xk, start, dur, details_uint(memcpy_details, "size:"));
    /* CUPTI names activity that has no name of its own by its type: allocator and residency
     * bookkeeping and CUPTI's own overhead are no device execution, so neither kernels nor ops. */
    static const char *const BOOKKEEPING[] = {"MemoryAlloc", "MemoryFree", "MemoryResidency", "Overhead",
                                              "UnifiedMemory", "HostRegister", "HostUnregister"};
    for (size_t i = 0; i < sizeof BOOKKEEPING / sizeof BOOKKEEPING[0]; i++)
        if (jp_str_eq(name, BOOKKEEPING[i])) return JP_OK;
    /* A memset is device work for its HLO op (XLA zero-fills buffers that way), but no kernel. */
    const char *interned = event_name(c, em);
    if (!interned) return nomem(c->err);
    int rc = jp_str_eq(name, "Memset") ? JP_OK : add_kernel(c, interned, dur, info);
    if (rc) return rc;
    /* The op a kernel ran for: its HLO op (XLA), else the framework op that launched it (TensorFlow
     * names it in tf_op or in the annotation), else the kernel itself. Each kernel is one occurrence
     * of its op, as XProf counts them: without an execution id, back-to-back runs of a one-kernel op
     * cannot be told from one run of a several-kernel op. */
    int has_op = jp_info_str(info, K_HLO_OP).len > 0;
    const char *module = has_op ? info_interned(c, info, K_HLO_MODULE) : jp_intern_str(&c->m->intern, "", 0);
    const char *op_name = has_op                                ? info_interned(c, info, K_HLO_OP)
                          : jp_info_str(info, K_TF_OP).len      ? framework_op(c, info)
                          : jp_info_str(info, K_ANNOTATION).len ? annotation_op(c, info)
                                                                : interned;
    if (!module || !op_name) return nomem(c->err);
    uint32_t op = op_for(c, dev, module, op_name, jp_info_has(info, K_PROGRAM_ID) ? info->v[K_PROGRAM_ID].i : -1, info);
    if (op == UINT32_MAX) return nomem(c->err);
    return add_op_event(c, op, line, start, dur, jp_info_int(info, K_RUN_ID), 1);
}

/* The interned name of a TPU op: libtpu may name an XLA Ops event's metadata with the whole HLO
 * text ("%copy-done.2 = f32[...] copy-done(...)") and give the instruction name as the display
 * name; without one, the text's "%name" is cut out. */
static const char *tpu_op_name(plane_ctx *c, const jp_event_meta *em) {
    if (!em || !em->name.len || em->name.ptr[0] != '%') return event_name(c, em);
    const char **slot = &c->em_names[em - c->plane->event_meta];
    if (*slot) return *slot;
    jp_str name = em->display_name;
    if (!name.len) {
        name = (jp_str){em->name.ptr + 1, 0};
        while (name.len + 1 < em->name.len && name.ptr[name.len] != ' ') name.len++;
    }
    return *slot = jp_intern_view(&c->m->intern, name);
}

int jp_exec_cmp_start(const void *a, const void *b) {
    int64_t x = ((const jp_exec *)a)->start_ps, y = ((const jp_exec *)b)->start_ps;
    return (x > y) - (x < y);
}

/* The XLA Modules event containing t on this device (execs[lo..hi) sorted by start), or NULL. */
static const jp_exec *exec_at(const jp_exec *execs, size_t n, int64_t t) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (execs[mid].start_ps <= t) lo = mid + 1;
        else hi = mid;
    }
    return lo && t <= execs[lo - 1].end_ps ? &execs[lo - 1] : NULL;
}

/* TPU "XLA Modules" and "Steps" lines hold whole executions; read them before the ops. Every chip
 * writes its own Steps line naming the same steps: one step name is one step of the host, timed
 * by its longest device, as XProf times it. (Chips need not run a step in lockstep: the replicas of
 * a TensorFlow job on two GPUs ran step 0 650 ms apart, and spanning both would count the gap.)
 * The steps analysis joins hosts.
 * GPU planes have a Steps line only where a profiler derived and saved one (TensorFlow does): it
 * is read the same way; their XLA Modules, when saved, repeat what run_ids already give. */
static int read_device_intervals(plane_ctx *c, uint32_t dev, int platform, size_t *first_exec) {
    *first_exec = c->m->execs.n;
    jp_map by_name = {0}; /* step name -> index into device_steps, over this host's planes so far */
    int rc = JP_OK;
    for (size_t i = 0; i < c->m->device_steps.n && rc == JP_OK; i++)
        if (JP_VEC_AT(&c->m->device_steps, jp_exec, i).host == c->host_index &&
            jp_map_get_or_put(&by_name, jp_ptr_key(JP_VEC_AT(&c->m->device_steps, jp_exec, i).module), 0, 0,
                              (uint32_t)i, NULL) == UINT32_MAX)
            rc = nomem(c->err);
    for (size_t l = 0; l < c->plane->n_lines && rc == JP_OK; l++) {
        const jp_line *ln = &c->plane->lines[l];
        int modules = platform == JP_PLATFORM_TPU && jp_str_eq(ln->name, "XLA Modules");
        int steps = jp_str_eq(ln->name, "Steps");
        if (!modules && !steps) continue;
        jp_event_reader reader = jp_line_event_reader(c->xs, ln); /* lines the stream leaves out */
        jp_event event, *ev = &event;
        while ((rc = jp_event_reader_next(&reader, ev, c->err)) == 1) {
            if (ev->num_occurrences > 0) continue; /* aggregated: no interval */
            const jp_event_meta *em = jp_plane_event_meta_view(c->plane, ev->metadata_id);
            int64_t start, dur;
            if ((rc = event_times(c, ln, ev, &start, &dur))) break;
            int64_t end = start + dur;
            jp_str name = em ? em->name : (jp_str){"", 0};
            size_t paren = 0; /* "jit_train_step(123)" names the module "jit_train_step" */
            while (paren < name.len && name.ptr[paren] != '(') paren++;
            if (modules) name.len = paren;
            const char *interned = jp_intern_view(&c->m->intern, name);
            if (!interned) {
                rc = nomem(c->err);
                break;
            }
            if (steps) { /* the same step on another chip: the longer of the two stands for both */
                int found;
                uint32_t k = jp_map_get_or_put(&by_name, jp_ptr_key(interned), 0, 0, (uint32_t)c->m->device_steps.n,
                                               &found);
                if (k == UINT32_MAX) {
                    rc = nomem(c->err);
                    break;
                }
                if (found) {
                    jp_exec *seen = &JP_VEC_AT(&c->m->device_steps, jp_exec, k);
                    if (end - start > seen->end_ps - seen->start_ps) seen->start_ps = start, seen->end_ps = end;
                    continue;
                }
            }
            jp_exec *x = jp_vec_push(modules ? &c->m->execs : &c->m->device_steps, sizeof *x);
            if (!x) {
                rc = nomem(c->err);
                break;
            }
            *x = (jp_exec){interned, (int64_t)(c->m->execs.n + c->m->device_steps.n), start, end, c->host_index, dev};
        }
    }
    jp_map_deinit(&by_name);
    if (rc) return rc;
    if (c->m->execs.n - *first_exec > 1) /* qsort must not see the NULL of an empty vec */
        qsort(&JP_VEC_AT(&c->m->execs, jp_exec, *first_exec), c->m->execs.n - *first_exec, sizeof(jp_exec),
              jp_exec_cmp_start);
    return JP_OK;
}

/* The hardware a device plane describes, from its own stats by name. */
static int read_device_caps(plane_ctx *c, jp_device_caps *caps) {
    memset(caps, 0, sizeof *caps);
    jp_stats_iter it = jp_stats_of_plane(c->xs, c->plane);
    jp_stat st;
    int rc;
    while ((rc = jp_stats_next(&it, &st, c->err)) == 1) {
        const jp_stat_meta *sm = jp_plane_stat_meta_view(c->plane, st.metadata_id);
        if (!sm) continue;
        jp_str name = sm->name, text = {"", 0};
        double v = st.kind == JP_STAT_DOUBLE ? st.v.d : (double)jp_stat_int(&st);
        if (st.kind == JP_STAT_STR || st.kind == JP_STAT_REF) jp_stat_str(c->xs, c->plane, &st, &text, NULL);
        if (jp_str_eq(name, "peak_teraflops_per_second")) caps->peak_tflops = v;
        else if (jp_str_eq(name, "peak_hbm_bw_gigabytes_per_second")) caps->peak_gbps = v;
        else if (jp_str_eq(name, "clock_rate")) caps->clock_khz = v;
        else if (jp_str_eq(name, "core_count")) caps->cores = v;
        else if (jp_str_eq(name, "memory_bandwidth")) caps->mem_bw = v;
        else if (jp_str_eq(name, "compute_cap_major")) caps->cc_major = (int)v;
        else if (jp_str_eq(name, "compute_cap_minor")) caps->cc_minor = (int)v;
        else if (jp_str_eq(name, "device_vendor")) caps->amd = text.len >= 3 && memcmp(text.ptr, "AMD", 3) == 0;
        else if (jp_str_eq(name, "device_type_string"))
            snprintf(caps->type, sizeof caps->type, "%.*s", (int)(text.len < 63 ? text.len : 63), text.ptr);
    }
    return rc < 0 ? rc : JP_OK;
}

static int read_device_plane(plane_ctx *c, const jp_load_options *opt) {
    (void)opt;
    int platform = jp_platform_of_device_plane(c->plane);
    uint32_t dev = add_device(c, c->plane->name, platform);
    if (dev == UINT32_MAX) return nomem(c->err);
    ev_info pinfo = {0};
    int rc = read_stats(c, jp_stats_of_plane(c->xs, c->plane), &pinfo);
    if (rc < 0) return rc;
    jp_device *d = &JP_VEC_AT(&c->m->devices, jp_device, dev);
    jp_device_caps caps;
    if ((rc = read_device_caps(c, &caps))) return rc;
    jp_device_set_peaks(d, &caps);
    size_t first_exec = 0;
    if ((rc = read_device_intervals(c, dev, platform, &first_exec))) return rc;
    for (size_t l = 0; l < c->plane->n_lines; l++) {
        const jp_line *ln = &c->plane->lines[l];
        uint32_t line = c->m->n_lines++;
        if (!jp_line_wanted(c->plane, ln)) continue;
        jp_parsed *pe;
        while ((rc = next_event(c, ln, &pe)) == 1) {
            /* An aggregated event (num_occurrences instead of an offset) has no place in time: it
             * would land at the line's start, so it stays out of ops, steps and busy time. */
            if (pe->ev.num_occurrences > 0) continue;
            const jp_event_meta *em = pe->em;
            const ev_info *info = &pe->info;
            int64_t start, dur;
            if ((rc = event_times(c, ln, &pe->ev, &start, &dur))) return rc;
            if (start < c->m->first_ps) c->m->first_ps = start;
            if (start + dur > c->m->last_ps) c->m->last_ps = start + dur;
            if (platform == JP_PLATFORM_GPU) {
                rc = read_gpu_event(c, dev, line, em, start, dur, info);
            } else {
                const jp_exec *x = c->m->execs.n > first_exec
                                       ? exec_at(&JP_VEC_AT(&c->m->execs, jp_exec, first_exec),
                                                 c->m->execs.n - first_exec, start)
                                       : NULL; /* no executions: execs.data may be NULL */
                const char *module = x ? x->module : info_interned(c, info, K_HLO_MODULE);
                const char *op_name = tpu_op_name(c, em);
                if (!module || !op_name) return nomem(c->err);
                uint32_t op = op_for(c, dev, module, op_name, jp_info_has(info, K_PROGRAM_ID) ? info->v[K_PROGRAM_ID].i : -1, info);
                rc = op == UINT32_MAX ? nomem(c->err) : add_op_event(c, op, line, start, dur, x ? x->run_id : 0, 1);
                if (rc == JP_OK) use_device_duration(c, info);
            }
            if (rc) return rc;
        }
        if (rc < 0) return rc;
    }
    return JP_OK;
}

/* Reads one plane with `reader`, its caches set up before and released after. */
static int read_plane(plane_ctx *c, const jp_plane *plane, const jp_load_options *opt,
                      int (*reader)(plane_ctx *c, const jp_load_options *opt)) {
    c->plane = plane;
    jp_stat_keys_init(&c->keys, plane);
    c->em_names = calloc(plane->n_event_meta + 1, sizeof *c->em_names);
    c->em_xfer = calloc(plane->n_event_meta + 1, sizeof *c->em_xfer);
    c->ref_names = calloc(plane->n_stat_meta + 1, sizeof *c->ref_names);
    int rc = c->em_names && c->em_xfer && c->ref_names ? reader(c, opt) : nomem(c->err);
    free(c->em_names);
    free(c->em_xfer);
    free(c->ref_names);
    c->em_names = c->ref_names = NULL;
    c->em_xfer = NULL;
    return rc;
}

/* Parsing moves to a second thread when it pays: two CPUs, enough events that handing chunks over
 * costs less than it saves (a 10 MB, 183 k-event profile is slower threaded), and most of them on
 * device planes. Host events cost the model more (classification, nesting, flows) than they cost to
 * parse, so on a host-heavy (XLA:CPU) profile the parser would wait on the model, and the hand-over
 * made it 4-19% slower in docs/benchmarks.md, where GPU profiles gain 11-13%. */
static int parse_threads(const jp_xspace *xs, const jp_load_options *opt) {
    if (opt && opt->threads > 0) return opt->threads > 1 ? 2 : 1;
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || jp_xspace_event_count(xs) < JP_THREADED_MIN_EVENTS) return 1;
    size_t n_planes;
    const jp_plane *planes = jp_xspace_planes(xs, &n_planes);
    uint64_t on_devices = 0;
    for (size_t i = 0; i < n_planes; i++)
        if (jp_plane_role_of(&planes[i], opt) == JP_ROLE_DEVICE)
            for (size_t l = 0; l < planes[i].n_lines; l++) on_devices += planes[i].lines[l].n_events;
    return on_devices * 2 >= jp_xspace_event_count(xs) ? 2 : 1;
}

static int read_planes(plane_ctx *c, const jp_plane *planes, size_t n_planes, const jp_load_options *opt) {
    for (size_t i = 0; i < n_planes; i++) /* HLO metadata first: ops look their modules up */
        if (jp_plane_role_of(&planes[i], opt) == JP_ROLE_METADATA) {
            int rc = read_plane(c, &planes[i], opt, read_metadata_plane);
            if (rc < 0) return rc;
        }
    for (size_t i = 0; i < n_planes; i++) {
        int role = jp_plane_role_of(&planes[i], opt), rc = JP_OK;
        if (role == JP_ROLE_HOST) rc = read_plane(c, &planes[i], opt, read_host_plane);
        else if (role == JP_ROLE_DEVICE) rc = read_plane(c, &planes[i], opt, read_device_plane);
        if (rc < 0) return rc;
    }
    return JP_OK;
}

/* When the capture started on the host's wall clock: the profile_start_time stat (ns since the
 * epoch) of the "Task Environment" plane that JAX writes since 0.4.36; 0 when absent. */
static int64_t capture_start_ns(const jp_xspace *xs, const jp_plane *planes, size_t n_planes) {
    for (size_t i = 0; i < n_planes; i++) {
        if (!jp_str_eq(planes[i].name, "Task Environment")) continue;
        jp_stats_iter it = jp_stats_of_plane(xs, &planes[i]);
        jp_stat st;
        while (jp_stats_next(&it, &st, NULL) == 1) {
            const jp_stat_meta *sm = jp_plane_stat_meta_view(&planes[i], st.metadata_id);
            if (sm && jp_str_eq(sm->name, "profile_start_time")) return jp_stat_int(&st) > 0 ? jp_stat_int(&st) : 0;
        }
    }
    return 0;
}

int jp_model_add_xspace(jp_model *m, jp_xspace *xs, const char *host, const jp_load_options *opt, jp_error *err) {
    size_t n_planes;
    const jp_plane *planes = jp_xspace_planes(xs, &n_planes);
    const char *name = jp_intern_str(&m->intern, host, strlen(host));
    jp_model_host *h = name && m->hosts.n < UINT32_MAX ? jp_vec_push(&m->hosts, sizeof *h) : NULL;
    if (!h) return nomem(err);
    *h = (jp_model_host){name, capture_start_ns(xs, planes, n_planes), INT64_MAX, INT64_MIN, m->n_lines,
                         (uint32_t)m->devices.n, m->spans.n, m->xfers.n, m->mem.n};
    m->n_events += jp_xspace_event_count(xs);
    int64_t first = m->first_ps, last = m->last_ps; /* the events read below set this host's span */
    m->first_ps = INT64_MAX;
    m->last_ps = INT64_MIN;
    plane_ctx c = {.m = m, .xs = xs, .host = h->name, .host_index = (uint32_t)(m->hosts.n - 1), .err = err};
    for (size_t i = 0; i < n_planes; i++) c.has_devices |= jp_plane_role_of(&planes[i], NULL) == JP_ROLE_DEVICE;
    int rc = jp_stream_open(&c.stream, xs, opt, parse_threads(xs, opt), err);
    if (rc == JP_OK) rc = read_planes(&c, planes, n_planes, opt);
    jp_stream_close(c.stream);
    size_t n_names;
    const jp_str *names = jp_xspace_hostnames(xs, &n_names);
    double cal_tflops = 0, cal_gbps = 0;
    int calibrated = opt && n_names && jp_cpu_peaks_read(opt->cpu_peaks_file, names[0], &cal_tflops, &cal_gbps);
    for (size_t d = h->first_device; opt && d < m->devices.n; d++) {
        jp_device *dev = &JP_VEC_AT(&m->devices, jp_device, d);
        if (calibrated && dev->platform == JP_PLATFORM_CPU && dev->peak_flops <= 0) {
            dev->peak_flops = cal_tflops * 1e12, dev->peak_bw = cal_gbps * 1e9;
            dev->peak_source = "calibrated";
        }
        jp_device_override_peaks(dev, opt->peak_tflops, opt->peak_gbps);
    }
    h = &JP_VEC_AT(&m->hosts, jp_model_host, m->hosts.n - 1);
    h->first_ps = m->first_ps;
    h->last_ps = m->last_ps;
    m->first_ps = first < m->first_ps ? first : m->first_ps;
    m->last_ps = last > m->last_ps ? last : m->last_ps;
    return rc;
}

/* ---- finishing: order, nest ------------------------------------------------------------------ */

static int cmp_op_ev(const void *a, const void *b) {
    const jp_op_ev *x = a, *y = b;
    if (x->line != y->line) return x->line < y->line ? -1 : 1;
    if (x->start_ps != y->start_ps) return x->start_ps < y->start_ps ? -1 : 1;
    return (x->nest_end_ps < y->nest_end_ps) - (x->nest_end_ps > y->nest_end_ps); /* parents first */
}

static int cmp_host_ev(const void *a, const void *b) {
    const jp_host_ev *x = a, *y = b;
    if (x->line != y->line) return x->line < y->line ? -1 : 1;
    if (x->start_ps != y->start_ps) return x->start_ps < y->start_ps ? -1 : 1;
    return (x->end_ps < y->end_ps) - (x->end_ps > y->end_ps);
}

/* Self time by nesting: on one line, an event fully inside an open one is its child; a parent's
 * self time is its duration minus its direct children's durations. One stack walk per line. */
#define MAX_DEPTH 256
static void nest_ops(jp_model *m) {
    jp_op_ev *ev = m->ops.data;
    size_t stack[MAX_DEPTH], depth = 0;
    for (size_t i = 0; i < m->ops.n; i++) {
        while (depth && (ev[stack[depth - 1]].line != ev[i].line || ev[i].start_ps >= ev[stack[depth - 1]].nest_end_ps ||
                         ev[i].nest_end_ps > ev[stack[depth - 1]].nest_end_ps))
            depth--;
        if (depth) {
            /* a child takes from its parent the time it spans inside it, or its own busy time when
             * that is less (a TPU op's device duration; an XLA:CPU async op runs on past its span) */
            jp_op_ev *parent = &ev[stack[depth - 1]];
            int64_t child = ev[i].nest_end_ps - ev[i].start_ps;
            if (ev[i].dur_ps < child) child = ev[i].dur_ps;
            parent->self_ps = parent->self_ps > child ? parent->self_ps - child : 0;
        }
        if (depth < MAX_DEPTH) stack[depth++] = i;
    }
}

/* The same walk for host threads, also giving each compile event the module of its enclosing
 * PjitFunction(f) dispatch ("jit_f"). */
static int nest_host(jp_model *m) {
    jp_host_ev *ev = m->host.data;
    size_t stack[MAX_DEPTH], depth = 0;
    for (size_t i = 0; i < m->host.n; i++) {
        while (depth && (ev[stack[depth - 1]].line != ev[i].line || ev[i].start_ps >= ev[stack[depth - 1]].end_ps ||
                         ev[i].end_ps > ev[stack[depth - 1]].end_ps))
            depth--;
        ev[i].depth = (uint16_t)depth;
        for (size_t k = 0; k < depth && !ev[i].recursive; k++) ev[i].recursive = ev[stack[k]].name == ev[i].name;
        if (depth && ev[stack[depth - 1]].kind != JP_HOST_STEP) {
            jp_host_ev *parent = &ev[stack[depth - 1]];
            int64_t d = ev[i].end_ps - ev[i].start_ps;
            parent->self_ps = parent->self_ps > d ? parent->self_ps - d : 0;
        }
        if (ev[i].kind == JP_HOST_COMPILE) {
            for (size_t k = depth; k-- > 0;) {
                const char *n = ev[stack[k]].name;
                if (!ev[stack[k]].is_dispatch) continue;
                char buf[512];
                size_t len = strlen(n) - strlen("PjitFunction()");
                int w = snprintf(buf, sizeof buf, "jit_%.*s", (int)(len > 400 ? 400 : len), n + strlen("PjitFunction("));
                if (!(ev[i].module = jp_intern_str(&m->intern, buf, (size_t)w))) return JP_ERR_NOMEM;
                break;
            }
        }
        if (depth < MAX_DEPTH) stack[depth++] = i;
    }
    return JP_OK;
}

/* The host whose devices include device d. */
static uint32_t host_of_device(const jp_model *m, uint32_t d) {
    uint32_t h = (uint32_t)m->hosts.n;
    while (h > 1 && JP_VEC_AT(&m->hosts, jp_model_host, h - 1).first_device > d) h--;
    return h ? h - 1 : 0;
}

/* XLA:CPU (and GPU when present) tag each op with the run_id of its execution. */
static int group_executions(jp_model *m) {
    jp_map index = {0};
    const jp_op_ev *ev = m->ops.data;
    const jp_opdef *defs = m->opdefs.data;
    size_t before = m->execs.n;
    int rc = JP_OK;
    for (size_t i = 0; i < m->ops.n && rc == JP_OK; i++) {
        if (!ev[i].run_id || before) continue; /* TPU profiles already have their XLA Modules */
        const char *module = defs[ev[i].op].module;
        int found;
        uint32_t k = jp_map_get_or_put(&index, jp_ptr_key(module), (uint64_t)ev[i].run_id, defs[ev[i].op].device,
                                       (uint32_t)m->execs.n, &found);
        if (k == UINT32_MAX) { rc = JP_ERR_NOMEM; break; }
        if (!found) {
            jp_exec *x = jp_vec_push(&m->execs, sizeof *x);
            if (!x) { rc = JP_ERR_NOMEM; break; }
            *x = (jp_exec){module, ev[i].run_id, ev[i].start_ps, ev[i].end_ps, host_of_device(m, defs[ev[i].op].device),
                           defs[ev[i].op].device};
        }
        jp_exec *x = &JP_VEC_AT(&m->execs, jp_exec, k);
        if (ev[i].start_ps < x->start_ps) x->start_ps = ev[i].start_ps;
        if (ev[i].end_ps > x->end_ps) x->end_ps = ev[i].end_ps;
    }
    jp_map_deinit(&index);
    if (rc == JP_OK && m->execs.n > 1) qsort(m->execs.data, m->execs.n, sizeof(jp_exec), jp_exec_cmp_start);
    return rc;
}

/* qsort unless the array is in order already, as events read line by line mostly are; glibc's
 * qsort is a stable merge sort, so skipping it on sorted input changes nothing. */
static void sort_unless_sorted(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
    const char *p = base;
    size_t i = 1;
    while (i < n && cmp(p + (i - 1) * size, p + i * size) <= 0) i++;
    if (i < n) qsort(base, n, size, cmp);
}

int jp_model_finish(jp_model *m, jp_error *err) {
    if (m->ops.n > 1) sort_unless_sorted(m->ops.data, m->ops.n, sizeof(jp_op_ev), cmp_op_ev);
    nest_ops(m);
    if (m->host.n > 1) sort_unless_sorted(m->host.data, m->host.n, sizeof(jp_host_ev), cmp_host_ev);
    if (nest_host(m) || group_executions(m)) return nomem(err);
    if (m->device_steps.n > 1) qsort(m->device_steps.data, m->device_steps.n, sizeof(jp_exec), jp_exec_cmp_start);
    if (m->first_ps > m->last_ps) m->first_ps = m->last_ps = 0;
    return JP_OK;
}

/* ---- one host at a time (multi-host analysis) ----------------------------------------------- */

/* The first index in [0, n) whose element's line is >= line; elements sorted by line. */
static size_t first_at_line(const void *base, size_t n, size_t size, size_t line_off, uint32_t line) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t l;
        memcpy(&l, (const char *)base + mid * size + line_off, sizeof l);
        if (l < line) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static jp_vec sub(const jp_vec *v, size_t size, size_t from, size_t to) {
    return (jp_vec){v->n ? (char *)v->data + from * size : NULL, to - from, 0};
}

/* Host h's run of a vector sorted by line (line_off: where an element keeps its line). */
static jp_vec line_run(const jp_model *m, size_t h, const jp_vec *v, size_t size, size_t line_off) {
    const jp_model_host *hs = m->hosts.data;
    size_t from = first_at_line(v->data, v->n, size, line_off, hs[h].first_line);
    size_t to = h + 1 < m->hosts.n ? first_at_line(v->data, v->n, size, line_off, hs[h + 1].first_line) : v->n;
    return sub(v, size, from, to);
}

/* The event vectors narrowed to host h (executions and device steps left as they are). */
static void narrow_to_host(const jp_model *m, size_t h, jp_model *view) {
    const jp_model_host *hs = &JP_VEC_AT(&m->hosts, jp_model_host, h), *next = h + 1 < m->hosts.n ? hs + 1 : NULL;
    *view = *m;
    view->hosts = sub(&m->hosts, sizeof *hs, h, h + 1);
    view->ops = line_run(m, h, &m->ops, sizeof(jp_op_ev), offsetof(jp_op_ev, line));
    view->host = line_run(m, h, &m->host, sizeof(jp_host_ev), offsetof(jp_host_ev, line));
    view->spans = sub(&m->spans, sizeof(jp_span), hs->first_span, next ? next->first_span : m->spans.n);
    view->xfers = sub(&m->xfers, sizeof(jp_xfer_ev), hs->first_xfer, next ? next->first_xfer : m->xfers.n);
    view->mem = sub(&m->mem, sizeof(jp_mem_ev), hs->first_mem, next ? next->first_mem : m->mem.n);
    view->first_ps = hs->first_ps <= hs->last_ps ? hs->first_ps : 0;
    view->last_ps = hs->first_ps <= hs->last_ps ? hs->last_ps : 0;
}

static int copy_host_execs(const jp_vec *from, uint32_t h, jp_vec *to) {
    to->n = 0;
    for (size_t i = 0; i < from->n; i++) {
        const jp_exec *x = &JP_VEC_AT(from, jp_exec, i);
        if (x->host != h) continue;
        jp_exec *y = jp_vec_push(to, sizeof *y);
        if (!y) return JP_ERR_NOMEM;
        *y = *x;
    }
    return JP_OK;
}

int jp_model_host_view(const jp_model *m, size_t h, jp_model *view, jp_vec scratch[2]) {
    narrow_to_host(m, h, view);
    if (copy_host_execs(&m->execs, (uint32_t)h, &scratch[0]) || copy_host_execs(&m->device_steps, (uint32_t)h, &scratch[1]))
        return JP_ERR_NOMEM;
    view->execs = sub(&scratch[0], sizeof(jp_exec), 0, scratch[0].n);
    view->device_steps = sub(&scratch[1], sizeof(jp_exec), 0, scratch[1].n);
    return JP_OK;
}

static void shift_execs(jp_vec *v, uint32_t h, int64_t delta) {
    for (size_t i = 0; i < v->n; i++) {
        jp_exec *x = &JP_VEC_AT(v, jp_exec, i);
        if (x->host == h) x->start_ps += delta, x->end_ps += delta;
    }
    if (v->n > 1) qsort(v->data, v->n, sizeof(jp_exec), jp_exec_cmp_start);
}

void jp_model_shift_host(jp_model *m, size_t h, int64_t delta) {
    if (!delta) return;
    jp_model view;
    narrow_to_host(m, h, &view);
    for (size_t i = 0; i < view.ops.n; i++) {
        jp_op_ev *e = &JP_VEC_AT(&view.ops, jp_op_ev, i);
        e->start_ps += delta, e->end_ps += delta, e->nest_end_ps += delta;
    }
    for (size_t i = 0; i < view.host.n; i++) {
        jp_host_ev *e = &JP_VEC_AT(&view.host, jp_host_ev, i);
        e->start_ps += delta, e->end_ps += delta;
    }
    for (size_t i = 0; i < view.spans.n; i++) {
        jp_span *e = &JP_VEC_AT(&view.spans, jp_span, i);
        e->start_ps += delta, e->end_ps += delta;
    }
    for (size_t i = 0; i < view.xfers.n; i++) {
        jp_xfer_ev *e = &JP_VEC_AT(&view.xfers, jp_xfer_ev, i);
        e->start_ps += delta, e->end_ps += delta;
    }
    for (size_t i = 0; i < view.mem.n; i++) JP_VEC_AT(&view.mem, jp_mem_ev, i).t_ps += delta;
    shift_execs(&m->execs, (uint32_t)h, delta);
    shift_execs(&m->device_steps, (uint32_t)h, delta);
    jp_model_host *hs = &JP_VEC_AT(&m->hosts, jp_model_host, h);
    if (hs->first_ps > hs->last_ps) return;
    hs->first_ps += delta, hs->last_ps += delta;
    m->first_ps = INT64_MAX, m->last_ps = INT64_MIN;
    for (size_t i = 0; i < m->hosts.n; i++) {
        const jp_model_host *o = &JP_VEC_AT(&m->hosts, jp_model_host, i);
        if (o->first_ps > o->last_ps) continue;
        if (o->first_ps < m->first_ps) m->first_ps = o->first_ps;
        if (o->last_ps > m->last_ps) m->last_ps = o->last_ps;
    }
}
