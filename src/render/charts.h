/* charts.h - the step chart and the roofline as SVG, one implementation for the HTML report and
 * the viewer (internal to libjaxprof). */
#ifndef JP_RENDER_CHARTS_H
#define JP_RENDER_CHARTS_H

#include <stdio.h>

#include "jaxprof/jaxprof_results.h"

/* The step chart's box, which the report's other bar charts share. */
enum { JP_CHART_W = 960, JP_CHART_H = 240, JP_CHART_LEFT = 70, JP_CHART_BOTTOM = 24 };

/* The colour of a jp_part (compute ... idle) in every chart. */
const char *jp_chart_part_colour(int part);

/* The parts' colour legend: <p class="legend"> with a <span class="sw"> swatch per part. */
void jp_chart_part_legend(FILE *out);

/* Writes s HTML-escaped for text and attribute values; control bytes become spaces. */
void jp_html_esc(FILE *out, const char *s);
/* A duration in ps as the tables print it ("1.25 ms"), for HTML and SVG text. */
void jp_html_put_time(FILE *out, double ps);

/* The parts' legend, then (when a has steps) the step chart: one stacked bar per step, each a
 * <g class="step"> whose <title> starts "step N: ". */
void jp_chart_steps(const jp_analysis *a, FILE *out);

/* The roofline: a note (whose roofs, how many ops), the legend and the log-log SVG of the ops with
 * the most self time, each dot a <circle class="op"> whose <title> starts with the op's name; or a
 * sentence when no op has FLOP and byte counts. */
void jp_chart_roofline(const jp_analysis *a, FILE *out);

#endif
