/* test_columns.c - the tables' column descriptors (src/render/columns.c): each column declared
 * whole (key, getter, doc), keys unique per table, each table's rows where it says (jp_table_of),
 * and every getter sets the type its column
 * declares (the type the generated schema, Python classes and viewer lists promise) on every row
 * of the committed capture tests/data/cpu_small.xplane.pb.gz. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/columns.h"

static void every_column_is_declared_whole(void **state) {
    (void)state;
    for (int t = 0; t < JP_TABLE_COUNT; t++) {
        const jp_table_def *d = &jp_table_defs[t];
        assert_non_null(d->name);
        assert_non_null(d->py_class);
        assert_true(d->doc && *d->doc && d->where && *d->where);
        assert_true(d->n_cols > 0 && d->n_cols <= TABLE_MAX_COLS);
        assert_true(d->json_from < d->n_cols);
        for (int u = 0; u < t; u++) {
            assert_string_not_equal(jp_table_defs[u].name, d->name);
            assert_string_not_equal(jp_table_defs[u].py_class, d->py_class);
        }
        for (size_t i = 0; i < d->n_cols; i++) {
            const column *c = &d->cols[i];
            if (!c->key || !*c->key || !c->get || !c->doc || !*c->doc || strchr(c->doc, '\n'))
                fail_msg("%s column %zu: a key, a getter and a one-line doc", d->name, i);
            assert_true(c->type == CELL_STR || c->type == CELL_INT || c->type == CELL_TIME || c->type == CELL_PCT ||
                        c->type == CELL_NUM || c->type == CELL_BOOL || c->type == CELL_FRAMES || c->type == CELL_BYTES);
            assert_true(c->view >= 0 && c->view <= 2);
            for (size_t j = 0; j < i; j++)
                if (strcmp(d->cols[j].key, c->key) == 0) fail_msg("%s: column %s twice", d->name, c->key);
        }
    }
    assert_string_equal(jp_column_unit(&jp_table_defs[JP_TABLE_OPS].cols[3]), "ms"); /* total_ms: by type */
    assert_string_equal(jp_column_unit(&jp_table_defs[JP_TABLE_OPS].cols[9]), "GFLOP/s"); /* declared */
}

/* Every cell of the table's rows has the column's declared type (a name may carry its program;
 * a nullable column may be empty). */
static size_t check_rows(const jp_analysis *a, int id, const void *rows, size_t row_size, size_t n) {
    const jp_table_def *d = &jp_table_defs[id];
    for (size_t r = 0; r < n; r++)
        for (size_t i = 0; i < d->n_cols; i++) {
            cell c;
            d->cols[i].get(a, (const char *)rows + r * row_size, &c);
            int ok = c.type == d->cols[i].type || (c.type == CELL_NONE && d->cols[i].nullable) ||
                     (c.type == CELL_PROGRAM_STR && d->cols[i].type == CELL_STR);
            if (!ok)
                fail_msg("%s.%s row %zu: cell type %d, declared %d", d->name, d->cols[i].key, r, c.type,
                         d->cols[i].type);
        }
    return n;
}

static void getters_set_the_declared_types(void **state) {
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", JP_TEST_DATA, "cpu_small.xplane.pb.gz");
    jp_profile *p = NULL;
    jp_error err;
    jp_load_options opt = {.peak_tflops = 1, .peak_gbps = 100}; /* rates and roofs computed */
    if (jp_profile_load(&p, path, &opt, &err)) fail_msg("%s", err.msg);
    const jp_analysis *a = jp_profile_analysis(p);
    size_t rows = 0;
    rows += check_rows(a, JP_TABLE_DEVICES, a->devices, sizeof *a->devices, a->n_devices);
    rows += check_rows(a, JP_TABLE_KPIS, a->kpis, sizeof *a->kpis, a->n_kpis);
    rows += check_rows(a, JP_TABLE_OPS, a->ops, sizeof *a->ops, a->n_ops);
    rows += check_rows(a, JP_TABLE_STEPS, a->steps, sizeof *a->steps, a->n_steps);
    rows += check_rows(a, JP_TABLE_SCOPES, a->scopes, sizeof *a->scopes, a->n_scopes);
    rows += check_rows(a, JP_TABLE_TRANSFERS, a->transfers, sizeof *a->transfers, JP_XFER_COUNT);
    rows += check_rows(a, JP_TABLE_COMPILES, a->compiles, sizeof *a->compiles, a->n_compiles);
    rows += check_rows(a, JP_TABLE_FINDINGS, a->findings, sizeof *a->findings, a->n_findings);
    rows += check_rows(a, JP_TABLE_LINES, a->lines, sizeof *a->lines, a->n_lines);
    rows += check_rows(a, JP_TABLE_FLAME, a->flame, sizeof *a->flame, a->n_flame);
    rows += check_rows(a, JP_TABLE_MODULES, a->modules, sizeof *a->modules, a->n_modules);
    assert_true(a->n_modules > 0 && a->modules[0].n_buffers > 0);
    for (size_t m = 0; m < a->n_modules; m++)
        for (size_t b = 0; b < a->modules[m].n_buffers; b++) {
            buffer_row row = {&a->modules[m], &a->modules[m].buffers[b]};
            rows += check_rows(a, JP_TABLE_BUFFERS, &row, sizeof row, 1);
        }
    assert_true(a->n_ops == 2 && a->n_steps == 3 && a->n_lines > 0 && a->n_flame > 0); /* the fixture's */
    assert_true(rows > 20);
    jp_profile_free(p);
}

/* A table over the analysis's rows (jp_table_of) is its columns, those rows and their count, of the
 * declared row size; tables whose rows a renderer builds have none there but declare their size. */
static void tables_know_where_their_rows_are(void **state) {
    (void)state;
    jp_profile *p = NULL;
    jp_error err;
    if (jp_profile_load(&p, JP_TEST_DATA "/cpu_small.xplane.pb.gz", NULL, &err)) fail_msg("%s", err.msg);
    const jp_analysis *a = jp_profile_analysis(p);
    const struct { int id; const void *rows; size_t n, size; } AT[] = {
        {JP_TABLE_DEVICES, a->devices, a->n_devices, sizeof *a->devices},
        {JP_TABLE_OPS, a->ops, a->n_ops, sizeof *a->ops},
        {JP_TABLE_STEPS, a->steps, a->n_steps, sizeof *a->steps},
        {JP_TABLE_TRANSFERS, a->transfers, JP_XFER_COUNT, sizeof *a->transfers},
        {JP_TABLE_FINDINGS, a->findings, a->n_findings, sizeof *a->findings},
        {JP_TABLE_FLAME, a->flame, a->n_flame, sizeof *a->flame},
        {JP_TABLE_MODULES, a->modules, a->n_modules, sizeof *a->modules},
        {JP_TABLE_STRAGGLERS, a->stragglers, a->n_stragglers, sizeof *a->stragglers},
    };
    for (size_t i = 0; i < sizeof AT / sizeof AT[0]; i++) {
        table t = jp_table_of(a, AT[i].id);
        assert_string_equal(t.name, jp_table_defs[AT[i].id].name);
        assert_ptr_equal(t.cols, jp_table_defs[AT[i].id].cols);
        assert_ptr_equal(t.rows, AT[i].rows);
        assert_int_equal(t.n_rows, AT[i].n);
        assert_int_equal(t.row_size, AT[i].size);
    }
    assert_true(a->n_ops == 2 && a->n_devices == 1);
    assert_string_equal(jp_table_of(a, JP_TABLE_OPS).default_sort, "self_ms"); /* the only table sorted */
    for (int t = 0; t < JP_TABLE_COUNT; t++) {
        assert_true(jp_table_defs[t].row_size > 0);
        if (t != JP_TABLE_OPS) assert_null(jp_table_defs[t].default_sort);
    }
    const int BUILT[] = {JP_TABLE_HOST_STEPS, JP_TABLE_BUFFERS, JP_TABLE_DIFF_ROWS, JP_TABLE_DIFF_BREAKDOWN,
                         JP_TABLE_DIFF_FINDINGS};
    for (size_t i = 0; i < sizeof BUILT / sizeof BUILT[0]; i++) {
        assert_null(jp_table_defs[BUILT[i]].rows);
        assert_int_equal(jp_table_of(a, BUILT[i]).n_rows, 0);
    }
    assert_int_equal(jp_table_defs[JP_TABLE_BUFFERS].row_size, sizeof(buffer_row));
    buffer_row two[2] = {{&a->modules[0], &a->modules[0].buffers[0]}, {&a->modules[0], &a->modules[0].buffers[0]}};
    table built = jp_table_over(JP_TABLE_BUFFERS, two, 2);
    assert_true(built.rows == two && built.n_rows == 2 && built.n_cols == jp_table_defs[JP_TABLE_BUFFERS].n_cols);
    for (int bad = -1; bad <= JP_TABLE_COUNT; bad += JP_TABLE_COUNT + 1) { /* no table: nothing at all */
        table none = jp_table_of(a, bad);
        assert_true(none.n_cols == 0 && none.n_rows == 0 && none.rows == NULL && strcmp(none.name, "") == 0);
    }
    jp_profile_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_column_is_declared_whole),
        cmocka_unit_test(getters_set_the_declared_types),
        cmocka_unit_test(tables_know_where_their_rows_are),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
