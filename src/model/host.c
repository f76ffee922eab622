/* host.c - host planes: thread events classified (user, runtime, Python, compile, step),
 * allocations, XLA:CPU's op thunks and transfers, and asynchronous ops linked to their "end:". */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "decode/xnames.h"
#include "model/build_int.h"

static const char *const RUNTIME_NAMES[] = {
    "ParseArguments", "shard_args", "Handle input", "Wait", "DevicePut", "BatchedCopyToDevice",
    "AllocateOutputBuffers", "RunInvariantCheckers", "HLO passes", "ThreadpoolListener",
    "MemoryAllocation", "MemoryDeallocation", "H2D", "D2H", "end: ",
    /* jax.profiler.annotate_function and IFRT TraceMes on the Python thread, not user code */
    "ExecuteReplicated.", "batched_copy_array_to_devices", "ArrayImpl.", "pickle_util.",
    /* PJRT's C API (GPU plugins: PJRT_LoadedExecutable_Execute, ...) and jaxlib's pjit fast path */
    "PJRT_", "cpp_pjit",
};
static const char *const COMPILE_NAMES[] = {
    "backend_compile", "lower_sharding_computation", "lower_jaxpr_to_module", "compile_or_get_cached",
};

static int host_kind(jp_str name, const jp_ev_info *info) {
    if (name.len && name.ptr[0] == '$') return JP_HOST_PYTHON;
    if (jp_info_has(info, K_STEP_NUM) && jp_info_has(info, K_ROOT)) return JP_HOST_STEP;
    for (size_t i = 0; i < sizeof COMPILE_NAMES / sizeof COMPILE_NAMES[0]; i++)
        if (jp_xn_has_prefix(name, COMPILE_NAMES[i])) return JP_HOST_COMPILE;
    if (jp_xn_contains(name, "::") || (name.len && name.ptr[name.len - 1] == ')' && jp_xn_contains(name, "(")))
        return JP_HOST_RUNTIME;
    for (size_t i = 0; i < sizeof RUNTIME_NAMES / sizeof RUNTIME_NAMES[0]; i++)
        if (jp_xn_has_prefix(name, RUNTIME_NAMES[i])) return JP_HOST_RUNTIME;
    /* CUDA driver/runtime API calls traced by CUPTI: cuLaunchKernel, cudaMemcpyAsync, ... */
    if (name.len > 2 && jp_xn_has_prefix(name, "cu") && (jp_xn_has_prefix(name, "cuda") || (name.ptr[2] >= 'A' && name.ptr[2] <= 'Z')))
        return JP_HOST_RUNTIME;
    return JP_HOST_USER;
}

static int cpu_transfer_kind(jp_str name) {
    if (jp_xn_has_prefix(name, "H2D")) return JP_XFER_H2D;
    if (jp_xn_has_prefix(name, "D2H")) return JP_XFER_D2H;
    return -1;
}

static int add_memory_event(jp_build_ctx *c, jp_str name, int64_t t, const jp_ev_info *info) {
    if (!(jp_str_eq(name, "MemoryAllocation") || jp_str_eq(name, "MemoryDeallocation"))) return 0;
    jp_mem_ev *me = jp_vec_push(&c->m->mem, sizeof *me);
    if (!me) return jp_build_nomem(c->err);
    /* One allocator per name; without one, per device (libtpu says which chip of the host in
     * index_on_host: each chip has its own HBM and allocator). Memory in use counts the bytes
     * reserved beside those allocated, as XProf's memory profile does. */
    char chip[32];
    const char *alloc = jp_info_has(info, K_ALLOCATOR) ? jp_build_info_interned(c, info, K_ALLOCATOR)
                        : jp_info_has(info, K_INDEX_ON_HOST)
                            ? jp_intern_str(&c->m->intern, chip,
                                            (size_t)snprintf(chip, sizeof chip, "device %lld",
                                                             (long long)jp_info_int(info, K_INDEX_ON_HOST)))
                            : jp_intern_str(&c->m->intern, "default", 7);
    int64_t in_use = jp_info_int(info, K_BYTES_ALLOCATED), reserved = jp_info_int(info, K_BYTES_RESERVED);
    if (reserved > 0 && in_use <= INT64_MAX - reserved) in_use += reserved;
    *me = (jp_mem_ev){t, alloc, in_use, jp_info_int(info, K_PEAK_BYTES)};
    return me->allocator ? 1 : jp_build_nomem(c->err);
}

void jp_host_dispatch_module(const char *dispatch_name, jp_text *out) {
    static const char PREFIX[] = "PjitFunction(";
    size_t n = strlen(dispatch_name), p = sizeof PREFIX - 1;
    const char *fn = n >= p && memcmp(dispatch_name, PREFIX, p) == 0 ? dispatch_name + p : dispatch_name;
    size_t len = strlen(fn);
    if (len && fn[len - 1] == ')') len--;
    jp_text_puts(out, "jit_");
    jp_text_put(out, fn, len);
}

/* Host time [start, end) on a line: a span, unless it lies inside the line's last one. Only the
 * sweep reads host-time spans, and only their union (whether any is open), which an event nested
 * in another of its line cannot change; a Python-traced capture nests its million frames so, and
 * keeps a span per top-level call instead (compile spans are all kept: findings count them). */
static int add_host_span(jp_build_ctx *c, uint32_t line, int64_t start, int64_t end) {
    if (c->host_span.line == line && c->host_span.start <= start && end <= c->host_span.end) return JP_OK;
    c->host_span.line = line, c->host_span.start = start, c->host_span.end = end;
    return jp_build_add_span(c->m, start, end, UINT32_MAX, JP_PART_HOST) ? jp_build_nomem(c->err) : JP_OK;
}

static int add_host_event(jp_build_ctx *c, const jp_event_meta *em, jp_str name, uint32_t line, int64_t start, int64_t dur,
                          const jp_ev_info *info) {
    jp_host_ev *h = jp_vec_push(&c->m->host, sizeof *h);
    if (!h) return jp_build_nomem(c->err);
    h->start_ps = start;
    h->end_ps = start + dur;
    h->self_ps = dur;
    h->line = line;
    h->kind = (uint8_t)host_kind(name, info);
    h->is_dispatch = (uint8_t)jp_xn_has_prefix(name, "PjitFunction(");
    h->name = jp_build_event_name(c, em);
    if (h->kind == JP_HOST_STEP) h->step_num = jp_info_int(info, K_STEP_NUM);
    else if (!(h->module = jp_intern_str(&c->m->intern, "", 0))) return jp_build_nomem(c->err);
    if (!h->name) return jp_build_nomem(c->err);
    int rc = jp_build_nest_track(c, &c->host_nest, line, start, start + dur);
    if (rc || h->kind == JP_HOST_STEP || dur == 0) return rc;
    if (h->kind == JP_HOST_COMPILE) return jp_build_add_span(c->m, start, start + dur, UINT32_MAX, JP_PART_COMPILE) ? jp_build_nomem(c->err) : JP_OK;
    return add_host_span(c, line, start, start + dur);
}

/* ---- XLA:CPU's devices ------------------------------------------------------------------------ */

/* XLA:CPU runs one program on several devices of one process (JAX's
 * --xla_force_host_platform_device_count, or a TFRT CPU client's devices): each thunk TraceMe names
 * the local device it ran for in `device_ordinal` (thunk_executor.cc), so each ordinal is a device
 * of its own, "/device:CPU:<ordinal>" (GPU planes are numbered the same way, per host). A plane with
 * one ordinal, or events that name none (older XLA; the H2D/D2H copies), keeps today's single device
 * named after the plane, "/host:CPU". Devices are created as ordinals are first seen, in the order of
 * the plane's threads, and ordered by ordinal once the plane is read (cpu_devs_finish). */
typedef struct cpu_dev {
    int64_t ordinal;  /* -1: events that name no device */
    uint32_t device;  /* into m->devices; UINT32_MAX while none was needed, or when --device leaves it out */
} cpu_dev;

typedef struct cpu_xfer { /* an XLA:CPU copy, kept until the plane's devices are known */
    int64_t start_ps, dur_ps;
    int kind;
} cpu_xfer;

typedef struct cpu_devs {
    jp_vec v;              /* cpu_dev, one per ordinal seen */
    jp_map index;          /* ordinal -> its entry in v (a hostile file may name millions) */
    size_t last;           /* the previous lookup's entry: a thread's events mostly name one device */
    uint32_t first_device; /* m->devices.n when the plane began: its devices follow */
    size_t first_opdef;    /* m->opdefs.n then */
    jp_vec xfers;          /* cpu_xfer */
} cpu_devs;

static int is_index(const char *d) { return strspn(d, "0123456789") == strlen(d); }

/* Whether --device keeps ordinal's device: its name matches, or (-1) "/host:CPU" matches as before
 * (index 0: XLA:CPU's only device); a filter that is no index and names the plane ("host",
 * "/host:CPU") keeps all of them. */
static int cpu_dev_selected(int64_t ordinal, const jp_load_options *opt) {
    jp_str plane = {JP_XN_PLANE_HOST_CPU, sizeof JP_XN_PLANE_HOST_CPU - 1};
    if (!opt || !opt->device || !*opt->device || ordinal < 0) return jp_device_selected(plane, opt);
    char name[48];
    int n = snprintf(name, sizeof name, "/device:CPU:%lld", (long long)ordinal);
    if (jp_device_selected((jp_str){name, (size_t)n}, opt)) return 1;
    return !is_index(opt->device) && jp_device_selected(plane, opt);
}

/* The device of ordinal's events (-1: none named) in *dev, UINT32_MAX when --device leaves it out. */
static int cpu_device(jp_build_ctx *c, cpu_devs *d, int64_t ordinal, const jp_load_options *opt, uint32_t *dev) {
    cpu_dev *e = d->last < d->v.n ? &JP_VEC_AT(&d->v, cpu_dev, d->last) : NULL;
    if (!e || e->ordinal != ordinal) {
        int found;
        uint32_t k = jp_map_get_or_put(&d->index, (uint64_t)ordinal, 0, 0, (uint32_t)d->v.n, &found);
        e = k == UINT32_MAX ? NULL : found ? &JP_VEC_AT(&d->v, cpu_dev, k) : jp_vec_push(&d->v, sizeof *e);
        if (!e) return jp_build_nomem(c->err);
        d->last = k;
        if (found) {
            *dev = e->device;
            return JP_OK;
        }
        *e = (cpu_dev){ordinal, UINT32_MAX};
        if (cpu_dev_selected(ordinal, opt)) {
            char name[48];
            int n = snprintf(name, sizeof name, "/device:CPU:%lld", (long long)ordinal);
            e->device = jp_build_add_device(c, ordinal < 0 ? c->plane->name : (jp_str){name, (size_t)n}, JP_PLATFORM_CPU);
            if (e->device == UINT32_MAX) return jp_build_nomem(c->err);
        }
    }
    *dev = e->device;
    return JP_OK;
}

static int cmp_cpu_dev(const void *a, const void *b) { /* by ordinal, events naming none last */
    uint64_t x = (uint64_t)((const cpu_dev *)a)->ordinal, y = (uint64_t)((const cpu_dev *)b)->ordinal;
    return (x > y) - (x < y);
}

/* Orders the plane's devices by ordinal: devices and the op definitions (their only records so far:
 * transfers are added after, op spans by link_op_ends) move to their new indices. m->op_index keeps
 * the old ones in its keys; they stay within this plane's devices, which no later plane looks up. */
static int cpu_devs_order(jp_build_ctx *c, cpu_devs *d, size_t n) {
    jp_model *m = c->m;
    uint32_t first = d->first_device, *to = malloc(n * sizeof *to);
    jp_device *was = malloc(n * sizeof *was);
    if (!to || !was) {
        free(to), free(was);
        return jp_build_nomem(c->err);
    }
    memcpy(was, &JP_VEC_AT(&m->devices, jp_device, first), n * sizeof *was);
    cpu_dev *e = d->v.data;
    qsort(e, d->v.n, sizeof *e, cmp_cpu_dev);
    uint32_t at = first;
    for (size_t i = 0; i < d->v.n; i++) {
        if (e[i].device == UINT32_MAX) continue;
        to[e[i].device - first] = at;
        JP_VEC_AT(&m->devices, jp_device, at) = was[e[i].device - first];
        e[i].device = at++;
    }
    for (size_t i = d->first_opdef; i < m->opdefs.n; i++) {
        jp_opdef *o = &JP_VEC_AT(&m->opdefs, jp_opdef, i);
        if (o->device >= first && o->device - first < n) o->device = to[o->device - first];
    }
    free(to), free(was);
    jp_map_deinit(&d->index); /* its entries moved: the copies' lookup (cpu_devs_finish) indexes them again */
    d->last = SIZE_MAX;
    for (size_t i = 0; i < d->v.n; i++)
        if (jp_map_get_or_put(&d->index, (uint64_t)e[i].ordinal, 0, 0, (uint32_t)i, NULL) == UINT32_MAX)
            return jp_build_nomem(c->err);
    return JP_OK;
}

/* Once the plane is read: several ordinals are ordered devices; one ordinal alone keeps the name
 * "/host:CPU" it had before devices were told apart. XLA:CPU's copies (H2D/D2H) name no device:
 * they go to that one device, else to "/host:CPU", the device of the events that name none. */
static int cpu_devs_finish(jp_build_ctx *c, cpu_devs *d, const jp_load_options *opt) {
    jp_model *m = c->m;
    size_t n_ordinals = 0, n = m->devices.n - d->first_device;
    for (size_t i = 0; i < d->v.n; i++) n_ordinals += JP_VEC_AT(&d->v, cpu_dev, i).ordinal >= 0;
    uint32_t xfer_dev = UINT32_MAX;
    int rc = JP_OK;
    if (n_ordinals > 1 && n > 1) {
        rc = cpu_devs_order(c, d, n);
    } else if (n_ordinals == 1 && n == 1 && d->v.n == 1) {
        jp_device *dev = &JP_VEC_AT(&m->devices, jp_device, d->first_device);
        if (!(dev->name = jp_intern_view(&m->intern, c->plane->name))) rc = jp_build_nomem(c->err);
        xfer_dev = d->first_device;
    }
    if (rc || !d->xfers.n) return rc;
    /* --device N picks a device of several, not the host's copies that "/host:CPU" (index 0) holds */
    int picked = n_ordinals > 1 && opt && opt->device && *opt->device && is_index(opt->device);
    if (xfer_dev == UINT32_MAX && !picked && (rc = cpu_device(c, d, -1, opt, &xfer_dev))) return rc;
    for (size_t i = 0; i < d->xfers.n && xfer_dev != UINT32_MAX && rc == JP_OK; i++) {
        const cpu_xfer *x = &JP_VEC_AT(&d->xfers, cpu_xfer, i);
        rc = jp_build_add_xfer(c, xfer_dev, x->kind, x->start_ps, x->dur_ps, 0);
    }
    return rc;
}

/* XLA:CPU runs each HLO op as a thunk TraceMe on a worker thread, tagged hlo_op/hlo_module and the
 * device it ran for. */
static int add_cpu_op(jp_build_ctx *c, cpu_devs *devs, const jp_load_options *opt, uint32_t line, int64_t start,
                      int64_t dur, const jp_ev_info *info) {
    uint32_t dev;
    int64_t ordinal = jp_info_has(info, K_DEVICE_ORDINAL) && info->v[K_DEVICE_ORDINAL].i >= 0 ? info->v[K_DEVICE_ORDINAL].i : -1;
    int rc = cpu_device(c, devs, ordinal, opt, &dev);
    if (rc || dev == UINT32_MAX) return rc;
    const char *module = jp_build_info_interned(c, info, K_HLO_MODULE), *name = jp_build_info_interned(c, info, K_HLO_OP);
    if (!module || !name) return jp_build_nomem(c->err);
    int64_t program = jp_build_program_id(info);
    uint32_t op = jp_build_op_for(c, dev, module, name, program, info);
    if (op == UINT32_MAX) return jp_build_nomem(c->err);
    rc = jp_build_add_op_event(c, op, line, start, dur, jp_info_int(info, K_RUN_ID), program, 0);
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

typedef struct run_start { /* one execution (module, run_id) of this plane and when it began */
    const char *module;
    int64_t start_ps;
    uint32_t idx;           /* its index in first-seen order */
} run_start;

static int cmp_run_start(const void *a, const void *b) {
    const run_start *x = a, *y = b;
    if (x->module != y->module) return (uintptr_t)x->module < (uintptr_t)y->module ? -1 : 1;
    return (x->start_ps > y->start_ps) - (x->start_ps < y->start_ps);
}

/* For each execution (module, run_id) among ops[first_op..], the start of the next execution of
 * the same module (INT64_MAX for the last): `runs` maps the key to an index into *next. */
static int next_run_starts(const jp_model *m, size_t first_op, jp_map *runs, int64_t **next) {
    jp_vec v = {0};
    const jp_opdef *defs = m->opdefs.data;
    int rc = JP_OK;
    const char *last_module = NULL; /* a thread's ops come a run at a time: the last key is asked again */
    int64_t last_run = 0;
    uint32_t last_k = UINT32_MAX;
    for (size_t i = first_op; i < m->ops.n && rc == JP_OK; i++) {
        const jp_op_ev *op = &JP_VEC_AT(&m->ops, jp_op_ev, i);
        if (!op->run_id) continue;
        int found = 1;
        const char *module = defs[op->op].module;
        uint32_t k = module == last_module && op->run_id == last_run && last_k != UINT32_MAX
                         ? last_k
                         : jp_map_get_or_put(runs, jp_ptr_key(module), (uint64_t)op->run_id, 0, (uint32_t)v.n, &found);
        last_module = module, last_run = op->run_id, last_k = k;
        run_start *r = k == UINT32_MAX ? NULL : found ? &JP_VEC_AT(&v, run_start, k) : jp_vec_push(&v, sizeof *r);
        if (!r) rc = JP_ERR_NOMEM;
        else if (!found) *r = (run_start){defs[op->op].module, op->start_ps, k};
        else if (op->start_ps < r->start_ps) r->start_ps = op->start_ps;
    }
    *next = rc == JP_OK ? malloc((v.n ? v.n : 1) * sizeof **next) : NULL;
    if (rc == JP_OK && !*next) rc = JP_ERR_NOMEM;
    if (rc == JP_OK) {
        run_start *r = v.data;
        if (v.n > 1) qsort(r, v.n, sizeof *r, cmp_run_start);
        for (size_t i = 0; i < v.n; i++)
            (*next)[r[i].idx] = i + 1 < v.n && r[i + 1].module == r[i].module ? r[i + 1].start_ps : INT64_MAX;
    }
    jp_vec_free(&v);
    return rc;
}

/* The key of an op's run on its device: (module, instruction, run) with the device in the top byte
 * of the module pointer's word (user-space pointers leave it zero). */
static void run_key(const jp_opdef *d, int64_t run_id, uint64_t k[3]) {
    k[0] = jp_ptr_key(d->name);
    k[1] = jp_ptr_key(d->module) ^ ((uint64_t)(d->device & 0xff) << 56);
    k[2] = (uint64_t)run_id;
}

/* Which opdefs use the result of an asynchronous op of ops[first_op..] (one with a flow to an
 * "end:" event): only their starts bound an end. A flag per opdef, malloc'd; NULL when out of memory. */
static uint8_t *async_users(const jp_model *m, size_t first_op) {
    size_t n = m->opdefs.n;
    uint8_t *async = calloc(n ? n : 1, 1), *user = calloc(n ? n : 1, 1);
    jp_map names = {0}; /* (module, name) of every user of an asynchronous op */
    int ok = async && user;
    for (size_t i = first_op; ok && i < m->ops.n; i++) {
        const jp_op_ev *op = &JP_VEC_AT(&m->ops, jp_op_ev, i);
        if (op->flow) async[op->op] = 1;
    }
    for (size_t d = 0; ok && d < n; d++) {
        const jp_opdef *def = &JP_VEC_AT(&m->opdefs, jp_opdef, d);
        for (uint32_t u = 0; async[d] && def->hlo && u < def->hlo->n_users && ok; u++)
            ok = jp_map_get_or_put(&names, jp_ptr_key(def->module), jp_ptr_key(def->hlo->users[u]), 0, 0, NULL) !=
                 UINT32_MAX;
    }
    for (size_t d = 0; ok && names.n && d < n; d++) {
        const jp_opdef *def = &JP_VEC_AT(&m->opdefs, jp_opdef, d);
        user[d] = jp_map_get(&names, jp_ptr_key(def->module), jp_ptr_key(def->name), 0) != UINT32_MAX;
    }
    jp_map_deinit(&names);
    free(async);
    if (!ok) {
        free(user);
        return NULL;
    }
    return user;
}

/* The earliest start of each (op, run, device) among ops[first_op..] whose opdef uses an
 * asynchronous op's result: `starts` maps run_key to an index into *at. */
static int user_starts(const jp_model *m, size_t first_op, jp_map *starts, jp_vec *at) {
    const jp_opdef *defs = m->opdefs.data;
    uint8_t *user = async_users(m, first_op);
    if (!user) return JP_ERR_NOMEM;
    int rc = JP_OK;
    for (size_t i = first_op; i < m->ops.n && rc == JP_OK; i++) {
        const jp_op_ev *op = &JP_VEC_AT(&m->ops, jp_op_ev, i);
        if (!op->run_id || !user[op->op]) continue;
        uint64_t k[3];
        int found;
        run_key(&defs[op->op], op->run_id, k);
        uint32_t idx = jp_map_get_or_put(starts, k[0], k[1], k[2], (uint32_t)at->n, &found);
        int64_t *t = idx == UINT32_MAX ? NULL : found ? &JP_VEC_AT(at, int64_t, idx) : jp_vec_push(at, sizeof *t);
        if (!t) rc = JP_ERR_NOMEM;
        else if (!found || op->start_ps < *t) *t = op->start_ps;
    }
    free(user);
    return rc;
}

/* The first start, after `after`, of a user of op d's result in the same run on the same device:
 * the op's value was ready by then. INT64_MAX when none ran (or the HLO is unknown). */
static int64_t first_user_start(const jp_opdef *d, int64_t run_id, int64_t after, const jp_map *starts,
                                const jp_vec *at) {
    int64_t first = INT64_MAX;
    for (uint32_t u = 0; d->hlo && u < d->hlo->n_users; u++) { /* names interned in the model's table */
        jp_opdef key = {.name = d->hlo->users[u], .module = d->module, .device = d->device};
        uint64_t k[3];
        run_key(&key, run_id, k);
        uint32_t idx = jp_map_get(starts, k[0], k[1], k[2]);
        int64_t t = idx == UINT32_MAX ? INT64_MAX : JP_VEC_AT(at, int64_t, idx);
        if (t > after && t < first) first = t;
    }
    return first;
}

/* XLA:CPU runs some ops asynchronously: the op's TraceMe covers the launch, and a later
 * "end: <op>" event linked to it by a flow id marks completion. An op lasts until then. Flow ids
 * are per process, so the linking is done per host plane; then the ops get their spans. The end
 * events are sorted by flow and searched: a hash map of them would be larger and, one cache miss
 * per op, slower. An "end:" recorded after the next execution of the op's module began is not its
 * completion: XLA:CPU records the last async op's end of a run only when its thread pool next
 * wakes (seen in `jaxprof demo`: a run's final dot "ends" 5 ms into the next run, merging the two
 * runs into one execution); such an op keeps its own TraceMe's end. Nor does an op run past the
 * start of the first op that uses its result (same run, same device): the pool records the "end:"
 * late there too (an 8-device psum after its dot read 91% hidden under the dot, 0% by the thunks). */
static int link_op_ends(jp_build_ctx *c, size_t first_op, jp_vec *ends) {
    op_end *e = ends->data;
    size_t at = 0; /* where the previous op's end was found */
    const char *last_module = NULL; /* the run looked up last, and what it gave */
    int64_t last_run = 0;
    uint32_t last_k = UINT32_MAX;
    jp_map runs = {0};
    int64_t *next = NULL;
    const jp_opdef *defs = c->m->opdefs.data;
    if (ends->n && next_run_starts(c->m, first_op, &runs, &next)) {
        jp_map_deinit(&runs);
        return jp_build_nomem(c->err);
    }
    /* ends are pushed in seq order: a stable sort by flow orders them by (flow, seq) */
    jp_sort_by_key64(e, ends->n, sizeof *e, offsetof(op_end, flow), 0, cmp_op_end);
    jp_map starts = {0};
    jp_vec start_at = {0};
    int rc = ends->n && user_starts(c->m, first_op, &starts, &start_at) ? jp_build_nomem(c->err) : JP_OK;
    for (size_t i = first_op; i < c->m->ops.n && rc == JP_OK; i++) {
        jp_op_ev *op = &JP_VEC_AT(&c->m->ops, jp_op_ev, i);
        const op_end *end = NULL;
        if (op->flow && ends->n) {
            at = flow_lower_bound(e, ends->n, op->flow, at);
            end = at < ends->n && e[at].flow == op->flow ? &e[at] : NULL;
        }
        if (end && op->run_id) {
            const char *module = defs[op->op].module;
            if (module != last_module || op->run_id != last_run)
                last_k = jp_map_get(&runs, jp_ptr_key(module), (uint64_t)op->run_id, 0);
            last_module = module, last_run = op->run_id;
            if (last_k != UINT32_MAX && end->end_ps > next[last_k]) end = NULL;
        }
        if (end && end->end_ps > op->end_ps) {
            int64_t ready = op->run_id ? first_user_start(&defs[op->op], op->run_id, op->start_ps, &starts, &start_at)
                                       : INT64_MAX;
            op->end_ps = end->end_ps < ready ? end->end_ps : ready > op->end_ps ? ready : op->end_ps;
            op->dur_ps = op->self_ps = op->end_ps - op->start_ps;
        }
        if (jp_build_add_op_span(c->m, op)) rc = jp_build_nomem(c->err);
        op->flow = 0; /* read: the slot is a GPU op event's launch (model.h) */
    }
    free(next);
    jp_map_deinit(&runs);
    jp_map_deinit(&starts);
    jp_vec_free(&start_at);
    return rc;
}

static int read_host_lines(jp_build_ctx *c, const jp_load_options *opt, cpu_devs *devs, jp_vec *ends);

int jp_build_read_host(jp_build_ctx *c, const jp_load_options *opt) {
    size_t first_op = c->m->ops.n;
    jp_vec ends = {0};
    cpu_devs devs = {.first_device = (uint32_t)c->m->devices.n, .first_opdef = c->m->opdefs.n};
    int rc = read_host_lines(c, opt, &devs, &ends);
    if (rc == JP_OK) rc = cpu_devs_finish(c, &devs, opt);
    if (rc == JP_OK) rc = link_op_ends(c, first_op, &ends);
    jp_vec_free(&devs.v);
    jp_map_deinit(&devs.index);
    jp_vec_free(&devs.xfers);
    jp_vec_free(&ends);
    return rc;
}

static int read_host_lines(jp_build_ctx *c, const jp_load_options *opt, cpu_devs *devs, jp_vec *ends) {
    for (size_t l = 0; l < c->plane->n_lines; l++) {
        const jp_line *ln = &c->plane->lines[l];
        uint32_t line = c->m->n_lines++;
        int worker = jp_xn_has_prefix(ln->name, JP_XN_LINE_WORKER); /* TSL thread pools: XLA runtime threads */
        jp_parsed *pe;
        int rc;
        while ((rc = jp_build_next_event(c, ln, &pe)) == 1) {
            const jp_event_meta *em = pe->em;
            const jp_ev_info *info = &pe->info;
            jp_str name = em ? em->name : (jp_str){"", 0};
            int64_t start, dur;
            if ((rc = jp_build_event_times(c, ln, &pe->ev, &start, &dur))) return rc;
            if (start < c->m->first_ps) c->m->first_ps = start;
            if (start + dur > c->m->last_ps) c->m->last_ps = start + dur;
            if (c->has_devices && jp_info_has(info, K_CORRELATION_ID) &&
                (rc = jp_build_launch_call(c, info, jp_build_event_name(c, em), line, start, dur)))
                return rc; /* a launch call: launch.c matches it to its device work */
            if ((rc = add_memory_event(c, name, start, info)) != 0) {
                if (rc < 0) return rc;
            } else if (!c->has_devices && jp_info_has(info, K_HLO_OP) && jp_info_has(info, K_HLO_MODULE)) {
                /* XLA:CPU's op thunks; beside a GPU the same stats tag the host's launch calls
                 * (cuLaunchKernel, hipModuleLaunchKernel), which are host runtime events */
                if ((rc = add_cpu_op(c, devs, opt, line, start, dur, info))) return rc;
            } else if (jp_xn_has_prefix(name, "end: ") && jp_info_has(info, K_FLOW_C)) {
                op_end *oe = jp_vec_push(ends, sizeof *oe);
                if (!oe) return jp_build_nomem(c->err);
                *oe = (op_end){(uint64_t)info->v[K_FLOW_C].i, start + dur, ends->n - 1};
            } else if (!c->has_devices && cpu_transfer_kind(name) >= 0) {
                /* XLA:CPU's "H2D Dispatch" is the copy itself; beside a GPU or TPU it only queues
                 * one, which the device plane records with its size */
                cpu_xfer *x = jp_vec_push(&devs->xfers, sizeof *x);
                if (!x) return jp_build_nomem(c->err);
                *x = (cpu_xfer){start, dur, cpu_transfer_kind(name)};
            } else if (!worker && (rc = add_host_event(c, em, name, line, start, dur, info))) {
                return rc;
            }
        }
        if (rc < 0) return rc;
    }
    return JP_OK;
}
