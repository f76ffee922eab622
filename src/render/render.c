/* render.c - the sections (report, ops, steps, ...) as tables, and jp_render over text, CSV and
 * JSON. The JSON schema is the tables' column keys; docs/design.md documents it. */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "render/memory_render.h"
#include "render/safe_text.h"
#include "render/table.h"

/* One spelling for every output, JAX's own (jax.devices()[0].platform); JSON consumers compare it. */
static const char *const PLATFORMS[] = {[JP_PLATFORM_CPU] = "cpu", [JP_PLATFORM_GPU] = "gpu", [JP_PLATFORM_TPU] = "tpu"};
_Static_assert(sizeof PLATFORMS / sizeof PLATFORMS[0] == JP_PLATFORM_TPU + 1, "a name per jp_platform");

const char *jp_platform_name(int platform) {
    return platform >= 0 && (size_t)platform < sizeof PLATFORMS / sizeof PLATFORMS[0] ? PLATFORMS[platform] : "?";
}

static void set_str(cell *c, const char *s) { c->type = CELL_STR, c->s = s ? s : ""; }
static void set_int(cell *c, int64_t i) { c->type = CELL_INT, c->i = i; }
static void set_time(cell *c, int64_t ps) { c->type = CELL_TIME, c->i = ps; }
static void set_pct(cell *c, double d) { c->type = CELL_PCT, c->d = d; }
static void set_num(cell *c, double d) { c->type = CELL_NUM, c->d = d; }
static void set_bool(cell *c, int b) { c->type = CELL_BOOL, c->i = b; }
static void set_none(cell *c) { c->type = CELL_NONE; }

/* The report's ops table keeps kernels that no XLA op launched apart from the HLO ops. */
static int is_xla_op(const void *row) { return !((const jp_op_stat *)row)->no_xla_op; }
static int is_no_xla_op(const void *row) { return ((const jp_op_stat *)row)->no_xla_op; }

/* ---- ops ---------------------------------------------------------------------------------------- */

static const column OP_COLS[] = {
    {"name", "op", 0}, {"category", "category", 16}, {"count", "count", 6}, {"total_ms", "total", 9},
    {"self_ms", "self", 9}, {"avg_ms", "avg", 9}, {"min_ms", NULL, 0}, {"max_ms", NULL, 0},
    {"pct_time", "%time", 6}, {"gflops_per_s", NULL, 0}, {"gbytes_per_s", NULL, 0}, {"flops", NULL, 0},
    {"bytes", NULL, 0}, {"module", NULL, 0}, {"device", NULL, 0}, {"scope", NULL, 0},
    {"op_name", NULL, 0}, {"source", NULL, 0}, {"devices", "devs", 4}, {"function", NULL, 0},
    {"stack", NULL, 0}, {"hlo_flops", NULL, 0}, {"transcendentals", NULL, 0}, {"intensity", NULL, 0},
    {"bound_by", NULL, 0}, {"roof_pct", NULL, 0}, {"xla_flops", NULL, 0}, {"program_id", NULL, 0},
    {"xla_op", NULL, 0}, {"above_peak", NULL, 0},
};

static const char *const BOUND[] = {"", "compute", "memory"};

static void op_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const jp_op_stat *o = row;
    double secs = (double)o->total_ps / 1e12;
    switch (col) {
    case 0:
        set_str(c, o->name);
        if (o->program_id >= 0) c->type = CELL_PROGRAM_STR, c->i = o->program_id; /* text tells programs apart */
        break;
    case 1: set_str(c, o->category); break;
    case 2: set_int(c, (int64_t)o->count); break;
    case 3: set_time(c, o->total_ps); break;
    case 4: set_time(c, o->self_ps); break;
    case 5: set_time(c, o->count ? o->total_ps / (int64_t)o->count : 0); break;
    case 6: set_time(c, o->min_ps); break;
    case 7: set_time(c, o->max_ps); break;
    case 8: set_pct(c, a->op_self_ps ? 100.0 * (double)o->self_ps / (double)a->op_self_ps : 0); break;
    case 9: o->no_rate ? set_none(c) : set_num(c, secs > 0 ? o->flops / secs / 1e9 : 0); break;
    case 10: o->no_rate ? set_none(c) : set_num(c, secs > 0 ? o->bytes / secs / 1e9 : 0); break;
    case 11: set_num(c, o->flops); break;
    case 12: set_num(c, o->bytes); break;
    case 13: set_str(c, o->module); break;
    case 14: set_str(c, o->n_devices == 1 ? a->devices[o->device].name : ""); break; /* "": several */
    case 15: set_str(c, o->scope); break;
    case 16: set_str(c, o->op_name); break;
    case 17: set_str(c, o->source); break;
    case 18: set_int(c, o->n_devices); break;
    case 19: set_str(c, o->function); break;
    case 20: *c = (cell){.type = CELL_FRAMES, .frames = o->stack, .n_frames = o->n_stack}; break;
    case 21: set_num(c, o->hlo_flops); break;
    case 22: set_num(c, o->transcendentals); break;
    case 23: set_num(c, o->bytes > 0 ? o->flops / o->bytes : 0); break;
    case 24: set_str(c, BOUND[o->bound]); break;
    case 25: set_num(c, o->roof_pct); break;
    case 26: set_num(c, o->xla_flops); break;
    case 27: o->program_id >= 0 ? set_int(c, o->program_id) : set_none(c); break;
    case 28: set_bool(c, !o->no_xla_op); break;
    default: set_bool(c, o->bound != JP_BOUND_UNKNOWN && o->roof_pct > 100); break;
    }
}

/* ---- source lines and the flame tree ------------------------------------------------------------ */

static const column LINE_COLS[] = {
    {"source", "line", 0}, {"function", "function", 16}, {"self_ms", "self", 9}, {"pct_device", "%dev", 6},
    {"count", "count", 6}, {"n_ops", "ops", 4}, {"ops", "top ops", 20}, {"file", NULL, 0}, {"line", NULL, 0},
    {"flops", NULL, 0}, {"split_ms", NULL, 0},
};

/* Text shows a path relative to the files' common directory; JSON and CSV the whole path. */
static const char *short_path(const jp_analysis *a, const char *path) {
    size_t n = strlen(a->source_prefix);
    return n && strncmp(path, a->source_prefix, n) == 0 ? path + n : path;
}

static void line_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const jp_line_stat *l = row;
    switch (col) {
    case 0: set_str(c, short_path(a, l->source)); break;
    case 1: set_str(c, l->function); break;
    case 2: set_time(c, l->self_ps); break;
    case 3: set_pct(c, a->op_self_ps ? 100.0 * (double)l->self_ps / (double)a->op_self_ps : 0); break;
    case 4: set_int(c, (int64_t)l->count); break;
    case 5: set_int(c, l->n_ops); break;
    case 6: set_str(c, l->ops); break;
    case 7: set_str(c, l->file); break;
    case 8: set_int(c, l->line); break;
    case 9: set_num(c, l->flops); break;
    default: set_time(c, l->split_ps); break;
    }
}

static const column FLAME_COLS[] = {
    {"name", "stack", 0}, {"kind", "kind", 8}, {"total_ms", "total", 9}, {"self_ms", "self", 9},
    {"pct", "%", 6}, {"depth", "depth", 5}, {"parent", NULL, 0}, {"file", NULL, 0}, {"line", NULL, 0},
    {"split_ms", NULL, 0},
};
static const char *const FLAME_KIND[] = {"root", "frame", "library", "op", "none"};

static void flame_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const jp_flame_node *f = row;
    switch (col) {
    case 0: set_str(c, f->name); break;
    case 1: set_str(c, FLAME_KIND[f->kind]); break;
    case 2: set_time(c, f->total_ps); break;
    case 3: set_time(c, f->self_ps); break;
    case 4: set_pct(c, a->n_flame && a->flame[0].total_ps ? 100.0 * (double)f->total_ps / (double)a->flame[0].total_ps : 0); break;
    case 5: set_int(c, f->depth); break;
    case 6: set_int(c, f->parent == UINT32_MAX ? -1 : (int64_t)f->parent); break;
    case 7: set_str(c, f->file); break;
    case 8: set_int(c, f->line); break;
    default: set_time(c, f->split_ps); break;
    }
}

/* What split_ms means, said where it is shown: JSON's "split_note", text's closing line. */
static const char SPLIT_NOTE[] = "a fusion made by several source lines has its time split over them by the "
                                 "modelled cost (FLOPs, else bytes) of their fused instructions: an estimate";

/* The time split that way: on the lines, or under the flame tree's root. */
static int64_t split_total(const jp_analysis *a, int section) {
    int64_t ps = 0;
    if (section == JP_SECTION_FLAME) return a->n_flame ? a->flame[0].split_ps : 0;
    for (size_t i = 0; i < a->n_lines; i++) ps += a->lines[i].split_ps;
    return ps;
}

/* ---- steps -------------------------------------------------------------------------------------- */

static const column STEP_COLS[] = {
    {"step", "step", 7}, {"start_ms", NULL, 0}, {"duration_ms", "time", 9}, {"compute_ms", "compute", 9},
    {"collective_ms", "collect", 9}, {"h2d_ms", "h2d", 9}, {"d2h_ms", "d2h", 9}, {"d2d_ms", NULL, 0},
    {"compile_ms", "compile", 9}, {"host_ms", "host", 9}, {"idle_ms", "idle", 9}, {"ops", "ops", 6},
    {"compiles", NULL, 0}, {"outlier", "outlier", 0}, {"flops", NULL, 0}, {"gflops_per_s", NULL, 0},
    {"no_device_work", "no device work", 0}, {"gap_ms", "gap", 9}, {"issued_start_ms", NULL, 0},
    {"issued_ms", NULL, 0},
};

static void step_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const jp_step *s = row;
    (void)a;
    if (col >= 3 && col < 3 + JP_PART_COUNT) {
        set_time(c, s->part_ps[col - 3]);
        return;
    }
    switch (col) {
    case 0: set_int(c, s->step_num); break;
    case 1: set_time(c, s->start_ps); break;
    case 2: set_time(c, s->dur_ps); break;
    case 3 + JP_PART_COUNT: set_int(c, (int64_t)s->n_ops); break;
    case 4 + JP_PART_COUNT: set_int(c, s->n_compiles); break;
    case 5 + JP_PART_COUNT: set_bool(c, s->outlier); break;
    case 6 + JP_PART_COUNT: set_num(c, s->flops); break;
    case 7 + JP_PART_COUNT: set_num(c, s->dur_ps > 0 ? s->flops / ((double)s->dur_ps / 1e12) / 1e9 : 0); break; /* achieved */
    case 8 + JP_PART_COUNT: set_bool(c, s->no_device_work); break;
    case 9 + JP_PART_COUNT: set_time(c, s->gap_ps); break;
    case 10 + JP_PART_COUNT: set_time(c, s->host_start_ps); break;
    default: set_time(c, s->host_dur_ps); break;
    }
}

/* ---- scopes ------------------------------------------------------------------------------------- */

static const column SCOPE_COLS[] = {
    {"scope", "scope", 0}, {"kind", "kind", 7}, {"user", NULL, 0}, {"depth", NULL, 0}, {"count", "count", 6},
    {"total_ms", "total", 9}, {"self_ms", "self", 9}, {"pct", "%", 6}, {"wall_ms", NULL, 0},
};

static int64_t kind_total(const jp_analysis *a, int kind) {
    return kind == JP_SCOPE_DEVICE ? a->op_self_ps : a->span_ps;
}

static void scope_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const jp_scope_stat *s = row;
    int64_t base = kind_total(a, s->kind);
    switch (col) {
    case 0: set_str(c, s->path); break;
    case 1: set_str(c, s->kind == JP_SCOPE_DEVICE ? "device" : s->user ? "host" : "runtime"); break;
    case 2: set_bool(c, s->user); break;
    case 3: set_int(c, s->depth); break;
    case 4: set_int(c, (int64_t)s->count); break;
    case 5: set_time(c, s->total_ps); break;
    case 6: set_time(c, s->self_ps); break;
    case 7: set_pct(c, base ? 100.0 * (double)s->wall_ps / (double)base : 0); break; /* host: wall, never > 100 */
    default: set_time(c, s->wall_ps); break;
    }
}

/* ---- kernels, memory, transfers, compiles ------------------------------------------------------- */

static const column KERNEL_COLS[] = {
    {"name", "kernel", 0}, {"count", "count", 6}, {"total_ms", "total", 9}, {"avg_ms", "avg", 9},
    {"min_ms", NULL, 0}, {"max_ms", NULL, 0}, {"registers", "regs", 5}, {"static_shared", NULL, 0},
    {"dynamic_shared", NULL, 0}, {"grid", "grid", 11}, {"block", "block", 11}, {"occupancy_pct", "occ%", 5},
    {"op", NULL, 0},
};

static void set_dims(cell *c, const uint32_t d[3]) {
    *c = (cell){.type = CELL_STR};
    snprintf(c->buf, sizeof c->buf, "%u,%u,%u", d[0], d[1], d[2]);
    c->s = c->buf;
}

static void kernel_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const jp_kernel_stat *k = row;
    (void)a;
    switch (col) {
    case 0: set_str(c, k->name); break;
    case 1: set_int(c, (int64_t)k->count); break;
    case 2: set_time(c, k->total_ps); break;
    case 3: set_time(c, k->count ? k->total_ps / (int64_t)k->count : 0); break;
    case 4: set_time(c, k->min_ps); break;
    case 5: set_time(c, k->max_ps); break;
    case 6: set_int(c, k->registers); break;
    case 7: set_int(c, k->static_shared); break;
    case 8: set_int(c, k->dynamic_shared); break;
    case 9: set_dims(c, k->grid); break;
    case 10: set_dims(c, k->block); break;
    case 11: set_num(c, k->occupancy); break;
    default: set_str(c, k->op); break;
    }
}

static const column MEMORY_COLS[] = {
    {"allocator", "allocator", 0}, {"peak_bytes", "peak bytes", 14}, {"peak_at_ms", "peak at", 9},
    {"events", "events", 8}, {"allocator_peak_bytes", "allocator peak", 16},
};

static void memory_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const jp_memory_stat *m = row;
    (void)a;
    switch (col) {
    case 0: set_str(c, m->allocator); break;
    case 1: set_int(c, m->peak_bytes); break;
    case 2: set_time(c, m->peak_t_ps); break;
    case 3: set_int(c, (int64_t)m->n_events); break;
    default: set_int(c, m->lifetime_peak_bytes); break;
    }
}

static const column TRANSFER_COLS[] = {
    {"kind", "kind", 0}, {"count", "count", 7}, {"bytes", "bytes", 14}, {"total_ms", "total", 9},
    {"max_ms", "longest", 9}, {"gbytes_per_s", "GB/s", 8},
};

static void transfer_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const jp_transfer_stat *t = row;
    (void)a;
    switch (col) {
    case 0: set_str(c, t->kind); break;
    case 1: set_int(c, (int64_t)t->count); break;
    case 2: set_int(c, (int64_t)t->bytes); break;
    case 3: set_time(c, t->total_ps); break;
    case 4: set_time(c, t->max_ps); break;
    default: set_num(c, t->total_ps ? (double)t->bytes / ((double)t->total_ps / 1e12) / 1e9 : 0); break;
    }
}

static const column COMPILE_COLS[] = {
    {"module", "module", 0}, {"name", NULL, 0}, {"start_ms", "start", 9}, {"duration_ms", "time", 9},
    {"step", "step", 7}, {"steady_state", "steady", 6},
};

static void compile_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const jp_compile *k = row;
    (void)a;
    switch (col) {
    case 0: set_str(c, *k->module ? k->module : "?"); break;
    case 1: set_str(c, k->name); break;
    case 2: set_time(c, k->start_ps); break;
    case 3: set_time(c, k->dur_ps); break;
    case 4: set_int(c, k->step_num); break;
    default: set_bool(c, k->steady); break;
    }
}

static const column FINDING_COLS[] = {
    {"severity", "severity", 8}, {"id", "id", 16}, {"title", "title", 0}, {"evidence", NULL, 0}, {"fix", NULL, 0},
};

static void finding_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const jp_finding *f = row;
    (void)a;
    const char *v[] = {jp_rating_name(f->severity), f->id, f->title, f->evidence, f->fix};
    set_str(c, v[col]);
}

static const column KPI_COLS[] = {{"name", "kpi", 0}, {"value", "value", 10}, {"unit", "unit", 4}, {"rating", "rating", 8}};

static void kpi_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const jp_kpi *k = row;
    (void)a;
    if (col == 0) set_str(c, k->name);
    else if (col == 1) set_num(c, k->value);
    else if (col == 2) set_str(c, k->unit);
    else set_str(c, jp_rating_name(k->rating));
}

static const column DEVICE_COLS[] = {
    {"name", "device", 0}, {"host", "host", 12}, {"platform", "platform", 8}, {"busy_ms", "busy", 9},
    {"ops", "ops", 8}, {"first_ms", NULL, 0}, {"last_ms", NULL, 0}, {"idle_pct", "idle%", 6},
    {"peak_tflops", NULL, 0}, {"peak_gbps", NULL, 0}, {"peak_source", NULL, 0},
};

static void device_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const jp_device *d = row;
    (void)a;
    switch (col) {
    case 0: set_str(c, d->name); break;
    case 1: set_str(c, d->host); break;
    case 2: set_str(c, jp_platform_name(d->platform)); break;
    case 3: set_time(c, d->busy_ps); break;
    case 4: set_int(c, (int64_t)d->n_ops); break;
    case 5: set_time(c, d->first_ps); break;
    case 6: set_time(c, d->last_ps); break;
    case 8: set_num(c, d->peak_flops / 1e12); break;
    case 9: set_num(c, d->peak_bw / 1e9); break;
    case 10: set_str(c, d->peak_source); break;
    default: /* of its own first-to-last window */
        set_pct(c, d->last_ps > d->first_ps ? 100.0 * (double)(d->last_ps - d->first_ps - d->busy_ps) /
                                                  (double)(d->last_ps - d->first_ps) : 0);
        break;
    }
}

/* ---- hosts (multi-host profiles) ---------------------------------------------------------------- */

static const column HOST_COLS[] = {
    {"host", "host", 0}, {"clock", "clock", 15}, {"offset_ms", "offset", 9}, {"sync_steps", NULL, 0},
    {"sync_spread_ms", "spread", 8}, {"steps", "steps", 5}, {"mean_step_ms", "mean step", 9},
    {"median_step_ms", NULL, 0}, {"compute_ms", NULL, 0}, {"collective_ms", "collect", 9},
    {"wait_ms", "waiting", 9}, {"idle_ms", "idle", 9}, {"straggler_steps", "straggler", 9},
    {"top_op", NULL, 0}, {"top_op_pct", NULL, 0},
};

static void host_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const jp_host_stat *h = row;
    const jp_op_stat *top = NULL; /* by self time, as the ops table */
    (void)a;
    for (size_t i = 0; i < h->n_ops; i++)
        if (!top || h->ops[i].self_ps > top->self_ps) top = &h->ops[i];
    switch (col) {
    case 0: set_str(c, h->name); break;
    case 1: set_str(c, h->clock); break;
    case 2: set_time(c, h->offset_ps); break;
    case 3: set_int(c, h->n_sync); break;
    case 4: set_time(c, h->sync_spread_ps); break;
    case 5: set_int(c, (int64_t)h->n_steps); break;
    case 6: set_time(c, (int64_t)h->step_summary.mean_ps); break;
    case 7: set_time(c, (int64_t)h->step_summary.median_ps); break;
    case 8: set_time(c, h->step_summary.part_ps[JP_PART_COMPUTE]); break;
    case 9: set_time(c, h->collective_ps); break;
    case 10: set_time(c, h->wait_ps); break;
    case 11: set_time(c, h->step_summary.part_ps[JP_PART_IDLE]); break;
    case 12: set_int(c, h->n_straggling); break;
    case 13: set_str(c, top ? top->name : ""); break;
    default: set_pct(c, top && h->op_self_ps ? 100.0 * (double)top->self_ps / (double)h->op_self_ps : 0); break;
    }
}

/* One host's step, a row of the long (step, host) table. */
typedef struct host_step_row {
    const jp_step *step;
    uint32_t host;
    const jp_straggler *lag; /* the step's straggler when it is this host */
} host_step_row;

static const column HOST_STEP_COLS[] = {
    {"step", "step", 7}, {"host", "host", 0}, {"start_ms", NULL, 0}, {"duration_ms", "time", 9},
    {"compute_ms", "compute", 9}, {"collective_ms", "collect", 9}, {"host_ms", "host", 9}, {"idle_ms", "idle", 9},
    {"straggler", "straggler", 9}, {"behind_ms", "behind", 9},
};

static void host_step_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const host_step_row *r = row;
    static const int parts[] = {JP_PART_COMPUTE, JP_PART_COLLECTIVE, JP_PART_HOST, JP_PART_IDLE};
    switch (col) {
    case 0: set_int(c, r->step->step_num); break;
    case 1: set_str(c, a->host_stats[r->host].name); break;
    case 2: set_time(c, r->step->start_ps); break;
    case 3: set_time(c, r->step->dur_ps); break;
    case 4: case 5: case 6: case 7: set_time(c, r->step->part_ps[parts[col - 4]]); break;
    case 8: set_bool(c, r->lag != NULL); break;
    default: set_time(c, r->lag ? r->lag->behind_ps : 0); break;
    }
}

/* The straggler of step num when it is host h, or NULL. */
static const jp_straggler *lag_of(const jp_analysis *a, size_t h, int64_t num) {
    const jp_straggler *lag = jp_analysis_straggler(a, num);
    return lag && lag->host == h ? lag : NULL;
}

/* The analysis as host h alone sees its ops: the ops table's percentages are of its op time. */
static jp_analysis host_ops_view(const jp_analysis *a, size_t h) {
    jp_analysis alone = *a;
    alone.ops = a->host_stats[h].ops;
    alone.n_ops = a->host_stats[h].n_ops;
    alone.op_self_ps = a->host_stats[h].op_self_ps;
    return alone;
}

static int cmp_host_step_row(const void *x, const void *y) {
    const host_step_row *a = x, *b = y;
    if (a->step->step_num != b->step->step_num) return a->step->step_num < b->step->step_num ? -1 : 1;
    return (a->host > b->host) - (a->host < b->host);
}

/* Every host's steps, by step number then host; *rows is malloc'd (NULL with n 0 is fine). */
static int host_step_rows(const jp_analysis *a, host_step_row **rows, size_t *n) {
    size_t total = 0;
    for (size_t h = 0; h < a->n_host_stats; h++) total += a->host_stats[h].n_steps;
    *n = 0;
    *rows = malloc((total ? total : 1) * sizeof **rows);
    if (!*rows) return JP_ERR_NOMEM;
    for (size_t h = 0; h < a->n_host_stats; h++)
        for (size_t i = 0; i < a->host_stats[h].n_steps; i++) {
            const jp_step *st = &a->host_stats[h].steps[i];
            (*rows)[(*n)++] = (host_step_row){st, (uint32_t)h, lag_of(a, h, st->step_num)};
        }
    qsort(*rows, *n, sizeof **rows, cmp_host_step_row);
    return JP_OK;
}

#define TABLE(NAME, COLS, ROWS, TYPE, N, SORT, FN) \
    ((table){.name = NAME, .cols = COLS, .n_cols = sizeof COLS / sizeof COLS[0], .rows = ROWS, .row_size = sizeof(TYPE), \
             .n_rows = N, .default_sort = SORT, .cell = FN})

static table section_table(const jp_analysis *a, int section) {
    switch (section) {
    case JP_SECTION_OPS: return TABLE("ops", OP_COLS, a->ops, jp_op_stat, a->n_ops, "self_ms", op_cell);
    case JP_SECTION_STEPS: return TABLE("steps", STEP_COLS, a->steps, jp_step, a->n_steps, NULL, step_cell);
    case JP_SECTION_SCOPES: return TABLE("scopes", SCOPE_COLS, a->scopes, jp_scope_stat, a->n_scopes, NULL, scope_cell);
    case JP_SECTION_KERNELS: return TABLE("kernels", KERNEL_COLS, a->kernels, jp_kernel_stat, a->n_kernels, NULL, kernel_cell);
    case JP_SECTION_MEMORY: return TABLE("memory", MEMORY_COLS, a->memory, jp_memory_stat, a->n_memory, NULL, memory_cell);
    case JP_SECTION_TRANSFERS: return TABLE("transfers", TRANSFER_COLS, a->transfers, jp_transfer_stat, JP_XFER_COUNT, NULL, transfer_cell);
    case JP_SECTION_COMPILES: return TABLE("compiles", COMPILE_COLS, a->compiles, jp_compile, a->n_compiles, NULL, compile_cell);
    case JP_SECTION_HOSTS: return TABLE("host_stats", HOST_COLS, a->host_stats, jp_host_stat, a->n_host_stats, NULL, host_cell);
    case JP_SECTION_LINES: return TABLE("lines", LINE_COLS, a->lines, jp_line_stat, a->n_lines, NULL, line_cell);
    case JP_SECTION_FLAME: return TABLE("flame", FLAME_COLS, a->flame, jp_flame_node, a->n_flame, NULL, flame_cell);
    default: return TABLE("findings", FINDING_COLS, a->findings, jp_finding, a->n_findings, NULL, finding_cell);
    }
}

static table host_step_table(const host_step_row *rows, size_t n) {
    return TABLE("host_steps", HOST_STEP_COLS, rows, host_step_row, n, NULL, host_step_cell);
}

static table kpi_table(const jp_analysis *a) { return TABLE("kpis", KPI_COLS, a->kpis, jp_kpi, a->n_kpis, NULL, kpi_cell); }
static table device_table(const jp_analysis *a) {
    return TABLE("devices", DEVICE_COLS, a->devices, jp_device, a->n_devices, NULL, device_cell);
}

/* ---- JSON documents ----------------------------------------------------------------------------- */

static int json_table(const jp_analysis *a, table *t, const jp_view *v, FILE *out, jp_error *err) {
    size_t *order, n;
    int rc = jp_table_select(a, t, v, &order, &n, err);
    if (rc) return rc;
    fputc(',', out);
    jp_table_json(a, t, order, n, out);
    free(order);
    return JP_OK;
}

static void json_step_summary(const jp_analysis *a, FILE *out) {
    const jp_step_summary *s = &a->step_summary;
    fprintf(out, ",\"step_summary\":{\"method\":");
    jp_json_fput_cstr(out, s->method);
    fprintf(out, ",\"flops_per_step\":%.12g,\"mfu_pct\":", a->step_flops);
    if (a->mfu_pct >= 0) fprintf(out, "%.6g", a->mfu_pct);
    else fputs("null", out);
    fprintf(out, ",\"count\":%zu,\"mean_ms\":%.6f,\"median_ms\":%.6f,\"p90_ms\":%.6f,\"std_ms\":%.6f,"
                 "\"min_ms\":%.6f,\"max_ms\":%.6f,\"total_ms\":%.6f,\"breakdown_ms\":{",
            a->n_steps, s->mean_ps / 1e9, s->median_ps / 1e9, s->p90_ps / 1e9, s->std_ps / 1e9, s->min_ps / 1e9,
            s->max_ps / 1e9, (double)s->total_ps / 1e9);
    for (int p = 0; p < JP_PART_COUNT; p++)
        fprintf(out, "%s\"%s\":%.6f", p ? "," : "", jp_part_name(p), (double)s->part_ps[p] / 1e9);
    /* steps with no device work are counted in "count" and left out of the numbers above */
    fprintf(out, "},\"no_device_work_steps\":%zu,\"gap_ms\":%.6f}", s->n_no_device, (double)s->gap_ps / 1e9);
}

/* ,"split_ms":..,"split_note":"..": how much of the lines' (or the flame tree's) time is an
 * estimate, and why. */
static void json_split_note(const jp_analysis *a, int section, FILE *out) {
    fprintf(out, ",\"split_ms\":%.6f,\"split_note\":", (double)split_total(a, section) / 1e9);
    jp_json_fput_cstr(out, SPLIT_NOTE);
}

static void json_header(const jp_analysis *a, int section, FILE *out) {
    fprintf(out, "{\"schema_version\":%d,\"jaxprof_version\":\"%s\",\"section\":\"%s\",\"path\":",
            JP_JSON_SCHEMA_VERSION, JP_VERSION, jp_section_name(section));
    jp_json_fput_cstr(out, a->path);
    fprintf(out, ",\"platform\":\"%s\",\"hosts\":[", jp_platform_name(a->platform));
    for (size_t i = 0; i < a->n_hosts; i++) {
        if (i) fputc(',', out);
        jp_json_fput_cstr(out, a->hosts[i]);
    }
    fprintf(out, "],\"events\":%llu,\"span_ms\":%.6f,\"device_busy_ms\":%.6f,\"device_idle_pct\":%.4f",
            (unsigned long long)a->n_events, (double)a->span_ps / 1e9, (double)a->op_busy_ps / 1e9,
            a->device_idle_pct);
}

static void json_memory_samples(const jp_analysis *a, FILE *out) {
    fputs(",\"memory_timeline\":{", out);
    for (size_t i = 0; i < a->n_memory; i++) {
        const jp_memory_stat *m = &a->memory[i];
        if (i) fputc(',', out);
        jp_json_fput_cstr(out, m->allocator);
        fputs(":[", out);
        for (size_t k = 0; k < m->n_samples; k++)
            fprintf(out, "%s[%.6f,%lld]", k ? "," : "", (double)m->samples[k].t_ps / 1e9,
                    (long long)m->samples[k].bytes_in_use);
        fputc(']', out);
    }
    fputc('}', out);
}

/* ,"clock_method", "host_stats", "host_steps", "stragglers", "host_ops": empty for one host. */
static int json_hosts(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err) {
    fputs(",\"clock_method\":", out);
    jp_json_fput_cstr(out, a->clock_method); /* NULL: "" */
    table hosts = section_table(a, JP_SECTION_HOSTS);
    host_step_row *rows;
    size_t n;
    int rc = json_table(a, &hosts, NULL, out, err);
    if (!rc && host_step_rows(a, &rows, &n)) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    if (rc) return rc;
    table steps = host_step_table(rows, n);
    rc = json_table(a, &steps, NULL, out, err);
    free(rows);
    fputs(",\"stragglers\":[", out);
    for (size_t i = 0; i < a->n_stragglers; i++) {
        const jp_straggler *g = &a->stragglers[i];
        fprintf(out, "%s{\"step\":%lld,\"host\":", i ? "," : "", (long long)g->step_num);
        jp_json_fput_cstr(out, a->host_stats[g->host].name);
        fprintf(out, ",\"behind_ms\":%.6f,\"step_ms\":%.6f}", (double)g->behind_ps / 1e9, (double)g->step_ps / 1e9);
    }
    fputs("],\"host_ops\":{", out);
    for (size_t h = 0; !rc && h < a->n_host_stats; h++) {
        const jp_host_stat *hs = &a->host_stats[h];
        jp_analysis alone = host_ops_view(a, h);
        table ops = section_table(&alone, JP_SECTION_OPS);
        size_t *order;
        if ((rc = jp_table_select(&alone, &ops, v, &order, &n, err))) break;
        if (h) fputc(',', out);
        jp_json_fput_cstr(out, hs->name);
        fputc(':', out);
        jp_table_json_rows(&alone, &ops, order, n, out);
        free(order);
    }
    fputc('}', out);
    return rc;
}

static int render_json(const jp_analysis *a, int section, const jp_view *v, FILE *out, jp_error *err) {
    json_header(a, section, out);
    table devices = device_table(a), kpis = kpi_table(a);
    int rc = json_table(a, &devices, NULL, out, err);
    if (section == JP_SECTION_REPORT) {
        json_step_summary(a, out);
        if (!rc) rc = json_table(a, &kpis, NULL, out, err);
        for (int s = 0; s < JP_SECTION_COUNT; s++) { /* the report's tables, in registry order */
            unsigned flags = jp_section_get(s)->flags;
            if (!(flags & JP_SECTION_IN_REPORT)) continue;
            table t = section_table(a, s);
            if (!rc) rc = json_table(a, &t, flags & JP_SECTION_REPORT_ALL ? NULL : v, out, err);
            if (flags & JP_SECTION_SPLIT_NOTE) json_split_note(a, s, out);
        }
        json_memory_samples(a, out);
        jp_view modules = {.top = v ? v->top : 0}; /* each module's top buffers; --sort is for the ops */
        if (!rc) rc = jp_memory_json(a, &modules, out, err);
        if (!rc) rc = json_hosts(a, v, out, err);
        fputs(",\"warnings\":[", out);
        for (size_t i = 0; i < a->n_warnings; i++) {
            if (i) fputc(',', out);
            jp_json_fput_cstr(out, a->warnings[i]);
        }
        fputc(']', out);
    } else if (section == JP_SECTION_HOSTS) {
        if (!rc) rc = json_hosts(a, v, out, err);
    } else {
        table t = section_table(a, section);
        if (section == JP_SECTION_STEPS) json_step_summary(a, out);
        if (section == JP_SECTION_FINDINGS && !rc) rc = json_table(a, &kpis, NULL, out, err);
        int memory = section == JP_SECTION_MEMORY; /* the view is for its buffers; all allocators */
        if (!rc) rc = json_table(a, &t, memory ? NULL : v, out, err);
        if (memory) json_memory_samples(a, out);
        if (memory && !rc) rc = jp_memory_json(a, v, out, err);
        if (jp_section_get(section)->flags & JP_SECTION_SPLIT_NOTE) json_split_note(a, section, out);
    }
    fputs("}\n", out);
    return rc;
}

/* ---- text --------------------------------------------------------------------------------------- */

/* What makes an outlier step long, as ": idle +153.6 ms, compile +80.0 ms": the parts of its
 * breakdown that exceed their median over the steps (the typical step) by the most, up to two,
 * each at least a fifth of the step's own excess over the median step. */
static void outlier_causes(const jp_analysis *a, const jp_step *s, FILE *out) {
    const int64_t *med = a->step_summary.part_median_ps;
    double excess = (double)s->dur_ps - a->step_summary.median_ps;
    int shown[JP_PART_COUNT] = {0};
    char t[32];
    for (int n = 0; n < 2; n++) {
        int top = -1;
        for (int p = 0; p < JP_PART_COUNT; p++)
            if (!shown[p] && (top < 0 || s->part_ps[p] - med[p] > s->part_ps[top] - med[top])) top = p;
        double d = (double)(s->part_ps[top] - med[top]);
        if (d <= 0 || d < 0.2 * excess) break;
        shown[top] = 1;
        jp_format_time(t, sizeof t, d);
        fprintf(out, "%s %s +%s", n ? "," : ":", jp_part_name(top), t);
    }
}

static int report_text(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err);
static void findings_text(const jp_analysis *a, const jp_view *v, int width, FILE *out);
static int hosts_text(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err);
static int findings_only_text(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err);
static int hosts_summary_text(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err);
static int memory_text(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err);

static int text_table(const jp_analysis *a, table *t, const jp_view *v, FILE *out, jp_error *err) {
    size_t *order, n;
    int rc = jp_table_select(a, t, v, &order, &n, err);
    if (rc) return rc;
    jp_table_text(a, t, order, n, v && v->width ? v->width : 100, out);
    free(order);
    return JP_OK;
}

/* One section as text. */
static int section_text(const jp_analysis *a, int section, const jp_view *view, FILE *out, jp_error *err) {
    if (section == JP_SECTION_REPORT) return report_text(a, view, out, err);
    if (section == JP_SECTION_HOSTS) return hosts_text(a, view, out, err);
    if (section == JP_SECTION_FINDINGS) return findings_only_text(a, view, out, err);
    if (section == JP_SECTION_MEMORY) return memory_text(a, view, out, err);
    table t = section_table(a, section);
    int rc = text_table(a, &t, view, out, err);
    if (rc || !(jp_section_get(section)->flags & JP_SECTION_SPLIT_NOTE) || !split_total(a, section)) return rc;
    char b[32];
    jp_format_time(b, sizeof b, (double)split_total(a, section));
    fprintf(out, "estimated: %s of it, fusions split over their lines by modelled cost (FLOPs, else bytes)\n", b);
    return JP_OK;
}

/* What the registry says the section does not take: a step window, a module, columns, CSV. */
static int check_section(const jp_analysis *a, const jp_section_def *d, int format, const jp_view *view, jp_error *err) {
    if (a->step_window && (d->flags & JP_SECTION_WHOLE_RUN))
        return jp_error_set(err, JP_ERR_ARG, 0, "%s covers the whole run and takes no step window: %s", d->name,
                            d->whole_run_why);
    if (view && view->module && !(d->flags & JP_SECTION_TAKES_MODULE))
        return jp_error_set(err, JP_ERR_ARG, 0, "%s takes no module: one module in detail is memory's", d->name);
    if (view && view->columns && (d->flags & JP_SECTION_TABLES)) /* several tables */
        return jp_error_set(err, JP_ERR_ARG, 0, "--columns picks the columns of one table: use it with ops, steps, ...");
    if (format == JP_FORMAT_CSV && (d->flags & JP_SECTION_NO_CSV))
        return jp_error_set(err, JP_ERR_ARG, 0, "--csv needs a table command (ops, steps, ...)");
    return JP_OK;
}

int jp_render(const jp_analysis *a, int section, int format, const jp_view *view, FILE *out, jp_error *err) {
    jp_error_clear(err);
    const jp_section_def *def = jp_section_get(section);
    if (!def) return jp_error_set(err, JP_ERR_ARG, 0, "unknown section");
    int rc = check_section(a, def, format, view, err);
    if (rc) return rc;
    if ((def->flags & JP_SECTION_TAKES_MODULE) && view && view->module) { /* an unknown module: an error before any output */
        const jp_module_memory **mods;
        size_t n;
        if ((rc = jp_memory_pick(a, view, &mods, &n, err))) return rc;
        free(mods);
    }
    if (format == JP_FORMAT_JSON) {
        rc = render_json(a, section, view, out, err);
    } else if (format == JP_FORMAT_CSV) {
        host_step_row *rows = NULL;
        size_t *order, n;
        table t = section_table(a, section);
        if (section == JP_SECTION_HOSTS && host_step_rows(a, &rows, &n)) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
        if (section == JP_SECTION_HOSTS) t = host_step_table(rows, n); /* one row per host and step */
        rc = section == JP_SECTION_MEMORY ? jp_memory_csv(a, view, out, err) /* one row per buffer */
                                          : jp_table_select(a, &t, view, &order, &n, err);
        if (!rc && section != JP_SECTION_MEMORY) jp_table_csv(a, &t, order, n, out), free(order);
        free(rows);
    } else { /* text: every byte through the control-character filter (names are anyone's bytes) */
        FILE *safe = jp_safe_text_open(out);
        rc = section_text(a, section, view, safe ? safe : out, err);
        if (safe && fclose(safe) != 0 && rc == JP_OK) rc = jp_error_set(err, JP_ERR_IO, 0, "write failed");
    }
    if (rc == JP_OK && (fflush(out) != 0 || ferror(out))) rc = jp_error_set(err, JP_ERR_IO, 0, "write failed");
    return rc;
}

/* The overview: what ran where, how long steps take and where that time goes, then the top of
 * each table and the findings. Kept within the view width (100 columns by default). */
static int report_text(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err) {
    const jp_step_summary *s = &a->step_summary;
    int width = v && v->width ? v->width : 100;
    jp_view top = {.top = v && v->top ? v->top : 10, .sort = v ? v->sort : NULL, .filter = v ? v->filter : NULL,
                   .width = width, .columns = v ? v->columns : NULL};
    char b[6][32];
    fprintf(out, "jaxprof report: %s\n", a->path);
    fprintf(out, "platform %s, %zu host(s), %zu device(s), %llu events, ", jp_platform_name(a->platform), a->n_hosts,
            a->n_devices, (unsigned long long)a->n_events);
    jp_format_time(b[0], sizeof b[0], (double)a->span_ps);
    jp_format_time(b[1], sizeof b[1], (double)a->op_busy_ps);
    fprintf(out, "%s captured, device busy %s\n", b[0], b[1]);
    if (a->op_busy_ps > 0) /* XProf's window for idle time; the KPIs below are over the steps */
        fprintf(out, "device idle %.1f%% of each device's first-to-last activity\n", a->device_idle_pct);
    for (size_t i = 0; i < a->n_warnings; i++) fprintf(out, "warning: %s\n", a->warnings[i]);
    if (a->n_steps) {
        jp_format_time(b[0], 32, s->mean_ps);
        jp_format_time(b[1], 32, s->median_ps);
        jp_format_time(b[2], 32, s->p90_ps);
        jp_format_time(b[3], 32, s->std_ps);
        jp_format_time(b[4], 32, s->min_ps);
        jp_format_time(b[5], 32, s->max_ps);
        fprintf(out, "\nSteps: %zu (%s)\n  step time  mean %s  median %s  p90 %s  std %s  min %s  max %s\n",
                a->n_steps, s->method, b[0], b[1], b[2], b[3], b[4], b[5]);
        fputs("  breakdown ", out);
        for (int p = 0; p < JP_PART_COUNT; p++)
            if (s->part_ps[p] || p == JP_PART_COMPUTE || p == JP_PART_IDLE)
                fprintf(out, " %s %.1f%%", jp_part_name(p), s->total_ps ? 100.0 * (double)s->part_ps[p] / (double)s->total_ps : 0);
        fputc('\n', out);
        if (s->n_no_device) {
            fprintf(out, "  no device work in %zu step(s), left out of the numbers above:", s->n_no_device);
            for (size_t i = 0, k = 0; i < a->n_steps && k < 12; i++)
                if (a->steps[i].no_device_work) fprintf(out, "%s %lld", k++ ? "," : "", (long long)a->steps[i].step_num);
            fputc('\n', out);
        }
        if (s->gap_ps > 0) {
            jp_format_time(b[0], 32, (double)s->gap_ps);
            fprintf(out, "  gaps      %s between dispatches in all (the program's Python between calls, "
                         "in no step)\n", b[0]);
        }
        size_t n_out = 0;
        for (size_t i = 0; i < a->n_steps; i++) n_out += a->steps[i].outlier != 0;
        if (n_out) {
            fprintf(out, "  outliers  ");
            for (size_t i = 0, k = 0; i < a->n_steps && k < 8; i++) {
                if (!a->steps[i].outlier) continue;
                jp_format_time(b[0], 32, (double)a->steps[i].dur_ps);
                fprintf(out, " step %lld (%s", (long long)a->steps[i].step_num, b[0]);
                outlier_causes(a, &a->steps[i], out);
                fputc(')', out);
                k++;
            }
            fputc('\n', out);
        }
    } else {
        fputs("\nSteps: none found (no StepTraceAnnotation and no repeated execution)\n", out);
    }
    int rc = a->n_host_stats ? hosts_summary_text(a, &top, out, err) : JP_OK;
    const char *m = a->step_summary.method;
    int marked = m && (strcmp(m, "StepTraceAnnotation") == 0 || strcmp(m, "device Steps line") == 0);
    fputs(!a->n_steps ? "\nKPIs\n"
          : marked    ? "\nKPIs (device utilization and host overhead: shares of step time)\n"
                      : "\nKPIs (device utilization: each device's busy share of its first-to-last activity, "
                        "XProf's duty cycle, as the steps are inferred; host overhead: share of step time)\n",
          out);
    for (size_t i = 0; i < a->n_kpis; i++) {
        const jp_kpi *k = &a->kpis[i];
        if (k->rating == JP_RATING_NA) fprintf(out, "  %-20s %10s\n", k->name, "n/a");
        else fprintf(out, "  %-20s %9.2f %-2s [%s]\n", k->name, k->value, k->unit, jp_rating_name(k->rating));
    }
    if (!rc && a->n_ops) {
        fputs("\nTop ops by self time\n", out);
        table t = section_table(a, JP_SECTION_OPS);
        t.keep = is_xla_op;
        rc = text_table(a, &t, &top, out, err);
    }
    size_t n_apart = 0;
    for (size_t i = 0; i < a->n_ops; i++) n_apart += (size_t)a->ops[i].no_xla_op;
    if (!rc && n_apart) {
        fprintf(out, "\nKernels without an XLA op (%zu; not HLO ops, and not in XProf's op tables)\n", n_apart);
        table t = section_table(a, JP_SECTION_OPS);
        t.keep = is_no_xla_op;
        rc = text_table(a, &t, &top, out, err);
    }
    if (!rc && a->n_lines) {
        fprintf(out, "\nTop source lines (device self time by the user's line that made the op; %.1f%% of it has one)\n",
                a->op_self_ps ? 100.0 * (double)a->line_self_ps / (double)a->op_self_ps : 0);
        if (split_total(a, JP_SECTION_LINES)) /* an estimate: say how much, within 100 columns */
            fprintf(out, "(%.1f%% of it estimated: fusions split over their source lines by modelled cost)\n",
                    a->op_self_ps ? 100.0 * (double)split_total(a, JP_SECTION_LINES) / (double)a->op_self_ps : 0);
        table t = section_table(a, JP_SECTION_LINES);
        jp_view lv = top;
        lv.top = top.top < 5 ? top.top : 5;
        lv.sort = NULL;
        rc = text_table(a, &t, &lv, out, err);
    }
    if (!rc && a->n_scopes) {
        fputs("\nTop scopes (device: op_name scope; host: annotations, JAX events; total sums threads, % of wall)\n", out);
        table t = section_table(a, JP_SECTION_SCOPES);
        jp_view sv = top;
        sv.sort = "total";
        rc = text_table(a, &t, &sv, out, err);
    }
    if (!rc && a->n_kernels) {
        fputs("\nTop GPU kernels\n", out);
        table t = section_table(a, JP_SECTION_KERNELS);
        rc = text_table(a, &t, &top, out, err);
    }
    fprintf(out, "\nFindings (%zu)\n", a->n_findings);
    findings_text(a, NULL, width, out); /* all of them: --top and --filter are for the tables */
    return rc;
}

/* Writes text after a lead already printed (`col` columns wide) and a space, wrapped at spaces
 * to `width`, continuation lines lined up under its first word. A word longer than a line stays
 * whole. */
static void wrap(FILE *out, const char *text, int col, int width) {
    int indent = col + 1;
    for (const char *p = text; *p;) {
        int word = (int)strcspn(p, " ");
        if (col > indent && col + 1 + word > width) fprintf(out, "\n%*s", indent, ""), col = indent;
        else fputc(' ', out), col++;
        fwrite(p, 1, (size_t)word, out);
        col += word;
        p += word;
        while (*p == ' ') p++;
    }
    fputc('\n', out);
}

/* Each finding (filtered by --filter, at most --top) with its evidence and fix, wrapped. */
static void findings_text(const jp_analysis *a, const jp_view *v, int width, FILE *out) {
    regex_t re;
    int filtering = v && v->filter && *v->filter && regcomp(&re, v->filter, REG_EXTENDED | REG_NOSUB) == 0;
    size_t shown = 0;
    for (size_t i = 0; i < a->n_findings && (!v || !v->top || shown < v->top); i++) {
        const jp_finding *f = &a->findings[i];
        if (filtering && regexec(&re, f->id, 0, NULL, 0) != 0 && regexec(&re, f->title, 0, NULL, 0) != 0) continue;
        int col = fprintf(out, "  [%s]", jp_rating_name(f->severity));
        char head[512];
        snprintf(head, sizeof head, "%s (%s)", f->title, f->id);
        wrap(out, head, col, width);
        wrap(out, f->evidence, fprintf(out, "      evidence:"), width);
        wrap(out, f->fix, fprintf(out, "      fix:"), width);
        shown++;
    }
    if (filtering) regfree(&re);
    if (!shown) fputs(a->n_findings ? "  none matches the filter\n" : "  none: no known problem pattern in this profile\n", out);
}

/* `jaxprof findings`: the findings as the report shows them; a bad --filter is an error. */
static int findings_only_text(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err) {
    regex_t re;
    if (v && v->filter && *v->filter) {
        if (regcomp(&re, v->filter, REG_EXTENDED | REG_NOSUB) != 0)
            return jp_error_set(err, JP_ERR_ARG, 0, "bad --filter regex '%s'", v->filter);
        regfree(&re);
    }
    fprintf(out, "Findings (%zu)\n", a->n_findings);
    findings_text(a, v, v && v->width ? v->width : 100, out);
    return JP_OK;
}

/* `jaxprof memory`: memory at the peak per module (memory_render.c), then the allocators' events
 * (GPU/TPU), which a view of one module leaves out. */
static int memory_text(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err) {
    int rc = jp_memory_text(a, v, out, err);
    if (rc || (v && v->module)) return rc;
    if (!a->n_memory) {
        fprintf(out, "\nAllocator events: none%s\n", a->platform == JP_PLATFORM_CPU
                                                          ? " (XLA:CPU records no allocator events; the buffer assignment above is the memory view)"
                                                          : " recorded in this capture");
        return JP_OK;
    }
    fputs("\nAllocator events (bytes in use per allocator during the capture)\n", out);
    table t = section_table(a, JP_SECTION_MEMORY);
    jp_view all = {.width = v ? v->width : 0}; /* --sort, --filter, --top and --columns are the buffers' */
    return text_table(a, &t, &all, out, err);
}

/* ---- hosts, as text -------------------------------------------------------------------------- */

/* The hosts table and the stragglers, in the report and atop `jaxprof hosts`. */
static int hosts_summary_text(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err) {
    fprintf(out, "\nHosts: %zu, clocks aligned by %s\n", a->n_host_stats, a->clock_method);
    table t = section_table(a, JP_SECTION_HOSTS);
    jp_view all = *v;
    all.top = 0, all.sort = NULL, all.filter = NULL;
    int rc = text_table(a, &t, &all, out, err);
    if (!a->n_stragglers) {
        fputs("  stragglers none: in no step did the hosts wait on one host in collectives\n", out);
        return rc;
    }
    fputs("  stragglers", out);
    for (size_t i = 0; i < a->n_stragglers && i < 8; i++) {
        char behind[32];
        jp_format_time(behind, sizeof behind, (double)a->stragglers[i].behind_ps);
        fprintf(out, "%s step %lld %s (+%s)", i ? "," : "", (long long)a->stragglers[i].step_num,
                a->host_stats[a->stragglers[i].host].name, behind);
    }
    fprintf(out, "%s\n", a->n_stragglers > 8 ? ", ... (jaxprof hosts lists all)" : "");
    return rc;
}

/* Step time per host side by side, one column a host, while they fit the width. */
static void step_columns_text(const jp_analysis *a, const host_step_row *rows, size_t n, FILE *out) {
    fputs("\nStep time per host (* the straggler: the others waited for it in collectives)\n   step", out);
    for (size_t h = 0; h < a->n_host_stats; h++) fprintf(out, " %12.12s", a->host_stats[h].name);
    fputs("   held the others\n", out);
    for (size_t i = 0, j; i < n; i = j) {
        const jp_straggler *lag = NULL;
        fprintf(out, "%7lld", (long long)rows[i].step->step_num);
        size_t h = 0;
        for (j = i; j < n && rows[j].step->step_num == rows[i].step->step_num; j++) {
            for (; h < rows[j].host; h++) fprintf(out, " %12s", "-");
            char t[32];
            jp_format_time(t, sizeof t, (double)rows[j].step->dur_ps);
            fprintf(out, " %11s%c", t, rows[j].lag ? '*' : ' ');
            lag = rows[j].lag ? rows[j].lag : lag;
            h = rows[j].host + 1;
        }
        for (; h < a->n_host_stats; h++) fprintf(out, " %12s", "-");
        char behind[32] = "";
        if (lag) jp_format_time(behind, sizeof behind, (double)lag->behind_ps);
        fprintf(out, "   %s\n", behind);
    }
}

static int hosts_text(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err) {
    int width = v && v->width ? v->width : 100;
    jp_view view = {.top = v && v->top ? v->top : 3, .filter = v ? v->filter : NULL, .width = width,
                    .columns = v ? v->columns : NULL};
    if (!a->n_host_stats) {
        fprintf(out, "1 host (%s): per-host analysis needs a run with a file per host or process\n",
                a->n_hosts ? a->hosts[0] : "");
        return JP_OK;
    }
    int rc = hosts_summary_text(a, &view, out, err);
    host_step_row *rows;
    size_t n;
    if (!rc && host_step_rows(a, &rows, &n)) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    if (rc) return rc;
    if (7 + 13 * a->n_host_stats + 20 <= (size_t)width) {
        step_columns_text(a, rows, n, out);
    } else {
        fputs("\nSteps per host\n", out);
        table t = host_step_table(rows, n);
        rc = text_table(a, &t, NULL, out, err);
    }
    free(rows);
    for (size_t h = 0; !rc && h < a->n_host_stats; h++) {
        const jp_host_stat *hs = &a->host_stats[h];
        jp_analysis alone = host_ops_view(a, h);
        fprintf(out, "\nTop ops on %s by self time\n", hs->name);
        table t = section_table(&alone, JP_SECTION_OPS);
        rc = text_table(&alone, &t, &view, out, err);
    }
    return rc;
}
