/* test_profile.c - bad input never crashes the whole pipeline (decode, model, analyses, renderers).
 *
 * On the committed real capture tests/data/cpu_small.xplane.pb.gz (see make_fixtures.py): every
 * prefix of the gzip file and of the decompressed XSpace, 1,000 single-byte flips of the XSpace
 * and 200 of the gzip bytes must each give a clean error naming the input and a byte offset, or a
 * valid profile that renders every section in every format. A hand-built XSpace with every kind of
 * plane then carries extreme times and stat values, and degenerate inputs (empty gzip, empty
 * planes, a bad HloProto) must load or fail the same way. ASan/UBSan (make test-c) turn any
 * out-of-bounds read, signed overflow or leak into a failure. JP_TEST_FLIPS=N multiplies the flips
 * for a longer local run; JP_TEST_VERBOSE=1 prints every error message. */
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

#include "profile/profile.h" /* jp_profile_from_xspaces: several hosts from memory */
#include "jaxprof/jaxprof_results.h"
#include "jaxprof/jaxprof_xspace.h"
#include "pbwrite.h"

#ifndef JP_TEST_DATA
#define JP_TEST_DATA "tests/data"
#endif

#define CPU_SMALL "cpu_small.xplane.pb.gz"
#define CPU_SMALL_RAW "cpu_small.xplane.pb" /* its decompressed bytes, as errors name them */

typedef struct blob {
    uint8_t *ptr;
    size_t len;
} blob;

static blob read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open fixture %s", path);
    blob b = {NULL, 0};
    size_t cap = 0;
    for (;;) {
        if (b.len == cap) {
            cap = cap ? cap * 2 : 65536;
            b.ptr = realloc(b.ptr, cap);
            assert_non_null(b.ptr);
        }
        size_t n = fread(b.ptr + b.len, 1, cap - b.len, f);
        if (n == 0) break;
        b.len += n;
    }
    fclose(f);
    return b;
}

/* The test's own gunzip (zlib), independent of the library's. */
static blob gunzip(blob gz) {
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
    blob out = {NULL, 0};
    size_t cap = gz.len * 8;
    out.ptr = malloc(cap);
    assert_non_null(out.ptr);
    z.next_in = gz.ptr;
    z.avail_in = (uInt)gz.len;
    int zr;
    do {
        if (out.len == cap) {
            cap *= 2;
            out.ptr = realloc(out.ptr, cap);
            assert_non_null(out.ptr);
        }
        z.next_out = out.ptr + out.len;
        z.avail_out = (uInt)(cap - out.len);
        zr = inflate(&z, Z_NO_FLUSH);
        out.len = cap - z.avail_out;
        assert_true(zr == Z_OK || zr == Z_STREAM_END);
    } while (zr != Z_STREAM_END);
    inflateEnd(&z);
    return out;
}

static blob fixture_gz(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", JP_TEST_DATA, name);
    return read_file(path);
}

/* Deterministic PRNG (xorshift64*): the same flips on every run and machine. */
static uint64_t xorshift(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static FILE *devnull;

/* Every section in every format into /dev/null: none may crash; CSV has no `report`. */
static void render_all(const jp_profile *p) {
    const jp_analysis *a = jp_profile_analysis(p);
    jp_view view = {0};
    for (int s = 0; s < JP_SECTION_COUNT; s++) {
        for (int f = JP_FORMAT_TEXT; f <= JP_FORMAT_CSV; f++) {
            jp_error err;
            int rc = jp_render(a, s, f, &view, devnull, &err);
            if (s == JP_SECTION_REPORT && f == JP_FORMAT_CSV) assert_int_equal(rc, JP_ERR_ARG);
            else if (rc != JP_OK) fail_msg("render %s/%d failed: %s", jp_section_name(s), f, err.msg);
        }
    }
    /* a non-default view too: top rows, a sort key, a filter (tables without a "name" column
     * refuse the key with JP_ERR_ARG, which is fine; crashing is not) */
    jp_view v2 = {.top = 3, .sort = "name", .filter = "a|e", .width = 40};
    for (int s = 0; s < JP_SECTION_COUNT; s++) {
        jp_error err;
        int rc = jp_render(a, s, JP_FORMAT_TEXT, &v2, devnull, &err);
        if (rc != JP_OK && rc != JP_ERR_ARG) fail_msg("render %s with a view failed: %s", jp_section_name(s), err.msg);
    }
}

typedef struct outcome {
    size_t ok, errors;   /* inputs that loaded, inputs refused with a clean error */
    size_t valid_at[4];  /* the first inputs that loaded, by position (prefix length, flipped byte) */
} outcome;

/* The report of p as JSON, malloc'd. */
static char *report_json(const jp_profile *p) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    jp_view view = {0};
    jp_error err;
    assert_int_equal(jp_render(jp_profile_analysis(p), JP_SECTION_REPORT, JP_FORMAT_JSON, &view, f, &err), JP_OK);
    fclose(f);
    return buf;
}

/* The same input parsed ahead on a second thread gives the same outcome: the same error, or a
 * profile with the same report. */
static void check_threads_agree(const void *data, size_t len, const char *name, int rc, const jp_error *err,
                                const jp_profile *p, const char *what, size_t at) {
    jp_load_options two = {.threads = 2};
    jp_profile *q = NULL;
    jp_error err2;
    int rc2 = jp_profile_parse(&q, data, len, name, &two, &err2);
    if (rc2 != rc) fail_msg("%s %zu: one thread gives %d, two give %d (%s)", what, at, rc, rc2, err2.msg);
    if (rc != JP_OK) {
        if (strcmp(err->msg, err2.msg) != 0) fail_msg("%s %zu: errors differ: '%s' vs '%s'", what, at, err->msg, err2.msg);
        return;
    }
    char *one_json = report_json(p), *two_json = report_json(q);
    if (strcmp(one_json, two_json) != 0) fail_msg("%s %zu: the reports of one and two threads differ", what, at);
    free(one_json);
    free(two_json);
    jp_profile_free(q);
}

/* One mutated input through jp_profile_parse: a clean error (negative code, the input's name and
 * "byte N" in the message) or a valid profile that renders; the same with two threads. Never
 * anything else. */
static void check_parse(const void *data, size_t len, const char *name, outcome *o, const char *what, size_t at) {
    jp_profile *p = (jp_profile *)(uintptr_t)1;
    jp_error err;
    jp_load_options one = {.threads = 1};
    int rc = jp_profile_parse(&p, data, len, name, &one, &err);
    check_threads_agree(data, len, name, rc, &err, p, what, at);
    if (rc == JP_OK) {
        assert_non_null(p);
        render_all(p);
        jp_profile_free(p);
        if (o->ok < sizeof o->valid_at / sizeof o->valid_at[0]) o->valid_at[o->ok] = at;
        o->ok++;
        return;
    }
    o->errors++;
    if (getenv("JP_TEST_VERBOSE")) print_message("%s %zu: %s\n", what, at, err.msg);
    if (p != NULL) fail_msg("%s %zu: error %d but *out not NULL", what, at);
    if (rc >= 0 || err.code != rc) fail_msg("%s %zu: bad status %d (err.code %d)", what, at, rc, err.code);
    if (rc == JP_ERR_NOMEM) fail_msg("%s %zu: out of memory on a tiny input: %s", what, at, err.msg);
    if (!strstr(err.msg, name) || !strstr(err.msg, "at byte "))
        fail_msg("%s %zu: message lacks the name or a byte offset: %s", what, at, err.msg);
}

/* ---- the fixture itself ----------------------------------------------------------------------- */

static void cpu_fixture_has_the_expected_facts(void **state) {
    (void)state;
    blob gz = fixture_gz(CPU_SMALL), raw = gunzip(gz);
    /* both the gzip and the raw bytes load, to the same analysis */
    jp_profile *from_gz, *p;
    jp_error err;
    assert_int_equal(jp_profile_parse(&from_gz, gz.ptr, gz.len, CPU_SMALL, NULL, &err), JP_OK);
    if (jp_profile_parse(&p, raw.ptr, raw.len, CPU_SMALL, NULL, &err) != JP_OK) fail_msg("%s", err.msg);
    const jp_analysis *a = jp_profile_analysis(p);
    assert_int_equal(jp_profile_analysis(from_gz)->n_ops, a->n_ops);
    assert_int_equal(jp_profile_analysis(from_gz)->n_events, a->n_events);
    jp_profile_free(from_gz);

    assert_string_equal(a->path, CPU_SMALL);
    assert_int_equal(a->platform, JP_PLATFORM_CPU);
    assert_int_equal(a->n_events, 69);
    assert_int_equal(a->n_steps, 3);
    static const int64_t step_ps[3] = {276091000, 61682000, 14962000}; /* step 0 compiles */
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(a->steps[i].step_num, (int64_t)i);
        assert_int_equal(a->steps[i].dur_ps, step_ps[i]);
        int64_t sum = 0;
        for (int k = 0; k < JP_PART_COUNT; k++) sum += a->steps[i].part_ps[k];
        assert_int_equal(sum, a->steps[i].dur_ps);
    }
    assert_string_equal(a->step_summary.method, "StepTraceAnnotation");
    assert_int_equal(a->n_ops, 2);
    assert_int_equal(a->n_devices, 1);
    int cpu = 0;
    for (size_t i = 0; i < a->n_devices; i++) cpu += strcmp(a->devices[i].name, "/host:CPU") == 0;
    assert_int_equal(cpu, 1);
    /* ops carry their HLO metadata from /host:metadata: the named_scope shows in a scope path and
     * the module is the jitted function */
    int scoped = 0, module = 0;
    for (size_t i = 0; i < a->n_scopes; i++) scoped += strstr(a->scopes[i].path, "fixture_loss") != NULL;
    for (size_t i = 0; i < a->n_ops; i++) {
        module += strcmp(a->ops[i].module, "jit_train_step") == 0;
        assert_int_equal(a->ops[i].count, 3); /* once per step */
    }
    assert_int_equal(scoped, 1); /* train_step/fixture_loss */
    assert_int_equal(module, (int)a->n_ops);
    render_all(p);
    jp_profile_free(p);
    free(raw.ptr);
    free(gz.ptr);
}

/* ---- truncation --------------------------------------------------------------------------------- */

static void every_prefix_of_the_xspace(void **state) {
    (void)state;
    blob gz = fixture_gz(CPU_SMALL), raw = gunzip(gz);
    outcome o = {0};
    /* a copy of exactly n bytes each time, so ASan catches any read past the prefix */
    for (size_t n = 0; n < raw.len; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, raw.ptr, n);
        check_parse(cut, n, CPU_SMALL_RAW, &o, "prefix", n);
        free(cut);
    }
    print_message("xspace prefixes: %zu bytes, %zu errors, %zu valid\n", raw.len, o.errors, o.ok);
    /* Only a cut at the end of a top-level field is a whole XSpace: after the second plane (the
     * first with events) and after the third, before the hostnames (all 69 events): both load, the
     * profile warning that the file looks cut. The cut after the first plane (/host:metadata, no
     * event) used to read as a valid empty profile: it is refused as truncated, as is every other
     * prefix. */
    assert_int_equal(raw.len, 8281);
    assert_int_equal(o.ok, 2);
    assert_int_equal(o.valid_at[0], 8132);
    assert_int_equal(o.valid_at[1], 8277);
    assert_int_equal(o.errors, raw.len - 2);
    free(raw.ptr);
    free(gz.ptr);
}

static void every_prefix_of_the_gzip(void **state) {
    (void)state;
    blob gz = fixture_gz(CPU_SMALL);
    outcome o = {0};
    for (size_t n = 0; n < gz.len; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, gz.ptr, n);
        check_parse(cut, n, CPU_SMALL, &o, "gzip prefix", n);
        free(cut);
    }
    print_message("gzip prefixes: %zu bytes, %zu errors, %zu valid\n", gz.len, o.errors, o.ok);
    assert_int_equal(gz.len, 3475);
    assert_int_equal(o.ok, 0); /* the gzip trailer (CRC, size) comes last: no prefix is whole */
    assert_int_equal(o.errors, gz.len);
    free(gz.ptr);
}

/* ---- byte flips --------------------------------------------------------------------------------- */

/* JP_TEST_FLIPS=N runs N times as many flips (a longer local fuzz; the default is what CI runs). */
static void flips(blob src, int count, uint64_t seed, const char *name, const char *what) {
    const char *scale = getenv("JP_TEST_FLIPS");
    if (scale && atoi(scale) > 1) count *= atoi(scale);
    uint8_t *copy = malloc(src.len);
    outcome o = {0};
    for (int i = 0; i < count; i++) {
        memcpy(copy, src.ptr, src.len);
        size_t at = (size_t)(xorshift(&seed) % src.len);
        uint8_t mask = (uint8_t)(xorshift(&seed) % 255 + 1); /* never 0: the byte always changes */
        copy[at] ^= mask;
        check_parse(copy, src.len, name, &o, what, at);
    }
    print_message("%s: %d flips, %zu errors, %zu valid\n", what, count, o.errors, o.ok);
    free(copy);
}

static void random_flips_of_the_xspace(void **state) {
    (void)state;
    blob gz = fixture_gz(CPU_SMALL), raw = gunzip(gz);
    flips(raw, 1000, 0x9E3779B97F4A7C15ULL, CPU_SMALL_RAW, "xspace flip");
    free(raw.ptr);
    free(gz.ptr);
}

static void random_flips_of_the_gzip(void **state) {
    (void)state;
    blob gz = fixture_gz(CPU_SMALL);
    flips(gz, 200, 0xD1B54A32D192ED03ULL, CPU_SMALL, "gzip flip");
    free(gz.ptr);
}

/* ---- hostile values ----------------------------------------------------------------------------
 * Byte flips of a real capture rarely produce extreme numbers, so a hand-built XSpace exercises
 * every kind of plane the model reads (host with steps, dispatches, compiles, ops, memory and
 * transfers; /host:metadata with an HloProto; GPU; TPU) with extreme timestamps, offsets,
 * durations and stat values. Each must load or fail cleanly; no arithmetic may overflow. */

enum { S_STEP = 1, S_ROOT, S_HLO_OP, S_HLO_MODULE, S_RUN_ID, S_ALLOC, S_BYTES, S_PEAK, S_PROGRAM, S_KERNEL,
       S_MEMCPY, S_FLOPS, S_BYTES_ACC, S_HLO_PROTO, S_PEAK_TF, S_PEAK_BW, S_N };
static const char *const STAT_NAMES[S_N] = {"", "step_num", "_r", "hlo_op", "hlo_module", "run_id",
    "allocator_name", "bytes_allocated", "peak_bytes_in_use", "program_id", "kernel_details",
    "memcpy_details", "flops", "bytes_accessed", "Hlo Proto", "peak_teraflops_per_second",
    "peak_hbm_bw_gigabytes_per_second"};

typedef struct hostile {
    uint64_t ts, off, dur, num; /* line timestamp_ns, event offset_ps and duration_ps, stat ints */
    double real;                /* double stats */
    int reps;                   /* events of each kind per line */
} hostile;

static void stat_int(pbw *ev, uint32_t field, uint64_t id, uint64_t v) {
    pbw st = {0};
    pbw_uint(&st, 1, id);
    pbw_uint(&st, 4, v);
    pbw_msg(ev, field, &st);
}

static void stat_str(pbw *ev, uint32_t field, uint64_t id, const char *v) {
    pbw st = {0};
    pbw_uint(&st, 1, id);
    pbw_str(&st, 5, v);
    pbw_msg(ev, field, &st);
}

static void stat_double(pbw *ev, uint32_t field, uint64_t id, double v) {
    pbw st = {0};
    pbw_uint(&st, 1, id);
    pbw_double(&st, 2, v);
    pbw_msg(ev, field, &st);
}

static void add_stat_meta(pbw *plane) {
    for (uint64_t id = 1; id < S_N; id++) pbw_stat_meta(plane, id, STAT_NAMES[id]);
}

/* One event: metadata id, the hostile offset and duration, and extra stats already encoded. */
static void add_event(pbw *line, const hostile *h, uint64_t meta, uint64_t k, pbw *stats) {
    pbw ev = {0};
    pbw_uint(&ev, 1, meta);
    pbw_uint(&ev, 2, h->off + k);
    pbw_uint(&ev, 3, h->dur);
    if (stats && stats->len) pbw_raw(&ev, stats->buf, stats->len);
    if (stats) free(stats->buf), memset(stats, 0, sizeof *stats);
    pbw_msg(line, 4, &ev);
}

static void finish_line(pbw *plane, pbw *line, const hostile *h, uint64_t id, const char *name) {
    pbw_uint(line, 1, id);
    pbw_str(line, 2, name);
    pbw_uint(line, 3, h->ts);
    pbw_uint(line, 9, h->dur);
    pbw_msg(plane, 3, line);
}

static void host_plane(pbw *space, const hostile *h) {
    pbw plane = {0}, python = {0}, worker = {0}, st = {0};
    for (int k = 0; k < h->reps; k++) {
        stat_int(&st, 4, S_STEP, h->num + (uint64_t)k);
        stat_int(&st, 4, S_ROOT, 1);
        add_event(&python, h, 10, (uint64_t)k, &st);                  /* step marker */
        add_event(&python, h, 11, (uint64_t)k, NULL);                 /* PjitFunction(train_step) */
        add_event(&python, h, 12, (uint64_t)k, NULL);                 /* backend_compile */
        add_event(&python, h, 13, (uint64_t)k, NULL);                 /* a user annotation */
        stat_int(&st, 4, S_BYTES, h->num);
        stat_int(&st, 4, S_PEAK, h->num);
        stat_str(&st, 4, S_ALLOC, "cpu");
        add_event(&python, h, 14, (uint64_t)k, &st);                  /* MemoryAllocation */
        add_event(&python, h, 16, (uint64_t)k, NULL);                 /* H2D */
        stat_str(&st, 4, S_HLO_OP, k % 2 ? "dot.1" : "add.2");
        stat_str(&st, 4, S_HLO_MODULE, "jit_train_step");
        stat_int(&st, 4, S_RUN_ID, h->num + (uint64_t)k);
        stat_int(&st, 4, S_PROGRAM, h->num);
        add_event(&worker, h, 15, (uint64_t)k, &st);                  /* an XLA:CPU thunk */
    }
    finish_line(&plane, &python, h, 1, "python");
    finish_line(&plane, &worker, h, 2, "tf_worker");
    stat_int(&st, 5, S_STEP, h->num); /* metadata stats apply to every such event */
    pbw_event_meta(&plane, 10, "train", &st);
    pbw_event_meta(&plane, 11, "PjitFunction(train_step)", NULL);
    pbw_event_meta(&plane, 12, "backend_compile", NULL);
    pbw_event_meta(&plane, 13, "my_scope", NULL);
    pbw_event_meta(&plane, 14, "MemoryAllocation", NULL);
    pbw_event_meta(&plane, 15, "thunk", NULL);
    pbw_event_meta(&plane, 16, "H2D", NULL);
    add_stat_meta(&plane);
    pbw_uint(&plane, 1, 1);
    pbw_str(&plane, 2, "/host:CPU");
    pbw_msg(space, 1, &plane);
}

static void metadata_plane(pbw *space, const hostile *h) {
    pbw proto = {0}, module = {0}, comp = {0}, instr = {0}, meta = {0}, plane = {0}, st = {0}, stb = {0};
    const char *names[] = {"dot.1", "add.2", "fusion.3"}, *ops[] = {"dot", "add", "fusion"};
    for (int i = 0; i < 3; i++) {
        pbw_str(&meta, 2, "jit(train_step)/jvp(loss)/dense/dot_general");
        pbw_str(&meta, 3, "train.py");
        pbw_uint(&meta, 4, h->num);
        pbw_str(&instr, 1, names[i]);
        pbw_str(&instr, 2, ops[i]);
        pbw_msg(&instr, 7, &meta);
        pbw_uint(&instr, 38, h->num); /* called computation id: may name no computation */
        pbw_msg(&comp, 2, &instr);
    }
    pbw_uint(&comp, 5, h->num);
    pbw_str(&module, 1, "jit_train_step");
    pbw_msg(&module, 3, &comp);
    pbw_msg(&proto, 1, &module);
    pbw_uint(&stb, 1, S_HLO_PROTO);
    pbw_bytes(&stb, 6, proto.buf, proto.len);
    free(proto.buf);
    pbw_msg(&st, 5, &stb);
    stat_int(&st, 5, S_PROGRAM, h->num);
    pbw_event_meta(&plane, 1, "jit_train_step", &st);
    /* a second module whose HloProto has no HloModuleProto: named after its metadata */
    pbw_uint(&stb, 1, S_HLO_PROTO);
    pbw_bytes(&stb, 6, "\x10\x01", 2);
    pbw_msg(&st, 5, &stb);
    pbw_event_meta(&plane, 2, "jit_empty", &st);
    add_stat_meta(&plane);
    pbw_str(&plane, 2, "/host:metadata");
    pbw_msg(space, 1, &plane);
}

static void gpu_plane(pbw *space, const hostile *h) {
    pbw plane = {0}, stream = {0}, st = {0};
    for (int k = 0; k < h->reps; k++) {
        stat_str(&st, 4, S_HLO_OP, "fusion.3");
        stat_str(&st, 4, S_HLO_MODULE, k % 3 ? "jit_train_step" : "jit_empty");
        stat_str(&st, 4, S_KERNEL, "regs:4294967295 static_shared:99999999999 grid:1,2,3 block:0,0,0 occ_pct:1e308");
        stat_int(&st, 4, S_PROGRAM, h->num);
        add_event(&stream, h, 1, (uint64_t)k, &st);                   /* a kernel */
        add_event(&stream, h, 1, (uint64_t)k, &st);                   /* merged with the previous */
        stat_str(&st, 4, S_MEMCPY, "kind_src:host kind_dst:device size:99999999999999999999999");
        add_event(&stream, h, 2, (uint64_t)k, &st);                   /* a transfer */
        add_event(&stream, h, 3, (uint64_t)k, NULL);                  /* a kernel with no stats */
    }
    finish_line(&plane, &stream, h, 7, "Stream #7");
    pbw_event_meta(&plane, 1, "fusion_kernel", NULL);
    pbw_event_meta(&plane, 2, "MemcpyH2D", NULL);
    pbw_event_meta(&plane, 3, "nccl_all_reduce", NULL);
    add_stat_meta(&plane);
    stat_double(&plane, 6, S_PEAK_TF, h->real);
    stat_double(&plane, 6, S_PEAK_BW, h->real);
    pbw_uint(&plane, 1, 2);
    pbw_str(&plane, 2, "/device:GPU:0");
    pbw_msg(space, 1, &plane);
}

/* A TPU chip: executions, steps (two names, alternating) and ops; its lines start at ts. Two chips
 * at distant times widen each shared step to span both. */
static void tpu_plane(pbw *space, const hostile *h, uint64_t id, uint64_t ts) {
    pbw plane = {0}, modules = {0}, steps = {0}, ops = {0}, st = {0};
    hostile at = *h;
    at.ts = ts;
    for (int k = 0; k < h->reps; k++) {
        add_event(&modules, &at, 1, (uint64_t)k, NULL);
        add_event(&steps, &at, 2 + (uint64_t)k % 2, (uint64_t)k, NULL);
        stat_double(&st, 4, S_FLOPS, h->real);
        stat_double(&st, 4, S_BYTES_ACC, h->real);
        add_event(&ops, &at, 4, (uint64_t)k, &st);
    }
    finish_line(&plane, &modules, &at, 1, "XLA Modules");
    finish_line(&plane, &steps, &at, 2, "Steps");
    finish_line(&plane, &ops, &at, 3, "XLA Ops");
    pbw_event_meta(&plane, 1, "jit_train_step(42)", NULL);
    pbw_event_meta(&plane, 2, "9223372036854775807", NULL);
    pbw_event_meta(&plane, 3, "-9223372036854775808", NULL);
    pbw_event_meta(&plane, 4, "dot.1", NULL);
    add_stat_meta(&plane);
    stat_double(&plane, 6, S_PEAK_TF, h->real);
    pbw_uint(&plane, 1, 2 + id);
    pbw_str(&plane, 2, id ? "/device:TPU:1" : "/device:TPU:0");
    pbw_msg(space, 1, &plane);
}

static pbw hostile_space(const hostile *h, uint64_t ts2, int with_host) {
    pbw space = {0};
    metadata_plane(&space, h);
    if (with_host) host_plane(&space, h);
    gpu_plane(&space, h);
    tpu_plane(&space, h, 0, h->ts);
    tpu_plane(&space, h, 1, ts2);
    return space;
}

/* Two hosts, the second's times elsewhere (its lines start at ts2): the per-host analyses, clock
 * alignment and stragglers must load or fail as one host does, and render. */
static void check_two_hosts(const pbw *a, const pbw *b, int rc_alone) {
    jp_xspace *xs[2] = {NULL, NULL};
    const char *names[2] = {"host-a", "host-b"};
    jp_error err;
    int rc = jp_xspace_parse_lazy(&xs[0], a->buf, a->len, names[0], &err);
    if (rc == JP_OK) rc = jp_xspace_parse_lazy(&xs[1], b->buf, b->len, names[1], &err);
    jp_profile *p = NULL;
    if (rc == JP_OK) rc = jp_profile_from_xspaces(&p, xs, names, 2, "two-hosts", NULL, &err);
    if (rc == JP_OK) {
        assert_int_equal(jp_profile_analysis(p)->n_host_stats, 2);
        render_all(p);
    } else if (rc_alone == JP_OK && ((rc != JP_ERR_CORRUPT && rc != JP_ERR_LIMIT) || !strstr(err.msg, "at byte "))) {
        fail_msg("two hosts fail with %d where one loads: %s", rc, err.msg); /* two may pass a limit one does not */
    }
    jp_profile_free(p);
    jp_xspace_close(xs[0]);
    jp_xspace_close(xs[1]);
}

/* with_host 0 leaves out the host plane: its step markers would hide the TPU Steps lines */
static void check_hostile(const hostile *h, uint64_t ts2, int with_host, size_t *ok, size_t *errors,
                          size_t *cases) {
    pbw space = hostile_space(h, ts2, with_host);
    hostile later = *h;
    later.ts = ts2;
    pbw other = hostile_space(&later, h->ts, with_host);
    outcome o = {0};
    check_parse(space.buf, space.len, "hostile", &o, "hostile case", (*cases)++);
    check_two_hosts(&space, &other, o.ok ? JP_OK : JP_ERR_CORRUPT);
    *ok += o.ok;
    *errors += o.errors;
    free(space.buf);
    free(other.buf);
}

/* XLA:CPU asynchronous ops last until their "end:" event, linked by flow id (_p on the op, _c on
 * the end): ends out of flow order, a flow with two ends (the first written wins), an op with no
 * end, and an end that finishes before its op (no change). */
static void async_ops_end_at_their_linked_end_event(void **state) {
    (void)state;
    enum { P = 40, C = 41 };
    static const struct { const char *name; uint64_t meta, off, dur, flow; int is_end; } evs[] = {
        {"a", 1, 0, 1000, 7, 0},        /* ends at 4000 via flow 7 */
        {"b", 1, 2000, 1000, 3, 0},     /* ends at 6000 via the first end of flow 3 */
        {"", 2, 3000, 1000, 7, 1},
        {"", 2, 5000, 1000, 3, 1},
        {"", 2, 8000, 1000, 3, 1},      /* a second end of flow 3: ignored */
        {"c", 1, 10000, 500, 9, 0},     /* no end */
        {"d", 1, 12000, 3000, 5, 0},    /* its end finishes first: stays 3000 */
        {"", 2, 13000, 500, 5, 1},
    };
    pbw space = {0}, plane = {0}, line = {0};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++) {
        pbw ev = {0}, st = {0};
        pbw_uint(&ev, 1, evs[i].meta);
        pbw_uint(&ev, 2, evs[i].off);
        pbw_uint(&ev, 3, evs[i].dur);
        if (!evs[i].is_end) {
            stat_str(&st, 4, S_HLO_OP, evs[i].name);
            stat_str(&st, 4, S_HLO_MODULE, "jit_f");
        }
        stat_int(&st, 4, evs[i].is_end ? C : P, evs[i].flow);
        pbw_raw(&ev, st.buf, st.len);
        free(st.buf);
        pbw_msg(&line, 4, &ev);
    }
    pbw_uint(&line, 1, 2);
    pbw_str(&line, 2, "tf_worker");
    pbw_msg(&plane, 3, &line);
    pbw_event_meta(&plane, 1, "thunk", NULL);
    pbw_event_meta(&plane, 2, "end: thunk", NULL);
    add_stat_meta(&plane);
    const char *flow_names[] = {"_p", "_c"};
    for (uint64_t id = P; id <= C; id++) pbw_stat_meta(&plane, id, flow_names[id - P]);
    pbw_uint(&plane, 1, 1);
    pbw_str(&plane, 2, "/host:CPU");
    pbw_msg(&space, 1, &plane);
    jp_profile *p;
    jp_error err;
    if (jp_profile_parse(&p, space.buf, space.len, "flows.xplane.pb", NULL, &err) != JP_OK) fail_msg("%s", err.msg);
    const jp_analysis *a = jp_profile_analysis(p);
    static const struct { const char *name; int64_t dur_ps; } want[] = {{"a", 4000}, {"b", 4000}, {"c", 500}, {"d", 3000}};
    assert_int_equal(a->n_ops, 4);
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        size_t i = 0;
        while (i < a->n_ops && strcmp(a->ops[i].name, want[w].name) != 0) i++;
        assert_true(i < a->n_ops);
        assert_int_equal(a->ops[i].count, 1);
        assert_int_equal(a->ops[i].total_ps, want[w].dur_ps);
    }
    jp_profile_free(p);
    free(space.buf);
}

static void hostile_values_never_overflow(void **state) {
    (void)state;
    const uint64_t ints[] = {0, 1, 1000, (uint64_t)1 << 40, (uint64_t)1 << 53, (uint64_t)1 << 58,
                             (uint64_t)INT64_MAX, (uint64_t)INT64_MAX - 1, (uint64_t)INT64_MIN, (uint64_t)-1,
                             (uint64_t)-1000, (uint64_t)-((int64_t)1 << 50), 2305843009213693ULL /* 2^61 ps in ns */,
                             (uint64_t)-2305843009213693LL, (uint64_t)1 << 61, (uint64_t)-((int64_t)1 << 61)};
    const double reals[] = {0.0, 1.5, 1e308, -1e308, 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0, 5e-324};
    const size_t n_ints = sizeof ints / sizeof ints[0], n_reals = sizeof reals / sizeof reals[0];
    size_t ok = 0, errors = 0, cases = 0;
    /* extreme times: line timestamps, offsets, durations, and a second TPU chip elsewhere in time */
    for (size_t a = 0; a < n_ints; a++) {
        for (size_t b = 0; b < n_ints; b++) {
            for (size_t c = 0; c < n_ints; c++) {
                hostile h = {ints[a], ints[b], ints[c], 7, 1.5, 1 + (int)((a + c) % 3) * 4};
                check_hostile(&h, c % 2 ? ints[(a + b) % n_ints] : 0 - ints[a], b % 3 != 1, &ok, &errors, &cases);
            }
        }
    }
    /* extreme stat values (step numbers, run ids, byte counts, program ids, flops) at ordinary times */
    for (size_t n = 0; n < n_ints; n++) {
        for (size_t r = 0; r < n_reals; r++) {
            hostile h = {1000, 5, 100, ints[n], reals[r], 5};
            check_hostile(&h, 2000, 1, &ok, &errors, &cases);
        }
    }
    print_message("hostile values: %zu cases, %zu errors, %zu valid\n", cases, errors, ok);
    assert_true(ok > n_ints * n_reals); /* ordinary times load, whatever the stats say */
}

/* ---- degenerate but well-formed inputs ---------------------------------------------------------- */

/* data as a gzip member, in a pbw (pbwrite.h's pbw_gzip). */
static pbw gzip_of(const void *data, size_t len) {
    pbw out = {0};
    out.buf = pbw_gzip(data, len, &out.len);
    out.cap = out.len;
    return out;
}

static void degenerate_inputs(void **state) {
    (void)state;
    jp_profile *p;
    jp_error err;
    outcome o = {0};

    /* a gzip stream of nothing */
    pbw gz = gzip_of("", 0);
    assert_int_equal(jp_profile_parse(&p, gz.buf, gz.len, "empty.xplane.pb.gz", NULL, &err), JP_ERR_TRUNCATED);
    assert_non_null(strstr(err.msg, "empty.xplane.pb.gz"));
    assert_non_null(strstr(err.msg, "at byte 0"));
    free(gz.buf);

    /* an XSpace with only a hostname, one with an empty plane of each kind: empty analyses */
    pbw space = {0}, plane = {0};
    pbw_str(&space, 4, "lonely-host");
    check_parse(space.buf, space.len, "hostname-only", &o, "hostname only", 0);
    const char *names[] = {"/host:CPU", "/host:metadata", "/device:GPU:0", "/device:TPU:0", "", "/device:"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        pbw_str(&plane, 2, names[i]);
        pbw_msg(&space, 1, &plane);
    }
    check_parse(space.buf, space.len, "empty-planes", &o, "empty planes", 0);
    assert_int_equal(o.ok, 2);
    /* the same through gzip, and under a NULL name (errors then say "<memory>") */
    gz = gzip_of(space.buf, space.len);
    check_parse(gz.buf, gz.len, "empty-planes.gz", &o, "empty planes gz", 0);
    assert_int_equal(jp_profile_parse(&p, gz.buf, gz.len / 2, NULL, NULL, &err), JP_ERR_TRUNCATED);
    assert_non_null(strstr(err.msg, "<memory>: truncated gzip data at byte "));
    free(gz.buf);
    free(space.buf);

    /* an `Hlo Proto` stat whose bytes are not an HloProto: an error at their offset */
    pbw st = {0}, stats = {0};
    memset(&space, 0, sizeof space);
    pbw_uint(&st, 1, 1);
    pbw_bytes(&st, 6, "\x0a\x7f\x01", 3); /* module field claims 127 bytes, 1 remains */
    pbw_msg(&stats, 5, &st);
    pbw_event_meta(&plane, 1, "jit_f", &stats);
    pbw_stat_meta(&plane, 1, "Hlo Proto");
    pbw_str(&plane, 2, "/host:metadata");
    pbw_msg(&space, 1, &plane);
    pbw_str(&space, 4, "host");
    assert_int_equal(jp_profile_parse(&p, space.buf, space.len, "hlo.xplane.pb", NULL, &err), JP_ERR_TRUNCATED);
    assert_null(p);
    if (!strstr(err.msg, "hlo.xplane.pb: truncated HloProto at byte ")) fail_msg("%s", err.msg);
    assert_true(err.offset > 0 && err.offset < space.len);
    free(space.buf);
}

/* ---- jp_profile_load on paths ------------------------------------------------------------------- */

static void load_errors_name_the_file(void **state) {
    (void)state;
    const char *tmp = getenv("TEST_TMPDIR");
    char root[1024], path[1200];
    snprintf(root, sizeof root, "%s/profile_load_%d", tmp ? tmp : "/tmp", (int)getpid());
    mkdir(root, 0755);
    jp_profile *p;
    jp_error err;

    /* an empty directory: no profile */
    snprintf(path, sizeof path, "%s/empty", root);
    mkdir(path, 0755);
    assert_int_equal(jp_profile_load(&p, path, NULL, &err), JP_ERR_NOT_FOUND);
    assert_null(p);
    assert_non_null(strstr(err.msg, path));

    /* a missing path */
    snprintf(path, sizeof path, "%s/missing/host.xplane.pb", root);
    assert_int_equal(jp_profile_load(&p, path, NULL, &err), JP_ERR_NOT_FOUND);
    assert_null(p);
    assert_non_null(strstr(err.msg, path));

    /* a run directory whose one file is cut: raw half, then gzip half */
    blob gz = fixture_gz(CPU_SMALL), raw = gunzip(gz);
    const struct {
        const char *file;
        blob b;
    } cases[] = {{"cut.xplane.pb", raw}, {"cut.xplane.pb.gz", gz}};
    for (size_t i = 0; i < 2; i++) {
        char run[1100];
        snprintf(run, sizeof run, "%s/run%zu", root, i);
        mkdir(run, 0755);
        snprintf(path, sizeof path, "%s/%s", run, cases[i].file);
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(cases[i].b.ptr, 1, cases[i].b.len / 2, f), cases[i].b.len / 2);
        fclose(f);
        int rc = jp_profile_load(&p, run, NULL, &err); /* the directory, resolved to its file */
        assert_null(p);
        if (rc != JP_ERR_TRUNCATED && rc != JP_ERR_CORRUPT) fail_msg("%s: %d %s", path, rc, err.msg);
        if (!strstr(err.msg, path) || !strstr(err.msg, "at byte ")) fail_msg("message: %s", err.msg);
        rc = jp_profile_load(&p, path, NULL, &err); /* and the file itself */
        assert_null(p);
        assert_true(rc == JP_ERR_TRUNCATED || rc == JP_ERR_CORRUPT);
        assert_non_null(strstr(err.msg, path));
        unlink(path);
        rmdir(run);
    }
    /* the whole fixture through the file path works */
    snprintf(path, sizeof path, "%s/%s", JP_TEST_DATA, CPU_SMALL);
    if (jp_profile_load(&p, path, NULL, &err) != JP_OK) fail_msg("%s", err.msg);
    assert_int_equal(jp_profile_analysis(p)->n_steps, 3);
    jp_profile_free(p);

    snprintf(path, sizeof path, "%s/empty", root);
    rmdir(path);
    rmdir(root);
    free(raw.ptr);
    free(gz.ptr);
}

/* ---- decoding probes (issue 30): what used to pass silently, hang, or say the wrong thing ------- */

/* One /host:CPU plane named by `host`: a "python" line whose events 1 and 3 name event metadata
 * 1, which exists, and events 2 and 4 name ids 77 and 78, which do not. */
static pbw unknown_meta_space(const char *host) {
    pbw space = {0}, plane = {0}, line = {0};
    const uint64_t ids[] = {1, 77, 1, 78};
    for (uint64_t k = 0; k < 4; k++) {
        pbw ev = {0};
        pbw_uint(&ev, 1, ids[k]);
        pbw_uint(&ev, 2, 1000000 * k);
        pbw_uint(&ev, 3, 500000);
        pbw_msg(&line, 4, &ev);
    }
    pbw_uint(&line, 1, 1);
    pbw_str(&line, 2, "python");
    pbw_msg(&plane, 3, &line);
    pbw_event_meta(&plane, 1, "known", NULL);
    pbw_uint(&plane, 1, 1);
    pbw_str(&plane, 2, "/host:CPU");
    pbw_msg(&space, 1, &plane);
    pbw_str(&space, 4, host);
    return space;
}

/* Events whose metadata id the plane does not define read as unnamed events, as before, and the
 * analysis now says how many, on which plane and line, and where the first one is. */
static void unknown_metadata_is_reported(void **state) {
    (void)state;
    pbw space = unknown_meta_space("h");
    jp_xspace *xs;
    jp_error err;
    assert_int_equal(jp_xspace_parse(&xs, space.buf, space.len, "x", &err), JP_OK);
    size_t n;
    const jp_plane *pl = jp_xspace_planes(xs, &n);
    uint64_t first = (uint64_t)(pl[0].lines[0].events[1].raw.ptr - space.buf);
    jp_xspace_close(xs);
    jp_profile *p;
    assert_int_equal(jp_profile_parse(&p, space.buf, space.len, "u.xplane.pb", NULL, &err), JP_OK);
    const jp_analysis *a = jp_profile_analysis(p);
    assert_int_equal(a->n_events, 4);
    assert_int_equal(a->n_warnings, 1);
    char want[256];
    snprintf(want, sizeof want, "u.xplane.pb: 2 events on /host:CPU/python name metadata ids the plane does not define "
             "(first at byte %llu)", (unsigned long long)first);
    assert_string_equal(a->warnings[0], want);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_int_equal(jp_render(a, JP_SECTION_REPORT, JP_FORMAT_TEXT, NULL, out, &err), JP_OK);
    fclose(out);
    char line[300];
    snprintf(line, sizeof line, "\nwarning: %s\n", want);
    assert_non_null(strstr(text, line));
    free(text);
    jp_profile_free(p);
    free(space.buf);
}

/* The calibration's path: the first directory given decides it; none or too long is an error. */
static void cpu_peaks_path_rule(void **state) {
    (void)state;
    char buf[64];
    jp_error err;
    assert_int_equal(jp_cpu_peaks_path("/c", "/x", "/h", buf, sizeof buf, &err), JP_OK);
    assert_string_equal(buf, "/c/cpu_peaks");
    assert_int_equal(jp_cpu_peaks_path("", "/x", "/h", buf, sizeof buf, &err), JP_OK);
    assert_string_equal(buf, "/x/jaxprof/cpu_peaks");
    assert_int_equal(jp_cpu_peaks_path(NULL, NULL, "/h", buf, sizeof buf, &err), JP_OK);
    assert_string_equal(buf, "/h/.cache/jaxprof/cpu_peaks");
    assert_int_equal(jp_cpu_peaks_path(NULL, "", "", buf, sizeof buf, &err), JP_ERR_NOT_FOUND);
    assert_int_equal(jp_cpu_peaks_path("/a-directory-name-long-enough-to-pass-the-buffer-of-64-bytes", NULL, NULL, buf,
                                       sizeof buf, &err), JP_ERR_LIMIT);
    assert_string_equal(err.msg, "the CPU calibration path is longer than 64 bytes");
}

/* The CPU peaks file (jaxprof calibrate's cache) as a FIFO, a link to /dev/zero or a huge file
 * hung (or swamped) every load: each is ignored with a warning and the load finishes; a real
 * calibration still applies. */
static void cpu_peaks_file_must_be_a_small_regular_file(void **state) {
    (void)state;
    const char *tmp = getenv("TEST_TMPDIR");
    char peaks[1024];
    snprintf(peaks, sizeof peaks, "%s/cpu_peaks_%d", tmp ? tmp : "/tmp", (int)getpid());
    blob gz = fixture_gz(CPU_SMALL);
    jp_load_options opt = {.cpu_peaks_file = peaks};
    for (int kind = 0; kind < 4; kind++) {
        unlink(peaks);
        if (kind == 0) assert_int_equal(mkfifo(peaks, 0600), 0);
        if (kind == 1) assert_int_equal(symlink("/dev/zero", peaks), 0);
        if (kind == 2) { /* 96,000 bytes of comments */
            FILE *f = fopen(peaks, "w");
            for (int i = 0; i < 2000; i++) fputs("# 48 bytes of a comment line that nobody reads.\n", f);
            fclose(f);
        }
        if (kind == 3) { /* a genuine calibration for the fixture's host */
            FILE *f = fopen(peaks, "w");
            fputs("# CPU peaks\nhostname=vm\npeak_tflops=0.5\npeak_gbps=20\n", f);
            fclose(f);
        }
        jp_profile *p;
        jp_error err;
        assert_int_equal(jp_profile_parse(&p, gz.ptr, gz.len, CPU_SMALL, &opt, &err), JP_OK);
        const jp_analysis *a = jp_profile_analysis(p);
        char want[1200];
        if (kind < 2) snprintf(want, sizeof want, "CPU peaks: %s: ignored: not a regular file (jaxprof calibrate writes one)", peaks);
        if (kind == 2) snprintf(want, sizeof want, "CPU peaks: %s: ignored: 96000 bytes, more than a calibration's 65536", peaks);
        if (kind < 3) {
            assert_int_equal(a->n_warnings, 1);
            assert_string_equal(a->warnings[0], want);
        } else {
            assert_int_equal(a->n_warnings, 0);
            assert_true(a->n_devices == 1 && a->devices[0].peak_flops == 0.5e12);
        }
        jp_profile_free(p);
    }
    unlink(peaks);
    free(gz.ptr);
}

/* Through jp_profile_load: a loop of links is said as such (it said "no such file or directory"),
 * and an event nested past the limit is named by its file and byte (it named a host and a time). */
static void load_names_links_and_deep_nesting(void **state) {
    (void)state;
    const char *tmp = getenv("TEST_TMPDIR");
    char a[1024], b[1024];
    snprintf(a, sizeof a, "%s/loop_%d_a.xplane.pb", tmp ? tmp : "/tmp", (int)getpid());
    snprintf(b, sizeof b, "%s/loop_%d_b.xplane.pb", tmp ? tmp : "/tmp", (int)getpid());
    assert_int_equal(symlink(b, a), 0);
    assert_int_equal(symlink(a, b), 0);
    jp_profile *p;
    jp_error err;
    assert_int_equal(jp_profile_load(&p, a, NULL, &err), JP_ERR_IO);
    char want[1300];
    snprintf(want, sizeof want, "%s: cannot open: too many levels of symbolic links", a);
    assert_string_equal(err.msg, want);
    unlink(a), unlink(b);

    pbw space = {0}, plane = {0}, line = {0};
    for (uint64_t k = 0; k < 300; k++) { /* each inside the one before */
        pbw ev = {0};
        pbw_uint(&ev, 1, 1);
        pbw_uint(&ev, 2, 1000 * k);
        pbw_uint(&ev, 3, 1000 * (600 - 2 * k));
        pbw_msg(&line, 4, &ev);
    }
    pbw_uint(&line, 1, 1);
    pbw_str(&line, 2, "python");
    pbw_msg(&plane, 3, &line);
    pbw_event_meta(&plane, 1, "scope", NULL);
    pbw_uint(&plane, 1, 1);
    pbw_str(&plane, 2, "/host:CPU");
    pbw_msg(&space, 1, &plane);
    pbw_str(&space, 4, "deep");
    jp_xspace *xs;
    assert_int_equal(jp_xspace_parse(&xs, space.buf, space.len, "x", &err), JP_OK);
    size_t n;
    uint64_t at = (uint64_t)(jp_xspace_planes(xs, &n)[0].lines[0].events[256].raw.ptr - space.buf);
    jp_xspace_close(xs);
    snprintf(a, sizeof a, "%s/deep_%d.xplane.pb", tmp ? tmp : "/tmp", (int)getpid());
    FILE *f = fopen(a, "wb");
    assert_int_equal(fwrite(space.buf, 1, space.len, f), space.len);
    fclose(f);
    assert_int_equal(jp_profile_load(&p, a, NULL, &err), JP_ERR_LIMIT);
    snprintf(want, sizeof want, "%s: XEvent at byte %llu: events nested more than 256 deep on line 'python' of plane "
             "'/host:CPU' (host deep_%d, the event at 256000 ps): jaxprof reads at most 256 levels", a,
             (unsigned long long)at, (int)getpid());
    assert_string_equal(err.msg, want);
    assert_int_equal(err.offset, at);
    unlink(a);
    free(space.buf);
}

static int open_devnull(void **state) {
    (void)state;
    devnull = fopen("/dev/null", "w");
    return devnull ? 0 : -1;
}

static int close_devnull(void **state) {
    (void)state;
    fclose(devnull);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cpu_fixture_has_the_expected_facts),
        cmocka_unit_test(every_prefix_of_the_xspace),
        cmocka_unit_test(every_prefix_of_the_gzip),
        cmocka_unit_test(random_flips_of_the_xspace),
        cmocka_unit_test(random_flips_of_the_gzip),
        cmocka_unit_test(hostile_values_never_overflow),
        cmocka_unit_test(async_ops_end_at_their_linked_end_event),
        cmocka_unit_test(degenerate_inputs),
        cmocka_unit_test(load_errors_name_the_file),
        cmocka_unit_test(unknown_metadata_is_reported),
        cmocka_unit_test(cpu_peaks_file_must_be_a_small_regular_file), cmocka_unit_test(cpu_peaks_path_rule),
        cmocka_unit_test(load_names_links_and_deep_nesting),
    };
    return cmocka_run_group_tests(tests, open_devnull, close_devnull);
}
