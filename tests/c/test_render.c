/* test_render.c - the renderers' exact bytes (text, CSV, JSON, HTML) on small hand-built profiles.
 *
 * Two XSpaces are built here with pbwrite.h, every time in them a round number of milliseconds, and
 * loaded through jp_profile_parse (the whole pipeline but the file read, with a fixed name, so no
 * temporary path reaches the output):
 *   - cpu: an XLA:CPU capture of two 10 ms steps (StepTraceAnnotation), three ops of one jitted
 *     module with an HloProto (op_name scopes, Python stacks with a Flax frame), one op nested in
 *     another, a user annotation (named in Chinese) holding one whose name needs escaping
 *     everywhere (`load "batch", <1>`), a compile, a host-to-device copy and an allocator;
 *   - gpu: one CUDA stream with two kernels (one launched twice) and a host-to-device memcpy, no
 *     steps (the renderers' "none found" paths).
 * A third, cpu_new, is cpu with add.3 slower and one op more, for the diff.
 * Each output is compared with its expected bytes whole. JSON is also parsed with the vendored
 * yyjson (a strict parser) and a few fields read back by value, so a syntax slip fails even where
 * the expected bytes were copied from a broken output.
 *
 * Expected bytes: the text, CSV and JSON tables are the literals below; the JSON reports, the diff
 * as JSON and every HTML page are golden files in tests/c/golden/ (JP_TEST_GOLDEN), where the token
 * @JP_VERSION@ stands for JP_VERSION (the literals concatenate the macro): the release that wrote a
 * document is the one thing in it that is not a function of the profile, and no renderer option
 * leaves it out.
 *
 * Regenerating the golden files after an intended change of an output:
 *     JP_UPDATE_GOLDEN=1 meson test -C build-asan render
 * writes every golden file from the current output and then FAILS ("golden updated: <files>"), so a
 * regenerated file is never passed unread: read `git diff tests/c/golden`, then run again without
 * the variable. Any mismatch writes what was produced to $TEST_TMPDIR/render-actual/<name>
 * (build-asan/tests/c/render-actual/), to read or to paste into a literal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "decode/xnames.h"
#include "jaxprof/jaxprof.h"
#include "pbwrite.h"
#include "render/safe_text.h"
#include "yyjson.h"

#ifndef JP_TEST_GOLDEN
#define JP_TEST_GOLDEN "tests/c/golden"
#endif

#define US 1000000LL       /* picoseconds per microsecond */
#define MS 1000000000LL    /* picoseconds per millisecond */
#define MIB (1024 * 1024)

/* ---- building XSpaces ------------------------------------------------------------------------- */

/* Stat metadata ids, the same in every plane built here. */
enum { S_STEP = 1, S_ROOT, S_HLO_OP, S_HLO_MODULE, S_RUN_ID, S_PROGRAM, S_ALLOCATOR, S_BYTES_ALLOCATED, S_FLOPS,
       S_BYTES_ACCESSED, S_KERNEL, S_MEMCPY, S_HLO_PROTO,
       S_CORRELATION, /* launch_causes */
       S_COUNT };
static const char *const STAT_NAMES[S_COUNT] = {
    [S_STEP] = JP_XN_STAT_STEP_NUM, [S_ROOT] = JP_XN_STAT_ROOT, [S_HLO_OP] = JP_XN_STAT_HLO_OP,
    [S_HLO_MODULE] = JP_XN_STAT_HLO_MODULE, [S_RUN_ID] = JP_XN_STAT_RUN_ID, [S_PROGRAM] = JP_XN_STAT_PROGRAM_ID,
    [S_ALLOCATOR] = JP_XN_STAT_ALLOCATOR, [S_BYTES_ALLOCATED] = JP_XN_STAT_BYTES_ALLOCATED,
    [S_FLOPS] = JP_XN_STAT_FLOPS, [S_BYTES_ACCESSED] = JP_XN_STAT_BYTES_ACCESSED,
    [S_KERNEL] = JP_XN_STAT_KERNEL_DETAILS, [S_MEMCPY] = JP_XN_STAT_MEMCPY_DETAILS,
    [S_HLO_PROTO] = JP_XN_STAT_HLO_PROTO,
    [S_CORRELATION] = JP_XN_STAT_CORRELATION_ID,
};

/* One XStat: a string when s is set, a double when d is, else the integer i. */
typedef struct stat_spec {
    int id;        /* an S_* id; 0 ends an event's list */
    int64_t i;     /* int64_value */
    const char *s; /* str_value */
    double d;      /* double_value */
} stat_spec;

enum { MAX_STATS = 6 };

/* One XEvent on a line whose timestamp is 0: its offset is its start. */
typedef struct event_spec {
    uint64_t meta;                /* event metadata id: an index into the plane's names */
    int64_t start_ps, dur_ps;
    stat_spec stats[MAX_STATS];   /* up to the first with id 0 */
} event_spec;

static void put_stat(pbw *msg, uint32_t field, const stat_spec *st) {
    pbw x = {0};
    pbw_uint(&x, 1, (uint64_t)st->id);
    if (st->s) pbw_str(&x, 5, st->s);
    else if (st->d != 0) pbw_double(&x, 2, st->d);
    else pbw_uint(&x, 4, (uint64_t)st->i);
    pbw_msg(msg, field, &x);
}

/* An XLine (field 3 of XPlane) of the given events, in their order. */
static void put_line(pbw *plane, int64_t id, const char *name, const event_spec *evs, size_t n) {
    pbw line = {0};
    pbw_uint(&line, 1, (uint64_t)id);
    pbw_str(&line, 2, name);
    pbw_uint(&line, 3, 0); /* timestamp_ns */
    for (size_t e = 0; e < n; e++) {
        pbw ev = {0};
        pbw_uint(&ev, 1, evs[e].meta);
        pbw_uint(&ev, 2, (uint64_t)evs[e].start_ps);
        pbw_uint(&ev, 3, (uint64_t)evs[e].dur_ps);
        for (size_t s = 0; s < MAX_STATS && evs[e].stats[s].id; s++) put_stat(&ev, 4, &evs[e].stats[s]);
        pbw_msg(&line, 4, &ev);
    }
    pbw_msg(plane, 3, &line);
}

/* Event metadata 1..n-1 named names[1..] (names[0] unused: ids start at 1), the stat names, and
 * the plane's own id and name; `meta_stats` (may be NULL) are the stats of event metadata 1. */
static void finish_plane(pbw *space, pbw *plane, int64_t id, const char *name, const char *const *names, size_t n,
                         const stat_spec *meta_stats, size_t n_meta_stats) {
    for (size_t k = 1; k < n; k++) {
        pbw stats = {0};
        for (size_t s = 0; k == 1 && s < n_meta_stats; s++) put_stat(&stats, 5, &meta_stats[s]);
        pbw_event_meta(plane, k, names[k], &stats);
    }
    for (uint64_t k = 1; k < S_COUNT; k++) pbw_stat_meta(plane, k, STAT_NAMES[k]);
    pbw_uint(plane, 1, (uint64_t)id);
    pbw_str(plane, 2, name);
    pbw_msg(space, 1, plane);
}

/* One HLO instruction of the CPU module: name, opcode, and its OpMetadata. */
typedef struct hlo_spec {
    const char *name, *opcode, *fusion_kind; /* fusion_kind NULL: none */
    const char *op_name;
    uint64_t frame;                           /* its innermost stack frame (1-based), 0: none */
} hlo_spec;

/* The Python stacks JAX recorded: (file, function, line, parent frame), frame ids from 1. A Flax
 * frame (library code by the default rule: site-packages) sits inside the user's dense(). */
typedef struct frame_spec {
    const char *file, *function;
    uint64_t line, parent;
} frame_spec;

static const frame_spec CPU_FRAMES[] = {
    {"/work/proj/train.py", "train_step", 30, 0},
    {"/work/proj/model.py", "dense", 12, 1},
    {"/usr/lib/python3/site-packages/flax/linen/linear.py", "__call__", 250, 2},
    {"/work/proj/model.py", "mlp", 14, 1},
};

static const hlo_spec CPU_HLO[] = {
    {"dot.1", "dot", NULL, "jit(train_step)/model/dense/dot_general", 3},
    {"fusion.2", "fusion", "kLoop", "jit(train_step)/model/add", 4},
    {"add.3", "add", NULL, "jit(train_step)/add", 1},
    {"copy.4", "copy", NULL, "jit(train_step)/copy", 0},
};

/* The module's StackFrameIndexProto: files, functions, locations and frames, each table 1-based. */
static void put_stack_frames(pbw *module) {
    pbw index = {0};
    size_t n = sizeof CPU_FRAMES / sizeof CPU_FRAMES[0];
    for (size_t i = 0; i < n; i++) pbw_str(&index, 1, CPU_FRAMES[i].file);
    for (size_t i = 0; i < n; i++) pbw_str(&index, 2, CPU_FRAMES[i].function);
    for (size_t i = 0; i < n; i++) {
        pbw loc = {0};
        pbw_uint(&loc, 1, i + 1);
        pbw_uint(&loc, 2, i + 1);
        pbw_uint(&loc, 3, CPU_FRAMES[i].line);
        pbw_msg(&index, 3, &loc);
    }
    for (size_t i = 0; i < n; i++) {
        pbw frame = {0};
        pbw_uint(&frame, 1, i + 1);
        if (CPU_FRAMES[i].parent) pbw_uint(&frame, 2, CPU_FRAMES[i].parent);
        pbw_msg(&index, 4, &frame);
    }
    pbw_msg(module, 17, &index);
}

/* The /host:metadata plane: module jit_train_step (program 1) as a serialized HloProto. */
static void put_metadata_plane(pbw *space) {
    pbw comp = {0};
    for (size_t i = 0; i < sizeof CPU_HLO / sizeof CPU_HLO[0]; i++) {
        const hlo_spec *h = &CPU_HLO[i];
        pbw instr = {0}, meta = {0};
        pbw_str(&instr, 1, h->name);
        pbw_str(&instr, 2, h->opcode);
        pbw_str(&meta, 2, h->op_name);
        if (h->frame) pbw_uint(&meta, 15, h->frame);
        pbw_msg(&instr, 7, &meta);
        if (h->fusion_kind) pbw_str(&instr, 11, h->fusion_kind);
        pbw_msg(&comp, 2, &instr);
    }
    pbw_uint(&comp, 5, 1);
    pbw module = {0}, proto = {0}, plane = {0};
    pbw_str(&module, 1, "jit_train_step");
    pbw_msg(&module, 3, &comp);
    put_stack_frames(&module);
    pbw_msg(&proto, 1, &module);
    /* the Hlo Proto stat is bytes (field 6), which stat_spec does not write: encode it here */
    pbw st = {0};
    pbw_uint(&st, 1, S_HLO_PROTO);
    pbw_bytes(&st, 6, proto.buf, proto.len);
    free(proto.buf);
    static const char *const names[] = {"", "jit_train_step"};
    static const stat_spec program = {.id = S_PROGRAM, .i = 1};
    pbw stats = {0};
    pbw_msg(&stats, 5, &st);
    put_stat(&stats, 5, &program);
    pbw_event_meta(&plane, 1, names[1], &stats);
    finish_plane(space, &plane, 99, JP_XN_PLANE_METADATA, names, 1, NULL, 0);
}

/* The user annotations: "训练数据的加载与预处理 1" (loading and preprocessing of training data),
 * whose characters are 3 bytes each, so a cut by bytes would split one; and one whose name every
 * format must escape (a CSV quote and comma, HTML's < and ", JSON's "). */
#define OUTER_NAME \
    "\xE8\xAE\xAD\xE7\xBB\x83\xE6\x95\xB0\xE6\x8D\xAE\xE7\x9A\x84\xE5\x8A\xA0\xE8\xBD\xBD\xE4\xB8\x8E\xE9\xA2\x84\xE5\xA4\x84\xE7\x90\x86 1"
#define INNER_NAME "load \"batch\", <1>"

/* Event metadata of the CPU host plane. */
enum { E_TRAIN = 1, E_DISPATCH, E_COMPILE, E_OUTER, E_INNER, E_ALLOC, E_DEALLOC, E_H2D, E_FUSION, E_DOT, E_ADD,
       E_COPY, E_CPU_COUNT };
static const char *const CPU_NAMES[E_CPU_COUNT] = {
    "", "train", "PjitFunction(train_step)", "backend_compile", OUTER_NAME, INNER_NAME, "MemoryAllocation",
    "MemoryDeallocation", "H2D Dispatch", "fusion.2", "dot.1", "add.3", "copy.4",
};

/* An XLA:CPU op thunk of jit_train_step's run_id-th execution, with XLA's counts when given. */
static event_spec thunk(uint64_t meta, int64_t start, int64_t dur, int64_t run_id, double flops, double bytes) {
    event_spec e = {meta, start, dur, {{S_HLO_OP, .s = CPU_NAMES[meta]}, {S_HLO_MODULE, .s = "jit_train_step"},
                                       {S_RUN_ID, .i = run_id}, {S_PROGRAM, .i = 1}}};
    if (flops > 0) {
        e.stats[4] = (stat_spec){S_FLOPS, .d = flops};
        e.stats[5] = (stat_spec){S_BYTES_ACCESSED, .d = bytes};
    }
    return e;
}

/* The CPU capture, per step k (k = 0, 1; t0 = 10k ms):
 *   python:    step marker [t0, t0+10), PjitFunction(train_step) [t0, t0+1) (step 0) or
 *              [t0, t0+0.5) (step 1), backend_compile [0.25, 0.75) in step 0 only, and the user
 *              annotation "训练数据的加载与预处理 1" [t0+8, t0+9.25) ("outer" below) holding
 *              `load "batch", <1>` [t0+8.5, t0+9) ("inner");
 *   tf_worker: fusion.2 [t0+1, t0+7) holding dot.1 [t0+2, t0+4), then add.3 [t0+7, t0+8)
 *              (slow: [t0+7, t0+8.5)), and with extra_op copy.4 [t0+9.5, t0+9.75);
 *   tf_pjrt:   H2D Dispatch [10.5, 11) in step 1;
 *   allocator "cpu": 1 MiB in use at 1 ms, 3 MiB at 2 ms, 1 MiB at 8 ms.
 * XLA's counts: dot.1 1e9 FLOP and 1e7 bytes, fusion.2 3e8 and 3e8 per occurrence. */
static pbw cpu_space(int slow_add, int extra_op) {
    event_spec py[16], worker[16], pjrt[1] = {{E_H2D, 10500 * US, 500 * US, {{0}}}};
    size_t n_py = 0, n_worker = 0;
    for (int64_t k = 0; k < 2; k++) {
        int64_t t0 = k * 10 * MS;
        py[n_py++] = (event_spec){E_TRAIN, t0, 10 * MS, {{S_STEP, .i = k}, {S_ROOT, .i = 1}}};
        py[n_py++] = (event_spec){E_DISPATCH, t0, k ? 500 * US : 1 * MS, {{0}}};
        if (!k) py[n_py++] = (event_spec){E_COMPILE, 250 * US, 500 * US, {{0}}};
        py[n_py++] = (event_spec){E_OUTER, t0 + 8 * MS, 1250 * US, {{0}}};
        py[n_py++] = (event_spec){E_INNER, t0 + 8500 * US, 500 * US, {{0}}};
        worker[n_worker++] = thunk(E_FUSION, t0 + 1 * MS, 6 * MS, k + 1, 3e8, 3e8);
        worker[n_worker++] = thunk(E_DOT, t0 + 2 * MS, 2 * MS, k + 1, 1e9, 1e7);
        worker[n_worker++] = thunk(E_ADD, t0 + 7 * MS, slow_add ? 1500 * US : 1 * MS, k + 1, 0, 0);
        if (extra_op) worker[n_worker++] = thunk(E_COPY, t0 + 9500 * US, 250 * US, k + 1, 0, 0);
    }
    static const int64_t alloc_at[3] = {1 * MS, 2 * MS, 8 * MS}, in_use[3] = {1 * MIB, 3 * MIB, 1 * MIB};
    for (size_t i = 0; i < 3; i++)
        py[n_py++] = (event_spec){i < 2 ? E_ALLOC : E_DEALLOC, alloc_at[i], 0,
                                  {{S_ALLOCATOR, .s = "cpu"}, {S_BYTES_ALLOCATED, .i = in_use[i]}}};
    pbw space = {0}, plane = {0};
    put_metadata_plane(&space);
    put_line(&plane, 1, "python", py, n_py);
    put_line(&plane, 2, "tf_worker", worker, n_worker);
    put_line(&plane, 3, "tf_pjrt", pjrt, 1);
    finish_plane(&space, &plane, 1, JP_XN_PLANE_HOST_CPU, CPU_NAMES, E_CPU_COUNT, NULL, 0);
    pbw_str(&space, 4, "cpu"); /* the hostnames, after the planes, as profilers write them */
    return space;
}

/* Event metadata of the GPU plane. */
enum { G_FUSION = 1, G_GEMM, G_MEMCPY, G_GPU_COUNT };
static const char *const GPU_NAMES[G_GPU_COUNT] = {"", "fusion_kernel", "gemm_kernel", "MemcpyH2D"};

/* The GPU capture, one stream: MemcpyH2D [0, 0.5) ms of 1,000,000 bytes; fusion_kernel (op
 * fusion.1) [1, 3) and [5, 7); gemm_kernel (op dot.2) [3, 4). */
static pbw gpu_space(void) {
    static const char FUSION[] = "regs:32 static_shared:0 dynamic_shared:1024 grid:8,1,1 block:256,1,1 occ_pct:50";
    static const char GEMM[] = "regs:128 static_shared:16384 dynamic_shared:0 grid:4,4,1 block:128,1,1 occ_pct:25";
    const event_spec stream[] = {
        {G_MEMCPY, 0, 500 * US, {{S_MEMCPY, .s = "kind_src:host kind_dst:device size:1000000"}}},
        {G_FUSION, 1 * MS, 2 * MS, {{S_HLO_OP, .s = "fusion.1"}, {S_HLO_MODULE, .s = "jit_step"}, {S_KERNEL, .s = FUSION}}},
        {G_GEMM, 3 * MS, 1 * MS, {{S_HLO_OP, .s = "dot.2"}, {S_HLO_MODULE, .s = "jit_step"}, {S_KERNEL, .s = GEMM}}},
        {G_FUSION, 5 * MS, 2 * MS, {{S_HLO_OP, .s = "fusion.1"}, {S_HLO_MODULE, .s = "jit_step"}, {S_KERNEL, .s = FUSION}}},
    };
    pbw space = {0}, plane = {0};
    put_line(&plane, 7, "Stream #7", stream, sizeof stream / sizeof stream[0]);
    finish_plane(&space, &plane, 2, "/device:GPU:0", GPU_NAMES, G_GPU_COUNT, NULL, 0);
    pbw_str(&space, 4, "gpu");
    return space;
}

/* Loads an XSpace as jaxprof loads a file called `name`, with fixed device peaks for the roofline. */
static jp_profile *load(pbw space, const char *name) {
    jp_load_options opt = {.threads = 1, .peak_tflops = 1, .peak_gbps = 100};
    jp_profile *p = NULL;
    jp_error err;
    int rc = jp_profile_parse(&p, space.buf, space.len, name, &opt, &err);
    free(space.buf);
    if (rc != JP_OK) fail_msg("%s: %s", name, err.msg);
    return p;
}

/* ---- outputs ---------------------------------------------------------------------------------- */

/* What a renderer wrote, NUL-terminated (malloc'd). */
typedef struct output {
    char *text;
    size_t len;
} output;

/* Writes got to $TEST_TMPDIR/render-actual/<name> (for reading after a mismatch); returns the path. */
static const char *save_actual(const char *name, const char *got, size_t len) {
    static char path[1024];
    const char *dir = getenv("TEST_TMPDIR");
    snprintf(path, sizeof path, "%s/render-actual", dir ? dir : ".");
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/render-actual/%s", dir ? dir : ".", name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(got, 1, len, f) != len || fclose(f) != 0) return "(could not be saved)";
    return path;
}

/* got must be want, byte for byte; a mismatch names the first differing line and saves got. */
static void expect_bytes(const char *name, const output *got, const char *want) {
    size_t n = strlen(want);
    if (got->len == n && memcmp(got->text, want, n) == 0) return;
    size_t at = 0, line = 1;
    while (at < got->len && at < n && got->text[at] == want[at]) line += want[at++] == '\n';
    fail_msg("%s: output differs at byte %zu (line %zu): got %zu bytes, want %zu; got is in %s", name, at, line,
             got->len, n, save_actual(name, got->text, got->len));
}

/* One section of a in one format, as jp_render writes it (view NULL: the defaults). */
static output render(const jp_analysis *a, int section, int format, const jp_view *view) {
    output o = {0};
    FILE *f = open_memstream(&o.text, &o.len);
    assert_non_null(f);
    jp_error err;
    int rc = jp_render(a, section, format, view, f, &err);
    assert_int_equal(fclose(f), 0);
    if (rc != JP_OK) fail_msg("jp_render %s: %s", jp_section_name(section), err.msg);
    return o;
}

/* The value at a JSON pointer ("/ops/0/name"), which must exist. */
static yyjson_val *at(yyjson_doc *doc, const char *pointer) {
    yyjson_val *v = yyjson_doc_ptr_get(doc, pointer);
    if (!v) fail_msg("no %s in the document", pointer);
    return v;
}

static void expect_json_str(yyjson_doc *doc, const char *pointer, const char *want) {
    yyjson_val *v = at(doc, pointer);
    if (!yyjson_is_str(v)) fail_msg("%s is not a string", pointer);
    assert_string_equal(yyjson_get_str(v), want);
}

static void expect_json_num(yyjson_doc *doc, const char *pointer, double want) {
    yyjson_val *v = at(doc, pointer);
    if (!yyjson_is_num(v)) fail_msg("%s is not a number", pointer);
    if (yyjson_get_num(v) != want) fail_msg("%s is %.17g, want %.17g", pointer, yyjson_get_num(v), want);
}

/* ---- golden files ----------------------------------------------------------------------------- */

static const char VERSION_TOKEN[] = "@JP_VERSION@";

/* The whole file, NUL-terminated, or NULL when it cannot be read. */
static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n + 4096 + 1 > cap) {
            cap = (n + 4096 + 1) * 2;
            char *grown = realloc(buf, cap);
            assert_non_null(grown);
            buf = grown;
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
    } while (got > 0);
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* text with every `from` replaced by `to` (malloc'd). */
static char *replace_all(const char *text, const char *from, const char *to) {
    size_t nf = strlen(from), nt = strlen(to), count = 0;
    for (const char *p = strstr(text, from); p; p = strstr(p + nf, from)) count++;
    char *out = malloc(strlen(text) + count * nt + 1), *w = out;
    assert_non_null(out);
    for (const char *p = text, *hit; ; p = hit + nf) {
        hit = strstr(p, from);
        size_t keep = hit ? (size_t)(hit - p) : strlen(p);
        memcpy(w, p, keep);
        w += keep;
        if (!hit) break;
        memcpy(w, to, nt);
        w += nt;
    }
    *w = '\0';
    return out;
}

/* The golden files this run rewrote (JP_UPDATE_GOLDEN=1), for the last test to fail on. Test
 * state, not library state: the one global of this file. */
static char updated_goldens[1024];

/* got must be the golden file `name` (with @JP_VERSION@ for the version). JP_UPDATE_GOLDEN=1
 * writes the file instead and lists it for golden_files_were_not_updated, which then fails, so
 * that nobody passes a regenerated file unread (every golden file of the run is written first). */
static void expect_golden(const char *name, const output *got) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", JP_TEST_GOLDEN, name);
    const char *update = getenv("JP_UPDATE_GOLDEN");
    if (update && strcmp(update, "1") == 0) {
        assert_null(strstr(got->text, VERSION_TOKEN));
        char *tokened = replace_all(got->text, "jaxprof " JP_VERSION "<", "jaxprof " "@JP_VERSION@" "<");
        char *json = replace_all(tokened, "\"jaxprof_version\":\"" JP_VERSION "\"",
                                 "\"jaxprof_version\":\"@JP_VERSION@\"");
        FILE *f = fopen(path, "wb");
        if (!f) fail_msg("cannot write %s: %s", path, strerror(errno));
        size_t n = strlen(json);
        int ok = fwrite(json, 1, n, f) == n;
        ok &= fclose(f) == 0;
        free(tokened);
        free(json);
        if (!ok) fail_msg("cannot write %s", path);
        size_t used = strlen(updated_goldens);
        snprintf(updated_goldens + used, sizeof updated_goldens - used, " %s", name);
        return;
    }
    size_t len;
    char *golden = read_all(path, &len);
    if (!golden) fail_msg("cannot read %s: %s (JP_UPDATE_GOLDEN=1 writes it)", path, strerror(errno));
    assert_int_equal(strlen(golden), len); /* no NUL inside */
    char *want = replace_all(golden, VERSION_TOKEN, JP_VERSION);
    free(golden);
    expect_bytes(name, got, want);
    free(want);
}

/* ---- fixtures --------------------------------------------------------------------------------- */

typedef struct fixtures {
    jp_profile *cpu, *cpu_new, *gpu;
} fixtures;

static int setup(void **state) {
    fixtures *f = calloc(1, sizeof *f);
    if (!f) return -1;
    f->cpu = load(cpu_space(0, 0), "cpu.xplane.pb");
    f->cpu_new = load(cpu_space(1, 1), "cpu_new.xplane.pb");
    f->gpu = load(gpu_space(), "gpu.xplane.pb");
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixtures *f = *state;
    jp_profile_free(f->cpu);
    jp_profile_free(f->cpu_new);
    jp_profile_free(f->gpu);
    free(f);
    return 0;
}

static const jp_analysis *cpu_of(void **state) { return jp_profile_analysis(((fixtures *)*state)->cpu); }
static const jp_analysis *gpu_of(void **state) { return jp_profile_analysis(((fixtures *)*state)->gpu); }

/* ---- expected bytes --------------------------------------------------------------------------- *
 * Where the numbers come from (ms unless said; see cpu_space and gpu_space):
 *   cpu span 0-20 = 20.00 ms; busy = ops [1,8) + [11,18) + H2D [10.5,11) = 14.50 ms; device idle
 *     = (18 - 1 - 14.5) / (18 - 1) = 14.7%.
 *   steps 0 and 1: markers of 10 each (their work ends at 8 and 18, inside them). Step 0: compute
 *     [1,8) 7, compile 0.5, host = dispatch [0,1) less the compile 0.5 + outer [8,9.25) 1.25 =
 *     1.75, idle [9.25,10) 0.75; step 1: compute 7, h2d 0.5, host 0.5 + 1.25, idle 0.75. Over the
 *     20: compute 70.0%, h2d 2.5%, compile 2.5%, host 17.5%, idle 7.5%.
 *   ops: fusion.2 6 + 6 total, its self less dot.1's 2 + 2 = 8; dot.1 4; add.3 2; all self 14, so
 *     %time 57.1 / 28.6 / 14.3. FLOP/s over total time: fusion.2 2 x 3e8 / 12 ms = 50 GFLOP/s,
 *     intensity 1 < the ridge 1 TFLOP/s / 100 GB/s = 10, so memory bound at 2 x 3e8 B / 12 ms =
 *     50 GB/s = 50% of 100; dot.1 2e9 / 4 ms = 500 GFLOP/s, intensity 100: compute bound, 50%.
 *   KPIs: utilization (14 + 0.5) / 20 = 72.5%; host 3.5 / 20 = 17.5%; memory bandwidth
 *     (2 x 1e7 + 2 x 3e8) B / 14.5 ms / 100 GB/s = 42.76%; MFU 1.3e9 FLOP / 10 ms / 1 TFLOP/s = 13%.
 *   scopes: device train_step holds all 14 (self: add.3's 2), train_step/model 12 (self 8); host
 *     outer 2 x 1.25 = 2.50 total, less inner 2 x 0.5 = 1.50 self, 2.5 / 20 = 12.5%.
 *   memory: 1 MiB, then 3 MiB = 3145728 at 2 ms, then 1 MiB.
 *   gpu: span 0-7, busy 0.5 + 5 = 5.5, idle 1.5 / 7 = 21.4%; H2D 1e6 B / 0.5 ms = 2.00 GB/s;
 *     kernel duration KPI (2 + 2 + 1) / 3 = 1.67 ms.
 *   diff: add.3 per step 1 -> 1.5 (+50%); copy.4 added at 0.25; the new compute covers
 *     [8,8.5) of outer and [9.5,9.75) of idle: host 1.75 -> 1.25, idle 0.75 -> 0.5 per step. */

#define CPU_JSON_HEAD(section) \
    "{\"schema_version\":1,\"jaxprof_version\":\"" JP_VERSION "\",\"section\":\"" section "\",\"path\":\"cpu.xplane.pb\",\"platform\":\"cpu\",\"hosts\":[\"cpu\"],\"events\":19,\"span_ms\":20.000000,\"device_busy_ms\":14.500000,\"device_idle_pct\":14.7059,\"capture_health\":[],\"devices\":[\n" \
    "{\"name\":\"/host:CPU\",\"host\":\"cpu\",\"platform\":\"cpu\",\"busy_ms\":14.500000,\"ops\":6,\"first_ms\":1.000000,\"last_ms\":18.000000,\"idle_pct\":14.7059,\"peak_tflops\":1,\"peak_gbps\":100,\"peak_source\":\"flag\",\"idle_host_ms\":0.000000,\"idle_kernel_ms\":0.000000,\"idle_other_ms\":0.000000,\"launched\":0,\"short_kernels\":0,\"queue_max\":0,\"queue_mean\":0,\"collective_ms\":0.000000,\"collective_hidden_ms\":0.000000,\"collective_exposed_ms\":0.000000,\"overlap_pct\":null,\"collective_wait_ms\":0.000000}]"

#define GPU_JSON_HEAD(section) \
    "{\"schema_version\":1,\"jaxprof_version\":\"" JP_VERSION "\",\"section\":\"" section "\",\"path\":\"gpu.xplane.pb\",\"platform\":\"gpu\",\"hosts\":[\"gpu\"],\"events\":4,\"span_ms\":7.000000,\"device_busy_ms\":5.500000,\"device_idle_pct\":21.4286,\"capture_health\":[{\"kind\":\"no HLO\",\"host\":\"gpu\",\"text\":\"module jit_step ran without an HloProto in the metadata: its ops have no FLOPs, bytes or memory (enable_hlo_proto)\"}],\"devices\":[\n" \
    "{\"name\":\"/device:GPU:0\",\"host\":\"gpu\",\"platform\":\"gpu\",\"busy_ms\":5.500000,\"ops\":3,\"first_ms\":0.000000,\"last_ms\":7.000000,\"idle_pct\":21.4286,\"peak_tflops\":1,\"peak_gbps\":100,\"peak_source\":\"flag\",\"idle_host_ms\":0.000000,\"idle_kernel_ms\":0.000000,\"idle_other_ms\":0.000000,\"launched\":0,\"short_kernels\":0,\"queue_max\":0,\"queue_mean\":0,\"collective_ms\":0.000000,\"collective_hidden_ms\":0.000000,\"collective_exposed_ms\":0.000000,\"overlap_pct\":null,\"collective_wait_ms\":0.000000}]"

/* The findings as text, alone and at the end of the report. */
#define CPU_FINDINGS_LIST \
    "Findings (1)\n" \
    "  [warning] One op dominates device time (dominant_op)\n" \
    "      evidence: fusion.2 (loop fusion, module jit_train_step) takes 57% of device op time (over\n" \
    "                50%): 2 runs, 6.00 ms each; device computes 70% of step time; scope\n" \
    "                train_step/model, /work/proj/model.py:14\n" \
    "      fix: One op dominates: look at its shapes and whether XLA could fuse or avoid it (e.g. a\n" \
    "           transpose or copy from layout changes, or a reduction over a large axis).\n"

/* The ops table as text, alone and inside the report. */
#define CPU_OPS_TABLE \
    "op        category     count     total     self      avg  %time  devs\n" \
    "fusion.2  loop fusion      2  12.00 ms  8.00 ms  6.00 ms  57.1%     1\n" \
    "dot.1     matmul           2   4.00 ms  4.00 ms  2.00 ms  28.6%     1\n" \
    "add.3     elementwise      2   2.00 ms  2.00 ms  1.00 ms  14.3%     1\n"

/* The scopes table as text, alone and inside the report. */
#define CPU_SCOPES_TABLE \
    "scope                     kind     count     total      self       %\n" \
    "train_step                device       6  14.00 ms   2.00 ms  100.0%\n" \
    "train_step/model          device       4  12.00 ms   8.00 ms   85.7%\n" \
    "train_step/model/dense    device       2   4.00 ms   4.00 ms   28.6%\n" \
    "\xE8\xAE\xAD\xE7\xBB\x83\xE6\x95\xB0\xE6\x8D\xAE\xE7\x9A\x84\xE5\x8A\xA0\xE8\xBD\xBD\xE4\xB8\x8E\xE9\xA2\x84\xE5\xA4\x84\xE7\x90\x86 1             host         2   2.50 ms   1.50 ms   12.5%\n" \
    "PjitFunction(train_step)  runtime      2   1.50 ms   1.00 ms    7.5%\n" \
    "load \"batch\", <1>         host         2   1.00 ms   1.00 ms    5.0%\n" \
    "backend_compile           runtime      1  500.0 \xC2\xB5s  500.0 \xC2\xB5s    2.5%\n"

static const char CPU_REPORT_TXT[] =
    "jaxprof report: cpu.xplane.pb\n"
    "platform cpu, 1 host(s), 1 device(s), 19 events, 20.00 ms captured, device busy 14.50 ms\n"
    "device idle 14.7% of each device's first-to-last activity\n"
    "\n"
    "Steps: 2 (StepTraceAnnotation)\n"
    "  step time  mean 10.00 ms  median 10.00 ms  p90 10.00 ms  std 0  min 10.00 ms  max 10.00 ms\n"
    "  breakdown  compute 70.0% h2d 2.5% compile 2.5% host 17.5% idle 7.5%\n"
    "\n"
    "KPIs (device utilization and host overhead: shares of step time)\n"
    "  device utilization       72.50 %  [warning]\n"
    "  host overhead            17.50 %  [warning]\n"
    "  op duration               2.33 ms [good]\n"
    "  memory bandwidth         42.76 %  [warning]\n"
    "  MFU                      13.00 %  [bad]\n"
    "  compilation time          0.00 s  [good]\n"
    "\n"
    "Top ops by self time\n"
    CPU_OPS_TABLE
    "\n"
    "Top wasted time (self time x (1 - fraction of its roof reached))\n"
    "op        category     %time  bound_by  roof_pct  wasted_ms  wasted_pct\n"
    "fusion.2  loop fusion  57.1%  memory       50.00    4.00 ms       28.6%\n"
    "dot.1     matmul       28.6%  compute      50.00    2.00 ms       14.3%\n"
    "\n"
    "Top source lines (device self time by the user's line that made the op; 100.0% of it has one)\n"
    "line         function       self   %dev  count  ops  top ops\n"
    "model.py:14  mlp         8.00 ms  57.1%      2    1  fusion.2\n"
    "model.py:12  dense       4.00 ms  28.6%      2    1  dot.1\n"
    "train.py:30  train_step  2.00 ms  14.3%      2    1  add.3\n"
    "\n"
    "Top scopes (device: op_name scope; host: annotations, JAX events; total sums threads, % of wall)\n"
    CPU_SCOPES_TABLE
    "\n"
    CPU_FINDINGS_LIST;

static const char CPU_OPS_TXT[] = CPU_OPS_TABLE;

static const char CPU_STEPS_TXT[] =
    "step      time  compute  collect       h2d  d2h   compile     host      idle  ops  outlier  no device work  gap\n"
    "   0  10.00 ms  7.00 ms        0         0    0  500.0 \xC2\xB5s  1.75 ms  750.0 \xC2\xB5s    3                             0\n"
    "   1  10.00 ms  7.00 ms        0  500.0 \xC2\xB5s    0         0  1.75 ms  750.0 \xC2\xB5s    3                             0\n";

static const char CPU_SCOPES_TXT[] = CPU_SCOPES_TABLE;

static const char CPU_TRANSFERS_TXT[] =
    "kind  count  bytes     total   longest  GB/s\n"
    "H2D       1      0  500.0 \xC2\xB5s  500.0 \xC2\xB5s     -\n"
    "D2H       0      0         0         0     -\n"
    "D2D       0      0         0         0     -\n";

/* Memory at the peak first (this HloProto carries no buffer assignment), then the allocators. */
static const char CPU_MEMORY_TXT[] =
    "Memory at the peak: no XLA buffer assignment in this profile (JAX stores one per compiled module\n"
    "in /host:metadata; this profile has none)\n"
    "\n"
    "Allocator events (bytes in use per allocator during the capture)\n"
    "allocator  peak bytes  peak at  events  allocator peak\n"
    "cpu           3145728  2.00 ms       3               0\n";

static const char CPU_COMPILES_TXT[] =
    "module             start      time  step  steady\n"
    "jit_train_step  250.0 \xC2\xB5s  500.0 \xC2\xB5s     0\n";

static const char CPU_FINDINGS_TXT[] = CPU_FINDINGS_LIST;

static const char CPU_OPS_CSV[] =
    "name,category,count,total_ms,self_ms,avg_ms,min_ms,max_ms,pct_time,gflops_per_s,gbytes_per_s,flops,bytes,module,device,scope,op_name,source,devices,function,stack,hlo_flops,transcendentals,intensity,bound_by,roof_pct,xla_flops,program_id,xla_op,autotuning,above_peak,dtype,remat,wasted_ms,wasted_pct\n"
    "fusion.2,loop fusion,2,12.000000,8.000000,6.000000,6.000000,6.000000,57.1429,50,50,600000000,600000000,jit_train_step,/host:CPU,train_step/model,jit(train_step)/model/add,/work/proj/model.py:14,1,mlp,\"/work/proj/model.py:14 mlp;/work/proj/train.py:30 train_step\",0,0,1,memory,50,600000000,,true,false,false,,false,4.000000,28.5714\n"
    "dot.1,matmul,2,4.000000,4.000000,2.000000,2.000000,2.000000,28.5714,500,5,2000000000,20000000,jit_train_step,/host:CPU,train_step/model/dense,jit(train_step)/model/dense/dot_general,/work/proj/model.py:12,1,dense,\"/usr/lib/python3/site-packages/flax/linen/linear.py:250 __call__;/work/proj/model.py:12 dense;/work/proj/train.py:30 train_step\",0,0,100,compute,50,2000000000,,true,false,false,,false,2.000000,14.2857\n"
    "add.3,elementwise,2,2.000000,2.000000,1.000000,1.000000,1.000000,14.2857,0,0,0,0,jit_train_step,/host:CPU,train_step,jit(train_step)/add,/work/proj/train.py:30,1,train_step,\"/work/proj/train.py:30 train_step\",0,0,0,,0,0,,true,false,false,,false,,\n";

static const char CPU_STEPS_CSV[] =
    "step,start_ms,duration_ms,compute_ms,collective_ms,h2d_ms,d2h_ms,d2d_ms,compile_ms,host_ms,idle_ms,ops,compiles,outlier,flops,gflops_per_s,no_device_work,gap_ms,issued_start_ms,issued_ms,bytes,intensity,gbytes_per_s,roof_pct,collective_hidden_ms,collective_exposed_ms\n"
    "0,0.000000,10.000000,7.000000,0.000000,0.000000,0.000000,0.000000,0.500000,1.750000,0.750000,3,1,false,1300000000,130,false,0.000000,0.000000,10.000000,310000000,4.1935483871,31,31,0.000000,0.000000\n"
    "1,10.000000,10.000000,7.000000,0.000000,0.500000,0.000000,0.000000,0.000000,1.750000,0.750000,3,0,false,1300000000,130,false,0.000000,10.000000,10.000000,310000000,4.1935483871,31,31,0.000000,0.000000\n";

static const char CPU_SCOPES_CSV[] =
    "scope,kind,user,depth,count,total_ms,self_ms,pct,wall_ms\n"
    "train_step,device,false,0,6,14.000000,2.000000,100,14.000000\n"
    "train_step/model,device,false,1,4,12.000000,8.000000,85.7143,12.000000\n"
    "train_step/model/dense,device,false,2,2,4.000000,4.000000,28.5714,4.000000\n"
    "\xE8\xAE\xAD\xE7\xBB\x83\xE6\x95\xB0\xE6\x8D\xAE\xE7\x9A\x84\xE5\x8A\xA0\xE8\xBD\xBD\xE4\xB8\x8E\xE9\xA2\x84\xE5\xA4\x84\xE7\x90\x86 1,host,true,1,2,2.500000,1.500000,12.5,2.500000\n"
    "PjitFunction(train_step),runtime,false,1,2,1.500000,1.000000,7.5,1.500000\n"
    "\"load \"\"batch\"\", <1>\",host,true,2,2,1.000000,1.000000,5,1.000000\n"
    "backend_compile,runtime,false,2,1,0.500000,0.500000,2.5,0.500000\n";

static const char CPU_TRANSFERS_CSV[] =
    "kind,count,bytes,total_ms,max_ms,gbytes_per_s\n"
    "H2D,1,0,0.500000,0.500000,0\n"
    "D2H,0,0,0.000000,0.000000,0\n"
    "D2D,0,0,0.000000,0.000000,0\n";

/* One row per buffer at a module's peak (none here); the allocators are in the JSON. */
static const char CPU_MEMORY_CSV[] =
    "module,host,runs,module_peak_bytes,module_always_live_bytes,id,bytes,unpadded_bytes,kind,instruction,opcode,"
    "shape,op_name,source,function,stack,n_small,start,end\n";

static const char CPU_COMPILES_CSV[] =
    "module,name,start_ms,duration_ms,step,steady_state\n"
    "jit_train_step,backend_compile,0.250000,0.500000,0,false\n";

static const char CPU_FINDINGS_CSV[] =
    "severity,id,title,evidence,fix\n"
    "warning,dominant_op,One op dominates device time,\"fusion.2 (loop fusion, module jit_train_step) takes 57% of device op time (over 50%): 2 runs, 6.00 ms each; device computes 70% of step time; scope train_step/model, /work/proj/model.py:14\",\"One op dominates: look at its shapes and whether XLA could fuse or avoid it (e.g. a transpose or copy from layout changes, or a reduction over a large axis).\"\n";

static const char CPU_OPS_JSON[] =
    CPU_JSON_HEAD("ops")
    ",\"ops\":[\n"
    "{\"name\":\"fusion.2\",\"category\":\"loop fusion\",\"count\":2,\"total_ms\":12.000000,\"self_ms\":8.000000,\"avg_ms\":6.000000,\"min_ms\":6.000000,\"max_ms\":6.000000,\"pct_time\":57.1429,\"gflops_per_s\":50,\"gbytes_per_s\":50,\"flops\":600000000,\"bytes\":600000000,\"module\":\"jit_train_step\",\"device\":\"/host:CPU\",\"scope\":\"train_step/model\",\"op_name\":\"jit(train_step)/model/add\",\"source\":\"/work/proj/model.py:14\",\"devices\":1,\"function\":\"mlp\",\"stack\":[{\"file\":\"/work/proj/model.py\",\"line\":14,\"function\":\"mlp\",\"library\":false},{\"file\":\"/work/proj/train.py\",\"line\":30,\"function\":\"train_step\",\"library\":false}],\"hlo_flops\":0,\"transcendentals\":0,\"intensity\":1,\"bound_by\":\"memory\",\"roof_pct\":50,\"xla_flops\":600000000,\"program_id\":null,\"xla_op\":true,\"autotuning\":false,\"above_peak\":false,\"dtype\":\"\",\"remat\":false,\"wasted_ms\":4.000000,\"wasted_pct\":28.5714},\n"
    "{\"name\":\"dot.1\",\"category\":\"matmul\",\"count\":2,\"total_ms\":4.000000,\"self_ms\":4.000000,\"avg_ms\":2.000000,\"min_ms\":2.000000,\"max_ms\":2.000000,\"pct_time\":28.5714,\"gflops_per_s\":500,\"gbytes_per_s\":5,\"flops\":2000000000,\"bytes\":20000000,\"module\":\"jit_train_step\",\"device\":\"/host:CPU\",\"scope\":\"train_step/model/dense\",\"op_name\":\"jit(train_step)/model/dense/dot_general\",\"source\":\"/work/proj/model.py:12\",\"devices\":1,\"function\":\"dense\",\"stack\":[{\"file\":\"/usr/lib/python3/site-packages/flax/linen/linear.py\",\"line\":250,\"function\":\"__call__\",\"library\":true},{\"file\":\"/work/proj/model.py\",\"line\":12,\"function\":\"dense\",\"library\":false},{\"file\":\"/work/proj/train.py\",\"line\":30,\"function\":\"train_step\",\"library\":false}],\"hlo_flops\":0,\"transcendentals\":0,\"intensity\":100,\"bound_by\":\"compute\",\"roof_pct\":50,\"xla_flops\":2000000000,\"program_id\":null,\"xla_op\":true,\"autotuning\":false,\"above_peak\":false,\"dtype\":\"\",\"remat\":false,\"wasted_ms\":2.000000,\"wasted_pct\":14.2857},\n"
    "{\"name\":\"add.3\",\"category\":\"elementwise\",\"count\":2,\"total_ms\":2.000000,\"self_ms\":2.000000,\"avg_ms\":1.000000,\"min_ms\":1.000000,\"max_ms\":1.000000,\"pct_time\":14.2857,\"gflops_per_s\":0,\"gbytes_per_s\":0,\"flops\":0,\"bytes\":0,\"module\":\"jit_train_step\",\"device\":\"/host:CPU\",\"scope\":\"train_step\",\"op_name\":\"jit(train_step)/add\",\"source\":\"/work/proj/train.py:30\",\"devices\":1,\"function\":\"train_step\",\"stack\":[{\"file\":\"/work/proj/train.py\",\"line\":30,\"function\":\"train_step\",\"library\":false}],\"hlo_flops\":0,\"transcendentals\":0,\"intensity\":0,\"bound_by\":\"\",\"roof_pct\":0,\"xla_flops\":0,\"program_id\":null,\"xla_op\":true,\"autotuning\":false,\"above_peak\":false,\"dtype\":\"\",\"remat\":false,\"wasted_ms\":null,\"wasted_pct\":null}],"
    "\"precision\":[\n"
    "{\"precision\":\"unknown\",\"self_ms\":14.000000,\"pct_time\":100,\"flops\":2600000000,\"ops\":3}]}\n";

static const char CPU_STEPS_JSON[] =
    CPU_JSON_HEAD("steps")
    ",\"step_summary\":{\"method\":\"StepTraceAnnotation\",\"flops_per_step\":1300000000,\"mfu_pct\":13,\"count\":2,\"mean_ms\":10.000000,\"median_ms\":10.000000,\"p90_ms\":10.000000,\"std_ms\":0.000000,\"min_ms\":10.000000,\"max_ms\":10.000000,\"total_ms\":20.000000,\"breakdown_ms\":{\"compute\":14.000000,\"collective\":0.000000,\"h2d\":0.500000,\"d2h\":0.000000,\"d2d\":0.000000,\"compile\":0.500000,\"host\":3.500000,\"idle\":1.500000},\"no_device_work_steps\":0,\"gap_ms\":0.000000},\"steps\":[\n"
    "{\"step\":0,\"start_ms\":0.000000,\"duration_ms\":10.000000,\"compute_ms\":7.000000,\"collective_ms\":0.000000,\"h2d_ms\":0.000000,\"d2h_ms\":0.000000,\"d2d_ms\":0.000000,\"compile_ms\":0.500000,\"host_ms\":1.750000,\"idle_ms\":0.750000,\"ops\":3,\"compiles\":1,\"outlier\":false,\"flops\":1300000000,\"gflops_per_s\":130,\"no_device_work\":false,\"gap_ms\":0.000000,\"issued_start_ms\":0.000000,\"issued_ms\":10.000000,\"bytes\":310000000,\"intensity\":4.1935483871,\"gbytes_per_s\":31,\"roof_pct\":31,\"collective_hidden_ms\":0.000000,\"collective_exposed_ms\":0.000000},\n"
    "{\"step\":1,\"start_ms\":10.000000,\"duration_ms\":10.000000,\"compute_ms\":7.000000,\"collective_ms\":0.000000,\"h2d_ms\":0.500000,\"d2h_ms\":0.000000,\"d2d_ms\":0.000000,\"compile_ms\":0.000000,\"host_ms\":1.750000,\"idle_ms\":0.750000,\"ops\":3,\"compiles\":0,\"outlier\":false,\"flops\":1300000000,\"gflops_per_s\":130,\"no_device_work\":false,\"gap_ms\":0.000000,\"issued_start_ms\":10.000000,\"issued_ms\":10.000000,\"bytes\":310000000,\"intensity\":4.1935483871,\"gbytes_per_s\":31,\"roof_pct\":31,\"collective_hidden_ms\":0.000000,\"collective_exposed_ms\":0.000000}]}\n";

static const char CPU_SCOPES_JSON[] =
    CPU_JSON_HEAD("scopes")
    ",\"scopes\":[\n"
    "{\"scope\":\"train_step\",\"kind\":\"device\",\"user\":false,\"depth\":0,\"count\":6,\"total_ms\":14.000000,\"self_ms\":2.000000,\"pct\":100,\"wall_ms\":14.000000},\n"
    "{\"scope\":\"train_step/model\",\"kind\":\"device\",\"user\":false,\"depth\":1,\"count\":4,\"total_ms\":12.000000,\"self_ms\":8.000000,\"pct\":85.7143,\"wall_ms\":12.000000},\n"
    "{\"scope\":\"train_step/model/dense\",\"kind\":\"device\",\"user\":false,\"depth\":2,\"count\":2,\"total_ms\":4.000000,\"self_ms\":4.000000,\"pct\":28.5714,\"wall_ms\":4.000000},\n"
    "{\"scope\":\"\xE8\xAE\xAD\xE7\xBB\x83\xE6\x95\xB0\xE6\x8D\xAE\xE7\x9A\x84\xE5\x8A\xA0\xE8\xBD\xBD\xE4\xB8\x8E\xE9\xA2\x84\xE5\xA4\x84\xE7\x90\x86 1\",\"kind\":\"host\",\"user\":true,\"depth\":1,\"count\":2,\"total_ms\":2.500000,\"self_ms\":1.500000,\"pct\":12.5,\"wall_ms\":2.500000},\n"
    "{\"scope\":\"PjitFunction(train_step)\",\"kind\":\"runtime\",\"user\":false,\"depth\":1,\"count\":2,\"total_ms\":1.500000,\"self_ms\":1.000000,\"pct\":7.5,\"wall_ms\":1.500000},\n"
    "{\"scope\":\"load \\\"batch\\\", <1>\",\"kind\":\"host\",\"user\":true,\"depth\":2,\"count\":2,\"total_ms\":1.000000,\"self_ms\":1.000000,\"pct\":5,\"wall_ms\":1.000000},\n"
    "{\"scope\":\"backend_compile\",\"kind\":\"runtime\",\"user\":false,\"depth\":2,\"count\":1,\"total_ms\":0.500000,\"self_ms\":0.500000,\"pct\":2.5,\"wall_ms\":0.500000}]}\n";

static const char CPU_TRANSFERS_JSON[] =
    CPU_JSON_HEAD("transfers")
    ",\"transfers\":[\n"
    "{\"kind\":\"H2D\",\"count\":1,\"bytes\":0,\"total_ms\":0.500000,\"max_ms\":0.500000,\"gbytes_per_s\":0},\n"
    "{\"kind\":\"D2H\",\"count\":0,\"bytes\":0,\"total_ms\":0.000000,\"max_ms\":0.000000,\"gbytes_per_s\":0},\n"
    "{\"kind\":\"D2D\",\"count\":0,\"bytes\":0,\"total_ms\":0.000000,\"max_ms\":0.000000,\"gbytes_per_s\":0}]}\n";

static const char CPU_MEMORY_JSON[] =
    CPU_JSON_HEAD("memory")
    ",\"memory\":[\n"
    "{\"allocator\":\"cpu\",\"peak_bytes\":3145728,\"peak_at_ms\":2.000000,\"events\":3,\"allocator_peak_bytes\":0}],\"memory_timeline\":{\"cpu\":[[1.000000,1048576],[2.000000,3145728],[8.000000,1048576]]},\"modules\":[]}\n";

static const char CPU_COMPILES_JSON[] =
    CPU_JSON_HEAD("compiles")
    ",\"compiles\":[\n"
    "{\"module\":\"jit_train_step\",\"name\":\"backend_compile\",\"start_ms\":0.250000,\"duration_ms\":0.500000,\"step\":0,\"steady_state\":false}]}\n";

static const char CPU_FINDINGS_JSON[] =
    CPU_JSON_HEAD("findings")
    ",\"kpis\":[\n"
    "{\"name\":\"device utilization\",\"value\":72.5,\"unit\":\"%\",\"rating\":\"warning\"},\n"
    "{\"name\":\"host overhead\",\"value\":17.5,\"unit\":\"%\",\"rating\":\"warning\"},\n"
    "{\"name\":\"op duration\",\"value\":2.33333333333,\"unit\":\"ms\",\"rating\":\"good\"},\n"
    "{\"name\":\"memory bandwidth\",\"value\":42.7586206897,\"unit\":\"%\",\"rating\":\"warning\"},\n"
    "{\"name\":\"MFU\",\"value\":13,\"unit\":\"%\",\"rating\":\"bad\"},\n"
    "{\"name\":\"compilation time\",\"value\":0.0005,\"unit\":\"s\",\"rating\":\"good\"}],\"findings\":[\n"
    "{\"severity\":\"warning\",\"id\":\"dominant_op\",\"title\":\"One op dominates device time\",\"evidence\":\"fusion.2 (loop fusion, module jit_train_step) takes 57% of device op time (over 50%): 2 runs, 6.00 ms each; device computes 70% of step time; scope train_step/model, /work/proj/model.py:14\",\"fix\":\"One op dominates: look at its shapes and whether XLA could fuse or avoid it (e.g. a transpose or copy from layout changes, or a reduction over a large axis).\"}]}\n";

static const char CPU_OPS_VIEW_TXT[] =
    "op        self  %time  scope\n"
    "add.3  2.00 ms  14.3%  train_step\n"
    "dot.1  4.00 ms  28.6%  train_step/model/dense\n";

static const char CPU_OPS_VIEW_CSV[] =
    "name,self_ms,pct_time,scope\n"
    "add.3,2.000000,14.2857,train_step\n"
    "dot.1,4.000000,28.5714,train_step/model/dense\n";

static const char CPU_OPS_VIEW_JSON[] =
    CPU_JSON_HEAD("ops")
    ",\"ops\":[\n"
    "{\"name\":\"add.3\",\"self_ms\":2.000000,\"pct_time\":14.2857,\"scope\":\"train_step\"},\n"
    "{\"name\":\"dot.1\",\"self_ms\":4.000000,\"pct_time\":28.5714,\"scope\":\"train_step/model/dense\"}],"
    "\"precision\":[\n"
    "{\"precision\":\"unknown\",\"self_ms\":14.000000,\"pct_time\":100,\"flops\":2600000000,\"ops\":3}]}\n";

static const char CPU_SCOPES_W30_TXT[] =
    "scope         kind     count     total      self       %\n"
    "train_step    device       6  14.00 ms   2.00 ms  100.0%\n"
    "...tep/model  device       4  12.00 ms   8.00 ms   85.7%\n"
    "...del/dense  device       2   4.00 ms   4.00 ms   28.6%\n"
    "...\xE7\x9A\x84\xE5\x8A\xA0\xE8\xBD\xBD\xE4\xB8\x8E\xE9\xA2\x84\xE5\xA4\x84\xE7\x90\x86 1  host         2   2.50 ms   1.50 ms   12.5%\n"
    "...ain_step)  runtime      2   1.50 ms   1.00 ms    7.5%\n"
    "...tch\", <1>  host         2   1.00 ms   1.00 ms    5.0%\n"
    "...d_compile  runtime      1  500.0 \xC2\xB5s  500.0 \xC2\xB5s    2.5%\n";

static const char CPU_SCOPES_VIEW_CSV[] =
    "scope,kind,user,depth,count,total_ms,self_ms,pct,wall_ms\n"
    "PjitFunction(train_step),runtime,false,1,2,1.500000,1.000000,7.5,1.500000\n"
    "train_step,device,false,0,6,14.000000,2.000000,100,14.000000\n"
    "train_step/model/dense,device,false,2,2,4.000000,4.000000,28.5714,4.000000\n"
    "train_step/model,device,false,1,4,12.000000,8.000000,85.7143,12.000000\n";

static const char CPU_SCOPES_VIEW_JSON[] =
    CPU_JSON_HEAD("scopes")
    ",\"scopes\":[\n"
    "{\"scope\":\"PjitFunction(train_step)\",\"kind\":\"runtime\",\"user\":false,\"depth\":1,\"count\":2,\"total_ms\":1.500000,\"self_ms\":1.000000,\"pct\":7.5,\"wall_ms\":1.500000},\n"
    "{\"scope\":\"train_step\",\"kind\":\"device\",\"user\":false,\"depth\":0,\"count\":6,\"total_ms\":14.000000,\"self_ms\":2.000000,\"pct\":100,\"wall_ms\":14.000000},\n"
    "{\"scope\":\"train_step/model/dense\",\"kind\":\"device\",\"user\":false,\"depth\":2,\"count\":2,\"total_ms\":4.000000,\"self_ms\":4.000000,\"pct\":28.5714,\"wall_ms\":4.000000},\n"
    "{\"scope\":\"train_step/model\",\"kind\":\"device\",\"user\":false,\"depth\":1,\"count\":4,\"total_ms\":12.000000,\"self_ms\":8.000000,\"pct\":85.7143,\"wall_ms\":12.000000}]}\n";

static const char CPU_FINDINGS_W60_TXT[] =
    "Findings (1)\n"
    "  [warning] One op dominates device time (dominant_op)\n"
    "      evidence: fusion.2 (loop fusion, module\n"
    "                jit_train_step) takes 57% of device op time\n"
    "                (over 50%): 2 runs, 6.00 ms each; device\n"
    "                computes 70% of step time; scope\n"
    "                train_step/model, /work/proj/model.py:14\n"
    "      fix: One op dominates: look at its shapes and whether\n"
    "           XLA could fuse or avoid it (e.g. a transpose or\n"
    "           copy from layout changes, or a reduction over a\n"
    "           large axis).\n";

static const char GPU_REPORT_TXT[] =
    "jaxprof report: gpu.xplane.pb\n"
    "platform gpu, 1 host(s), 1 device(s), 4 events, 7.00 ms captured, device busy 5.50 ms\n"
    "device idle 21.4% of each device's first-to-last activity\n"
    "capture health: no HLO (gpu): module jit_step ran without an HloProto in the metadata: its ops have no FLOPs, bytes or memory (enable_hlo_proto)\n"
    "\n"
    "Steps: none found (no StepTraceAnnotation and no repeated execution)\n"
    "\n"
    "KPIs\n"
    "  device utilization          n/a\n"
    "  host overhead               n/a\n"
    "  kernel duration           1.67 ms [good]\n"
    "  memory bandwidth            n/a\n"
    "  MFU                         n/a\n"
    "  compilation time          0.00 s  [good]\n"
    "\n"
    "Top ops by self time\n"
    "op        category  count    total     self      avg  %time  devs\n"
    "fusion.1  fusion        2  4.00 ms  4.00 ms  2.00 ms  80.0%     1\n"
    "dot.2     matmul        1  1.00 ms  1.00 ms  1.00 ms  20.0%     1\n"
    "\n"
    "Top scopes (device: op_name scope; host: annotations, JAX events; total sums threads, % of wall)\n"
    "scope       kind    count    total     self       %\n"
    "(no scope)  device      3  5.00 ms  5.00 ms  100.0%\n"
    "\n"
    "Top GPU kernels\n"
    "kernel         count    total      avg  regs  grid   block     occ%\n"
    "fusion_kernel      2  4.00 ms  2.00 ms    32  8,1,1  256,1,1  50.00\n"
    "gemm_kernel        1  1.00 ms  1.00 ms   128  4,4,1  128,1,1  25.00\n"
    "\n"
    "Findings (2)\n"
    "  [warning] One op dominates device time (dominant_op)\n"
    "      evidence: fusion.1 (fusion, module jit_step) takes 80% of device op time (over 50%): 2 runs,\n"
    "                2.00 ms each; device computes 0% of step time\n"
    "      fix: One op dominates: look at its shapes and whether XLA could fuse or avoid it (e.g. a\n"
    "           transpose or copy from layout changes, or a reduction over a large axis).\n"
    "  [warning] The capture is incomplete (capture_health)\n"
    "      evidence: no HLO (gpu): module jit_step ran without an HloProto in the metadata: its ops have\n"
    "                no FLOPs, bytes or memory (enable_hlo_proto)\n"
    "      fix: Modules without an HloProto have no FLOPs, bytes or memory: capture with\n"
    "           enable_hlo_proto=True, and compile inside the trace or run them once more in it.\n";

static const char GPU_STEPS_TXT[] =
    "step  time  compute  collect  h2d  d2h  compile  host  idle  ops  outlier  no device work  gap\n"
    "  (none)\n";

static const char GPU_KERNELS_TXT[] =
    "kernel         count    total      avg  regs  grid   block     occ%\n"
    "fusion_kernel      2  4.00 ms  2.00 ms    32  8,1,1  256,1,1  50.00\n"
    "gemm_kernel        1  1.00 ms  1.00 ms   128  4,4,1  128,1,1  25.00\n";

static const char GPU_KERNELS_CSV[] =
    "name,count,total_ms,avg_ms,min_ms,max_ms,registers,static_shared,dynamic_shared,grid,block,occupancy_pct,op,autotuning\n"
    "fusion_kernel,2,4.000000,2.000000,2.000000,2.000000,32,0,1024,\"8,1,1\",\"256,1,1\",50,fusion.1,false\n"
    "gemm_kernel,1,1.000000,1.000000,1.000000,1.000000,128,16384,0,\"4,4,1\",\"128,1,1\",25,dot.2,false\n";

static const char GPU_KERNELS_JSON[] =
    GPU_JSON_HEAD("kernels")
    ",\"kernels\":[\n"
    "{\"name\":\"fusion_kernel\",\"count\":2,\"total_ms\":4.000000,\"avg_ms\":2.000000,\"min_ms\":2.000000,\"max_ms\":2.000000,\"registers\":32,\"static_shared\":0,\"dynamic_shared\":1024,\"grid\":\"8,1,1\",\"block\":\"256,1,1\",\"occupancy_pct\":50,\"op\":\"fusion.1\",\"autotuning\":false},\n"
    "{\"name\":\"gemm_kernel\",\"count\":1,\"total_ms\":1.000000,\"avg_ms\":1.000000,\"min_ms\":1.000000,\"max_ms\":1.000000,\"registers\":128,\"static_shared\":16384,\"dynamic_shared\":0,\"grid\":\"4,4,1\",\"block\":\"128,1,1\",\"occupancy_pct\":25,\"op\":\"dot.2\",\"autotuning\":false}]}\n";

static const char GPU_TRANSFERS_TXT[] =
    "kind  count    bytes     total   longest  GB/s\n"
    "H2D       1  1000000  500.0 \xC2\xB5s  500.0 \xC2\xB5s  2.00\n"
    "D2H       0        0         0         0     -\n"
    "D2D       0        0         0         0     -\n";

static const char GPU_TRANSFERS_CSV[] =
    "kind,count,bytes,total_ms,max_ms,gbytes_per_s\n"
    "H2D,1,1000000,0.500000,0.500000,2\n"
    "D2H,0,0,0.000000,0.000000,0\n"
    "D2D,0,0,0.000000,0.000000,0\n";

static const char GPU_TRANSFERS_JSON[] =
    GPU_JSON_HEAD("transfers")
    ",\"transfers\":[\n"
    "{\"kind\":\"H2D\",\"count\":1,\"bytes\":1000000,\"total_ms\":0.500000,\"max_ms\":0.500000,\"gbytes_per_s\":2},\n"
    "{\"kind\":\"D2H\",\"count\":0,\"bytes\":0,\"total_ms\":0.000000,\"max_ms\":0.000000,\"gbytes_per_s\":0},\n"
    "{\"kind\":\"D2D\",\"count\":0,\"bytes\":0,\"total_ms\":0.000000,\"max_ms\":0.000000,\"gbytes_per_s\":0}]}\n";

static const char DIFF_TXT[] =
    "jaxprof diff: cpu.xplane.pb \xE2\x86\x92 cpu_new.xplane.pb\n"
    "\n"
    "Step time: mean 10.00 ms \xE2\x86\x92 10.00 ms (+0.0% \xC2\xB1 0.0% noise): unchanged\n"
    "  median 10.00 ms \xE2\x86\x92 10.00 ms, p90 10.00 ms \xE2\x86\x92 10.00 ms; steps 2 \xE2\x86\x92 2\n"
    "\n"
    "Breakdown per step\n"
    "part         base       new  delta\n"
    "compute   7.00 ms   7.75 ms  +750.0 \xC2\xB5s\n"
    "h2d      250.0 \xC2\xB5s  250.0 \xC2\xB5s  0\n"
    "compile  250.0 \xC2\xB5s  250.0 \xC2\xB5s  0\n"
    "host      1.75 ms   1.25 ms  -500.0 \xC2\xB5s\n"
    "idle     750.0 \xC2\xB5s  500.0 \xC2\xB5s  -250.0 \xC2\xB5s\n"
    "\n"
    "Ops by change in self time per step (4 of 4)\n"
    "change     delta/step  delta%     base       new  count/step  op        category       scope                   match    noise\n"
    "slower     +500.0 \xC2\xB5s   +50.0%  1.00 ms   1.50 ms  1           add.3     elementwise    train_step              name     \xC2\xB1" "0\n"
    "added      +250.0 \xC2\xB5s   new           -  250.0 \xC2\xB5s  0->1        copy.4    copy           train_step              none     -\n"
    "unchanged  0           +0.0%   4.00 ms   4.00 ms  1           fusion.2  loop fusion    train_step/model        name     \xC2\xB1" "0\n"
    "unchanged  0           +0.0%   2.00 ms   2.00 ms  1           dot.1     matmul         train_step/model/dense  name     \xC2\xB1" "0\n"
    "Rule: an op is slower or faster when its self time per step moved by more than 5% of itself, by at least 0.5% of the base step, and by more than its noise: 2 standard errors of the change, from the op's time per step across the steps of each run (per execution with fewer than 3 steps).\n"
    "\n"
    "Scopes by change in self time per step (7 of 7)\n"
    "change     delta/step  delta%  self base  self new  total base  total new  count/step  scope                     kind    match\n"
    "slower     +750.0 \xC2\xB5s   +75.0%    1.00 ms   1.75 ms     7.00 ms    7.75 ms  3->4        train_step                device  name\n"
    "unchanged  0           +0.0%     4.00 ms   4.00 ms     6.00 ms    6.00 ms  2           train_step/model          device  name\n"
    "unchanged  0           +0.0%     2.00 ms   2.00 ms     2.00 ms    2.00 ms  1           train_step/model/dense    device  name\n"
    "unchanged  0           +0.0%    750.0 \xC2\xB5s  750.0 \xC2\xB5s     1.25 ms    1.25 ms  1           \xE8\xAE\xAD\xE7\xBB\x83\xE6\x95\xB0\xE6\x8D\xAE\xE7\x9A\x84\xE5\x8A\xA0\xE8\xBD\xBD\xE4\xB8\x8E\xE9\xA2\x84\xE5\xA4\x84\xE7\x90\x86 1             host    name\n"
    "unchanged  0           +0.0%    500.0 \xC2\xB5s  500.0 \xC2\xB5s    750.0 \xC2\xB5s   750.0 \xC2\xB5s  1           PjitFunction(train_step)  host    name\n"
    "unchanged  0           +0.0%    500.0 \xC2\xB5s  500.0 \xC2\xB5s    500.0 \xC2\xB5s   500.0 \xC2\xB5s  1           load \"batch\", <1>         host    name\n"
    "unchanged  0           +0.0%    250.0 \xC2\xB5s  250.0 \xC2\xB5s    250.0 \xC2\xB5s   250.0 \xC2\xB5s  0.5         backend_compile           host    name\n"
    "\n"
    "Findings that changed (0)\n"
    "  none: the same findings in both runs\n"
    "\n"
    "Summary: ops 2 unchanged, 1 slower, 0 faster, 1 added, 0 removed; scopes 6 unchanged, 1 slower, 0 faster, 0 added, 0 removed; ops matched by none 1, name 3, op_name 0, shape 0\n";

static const char DIFF_CSV[] =
    "name,base_name,module,category,scope,change,match,base_count,new_count,base_ms,new_ms,base_total_ms,new_total_ms,delta_ms,delta_pct,noise_ms,noise_basis\n"
    "add.3,add.3,jit_train_step,elementwise,train_step,slower,name,1,1,1.000000,1.500000,1.000000,1.500000,0.500000,50,0.000000,executions\n"
    "copy.4,,jit_train_step,copy,train_step,added,none,0,1,0.000000,0.250000,0.000000,0.250000,0.250000,0,0.000000,none\n"
    "fusion.2,fusion.2,jit_train_step,loop fusion,train_step/model,unchanged,name,1,1,4.000000,4.000000,6.000000,6.000000,0.000000,0,0.000000,executions\n"
    "dot.1,dot.1,jit_train_step,matmul,train_step/model/dense,unchanged,name,1,1,2.000000,2.000000,2.000000,2.000000,0.000000,0,0.000000,executions\n";

/* ---- the tests -------------------------------------------------------------------------------- */

/* One output to check: a section in a format, under a view (NULL: the defaults). */
typedef struct render_case {
    int section, format;
    const jp_view *view;
    const char *name; /* what a mismatch saves the output as */
    const char *want;
} render_case;

/* The bytes of one case must be its want; a JSON document must also parse. Returns the parsed
 * document for JSON (free it), else NULL. */
static yyjson_doc *check_case(const jp_analysis *a, const render_case *c) {
    output o = render(a, c->section, c->format, c->view);
    expect_bytes(c->name, &o, c->want);
    yyjson_doc *doc = NULL;
    if (c->format == JP_FORMAT_JSON) {
        yyjson_read_err e;
        doc = yyjson_read_opts(o.text, o.len, 0, NULL, &e);
        if (!doc) fail_msg("%s: not JSON at byte %zu: %s", c->name, e.pos, e.msg);
    }
    free(o.text);
    return doc;
}

static void check_cases(const jp_analysis *a, const render_case *cases, size_t n) {
    for (size_t i = 0; i < n; i++) yyjson_doc_free(check_case(a, &cases[i]));
}

/* Every section of the CPU profile in every format it has (the report has no CSV). */
#define SECTION_CASES(SECTION, NAME, TXT, CSV, JSON) \
    {SECTION, JP_FORMAT_TEXT, NULL, "cpu." NAME ".txt", TXT}, {SECTION, JP_FORMAT_CSV, NULL, "cpu." NAME ".csv", CSV}, \
    {SECTION, JP_FORMAT_JSON, NULL, "cpu." NAME ".json", JSON}
static const render_case CPU_CASES[] = {
    {JP_SECTION_REPORT, JP_FORMAT_TEXT, NULL, "cpu.report.txt", CPU_REPORT_TXT},
    SECTION_CASES(JP_SECTION_OPS, "ops", CPU_OPS_TXT, CPU_OPS_CSV, CPU_OPS_JSON),
    SECTION_CASES(JP_SECTION_STEPS, "steps", CPU_STEPS_TXT, CPU_STEPS_CSV, CPU_STEPS_JSON),
    SECTION_CASES(JP_SECTION_SCOPES, "scopes", CPU_SCOPES_TXT, CPU_SCOPES_CSV, CPU_SCOPES_JSON),
    SECTION_CASES(JP_SECTION_TRANSFERS, "transfers", CPU_TRANSFERS_TXT, CPU_TRANSFERS_CSV, CPU_TRANSFERS_JSON),
    SECTION_CASES(JP_SECTION_MEMORY, "memory", CPU_MEMORY_TXT, CPU_MEMORY_CSV, CPU_MEMORY_JSON),
    SECTION_CASES(JP_SECTION_COMPILES, "compiles", CPU_COMPILES_TXT, CPU_COMPILES_CSV, CPU_COMPILES_JSON),
    SECTION_CASES(JP_SECTION_FINDINGS, "findings", CPU_FINDINGS_TXT, CPU_FINDINGS_CSV, CPU_FINDINGS_JSON),
};
enum { N_CPU_CASES = sizeof CPU_CASES / sizeof CPU_CASES[0] };

/* The parsed document of the case named name. */
static yyjson_doc *doc_named(yyjson_doc *const *docs, const char *name) {
    for (size_t i = 0; i < N_CPU_CASES; i++)
        if (strcmp(CPU_CASES[i].name, name) == 0 && docs[i]) return docs[i];
    fail_msg("no JSON case %s", name);
    return NULL;
}

static void cpu_sections(void **state) {
    const jp_analysis *a = cpu_of(state);
    yyjson_doc *docs[N_CPU_CASES];
    for (size_t i = 0; i < N_CPU_CASES; i++) docs[i] = check_case(a, &CPU_CASES[i]);
    /* read back by value: every document's header, then a few numbers of each table */
    for (size_t i = 0; i < N_CPU_CASES; i++) {
        if (!docs[i]) continue;
        expect_json_str(docs[i], "/jaxprof_version", JP_VERSION);
        expect_json_str(docs[i], "/section", jp_section_name(CPU_CASES[i].section));
        expect_json_str(docs[i], "/platform", "cpu");
        expect_json_str(docs[i], "/devices/0/platform", "cpu"); /* one spelling (issue 22) */
        expect_json_num(docs[i], "/span_ms", 20);
        expect_json_num(docs[i], "/device_busy_ms", 14.5);
    }
    expect_json_str(doc_named(docs, "cpu.ops.json"), "/ops/0/name", "fusion.2");
    expect_json_num(doc_named(docs, "cpu.ops.json"), "/ops/0/self_ms", 8);
    expect_json_num(doc_named(docs, "cpu.ops.json"), "/ops/0/roof_pct", 50);
    expect_json_str(doc_named(docs, "cpu.ops.json"), "/ops/1/stack/0/file",
                    "/usr/lib/python3/site-packages/flax/linen/linear.py");
    expect_json_num(doc_named(docs, "cpu.steps.json"), "/step_summary/breakdown_ms/host", 3.5);
    expect_json_num(doc_named(docs, "cpu.steps.json"), "/steps/1/h2d_ms", 0.5);
    expect_json_str(doc_named(docs, "cpu.scopes.json"), "/scopes/3/scope", OUTER_NAME);
    expect_json_str(doc_named(docs, "cpu.scopes.json"), "/scopes/5/scope", INNER_NAME);
    expect_json_num(doc_named(docs, "cpu.transfers.json"), "/transfers/0/max_ms", 0.5);
    expect_json_num(doc_named(docs, "cpu.memory.json"), "/memory_timeline/cpu/1/1", 3 * MIB);
    expect_json_str(doc_named(docs, "cpu.compiles.json"), "/compiles/0/module", "jit_train_step");
    expect_json_str(doc_named(docs, "cpu.findings.json"), "/findings/0/id", "dominant_op");
    expect_json_num(doc_named(docs, "cpu.findings.json"), "/kpis/0/value", 72.5);
    for (size_t i = 0; i < N_CPU_CASES; i++) yyjson_doc_free(docs[i]);
}

static void cpu_report(void **state) {
    const jp_analysis *a = cpu_of(state);
    /* the report holds every table: a golden file, and parsed */
    output o = render(a, JP_SECTION_REPORT, JP_FORMAT_JSON, NULL);
    expect_golden("cpu_report.json", &o);
    yyjson_doc *doc = yyjson_read(o.text, o.len, 0);
    assert_non_null(doc);
    expect_json_num(doc, "/step_summary/mfu_pct", 13);
    expect_json_str(doc, "/lines/0/source", "model.py:14");
    expect_json_num(doc, "/kpis/3/value", 42.7586206897); /* 100 x 6.2e8 / 14.5e-3 / 1e11, to 12 digits */
    yyjson_doc_free(doc);
    free(o.text);
    /* the report is several tables: no CSV of it, and nothing written */
    o = (output){0};
    FILE *f = open_memstream(&o.text, &o.len);
    jp_error err;
    assert_int_equal(jp_render(a, JP_SECTION_REPORT, JP_FORMAT_CSV, NULL, f, &err), JP_ERR_ARG);
    assert_string_equal(err.msg, "CSV needs a table section (ops, steps, ...)");
    assert_int_equal(fclose(f), 0);
    assert_int_equal(o.len, 0);
    free(o.text);
}

/* --top, --sort, --columns, --filter and --width, as the CLI passes them. */
static void cpu_views(void **state) {
    static const jp_view top_two = {.top = 2, .sort = "name", .columns = "name,self_ms,pct_time,scope"};
    static const jp_view narrow = {.width = 30}; /* names cut on the left, on a character boundary */
    static const jp_view steps_only = {.filter = "step", .sort = "self:asc"};
    static const jp_view wrap = {.width = 60};
    static const render_case cases[] = {
        {JP_SECTION_OPS, JP_FORMAT_TEXT, &top_two, "cpu.ops.view.txt", CPU_OPS_VIEW_TXT},
        {JP_SECTION_OPS, JP_FORMAT_CSV, &top_two, "cpu.ops.view.csv", CPU_OPS_VIEW_CSV},
        {JP_SECTION_OPS, JP_FORMAT_JSON, &top_two, "cpu.ops.view.json", CPU_OPS_VIEW_JSON},
        {JP_SECTION_SCOPES, JP_FORMAT_TEXT, &narrow, "cpu.scopes.w30.txt", CPU_SCOPES_W30_TXT},
        {JP_SECTION_SCOPES, JP_FORMAT_CSV, &steps_only, "cpu.scopes.view.csv", CPU_SCOPES_VIEW_CSV},
        {JP_SECTION_SCOPES, JP_FORMAT_JSON, &steps_only, "cpu.scopes.view.json", CPU_SCOPES_VIEW_JSON},
        {JP_SECTION_FINDINGS, JP_FORMAT_TEXT, &wrap, "cpu.findings.w60.txt", CPU_FINDINGS_W60_TXT},
    };
    check_cases(cpu_of(state), cases, sizeof cases / sizeof cases[0]);
}

static void gpu_outputs(void **state) {
    const jp_analysis *a = gpu_of(state);
    static const render_case cases[] = {
        {JP_SECTION_REPORT, JP_FORMAT_TEXT, NULL, "gpu.report.txt", GPU_REPORT_TXT},
        {JP_SECTION_STEPS, JP_FORMAT_TEXT, NULL, "gpu.steps.txt", GPU_STEPS_TXT},
        {JP_SECTION_KERNELS, JP_FORMAT_TEXT, NULL, "gpu.kernels.txt", GPU_KERNELS_TXT},
        {JP_SECTION_KERNELS, JP_FORMAT_CSV, NULL, "gpu.kernels.csv", GPU_KERNELS_CSV},
        {JP_SECTION_KERNELS, JP_FORMAT_JSON, NULL, "gpu.kernels.json", GPU_KERNELS_JSON},
        {JP_SECTION_TRANSFERS, JP_FORMAT_TEXT, NULL, "gpu.transfers.txt", GPU_TRANSFERS_TXT},
        {JP_SECTION_TRANSFERS, JP_FORMAT_CSV, NULL, "gpu.transfers.csv", GPU_TRANSFERS_CSV},
        {JP_SECTION_TRANSFERS, JP_FORMAT_JSON, NULL, "gpu.transfers.json", GPU_TRANSFERS_JSON},
    };
    yyjson_doc *kernels = check_case(a, &cases[4]), *transfers = check_case(a, &cases[7]);
    check_cases(a, cases, sizeof cases / sizeof cases[0]);
    expect_json_str(kernels, "/platform", "gpu");
    expect_json_str(kernels, "/devices/0/platform", "gpu");
    expect_json_str(kernels, "/kernels/0/grid", "8,1,1");
    expect_json_num(kernels, "/kernels/1/static_shared", 16384);
    expect_json_num(transfers, "/transfers/0/bytes", 1e6);
    expect_json_num(transfers, "/transfers/0/gbytes_per_s", 2);
    yyjson_doc_free(kernels);
    yyjson_doc_free(transfers);
    output o = render(a, JP_SECTION_REPORT, JP_FORMAT_JSON, NULL);
    expect_golden("gpu_report.json", &o);
    yyjson_doc *doc = yyjson_read(o.text, o.len, 0);
    assert_non_null(doc);
    assert_true(yyjson_is_null(at(doc, "/step_summary/mfu_pct"))); /* no steps: unknown, not 0 */
    expect_json_str(doc, "/kpis/0/rating", "n/a");
    yyjson_doc_free(doc);
    free(o.text);
}

/* jp_html_report into memory; jp_html_write must write the same bytes to a file. */
static output html_of(const jp_analysis *a, const char *file) {
    output o = {0};
    FILE *f = open_memstream(&o.text, &o.len);
    jp_error err;
    assert_int_equal(jp_html_report(a, f, &err), JP_OK);
    assert_int_equal(fclose(f), 0);
    char path[1024];
    const char *dir = getenv("TEST_TMPDIR");
    snprintf(path, sizeof path, "%s/%s", dir ? dir : ".", file);
    if (jp_html_write(a, path, NULL, &err) != JP_OK) fail_msg("%s", err.msg);
    size_t len;
    char *written = read_all(path, &len);
    assert_non_null(written);
    assert_int_equal(len, o.len);
    assert_memory_equal(written, o.text, len);
    free(written);
    remove(path);
    return o;
}

/* A roofline whose numbers leave a finite axis (a denormal bandwidth peak: an infinite ridge; an
 * op of 1e308 FLOP over 1e-300 bytes: an infinite intensity) skips them: fuzz_writers found the
 * axes' int conversion of infinity (UBSan float-cast-overflow under clang). */
static void html_roofline_skips_infinite_points(void **state) {
    jp_analysis a = *cpu_of(state);
    jp_device devices[8];
    jp_op_stat ops[16];
    assert_true(a.n_devices >= 1 && a.n_devices <= 8 && a.n_ops >= 2 && a.n_ops <= 16);
    memcpy(devices, a.devices, a.n_devices * sizeof *devices);
    memcpy(ops, a.ops, a.n_ops * sizeof *ops);
    for (size_t d = 0; d < a.n_devices; d++) devices[d].peak_flops = 1e12, devices[d].peak_bw = 1e-320;
    ops[0].flops = 1e308, ops[0].bytes = 1e-300;
    a.devices = devices, a.ops = ops;
    output o = html_of(&a, "render_inf.html");
    char *roof = strstr(o.text, "<section id=\"roofline\">"), *end = roof ? strstr(roof, "</svg>") : NULL;
    assert_non_null(end);
    *end = '\0';                 /* the roofline chart alone (the wasted-time table below names every op) */
    assert_null(strstr(roof, "inf"));
    assert_null(strstr(roof, "nan"));
    assert_null(strstr(roof, "Roofs of"));                            /* no device with finite roofs */
    assert_null(strstr(roof, ops[0].name));                          /* its point left out */
    assert_non_null(strstr(roof, "dot.1: 100 FLOP/byte, 500 GFLOP/s")); /* the others placed */
    free(o.text);
}

static void html_reports(void **state) {
    output cpu = html_of(cpu_of(state), "render_cpu.html"), gpu = html_of(gpu_of(state), "render_gpu.html");
    expect_golden("cpu_report.html", &cpu);
    expect_golden("gpu_report.html", &gpu);
    /* what the golden files hold, said directly: self-contained, escaped, the numbers above */
    assert_null(strstr(cpu.text, "<script"));
    assert_null(strstr(cpu.text, "http"));
    assert_non_null(strstr(cpu.text, "<tr><th>platform</th><td>cpu</td></tr>"));
    assert_non_null(strstr(cpu.text, "<span id=\"step-count\">2</span> steps (StepTraceAnnotation)"));
    assert_non_null(strstr(cpu.text, "<code class=\"scope\">load &quot;batch&quot;, &lt;1&gt;</code>"));
    assert_non_null(strstr(cpu.text, "<title>compute 70.0%</title>"));
    assert_non_null(strstr(cpu.text, "dot.1: 100 FLOP/byte, 500 GFLOP/s, self 4.00 ms (28.6%), "
                                     "compute bound at 50.0% of its roof"));
    assert_non_null(strstr(cpu.text, "<footer><small>jaxprof " JP_VERSION "</small></footer>\n</body></html>\n"));
    assert_non_null(strstr(gpu.text, "<span id=\"step-count\">0</span> steps."));
    assert_non_null(strstr(gpu.text, "<p>No op has both FLOP and byte counts: nothing to place on a roofline.</p>"));
    free(cpu.text);
    free(gpu.text);
}

static void diff_outputs(void **state) {
    fixtures *f = *state;
    jp_diff *d = NULL;
    jp_error err;
    if (jp_diff_new(&d, jp_profile_analysis(f->cpu), jp_profile_analysis(f->cpu_new), NULL, &err) != JP_OK)
        fail_msg("%s", err.msg);
    static const char *const names[] = {"diff.txt", "diff.json", "diff.csv"};
    output out[3];
    for (int fm = 0; fm < 3; fm++) {
        FILE *fp = open_memstream(&out[fm].text, &out[fm].len);
        assert_int_equal(jp_diff_render(d, fm, NULL, fp, &err), JP_OK);
        assert_int_equal(fclose(fp), 0);
    }
    expect_bytes(names[JP_FORMAT_TEXT], &out[JP_FORMAT_TEXT], DIFF_TXT);
    expect_bytes(names[JP_FORMAT_CSV], &out[JP_FORMAT_CSV], DIFF_CSV);
    expect_golden(names[JP_FORMAT_JSON], &out[JP_FORMAT_JSON]);
    yyjson_doc *doc = yyjson_read(out[JP_FORMAT_JSON].text, out[JP_FORMAT_JSON].len, 0);
    assert_non_null(doc);
    expect_json_str(doc, "/ops/0/name", "add.3");
    expect_json_str(doc, "/ops/0/change", "slower");
    expect_json_num(doc, "/ops/0/delta_pct", 50);
    expect_json_str(doc, "/ops/1/change", "added");
    expect_json_num(doc, "/breakdown/6/delta_ms", -0.5);
    expect_json_str(doc, "/scopes/5/name", INNER_NAME);
    yyjson_doc_free(doc);
    for (int fm = 0; fm < 3; fm++) free(out[fm].text);
    /* the page, written to a file as the CLI writes it */
    char path[1024];
    const char *dir = getenv("TEST_TMPDIR");
    snprintf(path, sizeof path, "%s/render_diff.html", dir ? dir : ".");
    if (jp_html_diff_write(d, path, NULL, &err) != JP_OK) fail_msg("%s", err.msg);
    output page = {0};
    page.text = read_all(path, &page.len);
    assert_non_null(page.text);
    remove(path);
    expect_golden("diff.html", &page);
    assert_non_null(strstr(page.text, "<tr class=\"added\"><td>added</td><td class=\"n\">+250.0 \xC2\xB5s</td>"
                                      "<td class=\"n\">new</td>"));
    assert_non_null(strstr(page.text, "<code class=\"scope\">load &quot;batch&quot;, &lt;1&gt;</code>"));
    free(page.text);
    jp_diff_free(d);
}

/* Last: a run that regenerated golden files fails, naming them. */
static void golden_files_were_not_updated(void **state) {
    (void)state;
    if (*updated_goldens)
        fail_msg("golden updated:%s (in %s); read `git diff %s`, then run again without JP_UPDATE_GOLDEN",
                 updated_goldens, JP_TEST_GOLDEN, JP_TEST_GOLDEN);
}

/* Issue 30: control characters never reach a terminal. Exact mapping: each neutralised character
 * is one '?'; valid UTF-8 (also U+00A0, the first after C1) is kept; a C1 sequence cut between two
 * writes of the stream is still caught. */
static char *filtered(const char *s, size_t len, int keep_layout) {
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    assert_non_null(m);
    jp_text_fput_safe(m, s, len, keep_layout);
    fclose(m);
    return buf;
}

static void control_characters_become_question_marks(void **state) {
    (void)state;
    static const struct { const char *in, *out; int keep; } cases[] = {
        {"\x1b]0;title\x07op", "?]0;title?op", 1},
        {"\x1b[2J\x1b[H", "?[2J?[H", 1},
        {"a\tb\nc\rd", "a\tb\nc?d", 1},
        {"a\tb\nc", "a?b?c", 0},
        {"del\x7f", "del?", 1},
        {"c1\xc2\x9b" "31m", "c1?31m", 1},   /* U+009B, CSI, as UTF-8 */
        {"nbsp\xc2\xa0.", "nbsp\xc2\xa0.", 1},
        {"raw\x9b", "raw?", 1},           /* an 8-bit CSI: a stray continuation byte */
        {"\xc3\xa9t\xc3\xa9 \xe6\x95\xb0 \xf0\x9f\x98\x80", "\xc3\xa9t\xc3\xa9 \xe6\x95\xb0 \xf0\x9f\x98\x80", 1},
        {"cut\xe6\x95", "cut\xe6\x95", 1}, /* a cut sequence: its bytes are not controls */
        {"lead\xc2", "lead?", 1},
        {"bad\xff\xc0", "bad??", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = filtered(cases[i].in, strlen(cases[i].in), cases[i].keep);
        assert_string_equal(got, cases[i].out);
        free(got);
    }
    char *got = filtered("a\0b", 3, 1); /* NUL is a control too */
    assert_string_equal(got, "a?b");
    free(got);
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    assert_non_null(m);
    FILE *safe = jp_safe_text_open(m);
    assert_non_null(safe);
    setvbuf(safe, NULL, _IONBF, 0); /* each fputs reaches the filter as its own write */
    fputs("x\xc2", safe);
    fputs("\x9by\xc2", safe);
    fputs("\xa9\x1b", safe);
    assert_int_equal(fclose(safe), 0);
    fclose(m);
    assert_string_equal(buf, "x?y\xc2\xa9?");
    free(buf);
}

/* ?group= / jp_view.group: the ops the filter keeps, summed by a field into rows of the ops table. */
static void ops_grouped(void **state) {
    const jp_analysis *a = cpu_of(state);
    static const jp_view by_module = {.group = "module", .columns = "name,module,count,total_ms,self_ms,pct_time"};
    output o = render(a, JP_SECTION_OPS, JP_FORMAT_CSV, &by_module);
    expect_bytes("cpu.ops.module.csv", &o, "name,module,count,total_ms,self_ms,pct_time\n"
                                           "jit_train_step,jit_train_step,6,18.000000,14.000000,100\n");
    free(o.text);
    static const jp_view dot_add = {.group = "category", .filter = "^(dot\\.1|add\\.3)$", /* whole names only */
                                    .columns = "name,category,count,self_ms"};
    o = render(a, JP_SECTION_OPS, JP_FORMAT_CSV, &dot_add);
    expect_bytes("cpu.ops.category.csv", &o, "name,category,count,self_ms\nmatmul,matmul,2,4.000000\n"
                                             "elementwise,elementwise,2,2.000000\n");
    free(o.text);
    jp_error err;
    FILE *f = fopen("/dev/null", "w");
    static const jp_view bad = {.group = "op"};
    assert_int_equal(jp_render(a, JP_SECTION_OPS, JP_FORMAT_JSON, &bad, f, &err), JP_ERR_ARG);
    assert_string_equal(err.msg, "group 'op': category, module, scope or source");
    assert_int_equal(jp_render(a, JP_SECTION_STEPS, JP_FORMAT_JSON, &by_module, f, &err), JP_ERR_ARG);
    assert_string_equal(err.msg, "group: ops only");
    fclose(f);
}

/* ---- launch and idle causes (launch.c) ---------------------------------------------------------- */

/* A GPU capture whose host thread launches each kernel (times in µs; c = correlation id):
 *   call c1 [0, 10)   -> fusion_kernel [15, 20)   short (5 < 10); the first: no gap before
 *   call c2 [12, 14)  -> gemm_kernel   [22, 40)   gap 2, launched before the device went idle: kernel to kernel
 *   call c3 [16, 18)  -> fusion_kernel [60, 65)   gap 20, launched before: other
 *   call c4 [100, 103)-> gemm_kernel   [110, 130) gap 45, launched after the device went idle: host
 *   (no call)  c99    -> fusion_kernel [130, 131) unmatched
 * Queue: 1 launch outstanding over [0,12), 2 [12,16), 3 [16,20), 2 [20,40), 1 [40,65), 0 [65,100),
 * 1 [100,130): 127 µs of depth over 130 µs, at most 3. */
enum { L_CALL = 1, L_FUSION, L_GEMM, L_COUNT };
static const char *const LAUNCH_NAMES[L_COUNT] = {"", "cuLaunchKernel", "fusion_kernel", "gemm_kernel"};

static pbw launch_space(void) {
    const event_spec calls[] = {
        {L_CALL, 0, 10 * US, {{S_CORRELATION, .i = 1}}},   {L_CALL, 12 * US, 2 * US, {{S_CORRELATION, .i = 2}}},
        {L_CALL, 16 * US, 2 * US, {{S_CORRELATION, .i = 3}}}, {L_CALL, 100 * US, 3 * US, {{S_CORRELATION, .i = 4}}},
    };
    const event_spec stream[] = {
        {L_FUSION, 15 * US, 5 * US, {{S_CORRELATION, .i = 1}}},   {L_GEMM, 22 * US, 18 * US, {{S_CORRELATION, .i = 2}}},
        {L_FUSION, 60 * US, 5 * US, {{S_CORRELATION, .i = 3}}},   {L_GEMM, 110 * US, 20 * US, {{S_CORRELATION, .i = 4}}},
        {L_FUSION, 130 * US, 1 * US, {{S_CORRELATION, .i = 99}}},
    };
    pbw space = {0}, host = {0}, dev = {0};
    put_line(&host, 5, "launcher", calls, sizeof calls / sizeof calls[0]);
    finish_plane(&space, &host, 1, JP_XN_PLANE_HOST_CPU, LAUNCH_NAMES, L_COUNT, NULL, 0);
    put_line(&dev, 7, "Stream #7(Compute)", stream, sizeof stream / sizeof stream[0]);
    finish_plane(&space, &dev, 2, "/device:GPU:0", LAUNCH_NAMES, L_COUNT, NULL, 0);
    pbw_str(&space, 4, "gpu");
    return space;
}

static void launch_causes(void **state) {
    (void)state;
    jp_profile *p = load(launch_space(), "launch.xplane.pb");
    const jp_analysis *a = jp_profile_analysis(p);
    const jp_device *d = NULL;
    for (size_t i = 0; i < a->n_devices; i++)
        if (strcmp(a->devices[i].name, "/device:GPU:0") == 0) d = &a->devices[i];
    assert_non_null(d);
    assert_int_equal(d->idle_host_ps, 45 * US);
    assert_int_equal(d->idle_kernel_ps, 2 * US);
    assert_int_equal(d->idle_other_ps, 20 * US);
    assert_int_equal(d->n_launched, 4);
    assert_int_equal(d->n_short, 1);
    assert_int_equal(d->queue_max, 3);
    double off = d->queue_mean - 127.0 / 130.0;
    assert_true(off < 1e-12 && off > -1e-12);
    assert_int_equal(a->n_launches, 2);
    const jp_launch_stat *f = &a->launches[0], *g = &a->launches[1]; /* by summed delay: 59 then 20 µs */
    assert_string_equal(f->name, "fusion_kernel");
    assert_string_equal(f->api, "cuLaunchKernel");
    assert_int_equal(f->count, 3);
    assert_int_equal(f->matched, 2);
    assert_int_equal(f->api_ps, 12 * US);
    assert_int_equal(f->queue_ps, 47 * US);
    assert_int_equal(f->delay_ps, 59 * US);
    assert_int_equal(f->queue_max_ps, 42 * US);
    assert_int_equal(f->kernel_ps, 11 * US);
    assert_int_equal(f->n_short, 1);
    assert_int_equal(f->n_host_wait, 0);
    assert_string_equal(g->name, "gemm_kernel");
    assert_int_equal(g->matched, 2);
    assert_int_equal(g->delay_ps, 20 * US);
    assert_int_equal(g->n_host_wait, 1);
    /* one stream: the device's split, and its busy time the union of its five kernels */
    assert_int_equal(a->n_launch_streams, 1);
    const jp_launch_stream *st = &a->launch_streams[0];
    assert_string_equal(st->name, "Stream #7(Compute)");
    assert_int_equal(st->id, 7);
    assert_int_equal(st->events, 5);
    assert_int_equal(st->n_launched, 4);
    assert_int_equal(st->busy_ps, 49 * US);
    assert_int_equal(st->idle_host_ps, 45 * US);
    assert_int_equal(st->idle_kernel_ps, 2 * US);
    assert_int_equal(st->idle_other_ps, 20 * US);
    assert_int_equal(st->last_ps - st->first_ps, st->busy_ps + 67 * US);
    /* the queue over time: every change (the comment above) */
    assert_int_equal(a->n_queue_series, 1);
    const jp_queue_series *q = &a->queue_series[0];
    static const int64_t at_us[] = {0, 12, 16, 20, 40, 65, 100, 130};
    static const uint32_t depth[] = {1, 2, 3, 2, 1, 0, 1, 0};
    assert_int_equal(q->n_points, 8);
    assert_int_equal(q->n_changes, 8);
    assert_int_equal(q->bucket_ps, 0);
    for (size_t i = 0; i < 8; i++) {
        assert_int_equal(q->points[i].t_ps, at_us[i] * US);
        assert_int_equal(q->points[i].depth, depth[i]);
    }
    output o = render(a, JP_SECTION_LAUNCH, JP_FORMAT_TEXT, NULL);
    expect_bytes("launch.txt", &o,
                 "kernel         device         count   kernel     api    queue    delay  delay_sum  short  hwait\n"
                 "fusion_kernel  /device:GPU:0      3   3.7 \xC2\xB5" "s  6.0 \xC2\xB5" "s  23.5 \xC2\xB5" "s  29.5 \xC2\xB5" "s    59.0 \xC2\xB5" "s      1      0\n"
                 "gemm_kernel    /device:GPU:0      2  19.0 \xC2\xB5" "s  2.5 \xC2\xB5" "s   7.5 \xC2\xB5" "s  10.0 \xC2\xB5" "s    20.0 \xC2\xB5" "s      0      1\n"
                 "\nStreams (each stream's idle gaps by cause, HTA's per-stream split; busy + host + k2k + other = its "
                 "first to last)\n"
                 "stream              device         events  launched     busy     host     k2k    other\n"
                 "Stream #7(Compute)  /device:GPU:0       5         4  49.0 \xC2\xB5" "s  45.0 \xC2\xB5" "s  2.0 \xC2\xB5"
                 "s  20.0 \xC2\xB5" "s\n"
                 "\nLaunch queue depth over time: 1 device(s), 8 points (launch --json: launch_queue)\n");
    free(o.text);
    static const jp_view streams = {.table = "launch_streams"}, wrong = {.table = "comm_instances"};
    o = render(a, JP_SECTION_LAUNCH, JP_FORMAT_CSV, &streams);
    expect_bytes("launch_streams.csv", &o,
                 "stream,device,stream_id,events,launched,busy_ms,idle_host_ms,idle_kernel_ms,idle_other_ms,first_ms,"
                 "last_ms\nStream #7(Compute),/device:GPU:0,7,5,4,0.049000,0.045000,0.002000,0.020000,0.015000,0.131000\n");
    free(o.text);
    o = render(a, JP_SECTION_LAUNCH, JP_FORMAT_JSON, NULL);
    assert_non_null(strstr(o.text, ",\"launch_queue\":{\"max_points\":2048,\"devices\":[{\"device\":\"/device:GPU:0\","
                                   "\"changes\":8,\"downsampled\":false,\"bucket_ms\":0.000000,\"points\":[[0.000000,1],"
                                   "[0.012000,2],[0.016000,3],[0.020000,2],[0.040000,1],[0.065000,0],[0.100000,1],"
                                   "[0.130000,0]]}]}}"));
    free(o.text);
    jp_error err;
    FILE *bad = tmpfile();
    assert_int_equal(jp_render(a, JP_SECTION_LAUNCH, JP_FORMAT_CSV, &wrong, bad, &err), JP_ERR_ARG);
    assert_string_equal(err.msg, "table 'comm_instances': launch's other table is launch_streams");
    assert_int_equal(jp_render(a, JP_SECTION_OPS, JP_FORMAT_CSV, &streams, bad, &err), JP_ERR_ARG);
    assert_string_equal(err.msg, "table 'launch_streams': ops has one table");
    fclose(bad);
    jp_profile_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(launch_causes),
        cmocka_unit_test(cpu_sections), cmocka_unit_test(cpu_report),   cmocka_unit_test(cpu_views),
        cmocka_unit_test(gpu_outputs),  cmocka_unit_test(html_reports), cmocka_unit_test(html_roofline_skips_infinite_points),
        cmocka_unit_test(diff_outputs), cmocka_unit_test(golden_files_were_not_updated),
        cmocka_unit_test(control_characters_become_question_marks), cmocka_unit_test(ops_grouped),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
