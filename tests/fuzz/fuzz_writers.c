/* fuzz_writers.c - fuzz target for the writers: one fuzz-provided profile (a serialized XSpace, or
 * its gzip) is exported as a Chrome and a Perfetto trace, as folded stacks and pprof, as the HTML
 * report, as every section in text, JSON and CSV, diffed against itself (text, JSON, CSV, HTML),
 * and extracted from a run directory where it is the .gz (compressed here, and as given), all into
 * one private temporary directory that the process reuses. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "jaxprof/jaxprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { PATH_CAP = 1100 };

static char dir[1024]; /* the process's temporary directory; "" until made */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    (void)remove(path); /* best effort: go on */
    return 0;
}

static void remove_work_dir(void) {
    if (dir[0]) nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The temporary directory, made once (libFuzzer runs every input in one process) and removed at
 * exit. */
static const char *work_dir(void) {
    if (dir[0]) return dir;
    const char *base = getenv("TEST_TMPDIR");
    snprintf(dir, sizeof dir, "%s/fuzz_writers_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir)) dir[0] = '\0';
    else atexit(remove_work_dir);
    return dir;
}

static void in_dir(char *buf, const char *name) { snprintf(buf, PATH_CAP, "%s/%s", work_dir(), name); }

static int write_file(const char *path, const uint8_t *data, size_t size, int gzip) {
    if (gzip) {
        gzFile gz = gzopen(path, "wb1");
        if (!gz) return -1;
        int ok = size == 0 || gzwrite(gz, data, (unsigned)size) == (int)size;
        return gzclose(gz) == Z_OK && ok ? 0 : -1;
    }
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, size, f) == size;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static void export_traces(const char *xplane) {
    char out[PATH_CAP];
    jp_error err;
    jp_trace_options opt = jp_trace_options_default();
    opt.gzip_level = 0;
    in_dir(out, "trace.json");
    (void)jp_trace_export(xplane, out, &opt, NULL, &err);
    opt.format = JP_TRACE_PERFETTO;
    in_dir(out, "trace.pftrace");
    (void)jp_trace_export(xplane, out, &opt, NULL, &err);
}

static void render_all(const jp_analysis *a, FILE *sink) {
    char out[PATH_CAP];
    jp_error err;
    jp_view view = {0};
    for (int s = 0; s < JP_SECTION_COUNT; s++) {
        (void)jp_render(a, s, JP_FORMAT_TEXT, &view, sink, &err);
        (void)jp_render(a, s, JP_FORMAT_CSV, &view, sink, &err);
    }
    in_dir(out, "report.html");
    (void)jp_html_write(a, out, NULL, &err);
    in_dir(out, "flame.txt");
    (void)jp_flame_folded_write(a, out, NULL, &err);
    in_dir(out, "flame.pb.gz");
    (void)jp_flame_pprof_write(a, out, NULL, &err);
    jp_diff *d;
    if (jp_diff_new(&d, a, a, NULL, &err) != JP_OK) return;
    for (int f = JP_FORMAT_TEXT; f <= JP_FORMAT_CSV; f++) (void)jp_diff_render(d, f, &view, sink, &err);
    in_dir(out, "diff.html");
    (void)jp_html_diff_write(d, out, NULL, &err);
    jp_diff_free(d);
}

/* The input as run/h.xplane.pb.gz (compressed here) and run/t.trace.json.gz (as given: a fuzzed
 * gzip stream), extracted into out/ with --force (the previous input's outputs are there). */
static void extract(const uint8_t *data, size_t size) {
    char run[PATH_CAP], out[PATH_CAP], gz[PATH_CAP + 32];
    jp_error err;
    in_dir(run, "run");
    in_dir(out, "out");
    mkdir(run, 0700);
    snprintf(gz, sizeof gz, "%s/h.xplane.pb.gz", run);
    if (write_file(gz, data, size, 1) != 0) return;
    snprintf(gz, sizeof gz, "%s/t.trace.json.gz", run);
    if (write_file(gz, data, size, 0) != 0) return;
    jp_extract_options opt = {.force = 1};
    (void)jp_runs_extract(run, out, &opt, NULL, NULL, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w"))) return 0;
    if (!work_dir()[0]) return 0;
    extract(data, size);
    jp_profile *p;
    jp_error err;
    jp_load_options opt = {.op_spread = 1}; /* every analysis, the diff's spread too */
    if (jp_profile_parse(&p, data, size, "fuzz", &opt, &err) != JP_OK) return 0;
    render_all(jp_profile_analysis(p), sink);
    jp_profile_free(p);
    char xplane[PATH_CAP];
    in_dir(xplane, "h.xplane.pb");
    if (write_file(xplane, data, size, 0) == 0) export_traces(xplane);
    return 0;
}
