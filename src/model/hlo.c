/* hlo.c - decodes the serialized xla.HloProto of each compiled module into per-instruction
 * metadata (opcode, category, op_name scope path, source line) keyed by instruction name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "decode/pb.h"
#include "model/model.h"

enum {
    HLO_PROTO_MODULE = 1,
    MODULE_NAME = 1, MODULE_COMPUTATIONS = 3,
    COMP_INSTRUCTIONS = 2, COMP_ID = 5,
    INSTR_NAME = 1, INSTR_OPCODE = 2, INSTR_METADATA = 7, INSTR_FUSION_KIND = 11, INSTR_CALLED = 38,
    META_OP_NAME = 2, META_SOURCE_FILE = 3, META_SOURCE_LINE = 4,
};

enum { HAS_DOT = 1, HAS_CONV = 2, HAS_COLLECTIVE = 4 }; /* what a called computation contains */

typedef struct comp_info {
    int64_t id;
    unsigned flags;
    const char *dot_op_name; /* op_name of its first dot/convolution, or NULL */
} comp_info;

/* ---- categories --------------------------------------------------------------------------- */

typedef struct opcode_class {
    const char *opcode;
    const char *category;
} opcode_class;

static const opcode_class OPCODES[] = {
    {"dot", "matmul"}, {"convolution", "convolution"}, {"custom-call", "custom-call"},
    {"all-reduce", "collective"}, {"all-reduce-start", "collective"}, {"all-reduce-done", "collective"},
    {"all-gather", "collective"}, {"all-gather-start", "collective"}, {"all-gather-done", "collective"},
    {"reduce-scatter", "collective"}, {"all-to-all", "collective"}, {"ragged-all-to-all", "collective"},
    {"collective-permute", "collective"}, {"collective-permute-start", "collective"},
    {"collective-permute-done", "collective"}, {"collective-broadcast", "collective"},
    {"send", "collective"}, {"send-done", "collective"}, {"recv", "collective"}, {"recv-done", "collective"},
    {"copy", "copy"}, {"copy-start", "copy"}, {"copy-done", "copy"},
    {"reduce", "reduce"}, {"reduce-window", "reduce"}, {"select-and-scatter", "reduce"},
    {"sort", "sort"}, {"rng", "rng"}, {"rng-bit-generator", "rng"}, {"rng-get-and-update-state", "rng"},
    {"while", "control flow"}, {"conditional", "control flow"}, {"call", "control flow"},
    {"async-start", "control flow"}, {"async-done", "control flow"},
    {"broadcast", "data movement"}, {"transpose", "data movement"}, {"reshape", "data movement"},
    {"bitcast", "data movement"}, {"slice", "data movement"}, {"dynamic-slice", "data movement"},
    {"dynamic-update-slice", "data movement"}, {"concatenate", "data movement"}, {"pad", "data movement"},
    {"gather", "data movement"}, {"scatter", "data movement"}, {"reverse", "data movement"},
    {"iota", "data movement"}, {"tuple", "data movement"}, {"get-tuple-element", "data movement"},
    {"parameter", "data movement"}, {"constant", "data movement"}, {"bitcast-convert", "data movement"},
    {"infeed", "transfer"}, {"outfeed", "transfer"},
};

static const char *const ELEMENTWISE[] = {
    "add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "power", "atan2",
    "abs", "negate", "exponential", "exponential-minus-one", "log", "log-plus-one", "tanh", "logistic",
    "sqrt", "rsqrt", "cbrt", "sine", "cosine", "tan", "floor", "ceil", "round-nearest-afz",
    "round-nearest-even", "sign", "compare", "select", "clamp", "convert", "and", "or", "xor", "not",
    "shift-left", "shift-right-logical", "shift-right-arithmetic", "is-finite", "real", "imag",
    "complex", "popcnt", "count-leading-zeros", "erf", "reduce-precision", "map", "stochastic-convert",
};

const char *jp_hlo_category_of_opcode(const char *opcode) {
    for (size_t i = 0; i < sizeof OPCODES / sizeof OPCODES[0]; i++)
        if (strcmp(opcode, OPCODES[i].opcode) == 0) return OPCODES[i].category;
    for (size_t i = 0; i < sizeof ELEMENTWISE / sizeof ELEMENTWISE[0]; i++)
        if (strcmp(opcode, ELEMENTWISE[i]) == 0) return "elementwise";
    if (strcmp(opcode, "fusion") == 0) return "fusion";
    return "other";
}

/* "collective" from our own mapping; libtpu's hlo_category stat names the collective itself. */
int jp_hlo_is_collective(const char *category) {
    static const char *const names[] = {"collective", "all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                                        "send", "recv", "nccl"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strstr(category, names[i])) return 1;
    return 0;
}

static int ends_with(const char *s, size_t len, const char *suffix) {
    size_t n = strlen(suffix);
    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

static const char *fusion_category(const char *kind, unsigned called) {
    if (called & HAS_COLLECTIVE) return "collective";
    if (called & HAS_CONV) return "convolution fusion";
    if (called & HAS_DOT) return "matmul fusion";
    if (strcmp(kind, "kInput") == 0) return "input fusion";
    if (strcmp(kind, "kOutput") == 0) return "output fusion";
    if (strcmp(kind, "kCustom") == 0) return "custom fusion";
    return "loop fusion";
}

/* Without HLO the op name is all there is: "all-reduce.3" -> its opcode, "loop_fusion.2" ->
 * fusion, GPU kernel names with well-known library prefixes -> matmul or collective. */
const char *jp_hlo_category_of_name(const char *name) {
    char base[128];
    size_t len = strcspn(name, ".");
    if (len >= sizeof base) len = sizeof base - 1;
    memcpy(base, name, len);
    base[len] = '\0';
    if (strstr(name, "nccl") || strstr(name, "rccl")) return "collective";
    if (strstr(name, "gemm") || strstr(name, "cublas") || strstr(name, "cutlass")) return "matmul";
    if (strcmp(base, "input_fusion") == 0 || strstr(base, "reduce_fusion") || strstr(base, "reduction"))
        return "input fusion";
    if (strcmp(base, "loop_fusion") == 0) return "loop fusion";
    if (ends_with(base, len, "fusion")) return "fusion";
    const char *cat = jp_hlo_category_of_opcode(base);
    if (strcmp(cat, "other") != 0) return cat;
    for (char *p = base; *p; p++)
        if (*p == '_') *p = '-';
    return jp_hlo_category_of_opcode(base);
}

/* ---- scope paths ------------------------------------------------------------------------------ */

/* "transpose(jvp(loss))" -> "loss": JAX wraps scope names in transformation names. */
static void unwrap(const char **s, size_t *len) {
    for (;;) {
        const char *open = memchr(*s, '(', *len);
        if (!open || *len < 2 || (*s)[*len - 1] != ')' || open == *s) return;
        for (const char *c = *s; c < open; c++)
            if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9'))) return;
        *len = (size_t)(*s + *len - 1 - (open + 1));
        *s = open + 1;
    }
}

const char *jp_hlo_scope_of(jp_intern *t, const char *op_name) {
    char out[1024];
    size_t n = 0;
    const char *p = op_name, *last = strrchr(op_name, '/');
    if (!last) return jp_intern_str(t, "", 0);
    while (p < last) {
        const char *slash = memchr(p, '/', (size_t)(last - p));
        if (!slash) slash = last;
        const char *comp = p;
        size_t len = (size_t)(slash - p);
        unwrap(&comp, &len);
        int artificial = (len == 4 && memcmp(comp, "main", 4) == 0 && p != op_name);
        if (len > 0 && !artificial && n + len + 1 < sizeof out) {
            if (n) out[n++] = '/';
            memcpy(out + n, comp, len);
            n += len;
        }
        p = slash + 1;
    }
    return jp_intern_str(t, out, n);
}

/* ---- decoding ----------------------------------------------------------------------------- */

typedef struct hlo_ctx {
    jp_pb root;        /* for offsets: origin is the whole input */
    jp_intern *intern;
    jp_arena *arena;
    comp_info *comps;
    size_t n_comps;
    jp_error *err;
} hlo_ctx;

static jp_str op_name_of(hlo_ctx *c, jp_pb meta) {
    jp_pb_field f;
    jp_str name = {"", 0};
    while (!jp_pb_done(&meta) && jp_pb_next(&meta, &f, "OpMetadata", c->err) == JP_OK)
        if (f.number == META_OP_NAME && f.wire == JP_PB_LEN) name = (jp_str){(const char *)f.data, f.len};
    return name; /* errors surface in pass 2, which reads the same bytes */
}

/* Pass 1 over one instruction: what its opcode says about the computation, and for a dot or
 * convolution its op_name, which a fusion calling this computation reports as its scope (a
 * fusion's own metadata names only its root op, often a trailing elementwise or reduce). */
static int read_opcode_flags(hlo_ctx *c, jp_pb instr, comp_info *info) {
    jp_pb_field f;
    int heavy = 0;
    jp_str op_name = {"", 0};
    while (!jp_pb_done(&instr)) {
        int rc = jp_pb_next(&instr, &f, "HloInstructionProto", c->err);
        if (rc) return rc;
        if (f.number == INSTR_METADATA && f.wire == JP_PB_LEN) op_name = op_name_of(c, jp_pb_sub(&instr, &f));
        if (f.number != INSTR_OPCODE || f.wire != JP_PB_LEN) continue;
        jp_str op = {(const char *)f.data, f.len};
        unsigned *flags = &info->flags;
        heavy = jp_str_eq(op, "dot") || jp_str_eq(op, "convolution");
        if (jp_str_eq(op, "dot")) *flags |= HAS_DOT;
        if (jp_str_eq(op, "convolution")) *flags |= HAS_CONV;
        char buf[64];
        if (f.len < sizeof buf) {
            memcpy(buf, f.data, f.len);
            buf[f.len] = '\0';
            if (jp_hlo_is_collective(jp_hlo_category_of_opcode(buf))) *flags |= HAS_COLLECTIVE;
        }
    }
    if (heavy && op_name.len && !info->dot_op_name &&
        !(info->dot_op_name = jp_intern_str(c->intern, op_name.ptr, op_name.len)))
        return JP_ERR_NOMEM;
    return JP_OK;
}

/* Pass 1: every computation's id and what it contains, and the instruction count. */
static int scan_computation(hlo_ctx *c, jp_pb comp, comp_info *info, size_t *n_instrs) {
    jp_pb_field f;
    while (!jp_pb_done(&comp)) {
        int rc = jp_pb_next(&comp, &f, "HloComputationProto", c->err);
        if (rc) return rc;
        if (f.number == COMP_ID && f.wire == JP_PB_VARINT) info->id = (int64_t)f.u;
        if (f.number == COMP_INSTRUCTIONS && f.wire == JP_PB_LEN) {
            (*n_instrs)++;
            rc = read_opcode_flags(c, jp_pb_sub(&comp, &f), info);
            if (rc) return rc;
        }
    }
    return JP_OK;
}

static const comp_info *comp_by_id(const hlo_ctx *c, uint64_t id) {
    for (size_t i = 0; i < c->n_comps; i++)
        if ((uint64_t)c->comps[i].id == id) return &c->comps[i];
    return NULL;
}

/* Merges what the called computation contains into *called (flags and the dot's op_name). */
static void note_called(const hlo_ctx *c, uint64_t id, comp_info *called) {
    const comp_info *info = comp_by_id(c, id);
    if (!info) return;
    called->flags |= info->flags;
    if (!called->dot_op_name) called->dot_op_name = info->dot_op_name;
}

static int read_called(hlo_ctx *c, const jp_pb *parent, const jp_pb_field *f, comp_info *called) {
    if (f->wire == JP_PB_VARINT) {
        note_called(c, f->u, called);
        return JP_OK;
    }
    jp_pb packed = jp_pb_sub(parent, f);
    while (!jp_pb_done(&packed)) {
        uint64_t id;
        size_t used = jp_pb_varint(packed.p, packed.end, &id);
        if (!used)
            return jp_error_set(c->err, JP_ERR_CORRUPT, jp_pb_offset(&packed),
                                "corrupt HloInstructionProto at byte %llu: bad called computation id",
                                (unsigned long long)jp_pb_offset(&packed));
        packed.p += used;
        note_called(c, id, called);
    }
    return JP_OK;
}

static const char *intern_field(hlo_ctx *c, const jp_pb_field *f) {
    return jp_intern_str(c->intern, (const char *)f->data, f->len);
}

static int read_metadata(hlo_ctx *c, jp_pb meta, jp_hlo_instr *in) {
    jp_pb_field f;
    const uint8_t *file = NULL;
    size_t file_len = 0;
    uint64_t line = 0;
    while (!jp_pb_done(&meta)) {
        int rc = jp_pb_next(&meta, &f, "OpMetadata", c->err);
        if (rc) return rc;
        if (f.wire == JP_PB_LEN && f.number == META_OP_NAME) in->op_name = intern_field(c, &f);
        if (f.wire == JP_PB_LEN && f.number == META_SOURCE_FILE) file = f.data, file_len = f.len;
        if (f.wire == JP_PB_VARINT && f.number == META_SOURCE_LINE) line = f.u;
    }
    if (file_len) {
        char buf[512];
        int n = snprintf(buf, sizeof buf, "%.*s:%llu", (int)(file_len > 400 ? 400 : file_len),
                         (const char *)file, (unsigned long long)line);
        in->source = jp_intern_str(c->intern, buf, (size_t)n);
    }
    return in->op_name && (!file_len || in->source) ? JP_OK : JP_ERR_NOMEM;
}

static int read_instruction(hlo_ctx *c, jp_pb instr, jp_hlo_instr *in) {
    jp_pb_field f;
    const char *fusion_kind = "kLoop";
    comp_info called = {0, 0, NULL};
    in->op_name = in->source = in->name = in->opcode = jp_intern_str(c->intern, "", 0);
    while (!jp_pb_done(&instr)) {
        int rc = jp_pb_next(&instr, &f, "HloInstructionProto", c->err);
        if (rc) return rc;
        if (f.number == INSTR_NAME && f.wire == JP_PB_LEN) in->name = intern_field(c, &f);
        else if (f.number == INSTR_OPCODE && f.wire == JP_PB_LEN) in->opcode = intern_field(c, &f);
        else if (f.number == INSTR_FUSION_KIND && f.wire == JP_PB_LEN) fusion_kind = intern_field(c, &f);
        else if (f.number == INSTR_METADATA && f.wire == JP_PB_LEN) rc = read_metadata(c, jp_pb_sub(&instr, &f), in);
        else if (f.number == INSTR_CALLED) rc = read_called(c, &instr, &f, &called);
        if (rc) return rc;
        if (!in->name || !in->opcode || !fusion_kind) return JP_ERR_NOMEM;
    }
    int fusion = strcmp(in->opcode, "fusion") == 0;
    in->category = fusion ? fusion_category(fusion_kind, called.flags) : jp_hlo_category_of_opcode(in->opcode);
    if (fusion && called.dot_op_name) in->op_name = called.dot_op_name;
    return JP_OK;
}

static int cmp_instr(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const jp_hlo_instr *)a)->name, y = (uintptr_t)((const jp_hlo_instr *)b)->name;
    return (x > y) - (x < y);
}

const jp_hlo_instr *jp_hlo_find(const jp_hlo_module *m, const char *name) {
    jp_hlo_instr key = {.name = name};
    if (!m->n_instrs) return NULL; /* a module without HloModuleProto has instrs == NULL */
    return bsearch(&key, m->instrs, m->n_instrs, sizeof key, cmp_instr);
}

/* Finds the HloModuleProto inside the HloProto and counts computations. */
static int find_module(hlo_ctx *c, jp_pb *module, size_t *n_comps) {
    jp_pb proto = c->root;
    jp_pb_field f;
    int found = 0;
    while (!jp_pb_done(&proto)) {
        int rc = jp_pb_next(&proto, &f, "HloProto", c->err);
        if (rc) return rc;
        if (f.number == HLO_PROTO_MODULE && f.wire == JP_PB_LEN) *module = jp_pb_sub(&proto, &f), found = 1;
    }
    if (!found) return JP_ERR_NOT_FOUND;
    jp_pb m = *module;
    while (!jp_pb_done(&m)) {
        int rc = jp_pb_next(&m, &f, "HloModuleProto", c->err);
        if (rc) return rc;
        if (f.number == MODULE_COMPUTATIONS && f.wire == JP_PB_LEN) (*n_comps)++;
    }
    return JP_OK;
}

static int decode_module(hlo_ctx *c, jp_pb module, jp_hlo_module *out) {
    jp_pb_field f;
    size_t n_instrs = 0, ci = 0;
    for (jp_pb m = module; !jp_pb_done(&m);) {
        int rc = jp_pb_next(&m, &f, "HloModuleProto", c->err);
        if (rc) return rc;
        if (f.number == MODULE_NAME && f.wire == JP_PB_LEN && !(out->name = intern_field(c, &f)))
            return JP_ERR_NOMEM;
        if (f.number == MODULE_COMPUTATIONS && f.wire == JP_PB_LEN) {
            rc = scan_computation(c, jp_pb_sub(&m, &f), &c->comps[ci++], &n_instrs);
            if (rc) return rc;
        }
    }
    out->instrs = jp_arena_alloc(c->arena, (n_instrs ? n_instrs : 1) * sizeof(jp_hlo_instr));
    if (!out->instrs) return JP_ERR_NOMEM;
    for (jp_pb m = module; !jp_pb_done(&m);) {
        int rc = jp_pb_next(&m, &f, "HloModuleProto", c->err);
        if (rc) return rc;
        if (f.number != MODULE_COMPUTATIONS || f.wire != JP_PB_LEN) continue;
        for (jp_pb comp = jp_pb_sub(&m, &f); !jp_pb_done(&comp);) {
            jp_pb_field g;
            rc = jp_pb_next(&comp, &g, "HloComputationProto", c->err);
            if (rc) return rc;
            if (g.number != COMP_INSTRUCTIONS || g.wire != JP_PB_LEN) continue;
            rc = read_instruction(c, jp_pb_sub(&comp, &g), &out->instrs[out->n_instrs++]);
            if (rc) return rc;
        }
    }
    qsort(out->instrs, out->n_instrs, sizeof(jp_hlo_instr), cmp_instr);
    return JP_OK;
}

int jp_hlo_decode(jp_bytes proto, const uint8_t *origin, jp_intern *t, jp_arena *a, jp_hlo_module *out,
                  jp_error *err) {
    hlo_ctx c = {jp_pb_make(proto.ptr, proto.len, origin), t, a, NULL, 0, err};
    jp_pb module;
    memset(out, 0, sizeof *out);
    out->program_id = -1;
    int rc = find_module(&c, &module, &c.n_comps);
    if (rc == JP_ERR_NOT_FOUND) return JP_OK; /* an HloProto without a module: nothing to map */
    if (rc) return rc;
    c.comps = calloc(c.n_comps ? c.n_comps : 1, sizeof(comp_info));
    if (!c.comps) return JP_ERR_NOMEM;
    rc = decode_module(&c, module, out);
    free(c.comps);
    if (rc == JP_ERR_NOMEM) jp_error_set(err, rc, 0, "out of memory decoding HloProto");
    return rc;
}
