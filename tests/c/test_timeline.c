/* test_timeline.c - the viewer's timeline index under ASan/UBSan: a window holds every event the
 * exporter writes (derived rows included), range totals add up across a split and equal the whole
 * profile's, every event has details, and bad input (every 61st prefix, 300 byte flips) ends in a
 * clean error naming the file, or in an index whose every query answers; and the rows both the
 * exporter and the index lay out (jp_layout_walk): order, derived rows, their records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/arena.h"
#include "decode/xnames.h"
#include "profile/profile.h"
#include "real_captures.h"
#include "timeline/layout.h"
#include "timeline/timeline.h"

#ifndef JP_TEST_DATA
#define JP_TEST_DATA "tests/data"
#endif
#define FIXTURE JP_TEST_DATA "/cpu_small.xplane.pb.gz"

static char tmpdir[1024];

/* What one query wrote, as a string (heap). */
typedef struct answer {
    char *text;
    size_t len;
    FILE *f;
} answer;

static FILE *answer_open(answer *a) {
    memset(a, 0, sizeof *a);
    a->f = open_memstream(&a->text, &a->len);
    assert_non_null(a->f);
    return a->f;
}

static void answer_close(answer *a) { assert_int_equal(fclose(a->f), 0); }

/* The integer after the first "key": in the answer. */
static long long field(const answer *a, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(a->text, pat);
    assert_non_null(p);
    return strtoll(p + strlen(pat), NULL, 10);
}

/* The events a window over the whole profile holds; *merged: how many of them in merged runs. */
static long long window_events(const jp_timeline *tl, long long *merged) {
    jp_timeline_query q = {.start_ns = 0, .end_ns = jp_timeline_end_ns(tl) + 1, .px = 1000000};
    answer a;
    jp_error err;
    assert_int_equal(jp_timeline_window(tl, &q, answer_open(&a), &err), JP_OK);
    answer_close(&a);
    long long n = field(&a, "total_events");
    *merged = field(&a, "aggregated");
    free(a.text);
    return n;
}

/* The totals of [from, to) over every track: slices, and the sums by key. */
static long long range(const jp_timeline *tl, int64_t from, int64_t to, const char *key) {
    jp_timeline_range r = {.start_ns = from, .end_ns = to};
    answer a;
    jp_error err;
    assert_int_equal(jp_timeline_aggregate(tl, &r, answer_open(&a), &err), JP_OK);
    answer_close(&a);
    long long v = field(&a, key);
    free(a.text);
    return v;
}

static void test_window_holds_what_the_exporter_writes(void **state) {
    (void)state;
    jp_timeline *tl;
    jp_error err;
    assert_int_equal(jp_timeline_new(&tl, FIXTURE, NULL, 0, NULL, &err), JP_OK);
    char out[1100];
    snprintf(out, sizeof out, "%s/t.json", tmpdir);
    jp_trace_stats st;
    assert_int_equal(jp_trace_export(FIXTURE, out, NULL, &st, &err), JP_OK);
    unlink(out);
    assert_int_equal(st.derived, 3); /* the CPU profile's Steps row: one event per step */
    assert_int_equal(jp_timeline_event_count(tl), st.events_out + st.derived);
    long long merged;
    assert_int_equal(window_events(tl, &merged), st.events_out + st.derived);
    assert_int_equal(merged, 0); /* a nanosecond a pixel: every event alone */
    jp_timeline_free(tl);
}

static void test_range_totals_add_up(void **state) {
    (void)state;
    jp_timeline *tl;
    jp_error err;
    assert_int_equal(jp_timeline_new(&tl, FIXTURE, NULL, 0, NULL, &err), JP_OK);
    int64_t end = jp_timeline_end_ns(tl) + 1, mid = end / 2;
    /* the whole profile: every event, each whole */
    assert_int_equal(range(tl, 0, end, "slices"), (long long)jp_timeline_event_count(tl));
    assert_int_equal(range(tl, 0, end, "in_range_ns"), range(tl, 0, end, "total_ns"));
    assert_int_equal(range(tl, 0, end, "self_in_range_ns"), range(tl, 0, end, "self_ns"));
    assert_true(range(tl, 0, end, "self_ns") <= range(tl, 0, end, "total_ns"));
    /* clipped time adds up across a split; slices that straddle it count on both sides */
    static const char *const clipped[] = {"in_range_ns", "self_in_range_ns"};
    for (int k = 0; k < 2; k++)
        assert_int_equal(range(tl, 0, mid, clipped[k]) + range(tl, mid, end, clipped[k]), range(tl, 0, end, clipped[k]));
    assert_true(range(tl, 0, mid, "slices") + range(tl, mid, end, "slices") >= range(tl, 0, end, "slices"));
    /* bad ranges */
    answer a;
    jp_timeline_range empty = {.start_ns = 5, .end_ns = 5};
    assert_int_equal(jp_timeline_aggregate(tl, &empty, answer_open(&a), &err), JP_ERR_ARG);
    answer_close(&a), free(a.text);
    uint32_t missing = (uint32_t)jp_timeline_track_count(tl);
    jp_timeline_range past = {.start_ns = 0, .end_ns = end, .tracks = &missing, .n_tracks = 1};
    assert_int_equal(jp_timeline_aggregate(tl, &past, answer_open(&a), &err), JP_ERR_NOT_FOUND);
    answer_close(&a), free(a.text);
    jp_timeline_free(tl);
}

/* Asks for every event's details, and one past the last of each track. */
static void query_every_event(jp_timeline *tl) {
    for (size_t t = 0; t < jp_timeline_track_count(tl); t++) {
        for (size_t i = 0;; i++) {
            answer a;
            jp_error err;
            int rc = jp_timeline_event(tl, t, i, answer_open(&a), &err);
            answer_close(&a);
            if (rc == JP_ERR_NOT_FOUND) {
                free(a.text);
                assert_true(i > 0); /* every track holds an event */
                break;
            }
            assert_true(rc == JP_OK || rc < 0);
            if (rc == JP_OK) assert_non_null(strstr(a.text, "\"self_us\":"));
            free(a.text);
        }
    }
}

static void test_every_event_has_details(void **state) {
    (void)state;
    jp_timeline *tl;
    jp_error err;
    assert_int_equal(jp_timeline_new(&tl, FIXTURE, NULL, 0, NULL, &err), JP_OK);
    query_every_event(tl);
    answer a;
    assert_int_equal(jp_timeline_event(tl, jp_timeline_track_count(tl), 0, answer_open(&a), &err), JP_ERR_NOT_FOUND);
    answer_close(&a), free(a.text);
    jp_timeline_free(tl);
}

/* The file's bytes, gunzipped. */
static char *slurp(const char *path, size_t *len) {
    gzFile f = gzopen(path, "rb");
    assert_non_null(f);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    int got;
    while ((got = gzread(f, buf + n, (unsigned)(cap - n))) > 0)
        if ((n += (size_t)got) == cap) buf = realloc(buf, cap *= 2);
    gzclose(f);
    *len = n;
    return buf;
}

/* Indexes these bytes: a clean error that names the file, or an index every query answers. */
static void index_bytes(const uint8_t *data, size_t len, int *ok, int *failed) {
    char in[1100];
    snprintf(in, sizeof in, "%s/bad.xplane.pb", tmpdir);
    FILE *f = fopen(in, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
    jp_timeline *tl;
    jp_error err;
    if (jp_timeline_new(&tl, in, NULL, 0, NULL, &err) == JP_OK) {
        int64_t end = jp_timeline_end_ns(tl) + 1;
        long long merged;
        assert_int_equal(window_events(tl, &merged), (long long)jp_timeline_event_count(tl));
        if (end > 1) (void)range(tl, 0, end, "slices");
        query_every_event(tl);
        jp_timeline_free(tl);
        (*ok)++;
    } else {
        assert_non_null(strstr(err.msg, "bad.xplane.pb"));
        (*failed)++;
    }
    unlink(in);
}

static void test_bad_input_fails_cleanly(void **state) {
    (void)state;
    size_t len;
    char *raw = slurp(FIXTURE, &len);
    int ok = 0, failed = 0;
    for (size_t n = 0; n < len; n += 61) index_bytes((const uint8_t *)raw, n, &ok, &failed);
    uint8_t *copy = malloc(len);
    srand(11);
    for (int i = 0; i < 300; i++) {
        memcpy(copy, raw, len);
        copy[(size_t)rand() % len] ^= (uint8_t)(1 + rand() % 255);
        index_bytes(copy, len, &ok, &failed);
    }
    assert_true(ok > 0 && failed > 0);
    free(copy);
    free(raw);
}

/* Two hosts whose names are 240 bytes (file names near NAME_MAX): each track's process is
 * "host: plane", the host clipped to 200 bytes with "..." on a whole character. (The old
 * process_name kept hosts whole and copied snprintf's would-be length out of its 408-byte stack
 * buffer: a host of over 206 bytes on a plane named with 200 read past it.) */
static void test_long_host_names(void **state) {
    (void)state;
    size_t len;
    char *raw = slurp(FIXTURE, &len);
    char run[1100], host[241], path[1400];
    snprintf(run, sizeof run, "%s/long_hosts", tmpdir);
    mkdir(run, 0755);
    for (int h = 0; h < 2; h++) {
        memset(host, 'a' + h, 240);
        memcpy(host + 194, "\xc3\xa9\xc3\xa9", 4); /* the clip (197 bytes and "...") falls inside the second e-acute */
        host[240] = '\0';
        snprintf(path, sizeof path, "%s/%s.xplane.pb", run, host);
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(raw, 1, len, f), len);
        fclose(f);
    }
    jp_timeline *tl;
    jp_error err;
    assert_int_equal(jp_timeline_new(&tl, run, NULL, 0, NULL, &err), JP_OK);
    jp_timeline_query q = {.start_ns = 0, .end_ns = jp_timeline_end_ns(tl) + 1, .px = 1000};
    answer a;
    assert_int_equal(jp_timeline_window(tl, &q, answer_open(&a), &err), JP_OK);
    answer_close(&a);
    char want[300];
    memset(want, 'a', 194);
    snprintf(want + 194, sizeof want - 194, "\xc3\xa9...: /host:CPU\"");
    assert_non_null(strstr(a.text, want));
    memset(want, 'b', 194);
    assert_non_null(strstr(a.text, want));
    free(a.text);
    jp_timeline_free(tl);
    for (int h = 0; h < 2; h++) {
        memset(host, 'a' + h, 240);
        memcpy(host + 194, "\xc3\xa9\xc3\xa9", 4);
        host[240] = '\0';
        snprintf(path, sizeof path, "%s/%s.xplane.pb", run, host);
        unlink(path);
    }
    rmdir(run);
    free(raw);
}

/* ---- jp_layout_walk: the rows both outputs lay out ------------------------------------------------ */

/* What a walk saw. */
typedef struct walk_log {
    int last_rank;            /* jp_layout_plane_rank of the plane being walked */
    int rank_went_back;       /* 1 when a plane of a lower rank came after a higher one */
    const jp_plane *plane;    /* the plane being walked */
    int kinds_in_plane;       /* bit k: a row of kind k seen on that plane */
    int derived_after_line;   /* 1 when a derived row followed a line of its plane */
    int modules_after_ops;    /* 1 when an XLA Modules row followed the XLA Ops row */
    long long steps_rows, xla_rows, lines, records, kernels;
    char first_step[32];      /* the first step record's name */
    long long analysis;       /* the timeline's analysis-row events (jp_timeline_analysis_count) */
    long long exposed;        /* the analysis' exposed-communication spans */
    long long launched;       /* its devices' work matched to a launch call */
} walk_log;

static int log_plane(void *ctx, jp_xspace *xs, const jp_plane *pl, uint32_t host) {
    walk_log *w = ctx;
    (void)xs, (void)host;
    int rank = jp_layout_plane_rank(pl);
    if (rank < w->last_rank) w->rank_went_back = 1;
    w->last_rank = rank;
    w->plane = pl;
    w->kinds_in_plane = 0;
    return JP_OK;
}

static int log_row(void *ctx, const jp_layout_row *r) {
    walk_log *w = ctx;
    assert_ptr_equal(r->plane, w->plane); /* a plane's rows follow its plane callback */
    if (r->kind != JP_LAYOUT_ROW_LINE && (w->kinds_in_plane & 1 << JP_LAYOUT_ROW_LINE)) w->derived_after_line = 1;
    if (r->kind == JP_LAYOUT_ROW_XLA_MODULES && (w->kinds_in_plane & 1 << JP_LAYOUT_ROW_XLA_OPS)) w->modules_after_ops = 1;
    w->kinds_in_plane |= 1 << r->kind;
    if (r->kind == JP_LAYOUT_ROW_LINE) {
        assert_non_null(r->line);
        assert_int_equal(r->n_recs, 0);
        assert_true(r->name.len > 0);
        w->lines++;
        return JP_OK;
    }
    assert_null(r->line);
    w->records += (long long)r->n_recs;
    if (r->kind == JP_LAYOUT_ROW_STEPS) {
        assert_true(jp_str_eq(r->name, JP_XN_LINE_STEPS));
        w->steps_rows++;
        for (size_t i = 0; i < r->n_recs; i++) {
            const jp_layout_record *rec = &r->recs[i];
            assert_non_null(rec->step);
            assert_int_equal(rec->start_ps, rec->step->start_ps);
            assert_int_equal(rec->end_ps, rec->step->start_ps + rec->step->dur_ps);
            char want[32];
            snprintf(want, sizeof want, "step %lld", (long long)rec->step->step_num);
            assert_true(jp_str_eq(rec->name, want));
            if (!w->first_step[0]) snprintf(w->first_step, sizeof w->first_step, "%s", want);
        }
        return JP_OK;
    }
    assert_true(jp_str_eq(r->name, r->kind == JP_LAYOUT_ROW_XLA_OPS ? JP_XN_LINE_XLA_OPS : JP_XN_LINE_XLA_MODULES));
    w->xla_rows++;
    for (size_t i = 0; i < r->n_recs; i++) {
        assert_true(r->recs[i].kernels >= 1);
        assert_true(r->recs[i].end_ps >= r->recs[i].start_ps);
        if (r->kind == JP_LAYOUT_ROW_XLA_OPS) w->kernels += r->recs[i].kernels;
    }
    return JP_OK;
}

/* Walks one capture's rows; checks the order and that the exporter wrote exactly the derived
 * events the walk made (its `derived` count) and the index holds them too. */
static walk_log walk_capture(const char *path) {
    jp_error err;
    jp_arena arena;
    jp_arena_init(&arena, 0);
    jp_vec xs = {0}, files = {0}, hosts = {0};
    assert_int_equal(jp_layout_open_hosts(path, NULL, 0, &arena, &xs, &files, &hosts, &err), JP_OK);
    jp_profile *prof;
    assert_int_equal(jp_profile_from_xspaces(&prof, xs.data, files.data, xs.n, path, NULL, &err), JP_OK);
    int64_t *shift;
    assert_int_equal(jp_layout_host_shifts(xs.data, files.data, xs.n, jp_profile_analysis(prof), &arena, &shift, &err),
                     JP_OK);
    walk_log w = {0};
    jp_layout_walker walker = {log_plane, log_row, &w};
    assert_int_equal(jp_layout_walk(xs.data, xs.n, shift, jp_profile_analysis(prof), &arena, &walker, &err), JP_OK);
    assert_false(w.rank_went_back);      /* devices, then /host:CPU, then the rest */
    assert_false(w.derived_after_line);  /* a plane's derived rows come before its lines */
    assert_false(w.modules_after_ops);   /* XLA Modules, then XLA Ops */
    const jp_analysis *a = jp_profile_analysis(prof);
    w.exposed = (long long)a->n_comm_exposed;
    for (size_t d = 0; d < a->n_devices; d++) w.launched += (long long)a->devices[d].n_launched;
    jp_profile_free(prof);
    for (size_t i = 0; i < xs.n; i++) jp_xspace_close(JP_VEC_AT(&xs, jp_xspace *, i));
    jp_vec_free(&xs), jp_vec_free(&files), jp_vec_free(&hosts);
    jp_arena_deinit(&arena);

    char out[1100];
    snprintf(out, sizeof out, "%s/walk.json", tmpdir);
    jp_trace_stats st;
    assert_int_equal(jp_trace_export(path, out, NULL, &st, &err), JP_OK);
    unlink(out);
    jp_timeline *tl;
    assert_int_equal(jp_timeline_new(&tl, path, NULL, 0, NULL, &err), JP_OK);
    assert_int_equal(st.derived, w.records); /* nothing cut: every record is written */
    /* and the viewer's own rows (exposed communication, launch delay), which the export has not */
    w.analysis = (long long)jp_timeline_analysis_count(tl);
    assert_int_equal(jp_timeline_event_count(tl), st.events_out + st.derived + (uint64_t)w.analysis);
    jp_timeline_free(tl);
    return w;
}

static void test_layout_rows_cpu(void **state) {
    (void)state;
    walk_log w = walk_capture(FIXTURE);
    assert_int_equal(w.steps_rows, 1); /* no device: the Steps row goes to /host:CPU */
    assert_int_equal(w.records, 3);   /* three steps */
    assert_string_equal(w.first_step, "step 0"); /* the fixture numbers its steps from 0 */
    assert_int_equal(w.xla_rows, 0);
    assert_true(w.lines > 0);
}

static void test_layout_rows_gpu(void **state) {
    (void)state;
    REQUIRE_REAL_CAPTURES();
    char path[1024];
    walk_log w = walk_capture(real_capture(path, sizeof path, "mi300_jax08_gemm.xplane.pb.gz"));
    assert_int_equal(w.xla_rows, 2);   /* one GPU: its XLA Modules and XLA Ops rows */
    assert_true(w.kernels > 0);
    /* no collective; one Launch delay event per launch (each call queued one event here) */
    assert_int_equal(w.exposed, 0);
    assert_true(w.launched > 0);
    assert_int_equal(w.analysis, w.launched);
    w = walk_capture(real_capture(path, sizeof path, "jax_tpu_v6e_4core_inference.xplane.pb.gz"));
    assert_int_equal(w.xla_rows, 0);   /* a TPU writes its own XLA rows */
    assert_true(w.exposed > 0);        /* its all-reduces: one event per exposed span, no launches */
    assert_int_equal(w.analysis, w.exposed);
}

int main(void) {
    const char *dir = getenv("TEST_TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s", dir && *dir ? dir : "/tmp");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_holds_what_the_exporter_writes),
        cmocka_unit_test(test_range_totals_add_up),
        cmocka_unit_test(test_every_event_has_details),
        cmocka_unit_test(test_bad_input_fails_cleanly),
        cmocka_unit_test(test_long_host_names),
        cmocka_unit_test(test_layout_rows_cpu),
        cmocka_unit_test(test_layout_rows_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
