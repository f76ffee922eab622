/* test_model.c - the model builder: nesting past its depth limit is an error that says where, and
 * the ops table (model) and the exported XLA Ops rows (layout) count the same kernels; XLA:CPU's
 * thunks name their devices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "base/map.h"
#include "decode/xnames.h"
#include "timeline/layout.h"
#include "model/build_int.h"
#include "model/model.h"
#include "pbwrite.h"
#include "real_captures.h"

/* An XSpace of one /host:CPU plane: on a "python" line (or an XLA:CPU "tf_worker" line, as op
 * thunks tagged hlo_op/hlo_module) `depth` events each nested inside the one before, written
 * outermost first (as writers sort them) or, `reversed`, innermost first. */
static pbw nested_space(size_t depth, int thunks, int reversed) {
    pbw space = {0}, plane = {0}, line = {0};
    for (size_t i = 0; i < depth; i++) {
        size_t k = reversed ? depth - 1 - i : i;
        pbw ev = {0};
        pbw_uint(&ev, 1, 1);
        pbw_uint(&ev, 2, 1000 * k);                   /* offset_ps */
        pbw_uint(&ev, 3, 1000 * (2 * depth - 2 * k)); /* duration_ps: ends after every later one */
        if (thunks) {
            pbw st = {0};
            pbw_uint(&st, 1, 1);
            pbw_str(&st, 5, "add.1");
            pbw_msg(&ev, 4, &st);
            pbw_uint(&st, 1, 2);
            pbw_str(&st, 5, "jit_f");
            pbw_msg(&ev, 4, &st);
        }
        pbw_msg(&line, 4, &ev);
    }
    pbw_uint(&line, 1, 7);
    pbw_str(&line, 2, thunks ? "tf_worker" : "python");
    pbw_uint(&line, 3, 1000);
    pbw_msg(&plane, 3, &line);
    const char *stats[3] = {"", JP_XN_STAT_HLO_OP, JP_XN_STAT_HLO_MODULE};
    for (uint64_t id = 1; id < 3; id++) pbw_stat_meta(&plane, id, stats[id]);
    pbw_event_meta(&plane, 1, "scope", NULL);
    pbw_uint(&plane, 1, 1);
    pbw_str(&plane, 2, JP_XN_PLANE_HOST_CPU);
    pbw_msg(&space, 1, &plane);
    pbw_str(&space, 4, "deep");
    return space;
}

/* Builds a model of the nest; returns the status, err filled. */
static int build_nest(size_t depth, int thunks, int reversed, jp_error *err, size_t *n_events) {
    pbw space = nested_space(depth, thunks, reversed);
    jp_xspace *xs = NULL;
    int rc = jp_xspace_parse_lazy(&xs, space.buf, space.len, "deep.xplane.pb", err);
    assert_int_equal(rc, JP_OK);
    jp_arena arena;
    jp_arena_init(&arena, 0);
    jp_model m;
    jp_model_init(&m, &arena);
    rc = jp_model_add_xspace(&m, xs, "deep", NULL, err);
    if (rc == JP_OK) rc = jp_model_finish(&m, err);
    *n_events = thunks ? m.ops.n : m.host.n;
    if (rc == JP_OK && !thunks) /* every depth kept: the innermost event is 255 (or depth - 1) deep */
        assert_int_equal(JP_VEC_AT(&m.host, jp_host_ev, m.host.n - 1).depth, depth - 1);
    jp_model_deinit(&m);
    jp_arena_deinit(&arena);
    jp_xspace_close(xs);
    free(space.buf);
    return rc;
}

/* The byte offset (as jp_event.raw gives it) of event k of the nest's one line. */
static uint64_t nest_event_offset(size_t depth, int thunks, size_t k) {
    pbw space = nested_space(depth, thunks, 0);
    jp_xspace *xs = NULL;
    assert_int_equal(jp_xspace_parse(&xs, space.buf, space.len, "deep.xplane.pb", NULL), JP_OK);
    size_t n;
    const jp_plane *planes = jp_xspace_planes(xs, &n);
    uint64_t at = (uint64_t)(planes[0].lines[0].events[k].raw.ptr - space.buf);
    jp_xspace_close(xs);
    free(space.buf);
    return at;
}

static void nesting_past_the_limit_is_an_error(void **state) {
    (void)state;
    for (int thunks = 0; thunks < 2; thunks++) {
        jp_error err;
        size_t n = 0;
        assert_int_equal(build_nest(256, thunks, 0, &err, &n), JP_OK); /* the limit itself reads */
        assert_int_equal(n, 256);
        assert_int_equal(build_nest(300, thunks, 0, &err, &n), JP_ERR_LIMIT);
        /* the 257th event, at 256 ns from the line's start at 1000 ns, named by its byte */
        uint64_t at = nest_event_offset(300, thunks, 256);
        char want[JP_ERROR_MSG_MAX];
        snprintf(want, sizeof want, "XEvent at byte %llu: events nested more than 256 deep on line '%s' of plane "
                 "'/host:CPU' (host deep, the event at 1256000 ps): jaxprof reads at most 256 levels",
                 (unsigned long long)at, thunks ? "tf_worker" : "python");
        assert_string_equal(err.msg, want);
        assert_int_equal(err.offset, at);
        /* innermost first (out of nesting order): found once sorted, by host, line and time */
        assert_int_equal(build_nest(300, thunks, 1, &err, &n), JP_ERR_LIMIT);
        assert_string_equal(err.msg, "deep: events nested more than 256 deep on line 0 (the event at 1256000 ps): "
                                     "jaxprof reads at most 256 levels");
    }
}

/* What one op of a GPU plane adds up to, in the ops table or in the XLA Ops row. */
typedef struct op_sum {
    int64_t count, total_ps;
} op_sum;

/* On every GPU plane that gets XLA rows: each run of the XLA Ops row names an op the model has on
 * that device, and per op the runs hold as many kernels, lasting as long, as the model counts. */
static void check_rows_match_table(const char *file, int64_t want_kernels, int64_t want_ops) {
    char path[4096];
    real_capture(path, sizeof path, file);
    jp_xspace *xs = NULL;
    jp_error err;
    assert_int_equal(jp_xspace_open(&xs, path, &err), JP_OK);
    jp_arena arena;
    jp_arena_init(&arena, 0);
    jp_model m;
    jp_model_init(&m, &arena);
    assert_int_equal(jp_model_add_xspace(&m, xs, "h", NULL, &err), JP_OK);
    assert_int_equal(jp_model_finish(&m, &err), JP_OK);
    op_sum *table = calloc(m.opdefs.n + 1, sizeof *table), *rows = calloc(m.opdefs.n + 1, sizeof *rows);
    assert_non_null(table);
    assert_non_null(rows);
    /* the XLA Ops row names an op by (module, name); the table keeps one op per program of a
     * module name (records.c), so the programs of one (device, module, name) are summed into
     * the first one's entry */
    jp_map by_name = {0};
    uint32_t *first = calloc(m.opdefs.n + 1, sizeof *first);
    assert_non_null(first);
    for (size_t d = 0; d < m.opdefs.n; d++) {
        const jp_opdef *def = &JP_VEC_AT(&m.opdefs, jp_opdef, d);
        first[d] = jp_map_get_or_put(&by_name, def->device, jp_ptr_key(def->module), jp_ptr_key(def->name),
                                     (uint32_t)d, NULL);
    }
    for (size_t i = 0; i < m.ops.n; i++) {
        const jp_op_ev *e = &JP_VEC_AT(&m.ops, jp_op_ev, i);
        table[first[e->op]].count++;
        table[first[e->op]].total_ps += e->dur_ps;
    }
    size_t n_planes;
    const jp_plane *planes = jp_xspace_planes(xs, &n_planes);
    int64_t kernels = 0, n_rows_ops = 0;
    for (size_t p = 0; p < n_planes; p++) {
        if (!jp_layout_plane_gets_gpu_rows(&planes[p])) continue;
        uint32_t dev = UINT32_MAX;
        for (uint32_t d = 0; d < m.devices.n; d++)
            if (jp_str_eq(planes[p].name, JP_VEC_AT(&m.devices, jp_device, d).name)) dev = d;
        assert_int_not_equal(dev, UINT32_MAX);
        jp_vec ks = {0}, runs = {0};
        assert_int_equal(jp_layout_gpu_kernels(xs, &planes[p], 0, &ks, &err), JP_OK);
        assert_int_equal(jp_layout_merge_kernels(ks.data, ks.n, 1, &runs, &err), JP_OK);
        for (int pass = 0; pass < 2; pass++) { /* the kernels' times, then the runs' counts */
            const jp_vec *v = pass ? &runs : &ks;
            for (size_t i = 0; i < v->n; i++) {
                const jp_layout_kernel *k = &JP_VEC_AT(v, jp_layout_kernel, i);
                const char *module = jp_intern_lookup(&m.intern, k->module.ptr, k->module.len);
                const char *op = jp_intern_lookup(&m.intern, k->op.ptr, k->op.len);
                uint32_t def = module && op ? jp_map_get(&by_name, dev, jp_ptr_key(module), jp_ptr_key(op))
                                            : UINT32_MAX;
                if (def == UINT32_MAX) fail_msg("%s: the XLA Ops row's %.*s is no op of the table", file, (int)k->op.len, k->op.ptr);
                if (pass) {
                    rows[def].count += k->kernels;
                    kernels += k->kernels;
                } else {
                    rows[def].total_ps += k->end_ps - k->start_ps;
                }
            }
        }
        jp_vec_free(&ks);
        jp_vec_free(&runs);
        /* every op of the table on this device that names its module (XLA's) is in the rows */
        for (size_t d = 0; d < m.opdefs.n; d++) {
            const jp_opdef *def = &JP_VEC_AT(&m.opdefs, jp_opdef, d);
            if (def->device != dev || !*def->module || first[d] != d) continue;
            n_rows_ops++;
            if (rows[d].count != table[d].count || rows[d].total_ps != table[d].total_ps)
                fail_msg("%s: %s/%s: table %lld kernels %lld ps, XLA Ops row %lld kernels %lld ps", file, def->module,
                         def->name, (long long)table[d].count, (long long)table[d].total_ps, (long long)rows[d].count,
                         (long long)rows[d].total_ps);
        }
    }
    assert_int_equal(kernels, want_kernels);
    assert_int_equal(n_rows_ops, want_ops);
    jp_map_deinit(&by_name);
    free(first);
    free(table);
    free(rows);
    jp_model_deinit(&m);
    jp_arena_deinit(&arena);
    jp_xspace_close(xs);
}

static void xla_ops_rows_count_what_the_ops_table_counts(void **state) {
    (void)state;
    REQUIRE_REAL_CAPTURES();
    check_rows_match_table("mi300_jax08_attention.xplane.pb.gz", 87, 16);
    check_rows_match_table("mi300_jax08_conv.xplane.pb.gz", 198, 32);
    check_rows_match_table("mi300_jax08_elementwise.xplane.pb.gz", 65, 12);
    check_rows_match_table("mi300_jax08_gemm.xplane.pb.gz", 42, 4);
    check_rows_match_table("mi300_jax_conv_minimal_legacy.xplane.pb.gz", 25, 4);
    check_rows_match_table("te_fused_attn_934987a2fc2f.xplane.pb.gz", 150, 20);
}

/* The real MI300 captures' costs per compiled program (issue 31): jit_dot's custom-call.1 is five
 * programs, each op with its own program's GEMM FLOPs (2·M·N·K from its shapes); the MIOpen
 * convolution's FLOPs come from its window and dimension numbers (3.27e10, valid positions) and
 * count once per run, its 79 kernel events being 40 runs (40 GEMMs, 39 Im3d2Col with op stats);
 * ROCm's copyBuffer is a kernel no XLA op launched. The Python tests check the same against the
 * HLO as XLA's parser prints it (tests/python/test_costs.py). */
static void per_program_costs(void **state) {
    (void)state;
    static const struct {
        const char *file, *module, *op;
        int64_t program;
        double flops;
    } want[] = {
        {"mi300_jax08_gemm.xplane.pb.gz", "jit_dot", "custom-call.1", 21, 2.0 * 1024 * 1024 * 1024},
        {"mi300_jax08_gemm.xplane.pb.gz", "jit_dot", "custom-call.1", 49, 2.0 * 2048 * 2048 * 65536},
        {"mi300_jax08_conv.xplane.pb.gz", "jit_forward_3d_conv", "cudnn-conv.1", -1, 32715571200.0},
    };
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", JP_REAL_CAPTURES, want[w].file);
        jp_xspace *xs = NULL;
        jp_error err;
        assert_int_equal(jp_xspace_open(&xs, path, &err), JP_OK);
        jp_arena arena;
        jp_arena_init(&arena, 0);
        jp_model m;
        jp_model_init(&m, &arena);
        assert_int_equal(jp_model_add_xspace(&m, xs, "h", NULL, &err), JP_OK);
        assert_int_equal(jp_model_finish(&m, &err), JP_OK);
        const jp_opdef *hit = NULL, *copy = NULL;
        uint64_t kernels = 0; /* over the devices it ran on: one opdef each */
        double runs = 0;
        for (size_t d = 0; d < m.opdefs.n; d++) {
            const jp_opdef *def = &JP_VEC_AT(&m.opdefs, jp_opdef, d);
            if (strcmp(def->module, want[w].module) == 0 && strcmp(def->name, want[w].op) == 0 &&
                def->program_id == want[w].program) {
                hit = def;
                kernels += def->n_kernels;
                runs += jp_opdef_event_share(def) * (double)def->n_kernels;
            }
            if (strcmp(def->name, "__amd_rocclr_copyBuffer.kd") == 0) copy = def;
        }
        assert_non_null(hit);
        assert_true(hit->hlo_flops == want[w].flops);
        assert_non_null(copy);
        assert_true(copy->no_xla_op && strcmp(copy->category, JP_CATEGORY_NO_XLA_OP) == 0);
        if (want[w].program < 0) { /* the convolution: two kernels a run */
            assert_int_equal(kernels, 79);
            assert_true(runs == 40);
        } else {
            assert_true(hit->shared_name && jp_opdef_event_share(hit) == 1);
        }
        jp_model_deinit(&m);
        jp_arena_deinit(&arena);
        jp_xspace_close(xs);
    }
}

/* The module a dispatch runs, as compile events and step ends both derive it: whole for a 2,000-
 * character function (steps.c used to look such a name up with snprintf's would-be length, past
 * its 512-byte stack buffer), cut with "..." past JP_MODULE_NAME_MAX, and odd names handled. */
static void dispatch_module_names(void **state) {
    (void)state;
    static char name[6000], want[6000], buf[JP_MODULE_NAME_MAX];
    memcpy(name, "PjitFunction(", 13);
    memset(name + 13, 'f', 2000);
    memcpy(name + 2013, ")", 2);
    jp_text t = jp_text_make(buf, sizeof buf);
    jp_host_dispatch_module(name, &t);
    memcpy(want, "jit_", 4);
    memset(want + 4, 'f', 2000);
    want[2004] = '\0';
    assert_string_equal(t.buf, want);
    assert_int_equal(t.cut, 0);
    memset(name + 13, 'g', 5000); /* 5,004 bytes of module name: cut */
    memcpy(name + 5013, ")", 2);
    t = jp_text_make(buf, sizeof buf);
    jp_host_dispatch_module(name, &t);
    assert_int_equal(t.cut, 1);
    assert_int_equal(t.len, sizeof buf - 1);
    assert_string_equal(t.buf + t.len - 4, "g...");
    static const char *const odd[][2] = {{"PjitFunction()", "jit_"}, {"PjitFunction(", "jit_"},
                                         {"PjitFunction(f", "jit_f"}, {"other(f)", "jit_other(f"}};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        t = jp_text_make(buf, sizeof buf);
        jp_host_dispatch_module(odd[i][0], &t);
        assert_string_equal(t.buf, odd[i][1]);
    }
}


/* ---- XLA:CPU devices ---------------------------------------------------------------------------- */

/* A /host:CPU plane whose thunks (hlo_op, hlo_module, device_ordinal) name the devices in `ords`
 * (-1: no device_ordinal stat), one thunk each, 10 ns apart on two worker lines, and an
 * "H2D Dispatch" copy (it names no device). */
static pbw cpu_devices_space(const int *ords, size_t n) {
    pbw space = {0}, plane = {0};
    for (uint64_t l = 0; l < 2; l++) {
        pbw line = {0};
        for (size_t i = l; i < n; i += 2) {
            pbw ev = {0}, st = {0};
            pbw_uint(&ev, 1, 1);
            pbw_uint(&ev, 2, 10000 * i);
            pbw_uint(&ev, 3, 5000);
            pbw_uint(&st, 1, 1);
            pbw_str(&st, 5, "dot.1");
            pbw_msg(&ev, 4, &st);
            pbw_uint(&st, 1, 2);
            pbw_str(&st, 5, "jit_f");
            pbw_msg(&ev, 4, &st);
            if (ords[i] >= 0) {
                pbw_uint(&st, 1, 3);
                pbw_uint(&st, 3, (uint64_t)ords[i]);
                pbw_msg(&ev, 4, &st);
            }
            pbw_msg(&line, 4, &ev);
        }
        if (l == 1) { /* the copy, last on its line */
            pbw ev = {0};
            pbw_uint(&ev, 1, 2);
            pbw_uint(&ev, 2, 10000 * n);
            pbw_uint(&ev, 3, 3000);
            pbw_msg(&line, 4, &ev);
        }
        pbw_uint(&line, 1, 7 + l);
        pbw_str(&line, 2, "tf_XLAPjRtCpuClient");
        pbw_uint(&line, 3, 1000);
        pbw_msg(&plane, 3, &line);
    }
    const char *stats[4] = {"", JP_XN_STAT_HLO_OP, JP_XN_STAT_HLO_MODULE, JP_XN_STAT_DEVICE_ORDINAL};
    for (uint64_t id = 1; id < 4; id++) pbw_stat_meta(&plane, id, stats[id]);
    const char *events[3] = {"", "dot.1", "H2D Dispatch"};
    for (uint64_t id = 1; id < 3; id++) pbw_event_meta(&plane, id, events[id], NULL);
    pbw_uint(&plane, 1, 1);
    pbw_str(&plane, 2, JP_XN_PLANE_HOST_CPU);
    pbw_msg(&space, 1, &plane);
    return space;
}

/* Builds the model of cpu_devices_space(ords) with --device `device` (NULL: all) and checks its
 * devices' names (want, n_want) and how many thunks each holds (n_ops; the copy's device last). */
static void check_cpu_devices(const int *ords, size_t n, const char *device, const char *const *want,
                              const size_t *n_ops, size_t n_want, size_t xfer_on) {
    pbw space = cpu_devices_space(ords, n);
    jp_error err;
    jp_xspace *xs = NULL;
    assert_int_equal(jp_xspace_parse_lazy(&xs, space.buf, space.len, "cpu.xplane.pb", &err), JP_OK);
    jp_arena arena;
    jp_arena_init(&arena, 0);
    jp_model m;
    jp_model_init(&m, &arena);
    jp_load_options opt = {.device = device};
    assert_int_equal(jp_model_add_xspace(&m, xs, "cpu", &opt, &err), JP_OK);
    assert_int_equal(jp_model_finish(&m, &err), JP_OK);
    assert_int_equal(m.devices.n, n_want);
    size_t counted[8] = {0};
    for (size_t i = 0; i < m.ops.n; i++) {
        const jp_op_ev *e = &JP_VEC_AT(&m.ops, jp_op_ev, i);
        counted[JP_VEC_AT(&m.opdefs, jp_opdef, e->op).device]++;
    }
    for (size_t d = 0; d < n_want; d++) {
        assert_string_equal(JP_VEC_AT(&m.devices, jp_device, d).name, want[d]);
        assert_int_equal(counted[d], n_ops[d]);
    }
    if (xfer_on == SIZE_MAX) {
        assert_int_equal(m.xfers.n, 0);
    } else {
        assert_int_equal(m.xfers.n, 1);
        assert_int_equal(JP_VEC_AT(&m.xfers, jp_xfer_ev, 0).device, xfer_on);
    }
    jp_model_deinit(&m);
    jp_arena_deinit(&arena);
    jp_xspace_close(xs);
    free(space.buf);
}

static void cpu_thunks_name_their_devices(void **state) {
    (void)state;
    /* three ordinals, first seen out of order: ordered devices, the copy on /host:CPU after them */
    static const int three[] = {2, 0, 1, 2, 2, 0};
    static const char *const names3[] = {"/device:CPU:0", "/device:CPU:1", "/device:CPU:2", JP_XN_PLANE_HOST_CPU};
    check_cpu_devices(three, 6, NULL, names3, (const size_t[]){2, 1, 3, 0}, 4, 3);
    /* --device N picks one of them, without the host's copies */
    check_cpu_devices(three, 6, "2", (const char *const[]){"/device:CPU:2"}, (const size_t[]){3}, 1, SIZE_MAX);
    check_cpu_devices(three, 6, "0", (const char *const[]){"/device:CPU:0"}, (const size_t[]){2}, 1, SIZE_MAX);
    /* one ordinal (or none: older XLA): the single /host:CPU device of before, the copy on it */
    static const char *const host[] = {JP_XN_PLANE_HOST_CPU};
    check_cpu_devices((const int[]){0, 0, 0}, 3, NULL, host, (const size_t[]){3}, 1, 0);
    check_cpu_devices((const int[]){-1, -1, -1}, 3, NULL, host, (const size_t[]){3}, 1, 0);
    check_cpu_devices((const int[]){0, 0, 0}, 3, "0", host, (const size_t[]){3}, 1, 0);
    check_cpu_devices((const int[]){0, 0, 0}, 3, "1", host, (const size_t[]){0}, 0, SIZE_MAX);
}


/* Command buffers: kernels run inside a CUDA graph are matched to the module's schedule in order.
 * XLA names a kernel after a fusion of the same kind (one kernel can serve several identical
 * fusions: "loop_add_fusion_1" runs loop_add_fusion.6); a library kernel runs a custom call; a
 * memset belongs to the call whose kernel follows it; a kernel that fits nothing keeps no match. */
static void graph_kernels_follow_the_schedule(void **state) {
    (void)state;
    jp_hlo_instr in[] = {{.name = "loop_add_fusion.6", .opcode = "fusion", .category = "loop fusion"},
                         {.name = "custom-call.3", .opcode = "custom-call", .category = "custom-call"},
                         {.name = "input_reduce_fusion.2", .opcode = "fusion", .category = "input fusion"},
                         {.name = "copy.1", .opcode = "copy", .category = "data formatting"},
                         {.name = "gemm_fusion_dot.7", .opcode = "fusion", .category = "matmul fusion"},
                         {.name = "loop_add_fusion", .opcode = "fusion", .category = "loop fusion"}};
    const jp_hlo_instr *sched[] = {&in[0], &in[1], &in[2], &in[3], &in[4], &in[5]};
    jp_hlo_sequence seq = {sched, 6, 1};
    const char *kernels[] = {"loop_add_fusion_1", "Memset 3", "nvjet_sm90_tst_128x128", "input_reduce_fusion_11",
                             "gemm_fusion_dot_262", "mystery_kernel", "loop_add_fusion_6"};
    const uint8_t memset[] = {0, 1, 0, 0, 0, 0, 0};
    int32_t out[7];
    assert_int_equal(jp_graph_align(kernels, memset, 7, &seq, out), 5);
    const int32_t want[] = {0, 1, 1, 2, 4, -1, 5};
    for (int i = 0; i < 7; i++) assert_int_equal(out[i], want[i]);

    /* a second graph of the module starts mid-schedule: its first kernel may match anywhere */
    const char *later[] = {"gemm_fusion_dot_9", "loop_add_fusion_3"};
    const uint8_t none[] = {0, 0};
    assert_int_equal(jp_graph_align(later, none, 2, &seq, out), 2);
    assert_int_equal(out[0], 4);
    assert_int_equal(out[1], 5);
}

/* jp_step_issued_at_from gives jp_step_issued_at's answer whatever its hint: times in order (the
 * hint right), backwards and at random (the hint stale), on steps with gaps between markers, a
 * marker-less step, markers that overrun the next step and times before the first and after the last. */
static void step_search_from_a_hint_agrees(void **state) {
    (void)state;
    jp_step steps[40];
    memset(steps, 0, sizeof steps);
    for (int i = 0; i < 40; i++) {
        steps[i].start_ps = 1000 * i, steps[i].dur_ps = 1000;
        steps[i].host_start_ps = 1000 * i + (i % 3) * 100, steps[i].host_dur_ps = i == 17 ? 0 : i % 2 ? 1300 : 600;
    }
    jp_analysis a = {.steps = steps, .n_steps = 40};
    uint64_t x = 88172645463325252u;
    for (int order = 0; order < 3; order++) {
        size_t hint = 0;
        for (int k = 0; k < 20000; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            int64_t t = order == 0 ? k * 2 - 500 : order == 1 ? 42000 - k * 2 : (int64_t)(x % 44000) - 1000;
            long want = jp_step_issued_at(&a, t), got = jp_step_issued_at_from(&a, t, &hint);
            if (got != want) fail_msg("order %d, t %lld: step %ld from the hint, %ld searched", order, (long long)t, got, want);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(step_search_from_a_hint_agrees),
        cmocka_unit_test(nesting_past_the_limit_is_an_error),
        cmocka_unit_test(xla_ops_rows_count_what_the_ops_table_counts),
        cmocka_unit_test(per_program_costs),
        cmocka_unit_test(dispatch_module_names),
        cmocka_unit_test(cpu_thunks_name_their_devices),
        cmocka_unit_test(graph_kernels_follow_the_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
