/* fuzz_viewer.c - fuzz target for whole requests to the built-in viewer: the bytes are a request
 * head, parsed as the server parses it (jp_http_parse_head), then routed (jp_viewer_route, the
 * crash isolation's choice of worker) and answered (jp_viewer_handle) over a fixed log directory of
 * two runs, copies of tests/data/cpu_small.xplane.pb.gz made in a temporary directory at the first
 * input. Every answer must be a status the API promises, JSON for every /api path, and a routed
 * request must name a worker key the viewer can word a failure for. */
#define _GNU_SOURCE /* mkdtemp */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve/http_parse.h"
#include "serve/http_response.h"

#ifndef FUZZ_VIEWER_FIXTURE
#error "meson passes the path of tests/data/cpu_small.xplane.pb.gz"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { KEY_CAP = 16448 };

/* The log directory, its runs and the viewer over them: made once, removed at exit. */
typedef struct fixture {
    char dir[64];             /* the temporary log directory */
    char files[2][160];       /* the two copies of the capture */
    char dirs[6][128];        /* every directory made, deepest first for removal */
    size_t n_dirs;
    jp_viewer *viewer;
} fixture;

static fixture fx;

static void remove_fixture(void) {
    jp_viewer_free(fx.viewer);
    for (size_t i = 0; i < 2; i++) unlink(fx.files[i]);
    for (size_t i = fx.n_dirs; i-- > 0;) rmdir(fx.dirs[i]);
}

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    char buf[4096];
    size_t n;
    int bad = !in || !out;
    while (!bad && (n = fread(buf, 1, sizeof buf, in)) > 0) bad = fwrite(buf, 1, n, out) != n;
    if (in) fclose(in);
    if (out && fclose(out) != 0) bad = 1;
    return bad ? -1 : 0;
}

static void make_dir(const char *path) {
    mkdir(path, 0700);
    snprintf(fx.dirs[fx.n_dirs++], sizeof fx.dirs[0], "%s", path);
}

/* LOG/a/r1/h.xplane.pb.gz and LOG/b/r2/h.xplane.pb.gz: run ids 612f7231 and 622f7232. */
static void setup(void) {
    snprintf(fx.dir, sizeof fx.dir, "/tmp/jaxprof-fuzz-viewer-XXXXXX");
    if (!mkdtemp(fx.dir)) abort();
    snprintf(fx.dirs[fx.n_dirs++], sizeof fx.dirs[0], "%s", fx.dir);
    const char *runs[2][2] = {{"a", "a/r1"}, {"b", "b/r2"}};
    for (size_t i = 0; i < 2; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", fx.dir, runs[i][0]);
        make_dir(path);
        snprintf(path, sizeof path, "%s/%s", fx.dir, runs[i][1]);
        make_dir(path);
        snprintf(fx.files[i], sizeof fx.files[i], "%s/h.xplane.pb.gz", path);
        if (copy_file(FUZZ_VIEWER_FIXTURE, fx.files[i]) != 0) abort();
    }
    atexit(remove_fixture);
    jp_error err;
    if (jp_viewer_new(&fx.viewer, fx.dir, &err) != JP_OK) abort();
}

/* Aborts when a routed request's key is not "run <hex>" or "diff <hex> <hex>". */
static void check_key(const char *key) {
    const char *p = strncmp(key, "run ", 4) == 0 ? key + 4 : strncmp(key, "diff ", 5) == 0 ? key + 5 : NULL;
    if (!p || !*p) __builtin_trap();
    int spaces = 0;
    for (; *p; p++) {
        if (*p == ' ') spaces++;
        else if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) __builtin_trap();
    }
    if (spaces != (key[0] == 'd')) __builtin_trap();
}

/* Aborts when an answer is not one the API promises: a status it uses, and for /api paths a JSON
 * body (an object or array, ending in a newline or a bracket). */
static void check_answer(const jp_http_request *req, const jp_http_response *resp) {
    int st = jp_http_response_status(resp);
    if (st != 200 && st != 400 && st != 404 && st != 500) __builtin_trap();
    if (strncmp(req->path, "/api", 4) != 0 || (req->path[4] != '/' && req->path[4] != '\0')) return;
    const char *body;
    size_t n = jp_http_response_body(resp, &body);
    if (strcmp(jp_http_response_type(resp), "application/json") != 0 || n < 2 || (body[0] != '{' && body[0] != '['))
        __builtin_trap();
    while (n > 0 && body[n - 1] == '\n') n--;
    if (n == 0 || (body[n - 1] != '}' && body[n - 1] != ']')) __builtin_trap();
}

static void answer_once(char *buf, size_t len) {
    static const jp_http_rules rules = {8791, NULL, 0, NULL};
    jp_http_header headers[JP_HTTP_MAX_HEADERS];
    jp_http_exchange ex;
    memset(&ex, 0, sizeof ex);
    jp_http_parse_head(&rules, headers, buf, len, &ex);
    if (ex.status != 0 || ex.req.method == JP_HTTP_OPTIONS) return;
    char *key = malloc(KEY_CAP);
    jp_http_response *resp = jp_http_response_new();
    if (!key || !resp) abort();
    int routed = jp_viewer_route(fx.viewer, &ex.req, key, KEY_CAP);
    if (routed != 0 && routed != 1) __builtin_trap();
    if (routed) check_key(key);
    if (jp_viewer_handle(fx.viewer, &ex.req, resp) < 0) __builtin_trap();
    check_answer(&ex.req, resp);
    if (routed) { /* what a failed worker's clients get */
        jp_viewer_respond_failed(fx.viewer, key, 500, "killed by signal 11 (Segmentation fault)", resp);
        const char *body;
        size_t n = jp_http_response_body(resp, &body);
        if (jp_http_response_status(resp) != 500 || n < 12 || memcmp(body, "{\"error\":\"", 10) != 0) __builtin_trap();
    }
    jp_http_response_free(resp);
    free(key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!fx.viewer) setup();
    char *buf = malloc(size ? size : 1); /* exactly the input: a read past it is an ASan report */
    if (!buf) return 0;
    memcpy(buf, data, size);
    size_t end = jp_http_head_end(buf, size);
    answer_once(buf, end ? end : size);
    free(buf);
    return 0;
}
