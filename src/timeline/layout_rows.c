/* layout_rows.c - jp_layout_walk: the rows of every plane in the order the trace exporter and the
 * viewer's timeline both lay them out, the derived Steps, XLA Modules and XLA Ops rows built here
 * once for both. */
#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "base/error.h"
#include "decode/xnames.h"
#include "timeline/layout.h"

/* Scratch of one walk. */
typedef struct walk {
    const jp_layout_walker *w; /* the caller's callbacks */
    const jp_analysis *a;      /* steps */
    jp_arena *arena;           /* step names */
    jp_error *err;             /* the caller's */
    jp_vec recs;               /* jp_layout_record, for the current derived row */
    jp_vec kernels, runs;      /* jp_layout_kernel: a GPU's kernels, and their merged runs */
} walk;

static int nomem(walk *k) { return jp_error_set(k->err, JP_ERR_NOMEM, 0, "out of memory"); }

static int derived_row(walk *k, jp_xspace *xs, const jp_plane *pl, uint32_t host, int kind, const char *name) {
    jp_layout_row r = {.xs = xs, .plane = pl, .host = host, .kind = kind, .name = {name, strlen(name)},
                       .recs = k->recs.data, .n_recs = k->recs.n};
    return k->w->row(k->w->ctx, &r);
}

/* One record per step of the analysis, named "step N": the host's own steps when there are several. */
static int steps_row(walk *k, jp_xspace *xs, const jp_plane *pl, uint32_t host) {
    const jp_analysis *a = k->a;
    const jp_step *steps = a->n_host_stats ? a->host_stats[host].steps : a->steps;
    size_t n = a->n_host_stats ? a->host_stats[host].n_steps : a->n_steps;
    k->recs.n = 0;
    for (size_t i = 0; i < n; i++) {
        jp_layout_record *r = jp_vec_push(&k->recs, sizeof *r);
        char name[32];
        int len = snprintf(name, sizeof name, "step %lld", (long long)steps[i].step_num);
        const char *copy = r ? jp_arena_strndup(k->arena, name, (size_t)len) : NULL;
        if (!copy) return nomem(k);
        *r = (jp_layout_record){.start_ps = steps[i].start_ps, .end_ps = steps[i].start_ps + steps[i].dur_ps,
                                .name = {copy, (size_t)len}, .step = &steps[i]};
    }
    return derived_row(k, xs, pl, host, JP_LAYOUT_ROW_STEPS, JP_XN_LINE_STEPS);
}

/* XLA Modules and XLA Ops rows of a GPU, from the kernels its streams ran, merged (layout.c). */
static int gpu_rows(walk *k, jp_xspace *xs, const jp_plane *pl, uint32_t host, int64_t shift_ps) {
    static const char *const names[2] = {JP_XN_LINE_XLA_MODULES, JP_XN_LINE_XLA_OPS};
    k->kernels.n = 0;
    int rc = jp_layout_gpu_kernels(xs, pl, shift_ps, &k->kernels, k->err);
    for (int by_op = 0; rc == JP_OK && k->kernels.n && by_op < 2; by_op++) {
        rc = jp_layout_merge_kernels(k->kernels.data, k->kernels.n, by_op, &k->runs, k->err);
        k->recs.n = 0;
        for (size_t i = 0; rc == JP_OK && i < k->runs.n; i++) {
            const jp_layout_kernel *run = &JP_VEC_AT(&k->runs, jp_layout_kernel, i);
            jp_layout_record *r = jp_vec_push(&k->recs, sizeof *r);
            if (!r) return nomem(k);
            *r = (jp_layout_record){.start_ps = run->start_ps, .end_ps = run->end_ps,
                                    .name = by_op ? run->op : run->module, .module = run->module,
                                    .run_id = run->run_id, .kernels = run->kernels};
        }
        if (rc == JP_OK)
            rc = derived_row(k, xs, pl, host, by_op ? JP_LAYOUT_ROW_XLA_OPS : JP_LAYOUT_ROW_XLA_MODULES, names[by_op]);
    }
    return rc;
}

/* A plane's rows: its Steps row (with_steps), its GPU rows, its lines. */
static int walk_plane(walk *k, jp_xspace *xs, const jp_plane *pl, uint32_t host, int64_t shift_ps, int with_steps) {
    int rc = k->w->plane ? k->w->plane(k->w->ctx, xs, pl, host) : JP_OK;
    if (rc == JP_OK && with_steps && k->a->n_steps && !jp_layout_plane_has_line(pl, JP_XN_LINE_STEPS))
        rc = steps_row(k, xs, pl, host);
    if (rc == JP_OK && jp_layout_plane_gets_gpu_rows(pl)) rc = gpu_rows(k, xs, pl, host, shift_ps);
    for (size_t l = 0; rc == JP_OK && l < pl->n_lines; l++) {
        const jp_line *ln = &pl->lines[l];
        jp_layout_row r = {.xs = xs, .plane = pl, .host = host, .kind = JP_LAYOUT_ROW_LINE,
                           .name = ln->display_name.len ? ln->display_name : ln->name, .line = ln};
        if (r.name.len == 0) r.name = (jp_str){"(unnamed line)", 14};
        rc = k->w->row(k->w->ctx, &r);
    }
    return rc;
}

/* 1 when any host has a device plane: the Steps rows then go to the devices, else to /host:CPU. */
static int any_device(jp_xspace *const *xs, size_t n) {
    for (size_t h = 0; h < n; h++) {
        size_t n_planes;
        const jp_plane *planes = jp_xspace_planes(xs[h], &n_planes);
        for (size_t p = 0; p < n_planes; p++)
            if (jp_layout_plane_rank(&planes[p]) == 0) return 1;
    }
    return 0;
}

int jp_layout_walk(jp_xspace *const *xs, size_t n, const int64_t *shift_ps, const jp_analysis *a, jp_arena *arena,
                   const jp_layout_walker *w, jp_error *err) {
    walk k = {.w = w, .a = a, .arena = arena, .err = err};
    int devices = any_device(xs, n), rc = JP_OK;
    for (size_t h = 0; rc == JP_OK && h < n; h++) {
        size_t n_planes;
        const jp_plane *planes = jp_xspace_planes(xs[h], &n_planes);
        for (int rank = 0; rank < 3; rank++)
            for (size_t p = 0; rc == JP_OK && p < n_planes; p++)
                if (jp_layout_plane_rank(&planes[p]) == rank)
                    rc = walk_plane(&k, xs[h], &planes[p], (uint32_t)h, shift_ps[h], devices ? rank == 0 : rank == 1);
    }
    jp_vec_free(&k.recs), jp_vec_free(&k.kernels), jp_vec_free(&k.runs);
    return rc;
}
