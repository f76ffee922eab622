/* hlo_buffers.c - decodes a module's BufferAssignmentProto (HloProto field 3): its logical buffers
 * with their defining instruction, shape and source, its allocations, and the heap simulator's
 * traces, for the memory-at-the-peak analysis (src/analyses/buffers.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "decode/hlo_ir.h"

enum { /* field numbers of xla/service/hlo.proto and xla/xla_data.proto */
    BA_BUFFERS = 1, BA_ALLOCATIONS = 3, BA_TRACES = 4,
    LB_ID = 1, LB_SIZE = 2, LB_DEFINED_AT = 3, LB_COLOR = 4,
    LOC_INSTR_NAME = 2, LOC_SHAPE_INDEX = 3, LOC_INSTR_ID = 4,
    AL_SIZE = 2, AL_THREAD_LOCAL = 3, AL_PARAMETER = 5, AL_LIVE_OUT = 7, AL_COLOR = 8, AL_ASSIGNED = 9,
    AL_TUPLE = 11, AL_CONSTANT = 12, AL_ALIASED = 13,
    AS_BUFFER = 1, AS_OFFSET = 2,
    TRACE_EVENTS = 1,
    EV_KIND = 1, EV_BUFFER = 2, EV_COMPUTATION = 3, EV_INSTRUCTION = 4, EV_SHARE_WITH = 5,
    SHAPE_TYPE = 2, SHAPE_DIMS = 3, SHAPE_TUPLE = 4,
};

enum { TYPE_TUPLE = 13, TUPLE_POINTER_BYTES = 8 };

typedef struct raw_lbuf {      /* a logical buffer as read, before its instruction is looked up */
    int64_t id, bytes, color;
    int64_t instr_id;          /* Location.instruction_id, when has_instr_id */
    uint8_t has_instr_id;
    jp_str instr_name;         /* Location.instruction_name: old protos name the instruction only */
    int64_t index[HLO_MAX_SHAPE_DEPTH]; /* the shape index (deeper ones are cut) */
    uint32_t n_index;
    uint32_t order;            /* position in the file: a repeated id keeps the last one */
} raw_lbuf;

typedef struct name_slot {     /* one node by its interned instruction name */
    const char *name;
    uint32_t node;
} name_slot;

typedef struct ba_ctx {
    const hlo_ir *ir;
    const jp_hlo_instr *instrs; /* in file order: ir->nodes[i].instr indexes them */
    jp_intern *t;
    jp_arena *a, *scratch;
    jp_error *err;
    jp_hlo_memory *mem;
    hlo_id_slot *ids;          /* the nodes by id */
    name_slot *names;          /* the nodes by name, built when a buffer has no instruction id */
    const char *empty;
} ba_ctx;

/* Sizes are int64 on the wire; a negative one (hostile input) costs nothing. */
static int64_t size_of(uint64_t u) { return (int64_t)u < 0 ? 0 : (int64_t)u; }

/* ---- logical buffers ------------------------------------------------------------------------ */

static int push_index(void *arg, int64_t v) {
    raw_lbuf *b = arg;
    if (b->n_index == HLO_MAX_SHAPE_DEPTH) return 1; /* deeper indices are cut */
    b->index[b->n_index++] = v;
    return 0;
}

static int read_location(ba_ctx *c, jp_pb loc, raw_lbuf *b) {
    jp_pb_field f;
    b->n_index = 0; /* a repeated Location: the last one */
    while (!jp_pb_done(&loc)) {
        int rc = jp_pb_next(&loc, &f, "LogicalBufferProto.Location", c->err);
        if (rc) return rc;
        if (f.number == LOC_INSTR_ID && f.wire == JP_PB_VARINT) b->instr_id = (int64_t)f.u, b->has_instr_id = 1;
        else if (f.number == LOC_INSTR_NAME && f.wire == JP_PB_LEN) b->instr_name = (jp_str){(const char *)f.data, f.len};
        else if (f.number == LOC_SHAPE_INDEX && (rc = jp_hlo_each_int(&loc, &f, push_index, b, c->err))) return rc;
    }
    return JP_OK;
}

static int read_lbuf(ba_ctx *c, jp_pb lb, raw_lbuf *b) {
    jp_pb_field f;
    while (!jp_pb_done(&lb)) {
        int rc = jp_pb_next(&lb, &f, "LogicalBufferProto", c->err);
        if (rc) return rc;
        if (f.wire == JP_PB_LEN && f.number == LB_DEFINED_AT && (rc = read_location(c, jp_pb_sub(&lb, &f), b)))
            return rc;
        if (f.wire != JP_PB_VARINT) continue;
        if (f.number == LB_ID) b->id = (int64_t)f.u;
        if (f.number == LB_SIZE) b->bytes = size_of(f.u);
        if (f.number == LB_COLOR) b->color = (int64_t)f.u;
    }
    return JP_OK;
}

static int cmp_raw(const void *x, const void *y) {
    const raw_lbuf *a = x, *b = y;
    if (a->id != b->id) return (a->id > b->id) - (a->id < b->id);
    return (a->order > b->order) - (a->order < b->order);
}

static int cmp_name_slot(const void *x, const void *y) {
    uintptr_t a = (uintptr_t)((const name_slot *)x)->name, b = (uintptr_t)((const name_slot *)y)->name;
    if (a != b) return (a > b) - (a < b);
    return (((const name_slot *)x)->node > ((const name_slot *)y)->node) -
           (((const name_slot *)x)->node < ((const name_slot *)y)->node);
}

/* The node named name (the last of a repeated name), or -1; the name table is built on first use. */
static int64_t node_by_name(ba_ctx *c, jp_str name) {
    size_t n = c->ir->n_nodes;
    if (!c->names) {
        if (!(c->names = jp_arena_alloc(c->scratch, (n ? n : 1) * sizeof *c->names))) return -2;
        for (size_t i = 0; i < n; i++) c->names[i] = (name_slot){c->instrs[c->ir->nodes[i].instr].name, (uint32_t)i};
        qsort(c->names, n, sizeof *c->names, cmp_name_slot);
    }
    const char *key = jp_intern_view(c->t, name);
    if (!key) return -2;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)c->names[mid].name <= (uintptr_t)key) lo = mid + 1;
        else hi = mid;
    }
    return lo && c->names[lo - 1].name == key ? (int64_t)c->names[lo - 1].node : -1;
}

/* ---- shapes --------------------------------------------------------------------------------- */

typedef struct dims_acc {      /* an array shape's dimensions as they are read */
    jp_text *text;
    uint64_t elems;            /* their product, saturated */
    uint32_t n;
} dims_acc;

static int add_dim(void *arg, int64_t d) {
    dims_acc *acc = arg;
    jp_text_printf(acc->text, "%s%lld", acc->n++ ? "," : "", (long long)d);
    uint64_t v = d > 0 ? (uint64_t)d : 0;
    acc->elems = v && acc->elems > UINT64_MAX / v ? UINT64_MAX : acc->elems * v;
    return 0;
}

/* The dense bytes of n elements of `bits` bits (sub-byte types packed), saturated at INT64_MAX. */
static int64_t dense_bytes(uint64_t n, unsigned bits) {
    if (n > (uint64_t)INT64_MAX / (bits ? bits : 1)) return INT64_MAX;
    return (int64_t)((n * bits + 7) / 8);
}

/* Appends shape's text ("f32[4,8]", "(f32[4], s32[])") to b; returns its unpadded bytes (a tuple
 * is XLA's table of 8-byte pointers to its elements). */
static int shape_info(ba_ctx *c, jp_pb shape, int depth, jp_text *b, int64_t *unpadded) {
    jp_pb_field f;
    uint64_t type = 0;
    for (jp_pb p = shape; !jp_pb_done(&p);) {
        int rc = jp_pb_next(&p, &f, "ShapeProto", c->err);
        if (rc) return rc;
        if (f.number == SHAPE_TYPE && f.wire == JP_PB_VARINT) type = f.u;
    }
    uint32_t n_tuple = 0;
    if (type == TYPE_TUPLE) jp_text_puts(b, "(");
    else if (jp_hlo_type_name(type)) jp_text_printf(b, "%s[", jp_hlo_type_name(type));
    else jp_text_printf(b, "type%llu[", (unsigned long long)type);
    dims_acc acc = {b, 1, 0};
    for (jp_pb p = shape; !jp_pb_done(&p);) {
        int rc = jp_pb_next(&p, &f, "ShapeProto", c->err);
        if (rc) return rc;
        if (type != TYPE_TUPLE && f.number == SHAPE_DIMS && (rc = jp_hlo_each_int(&p, &f, add_dim, &acc, c->err))) return rc;
        if (type != TYPE_TUPLE || f.number != SHAPE_TUPLE || f.wire != JP_PB_LEN) continue;
        if (n_tuple++) jp_text_puts(b, ", ");
        int64_t ignored;
        if (depth + 1 >= HLO_MAX_SHAPE_DEPTH) jp_text_puts(b, "...");
        else if ((rc = shape_info(c, jp_pb_sub(&p, &f), depth + 1, b, &ignored))) return rc;
    }
    jp_text_puts(b, type == TYPE_TUPLE ? ")" : "]");
    *unpadded = type == TYPE_TUPLE ? (int64_t)n_tuple * TUPLE_POINTER_BYTES : dense_bytes(acc.elems, jp_hlo_type_bits(type));
    return JP_OK;
}

/* The sub-shape at index k of a tuple shape: its k-th element; 0 when there is none (then the
 * walk stops where it is, as XProf falls back to the whole shape). */
static int tuple_element(ba_ctx *c, jp_pb shape, int64_t k, jp_pb *out) {
    jp_pb_field f;
    int64_t seen = 0;
    int tuple = 0, found = 0;
    for (jp_pb p = shape; !jp_pb_done(&p);) {
        int rc = jp_pb_next(&p, &f, "ShapeProto", c->err);
        if (rc) return rc;
        if (f.number == SHAPE_TYPE && f.wire == JP_PB_VARINT) tuple = f.u == TYPE_TUPLE;
        if (f.number == SHAPE_TUPLE && f.wire == JP_PB_LEN && seen++ == k) *out = jp_pb_sub(&p, &f), found = 1;
    }
    return tuple && found;
}

/* ---- resolving a buffer's instruction ------------------------------------------------------- */

/* "copy-start{0}", "custom-call.1{1,2}": the instruction's name with the shape index. A name past
 * INDEXED_NAME_SHOWN bytes is cut (on a whole character, with "...") so that the index, which tells
 * a tuple's buffers apart, is always there whole. */
enum { INDEXED_NAME_SHOWN = 800 };
_Static_assert(INDEXED_NAME_SHOWN + 3 + 2 + HLO_MAX_SHAPE_DEPTH * 21 < HLO_TEXT_MAX, "the index always fits whole");

static const char *indexed_name(ba_ctx *c, const char *name, const raw_lbuf *r) {
    if (!r->n_index) return name;
    char buf[HLO_TEXT_MAX];
    jp_text t = jp_text_make(buf, sizeof buf);
    size_t len = strlen(name);
    if (len <= INDEXED_NAME_SHOWN) jp_text_put(&t, name, len);
    else jp_text_put(&t, name, jp_text_utf8_floor(name, INDEXED_NAME_SHOWN)), jp_text_puts(&t, JP_TEXT_CUT_MARK);
    for (uint32_t i = 0; i < r->n_index; i++) jp_text_printf(&t, "%s%lld", i ? "," : "{", (long long)r->index[i]);
    jp_text_puts(&t, "}");
    return jp_intern_str(c->t, t.buf, t.len);
}

static int resolve(ba_ctx *c, const raw_lbuf *r, jp_hlo_lbuf *b) {
    int64_t node = r->has_instr_id ? jp_hlo_id_lookup(c->ids, c->ir->n_nodes, r->instr_id) : node_by_name(c, r->instr_name);
    if (node == -2) return JP_ERR_NOMEM;
    *b = (jp_hlo_lbuf){r->id, r->bytes, 0, r->color, 0, -1, 0, c->empty, c->empty, c->empty, c->empty, c->empty,
                       c->empty, NULL};
    if (node < 0) return JP_OK;
    const hlo_node *n = &c->ir->nodes[node];
    const jp_hlo_instr *in = &c->instrs[n->instr];
    jp_pb shape = n->shape;
    for (uint32_t i = 0; i < r->n_index; i++) {
        int rc = tuple_element(c, shape, r->index[i], &shape);
        if (rc < 0) return rc;
        if (!rc) break;
    }
    char shape_buf[HLO_TEXT_MAX];
    jp_text text = jp_text_make(shape_buf, sizeof shape_buf);
    int rc = shape_info(c, shape, 0, &text, &b->unpadded);
    if (rc) return rc;
    b->known = 1; /* for now: found; an allocation must list it too */
    b->instruction = indexed_name(c, in->name, r);
    b->opcode = in->opcode;
    b->shape = jp_intern_str(c->t, text.buf, text.len);
    b->op_name = n->op_name ? n->op_name : c->empty;
    b->source = n->source ? n->source : c->empty, b->function = n->function ? n->function : c->empty;
    b->frame = n->frame;
    return b->instruction && b->shape ? JP_OK : JP_ERR_NOMEM;
}

/* Pass 1: the logical buffers, sorted by id (a repeated id keeps the last one read), each with its
 * defining instruction. */
static int read_buffers(ba_ctx *c, jp_pb ba, size_t n_raw) {
    raw_lbuf *raw = jp_arena_alloc(c->scratch, (n_raw ? n_raw : 1) * sizeof *raw);
    if (!raw) return JP_ERR_NOMEM;
    size_t n = 0;
    jp_pb_field f;
    for (jp_pb p = ba; !jp_pb_done(&p) && n < n_raw;) {
        int rc = jp_pb_next(&p, &f, "BufferAssignmentProto", c->err);
        if (rc) return rc;
        if (f.number != BA_BUFFERS || f.wire != JP_PB_LEN) continue;
        raw[n] = (raw_lbuf){.order = (uint32_t)n};
        if ((rc = read_lbuf(c, jp_pb_sub(&p, &f), &raw[n]))) return rc;
        n++;
    }
    qsort(raw, n, sizeof *raw, cmp_raw);
    jp_hlo_memory *mem = c->mem;
    if (!(mem->buffers = jp_arena_alloc(c->a, (n ? n : 1) * sizeof *mem->buffers))) return JP_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n && raw[i + 1].id == raw[i].id) continue; /* the later one wins */
        int rc = resolve(c, &raw[i], &mem->buffers[mem->n_buffers]);
        if (rc) return rc;
        mem->n_buffers++;
    }
    return JP_OK;
}

/* The index of buffer id, or -1. */
static int32_t buffer_index(const jp_hlo_memory *mem, int64_t id) {
    size_t lo = 0, hi = mem->n_buffers;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (mem->buffers[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < mem->n_buffers && mem->buffers[lo].id == id ? (int32_t)lo : -1;
}

/* ---- allocations and traces ----------------------------------------------------------------- */

static int read_assigned(ba_ctx *c, jp_pb as, int32_t alloc) {
    jp_pb_field f;
    int64_t id = 0, offset = 0;
    while (!jp_pb_done(&as)) {
        int rc = jp_pb_next(&as, &f, "BufferAllocationProto.Assigned", c->err);
        if (rc) return rc;
        if (f.number == AS_BUFFER && f.wire == JP_PB_VARINT) id = (int64_t)f.u;
        if (f.number == AS_OFFSET && f.wire == JP_PB_VARINT) offset = (int64_t)f.u;
    }
    int32_t b = buffer_index(c->mem, id);
    c->mem->assigned[c->mem->n_assigned++] = b;
    if (b >= 0) c->mem->buffers[b].alloc = alloc, c->mem->buffers[b].offset = offset; /* the last one wins */
    return JP_OK;
}

static int read_allocation(ba_ctx *c, jp_pb al, size_t cap_assigned) {
    static const struct {
        uint32_t field;
        unsigned flag;
    } flags[] = {{AL_THREAD_LOCAL, JP_ALLOC_THREAD_LOCAL}, {AL_TUPLE, JP_ALLOC_TUPLE}, {AL_PARAMETER, JP_ALLOC_PARAMETER},
                 {AL_CONSTANT, JP_ALLOC_CONSTANT}, {AL_LIVE_OUT, JP_ALLOC_LIVE_OUT}, {AL_ALIASED, JP_ALLOC_ALIASED}};
    jp_hlo_memory *mem = c->mem;
    jp_hlo_alloc *out = &mem->allocs[mem->n_allocs];
    *out = (jp_hlo_alloc){0, 0, 0, (uint32_t)mem->n_assigned, 0};
    jp_pb_field f;
    while (!jp_pb_done(&al)) {
        int rc = jp_pb_next(&al, &f, "BufferAllocationProto", c->err);
        if (rc) return rc;
        if (f.number == AL_ASSIGNED && f.wire == JP_PB_LEN && mem->n_assigned < cap_assigned) {
            if ((rc = read_assigned(c, jp_pb_sub(&al, &f), (int32_t)mem->n_allocs))) return rc;
            out->n++;
        }
        if (f.wire != JP_PB_VARINT) continue;
        if (f.number == AL_SIZE) out->bytes = size_of(f.u);
        if (f.number == AL_COLOR) out->color = (int64_t)f.u;
        for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
            if (f.number == flags[k].field) out->flags = f.u ? out->flags | flags[k].flag : out->flags & ~flags[k].flag;
    }
    mem->n_allocs++;
    return JP_OK;
}

static int read_event(ba_ctx *c, jp_pb ev, jp_hlo_heap_event *out) {
    jp_pb_field f;
    uint64_t kind = JP_HEAP_ALLOC; /* proto3: an absent kind is ALLOC */
    int64_t buffer = 0, share = 0;
    jp_str instruction = {"", 0}, computation = {"", 0};
    while (!jp_pb_done(&ev)) {
        int rc = jp_pb_next(&ev, &f, "HeapSimulatorTrace.Event", c->err);
        if (rc) return rc;
        if (f.number == EV_KIND && f.wire == JP_PB_VARINT) kind = f.u;
        if (f.number == EV_BUFFER && f.wire == JP_PB_VARINT) buffer = (int64_t)f.u;
        if (f.number == EV_SHARE_WITH && f.wire == JP_PB_VARINT) share = (int64_t)f.u;
        if (f.number == EV_INSTRUCTION && f.wire == JP_PB_LEN) instruction = (jp_str){(const char *)f.data, f.len};
        if (f.number == EV_COMPUTATION && f.wire == JP_PB_LEN) computation = (jp_str){(const char *)f.data, f.len};
    }
    *out = (jp_hlo_heap_event){(uint8_t)(kind > JP_HEAP_SHARE ? 255 : kind), buffer_index(c->mem, buffer),
                               kind == JP_HEAP_SHARE ? buffer_index(c->mem, share) : -1,
                               jp_intern_view(c->t, instruction), jp_intern_view(c->t, computation)};
    return out->instruction && out->computation ? JP_OK : JP_ERR_NOMEM;
}

static int read_trace(ba_ctx *c, jp_pb tr, jp_hlo_trace *out) {
    jp_pb_field f;
    size_t n = 0;
    for (jp_pb p = tr; !jp_pb_done(&p);) {
        int rc = jp_pb_next(&p, &f, "HeapSimulatorTrace", c->err);
        if (rc) return rc;
        n += f.number == TRACE_EVENTS && f.wire == JP_PB_LEN;
    }
    if (n > INT32_MAX) return jp_error_set(c->err, JP_ERR_LIMIT, jp_pb_offset(&tr), "heap trace too long");
    *out = (jp_hlo_trace){jp_arena_alloc(c->a, (n ? n : 1) * sizeof *out->events), 0};
    if (!out->events) return JP_ERR_NOMEM;
    for (jp_pb p = tr; !jp_pb_done(&p);) {
        int rc = jp_pb_next(&p, &f, "HeapSimulatorTrace", c->err);
        if (rc) return rc;
        if (f.number == TRACE_EVENTS && f.wire == JP_PB_LEN && (rc = read_event(c, jp_pb_sub(&p, &f), &out->events[out->n_events++])))
            return rc;
    }
    return JP_OK;
}

/* Counts the top-level messages and every allocation's assigned buffers. */
static int count(ba_ctx *c, jp_pb ba, size_t *n_buffers, size_t *n_allocs, size_t *n_assigned, size_t *n_traces) {
    jp_pb_field f, g;
    while (!jp_pb_done(&ba)) {
        int rc = jp_pb_next(&ba, &f, "BufferAssignmentProto", c->err);
        if (rc) return rc;
        if (f.wire != JP_PB_LEN) continue;
        *n_buffers += f.number == BA_BUFFERS;
        *n_traces += f.number == BA_TRACES;
        if (f.number != BA_ALLOCATIONS) continue;
        ++*n_allocs;
        for (jp_pb al = jp_pb_sub(&ba, &f); !jp_pb_done(&al);) {
            if ((rc = jp_pb_next(&al, &g, "BufferAllocationProto", c->err))) return rc;
            *n_assigned += g.number == AL_ASSIGNED && g.wire == JP_PB_LEN;
        }
    }
    if (*n_buffers > INT32_MAX || *n_allocs > INT32_MAX)
        return jp_error_set(c->err, JP_ERR_LIMIT, jp_pb_offset(&ba), "buffer assignment too large");
    return JP_OK;
}

/* Pass 2: allocations (each listing its buffers) and traces, their buffer ids made indices. */
static int read_allocations_and_traces(ba_ctx *c, jp_pb ba, size_t n_allocs, size_t n_assigned, size_t n_traces) {
    jp_hlo_memory *mem = c->mem;
    mem->allocs = jp_arena_alloc(c->a, (n_allocs ? n_allocs : 1) * sizeof *mem->allocs);
    mem->assigned = jp_arena_alloc(c->a, (n_assigned ? n_assigned : 1) * sizeof *mem->assigned);
    mem->traces = jp_arena_alloc(c->a, (n_traces ? n_traces : 1) * sizeof *mem->traces);
    if (!mem->allocs || !mem->assigned || !mem->traces) return JP_ERR_NOMEM;
    jp_pb_field f;
    for (jp_pb p = ba; !jp_pb_done(&p);) {
        int rc = jp_pb_next(&p, &f, "BufferAssignmentProto", c->err);
        if (rc) return rc;
        if (f.wire != JP_PB_LEN) continue;
        if (f.number == BA_ALLOCATIONS && mem->n_allocs < n_allocs) rc = read_allocation(c, jp_pb_sub(&p, &f), n_assigned);
        if (f.number == BA_TRACES && mem->n_traces < n_traces) rc = read_trace(c, jp_pb_sub(&p, &f), &mem->traces[mem->n_traces++]);
        if (rc) return rc;
    }
    for (size_t i = 0; i < mem->n_buffers; i++) mem->buffers[i].known &= mem->buffers[i].alloc >= 0;
    return JP_OK;
}

int jp_hlo_buffers_decode(jp_pb ba, const hlo_ir *ir, const jp_hlo_instr *instrs, jp_intern *t, jp_arena *a,
                          jp_arena *scratch, jp_error *err, jp_hlo_memory **out) {
    ba_ctx c = {.ir = ir, .instrs = instrs, .t = t, .a = a, .scratch = scratch, .err = err};
    size_t n_buffers = 0, n_allocs = 0, n_assigned = 0, n_traces = 0;
    *out = NULL;
    int rc = count(&c, ba, &n_buffers, &n_allocs, &n_assigned, &n_traces);
    if (rc) return rc;
    c.mem = jp_arena_alloc(a, sizeof *c.mem);
    c.ids = jp_hlo_id_slots(ir, scratch);
    c.empty = jp_intern_str(t, "", 0);
    if (!c.mem || !c.ids || !c.empty) return JP_ERR_NOMEM;
    memset(c.mem, 0, sizeof *c.mem);
    if ((rc = read_buffers(&c, ba, n_buffers)) || (rc = read_allocations_and_traces(&c, ba, n_allocs, n_assigned, n_traces)))
        return rc;
    *out = c.mem;
    return JP_OK;
}
