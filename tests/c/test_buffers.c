/* test_buffers.c - memory at the peak: the BufferAssignmentProto decoder (src/decode/hlo_buffers.c)
 * and the walk over the heap trace (src/analyses/buffers.c), on hand-built HloProtos and on real
 * captures checked against XProf 2.24.2's memory viewer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "analyses/analyses.h"
#include "pbwrite.h"
#include "real_captures.h"

enum { F32 = 11, S32 = 4, TUPLE = 13 };
enum { ALLOC = 0, FREE = 1, SHARE = 2 };
enum { PARAM = 1, LIVE_OUT = 2, THREAD_LOCAL = 4 }; /* alloc() flags */

/* ---- building an HloProto ------------------------------------------------------------------- */

static void array_shape(pbw *s, int type, int64_t d0, int64_t d1) {
    pbw dims = {0};
    pbw_uint(s, 2, (uint64_t)type);
    if (d0 >= 0) pbw_varint(&dims, (uint64_t)d0);
    if (d1 >= 0) pbw_varint(&dims, (uint64_t)d1);
    pbw_msg(s, 3, &dims);
}

/* An instruction with an f32[d0,d1] output (d1 < 0: one dimension). */
static void instr(pbw *comp, const char *name, const char *opcode, uint64_t id, int64_t d0, int64_t d1, const char *op_name) {
    pbw in = {0}, s = {0}, meta = {0};
    pbw_str(&in, 1, name);
    pbw_str(&in, 2, opcode);
    array_shape(&s, F32, d0, d1);
    pbw_msg(&in, 3, &s);
    pbw_str(&meta, 2, op_name);
    pbw_msg(&in, 7, &meta);
    pbw_uint(&in, 35, id);
    pbw_msg(comp, 2, &in);
}

/* An instruction with the tuple output (f32[4,4], s32[2]). */
static void tuple_instr(pbw *comp, const char *name, uint64_t id) {
    pbw in = {0}, s = {0}, a = {0}, b = {0};
    pbw_str(&in, 1, name);
    pbw_str(&in, 2, "copy-start");
    pbw_uint(&s, 2, TUPLE);
    array_shape(&a, F32, 4, 4);
    array_shape(&b, S32, 2, -1);
    pbw_msg(&s, 4, &a);
    pbw_msg(&s, 4, &b);
    pbw_msg(&in, 3, &s);
    pbw_uint(&in, 35, id);
    pbw_msg(comp, 2, &in);
}

/* A logical buffer defined by instruction id (or, when name is set, by name alone), at shape
 * index {index} when index >= 0. */
static void lbuf(pbw *ba, int64_t id, int64_t size, uint64_t instr_id, const char *name, int64_t index) {
    pbw lb = {0}, loc = {0};
    pbw_uint(&lb, 1, (uint64_t)id);
    pbw_uint(&lb, 2, (uint64_t)size);
    if (name) pbw_str(&loc, 2, name);
    else pbw_uint(&loc, 4, instr_id);
    if (index >= 0) pbw_uint(&loc, 3, (uint64_t)index); /* unpacked, as old writers do */
    pbw_msg(&lb, 3, &loc);
    pbw_msg(ba, 1, &lb);
}

static void alloc(pbw *ba, int64_t index, int64_t size, int flags, const int64_t *ids, size_t n) {
    pbw al = {0};
    pbw_uint(&al, 1, (uint64_t)index);
    pbw_uint(&al, 2, (uint64_t)size);
    if (flags & THREAD_LOCAL) pbw_uint(&al, 3, 1);
    if (flags & PARAM) pbw_uint(&al, 5, 1);
    if (flags & LIVE_OUT) pbw_uint(&al, 7, 1);
    for (size_t i = 0; i < n; i++) {
        pbw as = {0};
        pbw_uint(&as, 1, (uint64_t)ids[i]);
        pbw_uint(&as, 2, (uint64_t)i * 1000000); /* offsets past the allocation's end: kept */
        pbw_msg(&al, 9, &as);
    }
    pbw_msg(ba, 3, &al);
}

typedef struct ev {
    int kind;
    int64_t buffer, share_with;
    const char *instruction;
} ev;

static void trace(pbw *ba, const ev *e, size_t n) {
    pbw tr = {0};
    for (size_t i = 0; i < n; i++) {
        pbw m = {0};
        if (e[i].kind != ALLOC) pbw_uint(&m, 1, (uint64_t)e[i].kind); /* proto3: ALLOC is absent */
        pbw_uint(&m, 2, (uint64_t)e[i].buffer);
        pbw_str(&m, 3, "main.7");
        pbw_str(&m, 4, e[i].instruction);
        if (e[i].kind == SHARE) pbw_uint(&m, 5, (uint64_t)e[i].share_with);
        pbw_msg(&tr, 1, &m);
    }
    pbw_msg(ba, 4, &tr);
}

/* The module every walk test shares: parameter p f32[64,64] (16 KiB: its own row), temporaries
 * t1..t4 f32[64,128] (32 KiB), output o f32[16] (64 B: the small row); ids 1..6. */
static pbw module_with(pbw *ba) {
    pbw comp = {0}, module = {0}, proto = {0};
    pbw_str(&comp, 1, "main.7");
    instr(&comp, "p", "parameter", 1, 64, 64, "p");
    instr(&comp, "t1", "fusion", 2, 64, 128, "jit(f)/dot_general");
    instr(&comp, "t2", "sine", 3, 64, 128, "jit(f)/sin");
    instr(&comp, "t3", "cosine", 4, 64, 128, "jit(f)/cos");
    instr(&comp, "o", "reduce", 5, 16, -1, "jit(f)/reduce_sum");
    instr(&comp, "t4", "add", 6, 64, 128, "jit(f)/add");
    pbw_str(&module, 1, "jit_f");
    pbw_msg(&module, 3, &comp);
    pbw_msg(&proto, 1, &module);
    pbw_msg(&proto, 3, ba);
    return proto;
}

/* The buffer assignment of module_with: LBs 10..15 for the six instructions, the parameter and the
 * output allocations, one heap allocation of 4 x 32 KiB, and the trace e. */
static pbw standard_ba(const ev *e, size_t n) {
    static const int64_t p[] = {10}, o[] = {14}, heap[] = {11, 12, 13, 15};
    pbw ba = {0};
    lbuf(&ba, 10, 16384, 1, NULL, -1);
    lbuf(&ba, 11, 32768, 2, NULL, -1);
    lbuf(&ba, 12, 32768, 3, NULL, -1);
    lbuf(&ba, 13, 32768, 4, NULL, -1);
    lbuf(&ba, 14, 64, 5, NULL, -1);
    lbuf(&ba, 15, 32768, 6, NULL, -1);
    alloc(&ba, 0, 16384, PARAM, p, 1);
    alloc(&ba, 1, 64, LIVE_OUT, o, 1);
    alloc(&ba, 2, 131072, 0, heap, 4);
    trace(&ba, e, n);
    return ba;
}

typedef struct result {
    jp_arena arena;
    jp_intern intern;
    jp_hlo_module m;
    jp_module_memory mm;
} result;

static int decode(result *r, pbw *proto, jp_error *err) {
    jp_arena_init(&r->arena, 0);
    jp_intern_init(&r->intern, &r->arena);
    jp_bytes bytes = {proto->buf, proto->len};
    return jp_hlo_decode(bytes, proto->buf, NULL, &r->intern, &r->arena, &r->m, err);
}

static void walk(result *r, const ev *e, size_t n) {
    pbw ba = standard_ba(e, n), proto = module_with(&ba);
    jp_error err;
    assert_int_equal(decode(r, &proto, &err), JP_OK);
    assert_non_null(r->m.memory);
    assert_int_equal(jp_buffers_module(r->m.memory, &r->arena, &r->mm), JP_OK);
    free(proto.buf);
}

static void release(result *r) {
    jp_intern_deinit(&r->intern);
    jp_arena_deinit(&r->arena);
}

/* ---- the walk -------------------------------------------------------------------------------- */

/* The heap reaches 64 KiB at event 1 and again at event 3: the first maximum is the peak. */
static void test_first_max_and_rows(void **state) {
    (void)state;
    static const ev e[] = {{ALLOC, 11, 0, "t1"}, {ALLOC, 12, 0, "t2"}, {FREE, 11, 0, "t2"},
                           {ALLOC, 13, 0, "t3"}, {FREE, 12, 0, "t3"}, {FREE, 13, 0, "o"}};
    result r;
    walk(&r, e, 6);
    const jp_module_memory *m = &r.mm;
    assert_int_equal(m->always_live_bytes, 16384 + 64);
    assert_int_equal(m->kind_bytes[JP_BUFFER_PARAMETER], 16384);
    assert_int_equal(m->kind_bytes[JP_BUFFER_OUTPUT], 64);
    assert_int_equal(m->peak_bytes, 65536 + 16448);
    assert_int_equal(m->peak_unpadded_bytes, 65536 + 16448);
    assert_int_equal(m->peak_index, 1);
    assert_string_equal(m->peak_instruction, "t2");
    assert_string_equal(m->peak_computation, "main.7");
    static const int64_t timeline[] = {0, 32768, 65536, 32768, 65536, 32768, 0};
    assert_int_equal(m->n_timeline, 7);
    for (size_t i = 0; i < 7; i++) assert_int_equal(m->timeline[i], timeline[i] + 16448);
    assert_string_equal(m->timeline_instructions[6], "");
    assert_int_equal(m->total_bytes, 16384 + 64 + 131072);
    assert_int_equal(m->temp_bytes, 131072);
    assert_int_equal(m->parameter_bytes, 16384);
    assert_int_equal(m->output_bytes, 64);
    /* t1, t2 (largest first, program order), p (exactly 16384 B: its own row), the small row */
    assert_int_equal(m->n_buffers, 4);
    assert_string_equal(m->buffers[0].instruction, "t1");
    assert_int_equal(m->buffers[0].kind, JP_BUFFER_TEMPORARY);
    assert_string_equal(m->buffers[0].shape, "f32[64,128]");
    assert_string_equal(m->buffers[0].op_name, "jit(f)/dot_general");
    assert_string_equal(m->buffers[0].opcode, "fusion");
    assert_int_equal(m->buffers[0].start, 0);
    assert_int_equal(m->buffers[0].end, 2);
    assert_string_equal(m->buffers[1].instruction, "t2");
    assert_int_equal(m->buffers[1].start, 1);
    assert_int_equal(m->buffers[1].end, 4);
    assert_string_equal(m->buffers[2].instruction, "p");
    assert_int_equal(m->buffers[2].kind, JP_BUFFER_PARAMETER);
    assert_int_equal(m->buffers[2].start, -1);
    assert_int_equal(m->buffers[3].kind, JP_BUFFER_SMALL);
    assert_int_equal(m->buffers[3].id, -1);
    assert_int_equal(m->buffers[3].bytes, 64);
    assert_int_equal(m->buffers[3].n_small, 1);
    assert_string_equal(m->buffers[3].instruction, "small (<16384 bytes)");
    assert_string_equal(m->note, "");
    assert_string_equal(jp_buffer_kind_name(JP_BUFFER_SMALL), "small");
    assert_string_equal(jp_buffer_kind_name(JP_BUFFER_KIND_COUNT), "?");
    release(&r);
}

/* t2 shares t1's memory after t1 was freed: the memory comes back, under t2's name. */
static void test_share_after_free_regrows(void **state) {
    (void)state;
    static const ev e[] = {{ALLOC, 11, 0, "t1"}, {FREE, 11, 0, "t1"}, {SHARE, 12, 11, "t2"},
                           {ALLOC, 13, 0, "t3"}, {FREE, 12, 0, "t3"}, {FREE, 13, 0, "o"}};
    result r;
    walk(&r, e, 6);
    assert_int_equal(r.mm.peak_index, 3);
    assert_int_equal(r.mm.peak_bytes, 65536 + 16448);
    assert_int_equal(r.mm.timeline[3] - 16448, 32768); /* before event 3: the regrown memory */
    assert_string_equal(r.mm.buffers[0].instruction, "t2"); /* t1's buffer, shown as its sharer */
    assert_int_equal(r.mm.buffers[0].id, 12);
    assert_int_equal(r.mm.buffers[0].start, 2);
    assert_int_equal(r.mm.buffers[0].end, 4);
    assert_string_equal(r.mm.buffers[1].instruction, "t3");
    release(&r);
}

/* A share while the canonical buffer is live costs nothing; freeing the canonical one while the
 * sharer holds it frees nothing. */
static void test_share_while_live_is_free(void **state) {
    (void)state;
    static const ev e[] = {{ALLOC, 11, 0, "t1"}, {SHARE, 12, 11, "t2"}, {FREE, 11, 0, "t2"},
                           {ALLOC, 13, 0, "t3"}, {FREE, 12, 0, "t3"}, {FREE, 13, 0, "o"}};
    result r;
    walk(&r, e, 6);
    static const int64_t timeline[] = {0, 32768, 32768, 32768, 65536, 32768, 0};
    for (size_t i = 0; i < 7; i++) assert_int_equal(r.mm.timeline[i] - 16448, timeline[i]);
    assert_int_equal(r.mm.peak_index, 3);
    assert_string_equal(r.mm.buffers[0].instruction, "t1"); /* shown under the canonical name */
    release(&r);
}

/* t2 shares t1, then t1 shares t2: the second event would close a cycle and is left out. */
static void test_share_cycle_is_left_out(void **state) {
    (void)state;
    static const ev e[] = {{ALLOC, 11, 0, "t1"}, {SHARE, 12, 11, "t2"}, {SHARE, 11, 12, "t1"},
                           {SHARE, 11, 11, "t1"}, {FREE, 12, 0, "t2"}, {FREE, 11, 0, "t1"}};
    result r;
    walk(&r, e, 6);
    assert_int_equal(r.mm.peak_bytes, 32768 + 16448);
    assert_int_equal(r.mm.peak_index, 0);
    assert_int_equal(r.mm.n_timeline, 7);
    assert_int_equal(r.mm.timeline[6], 16448);
    assert_non_null(strstr(r.mm.note, "cycle"));
    assert_non_null(strstr(r.mm.note, "event 2"));
    release(&r);
}

/* XProf refuses a trace that frees a buffer twice: the always-live part stays, with a note. */
static void test_double_free_keeps_always_live(void **state) {
    (void)state;
    static const ev e[] = {{ALLOC, 11, 0, "t1"}, {FREE, 11, 0, "t1"}, {FREE, 11, 0, "t1"}};
    result r;
    walk(&r, e, 3);
    assert_int_equal(r.mm.peak_bytes, 16448);
    assert_int_equal(r.mm.peak_index, -1);
    assert_int_equal(r.mm.n_timeline, 0);
    assert_non_null(strstr(r.mm.note, "freed twice"));
    assert_int_equal(r.mm.n_buffers, 2); /* p and the small row */
    assert_string_equal(r.mm.buffers[0].instruction, "p");
    release(&r);
}

/* Unknown buffer ids in events and allocations, and a buffer whose instruction id is not in the
 * module, are skipped; their events still have timeline points. */
static void test_unknown_ids_are_skipped(void **state) {
    (void)state;
    static const int64_t p[] = {10, 99}, heap[] = {11, 16};
    pbw ba = {0};
    lbuf(&ba, 10, 16384, 1, NULL, -1);
    lbuf(&ba, 11, 32768, 2, NULL, -1);
    lbuf(&ba, 16, 1 << 20, 777, NULL, -1); /* defined by no instruction */
    alloc(&ba, 0, 16384, PARAM, p, 2);
    alloc(&ba, 1, 2 << 20, 0, heap, 2);
    static const ev e[] = {{ALLOC, 16, 0, "x"}, {ALLOC, 11, 0, "t1"}, {ALLOC, 12345, 0, "y"}, {FREE, 11, 0, "t1"}};
    trace(&ba, e, 4);
    pbw proto = module_with(&ba);
    result r;
    jp_error err;
    assert_int_equal(decode(&r, &proto, &err), JP_OK);
    assert_int_equal(jp_buffers_module(r.m.memory, &r.arena, &r.mm), JP_OK);
    assert_int_equal(r.mm.n_timeline, 5);
    assert_int_equal(r.mm.peak_index, 1);
    assert_int_equal(r.mm.peak_bytes, 32768 + 16384);
    assert_int_equal(r.mm.n_buffers, 2);
    assert_string_equal(r.mm.note, "");
    release(&r);
    free(proto.buf);
}

/* Instruction ids are 64-bit: 2<<32|3 is not 3. A location without an id names the instruction;
 * a shape index picks a tuple element. */
static void test_ids_names_and_shape_index(void **state) {
    (void)state;
    pbw comp = {0}, module = {0}, proto = {0}, ba = {0};
    pbw_str(&comp, 1, "main");
    instr(&comp, "small", "negate", 3, 2, -1, "a");
    instr(&comp, "big", "exponential", (2ull << 32) | 3, 128, 128, "b");
    tuple_instr(&comp, "cs", 7);
    pbw_str(&module, 1, "jit_g");
    pbw_msg(&module, 3, &comp);
    pbw_msg(&proto, 1, &module);
    lbuf(&ba, 0, 65536, (2ull << 32) | 3, NULL, -1); /* id 0 is a real id */
    lbuf(&ba, 1, 65536, 0, "big", -1);
    lbuf(&ba, 2, 32, 7, NULL, 1);
    lbuf(&ba, 3, 24, 7, NULL, -1);
    static const int64_t outs[] = {0, 1, 2, 3};
    alloc(&ba, 0, 1 << 20, LIVE_OUT, outs, 1);
    alloc(&ba, 1, 1 << 20, LIVE_OUT, outs + 1, 1);
    alloc(&ba, 2, 32, LIVE_OUT, outs + 2, 2);
    pbw_msg(&proto, 3, &ba);
    result r;
    jp_error err;
    assert_int_equal(decode(&r, &proto, &err), JP_OK);
    const jp_hlo_memory *mem = r.m.memory;
    assert_int_equal(mem->n_buffers, 4);
    assert_string_equal(mem->buffers[0].instruction, "big");
    assert_string_equal(mem->buffers[0].shape, "f32[128,128]");
    assert_int_equal(mem->buffers[0].unpadded, 65536);
    assert_string_equal(mem->buffers[1].instruction, "big");
    assert_string_equal(mem->buffers[2].instruction, "cs{1}");
    assert_string_equal(mem->buffers[2].shape, "s32[2]");
    assert_int_equal(mem->buffers[2].unpadded, 8);
    assert_string_equal(mem->buffers[3].instruction, "cs");
    assert_string_equal(mem->buffers[3].shape, "(f32[4,4], s32[2])");
    assert_int_equal(mem->buffers[3].unpadded, 16); /* a tuple: 8 bytes per element */
    assert_int_equal(jp_buffers_module(mem, &r.arena, &r.mm), JP_OK);
    assert_int_equal(r.mm.peak_bytes, (2 << 20) + 32);
    assert_int_equal(r.mm.peak_index, -1);
    assert_int_equal(r.mm.n_timeline, 0);
    assert_int_equal(r.mm.n_buffers, 3); /* big twice, then the small row (cs{1}: the larger one) */
    assert_int_equal(r.mm.buffers[2].n_small, 1);
    assert_int_equal(r.mm.buffers[2].bytes, 32);
    release(&r);
    free(proto.buf);
}

/* Events over two allocations: XProf gives up on the trace; so do we, with a note. */
static void test_events_over_two_allocations(void **state) {
    (void)state;
    static const int64_t p[] = {10}, a1[] = {11}, a2[] = {12};
    pbw ba = {0};
    lbuf(&ba, 10, 16384, 1, NULL, -1);
    lbuf(&ba, 11, 32768, 2, NULL, -1);
    lbuf(&ba, 12, 32768, 3, NULL, -1);
    alloc(&ba, 0, 16384, PARAM, p, 1);
    alloc(&ba, 1, 32768, 0, a1, 1);
    alloc(&ba, 2, 32768, THREAD_LOCAL, a2, 1);
    static const ev e[] = {{ALLOC, 11, 0, "t1"}, {ALLOC, 12, 0, "t2"}};
    trace(&ba, e, 2);
    pbw proto = module_with(&ba);
    result r;
    jp_error err;
    assert_int_equal(decode(&r, &proto, &err), JP_OK);
    assert_int_equal(jp_buffers_module(r.m.memory, &r.arena, &r.mm), JP_OK);
    assert_non_null(strstr(r.mm.note, "several allocations"));
    assert_int_equal(r.mm.peak_bytes, 16384);
    assert_int_equal(r.mm.total_bytes, 16384 + 32768); /* thread-local left out */
    release(&r);
    free(proto.buf);
}

/* ---- hostile bytes ------------------------------------------------------------------------------ */

/* Field 3 claims more bytes than the HloProto holds; a logical buffer inside a well-formed field 3
 * is cut in the middle of a varint: both fail cleanly with the byte offset. */
static void test_truncated_buffer_assignment(void **state) {
    (void)state;
    static const ev e[] = {{ALLOC, 11, 0, "t1"}};
    pbw ba = standard_ba(e, 1), proto = module_with(&ba);
    result r;
    jp_error err;
    size_t cut = proto.len - 5;
    pbw shortened = {0};
    pbw_raw(&shortened, proto.buf, cut);
    assert_int_equal(decode(&r, &shortened, &err), JP_ERR_TRUNCATED);
    assert_int_equal(err.code, JP_ERR_TRUNCATED);
    assert_true(err.offset > 0 && err.offset <= cut);
    release(&r);
    free(shortened.buf);
    free(proto.buf);

    pbw bad = {0}, comp = {0}, module = {0}, p2 = {0};
    const uint8_t lb[] = {0x08, 0x80}; /* LogicalBufferProto: field 1, a varint cut short */
    pbw_bytes(&bad, 1, lb, sizeof lb);
    pbw_str(&comp, 1, "main");
    instr(&comp, "t1", "add", 1, 4, 4, "x");
    pbw_str(&module, 1, "jit_h");
    pbw_msg(&module, 3, &comp);
    pbw_msg(&p2, 1, &module);
    size_t lb_at = p2.len + 2 + 2; /* field 3's tag and length, then field 1's tag and length */
    pbw wrong = {0};
    pbw_raw(&wrong, p2.buf, p2.len);
    pbw_msg(&p2, 3, &bad);
    assert_int_equal(decode(&r, &p2, &err), JP_ERR_TRUNCATED);
    assert_int_equal(err.offset, lb_at + 1); /* the varint after field 1's tag */
    release(&r);
    free(p2.buf);

    pbw al = {0}, ba2 = {0};
    const uint8_t wire7[] = {0x17, 0x01}; /* BufferAllocationProto: field 2 with wire type 7 */
    pbw_uint(&al, 1, 0);
    pbw_raw(&al, wire7, sizeof wire7);
    pbw_msg(&ba2, 3, &al);
    size_t tag_at = wrong.len + 2 + 2 + 2; /* field 3, field 3 (allocation), field 1 = 0 */
    pbw_msg(&wrong, 3, &ba2);
    assert_int_equal(decode(&r, &wrong, &err), JP_ERR_CORRUPT);
    assert_int_equal(err.offset, tag_at);
    release(&r);
    free(wrong.buf);
}

/* Sizes past INT64_MAX (negative on the wire) read as 0; offsets past an allocation are kept. */
static void test_negative_sizes_read_as_zero(void **state) {
    (void)state;
    static const int64_t heap[] = {11};
    pbw ba = {0};
    lbuf(&ba, 11, -5, 2, NULL, -1);
    alloc(&ba, 0, -7, 0, heap, 1);
    static const ev e[] = {{ALLOC, 11, 0, "t1"}, {FREE, 11, 0, "t1"}};
    trace(&ba, e, 2);
    pbw proto = module_with(&ba);
    result r;
    jp_error err;
    assert_int_equal(decode(&r, &proto, &err), JP_OK);
    assert_int_equal(r.m.memory->buffers[0].bytes, 0);
    assert_int_equal(r.m.memory->buffers[0].offset, 0);
    assert_int_equal(jp_buffers_module(r.m.memory, &r.arena, &r.mm), JP_OK);
    assert_int_equal(r.mm.peak_bytes, 0);
    assert_int_equal(r.mm.total_bytes, 0);
    release(&r);
    free(proto.buf);
}

/* Sizes near 2^63 (found by fuzz_hlotext): a and b are f32[2^40,2^40] (unpadded saturates) of
 * INT64_MAX bytes each, c 4 bytes. Alloc a, b, c saturates the heap at INT64_MAX; the frees take
 * the full sizes off, so freeing b leaves -4 and freeing a took INT64_MAX off -4: a signed overflow
 * before the subtraction saturated too. Now the walk refuses the trace with a note. */
static void test_absurd_sizes_saturate(void **state) {
    (void)state;
    pbw comp = {0}, module = {0}, proto = {0}, ba = {0};
    pbw_str(&comp, 1, "main.7");
    instr(&comp, "a", "fusion", 1, INT64_C(1) << 40, INT64_C(1) << 40, "jit(f)/a");
    instr(&comp, "b", "fusion", 2, INT64_C(1) << 40, INT64_C(1) << 40, "jit(f)/b");
    instr(&comp, "c", "add", 3, 1, -1, "jit(f)/c");
    static const int64_t heap[] = {10, 11, 12};
    lbuf(&ba, 10, INT64_MAX, 1, NULL, -1);
    lbuf(&ba, 11, INT64_MAX, 2, NULL, -1);
    lbuf(&ba, 12, 4, 3, NULL, -1);
    alloc(&ba, 0, INT64_MAX, 0, heap, 3);
    static const ev e[] = {{ALLOC, 10, 0, "a"}, {ALLOC, 11, 0, "b"}, {ALLOC, 12, 0, "c"},
                           {FREE, 12, 0, "c"},  {FREE, 11, 0, "b"},  {FREE, 10, 0, "a"}};
    trace(&ba, e, 6);
    pbw_str(&module, 1, "jit_f");
    pbw_msg(&module, 3, &comp);
    pbw_msg(&proto, 1, &module);
    pbw_msg(&proto, 3, &ba);
    result r;
    jp_error err;
    assert_int_equal(decode(&r, &proto, &err), JP_OK);
    assert_int_equal(r.m.memory->buffers[0].unpadded, INT64_MAX);
    assert_int_equal(jp_buffers_module(r.m.memory, &r.arena, &r.mm), JP_OK);
    assert_non_null(strstr(r.mm.note, "the heap goes below zero (event 4)"));
    assert_int_equal(r.mm.peak_index, -1);
    release(&r);
    free(proto.buf);
}

/* ---- real captures, against XProf 2.24.2's memory viewer (research/xprof_expected.json) ------- */

static const jp_module_memory *module_named(const jp_analysis *a, const char *name) {
    for (size_t i = 0; i < a->n_modules; i++)
        if (strcmp(a->modules[i].name, name) == 0) return &a->modules[i];
    fail_msg("no module %s", name);
    return NULL;
}

static void test_real_captures_agree_with_xprof(void **state) {
    (void)state;
    REQUIRE_REAL_CAPTURES();
    char path[4096];
    jp_profile *p;
    jp_error err;
    /* XProf 2.24.2: peak 1,158,144,000 B at event 2, top row input_transpose_fusion (output,
     * 572,026,880 B, bf16[55862,5120], line 23) */
    assert_int_equal(jp_profile_load(&p, real_capture(path, sizeof path, "mi300_jax08_conv.xplane.pb.gz"), NULL, &err), JP_OK);
    const jp_analysis *a = jp_profile_analysis(p);
    const jp_module_memory *m = module_named(a, "jit_forward_3d_conv(15)");
    assert_ptr_equal(m, &a->modules[0]); /* the largest peak */
    assert_int_equal(m->peak_bytes, 1158144000);
    assert_int_equal(m->peak_index, 2);
    assert_int_equal(m->n_buffers, 6);
    assert_int_equal(m->buffers[0].bytes, 572026880);
    assert_string_equal(m->buffers[0].instruction, "input_transpose_fusion");
    assert_int_equal(m->buffers[0].kind, JP_BUFFER_OUTPUT);
    assert_string_equal(m->buffers[0].shape, "bf16[55862,5120]");
    assert_non_null(strstr(m->buffers[0].source, ":23"));
    assert_true(m->runs > 0);
    assert_string_equal(m->host, "mi300_jax08_conv");
    jp_profile_free(p);
    /* XProf 2.24.2: jit_loss_fn(17) peak 520,618,120 B at event 9 of 44, 12 rows, top row
     * gemm_fusion_dot.3 (temporary, 201,326,592 B, f32[2,4096,6144], line 92) */
    assert_int_equal(jp_profile_load(&p, real_capture(path, sizeof path, "te_fused_attn_934987a2fc2f.xplane.pb.gz"), NULL, &err), JP_OK);
    a = jp_profile_analysis(p);
    m = module_named(a, "jit_loss_fn(17)");
    assert_int_equal(m->peak_bytes, 520618120);
    assert_int_equal(m->peak_unpadded_bytes, 520618120);
    assert_int_equal(m->peak_index, 9);
    assert_int_equal(m->n_timeline, 45);
    assert_int_equal(m->n_buffers, 12);
    assert_int_equal(m->buffers[0].bytes, 201326592);
    assert_string_equal(m->buffers[0].instruction, "gemm_fusion_dot.3");
    assert_int_equal(m->buffers[0].kind, JP_BUFFER_TEMPORARY);
    assert_string_equal(m->buffers[0].shape, "f32[2,4096,6144]");
    assert_string_equal(m->buffers[0].op_name, "jit(loss_fn)/jvp(bsd,de->bse)/dot_general");
    assert_non_null(strstr(m->buffers[0].source, ":92"));
    assert_true(m->buffers[0].n_stack > 0);
    jp_profile_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_max_and_rows),
        cmocka_unit_test(test_share_after_free_regrows),
        cmocka_unit_test(test_share_while_live_is_free),
        cmocka_unit_test(test_share_cycle_is_left_out),
        cmocka_unit_test(test_double_free_keeps_always_live),
        cmocka_unit_test(test_unknown_ids_are_skipped),
        cmocka_unit_test(test_ids_names_and_shape_index),
        cmocka_unit_test(test_events_over_two_allocations),
        cmocka_unit_test(test_truncated_buffer_assignment),
        cmocka_unit_test(test_negative_sizes_read_as_zero),
        cmocka_unit_test(test_absurd_sizes_saturate),
        cmocka_unit_test(test_real_captures_agree_with_xprof),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
