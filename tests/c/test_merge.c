/* test_merge.c - hosts built apart and merged (model/merge.c, what a multi-host load does on
 * several threads) give the model the hosts added one after another give: every record of every
 * vector, field by field (strings by text, and one pointer per text in each model), before and
 * after jp_model_finish; on real captures of every layout (TPU twice: its run ids count the earlier
 * hosts' executions; GPU command buffers twice: kernel sums shared across hosts), hosts built on
 * worker threads as profile.c builds them. A merge the model cannot reproduce is refused. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/xnames.h"
#include "model/build_int.h"
#include "model/model.h"
#include "real_captures.h"

static const char *const FILES[] = {
    "jax_tpu_v6e_4core_inference.xplane.pb.gz", "@h200_scan_cb.xplane.pb.gz", "mi300_jax08_conv.xplane.pb.gz",
    "jax_tpu_v6e_4core_inference.xplane.pb.gz", "@h200_transformer_cb.xplane.pb.gz", "tf_bert_8xv100_worker0.xplane.pb.gz",
    "@h200_scan_cb.xplane.pb.gz", "@../cpu_small.xplane.pb.gz", "@h200_api_trace.xplane.pb.gz",
};
enum { N_FILES = sizeof FILES / sizeof FILES[0] };
static const char *const HOSTS[N_FILES] = {"a", "b", "c", "d", "e", "f", "g", "h", "i"};

static void path_of(char *buf, size_t cap, const char *file) {
    if (file[0] == '@') snprintf(buf, cap, "%s/gpu/%s", JP_TEST_DATA, file + 1); /* committed fixtures */
    else real_capture(buf, cap, file);
}

static jp_load_options one_thread(void) { return (jp_load_options){.threads = 1}; }

static void add_file(jp_model *m, size_t i) {
    char path[4096];
    path_of(path, sizeof path, FILES[i]);
    jp_xspace *xs = NULL;
    jp_error err;
    assert_int_equal(jp_xspace_open(&xs, path, &err), JP_OK);
    jp_load_options opt = one_thread();
    int rc = jp_model_add_xspace(m, xs, HOSTS[i], &opt, &err);
    if (rc) fprintf(stderr, "%s: %s\n", path, err.msg);
    assert_int_equal(rc, JP_OK);
    jp_xspace_close(xs);
}

/* A part: host i alone, interning through a front of `shared` (as profile.c's workers do). */
typedef struct part_job {
    size_t i;
    jp_intern *shared;
    pthread_mutex_t *lock;
    jp_arena arena;
    jp_model part;
} part_job;

static void *build_part(void *arg) {
    part_job *j = arg;
    jp_arena_init(&j->arena, 0);
    jp_model_init(&j->part, &j->arena);
    jp_intern_init_front(&j->part.intern, j->shared, j->lock);
    j->part.part = 1;
    add_file(&j->part, j->i);
    return NULL;
}

#define STR_EQ(a, b) assert_true(((a) == NULL) == ((b) == NULL) && (!(a) || strcmp((a), (b)) == 0))

static void same_ops(const jp_model *a, const jp_model *b) {
    assert_int_equal(a->ops.n, b->ops.n);
    for (size_t i = 0; i < a->ops.n; i++) {
        const jp_op_ev *x = &JP_VEC_AT(&a->ops, jp_op_ev, i), *y = &JP_VEC_AT(&b->ops, jp_op_ev, i);
        assert_true(x->start_ps == y->start_ps && x->end_ps == y->end_ps && x->dur_ps == y->dur_ps &&
                    x->self_ps == y->self_ps && x->op == y->op && x->line == y->line && x->run_id == y->run_id &&
                    x->launch == y->launch && x->nest_end_ps == y->nest_end_ps);
    }
}

static void same_host_events(const jp_model *a, const jp_model *b) {
    assert_int_equal(a->host.n, b->host.n);
    for (size_t i = 0; i < a->host.n; i++) {
        const jp_host_ev *x = &JP_VEC_AT(&a->host, jp_host_ev, i), *y = &JP_VEC_AT(&b->host, jp_host_ev, i);
        assert_true(x->start_ps == y->start_ps && x->end_ps == y->end_ps && x->self_ps == y->self_ps &&
                    x->line == y->line && x->depth == y->depth && x->kind == y->kind &&
                    x->is_dispatch == y->is_dispatch && x->recursive == y->recursive);
        STR_EQ(x->name, y->name);
        if (x->kind == JP_HOST_STEP) assert_int_equal(x->step_num, y->step_num); /* one slot: model.h */
        else STR_EQ(x->module, y->module);
    }
}

static void same_execs(const jp_vec *a, const jp_vec *b) {
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        const jp_exec *x = &JP_VEC_AT(a, jp_exec, i), *y = &JP_VEC_AT(b, jp_exec, i);
        assert_true(x->run_id == y->run_id && x->program_id == y->program_id && x->start_ps == y->start_ps &&
                    x->end_ps == y->end_ps && x->host == y->host && x->device == y->device);
        STR_EQ(x->module, y->module);
    }
}

static void same_small_records(const jp_model *a, const jp_model *b) {
    assert_int_equal(a->spans.n, b->spans.n);
    for (size_t i = 0; i < a->spans.n; i++) {
        const jp_span *x = &JP_VEC_AT(&a->spans, jp_span, i), *y = &JP_VEC_AT(&b->spans, jp_span, i);
        assert_true(x->start_ps == y->start_ps && x->end_ps == y->end_ps && x->device == y->device && x->part == y->part);
    }
    assert_int_equal(a->xfers.n, b->xfers.n);
    for (size_t i = 0; i < a->xfers.n; i++) {
        const jp_xfer_ev *x = &JP_VEC_AT(&a->xfers, jp_xfer_ev, i), *y = &JP_VEC_AT(&b->xfers, jp_xfer_ev, i);
        assert_true(x->start_ps == y->start_ps && x->end_ps == y->end_ps && x->bytes == y->bytes &&
                    x->device == y->device && x->kind == y->kind);
    }
    assert_int_equal(a->mem.n, b->mem.n);
    for (size_t i = 0; i < a->mem.n; i++) {
        const jp_mem_ev *x = &JP_VEC_AT(&a->mem, jp_mem_ev, i), *y = &JP_VEC_AT(&b->mem, jp_mem_ev, i);
        assert_true(x->t_ps == y->t_ps && x->in_use == y->in_use && x->peak == y->peak);
        STR_EQ(x->allocator, y->allocator);
    }
}

static void same_launches(const jp_model *a, const jp_model *b) {
    assert_int_equal(a->launch_calls.n, b->launch_calls.n);
    for (size_t i = 0; i < a->launch_calls.n; i++) {
        const jp_launch_call *x = &JP_VEC_AT(&a->launch_calls, jp_launch_call, i);
        const jp_launch_call *y = &JP_VEC_AT(&b->launch_calls, jp_launch_call, i);
        assert_true(x->start_ps == y->start_ps && x->end_ps == y->end_ps && x->correlation == y->correlation &&
                    x->name == y->name && x->line == y->line);
    }
    assert_int_equal(a->launch_work.n, b->launch_work.n);
    for (size_t i = 0; i < a->launch_work.n; i++) {
        const jp_launch_ev *x = &JP_VEC_AT(&a->launch_work, jp_launch_ev, i);
        const jp_launch_ev *y = &JP_VEC_AT(&b->launch_work, jp_launch_ev, i);
        assert_true(x->correlation == y->correlation && x->start_ps == y->start_ps && x->end_ps == y->end_ps &&
                    x->where == y->where && x->line == y->line);
        STR_EQ(x->name, y->name);
    }
    assert_int_equal(a->launch_names.n, b->launch_names.n);
    for (size_t i = 0; i < a->launch_names.n; i++)
        STR_EQ(JP_VEC_AT(&a->launch_names, const char *, i), JP_VEC_AT(&b->launch_names, const char *, i));
    assert_int_equal(a->launch_lines.n, b->launch_lines.n);
    for (size_t i = 0; i < a->launch_lines.n; i++) {
        const jp_launch_line *x = &JP_VEC_AT(&a->launch_lines, jp_launch_line, i);
        const jp_launch_line *y = &JP_VEC_AT(&b->launch_lines, jp_launch_line, i);
        assert_true(x->id == y->id && x->device == y->device && x->line == y->line);
        STR_EQ(x->name, y->name);
    }
}

static void same_kernels(const jp_model *a, const jp_model *b) {
    assert_int_equal(a->kernels.n, b->kernels.n);
    for (size_t i = 0; i < a->kernels.n; i++) {
        const jp_kernel_sum *x = &JP_VEC_AT(&a->kernels, jp_kernel_sum, i), *y = &JP_VEC_AT(&b->kernels, jp_kernel_sum, i);
        assert_true(x->opdef == y->opdef && x->with_program == y->with_program && x->autotuning == y->autotuning &&
                    x->count == y->count && x->n_small == y->n_small && x->total_ps == y->total_ps &&
                    x->min_ps == y->min_ps && x->max_ps == y->max_ps);
        STR_EQ(x->name, y->name);
        STR_EQ(x->details, y->details);
        STR_EQ(x->op, y->op);
    }
}

static void same_tables(const jp_model *a, const jp_model *b) {
    assert_int_equal(a->hosts.n, b->hosts.n);
    for (size_t i = 0; i < a->hosts.n; i++) {
        const jp_model_host *x = &JP_VEC_AT(&a->hosts, jp_model_host, i), *y = &JP_VEC_AT(&b->hosts, jp_model_host, i);
        assert_true(x->start_ns == y->start_ns && x->first_ps == y->first_ps && x->last_ps == y->last_ps &&
                    x->first_line == y->first_line && x->first_device == y->first_device &&
                    x->first_span == y->first_span && x->first_xfer == y->first_xfer && x->first_mem == y->first_mem &&
                    x->call_lo == y->call_lo && x->call_hi == y->call_hi);
        STR_EQ(x->name, y->name);
    }
    assert_int_equal(a->devices.n, b->devices.n);
    for (size_t i = 0; i < a->devices.n; i++) {
        const jp_device *x = &JP_VEC_AT(&a->devices, jp_device, i), *y = &JP_VEC_AT(&b->devices, jp_device, i);
        assert_true(x->platform == y->platform && x->peak_flops == y->peak_flops && x->peak_bw == y->peak_bw &&
                    x->busy_ps == y->busy_ps && x->n_ops == y->n_ops);
        STR_EQ(x->name, y->name);
        STR_EQ(x->host, y->host);
        STR_EQ(x->peak_source, y->peak_source);
    }
    assert_int_equal(a->opdefs.n, b->opdefs.n);
    for (size_t i = 0; i < a->opdefs.n; i++) {
        const jp_opdef *x = &JP_VEC_AT(&a->opdefs, jp_opdef, i), *y = &JP_VEC_AT(&b->opdefs, jp_opdef, i);
        assert_true(x->device == y->device && x->flops == y->flops && x->bytes == y->bytes &&
                    x->program_id == y->program_id && x->shared_name == y->shared_name &&
                    x->n_kernels == y->n_kernels && x->autotuning == y->autotuning && x->no_xla_op == y->no_xla_op &&
                    x->with_program == y->with_program && (x->hlo == NULL) == (y->hlo == NULL));
        STR_EQ(x->module, y->module);
        STR_EQ(x->name, y->name);
        STR_EQ(x->category, y->category);
        STR_EQ(x->op_name, y->op_name);
        STR_EQ(x->scope, y->scope);
        STR_EQ(x->source, y->source);
        for (int k = 0; k < JP_OPDEF_KERNELS; k++) {
            STR_EQ(x->kernel[k], y->kernel[k]);
            assert_true(x->kernel_n[k] == y->kernel_n[k]);
        }
    }
    assert_int_equal(a->hlo.n, b->hlo.n);
    for (size_t i = 0; i < a->hlo.n; i++) {
        const jp_hlo_module *x = &JP_VEC_AT(&a->hlo, jp_hlo_module, i), *y = &JP_VEC_AT(&b->hlo, jp_hlo_module, i);
        assert_true(x->host == y->host && x->program_id == y->program_id && x->n_instrs == y->n_instrs);
        STR_EQ(x->name, y->name);
    }
    assert_int_equal(a->warnings.n, b->warnings.n);
    for (size_t i = 0; i < a->warnings.n; i++)
        STR_EQ(JP_VEC_AT(&a->warnings, const char *, i), JP_VEC_AT(&b->warnings, const char *, i));
    assert_int_equal(a->capture_notes.n, b->capture_notes.n);
    assert_int_equal(a->run_program.n, b->run_program.n);
    for (size_t i = 0; i < a->run_program.cap; i++)
        if (a->run_program.vals[i] != UINT32_MAX)
            assert_int_equal(jp_map_get(&b->run_program, a->run_program.keys[3 * i], 0, 0), a->run_program.vals[i]);
    assert_true(a->n_lines == b->n_lines && a->n_events == b->n_events && a->total_dur_ps == b->total_dur_ps &&
                a->first_ps == b->first_ps && a->last_ps == b->last_ps && a->n_compile_spans == b->n_compile_spans);
}

static void same_model(const jp_model *a, const jp_model *b) {
    same_tables(a, b);
    same_ops(a, b);
    same_host_events(a, b);
    same_execs(&a->execs, &b->execs);
    same_execs(&a->device_steps, &b->device_steps);
    same_small_records(a, b);
    same_launches(a, b);
    same_kernels(a, b);
}

/* Every text of b's records is its intern table's one pointer (the analyses compare by pointer). */
static void interned_once(jp_model *b) {
    for (size_t i = 0; i < b->opdefs.n; i++) {
        const jp_opdef *d = &JP_VEC_AT(&b->opdefs, jp_opdef, i);
        assert_ptr_equal(jp_intern_lookup(&b->intern, d->name, strlen(d->name)), d->name);
        assert_ptr_equal(jp_intern_lookup(&b->intern, d->module, strlen(d->module)), d->module);
    }
    for (size_t i = 0; i < b->kernels.n; i++) {
        const jp_kernel_sum *k = &JP_VEC_AT(&b->kernels, jp_kernel_sum, i);
        assert_ptr_equal(jp_intern_lookup(&b->intern, k->name, strlen(k->name)), k->name);
    }
    for (size_t i = 0; i < b->devices.n; i++) {
        const jp_device *d = &JP_VEC_AT(&b->devices, jp_device, i);
        assert_ptr_equal(jp_intern_lookup(&b->intern, d->host, strlen(d->host)), d->host);
    }
}

static void merged_hosts_are_the_sequential_model(void **state) {
    (void)state;
    REQUIRE_REAL_CAPTURES();
    jp_arena arena_a, arena_b, strings;
    jp_arena_init(&arena_a, 0);
    jp_arena_init(&arena_b, 0);
    jp_arena_init(&strings, 0);
    jp_model a, b;
    jp_model_init(&a, &arena_a);
    jp_model_init(&b, &arena_b);
    for (size_t i = 0; i < N_FILES; i++) add_file(&a, i);
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    b.intern.arena = &strings; /* the workers' interning, under the lock */
    part_job jobs[N_FILES];
    pthread_t tid[N_FILES];
    for (size_t i = 0; i < N_FILES; i++) {
        jobs[i] = (part_job){.i = i, .shared = &b.intern, .lock = &lock};
        assert_int_equal(pthread_create(&tid[i], NULL, build_part, &jobs[i]), 0);
    }
    for (size_t i = 0; i < N_FILES; i++) {
        pthread_join(tid[i], NULL);
        assert_int_equal(jp_model_merge(&b, &jobs[i].part), 0);
        jp_arena_adopt(&arena_b, &jobs[i].arena);
        jp_model_deinit(&jobs[i].part);
    }
    jp_arena_adopt(&arena_b, &strings);
    b.intern.arena = &arena_b;
    assert_true(b.kernels.n < a.ops.n); /* kernel sums were shared across hosts */
    same_model(&a, &b);
    interned_once(&b);
    jp_error err;
    assert_int_equal(jp_model_finish(&a, &err), JP_OK);
    assert_int_equal(jp_model_finish(&b, &err), JP_OK);
    same_model(&a, &b);
    jp_model_deinit(&a);
    jp_model_deinit(&b);
    jp_arena_deinit(&arena_a);
    jp_arena_deinit(&arena_b);
}

/* A host whose ops name a module only an earlier host's metadata holds would have used that
 * host's HLO: the merge refuses it (the caller builds it in place), leaving the model unchanged. */
static void a_host_that_needs_earlier_hlo_is_refused(void **state) {
    (void)state;
    jp_arena arena;
    jp_arena_init(&arena, 0);
    jp_model m, part;
    jp_model_init(&m, &arena);
    jp_model_init(&part, &arena);
    part.part = 1;
    const char *mod = jp_intern_str(&m.intern, "jit_f", 5);
    jp_hlo_module *hm = jp_vec_push(&m.hlo, sizeof *hm);
    assert_non_null(hm);
    *hm = (jp_hlo_module){.name = mod, .program_id = 7};
    jp_model_host *h = jp_vec_push(&part.hosts, sizeof *h);
    assert_non_null(h);
    *h = (jp_model_host){.name = "p", .first_ps = INT64_MAX, .last_ps = INT64_MIN};
    jp_part_hlo_miss *miss = jp_vec_push(&part.hlo_misses, sizeof *miss);
    assert_non_null(miss);
    *miss = (jp_part_hlo_miss){"jit_g", 7}; /* by program id */
    assert_int_equal(jp_model_merge(&m, &part), 1);
    *miss = (jp_part_hlo_miss){mod, -1}; /* by name */
    assert_int_equal(jp_model_merge(&m, &part), 1);
    *miss = (jp_part_hlo_miss){"jit_g", 8}; /* neither: merged */
    assert_int_equal(m.hosts.n, 0);
    assert_int_equal(jp_model_merge(&m, &part), 0);
    assert_int_equal(m.hosts.n, 1);
    part.total_dur_ps = JP_XN_TIME_LIMIT_PS; /* the hosts together pass the limit: refused */
    m.total_dur_ps = 1;
    assert_int_equal(jp_model_merge(&m, &part), 1);
    assert_int_equal(m.hosts.n, 1);
    jp_model_deinit(&m);
    jp_model_deinit(&part);
    jp_arena_deinit(&arena);
}

/* A kernel sum an earlier host began keeps its op, moved by the command-buffer renames the part
 * made in order: (g -> n1), (g -> n2), (n1 -> n3) take g to n3, n1 to n3, n2 and z nowhere. */
static void kernel_sum_renames_compose(void **state) {
    (void)state;
    const char *g = "command_buffer_1", *n1 = "fusion.1", *n2 = "fusion.2", *n3 = "fusion.3", *z = "z";
    const char *starts[] = {g, n1, n2, z}, *want[] = {n3, n3, n2, z};
    for (size_t s = 0; s < 4; s++) {
        jp_arena arena;
        jp_arena_init(&arena, 0);
        jp_model m, part;
        jp_model_init(&m, &arena);
        jp_model_init(&part, &arena);
        part.part = 1;
        const char *name = "k", *details = "";
        jp_kernel_sum *k = jp_vec_push(&m.kernels, sizeof *k);
        assert_non_null(k);
        *k = (jp_kernel_sum){name, details, starts[s], 0, 0, 0, 1, 0, 5, 5, 5};
        assert_int_equal(jp_map_get_or_put(&m.kernel_index, jp_ptr_key(name), jp_ptr_key(details), 0, 0, NULL), 0);
        jp_kernel_sum *pk = jp_vec_push(&part.kernels, sizeof *pk);
        assert_non_null(pk);
        *pk = (jp_kernel_sum){name, details, g, 0, 0, 0, 2, 1, 7, 3, 4};
        jp_model_host *h = jp_vec_push(&part.hosts, sizeof *h);
        assert_non_null(h);
        *h = (jp_model_host){.name = "p", .first_ps = INT64_MAX, .last_ps = INT64_MIN};
        assert_int_equal(jp_model_note_rename(&part, 0, g, n1), 0);
        assert_int_equal(jp_model_note_rename(&part, 0, g, n2), 0);
        assert_int_equal(jp_model_note_rename(&part, 0, n1, n3), 0);
        assert_int_equal(jp_model_merge(&m, &part), 0);
        k = &JP_VEC_AT(&m.kernels, jp_kernel_sum, 0);
        assert_string_equal(k->op, want[s]);
        assert_true(k->count == 3 && k->n_small == 1 && k->total_ps == 12 && k->min_ps == 3 && k->max_ps == 5);
        assert_int_equal(m.kernels.n, 1);
        jp_model_deinit(&m);
        jp_model_deinit(&part);
        jp_arena_deinit(&arena);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(merged_hosts_are_the_sequential_model),
        cmocka_unit_test(a_host_that_needs_earlier_hlo_is_refused),
        cmocka_unit_test(kernel_sum_renames_compose),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
