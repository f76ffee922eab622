/* hlo_cost.c - FLOPs, transcendentals and bytes accessed of every HLO instruction, by the
 * conventions of XLA's HloCostAnalysis (what jax's compiled.cost_analysis() reports). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decode/hlo_ir.h"

enum { MAX_CALL_DEPTH = 32 }; /* nested fusions and reducers followed; deeper ones cost 0 */

typedef struct cost {
    double flops, transcendentals;
} cost;

static const char *const TRANSCENDENTAL[] = {
    "exponential", "exponential-minus-one", "log", "log-plus-one", "logistic", "power", "sqrt", "cbrt",
    "rsqrt", "tanh", "sine", "cosine", "tan", "atan2", "erf",
};
/* Elementwise opcodes that cost one flop per output element. */
static const char *const ELEMENTWISE_FLOP[] = {
    "add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "abs", "negate", "floor",
    "ceil", "round-nearest-afz", "round-nearest-even", "sign", "compare", "select", "clamp", "convert", "and",
    "or", "xor", "not", "shift-left", "shift-right-logical", "shift-right-arithmetic", "is-finite", "real",
    "imag", "complex", "popcnt", "count-leading-zeros", "reduce-precision", "stochastic-convert",
};
/* No data is read or written: names, views and constants (XLA counts them as free). */
static const char *const FREE[] = {
    "parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all", "add-dependency",
    "partition-id", "replica-id", "iota",
};

static int in_list(const char *op, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(op, list[i]) == 0) return 1;
    return 0;
}
#define IN(op, list) in_list(op, list, sizeof list / sizeof list[0])

/* ---- lookups --------------------------------------------------------------------------------- */

static int cmp_id(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Node ids sorted (id, index) pairs for bsearch. */
static int index_ids(hlo_ir *ir) {
    int64_t *pairs = malloc((ir->n_nodes ? ir->n_nodes : 1) * 2 * sizeof *pairs);
    if (!pairs) return JP_ERR_NOMEM;
    for (size_t i = 0; i < ir->n_nodes; i++) pairs[2 * i] = ir->nodes[i].id, pairs[2 * i + 1] = (int64_t)i;
    qsort(pairs, ir->n_nodes, 2 * sizeof *pairs, cmp_id);
    ir->sorted_ids = pairs;
    return JP_OK;
}

static const hlo_node *node_by_id(const hlo_ir *ir, int64_t id) {
    const int64_t *hit = bsearch(&id, ir->sorted_ids, ir->n_nodes, 2 * sizeof *hit, cmp_id);
    return hit ? &ir->nodes[hit[1]] : NULL;
}

static hlo_comp *comp_by_id(hlo_ir *ir, int64_t id) {
    for (size_t i = 0; i < ir->n_comps; i++)
        if (ir->comps[i].id == id) return &ir->comps[i];
    return NULL;
}

static double operand_elems(const hlo_ir *ir, const hlo_node *n, uint32_t k) {
    const hlo_node *o = k < n->operands.n ? node_by_id(ir, n->operands.v[k]) : NULL;
    return o ? o->elems : 0;
}

static double operand_bytes(const hlo_ir *ir, const hlo_node *n, uint32_t k) {
    const hlo_node *o = k < n->operands.n ? node_by_id(ir, n->operands.v[k]) : NULL;
    return o ? o->bytes : 0;
}

/* Size of dimension d of operand k, 0 when unknown. */
static double operand_dim(const hlo_ir *ir, const hlo_node *n, uint32_t k, int64_t d) {
    const hlo_node *o = k < n->operands.n ? node_by_id(ir, n->operands.v[k]) : NULL;
    return o && d >= 0 && d < (int64_t)o->dims.n ? (double)o->dims.v[d] : 0;
}

static double dim_in(const hlo_ints *dims, int64_t d) {
    return d >= 0 && d < (int64_t)dims->n ? (double)dims->v[d] : 0;
}

/* ---- flops ----------------------------------------------------------------------------------- */

static cost comp_cost(hlo_ir *ir, int64_t comp_id, int depth);

/* The flops of one call of the n-th called computation (a reducer, a fused computation). */
static cost called_cost(hlo_ir *ir, const hlo_node *n, uint32_t k, int depth) {
    return k < n->called.n ? comp_cost(ir, n->called.v[k], depth + 1) : (cost){0, 0};
}

/* dot: a multiply and an add per output element and contracted position (batch dimensions are in
 * the output, so they count through its elements). */
static double dot_flops(const hlo_ir *ir, const hlo_node *n) {
    double contracted = 1;
    for (uint32_t i = 0; i < n->lhs_contract.n; i++) contracted *= operand_dim(ir, n, 0, n->lhs_contract.v[i]);
    return 2 * n->elems * contracted;
}

/* How many (output, kernel) position pairs of one spatial dimension read an input element inside
 * the input, not padding: the multiply-adds actually done along it. */
static double valid_positions(const hlo_window_dim *w, double in_size, double kernel_size, double out_size) {
    if (w->stride <= 0 || w->base_dilation <= 0 || w->window_dilation <= 0) return 0;
    if (kernel_size * out_size > 1e6) /* too large to walk: every pair, an upper bound */
        return kernel_size * out_size;
    double valid = 0;
    for (int64_t k = 0; k < (int64_t)kernel_size; k++)
        for (int64_t o = 0; o < (int64_t)out_size; o++) {
            int64_t undilated = o * w->stride - w->pad_low + k * w->window_dilation;
            if (undilated % w->base_dilation) continue;
            int64_t in = undilated / w->base_dilation;
            valid += in >= 0 && in < (int64_t)in_size;
        }
    return valid;
}

/* convolution: two flops per multiply-add, over the input features of one group, the output
 * features, the batch and the valid positions of every spatial dimension. `out` is the result's
 * dimensions (a library convolution's first tuple element). */
static double conv_flops(const hlo_ir *ir, const hlo_node *n, const hlo_ints *out) {
    const hlo_conv_dims *d = &n->conv;
    double groups = n->feature_groups > 0 ? (double)n->feature_groups : 1;
    double batch_groups = n->batch_groups > 0 ? (double)n->batch_groups : 1;
    double in_features = operand_dim(ir, n, 0, d->in_feature), out_features = dim_in(out, d->out_feature);
    double batch = dim_in(out, d->out_batch);
    double fma = in_features / groups * out_features * batch;
    if (batch_groups > 1) fma = in_features * out_features / batch_groups * batch;
    for (uint32_t i = 0; i < d->out_spatial.n && i < n->n_window; i++) {
        double in = i < d->in_spatial.n ? operand_dim(ir, n, 0, d->in_spatial.v[i]) : 0;
        double kernel = i < d->kernel_spatial.n ? operand_dim(ir, n, 1, d->kernel_spatial.v[i]) : 0;
        fma *= valid_positions(&n->window[i], in, kernel, dim_in(out, d->out_spatial.v[i]));
    }
    return 2 * fma;
}

static int contains(jp_str s, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= s.len; i++)
        if (memcmp(s.ptr + i, needle, k) == 0) return 1;
    return 0;
}

/* A library GEMM (cuBLAS, hipBLASLt) that XLA:GPU made of a dot: its dimension numbers are in
 * the backend config's JSON, "lhs_contracting_dimensions":["1"], and its result is the first
 * element of the output tuple (the second is the library's workspace). */
static int is_gemm(const hlo_node *n) {
    return strcmp(n->opcode, "custom-call") == 0 && (contains(n->target, "gemm") || contains(n->target, "matmul"));
}

/* A library convolution (cuDNN, or MIOpen on ROCm, which XLA names the same): the custom-call
 * carries the convolution's window and dimension numbers, and its result is the first element of
 * the output tuple (the second is the library's scratch space). Forward, backward-input and
 * backward-filter calls all describe a convolution of their operands, so one rule counts them. */
static int is_library_conv(const hlo_node *n) {
    return strcmp(n->opcode, "custom-call") == 0 && contains(n->target, "$conv") && n->n_window > 0;
}

/* A library call whose output tuple ends in the library's workspace. */
static int is_library_call(const hlo_node *n) { return is_gemm(n) || is_library_conv(n); }

static double gemm_flops(const hlo_ir *ir, const hlo_node *n) {
    static const char key[] = "\"lhs_contracting_dimensions\":[";
    const char *p = n->backend_config.ptr, *end = p + n->backend_config.len;
    for (; p && p + sizeof key - 1 <= end; p++)
        if (memcmp(p, key, sizeof key - 1) == 0) break;
    if (!p || p + sizeof key - 1 > end) return 0;
    double contracted = 1;
    for (p += sizeof key - 1; p < end && *p != ']'; p++) {
        if (*p < '0' || *p > '9') continue;
        int64_t d = 0;
        for (; p < end && *p >= '0' && *p <= '9' && d < 64; p++) d = d * 10 + (*p - '0');
        contracted *= operand_dim(ir, n, 0, d);
        p--;
    }
    return 2 * n->first_elems * contracted;
}

static cost node_cost(hlo_ir *ir, const hlo_node *n, int depth) {
    const char *op = n->opcode;
    cost c = {0, 0};
    if (IN(op, ELEMENTWISE_FLOP)) c.flops = n->elems;
    else if (IN(op, TRANSCENDENTAL)) c.transcendentals = n->elems;
    else if (strcmp(op, "dot") == 0) c.flops = dot_flops(ir, n);
    else if (strcmp(op, "convolution") == 0) c.flops = conv_flops(ir, n, &n->dims);
    else if (is_gemm(n)) c.flops = gemm_flops(ir, n);
    else if (is_library_conv(n)) c.flops = conv_flops(ir, n, &n->first_dims);
    else if (strcmp(op, "fusion") == 0) c = called_cost(ir, n, 0, depth);
    else if (strcmp(op, "sort") == 0) {
        double e = operand_elems(ir, n, 0);
        c.flops = e > 1 ? e * ceil(log2(e)) : 0;
    } else if (strcmp(op, "scatter") == 0) {
        cost r = called_cost(ir, n, 0, depth); /* once per update element */
        double updates = operand_elems(ir, n, n->operands.n ? n->operands.n - 1 : 0);
        c = (cost){updates * r.flops, updates * r.transcendentals};
    } else if (strncmp(op, "all-reduce", 10) == 0 && strcmp(op, "all-reduce-done") != 0) c.flops = n->elems;
    else if (strcmp(op, "rng") == 0 || strcmp(op, "rng-bit-generator") == 0) c.transcendentals = n->elems;
    else if (strcmp(op, "reduce") == 0 || strcmp(op, "reduce-window") == 0 || strcmp(op, "map") == 0) {
        /* the reducer runs once per element folded in: inputs minus outputs (a variadic reduce's
         * output is a tuple of one array per input, so its elements are divided among them) */
        cost r = called_cost(ir, n, 0, depth);
        double inputs = n->operands.n > 1 ? (double)n->operands.n / 2 : 1, calls;
        if (strcmp(op, "map") == 0) calls = n->elems;
        else if (strcmp(op, "reduce") == 0) calls = operand_elems(ir, n, 0) - n->elems / inputs;
        else {
            double window = 1;
            for (uint32_t i = 0; i < n->n_window; i++) window *= (double)n->window[i].size;
            calls = n->elems / inputs * (window - 1);
        }
        c.flops = calls * r.flops;
        c.transcendentals = calls * r.transcendentals;
    }
    return c;
}

/* Sums a computation's instructions once (memoised); a cycle or a missing id costs 0. */
static cost comp_cost(hlo_ir *ir, int64_t comp_id, int depth) {
    hlo_comp *comp = comp_by_id(ir, comp_id);
    if (!comp || comp->state == 1 || depth > MAX_CALL_DEPTH) return (cost){0, 0};
    if (comp->state == 0) {
        comp->state = 1;
        for (uint32_t i = comp->first; i < comp->first + comp->n; i++) {
            cost c = node_cost(ir, &ir->nodes[i], depth);
            comp->flops += c.flops;
            comp->transcendentals += c.transcendentals;
        }
        comp->state = 2;
    }
    return (cost){comp->flops, comp->transcendentals};
}

/* ---- bytes ----------------------------------------------------------------------------------- */

/* ---- a fusion's bytes: what it reads of each operand, and writes ------------------------------
 * XLA's HloCostAnalysis (FusionParameterReadBytes, FusionProcessOutputBytesAccessed): a fused
 * parameter is read by what its users inside the fusion take of it. A slice, or a dynamic slice of
 * it, reads the part sliced; a dynamic-update-slice updating it in place reads none of it (the
 * buffer is the output, aliased); a broadcast or reshape reads it whole, each; other users share
 * one whole read. An output that a dynamic-update-slice makes in place writes only the update. */

static const hlo_comp *comp_of(const hlo_ir *ir, int64_t id) {
    for (size_t i = 0; i < ir->n_comps; i++)
        if (ir->comps[i].id == id) return &ir->comps[i];
    return NULL;
}

static double param_read_bytes(const hlo_ir *ir, const hlo_comp *fc, const hlo_node *p) {
    double bytes = 0;
    int shared = 0; /* a whole read that other users can share has been counted */
    for (uint32_t i = fc->first; i < fc->first + fc->n && i < ir->n_nodes; i++) {
        const hlo_node *u = &ir->nodes[i];
        for (uint32_t k = 0; k < u->operands.n; k++) {
            if (u->operands.v[k] != p->id) continue;
            const char *op = u->opcode;
            if (strcmp(op, "slice") == 0 || (strcmp(op, "dynamic-slice") == 0 && k == 0)) bytes += u->bytes;
            else if (strcmp(op, "dynamic-update-slice") == 0 && k == 0) continue; /* aliased to the output */
            else if (strcmp(op, "broadcast") == 0 || strcmp(op, "reshape") == 0) bytes += p->bytes;
            else if (!shared) shared = 1, bytes += p->bytes;
        }
    }
    return bytes;
}

/* The bytes one output (the root, or one operand of a tuple root) writes. */
static double output_bytes(const hlo_ir *ir, const hlo_node *root) {
    return strcmp(root->opcode, "dynamic-update-slice") == 0 ? operand_bytes(ir, root, 1) : root->bytes;
}

static double fusion_bytes(const hlo_ir *ir, const hlo_node *n, const hlo_comp *fc) {
    const hlo_node *root = fc->root_id >= 0 ? node_by_id(ir, fc->root_id) : NULL;
    double bytes = 0;
    if (!root) bytes = n->bytes;
    else if (strcmp(root->opcode, "tuple") != 0) bytes = output_bytes(ir, root);
    else
        for (uint32_t k = 0; k < root->operands.n; k++) {
            const hlo_node *o = node_by_id(ir, root->operands.v[k]);
            if (o) bytes += output_bytes(ir, o);
        }
    for (uint32_t i = fc->first; i < fc->first + fc->n && i < ir->n_nodes; i++) {
        const hlo_node *p = &ir->nodes[i];
        if (strcmp(p->opcode, "parameter") == 0 && p->param_no >= 0 && p->param_no < (int64_t)n->operands.n)
            bytes += param_read_bytes(ir, fc, p);
    }
    return bytes;
}

/* Operands read plus the output written, at the instruction's boundary: a fusion's intermediate
 * values stay in registers or cache and are not counted. Control flow (while, conditional, call)
 * counts nothing here: the instructions it runs are ops of their own in a profile. */
static double node_bytes(const hlo_ir *ir, const hlo_node *n) {
    const char *op = n->opcode;
    if (IN(op, FREE) || strcmp(op, "while") == 0 || strcmp(op, "conditional") == 0 || strcmp(op, "call") == 0)
        return 0;
    /* an asynchronous wrapper's shape holds its operands and its result together (a dynamic slice
     * started asynchronously: the whole stacked array of a scan): what it moves is its wrapped
     * computation's, which is not decoded here, so it counts none rather than all of that */
    if (strcmp(op, "async-start") == 0 || strcmp(op, "async-update") == 0 || strcmp(op, "async-done") == 0) return 0;
    /* XLA's own rules for ops that touch part of an operand: read and write the part moved, plus
     * the indices */
    double bytes = is_library_call(n) ? n->first_bytes : n->bytes;
    const hlo_comp *fc = strcmp(op, "fusion") == 0 && n->called.n ? comp_of(ir, n->called.v[0]) : NULL;
    if (fc && !is_library_call(n)) return fusion_bytes(ir, n, fc);
    if (strcmp(op, "slice") == 0) return 2 * n->bytes;
    if (strcmp(op, "dynamic-slice") == 0 || strcmp(op, "gather") == 0) return 2 * n->bytes + operand_bytes(ir, n, 1);
    if (strcmp(op, "dynamic-update-slice") == 0) return 2 * operand_bytes(ir, n, 1) + operand_bytes(ir, n, 2);
    for (uint32_t k = 0; k < n->operands.n; k++) {
        const hlo_node *o = node_by_id(ir, n->operands.v[k]);
        if (o) bytes += o->bytes;
    }
    return bytes;
}

int jp_hlo_cost(hlo_ir *ir, jp_hlo_module *m) {
    if (index_ids(ir)) return JP_ERR_NOMEM;
    for (size_t i = 0; i < ir->n_nodes; i++) {
        const hlo_node *n = &ir->nodes[i];
        jp_hlo_instr *in = &m->instrs[n->instr];
        /* control flow runs other computations whose instructions are timed as ops themselves */
        int control = strcmp(n->opcode, "while") == 0 || strcmp(n->opcode, "conditional") == 0 ||
                      strcmp(n->opcode, "call") == 0;
        cost c = control ? (cost){0, 0} : node_cost(ir, n, 0);
        in->flops = c.flops;
        in->transcendentals = c.transcendentals;
        in->bytes = node_bytes(ir, n);
    }
    free(ir->sorted_ids);
    ir->sorted_ids = NULL;
    return JP_OK;
}
