/* merge.c - adds a part (one host's model, built on a worker thread: src/profile/profile.c) to the
 * model of the hosts before it, exactly as jp_model_add_xspace would have added that host: every
 * record appended with its indices moved on (lines, devices, hosts, op definitions, launch names,
 * kernel sums, the TPU run ids), the tables that span hosts (kernel sums, launch names, run
 * programs, warnings) joined in the order the sequential build fills them. Strings need nothing:
 * parts intern through fronts of the model's own table (base/intern.h), so a text has one pointer
 * in every part. What a part cannot reproduce (its host's build would have read an earlier host's
 * HLO; a limit the hosts reach together) is refused before anything changes. */
#include <stdlib.h>
#include <string.h>

#include "decode/xnames.h"
#include "model/build_int.h"

int jp_model_note_rename(jp_model *m, uint32_t sum, const char *from, const char *to) {
    if (from == to) return JP_OK;
    /* the entries of a sum say what its op becomes from each value it may have when the part
     * starts; this rename applies after them: from -> to */
    uint32_t head = jp_map_get(&m->rename_heads, sum, 0, 0);
    int have_from = 0;
    for (uint32_t e = head; e != UINT32_MAX;) {
        jp_part_rename *r = &JP_VEC_AT(&m->kernel_renames, jp_part_rename, e);
        if (r->to == from) r->to = to;
        have_from |= r->from == from;
        e = r->next;
    }
    if (have_from) return JP_OK;
    jp_part_rename *r = m->kernel_renames.n < UINT32_MAX ? jp_vec_push(&m->kernel_renames, sizeof *r) : NULL;
    if (!r) return JP_ERR_NOMEM;
    *r = (jp_part_rename){sum, head, from, to};
    uint32_t *slot = jp_map_value(&m->rename_heads, sum, 0, 0, 0, NULL);
    if (!slot) return JP_ERR_NOMEM;
    *slot = (uint32_t)(m->kernel_renames.n - 1);
    return JP_OK;
}

/* What part's renames make of op, the op of a kernel sum the earlier hosts started. */
static const char *renamed(const jp_model *part, uint32_t sum, const char *op) {
    for (uint32_t e = jp_map_get(&part->rename_heads, sum, 0, 0); e != UINT32_MAX;) {
        const jp_part_rename *r = &JP_VEC_AT(&part->kernel_renames, jp_part_rename, e);
        if (r->from == op) return r->to;
        e = r->next;
    }
    return op;
}

/* 1 when the sequential build of part's host would have found one of its missed modules among
 * m's hosts (records.c hlo_module_for searches the other hosts when its own has none). */
static int needs_earlier_hlo(const jp_model *m, const jp_model *part) {
    const jp_hlo_module *mods = m->hlo.data;
    for (size_t i = 0; i < part->hlo_misses.n; i++) {
        const jp_part_hlo_miss *x = &JP_VEC_AT(&part->hlo_misses, jp_part_hlo_miss, i);
        for (size_t k = 0; k < m->hlo.n; k++)
            if (mods[k].name == x->module || (x->program_id >= 0 && mods[k].program_id == x->program_id)) return 1;
    }
    return 0;
}

/* 1 when part cannot be merged exactly (see jp_model_merge). */
static int refuse(const jp_model *m, const jp_model *part) {
    if (part->hosts.n != 1 || m->hosts.n >= UINT32_MAX - 1) return 1;
    /* summed durations past the limit: the build fails at an event of this host, found by reading it */
    if (part->total_dur_ps > JP_XN_TIME_LIMIT_PS - m->total_dur_ps) return 1;
    if ((uint64_t)m->n_lines + part->n_lines > UINT32_MAX || m->devices.n + part->devices.n >= JP_LAUNCH_KERNEL ||
        m->opdefs.n + part->opdefs.n >= UINT32_MAX || m->kernels.n + part->kernels.n >= UINT32_MAX)
        return 1;
    /* a launch name's index must fit an op event's bits wherever it did in the sequential build */
    if (m->launch_names.n + part->launch_names.n >= (UINT64_C(1) << JP_OP_LAUNCH_NAME_BITS)) return 1;
    return needs_earlier_hlo(m, part);
}

/* Appends n elements of `size` bytes to v; their first, or NULL when out of memory. */
static void *append(jp_vec *v, const void *from, size_t n, size_t size) {
    if (!n) return NULL;
    size_t want = v->n + n;
    if (want > v->cap) {
        size_t cap = v->cap ? v->cap : 16;
        while (cap < want) cap *= 2;
        void *data = realloc(v->data, cap * size);
        if (!data) return NULL;
        v->data = data, v->cap = cap;
    }
    char *at = (char *)v->data + v->n * size;
    memcpy(at, from, n * size);
    v->n = want;
    return at;
}

#define APPEND(dst, src, type) ((type *)append(&(dst), (src).data, (src).n, sizeof(type)))
#define OOM(dst, src, type, var) (((var) = APPEND(dst, src, type)) == NULL && (src).n)

/* part's launch names as indices of m's (added to m where new); NULL when out of memory. */
static uint32_t *merge_launch_names(jp_model *m, const jp_model *part) {
    uint32_t *to = malloc((part->launch_names.n ? part->launch_names.n : 1) * sizeof *to);
    for (size_t i = 0; to && i < part->launch_names.n; i++) {
        const char *name = JP_VEC_AT(&part->launch_names, const char *, i);
        int found;
        uint32_t k = jp_map_get_or_put(&m->launch_name_index, jp_ptr_key(name), 0, 0, (uint32_t)m->launch_names.n, &found);
        const char **slot = k == UINT32_MAX || found ? NULL : jp_vec_push(&m->launch_names, sizeof *slot);
        if (k == UINT32_MAX || (!found && !slot)) {
            free(to);
            return NULL;
        }
        if (slot) *slot = name;
        to[i] = k;
    }
    return to;
}

/* Joins part's kernel sums into m's: a (name, details, program) seen before adds to its sum,
 * which keeps its first kernel's fields; ops_at: where part's op definitions start in m. */
static int merge_kernels(jp_model *m, const jp_model *part, uint32_t ops_at) {
    for (size_t i = 0; i < part->kernels.n; i++) {
        const jp_kernel_sum *k = &JP_VEC_AT(&part->kernels, jp_kernel_sum, i);
        int found;
        uint32_t at = jp_map_get_or_put(&m->kernel_index, jp_ptr_key(k->name), jp_ptr_key(k->details),
                                        (uint64_t)k->with_program, (uint32_t)m->kernels.n, &found);
        jp_kernel_sum *sum = at == UINT32_MAX ? NULL : found ? &JP_VEC_AT(&m->kernels, jp_kernel_sum, at)
                                                             : jp_vec_push(&m->kernels, sizeof *sum);
        if (!sum) return JP_ERR_NOMEM;
        if (!found) {
            *sum = *k;
            if (sum->opdef != UINT32_MAX) sum->opdef += ops_at;
            continue;
        }
        if (sum->opdef == UINT32_MAX && k->opdef != UINT32_MAX) sum->opdef = k->opdef + ops_at;
        sum->op = renamed(part, (uint32_t)i, sum->op);
        sum->count += k->count;
        sum->n_small += k->n_small;
        sum->total_ps += k->total_ps;
        if (k->min_ps < sum->min_ps) sum->min_ps = k->min_ps;
        if (k->max_ps > sum->max_ps) sum->max_ps = k->max_ps;
    }
    return JP_OK;
}

/* run_id -> program_id: the first host to name a run keeps it, as get_or_put did while reading. */
static int merge_run_programs(jp_model *m, const jp_model *part) {
    const jp_map *rp = &part->run_program;
    for (size_t i = 0; i < rp->cap; i++)
        if (rp->vals[i] != UINT32_MAX &&
            jp_map_get_or_put(&m->run_program, rp->keys[3 * i], rp->keys[3 * i + 1], rp->keys[3 * i + 2], rp->vals[i],
                              NULL) == UINT32_MAX)
            return JP_ERR_NOMEM;
    return JP_OK;
}

/* The run ids of TPU executions count every execution and device step before them, the earlier
 * hosts' too (devices.c): moved on by run_at, on the executions and on the ops inside them. */
static void move_run_ids(jp_model *m, const jp_model *part, size_t ops_at, size_t execs_at, size_t steps_at,
                         int64_t run_at) {
    for (size_t i = execs_at; i < m->execs.n; i++) JP_VEC_AT(&m->execs, jp_exec, i).run_id += run_at;
    for (size_t i = steps_at; i < m->device_steps.n; i++) JP_VEC_AT(&m->device_steps, jp_exec, i).run_id += run_at;
    for (size_t r = 0; run_at && r < part->tpu_runs.n; r++) {
        const jp_part_tpu_run *t = &JP_VEC_AT(&part->tpu_runs, jp_part_tpu_run, r);
        const jp_exec *execs = t->ex_b > t->ex_a ? &JP_VEC_AT(&part->execs, jp_exec, t->ex_a) : NULL;
        for (size_t i = t->op_a; execs && i < t->op_b; i++) {
            jp_op_ev *e = &JP_VEC_AT(&m->ops, jp_op_ev, ops_at + i);
            if (jp_build_exec_at(execs, t->ex_b - t->ex_a, e->start_ps)) e->run_id += run_at;
        }
    }
}

/* Appends part's event records, their lines, devices, op definitions and launch names moved on. */
static int merge_events(jp_model *m, const jp_model *part, const uint32_t *names) {
    uint32_t line_at = m->n_lines, dev_at = (uint32_t)m->devices.n, ops_at = (uint32_t)m->opdefs.n;
    uint32_t host_at = (uint32_t)m->hosts.n;
    jp_op_ev *ops;
    jp_host_ev *hev;
    jp_xfer_ev *xf;
    jp_exec *ex, *st;
    jp_span *sp;
    jp_launch_call *calls;
    jp_launch_ev *work;
    jp_launch_line *lines;
    jp_mem_ev *mem;
    if (OOM(m->ops, part->ops, jp_op_ev, ops) || OOM(m->host, part->host, jp_host_ev, hev) ||
        OOM(m->xfers, part->xfers, jp_xfer_ev, xf) || OOM(m->mem, part->mem, jp_mem_ev, mem) ||
        OOM(m->execs, part->execs, jp_exec, ex) || OOM(m->device_steps, part->device_steps, jp_exec, st) ||
        OOM(m->spans, part->spans, jp_span, sp) || OOM(m->launch_calls, part->launch_calls, jp_launch_call, calls) ||
        OOM(m->launch_work, part->launch_work, jp_launch_ev, work) ||
        OOM(m->launch_lines, part->launch_lines, jp_launch_line, lines))
        return JP_ERR_NOMEM;
    for (size_t i = 0; i < part->ops.n; i++) {
        ops[i].op += ops_at, ops[i].line += line_at;
        uint64_t l = ops[i].launch; /* the flow slot of XLA:CPU ops is cleared once read (host.c) */
        if (l & JP_OP_LAUNCH_SET)
            ops[i].launch = (l & ~(((UINT64_C(1) << JP_OP_LAUNCH_NAME_BITS) - 1) << JP_OP_LAUNCH_ID_BITS)) |
                            (uint64_t)names[jp_op_launch_name(l)] << JP_OP_LAUNCH_ID_BITS;
    }
    for (size_t i = 0; i < part->host.n; i++) hev[i].line += line_at;
    for (size_t i = 0; i < part->xfers.n; i++) xf[i].device += dev_at;
    for (size_t i = 0; i < part->execs.n; i++) ex[i].host += host_at, ex[i].device += ex[i].device != UINT32_MAX ? dev_at : 0;
    for (size_t i = 0; i < part->device_steps.n; i++)
        st[i].host += host_at, st[i].device += st[i].device != UINT32_MAX ? dev_at : 0;
    for (size_t i = 0; i < part->spans.n; i++) sp[i].device += sp[i].device != UINT32_MAX ? dev_at : 0;
    for (size_t i = 0; i < part->launch_calls.n; i++) calls[i].line += line_at, calls[i].name = names[calls[i].name];
    for (size_t i = 0; i < part->launch_work.n; i++) work[i].line += line_at, work[i].where += dev_at;
    for (size_t i = 0; i < part->launch_lines.n; i++) lines[i].line += line_at, lines[i].device += dev_at;
    return JP_OK;
}

/* Appends part's tables: devices, HLO modules, op definitions. */
static int merge_tables(jp_model *m, const jp_model *part) {
    uint32_t dev_at = (uint32_t)m->devices.n, host_at = (uint32_t)m->hosts.n;
    jp_device *dev;
    jp_hlo_module *hlo;
    jp_opdef *defs;
    if (OOM(m->devices, part->devices, jp_device, dev) || OOM(m->hlo, part->hlo, jp_hlo_module, hlo) ||
        OOM(m->opdefs, part->opdefs, jp_opdef, defs))
        return JP_ERR_NOMEM;
    (void)dev;
    for (size_t i = 0; i < part->hlo.n; i++) hlo[i].host += host_at;
    for (size_t i = 0; i < part->opdefs.n; i++) defs[i].device += dev_at;
    return JP_OK;
}

/* Warnings by text, each once, in the order first met; capture notes all. */
static int merge_notes(jp_model *m, const jp_model *part) {
    for (size_t i = 0; i < part->warnings.n; i++) {
        const char *w = JP_VEC_AT(&part->warnings, const char *, i);
        size_t k = 0;
        while (k < m->warnings.n && strcmp(JP_VEC_AT(&m->warnings, const char *, k), w) != 0) k++;
        const char **slot = k < m->warnings.n ? NULL : jp_vec_push(&m->warnings, sizeof *slot);
        if (k == m->warnings.n && !slot) return JP_ERR_NOMEM;
        if (slot) *slot = w;
    }
    jp_health *notes;
    return OOM(m->capture_notes, part->capture_notes, jp_health, notes) ? JP_ERR_NOMEM : JP_OK;
}

/* The vectors and maps a merge fills, in m and in part. */
enum { N_VECS = 16, N_MAPS = 4 };
static void members(jp_model *x, jp_vec *v[N_VECS], jp_map *mp[N_MAPS]) {
    jp_vec *vs[N_VECS] = {&x->hosts, &x->devices, &x->hlo, &x->opdefs, &x->ops, &x->host, &x->xfers, &x->kernels,
                          &x->mem, &x->execs, &x->device_steps, &x->spans, &x->launch_calls, &x->launch_work,
                          &x->launch_names, &x->launch_lines};
    jp_map *ms[N_MAPS] = {&x->op_index, &x->run_program, &x->kernel_index, &x->launch_name_index};
    memcpy(v, vs, sizeof vs);
    memcpy(mp, ms, sizeof ms);
}

/* The first host into an empty model: every index of part is already the model's, so its vectors
 * and maps are taken as they are instead of copied. 1 when taken. */
static int take_first(jp_model *m, jp_model *part) {
    jp_vec *vm[N_VECS], *vp[N_VECS];
    jp_map *mm[N_MAPS], *mp[N_MAPS];
    members(m, vm, mm);
    members(part, vp, mp);
    for (size_t i = 0; i < N_VECS; i++)
        if (vm[i]->n) return 0;
    for (size_t i = 0; i < N_MAPS; i++)
        if (mm[i]->n) return 0;
    if (m->warnings.n || m->capture_notes.n || m->n_lines || m->n_events || m->total_dur_ps) return 0;
    for (size_t i = 0; i < N_VECS; i++) {
        jp_vec t = *vm[i];
        *vm[i] = *vp[i], *vp[i] = t;
    }
    for (size_t i = 0; i < N_MAPS; i++) {
        jp_map t = *mm[i];
        *mm[i] = *mp[i], *mp[i] = t;
    }
    jp_vec t = m->warnings;
    m->warnings = part->warnings, part->warnings = t;
    t = m->capture_notes;
    m->capture_notes = part->capture_notes, part->capture_notes = t;
    m->n_lines = part->n_lines, m->n_events = part->n_events, m->total_dur_ps = part->total_dur_ps;
    m->n_compile_spans = part->n_compile_spans, m->first_ps = part->first_ps, m->last_ps = part->last_ps;
    return 1;
}

int jp_model_merge(jp_model *m, jp_model *part) {
    if (refuse(m, part)) return 1;
    if (take_first(m, part)) return 0;
    uint32_t ops_at = (uint32_t)m->opdefs.n;
    size_t op_events_at = m->ops.n, execs_at = m->execs.n, steps_at = m->device_steps.n;
    int64_t run_at = (int64_t)(m->execs.n + m->device_steps.n);
    jp_model_host h = JP_VEC_AT(&part->hosts, jp_model_host, 0);
    h.first_line += m->n_lines, h.first_device += (uint32_t)m->devices.n;
    h.first_span += m->spans.n, h.first_xfer += m->xfers.n, h.first_mem += m->mem.n;
    uint32_t *names = merge_launch_names(m, part);
    int rc = names ? merge_events(m, part, names) : JP_ERR_NOMEM;
    free(names);
    if (rc == JP_OK) move_run_ids(m, part, op_events_at, execs_at, steps_at, run_at);
    if (rc == JP_OK) rc = merge_kernels(m, part, ops_at);
    if (rc == JP_OK) rc = merge_tables(m, part); /* after the events: they read the offsets above */
    if (rc == JP_OK) rc = merge_run_programs(m, part);
    if (rc == JP_OK) rc = merge_notes(m, part);
    jp_model_host *slot = rc == JP_OK ? jp_vec_push(&m->hosts, sizeof *slot) : NULL;
    if (!slot) return JP_ERR_NOMEM;
    *slot = h;
    m->n_lines += part->n_lines;
    m->n_events += part->n_events;
    m->total_dur_ps += part->total_dur_ps;
    m->n_compile_spans += part->n_compile_spans;
    if (part->first_ps < m->first_ps) m->first_ps = part->first_ps;
    if (part->last_ps > m->last_ps) m->last_ps = part->last_ps;
    return JP_OK;
}
