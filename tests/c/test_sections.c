/* test_sections.c - the section registry (src/render/sections.c): one row per jp_section in enum
 * order, and jp_render refusing what a row says its section does not take, on the committed
 * capture tests/data/cpu_small.xplane.pb.gz. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jaxprof/jaxprof.h"
#include "jaxprof/jaxprof_results.h"
#include "render/columns.h"

#ifndef JP_TEST_DATA
#define JP_TEST_DATA "tests/data"
#endif

/* Every row: its own id, a name that maps back to it, texts, a reason exactly when whole-run, a
 * table (columns.c) with rows in the analysis but for the report. */
static void rows_follow_the_enum(void **state) {
    (void)state;
    for (int s = 0; s < JP_SECTION_COUNT; s++) {
        const jp_section_def *d = jp_section_get(s);
        assert_non_null(d);
        assert_int_equal(d->id, s);
        assert_int_equal(jp_section_from_name(d->name), s);
        assert_string_equal(jp_section_name(s), d->name);
        assert_true(d->summary && *d->summary && !strchr(d->summary, '\n'));
        assert_true(d->help && d->help[strlen(d->help) - 1] == '\n');
        assert_int_equal(d->whole_run_why != NULL, (d->flags & JP_SECTION_WHOLE_RUN) != 0);
        if (s == JP_SECTION_REPORT) assert_int_equal(d->table, -1); /* the report: the others' tables */
        else if (d->table < 0 || d->table >= JP_TABLE_COUNT || !jp_table_defs[d->table].rows)
            fail_msg("%s: a table whose rows the analysis keeps", d->name);
    }
    assert_null(jp_section_get(-1));
    assert_null(jp_section_get(JP_SECTION_COUNT));
    assert_int_equal(jp_section_from_name("overview"), -1);
    assert_int_equal(jp_section_from_name(NULL), -1);
    assert_string_equal(jp_section_name(JP_SECTION_COUNT), "?");
    /* the flags as the CLI and the viewer relied on before the registry */
    assert_true(jp_section_get(JP_SECTION_KERNELS)->flags & JP_SECTION_WHOLE_RUN);
    assert_true(jp_section_get(JP_SECTION_HOSTS)->flags & JP_SECTION_WHOLE_RUN);
    assert_true(jp_section_get(JP_SECTION_MEMORY)->flags & JP_SECTION_TAKES_MODULE);
    assert_false(jp_section_get(JP_SECTION_OPS)->flags & (JP_SECTION_WHOLE_RUN | JP_SECTION_TAKES_MODULE));
}

static jp_profile *load(int window) {
    jp_load_options opt = {.has_steps = window, .first_step = 1, .last_step = 2};
    jp_profile *p;
    jp_error err;
    if (jp_profile_load(&p, JP_TEST_DATA "/cpu_small.xplane.pb.gz", &opt, &err) != JP_OK) fail_msg("%s", err.msg);
    return p;
}

static int render(const jp_profile *p, int section, int format, const jp_view *view, jp_error *err) {
    FILE *null = fopen("/dev/null", "w");
    assert_non_null(null);
    int rc = jp_render(jp_profile_analysis(p), section, format, view, null, err);
    fclose(null);
    return rc;
}

/* A step window: whole-run sections refuse it (with the row's reason), the rest render. */
static void whole_run_sections_refuse_a_window(void **state) {
    (void)state;
    jp_profile *p = load(1);
    assert_true(jp_profile_analysis(p)->step_window);
    for (int s = 0; s < JP_SECTION_COUNT; s++) {
        const jp_section_def *d = jp_section_get(s);
        jp_error err;
        int rc = render(p, s, JP_FORMAT_JSON, NULL, &err);
        if (d->flags & JP_SECTION_WHOLE_RUN) {
            assert_int_equal(rc, JP_ERR_ARG);
            assert_non_null(strstr(err.msg, d->whole_run_why));
            assert_int_equal(strncmp(err.msg, d->name, strlen(d->name)), 0);
        } else if (rc != JP_OK) {
            fail_msg("%s in a window: %s", d->name, err.msg);
        }
    }
    jp_profile_free(p);
    p = load(0);
    assert_false(jp_profile_analysis(p)->step_window);
    jp_error err;
    assert_int_equal(render(p, JP_SECTION_KERNELS, JP_FORMAT_JSON, NULL, &err), JP_OK);
    jp_profile_free(p);
}

/* A module view: refused by every section but those that take one; --columns by multi-table
 * sections; CSV by the report. */
static void views_a_section_does_not_take_are_refused(void **state) {
    (void)state;
    jp_profile *p = load(0);
    jp_view module = {.module = "no such module"}, columns = {.columns = "name"};
    for (int s = 0; s < JP_SECTION_COUNT; s++) {
        const jp_section_def *d = jp_section_get(s);
        jp_error err;
        int rc = render(p, s, JP_FORMAT_TEXT, &module, &err);
        assert_int_equal(rc, JP_ERR_ARG); /* memory: the module is unknown; the rest: no module at all */
        if (!(d->flags & JP_SECTION_TAKES_MODULE))
            assert_non_null(strstr(err.msg, "takes no module"));
        rc = render(p, s, JP_FORMAT_CSV, NULL, &err);
        assert_int_equal(rc, d->flags & JP_SECTION_NO_CSV ? JP_ERR_ARG : JP_OK);
        if (d->flags & JP_SECTION_TABLES) assert_int_equal(render(p, s, JP_FORMAT_JSON, &columns, &err), JP_ERR_ARG);
    }
    jp_profile_free(p);
}

/* The JSON report carries the table of every section flagged in-report, in registry order. */
static void the_report_holds_the_in_report_tables_in_order(void **state) {
    (void)state;
    jp_profile *p = load(0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    jp_error err;
    assert_int_equal(jp_render(jp_profile_analysis(p), JP_SECTION_REPORT, JP_FORMAT_JSON, NULL, f, &err), JP_OK);
    fclose(f);
    const char *at = buf;
    int n = 0;
    for (int s = 0; s < JP_SECTION_COUNT; s++) {
        const jp_section_def *d = jp_section_get(s);
        char key[64];
        snprintf(key, sizeof key, "\"%s\":[", d->name);
        const char *hit = strstr(buf, key);
        if (!(d->flags & JP_SECTION_IN_REPORT)) continue; /* ("hosts" is also the header's list of hosts) */
        if (!hit || hit < at) fail_msg("%s missing from the report or out of order", d->name);
        at = hit;
        n++;
    }
    assert_int_equal(n, 10); /* ops steps scopes kernels memory transfers compiles findings lines comm */
    assert_null(strstr(buf, "\"flame\":[")); /* not flagged in-report */
    free(buf);
    jp_profile_free(p);
}

/* Each section's JSON document holds the table its registry row names, under that table's name. */
static void each_section_renders_the_table_it_names(void **state) {
    (void)state;
    jp_profile *p = load(0);
    for (int s = 0; s < JP_SECTION_COUNT; s++) {
        const jp_section_def *d = jp_section_get(s);
        char *buf = NULL, key[64];
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        jp_error err;
        assert_int_equal(jp_render(jp_profile_analysis(p), s, JP_FORMAT_JSON, NULL, f, &err), JP_OK);
        fclose(f);
        snprintf(key, sizeof key, "\"%s\":[", d->table >= 0 ? jp_table_defs[d->table].name : "kpis");
        if (!strstr(buf, key)) fail_msg("%s: no %s in its JSON", d->name, key);
        free(buf);
    }
    jp_profile_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rows_follow_the_enum),
        cmocka_unit_test(whole_run_sections_refuse_a_window),
        cmocka_unit_test(views_a_section_does_not_take_are_refused),
        cmocka_unit_test(the_report_holds_the_in_report_tables_in_order),
        cmocka_unit_test(each_section_renders_the_table_it_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
