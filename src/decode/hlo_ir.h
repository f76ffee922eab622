/* hlo_ir.h - the per-instruction facts of one HLO module that the cost model reads: shapes,
 * operands, called computations, dot and convolution dimensions (internal to the HLO decoder in
 * decode/: hlo.c, hlo_cost.c, hlo_buffers.c). They live in a scratch arena for the time of one
 * module's decoding. */
#ifndef JP_DECODE_HLO_IR_H
#define JP_DECODE_HLO_IR_H

#include "base/text.h"
#include "decode/hlo.h"
#include "decode/pb.h"

enum { HLO_MAX_SHAPE_DEPTH = 8 }; /* nested tuples followed in a shape */

typedef struct hlo_ints {    /* a repeated int64 field, packed or not */
    int64_t *v;
    uint32_t n, cap;
} hlo_ints;

typedef struct hlo_window_dim {
    int64_t size, stride, pad_low, window_dilation, base_dilation;
} hlo_window_dim;

typedef struct hlo_conv_dims { /* xla.ConvolutionDimensionNumbers */
    int64_t in_batch, in_feature, kernel_in_feature, kernel_out_feature, out_batch, out_feature;
    hlo_ints in_spatial, kernel_spatial, out_spatial;
} hlo_conv_dims;

typedef struct hlo_node {
    int64_t id;                /* module-unique instruction id, the key of operand_ids */
    const char *opcode;        /* interned */
    uint32_t comp;             /* index of its computation in hlo_ir.comps */
    uint32_t instr;            /* index into jp_hlo_module.instrs before they are sorted */
    hlo_ints dims;             /* output dimensions (array shapes; empty for tuples and scalars) */
    uint8_t type, tuple;       /* element type (xla.PrimitiveType) of an array output; 1 for a tuple */
    uint8_t first_type;        /* element type of the first array leaf (a tuple's too) */
    double elems, bytes;       /* output elements and bytes; a tuple sums its leaves */
    double first_elems, first_bytes; /* of the first array leaf (a GPU gemm's result, not its workspace) */
    hlo_ints first_dims;       /* that leaf's dimensions (a library convolution's result) */
    jp_str target;             /* custom-call target ("__cublas$gemm"), else empty */
    jp_str backend_config;     /* custom-call backend config (JSON text on GPU), else empty */
    hlo_ints operands;         /* operand instruction ids */
    hlo_ints called;           /* called computation ids */
    hlo_ints lhs_contract;     /* dot: contracting dimensions of the left operand */
    hlo_window_dim *window;    /* convolution, reduce-window: one per window dimension */
    uint32_t n_window;
    hlo_conv_dims conv;
    int64_t feature_groups, batch_groups; /* convolution; 0 when absent (means 1) */
    jp_pb shape;               /* its ShapeProto (empty when absent), for a buffer's sub-shape */
    const char *op_name;       /* its own metadata.op_name (jp_hlo_instr's is a fusion's dot's) */
    const char *source, *function; /* its own source line and function (likewise) */
    const jp_hlo_frame *frame; /* its own innermost frame (likewise) */
    int64_t param_no;          /* a parameter's number (parameter_number; absent: 0) */
    int64_t group_size;        /* collectives: devices per replica group (first group), 0 unknown;
                                * -1: replica_groups given empty (every device of the program) */
} hlo_node;

typedef struct hlo_comp {
    int64_t id;
    int64_t root_id;           /* its root instruction's id (root_id), -1 when absent */
    uint32_t first, n;         /* its nodes: hlo_ir.nodes[first .. first + n) */
    double flops;              /* summed over its nodes, once computed (flops_done) */
    double transcendentals;
    uint8_t state;             /* 0 not computed, 1 in progress (a cycle), 2 done */
} hlo_comp;

typedef struct hlo_ir {
    hlo_node *nodes;
    size_t n_nodes;
    hlo_comp *comps;
    size_t n_comps;
    int64_t *sorted_ids;       /* node ids ascending, paired with id_index, for operand lookup */
    uint32_t *id_index;
} hlo_ir;

typedef struct hlo_id_slot { /* one node's id, for lookups by id (sorted by id, then node) */
    int64_t id;
    uint32_t node;             /* index into hlo_ir.nodes */
} hlo_id_slot;

/* ir's node ids, sorted by id (for a repeated id the later node last), in scratch; NULL when out
 * of memory. */
hlo_id_slot *jp_hlo_id_slots(const hlo_ir *ir, jp_arena *scratch);
/* The node of id in slots (the last of a repeated id), or -1. */
int64_t jp_hlo_id_lookup(const hlo_id_slot *slots, size_t n, int64_t id);

/* Calls fn for every value of a repeated int64 field f of parent, packed or a single varint; fn
 * returns 0 to go on, 1 to stop, or a negative status to fail with. JP_ERR_CORRUPT (err's offset)
 * for a packed run cut short. */
int jp_hlo_each_int(const jp_pb *parent, const jp_pb_field *f, int (*fn)(void *, int64_t), void *arg, jp_error *err);

/* The most bytes of one instruction's HLO text or one buffer's shape text, the NUL included: a
 * longer one (a concat of thousands of operands, a tuple of hundreds of arrays) is cut with "..."
 * by jp_text. */
enum { HLO_TEXT_MAX = 1024 };

/* xla.PrimitiveType: its name in HLO text ("f32", "bf16"; NULL when unknown) and its size in bits
 * (0 for tuple, token, opaque and unknown types). */
const char *jp_hlo_type_name(uint64_t type);
unsigned jp_hlo_type_bits(uint64_t type);

/* Decodes the BufferAssignmentProto `ba` of the module whose instructions are in ir and instrs (in
 * file order, ir's node.instr indexing them) into *out, allocated in a; strings interned into t,
 * scratch for the time of the call. Returns JP_OK, JP_ERR_NOMEM, or a corrupt/truncated status
 * with err's byte offset. */
int jp_hlo_buffers_decode(jp_pb ba, const hlo_ir *ir, const jp_hlo_instr *instrs, jp_intern *t, jp_arena *a,
                          jp_arena *scratch, jp_error *err, jp_hlo_memory **out);

/* Fills flops, transcendentals and bytes of every instruction in m from ir (XLA's cost-analysis
 * conventions, see docs/design.md "FLOPs and bytes"). Returns JP_ERR_NOMEM or JP_OK. */
int jp_hlo_cost(hlo_ir *ir, jp_hlo_module *m);

#endif
