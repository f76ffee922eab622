/* hlo.c - decodes the serialized xla.HloProto of each compiled module into per-instruction
 * metadata (opcode, category, op_name scope path, Python stack and source line, and the facts
 * hlo_cost.c turns into FLOPs and bytes) keyed by instruction name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "decode/pb.h"
#include "decode/hlo_ir.h"

enum { /* field numbers of xla/service/hlo.proto and xla/xla_data.proto */
    HLO_PROTO_MODULE = 1, HLO_PROTO_BUFFERS = 3,
    MODULE_NAME = 1, MODULE_COMPUTATIONS = 3, MODULE_ENTRY_ID = 6, MODULE_SCHEDULE = 7, MODULE_DEVICE_ASSIGNMENT = 15,
    MODULE_STACK_FRAMES = 17,
    SCHED_SEQUENCES = 1, MAP_KEY = 1, MAP_VALUE = 2, SEQ_IDS = 1, /* HloScheduleProto, its map entries */
    DA_REPLICAS = 1, DA_COMPUTATIONS = 2, /* DeviceAssignmentProto */
    INSTR_REPLICA_GROUPS = 49, INSTR_SOURCE_TARGET = 52, INSTR_DEVICE_LIST = 87,
    GROUP_IDS = 1, DEVLIST_GROUPS = 1, DEVLIST_IOTA = 2, IOTA_PER_GROUP = 2, /* ReplicaGroup, CollectiveDeviceListProto */
    COMP_INSTRUCTIONS = 2, COMP_ID = 5, COMP_ROOT_ID = 6, INSTR_PARAM_NUMBER = 9,
    INSTR_NAME = 1, INSTR_OPCODE = 2, INSTR_SHAPE = 3, INSTR_METADATA = 7, INSTR_FUSION_KIND = 11,
    INSTR_WINDOW = 15, INSTR_CONV_DIMS = 16, INSTR_CUSTOM_TARGET = 28, INSTR_DOT_DIMS = 30,
    INSTR_BACKEND_CONFIG = 43, INSTR_ID = 35, INSTR_OPERANDS = 36,
    INSTR_CALLED = 38, INSTR_FEATURE_GROUPS = 50, INSTR_BATCH_GROUPS = 58,
    META_OP_NAME = 2, META_SOURCE_FILE = 3, META_SOURCE_LINE = 4, META_STACK_FRAME = 15,
    SHAPE_TYPE = 2, SHAPE_DIMS = 3, SHAPE_TUPLE = 4,
    DOT_LHS_CONTRACT = 1,
    WINDOW_DIM = 1, WDIM_SIZE = 1, WDIM_STRIDE = 2, WDIM_PAD_LOW = 3, WDIM_WINDOW_DIL = 5, WDIM_BASE_DIL = 6,
    CONV_KERNEL_IN = 3, CONV_KERNEL_OUT = 4, CONV_KERNEL_SPATIAL = 6, CONV_IN_BATCH = 7, CONV_IN_FEATURE = 8,
    CONV_OUT_BATCH = 9, CONV_OUT_FEATURE = 10, CONV_IN_SPATIAL = 11, CONV_OUT_SPATIAL = 12,
    FRAMES_FILES = 1, FRAMES_FUNCTIONS = 2, FRAMES_LOCATIONS = 3, FRAMES_FRAMES = 4,
    LOC_FILE = 1, LOC_FUNCTION = 2, LOC_LINE = 3, FRAME_LOCATION = 1, FRAME_PARENT = 2,
};

enum { HAS_DOT = 1, HAS_CONV = 2, HAS_COLLECTIVE = 4 }; /* what a called computation contains */
enum { SOURCE_FILE_SHOWN = 400 }; /* bytes of a source file name kept in "file:line" (longer: cut with "...") */

typedef struct comp_info {
    int64_t id;
    unsigned flags;
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

/* Category from an opcode alone ("dot" -> "matmul"). */
static const char *category_of_opcode(const char *opcode) {
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
    const char *cat = category_of_opcode(base);
    if (strcmp(cat, "other") != 0) return cat;
    for (char *p = base; *p; p++)
        if (*p == '_') *p = '-';
    return category_of_opcode(base);
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

/* The scope is made of pieces of op_name before its last '/', each followed by at most one '/',
 * so it never needs more than that many bytes: a long op_name (a 1,000+ character function name or
 * named_scope) gets a heap buffer rather than losing the pieces that did not fit. */
const char *jp_hlo_scope_of(jp_intern *t, const char *op_name) {
    char small[1024];
    const char *p = op_name, *last = strrchr(op_name, '/');
    if (!last) return jp_intern_str(t, "", 0);
    size_t cap = (size_t)(last - op_name) + 1;
    char *out = cap <= sizeof small ? small : malloc(cap);
    if (!out) return NULL;
    jp_text scope = jp_text_make(out, cap); /* cap is enough: never cut */
    while (p < last) {
        const char *slash = memchr(p, '/', (size_t)(last - p));
        if (!slash) slash = last;
        const char *comp = p;
        size_t len = (size_t)(slash - p);
        unwrap(&comp, &len);
        int artificial = (len == 4 && memcmp(comp, "main", 4) == 0 && p != op_name);
        if (len > 0 && !artificial) {
            if (scope.len) jp_text_putc(&scope, '/');
            jp_text_put(&scope, comp, len);
        }
        p = slash + 1;
    }
    const char *interned = jp_intern_str(t, scope.buf, scope.len);
    if (out != small) free(out);
    return interned;
}

/* ---- decoding ----------------------------------------------------------------------------- */

typedef struct hlo_ctx {
    jp_pb root;        /* for offsets: origin is the whole input */
    jp_intern *intern;
    jp_arena *arena;
    jp_arena scratch;  /* the cost model's facts, freed when the module is decoded */
    comp_info *comps;
    size_t n_comps;
    jp_hlo_frame *frames; /* the module's stack_frame_index, flattened (ids are 1-based) */
    size_t n_frames;
    const regex_t *library;
    jp_error *err;
    int want_text;     /* write jp_hlo_instr.text (jp_hlo_decode_text) */
    jp_pb buffers;     /* the HloProto's BufferAssignmentProto, when has_buffers */
    int has_buffers;
    int64_t n_devices; /* replicas x partitions of its device assignment, 0 when absent */
    uint64_t entry_id; /* the entry computation's id */
    jp_pb schedule;    /* the module's HloScheduleProto, when has_schedule */
    int has_schedule;
    const char **scheduled; /* every computation's scheduled instructions that run on the device, by
                             * name (scratch), until the sorted instructions can be looked up */
    size_t n_scheduled, max_scheduled;
    struct sched_run { size_t first, n; int entry; } *runs; /* each sequence's part of scheduled */
    size_t n_runs;
} hlo_ctx;

static const char *intern_field(hlo_ctx *c, const jp_pb_field *f) {
    return jp_intern_str(c->intern, (const char *)f->data, f->len);
}

/* Appends v to *out, growing it geometrically in the scratch arena. */
static int push_int(hlo_ctx *c, hlo_ints *out, int64_t v) {
    if (out->n == out->cap) {
        uint32_t cap = out->cap ? out->cap * 2 : 8;
        int64_t *grown = cap > out->cap ? jp_arena_alloc(&c->scratch, cap * sizeof *grown) : NULL;
        if (!grown) return JP_ERR_NOMEM;
        if (out->n) memcpy(grown, out->v, out->n * sizeof *grown);
        out->v = grown;
        out->cap = cap;
    }
    out->v[out->n++] = v;
    return JP_OK;
}

int jp_hlo_each_int(const jp_pb *parent, const jp_pb_field *f, int (*fn)(void *, int64_t), void *arg, jp_error *err) {
    if (f->wire == JP_PB_VARINT) {
        int rc = fn(arg, (int64_t)f->u);
        return rc < 0 ? rc : JP_OK;
    }
    if (f->wire != JP_PB_LEN) return JP_OK;
    for (jp_pb packed = jp_pb_sub(parent, f); !jp_pb_done(&packed);) {
        uint64_t v;
        size_t used = jp_pb_varint(packed.p, packed.end, &v);
        if (!used)
            return jp_error_set(err, JP_ERR_CORRUPT, jp_pb_offset(&packed), "corrupt HLO integer list at byte %llu",
                                (unsigned long long)jp_pb_offset(&packed));
        packed.p += used;
        int rc = fn(arg, (int64_t)v);
        if (rc) return rc < 0 ? rc : JP_OK;
    }
    return JP_OK;
}

typedef struct ints_dest {     /* where read_ints appends */
    hlo_ctx *c;
    hlo_ints *out;
} ints_dest;

static int push_to(void *arg, int64_t v) { return push_int(((ints_dest *)arg)->c, ((ints_dest *)arg)->out, v); }

/* Appends one repeated int64 field, a packed run or a single varint, to *out. */
static int read_ints(hlo_ctx *c, const jp_pb *parent, const jp_pb_field *f, hlo_ints *out) {
    ints_dest d = {c, out};
    return jp_hlo_each_int(parent, f, push_to, &d, c->err);
}

/* ---- stack frames ------------------------------------------------------------------------- */

/* The module's StackFrameIndexProto: four flat arrays whose entries refer to each other by
 * 1-based position. Read in two walks: count, then fill; a reference out of range is dropped
 * (the frame keeps an empty file or no parent) rather than trusted. */
typedef struct frame_tables {
    const char **files, **functions;
    size_t n_files, n_functions, n_locations;
} frame_tables;

static const char *table_entry(const char **table, size_t n, uint64_t id, const char *none) {
    return id >= 1 && id <= n ? table[id - 1] : none;
}

static int read_location(hlo_ctx *c, jp_pb loc, const frame_tables *t, jp_hlo_frame *out) {
    jp_pb_field f;
    const char *empty = jp_intern_str(c->intern, "", 0);
    *out = (jp_hlo_frame){empty, empty, 0, 0, NULL};
    while (!jp_pb_done(&loc)) {
        int rc = jp_pb_next(&loc, &f, "StackFrameIndexProto.FileLocation", c->err);
        if (rc) return rc;
        if (f.wire != JP_PB_VARINT) continue;
        if (f.number == LOC_FILE) out->file = table_entry(t->files, t->n_files, f.u, empty);
        if (f.number == LOC_FUNCTION) out->function = table_entry(t->functions, t->n_functions, f.u, empty);
        if (f.number == LOC_LINE) out->line = (uint32_t)f.u;
    }
    return JP_OK;
}

static int count_frame_tables(hlo_ctx *c, jp_pb index, frame_tables *t) {
    jp_pb_field f;
    while (!jp_pb_done(&index)) {
        int rc = jp_pb_next(&index, &f, "StackFrameIndexProto", c->err);
        if (rc) return rc;
        if (f.wire != JP_PB_LEN) continue;
        t->n_files += f.number == FRAMES_FILES;
        t->n_functions += f.number == FRAMES_FUNCTIONS;
        t->n_locations += f.number == FRAMES_LOCATIONS;
        c->n_frames += f.number == FRAMES_FRAMES;
    }
    return JP_OK;
}

static int read_frame(hlo_ctx *c, jp_pb frame, const jp_hlo_frame *locations, size_t n_locations,
                      jp_hlo_frame *out) {
    jp_pb_field f;
    uint64_t loc = 0, parent = 0;
    while (!jp_pb_done(&frame)) {
        int rc = jp_pb_next(&frame, &f, "StackFrameIndexProto.StackFrame", c->err);
        if (rc) return rc;
        if (f.wire == JP_PB_VARINT && f.number == FRAME_LOCATION) loc = f.u;
        if (f.wire == JP_PB_VARINT && f.number == FRAME_PARENT) parent = f.u;
    }
    const char *empty = jp_intern_str(c->intern, "", 0);
    *out = loc >= 1 && loc <= n_locations ? locations[loc - 1] : (jp_hlo_frame){empty, empty, 0, 0, NULL};
    out->parent = parent >= 1 && parent <= c->n_frames ? &c->frames[parent - 1] : NULL;
    out->library = c->library && *out->file && regexec(c->library, out->file, 0, NULL, 0) == 0;
    return JP_OK;
}

/* A module holds one index; should the field appear twice, the last one is the index (frames of
 * an earlier one are not mixed in: every frame filled here belongs to this one). */
static int read_frames(hlo_ctx *c, jp_pb index) {
    frame_tables t = {0};
    c->frames = NULL;
    c->n_frames = 0;
    int rc = count_frame_tables(c, index, &t);
    if (rc || !c->n_frames) return rc;
    t.files = jp_arena_alloc(&c->scratch, (t.n_files + 1) * sizeof *t.files);
    t.functions = jp_arena_alloc(&c->scratch, (t.n_functions + 1) * sizeof *t.functions);
    jp_hlo_frame *locations = jp_arena_alloc(&c->scratch, (t.n_locations + 1) * sizeof *locations);
    c->frames = jp_arena_alloc(c->arena, c->n_frames * sizeof *c->frames);
    if (!t.files || !t.functions || !locations || !c->frames) return JP_ERR_NOMEM;
    const char *empty = jp_intern_str(c->intern, "", 0);
    if (!empty) return JP_ERR_NOMEM;
    for (size_t i = 0; i < c->n_frames; i++) c->frames[i] = (jp_hlo_frame){empty, empty, 0, 0, NULL};
    size_t files = 0, functions = 0, locs = 0, frames = 0;
    jp_pb_field f;
    /* the proto writes the four arrays in field order, but the wire format allows any order */
    for (int pass = 0; pass < 2; pass++) {
        for (jp_pb p = index; !jp_pb_done(&p);) {
            if ((rc = jp_pb_next(&p, &f, "StackFrameIndexProto", c->err))) return rc;
            if (f.wire != JP_PB_LEN) continue;
            if (pass == 0 && f.number == FRAMES_FILES && !(t.files[files++] = intern_field(c, &f))) return JP_ERR_NOMEM;
            if (pass == 0 && f.number == FRAMES_FUNCTIONS && !(t.functions[functions++] = intern_field(c, &f)))
                return JP_ERR_NOMEM;
            if (pass == 1 && f.number == FRAMES_LOCATIONS && (rc = read_location(c, jp_pb_sub(&p, &f), &t, &locations[locs++])))
                return rc;
        }
    }
    for (jp_pb p = index; !jp_pb_done(&p);) {
        if ((rc = jp_pb_next(&p, &f, "StackFrameIndexProto", c->err))) return rc;
        if (f.wire == JP_PB_LEN && f.number == FRAMES_FRAMES &&
            (rc = read_frame(c, jp_pb_sub(&p, &f), locations, locs, &c->frames[frames++])))
            return rc;
    }
    return JP_OK;
}

/* The frame an op's source line names: the innermost one outside library code, or the innermost
 * of all when every frame is library code. */
static const jp_hlo_frame *user_frame(const jp_hlo_frame *f) {
    const jp_hlo_frame *p = f;
    for (int depth = 0; p && depth < JP_HLO_MAX_STACK; depth++, p = p->parent)
        if (!p->library) return p;
    return f;
}

/* ---- pass 1: what each computation contains ------------------------------------------------ */

/* Pass 1 over one instruction: what its opcode says about the computation (a fusion's category). */
static int read_opcode_flags(hlo_ctx *c, jp_pb instr, comp_info *info) {
    jp_pb_field f;
    while (!jp_pb_done(&instr)) {
        int rc = jp_pb_next(&instr, &f, "HloInstructionProto", c->err);
        if (rc) return rc;
        if (f.number != INSTR_OPCODE || f.wire != JP_PB_LEN) continue;
        jp_str op = {(const char *)f.data, f.len};
        unsigned *flags = &info->flags;
        if (jp_str_eq(op, "dot")) *flags |= HAS_DOT;
        if (jp_str_eq(op, "convolution")) *flags |= HAS_CONV;
        char buf[64];
        if (f.len < sizeof buf) {
            memcpy(buf, f.data, f.len);
            buf[f.len] = '\0';
            if (jp_hlo_is_collective(category_of_opcode(buf))) *flags |= HAS_COLLECTIVE;
        }
    }
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

/* Merges what the called computation contains into *called. */
static void note_called(const hlo_ctx *c, uint64_t id, comp_info *called) {
    const comp_info *info = comp_by_id(c, id);
    if (info) called->flags |= info->flags;
}

/* ---- pass 2: each instruction ------------------------------------------------------------- */

static int read_metadata(hlo_ctx *c, jp_pb meta, jp_hlo_instr *in) {
    jp_pb_field f;
    const uint8_t *file = NULL;
    size_t file_len = 0;
    uint64_t line = 0, frame = 0;
    while (!jp_pb_done(&meta)) {
        int rc = jp_pb_next(&meta, &f, "OpMetadata", c->err);
        if (rc) return rc;
        if (f.wire == JP_PB_LEN && f.number == META_OP_NAME && !(in->op_name = intern_field(c, &f))) return JP_ERR_NOMEM;
        if (f.wire == JP_PB_LEN && f.number == META_SOURCE_FILE) file = f.data, file_len = f.len;
        if (f.wire == JP_PB_VARINT && f.number == META_SOURCE_LINE) line = f.u;
        if (f.wire == JP_PB_VARINT && f.number == META_STACK_FRAME) frame = f.u;
    }
    if (frame >= 1 && frame <= c->n_frames) { /* current JAX: the stack, innermost frame first */
        in->frame = &c->frames[frame - 1];
        const jp_hlo_frame *u = user_frame(in->frame);
        if (*u->file) file = (const uint8_t *)u->file, file_len = strlen(u->file), line = u->line;
        in->function = u->function;
    }
    if (file_len) {
        char buf[HLO_TEXT_MAX];
        jp_text src = jp_text_make(buf, sizeof buf);
        jp_text_put_clipped(&src, (const char *)file, file_len, SOURCE_FILE_SHOWN);
        jp_text_printf(&src, ":%llu", (unsigned long long)line);
        if (!(in->source = jp_intern_str(c->intern, src.buf, src.len))) return JP_ERR_NOMEM;
    }
    return JP_OK;
}

/* xla.PrimitiveType by number: its name in HLO text and its size in bits (xla_data.proto). */
static const struct {
    const char *name;
    unsigned char bits;
} TYPES[] = {
    {"invalid", 0}, {"pred", 8}, {"s8", 8}, {"s16", 16}, {"s32", 32}, {"s64", 64}, {"u8", 8}, {"u16", 16},
    {"u32", 32}, {"u64", 64}, {"f16", 16}, {"f32", 32}, {"f64", 64}, {"tuple", 0}, {"opaque", 0}, {"c64", 64},
    {"bf16", 16}, {"token", 0}, {"c128", 128}, {"f8e5m2", 8}, {"f8e4m3fn", 8}, {"s4", 4}, {"u4", 4},
    {"f8e4m3b11fnuz", 8}, {"f8e5m2fnuz", 8}, {"f8e4m3fnuz", 8}, {"s2", 2}, {"u2", 2}, {"f8e4m3", 8},
    {"f8e3m4", 8}, {"s1", 1}, {"u1", 1}, {"f4e2m1fn", 4}, {"f8e8m0fnu", 8}, {"buffer", 0}, {"f6e3m2fn", 6},
    {"f6e2m3fn", 6},
};

const char *jp_hlo_type_name(uint64_t type) { return type < sizeof TYPES / sizeof TYPES[0] ? TYPES[type].name : NULL; }

unsigned jp_hlo_type_bits(uint64_t type) { return type < sizeof TYPES / sizeof TYPES[0] ? TYPES[type].bits : 0; }

/* Sizes a ShapeProto: dimensions of an array, elements and bytes (a tuple sums its leaves). */
static int element_bytes(uint64_t type) {
    /* xla.PrimitiveType: PRED S8 S16 S32 S64 U8 U16 U32 U64 F16 F32 F64 TUPLE OPAQUE C64 BF16 TOKEN
     * C128, then 8-bit floats, 4- and 2-bit ints and floats (counted as a byte each, unpacked) */
    static const unsigned char size[] = {0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 0, 0, 8, 2, 0, 16};
    if (type < sizeof size) return size[type];
    return type <= 40 ? 1 : 0;
}

static int read_shape(hlo_ctx *c, jp_pb shape, int depth, hlo_node *node, double *elems, double *bytes) {
    jp_pb_field f;
    hlo_ints own = {0};
    uint64_t type = 0;
    int tuple = 0;
    while (!jp_pb_done(&shape)) {
        int rc = jp_pb_next(&shape, &f, "ShapeProto", c->err);
        if (rc) return rc;
        if (f.number == SHAPE_TYPE && f.wire == JP_PB_VARINT) type = f.u;
        else if (f.number == SHAPE_DIMS && (rc = read_ints(c, &shape, &f, &own))) return rc;
        else if (f.number == SHAPE_TUPLE && f.wire == JP_PB_LEN) {
            tuple = 1;
            if (depth < HLO_MAX_SHAPE_DEPTH && (rc = read_shape(c, jp_pb_sub(&shape, &f), depth + 1, node, elems, bytes)))
                return rc;
        }
    }
    if (tuple) {
        if (depth == 0) node->tuple = 1;
        return JP_OK;
    }
    double n = 1;
    for (uint32_t i = 0; i < own.n; i++) n *= own.v[i] > 0 ? (double)own.v[i] : 0;
    *elems += n;
    *bytes += n * element_bytes(type);
    if (depth == 0) node->dims = own, node->type = (uint8_t)(type < 256 ? type : 0);
    if (node->first_elems == 0 && node->first_bytes == 0)
        node->first_elems = n, node->first_bytes = n * element_bytes(type), node->first_dims = own,
        node->first_type = (uint8_t)(type < 256 ? type : 0);
    return JP_OK;
}

static int read_window(hlo_ctx *c, jp_pb window, hlo_node *node) {
    jp_pb_field f;
    for (jp_pb p = window; !jp_pb_done(&p);) {
        int rc = jp_pb_next(&p, &f, "Window", c->err);
        if (rc) return rc;
        node->n_window += f.number == WINDOW_DIM && f.wire == JP_PB_LEN;
    }
    node->window = jp_arena_alloc(&c->scratch, (node->n_window + 1) * sizeof *node->window);
    if (!node->window) return JP_ERR_NOMEM;
    uint32_t k = 0;
    for (jp_pb p = window; !jp_pb_done(&p);) {
        int rc = jp_pb_next(&p, &f, "Window", c->err);
        if (rc) return rc;
        if (f.number != WINDOW_DIM || f.wire != JP_PB_LEN) continue;
        hlo_window_dim *w = &node->window[k++];
        *w = (hlo_window_dim){1, 1, 0, 1, 1};
        for (jp_pb d = jp_pb_sub(&p, &f); !jp_pb_done(&d);) {
            jp_pb_field g;
            if ((rc = jp_pb_next(&d, &g, "WindowDimension", c->err))) return rc;
            int64_t v = (int64_t)g.u;
            if (g.wire != JP_PB_VARINT) continue;
            if (g.number == WDIM_SIZE) w->size = v;
            if (g.number == WDIM_STRIDE) w->stride = v;
            if (g.number == WDIM_PAD_LOW) w->pad_low = v;
            if (g.number == WDIM_WINDOW_DIL) w->window_dilation = v;
            if (g.number == WDIM_BASE_DIL) w->base_dilation = v;
        }
    }
    return JP_OK;
}

static int read_conv_dims(hlo_ctx *c, jp_pb dnums, hlo_conv_dims *d) {
    jp_pb_field f;
    while (!jp_pb_done(&dnums)) {
        int rc = jp_pb_next(&dnums, &f, "ConvolutionDimensionNumbers", c->err);
        if (rc) return rc;
        int64_t v = (int64_t)f.u;
        hlo_ints *list = f.number == CONV_IN_SPATIAL ? &d->in_spatial
                         : f.number == CONV_KERNEL_SPATIAL ? &d->kernel_spatial
                         : f.number == CONV_OUT_SPATIAL ? &d->out_spatial : NULL;
        if (list) {
            if ((rc = read_ints(c, &dnums, &f, list))) return rc;
            continue;
        }
        if (f.wire != JP_PB_VARINT) continue;
        if (f.number == CONV_IN_BATCH) d->in_batch = v;
        if (f.number == CONV_IN_FEATURE) d->in_feature = v;
        if (f.number == CONV_KERNEL_IN) d->kernel_in_feature = v;
        if (f.number == CONV_KERNEL_OUT) d->kernel_out_feature = v;
        if (f.number == CONV_OUT_BATCH) d->out_batch = v;
        if (f.number == CONV_OUT_FEATURE) d->out_feature = v;
    }
    return JP_OK;
}

static int read_dot_dims(hlo_ctx *c, jp_pb dnums, hlo_node *node) {
    jp_pb_field f;
    while (!jp_pb_done(&dnums)) {
        int rc = jp_pb_next(&dnums, &f, "DotDimensionNumbers", c->err);
        if (rc) return rc;
        if (f.number == DOT_LHS_CONTRACT && (rc = read_ints(c, &dnums, &f, &node->lhs_contract))) return rc;
    }
    return JP_OK;
}

static int count_one(void *arg, int64_t v) {
    (void)v;
    ++*(int64_t *)arg;
    return 0;
}

/* One ReplicaGroup: its size is the collective's n (the first group; XLA's groups are equal). */
static int read_group(hlo_ctx *c, jp_pb group, hlo_node *node) {
    if (node->group_size > 0) return JP_OK;
    int64_t n = 0;
    jp_pb_field f;
    while (!jp_pb_done(&group)) {
        int rc = jp_pb_next(&group, &f, "ReplicaGroup", c->err);
        if (rc) return rc;
        if (f.number == GROUP_IDS && (rc = jp_hlo_each_int(&group, &f, count_one, &n, c->err))) return rc;
    }
    node->group_size = n;
    return JP_OK;
}

/* CollectiveDeviceListProto: explicit groups, or an iota list's devices per group. */
static int read_device_list(hlo_ctx *c, jp_pb list, hlo_node *node) {
    jp_pb_field f;
    while (!jp_pb_done(&list)) {
        int rc = jp_pb_next(&list, &f, "CollectiveDeviceListProto", c->err);
        if (rc) return rc;
        if (f.wire != JP_PB_LEN) continue;
        if (f.number == DEVLIST_GROUPS && (rc = read_group(c, jp_pb_sub(&list, &f), node))) return rc;
        if (f.number != DEVLIST_IOTA) continue;
        for (jp_pb p = jp_pb_sub(&list, &f); !jp_pb_done(&p);) {
            jp_pb_field g;
            if ((rc = jp_pb_next(&p, &g, "IotaReplicaGroupListProto", c->err))) return rc;
            if (g.number == IOTA_PER_GROUP && g.wire == JP_PB_VARINT && g.u < INT32_MAX) node->group_size = (int64_t)g.u;
        }
    }
    return JP_OK;
}

/* The facts of one field that only the cost model reads. */
static int read_cost_field(hlo_ctx *c, const jp_pb *instr, const jp_pb_field *f, hlo_node *node) {
    int len = f->wire == JP_PB_LEN;
    switch (f->number) {
    case INSTR_SHAPE:
        if (!len) return JP_OK;
        node->shape = jp_pb_sub(instr, f);
        return read_shape(c, node->shape, 0, node, &node->elems, &node->bytes);
    case INSTR_CUSTOM_TARGET: if (len) node->target = (jp_str){(const char *)f->data, f->len}; return JP_OK;
    case INSTR_BACKEND_CONFIG: if (len) node->backend_config = (jp_str){(const char *)f->data, f->len}; return JP_OK;
    case INSTR_ID: node->id = (int64_t)f->u; return JP_OK;
    case INSTR_OPERANDS: return read_ints(c, instr, f, &node->operands);
    case INSTR_CALLED: return read_ints(c, instr, f, &node->called);
    case INSTR_DOT_DIMS: return len ? read_dot_dims(c, jp_pb_sub(instr, f), node) : 0;
    case INSTR_WINDOW: return len ? read_window(c, jp_pb_sub(instr, f), node) : 0;
    case INSTR_CONV_DIMS: return len ? read_conv_dims(c, jp_pb_sub(instr, f), &node->conv) : 0;
    case INSTR_FEATURE_GROUPS: node->feature_groups = (int64_t)f->u; return JP_OK;
    case INSTR_BATCH_GROUPS: node->batch_groups = (int64_t)f->u; return JP_OK;
    case INSTR_REPLICA_GROUPS: return len ? read_group(c, jp_pb_sub(instr, f), node) : 0;
    case INSTR_DEVICE_LIST: return len ? read_device_list(c, jp_pb_sub(instr, f), node) : 0;
    case INSTR_SOURCE_TARGET: node->group_size += len; return JP_OK; /* a permute: its pairs */
    case INSTR_PARAM_NUMBER: node->param_no = f->wire == JP_PB_VARINT ? (int64_t)f->u : 0; return JP_OK;
    default: return JP_OK;
    }
}

static int read_instruction(hlo_ctx *c, jp_pb instr, jp_hlo_instr *in, hlo_node *node) {
    jp_pb_field f;
    const char *fusion_kind = "kLoop";
    comp_info called = {0, 0};
    const char *empty = jp_intern_str(c->intern, "", 0);
    *in = (jp_hlo_instr){empty, empty, NULL, empty, empty, empty, NULL, 0, 0, 0, NULL, NULL, 0, "", 0, 0, NULL, NULL, 0};
    while (!jp_pb_done(&instr)) {
        int rc = jp_pb_next(&instr, &f, "HloInstructionProto", c->err);
        if (rc) return rc;
        if (f.number == INSTR_NAME && f.wire == JP_PB_LEN) in->name = intern_field(c, &f);
        else if (f.number == INSTR_OPCODE && f.wire == JP_PB_LEN) in->opcode = intern_field(c, &f);
        else if (f.number == INSTR_FUSION_KIND && f.wire == JP_PB_LEN) fusion_kind = intern_field(c, &f);
        else if (f.number == INSTR_METADATA && f.wire == JP_PB_LEN) rc = read_metadata(c, jp_pb_sub(&instr, &f), in);
        else rc = read_cost_field(c, &instr, &f, node);
        if (rc) return rc;
        if (!in->name || !in->opcode || !fusion_kind) return JP_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < node->called.n; i++) note_called(c, (uint64_t)node->called.v[i], &called);
    int fusion = strcmp(in->opcode, "fusion") == 0;
    node->op_name = in->op_name, node->source = in->source, node->function = in->function, node->frame = in->frame;
    in->category = fusion ? fusion_category(fusion_kind, called.flags) : category_of_opcode(in->opcode);
    node->opcode = in->opcode;
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
        if (f.number == HLO_PROTO_BUFFERS && f.wire == JP_PB_LEN) c->buffers = jp_pb_sub(&proto, &f), c->has_buffers = 1;
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

/* The program's devices: replicas x partitions (computations) of its DeviceAssignmentProto, the
 * n of a collective whose replica groups are left empty (every device). */
static int read_device_assignment(hlo_ctx *c, jp_pb da) {
    jp_pb_field f;
    uint64_t replicas = 1, parts = 1;
    while (!jp_pb_done(&da)) {
        int rc = jp_pb_next(&da, &f, "DeviceAssignmentProto", c->err);
        if (rc) return rc;
        if (f.wire == JP_PB_VARINT && f.number == DA_REPLICAS && f.u) replicas = f.u;
        if (f.wire == JP_PB_VARINT && f.number == DA_COMPUTATIONS && f.u) parts = f.u;
    }
    c->n_devices = replicas < (1u << 20) && parts < (1u << 20) ? (int64_t)(replicas * parts) : 0;
    return JP_OK;
}

/* Pass 1 over the module: name, stack frames, and what each computation contains. */
static int scan_module(hlo_ctx *c, jp_pb module, jp_hlo_module *out, size_t *n_instrs) {
    jp_pb_field f;
    size_t ci = 0;
    for (jp_pb m = module; !jp_pb_done(&m);) {
        int rc = jp_pb_next(&m, &f, "HloModuleProto", c->err);
        if (rc) return rc;
        if (f.number == MODULE_ENTRY_ID && f.wire == JP_PB_VARINT) c->entry_id = f.u;
        if (f.wire != JP_PB_LEN) continue;
        if (f.number == MODULE_NAME && !(out->name = intern_field(c, &f))) return JP_ERR_NOMEM;
        if (f.number == MODULE_STACK_FRAMES && (rc = read_frames(c, jp_pb_sub(&m, &f)))) return rc;
        if (f.number == MODULE_DEVICE_ASSIGNMENT && (rc = read_device_assignment(c, jp_pb_sub(&m, &f)))) return rc;
        if (f.number == MODULE_SCHEDULE) c->schedule = jp_pb_sub(&m, &f), c->has_schedule = 1;
        if (f.number == MODULE_COMPUTATIONS && (rc = scan_computation(c, jp_pb_sub(&m, &f), &c->comps[ci++], n_instrs)))
            return rc;
    }
    return JP_OK;
}

/* Pass 2: every instruction, with the cost model's facts in ir. */
static int read_instructions(hlo_ctx *c, jp_pb module, jp_hlo_module *out, hlo_ir *ir) {
    jp_pb_field f;
    for (jp_pb m = module; !jp_pb_done(&m);) {
        int rc = jp_pb_next(&m, &f, "HloModuleProto", c->err);
        if (rc) return rc;
        if (f.number != MODULE_COMPUTATIONS || f.wire != JP_PB_LEN) continue;
        hlo_comp *comp = &ir->comps[ir->n_comps];
        *comp = (hlo_comp){c->comps[ir->n_comps].id, -1, (uint32_t)ir->n_nodes, 0, 0, 0, 0};
        for (jp_pb cp = jp_pb_sub(&m, &f); !jp_pb_done(&cp);) {
            jp_pb_field g;
            if ((rc = jp_pb_next(&cp, &g, "HloComputationProto", c->err))) return rc;
            if (g.number == COMP_ROOT_ID && g.wire == JP_PB_VARINT) comp->root_id = (int64_t)g.u;
            if (g.number != COMP_INSTRUCTIONS || g.wire != JP_PB_LEN) continue;
            hlo_node *node = &ir->nodes[ir->n_nodes];
            *node = (hlo_node){.comp = (uint32_t)ir->n_comps, .instr = (uint32_t)out->n_instrs};
            if ((rc = read_instruction(c, jp_pb_sub(&cp, &g), &out->instrs[out->n_instrs++], node))) return rc;
            ir->n_nodes++;
            comp->n++;
        }
        ir->n_comps++;
    }
    return JP_OK;
}

/* ---- instruction text (jp_hlo_decode_text) -------------------------------------------------- */

/* "f32[64,128]", "pred[]", "(...)" for a tuple, in XLA's spelling without the layout. */
static void shape_text(jp_text *b, const hlo_node *n) {
    if (n->tuple) {
        jp_text_puts(b, "(...)");
        return;
    }
    if (jp_hlo_type_name(n->type)) jp_text_printf(b, "%s[", jp_hlo_type_name(n->type));
    else jp_text_printf(b, "type%u[", n->type);
    for (uint32_t i = 0; i < n->dims.n; i++) jp_text_printf(b, "%s%lld", i ? "," : "", (long long)n->dims.v[i]);
    jp_text_puts(b, "]");
}

static int cmp_id_slot(const void *a, const void *b) {
    const hlo_id_slot *x = a, *y = b;
    if (x->id != y->id) return (x->id > y->id) - (x->id < y->id);
    return (x->node > y->node) - (x->node < y->node);
}

hlo_id_slot *jp_hlo_id_slots(const hlo_ir *ir, jp_arena *scratch) {
    hlo_id_slot *ids = jp_arena_alloc(scratch, (ir->n_nodes ? ir->n_nodes : 1) * sizeof *ids);
    if (!ids) return NULL;
    for (size_t i = 0; i < ir->n_nodes; i++) ids[i] = (hlo_id_slot){ir->nodes[i].id, (uint32_t)i};
    qsort(ids, ir->n_nodes, sizeof *ids, cmp_id_slot);
    return ids;
}

int64_t jp_hlo_id_lookup(const hlo_id_slot *slots, size_t n, int64_t id) {
    size_t lo = 0, hi = n; /* one past the last slot whose id is <= id */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (slots[mid].id <= id) lo = mid + 1;
        else hi = mid;
    }
    return lo && slots[lo - 1].id == id ? (int64_t)slots[lo - 1].node : -1;
}

/* Writes every instruction's "%name = shape opcode(shape %operand, ...)" into the module's arena
 * (before the instructions are sorted: node->instr still indexes them in file order). */
static int write_texts(hlo_ctx *c, const hlo_ir *ir, jp_hlo_module *out) {
    hlo_id_slot *ids = jp_hlo_id_slots(ir, &c->scratch);
    if (!ids) return JP_ERR_NOMEM;
    for (size_t i = 0; i < ir->n_nodes; i++) {
        const hlo_node *n = &ir->nodes[i];
        jp_hlo_instr *in = &out->instrs[n->instr];
        char line[HLO_TEXT_MAX];
        jp_text b = jp_text_make(line, sizeof line);
        jp_text_puts(&b, "%");
        jp_text_puts(&b, in->name);
        jp_text_puts(&b, " = ");
        shape_text(&b, n);
        jp_text_puts(&b, " ");
        jp_text_puts(&b, n->opcode);
        jp_text_puts(&b, "(");
        for (uint32_t k = 0; k < n->operands.n; k++) {
            int64_t hit = jp_hlo_id_lookup(ids, ir->n_nodes, n->operands.v[k]);
            if (k) jp_text_puts(&b, ", ");
            if (hit < 0) continue; /* an id the module does not define */
            const hlo_node *op = &ir->nodes[hit];
            shape_text(&b, op);
            jp_text_puts(&b, " %");
            jp_text_puts(&b, out->instrs[op->instr].name);
        }
        jp_text_puts(&b, ")");
        if (n->target.len) {
            jp_text_puts(&b, ", custom_call_target=\"");
            jp_text_put(&b, n->target.ptr, n->target.len);
            jp_text_puts(&b, "\"");
        }
        if (!(in->text = jp_arena_strndup(c->arena, b.buf, b.len))) return JP_ERR_NOMEM;
    }
    return JP_OK;
}

/* ---- what a fusion reports: its dot's metadata, and the lines of its fused instructions ------- */

enum {
    FUSION_DEPTH_MAX = 8,  /* nested fusions followed when weighing a fusion's lines */
    FUSION_LINES_MAX = 64  /* distinct lines kept per fusion; the weight of further ones goes to the
                            * fusion's own line */
};

typedef struct fusion_ctx {    /* what weighing the fusions of one module reads */
    const hlo_ir *ir;
    const jp_hlo_instr *instrs;  /* in file order (node.instr indexes them) */
    hlo_id_slot *comps;          /* computation ids, each with its index in ir->comps, by id */
    size_t visits_left;          /* fused instructions still to visit in this module: linear in its
                                  * size, so fusions calling one computation many times stay cheap */
} fusion_ctx;

/* The index in ir->comps of the computation with this id, or SIZE_MAX. */
static size_t comp_index(const fusion_ctx *f, int64_t id) {
    int64_t k = jp_hlo_id_lookup(f->comps, f->ir->n_comps, id);
    return k < 0 ? SIZE_MAX : (size_t)k;
}

/* The first dot or convolution with an op_name in the computations the fusion calls, or NULL. */
static const hlo_node *fusion_dot(const fusion_ctx *f, const hlo_node *fusion) {
    const hlo_ir *ir = f->ir;
    for (uint32_t k = 0; k < fusion->called.n; k++) {
        size_t ci = comp_index(f, fusion->called.v[k]);
        if (ci == SIZE_MAX) continue;
        const hlo_comp *comp = &ir->comps[ci];
        for (uint32_t i = comp->first; i < comp->first + comp->n && i < ir->n_nodes; i++) {
            const hlo_node *n = &ir->nodes[i];
            if ((strcmp(n->opcode, "dot") == 0 || strcmp(n->opcode, "convolution") == 0) && n->op_name && *n->op_name)
                return n;
        }
    }
    return NULL;
}

typedef struct share_build {   /* the lines of one fusion while they are weighed */
    jp_hlo_share lines[FUSION_LINES_MAX]; /* weight: FLOPs + transcendentals so far */
    double bytes[FUSION_LINES_MAX]; /* each line's bytes, the weight of a fusion without FLOPs */
    uint32_t n;
    const jp_hlo_instr *own;   /* the fusion: its line takes unnamed and overflowing weight */
} share_build;

static void add_cost(share_build *b, const char *source, const char *function, const jp_hlo_frame *frame, double flops,
                     double bytes) {
    if (!(flops > 0) && !(bytes > 0)) return;
    if (!source || !*source) source = b->own->source, function = b->own->function, frame = b->own->frame;
    uint32_t i = 0;
    while (i < b->n && b->lines[i].source != source) i++; /* interned: one pointer per line */
    if (i == b->n && b->n == FUSION_LINES_MAX) {
        if (source != b->own->source) add_cost(b, b->own->source, b->own->function, b->own->frame, flops, bytes);
        return;
    }
    if (i == b->n) b->lines[b->n] = (jp_hlo_share){source, function, frame, 0}, b->bytes[b->n++] = 0;
    if (flops > 0) b->lines[i].weight += flops;
    if (bytes > 0) b->bytes[i] += bytes;
}

/* Adds the modelled cost of every instruction of the fused computation `id` to the line that made
 * it; a nested fusion's instructions count one by one, a reducer's through its reduce. 0, or -1
 * when the module's visits ran out (the fusion then keeps its own line). */
static int weigh_computation(fusion_ctx *f, int64_t id, int depth, share_build *b) {
    size_t ci = comp_index(f, id);
    if (ci == SIZE_MAX || depth > FUSION_DEPTH_MAX) return 0;
    const hlo_comp *comp = &f->ir->comps[ci];
    for (uint32_t i = comp->first; i < comp->first + comp->n && i < f->ir->n_nodes; i++) {
        const hlo_node *n = &f->ir->nodes[i];
        const jp_hlo_instr *in = &f->instrs[n->instr];
        if (f->visits_left == 0) return -1;
        f->visits_left--;
        if (strcmp(n->opcode, "fusion") == 0) {
            for (uint32_t k = 0; k < n->called.n; k++)
                if (weigh_computation(f, n->called.v[k], depth + 1, b)) return -1;
            continue;
        }
        add_cost(b, n->source, n->function, n->frame, in->flops + in->transcendentals, in->bytes);
    }
    return 0;
}

static int cmp_share_weight(const void *x, const void *y) {
    const jp_hlo_share *a = x, *b = y;
    if (a->weight != b->weight) return a->weight < b->weight ? 1 : -1;
    return strcmp(a->source, b->source);
}

/* The fusion's lines by modelled cost: FLOPs and transcendentals of its fused instructions, or
 * their bytes when none does FLOPs. Kept only when two or more lines share the cost. */
static int fusion_shares(hlo_ctx *c, fusion_ctx *f, const hlo_node *fusion, jp_hlo_instr *in) {
    share_build b = {.own = in};
    for (uint32_t k = 0; k < fusion->called.n; k++)
        if (weigh_computation(f, fusion->called.v[k], 0, &b)) return JP_OK;
    double flops = 0, total = 0;
    for (uint32_t i = 0; i < b.n; i++) flops += b.lines[i].weight;
    uint32_t n = 0;
    for (uint32_t i = 0; i < b.n; i++) { /* the lines with weight, in place */
        b.lines[i].weight = flops > 0 ? b.lines[i].weight : b.bytes[i];
        if (b.lines[i].weight > 0) total += b.lines[i].weight, b.lines[n++] = b.lines[i];
    }
    if (n < 2) return JP_OK;
    jp_hlo_share *shares = jp_arena_alloc(c->arena, n * sizeof *shares);
    if (!shares) return JP_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++) shares[i] = b.lines[i], shares[i].weight /= total;
    qsort(shares, n, sizeof *shares, cmp_share_weight);
    in->shares = shares;
    in->n_shares = n;
    return JP_OK;
}

/* A fusion's own metadata names its root (often a trailing reduce or convert); one containing a
 * dot or convolution reports that instead, op_name and source line alike, so the two always come
 * from one instruction. Its time is then split over the lines of its fused instructions
 * (fusion_shares). Runs after jp_hlo_cost (the weights) and before the instructions are sorted. */
static int attribute_fusions(hlo_ctx *c, const hlo_ir *ir, jp_hlo_module *out) {
    hlo_id_slot *comps = jp_arena_alloc(&c->scratch, (ir->n_comps ? ir->n_comps : 1) * sizeof *comps);
    if (!comps) return JP_ERR_NOMEM;
    fusion_ctx f = {ir, out->instrs, comps, 4 * ir->n_nodes + 4096};
    for (size_t i = 0; i < ir->n_comps; i++) f.comps[i] = (hlo_id_slot){ir->comps[i].id, (uint32_t)i};
    qsort(f.comps, ir->n_comps, sizeof *f.comps, cmp_id_slot);
    for (size_t i = 0; i < ir->n_nodes; i++) {
        const hlo_node *n = &ir->nodes[i];
        if (strcmp(n->opcode, "fusion") != 0) continue;
        jp_hlo_instr *in = &out->instrs[n->instr];
        const hlo_node *dot = fusion_dot(&f, n);
        if (dot) {
            in->op_name = dot->op_name;
            in->source = dot->source;
            in->function = dot->function;
            in->frame = dot->frame;
        }
        int rc = fusion_shares(c, &f, n, in);
        if (rc) return rc;
    }
    return JP_OK;
}

/* ---- the element type an instruction computes in ------------------------------------------------ */

static int is_dot_like(const char *opcode) {
    return strcmp(opcode, "dot") == 0 || strcmp(opcode, "convolution") == 0 || strcmp(opcode, "custom-call") == 0;
}

/* The name of a node's first array type, "" when it has none (a token, an unknown type). */
static const char *node_dtype(const hlo_node *n) {
    const char *name = jp_hlo_type_name(n->first_type);
    return name && jp_hlo_type_bits(n->first_type) ? name : "";
}

/* The type of node n's left operand, NULL when it has none or it is not in the module. */
static const char *left_operand_dtype(const hlo_ir *ir, const hlo_id_slot *ids, const hlo_node *n) {
    int64_t k = n->operands.n ? jp_hlo_id_lookup(ids, ir->n_nodes, n->operands.v[0]) : -1;
    return k < 0 ? NULL : node_dtype(&ir->nodes[k]);
}

/* The first dot or convolution of the computations a fusion calls (not nested further), or NULL. */
static const hlo_node *fused_dot(const hlo_ir *ir, const hlo_id_slot *comps, const hlo_node *fusion) {
    for (uint32_t k = 0; k < fusion->called.n; k++) {
        int64_t ci = jp_hlo_id_lookup(comps, ir->n_comps, fusion->called.v[k]);
        if (ci < 0) continue;
        const hlo_comp *comp = &ir->comps[ci];
        for (uint32_t i = comp->first; i < comp->first + comp->n && i < ir->n_nodes; i++)
            if (strcmp(ir->nodes[i].opcode, "dot") == 0 || strcmp(ir->nodes[i].opcode, "convolution") == 0)
                return &ir->nodes[i];
    }
    return NULL;
}

/* Each instruction's dtype (jp_hlo_instr.dtype): a matmul's precision is its inputs' (bf16 x bf16
 * accumulating into f32 runs on the 16-bit units), everything else's its output's. */
static int set_dtypes(hlo_ctx *c, const hlo_ir *ir, jp_hlo_module *out) {
    hlo_id_slot *ids = jp_hlo_id_slots(ir, &c->scratch);
    hlo_id_slot *comps = jp_arena_alloc(&c->scratch, (ir->n_comps ? ir->n_comps : 1) * sizeof *comps);
    if (!ids || !comps) return JP_ERR_NOMEM;
    for (size_t i = 0; i < ir->n_comps; i++) comps[i] = (hlo_id_slot){ir->comps[i].id, (uint32_t)i};
    qsort(comps, ir->n_comps, sizeof *comps, cmp_id_slot);
    for (size_t i = 0; i < ir->n_nodes; i++) {
        const hlo_node *n = &ir->nodes[i], *dot = NULL;
        const char *t = NULL;
        if (is_dot_like(n->opcode)) t = left_operand_dtype(ir, ids, n);
        else if (strcmp(n->opcode, "fusion") == 0 && (dot = fused_dot(ir, comps, n))) t = left_operand_dtype(ir, ids, dot);
        out->instrs[n->instr].dtype = t && *t ? t : node_dtype(n);
    }
    return JP_OK;
}

/* The operands' bytes of node n (its first operand alone when `first`). */
static double operand_bytes(const hlo_ir *ir, const hlo_id_slot *ids, const hlo_node *n, int first) {
    double bytes = 0;
    for (uint32_t k = 0; k < n->operands.n && (!first || k == 0); k++) {
        int64_t hit = jp_hlo_id_lookup(ids, ir->n_nodes, n->operands.v[k]);
        if (hit >= 0) bytes += ir->nodes[hit].bytes;
    }
    return bytes;
}

static int has_prefix(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static int ends_with_str(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Each collective's message size and group size (the nccl-tests convention, docs/design.md
 * "Communication"), then each "-done" half takes its "-start"'s (its operand). Runs before the
 * instructions are sorted (node.instr indexes them in file order). */
static int collective_sizes(hlo_ctx *c, const hlo_ir *ir, jp_hlo_module *out) {
    hlo_id_slot *ids = jp_hlo_id_slots(ir, &c->scratch);
    if (!ids) return JP_ERR_NOMEM;
    for (int done = 0; done < 2; done++) {
        for (size_t i = 0; i < ir->n_nodes; i++) {
            const hlo_node *n = &ir->nodes[i];
            jp_hlo_instr *in = &out->instrs[n->instr];
            if (!jp_hlo_is_collective(in->category) || ends_with_str(n->opcode, "-done") != done) continue;
            if (done) {
                int64_t hit = n->operands.n ? jp_hlo_id_lookup(ids, ir->n_nodes, n->operands.v[0]) : -1;
                if (hit < 0) continue;
                const jp_hlo_instr *start = &out->instrs[ir->nodes[hit].instr];
                in->coll_bytes = start->coll_bytes, in->group_size = start->group_size, in->async_start = start->name;
                continue;
            }
            int64_t g = n->group_size > 0 ? n->group_size : c->n_devices;
            in->group_size = g > 0 && g < UINT32_MAX ? (uint32_t)g : 0;
            int permute = has_prefix(n->opcode, "collective-permute");
            in->coll_bytes = operand_bytes(ir, ids, n, permute);
            if (has_prefix(n->opcode, "all-gather")) /* S is the gathered buffer */
                in->coll_bytes = in->group_size ? in->coll_bytes * in->group_size : n->bytes;
        }
    }
    return JP_OK;
}

/* ---- the entry computation's schedule ------------------------------------------------------- */

/* Opcodes that never run on the device themselves: what is left of a schedule without them is the
 * order in which the program's kernels, copies and library calls run. */
static int runs_nothing(const char *opcode) {
    static const char *const NONE[] = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast",
                                       "after-all", "add-dependency", "opt-barrier", "domain"};
    for (size_t i = 0; i < sizeof NONE / sizeof NONE[0]; i++)
        if (strcmp(opcode, NONE[i]) == 0) return 1;
    return 0;
}

typedef struct sched_dest {
    hlo_ctx *c;
    const hlo_ir *ir;
    const hlo_id_slot *ids;
    const jp_hlo_instr *instrs; /* in file order (node.instr indexes them) */
} sched_dest;

static int push_scheduled(void *arg, int64_t id) {
    sched_dest *d = arg;
    int64_t k = jp_hlo_id_lookup(d->ids, d->ir->n_nodes, id);
    if (k < 0 || runs_nothing(d->ir->nodes[k].opcode)) return 0;
    if (d->c->n_scheduled == d->c->max_scheduled) return 1; /* ids repeated past the module's size */
    d->c->scheduled[d->c->n_scheduled++] = d->instrs[d->ir->nodes[k].instr].name;
    return 0;
}

/* Every computation's sequence from the HloScheduleProto (a map from computation id to its
 * instruction ids) into c->scheduled, one run each. A module without a schedule keeps none. */
static int read_schedule(hlo_ctx *c, const hlo_ir *ir, const jp_hlo_module *out) {
    hlo_id_slot *ids = jp_hlo_id_slots(ir, &c->scratch);
    c->max_scheduled = ir->n_nodes;
    c->scheduled = jp_arena_alloc(&c->scratch, (ir->n_nodes ? ir->n_nodes : 1) * sizeof *c->scheduled);
    c->runs = jp_arena_alloc(&c->scratch, (ir->n_comps ? ir->n_comps : 1) * sizeof *c->runs);
    if (!ids || !c->scheduled || !c->runs) return JP_ERR_NOMEM;
    sched_dest d = {c, ir, ids, out->instrs};
    jp_pb_field f, g, h;
    for (jp_pb s = c->schedule; !jp_pb_done(&s);) {
        int rc = jp_pb_next(&s, &f, "HloScheduleProto", c->err);
        if (rc) return rc;
        if (f.number != SCHED_SEQUENCES || f.wire != JP_PB_LEN) continue;
        uint64_t key = UINT64_MAX;
        jp_pb seq = {0};
        for (jp_pb e = jp_pb_sub(&s, &f); !jp_pb_done(&e);) {
            if ((rc = jp_pb_next(&e, &g, "HloScheduleProto.SequencesEntry", c->err))) return rc;
            if (g.number == MAP_KEY && g.wire == JP_PB_VARINT) key = g.u;
            if (g.number == MAP_VALUE && g.wire == JP_PB_LEN) seq = jp_pb_sub(&e, &g);
        }
        if (!seq.p || c->n_runs == ir->n_comps) continue; /* more sequences than computations: corrupt */
        size_t first = c->n_scheduled;
        for (jp_pb q = seq; !jp_pb_done(&q);) {
            if ((rc = jp_pb_next(&q, &h, "InstructionSequence", c->err))) return rc;
            if (h.number == SEQ_IDS && (rc = jp_hlo_each_int(&q, &h, push_scheduled, &d, c->err)) < 0) return rc;
        }
        if (c->n_scheduled > first)
            c->runs[c->n_runs++] = (struct sched_run){first, c->n_scheduled - first, key == c->entry_id};
    }
    return JP_OK;
}

/* After the sort: each scheduled run as a sequence of instructions, in out's arena, the entry
 * computation's first. */
static int resolve_schedule(hlo_ctx *c, jp_hlo_module *out) {
    if (!c->n_runs) return JP_OK;
    out->sequences = jp_arena_alloc(c->arena, c->n_runs * sizeof *out->sequences);
    const jp_hlo_instr **instrs = jp_arena_alloc(c->arena, c->n_scheduled * sizeof *instrs);
    if (!out->sequences || !instrs) return JP_ERR_NOMEM;
    for (int entry = 1; entry >= 0; entry--)
        for (size_t r = 0; r < c->n_runs; r++) {
            if (c->runs[r].entry != entry) continue;
            jp_hlo_sequence *q = &out->sequences[out->n_sequences];
            *q = (jp_hlo_sequence){instrs, 0, entry};
            for (size_t i = c->runs[r].first; i < c->runs[r].first + c->runs[r].n; i++) {
                const jp_hlo_instr *in = jp_hlo_find(out, c->scheduled[i]);
                if (in) instrs[q->n++] = in;
            }
            instrs += q->n;
            out->n_sequences += q->n > 0;
        }
    return JP_OK;
}

/* Each instruction's users (jp_hlo_instr.users): the instructions naming it as an operand. Runs
 * before the instructions are sorted (node.instr indexes them in file order). */
static int set_users(hlo_ctx *c, const hlo_ir *ir, jp_hlo_module *out) {
    hlo_id_slot *ids = jp_hlo_id_slots(ir, &c->scratch);
    uint32_t *count = jp_arena_alloc(&c->scratch, (ir->n_nodes ? ir->n_nodes : 1) * sizeof *count);
    if (!ids || !count) return JP_ERR_NOMEM;
    memset(count, 0, (ir->n_nodes ? ir->n_nodes : 1) * sizeof *count);
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < ir->n_nodes; i++)
            for (uint32_t k = 0; k < ir->nodes[i].operands.n; k++) {
                int64_t o = jp_hlo_id_lookup(ids, ir->n_nodes, ir->nodes[i].operands.v[k]);
                if (o < 0) continue;
                jp_hlo_instr *used = &out->instrs[ir->nodes[o].instr];
                if (pass == 0) count[o]++;
                else ((const char **)used->users)[used->n_users++] = out->instrs[ir->nodes[i].instr].name;
            }
        for (size_t i = 0; pass == 0 && i < ir->n_nodes; i++) {
            if (!count[i]) continue;
            jp_hlo_instr *in = &out->instrs[ir->nodes[i].instr];
            if (!(in->users = jp_arena_alloc(c->arena, count[i] * sizeof *in->users))) return JP_ERR_NOMEM;
        }
    }
    return JP_OK;
}

static int decode_module(hlo_ctx *c, jp_pb module, jp_hlo_module *out) {
    size_t n_instrs = 0;
    int rc = scan_module(c, module, out, &n_instrs);
    if (rc) return rc;
    out->instrs = jp_arena_alloc(c->arena, (n_instrs ? n_instrs : 1) * sizeof(jp_hlo_instr));
    hlo_ir ir = {0};
    ir.nodes = jp_arena_alloc(&c->scratch, (n_instrs ? n_instrs : 1) * sizeof *ir.nodes);
    ir.comps = jp_arena_alloc(&c->scratch, (c->n_comps ? c->n_comps : 1) * sizeof *ir.comps);
    if (!out->instrs || !ir.nodes || !ir.comps) return JP_ERR_NOMEM;
    if ((rc = read_instructions(c, module, out, &ir))) return rc;
    if (c->want_text && (rc = write_texts(c, &ir, out))) return rc;
    if (c->has_buffers && (rc = jp_hlo_buffers_decode(c->buffers, &ir, out->instrs, c->intern, c->arena, &c->scratch,
                                                      c->err, &out->memory)))
        return rc;
    if ((rc = jp_hlo_cost(&ir, out)) || (rc = attribute_fusions(c, &ir, out)) || (rc = set_dtypes(c, &ir, out)) ||
        (rc = collective_sizes(c, &ir, out)))
        return rc;
    if (c->has_schedule && (rc = read_schedule(c, &ir, out))) return rc;
    if ((rc = set_users(c, &ir, out))) return rc;
    qsort(out->instrs, out->n_instrs, sizeof(jp_hlo_instr), cmp_instr);
    return resolve_schedule(c, out);
}

static int decode(jp_bytes proto, const uint8_t *origin, const regex_t *library, jp_intern *t, jp_arena *a,
                  jp_hlo_module *out, int want_text, jp_error *err) {
    hlo_ctx c = {.root = jp_pb_make(proto.ptr, proto.len, origin), .intern = t, .arena = a, .library = library,
                 .err = err, .want_text = want_text};
    jp_pb module;
    memset(out, 0, sizeof *out);
    out->program_id = -1;
    int rc = find_module(&c, &module, &c.n_comps);
    if (rc == JP_ERR_NOT_FOUND) return JP_OK; /* an HloProto without a module: nothing to map */
    if (rc) return rc;
    c.comps = calloc(c.n_comps ? c.n_comps : 1, sizeof(comp_info));
    if (!c.comps) return JP_ERR_NOMEM;
    jp_arena_init(&c.scratch, 0);
    rc = decode_module(&c, module, out);
    jp_arena_deinit(&c.scratch);
    free(c.comps);
    if (rc == JP_ERR_NOMEM) jp_error_set(err, rc, 0, "out of memory decoding HloProto");
    return rc;
}

int jp_hlo_decode(jp_bytes proto, const uint8_t *origin, const regex_t *library, jp_intern *t, jp_arena *a,
                  jp_hlo_module *out, jp_error *err) {
    return decode(proto, origin, library, t, a, out, 0, err);
}

int jp_hlo_decode_text(jp_bytes proto, const uint8_t *origin, const regex_t *library, jp_intern *t, jp_arena *a,
                       jp_hlo_module *out, jp_error *err) {
    return decode(proto, origin, library, t, a, out, 1, err);
}
