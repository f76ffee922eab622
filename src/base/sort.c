/* sort.c - the stable LSD radix sort on a 64-bit key that the big single-key sorts use. */
#include "base/sort.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int jp_cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t key64(const unsigned char *elem, size_t key_off, int is_signed) {
    uint64_t k;
    memcpy(&k, elem + key_off, sizeof k);
    return is_signed ? k ^ ((uint64_t)1 << 63) : k; /* signed order as unsigned */
}

/* memcpy with the common element sizes spelled out, so that they compile to plain moves. */
static inline void copy_elem(unsigned char *dst, const unsigned char *src, size_t size) {
    switch (size) {
    case 8: memcpy(dst, src, 8); break;
    case 16: memcpy(dst, src, 16); break;
    case 24: memcpy(dst, src, 24); break;
    case 32: memcpy(dst, src, 32); break;
    default: memcpy(dst, src, size); break;
    }
}

/* Where the sorted runs of v[0..n) start, in runs[0..): their number, or RUNS_MAX + 1 when
 * there are more (the scan stops there: shuffled input costs a few elements' look). */
enum { RUNS_MAX = 64 };
static size_t find_runs(const unsigned char *v, size_t n, size_t size, size_t key_off, int is_signed, size_t *runs) {
    size_t n_runs = 0;
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = key64(v + i * size, key_off, is_signed);
        if (i == 0 || k < prev) {
            if (n_runs == RUNS_MAX) return RUNS_MAX + 1;
            runs[n_runs++] = i;
        }
        prev = k;
    }
    return n_runs;
}

/* One pass: runs 2k and 2k+1 of src (starts in runs[0..n_runs), runs[n_runs] == n) merged into
 * dst, ties from the left run first (stable); runs[] becomes the merged runs'. Their number. */
static size_t merge_pass(const unsigned char *src, unsigned char *dst, size_t n, size_t size, size_t key_off,
                         int is_signed, size_t *runs, size_t n_runs) {
    size_t out = 0;
    for (size_t r = 0; r < n_runs; r += 2) {
        size_t i = runs[r], mid = runs[r + 1], j = mid, end = r + 2 <= n_runs ? runs[r + 2] : n;
        runs[out++] = i;
        size_t at = i;
        while (i < mid && j < end) {
            const unsigned char *take = key64(src + j * size, key_off, is_signed) < key64(src + i * size, key_off, is_signed)
                                            ? src + size * j++ : src + size * i++;
            copy_elem(dst + size * at++, take, size);
        }
        memcpy(dst + size * at, src + size * i, (mid - i) * size);
        at += mid - i;
        memcpy(dst + size * at, src + size * j, (end - j) * size);
    }
    runs[out] = n;
    return out;
}

/* A tournament over the heads of k sorted runs (a loser tree): node i's children are 2i and 2i+1,
 * run r sits at leaf k + r, each inner node keeps the loser of the match played there and node 0
 * the overall winner. The winner is the least key, the earlier run on a tie (the merge is stable);
 * a run that is done loses to every other. Taking an element replays only the winner's path: log2 k
 * comparisons, where merging pairwise takes a pass over all the data per doubling. */
typedef struct tournament {
    const unsigned char *src;
    size_t size, key_off, k;
    int is_signed;
    size_t head[RUNS_MAX], end[RUNS_MAX];
    uint64_t key[RUNS_MAX]; /* each run's head key, kept here so that a match reads no element */
    uint8_t done[RUNS_MAX];
    size_t tree[RUNS_MAX];
} tournament;

static void load_head(tournament *t, size_t r) {
    t->done[r] = t->head[r] == t->end[r];
    if (!t->done[r]) t->key[r] = key64(t->src + t->head[r] * t->size, t->key_off, t->is_signed);
}

static int beats(const tournament *t, size_t a, size_t b) {
    if (t->done[a] || t->done[b]) return !t->done[a];
    return t->key[a] < t->key[b] || (t->key[a] == t->key[b] && a < b);
}

static size_t play(tournament *t, size_t node) {
    if (node >= t->k) return node - t->k;
    size_t l = play(t, 2 * node), r = play(t, 2 * node + 1);
    int left = beats(t, l, r);
    t->tree[node] = left ? r : l;
    return left ? l : r;
}

/* Merges the n_runs (>= 3) sorted runs of src (runs[] as find_runs leaves it) into dst in one pass. */
static void merge_tournament(const unsigned char *src, unsigned char *dst, size_t n, size_t size, size_t key_off,
                             int is_signed, const size_t *runs, size_t n_runs) {
    tournament t = {.src = src, .size = size, .key_off = key_off, .k = n_runs, .is_signed = is_signed};
    for (size_t r = 0; r < n_runs; r++) {
        t.head[r] = runs[r], t.end[r] = r + 1 < n_runs ? runs[r + 1] : n;
        load_head(&t, r);
    }
    size_t win = play(&t, 1);
    for (size_t at = 0; at < n; at++) {
        copy_elem(dst + at * size, src + t.head[win]++ * size, size);
        load_head(&t, win);
        for (size_t node = (win + t.k) / 2; node >= 1; node /= 2)
            if (beats(&t, t.tree[node], win)) {
                size_t w = t.tree[node];
                t.tree[node] = win;
                win = w;
            }
    }
}

/* Merges the n_runs sorted runs of v (runs[] as find_runs leaves it): two in one pairwise pass,
 * more in one tournament. 0, or -1 when the scratch copy cannot be allocated. */
static int merge_runs(unsigned char *v, size_t n, size_t size, size_t key_off, int is_signed, size_t *runs,
                      size_t n_runs) {
    unsigned char *tmp = malloc(n * size);
    if (!tmp) return -1;
    runs[n_runs] = n;
    if (n_runs == 2) merge_pass(v, tmp, n, size, key_off, is_signed, runs, n_runs);
    else merge_tournament(v, tmp, n, size, key_off, is_signed, runs, n_runs);
    memcpy(v, tmp, n * size);
    free(tmp);
    return 0;
}

void jp_sort_by_key64(void *base, size_t n, size_t size, size_t key_off, int is_signed,
                      int (*cmp)(const void *, const void *)) {
    if (n < 2) return;
    if (n < 256 || size > 64 || n > SIZE_MAX / size) { /* small: not worth the passes */
        qsort(base, n, size, cmp);
        return;
    }
    size_t runs[RUNS_MAX + 1];
    size_t n_runs = find_runs(base, n, size, key_off, is_signed, runs);
    if (n_runs <= 1 || (n_runs <= RUNS_MAX && merge_runs(base, n, size, key_off, is_signed, runs, n_runs) == 0))
        return;
    unsigned char *tmp = malloc(n * size);
    size_t(*counts)[256] = calloc(8, sizeof *counts);
    if (!tmp || !counts) {
        free(tmp);
        free(counts);
        qsort(base, n, size, cmp);
        return;
    }
    unsigned char *src = base, *dst = tmp;
    for (size_t i = 0; i < n; i++) {
        uint64_t k = key64(src + i * size, key_off, is_signed);
        for (int b = 0; b < 8; b++) counts[b][(k >> (8 * b)) & 0xff]++;
    }
    for (int b = 0; b < 8; b++) {
        size_t *c = counts[b], pos = 0;
        if (c[(key64(src, key_off, is_signed) >> (8 * b)) & 0xff] == n) continue; /* all share it */
        for (int d = 0; d < 256; d++) {
            size_t k = c[d];
            c[d] = pos;
            pos += k;
        }
        for (size_t i = 0; i < n; i++) {
            const unsigned char *e = src + i * size;
            copy_elem(dst + c[(key64(e, key_off, is_signed) >> (8 * b)) & 0xff]++ * size, e, size);
        }
        unsigned char *t = src;
        src = dst;
        dst = t;
    }
    if (src != base) memcpy(base, src, n * size);
    free(tmp);
    free(counts);
}

