/* columns.c - every result table's columns, declared once: key, text header and width, type,
 * unit, getter, doc line (and, for the ops, the viewer's menu). Text, CSV and JSON (table.c) read
 * these; `jaxprof-columns` generates docs/json-schema.md, the Python result classes and the
 * viewer's column lists from them, and `meson test generated` fails when those are stale. */
#include <math.h>
#include <string.h>

#include "render/columns.h"

static void set_str(cell *c, const char *s) { c->type = CELL_STR, c->s = s ? s : ""; }
static void set_int(cell *c, int64_t i) { c->type = CELL_INT, c->i = i; }
static void set_time(cell *c, int64_t ps) { c->type = CELL_TIME, c->i = ps; }
static void set_pct(cell *c, double d) { c->type = CELL_PCT, c->d = d; }
static void set_num(cell *c, double d) { c->type = CELL_NUM, c->d = d; }
static void set_bool(cell *c, int b) { c->type = CELL_BOOL, c->i = b; }
static void set_bytes(cell *c, int64_t b) { c->type = CELL_BYTES, c->i = b; }
static void set_none(cell *c) { c->type = CELL_NONE; }
static void set_frames(cell *c, const jp_source_frame *f, uint32_t n) {
    *c = (cell){.type = CELL_FRAMES, .frames = f, .n_frames = n};
}
static void set_dims(cell *c, const uint32_t d[3]) {
    *c = (cell){.type = CELL_STR};
    snprintf(c->buf, sizeof c->buf, "%u,%u,%u", d[0], d[1], d[2]);
    c->s = c->buf;
}

/* A getter FN: the row as ROW (r), the analysis (a), and one statement setting the cell (c). */
#define GET(FN, ROW, STMT)                                                \
    static void FN(const jp_analysis *a, const void *row, cell *c) {      \
        const ROW *r = row;                                               \
        (void)a;                                                          \
        STMT;                                                             \
    }

#define COL(KEY, HEADER, WIDTH, TYPE, UNIT, GETTER, DOC) \
    {.key = KEY, .header = HEADER, .width = WIDTH, .type = TYPE, .unit = UNIT, .get = GETTER, .doc = DOC}
/* A column whose value may be unknown (JSON null). */
#define COL_NULL(KEY, HEADER, WIDTH, TYPE, UNIT, GETTER, DOC) \
    {.key = KEY, .header = HEADER, .width = WIDTH, .type = TYPE, .nullable = 1, .unit = UNIT, .get = GETTER, .doc = DOC}
/* A column the viewer's pages head LABEL rather than with its text header. */
#define COL_LABEL(KEY, HEADER, WIDTH, TYPE, UNIT, GETTER, LABEL, DOC)                                       \
    {.key = KEY, .header = HEADER, .width = WIDTH, .type = TYPE, .unit = UNIT, .get = GETTER, .label = LABEL, \
     .doc = DOC}
/* A column the viewer offers (VIEW 1) or shows by default (VIEW 2), under LABEL (NULL: derived). */
#define COL_VIEW(KEY, HEADER, WIDTH, TYPE, NULLABLE, UNIT, GETTER, VIEW, LABEL, DOC)                          \
    {.key = KEY, .header = HEADER, .width = WIDTH, .type = TYPE, .nullable = NULLABLE, .unit = UNIT, .get = GETTER, \
     .view = VIEW, .label = LABEL, .doc = DOC}

#define N_OF(COLS) (sizeof COLS / sizeof COLS[0])

const char *jp_column_unit(const column *c) {
    if (c->unit) return c->unit;
    return c->type == CELL_TIME ? "ms" : c->type == CELL_PCT ? "%" : c->type == CELL_BYTES ? "bytes" : "";
}

/* A share of a whole in percent, 0 for an empty whole. */
static double pct_of(double part, double whole) { return whole ? 100.0 * part / whole : 0; }

/* ---- ops ---------------------------------------------------------------------------------------- */

static const char *const BOUND[] = {"", "compute", "memory"};

static double op_secs(const jp_op_stat *o) { return (double)o->total_ps / 1e12; }
/* A rate in units per second / 1e9 over the op's total time; unknown for asynchronous halves. */
static void op_rate(const jp_op_stat *o, double amount, cell *c) {
    if (o->no_rate) set_none(c);
    else set_num(c, op_secs(o) > 0 ? amount / op_secs(o) / 1e9 : 0);
}

/* The name; text adds its program where rows of several programs share it. */
static void op_name(const jp_analysis *a, const void *row, cell *c) {
    const jp_op_stat *r = row;
    (void)a;
    set_str(c, r->name);
    if (r->program_id >= 0) c->type = CELL_PROGRAM_STR, c->i = r->program_id;
}
GET(op_category, jp_op_stat, set_str(c, r->category))
GET(op_count, jp_op_stat, set_int(c, (int64_t)r->count))
GET(op_total, jp_op_stat, set_time(c, r->total_ps))
GET(op_self, jp_op_stat, set_time(c, r->self_ps))
GET(op_avg, jp_op_stat, set_time(c, r->count ? r->total_ps / (int64_t)r->count : 0))
GET(op_min, jp_op_stat, set_time(c, r->min_ps))
GET(op_max, jp_op_stat, set_time(c, r->max_ps))
GET(op_pct_time, jp_op_stat, set_pct(c, pct_of((double)r->self_ps, (double)a->op_self_ps)))
GET(op_gflops, jp_op_stat, op_rate(r, r->flops, c))
GET(op_gbytes, jp_op_stat, op_rate(r, r->bytes, c))
GET(op_flops, jp_op_stat, set_num(c, r->flops))
GET(op_bytes, jp_op_stat, set_num(c, r->bytes))
GET(op_module, jp_op_stat, set_str(c, r->module))
GET(op_device, jp_op_stat, set_str(c, r->n_devices == 1 ? a->devices[r->device].name : "")) /* "": several */
GET(op_scope, jp_op_stat, set_str(c, r->scope))
GET(op_op_name, jp_op_stat, set_str(c, r->op_name))
GET(op_source, jp_op_stat, set_str(c, r->source))
GET(op_devices, jp_op_stat, set_int(c, r->n_devices))
GET(op_function, jp_op_stat, set_str(c, r->function))
GET(op_stack, jp_op_stat, set_frames(c, r->stack, r->n_stack))
GET(op_hlo_flops, jp_op_stat, set_num(c, r->hlo_flops))
GET(op_transcendentals, jp_op_stat, set_num(c, r->transcendentals))
GET(op_intensity, jp_op_stat, set_num(c, r->bytes > 0 ? r->flops / r->bytes : 0))
GET(op_bound_by, jp_op_stat, set_str(c, BOUND[r->bound]))
GET(op_roof_pct, jp_op_stat, set_num(c, r->roof_pct))
GET(op_xla_flops, jp_op_stat, set_num(c, r->xla_flops))
GET(op_program_id, jp_op_stat, r->program_id >= 0 ? set_int(c, r->program_id) : set_none(c))
GET(op_xla_op, jp_op_stat, set_bool(c, !r->no_xla_op))
GET(op_autotuning, jp_op_stat, set_bool(c, r->autotuning))
GET(op_above_peak, jp_op_stat, set_bool(c, r->bound != JP_BOUND_UNKNOWN && r->roof_pct > 100))
GET(op_dtype, jp_op_stat, set_str(c, r->dtype))
GET(op_remat, jp_op_stat, set_bool(c, r->remat))
GET(op_wasted, jp_op_stat, r->bound != JP_BOUND_UNKNOWN ? set_time(c, r->wasted_ps) : set_none(c))
GET(op_wasted_pct, jp_op_stat,
    r->bound != JP_BOUND_UNKNOWN ? set_pct(c, pct_of((double)r->wasted_ps, (double)a->op_self_ps)) : set_none(c))

static const column OP_COLS[] = {
    COL_VIEW("name", "op", 0, CELL_STR, 0, NULL, op_name, 2, NULL,
             "the HLO instruction (\"dot.3\", \"loop_fusion.1\"), or a kernel's name when no XLA op launched it"),
    COL_VIEW("category", "category", 16, CELL_STR, 0, NULL, op_category, 2, NULL,
             "what kind of op: \"matmul\", \"loop fusion\", \"collective\", ..."),
    COL_VIEW("count", "count", 6, CELL_INT, 0, NULL, op_count, 2, NULL, "occurrences"),
    COL_VIEW("total_ms", "total", 9, CELL_TIME, 0, NULL, op_total, 2, NULL, "the occurrences' durations, summed"),
    COL_VIEW("self_ms", "self", 9, CELL_TIME, 0, NULL, op_self, 2, NULL,
             "total minus the time of ops nested in it on the same line"),
    COL_VIEW("avg_ms", "avg", 9, CELL_TIME, 0, NULL, op_avg, 2, NULL, "total / count"),
    COL_VIEW("min_ms", NULL, 0, CELL_TIME, 0, NULL, op_min, 1, NULL, "the shortest occurrence"),
    COL_VIEW("max_ms", NULL, 0, CELL_TIME, 0, NULL, op_max, 1, NULL, "the longest occurrence"),
    COL_VIEW("pct_time", "%time", 6, CELL_PCT, 0, NULL, op_pct_time, 2, NULL,
             "its self time, % of every op's self time"),
    COL_VIEW("gflops_per_s", NULL, 0, CELL_NUM, 1, "GFLOP/s", op_gflops, 2, "GFLOP/s",
             "flops over total time; null for an asynchronous start or done half (its time is not the work)"),
    COL_VIEW("gbytes_per_s", NULL, 0, CELL_NUM, 1, "GB/s", op_gbytes, 2, "GB/s",
             "bytes over total time; null for an asynchronous start or done half"),
    COL("flops", NULL, 0, CELL_NUM, "FLOPs", op_flops,
        "summed: XLA's own count where the profile holds one (TPU, GPU), else hlo_flops; 0 when unknown"),
    COL("bytes", NULL, 0, CELL_NUM, "bytes", op_bytes, "bytes accessed, summed, from the same source; 0 when unknown"),
    COL_VIEW("module", NULL, 0, CELL_STR, 0, NULL, op_module, 1, NULL, "the HLO module (\"jit_train_step\")"),
    COL("device", NULL, 0, CELL_STR, NULL, op_device, "the device it ran on; \"\" when the row sums several"),
    COL_VIEW("scope", NULL, 0, CELL_STR, 0, NULL, op_scope, 2, NULL,
             "the user's scope path derived from op_name; \"\" when unknown"),
    COL_VIEW("op_name", NULL, 0, CELL_STR, 0, NULL, op_op_name, 2, NULL, "metadata.op_name; \"\" when unknown"),
    COL_VIEW("source", NULL, 0, CELL_STR, 0, NULL, op_source, 2, NULL,
             "\"file:line\" of the innermost frame of user code that made it; \"\" when unknown"),
    COL_VIEW("devices", "devs", 4, CELL_INT, 0, NULL, op_devices, 1, "devices",
             "devices it ran on (an SPMD program's op runs on every chip; the row sums them)"),
    COL_VIEW("function", NULL, 0, CELL_STR, 0, NULL, op_function, 1, NULL,
             "the function of that line; \"\" when unknown"),
    COL("stack", NULL, 0, CELL_FRAMES, NULL, op_stack, "the whole recorded Python stack, innermost frame first"),
    COL("hlo_flops", NULL, 0, CELL_NUM, "FLOPs", op_hlo_flops,
        "summed, counted by jaxprof from the HLO; 0 without HLO"),
    COL("transcendentals", NULL, 0, CELL_NUM, "elements", op_transcendentals,
        "summed exp/log/tanh/... elements, from the HLO"),
    COL("intensity", NULL, 0, CELL_NUM, "FLOPs/byte", op_intensity, "flops / bytes; 0 without bytes"),
    COL("bound_by", NULL, 0, CELL_STR, NULL, op_bound_by,
        "the roof it sits under: \"compute\", \"memory\", or \"\" without peaks or counts"),
    COL("roof_pct", NULL, 0, CELL_NUM, "%", op_roof_pct,
        "its FLOP/s (compute bound) or bytes/s (memory bound), % of that roof"),
    COL("xla_flops", NULL, 0, CELL_NUM, "FLOPs", op_xla_flops,
        "summed, the profile's own flops stat (libtpu, XLA:GPU); 0 without one"),
    COL_NULL("program_id", NULL, 0, CELL_INT, NULL, op_program_id,
             "the compiled program (XLA's program_id) when its module's name has several; null otherwise"),
    COL("xla_op", NULL, 0, CELL_BOOL, NULL, op_xla_op,
        "false for a GPU kernel no XLA op launched (not in XProf's op tables)"),
    COL_VIEW("autotuning", NULL, 0, CELL_BOOL, 0, NULL, op_autotuning, 1, NULL,
        "GPU work of XLA's autotuner while a host compiled (candidate GEMM kernels, redzone checks): no op "
        "of the program"),
    COL("above_peak", NULL, 0, CELL_BOOL, NULL, op_above_peak,
        "its rate is above the physical peak it is compared with"),
    COL_VIEW("dtype", NULL, 0, CELL_STR, 0, NULL, op_dtype, 1, NULL,
             "the element type it computes in, from the HLO: a dot's, convolution's or library call's left "
             "operand's, a fusion's first fused dot's or convolution's, else its output's; \"\" without HLO"),
    COL_VIEW("remat", NULL, 0, CELL_BOOL, 0, NULL, op_remat, 1, NULL,
             "rematerialised: XLA's clone (\"fusion.3.remat\") or, from jax.checkpoint, an op_name under "
             "\"rematted_computation\""),
    COL_VIEW("wasted_ms", NULL, 0, CELL_TIME, 1, NULL, op_wasted, 1, NULL,
             "self time x (1 - roof_pct / 100), roof_pct capped at 100: its time short of its roof; null "
             "without a roof"),
    COL_VIEW("wasted_pct", NULL, 0, CELL_PCT, 1, NULL, op_wasted_pct, 1, NULL,
             "wasted_ms, % of every op's self time: pct_time x (1 - roof fraction); null without a roof"),
};

/* ---- source lines and the flame tree ------------------------------------------------------------ */

/* Text shows a path relative to the files' common directory; JSON and CSV the whole path. */
static const char *short_path(const jp_analysis *a, const char *path) {
    size_t n = strlen(a->source_prefix);
    return n && strncmp(path, a->source_prefix, n) == 0 ? path + n : path;
}

GET(line_source, jp_line_stat, set_str(c, short_path(a, r->source)))
GET(line_function, jp_line_stat, set_str(c, r->function))
GET(line_self, jp_line_stat, set_time(c, r->self_ps))
GET(line_pct_device, jp_line_stat, set_pct(c, pct_of((double)r->self_ps, (double)a->op_self_ps)))
GET(line_count, jp_line_stat, set_int(c, (int64_t)r->count))
GET(line_n_ops, jp_line_stat, set_int(c, r->n_ops))
GET(line_ops, jp_line_stat, set_str(c, r->ops))
GET(line_file, jp_line_stat, set_str(c, r->file))
GET(line_line, jp_line_stat, set_int(c, r->line))
GET(line_flops, jp_line_stat, set_num(c, r->flops))
GET(line_split, jp_line_stat, set_time(c, r->split_ps))

static const column LINE_COLS[] = {
    COL("source", "line", 0, CELL_STR, NULL, line_source, "\"file:line\" of the user's code that made the ops"),
    COL("function", "function", 16, CELL_STR, NULL, line_function, "the function of that line; \"\" when unknown"),
    COL("self_ms", "self", 9, CELL_TIME, NULL, line_self, "the self time of its ops"),
    COL_LABEL("pct_device", "%dev", 6, CELL_PCT, NULL, line_pct_device, "% device", "that, % of the ops' self time (XLA's autotuner's excluded)"),
    COL("count", "count", 6, CELL_INT, NULL, line_count, "op occurrences"),
    COL("n_ops", "ops", 4, CELL_INT, NULL, line_n_ops, "distinct ops"),
    COL("ops", "top ops", 20, CELL_STR, NULL, line_ops, "its ops by self time, at most five: \"dot.3, fusion.2, ...\""),
    COL("file", NULL, 0, CELL_STR, NULL, line_file, "the path; \"\" when the op has only a source string"),
    COL("line", NULL, 0, CELL_INT, NULL, line_line, "the line number"),
    COL("flops", NULL, 0, CELL_NUM, "FLOPs", line_flops, "of its ops"),
    COL("split_ms", NULL, 0, CELL_TIME, NULL, line_split,
        "the part of self_ms that is a fusion's time split over its lines by modelled cost: an estimate"),
};

static const char *const FLAME_KIND[] = {"root", "frame", "library", "op", "none"};

GET(flame_name, jp_flame_node, set_str(c, r->name))
GET(flame_kind, jp_flame_node, set_str(c, FLAME_KIND[r->kind]))
GET(flame_total, jp_flame_node, set_time(c, r->total_ps))
GET(flame_self, jp_flame_node, set_time(c, r->self_ps))
GET(flame_pct, jp_flame_node, set_pct(c, a->n_flame ? pct_of((double)r->total_ps, (double)a->flame[0].total_ps) : 0))
GET(flame_depth, jp_flame_node, set_int(c, r->depth))
GET(flame_parent, jp_flame_node, set_int(c, r->parent == UINT32_MAX ? -1 : (int64_t)r->parent))
GET(flame_file, jp_flame_node, set_str(c, r->file))
GET(flame_line, jp_flame_node, set_int(c, r->line))
GET(flame_split, jp_flame_node, set_time(c, r->split_ps))

static const column FLAME_COLS[] = {
    COL("name", "stack", 0, CELL_STR, NULL, flame_name, "\"train_step (train.py:42)\", \"[flax]\", \"dot.3\", ..."),
    COL("kind", "kind", 8, CELL_STR, NULL, flame_kind,
        "\"root\", \"frame\", \"library\" (folded library frames), \"op\" or \"none\" (no source)"),
    COL("total_ms", "total", 9, CELL_TIME, NULL, flame_total, "the ops' self time under it"),
    COL("self_ms", "self", 9, CELL_TIME, NULL, flame_self, "its own: only ops (the leaves) have any"),
    COL("pct", "%", 6, CELL_PCT, NULL, flame_pct, "total, % of the root's"),
    COL("depth", "depth", 5, CELL_INT, NULL, flame_depth, "0 for the root"),
    COL("parent", NULL, 0, CELL_INT, NULL, flame_parent, "the parent's index in this array; -1 for the root"),
    COL("file", NULL, 0, CELL_STR, NULL, flame_file,
        "frames: the path relative to the files' common directory; else \"\""),
    COL("line", NULL, 0, CELL_INT, NULL, flame_line, "frames: the line; else 0"),
    COL("split_ms", NULL, 0, CELL_TIME, NULL, flame_split,
        "the part of total_ms that is a fusion's time split over its lines by modelled cost: an estimate"),
};

/* ---- steps -------------------------------------------------------------------------------------- */

GET(step_step, jp_step, set_int(c, r->step_num))
GET(step_start, jp_step, set_time(c, r->start_ps))
GET(step_duration, jp_step, set_time(c, r->dur_ps))
GET(step_compute, jp_step, set_time(c, r->part_ps[JP_PART_COMPUTE]))
GET(step_collective, jp_step, set_time(c, r->part_ps[JP_PART_COLLECTIVE]))
GET(step_h2d, jp_step, set_time(c, r->part_ps[JP_PART_H2D]))
GET(step_d2h, jp_step, set_time(c, r->part_ps[JP_PART_D2H]))
GET(step_d2d, jp_step, set_time(c, r->part_ps[JP_PART_D2D]))
GET(step_compile, jp_step, set_time(c, r->part_ps[JP_PART_COMPILE]))
GET(step_host, jp_step, set_time(c, r->part_ps[JP_PART_HOST]))
GET(step_idle, jp_step, set_time(c, r->part_ps[JP_PART_IDLE]))
GET(step_ops, jp_step, set_int(c, (int64_t)r->n_ops))
GET(step_compiles, jp_step, set_int(c, r->n_compiles))
GET(step_outlier, jp_step, set_bool(c, r->outlier))
GET(step_flops, jp_step, set_num(c, r->flops))
GET(step_gflops, jp_step, set_num(c, r->dur_ps > 0 ? r->flops / ((double)r->dur_ps / 1e12) / 1e9 : 0)) /* achieved */
GET(step_no_device_work, jp_step, set_bool(c, r->no_device_work))
GET(step_gap, jp_step, set_time(c, r->gap_ps))
GET(step_issued_start, jp_step, set_time(c, r->host_start_ps))
GET(step_issued, jp_step, set_time(c, r->host_dur_ps))
GET(step_bytes, jp_step, set_num(c, r->bytes))
GET(step_intensity, jp_step, set_num(c, r->bytes > 0 ? r->flops / r->bytes : 0))
GET(step_gbytes, jp_step, set_num(c, r->dur_ps > 0 ? r->bytes / ((double)r->dur_ps / 1e12) / 1e9 : 0)) /* achieved */
GET(step_roof_pct, jp_step, r->roof_pct >= 0 ? set_num(c, r->roof_pct) : set_none(c))

_Static_assert(JP_PART_COUNT == 8, "a steps column per part of the breakdown");

GET(step_comm_hidden, jp_step, set_time(c, r->comm_hidden_ps))
GET(step_comm_exposed, jp_step, set_time(c, r->comm_exposed_ps))

static const column STEP_COLS[] = {
    COL("step", "step", 7, CELL_INT, NULL, step_step, "the step number: StepTraceAnnotation's, or the execution index"),
    COL("start_ms", NULL, 0, CELL_TIME, NULL, step_start, "when it began on the device, from the capture's start"),
    COL("duration_ms", "time", 9, CELL_TIME, NULL, step_duration,
        "its length; the eight parts below sum to it exactly"),
    COL("compute_ms", "compute", 9, CELL_TIME, NULL, step_compute,
        "device time in ops that are not collectives (each instant goes to the first open part, in this order)"),
    COL("collective_ms", "collect", 9, CELL_TIME, NULL, step_collective,
        "device time in collectives not under compute"),
    COL("h2d_ms", "h2d", 9, CELL_TIME, NULL, step_h2d, "host-to-device transfers not under the parts above"),
    COL("d2h_ms", "d2h", 9, CELL_TIME, NULL, step_d2h, "device-to-host transfers not under the parts above"),
    COL("d2d_ms", NULL, 0, CELL_TIME, NULL, step_d2d, "device-to-device transfers not under the parts above"),
    COL("compile_ms", "compile", 9, CELL_TIME, NULL, step_compile, "compiling, while the device did none of the above"),
    COL("host_ms", "host", 9, CELL_TIME, NULL, step_host,
        "host events (dispatch, Python, ...) while none of the parts above was open"),
    COL("idle_ms", "idle", 9, CELL_TIME, NULL, step_idle, "the rest: none of the parts above"),
    COL("ops", "ops", 6, CELL_INT, NULL, step_ops, "op occurrences starting in the step"),
    COL("compiles", NULL, 0, CELL_INT, NULL, step_compiles, "compile events starting in the step"),
    COL("outlier", "outlier", 0, CELL_BOOL, NULL, step_outlier,
        "longer than 1.5 x the median step (with 3 or more steps)"),
    COL("flops", NULL, 0, CELL_NUM, "FLOPs", step_flops, "of the op occurrences starting in the step"),
    COL("gflops_per_s", NULL, 0, CELL_NUM, "GFLOP/s", step_gflops, "flops over the step's duration: achieved"),
    COL("no_device_work", "no device work", 0, CELL_BOOL, NULL, step_no_device_work,
        "no device op ran in it (a transfer alone does not count): left out of step_summary"),
    COL("gap_ms", "gap", 9, CELL_TIME, NULL, step_gap,
        "steps inferred from dispatches: the time after it until the next dispatch (the program's Python "
        "between calls); in no step"),
    COL("issued_start_ms", NULL, 0, CELL_TIME, NULL, step_issued_start,
        "when the host issued the step (its marker, or the dispatch it was inferred from); 0 when unknown"),
    COL("issued_ms", NULL, 0, CELL_TIME, NULL, step_issued,
        "how long the host's marker or dispatch lasted; 0 when unknown"),
    COL("bytes", NULL, 0, CELL_NUM, "bytes", step_bytes,
        "bytes accessed by the op occurrences starting in it (an asynchronous done half's left out: they repeat "
        "its start's)"),
    COL("intensity", NULL, 0, CELL_NUM, "FLOPs/byte", step_intensity, "flops / bytes; 0 without bytes"),
    COL("gbytes_per_s", NULL, 0, CELL_NUM, "GB/s", step_gbytes, "bytes over the step's duration: achieved"),
    COL_NULL("roof_pct", NULL, 0, CELL_NUM, "%", step_roof_pct,
             "the step as one program on the roofline: its FLOP/s (compute bound) or bytes/s (memory bound), % "
             "of the summed roofs of the devices that ran ops at its intensity; null without peaks or counts"),
    COL("collective_hidden_ms", NULL, 0, CELL_TIME, NULL, step_comm_hidden,
        "its collective time under compute on the same device (the mean over the devices that ran collectives)"),
    COL("collective_exposed_ms", NULL, 0, CELL_TIME, NULL, step_comm_exposed,
        "its collective time with no compute on the same device (likewise)"),
};

/* ---- op time by precision ------------------------------------------------------------------------- */

GET(prec_name, jp_precision_stat, set_str(c, r->precision))
GET(prec_self, jp_precision_stat, set_time(c, r->self_ps))
GET(prec_pct, jp_precision_stat, set_pct(c, pct_of((double)r->self_ps, (double)a->precision_ps)))
GET(prec_flops, jp_precision_stat, set_num(c, r->flops))
GET(prec_ops, jp_precision_stat, set_int(c, r->n_ops))

static const column PRECISION_COLS[] = {
    COL("precision", "precision", 9, CELL_STR, NULL, prec_name,
        "\"16-bit\" (bf16, f16), \"32-bit\" (f32), \"8-bit\" (8-bit floats and integers), \"other\", "
        "\"unknown\" (no HLO): the ops' dtype"),
    COL("self_ms", "self", 9, CELL_TIME, NULL, prec_self, "its ops' self time"),
    COL("pct_time", "%time", 6, CELL_PCT, NULL, prec_pct, "that, % of the ops' self time (XLA's autotuner's excluded)"),
    COL("flops", NULL, 0, CELL_NUM, "FLOPs", prec_flops, "its ops' FLOPs"),
    COL("ops", "ops", 5, CELL_INT, NULL, prec_ops, "its op rows"),
};

/* ---- scopes ------------------------------------------------------------------------------------- */

/* The whole a scope's % is of: the ops' self time (device), the capture's span (host). */
static int64_t kind_total(const jp_analysis *a, int kind) {
    return kind == JP_SCOPE_DEVICE ? a->op_self_ps : a->span_ps;
}

GET(scope_path, jp_scope_stat, set_str(c, r->path))
GET(scope_kind, jp_scope_stat, set_str(c, r->kind == JP_SCOPE_DEVICE ? "device" : r->user ? "host" : "runtime"))
GET(scope_user, jp_scope_stat, set_bool(c, r->user))
GET(scope_depth, jp_scope_stat, set_int(c, r->depth))
GET(scope_count, jp_scope_stat, set_int(c, (int64_t)r->count))
GET(scope_total, jp_scope_stat, set_time(c, r->total_ps))
GET(scope_self, jp_scope_stat, set_time(c, r->self_ps))
GET(scope_pct, jp_scope_stat,
    set_pct(c, pct_of((double)r->wall_ps, (double)kind_total(a, r->kind)))) /* host: wall, never > 100 */
GET(scope_wall, jp_scope_stat, set_time(c, r->wall_ps))

static const column SCOPE_COLS[] = {
    COL("scope", "scope", 0, CELL_STR, NULL, scope_path,
        "\"train_step/loss/forward\" (device) or a TraceAnnotation name (host)"),
    COL("kind", "kind", 7, CELL_STR, NULL, scope_kind,
        "\"device\", \"host\" (user annotations) or \"runtime\" (JAX/XLA's own)"),
    COL("user", NULL, 0, CELL_BOOL, NULL, scope_user, "host scopes: a user annotation rather than the runtime's"),
    COL("depth", NULL, 0, CELL_INT, NULL, scope_depth, "device: path components - 1; host: nesting depth seen first"),
    COL("count", "count", 6, CELL_INT, NULL, scope_count, "op occurrences (device) or events (host)"),
    COL("total_ms", "total", 9, CELL_TIME, NULL, scope_total,
        "device: ops under the path; host: durations summed over threads"),
    COL("self_ms", "self", 9, CELL_TIME, NULL, scope_self,
        "device: ops exactly at the path; host: minus nested host events"),
    COL("pct", "%", 6, CELL_PCT, NULL, scope_pct,
        "wall_ms, % of every op's self time (device) or of the capture (host)"),
    COL("wall_ms", NULL, 0, CELL_TIME, NULL, scope_wall,
        "host: the wall time its events cover, over threads; device: total_ms"),
};

/* ---- kernels, memory, transfers, compiles ------------------------------------------------------- */

GET(kernel_name, jp_kernel_stat, set_str(c, r->name))
GET(kernel_count, jp_kernel_stat, set_int(c, (int64_t)r->count))
GET(kernel_total, jp_kernel_stat, set_time(c, r->total_ps))
GET(kernel_avg, jp_kernel_stat, set_time(c, r->count ? r->total_ps / (int64_t)r->count : 0))
GET(kernel_min, jp_kernel_stat, set_time(c, r->min_ps))
GET(kernel_max, jp_kernel_stat, set_time(c, r->max_ps))
GET(kernel_registers, jp_kernel_stat, set_int(c, r->registers))
GET(kernel_static_shared, jp_kernel_stat, set_int(c, r->static_shared))
GET(kernel_dynamic_shared, jp_kernel_stat, set_int(c, r->dynamic_shared))
GET(kernel_grid, jp_kernel_stat, set_dims(c, r->grid))
GET(kernel_block, jp_kernel_stat, set_dims(c, r->block))
GET(kernel_occupancy, jp_kernel_stat, set_num(c, r->occupancy))
GET(kernel_op, jp_kernel_stat, set_str(c, r->op))
GET(kernel_autotuning, jp_kernel_stat, set_bool(c, r->autotuning))

static const column KERNEL_COLS[] = {
    COL("name", "kernel", 0, CELL_STR, NULL, kernel_name, "the GPU kernel"),
    COL("count", "count", 6, CELL_INT, NULL, kernel_count, "launches"),
    COL("total_ms", "total", 9, CELL_TIME, NULL, kernel_total, "their durations, summed"),
    COL("avg_ms", "avg", 9, CELL_TIME, NULL, kernel_avg, "total / count"),
    COL("min_ms", NULL, 0, CELL_TIME, NULL, kernel_min, "the shortest launch"),
    COL("max_ms", NULL, 0, CELL_TIME, NULL, kernel_max, "the longest launch"),
    COL("registers", "regs", 5, CELL_INT, NULL, kernel_registers, "registers per thread"),
    COL("static_shared", NULL, 0, CELL_INT, "bytes", kernel_static_shared, "static shared memory per block"),
    COL("dynamic_shared", NULL, 0, CELL_INT, "bytes", kernel_dynamic_shared, "dynamic shared memory per block"),
    COL("grid", "grid", 11, CELL_STR, NULL, kernel_grid, "grid dimensions \"x,y,z\""),
    COL("block", "block", 11, CELL_STR, NULL, kernel_block, "block dimensions \"x,y,z\""),
    COL("occupancy_pct", "occ%", 5, CELL_NUM, "%", kernel_occupancy, "occupancy; 0 when unknown"),
    COL("op", NULL, 0, CELL_STR, NULL, kernel_op, "the HLO op of its first launch; \"\" when unknown"),
    COL("autotuning", NULL, 0, CELL_BOOL, NULL, kernel_autotuning,
        "XLA's autotuner's kernel while a host compiled (a candidate GEMM, a redzone check): not the program's"),
};

GET(mem_allocator, jp_memory_stat, set_str(c, r->allocator))
GET(mem_peak, jp_memory_stat, set_int(c, r->peak_bytes))
GET(mem_peak_at, jp_memory_stat, set_time(c, r->peak_t_ps))
GET(mem_events, jp_memory_stat, set_int(c, (int64_t)r->n_events))
GET(mem_allocator_peak, jp_memory_stat, set_int(c, r->lifetime_peak_bytes))

static const column MEMORY_COLS[] = {
    COL("allocator", "allocator", 0, CELL_STR, NULL, mem_allocator, "the allocator's name, or \"device N\""),
    COL("peak_bytes", "peak bytes", 14, CELL_INT, "bytes", mem_peak,
        "most bytes in use (allocated + reserved) during the capture"),
    COL("peak_at_ms", "peak at", 9, CELL_TIME, NULL, mem_peak_at, "when, from the capture's start"),
    COL("events", "events", 8, CELL_INT, NULL, mem_events, "allocation and deallocation events"),
    COL("allocator_peak_bytes", "allocator peak", 16, CELL_INT, "bytes", mem_allocator_peak,
        "the allocator's own peak since it was created (may predate the capture); 0 when not recorded"),
};

GET(xfer_kind, jp_transfer_stat, set_str(c, r->kind))
GET(xfer_count, jp_transfer_stat, set_int(c, (int64_t)r->count))
GET(xfer_bytes, jp_transfer_stat, set_int(c, (int64_t)r->bytes))
GET(xfer_total, jp_transfer_stat, set_time(c, r->total_ps))
GET(xfer_max, jp_transfer_stat, set_time(c, r->max_ps))
GET(xfer_gbytes, jp_transfer_stat,
    set_num(c, r->total_ps ? (double)r->bytes / ((double)r->total_ps / 1e12) / 1e9 : 0))

static const column TRANSFER_COLS[] = {
    COL("kind", "kind", 0, CELL_STR, NULL, xfer_kind, "\"H2D\", \"D2H\" or \"D2D\""),
    COL("count", "count", 7, CELL_INT, NULL, xfer_count, "transfers"),
    COL("bytes", "bytes", 14, CELL_INT, "bytes", xfer_bytes,
        "their sizes, summed; 0 when the profile records none (XLA:CPU)"),
    COL("total_ms", "total", 9, CELL_TIME, NULL, xfer_total, "their durations, summed"),
    COL("max_ms", "longest", 9, CELL_TIME, NULL, xfer_max, "the longest transfer"),
    COL("gbytes_per_s", "GB/s", 8, CELL_NUM, "GB/s", xfer_gbytes, "bytes over total time"),
};

GET(compile_module, jp_compile, set_str(c, *r->module ? r->module : "?"))
GET(compile_name, jp_compile, set_str(c, r->name))
GET(compile_start, jp_compile, set_time(c, r->start_ps))
GET(compile_duration, jp_compile, set_time(c, r->dur_ps))
GET(compile_step, jp_compile, set_int(c, r->step_num))
GET(compile_steady, jp_compile, set_bool(c, r->steady))

static const column COMPILE_COLS[] = {
    COL("module", "module", 0, CELL_STR, NULL, compile_module,
        "the module compiled; \"?\" when the profile does not say"),
    COL("name", NULL, 0, CELL_STR, NULL, compile_name, "the compile event (\"backend_compile_and_load\", ...)"),
    COL("start_ms", "start", 9, CELL_TIME, NULL, compile_start, "when it began, from the capture's start"),
    COL("duration_ms", "time", 9, CELL_TIME, NULL, compile_duration, "how long it took"),
    COL("step", "step", 7, CELL_INT, NULL, compile_step, "the step it happened in; -1 for none"),
    COL("steady_state", "steady", 6, CELL_BOOL, NULL, compile_steady,
        "inside the steady state: after the first step (or in it, unless it compiles the step's module)"),
};

/* ---- findings, KPIs, devices -------------------------------------------------------------------- */

GET(finding_severity, jp_finding, set_str(c, jp_rating_name(r->severity)))
GET(finding_id, jp_finding, set_str(c, r->id))
GET(finding_title, jp_finding, set_str(c, r->title))
GET(finding_evidence, jp_finding, set_str(c, r->evidence))
GET(finding_fix, jp_finding, set_str(c, r->fix))

static const column FINDING_COLS[] = {
    COL("severity", "severity", 8, CELL_STR, NULL, finding_severity, "\"warning\" or \"bad\""),
    COL("id", "id", 16, CELL_STR, NULL, finding_id, "a stable id: \"many_small_ops\", \"device_idle\", ..."),
    COL("title", "title", 0, CELL_STR, NULL, finding_title, "the problem in one line"),
    COL("evidence", NULL, 0, CELL_STR, NULL, finding_evidence, "the numbers, names and steps behind it"),
    COL("fix", NULL, 0, CELL_STR, NULL, finding_fix, "what to change"),
};

GET(kpi_name, jp_kpi, set_str(c, r->name))
GET(kpi_value, jp_kpi, set_num(c, r->value))
GET(kpi_unit, jp_kpi, set_str(c, r->unit))
GET(kpi_rating, jp_kpi, set_str(c, jp_rating_name(r->rating)))

static const column KPI_COLS[] = {
    COL("name", "kpi", 0, CELL_STR, NULL, kpi_name, "\"device utilization\", \"kernel duration\", ..."),
    COL("value", "value", 10, CELL_NUM, NULL, kpi_value, "in the row's unit"),
    COL("unit", "unit", 4, CELL_STR, NULL, kpi_unit, "\"%\", \"ms\", \"s\""),
    COL("rating", "rating", 8, CELL_STR, NULL, kpi_rating, "\"good\", \"warning\", \"bad\", \"above peak\" or \"n/a\""),
};

GET(device_name, jp_device, set_str(c, r->name))
GET(device_host, jp_device, set_str(c, r->host))
GET(device_platform, jp_device, set_str(c, jp_platform_name(r->platform)))
GET(device_busy, jp_device, set_time(c, r->busy_ps))
GET(device_ops, jp_device, set_int(c, (int64_t)r->n_ops))
GET(device_first, jp_device, set_time(c, r->first_ps))
GET(device_last, jp_device, set_time(c, r->last_ps))
GET(device_idle, jp_device, /* of its own first-to-last window */
    set_pct(c, r->last_ps > r->first_ps
                   ? pct_of((double)(r->last_ps - r->first_ps - r->busy_ps), (double)(r->last_ps - r->first_ps))
                   : 0))
GET(device_peak_tflops, jp_device, set_num(c, r->peak_flops / 1e12))
GET(device_peak_gbps, jp_device, set_num(c, r->peak_bw / 1e9))
GET(device_peak_source, jp_device, set_str(c, r->peak_source))
GET(device_idle_host, jp_device, set_time(c, r->idle_host_ps))
GET(device_idle_kernel, jp_device, set_time(c, r->idle_kernel_ps))
GET(device_idle_other, jp_device, set_time(c, r->idle_other_ps))
GET(device_launched, jp_device, set_int(c, (int64_t)r->n_launched))
GET(device_short, jp_device, set_int(c, (int64_t)r->n_short))
GET(device_queue_max, jp_device, set_int(c, r->queue_max))
GET(device_queue_mean, jp_device, set_num(c, r->queue_mean))

GET(device_comm, jp_device, set_time(c, r->comm_ps))
GET(device_comm_hidden, jp_device, set_time(c, r->comm_hidden_ps))
GET(device_comm_exposed, jp_device, set_time(c, r->comm_ps - r->comm_hidden_ps))
GET(device_comm_wait, jp_device, set_time(c, r->comm_wait_ps))
GET(device_overlap, jp_device, r->comm_overlap_pct >= 0 ? set_pct(c, r->comm_overlap_pct) : set_none(c))

static const column DEVICE_COLS[] = {
    COL("name", "device", 0, CELL_STR, NULL, device_name, "\"/host:CPU\", \"/device:GPU:0\", ..."),
    COL("host", "host", 12, CELL_STR, NULL, device_host, "the host whose capture holds it"),
    COL("platform", "platform", 8, CELL_STR, NULL, device_platform,
        "\"cpu\", \"gpu\" or \"tpu\" (JAX's Device.platform)"),
    COL("busy_ms", "busy", 9, CELL_TIME, NULL, device_busy, "the union of its op and transfer intervals"),
    COL("ops", "ops", 8, CELL_INT, NULL, device_ops, "op occurrences (GPU: kernels)"),
    COL("first_ms", NULL, 0, CELL_TIME, NULL, device_first, "its first activity's start; 0 when idle"),
    COL("last_ms", NULL, 0, CELL_TIME, NULL, device_last, "its last activity's end"),
    COL("idle_pct", "idle%", 6, CELL_PCT, NULL, device_idle, "idle share of its own first-to-last window"),
    COL("peak_tflops", NULL, 0, CELL_NUM, "TFLOP/s", device_peak_tflops, "its peak FLOP/s; 0 when unknown"),
    COL("peak_gbps", NULL, 0, CELL_NUM, "GB/s", device_peak_gbps, "its peak memory bandwidth; 0 when unknown"),
    COL("peak_source", NULL, 0, CELL_STR, NULL, device_peak_source,
        "where the peaks come from: \"device\", \"clock x cores\", \"table\", \"calibrated\", \"flag\", or \"\""),
    COL("idle_host_ms", NULL, 0, CELL_TIME, NULL, device_idle_host,
        "idle before device work whose launch call began after the device went idle: waiting for the host (GPU)"),
    COL("idle_kernel_ms", NULL, 0, CELL_TIME, NULL, device_idle_kernel,
        "idle gaps under 10 us before work launched earlier: kernel to kernel (GPU)"),
    COL("idle_other_ms", NULL, 0, CELL_TIME, NULL, device_idle_other,
        "other idle gaps between its correlated device work: launched earlier, longer gaps, or launch unknown (GPU)"),
    COL("launched", NULL, 0, CELL_INT, NULL, device_launched, "device events matched to their launch call (GPU)"),
    COL("short_kernels", NULL, 0, CELL_INT, NULL, device_short, "of those, kernels shorter than their launch call"),
    COL("queue_max", NULL, 0, CELL_INT, NULL, device_queue_max,
        "most launches outstanding at once: call begun, device work not ended (GPU)"),
    COL("queue_mean", NULL, 0, CELL_NUM, NULL, device_queue_mean,
        "launches outstanding, time-weighted mean from the first call to the last end (GPU)"),
    COL("collective_ms", NULL, 0, CELL_TIME, NULL, device_comm,
        "the union of its collectives' spans (an asynchronous pair: start to done)"),
    COL("collective_hidden_ms", NULL, 0, CELL_TIME, NULL, device_comm_hidden,
        "of that, the time a compute op ran on it too"),
    COL("collective_exposed_ms", NULL, 0, CELL_TIME, NULL, device_comm_exposed, "the rest: collectives alone"),
    COL_NULL("overlap_pct", NULL, 0, CELL_PCT, NULL, device_overlap,
             "collective_hidden_ms / collective_ms; null without collectives"),
    COL("collective_wait_ms", NULL, 0, CELL_TIME, NULL, device_comm_wait,
        "per collective instance, its exposed time minus the least of any device's, summed: waiting for the "
        "last to arrive"),
};

/* ---- communication (jaxprof comm) --------------------------------------------------------------- */

GET(comm_name, jp_comm_stat, set_str(c, r->name))
GET(comm_type, jp_comm_stat, set_str(c, r->type))
GET(comm_module, jp_comm_stat, set_str(c, r->module))
GET(comm_devices, jp_comm_stat, set_int(c, r->n_devices))
GET(comm_count, jp_comm_stat, set_int(c, (int64_t)r->count))
GET(comm_total, jp_comm_stat, set_time(c, r->total_ps))
GET(comm_avg, jp_comm_stat, set_time(c, r->count ? r->total_ps / (int64_t)r->count : 0))
GET(comm_hidden, jp_comm_stat, set_time(c, r->hidden_ps))
GET(comm_exposed, jp_comm_stat, set_time(c, r->exposed_ps))
GET(comm_overlap, jp_comm_stat, set_pct(c, pct_of((double)r->hidden_ps, (double)r->total_ps)))
GET(comm_bytes, jp_comm_stat, r->bytes > 0 ? set_bytes(c, (int64_t)r->bytes) : set_none(c))
GET(comm_group, jp_comm_stat, r->group_size ? set_int(c, r->group_size) : set_none(c))
GET(comm_algbw, jp_comm_stat, r->algbw > 0 ? set_num(c, r->algbw / 1e9) : set_none(c))
GET(comm_busbw, jp_comm_stat, r->busbw >= 0 ? set_num(c, r->busbw / 1e9) : set_none(c))
GET(comm_wait, jp_comm_stat, set_time(c, r->wait_ps))
GET(comm_wait_max, jp_comm_stat, set_time(c, r->wait_max_ps))
GET(comm_last, jp_comm_stat, set_str(c, r->last_device))
GET(comm_late, jp_comm_stat, set_int(c, r->n_late))
GET(comm_stragglers, jp_comm_stat, set_int(c, (int64_t)r->n_straggler))
GET(comm_straggler, jp_comm_stat, set_str(c, r->straggler))

static const column COMM_COLS[] = {
    COL("name", "collective", 0, CELL_STR, NULL, comm_name,
        "the collective op; an asynchronous -start/-done pair by its start's name"),
    COL("type", "type", 14, CELL_STR, NULL, comm_type,
        "\"all-reduce\", \"all-gather\", \"reduce-scatter\", \"all-to-all\", \"collective-permute\", ..."),
    COL("count", "count", 6, CELL_INT, NULL, comm_count, "instances, summed over the devices"),
    COL("devices", "devs", 4, CELL_INT, NULL, comm_devices, "devices it ran on"),
    COL("total_ms", "total", 9, CELL_TIME, NULL, comm_total, "the instances' spans (start to done), summed"),
    COL("avg_ms", NULL, 0, CELL_TIME, NULL, comm_avg, "total / count"),
    COL("hidden_ms", "hidden", 9, CELL_TIME, NULL, comm_hidden, "the part of total a compute op ran on the same device"),
    COL("exposed_ms", "exposed", 9, CELL_TIME, NULL, comm_exposed, "total - hidden"),
    COL("overlap_pct", "ovl%", 5, CELL_PCT, NULL, comm_overlap, "hidden / total"),
    COL_NULL("bytes", "size", 9, CELL_BYTES, NULL, comm_bytes,
             "message size S per instance from the HLO, by the nccl-tests convention (all-gather: the gathered "
             "buffer; reduce-scatter: the whole input); null when unknown"),
    COL_NULL("group_size", "n", 3, CELL_INT, NULL, comm_group,
             "devices per replica group, from the HLO (a permute: its source-target pairs); null when unknown"),
    COL_NULL("algbw_gbps", "algbw", 7, CELL_NUM, "GB/s", comm_algbw, "S / the mean instance time; null when S is unknown"),
    COL_NULL("busbw_gbps", "busbw", 7, CELL_NUM, "GB/s", comm_busbw,
             "algbw x 2(n-1)/n (all-reduce), (n-1)/n (all-gather, reduce-scatter, all-to-all), 1 (permute); null "
             "when unknown"),
    COL("wait_ms", "wait", 9, CELL_TIME, NULL, comm_wait,
        "per instance (the k-th on each device), max - min of its exposed time across devices, summed"),
    COL("wait_max_ms", NULL, 0, CELL_TIME, NULL, comm_wait_max, "the largest such spread"),
    COL("last_device", "last", 13, CELL_STR, NULL, comm_last, "the device that started its instance last most often"),
    COL("last_count", NULL, 0, CELL_INT, NULL, comm_late, "instances that device started last"),
    COL("stragglers", NULL, 0, CELL_INT, NULL, comm_stragglers,
        "(instance, device) pairs whose start is a robust outlier: median/MAD z-score > 3.5 over >= 3 devices"),
    COL("straggler", NULL, 0, CELL_STR, NULL, comm_straggler, "the device most often such an outlier; \"\" when none"),
    COL("module", NULL, 0, CELL_STR, NULL, comm_module, "the HLO module"),
};

GET(cinst_name, jp_comm_instance, set_str(c, r->name))
GET(cinst_type, jp_comm_instance, set_str(c, r->type))
GET(cinst_module, jp_comm_instance, set_str(c, r->module))
GET(cinst_index, jp_comm_instance, set_int(c, (int64_t)r->index))
GET(cinst_step, jp_comm_instance, r->step_num != INT64_MIN ? set_int(c, r->step_num) : set_none(c))
GET(cinst_devices, jp_comm_instance, set_int(c, r->n_devices))
GET(cinst_start, jp_comm_instance, set_time(c, r->start_ps))
GET(cinst_spread, jp_comm_instance, set_time(c, r->last_start_ps - r->start_ps))
GET(cinst_exposed_min, jp_comm_instance, set_time(c, r->exposed_min_ps))
GET(cinst_exposed_max, jp_comm_instance, set_time(c, r->exposed_max_ps))
GET(cinst_wait, jp_comm_instance, set_time(c, r->wait_ps))
GET(cinst_last, jp_comm_instance, set_str(c, r->last_device))
GET(cinst_is_straggler, jp_comm_instance, set_bool(c, r->n_straggler > 0))
GET(cinst_stragglers, jp_comm_instance, set_int(c, r->n_straggler))
GET(cinst_straggler, jp_comm_instance, set_str(c, r->straggler))
GET(cinst_z, jp_comm_instance, r->z_max >= 0 ? set_num(c, r->z_max) : set_none(c))

static const column COMM_INSTANCE_COLS[] = {
    COL("name", "collective", 0, CELL_STR, NULL, cinst_name, "the collective op, as in the comm table"),
    COL("type", NULL, 0, CELL_STR, NULL, cinst_type, "its type, as in the comm table"),
    COL("index", "k", 5, CELL_INT, NULL, cinst_index,
        "k: the op's k-th run on each device (from 0), matched across the devices by that order"),
    COL_NULL("step", "step", 6, CELL_INT, NULL, cinst_step, "the step its earliest start falls in; null when none"),
    COL("devices", "devs", 4, CELL_INT, NULL, cinst_devices, "devices that ran it"),
    COL("start_ms", NULL, 0, CELL_TIME, NULL, cinst_start, "its earliest start on any device"),
    COL("arrival_spread_ms", NULL, 0, CELL_TIME, NULL, cinst_spread,
        "the latest start minus the earliest: how late the last device arrived"),
    COL("exposed_min_ms", "exp min", 9, CELL_TIME, NULL, cinst_exposed_min,
        "the least exposed time (span - hidden) of any device"),
    COL("exposed_max_ms", "exp max", 9, CELL_TIME, NULL, cinst_exposed_max, "the most exposed time of any device"),
    COL("wait_ms", "wait", 9, CELL_TIME, NULL, cinst_wait,
        "exposed_max_ms - exposed_min_ms: the early arrivals' wait for the last"),
    COL("last_device", "last", 13, CELL_STR, NULL, cinst_last, "the device that started last; \"\" on one device"),
    COL("straggler", "strag", 5, CELL_BOOL, NULL, cinst_is_straggler,
        "some device's start is a robust outlier: median/MAD z-score > 3.5 over >= 3 devices"),
    COL("stragglers", NULL, 0, CELL_INT, NULL, cinst_stragglers, "devices whose start is such an outlier"),
    COL("straggler_device", NULL, 0, CELL_STR, NULL, cinst_straggler,
        "of those, the one with the largest z-score; \"\" when none"),
    COL_NULL("z_max", NULL, 0, CELL_NUM, NULL, cinst_z,
             "the largest z-score 0.6745 (start - median) / MAD of the starts; null with < 3 devices or MAD 0"),
    COL("module", NULL, 0, CELL_STR, NULL, cinst_module, "the HLO module"),
};

/* ---- hosts (multi-host profiles) ---------------------------------------------------------------- */

/* The host's top op by self time, as the ops table sorts; NULL without ops. */
static const jp_op_stat *top_op(const jp_host_stat *h) {
    const jp_op_stat *top = NULL;
    for (size_t i = 0; i < h->n_ops; i++)
        if (!top || h->ops[i].self_ps > top->self_ps) top = &h->ops[i];
    return top;
}

GET(host_name, jp_host_stat, set_str(c, r->name))
GET(host_clock, jp_host_stat, set_str(c, r->clock))
GET(host_offset, jp_host_stat, set_time(c, r->offset_ps))
GET(host_sync_steps, jp_host_stat, set_int(c, r->n_sync))
GET(host_sync_spread, jp_host_stat, set_time(c, r->sync_spread_ps))
GET(host_steps, jp_host_stat, set_int(c, (int64_t)r->n_steps))
GET(host_mean_step, jp_host_stat, set_time(c, (int64_t)r->step_summary.mean_ps))
GET(host_median_step, jp_host_stat, set_time(c, (int64_t)r->step_summary.median_ps))
GET(host_compute, jp_host_stat, set_time(c, r->step_summary.part_ps[JP_PART_COMPUTE]))
GET(host_collective, jp_host_stat, set_time(c, r->collective_ps))
GET(host_wait, jp_host_stat, set_time(c, r->wait_ps))
GET(host_idle, jp_host_stat, set_time(c, r->step_summary.part_ps[JP_PART_IDLE]))
GET(host_straggler_steps, jp_host_stat, set_int(c, r->n_straggling))
GET(host_top_op, jp_host_stat, set_str(c, top_op(r) ? top_op(r)->name : ""))
GET(host_top_op_pct, jp_host_stat,
    set_pct(c, top_op(r) && r->op_self_ps ? 100.0 * (double)top_op(r)->self_ps / (double)r->op_self_ps : 0))

static const column HOST_COLS[] = {
    COL("host", "host", 0, CELL_STR, NULL, host_name, "the host"),
    COL("clock", "clock", 15, CELL_STR, NULL, host_clock,
        "how its offset was found: \"reference\", \"collective ends\", \"wall clock\" or \"none\""),
    COL("offset_ms", "offset", 9, CELL_TIME, NULL, host_offset,
        "added to its own times to put them on the shared axis"),
    COL("sync_steps", NULL, 0, CELL_INT, NULL, host_sync_steps, "shared steps behind a \"collective ends\" offset"),
    COL("sync_spread_ms", "spread", 8, CELL_TIME, NULL, host_sync_spread,
        "median distance of those steps' own offsets from it"),
    COL("steps", "steps", 5, CELL_INT, NULL, host_steps, "its steps"),
    COL("mean_step_ms", "mean step", 9, CELL_TIME, NULL, host_mean_step, "its mean step time"),
    COL("median_step_ms", NULL, 0, CELL_TIME, NULL, host_median_step, "its median step time"),
    COL("compute_ms", NULL, 0, CELL_TIME, NULL, host_compute, "the compute part of its steps"),
    COL_LABEL("collective_ms", "collect", 9, CELL_TIME, NULL, host_collective, "collective ms",
              "the collective part of its steps"),
    COL("wait_ms", "waiting", 9, CELL_TIME, NULL, host_wait,
        "of that, the time beyond the least collective time of any host in the same step: waiting for others"),
    COL("idle_ms", "idle", 9, CELL_TIME, NULL, host_idle, "the idle part of its steps"),
    COL_LABEL("straggler_steps", "straggler", 9, CELL_INT, NULL, host_straggler_steps, "straggler in",
              "steps where it was the straggler"),
    COL_LABEL("top_op", NULL, 0, CELL_STR, NULL, host_top_op, "top op", "its op with the most self time"),
    COL("top_op_pct", NULL, 0, CELL_PCT, NULL, host_top_op_pct, "that op's self time, % of its ops' self time"),
};

static const int HOST_STEP_PARTS[] = {JP_PART_COMPUTE, JP_PART_COLLECTIVE, JP_PART_HOST, JP_PART_IDLE};

GET(hstep_step, host_step_row, set_int(c, r->step->step_num))
GET(hstep_host, host_step_row, set_str(c, a->host_stats[r->host].name))
GET(hstep_start, host_step_row, set_time(c, r->step->start_ps))
GET(hstep_duration, host_step_row, set_time(c, r->step->dur_ps))
GET(hstep_compute, host_step_row, set_time(c, r->step->part_ps[HOST_STEP_PARTS[0]]))
GET(hstep_collective, host_step_row, set_time(c, r->step->part_ps[HOST_STEP_PARTS[1]]))
GET(hstep_host_ms, host_step_row, set_time(c, r->step->part_ps[HOST_STEP_PARTS[2]]))
GET(hstep_idle, host_step_row, set_time(c, r->step->part_ps[HOST_STEP_PARTS[3]]))
GET(hstep_straggler, host_step_row, set_bool(c, r->lag != NULL))
GET(hstep_behind, host_step_row, set_time(c, r->lag ? r->lag->behind_ps : 0))

static const column HOST_STEP_COLS[] = {
    COL("step", "step", 7, CELL_INT, NULL, hstep_step, "the step number"),
    COL("host", "host", 0, CELL_STR, NULL, hstep_host, "the host"),
    COL("start_ms", NULL, 0, CELL_TIME, NULL, hstep_start, "when it began on the host's devices, on the shared axis"),
    COL("duration_ms", "time", 9, CELL_TIME, NULL, hstep_duration, "its length on that host"),
    COL("compute_ms", "compute", 9, CELL_TIME, NULL, hstep_compute, "its compute part"),
    COL("collective_ms", "collect", 9, CELL_TIME, NULL, hstep_collective, "its collective part"),
    COL("host_ms", "host", 9, CELL_TIME, NULL, hstep_host_ms, "its host part"),
    COL("idle_ms", "idle", 9, CELL_TIME, NULL, hstep_idle, "its idle part"),
    COL("straggler", "straggler", 9, CELL_BOOL, NULL, hstep_straggler, "this host held the others back in this step"),
    COL("behind_ms", "behind", 9, CELL_TIME, NULL, hstep_behind,
        "by how much (the others' median collective time minus its own); 0 when not the straggler"),
};

GET(lag_step, jp_straggler, set_int(c, r->step_num))
GET(lag_host, jp_straggler, set_str(c, a->host_stats[r->host].name))
GET(lag_behind, jp_straggler, set_time(c, r->behind_ps))
GET(lag_step_ms, jp_straggler, set_time(c, r->step_ps))

static const column STRAGGLER_COLS[] = {
    COL("step", NULL, 0, CELL_INT, NULL, lag_step, "the step number"),
    COL("host", NULL, 0, CELL_STR, NULL, lag_host, "the host the others waited for in collectives"),
    COL("behind_ms", NULL, 0, CELL_TIME, NULL, lag_behind, "the others' median collective time minus its own"),
    COL("step_ms", NULL, 0, CELL_TIME, NULL, lag_step_ms, "the step's median time over the hosts"),
};

/* ---- buffers at a module's memory peak ---------------------------------------------------------- */

GET(buf_module, buffer_row, set_str(c, r->m->name))
GET(buf_host, buffer_row, set_str(c, r->m->host))
GET(buf_runs, buffer_row, set_int(c, (int64_t)r->m->runs))
GET(buf_module_peak, buffer_row, set_bytes(c, r->m->peak_bytes))
GET(buf_module_always_live, buffer_row, set_bytes(c, r->m->always_live_bytes))
GET(buf_id, buffer_row, set_int(c, r->b->id))
GET(buf_bytes, buffer_row, set_bytes(c, r->b->bytes))
GET(buf_unpadded, buffer_row, set_bytes(c, r->b->unpadded_bytes))
GET(buf_kind, buffer_row, set_str(c, jp_buffer_kind_name(r->b->kind)))
GET(buf_instruction, buffer_row, set_str(c, r->b->instruction))
GET(buf_opcode, buffer_row, set_str(c, r->b->opcode))
GET(buf_shape, buffer_row, set_str(c, r->b->shape))
GET(buf_op_name, buffer_row, set_str(c, r->b->op_name))
GET(buf_source, buffer_row, set_str(c, r->b->source))
GET(buf_function, buffer_row, set_str(c, r->b->function))
GET(buf_stack, buffer_row, set_frames(c, r->b->stack, r->b->n_stack))
GET(buf_n_small, buffer_row, set_int(c, r->b->n_small))
GET(buf_start, buffer_row, set_int(c, r->b->start))
GET(buf_end, buffer_row, set_int(c, r->b->end))

/* The CSV's columns: the module's first, then the buffer's (the JSON keys of "buffers"). */
static const column BUFFER_COLS[] = {
    COL("module", NULL, 0, CELL_STR, NULL, buf_module, "the module as XProf names it: \"jit_step(6)\""),
    COL("host", NULL, 0, CELL_STR, NULL, buf_host, "the host whose capture holds the module"),
    COL("runs", NULL, 0, CELL_INT, NULL, buf_runs, "the module's executions in the profile"),
    COL("module_peak_bytes", NULL, 0, CELL_BYTES, NULL, buf_module_peak, "the module's peak: most bytes live at once"),
    COL("module_always_live_bytes", NULL, 0, CELL_BYTES, NULL, buf_module_always_live,
        "the module's parameters, outputs and constants: live all program long"),
    COL("id", NULL, 0, CELL_INT, NULL, buf_id, "XLA's logical buffer id; -1 for the small row"),
    COL("bytes", "size", 10, CELL_BYTES, NULL, buf_bytes, "as allocated (padded): what it costs"),
    COL("unpadded_bytes", NULL, 0, CELL_BYTES, NULL, buf_unpadded, "the dense size of its shape"),
    COL("kind", "kind", 9, CELL_STR, NULL, buf_kind,
        "\"parameter\", \"output\", \"constant\", \"temporary\", or \"small\" (every buffer under 16 KiB, "
        "summed in one row)"),
    COL("instruction", "instruction", 24, CELL_STR, NULL, buf_instruction,
        "the HLO instruction that defines it (\"\" for the small row)"),
    COL("opcode", NULL, 0, CELL_STR, NULL, buf_opcode, "that instruction's opcode; \"\" when unknown"),
    COL("shape", "shape", 16, CELL_STR, NULL, buf_shape, "\"f32[4096,4096]\"; \"\" when unknown"),
    COL("op_name", "op_name", 0, CELL_STR, NULL, buf_op_name,
        "the instruction's metadata op_name: \"jit(step)/dot_general\""),
    COL("source", "line", 20, CELL_STR, NULL, buf_source,
        "\"file.py:16\", the user's line; \"\" when the HLO names none"),
    COL("function", NULL, 0, CELL_STR, NULL, buf_function, "the function of that line"),
    COL("stack", NULL, 0, CELL_FRAMES, NULL, buf_stack, "the whole Python stack, innermost frame first"),
    COL("n_small", NULL, 0, CELL_INT, NULL, buf_n_small, "the small row: how many buffers it sums; else 0"),
    COL("start", NULL, 0, CELL_INT, NULL, buf_start, "the heap event that allocated it; -1 when live all program long"),
    COL("end", NULL, 0, CELL_INT, NULL, buf_end, "the heap event that freed it; -1 when live all program long"),
};
_Static_assert(JP_BUFFER_FIRST_COL == 5, "the buffers table: five module columns, then the buffer's");

/* ---- compiled modules' memory at the peak -------------------------------------------------------- */

GET(mod_name, jp_module_memory, set_str(c, r->name))
GET(mod_host, jp_module_memory, set_str(c, r->host))
GET(mod_runs, jp_module_memory, set_int(c, (int64_t)r->runs))
GET(mod_peak, jp_module_memory, set_bytes(c, r->peak_bytes))
GET(mod_peak_unpadded, jp_module_memory, set_bytes(c, r->peak_unpadded_bytes))
GET(mod_peak_index, jp_module_memory, set_int(c, r->peak_index))
GET(mod_peak_instruction, jp_module_memory, set_str(c, r->peak_instruction))
GET(mod_peak_computation, jp_module_memory, set_str(c, r->peak_computation))
GET(mod_always_live, jp_module_memory, set_bytes(c, r->always_live_bytes))
GET(mod_total, jp_module_memory, set_bytes(c, r->total_bytes))
GET(mod_parameter, jp_module_memory, set_bytes(c, r->parameter_bytes))
GET(mod_output, jp_module_memory, set_bytes(c, r->output_bytes))
GET(mod_alias, jp_module_memory, set_bytes(c, r->alias_bytes))
GET(mod_temp, jp_module_memory, set_bytes(c, r->temp_bytes))
GET(mod_note, jp_module_memory, set_str(c, r->note))

/* The scalar keys of modules[] (memory_render.c writes kind_bytes, buffers and timeline around them). */
static const column MODULE_COLS[] = {
    COL("name", NULL, 0, CELL_STR, NULL, mod_name, "the module as XProf names it: \"jit_step(6)\""),
    COL("host", NULL, 0, CELL_STR, NULL, mod_host, "the host whose capture holds it"),
    COL("runs", NULL, 0, CELL_INT, NULL, mod_runs, "its executions in the profile; 0: compiled, never run"),
    COL("peak_bytes", NULL, 0, CELL_BYTES, NULL, mod_peak,
        "most bytes live at once: always_live_bytes + the heap's peak"),
    COL("peak_unpadded_bytes", NULL, 0, CELL_BYTES, NULL, mod_peak_unpadded, "the same without layout padding"),
    COL("peak_index", NULL, 0, CELL_INT, NULL, mod_peak_index,
        "the heap event at which the heap first reaches its peak; -1 without heap events"),
    COL("peak_instruction", NULL, 0, CELL_STR, NULL, mod_peak_instruction,
        "the instruction that event processes; \"\" without one"),
    COL("peak_computation", NULL, 0, CELL_STR, NULL, mod_peak_computation, "and its computation (a while body, ...)"),
    COL("always_live_bytes", NULL, 0, CELL_BYTES, NULL, mod_always_live,
        "parameters, outputs and constants: live all program long (kind_bytes{parameter, output, constant} follows)"),
    COL("total_bytes", NULL, 0, CELL_BYTES, NULL, mod_total, "every allocation: the peak with fragmentation"),
    COL("parameter_bytes", NULL, 0, CELL_BYTES, NULL, mod_parameter,
        "entry parameters: memory_analysis()'s argument size"),
    COL("output_bytes", NULL, 0, CELL_BYTES, NULL, mod_output, "its output size"),
    COL("alias_bytes", NULL, 0, CELL_BYTES, NULL, mod_alias,
        "parameters aliased with an output (donated): its alias size"),
    COL("temp_bytes", NULL, 0, CELL_BYTES, NULL, mod_temp, "total_bytes - always_live_bytes: its temp size"),
    COL("note", NULL, 0, CELL_STR, NULL, mod_note, "why the heap part is missing (e.g. a buffer freed twice), or \"\""),
};
_Static_assert(JP_MODULE_KIND_BYTES_AFTER == 8, "kind_bytes follows always_live_bytes");

/* ---- the diff of two runs (jaxprof diff) -------------------------------------------------------- */

/* Per-step times are doubles; the table prints whole picoseconds, far below what it shows. */
static void set_ps(cell *c, double ps) {
    c->type = CELL_TIME;
    c->i = !isfinite(ps) ? 0 : ps > 9e18 ? INT64_MAX : ps < -9e18 ? INT64_MIN : (int64_t)llround(ps);
}

GET(drow_name, jp_diff_row, set_str(c, r->name))
GET(drow_base_name, jp_diff_row, set_str(c, r->base_name))
GET(drow_module, jp_diff_row, set_str(c, r->module))
GET(drow_category, jp_diff_row, set_str(c, r->category))
GET(drow_scope, jp_diff_row, set_str(c, r->scope))
GET(drow_change, jp_diff_row, set_str(c, jp_change_name(r->change)))
GET(drow_match, jp_diff_row, set_str(c, jp_match_name(r->match)))
GET(drow_base_count, jp_diff_row, set_num(c, r->base_count))
GET(drow_new_count, jp_diff_row, set_num(c, r->new_count))
GET(drow_base, jp_diff_row, set_ps(c, r->base_ps))
GET(drow_new, jp_diff_row, set_ps(c, r->new_ps))
GET(drow_base_total, jp_diff_row, set_ps(c, r->base_total_ps))
GET(drow_new_total, jp_diff_row, set_ps(c, r->new_total_ps))
GET(drow_delta, jp_diff_row, set_ps(c, r->delta_ps))
GET(drow_delta_pct, jp_diff_row, set_num(c, r->delta_pct))
GET(drow_noise, jp_diff_row, set_ps(c, r->noise_ps))
GET(drow_noise_basis, jp_diff_row, set_str(c, jp_noise_basis_name(r->noise_basis)))

static const column DIFF_ROW_COLS[] = {
    COL("name", NULL, 0, CELL_STR, NULL, drow_name,
        "op: the new run's name (the base's when removed); scope: its path"),
    COL("base_name", NULL, 0, CELL_STR, NULL, drow_base_name,
        "the base run's name (\"\" when added); differs after a renumbering"),
    COL("module", NULL, 0, CELL_STR, NULL, drow_module, "op: the HLO module; scope: \"\""),
    COL("category", NULL, 0, CELL_STR, NULL, drow_category, "op: its category; scope: \"device\" or \"host\""),
    COL("scope", NULL, 0, CELL_STR, NULL, drow_scope, "op: the user's scope path; scope: its path"),
    COL("change", NULL, 0, CELL_STR, NULL, drow_change,
        "\"slower\", \"faster\", \"added\", \"removed\" or \"unchanged\""),
    COL("match", NULL, 0, CELL_STR, NULL, drow_match,
        "how it was paired: \"name\", \"op_name\" or \"shape\" (renamed), \"none\" (added or removed)"),
    COL("base_count", NULL, 0, CELL_NUM, "per step", drow_base_count, "occurrences per step in the base run"),
    COL("new_count", NULL, 0, CELL_NUM, "per step", drow_new_count, "occurrences per step in the new run"),
    COL("base_ms", NULL, 0, CELL_TIME, "ms per step", drow_base,
        "self time per step in the base run (summed over devices)"),
    COL("new_ms", NULL, 0, CELL_TIME, "ms per step", drow_new, "self time per step in the new run"),
    COL("base_total_ms", NULL, 0, CELL_TIME, "ms per step", drow_base_total,
        "total time per step in the base run (scopes: nested included)"),
    COL("new_total_ms", NULL, 0, CELL_TIME, "ms per step", drow_new_total, "total time per step in the new run"),
    COL("delta_ms", NULL, 0, CELL_TIME, "ms per step", drow_delta, "new_ms - base_ms"),
    COL("delta_pct", NULL, 0, CELL_NUM, "%", drow_delta_pct, "100 * delta / base; 0 when added or removed"),
    COL("noise_ms", NULL, 0, CELL_TIME, "ms per step", drow_noise,
        "ops: two standard errors of delta_ms from each run's own spread; 0 when unknown (always for scopes)"),
    COL("noise_basis", NULL, 0, CELL_STR, NULL, drow_noise_basis,
        "where the noise comes from: \"steps\", \"executions\" or \"none\""),
};

GET(dpart_part, diff_part_row, set_str(c, jp_part_name(r->part)))
GET(dpart_base, diff_part_row, set_ps(c, r->base_ps))
GET(dpart_new, diff_part_row, set_ps(c, r->new_ps))
GET(dpart_delta, diff_part_row, set_ps(c, r->new_ps - r->base_ps))

static const column DIFF_PART_COLS[] = {
    COL("part", "part", 0, CELL_STR, NULL, dpart_part, "compute, collective, h2d, d2h, d2d, compile, host or idle"),
    COL("base_ms", "base", 9, CELL_TIME, "ms per step", dpart_base, "the part per step in the base run"),
    COL("new_ms", "new", 9, CELL_TIME, "ms per step", dpart_new, "the part per step in the new run"),
    COL("delta_ms", "delta", 10, CELL_TIME, "ms per step", dpart_delta, "new_ms - base_ms"),
};

GET(dfind_id, jp_diff_finding, set_str(c, r->id))
GET(dfind_title, jp_diff_finding, set_str(c, r->title))
GET(dfind_severity, jp_diff_finding, set_str(c, jp_rating_name(r->severity)))
GET(dfind_appeared, jp_diff_finding, set_bool(c, r->appeared))

static const column DIFF_FINDING_COLS[] = {
    COL("id", NULL, 0, CELL_STR, NULL, dfind_id, "the finding's stable id"),
    COL("title", NULL, 0, CELL_STR, NULL, dfind_title, "the problem in one line"),
    COL("severity", NULL, 0, CELL_STR, NULL, dfind_severity, "\"warning\" or \"bad\""),
    COL("appeared", NULL, 0, CELL_BOOL, NULL, dfind_appeared, "true: only in the new run; false: only in the base run"),
};

/* ---- launches (launch.c) ----------------------------------------------------------------------- */

/* A mean over n, 0 for none. */
static int64_t mean_ps(int64_t sum, uint64_t n) { return n ? sum / (int64_t)n : 0; }

GET(launch_name, jp_launch_stat, set_str(c, r->name))
GET(launch_device, jp_launch_stat, set_str(c, r->device < a->n_devices ? a->devices[r->device].name : ""))
GET(launch_api_name, jp_launch_stat, set_str(c, r->api))
GET(launch_kernel, jp_launch_stat, set_bool(c, r->kernel))
GET(launch_count, jp_launch_stat, set_int(c, (int64_t)r->count))
GET(launch_matched, jp_launch_stat, set_int(c, (int64_t)r->matched))
GET(launch_kernel_avg, jp_launch_stat, set_time(c, mean_ps(r->kernel_ps, r->count)))
GET(launch_api_avg, jp_launch_stat, set_time(c, mean_ps(r->api_ps, r->matched)))
GET(launch_queue_avg, jp_launch_stat, set_time(c, mean_ps(r->queue_ps, r->matched)))
GET(launch_queue_max, jp_launch_stat, set_time(c, r->queue_max_ps))
GET(launch_delay_avg, jp_launch_stat, set_time(c, mean_ps(r->delay_ps, r->matched)))
GET(launch_delay_max, jp_launch_stat, set_time(c, r->delay_max_ps))
GET(launch_delay_total, jp_launch_stat, set_time(c, r->delay_ps))
GET(launch_kernel_total, jp_launch_stat, set_time(c, r->kernel_ps))
GET(launch_api_total, jp_launch_stat, set_time(c, r->api_ps))
GET(launch_short, jp_launch_stat, set_int(c, (int64_t)r->n_short))
GET(launch_host_wait, jp_launch_stat, set_int(c, (int64_t)r->n_host_wait))

static const column LAUNCH_COLS[] = {
    COL("name", "kernel", 0, CELL_STR, NULL, launch_name, "the kernel, copy or memset"),
    COL("device", "device", 14, CELL_STR, NULL, launch_device, "the device it ran on"),
    COL("count", "count", 6, CELL_INT, NULL, launch_count, "its device events with a correlation id"),
    COL("matched", NULL, 0, CELL_INT, NULL, launch_matched,
        "of those, the ones whose launch call was found on the host; a call that queued several (a CUDA "
        "graph's kernels) counts once, on its first event's row"),
    COL("kernel_avg_ms", "kernel", 9, CELL_TIME, NULL, launch_kernel_avg, "device time per event"),
    COL("api_avg_ms", "api", 9, CELL_TIME, NULL, launch_api_avg, "the launch call's duration, per matched launch"),
    COL("queue_avg_ms", "queue", 9, CELL_TIME, NULL, launch_queue_avg,
        "device start - launch call end, per matched launch (negative: the call returned after the work began)"),
    COL("queue_max_ms", NULL, 0, CELL_TIME, NULL, launch_queue_max, "the longest queue time"),
    COL("delay_avg_ms", "delay", 9, CELL_TIME, NULL, launch_delay_avg,
        "launch delay: device start - launch call start, per matched launch"),
    COL("delay_max_ms", NULL, 0, CELL_TIME, NULL, launch_delay_max, "the longest launch delay"),
    COL("delay_total_ms", "delay_sum", 10, CELL_TIME, NULL, launch_delay_total, "launch delays summed (the sort)"),
    COL("kernel_total_ms", NULL, 0, CELL_TIME, NULL, launch_kernel_total, "device time summed"),
    COL("api_total_ms", NULL, 0, CELL_TIME, NULL, launch_api_total, "launch call time summed"),
    COL("short", "short", 6, CELL_INT, NULL, launch_short, "matched kernels that ran shorter than their launch call"),
    COL("host_wait", "hwait", 6, CELL_INT, NULL, launch_host_wait,
        "launches that found the device idle: the call began after the device's previous work ended"),
    COL("kernel", NULL, 0, CELL_BOOL, NULL, launch_kernel, "true for a kernel, false for a copy or memset"),
    COL("api", NULL, 0, CELL_STR, NULL, launch_api_name, "the launch call (its first matched one), \"\" when none matched"),
};

GET(lstream_device, jp_launch_stream, set_str(c, r->device < a->n_devices ? a->devices[r->device].name : ""))
GET(lstream_name, jp_launch_stream, set_str(c, r->name))
GET(lstream_id, jp_launch_stream, set_int(c, r->id))
GET(lstream_events, jp_launch_stream, set_int(c, (int64_t)r->events))
GET(lstream_launched, jp_launch_stream, set_int(c, (int64_t)r->n_launched))
GET(lstream_first, jp_launch_stream, set_time(c, r->first_ps))
GET(lstream_last, jp_launch_stream, set_time(c, r->last_ps))
GET(lstream_busy, jp_launch_stream, set_time(c, r->busy_ps))
GET(lstream_idle_host, jp_launch_stream, set_time(c, r->idle_host_ps))
GET(lstream_idle_kernel, jp_launch_stream, set_time(c, r->idle_kernel_ps))
GET(lstream_idle_other, jp_launch_stream, set_time(c, r->idle_other_ps))

static const column LAUNCH_STREAM_COLS[] = {
    COL("stream", "stream", 0, CELL_STR, NULL, lstream_name, "the device line (stream) the work ran on, by its name"),
    COL("device", "device", 14, CELL_STR, NULL, lstream_device, "its device"),
    COL("stream_id", NULL, 0, CELL_INT, NULL, lstream_id, "the line's id (the stream id)"),
    COL("events", "events", 8, CELL_INT, NULL, lstream_events, "its device events with a correlation id"),
    COL("launched", "launched", 8, CELL_INT, NULL, lstream_launched,
        "of those, matched to their launch call (a CUDA graph's kernels once)"),
    COL("busy_ms", "busy", 9, CELL_TIME, NULL, lstream_busy, "the union of those events"),
    COL("idle_host_ms", "host", 9, CELL_TIME, NULL, lstream_idle_host,
        "its gaps before work whose launch call began after the stream went idle: waiting for the host"),
    COL("idle_kernel_ms", "k2k", 9, CELL_TIME, NULL, lstream_idle_kernel,
        "its gaps under 10 us before work launched earlier: kernel to kernel"),
    COL("idle_other_ms", "other", 9, CELL_TIME, NULL, lstream_idle_other,
        "its other gaps: launched earlier with a longer gap (another stream, a sync), or launch unknown"),
    COL("first_ms", NULL, 0, CELL_TIME, NULL, lstream_first, "its first event's start"),
    COL("last_ms", NULL, 0, CELL_TIME, NULL, lstream_last,
        "its last event's end (busy + the three idle parts = last - first)"),
};

/* ---- the tables --------------------------------------------------------------------------------- */

/* The rows an analysis keeps for a table: a->FIELD, COUNT of them (rows_FIELD). */
#define ROWS(FIELD, COUNT)                                                  \
    static const void *rows_##FIELD(const jp_analysis *a, size_t *n) {      \
        *n = COUNT;                                                         \
        return a->FIELD;                                                    \
    }
ROWS(devices, a->n_devices)
ROWS(kpis, a->n_kpis)
ROWS(ops, a->n_ops)
ROWS(steps, a->n_steps)
ROWS(scopes, a->n_scopes)
ROWS(kernels, a->n_kernels)
ROWS(memory, a->n_memory)
ROWS(transfers, JP_XFER_COUNT)
ROWS(compiles, a->n_compiles)
ROWS(findings, a->n_findings)
ROWS(lines, a->n_lines)
ROWS(flame, a->n_flame)
ROWS(host_stats, a->n_host_stats)
ROWS(stragglers, a->n_stragglers)
ROWS(modules, a->n_modules)
ROWS(precision, a->n_precision)
ROWS(launches, a->n_launches)
ROWS(comms, a->n_comms)
ROWS(comm_instances, a->n_comm_instances)
ROWS(launch_streams, a->n_launch_streams)

/* A table's name, Python class, sections, columns and doc line. */
#define DEF(NAME, CLASS, WHERE, COLS, DOC) \
    .name = NAME, .py_class = CLASS, .doc = DOC, .where = WHERE, .cols = COLS, .n_cols = N_OF(COLS)
/* Its rows: the analysis's FIELD (the row size is its element's, so getter and size cannot differ). */
#define AT(FIELD) .rows = rows_##FIELD, .row_size = sizeof((const jp_analysis *)0)->FIELD[0]

const jp_table_def jp_table_defs[JP_TABLE_COUNT] = {
    [JP_TABLE_DEVICES] = {DEF("devices", "Device", "every section", DEVICE_COLS, "one device of the profile"),
                          AT(devices)},
    [JP_TABLE_KPIS] = {DEF("kpis", "Kpi", "report, findings", KPI_COLS, "one key performance indicator, rated"),
                       AT(kpis)},
    [JP_TABLE_OPS] = {DEF("ops", "Op", "report, ops; host_ops (hosts)", OP_COLS,
                          "one HLO op (per compiled program), its occurrences summed over the devices it ran on"),
                      AT(ops), .default_sort = "self_ms"},
    [JP_TABLE_STEPS] = {DEF("steps", "Step", "report, steps", STEP_COLS, "one step, with its time broken down"),
                        AT(steps)},
    [JP_TABLE_SCOPES] = {DEF("scopes", "Scope", "report, scopes", SCOPE_COLS,
                             "device time by named_scope path, or host time by TraceAnnotation name"),
                         AT(scopes)},
    [JP_TABLE_KERNELS] = {DEF("kernels", "Kernel", "report, kernels", KERNEL_COLS,
                              "one GPU kernel, its launches summed"),
                          AT(kernels)},
    [JP_TABLE_MEMORY] = {DEF("memory", "AllocatorStat", "report, memory", MEMORY_COLS,
                             "one allocator's use during the capture (GPU/TPU allocator events; none on CPU)"),
                         AT(memory)},
    [JP_TABLE_TRANSFERS] = {DEF("transfers", "Transfer", "report, transfers", TRANSFER_COLS,
                                "host-device transfers of one direction, summed"),
                            AT(transfers)},
    [JP_TABLE_COMPILES] = {DEF("compiles", "Compile", "report, compiles", COMPILE_COLS, "one compile event"),
                           AT(compiles)},
    [JP_TABLE_FINDINGS] = {DEF("findings", "Finding", "report, findings", FINDING_COLS,
                               "a named problem, with its evidence and fix"),
                           AT(findings)},
    [JP_TABLE_LINES] = {DEF("lines", "Line", "report, lines", LINE_COLS, "device self time by the user's source line"),
                        AT(lines)},
    [JP_TABLE_FLAME] = {DEF("flame", "FlameNode", "flame", FLAME_COLS,
                            "a node of the device-time tree by Python call stack, in depth-first order"),
                        AT(flame)},
    [JP_TABLE_HOST_STATS] = {DEF("host_stats", "HostStat", "report, hosts", HOST_COLS,
                                 "one host of a multi-host run (empty for one host)"),
                             AT(host_stats)},
    [JP_TABLE_HOST_STEPS] = {DEF("host_steps", "HostStep", "report, hosts", HOST_STEP_COLS,
                                 "one host's step, by step then host (empty for one host)"),
                             .row_size = sizeof(host_step_row)},
    [JP_TABLE_STRAGGLERS] = {DEF("stragglers", "Straggler", "report, hosts", STRAGGLER_COLS,
                                 "a step in which the hosts waited on one host in collectives"),
                             AT(stragglers)},
    [JP_TABLE_BUFFERS] = {DEF("buffers", "Buffer", "report, memory: modules[].buffers; memory --csv with the module's columns first",
                              BUFFER_COLS, "one buffer live at a compiled module's memory peak (XLA's buffer assignment)"),
                          .json_from = JP_BUFFER_FIRST_COL, .row_size = sizeof(buffer_row)},
    [JP_TABLE_MODULES] = {DEF("modules", "ModuleMemory", "report, memory", MODULE_COLS,
                              "a compiled module's memory at its peak (XLA's buffer assignment); after "
                              "always_live_bytes comes kind_bytes{parameter, output, constant}, after note buffers[] "
                              "(buffers rows) and, with --module, timeline[{bytes, instruction}]"),
                          AT(modules)},
    [JP_TABLE_DIFF_ROWS] = {DEF("diff_rows", "DiffRow", "diff: ops[], scopes[]", DIFF_ROW_COLS,
                                "an op or scope of two runs, paired, with its change per step"),
                            .row_size = sizeof(jp_diff_row)},
    [JP_TABLE_DIFF_BREAKDOWN] = {DEF("diff_breakdown", "DiffPart", "diff: breakdown[]", DIFF_PART_COLS,
                                     "one part of the step time breakdown, per step in both runs"),
                                 .row_size = sizeof(diff_part_row)},
    [JP_TABLE_DIFF_FINDINGS] = {DEF("diff_findings", "DiffFinding", "diff: findings[]", DIFF_FINDING_COLS,
                                    "a finding that appeared in the new run or disappeared from it"),
                                .row_size = sizeof(jp_diff_finding)},
    [JP_TABLE_PRECISION] = {DEF("precision", "Precision", "report, ops", PRECISION_COLS,
                                "op self time by the precision the ops compute in (their dtype), the most first"),
                            AT(precision)},
    [JP_TABLE_LAUNCHES] = {DEF("launches", "Launch", "launch", LAUNCH_COLS,
                               "one kernel (or copy) on one device, its correlated launches summed"),
                           AT(launches)},
    [JP_TABLE_COMM] = {DEF("comm", "Collective", "report, comm", COMM_COLS,
                           "one collective op, its instances on every device (an async start/done pair as one)"),
                       AT(comms)},
    [JP_TABLE_COMM_INSTANCES] = {DEF("comm_instances", "CollectiveInstance", "comm", COMM_INSTANCE_COLS,
                                     "one collective instance: the k-th run of a collective op on each device, "
                                     "across the devices, by earliest start"),
                                 AT(comm_instances)},
    [JP_TABLE_LAUNCH_STREAMS] = {DEF("launch_streams", "LaunchStream", "launch", LAUNCH_STREAM_COLS,
                                     "one stream (device line) with correlated work: its idle gaps by cause"),
                                 AT(launch_streams)},
};

table jp_table_over(int id, const void *rows, size_t n) {
    if (id < 0 || id >= JP_TABLE_COUNT) return (table){.name = ""}; /* no table: no columns, no rows */
    const jp_table_def *d = &jp_table_defs[id];
    return (table){.name = d->name, .cols = d->cols, .n_cols = d->n_cols, .rows = rows, .row_size = d->row_size,
                   .n_rows = n, .default_sort = d->default_sort};
}

table jp_table_of(const jp_analysis *a, int id) {
    size_t n = 0;
    const void *rows = id >= 0 && id < JP_TABLE_COUNT && jp_table_defs[id].rows ? jp_table_defs[id].rows(a, &n) : NULL;
    return jp_table_over(id, rows, n);
}
