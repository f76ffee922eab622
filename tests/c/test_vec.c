/* test_vec.c - the base containers: growable arrays (vec.c), interning (intern.c), the three-word
 * map (map.c) and the stable key sort (sort.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"
#include "base/map.h"
#include "base/sort.h"
#include "base/vec.h"

typedef struct item {
    uint32_t seq;  /* place before sorting, to check stability */
    uint32_t pad;
    int64_t key;   /* sorted on */
    uint64_t ukey; /* sorted on as unsigned */
} item;

static int cmp_key(const void *a, const void *b) {
    int64_t x = ((const item *)a)->key, y = ((const item *)b)->key;
    return (x > y) - (x < y);
}

static int cmp_ukey(const void *a, const void *b) {
    uint64_t x = ((const item *)a)->ukey, y = ((const item *)b)->ukey;
    return (x > y) - (x < y);
}

/* The reference: a stable insertion sort with the same comparator. */
static void insertion_sort(item *v, size_t n, int (*cmp)(const void *, const void *)) {
    for (size_t i = 1; i < n; i++) {
        item x = v[i];
        size_t j = i;
        for (; j > 0 && cmp(&v[j - 1], &x) > 0; j--) v[j] = v[j - 1];
        v[j] = x;
    }
}

static uint64_t xorshift(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Sorted like a stable sort on the key alone: same order of equal keys, negatives first, keys
 * sharing their high bytes, few distinct keys, sizes around the radix cut-over. */
static void sort_by_key64_is_a_stable_sort(void **state) {
    (void)state;
    const size_t sizes[] = {0, 1, 2, 255, 256, 257, 3000};
    const int64_t extremes[] = {INT64_MIN, -1, 0, INT64_MAX};
    uint64_t seed = 88172645463325252ull;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (int shape = 0; shape < 4; shape++) {
            size_t n = sizes[s];
            item *a = calloc(n ? n : 1, sizeof *a), *b = calloc(n ? n : 1, sizeof *b);
            assert_non_null(a);
            assert_non_null(b);
            for (size_t i = 0; i < n; i++) {
                uint64_t r = xorshift(&seed);
                a[i].seq = (uint32_t)i;
                a[i].key = shape == 0 ? (int64_t)r                             /* anything */
                         : shape == 1 ? (int64_t)(r % 7) - 3                   /* few, some negative */
                         : shape == 2 ? (int64_t)1000000000000 + (int64_t)(r % 100000) /* shared high bytes */
                                      : extremes[r % 4];
                a[i].ukey = shape == 1 ? r % 5 : r;
            }
            memcpy(b, a, n * sizeof *a);
            jp_sort_by_key64(a, n, sizeof *a, offsetof(item, key), 1, cmp_key);
            insertion_sort(b, n, cmp_key);
            assert_memory_equal(a, b, n * sizeof *a);
            jp_sort_by_key64(a, n, sizeof *a, offsetof(item, ukey), 0, cmp_ukey);
            insertion_sort(b, n, cmp_ukey);
            assert_memory_equal(a, b, n * sizeof *a);
            free(a);
            free(b);
        }
    }
}

/* Input made of k sorted runs (events of k lines, each in time order) is merged, pairwise for two
 * runs and by tournament for more: the result is a stable sort's, ties across runs included (few
 * distinct keys), for every run count up to 64, runs of unequal lengths and empty tails. */
static void sort_by_key64_merges_sorted_runs_stably(void **state) {
    (void)state;
    uint64_t seed = 2463534242ull;
    for (size_t k = 1; k <= 64; k++) {
        for (int few = 0; few < 2; few++) {
            size_t n = 300 + k * 37;
            item *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
            assert_non_null(a);
            assert_non_null(b);
            int64_t key = 0;
            for (size_t i = 0; i < n; i++) { /* a new run every n/k elements, starting low again */
                uint64_t r = xorshift(&seed);
                if (i % (n / k) == 0) key = (int64_t)(r % 50) - 25;
                key += few ? (int64_t)(r % 2) : (int64_t)(r % 1000);
                a[i] = (item){.key = key, .ukey = (uint64_t)key, .seq = (uint32_t)i};
            }
            memcpy(b, a, n * sizeof *a);
            jp_sort_by_key64(a, n, sizeof *a, offsetof(item, key), 1, cmp_key);
            insertion_sort(b, n, cmp_key);
            if (memcmp(a, b, n * sizeof *a) != 0) fail_msg("%zu runs%s: not a stable sort", k, few ? " of few keys" : "");
            free(a);
            free(b);
        }
    }
}

static void intern_and_map(void **state) {
    (void)state;
    jp_arena arena;
    jp_arena_init(&arena, 0);
    jp_intern t;
    jp_intern_init(&t, &arena);
    jp_map m = {0};
    char buf[32];
    const char *first[2000];
    for (uint32_t i = 0; i < 2000; i++) { /* enough to grow both tables several times */
        size_t len = (size_t)snprintf(buf, sizeof buf, "name-%u-with-a-longer-tail", i);
        first[i] = jp_intern_str(&t, buf, len);
        assert_non_null(first[i]);
        assert_string_equal(first[i], buf);
        int found = 1;
        assert_int_equal(jp_map_get_or_put(&m, i, jp_ptr_key(first[i]), 7, i, &found), i);
        assert_false(found);
    }
    for (uint32_t i = 0; i < 2000; i++) {
        size_t len = (size_t)snprintf(buf, sizeof buf, "name-%u-with-a-longer-tail", i);
        assert_ptr_equal(jp_intern_str(&t, buf, len), first[i]);
        int found = 0;
        assert_int_equal(jp_map_get_or_put(&m, i, jp_ptr_key(first[i]), 7, 99999, &found), i);
        assert_true(found);
    }
    assert_ptr_equal(jp_intern_str(&t, "", 0), jp_intern_str(&t, NULL, 0));
    jp_map_deinit(&m);
    jp_intern_deinit(&t);
    jp_arena_deinit(&arena);
}

/* Pushed elements come back zeroed and in order across the doublings; free leaves an empty vec. */
static void vec_push_grows_and_zeroes(void **state) {
    (void)state;
    jp_vec v = {0};
    for (uint64_t i = 0; i < 1000; i++) {
        uint64_t *slot = jp_vec_push(&v, 3 * sizeof *slot);
        assert_non_null(slot);
        assert_int_equal(slot[0] | slot[1] | slot[2], 0);
        slot[0] = i, slot[2] = ~i;
    }
    assert_int_equal(v.n, 1000);
    assert_int_equal(v.cap, 1024); /* 16 doubled six times */
    for (uint64_t i = 0; i < 1000; i++) {
        assert_int_equal(((uint64_t *)v.data)[3 * i], i);
        assert_int_equal(((uint64_t *)v.data)[3 * i + 2], ~i);
    }
    jp_vec_free(&v);
    assert_null(jp_vec_push(&v, SIZE_MAX / 8)); /* 16 elements of this size overflow size_t */
    assert_null(v.data);
    assert_int_equal(v.n + v.cap, 0);
}

/* Look-ups that never add: absent strings and keys, then the value slot updated in place. */
static void lookup_without_adding(void **state) {
    (void)state;
    jp_arena arena;
    jp_arena_init(&arena, 0);
    jp_intern t;
    jp_intern_init(&t, &arena);
    assert_null(jp_intern_lookup(&t, "a", 1)); /* empty table */
    const char *a = jp_intern_str(&t, "abc", 3);
    assert_ptr_equal(jp_intern_lookup(&t, "abcdef", 3), a);
    assert_null(jp_intern_lookup(&t, "abd", 3));
    assert_int_equal(t.n, 1);
    jp_map m = {0};
    assert_int_equal(jp_map_get(&m, 1, 2, 3), UINT32_MAX); /* empty map */
    int found = 1;
    uint32_t *v = jp_map_value(&m, 1, 2, 3, 10, &found);
    assert_non_null(v);
    assert_false(found);
    *v = 11;
    assert_int_equal(jp_map_get(&m, 1, 2, 3), 11);
    assert_int_equal(jp_map_get(&m, 3, 2, 1), UINT32_MAX);
    assert_int_equal(m.n, 1);
    jp_map_deinit(&m);
    jp_intern_deinit(&t);
    jp_arena_deinit(&arena);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vec_push_grows_and_zeroes),
        cmocka_unit_test(lookup_without_adding),
        cmocka_unit_test(sort_by_key64_is_a_stable_sort),
        cmocka_unit_test(sort_by_key64_merges_sorted_runs_stably),
        cmocka_unit_test(intern_and_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
