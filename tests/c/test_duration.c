/* test_duration.c - jp_duration_parse (src/base/duration.c): the one spelling of a duration that
 * every jaxprof option and the Python package take. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "jaxprof/jaxprof.h"

#define MS INT64_C(1000000000)

static int64_t parsed(const char *text, int64_t bare_ps) {
    int64_t ps = -42;
    assert_int_equal(jp_duration_parse(text, bare_ps, &ps), 0);
    return ps;
}

/* Each unit, fractions, and a bare number in the option's own unit. */
static void units_and_bare_numbers(void **state) {
    (void)state;
    assert_int_equal(parsed("500us", MS), 500 * INT64_C(1000000));
    assert_int_equal(parsed("500\xc2\xb5s", MS), 500 * INT64_C(1000000));
    assert_int_equal(parsed("10ms", 1), 10 * MS);
    assert_int_equal(parsed("2s", 1), 2000 * MS);
    assert_int_equal(parsed("2.5s", 1), 2500 * MS);
    assert_int_equal(parsed("1min", 1), 60000 * MS);
    assert_int_equal(parsed("7ns", 1), 7000);
    assert_int_equal(parsed("0", MS), 0);
    assert_int_equal(parsed("120", 1000 * MS), 120000 * MS); /* view --time-limit: seconds */
    assert_int_equal(parsed("50", 1000000), 50000000);        /* export --min-duration: us */
    assert_int_equal(parsed(".5ms", 1), MS / 2);
}

/* No sign, exponent, space, unknown unit, empty or overflowing value. */
static void what_is_not_a_duration(void **state) {
    (void)state;
    const char *bad[] = {"", "-1s", "+1s", "1e3", "1 s", "s", "1sec", "1m", "ms", ".", "1..2", "inf", "nan",
                         "200000000s", "99999999999999999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ps = -42;
        if (jp_duration_parse(bad[i], MS, &ps) != -1) fail_msg("'%s' parsed", bad[i]);
        assert_int_equal(ps, -42);
    }
    int64_t ps;
    assert_int_equal(jp_duration_parse(NULL, MS, &ps), -1);
    assert_int_equal(jp_duration_parse("1", 0, &ps), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(units_and_bare_numbers),
        cmocka_unit_test(what_is_not_a_duration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
