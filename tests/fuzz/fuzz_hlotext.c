/* fuzz_hlotext.c - fuzz target for the HLO text writers: each instruction's line (hlo.c
 * write_texts), each buffer's shape and indexed name (hlo_buffers.c shape_info, indexed_name),
 * scopes and "file:line" sources. The bytes are not a proto: they are a small program that builds a
 * well-formed HloProto with a BufferAssignment, so that long tuples, deep nesting, long names and
 * long operand lists (what real training steps have and random protos rarely reach) cost the fuzzer
 * a byte or two each. Every text must stay inside its bound and be cut only on a whole character.
 *
 * The program, read byte by byte (bytes past the end read as 0):
 *   header:       n_instrs = 1 + b % 32, flags (1: locate buffers by name, 2: a heap trace)
 *   per instruction:
 *     name        a length byte L (text_len) and a style byte, then that many bytes of a pattern
 *     opcode      one byte, an index into OPCODES
 *     shape       recursive: a byte t; t % 4 == 0 is a tuple of tuple_len(next byte) elements that
 *                 all repeat the one element program that follows (so a 500-element tuple is 3
 *                 bytes), else an array of type t / 4 with up to 8 dimensions of 1-2 bytes each
 *     operands    a count byte (operand_count), a start byte: ids start, start + 1, ...
 *     op_name     L + style, written as "jit(f)/jvp(g)/..." components
 *     source      L + style, and a line byte
 *     target      L + style (custom-call targets)
 *   per instruction, its logical buffer: a size byte, an index length byte (% 12, past the 8 kept)
 *   and that many index bytes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../c/pbwrite.h"
#include "analyses/analyses.h"
#include "decode/hlo_ir.h"
#include "model/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { /* xla field numbers, as hlo.c and hlo_buffers.c read them */
    HLO_MODULE = 1, HLO_BUFFERS = 3, MODULE_NAME = 1, MODULE_COMPS = 3, COMP_NAME = 1, COMP_INSTRS = 2, COMP_ID = 5,
    IN_NAME = 1, IN_OPCODE = 2, IN_SHAPE = 3, IN_META = 7, IN_TARGET = 28, IN_ID = 35, IN_OPERANDS = 36,
    META_OP_NAME = 2, META_FILE = 3, META_LINE = 4, SHAPE_TYPE = 2, SHAPE_DIMS = 3, SHAPE_TUPLE = 4,
    BA_BUFFERS = 1, BA_ALLOCS = 3, BA_TRACES = 4, LB_ID = 1, LB_SIZE = 2, LB_AT = 3,
    LOC_NAME = 2, LOC_INDEX = 3, LOC_ID = 4, AL_INDEX = 1, AL_SIZE = 2, AL_ASSIGNED = 9, AS_BUFFER = 1,
    AS_OFFSET = 2, TRACE_EVENTS = 1, EV_KIND = 1, EV_BUFFER = 2, EV_COMP = 3, EV_INSTR = 4,
};

enum {
    MAX_DEPTH = 12,           /* shape nesting generated (hlo_buffers.c follows 8) */
    SHAPE_BUDGET = 8000,      /* shape nodes per input, so one run stays fast */
    TEXT_BUDGET = 1 << 18,    /* bytes of names per input */
    OPERAND_BUDGET = 8000,    /* operands per input */
    TUPLE = 13,
};

static const char *const OPCODES[] = {"parameter", "add", "tuple", "fusion", "dot", "custom-call", "concatenate",
                                      "copy-start", "get-tuple-element", "while", "all-reduce", "convolution"};
static const uint64_t TYPES[] = {11, 16, 4, 1, 6, 5, 21, 99, 0, 12}; /* f32 bf16 s32 pred u8 s64 s4 unknown ... */

/* Texts the names are made of: plain, a scope path, and multi-byte UTF-8 (2, 3 and 4 bytes). */
static const char *const PATTERNS[] = {"n", "jit(step)/jvp(loss)/dense_", "\xc3\xa9t\xc3\xa9_", "\xe6\x95\xb0\xe6\x8d\xae_",
                                       "\xf0\x9f\x98\x80", "a/b", "x.y_", "\xff\x80"};

typedef struct prog {
    const uint8_t *p;
    size_t n, at;
    size_t shapes, text, operands; /* budgets used */
} prog;

static unsigned next(prog *g) { return g->at < g->n ? g->p[g->at++] : 0; }

/* A length byte: short names mostly, from 128 on long ones up to 8 KiB. */
static size_t text_len(unsigned b) { return b < 128 ? b % 24 : 64 * (b - 127); }

/* A tuple's element count: small, or up to 510 from 200 on. */
static size_t tuple_len(unsigned b) { return b < 200 ? b % 9 : 2 * (b - 200) + 400; }

static size_t operand_count(unsigned b) { return b < 200 ? b % 8 : 16 * (b - 199); }

/* len bytes of pattern style (cut anywhere: names are bytes, not always whole characters), with
 * the instruction's number in front so names differ. */
static void put_text(prog *g, pbw *w, uint32_t field, unsigned serial, unsigned style, size_t len) {
    char buf[8192 + 16];
    if (len > TEXT_BUDGET - g->text) len = 0;
    g->text += len;
    const char *pat = PATTERNS[style % (sizeof PATTERNS / sizeof *PATTERNS)];
    size_t k = (size_t)snprintf(buf, sizeof buf, "%u", serial), pl = strlen(pat);
    if (k > len) k = len;
    for (size_t i = k; i < len && i < sizeof buf; i++) buf[i] = pat[(i - k) % pl];
    pbw_bytes(w, field, buf, len < sizeof buf ? len : sizeof buf);
}

static void named(prog *g, pbw *w, uint32_t field, unsigned serial) {
    size_t len = text_len(next(g));
    put_text(g, w, field, serial, next(g), len);
}

/* One ShapeProto into w (see the program above). */
static void shape(prog *g, pbw *w, int depth) {
    unsigned t = next(g);
    g->shapes++;
    if (t % 4 == 0 && depth < MAX_DEPTH) {
        size_t n = tuple_len(next(g)), element = g->at;
        pbw_uint(w, SHAPE_TYPE, TUPLE);
        for (size_t i = 0; i < n && g->shapes < SHAPE_BUDGET; i++) {
            pbw e = {0};
            g->at = element; /* every element repeats the same program */
            shape(g, &e, depth + 1);
            pbw_msg(w, SHAPE_TUPLE, &e);
        }
        if (!n) { /* consume the element program all the same */
            pbw skipped = {0};
            shape(g, &skipped, depth + 1);
            free(skipped.buf);
        }
        return;
    }
    pbw_uint(w, SHAPE_TYPE, TYPES[(t / 4) % (sizeof TYPES / sizeof *TYPES)]);
    pbw dims = {0};
    for (unsigned i = 0, nd = next(g) % 9; i < nd; i++) {
        unsigned b = next(g);
        int64_t d = b < 128 ? (int64_t)b : b < 250 ? (int64_t)(b - 127) * 4096 : -(int64_t)(b - 249); /* some negative */
        pbw_varint(&dims, (uint64_t)d);
    }
    pbw_msg(w, SHAPE_DIMS, &dims);
}

static void instruction(prog *g, pbw *comp, unsigned i, unsigned n) {
    pbw in = {0}, s = {0}, meta = {0}, ops = {0};
    named(g, &in, IN_NAME, i);
    const char *opcode = OPCODES[next(g) % (sizeof OPCODES / sizeof *OPCODES)];
    pbw_str(&in, IN_OPCODE, opcode);
    shape(g, &s, 0);
    pbw_msg(&in, IN_SHAPE, &s);
    size_t n_ops = operand_count(next(g));
    unsigned start = next(g);
    for (size_t k = 0; k < n_ops && g->operands < OPERAND_BUDGET; k++, g->operands++)
        pbw_varint(&ops, 1 + (start + k) % (n + 1)); /* id n + 1: one the module does not define */
    pbw_msg(&in, IN_OPERANDS, &ops);
    named(g, &meta, META_OP_NAME, i);
    named(g, &meta, META_FILE, i);
    pbw_uint(&meta, META_LINE, next(g));
    pbw_msg(&in, IN_META, &meta);
    size_t target_len = text_len(next(g));
    unsigned target_style = next(g);
    if (strcmp(opcode, "custom-call") == 0) put_text(g, &in, IN_TARGET, i, target_style, target_len);
    pbw_uint(&in, IN_ID, 1 + i);
    pbw_msg(comp, COMP_INSTRS, &in);
}

/* Logical buffer 100 + i of instruction i at a shape index of up to 11 entries, all in one heap
 * allocation; with a trace, allocated in order and freed in reverse. */
static void buffers(prog *g, pbw *ba, unsigned n, unsigned flags, const char *const *names, const size_t *name_lens) {
    pbw al = {0};
    pbw_uint(&al, AL_INDEX, 0);
    pbw_uint(&al, AL_SIZE, (uint64_t)n << 20);
    for (unsigned i = 0; i < n; i++) {
        pbw lb = {0}, loc = {0}, as = {0};
        pbw_uint(&lb, LB_ID, 100 + i);
        pbw_uint(&lb, LB_SIZE, (uint64_t)(next(g) + 1) << 12);
        if (flags & 1) pbw_bytes(&loc, LOC_NAME, names[i], name_lens[i]);
        else pbw_uint(&loc, LOC_ID, 1 + i);
        for (unsigned k = 0, nk = next(g) % 12; k < nk; k++) pbw_uint(&loc, LOC_INDEX, next(g) % 520);
        pbw_msg(&lb, LB_AT, &loc);
        pbw_msg(ba, BA_BUFFERS, &lb);
        pbw_uint(&as, AS_BUFFER, 100 + i);
        pbw_uint(&as, AS_OFFSET, (uint64_t)i << 20);
        pbw_msg(&al, AL_ASSIGNED, &as);
    }
    pbw_msg(ba, BA_ALLOCS, &al);
    if (!(flags & 2)) return;
    pbw tr = {0};
    for (unsigned k = 0; k < 2 * n; k++) {
        pbw ev = {0};
        unsigned i = k < n ? k : 2 * n - 1 - k;
        if (k >= n) pbw_uint(&ev, EV_KIND, 1); /* free */
        pbw_uint(&ev, EV_BUFFER, 100 + i);
        pbw_str(&ev, EV_COMP, "main");
        pbw_bytes(&ev, EV_INSTR, names[i], name_lens[i]);
        pbw_msg(&tr, TRACE_EVENTS, &ev);
    }
    pbw_msg(ba, BA_TRACES, &tr);
}

/* The instruction name field of a serialized HloInstructionProto (field 1, written first). */
static void name_of(const pbw *instr_list, size_t *at, const char **name, size_t *len) {
    /* instr_list holds "COMP_INSTRS len HloInstructionProto" records; each starts with IN_NAME. */
    const uint8_t *p = instr_list->buf + *at;
    size_t i = 1, rec = 0, shift = 0;
    while (p[i] & 0x80) rec |= (size_t)(p[i] & 0x7f) << shift, shift += 7, i++;
    rec |= (size_t)p[i++] << shift;
    const uint8_t *in = p + i;
    size_t j = 1, nl = 0;
    shift = 0;
    while (in[j] & 0x80) nl |= (size_t)(in[j] & 0x7f) << shift, shift += 7, j++;
    nl |= (size_t)in[j++] << shift;
    *name = (const char *)in + j;
    *len = nl;
    *at += i + rec;
}

/* A text from a writer: inside HLO_TEXT_MAX, and when it was cut ("..." at the very end of a full
 * buffer), cut on a whole character. */
static void check_text(const char *s) {
    if (!s) return;
    size_t n = strlen(s);
    if (n >= HLO_TEXT_MAX) __builtin_trap();
    if (n >= HLO_TEXT_MAX - 7 && n >= 3 && memcmp(s + n - 3, "...", 3) == 0 &&
        jp_text_utf8_floor(s, n - 3) != n - 3)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    prog g = {data, size, 0, 0, 0, 0};
    unsigned n = 1 + next(&g) % 32, flags = next(&g);
    pbw comp = {0}, instrs = {0}, module = {0}, proto = {0}, ba = {0};
    for (unsigned i = 0; i < n; i++) instruction(&g, &instrs, i, n);
    const char *names[32];
    size_t name_lens[32], at = 0;
    for (unsigned i = 0; i < n; i++) name_of(&instrs, &at, &names[i], &name_lens[i]);
    buffers(&g, &ba, n, flags, names, name_lens);
    pbw_str(&comp, COMP_NAME, "main");
    pbw_uint(&comp, COMP_ID, 1);
    pbw_raw(&comp, instrs.buf, instrs.len);
    free(instrs.buf);
    pbw_str(&module, MODULE_NAME, "jit_step");
    pbw_msg(&module, MODULE_COMPS, &comp);
    pbw_msg(&proto, HLO_MODULE, &module);
    pbw_msg(&proto, HLO_BUFFERS, &ba);

    jp_arena arena;
    jp_intern intern;
    jp_hlo_module m;
    jp_error err;
    jp_arena_init(&arena, 0);
    jp_intern_init(&intern, &arena);
    jp_bytes bytes = {proto.buf, proto.len};
    if (jp_hlo_decode_text(bytes, proto.buf, NULL, &intern, &arena, &m, &err) == JP_OK) {
        for (size_t i = 0; i < m.n_instrs; i++) {
            const jp_hlo_instr *in = &m.instrs[i];
            if (!in->text || in->text[0] != '%') __builtin_trap(); /* every instruction has its line */
            check_text(in->text);
            check_text(in->source);
            const char *scope = jp_hlo_scope_of(&intern, in->op_name); /* kept whole: never longer than op_name */
            if (scope && in->op_name && strlen(scope) > strlen(in->op_name)) __builtin_trap();
        }
        for (size_t i = 0; m.memory && i < m.memory->n_buffers; i++) {
            const jp_hlo_lbuf *b = &m.memory->buffers[i];
            size_t k = strlen(b->instruction);
            check_text(b->shape);
            if (k && b->instruction[k - 1] == '}') check_text(b->instruction); /* indexed: cut to fit; plain names are kept whole */
        }
        jp_module_memory mm;
        if (m.memory && jp_buffers_module(m.memory, &arena, &mm) == JP_OK && mm.peak_bytes < mm.always_live_bytes)
            __builtin_trap(); /* the peak holds the always-live part */
    }
    jp_intern_deinit(&intern);
    jp_arena_deinit(&arena);
    free(proto.buf);
    return 0;
}
