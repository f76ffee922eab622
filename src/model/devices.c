/* devices.c - device planes: TPU ops in their XLA Modules executions and Steps, GPU stream events
 * (kernels, memsets, copies) by the rule in decode/xnames.h, and each device's hardware. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "decode/xnames.h"
#include "model/build_int.h"

/* jp_xn_gpu_name_kind of an event's metadata name, asked once per metadata entry. */
static int name_kind(jp_build_ctx *c, const jp_event_meta *em) {
    if (!em) return jp_xn_gpu_name_kind((jp_str){"", 0});
    uint8_t *slot = &c->em_xfer[em - c->plane->event_meta]; /* the kind + 1; 0 until asked */
    if (!*slot) *slot = (uint8_t)(jp_xn_gpu_name_kind(em->name) + 1);
    return *slot - 1;
}

/* libtpu times each op twice: the event's span, converted to the host's clock, places it on the
 * timeline, and device_duration_ps is the time the core spent on it by its own clock. The two can
 * disagree by a factor of two (a real v6e capture: a copy-done spans 97 ms and took 194 ms).
 * Like XProf, the op's time is the device's; the span stays its place on the timeline (busy
 * time, nesting, steps), where it abuts its neighbours as the device durations would not. */
static void use_device_duration(jp_build_ctx *c, const jp_ev_info *info) {
    int64_t d = jp_info_int(info, K_DEVICE_DURATION);
    if (d <= 0 || d > JP_XN_TIME_LIMIT_PS) return;
    jp_op_ev *e = &JP_VEC_AT(&c->m->ops, jp_op_ev, c->m->ops.n - 1);
    e->dur_ps = e->self_ps = d;
}

/* Adds a kernel to its (name, details) sum; *index: the sum's entry in m->kernels. */
static int add_kernel(jp_build_ctx *c, const char *name, int64_t dur, const jp_ev_info *info, uint32_t *index) {
    jp_model *m = c->m;
    const char *details = jp_build_info_interned(c, info, K_KERNEL_DETAILS);
    if (!name || !details) return jp_build_nomem(c->err);
    int found, with_program = jp_build_program_id(info) >= 0;
    uint32_t k = jp_map_get_or_put(&m->kernel_index, jp_ptr_key(name), jp_ptr_key(details), (uint64_t)with_program,
                                   (uint32_t)m->kernels.n, &found);
    jp_kernel_sum *sum = k == UINT32_MAX ? NULL : found ? &JP_VEC_AT(&m->kernels, jp_kernel_sum, k)
                                                        : jp_vec_push(&m->kernels, sizeof *sum);
    if (!sum) return jp_build_nomem(c->err);
    if (!found) {
        *sum = (jp_kernel_sum){name, details, jp_build_info_interned(c, info, K_HLO_OP), UINT32_MAX,
                               (uint8_t)with_program, 0, 0, 0, 0, INT64_MAX, 0};
        if (!sum->op) return jp_build_nomem(c->err);
    }
    sum->count++;
    sum->n_small += dur < JP_SMALL_KERNEL_PS;
    sum->total_ps += dur;
    if (dur < sum->min_ps) sum->min_ps = dur;
    if (dur > sum->max_ps) sum->max_ps = dur;
    *index = (uint32_t)(sum - (jp_kernel_sum *)m->kernels.data);
    return JP_OK;
}

/* A kernel that ran inside a CUDA graph whose op names the graph, not an instruction of its module,
 * where that module's schedule can tell which (graphs.c): its op event is added now, under the
 * graph's op, and its kernel count and activity span once graphs.c has settled its op. */
static int defer_graph_kernel(jp_build_ctx *c, uint32_t op, uint32_t line, int64_t start, int64_t dur,
                              const jp_ev_info *info, const char *kernel, uint32_t kernel_sum, int memset) {
    jp_graph_kernel *g = jp_vec_push(&c->graph_kernels, sizeof *g);
    if (!g) return jp_build_nomem(c->err);
    *g = (jp_graph_kernel){c->m->ops.n, start, (uint64_t)jp_info_int(info, K_CUDA_GRAPH_ID),
                           (uint64_t)jp_info_int(info, K_CUDA_GRAPH_NODE), (uint64_t)jp_info_int(info, K_CORRELATION_ID),
                           jp_build_program_id(info), c->hlo_memo.hm, kernel, op, kernel_sum, (uint8_t)memset};
    return jp_build_add_op_event(c, op, line, start, dur, jp_info_int(info, K_RUN_ID), jp_build_program_id(info), 0);
}

/* The index of `name` (interned; NULL when out of memory) in m->launch_names, added on first
 * sight; UINT32_MAX when out of memory. A direct-mapped cache by pointer comes first: a capture
 * runs a few hundred kernels, and makes a few kinds of launch call, millions of times. */
static uint32_t launch_name(jp_build_ctx *c, const char *name) {
    if (!name) return UINT32_MAX;
    size_t slot = (size_t)(((uint64_t)(uintptr_t)name * UINT64_C(0x9E3779B97F4A7C15)) >> 32) % JP_LAUNCH_NAME_CACHE;
    if (c->launch_names[slot].name == name) return c->launch_names[slot].index;
    jp_model *m = c->m;
    int found;
    uint32_t k = jp_map_get_or_put(&m->launch_name_index, jp_ptr_key(name), 0, 0, (uint32_t)m->launch_names.n, &found);
    const char **slot_name = k == UINT32_MAX || found ? NULL : jp_vec_push(&m->launch_names, sizeof *slot_name);
    if (k == UINT32_MAX || (!found && !slot_name)) return UINT32_MAX;
    if (!found) *slot_name = name;
    c->launch_names[slot].name = name, c->launch_names[slot].index = k;
    return k;
}

/* Notes device line `line` (ln) in m->launch_lines, the streams launch.c splits the idle of: lines
 * are read one after another, so it is the last one or a new one. JP_ERR_NOMEM or JP_OK. */
static int launch_line(jp_build_ctx *c, uint32_t device, const jp_line *ln, uint32_t line) {
    jp_vec *v = &c->m->launch_lines;
    if (v->n && JP_VEC_AT(v, jp_launch_line, v->n - 1).line == line) return JP_OK;
    const char *name = ln ? jp_intern_view(&c->m->intern, ln->name) : "";
    jp_launch_line *l = name ? jp_vec_push(v, sizeof *l) : NULL;
    if (!l) return JP_ERR_NOMEM;
    *l = (jp_launch_line){name, ln ? ln->id : 0, device, line};
    return JP_OK;
}

int jp_build_device_launch(jp_build_ctx *c, const jp_ev_info *info, const char *name, uint32_t device, const jp_line *ln,
                           uint32_t line, int64_t start, int64_t dur, int kernel, int op_event, uint64_t *packed) {
    *packed = 0;
    if (!jp_info_has(info, K_CORRELATION_ID)) return JP_OK;
    if (!name) return jp_build_nomem(c->err);
    if (device >= JP_LAUNCH_KERNEL) return JP_OK; /* no such device count */
    if (launch_line(c, device, ln, line)) return jp_build_nomem(c->err);
    uint64_t id = (uint64_t)info->v[K_CORRELATION_ID].i;
    if (op_event && id < (UINT64_C(1) << JP_OP_LAUNCH_ID_BITS)) {
        uint32_t k = launch_name(c, name);
        if (k == UINT32_MAX) return jp_build_nomem(c->err);
        if (k < (UINT32_C(1) << JP_OP_LAUNCH_NAME_BITS)) {
            *packed = JP_OP_LAUNCH_SET | (kernel ? JP_OP_LAUNCH_KERNEL : 0) |
                      (uint64_t)k << JP_OP_LAUNCH_ID_BITS | id;
            return JP_OK;
        }
    }
    jp_launch_ev *l = jp_vec_push(&c->m->launch_work, sizeof *l);
    if (!l) return jp_build_nomem(c->err);
    *l = (jp_launch_ev){id, start, start + dur, name, device | (kernel ? JP_LAUNCH_KERNEL : 0), line};
    return JP_OK;
}

int jp_build_launch_call(jp_build_ctx *c, const jp_ev_info *info, const char *name, uint32_t line, int64_t start,
                         int64_t dur) {
    uint32_t k = launch_name(c, name);
    jp_launch_call *l = k == UINT32_MAX ? NULL : jp_vec_push(&c->m->launch_calls, sizeof *l);
    if (!l) return jp_build_nomem(c->err);
    *l = (jp_launch_call){start, start + dur, (uint64_t)info->v[K_CORRELATION_ID].i, k, line};
    jp_model_host *h = &JP_VEC_AT(&c->m->hosts, jp_model_host, c->host_index); /* matching sizes its index by these */
    if (l->correlation < h->call_lo) h->call_lo = l->correlation;
    if (l->correlation > h->call_hi) h->call_hi = l->correlation;
    return JP_OK;
}

/* Puts a launch packed by jp_build_device_launch on the op event just added. */
static void set_launch(jp_build_ctx *c, uint64_t packed) {
    if (packed) JP_VEC_AT(&c->m->ops, jp_op_ev, c->m->ops.n - 1).launch = packed;
}

/* A copy XLA ran for an instruction of its module (a dynamic slice done as a memcpy) is also an
 * occurrence of that op, as XProf counts it: its time is in the op table, its activity stays the
 * copy's (no compute span). A copy naming no instruction of a known module is a copy only. */
static int copy_as_op(jp_build_ctx *c, uint32_t dev, uint32_t line, const jp_event_meta *em, int64_t start,
                      int64_t dur, const jp_ev_info *info) {
    if (!jp_info_str(info, K_HLO_OP).len || !jp_info_str(info, K_HLO_MODULE).len) return JP_OK;
    const char *module = jp_build_info_interned(c, info, K_HLO_MODULE);
    const char *op_name = jp_build_info_interned(c, info, K_HLO_OP), *copy = jp_build_event_name(c, em);
    if (!module || !op_name || !copy) return jp_build_nomem(c->err);
    int64_t program = jp_build_program_id(info);
    uint32_t op = jp_build_op_for(c, dev, module, op_name, program, info);
    if (op == UINT32_MAX) return jp_build_nomem(c->err);
    jp_opdef *def = &JP_VEC_AT(&c->m->opdefs, jp_opdef, op);
    if (!def->opcode) return JP_OK; /* no such instruction (a command buffer's name) */
    def->with_program |= program >= 0;
    jp_build_count_kernel(def, copy);
    return jp_build_add_op_event(c, op, line, start, dur, jp_info_int(info, K_RUN_ID), program, 0);
}

static int read_gpu_event(jp_build_ctx *c, uint32_t dev, const jp_line *ln, uint32_t line, const jp_event_meta *em,
                          int64_t start, int64_t dur, const jp_ev_info *info) {
    jp_str name = em ? em->name : (jp_str){"", 0};
    jp_str memcpy_details = jp_info_str(info, K_MEMCPY_DETAILS);
    /* launch details make a kernel, whatever its name: a CUDA graph's copy node runs as the
     * driver's kernel "memcpy128" (XProf's kernel_stats counts it too) */
    int kind = jp_info_str(info, K_KERNEL_DETAILS).len ? JP_XN_GPU_KERNEL
                                                       : jp_xn_gpu_event_kind(name, name_kind(c, em), memcpy_details);
    uint64_t launch = 0; /* a copy's launch is kept apart (its op event, when it has one, is not all copies) */
    if (kind < JP_XFER_COUNT) {
        int rc = jp_build_device_launch(c, info, jp_build_event_name(c, em), dev, ln, line, start, dur, 0, 0, &launch);
        if (rc == JP_OK) rc = jp_build_add_xfer(c, dev, kind, start, dur, jp_xn_details_uint(memcpy_details, "size:"));
        return rc ? rc : copy_as_op(c, dev, line, em, start, dur, info);
    }
    if (!jp_xn_gpu_is_op_work(kind)) return JP_OK;
    const char *interned = jp_build_event_name(c, em);
    if (!interned) return jp_build_nomem(c->err);
    int rc = jp_build_device_launch(c, info, interned, dev, ln, line, start, dur, kind == JP_XN_GPU_KERNEL, 1, &launch);
    if (rc) return rc;
    uint32_t kernel_sum = UINT32_MAX;
    rc = kind == JP_XN_GPU_MEMSET ? JP_OK : add_kernel(c, interned, dur, info, &kernel_sum);
    if (rc) return rc;
    /* The op a kernel ran for: its HLO op (XLA), else the framework op that launched it (TensorFlow
     * names it in tf_op or in the annotation), else the kernel itself. Each kernel is one occurrence
     * of its op, as XProf counts them: without an execution id, back-to-back runs of a one-kernel op
     * cannot be told from one run of a several-kernel op. */
    int has_op = jp_info_str(info, K_HLO_OP).len > 0;
    /* tf_op "XlaModule:" without an hlo_op: a kernel the executable ran outside its ops (the
     * autotuner's buffer initialisation), its own op in its module */
    int module_level = !has_op && jp_str_eq(jp_info_str(info, K_TF_OP), JP_XN_TF_OP_MODULE_LEVEL);
    const char *module = has_op || module_level ? jp_build_info_interned(c, info, K_HLO_MODULE)
                                                : jp_intern_str(&c->m->intern, "", 0);
    const char *op_name = has_op                                ? jp_build_info_interned(c, info, K_HLO_OP)
                          : module_level                        ? interned
                          : jp_info_str(info, K_TF_OP).len      ? jp_build_framework_op(c, info)
                          : jp_info_str(info, K_ANNOTATION).len ? jp_build_annotation_op(c, info)
                                                                : interned;
    if (!module || !op_name) return jp_build_nomem(c->err);
    int64_t program = jp_build_program_id(info);
    uint32_t op = jp_build_op_for(c, dev, module, op_name, program, info);
    if (op == UINT32_MAX) return jp_build_nomem(c->err);
    jp_opdef *def = &JP_VEC_AT(&c->m->opdefs, jp_opdef, op);
    def->with_program |= program >= 0;
    if (kernel_sum != UINT32_MAX && JP_VEC_AT(&c->m->kernels, jp_kernel_sum, kernel_sum).opdef == UINT32_MAX)
        JP_VEC_AT(&c->m->kernels, jp_kernel_sum, kernel_sum).opdef = op;
    if (has_op && !def->opcode && jp_info_has(info, K_CUDA_GRAPH_NODE) && c->hlo_memo.hm && c->hlo_memo.hm->n_sequences) {
        rc = defer_graph_kernel(c, op, line, start, dur, info, interned, kernel_sum, kind == JP_XN_GPU_MEMSET);
        if (rc == JP_OK) set_launch(c, launch);
        return rc;
    }
    jp_build_count_kernel(def, interned);
    if (op_name == interned && !has_op) { /* ROCm's copyBuffer, a library's helper launched by itself */
        def->no_xla_op = 1;
        def->category = JP_CATEGORY_NO_XLA_OP;
    }
    rc = jp_build_add_op_event(c, op, line, start, dur, jp_info_int(info, K_RUN_ID), program, 1);
    if (rc == JP_OK) set_launch(c, launch);
    return rc;
}

/* The interned name of a TPU op: libtpu may name an XLA Ops event's metadata with the whole HLO
 * text ("%copy-done.2 = f32[...] copy-done(...)") and give the instruction name as the display
 * name; without one, the text's "%name" is cut out. */
static const char *tpu_op_name(jp_build_ctx *c, const jp_event_meta *em) {
    if (!em || !em->name.len || em->name.ptr[0] != '%') return jp_build_event_name(c, em);
    const char **slot = &c->em_names[em - c->plane->event_meta];
    if (*slot) return *slot;
    jp_str name = em->display_name;
    if (!name.len) {
        name = (jp_str){em->name.ptr + 1, 0};
        while (name.len + 1 < em->name.len && name.ptr[name.len] != ' ') name.len++;
    }
    return *slot = jp_intern_view(&c->m->intern, name);
}

/* The XLA Modules event containing t on this device (execs[lo..hi) sorted by start), or NULL. */
const jp_exec *jp_build_exec_at(const jp_exec *execs, size_t n, int64_t t) {
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
static int read_device_intervals(jp_build_ctx *c, uint32_t dev, int platform, size_t *first_exec) {
    *first_exec = c->m->execs.n;
    jp_map by_name = {0}; /* step name -> index into device_steps, over this host's planes so far */
    int rc = JP_OK;
    for (size_t i = 0; i < c->m->device_steps.n && rc == JP_OK; i++)
        if (JP_VEC_AT(&c->m->device_steps, jp_exec, i).host == c->host_index &&
            jp_map_get_or_put(&by_name, jp_ptr_key(JP_VEC_AT(&c->m->device_steps, jp_exec, i).module), 0, 0,
                              (uint32_t)i, NULL) == UINT32_MAX)
            rc = jp_build_nomem(c->err);
    for (size_t l = 0; l < c->plane->n_lines && rc == JP_OK; l++) {
        const jp_line *ln = &c->plane->lines[l];
        int modules = platform == JP_PLATFORM_TPU && jp_str_eq(ln->name, JP_XN_LINE_XLA_MODULES);
        int steps = jp_str_eq(ln->name, JP_XN_LINE_STEPS);
        if (!modules && !steps) continue;
        jp_event_reader reader = jp_line_event_reader(c->xs, ln); /* lines the stream leaves out */
        jp_event event, *ev = &event;
        while ((rc = jp_event_reader_next(&reader, ev, c->err)) == 1) {
            if (ev->num_occurrences > 0) continue; /* aggregated: no interval */
            const jp_event_meta *em = jp_plane_event_meta_view(c->plane, ev->metadata_id);
            int64_t start, dur;
            if ((rc = jp_build_event_times(c, ln, ev, &start, &dur))) break;
            int64_t end = start + dur;
            jp_str name = em ? em->name : (jp_str){"", 0};
            size_t paren = 0; /* "jit_train_step(123)" names the module "jit_train_step" */
            while (paren < name.len && name.ptr[paren] != '(') paren++;
            if (modules) name.len = paren;
            const char *interned = jp_intern_view(&c->m->intern, name);
            if (!interned) {
                rc = jp_build_nomem(c->err);
                break;
            }
            if (steps) { /* the same step on another chip: the longer of the two stands for both */
                int found;
                uint32_t k = jp_map_get_or_put(&by_name, jp_ptr_key(interned), 0, 0, (uint32_t)c->m->device_steps.n,
                                               &found);
                if (k == UINT32_MAX) {
                    rc = jp_build_nomem(c->err);
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
                rc = jp_build_nomem(c->err);
                break;
            }
            *x = (jp_exec){.module = interned, .run_id = (int64_t)(c->m->execs.n + c->m->device_steps.n),
                           .program_id = modules ? jp_build_program_id_in_name(em ? em->name : name) : -1,
                           .start_ps = start, .end_ps = end, .host = c->host_index, .device = dev};
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
static int read_device_caps(jp_build_ctx *c, jp_device_caps *caps) {
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
        if (jp_str_eq(name, JP_XN_STAT_PEAK_TFLOPS)) caps->peak_tflops = v;
        else if (jp_str_eq(name, JP_XN_STAT_PEAK_HBM_GBPS)) caps->peak_gbps = v;
        else if (jp_str_eq(name, JP_XN_STAT_CLOCK_RATE)) caps->clock_khz = v;
        else if (jp_str_eq(name, JP_XN_STAT_CORE_COUNT)) caps->cores = v;
        else if (jp_str_eq(name, JP_XN_STAT_MEMORY_BANDWIDTH)) caps->mem_bw = v;
        else if (jp_str_eq(name, JP_XN_STAT_MEMORY_SIZE)) caps->mem_size = v;
        else if (jp_str_eq(name, JP_XN_STAT_CC_MAJOR)) caps->cc_major = (int)v;
        else if (jp_str_eq(name, JP_XN_STAT_CC_MINOR)) caps->cc_minor = (int)v;
        else if (jp_str_eq(name, JP_XN_STAT_DEVICE_VENDOR)) caps->amd = text.len >= 3 && memcmp(text.ptr, "AMD", 3) == 0;
        else if (jp_str_eq(name, JP_XN_STAT_DEVICE_TYPE))
        {
            jp_text type = jp_text_make(caps->type, sizeof caps->type); /* a longer one: cut with "..." */
            jp_text_put(&type, text.ptr, text.len);
        }
    }
    return rc < 0 ? rc : JP_OK;
}

int jp_build_read_device(jp_build_ctx *c, const jp_load_options *opt) {
    (void)opt;
    int platform = jp_xn_device_platform(c->plane);
    uint32_t dev = jp_build_add_device(c, c->plane->name, platform);
    if (dev == UINT32_MAX) return jp_build_nomem(c->err);
    jp_ev_info pinfo = {0};
    int rc = jp_build_read_stats(c, jp_stats_of_plane(c->xs, c->plane), &pinfo);
    if (rc < 0) return rc;
    jp_device *d = &JP_VEC_AT(&c->m->devices, jp_device, dev);
    jp_device_caps caps;
    if ((rc = read_device_caps(c, &caps))) return rc;
    jp_device_set_peaks(d, &caps);
    size_t first_exec = 0;
    if ((rc = read_device_intervals(c, dev, platform, &first_exec))) return rc;
    jp_part_tpu_run run = {c->m->ops.n, 0, first_exec, c->m->execs.n}; /* a part's run ids (merge.c) */
    for (size_t l = 0; l < c->plane->n_lines; l++) {
        const jp_line *ln = &c->plane->lines[l];
        uint32_t line = c->m->n_lines++;
        if (!jp_line_wanted(c->plane, ln)) continue;
        jp_parsed *pe;
        while ((rc = jp_build_next_event(c, ln, &pe)) == 1) {
            /* An aggregated event (num_occurrences instead of an offset) has no place in time: it
             * would land at the line's start, so it stays out of ops, steps and busy time. */
            if (pe->ev.num_occurrences > 0) continue;
            const jp_event_meta *em = pe->em;
            const jp_ev_info *info = &pe->info;
            int64_t start, dur;
            if ((rc = jp_build_event_times(c, ln, &pe->ev, &start, &dur))) return rc;
            if (start < c->m->first_ps) c->m->first_ps = start;
            if (start + dur > c->m->last_ps) c->m->last_ps = start + dur;
            if (platform == JP_PLATFORM_GPU) {
                rc = read_gpu_event(c, dev, ln, line, em, start, dur, info);
            } else {
                const jp_exec *x = c->m->execs.n > first_exec
                                       ? jp_build_exec_at(&JP_VEC_AT(&c->m->execs, jp_exec, first_exec),
                                                 c->m->execs.n - first_exec, start)
                                       : NULL; /* no executions: execs.data may be NULL */
                const char *module = x ? x->module : jp_build_info_interned(c, info, K_HLO_MODULE);
                const char *op_name = tpu_op_name(c, em);
                if (!module || !op_name) return jp_build_nomem(c->err);
                int64_t program = jp_build_program_id(info) >= 0 ? jp_build_program_id(info) : x ? x->program_id : -1;
                uint32_t op = jp_build_op_for(c, dev, module, op_name, program, info);
                rc = op == UINT32_MAX ? jp_build_nomem(c->err)
                                      : jp_build_add_op_event(c, op, line, start, dur, x ? x->run_id : 0, -1, 1);
                if (rc == JP_OK) use_device_duration(c, info);
            }
            if (rc) return rc;
        }
        if (rc < 0) return rc;
    }
    if (c->m->part && platform != JP_PLATFORM_GPU && c->m->ops.n > run.op_a) {
        jp_part_tpu_run *r = jp_vec_push(&c->m->tpu_runs, sizeof *r);
        if (!r) return jp_build_nomem(c->err);
        *r = run;
        r->op_b = c->m->ops.n;
    }
    return JP_OK;
}
