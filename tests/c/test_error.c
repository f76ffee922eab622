/* test_error.c - status names and jp_error filling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/error.h"

static void status_names_are_distinct_and_stable(void **state) {
    (void)state;
    assert_string_equal(jp_status_str(JP_OK), "ok");
    assert_string_equal(jp_status_str(JP_ERR_IO), "i/o error");
    assert_string_equal(jp_status_str(JP_ERR_TRUNCATED), "truncated input");
    assert_string_equal(jp_status_str(JP_ERR_CORRUPT), "corrupt input");
    assert_string_equal(jp_status_str(JP_ERR_NOT_FOUND), "not found");
    assert_string_equal(jp_status_str(-999), "unknown status");
}

static void error_set_fills_code_offset_and_message(void **state) {
    (void)state;
    jp_error err;
    jp_error_clear(&err);
    int rc = jp_error_set(&err, JP_ERR_CORRUPT, 1234, "%s: bad tag %d", "a.xplane.pb", 7);
    assert_int_equal(rc, JP_ERR_CORRUPT);
    assert_int_equal(err.code, JP_ERR_CORRUPT);
    assert_int_equal(err.offset, 1234);
    assert_string_equal(err.msg, "a.xplane.pb: bad tag 7");
}

static void error_set_accepts_null_and_truncates_long_messages(void **state) {
    (void)state;
    assert_int_equal(jp_error_set(NULL, JP_ERR_IO, 0, "ignored"), JP_ERR_IO);
    char long_name[2000];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    jp_error err;
    jp_error_set(&err, JP_ERR_IO, 0, "%s", long_name);
    assert_int_equal(strlen(err.msg), JP_ERROR_MSG_MAX - 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(status_names_are_distinct_and_stable),
        cmocka_unit_test(error_set_fills_code_offset_and_message),
        cmocka_unit_test(error_set_accepts_null_and_truncates_long_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
