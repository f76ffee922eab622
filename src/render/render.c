/* render.c - the sections (report, ops, steps, ...) as tables, and jp_render over text, CSV and
 * JSON. The tables' columns are declared in columns.c; docs/json-schema.md is generated from them. */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "render/columns.h"
#include "render/memory_render.h"
#include "render/ops_group.h"
#include "render/safe_text.h"

/* One spelling for every output, JAX's own (jax.devices()[0].platform); JSON consumers compare it. */
static const char *const PLATFORMS[] = {[JP_PLATFORM_CPU] = "cpu", [JP_PLATFORM_GPU] = "gpu", [JP_PLATFORM_TPU] = "tpu"};
_Static_assert(sizeof PLATFORMS / sizeof PLATFORMS[0] == JP_PLATFORM_TPU + 1, "a name per jp_platform");

const char *jp_platform_name(int platform) {
    return platform >= 0 && (size_t)platform < sizeof PLATFORMS / sizeof PLATFORMS[0] ? PLATFORMS[platform] : "?";
}

/* The report's ops table keeps kernels that no XLA op launched apart from the HLO ops. */
static int is_xla_op(const void *row) {
    const jp_op_stat *o = row;
    return !o->no_xla_op && !o->autotuning;
}
/* An op that falls short of a roof it has. */
static int wastes(const void *row) {
    const jp_op_stat *o = row;
    return !o->no_xla_op && o->bound != JP_BOUND_UNKNOWN && o->wasted_ps > 0;
}
static int is_no_xla_op(const void *row) {
    const jp_op_stat *o = row;
    return o->no_xla_op && !o->autotuning;
}
static int is_autotuning(const void *row) { return ((const jp_op_stat *)row)->autotuning; }

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

int jp_host_step_rows(const jp_analysis *a, host_step_row **rows, size_t *n) {
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

/* A section's table, as its registry row names it: the columns and the analysis's rows. The report
 * names none (its tables are the other sections'); hosts names its hosts table, and its CSV is its
 * steps per host (host_step_table); memory names the allocators, its buffers are memory_render.c's. */
static table section_table(const jp_analysis *a, int section) {
    return jp_table_of(a, jp_section_get(section)->table);
}

static table host_step_table(const host_step_row *rows, size_t n) { return jp_table_over(JP_TABLE_HOST_STEPS, rows, n); }

/* The stragglers, rows on one line (as the hand-written array they replace was). */
static table straggler_table(const jp_analysis *a) {
    table t = jp_table_of(a, JP_TABLE_STRAGGLERS);
    t.compact = 1;
    return t;
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

static void json_header(const jp_analysis *a, const char *section, FILE *out) {
    fprintf(out, "{\"schema_version\":%d,\"jaxprof_version\":\"%s\",\"section\":\"%s\",\"path\":",
            JP_JSON_SCHEMA_VERSION, JP_VERSION, section);
    jp_json_fput_cstr(out, a->path);
    fprintf(out, ",\"platform\":\"%s\",\"hosts\":[", jp_platform_name(a->platform));
    for (size_t i = 0; i < a->n_hosts; i++) {
        if (i) fputc(',', out);
        jp_json_fput_cstr(out, a->hosts[i]);
    }
    fprintf(out, "],\"events\":%llu,\"span_ms\":%.6f,\"device_busy_ms\":%.6f,\"device_idle_pct\":%.4f",
            (unsigned long long)a->n_events, (double)a->span_ps / 1e9, (double)a->op_busy_ps / 1e9,
            a->device_idle_pct);
    fputs(",\"capture_health\":[", out); /* what the capture lacks (jp_analysis.health): every document */
    for (size_t i = 0; i < a->n_health; i++) {
        fputs(i ? ",{\"kind\":" : "{\"kind\":", out);
        jp_json_fput_cstr(out, a->health[i].kind);
        fputs(",\"host\":", out);
        jp_json_fput_cstr(out, a->health[i].host);
        fputs(",\"text\":", out);
        jp_json_fput_cstr(out, a->health[i].text);
        fputc('}', out);
    }
    fputc(']', out);
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
    fprintf(out, ",\"summarized_hosts\":%zu,\"clock_method\":", a->n_summarized);
    jp_json_fput_cstr(out, a->clock_method); /* NULL: "" */
    table hosts = section_table(a, JP_SECTION_HOSTS);
    host_step_row *rows;
    size_t n;
    int rc = json_table(a, &hosts, NULL, out, err);
    if (!rc && jp_host_step_rows(a, &rows, &n)) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    if (rc) return rc;
    table steps = host_step_table(rows, n);
    rc = json_table(a, &steps, NULL, out, err);
    free(rows);
    table lags = straggler_table(a);
    if (!rc) rc = json_table(a, &lags, NULL, out, err);
    fputs(",\"host_ops\":{", out);
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

/* The section's second table (JP_SECTION_SECOND_TABLE), or a table of no rows. */
static table second_table(const jp_analysis *a, int section) {
    return jp_table_of(a, jp_section_second_table(section));
}

/* The table view->table names (the section's own or its second), with the view for it. */
static int picked_table(const jp_analysis *a, int section, const jp_view *v) {
    return v && v->table && (jp_section_get(section)->flags & JP_SECTION_SECOND_TABLE) &&
           strcmp(v->table, second_table(a, section).name) == 0;
}

/* ,"launch_queue":{...}: each device's launch queue depth over time (jp_queue_series). */
static void json_launch_queue(const jp_analysis *a, FILE *out) {
    fprintf(out, ",\"launch_queue\":{\"max_points\":%d,\"devices\":[", JP_QUEUE_POINTS_MAX);
    for (size_t i = 0; i < a->n_queue_series; i++) {
        const jp_queue_series *s = &a->queue_series[i];
        fputs(i ? ",{\"device\":" : "{\"device\":", out);
        jp_json_fput_cstr(out, s->device < a->n_devices ? a->devices[s->device].name : "");
        fprintf(out, ",\"changes\":%llu,\"downsampled\":%s,\"bucket_ms\":%.6f,\"points\":[",
                (unsigned long long)s->n_changes, s->bucket_ps ? "true" : "false", (double)s->bucket_ps / 1e9);
        for (size_t k = 0; k < s->n_points; k++)
            fprintf(out, "%s[%.6f,%u]", k ? "," : "", (double)s->points[k].t_ps / 1e9, s->points[k].depth);
        fputs("]}", out);
    }
    fputs("]}", out);
}

static int render_json(const jp_analysis *a, int section, const jp_view *v, FILE *out, jp_error *err) {
    json_header(a, jp_section_name(section), out);
    /* the devices head every document; a section whose table they are has them there, with its view */
    int own = jp_section_get(section)->table == JP_TABLE_DEVICES;
    table devices = jp_table_of(a, JP_TABLE_DEVICES), kpis = jp_table_of(a, JP_TABLE_KPIS);
    int rc = json_table(a, &devices, own ? v : NULL, out, err);
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
        table prec = jp_table_of(a, JP_TABLE_PRECISION);
        if (!rc) rc = json_table(a, &prec, NULL, out, err);
    } else if (section == JP_SECTION_HOSTS) {
        if (!rc) rc = json_hosts(a, v, out, err);
    } else {
        table t = section_table(a, section);
        if (section == JP_SECTION_STEPS) json_step_summary(a, out);
        if (section == JP_SECTION_FINDINGS && !rc) rc = json_table(a, &kpis, NULL, out, err);
        int memory = section == JP_SECTION_MEMORY; /* the view is for its buffers; all allocators */
        if (!rc && !own) rc = json_table(a, &t, memory || picked_table(a, section, v) ? NULL : v, out, err);
        if (memory) json_memory_samples(a, out);
        if (memory && !rc) rc = jp_memory_json(a, v, out, err);
        if (jp_section_get(section)->flags & JP_SECTION_SPLIT_NOTE) json_split_note(a, section, out);
        table prec = jp_table_of(a, JP_TABLE_PRECISION);
        if (section == JP_SECTION_OPS && !rc) rc = json_table(a, &prec, NULL, out, err);
        table second = second_table(a, section); /* every row, unless the view picked it */
        if (!rc && second.n_cols) rc = json_table(a, &second, picked_table(a, section, v) ? v : NULL, out, err);
        if (section == JP_SECTION_LAUNCH) json_launch_queue(a, out);
    }
    fputs("}\n", out);
    return rc;
}

/* report --summary: the few numbers and findings a script or an assistant needs to say what is
 * slow and why, a few kB whatever the profile (docs/cli.md, "report --summary"). */
static const char SUMMARY_OP_COLUMNS[] = "name,category,count,self_ms,pct_time,bound_by,roof_pct,source";
enum { SUMMARY_TOP_OPS = 5, SUMMARY_TOP_SCOPES = 5 };

static int render_summary(const jp_analysis *a, FILE *out, jp_error *err) {
    json_header(a, "summary", out);
    fputs(",\"devices\":", out);
    fprintf(out, "%zu", a->n_devices);
    json_step_summary(a, out);
    table kpis = jp_table_of(a, JP_TABLE_KPIS), findings = jp_table_of(a, JP_TABLE_FINDINGS);
    table ops = jp_table_of(a, JP_TABLE_OPS), scopes = jp_table_of(a, JP_TABLE_SCOPES);
    jp_view top_ops = {.top = SUMMARY_TOP_OPS, .columns = SUMMARY_OP_COLUMNS};
    jp_view top_scopes = {.top = SUMMARY_TOP_SCOPES, .sort = "self_ms", .columns = "scope,kind,self_ms,pct"};
    int rc = json_table(a, &kpis, NULL, out, err);
    if (!rc) rc = json_table(a, &findings, NULL, out, err);
    if (!rc) rc = json_table(a, &ops, &top_ops, out, err);
    if (!rc) rc = json_table(a, &scopes, &top_scopes, out, err);
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

/* The second table's text after the section's own: the comm instances with the longest wait (at
 * most 20, or --top), the launch streams all, with a line on the queue series. */
static int second_text(const jp_analysis *a, int section, const jp_view *v, FILE *out, jp_error *err) {
    table t = second_table(a, section);
    jp_view sv = {.width = v ? v->width : 0, .filter = v ? v->filter : NULL};
    if (!t.n_rows) return JP_OK;
    if (section == JP_SECTION_COMM) {
        sv.top = v && v->top ? v->top : 20, sv.sort = "wait_ms";
        fprintf(out, "\nInstances (%zu: the k-th run of an op on each device; the %zu with the longest wait, "
                     "--table comm_instances or --json has all)\n",
                t.n_rows, t.n_rows < sv.top ? t.n_rows : sv.top);
        return text_table(a, &t, &sv, out, err);
    }
    fputs("\nStreams (each stream's idle gaps by cause, HTA's per-stream split; busy + host + k2k + other = "
          "its first to last)\n", out);
    int rc = text_table(a, &t, &sv, out, err);
    size_t points = 0, sampled = 0;
    for (size_t i = 0; i < a->n_queue_series; i++)
        points += a->queue_series[i].n_points, sampled += a->queue_series[i].bucket_ps != 0;
    if (!rc && a->n_queue_series)
        fprintf(out, "\nLaunch queue depth over time: %zu device(s), %zu points%s (launch --json: launch_queue)\n",
                a->n_queue_series, points, sampled ? ", downsampled where a device changed more often" : "");
    return rc;
}

/* One section as text. */
static int section_text(const jp_analysis *a, int section, const jp_view *view, FILE *out, jp_error *err) {
    if (section == JP_SECTION_REPORT) return report_text(a, view, out, err);
    if (section == JP_SECTION_HOSTS) return hosts_text(a, view, out, err);
    if (section == JP_SECTION_FINDINGS) return findings_only_text(a, view, out, err);
    if (section == JP_SECTION_MEMORY) return memory_text(a, view, out, err);
    if (picked_table(a, section, view)) {
        table second = second_table(a, section);
        return text_table(a, &second, view, out, err);
    }
    table t = section_table(a, section);
    int rc = text_table(a, &t, view, out, err);
    if (!rc && (jp_section_get(section)->flags & JP_SECTION_SECOND_TABLE) && !(view && view->columns))
        rc = second_text(a, section, view, out, err);
    if (rc || !(jp_section_get(section)->flags & JP_SECTION_SPLIT_NOTE) || !split_total(a, section)) return rc;
    char b[32];
    jp_format_time(b, sizeof b, (double)split_total(a, section));
    fprintf(out, "estimated: %s of it, fusions split over their lines by modelled cost (FLOPs, else bytes)\n", b);
    return JP_OK;
}

/* The ops table with view->group: the ops the filter keeps, summed by the group's key
 * (jp_ops_group), rendered as the ops table with the rest of the view. */
static int render_ops_grouped(const jp_analysis *a, int format, const jp_view *view, FILE *out, jp_error *err) {
    table t = section_table(a, JP_SECTION_OPS);
    jp_view pick = {.filter = view->filter};
    size_t *order, n;
    jp_op_stat *rows = NULL;
    int rc = jp_table_select(a, &t, &pick, &order, &n, err);
    if (rc) return rc;
    jp_analysis grouped = *a;
    rc = jp_ops_group(a, order, n, view->group, &rows, &grouped.n_ops, err);
    free(order);
    if (rc) return rc;
    grouped.ops = rows;
    jp_view rest = *view;
    rest.group = rest.filter = NULL;
    rc = jp_render(&grouped, JP_SECTION_OPS, format, &rest, out, err);
    free(rows);
    return rc;
}

/* What the registry says the section does not take: a step window, a module, columns, CSV. */
static int check_section(const jp_analysis *a, const jp_section_def *d, int format, const jp_view *view, jp_error *err) {
    if (a->step_window && (d->flags & JP_SECTION_WHOLE_RUN))
        return jp_error_set(err, JP_ERR_ARG, 0, "%s covers the whole run and takes no step window: %s", d->name,
                            d->whole_run_why);
    if (view && view->module && !(d->flags & JP_SECTION_TAKES_MODULE))
        return jp_error_set(err, JP_ERR_ARG, 0, "%s takes no module: one module in detail is memory's", d->name);
    if (view && view->columns && (d->flags & JP_SECTION_TABLES)) /* several tables */
        return jp_error_set(err, JP_ERR_ARG, 0, "columns picks the columns of one table: use it with ops, steps, ...");
    if (format == JP_FORMAT_CSV && (d->flags & JP_SECTION_NO_CSV))
        return jp_error_set(err, JP_ERR_ARG, 0, "CSV needs a table section (ops, steps, ...)");
    return JP_OK;
}

int jp_render(const jp_analysis *a, int section, int format, const jp_view *view, FILE *out, jp_error *err) {
    jp_error_clear(err);
    const jp_section_def *def = jp_section_get(section);
    if (!def) return jp_error_set(err, JP_ERR_ARG, 0, "unknown section");
    int rc = check_section(a, def, format, view, err);
    if (rc) return rc;
    if (view && view->group && section != JP_SECTION_OPS) return jp_error_set(err, JP_ERR_ARG, 0, "group: ops only");
    if (view && view->table && !picked_table(a, section, view))
        return def->flags & JP_SECTION_SECOND_TABLE
                   ? jp_error_set(err, JP_ERR_ARG, 0, "table '%s': %s's other table is %s", view->table, def->name,
                                  second_table(a, section).name)
                   : jp_error_set(err, JP_ERR_ARG, 0, "table '%s': %s has one table", view->table, def->name);
    if (view && view->group) return render_ops_grouped(a, format, view, out, err);
    if ((def->flags & JP_SECTION_TAKES_MODULE) && view && view->module) { /* an unknown module: an error before any output */
        const jp_module_memory **mods;
        size_t n;
        if ((rc = jp_memory_pick(a, view, &mods, &n, err))) return rc;
        free(mods);
    }
    if (format == JP_FORMAT_SUMMARY) {
        rc = section == JP_SECTION_REPORT ? render_summary(a, out, err)
                                          : jp_error_set(err, JP_ERR_ARG, 0, "the summary is report's alone");
    } else if (format == JP_FORMAT_JSON) {
        rc = render_json(a, section, view, out, err);
    } else if (format == JP_FORMAT_CSV) {
        host_step_row *rows = NULL;
        size_t *order, n;
        table t = section_table(a, section);
        if (section == JP_SECTION_HOSTS && jp_host_step_rows(a, &rows, &n)) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
        if (section == JP_SECTION_HOSTS) t = host_step_table(rows, n); /* one row per host and step */
        if (picked_table(a, section, view)) t = second_table(a, section);
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

/* One line: the ops' self time by the precision they compute in, when the HLO says for any. */
static void precision_text(const jp_analysis *a, FILE *out) {
    if (a->n_precision == 1 && strcmp(a->precision[0].precision, "unknown") == 0) return;
    int64_t all = a->precision_ps;
    fputs("\nPrecision (op self time by the element type ops compute in, from the HLO):", out);
    for (size_t i = 0; i < a->n_precision; i++)
        fprintf(out, " %s %.1f%%", a->precision[i].precision, all ? 100.0 * (double)a->precision[i].self_ps / (double)all : 0);
    fputc('\n', out);
}

/* One line: the ops that recompute (jax.checkpoint, XLA's remat clones), when there are any. */
static void remat_text(const jp_analysis *a, FILE *out) {
    size_t n = 0;
    int64_t self = 0;
    for (size_t i = 0; i < a->n_ops; i++)
        if (a->ops[i].remat) n++, self += a->ops[i].self_ps;
    if (!n) return;
    fprintf(out, "Rematerialised: %zu op%s, %.1f%% of op self time (ops --columns name,self_ms,remat)\n", n,
            n == 1 ? "" : "s", a->op_self_ps ? 100.0 * (double)self / (double)a->op_self_ps : 0);
}

/* The ops that waste the most time short of their roof (ops --sort wasted), when any has a roof. */
static int wasted_text(const jp_analysis *a, const jp_view *top, FILE *out, jp_error *err) {
    size_t n = 0;
    for (size_t i = 0; i < a->n_ops; i++) n += (size_t)wastes(&a->ops[i]);
    if (!n) return JP_OK;
    fputs("\nTop wasted time (self time x (1 - fraction of its roof reached))\n", out);
    table t = section_table(a, JP_SECTION_OPS);
    t.keep = wastes;
    jp_view wv = *top;
    wv.top = top->top < 5 ? top->top : 5;
    wv.sort = "wasted_ms";
    wv.columns = "name,category,pct_time,bound_by,roof_pct,wasted_ms,wasted_pct";
    wv.filter = NULL;
    return text_table(a, &t, &wv, out, err);
}

/* The report of a run merged from its hosts' summaries: the hosts side by side and the findings
 * (the tables of every event need the files: --full). */
static int pod_report_text(const jp_analysis *a, const jp_view *v, int width, FILE *out, jp_error *err) {
    int rc = hosts_text(a, v, out, err);
    fprintf(out, "\nFindings (%zu)\n", a->n_findings);
    findings_text(a, NULL, width, out);
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
    for (size_t i = 0; i < a->n_health; i++) /* the capture's own troubles before anything read from it */
        fprintf(out, "capture health: %s (%s): %s\n", a->health[i].kind, a->health[i].host, a->health[i].text);
    for (size_t i = 0; i < a->n_warnings; i++) fprintf(out, "warning: %s\n", a->warnings[i]);
    if (a->n_summarized) return pod_report_text(a, v, width, out, err);
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
    if (!rc && a->n_ops) precision_text(a, out), remat_text(a, out);
    if (!rc && a->n_ops) rc = wasted_text(a, &top, out, err);
    size_t n_apart = 0, n_tuning = 0;
    int64_t tuning_ps = 0;
    for (size_t i = 0; i < a->n_ops; i++) {
        n_apart += (size_t)is_no_xla_op(&a->ops[i]);
        n_tuning += (size_t)a->ops[i].autotuning;
        tuning_ps += a->ops[i].autotuning ? a->ops[i].self_ps : 0;
    }
    if (!rc && n_apart) {
        fprintf(out, "\nKernels without an XLA op (%zu; not HLO ops, and not in XProf's op tables)\n", n_apart);
        table t = section_table(a, JP_SECTION_OPS);
        t.keep = is_no_xla_op;
        rc = text_table(a, &t, &top, out, err);
    }
    if (!rc && n_tuning) {
        char took[32];
        jp_format_time(took, sizeof took, (double)tuning_ps);
        fprintf(out, "\nAutotuning (%zu ops, %s of device time while XLA compiled: its candidate kernels and checks, "
                     "not your program)\n", n_tuning, took);
        table t = section_table(a, JP_SECTION_OPS);
        t.keep = is_autotuning;
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
    if (!rc && a->n_comms) { /* only where collectives ran */
        fprintf(out, "\nCommunication (%.1f%% of collective time hidden behind compute on the same device; jaxprof comm)\n",
                a->comm_ps ? 100.0 * (double)a->comm_hidden_ps / (double)a->comm_ps : 0);
        table t = section_table(a, JP_SECTION_COMM);
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
            return jp_error_set(err, JP_ERR_ARG, 0, "bad filter regex '%s'", v->filter);
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
    if (a->n_summarized)
        fprintf(out, "%zu of %zu hosts read from their summaries (jaxprof summarize); --full reads every file\n",
                a->n_summarized, a->n_hosts);
    int rc = hosts_summary_text(a, &view, out, err);
    host_step_row *rows;
    size_t n;
    if (!rc && jp_host_step_rows(a, &rows, &n)) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
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
