/* test_runs.c - finding profile runs and extracting their compressed files, in directory trees built by the test. */
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
#include <zlib.h>

#include "pbwrite.h"

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
    assert_string_equal(latest->hosts[0], "hostA");
    assert_string_equal(latest->files[0], "hostA.xplane.pb");
    assert_string_equal(latest->hosts[1], "hostB");
    assert_string_equal(latest->files[1], "hostB.xplane.pb.gz");
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

/* ---- jp_runs_extract ------------------------------------------------------------------------- */

static char xroot[1024]; /* its own tree, so the runs above stay exactly as counted */

enum { BIG = 300000 }; /* spans several of the extractor's 64 KiB chunks */

/* Deterministic bytes that compress, but not to nothing. */
static unsigned char *make_payload(size_t n, unsigned seed) {
    unsigned char *p = malloc(n);
    assert_non_null(p);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)("{\"ts\":12,\"name\":\"op\"}\n"[(x >> 16) % 22] ^ ((x >> 28) == 0 ? 1 : 0));
    }
    return p;
}

static void xpath(char *buf, size_t cap, const char *rel) { snprintf(buf, cap, "%s/%s", xroot, rel); }

static void write_bytes(const char *rel, const void *data, size_t n) {
    char path[2048];
    xpath(path, sizeof path, rel);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* Reads a whole file; NULL when it does not exist. */
static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)size + 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    *n = (size_t)size;
    return p;
}

static void assert_file_equals(const char *path, const void *data, size_t n) {
    size_t got_n = 0;
    unsigned char *got = slurp(path, &got_n);
    assert_non_null(got);
    assert_int_equal(got_n, n);
    assert_memory_equal(got, data, n);
    free(got);
}

static int exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Paths handed to on_file, in order. */
typedef struct seen {
    char paths[8][2048];
    size_t n;
} seen;

static void collect(void *ctx, const char *path) {
    seen *s = ctx;
    assert_true(s->n < 8);
    snprintf(s->paths[s->n++], sizeof s->paths[0], "%s", path);
}

/* jp_temp_hook: collects the temporary names, not the NULL that says "gone". */
static void hear(void *ctx, const char *path) {
    if (path) collect(ctx, path);
}

static int setup_extract(void **state) {
    (void)state;
    const char *base = getenv("TEST_TMPDIR");
    snprintf(xroot, sizeof xroot, "%s/extract_XXXXXX", base ? base : "/tmp");
    assert_non_null(mkdtemp(xroot));
    return 0;
}

/* Makes xroot/<name> as a fresh directory. */
static void fresh_dir(const char *name) {
    char path[2048];
    xpath(path, sizeof path, name);
    assert_int_equal(mkdir(path, 0755), 0);
}

static void gz_files_decompress_byte_exact_into_out_dir(void **state) {
    (void)state;
    fresh_dir("run1");
    unsigned char *big = make_payload(BIG, 1), *plain = make_payload(777, 2);
    size_t gz_n;
    unsigned char *gz = pbw_gzip(big, BIG, &gz_n);
    write_bytes("run1/host.trace.json.gz", gz, gz_n);
    write_bytes("run1/host.xplane.pb", plain, 777);
    write_bytes("run1/notes.txt", "hi", 2);
    char run[2048], out[2048], expect[2048];
    xpath(run, sizeof run, "run1");
    xpath(out, sizeof out, "out1/deeper"); /* neither exists yet */
    seen s = {0};
    jp_error err;
    assert_int_equal(jp_runs_extract(run, out, NULL, collect, &s, &err), JP_OK);
    assert_int_equal(err.code, JP_OK);
    assert_int_equal(s.n, 2); /* written first, then the plain trace file left in place */
    xpath(expect, sizeof expect, "out1/deeper/host.trace.json");
    assert_string_equal(s.paths[0], expect);
    assert_file_equals(expect, big, BIG);
    xpath(expect, sizeof expect, "run1/host.xplane.pb");
    assert_string_equal(s.paths[1], expect);
    assert_file_equals(expect, plain, 777); /* reported, not rewritten, not copied */
    xpath(expect, sizeof expect, "out1/deeper/host.xplane.pb");
    assert_false(exists(expect));
    xpath(expect, sizeof expect, "out1/deeper/host.trace.json.tmp");
    assert_false(exists(expect));
    xpath(expect, sizeof expect, "run1/host.trace.json.gz");
    assert_file_equals(expect, gz, gz_n); /* the source is untouched */
    free(big);
    free(plain);
    free(gz);
}

static void in_place_reports_each_file_once(void **state) {
    (void)state;
    fresh_dir("run2");
    unsigned char *a = make_payload(5000, 3), *b = make_payload(100, 4);
    size_t a_n, b_n;
    unsigned char *ga = pbw_gzip(a, 5000, &a_n), *gb = pbw_gzip(b, 100, &b_n);
    /* Two members back to back decompress to both payloads, as gzip -d does. */
    unsigned char *two = malloc(a_n + b_n);
    assert_non_null(two);
    memcpy(two, ga, a_n);
    memcpy(two + a_n, gb, b_n);
    write_bytes("run2/perfetto_trace.json.gz", two, a_n + b_n);
    write_bytes("run2/perfetto_trace.json", "stale", 5); /* replaced by the .gz's contents */
    write_bytes("run2/h.pftrace", b, 100);
    char run[2048], expect[2048];
    xpath(run, sizeof run, "run2/"); /* a trailing slash does not double in the paths */
    seen s = {0};
    jp_error err;
    assert_int_equal(jp_runs_extract(run, NULL, NULL, collect, &s, &err), JP_ERR_ARG); /* "stale" differs */
    assert_non_null(strstr(err.msg, "perfetto_trace.json: exists and differs from what"));
    assert_non_null(strstr(err.msg, "(remove it, or extract with the force option)")); /* the option, not a flag */
    xpath(expect, sizeof expect, "run2/perfetto_trace.json");
    assert_file_equals(expect, "stale", 5); /* not replaced */
    const jp_extract_options force = {.force = 1};
    assert_int_equal(jp_runs_extract(run, NULL, &force, collect, &s, NULL), JP_OK);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.paths[0], expect);
    unsigned char *ab = malloc(5100);
    assert_non_null(ab);
    memcpy(ab, a, 5000);
    memcpy(ab + 5000, b, 100);
    assert_file_equals(expect, ab, 5100);
    xpath(expect, sizeof expect, "run2/h.pftrace");
    assert_string_equal(s.paths[1], expect);
    free(a), free(b), free(ga), free(gb), free(two), free(ab);
}

/* Issue 30: an output that already holds the .gz's bytes is kept (the same inode: not rewritten),
 * and the hook hears the random temporary name the output was made under. */
static void an_identical_output_is_kept_and_the_hook_hears_the_temporary_name(void **state) {
    (void)state;
    fresh_dir("run7");
    unsigned char *data = make_payload(BIG, 9);
    size_t gz_n;
    unsigned char *gz = pbw_gzip(data, BIG, &gz_n);
    write_bytes("run7/h.xplane.pb.gz", gz, gz_n);
    write_bytes("run7/h.xplane.pb", data, BIG);
    char run[2048], path[2048];
    xpath(run, sizeof run, "run7");
    xpath(path, sizeof path, "run7/h.xplane.pb");
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    seen heard = {0};
    jp_extract_options opt = {.temp = {hear, &heard}};
    seen s = {0};
    assert_int_equal(jp_runs_extract(run, NULL, &opt, collect, &s, NULL), JP_OK);
    assert_int_equal(stat(path, &after), 0);
    assert_int_equal(before.st_ino, after.st_ino);
    assert_file_equals(path, data, BIG);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.paths[0], path);
    assert_int_equal(heard.n, 1); /* the name it was made under, then removed */
    assert_non_null(strstr(heard.paths[0], "/.h.xplane.pb."));
    assert_false(exists(heard.paths[0]));
    data[BIG / 2] ^= 1; /* one byte in the middle differs: refused, left alone */
    write_bytes("run7/h.xplane.pb", data, BIG);
    jp_error err;
    assert_int_equal(jp_runs_extract(run, NULL, NULL, NULL, NULL, &err), JP_ERR_ARG);
    assert_file_equals(path, data, BIG);
    write_bytes("run7/h.xplane.pb", data, 10); /* a prefix of it differs too */
    assert_int_equal(jp_runs_extract(run, NULL, NULL, NULL, NULL, &err), JP_ERR_ARG);
    free(data);
    free(gz);
}

/* Extracts run3 holding only t.trace.json.gz = bytes; checks the error and that nothing is left. */
static void assert_bad_gz(const void *bytes, size_t n, int code, uint64_t offset, const char *what) {
    char run[2048], path[2048];
    xpath(run, sizeof run, "run3");
    xpath(path, sizeof path, "run3/t.trace.json.gz");
    write_bytes("run3/t.trace.json.gz", bytes, n);
    jp_error err;
    seen s = {0};
    assert_int_equal(jp_runs_extract(run, NULL, NULL, collect, &s, &err), code);
    assert_int_equal(err.code, code);
    assert_int_equal(err.offset, offset);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, what));
    assert_int_equal(s.n, 0);
    xpath(path, sizeof path, "run3/t.trace.json");
    assert_false(exists(path));
    xpath(path, sizeof path, "run3/t.trace.json.tmp");
    assert_false(exists(path));
}

static void corrupt_or_truncated_gz_names_file_and_offset_and_leaves_nothing(void **state) {
    (void)state;
    fresh_dir("run3");
    unsigned char *data = make_payload(BIG, 5);
    size_t gz_n;
    unsigned char *gz = pbw_gzip(data, BIG, &gz_n);
    assert_bad_gz(gz, gz_n / 2, JP_ERR_TRUNCATED, gz_n / 2, "truncated gzip data");
    assert_bad_gz(gz, gz_n - 1, JP_ERR_TRUNCATED, gz_n - 1, "truncated gzip data"); /* inside the trailer */
    assert_bad_gz("", 0, JP_ERR_TRUNCATED, 0, "empty file");
    assert_bad_gz("hello, not gzip", 15, JP_ERR_CORRUPT, 2, "incorrect header check");
    gz[gz_n - 8] ^= 1; /* the CRC-32 of the trailer */
    assert_bad_gz(gz, gz_n, JP_ERR_CORRUPT, gz_n - 4, "incorrect data check");
    free(data);
    free(gz);
}

static void symlinks_are_not_followed(void **state) {
    (void)state;
    fresh_dir("run4");
    unsigned char *data = make_payload(1000, 6);
    size_t gz_n;
    unsigned char *gz = pbw_gzip(data, 1000, &gz_n);
    write_bytes("outside.trace.json.gz", gz, gz_n);
    write_bytes("outside.xplane.pb", data, 1000);
    char target[2048], link_path[2048], run[2048];
    xpath(target, sizeof target, "outside.trace.json.gz");
    xpath(link_path, sizeof link_path, "run4/linked.trace.json.gz");
    assert_int_equal(symlink(target, link_path), 0);
    xpath(target, sizeof target, "outside.xplane.pb");
    xpath(link_path, sizeof link_path, "run4/linked.xplane.pb");
    assert_int_equal(symlink(target, link_path), 0);
    xpath(run, sizeof run, "run4");
    seen s = {0};
    assert_int_equal(jp_runs_extract(run, NULL, NULL, collect, &s, NULL), JP_OK);
    assert_int_equal(s.n, 0);
    xpath(link_path, sizeof link_path, "run4/linked.trace.json");
    assert_false(exists(link_path));
    free(data);
    free(gz);
}

static void missing_dirs_and_bad_arguments(void **state) {
    (void)state;
    char run[2048], file[2048];
    jp_error err;
    xpath(run, sizeof run, "no-such-run");
    assert_int_equal(jp_runs_extract(run, NULL, NULL, NULL, NULL, &err), JP_ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "no-such-run"));
    assert_int_equal(jp_runs_extract(run, NULL, NULL, NULL, NULL, NULL), JP_ERR_NOT_FOUND);
    assert_int_equal(jp_runs_extract("", NULL, NULL, NULL, NULL, &err), JP_ERR_ARG);
    assert_int_equal(jp_runs_extract(NULL, NULL, NULL, NULL, NULL, &err), JP_ERR_ARG);
    fresh_dir("run5");
    write_bytes("run5/a_file", "x", 1);
    xpath(run, sizeof run, "run5");
    xpath(file, sizeof file, "run5/a_file");
    assert_int_equal(jp_runs_extract(run, file, NULL, NULL, NULL, &err), JP_ERR_IO); /* out is not a directory */
    assert_non_null(strstr(err.msg, "a_file"));
    assert_int_equal(jp_runs_extract(file, NULL, NULL, NULL, NULL, &err), JP_ERR_IO); /* run is not a directory */
}

static void never_overwrites_a_compressed_source(void **state) {
    (void)state;
    fresh_dir("run6");
    size_t gz_n;
    unsigned char *gz = pbw_gzip("inner", 5, &gz_n);
    write_bytes("run6/x.json.gz", gz, gz_n);
    write_bytes("run6/x.json.gz.gz", gz, gz_n);
    char run[2048], path[2048];
    xpath(run, sizeof run, "run6");
    jp_error err;
    assert_int_equal(jp_runs_extract(run, NULL, NULL, NULL, NULL, &err), JP_ERR_ARG);
    assert_non_null(strstr(err.msg, "x.json.gz.gz"));
    xpath(path, sizeof path, "run6/x.json.gz");
    assert_file_equals(path, gz, gz_n);
    free(gz);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finds_every_run_oldest_first),
        cmocka_unit_test(trailing_slash_gives_same_paths),
        cmocka_unit_test(directory_without_runs_is_empty_not_error),
        cmocka_unit_test(missing_directory_is_not_found_with_path),
    };
    const struct CMUnitTest extract_tests[] = {
        cmocka_unit_test(gz_files_decompress_byte_exact_into_out_dir),
        cmocka_unit_test(in_place_reports_each_file_once),
        cmocka_unit_test(an_identical_output_is_kept_and_the_hook_hears_the_temporary_name),
        cmocka_unit_test(corrupt_or_truncated_gz_names_file_and_offset_and_leaves_nothing),
        cmocka_unit_test(symlinks_are_not_followed),
        cmocka_unit_test(missing_dirs_and_bad_arguments),
        cmocka_unit_test(never_overwrites_a_compressed_source),
    };
    int failed = cmocka_run_group_tests_name("runs", tests, setup, NULL);
    return failed + cmocka_run_group_tests_name("extract", extract_tests, setup_extract, NULL);
}
