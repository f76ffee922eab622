/* hlo.h - HLO modules decoded from a serialized xla.HloProto (the `Hlo Proto` stats of
 * /host:metadata): per-instruction category, op_name, scope, source line and Python stack, modelled
 * FLOPs and bytes, and XLA's buffer assignment (internal; read by the model and the viewer). */
#ifndef JP_DECODE_HLO_H
#define JP_DECODE_HLO_H

#include <regex.h>

#include "base/intern.h"
#include "base/text.h"
#include "jaxprof/jaxprof.h"

/* ---- HLO metadata (from the `Hlo Proto` stats of /host:metadata) ---------------------------- */

/* One Python frame of the call stack JAX recorded for an op (the module's stack_frame_index). */
typedef struct jp_hlo_frame {
    const char *file;              /* interned path as the tracer saw it */
    const char *function;          /* interned function name, "" when unknown */
    uint32_t line;
    uint8_t library;               /* its file matches the library-frame rule (jp_hlo_library_re) */
    const struct jp_hlo_frame *parent; /* the caller, NULL for the outermost frame */
} jp_hlo_frame;

enum { JP_HLO_MAX_STACK = 64 }; /* frames walked per stack: the index is input, its chains may loop */

/* One source line's part of a fusion: the fused instructions made by that line, weighed by their
 * modelled cost (hlo_cost.c: FLOPs and transcendentals, or bytes when the fusion does no FLOPs).
 * An estimate of where the fusion's time goes, for jaxprof lines and flame (docs/design.md). */
typedef struct jp_hlo_share {
    const char *source;        /* "file:line", as jp_hlo_instr.source */
    const char *function;      /* of that line, "" when unknown */
    const jp_hlo_frame *frame; /* innermost frame of the first fused instruction of that line */
    double weight;             /* its fraction of the fusion's modelled cost; a fusion's shares sum to 1 */
} jp_hlo_share;

typedef struct jp_hlo_instr {
    const char *name;     /* interned instruction name, the key executed events carry */
    const char *opcode;   /* "fusion", "dot", ... */
    const char *category; /* static category string (see hlo.c) */
    const char *op_name;  /* metadata.op_name or "" */
    const char *source;   /* "file:line" of its innermost user frame (or metadata.source_file), or "" */
    const char *function; /* the function of that frame, "" when unknown */
    const jp_hlo_frame *frame; /* innermost frame of its Python stack, NULL when not recorded */
    double flops;         /* per execution, by XLA's cost-analysis conventions (hlo_cost.c) */
    double transcendentals; /* exp, log, tanh, ... elements, which XLA counts apart from flops */
    double bytes;         /* operands + output at its boundary (a fusion's parameters and root) */
    const char *text;     /* "%dot.3 = f32[64,128] dot(f32[64,64] %p0, f32[64,128] %p1)": shapes
                           * without layouts, no attributes; NULL unless decoded with want_text */
    const jp_hlo_share *shares; /* a fusion whose fused instructions come from two or more source
                                 * lines: each line's share, the largest first; else NULL */
    uint32_t n_shares;
    const char *dtype;    /* the element type it computes in ("bf16", "f32"; static): a dot's,
                           * convolution's or custom call's left operand's, a fusion's first fused
                           * dot's or convolution's left operand's, else its output's (a tuple's
                           * first array); "" when unknown */
    /* collectives (docs/design.md "Communication"): the message size S by the nccl-tests
     * convention (all-reduce, reduce-scatter, all-to-all, permute: the operand bytes; all-gather:
     * the gathered buffer, operand bytes x n), the replica-group size n (0 when unknown), and for
     * an asynchronous "-done" half the name of its "-start" (interned; NULL otherwise). A done half
     * repeats its start's size and n. */
    double coll_bytes;
    uint32_t group_size;
    const char *async_start;
    const char *const *users; /* the instructions that take its result as an operand (interned) */
    uint32_t n_users;
} jp_hlo_instr;

/* ---- XLA's buffer assignment (HloProto field 3, decoded by hlo_buffers.c) ---- */

enum { /* jp_hlo_alloc.flags: BufferAllocationProto's booleans */
    JP_ALLOC_THREAD_LOCAL = 1, JP_ALLOC_TUPLE = 2, JP_ALLOC_PARAMETER = 4, JP_ALLOC_CONSTANT = 8,
    JP_ALLOC_LIVE_OUT = 16, JP_ALLOC_ALIASED = 32 /* a parameter aliased with an output (donated) */
};

enum { JP_HEAP_ALLOC = 0, JP_HEAP_FREE = 1, JP_HEAP_SHARE = 2 }; /* HeapSimulatorTrace.Event.kind */

typedef struct jp_hlo_lbuf {   /* one logical buffer (LogicalBufferProto) */
    int64_t id;                /* XLA's id, unique in jp_hlo_memory.buffers */
    int64_t bytes;             /* as allocated (padded); a negative size reads as 0 */
    int64_t unpadded;          /* the dense size of its shape (a tuple: 8 bytes per element) */
    int64_t color;             /* memory space: 0 is device memory */
    int64_t offset;            /* where its allocation places it */
    int32_t alloc;             /* its allocation (index into jp_hlo_memory.allocs), -1 when none lists it */
    uint8_t known;             /* listed by an allocation and its defining instruction found: the
                                * only buffers that take part, as in XProf's memory viewer */
    const char *instruction;   /* the defining instruction, "{i,j}" added for a tuple element; interned */
    const char *opcode;        /* its opcode, "" when not found */
    const char *shape;         /* "f32[4096,4096]" at the shape index, without layout; "" when not found */
    const char *op_name;       /* the instruction's own metadata.op_name (not a fusion's dot's) */
    const char *source;        /* as jp_hlo_instr.source */
    const char *function;      /* as jp_hlo_instr.function */
    const jp_hlo_frame *frame; /* as jp_hlo_instr.frame */
} jp_hlo_lbuf;

typedef struct jp_hlo_alloc {  /* one BufferAllocationProto */
    int64_t bytes;             /* its size; a negative size reads as 0 */
    int64_t color;             /* memory space */
    unsigned flags;            /* JP_ALLOC_* */
    uint32_t first, n;         /* its assigned buffers: jp_hlo_memory.assigned[first .. first + n) */
} jp_hlo_alloc;

typedef struct jp_hlo_heap_event { /* one HeapSimulatorTrace.Event, in program order */
    uint8_t kind;              /* JP_HEAP_*; other kinds are kept and ignored */
    int32_t buffer;            /* index into jp_hlo_memory.buffers, -1 for an id not there */
    int32_t share_with;        /* SHARE_WITH: the canonical buffer's index, else -1 */
    const char *instruction;   /* the instruction being processed, interned ("" when absent) */
    const char *computation;   /* its computation, interned ("" when absent) */
} jp_hlo_heap_event;

typedef struct jp_hlo_trace {  /* one heap simulator trace */
    jp_hlo_heap_event *events;
    uint32_t n_events;
} jp_hlo_trace;

typedef struct jp_hlo_memory { /* the BufferAssignmentProto of one module */
    jp_hlo_lbuf *buffers;      /* sorted by id; for a repeated id the last one read */
    size_t n_buffers;
    jp_hlo_alloc *allocs;      /* in file order */
    size_t n_allocs;
    int32_t *assigned;         /* buffer index per Assigned entry of every allocation, -1 unknown */
    size_t n_assigned;
    jp_hlo_trace *traces;      /* in file order */
    size_t n_traces;
} jp_hlo_memory;

typedef struct jp_hlo_sequence { /* one computation's schedule */
    const jp_hlo_instr **instrs; /* its instructions that run on the device (no parameter, tuple,
                                  * bitcast, ...), in the order the schedule runs them */
    size_t n;
    int entry;                   /* the entry computation's (the module's first sequence) */
} jp_hlo_sequence;

typedef struct jp_hlo_module {
    const char *name;      /* interned module name ("jit_train_step") */
    const char *key;       /* the metadata entry's name, XProf's key: "jit_train_step(6)"; NULL
                            * outside the model (set by metadata.c) */
    uint32_t host;         /* index into jp_model.hosts of the host whose metadata held it */
    int64_t program_id;    /* the metadata entry's program_id, -1 when absent */
    jp_hlo_instr *instrs;  /* sorted by name pointer for bsearch */
    size_t n_instrs;
    jp_hlo_memory *memory; /* its buffer assignment, NULL when the HloProto has none */
    jp_hlo_sequence *sequences; /* HloModuleProto.schedule: each computation's with device work (a
                                 * while loop's body has its own), the entry's first; none when the
                                 * HloProto has no schedule */
    size_t n_sequences;
} jp_hlo_module;

/* The default library-frame rule: files of installed packages, the standard library, and JAX,
 * Flax, Optax and friends when run from a source tree (POSIX extended regex on the path). */
#define JP_HLO_LIBRARY_FRAMES \
    "^<|/(site|dist)-packages/|/lib/python[0-9.]*/|/(jax|jaxlib|flax|optax|orbax|chex|haiku|equinox)/"

/* Decodes a serialized xla.HloProto lying inside the input that starts at origin (error offsets
 * are relative to it); strings are interned into t. library (may be NULL: no frame is library
 * code) marks the frames that an op's source line skips to reach the user's own code. */
int jp_hlo_decode(jp_bytes proto, const uint8_t *origin, const regex_t *library, jp_intern *t, jp_arena *a,
                  jp_hlo_module *out, jp_error *err);
/* The same, also writing each instruction's text (jp_hlo_instr.text) into a: for the viewer's
 * details of one op, not for the analysis, which never shows it. */
int jp_hlo_decode_text(jp_bytes proto, const uint8_t *origin, const regex_t *library, jp_intern *t, jp_arena *a,
                       jp_hlo_module *out, jp_error *err);
/* The instruction named `name` (interned pointer), or NULL. */
const jp_hlo_instr *jp_hlo_find(const jp_hlo_module *m, const char *name);
/* Best-effort category from an op name without HLO ("all-reduce.3", "loop_fusion"). */
const char *jp_hlo_category_of_name(const char *name);
/* 1 for collective categories. */
int jp_hlo_is_collective(const char *category);
/* User scope path of an op_name: "jit(f)/transpose(jvp(loss))/dense/dot_general" -> "f/loss/dense".
 * Returns interned text ("" when op_name has no scope; any length), NULL when out of memory. */
const char *jp_hlo_scope_of(jp_intern *t, const char *op_name);

#endif
