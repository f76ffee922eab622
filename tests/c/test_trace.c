/* test_trace.c - jp_trace_export under ASan/UBSan: counts on the real CPU fixture in both formats,
 * cuts that add up, and bad input (every 61st prefix, 300 byte flips) ending in a clean error that
 * names the file with no output or .tmp left, or in a complete export. */
#define _GNU_SOURCE /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "jaxprof/jaxprof_xspace.h"

#ifndef JP_TEST_DATA
#define JP_TEST_DATA "tests/data"
#endif

static char tmpdir[1024];

static void path_in_tmp(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", tmpdir, name); }

/* The file's bytes, gunzipped when compressed (zlib's gz reader handles both). */
static char *slurp(const char *path, size_t *len) {
    gzFile f = gzopen(path, "rb");
    assert_non_null(f);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    int got;
    while ((got = gzread(f, buf + n, (unsigned)(cap - n))) > 0) {
        n += (size_t)got;
        if (n == cap) buf = realloc(buf, (cap *= 2) + 1);
    }
    gzclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static size_t count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++) n++;
    return n;
}

static uint64_t fixture_events(void) {
    jp_xspace *xs;
    jp_error err;
    assert_int_equal(jp_xspace_open(&xs, JP_TEST_DATA "/cpu_small.xplane.pb.gz", &err), JP_OK);
    uint64_t n = jp_xspace_event_count(xs);
    jp_xspace_close(xs);
    return n;
}

static void test_chrome_export_counts(void **state) {
    (void)state;
    char out[1100];
    path_in_tmp(out, sizeof out, "t.json.gz");
    jp_trace_stats st;
    jp_error err;
    assert_int_equal(jp_trace_export(JP_TEST_DATA "/cpu_small.xplane.pb.gz", out, NULL, &st, &err), JP_OK);
    assert_int_equal(st.events_in, fixture_events());
    assert_int_equal(st.events_out, st.events_in);
    assert_int_equal(st.events_cut, 0);
    size_t len;
    char *json = slurp(out, &len);
    assert_int_equal(count(json, "{\"ph\":\"X\"") + count(json, "{\"ph\":\"i\""), st.events_out + st.derived);
    assert_int_equal(count(json, "{\"ph\":\"s\""), st.flows);
    assert_non_null(strstr(json, "\"events_out\":"));
    free(json);
    unlink(out);
}

/* The export reads its input with the caller's inflate limit (jp_trace_options.max_inflate, as
 * jp_load_options'), never with one from the environment, and names the option neutrally. */
static void test_export_takes_max_inflate(void **state) {
    (void)state;
    char out[1100];
    path_in_tmp(out, sizeof out, "limited.json");
    jp_trace_options opt = jp_trace_options_default();
    opt.max_inflate = 1000; /* the fixture inflates to far more */
    jp_error err;
    assert_int_equal(jp_trace_export(JP_TEST_DATA "/cpu_small.xplane.pb.gz", out, &opt, NULL, &err), JP_ERR_LIMIT);
    assert_non_null(strstr(err.msg, "cpu_small.xplane.pb.gz: gzip data at byte "));
    assert_non_null(strstr(err.msg, "inflates beyond 1000 bytes (the limit: max_inflate); if the file is genuine, "
                                    "raise the max_inflate limit"));
    assert_int_equal(access(out, F_OK), -1); /* nothing written */
    opt.max_inflate = (uint64_t)64 << 20;
    assert_int_equal(jp_trace_export(JP_TEST_DATA "/cpu_small.xplane.pb.gz", out, &opt, NULL, &err), JP_OK);
    unlink(out);
}

static void test_perfetto_export_is_plain_protobuf(void **state) {
    (void)state;
    char out[1100];
    path_in_tmp(out, sizeof out, "t.pftrace");
    jp_trace_options opt = jp_trace_options_default();
    opt.format = JP_TRACE_PERFETTO;
    jp_trace_stats st;
    jp_error err;
    assert_int_equal(jp_trace_export(JP_TEST_DATA "/cpu_small.xplane.pb.gz", out, &opt, &st, &err), JP_OK);
    assert_int_equal(st.events_out, fixture_events());
    size_t len;
    char *pb = slurp(out, &len);
    assert_int_equal(len, st.bytes);
    assert_int_equal((unsigned char)pb[0], 0x0a); /* Trace.packet, field 1, length-delimited */
    free(pb);
    unlink(out);
}

static void test_cuts_add_up(void **state) {
    (void)state;
    char out[1100];
    path_in_tmp(out, sizeof out, "w.json");
    jp_trace_options opt = jp_trace_options_default();
    opt.window_start_ps = 0;
    opt.window_end_ps = 200000000; /* the first 200 us */
    opt.min_duration_ps = 1000000;
    jp_trace_stats st;
    jp_error err;
    assert_int_equal(jp_trace_export(JP_TEST_DATA "/cpu_small.xplane.pb.gz", out, &opt, &st, &err), JP_OK);
    assert_int_equal(st.events_in, 69);
    assert_int_equal(st.events_out, 13); /* those in the first 200 us lasting 1 us or more */
    assert_int_equal(st.events_cut, 56);
    unlink(out);

    opt = jp_trace_options_default();
    opt.first_step = 1000;
    opt.last_step = 2000;
    assert_int_equal(jp_trace_export(JP_TEST_DATA "/cpu_small.xplane.pb.gz", out, &opt, &st, &err),
                     JP_ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "no step numbered 1000..2000"));
    assert_int_equal(access(out, F_OK), -1);
}

static void test_unwritable_output_is_an_io_error(void **state) {
    (void)state;
    jp_error err;
    int rc = jp_trace_export(JP_TEST_DATA "/cpu_small.xplane.pb.gz", "/nonexistent-dir/t.json", NULL, NULL, &err);
    assert_int_equal(rc, JP_ERR_IO);
    assert_non_null(strstr(err.msg, "/nonexistent-dir/t.json"));
}

/* Exports `len` bytes as a file; either it works completely or fails cleanly, leaving nothing. */
static void export_bytes(const uint8_t *data, size_t len, int *ok, int *failed) {
    char in[1100], out[1100], tmp[1200];
    path_in_tmp(in, sizeof in, "bad.xplane.pb");
    path_in_tmp(out, sizeof out, "bad.json");
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    FILE *f = fopen(in, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
    jp_trace_stats st;
    jp_error err;
    int rc = jp_trace_export(in, out, NULL, &st, &err);
    if (rc == JP_OK) {
        assert_int_equal(st.events_out, st.events_in);
        (*ok)++;
    } else {
        assert_non_null(strstr(err.msg, "bad.xplane.pb"));
        assert_int_equal(access(out, F_OK), -1);
        (*failed)++;
    }
    assert_int_equal(access(tmp, F_OK), -1);
    unlink(out);
    unlink(in);
}

static void test_bad_input_fails_cleanly(void **state) {
    (void)state;
    size_t len;
    char *raw = slurp(JP_TEST_DATA "/cpu_small.xplane.pb.gz", &len);
    int ok = 0, failed = 0;
    for (size_t n = 0; n < len; n += 61) export_bytes((const uint8_t *)raw, n, &ok, &failed);
    uint8_t *copy = malloc(len);
    srand(7);
    for (int i = 0; i < 300; i++) {
        memcpy(copy, raw, len);
        copy[(size_t)rand() % len] ^= (uint8_t)(1 + rand() % 255);
        export_bytes(copy, len, &ok, &failed);
    }
    assert_true(ok > 0 && failed > 0);
    free(copy);
    free(raw);
}

/* Events whose metadata has no name, or whose metadata id names no metadata: the Perfetto writer
 * copied their empty name from a NULL pointer (UBSan, under make test-c), and both writers named
 * the second kind "". Now both formats export every event, the second kind as
 * "<unknown metadata ID>". The XSpace is hand-encoded: plane /host:CPU, line "python" (id 1) with
 * events naming metadata 5 (defined, no name), 123 and 124 (undefined), hostname "h". */
static void test_unnamed_and_unknown_metadata(void **state) {
    (void)state;
    static const uint8_t space[] = {
        0x0a, 0x3c,                                     /* planes: 60 bytes */
        0x08, 0x01, 0x12, 0x09, '/', 'h', 'o', 's', 't', ':', 'C', 'P', 'U', /* id 1, name */
        0x1a, 0x25,                                     /* lines: 37 bytes */
        0x08, 0x01, 0x12, 0x06, 'p', 'y', 't', 'h', 'o', 'n', /* id 1, name "python" */
        0x22, 0x07, 0x08, 0x05, 0x10, 0xe8, 0x07, 0x18, 0x64,       /* event: meta 5, offset 1000, dur 100 */
        0x22, 0x07, 0x08, 0x7b, 0x10, 0xd0, 0x0f, 0x18, 0x64,       /* event: meta 123, offset 2000 */
        0x22, 0x07, 0x08, 0x7c, 0x10, 0xb8, 0x17, 0x18, 0x64,       /* event: meta 124, offset 3000 */
        0x22, 0x06, 0x08, 0x05, 0x12, 0x02, 0x08, 0x05, /* event_metadata {5: {id 5}}: no name */
        0x22, 0x01, 'h',                                /* hostnames */
    };
    char in[1100], out[1100];
    path_in_tmp(in, sizeof in, "unknown_meta.xplane.pb");
    FILE *f = fopen(in, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(space, 1, sizeof space, f), sizeof space);
    fclose(f);
    for (int perfetto = 0; perfetto < 2; perfetto++) {
        path_in_tmp(out, sizeof out, perfetto ? "unknown.pftrace" : "unknown.json");
        jp_trace_options opt = jp_trace_options_default();
        opt.format = perfetto ? JP_TRACE_PERFETTO : JP_TRACE_CHROME;
        jp_trace_stats st;
        jp_error err;
        if (jp_trace_export(in, out, &opt, &st, &err) != JP_OK) fail_msg("%s", err.msg);
        assert_int_equal(st.events_out, 3);
        size_t len;
        char *text = slurp(out, &len);
        assert_non_null(memmem(text, len, "<unknown metadata 123>", 22));
        assert_non_null(memmem(text, len, "<unknown metadata 124>", 22));
        free(text);
        unlink(out);
    }
    unlink(in);
}

int main(void) {
    const char *dir = getenv("TEST_TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s", dir && *dir ? dir : "/tmp");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chrome_export_counts),
        cmocka_unit_test(test_export_takes_max_inflate),
        cmocka_unit_test(test_perfetto_export_is_plain_protobuf),
        cmocka_unit_test(test_cuts_add_up),
        cmocka_unit_test(test_unwritable_output_is_an_io_error),
        cmocka_unit_test(test_bad_input_fails_cleanly),
        cmocka_unit_test(test_unnamed_and_unknown_metadata),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
