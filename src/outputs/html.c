/* html.c - the report as one self-contained HTML page: inline CSS and SVG charts, no scripts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "outputs/table.h"

enum { TOP_ROWS = 20, CHART_W = 960, CHART_H = 240, CHART_LEFT = 70, CHART_BOTTOM = 24 };

/* One colour per jp_part, in enum order (compute ... idle). */
static const char *const PART_COLOURS[JP_PART_COUNT] = {"#4e79a7", "#f28e2b", "#59a14f", "#76b7b2",
                                                        "#edc948", "#e15759", "#b07aa1", "#d3d3d3"};

static const char CSS[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}"
    "h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;margin:8px 0}th,td{padding:3px 8px;border-bottom:1px solid #eee;"
    "text-align:left;vertical-align:top}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "code{font-size:12px;word-break:break-all}.good{color:#2a7d2a}.warning{color:#b36b00}.bad{color:#c0392b}"
    ".sw{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}"
    "svg{max-width:100%;height:auto}.finding{margin:10px 0;padding:6px 10px;border-left:4px solid #b36b00}"
    ".finding.bad{border-color:#c0392b}.finding p{margin:2px 0;color:#222}";

/* ---- escaping and formatting -------------------------------------------------------------------- */

/* Writes s HTML-escaped (text and attribute values); control bytes other than tab and newline
 * become spaces, so no input byte can open a tag, end an attribute or break the parser. */
static void esc(FILE *out, const char *s) {
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(*p < 0x20 && *p != '\t' && *p != '\n' ? ' ' : *p, out); break;
        }
    }
}

static void put_time(FILE *out, double ps) {
    char b[32];
    jp_format_time(b, sizeof b, ps);
    fputs(b, out);
}

static double pct(int64_t part, int64_t whole) { return whole ? 100.0 * (double)part / (double)whole : 0; }

static const char *platform_name(int p) { return p == JP_PLATFORM_GPU ? "GPU" : p == JP_PLATFORM_TPU ? "TPU" : "CPU"; }

static const char *rating_class(int rating) {
    return rating == JP_RATING_GOOD ? "good" : rating == JP_RATING_WARNING ? "warning" : rating == JP_RATING_BAD ? "bad" : "";
}

/* <td class="n">time</td> */
static void td_time(FILE *out, double ps) {
    fputs("<td class=\"n\">", out);
    put_time(out, ps);
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

static void write_head(const jp_analysis *a, FILE *out) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>jaxprof report: ", out);
    esc(out, a->path);
    fprintf(out, "</title><style>%s</style></head>\n<body>\n<h1>jaxprof report</h1>\n", CSS);
}

static void write_overview(const jp_analysis *a, FILE *out) {
    fputs("<section id=\"overview\"><table>\n<tr><th>path</th><td><code>", out);
    esc(out, a->path);
    fputs("</code></td></tr>\n<tr><th>hosts</th><td>", out);
    for (size_t i = 0; i < a->n_hosts; i++) {
        if (i) fputs(", ", out);
        esc(out, a->hosts[i]);
    }
    fprintf(out, "</td></tr>\n<tr><th>platform</th><td>%s</td></tr>\n<tr><th>span</th>", platform_name(a->platform));
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
        td_text(out, platform_name(d->platform));
        td_time(out, (double)d->busy_ps);
        fprintf(out, "<td class=\"n\">%llu</td></tr>\n", (unsigned long long)d->n_ops);
    }
    fputs("</tbody></table></section>\n", out);
}

/* ---- steps ---------------------------------------------------------------------------------------- */

static void write_legend(FILE *out) {
    fputs("<p class=\"legend\">", out);
    for (int p = 0; p < JP_PART_COUNT; p++)
        fprintf(out, "<span class=\"sw\" style=\"background:%s\"></span>%s", PART_COLOURS[p], jp_part_name(p));
    fputs("</p>\n", out);
}

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

/* One bar: the step's parts stacked bottom-up in enum order, scaled so the longest step fills
 * the plot height. A <title> gives the numbers on hover without any script. */
static void write_step_bar(const jp_step *st, double x, double w, double scale, FILE *out) {
    double y = CHART_H - CHART_BOTTOM;
    fprintf(out, "<g class=\"step\"%s><title>step %lld: ", st->outlier ? " stroke=\"#c0392b\"" : "",
            (long long)st->step_num);
    put_time(out, (double)st->dur_ps);
    for (int p = 0; p < JP_PART_COUNT; p++) {
        if (!st->part_ps[p]) continue;
        fprintf(out, ", %s ", jp_part_name(p));
        put_time(out, (double)st->part_ps[p]);
    }
    fputs("</title>", out);
    for (int p = 0; p < JP_PART_COUNT; p++) {
        double h = (double)st->part_ps[p] * scale;
        if (h <= 0) continue;
        y -= h;
        fprintf(out, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>", x, y, w, h,
                PART_COLOURS[p]);
    }
    fputs("</g>\n", out);
}

static void write_axis(const jp_analysis *a, int64_t max_ps, FILE *out) {
    int base = CHART_H - CHART_BOTTOM;
    fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>", CHART_LEFT, base, CHART_W, base);
    fprintf(out, "<line x1=\"%d\" y1=\"4\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n", CHART_LEFT, CHART_LEFT, base);
    fprintf(out, "<text x=\"%d\" y=\"14\" text-anchor=\"end\" font-size=\"11\">", CHART_LEFT - 4);
    put_time(out, (double)max_ps);
    fprintf(out, "</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"11\">0</text>\n", CHART_LEFT - 4, base);
    fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"11\">step %lld</text>", CHART_LEFT, CHART_H - 6,
            (long long)a->steps[0].step_num);
    fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"11\">step %lld</text>\n", CHART_W, CHART_H - 6,
            (long long)a->steps[a->n_steps - 1].step_num);
}

static void write_step_chart(const jp_analysis *a, FILE *out) {
    int64_t max_ps = 1;
    for (size_t i = 0; i < a->n_steps; i++)
        if (a->steps[i].dur_ps > max_ps) max_ps = a->steps[i].dur_ps;
    double slot = (double)(CHART_W - CHART_LEFT - 4) / (double)a->n_steps;
    double scale = (double)(CHART_H - CHART_BOTTOM - 8) / (double)max_ps;
    fprintf(out, "<svg id=\"step-chart\" width=\"%d\" height=\"%d\" "
                 "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"step time breakdown\">\n",
            CHART_W, CHART_H, CHART_W, CHART_H);
    write_axis(a, max_ps, out);
    for (size_t i = 0; i < a->n_steps; i++)
        write_step_bar(&a->steps[i], CHART_LEFT + 4 + slot * (double)i + slot * 0.1, slot * 0.8, scale, out);
    fputs("</svg>\n", out);
}

static void write_steps(const jp_analysis *a, FILE *out) {
    fputs("<section id=\"steps\"><h2>Steps</h2>\n", out);
    if (!a->n_steps) {
        fputs("<p>No steps found (no StepTraceAnnotation and no repeated execution): "
              "<span id=\"step-count\">0</span> steps.</p></section>\n", out);
        return;
    }
    write_step_stats(a, out);
    write_legend(out);
    write_step_chart(a, out);
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
                x, w, PART_COLOURS[p], jp_part_name(p), pct(s->part_ps[p], s->total_ps));
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
        fprintf(out, "<tr><td><span class=\"sw\" style=\"background:%s;margin-left:0\"></span>%s</td>", PART_COLOURS[p],
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
    fprintf(out, "<td class=\"n\">%.1f</td></tr>\n", pct(s->total_ps, base));
}

static void write_scopes(const jp_analysis *a, FILE *out) {
    fputs("<section id=\"scopes\"><h2>Top scopes by total time</h2>\n", out);
    static const char *const cols[] = {"scope", "kind", "count", "total", "self", "%"};
    thead(out, cols, 6);
    size_t i = SIZE_MAX;
    for (int k = 0; k < TOP_ROWS; k++) {
        i = next_ranked(a->scopes, sizeof *a->scopes, a->n_scopes, offsetof(jp_scope_stat, total_ps), i);
        if (i == SIZE_MAX) break;
        write_scope_row(a, &a->scopes[i], out);
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
    write_head(a, out);
    write_overview(a, out);
    write_steps(a, out);
    write_breakdown(a, out);
    write_kpis(a, out);
    if (a->n_ops) write_ops(a, out);
    if (a->n_scopes) write_scopes(a, out);
    write_findings(a, out);
    fprintf(out, "<footer><small>jaxprof %s</small></footer>\n</body></html>\n", JP_VERSION);
    if (fflush(out) != 0 || ferror(out)) return jp_error_set(err, JP_ERR_IO, 0, "html report: write failed");
    return JP_OK;
}

int jp_html_write(const jp_analysis *a, const char *out_path, jp_error *err) {
    jp_error_clear(err);
    if (!a || !out_path || !*out_path) return jp_error_set(err, JP_ERR_ARG, 0, "html report: no output path");
    size_t tmp_len = strlen(out_path) + 5;
    char *tmp = malloc(tmp_len);
    if (!tmp) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    snprintf(tmp, tmp_len, "%s.tmp", out_path);
    int rc = JP_OK;
    FILE *f = fopen(tmp, "wb");
    if (!f) rc = jp_error_set(err, JP_ERR_IO, 0, "%s: cannot create: %s", tmp, strerror(errno));
    if (f) {
        rc = jp_error_prefix(err, jp_html_report(a, f, err), out_path);
        if (fclose(f) != 0 && rc == JP_OK) rc = jp_error_set(err, JP_ERR_IO, 0, "%s: write failed: %s", tmp, strerror(errno));
        if (rc == JP_OK && rename(tmp, out_path) != 0)
            rc = jp_error_set(err, JP_ERR_IO, 0, "%s: cannot rename: %s", out_path, strerror(errno));
        if (rc) unlink(tmp);
    }
    free(tmp);
    return rc;
}
