/* test_xspace.c - decoding a hand-built XSpace: model, metadata, stats, gzip, and errors with offsets. */
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

#include "decode/pb.h"
#include "decode/xspace.h"
#include "jaxprof/jaxprof_xspace.h"
#include "pbwrite.h"

/* One host plane: line "python" (id 7, ts 100 ns) with two events, metadata for both event kinds,
 * stat metadata (1 "step_num", 2 "hlo_op", 3 "interned value"), and a second line sharing id 7. */
static pbw build_space(void) {
    pbw space = {0}, plane = {0}, line = {0}, line2 = {0}, ev = {0}, st = {0}, entry = {0}, meta = {0};

    pbw_uint(&st, 1, 1); pbw_uint(&st, 4, 42);            /* step_num = 42 (int64) */
    pbw_msg(&ev, 4, &st);
    pbw_uint(&st, 1, 2); pbw_uint(&st, 7, 3);             /* hlo_op = ref -> "interned value" */
    pbw_msg(&ev, 4, &st);
    pbw_uint(&ev, 1, 10); pbw_uint(&ev, 2, 5000); pbw_uint(&ev, 3, 2000);
    pbw_msg(&line, 4, &ev);
    pbw_uint(&ev, 1, 11); pbw_uint(&ev, 5, 9);            /* aggregated: 9 occurrences */
    pbw_msg(&line, 4, &ev);
    pbw_uint(&line, 1, 7); pbw_str(&line, 2, "python"); pbw_uint(&line, 3, 100);
    pbw_msg(&plane, 3, &line);
    pbw_uint(&line2, 1, 7); pbw_str(&line2, 2, "python-2");
    pbw_msg(&plane, 3, &line2);

    /* event metadata comes after the lines, as real serializers write it */
    pbw_uint(&meta, 1, 11); pbw_str(&meta, 2, "dot.3");
    pbw_double(&st, 2, 1.5); pbw_uint(&st, 1, 2);
    pbw_msg(&meta, 5, &st);
    pbw_uint(&entry, 1, 11); pbw_msg(&entry, 2, &meta);
    pbw_msg(&plane, 4, &entry);
    pbw_uint(&meta, 1, 10); pbw_str(&meta, 2, "train"); pbw_str(&meta, 3, "\x01\x02");
    pbw_uint(&entry, 1, 10); pbw_msg(&entry, 2, &meta);
    pbw_msg(&plane, 4, &entry);
    const char *names[] = {"", "step_num", "hlo_op", "interned value"};
    for (uint64_t id = 3; id >= 1; id--) {
        pbw_uint(&meta, 1, id); pbw_str(&meta, 2, names[id]);
        pbw_uint(&entry, 1, id); pbw_msg(&entry, 2, &meta);
        pbw_msg(&plane, 5, &entry);
    }
    pbw_uint(&plane, 1, 1); pbw_str(&plane, 2, "/host:CPU");
    pbw_msg(&space, 1, &plane);
    pbw_str(&space, 4, "hostA");
    return space;
}

static void decodes_model(void **state) {
    (void)state;
    pbw w = build_space();
    jp_xspace *xs;
    jp_error err;
    assert_int_equal(jp_xspace_parse(&xs, w.buf, w.len, "mem", &err), JP_OK);
    size_t n_planes, n_hosts;
    const jp_plane *planes = jp_xspace_planes(xs, &n_planes);
    assert_int_equal(n_planes, 1);
    assert_true(jp_str_eq(jp_xspace_hostnames(xs, &n_hosts)[0], "hostA"));
    const jp_plane *p = &planes[0];
    assert_true(jp_str_eq(p->name, "/host:CPU"));
    assert_int_equal(p->n_lines, 2);
    assert_int_equal(p->lines[0].id, 7);
    assert_int_equal(p->lines[1].id, 7); /* lines sharing an id stay separate */
    assert_true(jp_str_eq(p->lines[0].name, "python"));
    assert_int_equal(jp_xspace_event_count(xs), 2);

    const jp_line *line = &p->lines[0];
    const jp_event *ev = &line->events[0];
    assert_int_equal(ev->metadata_id, 10);
    assert_int_equal(jp_event_start_ps(line, ev), 100 * 1000 + 5000);
    assert_int_equal(ev->duration_ps, 2000);
    assert_int_equal(line->events[1].num_occurrences, 9);

    const jp_event_meta *em = jp_plane_event_meta_view(p, 10);
    assert_non_null(em);
    assert_true(jp_str_eq(em->name, "train"));
    assert_int_equal(em->metadata.len, 2);
    assert_null(jp_plane_event_meta_view(p, 99));
    assert_true(jp_str_eq(jp_plane_stat_meta_view(p, 3)->name, "interned value"));

    jp_stats_iter it = jp_stats_of_event(xs, ev);
    jp_stat st;
    assert_int_equal(jp_stats_next(&it, &st, &err), 1);
    assert_int_equal(st.metadata_id, 1);
    assert_int_equal(jp_stat_int(&st), 42);
    assert_int_equal(jp_stats_next(&it, &st, &err), 1);
    assert_int_equal(st.kind, JP_STAT_REF);
    jp_str s;
    assert_int_equal(jp_stat_str(xs, p, &st, &s, &err), JP_OK);
    assert_true(jp_str_eq(s, "interned value"));
    assert_int_equal(jp_stats_next(&it, &st, &err), 0);

    it = jp_stats_of_event_meta(xs, jp_plane_event_meta_view(p, 11));
    assert_int_equal(jp_stats_next(&it, &st, &err), 1);
    assert_int_equal(st.kind, JP_STAT_DOUBLE);
    assert_true(st.v.d == 1.5);
    jp_xspace_close(xs);
    free(w.buf);
}

/* Parses an XSpace whose one plane has one line holding the single event ev (metadata id 1; ev is
 * consumed). *space keeps the bytes the decoded views point into: free it after closing. */
static jp_xspace *parse_one_event(pbw *ev, pbw *space) {
    pbw plane = {0}, line = {0};
    *space = (pbw){0};
    pbw_uint(ev, 1, 1);
    pbw_msg(&line, 4, ev);
    pbw_msg(&plane, 3, &line);
    pbw_msg(space, 1, &plane);
    jp_xspace *xs;
    jp_error err;
    assert_int_equal(jp_xspace_parse(&xs, space->buf, space->len, "mem", &err), JP_OK);
    return xs;
}

/* The one plane of what parse_one_event built; its one line holds the event. */
static const jp_plane *only_plane(const jp_xspace *xs) {
    size_t n;
    const jp_plane *p = jp_xspace_planes(xs, &n);
    assert_int_equal(n, 1);
    return p;
}

static void inflates_compressed_stat(void **state) {
    (void)state;
    const char *text = "a long kernel_details string";
    uint8_t gz[256];
    z_stream z;
    memset(&z, 0, sizeof z);
    deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    z.next_in = (Bytef *)(uintptr_t)text;
    z.avail_in = (uInt)strlen(text);
    z.next_out = gz;
    z.avail_out = sizeof gz;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t gz_len = sizeof gz - z.avail_out;
    deflateEnd(&z);

    pbw space, ev = {0}, st = {0};
    pbw_uint(&st, 1, 5); pbw_bytes(&st, 8, gz, gz_len);
    pbw_msg(&ev, 4, &st);
    jp_xspace *xs = parse_one_event(&ev, &space);
    jp_error err;
    const jp_plane *p = only_plane(xs);
    jp_stats_iter it = jp_stats_of_event(xs, &p->lines[0].events[0]);
    jp_stat s;
    assert_int_equal(jp_stats_next(&it, &s, &err), 1);
    assert_int_equal(s.kind, JP_STAT_COMPRESSED);
    jp_str out;
    assert_int_equal(jp_stat_str(xs, p, &s, &out, &err), JP_OK);
    assert_int_equal(out.len, strlen(text));
    assert_memory_equal(out.ptr, text, out.len);
    jp_xspace_close(xs);
    free(space.buf);
}

/* Stats on both sides of the decoder's short path (a one-byte id, then one value field with a
 * one-byte tag ending the message) decode to the same exact values as the general walk gives. */
/* jp_pb_varint9 (a 64-bit word at a time) reads what the byte-at-a-time jp_pb_varint_slow reads
 * for varints of 1 to 9 bytes, whatever follows them, and takes nothing of a longer one or of one
 * the bytes at hand cut short: random bytes with each varint length 1-11 and 0-16 bytes at hand. */
static void word_varints_read_as_bytewise_ones(void **state) {
    (void)state;
    uint64_t x = 88172645463325252u; /* xorshift64 */
    for (int trial = 0; trial < 300000; trial++) {
        uint8_t b[16];
        for (size_t i = 0; i < sizeof b; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            b[i] = (uint8_t)x;
        }
        size_t len = 1 + (size_t)(x >> 20) % 11, avail = (size_t)(x >> 40) % 17;
        for (size_t i = 0; i < len && i < sizeof b; i++) b[i] = (uint8_t)(i + 1 < len ? b[i] | 0x80 : b[i] & 0x7f);
        uint64_t fast = 0, slow = 0;
        size_t n = jp_pb_varint9(b, avail, &fast), want = jp_pb_varint_slow(b, b + avail, &slow);
        if (want >= 1 && want <= 9) {
            if (n != want || fast != slow)
                fail_msg("trial %d: %zu bytes, %zu at hand: read %zu bytes = %llu, want %zu = %llu", trial, len, avail, n,
                         (unsigned long long)fast, want, (unsigned long long)slow);
        } else if (n != 0) {
            fail_msg("trial %d: %zu bytes, %zu at hand: read %zu bytes of what is no short varint", trial, len, avail, n);
        }
    }
}

static void stat_shapes_decode_exactly(void **state) {
    (void)state;
    char s127[128], s128[129];
    memset(s127, 'x', 127); s127[127] = '\0';
    memset(s128, 'y', 128); s128[128] = '\0';
    pbw space, ev = {0}, st = {0};
    pbw_uint(&st, 1, 1); pbw_uint(&st, 3, (uint64_t)1 << 62);     /* 9-byte varint: short path */
    pbw_msg(&ev, 4, &st);
    pbw_uint(&st, 1, 1); pbw_uint(&st, 4, (uint64_t)-5);           /* 10-byte varint: general */
    pbw_msg(&ev, 4, &st);
    pbw_uint(&st, 1, 2); pbw_str(&st, 5, s127);                    /* one-byte length */
    pbw_msg(&ev, 4, &st);
    pbw_uint(&st, 1, 2); pbw_str(&st, 5, s128);                    /* two-byte length */
    pbw_msg(&ev, 4, &st);
    pbw_uint(&st, 1, 1); pbw_uint(&st, 7, 9); pbw_uint(&st, 1, 3); /* a second id wins */
    pbw_msg(&ev, 4, &st);
    pbw_uint(&st, 1, 200); pbw_double(&st, 2, -2.25);              /* two-byte id */
    pbw_msg(&ev, 4, &st);
    pbw_uint(&st, 1, 4); pbw_double(&st, 2, 0.5);
    pbw_msg(&ev, 4, &st);
    pbw_uint(&st, 1, 4); pbw_str(&st, 6, "ab"); pbw_uint(&st, 9, 1); /* unknown trailing field */
    pbw_msg(&ev, 4, &st);
    pbw_uint(&st, 1, 6);                                            /* no value */
    pbw_msg(&ev, 4, &st);
    jp_xspace *xs = parse_one_event(&ev, &space);
    jp_error err;
    const jp_plane *p = only_plane(xs);
    jp_stats_iter it = jp_stats_of_event(xs, &p->lines[0].events[0]);
    jp_stat s;
    assert_int_equal(jp_stats_next(&it, &s, &err), 1);
    assert_int_equal(s.metadata_id, 1);
    assert_int_equal(s.kind, JP_STAT_UINT);
    assert_true(s.v.u == (uint64_t)1 << 62);
    assert_int_equal(jp_stats_next(&it, &s, &err), 1);
    assert_int_equal(s.kind, JP_STAT_INT);
    assert_int_equal(s.v.i, -5);
    assert_int_equal(jp_stats_next(&it, &s, &err), 1);
    assert_int_equal(s.metadata_id, 2);
    assert_int_equal(s.kind, JP_STAT_STR);
    assert_int_equal(s.v.s.len, 127);
    assert_memory_equal(s.v.s.ptr, s127, 127);
    assert_int_equal(jp_stats_next(&it, &s, &err), 1);
    assert_int_equal(s.v.s.len, 128);
    assert_memory_equal(s.v.s.ptr, s128, 128);
    assert_int_equal(jp_stats_next(&it, &s, &err), 1);
    assert_int_equal(s.metadata_id, 3);
    assert_int_equal(s.kind, JP_STAT_REF);
    assert_int_equal(s.v.u, 9);
    assert_int_equal(jp_stats_next(&it, &s, &err), 1);
    assert_int_equal(s.metadata_id, 200);
    assert_int_equal(s.kind, JP_STAT_DOUBLE);
    assert_true(s.v.d == -2.25);
    assert_int_equal(jp_stats_next(&it, &s, &err), 1);
    assert_int_equal(s.metadata_id, 4);
    assert_true(s.v.d == 0.5);
    assert_int_equal(jp_stats_next(&it, &s, &err), 1);
    assert_int_equal(s.kind, JP_STAT_BYTES);
    assert_int_equal(s.v.s.len, 2);
    assert_int_equal(jp_stats_next(&it, &s, &err), 1);
    assert_int_equal(s.metadata_id, 6);
    assert_int_equal(s.kind, JP_STAT_NONE);
    assert_int_equal(jp_stats_next(&it, &s, &err), 0);
    jp_xspace_close(xs);
    free(space.buf);
}

/* Metadata look-ups by id: dense, sparse and repeated ids. */
static void metadata_lookup_by_id(void **state) {
    (void)state;
    pbw space = {0}, plane = {0}, entry = {0}, meta = {0};
    const int64_t ids[] = {0, 1, 1, 2, 5, 9, 9, 40};
    const char *names[] = {"zero", "one", "one", "two", "five", "nine", "nine", "forty"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        pbw_uint(&meta, 1, (uint64_t)ids[i]); pbw_str(&meta, 2, names[i]);
        pbw_uint(&entry, 1, (uint64_t)ids[i]); pbw_msg(&entry, 2, &meta);
        pbw_msg(&plane, 5, &entry);
    }
    pbw_msg(&space, 1, &plane);
    pbw_str(&space, 4, "host"); /* no event: without hostnames it would read as cut after the plane */
    jp_xspace *xs;
    jp_error err;
    assert_int_equal(jp_xspace_parse(&xs, space.buf, space.len, "mem", &err), JP_OK);
    size_t n;
    const jp_plane *p = jp_xspace_planes(xs, &n);
    assert_true(jp_str_eq(jp_plane_stat_meta_view(p, 0)->name, "zero"));
    assert_true(jp_str_eq(jp_plane_stat_meta_view(p, 1)->name, "one"));
    assert_true(jp_str_eq(jp_plane_stat_meta_view(p, 2)->name, "two"));
    assert_true(jp_str_eq(jp_plane_stat_meta_view(p, 5)->name, "five"));
    assert_true(jp_str_eq(jp_plane_stat_meta_view(p, 9)->name, "nine"));
    assert_true(jp_str_eq(jp_plane_stat_meta_view(p, 40)->name, "forty"));
    assert_null(jp_plane_stat_meta_view(p, 3));
    assert_null(jp_plane_stat_meta_view(p, 6));
    assert_null(jp_plane_stat_meta_view(p, UINT64_MAX));
    assert_null(jp_plane_event_meta_view(p, 0));
    jp_xspace_close(xs);
    free(space.buf);
}

static void gzip_file_is_detected_by_content(void **state) {
    (void)state;
    pbw w = build_space();
    char path[512];
    const char *dir = getenv("TEST_TMPDIR");
    snprintf(path, sizeof path, "%s/space.xplane.pb.gz", dir ? dir : "/tmp");
    gzFile gz = gzopen(path, "wb");
    assert_non_null(gz);
    assert_int_equal(gzwrite(gz, w.buf, (unsigned)w.len), (int)w.len);
    gzclose(gz);
    jp_xspace *xs;
    jp_error err;
    assert_int_equal(jp_xspace_open(&xs, path, &err), JP_OK);
    assert_int_equal(jp_xspace_input_size(xs), w.len);
    assert_int_equal(jp_xspace_event_count(xs), 2);
    jp_xspace_close(xs);
    free(w.buf);
}

/* Concatenated members read as one stream (as gzip does), zero padding after the last member is
 * ignored, anything else after it is corrupt input, named with its offset. */
static void gzip_members_and_trailing_bytes(void **state) {
    (void)state;
    pbw w = build_space();
    size_t half = w.len / 2, n1, n2;
    uint8_t *a = pbw_gzip(w.buf, half, &n1), *b = pbw_gzip(w.buf + half, w.len - half, &n2);
    uint8_t *both = malloc(n1 + n2 + 16);
    memcpy(both, a, n1);
    memcpy(both + n1, b, n2);
    jp_xspace *xs;
    jp_error err;
    assert_int_equal(jp_xspace_parse(&xs, both, n1 + n2, "two.gz", &err), JP_OK);
    assert_int_equal(jp_xspace_input_size(xs), w.len);
    assert_int_equal(jp_xspace_event_count(xs), 2);
    jp_xspace_close(xs);
    memset(both + n1 + n2, 0, 16);
    assert_int_equal(jp_xspace_parse(&xs, both, n1 + n2 + 16, "padded.gz", &err), JP_OK);
    jp_xspace_close(xs);
    memcpy(both + n1 + n2, "appended", 8);
    assert_int_equal(jp_xspace_parse(&xs, both, n1 + n2 + 8, "tail.gz", &err), JP_ERR_CORRUPT);
    char want[160];
    snprintf(want, sizeof want, "tail.gz: corrupt gzip data at byte %zu: 8 bytes after the end of the gzip data are "
             "not gzip (damaged, or something was appended)", n1 + n2);
    assert_string_equal(err.msg, want);
    assert_int_equal(err.offset, n1 + n2);
    free(a);
    free(b);
    free(both);
    free(w.buf);
}

/* A gzip bomb stops at the limit (64 times its size, at least 256 MiB) before taking the memory;
 * the caller's max_inflate (jp_load_options) moves the limit, both ways, and the environment does
 * not: the library reads no JAXPROF_MAX_INFLATE. */
static void gzip_inflate_limit(void **state) {
    (void)state;
    size_t n = (size_t)300 << 20, len;
    uint8_t *zeros = calloc(n, 1), *bomb = pbw_gzip(zeros, n, &len);
    free(zeros);
    jp_xspace *xs;
    jp_error err;
    setenv("JAXPROF_MAX_INFLATE", "512M", 1); /* ignored: only the option counts */
    assert_int_equal(jp_xspace_parse(&xs, bomb, len, "bomb.gz", &err), JP_ERR_LIMIT);
    assert_non_null(strstr(err.msg, "inflates beyond 268435456 bytes (the limit: 64 times the compressed size"));
    assert_non_null(strstr(err.msg, "if the file is genuine, raise the max_inflate limit"));
    unsetenv("JAXPROF_MAX_INFLATE");
    uint64_t raised = (uint64_t)512 << 20; /* raised: it inflates, and the zeros are no XSpace */
    assert_int_equal(jp_xspace_parse_limited(&xs, bomb, len, "bomb.gz", 0, raised, &err), JP_ERR_CORRUPT);
    pbw w = build_space(); /* lowered: even a small profile is refused */
    assert_true(w.len > 100);
    size_t gz_len;
    uint8_t *gz = pbw_gzip(w.buf, w.len, &gz_len);
    assert_int_equal(jp_xspace_parse_limited(&xs, gz, gz_len, "s.gz", 0, 100, &err), JP_ERR_LIMIT);
    assert_non_null(strstr(err.msg, "inflates beyond 100 bytes (the limit: max_inflate)"));
    jp_profile *p = NULL; /* the same through the public load options */
    const jp_load_options small = {.max_inflate = 100};
    assert_int_equal(jp_profile_parse(&p, gz, gz_len, "s.gz", &small, &err), JP_ERR_LIMIT);
    assert_null(p);
    assert_non_null(strstr(err.msg, "s.gz: gzip data at byte "));
    assert_non_null(strstr(err.msg, "inflates beyond 100 bytes (the limit: max_inflate)"));
    assert_int_equal(jp_profile_parse(&p, gz, gz_len, "s.gz", &(jp_load_options){.max_inflate = 1 << 20}, &err),
                     JP_OK);
    jp_profile_free(p);
    uint64_t v;
    assert_int_equal(jp_size_parse("20G", &v), 0);
    assert_true(v == (uint64_t)20 << 30);
    assert_int_equal(jp_size_parse("123", &v), 0);
    assert_true(v == 123);
    const char *bad[] = {"", "G", "-1", "1.5G", "1GB", "1X", "99999999999999999999", "17000000000T"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_int_equal(jp_size_parse(bad[i], &v), -1);
    free(gz);
    free(bomb);
    free(w.buf);
}

static void truncation_reports_file_and_offset(void **state) {
    (void)state;
    pbw w = build_space();
    jp_xspace *xs;
    jp_error err;
    /* Cutting the input inside the first plane: the plane's length field claims more than remains. */
    assert_int_equal(jp_xspace_parse(&xs, w.buf, 10, "cut.xplane.pb", &err), JP_ERR_TRUNCATED);
    assert_null(xs);
    assert_int_equal(err.offset, 0);
    assert_string_equal(err.msg, "cut.xplane.pb: truncated XSpace at byte 0: field 1 claims 174 bytes, 7 remain");
    /* Every prefix is either an error or a valid (smaller) result, never a crash. */
    for (size_t n = 0; n < w.len; n++) {
        int rc = jp_xspace_parse(&xs, w.buf, n, "prefix", &err);
        if (rc == JP_OK) jp_xspace_close(xs);
        else assert_true(rc == JP_ERR_TRUNCATED || rc == JP_ERR_CORRUPT);
    }
    free(w.buf);
}

/* The profiler's own errors and warnings (XSpace fields 2 and 3) decode in file order; one cut
 * short names its byte; one of the wrong wire type is corrupt at its tag. */
static void capture_errors_and_warnings_decode(void **state) {
    (void)state;
    pbw w = build_space();
    size_t base = w.len;
    pbw_str(&w, 2, "CUPTI buffer full");
    pbw_str(&w, 3, "GPU events dropped: 17");
    pbw_str(&w, 2, "second error");
    jp_xspace *xs;
    jp_error err;
    assert_int_equal(jp_xspace_parse(&xs, w.buf, w.len, "mem", &err), JP_OK);
    size_t n_err, n_warn;
    const jp_str *errors = jp_xspace_errors(xs, &n_err), *warnings = jp_xspace_warnings(xs, &n_warn);
    assert_int_equal(n_err, 2);
    assert_int_equal(n_warn, 1);
    assert_true(jp_str_eq(errors[0], "CUPTI buffer full"));
    assert_true(jp_str_eq(errors[1], "second error"));
    assert_true(jp_str_eq(warnings[0], "GPU events dropped: 17"));
    jp_xspace_close(xs);
    /* Cut inside the last error's text: its length claims more bytes than remain. */
    assert_int_equal(jp_xspace_parse(&xs, w.buf, w.len - 3, "cut.xplane.pb", &err), JP_ERR_TRUNCATED);
    assert_null(xs);
    size_t last = w.len - strlen("second error") - 2;
    assert_int_equal(err.offset, last);
    char want[160];
    snprintf(want, sizeof want, "cut.xplane.pb: truncated XSpace at byte %zu: field 2 claims 12 bytes, 9 remain", last);
    assert_string_equal(err.msg, want);
    /* A warning written as a varint: corrupt, at its tag. */
    w.len = base;
    pbw_uint(&w, 3, 5);
    assert_int_equal(jp_xspace_parse(&xs, w.buf, w.len, "bad.xplane.pb", &err), JP_ERR_CORRUPT);
    assert_int_equal(err.offset, base);
    assert_non_null(strstr(err.msg, "field 3 has wire type 0, expected length-delimited"));
    /* None: empty lists. */
    w.len = base;
    assert_int_equal(jp_xspace_parse(&xs, w.buf, w.len, "mem", &err), JP_OK);
    assert_null(jp_xspace_errors(xs, &n_err));
    assert_int_equal(n_err, 0);
    jp_xspace_warnings(xs, &n_warn);
    assert_int_equal(n_warn, 0);
    jp_xspace_close(xs);
    free(w.buf);
}

/* A Chrome trace is read as the XSpace it describes: a plane per process, a line per thread (by
 * start, parents first), B/E pairs and X slices as events, args as typed stats, model_flops standing
 * in for flops, and the note of what the JSON lacks. */
static void chrome_traces_read_as_their_xspace(void **state) {
    (void)state;
    const char *json =
        "{\"traceEvents\": ["
        "{\"ph\":\"M\",\"pid\":3,\"name\":\"process_name\",\"args\":{\"name\":\"/device:TPU:0\"}},"
        "{\"ph\":\"M\",\"pid\":3,\"tid\":7,\"name\":\"thread_name\",\"args\":{\"name\":\"XLA Ops\"}},"
        "{\"ph\":\"X\",\"pid\":3,\"tid\":7,\"ts\":12.5,\"dur\":2.000001,\"name\":\"fusion.2\","
        "\"args\":{\"long_name\":\"%fusion.2 = f32[8] fusion()\",\"model_flops\":\"640\",\"hlo_category\":\"loop fusion\","
        "\"scale\":\"0.5\",\"big\":\"18446744073709551614\"}},"
        "{\"ph\":\"X\",\"pid\":3,\"tid\":7,\"ts\":10,\"dur\":1,\"name\":\"fusion.1\"},"
        "{\"ph\":\"B\",\"pid\":9,\"tid\":1,\"ts\":1,\"name\":\"outer\"},"
        "{\"ph\":\"B\",\"pid\":9,\"tid\":1,\"ts\":2,\"name\":\"inner\"},"
        "{\"ph\":\"E\",\"pid\":9,\"tid\":1,\"ts\":3},{\"ph\":\"E\",\"pid\":9,\"tid\":1,\"ts\":5},"
        "{\"ph\":\"E\",\"pid\":9,\"tid\":1,\"ts\":6},{}]}";
    jp_xspace *xs;
    jp_error err;
    if (jp_xspace_parse(&xs, json, strlen(json), "c.trace.json", &err) != JP_OK) fail_msg("%s", err.msg);
    size_t n;
    const jp_plane *pl = jp_xspace_planes(xs, &n);
    assert_int_equal(n, 2);
    assert_true(jp_str_eq(pl[0].name, "/device:TPU:0") && jp_str_eq(pl[1].name, "pid 9"));
    assert_int_equal(pl[0].n_lines, 1);
    const jp_line *ln = &pl[0].lines[0];
    assert_true(jp_str_eq(ln->name, "XLA Ops") && ln->id == 7 && ln->n_events == 2);
    assert_int_equal(jp_event_start_ps(ln, &ln->events[0]), 10000000); /* sorted by start */
    const jp_event *op = &ln->events[1];
    assert_int_equal(jp_event_start_ps(ln, op), 12500000);
    assert_int_equal(op->duration_ps, 2000001);
    const jp_event_meta *em = jp_plane_event_meta_view(&pl[0], op->metadata_id);
    assert_true(jp_str_eq(em->name, "%fusion.2 = f32[8] fusion()") && jp_str_eq(em->display_name, "fusion.2"));
    int seen = 0;
    jp_stats_iter it = jp_stats_of_event(xs, op);
    jp_stat st;
    while (jp_stats_next(&it, &st, &err) == 1) {
        jp_str name = jp_plane_stat_meta_view(&pl[0], st.metadata_id)->name;
        if (jp_str_eq(name, "model_flops") || jp_str_eq(name, "flops")) {
            assert_int_equal(st.kind, JP_STAT_INT);
            assert_int_equal(st.v.i, 640);
            seen++;
        } else if (jp_str_eq(name, "scale")) {
            assert_int_equal(st.kind, JP_STAT_DOUBLE);
            assert_true(st.v.d == 0.5);
            seen++;
        } else if (jp_str_eq(name, "big")) {
            assert_int_equal(st.kind, JP_STAT_UINT);
            assert_true(st.v.u == UINT64_MAX - 1); /* past int64: unsigned */
            seen++;
        } else if (jp_str_eq(name, "hlo_category")) {
            assert_int_equal(st.kind, JP_STAT_STR);
            seen++;
        }
    }
    assert_int_equal(seen, 5); /* model_flops, flops, scale, big, hlo_category */
    const jp_line *th = &pl[1].lines[0]; /* B/E paired innermost first; the stray E dropped */
    assert_int_equal(th->n_events, 2);
    assert_int_equal(th->events[0].duration_ps, 4000000);
    assert_int_equal(th->events[1].duration_ps, 1000000);
    const jp_str *notes = jp_xspace_warnings(xs, &n);
    assert_int_equal(n, 1);
    assert_memory_equal(notes[0].ptr, "read from a Chrome trace (JSON)", 31);
    jp_xspace_close(xs);
}

static void corrupt_and_wrong_type_inputs(void **state) {
    (void)state;
    jp_xspace *xs;
    jp_error err;
    /* JSON is read as a Chrome trace (chrome_traces_read_as_their_xspace); JSON that is none is
     * named as such, at the byte where it goes wrong */
    const char *cut = "{\"traceEvents\": [{\"ph\": \"X\"";
    assert_int_equal(jp_xspace_parse(&xs, cut, strlen(cut), "t.json", &err), JP_ERR_TRUNCATED);
    assert_int_equal(err.offset, strlen(cut));
    assert_non_null(strstr(err.msg, "t.json: not a valid Chrome trace at byte 27: JSON"));
    const char *other = "\r\n {\"a\": 1}";
    assert_int_equal(jp_xspace_parse(&xs, other, strlen(other), "a.json", &err), JP_ERR_CORRUPT);
    assert_string_equal(err.msg, "a.json: JSON, but not a Chrome trace (no traceEvents list)");
    const uint8_t bad_wire[] = {0x0a, 0x02, 0x08, 0x01, 0x12, 0x01}; /* plane.id ok, then name truncated */
    assert_int_equal(jp_xspace_parse(&xs, bad_wire, sizeof bad_wire, "b", &err), JP_ERR_TRUNCATED);
    assert_int_equal(err.offset, 4);
    const uint8_t id_as_len[] = {0x0a, 0x03, 0x0a, 0x01, 0x00}; /* plane.id with wire type 2 */
    assert_int_equal(jp_xspace_parse(&xs, id_as_len, sizeof id_as_len, "c", &err), JP_ERR_CORRUPT);
    assert_string_equal(err.msg, "c: corrupt XPlane at byte 2: field 1 has wire type 2, expected varint");
    assert_int_equal(jp_xspace_parse(&xs, "", 0, "empty", &err), JP_ERR_TRUNCATED);
    assert_int_equal(jp_xspace_open(&xs, "/nonexistent/x.xplane.pb", &err), JP_ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "/nonexistent/x.xplane.pb: cannot open"));
    const uint8_t gz_garbage[] = {0x1f, 0x8b, 0x08, 0x00, 0x01, 0x02};
    assert_int_equal(jp_xspace_parse(&xs, gz_garbage, sizeof gz_garbage, "g.gz", &err), JP_ERR_TRUNCATED);
    assert_non_null(strstr(err.msg, "g.gz: truncated gzip data"));
}

static void random_byte_flips_never_crash(void **state) {
    (void)state;
    pbw w = build_space();
    uint8_t *copy = malloc(w.len);
    uint64_t seed = 12345;
    for (int i = 0; i < 1000; i++) {
        memcpy(copy, w.buf, w.len);
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t at = (size_t)(seed >> 33) % w.len;
        copy[at] ^= (uint8_t)(1u << ((seed >> 20) & 7));
        jp_xspace *xs;
        jp_error err;
        if (jp_xspace_parse(&xs, copy, w.len, "flip", &err) == JP_OK) {
            size_t n;
            const jp_plane *planes = jp_xspace_planes(xs, &n);
            for (size_t p = 0; p < n; p++) {
                for (size_t l = 0; l < planes[p].n_lines; l++) {
                    for (size_t e = 0; e < planes[p].lines[l].n_events; e++) {
                        jp_stats_iter it = jp_stats_of_event(xs, &planes[p].lines[l].events[e]);
                        jp_stat st;
                        jp_str s;
                        while (jp_stats_next(&it, &st, &err) == 1) jp_stat_str(xs, &planes[p], &st, &s, &err);
                    }
                }
            }
            jp_xspace_close(xs);
        }
    }
    free(copy);
    free(w.buf);
}

/* Writes w to TEST_TMPDIR (or /tmp)/name; the full path goes to path. */
static void write_file(const pbw *w, const char *name, char *path, size_t cap) {
    const char *dir = getenv("TEST_TMPDIR");
    snprintf(path, cap, "%s/%s", dir ? dir : "/tmp", name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(w->buf, 1, w->len, f), w->len);
    fclose(f);
}

/* Discarding a lazily read file's bytes returns only the whole pages inside the range (they read
 * as zeros after); the partial pages at either end, ranges outside the input, eagerly opened files
 * (exporters read their events again) and caller memory are left alone. */
static void discard_drops_whole_pages_only(void **state) {
    (void)state;
    pbw w = build_space();
    static char pad[3 * 65536];
    for (size_t i = 0; i < sizeof pad - 1; i++) pad[i] = (char)('a' + i % 26);
    pbw_str(&w, 15, pad); /* an unknown field: the input now spans many pages */
    char path[512];
    write_file(&w, "discard.xplane.pb", path, sizeof path);
    jp_xspace *xs;
    jp_error err;
    assert_int_equal(jp_xspace_open(&xs, path, &err), JP_OK); /* eager: its events may be read again */
    jp_bytes in = jp_xspace_input(xs);
    jp_xspace_discard(xs, in.ptr, in.len);
    assert_memory_equal(in.ptr, w.buf, w.len);
    jp_xspace_close(xs);
    assert_int_equal(jp_xspace_open_lazy(&xs, path, &err), JP_OK);
    in = jp_xspace_input(xs);
    assert_int_equal(in.len, w.len);
    jp_xspace_discard(xs, in.ptr + 1, in.len);   /* runs past the end: ignored */
    jp_xspace_discard(xs, pad, sizeof pad);      /* not the input: ignored */
    jp_xspace_discard(xs, in.ptr + 100, 0);
    assert_memory_equal(in.ptr, w.buf, w.len);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), end = (in.len - 2) / page * page;
    jp_xspace_discard(xs, in.ptr + 1, in.len - 3);
    assert_memory_equal(in.ptr, w.buf, page);    /* the partial first page stays */
    for (size_t i = page; i < end; i++) assert_int_equal(in.ptr[i], 0);
    assert_memory_equal(in.ptr + end, w.buf + end, in.len - end);
    jp_xspace_close(xs);

    assert_int_equal(jp_xspace_parse(&xs, w.buf, w.len, "mem", &err), JP_OK);
    jp_xspace_discard(xs, w.buf, w.len); /* the caller's memory: nothing happens */
    assert_int_equal(w.buf[w.len - 1], 'a' + (sizeof pad - 2) % 26);
    jp_xspace_close(xs);
    remove(path);
    free(w.buf);
}

/* A line of n_big events (each offset i * 1000 ps) and a small line of 3, as one XSpace. */
static pbw build_big_line(size_t n_big) {
    pbw space = {0}, plane = {0}, big = {0}, small = {0}, ev = {0};
    for (size_t i = 0; i < n_big; i++) {
        pbw_uint(&ev, 1, 1); pbw_uint(&ev, 2, i * 1000); pbw_uint(&ev, 3, 500);
        pbw_msg(&big, 4, &ev);
    }
    pbw_uint(&big, 1, 1); pbw_str(&big, 2, "big");
    pbw_msg(&plane, 3, &big);
    for (size_t i = 0; i < 3; i++) {
        pbw_uint(&ev, 1, 1); pbw_uint(&ev, 2, 7 + i); pbw_uint(&ev, 3, 1);
        pbw_msg(&small, 4, &ev);
    }
    pbw_uint(&small, 1, 2); pbw_str(&small, 2, "small");
    pbw_msg(&plane, 3, &small);
    pbw_uint(&plane, 1, 1); pbw_str(&plane, 2, "/host:CPU");
    pbw_msg(&space, 1, &plane);
    return space;
}

/* Reads every event of a line with an event reader into out (cap entries); returns the count. */
static size_t read_all(const jp_xspace *xs, const jp_line *line, jp_event *out, size_t cap) {
    jp_event_reader r = jp_line_event_reader(xs, line);
    jp_error err;
    size_t n = 0;
    while (n < cap && jp_event_reader_next(&r, &out[n], &err) == 1) n++;
    return n;
}

/* A lazy XSpace has the same planes, lines and counts as a full one but no decoded events; its
 * reader streams exactly the events jp_xspace_open decodes (the reader works on both). */
static void lazy_reader_streams_the_same_events(void **state) {
    (void)state;
    enum { N = 5000 };
    pbw w = build_big_line(N);
    char path[512];
    write_file(&w, "lazy.xplane.pb", path, sizeof path);
    jp_xspace *full, *lazy;
    jp_error err;
    assert_int_equal(jp_xspace_open(&full, path, &err), JP_OK);
    assert_int_equal(jp_xspace_open_lazy(&lazy, path, &err), JP_OK);
    assert_int_equal(jp_xspace_event_count(lazy), N + 3);
    size_t nf, nl;
    const jp_plane *pf = jp_xspace_planes(full, &nf), *pl = jp_xspace_planes(lazy, &nl);
    assert_int_equal(nl, nf);
    static jp_event got[N], again[N];
    for (size_t l = 0; l < 2; l++) {
        const jp_line *fl = &pf[0].lines[l], *ll = &pl[0].lines[l];
        assert_null(ll->events);
        assert_int_equal(ll->n_events, fl->n_events);
        assert_true(jp_str_eq(ll->name, l ? "small" : "big"));
        assert_int_equal(read_all(lazy, ll, got, N), fl->n_events);
        assert_int_equal(read_all(full, fl, again, N), fl->n_events);
        for (size_t i = 0; i < fl->n_events; i++) {
            const jp_event *want = &fl->events[i];
            assert_int_equal(got[i].metadata_id, want->metadata_id);
            assert_int_equal(got[i].offset_ps, want->offset_ps);
            assert_int_equal(got[i].duration_ps, want->duration_ps);
            assert_int_equal(got[i].raw.len, want->raw.len);
            assert_int_equal(got[i].raw.ptr - jp_xspace_input(lazy).ptr, want->raw.ptr - jp_xspace_input(full).ptr);
            assert_int_equal(again[i].offset_ps, want->offset_ps);
        }
    }
    jp_xspace_close(full);
    jp_xspace_close(lazy);
    remove(path);
    free(w.buf);
}

/* A corrupt event passes a lazy open; the reader reports it, at the byte and with the message that
 * jp_xspace_open gives. A corrupt stat is jp_stats_next's to report, again the same. */
static void lazy_open_reports_corrupt_events_when_read(void **state) {
    (void)state;
    for (int bad_stat = 0; bad_stat < 2; bad_stat++) {
        pbw space = {0}, plane = {0}, line = {0}, ev = {0}, st = {0};
        pbw_uint(&ev, 1, 1); pbw_uint(&ev, 2, 10);
        pbw_msg(&line, 4, &ev);
        pbw_uint(&ev, 1, 1);
        if (bad_stat) {
            pbw_uint(&st, 1, 2); pbw_str(&st, 3, "uint as bytes"); /* wire type 2 for a varint field */
            pbw_msg(&ev, 4, &st);
        } else {
            pbw_str(&ev, 2, "offset as bytes");
        }
        pbw_msg(&line, 4, &ev);
        pbw_uint(&line, 1, 1);
        pbw_msg(&plane, 3, &line);
        pbw_str(&plane, 2, "/host:CPU");
        pbw_msg(&space, 1, &plane);
        char path[512];
        write_file(&space, "corrupt-event.xplane.pb", path, sizeof path);
        jp_xspace *xs;
        jp_error full_err, err;
        assert_int_equal(jp_xspace_open(&xs, path, &full_err), JP_ERR_CORRUPT);
        assert_int_equal(jp_xspace_open_lazy(&xs, path, &err), JP_OK);
        size_t n;
        const jp_line *ln = &jp_xspace_planes(xs, &n)[0].lines[0];
        jp_event_reader r = jp_line_event_reader(xs, ln);
        jp_event e;
        assert_int_equal(jp_event_reader_next(&r, &e, &err), 1);
        int rc = jp_event_reader_next(&r, &e, &err);
        if (bad_stat) {
            assert_int_equal(rc, 1);
            jp_stats_iter it = jp_stats_of_event(xs, &e);
            jp_stat stat;
            rc = jp_stats_next(&it, &stat, &err);
        }
        assert_int_equal(rc, JP_ERR_CORRUPT);
        assert_int_equal(err.offset, full_err.offset);
        assert_non_null(strstr(full_err.msg, err.msg)); /* the full open's message adds the file name */
        jp_xspace_close(xs);
        remove(path);
        free(space.buf);
        free(plane.buf);
        free(line.buf);
        free(ev.buf);
        free(st.buf);
    }
}

/* Compressed stats are bounded together (16 times the XSpace, at least 64 MiB): eight stats that
 * each inflate to 40 MiB stop at the second, naming the stat's byte, where each used to get an
 * allowance of its own. A stat asked for again is the same view, inflated once. */
static void compressed_stats_are_bounded_in_total(void **state) {
    (void)state;
    size_t n = (size_t)40 << 20, gz_len;
    uint8_t *zeros = calloc(n, 1), *gz = pbw_gzip(zeros, n, &gz_len);
    free(zeros);
    pbw space, ev = {0}, st = {0};
    for (int i = 0; i < 8; i++) {
        pbw_uint(&st, 1, 5); pbw_bytes(&st, 8, gz, gz_len);
        pbw_msg(&ev, 4, &st);
    }
    jp_xspace *xs = parse_one_event(&ev, &space);
    const jp_plane *p = only_plane(xs);
    jp_stats_iter it = jp_stats_of_event(xs, &p->lines[0].events[0]);
    jp_stat s;
    jp_str first, again;
    jp_error err;
    assert_int_equal(jp_stats_next(&it, &s, &err), 1);
    assert_int_equal(jp_stat_str(xs, p, &s, &first, &err), JP_OK);
    assert_int_equal(first.len, n);
    assert_int_equal(jp_stat_str(xs, p, &s, &again, &err), JP_OK); /* cached: no second 40 MiB */
    assert_ptr_equal(again.ptr, first.ptr);
    assert_int_equal(jp_stats_next(&it, &s, &err), 1);
    assert_int_equal(jp_stat_str(xs, p, &s, &again, &err), JP_ERR_LIMIT);
    uint64_t at = (uint64_t)((const uint8_t *)s.v.s.ptr - space.buf);
    char want[JP_ERROR_MSG_MAX];
    snprintf(want, sizeof want, "compressed stat at byte %llu: the profile's compressed stats inflate to more than "
             "67108864 bytes (the limit: 16 times the XSpace's size, at least 64 MiB, at most 1 GiB, for all "
             "compressed stats together); if the file is genuine, raise the max_inflate limit",
             (unsigned long long)at);
    assert_string_equal(err.msg, want);
    assert_int_equal(err.offset, at);
    assert_int_equal(jp_stat_str(xs, p, &s, &again, &err), JP_ERR_LIMIT); /* asked again: the same error */
    assert_string_equal(err.msg, want);
    jp_xspace_close(xs);
    xs = NULL; /* raised: all eight fit, 320 MiB */
    assert_int_equal(jp_xspace_parse_limited(&xs, space.buf, space.len, "mem", 0, (uint64_t)1 << 30, &err), JP_OK);
    p = only_plane(xs);
    it = jp_stats_of_event(xs, &p->lines[0].events[0]);
    int k = 0;
    while (jp_stats_next(&it, &s, &err) == 1) {
        assert_int_equal(jp_stat_str(xs, p, &s, &again, &err), JP_OK);
        k++;
    }
    assert_int_equal(k, 8);
    jp_xspace_close(xs);
    free(gz);
    free(space.buf);
}

/* A varint of more than 10 bytes, or whose 10th byte carries bits past the 64th, is malformed
 * (JP_ERR_CORRUPT, its own message), not "truncated"; one cut by the end still is truncated. */
static void malformed_varints_are_corrupt_not_truncated(void **state) {
    (void)state;
    jp_xspace *xs;
    jp_error err;
    const uint8_t long_tag[] = {0x8a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    assert_int_equal(jp_xspace_parse(&xs, long_tag, sizeof long_tag, "t", &err), JP_ERR_CORRUPT);
    assert_string_equal(err.msg, "t: malformed varint at byte 0 in XSpace: more than 10 bytes (a varint holds at "
                                 "most 10 bytes, 64 bits)");
    assert_int_equal(err.offset, 0);
    /* plane { id = varint of 10 bytes whose last is 0x02: 65 bits } */
    const uint8_t wide[] = {0x0a, 0x0b, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    assert_int_equal(jp_xspace_parse(&xs, wide, sizeof wide, "w", &err), JP_ERR_CORRUPT);
    assert_string_equal(err.msg, "w: malformed varint at byte 3 in XPlane: its 10th byte sets bits past 64 (a "
                                 "varint holds at most 10 bytes, 64 bits)");
    assert_int_equal(err.offset, 3);
    /* a length of 11 bytes */
    const uint8_t long_len[] = {0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    assert_int_equal(jp_xspace_parse(&xs, long_len, sizeof long_len, "l", &err), JP_ERR_CORRUPT);
    assert_string_equal(err.msg, "l: malformed varint at byte 1 in XSpace: more than 10 bytes (a varint holds at "
                                 "most 10 bytes, 64 bits)");
    /* cut inside a varint: truncated, as before */
    const uint8_t cut[] = {0x0a, 0x04, 0x08, 0xff, 0xff, 0xff};
    assert_int_equal(jp_xspace_parse(&xs, cut, sizeof cut, "c", &err), JP_ERR_TRUNCATED);
    assert_string_equal(err.msg, "c: truncated XPlane at byte 3: expected a varint value");
}

/* A file cut exactly after a plane: no hostnames follow (profilers write them after the planes).
 * Without any event it would read as a valid empty profile: an error at the end of the file. With
 * events it is a warning (one real capture holds no hostnames). Hostnames: neither. */
static void cut_after_a_plane_is_noticed(void **state) {
    (void)state;
    pbw meta_plane = {0}, space = {0};
    pbw_uint(&meta_plane, 1, 9); pbw_str(&meta_plane, 2, "/host:metadata");
    pbw_msg(&space, 1, &meta_plane);
    jp_xspace *xs;
    jp_error err;
    assert_int_equal(jp_xspace_parse(&xs, space.buf, space.len, "cut.xplane.pb", &err), JP_ERR_TRUNCATED);
    char want[JP_ERROR_MSG_MAX];
    snprintf(want, sizeof want, "cut.xplane.pb: file ends at byte %zu, right after plane 1: the file looks truncated "
             "(no hostnames field follows the planes)", space.len);
    assert_string_equal(err.msg, want);
    assert_int_equal(err.offset, space.len);
    size_t gz_len;
    uint8_t *gz = pbw_gzip(space.buf, space.len, &gz_len);
    assert_int_equal(jp_xspace_parse(&xs, gz, gz_len, "cut.xplane.pb.gz", &err), JP_ERR_TRUNCATED);
    assert_non_null(strstr(err.msg, "right after plane 1: the file looks truncated (no hostnames field follows the "
                                    "planes) (offset in the decompressed data)"));
    free(gz);
    pbw_str(&space, 4, "host"); /* the same plane and its hostname: a valid empty profile */
    assert_int_equal(jp_xspace_parse(&xs, space.buf, space.len, "whole", &err), JP_OK);
    assert_null(jp_xspace_warning(xs));
    jp_xspace_close(xs);
    free(space.buf);

    pbw w = build_space(), ev = {0}; /* events, hostnames: no doubt */
    assert_int_equal(jp_xspace_parse(&xs, w.buf, w.len, "w", &err), JP_OK);
    assert_null(jp_xspace_warning(xs));
    jp_xspace_close(xs);
    free(w.buf);
    xs = parse_one_event(&ev, &space); /* an event, no hostnames: a warning */
    snprintf(want, sizeof want, "file ends at byte %zu, right after plane 1: the file looks truncated (no hostnames "
             "field follows the planes)", space.len);
    assert_string_equal(jp_xspace_warning(xs), want);
    jp_xspace_close(xs);
    free(space.buf);
}

/* A loop of symbolic links is said as such, not as a missing file. */
static void symlink_loop_is_named(void **state) {
    (void)state;
    const char *dir = getenv("TEST_TMPDIR");
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/loop-a.xplane.pb", dir ? dir : "/tmp");
    snprintf(b, sizeof b, "%s/loop-b.xplane.pb", dir ? dir : "/tmp");
    remove(a), remove(b);
    assert_int_equal(symlink(b, a), 0);
    assert_int_equal(symlink(a, b), 0);
    jp_xspace *xs;
    jp_error err;
    assert_int_equal(jp_xspace_open(&xs, a, &err), JP_ERR_IO);
    char want[1200];
    snprintf(want, sizeof want, "%s: cannot open: too many levels of symbolic links", a);
    assert_string_equal(err.msg, want);
    remove(a), remove(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decodes_model),
        cmocka_unit_test(inflates_compressed_stat),
        cmocka_unit_test(word_varints_read_as_bytewise_ones),
        cmocka_unit_test(stat_shapes_decode_exactly),
        cmocka_unit_test(metadata_lookup_by_id),
        cmocka_unit_test(gzip_file_is_detected_by_content),
        cmocka_unit_test(gzip_members_and_trailing_bytes),
        cmocka_unit_test(gzip_inflate_limit),
        cmocka_unit_test(discard_drops_whole_pages_only),
        cmocka_unit_test(lazy_reader_streams_the_same_events),
        cmocka_unit_test(lazy_open_reports_corrupt_events_when_read),
        cmocka_unit_test(truncation_reports_file_and_offset),
        cmocka_unit_test(capture_errors_and_warnings_decode),
        cmocka_unit_test(corrupt_and_wrong_type_inputs),
        cmocka_unit_test(chrome_traces_read_as_their_xspace),
        cmocka_unit_test(random_byte_flips_never_crash),
        cmocka_unit_test(compressed_stats_are_bounded_in_total),
        cmocka_unit_test(malformed_varints_are_corrupt_not_truncated),
        cmocka_unit_test(cut_after_a_plane_is_noticed),
        cmocka_unit_test(symlink_loop_is_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
