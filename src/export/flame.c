/* flame.c - the flame tree of device time by Python call stack (jp_analysis.flame) as folded
 * stacks (flamegraph.pl, speedscope) and as a gzip'd pprof profile (profile.proto: pprof -http,
 * speedscope). Both carry one sample per leaf with its self time in nanoseconds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/error.h"
#include "base/map.h"
#include "base/outfile.h"
#include "base/vec.h"
#include "jaxprof/jaxprof_results.h"
#include "export/pbwrite.h"

enum { /* perftools.profiles.Profile field numbers */
    PROF_SAMPLE_TYPE = 1, PROF_SAMPLE = 2, PROF_LOCATION = 4, PROF_FUNCTION = 5, PROF_STRINGS = 6,
    PROF_DURATION = 10, PROF_PERIOD_TYPE = 11, PROF_PERIOD = 12, PROF_DEFAULT_TYPE = 14,
    VT_TYPE = 1, VT_UNIT = 2,
    SAMPLE_LOCATION = 1, SAMPLE_VALUE = 2,
    LOC_ID = 1, LOC_LINE = 4, LINE_FUNCTION = 1, LINE_LINE = 2,
    FN_ID = 1, FN_NAME = 2, FN_SYSTEM_NAME = 3, FN_FILE = 4,
};

enum { MAX_FLAME_DEPTH = 256 }; /* frames of one folded line; the tree holds at most 64 + 3 */

/* A leaf's self time in whole nanoseconds: the same rounding in both formats, so their totals
 * agree to the nanosecond. */
static int64_t leaf_ns(const jp_flame_node *n) { return (n->self_ps + 500) / 1000; }

/* ---- folded stacks --------------------------------------------------------------------------- */

/* A frame name as one folded field: ';' separates frames and the last ' ' the count. */
static void put_folded_name(FILE *out, const char *s) {
    for (; *s; s++) fputc(*s == ';' ? ':' : *s == '\n' ? ' ' : *s, out);
}

int jp_flame_folded(const jp_analysis *a, FILE *out, jp_error *err) {
    jp_error_clear(err);
    const jp_flame_node *f = a->flame;
    uint32_t path[MAX_FLAME_DEPTH];
    for (size_t i = 0; i < a->n_flame; i++) {
        if (f[i].self_ps <= 0 || leaf_ns(&f[i]) == 0) continue;
        size_t depth = 0;
        for (uint32_t k = (uint32_t)i; k != UINT32_MAX && f[k].parent != UINT32_MAX && depth < MAX_FLAME_DEPTH;
             k = f[k].parent)
            path[depth++] = k;
        while (depth--) {
            put_folded_name(out, f[path[depth]].name);
            fputc(depth ? ';' : ' ', out);
        }
        fprintf(out, "%lld\n", (long long)leaf_ns(&f[i]));
    }
    if (fflush(out) != 0 || ferror(out)) return jp_error_set(err, JP_ERR_IO, 0, "write failed");
    return JP_OK;
}

/* ---- pprof ----------------------------------------------------------------------------------- */

/* The string table: index 0 is "" as profile.proto requires; every other string is written in
 * the order first used, each node's name and file at most once. */
typedef struct strings {
    jp_map index; /* interned pointer -> position */
    jp_vec list;  /* const char *, in position order */
} strings;

static int64_t string_id(strings *s, const char *str) {
    int found;
    uint32_t k = jp_map_get_or_put(&s->index, jp_ptr_key(str), 0, 0, (uint32_t)s->list.n, &found);
    if (k == UINT32_MAX) return -1;
    if (!found) {
        const char **slot = jp_vec_push(&s->list, sizeof *slot);
        if (!slot) return -1;
        *slot = str;
    }
    return k;
}

static void value_type(jp_pbw *b, uint32_t field, int64_t type, int64_t unit) {
    jp_pbw_open(b, field);
    jp_pbw_uint(b, VT_TYPE, (uint64_t)type);
    jp_pbw_uint(b, VT_UNIT, (uint64_t)unit);
    jp_pbw_close(b);
}

/* A location and a function per node (ids = node index + 1): a frame's function is its name with
 * the line, so pprof's views keep the lines apart. */
static int put_functions(jp_pbw *b, const jp_analysis *a, strings *s) {
    for (size_t i = 1; i < a->n_flame; i++) {
        const jp_flame_node *n = &a->flame[i];
        int64_t name = string_id(s, n->name), file = string_id(s, n->file);
        if (name < 0 || file < 0) return JP_ERR_NOMEM;
        jp_pbw_open(b, PROF_FUNCTION);
        jp_pbw_uint(b, FN_ID, i + 1);
        jp_pbw_uint(b, FN_NAME, (uint64_t)name);
        jp_pbw_uint(b, FN_SYSTEM_NAME, (uint64_t)name);
        jp_pbw_uint(b, FN_FILE, (uint64_t)file);
        jp_pbw_close(b);
        jp_pbw_open(b, PROF_LOCATION);
        jp_pbw_uint(b, LOC_ID, i + 1);
        jp_pbw_open(b, LOC_LINE);
        jp_pbw_uint(b, LINE_FUNCTION, i + 1);
        jp_pbw_uint(b, LINE_LINE, n->line);
        jp_pbw_close(b);
        jp_pbw_close(b);
    }
    return JP_OK;
}

/* One sample per leaf: its locations from the leaf up (pprof's order), its self time. */
static void put_samples(jp_pbw *b, const jp_analysis *a) {
    const jp_flame_node *f = a->flame;
    for (size_t i = 1; i < a->n_flame; i++) {
        if (f[i].self_ps <= 0) continue;
        jp_pbw_open(b, PROF_SAMPLE);
        for (uint32_t k = (uint32_t)i; k != UINT32_MAX && f[k].parent != UINT32_MAX; k = f[k].parent)
            jp_pbw_uint(b, SAMPLE_LOCATION, (uint64_t)k + 1);
        jp_pbw_uint(b, SAMPLE_VALUE, (uint64_t)leaf_ns(&f[i]));
        jp_pbw_close(b);
    }
}

static int encode_profile(const jp_analysis *a, jp_pbw *b) {
    strings s = {{0}, {0}};
    int64_t ids[4];
    const char *const names[4] = {"", "device_time", "nanoseconds", NULL};
    int rc = JP_OK;
    for (int i = 0; i < 3 && rc == JP_OK; i++) rc = (ids[i] = string_id(&s, names[i])) < 0 ? JP_ERR_NOMEM : JP_OK;
    if (rc == JP_OK) {
        value_type(b, PROF_SAMPLE_TYPE, ids[1], ids[2]);
        rc = put_functions(b, a, &s);
    }
    if (rc == JP_OK) {
        put_samples(b, a);
        for (size_t i = 0; i < s.list.n; i++) {
            const char *str = JP_VEC_AT(&s.list, const char *, i);
            jp_pbw_bytes(b, PROF_STRINGS, str, strlen(str));
        }
        jp_pbw_uint(b, PROF_DURATION, (uint64_t)(a->span_ps > 0 ? a->span_ps / 1000 : 0));
        value_type(b, PROF_PERIOD_TYPE, ids[1], ids[2]);
        jp_pbw_uint(b, PROF_PERIOD, 1);
        jp_pbw_uint(b, PROF_DEFAULT_TYPE, (uint64_t)ids[1]);
        if (b->failed) rc = JP_ERR_NOMEM;
    }
    jp_map_deinit(&s.index);
    jp_vec_free(&s.list);
    return rc;
}

/* Writes the gzip'd bytes through a temporary file renamed into place. */
static int write_gzip(const jp_pbw *b, const char *out_path, const jp_temp_hook *temp, jp_error *err) {
    jp_outfile of;
    int rc = jp_outfile_open(&of, out_path, temp, err);
    if (rc != JP_OK) return rc;
    int fd = jp_outfile_dup(&of);
    gzFile gz = fd >= 0 ? gzdopen(fd, "wb6") : NULL;
    if (!gz && fd >= 0) close(fd);
    int ok = gz && (b->n == 0 || gzwrite(gz, b->p, (unsigned)b->n) == (int)b->n);
    if (gz) ok = gzclose(gz) == Z_OK && ok;
    if (ok) return jp_outfile_commit(&of, err);
    jp_outfile_abort(&of);
    return jp_error_set(err, JP_ERR_IO, 0, "%s: cannot write", out_path);
}

int jp_flame_pprof_write(const jp_analysis *a, const char *out_path, const jp_temp_hook *temp, jp_error *err) {
    jp_error_clear(err);
    jp_pbw b = {0};
    int rc = a->path ? jp_profile_output_check(a->path, out_path, err) : JP_OK;
    if (rc != JP_OK) return rc;
    rc = encode_profile(a, &b);
    if (rc == JP_OK) rc = write_gzip(&b, out_path, temp, err);
    else jp_error_set(err, rc, 0, "out of memory encoding the pprof profile");
    free(b.p);
    return rc;
}

static int write_folded(const void *a, FILE *out, jp_error *err) { return jp_flame_folded(a, out, err); }

int jp_flame_folded_write(const jp_analysis *a, const char *out_path, const jp_temp_hook *temp, jp_error *err) {
    jp_error_clear(err);
    int rc = a->path ? jp_profile_output_check(a->path, out_path, err) : JP_OK;
    return rc == JP_OK ? jp_outfile_write(out_path, temp, write_folded, a, err) : rc;
}
