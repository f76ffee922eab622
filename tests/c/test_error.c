/* test_error.c - status names and jp_error filling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/error.h"

/* Every status, its name; a status added to jaxprof.h without a row here fails the last check. */
static const struct {
    int status;       /* a jp_status */
    const char *name; /* what jp_status_str says, stable: messages and logs quote it */
} STATUS_NAMES[] = {
    {JP_OK, "ok"},
    {JP_ERR_IO, "i/o error"},
    {JP_ERR_NOMEM, "out of memory"},
    {JP_ERR_TRUNCATED, "truncated input"},
    {JP_ERR_CORRUPT, "corrupt input"},
    {JP_ERR_ARG, "invalid argument"},
    {JP_ERR_NOT_FOUND, "not found"},
    {JP_ERR_LIMIT, "limit exceeded"},
};
enum { N_STATUS = sizeof STATUS_NAMES / sizeof STATUS_NAMES[0] };

static void status_names_are_distinct_and_stable(void **state) {
    (void)state;
    for (size_t i = 0; i < N_STATUS; i++) {
        assert_int_equal(STATUS_NAMES[i].status, -(int)i); /* JP_OK, then -1, -2, ... without a gap */
        assert_string_equal(jp_status_str(STATUS_NAMES[i].status), STATUS_NAMES[i].name);
        for (size_t j = 0; j < i; j++) assert_string_not_equal(STATUS_NAMES[i].name, STATUS_NAMES[j].name);
    }
    /* the next code after the last one, positive codes and far-off ones have no name of their own */
    assert_string_equal(jp_status_str(-(int)N_STATUS), "unknown status");
    assert_string_equal(jp_status_str(1), "unknown status");
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
