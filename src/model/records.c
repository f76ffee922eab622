/* records.c - the model's records as planes are read: devices, op definitions with their HLO
 * metadata, op events, activity spans and transfers. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "decode/xnames.h"
#include "model/build_int.h"

uint32_t jp_build_add_device(jp_build_ctx *c, jp_str name, int platform) {
    jp_device *d = jp_vec_push(&c->m->devices, sizeof *d);
    if (!d || !(d->name = jp_intern_view(&c->m->intern, name))) return UINT32_MAX;
    d->host = c->host;
    d->platform = platform;
    d->peak_source = "";
    return (uint32_t)(c->m->devices.n - 1);
}

/* The HLO module of an op's event: by program id, else by name, the event's own host's metadata
 * first (every host of a multi-host run holds its own copy of an SPMD program); *programs: how
 * many that host's metadata holds of the name; *slot: 1 + the module's index in m->hlo when it
 * was found by program id among several programs of the name (the op is then one program's),
 * else 0, so one program on several hosts stays one op. */
static const jp_hlo_module *hlo_module_for(const jp_model *m, uint32_t host, const char *module, int64_t program_id,
                                           size_t *programs, uint64_t *slot) {
    const jp_hlo_module *mods = m->hlo.data, *by_id = NULL, *by_name = NULL;
    *programs = 0;
    for (int own = 1; own >= 0 && !by_id && !by_name; own--)
        for (size_t i = 0; i < m->hlo.n; i++) {
            if ((mods[i].host == host) != own) continue;
            if (program_id >= 0 && mods[i].program_id == program_id && !by_id) by_id = &mods[i];
            if (mods[i].name != module) continue;
            if (!by_name) by_name = &mods[i];
            ++*programs;
        }
    *slot = by_id && by_id->name == module && *programs > 1 ? (uint64_t)(by_id - mods) + 1 : 0;
    return by_id ? by_id : by_name;
}

/* A part's op look-up that its own host's HLO did not answer (model.h), noted once. */
static int note_hlo_miss(jp_model *m, const char *module, int64_t program_id) {
    int found;
    if (jp_map_get_or_put(&m->hlo_miss_index, jp_ptr_key(module), (uint64_t)program_id, 0, (uint32_t)m->hlo_misses.n,
                          &found) == UINT32_MAX)
        return JP_ERR_NOMEM;
    jp_part_hlo_miss *x = found ? NULL : jp_vec_push(&m->hlo_misses, sizeof *x);
    if (!found && !x) return JP_ERR_NOMEM;
    if (x) *x = (jp_part_hlo_miss){module, program_id};
    return JP_OK;
}

/* The tf_op stat, the framework op that an HLO op came from: "jit(f)/jit(main)/add:" as TPU
 * captures write it, in TensorFlow's "name:type" form with an empty type, which is dropped. */
const char *jp_build_framework_op(jp_build_ctx *c, const jp_ev_info *info) {
    jp_str s = jp_info_str(info, K_TF_OP);
    if (s.len && s.ptr[s.len - 1] == ':') s.len--;
    return jp_intern_view(&c->m->intern, s);
}

/* The framework op a TensorFlow annotation names: "scope/op#shape=(...)#" holds the TraceMe's
 * arguments after the '#', which are dropped. */
const char *jp_build_annotation_op(jp_build_ctx *c, const jp_ev_info *info) {
    jp_str s = jp_info_str(info, K_ANNOTATION);
    const char *hash = memchr(s.ptr, '#', s.len);
    if (hash) s.len = (size_t)(hash - s.ptr);
    return jp_intern_view(&c->m->intern, s);
}

/* The type of a TensorFlow op named "scope/name:Type" (interned), or NULL for other names: HLO
 * instruction names hold no ':', and a type is an identifier, which a C++ kernel name standing in
 * for its op ("void Eigen::...<...>(...)") is not after its last ':'. */
static const char *framework_type(jp_build_ctx *c, const char *name) {
    const char *slash = strrchr(name, '/'), *colon = strrchr(slash ? slash : name, ':');
    if (!colon || !colon[1]) return NULL;
    for (const char *p = colon + 1; *p; p++)
        if (!(*p == '_' || (*p >= '0' && *p <= '9') || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')))
            return NULL;
    return jp_intern_str(&c->m->intern, colon + 1, strlen(colon + 1));
}

/* The opdef for (device, program, name), created with its HLO metadata on first sight. A module
 * name compiled into several programs (one jitted function called with two shapes) gives one
 * opdef per program, each with its own program's FLOPs and bytes, as XProf keys its rows by
 * program id; the map's first word holds the device and the program's slot (hlo_module_for). */
uint32_t jp_build_op_for(jp_build_ctx *c, uint32_t device, const char *module, const char *name, int64_t program_id,
                       const jp_ev_info *info) {
    jp_model *m = c->m;
    int found;
    if (c->hlo_memo.module != module || c->hlo_memo.program_id != program_id || c->hlo_memo.n_hlo != m->hlo.n) {
        c->hlo_memo.module = module, c->hlo_memo.program_id = program_id, c->hlo_memo.n_hlo = m->hlo.n;
        c->hlo_memo.hm = hlo_module_for(m, c->host_index, module, program_id, &c->hlo_memo.programs, &c->hlo_memo.slot);
        /* a part holds one host: a miss here would have searched the hosts before it */
        if (m->part && !c->hlo_memo.hm && note_hlo_miss(m, module, program_id)) return UINT32_MAX;
    }
    const jp_hlo_module *hm = c->hlo_memo.hm;
    size_t programs = c->hlo_memo.programs;
    uint64_t slot = c->hlo_memo.slot;
    uint64_t key = device | slot << 32;
    /* a direct-mapped cache of recent look-ups first: a GPU program runs a few hundred ops, each
     * event of which came here for a hash map probe (a cache miss each) */
    size_t at = (size_t)((((uint64_t)(uintptr_t)name ^ ((uint64_t)(uintptr_t)module << 7) ^ key) *
                          UINT64_C(0x9E3779B97F4A7C15)) >> 40) % JP_OP_CACHE;
    if (c->op_cache[at].name == name && c->op_cache[at].module == module && c->op_cache[at].key == key)
        return c->op_cache[at].op;
    uint32_t idx = jp_map_get_or_put(&m->op_index, key, jp_ptr_key(module), jp_ptr_key(name), (uint32_t)m->opdefs.n,
                                     &found);
    if (idx != UINT32_MAX) c->op_cache[at].name = name, c->op_cache[at].module = module, c->op_cache[at].key = key,
                           c->op_cache[at].op = idx;
    if (idx == UINT32_MAX || found) return idx;
    jp_opdef *op = jp_vec_push(&m->opdefs, sizeof *op);
    if (!op) return UINT32_MAX;
    const char *empty = jp_intern_str(&m->intern, "", 0);
    *op = (jp_opdef){.module = module, .name = name, .op_name = empty, .scope = empty, .source = empty,
                     .function = empty, .device = device, .program_id = slot ? hm->program_id : -1,
                     .dtype = ""};
    op->shared_name = programs > 1;
    const jp_hlo_instr *in = hm ? jp_hlo_find(hm, name) : NULL;
    if (in) {
        op->category = in->category;
        op->op_name = in->op_name;
        op->source = in->source;
        op->function = in->function;
        op->frame = in->frame;
        op->shares = in->shares;
        op->n_shares = in->n_shares;
        op->hlo_flops = op->flops = in->flops;
        op->transcendentals = in->transcendentals;
        op->bytes = in->bytes;
        op->dtype = in->dtype ? in->dtype : "";
        op->coll_bytes = in->coll_bytes;
        op->group_size = in->group_size;
        op->async_start = in->async_start;
        op->opcode = in->opcode;
        op->hlo = in;
    } else {
        op->category = framework_type(c, name);
        if (!op->category) op->category = jp_hlo_category_of_name(name);
    }
    if (info && jp_info_str(info, K_HLO_CATEGORY).len) op->category = jp_build_info_interned(c, info, K_HLO_CATEGORY);
    if (info) {
        /* XLA's own counts, where the device writes them (TPU, GPU), win over ours */
        if (jp_info_dbl(info, K_FLOPS) > 0) op->flops = op->xla_flops = jp_info_dbl(info, K_FLOPS);
        if (jp_info_dbl(info, K_BYTES_ACCESSED) > 0) op->bytes = jp_info_dbl(info, K_BYTES_ACCESSED);
        /* without the HLO (TPU captures keep it elsewhere) the op's own stats say the same */
        if (!*op->op_name && jp_info_str(info, K_TF_OP).len) op->op_name = jp_build_framework_op(c, info);
        if (!*op->source && jp_info_str(info, K_SOURCE).len) op->source = jp_build_info_interned(c, info, K_SOURCE);
        if (!op->op_name || !op->source) return UINT32_MAX;
    }
    op->scope = jp_hlo_scope_of(&m->intern, op->op_name);
    if (!op->category || !op->scope) return UINT32_MAX;
    op->collective = (uint8_t)jp_hlo_is_collective(op->category);
    return idx;
}

int jp_build_add_span(jp_model *m, int64_t start, int64_t end, uint32_t device, int part) {
    jp_span *s = jp_vec_push(&m->spans, sizeof *s);
    if (!s) return JP_ERR_NOMEM;
    /* an op cut to an end event written before it (a broken file) covers no time: the sweep and the
     * busy time take unions of spans, which an end before the start would not describe */
    *s = (jp_span){start, end > start ? end : start, device, (uint8_t)part};
    m->n_compile_spans += part == JP_PART_COMPILE;
    return JP_OK;
}

int jp_build_add_op_span(jp_model *m, const jp_op_ev *e) {
    const jp_opdef *def = &JP_VEC_AT(&m->opdefs, jp_opdef, e->op);
    int part = def->collective ? JP_PART_COLLECTIVE : JP_PART_COMPUTE;
    return jp_build_add_span(m, e->start_ps, e->end_ps, def->device, part);
}

/* with_span = 0 defers the activity span (XLA:CPU ops may still be extended to their end event). */
int jp_build_add_op_event(jp_build_ctx *c, uint32_t op, uint32_t line, int64_t start, int64_t dur, int64_t run_id,
                          int64_t program_id, int with_span) {
    /* Which program a run executed, where its module's name has several: kept per run, not per
     * event (8 more bytes on millions of them), as executions are grouped by run_id */
    if (run_id && run_id != c->noted_run && program_id >= 0 && program_id < UINT32_MAX &&
        JP_VEC_AT(&c->m->opdefs, jp_opdef, op).shared_name) {
        if (jp_map_get_or_put(&c->m->run_program, (uint64_t)run_id, 0, 0, (uint32_t)program_id, NULL) == UINT32_MAX)
            return jp_build_nomem(c->err);
        c->noted_run = run_id;
    }
    jp_op_ev *e = jp_vec_push(&c->m->ops, sizeof *e);
    if (!e) return jp_build_nomem(c->err);
    *e = (jp_op_ev){.start_ps = start, .end_ps = start + dur, .dur_ps = dur, .self_ps = dur, .op = op, .line = line,
                    .run_id = run_id, .nest_end_ps = start + dur};
    if (with_span && jp_build_add_op_span(c->m, e)) return jp_build_nomem(c->err);
    return jp_build_nest_track(c, &c->op_nest, line, start, start + dur);
}

int jp_build_add_xfer(jp_build_ctx *c, uint32_t device, int kind, int64_t start, int64_t dur, uint64_t bytes) {
    jp_xfer_ev *x = jp_vec_push(&c->m->xfers, sizeof *x);
    if (!x) return jp_build_nomem(c->err);
    *x = (jp_xfer_ev){start, start + dur, bytes, device, (uint8_t)kind};
    return jp_build_add_span(c->m, start, start + dur, device, JP_PART_H2D + kind) ? jp_build_nomem(c->err) : JP_OK;
}

void jp_build_count_kernel(jp_opdef *def, const char *kernel) {
    int k = 0;
    while (k < JP_OPDEF_KERNELS - 1 && def->kernel[k] && def->kernel[k] != kernel) k++;
    if (!def->kernel[k]) def->kernel[k] = kernel;
    def->kernel_n[k]++;
    def->n_kernels++;
}
