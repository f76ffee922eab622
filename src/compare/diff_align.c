/* diff_align.c - aligning two runs before their ops are paired: modules XLA renumbered with a ".N"
 * suffix, Flax layers renumbered by an insertion (Dense_2 -> Dense_3), and the scope rows under
 * those layers; the base run's keys take the new run's names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/intern.h"
#include "compare/diff_int.h"

enum {
    LAYER_DEPTH_MAX = 64, /* scope components searched for numbered layers ("MLP/Dense_2") */
    INDEX_DIGITS_MAX = 9  /* a longer number after "_" is part of a name, not a layer index */
};

/* ---- modules renumbered with a ".N" suffix ------------------------------------------------- */

/* Length of s without a trailing ".<digits>". */
static size_t stem_len(const char *s) {
    size_t n = strlen(s), i = n;
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') i--;
    return i < n && i > 1 && s[i - 1] == '.' ? i - 1 : n;
}

static int cmp_stem(const void *x, const void *y) {
    const char *a = *(const char *const *)x, *b = *(const char *const *)y;
    size_t la = stem_len(a), lb = stem_len(b);
    int c = strncmp(a, b, la < lb ? la : lb);
    if (!c && la != lb) c = la < lb ? -1 : 1;
    return c ? c : strcmp(a, b);
}

static int same_stem(const char *a, const char *b) {
    size_t la = stem_len(a);
    return la == stem_len(b) && strncmp(a, b, la) == 0;
}

/* Distinct modules of sorted entries. */
static const char **distinct_modules(jp_arena *ar, const agg *v, size_t n, size_t *n_out) {
    const char **m = jp_diff_alloc(ar, n, sizeof *m);
    size_t k = 0;
    for (size_t i = 0; m && i < n; i++)
        if (k == 0 || strcmp(m[k - 1], v[i].key) != 0) m[k++] = v[i].key;
    *n_out = k;
    return m;
}

/* Writes to out the modules of a (sorted, distinct) missing from b (sorted, distinct). */
static size_t only_in(const char *const *a, size_t na, const char *const *b, size_t nb, const char **out) {
    size_t w = 0, j = 0;
    for (size_t i = 0; i < na; i++) {
        while (j < nb && strcmp(b[j], a[i]) < 0) j++;
        if (j == nb || strcmp(b[j], a[i]) != 0) out[w++] = a[i];
    }
    return w;
}

typedef struct module_map {
    const char *from; /* base module */
    const char *to;   /* new module it was renumbered to */
} module_map;

static int cmp_map_from(const void *x, const void *y) {
    return strcmp(((const module_map *)x)->from, ((const module_map *)y)->from);
}

/* Pairs modules that differ only in a trailing ".N": a stem held by exactly one module on each
 * side. Both lists are sorted by stem. Returns the number of pairs written to map. */
static size_t pair_stems(const char *const *bm, size_t ub, const char *const *nm, size_t un, module_map *map) {
    size_t n_map = 0, i = 0, j = 0;
    while (i < ub && j < un) {
        if (!same_stem(bm[i], nm[j])) {
            if (cmp_stem(&bm[i], &nm[j]) < 0) i++;
            else j++;
            continue;
        }
        size_t i2 = i, j2 = j;
        while (i2 < ub && same_stem(bm[i2], bm[i])) i2++;
        while (j2 < un && same_stem(nm[j2], nm[j])) j2++;
        if (i2 - i == 1 && j2 - j == 1) map[n_map++] = (module_map){bm[i], nm[j]};
        i = i2;
        j = j2;
    }
    return n_map;
}

/* A recompiled function can come back as "jit_f.2" where the base had "jit_f.1" (or "jit_f"). A
 * base module missing from the new run whose stem (name without ".N") is shared by exactly one new
 * module missing from the base gets its ops keyed under the new name, so the three passes pair
 * them. Sorting keeps this O(m log m) in modules plus O(n log m) in ops. Returns 1 when a module
 * was mapped (the base entries then need re-sorting), 0 when none, -1 out of memory. */
int jp_diff_map_modules(jp_arena *ar, agg *b, size_t nb, const agg *n, size_t nn) {
    size_t mb, mn;
    const char **bm = distinct_modules(ar, b, nb, &mb), **nm = distinct_modules(ar, n, nn, &mn);
    const char **ob = jp_diff_alloc(ar, mb, sizeof *ob), **on = jp_diff_alloc(ar, mn, sizeof *on);
    module_map *map = jp_diff_alloc(ar, mb, sizeof *map);
    if (!bm || !nm || !ob || !on || !map) return -1;
    size_t ub = only_in(bm, mb, nm, mn, ob), un = only_in(nm, mn, bm, mb, on);
    if (ub == 0 || un == 0) return 0;
    qsort(ob, ub, sizeof *ob, cmp_stem);
    qsort(on, un, sizeof *on, cmp_stem);
    size_t n_map = pair_stems(ob, ub, on, un, map);
    if (n_map == 0) return 0;
    qsort(map, n_map, sizeof *map, cmp_map_from);
    for (size_t k = 0; k < nb; k++) {
        module_map probe = {b[k].key, NULL};
        const module_map *hit = bsearch(&probe, map, n_map, sizeof *map, cmp_map_from);
        if (hit) b[k].key = hit->to;
    }
    return 1;
}

/* ---- layers renumbered by an insertion ----------------------------------------------------- */

/* Flax names a submodule by its class and the order it was made in (Dense_0, Dense_1, ...), so a
 * layer inserted before others renumbers them: what was MLP/Dense_2 is MLP/Dense_3, and MLP/Dense_2
 * is now the inserted layer. Pairing by name or op_name would compare the old output layer with
 * the new hidden one. So, before any pairing, the numbered instances of each parent path and class
 * ("MLP/" + "Dense") are aligned across the runs by what their ops compute (align_instances), and
 * the base run's op_name and scope keys take the new numbers. Depth by depth, outermost first, so
 * a renumbered Block_1 -> Block_2 is mapped before the Dense_N inside it are grouped. */

/* One op under a numbered scope component ("Dense_2") at the depth being aligned. */
typedef struct member {
    agg *op;           /* the op, whose keys a renumbering rewrites */
    const char *group; /* parent path and class, "MLP/Dense", interned: one pointer per group */
    size_t at;         /* offset of the component in op->scope_key; its parent path is before it */
    size_t stem_len;   /* "Dense" */
    size_t comp_len;   /* "Dense_2" */
    size_t tok;        /* offset of the same name in op->op_key */
    uint64_t entry;    /* hash of what the op computes, the layer's number left out (entry_hash) */
    uint32_t index;    /* 2 */
    uint32_t to;       /* base: the number its layer has in the new run */
    int side;          /* 0 base, 1 new */
} member;

/* The members of one layer instance ("MLP/Dense_2" of one run) inside a group. */
typedef struct instance {
    size_t lo, hi;   /* its members: group[lo, hi), ordered by entry */
    uint64_t digest; /* sum of its entries: equal sums of equally many entries are the same ops */
    uint32_t index;  /* its number */
    size_t partner;  /* the other run's instance it is aligned with, or SIZE_MAX */
} instance;

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Whether s[at, end) reads "<stem>_<number>" (a canonical number of at most INDEX_DIGITS_MAX
 * digits, so "Dense_01" is a name); fills stem_len and index. */
static int numbered(const char *s, size_t at, size_t end, size_t *stem_len, uint32_t *index) {
    size_t d = end;
    while (d > at && is_digit(s[d - 1])) d--;
    size_t digits = end - d;
    if (digits == 0 || digits > INDEX_DIGITS_MAX || d < at + 2 || s[d - 1] != '_') return 0;
    if (digits > 1 && s[d] == '0') return 0;
    uint32_t v = 0;
    for (size_t i = d; i < end; i++) v = v * 10 + (uint32_t)(s[i] - '0');
    *stem_len = d - 1 - at;
    *index = v;
    return 1;
}

/* Offset of the first whole occurrence of name (len bytes) in s at or after from: preceded by the
 * start, '/' or '(' and followed by the end, '/' or ')', as a scope's name sits in an op_name
 * ("jit(f)/transpose(jvp(MLP))/Dense_2/dot_general"). SIZE_MAX when there is none. */
static size_t find_name(const char *s, size_t from, const char *name, size_t len) {
    size_t n = strlen(s);
    for (size_t i = from; len > 0 && i + len <= n; i++) {
        const char *p = memchr(s + i, name[0], n - len + 1 - i);
        if (!p) break;
        i = (size_t)(p - s);
        int starts = i == 0 || s[i - 1] == '/' || s[i - 1] == '(';
        int ends = s[i + len] == '\0' || s[i + len] == '/' || s[i + len] == ')';
        if (starts && ends && memcmp(p, name, len) == 0) return i;
    }
    return SIZE_MAX;
}

/* One alignment group: the same parent path and class (interned, so the same pointer). The order
 * of groups does not matter, only that each is contiguous. */
static int cmp_group(const member *x, const member *y) {
    uintptr_t a = (uintptr_t)x->group, b = (uintptr_t)y->group;
    return (a > b) - (a < b);
}

/* Mixes n bytes into h, eight at a time (a multiply-xorshift hash: fast, not cryptographic). */
static uint64_t mix(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (; n >= 8; c += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, c, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 32;
    }
    uint64_t w = n; /* the tail, with its length so "a" and "a\0" differ */
    for (size_t i = 0; i < n; i++) w = w << 8 | c[i];
    h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
    return h ^ h >> 31;
}

/* What an op of a layer computes, the layer's own number left out: module, category, the op_name
 * around the layer's name (the primitive, forward or gradient), FLOPs and bytes per occurrence.
 * Instances are compared many times over, so each op's entry is hashed once (two entries are
 * taken as equal when their 64-bit hashes are). */
static uint64_t entry_hash(const member *x) {
    const agg *a = x->op;
    double shape[2] = {jp_diff_per_occurrence(a->flops, a), jp_diff_per_occurrence(a->bytes, a)};
    const char *tail = a->op_key + x->tok + x->comp_len;
    uint64_t h = mix(0x243F6A8885A308D3ULL, a->key, strlen(a->key));
    h = mix(h, a->category, strlen(a->category));
    h = mix(h, a->op_key, x->tok);
    h = mix(h, tail, strlen(tail));
    return mix(h, shape, sizeof shape);
}

static int cmp_member(const void *p, const void *q) {
    const member *x = p, *y = q;
    int c = cmp_group(x, y);
    if (!c) c = x->side - y->side;
    if (!c) c = (x->index > y->index) - (x->index < y->index);
    return c ? c : (x->entry > y->entry) - (x->entry < y->entry); /* equal entries are interchangeable */
}

/* Ops two instances have in common, as multisets of entries (both ordered by entry), or any
 * number up to `need` when they cannot reach it. */
static size_t common_ops(const member *g, const instance *p, const instance *q, size_t need) {
    size_t i = p->lo, j = q->lo, k = 0;
    if (p->hi - p->lo == q->hi - q->lo && p->digest == q->digest) return p->hi - p->lo;
    while (i < p->hi && j < q->hi) {
        size_t rest = p->hi - i < q->hi - j ? p->hi - i : q->hi - j;
        if (k + rest < need) return k;
        int c = (g[i].entry > g[j].entry) - (g[i].entry < g[j].entry);
        if (c < 0) i++;
        else if (c > 0) j++;
        else k++, i++, j++;
    }
    return k;
}

/* The worth of aligning two instances: 0 unless they share most of the larger one's ops (else
 * they are different layers), then the ops shared, scaled so that one op outweighs keeping every
 * number, plus 1 when the number is kept. */
static uint64_t align_weight(const member *g, const instance *p, const instance *q, uint64_t scale) {
    size_t np = p->hi - p->lo, nq = q->hi - q->lo, most = np > nq ? np : nq;
    if (2 * (np < nq ? np : nq) <= most) return 0; /* too different in size to share most ops */
    size_t k = common_ops(g, p, q, most / 2 + 1);
    if (2 * k <= most) return 0;
    return (uint64_t)k * scale + (p->index == q->index);
}

/* Aligns the m base instances with the n new ones in order (an insertion or a removal keeps the
 * order of the others), most ops shared first, then most numbers kept: an edit-distance table of
 * (m+1)(n+1) cells (m n <= JP_DIFF_PAIR_LIMIT, the caller sees to it). */
static int align_instances(const member *g, instance *bi, size_t m, instance *ni, size_t n) {
    size_t w = n + 1;
    uint64_t *t = calloc((m + 1) * w, sizeof *t), scale = (m < n ? m : n) + 1;
    if (!t) return JP_ERR_NOMEM;
    for (size_t i = 1; i <= m; i++)
        for (size_t j = 1; j <= n; j++) {
            uint64_t best = t[(i - 1) * w + j] > t[i * w + j - 1] ? t[(i - 1) * w + j] : t[i * w + j - 1];
            uint64_t a = align_weight(g, &bi[i - 1], &ni[j - 1], scale);
            if (a && t[(i - 1) * w + j - 1] + a > best) best = t[(i - 1) * w + j - 1] + a;
            t[i * w + j] = best;
        }
    for (size_t i = m, j = n; i > 0 && j > 0;) {
        uint64_t a = align_weight(g, &bi[i - 1], &ni[j - 1], scale);
        if (a && t[i * w + j] == t[(i - 1) * w + j - 1] + a) {
            bi[i - 1].partner = j - 1;
            ni[j - 1].partner = i - 1;
            i--, j--;
        } else if (t[i * w + j] == t[(i - 1) * w + j]) {
            i--;
        } else {
            j--;
        }
    }
    free(t);
    return JP_OK;
}

/* Instances left unaligned: one whose number the other run also left unaligned is the same layer
 * changed in place (a width edited) and keeps its number. Both lists are ordered by number. */
static void keep_numbers(instance *bi, size_t m, instance *ni, size_t n) {
    for (size_t i = 0, j = 0; i < m; i++) {
        if (bi[i].partner != SIZE_MAX) continue;
        while (j < n && ni[j].index < bi[i].index) j++;
        if (j < n && ni[j].index == bi[i].index && ni[j].partner == SIZE_MAX) {
            bi[i].partner = j;
            ni[j].partner = i;
        }
    }
}

/* Splits one side of a group (members ordered by number) into instances; returns how many. */
static size_t split_instances(const member *g, size_t lo, size_t hi, instance *out) {
    size_t k = 0;
    for (size_t i = lo; i < hi; i++) {
        if (k > 0 && out[k - 1].index == g[i].index) {
            out[k - 1].hi = i + 1;
            continue;
        }
        out[k++] = (instance){i, i + 1, 0, g[i].index, SIZE_MAX};
    }
    for (size_t j = 0; j < k; j++)
        for (size_t x = out[j].lo; x < out[j].hi; x++) out[j].digest += g[x].entry;
    return k;
}

/* Whether both runs hold the same instances with the same ops: nothing to align (most groups). */
static int same_instances(const instance *bi, size_t m, const instance *ni, size_t n) {
    if (m != n) return 0;
    for (size_t i = 0; i < m; i++)
        if (bi[i].index != ni[i].index || bi[i].hi - bi[i].lo != ni[i].hi - ni[i].lo || bi[i].digest != ni[i].digest)
            return 0;
    return 1;
}

/* Records the outcome on the members: a base instance's new number, or the ops of an instance
 * found in one run only marked lone (added or removed: never paired). */
static void settle(member *g, const instance *inst, size_t k, const instance *other, uint32_t depth) {
    for (size_t i = 0; i < k; i++)
        for (size_t x = inst[i].lo; x < inst[i].hi; x++) {
            if (inst[i].partner == SIZE_MAX) g[x].op->lone = depth + 1;
            else g[x].to = other[inst[i].partner].index;
        }
}

/* Aligns one group (base members first, then new ones, each ordered by number). A class found in
 * one run only is left alone: nothing to align it with. */
static int align_group(member *g, size_t len, uint32_t depth) {
    size_t s = 0;
    while (s < len && g[s].side == 0) s++;
    if (s == 0 || s == len) return JP_OK;
    instance *bi = malloc(len * sizeof *bi);
    if (!bi) return JP_ERR_NOMEM;
    size_t m = split_instances(g, 0, s, bi);
    instance *ni = bi + m;
    size_t n = split_instances(g, s, len, ni);
    int rc = JP_OK;
    if (m <= JP_DIFF_PAIR_LIMIT / n && !same_instances(bi, m, ni, n)) { /* too many instances: left as numbered */
        rc = align_instances(g, bi, m, ni, n);
        if (rc == JP_OK) {
            keep_numbers(bi, m, ni, n);
            settle(g, bi, m, ni, depth);
            settle(g, ni, n, bi, depth);
        }
    }
    free(bi);
    return rc;
}

/* Replaces (*key)[from, to) by text (len bytes) in kb's buffer, which *key then points to. */
static int splice(jp_arena *ar, keybuf *kb, const char **key, size_t from, size_t to, const char *text, size_t len) {
    size_t n = strlen(*key), need = n - (to - from) + len + 1;
    if (*key != kb->s || need > kb->cap) {
        size_t cap = need + need / 2 + 16;
        char *buf = jp_arena_alloc(ar, cap);
        if (!buf) return JP_ERR_NOMEM;
        memcpy(buf, *key, n + 1);
        *kb = (keybuf){buf, cap};
    }
    memmove(kb->s + from + len, kb->s + to, n - to + 1);
    memcpy(kb->s + from, text, len);
    *key = kb->s;
    return JP_OK;
}

/* Gives a base op of a renumbered layer its new number in both keys; its scans move with the text. */
static int renumber(jp_arena *ar, const member *x) {
    char digits[16];
    int len = snprintf(digits, sizeof digits, "%u", (unsigned)x->to);
    if (len <= 0 || (size_t)len >= sizeof digits) return JP_ERR_LIMIT;
    agg *op = x->op;
    size_t old = x->comp_len - x->stem_len - 1, from = x->at + x->stem_len + 1, tfrom = x->tok + x->stem_len + 1;
    if (splice(ar, &op->scope_buf, &op->scope_key, from, from + old, digits, (size_t)len) ||
        splice(ar, &op->op_buf, &op->op_key, tfrom, tfrom + old, digits, (size_t)len))
        return JP_ERR_NOMEM;
    if (op->scan != SIZE_MAX) op->scan = op->scan - old + (size_t)len;
    op->op_scan = op->op_scan - old + (size_t)len;
    return JP_OK;
}

/* Where collect_members appends. */
typedef struct members {
    member *m;        /* room for every op of both runs */
    size_t n;         /* members so far */
    size_t left;      /* ops with scope components still to come */
    jp_intern groups; /* parent path + class of every group */
} members;

/* Appends the ops of one run whose next scope component names a layer, and moves every op's scan
 * past that component. An op whose op_name lacks the name (never seen: scopes are made from
 * op_names) is not aligned. Returns JP_ERR_NOMEM or JP_OK. */
static int collect_members(agg *v, size_t nv, int side, members *out) {
    for (size_t i = 0; i < nv; i++) {
        agg *op = &v[i];
        if (op->lone || op->scan == SIZE_MAX) continue;
        const char *s = op->scope_key, *slash = strchr(s + op->scan, '/');
        size_t at = op->scan, end = slash ? (size_t)(slash - s) : at + strlen(s + at);
        op->scan = slash ? end + 1 : SIZE_MAX;
        out->left += slash != NULL;
        member x = {.op = op, .at = at, .comp_len = end - at, .side = side};
        if (!numbered(s, at, end, &x.stem_len, &x.index)) continue;
        x.tok = find_name(op->op_key, op->op_scan, s + at, end - at);
        if (x.tok == SIZE_MAX) continue;
        op->op_scan = x.tok + x.comp_len;
        x.to = x.index;
        x.entry = entry_hash(&x);
        x.group = jp_intern_str(&out->groups, s, at + x.stem_len);
        if (!x.group) return JP_ERR_NOMEM;
        out->m[out->n++] = x;
    }
    return JP_OK;
}

/* Aligns one depth: groups the members, aligns each group, renumbers the base's moved layers. */
static int align_depth(jp_arena *ar, member *m, size_t k, uint32_t depth) {
    if (k > 1) qsort(m, k, sizeof *m, cmp_member);
    for (size_t i = 0; i < k;) {
        size_t j = i + 1;
        while (j < k && cmp_group(&m[i], &m[j]) == 0) j++;
        if (align_group(m + i, j - i, depth) != JP_OK) return JP_ERR_NOMEM;
        i = j;
    }
    for (size_t i = 0; i < k; i++)
        if (m[i].side == 0 && !m[i].op->lone && m[i].to != m[i].index && renumber(ar, &m[i]) != JP_OK)
            return JP_ERR_NOMEM;
    return JP_OK;
}

/* Maps renumbered layers in the base run's keys and marks layers found in one run only, depth by
 * depth (at most LAYER_DEPTH_MAX). O(n log n) per depth with numbered components; the alignment
 * of a group is O(m n) instance comparisons, m and n its instances on each side. */
int jp_diff_map_layers(jp_arena *ar, agg *b, size_t nb, agg *n, size_t nn) {
    if (nb > SIZE_MAX - nn) return JP_ERR_NOMEM;
    members ms = {.m = jp_diff_alloc(ar, nb + nn, sizeof *ms.m)};
    if (!ms.m) return JP_ERR_NOMEM;
    jp_intern_init(&ms.groups, ar);
    int rc = JP_OK;
    for (uint32_t depth = 0; depth < LAYER_DEPTH_MAX && rc == JP_OK; depth++) {
        ms.n = ms.left = 0;
        rc = collect_members(b, nb, 0, &ms);
        if (rc == JP_OK) rc = collect_members(n, nn, 1, &ms);
        if (rc == JP_OK) rc = align_depth(ar, ms.m, ms.n, depth);
        if (ms.left == 0) break;
    }
    jp_intern_deinit(&ms.groups);
    return rc;
}

/* ---- scope rows under renumbered layers ---------------------------------------------------- */

static int cmp_agg_ptr_scope(const void *x, const void *y) {
    return strcmp((*(const agg *const *)x)->scope, (*(const agg *const *)y)->scope);
}

/* First of moved (sorted by scope) not before path, or (slash) not before path + "/". */
static size_t lower_bound_scope(const agg *const *moved, size_t k, const char *path, size_t len, int slash) {
    size_t lo = 0, hi = k;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *s = moved[mid]->scope;
        int c = strncmp(s, path, len);
        if (!c) c = slash ? (unsigned char)s[len] - '/' : (unsigned char)s[len] != 0;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* An op of moved whose scope is path or lies under it, or NULL. */
static const agg *op_under(const agg *const *moved, size_t k, const char *path) {
    size_t len = strlen(path), i = lower_bound_scope(moved, k, path, len, 0);
    if (i < k && strcmp(moved[i]->scope, path) == 0) return moved[i];
    i = lower_bound_scope(moved, k, path, len, 1);
    if (i < k && strncmp(moved[i]->scope, path, len) == 0 && moved[i]->scope[len] == '/') return moved[i];
    return NULL;
}

/* Bytes of the first n components of a scope path. */
static size_t components_len(const char *s, size_t n) {
    size_t i = 0;
    for (size_t c = 0; s[i]; i++)
        if (s[i] == '/' && ++c == n) break;
    return i;
}

static size_t components(const char *s) {
    size_t n = 1;
    for (; *s; s++) n += *s == '/';
    return n;
}

/* A base device scope row under a renumbered layer takes the path its ops were given: the first
 * components of the renumbered scope of any op under it (they all share them), and a row inside a
 * layer of the base run only is lone. Returns 1 when a row changed, 0 when none, -1 out of memory. */
int jp_diff_map_scope_rows(jp_arena *ar, const agg *ops, size_t n_ops, agg *rows, size_t n_rows) {
    const agg **moved = jp_diff_alloc(ar, n_ops, sizeof *moved);
    if (!moved) return -1;
    size_t k = 0;
    for (size_t i = 0; i < n_ops; i++)
        if (ops[i].lone || ops[i].scope_key != ops[i].scope) moved[k++] = &ops[i];
    if (k == 0) return 0;
    qsort(moved, k, sizeof *moved, cmp_agg_ptr_scope);
    int changed = 0;
    for (size_t r = 0; r < n_rows; r++) {
        agg *row = &rows[r];
        const agg *op = row->kind == JP_SCOPE_DEVICE ? op_under(moved, k, row->name) : NULL;
        if (!op) continue;
        size_t depth = components(row->name);
        if (op->lone && op->lone <= depth) {
            row->lone = op->lone;
            continue;
        }
        size_t len = components_len(op->scope_key, depth);
        if (strlen(row->name) == len && memcmp(row->name, op->scope_key, len) == 0) continue;
        char *key = jp_arena_alloc(ar, len + 1);
        if (!key) return -1;
        memcpy(key, op->scope_key, len);
        key[len] = '\0';
        row->scope_key = key;
        changed = 1;
    }
    return changed;
}
