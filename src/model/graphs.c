/* graphs.c - command buffers: the kernels XLA runs inside a CUDA graph all carry the graph's name
 * (hlo_op "command_buffer_1") instead of their HLO instruction's, so every op table would show one
 * op for the whole step (XProf then resolves none). Their instruction is recovered from the order
 * they ran in: a graph runs the commands of a thunk sequence, which is one computation's schedule
 * (the entry's, or a while loop body's), so one execution's kernels follow that computation's
 * scheduled instructions. Each kernel is matched to the next scheduled instruction its name fits
 * (XLA names a kernel after a fusion of the same kind; library kernels run custom calls), against
 * each computation, the one matching the most kernels kept; the match, made once per graph, names
 * every execution's kernels by their graph node. What matches nothing keeps the graph's name. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "model/build_int.h"

enum {
    LOOKAHEAD = 64,        /* scheduled instructions skipped at most before an XLA kernel's match */
    LIBRARY_LOOKAHEAD = 8  /* before a library kernel's: it fits many instructions, so a far one is
                            * more likely a wrong one than a run of instructions without kernels */
};

/* The length of a name without its trailing instance number ("loop_add_fusion.6", "gemm_fusion_dot_262"). */
static size_t stem_len(const char *s, size_t n) {
    size_t k = n;
    while (k && s[k - 1] >= '0' && s[k - 1] <= '9') k--;
    return k < n && k > 1 && (s[k - 1] == '.' || s[k - 1] == '_') ? k - 1 : n;
}

/* XLA sanitises an instruction's name into its kernel's: '.' and '-' become '_'. */
static char sanitized(char ch) { return ch == '.' || ch == '-' ? '_' : ch; }

static int stems_equal(const char *a, const char *b) {
    size_t na = stem_len(a, strlen(a)), nb = stem_len(b, strlen(b));
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (sanitized(a[i]) != sanitized(b[i])) return 0;
    return 1;
}

/* The sanitised stems of a computation's scheduled instructions, sorted: the names an XLA-generated
 * kernel can carry. Anything else is a library's kernel (cuBLAS "nvjet_...", cuDNN, NCCL). */
typedef struct stem_set {
    char *text;   /* every stem, sanitised, one after another */
    jp_str *stems;
    size_t n;
} stem_set;

static int cmp_stem(const void *a, const void *b) {
    const jp_str *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int d = memcmp(x->ptr, y->ptr, n);
    return d ? d : (x->len > y->len) - (x->len < y->len);
}

static int stem_set_make(stem_set *s, const jp_hlo_sequence *seq) {
    size_t bytes = 0;
    for (size_t i = 0; i < seq->n; i++) bytes += strlen(seq->instrs[i]->name);
    s->text = malloc(bytes + 1);
    s->stems = malloc((seq->n + 1) * sizeof *s->stems);
    s->n = 0;
    if (!s->text || !s->stems) return JP_ERR_NOMEM;
    char *p = s->text;
    for (size_t i = 0; i < seq->n; i++) {
        const char *name = seq->instrs[i]->name;
        size_t len = stem_len(name, strlen(name));
        for (size_t k = 0; k < len; k++) p[k] = sanitized(name[k]);
        s->stems[s->n++] = (jp_str){p, len};
        p += len;
    }
    qsort(s->stems, s->n, sizeof *s->stems, cmp_stem);
    return JP_OK;
}

static void stem_set_free(stem_set *s) {
    free(s->text);
    free(s->stems);
}

static int xla_named(const stem_set *s, const char *kernel) {
    jp_str key = {kernel, stem_len(kernel, strlen(kernel))};
    return bsearch(&key, s->stems, s->n, sizeof key, cmp_stem) != NULL; /* kernel names hold no '.' or '-' */
}

/* An XLA kernel fits the instructions of its stem; a library kernel a custom call, or a fusion a
 * library may run (a GEMM fusion the autotuner gave to cuBLAS, a cuDNN fusion), never a loop,
 * input or output fusion, which XLA always generates itself; the driver's copy kernels of a graph's
 * memcpy node ("memcpy128", "memcpy32_post") a copy, an asynchronous start (a dynamic slice fusion
 * XLA runs as a copy) or a dynamic slice. */
static int fits(const char *kernel, int library, const jp_hlo_instr *in) {
    if (!library) return stems_equal(kernel, in->name);
    if (strncmp(kernel, "memcpy", 6) == 0)
        return strcmp(in->opcode, "copy") == 0 || strcmp(in->opcode, "async-start") == 0 ||
               strstr(in->name, "dynamic") != NULL;
    if (strcmp(in->opcode, "custom-call") == 0) return 1;
    return strcmp(in->opcode, "fusion") == 0 && in->category &&
           (strcmp(in->category, "matmul fusion") == 0 || strcmp(in->category, "convolution fusion") == 0 ||
            strcmp(in->category, "custom fusion") == 0);
}

long jp_graph_align(const char *const *kernels, const uint8_t *is_memset, size_t n, const jp_hlo_sequence *seq,
                    int32_t *out) {
    stem_set stems;
    if (stem_set_make(&stems, seq)) {
        stem_set_free(&stems);
        return -1;
    }
    size_t next = 0; /* the first scheduled instruction not yet matched past */
    long matched = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = -1;
        if (is_memset[i]) continue;
        int library = !xla_named(&stems, kernels[i]);
        /* the first XLA kernel's match may lie anywhere (a second graph of the computation starts
         * mid-schedule); a library kernel's only nearby */
        size_t reach = library ? LIBRARY_LOOKAHEAD : LOOKAHEAD;
        size_t end = (matched || library) && seq->n - next > reach ? next + reach : seq->n;
        for (size_t t = next; t < end; t++)
            if (fits(kernels[i], library, seq->instrs[t])) {
                out[i] = (int32_t)t, next = t + 1, matched++;
                break;
            }
    }
    for (size_t i = n; i-- > 0;) /* a library's memset runs just before its call's kernel */
        if (is_memset[i]) out[i] = i + 1 < n && !is_memset[i + 1] ? out[i + 1] : -1;
    stem_set_free(&stems);
    return matched;
}

/* ---- the records read, grouped by graph ---------------------------------------------------------- */

static int cmp_graph_kernel(const void *a, const void *b) {
    const jp_graph_kernel *x = a, *y = b;
    if (x->op != y->op) return x->op < y->op ? -1 : 1;
    if (x->graph != y->graph) return x->graph < y->graph ? -1 : 1;
    if (x->correlation != y->correlation) return x->correlation < y->correlation ? -1 : 1;
    if (x->start_ps != y->start_ps) return x->start_ps < y->start_ps ? -1 : 1;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

typedef struct node_instr {
    uint64_t node;
    const jp_hlo_instr *in; /* the instruction it ran, NULL: unmatched */
} node_instr;

static int cmp_node(const void *a, const void *b) {
    uint64_t x = ((const node_instr *)a)->node, y = ((const node_instr *)b)->node;
    return (x > y) - (x < y);
}

/* The launch (correlation id) of [a, b) with the most kernels: the execution seen whole. */
static void longest_run(const jp_graph_kernel *g, size_t a, size_t b, size_t *ra, size_t *rb) {
    *ra = *rb = a;
    for (size_t i = a; i < b;) {
        size_t j = i;
        while (j < b && g[j].correlation == g[i].correlation) j++;
        if (j - i > *rb - *ra) *ra = i, *rb = j;
        i = j;
    }
}

/* Moves one record's op event from the command buffer to the op it ran (or leaves it there), and
 * does what reading does for any op event: counts its kernel and adds its activity span. */
static int settle(jp_build_ctx *c, const jp_graph_kernel *k, const jp_hlo_instr *in) {
    jp_model *m = c->m;
    jp_op_ev *e = &JP_VEC_AT(&m->ops, jp_op_ev, k->ev);
    if (in) {
        const jp_opdef graph_op = JP_VEC_AT(&m->opdefs, jp_opdef, k->op); /* a copy: op_for may grow opdefs */
        uint32_t op = jp_build_op_for(c, graph_op.device, graph_op.module, in->name, k->program, NULL);
        if (op == UINT32_MAX) return jp_build_nomem(c->err);
        e->op = op;
        if (k->kernel_sum != UINT32_MAX) {
            jp_kernel_sum *sum = &JP_VEC_AT(&m->kernels, jp_kernel_sum, k->kernel_sum);
            if (sum->op == graph_op.name) sum->op = in->name;
            if (m->part && jp_model_note_rename(m, k->kernel_sum, graph_op.name, in->name)) return jp_build_nomem(c->err);
        }
    }
    jp_build_count_kernel(&JP_VEC_AT(&m->opdefs, jp_opdef, e->op), k->kernel);
    return jp_build_add_op_span(m, e) ? jp_build_nomem(c->err) : JP_OK;
}

/* Which instruction each kernel of one execution ran: the computation whose schedule matches the
 * most of them (ties: the first, the entry's). nodes[i] gets kernel i's graph node. */
static int match_execution(const jp_graph_kernel *g, size_t n, const jp_hlo_module *hm, node_instr *nodes) {
    const char **kernels = malloc(n * sizeof *kernels);
    uint8_t *is_memset = malloc(n);
    int32_t *at = malloc(n * sizeof *at), *best_at = malloc(n * sizeof *best_at);
    int rc = kernels && is_memset && at && best_at ? JP_OK : JP_ERR_NOMEM;
    const jp_hlo_sequence *best = NULL;
    long most = 0;
    for (size_t i = 0; i < n && rc == JP_OK; i++) kernels[i] = g[i].kernel, is_memset[i] = g[i].memset;
    for (size_t q = 0; q < hm->n_sequences && rc == JP_OK; q++) {
        if (hm->sequences[q].n <= (size_t)most) continue; /* each instruction matches one kernel at most */
        long got = jp_graph_align(kernels, is_memset, n, &hm->sequences[q], at);
        if (got < 0) rc = JP_ERR_NOMEM;
        else if (got > most) most = got, best = &hm->sequences[q], memcpy(best_at, at, n * sizeof *at);
    }
    for (size_t i = 0; i < n && rc == JP_OK; i++)
        nodes[i] = (node_instr){g[i].node, best && best_at[i] >= 0 ? best->instrs[best_at[i]] : NULL};
    free(kernels);
    free(is_memset);
    free(at);
    free(best_at);
    return rc;
}

/* Resolves the records [a, b) of one graph of one command buffer op. */
static int resolve_graph(jp_build_ctx *c, jp_graph_kernel *g, size_t a, size_t b) {
    size_t ra, rb;
    longest_run(g, a, b, &ra, &rb);
    size_t n = rb - ra;
    node_instr *nodes = malloc(n * sizeof *nodes);
    int rc = !nodes || match_execution(g + ra, n, g[a].module, nodes) ? jp_build_nomem(c->err) : JP_OK;
    if (rc == JP_OK) qsort(nodes, n, sizeof *nodes, cmp_node);
    for (size_t i = a; i < b && rc == JP_OK; i++) {
        node_instr key = {g[i].node, NULL}, *hit = bsearch(&key, nodes, n, sizeof key, cmp_node);
        rc = settle(c, &g[i], hit ? hit->in : NULL);
    }
    free(nodes);
    return rc;
}

int jp_build_resolve_graphs(jp_build_ctx *c) {
    jp_graph_kernel *g = c->graph_kernels.data;
    size_t n = c->graph_kernels.n;
    if (n > 1) qsort(g, n, sizeof *g, cmp_graph_kernel);
    for (size_t a = 0; a < n;) {
        size_t b = a;
        while (b < n && g[b].op == g[a].op && g[b].graph == g[a].graph) b++;
        int rc = resolve_graph(c, g, a, b);
        if (rc) return rc;
        a = b;
    }
    c->graph_kernels.n = 0;
    return JP_OK;
}
