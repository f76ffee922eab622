/* html.c - the report, and the diff of two runs, as self-contained HTML pages: inline CSS and SVG
 * charts, no scripts. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/outfile.h"
#include "render/charts.h"
#include "render/diff_render.h"
#include "render/table.h"

enum { TOP_ROWS = 20, DIFF_ROWS = 50, LINE_ROWS = 10, CHART_W = JP_CHART_W, CHART_LEFT = JP_CHART_LEFT,
       CHART_BOTTOM = JP_CHART_BOTTOM };

static const char CSS[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}"
    "h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;margin:8px 0}th,td{padding:3px 8px;border-bottom:1px solid #eee;"
    "text-align:left;vertical-align:top}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "code{font-size:12px;word-break:break-all}code.line{white-space:nowrap;word-break:normal}"
    ".good{color:#2a7d2a}.warning{color:#b36b00}.bad{color:#c0392b}"
    ".sw{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}"
    "svg{max-width:100%;height:auto}.finding{margin:10px 0;padding:6px 10px;border-left:4px solid #b36b00}"
    ".finding.bad{border-color:#c0392b}.finding p{margin:2px 0;color:#222}";

/* ---- escaping and formatting -------------------------------------------------------------------- */

static void esc(FILE *out, const char *s) { jp_html_esc(out, s); }

static double pct(int64_t part, int64_t whole) { return whole ? 100.0 * (double)part / (double)whole : 0; }

static const char *rating_class(int rating) {
    return rating == JP_RATING_GOOD ? "good" : rating == JP_RATING_WARNING ? "warning" : rating == JP_RATING_BAD || rating == JP_RATING_ABOVE_PEAK ? "bad" : "";
}

/* <td class="n">time</td> */
static void td_time(FILE *out, double ps) {
    fputs("<td class=\"n\">", out);
    jp_html_put_time(out, ps);
    fputs("</td>", out);
}

static void td_text(FILE *out, const char *s) {
    fputs("<td>", out);
    esc(out, s);
    fputs("</td>", out);
}

static void thead(FILE *out, const char *const *cols, size_t n) {
    fputs("<table><thead><tr>", out);
    for (size_t i = 0; i < n; i++) fprintf(out, "<th>%s</th>", cols[i]);
    fputs("</tr></thead><tbody>\n", out);
}

/* ---- header --------------------------------------------------------------------------------------- */

/* The page up to <body><h1>: `kind` is "report" or "diff", `what` names the input(s); extra_css
 * follows the shared style sheet. */
static void write_head(const char *kind, const char *what, const char *extra_css, FILE *out) {
    fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>jaxprof %s: ", kind);
    esc(out, what);
    fprintf(out, "</title><style>%s%s</style></head>\n<body>\n<h1>jaxprof %s</h1>\n", CSS, extra_css, kind);
}

static void write_overview(const jp_analysis *a, FILE *out) {
    fputs("<section id=\"overview\"><table>\n<tr><th>path</th><td><code>", out);
    esc(out, a->path);
    fputs("</code></td></tr>\n<tr><th>hosts</th><td>", out);
    for (size_t i = 0; i < a->n_hosts; i++) {
        if (i) fputs(", ", out);
        esc(out, a->hosts[i]);
    }
    fprintf(out, "</td></tr>\n<tr><th>platform</th><td>%s</td></tr>\n<tr><th>span</th>", jp_platform_name(a->platform));
    td_time(out, (double)a->span_ps);
    fputs("</tr>\n<tr><th>device busy</th>", out);
    td_time(out, (double)a->op_busy_ps);
    fprintf(out, "</tr>\n<tr><th>events</th><td class=\"n\">%llu</td></tr>\n</table>\n", (unsigned long long)a->n_events);
    static const char *const cols[] = {"device", "host", "platform", "busy", "ops"};
    thead(out, cols, 5);
    for (size_t i = 0; i < a->n_devices; i++) {
        const jp_device *d = &a->devices[i];
        fputs("<tr>", out);
        td_text(out, d->name);
        td_text(out, d->host);
        td_text(out, jp_platform_name(d->platform));
        td_time(out, (double)d->busy_ps);
        fprintf(out, "<td class=\"n\">%llu</td></tr>\n", (unsigned long long)d->n_ops);
    }
    fputs("</tbody></table></section>\n", out);
}

/* ---- steps ---------------------------------------------------------------------------------------- */

static void write_step_stats(const jp_analysis *a, FILE *out) {
    const jp_step_summary *s = &a->step_summary;
    fprintf(out, "<p><span id=\"step-count\">%zu</span> steps (", a->n_steps);
    esc(out, s->method);
    fputs(")</p>\n", out);
    static const char *const cols[] = {"mean", "median", "p90", "std", "min", "max", "total"};
    thead(out, cols, 7);
    fputs("<tr>", out);
    double v[] = {s->mean_ps, s->median_ps, s->p90_ps, s->std_ps, s->min_ps, s->max_ps, (double)s->total_ps};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) td_time(out, v[i]);
    fputs("</tr>\n</tbody></table>\n", out);
}

static void write_steps(const jp_analysis *a, FILE *out) {
    fputs("<section id=\"steps\"><h2>Steps</h2>\n", out);
    if (!a->n_steps) {
        fputs("<p>No steps found (no StepTraceAnnotation and no repeated execution): "
              "<span id=\"step-count\">0</span> steps.</p></section>\n", out);
        return;
    }
    write_step_stats(a, out);
    jp_chart_steps(a, out); /* the legend and the chart */
    fputs("</section>\n", out);
}

/* ---- breakdown and KPIs --------------------------------------------------------------------------- */

static void write_breakdown_bar(const jp_step_summary *s, FILE *out) {
    fprintf(out, "<svg id=\"breakdown-chart\" width=\"%d\" height=\"28\" "
                 "viewBox=\"0 0 %d 28\">",
            CHART_W, CHART_W);
    double x = 0;
    for (int p = 0; p < JP_PART_COUNT; p++) {
        double w = (double)CHART_W * pct(s->part_ps[p], s->total_ps) / 100.0;
        if (w <= 0) continue;
        fprintf(out, "<rect x=\"%.2f\" y=\"0\" width=\"%.2f\" height=\"28\" fill=\"%s\"><title>%s %.1f%%</title></rect>",
                x, w, jp_chart_part_colour(p), jp_part_name(p), pct(s->part_ps[p], s->total_ps));
        x += w;
    }
    fputs("</svg>\n", out);
}

static void write_breakdown(const jp_analysis *a, FILE *out) {
    const jp_step_summary *s = &a->step_summary;
    if (!a->n_steps) return;
    fputs("<section id=\"breakdown\"><h2>Breakdown of step time</h2>\n", out);
    write_breakdown_bar(s, out);
    static const char *const cols[] = {"part", "time", "%"};
    thead(out, cols, 3);
    for (int p = 0; p < JP_PART_COUNT; p++) {
        fprintf(out, "<tr><td><span class=\"sw\" style=\"background:%s;margin-left:0\"></span>%s</td>", jp_chart_part_colour(p),
                jp_part_name(p));
        td_time(out, (double)s->part_ps[p]);
        fprintf(out, "<td class=\"n\">%.1f</td></tr>\n", pct(s->part_ps[p], s->total_ps));
    }
    fputs("</tbody></table></section>\n", out);
}

static void write_kpis(const jp_analysis *a, FILE *out) {
    fputs("<section id=\"kpis\"><h2>KPIs</h2>\n", out);
    static const char *const cols[] = {"kpi", "value", "unit", "rating"};
    thead(out, cols, 4);
    for (size_t i = 0; i < a->n_kpis; i++) {
        const jp_kpi *k = &a->kpis[i];
        fputs("<tr>", out);
        td_text(out, k->name);
        if (k->rating == JP_RATING_NA) fputs("<td class=\"n\">n/a</td><td></td><td>n/a</td></tr>\n", out);
        else {
            fprintf(out, "<td class=\"n\">%.2f</td>", k->value);
            td_text(out, k->unit);
            fprintf(out, "<td class=\"%s\">%s</td></tr>\n", rating_class(k->rating), jp_rating_name(k->rating));
        }
    }
    fputs("</tbody></table></section>\n", out);
}

/* ---- top ops and scopes ----------------------------------------------------------------------------- */

/* Index of the row ranked next after `prev` (SIZE_MAX: the first) by key descending, ties by lower
 * index: the same order as the report's stable sort, picked without allocating. SIZE_MAX at the end. */
static size_t next_ranked(const void *rows, size_t size, size_t n, size_t key_off, size_t prev) {
    const char *base = rows;
    int64_t pk = 0;
    if (prev != SIZE_MAX) memcpy(&pk, base + prev * size + key_off, sizeof pk);
    size_t best = SIZE_MAX;
    int64_t bk = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t k;
        memcpy(&k, base + i * size + key_off, sizeof k);
        int after = prev == SIZE_MAX || k < pk || (k == pk && i > prev);
        if (after && (best == SIZE_MAX || k > bk)) best = i, bk = k;
    }
    return best;
}

static void write_op_row(const jp_analysis *a, const jp_op_stat *o, FILE *out) {
    fputs("<tr><td><code class=\"op\">", out);
    esc(out, o->name);
    fputs("</code></td>", out);
    td_text(out, o->category);
    fprintf(out, "<td class=\"n\">%llu</td>", (unsigned long long)o->count);
    td_time(out, (double)o->total_ps);
    td_time(out, (double)o->self_ps);
    fprintf(out, "<td class=\"n\">%.1f</td><td><code>", pct(o->self_ps, a->op_self_ps));
    esc(out, o->scope);
    fputs("</code></td></tr>\n", out);
}

static void write_ops(const jp_analysis *a, FILE *out) {
    fputs("<section id=\"ops\"><h2>Top ops by self time</h2>\n", out);
    static const char *const cols[] = {"op", "category", "count", "total", "self", "%time", "scope"};
    thead(out, cols, 7);
    size_t i = SIZE_MAX;
    for (int k = 0; k < TOP_ROWS; k++) {
        i = next_ranked(a->ops, sizeof *a->ops, a->n_ops, offsetof(jp_op_stat, self_ps), i);
        if (i == SIZE_MAX) break;
        write_op_row(a, &a->ops[i], out);
    }
    fputs("</tbody></table></section>\n", out);
}

static void write_scope_row(const jp_analysis *a, const jp_scope_stat *s, FILE *out) {
    int64_t base = s->kind == JP_SCOPE_DEVICE ? a->op_self_ps : a->span_ps;
    fputs("<tr><td><code class=\"scope\">", out);
    esc(out, s->path);
    fputs("</code></td>", out);
    td_text(out, s->kind == JP_SCOPE_DEVICE ? "device" : s->user ? "host" : "runtime");
    fprintf(out, "<td class=\"n\">%llu</td>", (unsigned long long)s->count);
    td_time(out, (double)s->total_ps);
    td_time(out, (double)s->self_ps);
    fprintf(out, "<td class=\"n\">%.1f</td></tr>\n", pct(s->wall_ps, base)); /* host: wall time, never > 100 */
}

static void write_scopes(const jp_analysis *a, FILE *out) {
    fputs("<section id=\"scopes\"><h2>Top scopes by total time</h2>\n", out);
    static const char *const cols[] = {"scope", "kind", "count", "total (host: sum over threads)", "self", "% (host: of wall time)"};
    thead(out, cols, 6);
    size_t i = SIZE_MAX;
    for (int k = 0; k < TOP_ROWS; k++) {
        i = next_ranked(a->scopes, sizeof *a->scopes, a->n_scopes, offsetof(jp_scope_stat, total_ps), i);
        if (i == SIZE_MAX) break;
        write_scope_row(a, &a->scopes[i], out);
    }
    fputs("</tbody></table></section>\n", out);
}

/* ---- source lines ------------------------------------------------------------------------------- */

/* path without the directory every user frame shares, as the text output shows it. */
static const char *short_source(const jp_analysis *a, const char *path) {
    size_t n = a->source_prefix ? strlen(a->source_prefix) : 0;
    return path && n && strncmp(path, a->source_prefix, n) == 0 ? path + n : path;
}

static void write_lines(const jp_analysis *a, FILE *out) {
    fputs("<section id=\"lines\"><h2>Top source lines by device time</h2>\n", out);
    static const char *const cols[] = {"line", "function", "self", "% device", "count", "top ops"};
    thead(out, cols, 6);
    for (size_t i = 0; i < a->n_lines && i < LINE_ROWS; i++) {
        const jp_line_stat *l = &a->lines[i];
        fputs("<tr><td><code class=\"line\">", out);
        esc(out, short_source(a, l->source));
        fputs("</code></td>", out);
        td_text(out, l->function);
        td_time(out, (double)l->self_ps);
        fprintf(out, "<td class=\"n\">%.1f</td><td class=\"n\">%llu</td><td><code>", pct(l->self_ps, a->op_self_ps),
                (unsigned long long)l->count);
        esc(out, l->ops);
        fputs("</code></td></tr>\n", out);
    }
    fputs("</tbody></table>\n", out);
    int64_t split = 0;
    for (size_t i = 0; i < a->n_lines; i++) split += a->lines[i].split_ps;
    if (split) /* a fusion of several lines: its split is modelled, not measured */
        fprintf(out, "<p>%.1f%% of this time is estimated: fusions split over their source lines by modelled cost "
                     "(FLOPs, else bytes).</p>\n", pct(split, a->op_self_ps));
    if (a->n_lines > LINE_ROWS)
        fprintf(out, "<p>%zu more lines (jaxprof report --json has them all).</p>\n", a->n_lines - LINE_ROWS);
    fputs("</section>\n", out);
}

/* ---- roofline ----------------------------------------------------------------------------------- */

/* Log-log: each op's FLOP/s against its FLOP per byte accessed (charts.c draws it). */
/* The ops wasting the most time short of their roof (self x (1 - roof fraction)), when any has a
 * roof, and the op time by precision. */
static void write_wasted(const jp_analysis *a, FILE *out) {
    size_t i = next_ranked(a->ops, sizeof *a->ops, a->n_ops, offsetof(jp_op_stat, wasted_ps), SIZE_MAX);
    if (i == SIZE_MAX || a->ops[i].wasted_ps <= 0) return;
    fputs("<h3>Top wasted time</h3><p>Self time &times; (1 &minus; the fraction of its roof the op reaches): "
          "the time it would not need at its roof.</p>\n", out);
    static const char *const cols[] = {"op", "category", "bound by", "% of roof", "wasted", "% of op time"};
    thead(out, cols, 6);
    for (int k = 0; k < TOP_ROWS && i != SIZE_MAX && a->ops[i].wasted_ps > 0; k++) {
        const jp_op_stat *o = &a->ops[i];
        fputs("<tr><td><code class=\"op\">", out);
        esc(out, o->name);
        fputs("</code></td>", out);
        td_text(out, o->category);
        td_text(out, o->bound == JP_BOUND_COMPUTE ? "compute" : "memory");
        fprintf(out, "<td class=\"n\">%.1f</td>", o->roof_pct);
        td_time(out, (double)o->wasted_ps);
        fprintf(out, "<td class=\"n\">%.1f</td></tr>\n", pct(o->wasted_ps, a->op_self_ps));
        i = next_ranked(a->ops, sizeof *a->ops, a->n_ops, offsetof(jp_op_stat, wasted_ps), i);
    }
    fputs("</tbody></table>\n", out);
}

static void write_precision(const jp_analysis *a, FILE *out) {
    if (!a->n_precision || (a->n_precision == 1 && strcmp(a->precision[0].precision, "unknown") == 0)) return;
    fputs("<p id=\"precision\">Op time by the precision ops compute in (HLO element types):", out);
    for (size_t k = 0; k < a->n_precision; k++)
        fprintf(out, "%s %s %.1f%%", k ? "," : "", a->precision[k].precision, pct(a->precision[k].self_ps, a->precision_ps));
    fputs(".</p>\n", out);
}

static void write_roofline(const jp_analysis *a, FILE *out) {
    fputs("<section id=\"roofline\"><h2>Roofline</h2>\n", out);
    jp_chart_roofline(a, out);
    write_wasted(a, out);
    write_precision(a, out);
    fputs("</section>\n", out);
}

/* ---- hosts (multi-host runs) -------------------------------------------------------------------- */

/* The host's step numbered num, looked for at `hint` first (hosts mostly hold the same steps in
 * the same order); NULL when it has none. */
static const jp_step *host_step(const jp_host_stat *hs, int64_t num, size_t hint) {
    if (hint < hs->n_steps && hs->steps[hint].step_num == num) return &hs->steps[hint];
    for (size_t k = 0; k < hs->n_steps; k++)
        if (hs->steps[k].step_num == num) return &hs->steps[k];
    return NULL;
}

/* The hosts' totals, then each step's time on every host (the straggler's cell marked). Steps are
 * listed as the first host has them; a host without that step shows an empty cell. */
static void write_hosts(const jp_analysis *a, FILE *out) {
    fputs("<section id=\"hosts\"><h2>Hosts</h2>\n<p>clocks aligned by ", out);
    esc(out, a->clock_method);
    fputs("</p>\n", out);
    static const char *const cols[] = {"host", "clock", "offset", "mean step", "collective", "waiting", "idle", "straggler in"};
    thead(out, cols, 8);
    for (size_t h = 0; h < a->n_host_stats; h++) {
        const jp_host_stat *hs = &a->host_stats[h];
        fputs("<tr>", out);
        td_text(out, hs->name);
        td_text(out, hs->clock);
        td_time(out, (double)hs->offset_ps);
        td_time(out, hs->step_summary.mean_ps);
        td_time(out, (double)hs->collective_ps);
        td_time(out, (double)hs->wait_ps);
        td_time(out, (double)hs->step_summary.part_ps[JP_PART_IDLE]);
        fprintf(out, "<td class=\"n\">%u steps</td></tr>\n", hs->n_straggling);
    }
    fputs("</tbody></table>\n<table><thead><tr><th>step</th>", out);
    for (size_t h = 0; h < a->n_host_stats; h++) {
        fputs("<th>", out);
        esc(out, a->host_stats[h].name);
        fputs("</th>", out);
    }
    fputs("<th>held the others</th></tr></thead><tbody>\n", out);
    const jp_host_stat *first = &a->host_stats[0];
    for (size_t i = 0; i < first->n_steps; i++) {
        int64_t num = first->steps[i].step_num;
        const jp_straggler *lag = jp_analysis_straggler(a, num);
        fprintf(out, "<tr><td class=\"n\">%lld</td>", (long long)num);
        for (size_t h = 0; h < a->n_host_stats; h++) {
            const jp_step *st = host_step(&a->host_stats[h], num, i);
            fprintf(out, "<td class=\"n%s\">", lag && lag->host == h ? " bad" : "");
            if (st) jp_html_put_time(out, (double)st->dur_ps);
            fputs("</td>", out);
        }
        if (lag) td_time(out, (double)lag->behind_ps);
        else fputs("<td></td>", out);
        fputs("</tr>\n", out);
    }
    fputs("</tbody></table></section>\n", out);
}

/* ---- memory at the peak --------------------------------------------------------------------------- */

/* The buffers shown, the chart's height and most columns (a long timeline is drawn as the largest
 * value per column, so the peak always shows). */
enum { MEM_ROWS = 5, MEM_H = 140, MEM_COLS = 800 };
static const char TEMP_COLOUR[] = "#4e79a7", LIVE_COLOUR[] = "#bab0ac";

/* The module the page shows: the largest peak of those that ran (of all when none ran). */
static const jp_module_memory *largest_module(const jp_analysis *a) {
    for (size_t i = 0; i < a->n_modules; i++)
        if (a->modules[i].runs) return &a->modules[i];
    return a->n_modules ? &a->modules[0] : NULL;
}

static void put_bytes(FILE *out, int64_t bytes) {
    char b[32];
    jp_format_bytes(b, sizeof b, bytes);
    fputs(b, out);
}

/* The heap over program order: the always-live part as a grey band, the temporaries above it as
 * a step area, the peak marked. x: heap events (columns of events when there are many), y: bytes. */
static void write_memory_chart(const jp_module_memory *m, FILE *out) {
    size_t n = m->n_timeline, cols = n < MEM_COLS ? n : MEM_COLS;
    int base = MEM_H - CHART_BOTTOM;
    double plot_w = CHART_W - CHART_LEFT - 4, scale = m->peak_bytes > 0 ? (base - 8) / (double)m->peak_bytes : 0;
    double live_h = (double)m->always_live_bytes * scale;
    fprintf(out, "<svg id=\"memory-chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
                 "aria-label=\"bytes live over program order\">\n", CHART_W, MEM_H, CHART_W, MEM_H);
    fprintf(out, "<path fill=\"%s\" d=\"M%d %d", TEMP_COLOUR, CHART_LEFT, base);
    for (size_t c = 0; c < cols; c++) {
        int64_t top = 0; /* the largest value of the events in this column */
        for (size_t i = c * n / cols; i < (c + 1) * n / cols; i++) top = m->timeline[i] > top ? m->timeline[i] : top;
        fprintf(out, "V%.2fH%.2f", base - (double)top * scale, CHART_LEFT + plot_w * (double)(c + 1) / (double)cols);
    }
    fprintf(out, "V%dZ\"/>\n<rect x=\"%d\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"><title>live all "
                 "along: ", base, CHART_LEFT, base - live_h, plot_w, live_h, LIVE_COLOUR);
    put_bytes(out, m->always_live_bytes);
    fputs("</title></rect>\n", out);
    if (m->peak_index >= 0 && (size_t)m->peak_index + 1 < n) { /* the peak is the value after its event */
        double x = CHART_LEFT + plot_w * ((double)((size_t)(m->peak_index + 1) * cols / n) + 0.5) / (double)cols;
        fprintf(out, "<line x1=\"%.2f\" y1=\"4\" x2=\"%.2f\" y2=\"%d\" stroke=\"#c0392b\" stroke-dasharray=\"3 2\">"
                     "<title>peak ", x, x, base);
        put_bytes(out, m->peak_bytes);
        fputs(" at ", out);
        esc(out, m->peak_instruction);
        fputs("</title></line>\n", out);
    }
    fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>", CHART_LEFT, base, CHART_W, base);
    fprintf(out, "<text x=\"%d\" y=\"14\" text-anchor=\"end\" font-size=\"11\">", CHART_LEFT - 4);
    put_bytes(out, m->peak_bytes);
    fprintf(out, "</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"11\">0</text>\n", CHART_LEFT - 4, base);
    fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"11\">program start</text><text x=\"%d\" y=\"%d\" "
                 "text-anchor=\"end\" font-size=\"11\">%zu heap events</text>\n</svg>\n",
            CHART_LEFT, MEM_H - 6, CHART_W, MEM_H - 6, n - 1);
}

static void write_memory_row(const jp_analysis *a, const jp_buffer *b, FILE *out) {
    size_t prefix = a->source_prefix ? strlen(a->source_prefix) : 0; /* as the lines table: relative */
    fputs("<tr><td class=\"n\">", out);
    put_bytes(out, b->bytes);
    fputs("</td>", out);
    td_text(out, jp_buffer_kind_name(b->kind));
    fputs("<td><code>", out);
    esc(out, b->kind == JP_BUFFER_SMALL ? "(buffers under 16 KiB)" : b->instruction);
    fputs("</code></td><td><code>", out);
    esc(out, b->shape);
    fputs("</code></td><td><code style=\"white-space:nowrap\">", out); /* not class "line": the lines table's */
    esc(out, prefix && strncmp(b->source, a->source_prefix, prefix) == 0 ? b->source + prefix : b->source);
    fputs("</code></td><td><code>", out);
    esc(out, b->op_name);
    fputs("</code></td></tr>\n", out);
}

/* The largest module's peak: what it is made of, the heap over program order, its top buffers. */
static void write_memory(const jp_analysis *a, FILE *out) {
    const jp_module_memory *m = largest_module(a);
    fputs("<section id=\"memory\"><h2>Memory at the peak</h2>\n<p><code>", out);
    esc(out, m->name);
    fputs("</code> (largest peak of the modules that ran): <b id=\"memory-peak\">", out);
    put_bytes(out, m->peak_bytes);
    fputs("</b>", out);
    if (m->peak_index >= 0 && m->n_timeline) {
        fprintf(out, " at heap event %lld of %zu, <code>", (long long)m->peak_index, m->n_timeline - 1);
        esc(out, m->peak_instruction);
        fputs("</code>", out);
    }
    fputs("; temporaries ", out);
    put_bytes(out, m->peak_bytes - m->always_live_bytes);
    fputs(", parameters ", out);
    put_bytes(out, m->kind_bytes[JP_BUFFER_PARAMETER]);
    fputs(", outputs ", out);
    put_bytes(out, m->kind_bytes[JP_BUFFER_OUTPUT]);
    fputs(". <code>jaxprof memory --module ", out);
    esc(out, m->name);
    fputs("</code> lists every buffer.</p>\n", out);
    if (m->n_timeline >= 2) {
        fprintf(out, "<p class=\"legend\"><span class=\"sw\" style=\"background:%s;margin-left:0\"></span>live all "
                     "along (parameters, outputs, constants)<span class=\"sw\" style=\"background:%s\"></span>"
                     "temporaries</p>\n", LIVE_COLOUR, TEMP_COLOUR);
        write_memory_chart(m, out);
    }
    static const char *const cols[] = {"size", "kind", "instruction", "shape", "line", "op_name"};
    thead(out, cols, 6);
    for (size_t i = 0; i < m->n_buffers && i < MEM_ROWS; i++) write_memory_row(a, &m->buffers[i], out);
    fputs("</tbody></table></section>\n", out);
}

/* ---- capture health ------------------------------------------------------------------------------ */

/* What the capture itself lacks (jp_analysis.health), atop the page as the text report has it under
 * its header: nothing below is to be trusted blindly. An error or an empty device is bad (as the
 * capture_health finding rates them), the rest a warning. */
static void write_health(const jp_analysis *a, FILE *out) {
    fprintf(out, "<section id=\"capture-health\"><h2>Capture health (%zu)</h2>\n<ul>\n", a->n_health);
    for (size_t i = 0; i < a->n_health; i++) {
        const jp_health *h = &a->health[i];
        int bad = strcmp(h->kind, "error") == 0 || strcmp(h->kind, "empty device") == 0;
        fprintf(out, "<li class=\"%s\"><b>", bad ? "bad" : "warning");
        esc(out, h->kind);
        fputs("</b> (", out);
        esc(out, h->host);
        fputs("): <span>", out);
        esc(out, h->text);
        fputs("</span></li>\n", out);
    }
    fputs("</ul></section>\n", out);
}

/* ---- communication and launches (many devices) ------------------------------------------------- */

/* The collectives as the text report lists them (jaxprof comm's columns that say the most): the
 * time each took, how much of it compute hid, its size and bus bandwidth, and the devices' wait. */
static void write_comm(const jp_analysis *a, FILE *out) {
    fprintf(out, "<section id=\"communication\"><h2>Communication</h2>\n<p>%.1f%% of collective time hidden "
                 "behind compute on the same device; busbw by the nccl-tests convention; wait: per instance, the "
                 "spread of exposed time across devices (<code>jaxprof comm</code>).</p>\n",
            pct(a->comm_hidden_ps, a->comm_ps));
    static const char *const cols[] = {"collective", "module", "type", "count", "devices", "total", "hidden",
                                       "exposed", "size", "n", "busbw GB/s", "wait", "last"};
    thead(out, cols, sizeof cols / sizeof *cols);
    for (size_t i = 0; i < a->n_comms && i < TOP_ROWS; i++) { /* by total time already */
        const jp_comm_stat *c = &a->comms[i];
        fputs("<tr><td><code class=\"op\">", out);
        esc(out, c->name);
        fputs("</code></td>", out);
        td_text(out, c->module);
        td_text(out, c->type);
        fprintf(out, "<td class=\"n\">%" PRIu64 "</td><td class=\"n\">%u</td>", c->count, c->n_devices);
        td_time(out, (double)c->total_ps);
        td_time(out, (double)c->hidden_ps);
        td_time(out, (double)c->exposed_ps);
        fputs("<td class=\"n\">", out);
        if (c->bytes > 0) put_bytes(out, (int64_t)c->bytes);
        fprintf(out, "</td><td class=\"n\">%u</td><td class=\"n\">", c->group_size);
        if (c->busbw >= 0) fprintf(out, "%.2f", c->busbw / 1e9);
        fputs("</td>", out);
        td_time(out, (double)c->wait_ps);
        td_text(out, c->last_device);
        fputs("</tr>\n", out);
    }
    fputs("</tbody></table></section>\n", out);
}

static int has_launches(const jp_analysis *a) {
    for (size_t d = 0; d < a->n_devices; d++)
        if (a->devices[d].n_launched) return 1;
    return 0;
}

/* Each device's idle between its launched work, by cause (jaxprof launch's device columns). */
static void write_idle_causes(const jp_analysis *a, FILE *out) {
    fputs("<section id=\"idle-causes\"><h2>Device idle by cause</h2>\n<p>Gaps between a device's launched work: "
          "<b>waiting for the host</b> (the launch call began after the device went idle), <b>kernel to kernel</b> "
          "(launched earlier, gap under 10 &micro;s), <b>other</b> (longer gaps: a dependency, a sync, a "
          "compile; <code>jaxprof launch</code>).</p>\n", out);
    static const char *const cols[] = {"device", "waiting for the host", "kernel to kernel", "other", "launches",
                                       "short kernels", "queue max", "queue mean"};
    thead(out, cols, sizeof cols / sizeof *cols);
    for (size_t i = 0; i < a->n_devices; i++) {
        const jp_device *d = &a->devices[i];
        if (!d->n_launched) continue;
        fputs("<tr>", out);
        td_text(out, d->name);
        td_time(out, (double)d->idle_host_ps);
        td_time(out, (double)d->idle_kernel_ps);
        td_time(out, (double)d->idle_other_ps);
        fprintf(out, "<td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%u</td>"
                     "<td class=\"n\">%.1f</td></tr>\n", d->n_launched, d->n_short, d->queue_max, d->queue_mean);
    }
    fputs("</tbody></table></section>\n", out);
}

/* ---- findings ----------------------------------------------------------------------------------- */

static void write_findings(const jp_analysis *a, FILE *out) {
    fprintf(out, "<section id=\"findings\"><h2>Findings (%zu)</h2>\n", a->n_findings);
    if (!a->n_findings) fputs("<p>None: no known problem pattern in this profile.</p>\n", out);
    for (size_t i = 0; i < a->n_findings; i++) {
        const jp_finding *f = &a->findings[i];
        const char *cls = rating_class(f->severity);
        fprintf(out, "<div class=\"finding %s\"><h3><span class=\"%s\">[%s]</span> ", cls, cls, jp_rating_name(f->severity));
        esc(out, f->title);
        fputs(" <small>(", out);
        esc(out, f->id);
        fputs(")</small></h3><p><b>evidence:</b> ", out);
        esc(out, f->evidence);
        fputs("</p><p><b>fix:</b> ", out);
        esc(out, f->fix);
        fputs("</p></div>\n", out);
    }
    fputs("</section>\n", out);
}

/* ---- entry points --------------------------------------------------------------------------------- */

int jp_html_report(const jp_analysis *a, FILE *out, jp_error *err) {
    jp_error_clear(err);
    if (!a || !out) return jp_error_set(err, JP_ERR_ARG, 0, "html report: no analysis or no output");
    write_head("report", a->path, "", out);
    if (a->n_health) write_health(a, out);
    write_overview(a, out);
    write_steps(a, out);
    write_breakdown(a, out);
    if (a->n_host_stats) write_hosts(a, out);
    write_kpis(a, out);
    if (a->n_lines) write_lines(a, out);
    if (a->n_ops) write_ops(a, out);
    if (a->n_ops) write_roofline(a, out);
    if (a->n_scopes) write_scopes(a, out);
    if (a->n_modules) write_memory(a, out);
    if (a->n_comms) write_comm(a, out);
    if (has_launches(a)) write_idle_causes(a, out);
    write_findings(a, out);
    fprintf(out, "<footer><small>jaxprof %s</small></footer>\n</body></html>\n", JP_VERSION);
    if (fflush(out) != 0 || ferror(out)) return jp_error_set(err, JP_ERR_IO, 0, "html report: write failed");
    return JP_OK;
}

static int write_report_page(const void *a, FILE *out, jp_error *err) { return jp_html_report(a, out, err); }

int jp_html_write(const jp_analysis *a, const char *out_path, const jp_temp_hook *temp, jp_error *err) {
    jp_error_clear(err);
    if (!a || !out_path || !*out_path) return jp_error_set(err, JP_ERR_ARG, 0, "html report: no output path");
    int rc = a->path ? jp_profile_output_check(a->path, out_path, err) : JP_OK;
    return rc == JP_OK ? jp_outfile_write(out_path, temp, write_report_page, a, err) : rc;
}

/* ---- the diff page ---------------------------------------------------------------------------------- */

/* Rows are tinted by their change: red for time gained, green for time saved. Names wrap only
 * where put_code allows (after '/' and '.'), never inside a word; only a name with a part too long
 * for any column (data-long) may break anywhere. */
static const char DIFF_CSS[] =
    "tr.slower td{background:#fdecea}tr.added td{background:#fff1e0}tr.faster td{background:#e8f5e9}"
    "tr.removed td{background:#f1f4f8;color:#555}.verdict{font-weight:600}.verdict.slower{color:#c0392b}"
    ".verdict.faster{color:#2a7d2a}.appeared{color:#c0392b}.disappeared{color:#2a7d2a}"
    "code{word-break:normal}code[data-long]{overflow-wrap:anywhere}";

enum { LONG_PART = 40 }; /* a name part (between '/' and '.') longer than this may break anywhere */

/* Whether s has a part longer than LONG_PART bytes between separators. */
static int has_long_part(const char *s) {
    size_t run = 0;
    for (; *s; s++) {
        run = *s == '/' || *s == '.' ? 0 : run + 1;
        if (run > LONG_PART) return 1;
    }
    return 0;
}

/* A name (op, scope path, file path) as <code>, escaped, with a break opportunity (<wbr>) after
 * each '/' and '.', so a long one wraps between its parts. attrs is markup of ours (" class=..."). */
static void put_code(FILE *out, const char *attrs, const char *s) {
    s = s ? s : "";
    fprintf(out, "<code%s%s>", attrs, has_long_part(s) ? " data-long" : "");
    for (const char *p = s; *p; p++) {
        char one[2] = {*p, '\0'};
        esc(out, one);
        if (*p == '/' || *p == '.') fputs("<wbr>", out);
    }
    fputs("</code>", out);
}

/* "+1.20 ms": signed, so a glance tells slower from faster. */
static void put_delta(FILE *out, double ps) {
    if (ps > 0) fputc('+', out);
    jp_html_put_time(out, ps);
}

static void td_delta(FILE *out, double ps) {
    fputs("<td class=\"n\">", out);
    put_delta(out, ps);
    fputs("</td>", out);
}

static void write_diff_overview(const jp_diff *d, FILE *out) {
    fputs("<section id=\"overview\"><table>\n<tr><th>base</th><td>", out);
    put_code(out, " id=\"base-path\"", d->base_path);
    fputs("</td></tr>\n<tr><th>new</th><td>", out);
    put_code(out, " id=\"new-path\"", d->new_path);
    fprintf(out, "</td></tr>\n<tr><th>steps</th><td>%zu &rarr; %zu</td></tr>\n</table></section>\n",
            d->steps.base_n, d->steps.new_n);
}

static void write_diff_steps(const jp_diff *d, FILE *out) {
    const jp_diff_steps *s = &d->steps;
    const char *v = jp_diff_verdict(s);
    fputs("<section id=\"steps\"><h2>Step time</h2>\n<p>mean ", out);
    jp_html_put_time(out, s->base_mean_ps);
    fputs(" &rarr; ", out);
    jp_html_put_time(out, s->new_mean_ps);
    fprintf(out, ": <span class=\"verdict %s\" id=\"verdict\">%+.1f%% &plusmn; %.1f%% noise, %s</span></p>\n", v,
            s->change_pct, s->noise_pct, v);
    static const char *const cols[] = {"per step", "base", "new", "change"};
    thead(out, cols, 4);
    const char *names[] = {"mean", "median", "p90"};
    double base[] = {s->base_mean_ps, s->base_median_ps, s->base_p90_ps};
    double now[] = {s->new_mean_ps, s->new_median_ps, s->new_p90_ps};
    for (size_t i = 0; i < 3; i++) {
        fprintf(out, "<tr><th>%s</th>", names[i]);
        td_time(out, base[i]);
        td_time(out, now[i]);
        td_delta(out, now[i] - base[i]);
        fputs("</tr>\n", out);
    }
    fputs("</tbody></table></section>\n", out);
}

/* One horizontal bar per run: its parts side by side in enum order, both on one scale so the
 * longer step shows as the longer bar. */
static void write_diff_bar(const char *label, const double *part_ps, double scale, double y, FILE *out) {
    double x = CHART_LEFT;
    fprintf(out, "<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\" font-size=\"12\">%s</text>", CHART_LEFT - 6, y + 17,
            label);
    for (int p = 0; p < JP_PART_COUNT; p++) {
        double w = part_ps[p] * scale;
        if (!(w > 0)) continue;
        fprintf(out, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"24\" fill=\"%s\"><title>%s %s ", x, y, w,
                jp_chart_part_colour(p), label, jp_part_name(p));
        jp_html_put_time(out, part_ps[p]);
        fputs("</title></rect>", out);
        x += w;
    }
    fputc('\n', out);
}

static double part_sum(const double *part_ps) {
    double t = 0;
    for (int p = 0; p < JP_PART_COUNT; p++) t += part_ps[p] > 0 ? part_ps[p] : 0;
    return t;
}

static void write_diff_breakdown(const jp_diff *d, FILE *out) {
    const jp_diff_steps *s = &d->steps;
    double longest = part_sum(s->base_part_ps) > part_sum(s->new_part_ps) ? part_sum(s->base_part_ps) : part_sum(s->new_part_ps);
    double scale = longest > 0 ? (double)(CHART_W - CHART_LEFT - 4) / longest : 0;
    fputs("<section id=\"breakdown\"><h2>Breakdown per step</h2>\n", out);
    jp_chart_part_legend(out);
    fprintf(out, "<svg id=\"breakdown-chart\" width=\"%d\" height=\"64\" viewBox=\"0 0 %d 64\" role=\"img\" "
                 "aria-label=\"step breakdown, base and new\">\n", CHART_W, CHART_W);
    write_diff_bar("base", s->base_part_ps, scale, 2, out);
    write_diff_bar("new", s->new_part_ps, scale, 34, out);
    fputs("</svg>\n", out);
    static const char *const cols[] = {"part", "base", "new", "delta"};
    thead(out, cols, 4);
    for (int p = 0; p < JP_PART_COUNT; p++) {
        fprintf(out, "<tr><td><span class=\"sw\" style=\"background:%s;margin-left:0\"></span>%s</td>", jp_chart_part_colour(p),
                jp_part_name(p));
        td_time(out, s->base_part_ps[p]);
        td_time(out, s->new_part_ps[p]);
        td_delta(out, s->new_part_ps[p] - s->base_part_ps[p]);
        fputs("</tr>\n", out);
    }
    fputs("</tbody></table></section>\n", out);
}

static void write_diff_row(const jp_diff_row *r, int is_op, FILE *out) {
    int one_sided = r->change == JP_CHANGE_ADDED || r->change == JP_CHANGE_REMOVED;
    fprintf(out, "<tr class=\"%s\"><td>%s</td>", jp_change_name(r->change), jp_change_name(r->change));
    td_delta(out, r->delta_ps);
    if (one_sided) fprintf(out, "<td class=\"n\">%s</td>", r->change == JP_CHANGE_ADDED ? "new" : "gone");
    else fprintf(out, "<td class=\"n\">%+.1f%%</td>", r->delta_pct);
    td_time(out, r->base_ps);
    td_time(out, r->new_ps);
    fprintf(out, "<td class=\"n\">%.3g &rarr; %.3g</td><td>", r->base_count, r->new_count);
    put_code(out, is_op ? " class=\"op\"" : " class=\"scope\"", r->name);
    /* An op XLA renamed, or a scope under a layer that an insertion renumbered. */
    if (r->base_name && *r->base_name && strcmp(r->base_name, r->name) != 0) {
        fputs(" <small>was ", out);
        put_code(out, " class=\"base-name\"", r->base_name);
        fputs("</small>", out);
    }
    fputs("</td>", out);
    td_text(out, r->category);
    if (is_op) {
        fputs("<td>", out);
        put_code(out, "", r->scope);
        fputs("</td>", out);
    }
    td_text(out, jp_match_name(r->match));
    fputs("</tr>\n", out);
}

static void write_diff_rows(const char *id, const char *title, const jp_diff_row *rows, size_t n, FILE *out) {
    int is_op = strcmp(id, "ops") == 0;
    fprintf(out, "<section id=\"%s\"><h2>%s</h2>\n", id, title);
    static const char *const op_cols[] = {"change", "&Delta;/step", "&Delta;%", "base", "new", "count/step", "op",
                                          "category", "scope", "match"};
    static const char *const scope_cols[] = {"change", "&Delta;/step", "&Delta;%", "base", "new", "count/step", "scope",
                                             "kind", "match"};
    if (is_op) thead(out, op_cols, 10);
    else thead(out, scope_cols, 9);
    for (size_t i = 0; i < n && i < DIFF_ROWS; i++) write_diff_row(&rows[i], is_op, out);
    fputs("</tbody></table>\n", out);
    if (n > DIFF_ROWS) fprintf(out, "<p>%zu more rows (jaxprof diff --json has them all).</p>\n", n - DIFF_ROWS);
    fputs("</section>\n", out);
}

static void write_diff_findings(const jp_diff *d, FILE *out) {
    fprintf(out, "<section id=\"findings\"><h2>Findings that changed (%zu)</h2>\n", d->n_findings);
    if (!d->n_findings) fputs("<p>None: the same findings in both runs.</p>\n", out);
    for (size_t i = 0; i < d->n_findings; i++) {
        const jp_diff_finding *f = &d->findings[i];
        const char *cls = rating_class(f->severity);
        fprintf(out, "<div class=\"finding %s\"><span class=\"%s\">%s</span> <span class=\"%s\">[%s]</span> ",
                cls, f->appeared ? "appeared" : "disappeared", f->appeared ? "+ appeared" : "&minus; disappeared", cls,
                jp_rating_name(f->severity));
        esc(out, f->title);
        fputs(" <small>(", out);
        esc(out, f->id);
        fputs(")</small></div>\n", out);
    }
    fputs("</section>\n", out);
}

static void write_diff_summary(const jp_diff *d, FILE *out) {
    fputs("<section id=\"summary\"><h2>Summary</h2>\n<p>ops:", out);
    for (int c = 0; c < JP_CHANGE_COUNT; c++) fprintf(out, "%s %zu %s", c ? "," : "", d->op_changes[c], jp_change_name(c));
    fputs("<br>scopes:", out);
    for (int c = 0; c < JP_CHANGE_COUNT; c++) fprintf(out, "%s %zu %s", c ? "," : "", d->scope_changes[c], jp_change_name(c));
    fputs("<br>ops matched by", out);
    for (int m = 0; m < JP_MATCH_COUNT; m++) fprintf(out, "%s %s %zu", m ? "," : "", jp_match_name(m), d->op_matches[m]);
    fprintf(out, "<br>a row changes when its self time per step moves by more than %.3g%% and by at least %.3g%% of "
                 "the base step</p></section>\n",
            d->options.min_change_pct, d->options.min_share_pct);
}

static int write_diff_page(const void *obj, FILE *out, jp_error *err) {
    const jp_diff *d = obj;
    write_head("diff", d->new_path, DIFF_CSS, out);
    write_diff_overview(d, out);
    write_diff_steps(d, out);
    write_diff_breakdown(d, out);
    write_diff_rows("ops", "Ops by change in self time per step", d->ops, d->n_ops, out);
    write_diff_rows("scopes", "Scopes by change in self time per step", d->scopes, d->n_scopes, out);
    write_diff_findings(d, out);
    write_diff_summary(d, out);
    fprintf(out, "<footer><small>jaxprof %s</small></footer>\n</body></html>\n", JP_VERSION);
    if (fflush(out) != 0 || ferror(out)) return jp_error_set(err, JP_ERR_IO, 0, "html diff: write failed");
    return JP_OK;
}

int jp_html_diff_write(const jp_diff *d, const char *out_path, const jp_temp_hook *temp, jp_error *err) {
    jp_error_clear(err);
    if (!d || !out_path || !*out_path) return jp_error_set(err, JP_ERR_ARG, 0, "html diff: no diff or no output path");
    int rc = d->base_path && *d->base_path ? jp_profile_output_check(d->base_path, out_path, err) : JP_OK;
    if (rc == JP_OK && d->new_path && *d->new_path) rc = jp_profile_output_check(d->new_path, out_path, err);
    return rc == JP_OK ? jp_outfile_write(out_path, temp, write_diff_page, d, err) : rc;
}
