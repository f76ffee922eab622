/* test_hlo.c - the HloProto decoder (src/decode/hlo.c, hlo_cost.c): Python stacks from the
 * stack_frame_index, the source-line rule, FLOPs and bytes, and hostile frame indexes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "model/model.h"
#include "pbwrite.h"

enum { F32 = 11 };

static void shape(pbw *instr, uint32_t field, const int64_t *dims, size_t n) {
    pbw s = {0}, d = {0};
    pbw_uint(&s, 2, F32);
    for (size_t i = 0; i < n; i++) pbw_varint(&d, (uint64_t)dims[i]);
    pbw_msg(&s, 3, &d); /* packed dimensions */
    pbw_msg(instr, field, &s);
}

/* An instruction: name, opcode, f32 output dims, operands, stack frame id (0: none). */
static void instr(pbw *comp, const char *name, const char *opcode, const int64_t *dims, size_t n_dims,
                  const int64_t *operands, size_t n_ops, int64_t id, uint64_t frame, int contract_dim) {
    pbw in = {0}, meta = {0}, ops = {0};
    pbw_str(&in, 1, name);
    pbw_str(&in, 2, opcode);
    shape(&in, 3, dims, n_dims);
    pbw_str(&meta, 2, "jit(step)/dense/dot_general");
    if (frame) pbw_uint(&meta, 15, frame);
    pbw_msg(&in, 7, &meta);
    pbw_uint(&in, 35, (uint64_t)id);
    for (size_t i = 0; i < n_ops; i++) pbw_varint(&ops, (uint64_t)operands[i]);
    if (n_ops) pbw_msg(&in, 36, &ops);
    if (contract_dim >= 0) {
        pbw dn = {0}, lhs = {0};
        pbw_varint(&lhs, (uint64_t)contract_dim);
        pbw_msg(&dn, 1, &lhs);
        pbw_msg(&in, 30, &dn);
    }
    pbw_msg(comp, 2, &in);
}

static void location(pbw *index, uint64_t file, uint64_t function, uint64_t line) {
    pbw l = {0};
    pbw_uint(&l, 1, file);
    pbw_uint(&l, 2, function);
    pbw_uint(&l, 3, line);
    pbw_msg(index, 3, &l);
}

static void frame(pbw *index, uint64_t loc, uint64_t parent) {
    pbw f = {0};
    pbw_uint(&f, 1, loc);
    if (parent) pbw_uint(&f, 2, parent);
    pbw_msg(index, 4, &f);
}

/* A module: x f32[4,8] @ w f32[8,16] made in flax (library) called from train.py:10 (step),
 * called from train.py:30 (<module>); frame 4 is its own parent; instruction "loop" names frame 4,
 * "far" a frame id past the index. */
static pbw module_proto(void) {
    static const int64_t x_dims[] = {4, 8}, w_dims[] = {8, 16}, y_dims[] = {4, 16}, xw[] = {1, 2};
    pbw index = {0}, comp = {0}, module = {0}, proto = {0};
    pbw_str(&index, 1, "/home/u/train.py");
    pbw_str(&index, 1, "/usr/lib/python3/site-packages/flax/linen/linear.py");
    pbw_str(&index, 2, "<module>");
    pbw_str(&index, 2, "step");
    pbw_str(&index, 2, "Dense.__call__");
    location(&index, 1, 1, 30); /* 1: <module> train.py:30 */
    location(&index, 1, 2, 10); /* 2: step train.py:10 */
    location(&index, 2, 3, 250); /* 3: flax linear.py:250 */
    frame(&index, 1, 0);         /* 1 */
    frame(&index, 2, 1);         /* 2 */
    frame(&index, 3, 2);         /* 3: innermost, library */
    frame(&index, 3, 4);         /* 4: library, its own parent */
    pbw_str(&comp, 1, "main");
    instr(&comp, "x", "parameter", x_dims, 2, NULL, 0, 1, 0, -1);
    instr(&comp, "w", "parameter", w_dims, 2, NULL, 0, 2, 0, -1);
    instr(&comp, "dot.1", "dot", y_dims, 2, xw, 2, 3, 3, 1);
    instr(&comp, "loop", "negate", y_dims, 2, xw, 1, 4, 4, -1);
    instr(&comp, "far", "negate", y_dims, 2, xw, 1, 5, 99, -1);
    pbw_uint(&comp, 5, 1);
    pbw_str(&module, 1, "jit_step");
    pbw_msg(&module, 3, &comp);
    pbw_msg(&module, 17, &index);
    pbw_msg(&proto, 1, &module);
    return proto;
}

typedef struct decoded {
    jp_arena arena;
    jp_intern intern;
    jp_hlo_module m;
} decoded;

static void decode(decoded *d, const pbw *proto, const char *library_rule) {
    regex_t re;
    assert_int_equal(regcomp(&re, library_rule, REG_EXTENDED | REG_NOSUB), 0);
    jp_arena_init(&d->arena, 0);
    jp_intern_init(&d->intern, &d->arena);
    jp_error err;
    jp_bytes bytes = {proto->buf, proto->len};
    assert_int_equal(jp_hlo_decode(bytes, proto->buf, &re, &d->intern, &d->arena, &d->m, &err), JP_OK);
    regfree(&re);
}

static void release(decoded *d) {
    jp_intern_deinit(&d->intern);
    jp_arena_deinit(&d->arena);
}

static const jp_hlo_instr *find(decoded *d, const char *name) {
    const char *key = jp_intern_lookup(&d->intern, name, strlen(name));
    const jp_hlo_instr *in = key ? jp_hlo_find(&d->m, key) : NULL;
    assert_non_null(in);
    return in;
}

static void test_source_line_skips_library_frames(void **state) {
    (void)state;
    pbw proto = module_proto();
    decoded d;
    decode(&d, &proto, JP_HLO_LIBRARY_FRAMES);
    const jp_hlo_instr *dot = find(&d, "dot.1");
    assert_string_equal(dot->source, "/home/u/train.py:10");
    assert_string_equal(dot->function, "step");
    /* the whole stack, innermost first: flax, step, <module> */
    const jp_hlo_frame *f = dot->frame;
    assert_non_null(f);
    assert_true(f->library);
    assert_int_equal(f->line, 250);
    assert_string_equal(f->parent->function, "step");
    assert_false(f->parent->library);
    assert_string_equal(f->parent->parent->function, "<module>");
    assert_null(f->parent->parent->parent);
    release(&d);
    free(proto.buf);
}

static void test_flops_and_bytes_of_a_dot(void **state) {
    (void)state;
    pbw proto = module_proto();
    decoded d;
    decode(&d, &proto, JP_HLO_LIBRARY_FRAMES);
    const jp_hlo_instr *dot = find(&d, "dot.1");
    assert_true(dot->flops == 2.0 * 4 * 16 * 8);        /* 2 x output elements x contracted size */
    assert_true(dot->bytes == 4.0 * (4 * 8 + 8 * 16 + 4 * 16)); /* operands + output, f32 */
    assert_true(find(&d, "loop")->flops == 4 * 16);     /* negate: one per output element */
    assert_true(find(&d, "x")->bytes == 0);             /* parameters move nothing */
    release(&d);
    free(proto.buf);
}

/* Text only when asked for: the analysis' decode leaves it NULL, the viewer's writes XLA's form
 * (shapes without layouts); an operand id the module does not define is left blank. */
static void test_instruction_text(void **state) {
    (void)state;
    pbw proto = module_proto();
    decoded d;
    decode(&d, &proto, JP_HLO_LIBRARY_FRAMES);
    assert_null(find(&d, "dot.1")->text);
    release(&d);
    jp_arena_init(&d.arena, 0);
    jp_intern_init(&d.intern, &d.arena);
    jp_error err;
    assert_int_equal(jp_hlo_decode_text((jp_bytes){proto.buf, proto.len}, proto.buf, NULL, &d.intern, &d.arena, &d.m, &err),
                     JP_OK);
    assert_string_equal(find(&d, "dot.1")->text, "%dot.1 = f32[4,16] dot(f32[4,8] %x, f32[8,16] %w)");
    assert_string_equal(find(&d, "x")->text, "%x = f32[4,8] parameter()");
    assert_string_equal(find(&d, "loop")->text, "%loop = f32[4,16] negate(f32[4,8] %x)");
    release(&d);
    free(proto.buf);
}

static void test_no_rule_names_the_innermost_frame(void **state) {
    (void)state;
    pbw proto = module_proto();
    decoded d;
    decode(&d, &proto, "^$"); /* no file matches: nothing is library code */
    assert_string_equal(find(&d, "dot.1")->source, "/usr/lib/python3/site-packages/flax/linen/linear.py:250");
    assert_string_equal(find(&d, "dot.1")->function, "Dense.__call__");
    release(&d);
    free(proto.buf);
}

static void test_hostile_frame_references(void **state) {
    (void)state;
    pbw proto = module_proto();
    decoded d;
    decode(&d, &proto, JP_HLO_LIBRARY_FRAMES);
    /* a frame that is its own parent: every library frame up the (looping) chain, so the
     * innermost one names the line, and the walk stops */
    const jp_hlo_instr *loop = find(&d, "loop");
    assert_ptr_equal(loop->frame->parent, loop->frame);
    assert_string_equal(loop->source, "/usr/lib/python3/site-packages/flax/linen/linear.py:250");
    /* a frame id past the index: no stack, no source */
    const jp_hlo_instr *far = find(&d, "far");
    assert_null(far->frame);
    assert_string_equal(far->source, "");
    release(&d);
    free(proto.buf);
}

/* One instruction of fusion_proto: like instr(), with its own op_name and a called computation
 * (0: none). */
static void fused_instr(pbw *comp, const char *name, const char *opcode, const int64_t *dims, const int64_t *operands,
                        size_t n_ops, int64_t id, uint64_t frame, int contract_dim, const char *op_name, uint64_t called) {
    pbw in = {0}, meta = {0}, ops = {0};
    pbw_str(&in, 1, name);
    pbw_str(&in, 2, opcode);
    shape(&in, 3, dims, 2);
    pbw_str(&meta, 2, op_name);
    pbw_uint(&meta, 15, frame);
    pbw_msg(&in, 7, &meta);
    pbw_uint(&in, 35, (uint64_t)id);
    for (size_t i = 0; i < n_ops; i++) pbw_varint(&ops, (uint64_t)operands[i]);
    if (n_ops) pbw_msg(&in, 36, &ops);
    if (called) pbw_uint(&in, 38, called);
    if (contract_dim >= 0) {
        pbw dn = {0}, lhs = {0};
        pbw_varint(&lhs, (uint64_t)contract_dim);
        pbw_msg(&dn, 1, &lhs);
        pbw_msg(&in, 30, &dn);
    }
    pbw_msg(comp, 2, &in);
}

/* XLA's fusion of a dot (train.py:10) and the negation of its result (train.py:11): the fusion's
 * own metadata is its root's, the negate's line and op_name. */
static pbw fusion_proto(void) {
    static const int64_t x_dims[] = {4, 8}, w_dims[] = {8, 16}, y_dims[] = {4, 16}, xw[] = {1, 2}, p01[] = {11, 12},
                         dot[] = {13};
    pbw index = {0}, fused = {0}, main_comp = {0}, module = {0}, proto = {0};
    pbw_str(&index, 1, "/home/u/train.py");
    pbw_str(&index, 2, "step");
    location(&index, 1, 1, 10);
    location(&index, 1, 1, 11);
    frame(&index, 1, 0);
    frame(&index, 2, 0);
    pbw_str(&fused, 1, "fused_computation");
    fused_instr(&fused, "p0", "parameter", x_dims, NULL, 0, 11, 0, -1, "", 0);
    fused_instr(&fused, "p1", "parameter", w_dims, NULL, 0, 12, 0, -1, "", 0);
    fused_instr(&fused, "dot.2", "dot", y_dims, p01, 2, 13, 1, 1, "jit(step)/dot_general", 0);
    fused_instr(&fused, "neg.3", "negate", y_dims, dot, 1, 14, 2, -1, "jit(step)/neg", 0);
    pbw_uint(&fused, 5, 7);
    pbw_str(&main_comp, 1, "main");
    fused_instr(&main_comp, "x", "parameter", x_dims, NULL, 0, 1, 0, -1, "", 0);
    fused_instr(&main_comp, "w", "parameter", w_dims, NULL, 0, 2, 0, -1, "", 0);
    fused_instr(&main_comp, "fusion.1", "fusion", y_dims, xw, 2, 3, 2, -1, "jit(step)/neg", 7);
    pbw_uint(&main_comp, 5, 1);
    pbw_str(&module, 1, "jit_step");
    pbw_msg(&module, 3, &fused);
    pbw_msg(&module, 3, &main_comp);
    pbw_msg(&module, 17, &index);
    pbw_msg(&proto, 1, &module);
    return proto;
}

/* The fusion reports its dot's op_name and line alike (not the negate's line with the dot's
 * op_name), and shares its time between the two lines by their FLOPs: 2*4*16*8 = 1024 for the
 * dot, 64 for the negate. A buffer keeps the fusion's own op_name and line. */
static void test_fusion_takes_its_dot_line_and_shares_its_lines(void **state) {
    (void)state;
    pbw proto = fusion_proto();
    decoded d;
    decode(&d, &proto, JP_HLO_LIBRARY_FRAMES);
    const jp_hlo_instr *f = find(&d, "fusion.1");
    assert_string_equal(f->category, "matmul fusion");
    assert_string_equal(f->op_name, "jit(step)/dot_general");
    assert_string_equal(f->source, "/home/u/train.py:10");
    assert_int_equal(f->frame->line, 10);
    assert_true(f->flops == 1024 + 64);
    assert_int_equal(f->n_shares, 2);
    assert_string_equal(f->shares[0].source, "/home/u/train.py:10");
    assert_string_equal(f->shares[0].function, "step");
    assert_int_equal(f->shares[0].frame->line, 10);
    assert_true(f->shares[0].weight == 1024.0 / 1088);
    assert_string_equal(f->shares[1].source, "/home/u/train.py:11");
    assert_true(f->shares[1].weight == 64.0 / 1088);
    assert_int_equal(find(&d, "dot.2")->n_shares, 0); /* only fusions are shared out */
    assert_string_equal(find(&d, "neg.3")->source, "/home/u/train.py:11");
    release(&d);
    free(proto.buf);
}

/* A scope path longer than 1 KiB (a 1,000+ character function name and named_scope) is kept whole:
 * before issue 30 each piece that did not fit a 1 KiB buffer was dropped, so ops lost their scope. */
static void test_long_scope_is_kept_whole(void **state) {
    (void)state;
    enum { FN = 1100, SCOPE = 1300 };
    static char op_name[FN + SCOPE + 64], want[FN + SCOPE + 2];
    memset(want, 'f', FN);
    want[FN] = '/';
    memset(want + FN + 1, 's', SCOPE);
    want[FN + 1 + SCOPE] = '\0';
    snprintf(op_name, sizeof op_name, "jit(%.*s)/jvp(%s)/dot_general", FN, want, want + FN + 1);
    jp_arena arena;
    jp_intern intern;
    jp_arena_init(&arena, 0);
    jp_intern_init(&intern, &arena);
    assert_string_equal(jp_hlo_scope_of(&intern, op_name), want);
    assert_string_equal(jp_hlo_scope_of(&intern, "jit(f)/transpose(jvp(loss))/dense/dot_general"), "f/loss/dense");
    assert_string_equal(jp_hlo_scope_of(&intern, "no_slash"), "");
    jp_intern_deinit(&intern);
    jp_arena_deinit(&arena);
}

/* A collective: name, opcode, f32 output dims, one operand, and its groups already written in g
 * (field 49 or 87; NULL: none). */
static void coll(pbw *comp, const char *name, const char *opcode, const int64_t *dims, size_t n_dims, int64_t id,
                 int64_t operand, uint32_t group_field, pbw *g) {
    pbw in = {0}, ops = {0};
    pbw_str(&in, 1, name);
    pbw_str(&in, 2, opcode);
    shape(&in, 3, dims, n_dims);
    pbw_uint(&in, 35, (uint64_t)id);
    pbw_varint(&ops, (uint64_t)operand);
    pbw_msg(&in, 36, &ops);
    if (g) pbw_msg(&in, group_field, g);
    pbw_msg(comp, 2, &in);
}

/* Message size S and group size n of each collective (the nccl-tests convention): an iota device
 * list, explicit replica groups, empty groups (the device assignment's replicas x computations),
 * a permute's pairs; a -done half takes its -start's, and names it. */
static void test_collective_sizes_and_groups(void **state) {
    (void)state;
    static const int64_t d[] = {8, 16}, gathered[] = {16, 16}, scattered[] = {1, 16};
    pbw comp = {0}, module = {0}, proto = {0}, da = {0}, iota = {0}, list = {0}, group = {0}, ids = {0};
    pbw pair1 = {0}, pair2 = {0};
    pbw_str(&comp, 1, "main");
    instr(&comp, "p", "parameter", d, 2, NULL, 0, 1, 0, -1);
    pbw_uint(&iota, 1, 2); /* 2 groups of 4 */
    pbw_uint(&iota, 2, 4);
    pbw_msg(&list, 2, &iota);
    coll(&comp, "all-reduce-start.1", "all-reduce-start", d, 2, 2, 1, 87, &list);
    coll(&comp, "all-reduce-done.1", "all-reduce-done", d, 2, 3, 2, 0, NULL);
    pbw_varint(&ids, 0);
    pbw_varint(&ids, 1);
    pbw_msg(&group, 1, &ids); /* {0,1} */
    coll(&comp, "all-gather.2", "all-gather", gathered, 2, 4, 1, 49, &group);
    coll(&comp, "reduce-scatter.3", "reduce-scatter", scattered, 2, 5, 1, 0, NULL);
    pbw_uint(&pair1, 1, 0), pbw_uint(&pair1, 2, 1);
    pbw_uint(&pair2, 1, 1), pbw_uint(&pair2, 2, 0);
    pbw in = {0}, ops = {0};
    pbw_str(&in, 1, "collective-permute.4");
    pbw_str(&in, 2, "collective-permute");
    shape(&in, 3, d, 2);
    pbw_uint(&in, 35, 6);
    pbw_varint(&ops, 1);
    pbw_msg(&in, 36, &ops);
    pbw_msg(&in, 52, &pair1);
    pbw_msg(&in, 52, &pair2);
    pbw_msg(&comp, 2, &in);
    pbw_uint(&comp, 5, 1);
    pbw_str(&module, 1, "jit_step");
    pbw_msg(&module, 3, &comp);
    pbw_uint(&da, 1, 1);
    pbw_uint(&da, 2, 8);
    pbw_msg(&module, 15, &da); /* 1 replica x 8 partitions */
    pbw_msg(&proto, 1, &module);
    decoded dd;
    decode(&dd, &proto, JP_HLO_LIBRARY_FRAMES);
    const jp_hlo_instr *start = find(&dd, "all-reduce-start.1"), *done = find(&dd, "all-reduce-done.1");
    assert_true(start->coll_bytes == 512 && start->group_size == 4 && start->async_start == NULL);
    assert_true(done->coll_bytes == 512 && done->group_size == 4);
    assert_string_equal(done->async_start, "all-reduce-start.1");
    const jp_hlo_instr *ag = find(&dd, "all-gather.2"), *rs = find(&dd, "reduce-scatter.3");
    assert_true(ag->group_size == 2 && ag->coll_bytes == 2 * 512); /* the gathered buffer */
    assert_true(rs->group_size == 8 && rs->coll_bytes == 512);     /* the whole input */
    const jp_hlo_instr *cp = find(&dd, "collective-permute.4");
    assert_true(cp->group_size == 2 && cp->coll_bytes == 512);
    assert_true(find(&dd, "p")->coll_bytes == 0 && find(&dd, "p")->group_size == 0);
    release(&dd);
    free(proto.buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_source_line_skips_library_frames),
        cmocka_unit_test(test_flops_and_bytes_of_a_dot),
        cmocka_unit_test(test_instruction_text),
        cmocka_unit_test(test_no_rule_names_the_innermost_frame),
        cmocka_unit_test(test_hostile_frame_references),
        cmocka_unit_test(test_long_scope_is_kept_whole),
        cmocka_unit_test(test_fusion_takes_its_dot_line_and_shares_its_lines),
        cmocka_unit_test(test_collective_sizes_and_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
