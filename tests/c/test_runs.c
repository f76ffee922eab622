/* test_runs.c - finding profile runs in a directory tree built by the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "jaxprof/jaxprof.h"

static char root[1024];

static void make_dir(const char *rel) {
    char path[2048], *p;
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (p = path + strlen(root) + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    }
    mkdir(path, 0755);
}

/* Writes size bytes at root/rel and stamps it with mtime seconds since the epoch. */
static void make_file(const char *rel, size_t size, long mtime) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (size_t i = 0; i < size; i++) fputc('x', f);
    fclose(f);
    struct timeval tv[2] = {{mtime, 0}, {mtime, 0}};
    assert_int_equal(utimes(path, tv), 0);
}

static int setup(void **state) {
    (void)state;
    const char *base = getenv("TEST_TMPDIR");
    snprintf(root, sizeof root, "%s/runs_XXXXXX", base ? base : "/tmp");
    assert_non_null(mkdtemp(root));
    make_dir("step_00000010/plugins/profile/2026_01_01_00_00_10");
    make_file("step_00000010/plugins/profile/2026_01_01_00_00_10/hostA.xplane.pb", 100, 1000);
    make_file("step_00000010/plugins/profile/2026_01_01_00_00_10/hostA.trace.json.gz", 7, 1000);
    make_dir("step_00000020/plugins/profile/2026_01_01_00_00_20");
    make_file("step_00000020/plugins/profile/2026_01_01_00_00_20/hostA.xplane.pb", 30, 3000);
    make_file("step_00000020/plugins/profile/2026_01_01_00_00_20/hostB.xplane.pb.gz", 12, 2000);
    make_dir("plugins/profile/older");
    make_file("plugins/profile/older/h.xplane.pb", 1, 500);
    make_dir("empty/plugins/profile/nothing");
    make_file("empty/plugins/profile/nothing/notes.txt", 3, 4000);
    char target[2048], link_path[2048];
    snprintf(target, sizeof target, "%s/step_00000020", root);
    snprintf(link_path, sizeof link_path, "%s/link_to_step20", root);
    assert_int_equal(symlink(target, link_path), 0);
    return 0;
}

static void finds_every_run_oldest_first(void **state) {
    (void)state;
    jp_runs runs;
    jp_error err;
    assert_int_equal(jp_runs_find(&runs, root, &err), JP_OK);
    assert_int_equal(runs.count, 3); /* the symlinked copy of step 20 is not followed */
    assert_string_equal(runs.runs[0].name, "older");
    assert_string_equal(runs.runs[1].name, "2026_01_01_00_00_10");
    assert_int_equal(runs.runs[1].n_files, 1);
    assert_int_equal(runs.runs[1].bytes, 100);
    assert_int_equal(runs.runs[1].mtime_ns, 1000LL * 1000000000LL);
    const jp_run *latest = jp_runs_latest_view(&runs);
    assert_string_equal(latest->name, "2026_01_01_00_00_20");
    assert_int_equal(latest->n_files, 2);
    assert_int_equal(latest->bytes, 42);
    assert_int_equal(latest->mtime_ns, 3000LL * 1000000000LL);
    char expect[2048];
    snprintf(expect, sizeof expect, "%s/step_00000020/plugins/profile/2026_01_01_00_00_20", root);
    assert_string_equal(latest->path, expect);
    jp_runs_deinit(&runs);
}

static void trailing_slash_gives_same_paths(void **state) {
    (void)state;
    char with_slash[1100];
    snprintf(with_slash, sizeof with_slash, "%s/", root);
    jp_runs runs;
    assert_int_equal(jp_runs_find(&runs, with_slash, NULL), JP_OK);
    assert_int_equal(runs.count, 3);
    assert_null(strstr(runs.runs[0].path, "//"));
    jp_runs_deinit(&runs);
}

static void directory_without_runs_is_empty_not_error(void **state) {
    (void)state;
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/empty", root);
    jp_runs runs;
    assert_int_equal(jp_runs_find(&runs, dir, NULL), JP_OK);
    assert_int_equal(runs.count, 0);
    assert_null(jp_runs_latest_view(&runs));
    jp_runs_deinit(&runs);
}

static void missing_directory_is_not_found_with_path(void **state) {
    (void)state;
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/does-not-exist", root);
    jp_runs runs;
    jp_error err;
    assert_int_equal(jp_runs_find(&runs, dir, &err), JP_ERR_NOT_FOUND);
    assert_int_equal(err.code, JP_ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "does-not-exist"));
    assert_int_equal(runs.count, 0);
    jp_runs_deinit(&runs);
    assert_int_equal(jp_runs_find(&runs, "", &err), JP_ERR_ARG);
    jp_runs_deinit(&runs);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finds_every_run_oldest_first),
        cmocka_unit_test(trailing_slash_gives_same_paths),
        cmocka_unit_test(directory_without_runs_is_empty_not_error),
        cmocka_unit_test(missing_directory_is_not_found_with_path),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
