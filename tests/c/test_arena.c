/* test_arena.c - alignment, growth, oversized blocks and string copies of the arena. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdalign.h>
#include <string.h>

#include "base/arena.h"

static void allocations_are_aligned_and_distinct(void **state) {
    (void)state;
    jp_arena a;
    jp_arena_init(&a, 256);
    char *p = jp_arena_alloc(&a, 3);
    char *q = jp_arena_alloc(&a, 5);
    assert_non_null(p);
    assert_non_null(q);
    assert_int_equal((uintptr_t)p % alignof(max_align_t), 0);
    assert_int_equal((uintptr_t)q % alignof(max_align_t), 0);
    assert_true(q >= p + 3);
    memset(p, 1, 3);
    memset(q, 2, 5);
    assert_int_equal(p[2], 1);
    jp_arena_deinit(&a);
    assert_null(a.head);
    assert_int_equal(a.total, 0);
}

static void grows_past_one_block(void **state) {
    (void)state;
    jp_arena a;
    jp_arena_init(&a, 128);
    for (int i = 0; i < 1000; i++) {
        int *v = jp_arena_alloc(&a, sizeof(int));
        assert_non_null(v);
        *v = i;
    }
    assert_true(a.total > 128);
    jp_arena_deinit(&a);
}

static void oversized_request_keeps_head_block(void **state) {
    (void)state;
    jp_arena a;
    jp_arena_init(&a, 1024);
    void *small = jp_arena_alloc(&a, 16);
    jp_arena_block *head = a.head;
    void *big = jp_arena_alloc(&a, 10000);
    assert_non_null(big);
    assert_ptr_equal(a.head, head); /* the big block went behind the head */
    void *small2 = jp_arena_alloc(&a, 16);
    assert_true((char *)small2 > (char *)small && (char *)small2 < (char *)small + 1024);
    jp_arena_deinit(&a);
}

static void strndup_copies_and_terminates(void **state) {
    (void)state;
    jp_arena a;
    jp_arena_init(&a, 0);
    char *s = jp_arena_strndup(&a, "hello world", 5);
    assert_string_equal(s, "hello");
    assert_null(jp_arena_alloc(&a, SIZE_MAX));
    jp_arena_deinit(&a);
}

/* What was allocated from an adopted arena outlives it, inside the adopter; the adopter's head
 * block keeps serving, and its total counts both. */
static void adopt_moves_every_block(void **state) {
    (void)state;
    jp_arena dst, src;
    jp_arena_init(&dst, 256);
    jp_arena_init(&src, 256);
    char *d = jp_arena_strndup(&dst, "dst", 3);
    char *s1 = jp_arena_strndup(&src, "one", 3), *s2 = jp_arena_alloc(&src, 1000); /* two blocks */
    assert_non_null(d);
    assert_non_null(s1);
    assert_non_null(s2);
    memset(s2, 7, 1000);
    size_t total = dst.total + src.total;
    jp_arena_block *head = dst.head;
    jp_arena_adopt(&dst, &src);
    assert_null(src.head);
    assert_int_equal(src.total, 0);
    assert_int_equal(dst.total, total);
    assert_ptr_equal(dst.head, head);
    jp_arena_deinit(&src); /* frees nothing: the blocks are dst's */
    assert_string_equal(s1, "one");
    assert_int_equal(s2[999], 7);
    jp_arena_adopt(&dst, &src); /* an empty arena: nothing moves */
    assert_int_equal(dst.total, total);
    jp_arena empty;
    jp_arena_init(&empty, 0);
    jp_arena_adopt(&empty, &dst); /* into an empty one */
    assert_string_equal(d, "dst");
    assert_int_equal(empty.total, total);
    jp_arena_deinit(&empty); /* ASan: every block freed once */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(allocations_are_aligned_and_distinct),
        cmocka_unit_test(grows_past_one_block),
        cmocka_unit_test(oversized_request_keeps_head_block),
        cmocka_unit_test(strndup_copies_and_terminates),
        cmocka_unit_test(adopt_moves_every_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
