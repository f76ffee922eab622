/* test_text.c - the bounded text builder: exact text, length and cut flag at every boundary (exactly
 * full, one byte over, a cut inside a multi-byte character, appends after a cut, capacities under 4,
 * printf past the end), and never a byte written past the capacity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/text.h"

enum { GUARD = 8 }; /* bytes after the capacity that must stay untouched */

/* A buffer of cap bytes followed by GUARD bytes of 'G'. */
typedef struct guarded {
    char mem[64 + GUARD];
    size_t cap;
} guarded;

static jp_text make(guarded *g, size_t cap) {
    assert_true(cap <= 64);
    memset(g->mem, 'G', sizeof g->mem);
    g->cap = cap;
    return jp_text_make(g->mem, cap);
}

static void assert_guard_intact(const guarded *g) {
    for (size_t i = g->cap; i < g->cap + GUARD; i++) assert_int_equal(g->mem[i], 'G');
}

static void assert_text(const jp_text *t, const char *want, int cut) {
    assert_string_equal(t->buf, want);
    assert_int_equal(t->len, strlen(want));
    assert_int_equal(t->cut, cut);
    assert_true(t->len < t->cap);
}

static void fits_exactly_then_one_over(void **state) {
    (void)state;
    guarded g;
    jp_text t = make(&g, 8);
    jp_text_puts(&t, "abc");
    jp_text_puts(&t, "defg"); /* 7 bytes and the NUL: exactly full, not cut */
    assert_text(&t, "abcdefg", 0);
    jp_text_puts(&t, ""); /* nothing to add: still whole */
    assert_text(&t, "abcdefg", 0);
    jp_text_putc(&t, 'h'); /* one over: the last 3 bytes give way to the marker */
    assert_text(&t, "abcd...", 1);
    assert_guard_intact(&g);
}

static void one_put_over_the_end(void **state) {
    (void)state;
    guarded g;
    jp_text t = make(&g, 8);
    jp_text_puts(&t, "abcdefgh");
    assert_text(&t, "abcd...", 1);
    t = make(&g, 8);
    jp_text_puts(&t, "ab");
    jp_text_puts(&t, "cdefghijklmnopqrstuvwxyz");
    assert_text(&t, "abcd...", 1);
    assert_guard_intact(&g);
}

static void nothing_after_a_cut(void **state) {
    (void)state;
    guarded g;
    jp_text t = make(&g, 10);
    jp_text_puts(&t, "0123456789abc");
    assert_text(&t, "012345...", 1);
    jp_text_puts(&t, "x");
    jp_text_putc(&t, 'y');
    jp_text_printf(&t, "%d", 7);
    jp_text_put(&t, "", 0);
    assert_text(&t, "012345...", 1);
    assert_guard_intact(&g);
}

/* The long-standing HLO case: thousands of small appends to a full buffer (room = cap - 4 - len
 * used to wrap once len passed cap - 4). */
static void many_small_appends(void **state) {
    (void)state;
    char buf[1024];
    jp_text t = jp_text_make(buf, sizeof buf);
    for (int i = 0; i < 5000; i++) jp_text_puts(&t, i ? ", f32[128,256]" : "(");
    assert_true(t.cut);
    assert_int_equal(t.len, sizeof buf - 1); /* 1020 bytes of text, then the marker */
    assert_int_equal(memcmp(buf + t.len - 3, "...", 3), 0);
    assert_int_equal(strlen(buf), t.len);
}

static void cut_inside_a_multibyte_character(void **state) {
    (void)state;
    guarded g;
    /* cap 8 keeps 4 bytes before "...": "ab" + the 3-byte euro sign would need 5 */
    jp_text t = make(&g, 8);
    jp_text_puts(&t, "ab\xe2\x82\xac" "cde");
    assert_text(&t, "ab...", 1);
    /* the same character whole within the 4 bytes is kept */
    t = make(&g, 8);
    jp_text_puts(&t, "a\xe2\x82\xac" "bcde");
    assert_text(&t, "a\xe2\x82\xac...", 1);
    /* a 4-byte character cut after its first, second and third byte */
    for (size_t lead = 1; lead <= 3; lead++) {
        t = make(&g, 8);
        jp_text_put(&t, "xxx", 4 - lead);
        jp_text_puts(&t, "\xf0\x9f\x98\x80zzz"); /* U+1F600 */
        char want[8] = {0};
        memcpy(want, "xxx", 4 - lead);
        strcat(want, "...");
        assert_text(&t, want, 1);
    }
    /* a 2-byte character already in the buffer, cut by a later append */
    t = make(&g, 8);
    jp_text_puts(&t, "abc\xc3\xa9"); /* 5 bytes: fits */
    assert_text(&t, "abc\xc3\xa9", 0);
    jp_text_puts(&t, "zzz"); /* 8 > 7: keep 4 bytes, which would end inside the e-acute */
    assert_text(&t, "abc...", 1);
    /* printf's cut too */
    t = make(&g, 8);
    jp_text_printf(&t, "%s", "ab\xe2\x82\xac" "cde");
    assert_text(&t, "ab...", 1);
    assert_guard_intact(&g);
}

static void bytes_that_are_not_utf8_are_kept(void **state) {
    (void)state;
    guarded g;
    jp_text t = make(&g, 8);
    jp_text_puts(&t, "\x80\x80\x80\x80\x80\x80\x80\x80"); /* stray continuation bytes: no lead to back off to */
    assert_text(&t, "\x80\x80\x80\x80...", 1);
    t = make(&g, 8);
    jp_text_puts(&t, "abc\xff" "defgh"); /* FF starts nothing: one character */
    assert_text(&t, "abc\xff...", 1);
    assert_int_equal(jp_text_utf8_floor("a\xe2\x82", 3), 1);
    assert_int_equal(jp_text_utf8_floor("a\xe2\x82\xac", 4), 4);
    assert_int_equal(jp_text_utf8_floor("\xf0\x9f\x98\x80", 4), 4);
    assert_int_equal(jp_text_utf8_floor("\xf0\x9f\x98", 3), 0);
    assert_int_equal(jp_text_utf8_floor("", 0), 0);
}

static void capacities_under_four(void **state) {
    (void)state;
    guarded g;
    static const char *const want[] = {"", "", ".", ".."}; /* by cap: as much of "..." as fits */
    for (size_t cap = 1; cap < 4; cap++) {
        jp_text t = make(&g, cap);
        assert_text(&t, "", 0);
        jp_text_puts(&t, "abcdef");
        assert_text(&t, want[cap], 1);
        jp_text_puts(&t, "x");
        assert_text(&t, want[cap], 1);
        assert_guard_intact(&g);
    }
    /* cap 2 takes one byte whole */
    jp_text t = make(&g, 2);
    jp_text_putc(&t, 'a');
    assert_text(&t, "a", 0);
    /* cap 4: only the marker */
    t = make(&g, 4);
    jp_text_puts(&t, "abcd");
    assert_text(&t, "...", 1);
    /* cap 0: nothing, not even the NUL, and cut from the start */
    memset(g.mem, 'G', sizeof g.mem);
    t = jp_text_make(g.mem, 0);
    assert_int_equal(t.cut, 1);
    jp_text_puts(&t, "abc");
    jp_text_printf(&t, "%d", 1);
    assert_int_equal(t.len, 0);
    assert_int_equal(g.mem[0], 'G');
    t = jp_text_make(NULL, 0);
    jp_text_puts(&t, "abc");
    assert_int_equal(t.len, 0);
}

static void printf_within_and_past_the_end(void **state) {
    (void)state;
    guarded g;
    jp_text t = make(&g, 16);
    jp_text_printf(&t, "%s=%d", "n", 42);
    assert_text(&t, "n=42", 0);
    jp_text_printf(&t, "%s", "0123456789a"); /* 4 + 11 = 15: exactly full */
    assert_text(&t, "n=420123456789a", 0);
    t = make(&g, 16);
    jp_text_printf(&t, "%lld,%lld", 1234567890123LL, 9876543210987LL); /* 27 bytes into 16 */
    assert_text(&t, "123456789012...", 1);
    jp_text_printf(&t, "%d", 1);
    assert_text(&t, "123456789012...", 1);
    assert_guard_intact(&g);
    /* a long %s into a small printf: the would-be length is far past the capacity */
    char big[1000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    t = make(&g, 6);
    jp_text_puts(&t, "a");
    jp_text_printf(&t, "%s", big);
    assert_text(&t, "az...", 1);
    assert_guard_intact(&g);
}

static void clipped_pieces(void **state) {
    (void)state;
    guarded g;
    jp_text t = make(&g, 32);
    jp_text_put_clipped(&t, "short", 5, 5); /* exactly max: whole */
    jp_text_puts(&t, ":");
    jp_text_put_clipped(&t, "abcdefgh", 8, 6); /* 3 bytes and the marker */
    jp_text_puts(&t, ":12");
    assert_text(&t, "short:abc...:12", 0);
    t = make(&g, 32);
    jp_text_put_clipped(&t, "a\xe2\x82\xac" "bcdef", 9, 6); /* the euro sign would end at byte 4 > 3 */
    jp_text_printf(&t, ":%d", 7);
    assert_text(&t, "a...:7", 0);
    t = make(&g, 32);
    jp_text_put_clipped(&t, "abcdef", 6, 2); /* max under the marker's length */
    assert_text(&t, "..", 0);
    /* the whole text still cuts when the piece does not fit it */
    t = make(&g, 8);
    jp_text_put_clipped(&t, "abcdefghijkl", 12, 10);
    assert_text(&t, "abcd...", 1);
    assert_guard_intact(&g);
}

static void puts_of_null_is_nothing(void **state) {
    (void)state;
    guarded g;
    jp_text t = make(&g, 8);
    jp_text_puts(&t, NULL);
    assert_text(&t, "", 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fits_exactly_then_one_over),
        cmocka_unit_test(one_put_over_the_end),
        cmocka_unit_test(nothing_after_a_cut),
        cmocka_unit_test(many_small_appends),
        cmocka_unit_test(cut_inside_a_multibyte_character),
        cmocka_unit_test(bytes_that_are_not_utf8_are_kept),
        cmocka_unit_test(capacities_under_four),
        cmocka_unit_test(printf_within_and_past_the_end),
        cmocka_unit_test(clipped_pieces),
        cmocka_unit_test(puts_of_null_is_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
