/* test_diff.c - jp_diff on hand-built analyses: being written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "jaxprof/jaxprof.h"

static void test_placeholder(void **state) { (void)state; }

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_placeholder)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
