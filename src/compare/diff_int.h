/* diff_int.h - what the four parts of a diff share (internal to compare/): the entry one op or scope
 * of one run is while the runs are aligned and paired, the orders entries are sorted in, and the
 * calls from the orchestration (diff.c) into the renumbering alignment (diff_align.c) and the
 * pairing passes (diff_pair.c); the gate (diff_gate.c) reads only the finished jp_diff. */
#ifndef JP_COMPARE_DIFF_INT_H
#define JP_COMPARE_DIFF_INT_H

#include <stddef.h>
#include <stdint.h>

#include "analyses/result_names.h"
#include "base/arena.h"
#include "base/error.h"

enum {
    JP_DIFF_PAIR_LIMIT = 1 << 16 /* candidate pairs per group tried exhaustively; bigger groups pair by
                                  * rank, and layer groups with more instance pairs are not aligned */
};

/* A key rewritten for pairing: a buffer of its own in the diff's arena, grown when needed. */
typedef struct keybuf {
    char *s;    /* NULL until the key is first rewritten */
    size_t cap; /* bytes at s */
} keybuf;

/* One op (summed over devices) or one scope of one run, per step, while pairing. */
typedef struct agg {
    const char *key;       /* module used for pairing: a renumbered base module takes the new name */
    const char *module;    /* ops: HLO module as the run names it; scopes: "" */
    const char *name;      /* ops: HLO instruction; scopes: path */
    const char *category;  /* ops: category; scopes: "device" or "host" */
    const char *op_name;   /* ops: metadata op_name ("" unknown); scopes: "" */
    const char *scope;     /* ops: user scope path; scopes: path */
    const char *op_key;    /* op_name used for pairing: a renumbered base layer takes its new index */
    const char *scope_key; /* scope (scopes: path) used for pairing, renumbered likewise */
    int kind;              /* scopes: jp_scope_kind; ops: 0 */
    uint32_t device;       /* ops: device of the entry, so merging keeps the first device's strings */
    double count;          /* occurrences, summed then per step */
    double self_ps;        /* self time, summed then per step */
    double total_ps;       /* total time, summed then per step */
    double occurrences;    /* ops: occurrences as recorded, over which flops and bytes are summed */
    double flops, bytes;   /* ops: summed over occurrences and devices; 0 unknown */
    double var;            /* ops: variance of self_ps from the run's own spread (summed, then per
                            * step: divided by the steps squared); 0 unknown */
    int basis;             /* ops: jp_noise_basis of var */
    uint32_t lone;         /* 1 + depth of the scope component naming a layer found in one run only
                            * (its ops are added or removed, never paired); 0 otherwise */
    size_t scan;           /* layer alignment: offset in scope_key of the next component, or SIZE_MAX */
    size_t op_scan;        /* layer alignment: offset in op_key after the last layer found in it */
    keybuf op_buf, scope_buf; /* where op_key and scope_key live once rewritten */
    struct agg *partner;   /* the other run's entry it is paired with, or NULL */
    int match;             /* jp_match of that pairing */
} agg;


/* n elements of size bytes from the arena, zeroed (one element when n is 0), NULL on overflow. */
void *jp_diff_alloc(jp_arena *ar, size_t n, size_t size);

static inline int jp_diff_cmp_double(double x, double y) { return x < y ? -1 : x > y; }

/* An op's FLOPs or bytes (v) per recorded occurrence, 0 when it has none. */
static inline double jp_diff_per_occurrence(double v, const agg *a) {
    return a->occurrences > 0 ? v / a->occurrences : 0;
}

/* The orders of the aggregated entries (qsort comparators over agg): ops by (key, name), their
 * identity for pairing; scope rows by (kind, scope_key). */
int jp_diff_same_op(const void *x, const void *y);
int jp_diff_cmp_scope(const void *x, const void *y);

/* diff_align.c: base modules renumbered with a ".N" suffix take the new run's name as their key:
 * 1 when one did (the base entries then need re-sorting), 0 when none, -1 out of memory. */
int jp_diff_map_modules(jp_arena *ar, agg *b, size_t nb, const agg *n, size_t nn);
/* diff_align.c: base ops of Flax layers renumbered by an insertion take the new numbers in their
 * op_name and scope keys; ops of a layer found in one run only are marked lone. JP_OK or
 * JP_ERR_NOMEM. */
int jp_diff_map_layers(jp_arena *ar, agg *b, size_t nb, agg *n, size_t nn);
/* diff_align.c: base device scope rows follow their ops' renumbered paths (or turn lone): 1 when a
 * row changed (re-sort them), 0 when none, -1 out of memory. */
int jp_diff_map_scope_rows(jp_arena *ar, const agg *ops, size_t n_ops, agg *rows, size_t n_rows);

/* diff_pair.c: pairs the ops of two runs (sorted by key, name and device; renumberings mapped): the same
 * name with agreeing op_name and shape, the fallback passes, the bare name last. JP_OK or
 * JP_ERR_NOMEM. */
int jp_diff_pair_ops(jp_arena *ar, agg *b, size_t nb, agg *n, size_t nn);
/* diff_pair.c: pairs scope rows (sorted by jp_diff_cmp_scope) of an equal kind and path key. */
void jp_diff_pair_scopes(agg *b, size_t nb, agg *n, size_t nn);

#endif
