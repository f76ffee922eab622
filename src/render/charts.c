/* charts.c - the step chart and the roofline as SVG, drawn once: the HTML report (html.c) and the
 * viewer's chart endpoint (viewer.c) both embed what these write. No scripts: a <title> per bar and
 * per dot gives the numbers on hover. */
#include <math.h>
#include <string.h>

#include "render/charts.h"
#include "render/table.h"

enum { CHART_W = JP_CHART_W, CHART_H = JP_CHART_H, CHART_LEFT = JP_CHART_LEFT, CHART_BOTTOM = JP_CHART_BOTTOM };
/* The roofline: its most ops and the plot box inside its SVG. */
enum { ROOF_DOTS = 50, STEP_DOTS = 200, ROOF_W = 760, ROOF_H = 420, ROOF_LEFT = 96, ROOF_RIGHT = 32, ROOF_TOP = 12, ROOF_BOTTOM = 44 };

/* One colour per jp_part, in enum order (compute ... idle). */
static const char *const PART_COLOURS[JP_PART_COUNT] = {"#4e79a7", "#f28e2b", "#59a14f", "#76b7b2",
                                                        "#edc948", "#e15759", "#b07aa1", "#d3d3d3"};

/* Roofline dots by the roof they sit under (jp_bound order: unknown, compute, memory). */
static const char *const BOUND_COLOURS[] = {"#888888", "#e15759", "#4e79a7"};
static const char *const BOUND_NAMES[] = {"bound unknown", "compute bound", "memory bound"};
static const char *const STEP_COLOUR = "#59a14f"; /* a step as one program: a square */

const char *jp_chart_part_colour(int part) {
    return part >= 0 && part < JP_PART_COUNT ? PART_COLOURS[part] : PART_COLOURS[JP_PART_COUNT - 1];
}

/* Writes s HTML-escaped (text and attribute values); control bytes other than tab and newline
 * become spaces, so no input byte can open a tag, end an attribute or break the parser. */
void jp_html_esc(FILE *out, const char *s) {
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

static void esc(FILE *out, const char *s) { jp_html_esc(out, s); }

void jp_html_put_time(FILE *out, double ps) {
    char b[32];
    jp_format_time(b, sizeof b, ps);
    fputs(b, out);
}

static double pct(int64_t part, int64_t whole) { return whole ? 100.0 * (double)part / (double)whole : 0; }

/* ---- the step chart ------------------------------------------------------------------------------- */

void jp_chart_part_legend(FILE *out) {
    fputs("<p class=\"legend\">", out);
    for (int p = 0; p < JP_PART_COUNT; p++)
        fprintf(out, "<span class=\"sw\" style=\"background:%s\"></span>%s", PART_COLOURS[p], jp_part_name(p));
    fputs("</p>\n", out);
}

/* One bar: the step's parts stacked bottom-up in enum order, scaled so the longest step fills
 * the plot height. A <title> gives the numbers on hover without any script. */
static void write_step_bar(const jp_step *st, double x, double w, double scale, FILE *out) {
    double y = CHART_H - CHART_BOTTOM;
    fprintf(out, "<g class=\"step\"%s><title>step %lld: ", st->outlier ? " stroke=\"#c0392b\"" : "",
            (long long)st->step_num);
    jp_html_put_time(out, (double)st->dur_ps);
    for (int p = 0; p < JP_PART_COUNT; p++) {
        if (!st->part_ps[p]) continue;
        fprintf(out, ", %s ", jp_part_name(p));
        jp_html_put_time(out, (double)st->part_ps[p]);
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
    jp_html_put_time(out, (double)max_ps);
    fprintf(out, "</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"11\">0</text>\n", CHART_LEFT - 4, base);
    fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"11\">step %lld</text>", CHART_LEFT, CHART_H - 6,
            (long long)a->steps[0].step_num);
    fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"11\">step %lld</text>\n", CHART_W, CHART_H - 6,
            (long long)a->steps[a->n_steps - 1].step_num);
}

void jp_chart_steps(const jp_analysis *a, FILE *out) {
    if (!a->n_steps) return;
    jp_chart_part_legend(out);
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

/* ---- the roofline -------------------------------------------------------------------------------- */

/* A log-log plot: whole decades of arithmetic intensity (FLOP/byte) across, of FLOP/s up. */
typedef struct roof_plot {
    double x_lo, x_hi;    /* log10 of the intensity range */
    double y_lo, y_hi;    /* log10 of the FLOP/s range */
    const jp_device *dev; /* the device whose roofs are drawn, NULL when no device has both peaks */
} roof_plot;

static double op_intensity(const jp_op_stat *o) { return o->flops / o->bytes; }

/* Devices that ran ops: a step's FLOPs are theirs together, so its point is their mean FLOP/s
 * against one device's roofs (its roof_pct is against their summed roofs: the same fraction). */
static double op_devices(const jp_analysis *a) {
    size_t n = 0;
    for (size_t d = 0; d < a->n_devices; d++) n += a->devices[d].n_ops > 0;
    return n ? (double)n : 1;
}

/* Whether step s has a point: FLOPs, bytes and time, on finite axes. */
static int step_placed(const jp_step *s) {
    return s->flops > 0 && s->bytes > 0 && s->dur_ps > 0 && isfinite(s->flops / s->bytes) &&
           isfinite(s->flops / ((double)s->dur_ps * 1e-12));
}
static double step_intensity(const jp_step *s) { return s->flops / s->bytes; }
static double step_flops_s(const jp_analysis *a, const jp_step *s) {
    return s->flops / ((double)s->dur_ps * 1e-12) / op_devices(a);
}
static double op_flops_s(const jp_op_stat *o) { return o->flops / ((double)o->total_ps * 1e-12); }

static double roof_x(const roof_plot *p, double intensity) {
    return ROOF_LEFT + (log10(intensity) - p->x_lo) / (p->x_hi - p->x_lo) * (ROOF_W - ROOF_LEFT - ROOF_RIGHT);
}

static double roof_y(const roof_plot *p, double flops_s) {
    return ROOF_TOP + (p->y_hi - log10(flops_s)) / (p->y_hi - p->y_lo) * (ROOF_H - ROOF_TOP - ROOF_BOTTOM);
}

/* The ROOF_DOTS ops with FLOP and byte counts and the most self time, most first (ties: the lower
 * index), kept by insertion into the short sorted list `pick`: one pass, no allocation. Returns how
 * many were picked; *counted is how many ops have the counts. */
static size_t roof_ops(const jp_analysis *a, size_t *pick, size_t *counted) {
    size_t n = 0;
    *counted = 0;
    for (size_t i = 0; i < a->n_ops; i++) {
        const jp_op_stat *o = &a->ops[i];
        if (!(o->flops > 0 && o->bytes > 0 && o->total_ps > 0)) continue;
        if (!isfinite(op_intensity(o)) || !isfinite(op_flops_s(o))) continue; /* no point on a finite axis */
        ++*counted;
        size_t at = n;
        while (at > 0 && a->ops[pick[at - 1]].self_ps < o->self_ps) at--;
        if (at >= ROOF_DOTS) continue;
        if (n < ROOF_DOTS) n++;
        memmove(pick + at + 1, pick + at, (n - 1 - at) * sizeof *pick);
        pick[at] = i;
    }
    return n;
}

/* Widens [*lo, *hi] (log10 values) to whole decades, at least two of them. */
static void decades(double *lo, double *hi) {
    *lo = floor(*lo);
    *hi = ceil(*hi);
    if (*hi - *lo < 2) *lo -= 1, *hi = *lo + 3;
}

/* Whether dev's roofs can be drawn: both peaks known, and its ridge and peak on a finite axis. */
static int has_roofs(const jp_device *dev) {
    return dev->peak_flops > 0 && dev->peak_bw > 0 && isfinite(dev->peak_flops) && isfinite(dev->peak_flops / dev->peak_bw);
}

/* The axes' ranges: every dot, and the ridge and the compute peak when there are roofs. */
static void roof_ranges(const jp_analysis *a, const size_t *pick, size_t n, roof_plot *p) {
    p->dev = NULL;
    for (size_t d = 0; d < a->n_devices && !p->dev; d++)
        if (has_roofs(&a->devices[d])) p->dev = &a->devices[d];
    p->x_lo = p->y_lo = INFINITY;
    p->x_hi = p->y_hi = -INFINITY;
    for (size_t k = 0; k < n; k++) {
        double x = log10(op_intensity(&a->ops[pick[k]])), y = log10(op_flops_s(&a->ops[pick[k]]));
        p->x_lo = fmin(p->x_lo, x), p->x_hi = fmax(p->x_hi, x);
        p->y_lo = fmin(p->y_lo, y), p->y_hi = fmax(p->y_hi, y);
    }
    for (size_t k = 0; k < a->n_steps && k < STEP_DOTS; k++) {
        if (!step_placed(&a->steps[k])) continue;
        double x = log10(step_intensity(&a->steps[k])), y = log10(step_flops_s(a, &a->steps[k]));
        p->x_lo = fmin(p->x_lo, x), p->x_hi = fmax(p->x_hi, x);
        p->y_lo = fmin(p->y_lo, y), p->y_hi = fmax(p->y_hi, y);
    }
    if (p->dev) {
        double ridge = log10(p->dev->peak_flops / p->dev->peak_bw), peak = log10(p->dev->peak_flops);
        p->x_lo = fmin(p->x_lo, ridge - 1), p->x_hi = fmax(p->x_hi, ridge + 1);
        p->y_lo = fmin(p->y_lo, peak - 3), p->y_hi = fmax(p->y_hi, peak + 0.35); /* room for its label */
    }
    decades(&p->x_lo, &p->x_hi);
    decades(&p->y_lo, &p->y_hi);
}

/* "1 GFLOP/s", "100 TFLOP/s": a power of ten in SI prefixes. */
static void put_rate(FILE *out, int exp10, const char *unit) {
    static const char prefixes[] = " kMGTPEZY";
    if (exp10 < 0 || exp10 >= 27) {
        fprintf(out, "1e%d %s", exp10, unit);
        return;
    }
    int zeros = exp10 % 3;
    fprintf(out, "%s %c%s", zeros == 0 ? "1" : zeros == 1 ? "10" : "100", prefixes[exp10 / 3], unit);
}

/* Grid lines and labels, one per decade (every other one on a wide axis). */
static void write_roof_axes(const roof_plot *p, FILE *out) {
    int bottom = ROOF_H - ROOF_BOTTOM, right = ROOF_W - ROOF_RIGHT;
    int x_step = p->x_hi - p->x_lo > 8 ? 2 : 1, y_step = p->y_hi - p->y_lo > 8 ? 2 : 1;
    for (int e = (int)p->x_lo; e <= (int)p->x_hi; e += x_step) {
        double x = roof_x(p, pow(10, e));
        fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>"
                     "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"11\">%g</text>\n",
                x, ROOF_TOP, x, bottom, x, bottom + 14, pow(10, e));
    }
    for (int e = (int)p->y_hi; e >= (int)p->y_lo; e -= y_step) {
        double y = roof_y(p, pow(10, e));
        fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>"
                     "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">",
                ROOF_LEFT, y, right, y, ROOF_LEFT - 4, y + 4);
        put_rate(out, e, "FLOP/s");
        fputs("</text>\n", out);
    }
    fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>", ROOF_LEFT, bottom, right, bottom);
    fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n", ROOF_LEFT, ROOF_TOP, ROOF_LEFT,
            bottom);
    fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"12\">arithmetic intensity (FLOP/byte)"
                 "</text>\n", (ROOF_LEFT + right) / 2, ROOF_H - 6);
}

/* The memory roof y = x * bw from the plot's left or bottom edge up to the ridge, then the compute
 * roof flat at the peak to the right edge. */
static void write_roofs(const roof_plot *p, FILE *out) {
    double bw = p->dev->peak_bw, peak = p->dev->peak_flops, ridge = peak / bw;
    double x0 = fmax(pow(10, p->x_lo), pow(10, p->y_lo) / bw), x1 = pow(10, p->x_hi);
    fprintf(out, "<polyline class=\"roof\" fill=\"none\" stroke=\"#222\" stroke-width=\"2\" "
                 "points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
            roof_x(p, x0), roof_y(p, x0 * bw), roof_x(p, ridge), roof_y(p, peak), roof_x(p, x1), roof_y(p, peak));
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">peak %.4g TFLOP/s</text>",
            roof_x(p, x1) - 4, roof_y(p, peak) - 5, peak / 1e12);
    /* The bandwidth label runs along the memory roof, just under it, ending left of the ridge. */
    double angle = atan2(roof_y(p, x0 * bw) - roof_y(p, peak), roof_x(p, ridge) - roof_x(p, x0));
    double lx = roof_x(p, ridge) - 10 * cos(angle), ly = roof_y(p, peak) + 10 * sin(angle);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" dy=\"13\" text-anchor=\"end\" font-size=\"11\" "
                 "transform=\"rotate(%.1f %.1f %.1f)\">%.4g GB/s</text>\n",
            lx, ly, -angle * 180 / 3.14159265358979, lx, ly, bw / 1e9);
}

static void write_roof_dot(const roof_plot *p, const jp_analysis *a, const jp_op_stat *o, FILE *out) {
    int bound = o->bound >= JP_BOUND_UNKNOWN && o->bound <= JP_BOUND_MEMORY ? o->bound : JP_BOUND_UNKNOWN;
    fprintf(out, "<circle class=\"op\" cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\" fill-opacity=\"0.75\"><title>",
            roof_x(p, op_intensity(o)), roof_y(p, op_flops_s(o)), BOUND_COLOURS[bound]);
    esc(out, o->name);
    fprintf(out, ": %.3g FLOP/byte, %.4g GFLOP/s, self ", op_intensity(o), op_flops_s(o) / 1e9);
    jp_html_put_time(out, (double)o->self_ps);
    fprintf(out, " (%.1f%%), %s", pct(o->self_ps, a->op_self_ps), BOUND_NAMES[bound]);
    if (bound != JP_BOUND_UNKNOWN) fprintf(out, " at %.1f%% of its roof", o->roof_pct);
    fputs("</title></circle>\n", out);
}

/* Each step as one program (the first STEP_DOTS steps): a square, its numbers on hover. */
static void write_step_points(const roof_plot *p, const jp_analysis *a, FILE *out) {
    for (size_t k = 0; k < a->n_steps && k < STEP_DOTS; k++) {
        const jp_step *s = &a->steps[k];
        if (!step_placed(s)) continue;
        double x = roof_x(p, step_intensity(s)), y = roof_y(p, step_flops_s(a, s));
        fprintf(out, "<rect class=\"step\" x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" fill=\"%s\" "
                     "fill-opacity=\"0.8\"><title>step %lld: %.3g FLOP/byte, %.4g GFLOP/s per device, ",
                x - 4, y - 4, STEP_COLOUR, (long long)s->step_num, step_intensity(s), step_flops_s(a, s) / 1e9);
        jp_html_put_time(out, (double)s->dur_ps);
        if (s->roof_pct >= 0) fprintf(out, ", at %.1f%% of the roof", s->roof_pct);
        fputs("</title></rect>\n", out);
    }
}

void jp_chart_roofline(const jp_analysis *a, FILE *out) {
    size_t pick[ROOF_DOTS];
    size_t counted;
    size_t n = roof_ops(a, pick, &counted);
    if (!n) {
        fputs("<p>No op has both FLOP and byte counts: nothing to place on a roofline.</p>", out);
        return;
    }
    roof_plot p;
    roof_ranges(a, pick, n, &p);
    if (p.dev) {
        fputs("<p>Roofs of <code>", out);
        esc(out, p.dev->name);
        fprintf(out, "</code>: %.4g TFLOP/s, %.4g GB/s (", p.dev->peak_flops / 1e12, p.dev->peak_bw / 1e9);
        esc(out, p.dev->peak_source && *p.dev->peak_source ? p.dev->peak_source : "peaks");
        fprintf(out, "); ridge at %.3g FLOP/byte. ", p.dev->peak_flops / p.dev->peak_bw);
    } else {
        fputs("<p>No device peaks known (pass --peak-tflops/--peak-gbps): the ops without roofs. ", out);
    }
    fprintf(out, "%zu op%s with FLOP and byte counts", counted, counted == 1 ? "" : "s");
    if (counted > n) fprintf(out, ", the top %zu by self time shown", n);
    fputs(", each at its mean FLOP/s.</p>\n", out);
    fputs("<p class=\"legend\">", out);
    for (int b = p.dev ? JP_BOUND_COMPUTE : JP_BOUND_UNKNOWN; b <= (p.dev ? JP_BOUND_MEMORY : JP_BOUND_UNKNOWN); b++)
        fprintf(out, "<span class=\"sw\" style=\"background:%s;border-radius:6px\"></span>%s", BOUND_COLOURS[b],
                BOUND_NAMES[b]);
    for (size_t k = 0; k < a->n_steps && k < STEP_DOTS; k++)
        if (step_placed(&a->steps[k])) {
            fprintf(out, "<span class=\"sw\" style=\"background:%s\"></span>a step, all its ops as one program",
                    STEP_COLOUR);
            break;
        }
    fputs("</p>\n", out);
    fprintf(out, "<svg id=\"roofline-chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
                 "aria-label=\"roofline: FLOP/s against FLOP per byte, log-log\">\n",
            ROOF_W, ROOF_H, ROOF_W, ROOF_H);
    write_roof_axes(&p, out);
    if (p.dev) write_roofs(&p, out);
    for (size_t k = 0; k < n; k++) write_roof_dot(&p, a, &a->ops[pick[k]], out);
    write_step_points(&p, a, out);
    fputs("</svg>", out);
}

