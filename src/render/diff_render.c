/* diff_render.c - a diff of two profiles as text, JSON or CSV (jp_diff_render). The rows go through
 * the table module like the report's tables; the JSON document is described in docs/json-schema.md (generated from columns.c). */
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "base/text.h"
#include "render/columns.h"
#include "render/diff_render.h"
#include "render/safe_text.h"

enum { TEXT_TOP = 15, TEXT_WIDTH = 150, BREAKDOWN_WIDTH = 60 };

/* The table module passes an analysis to its cell callbacks; diff rows carry everything
 * themselves, so every callback here receives NULL and ignores it. */
#define NO_ANALYSIS ((const jp_analysis *)NULL)

static void set_str(cell *c, const char *s) { c->type = CELL_STR, c->s = s ? s : ""; }

/* Per-step times are doubles; the table prints whole picoseconds, far below what it shows. */
static void set_time(cell *c, double ps) {
    c->type = CELL_TIME;
    c->i = !isfinite(ps) ? 0 : ps > 9e18 ? INT64_MAX : ps < -9e18 ? INT64_MIN : (int64_t)llround(ps);
}

/* Short formatted text in the cell's own buffer. */
static void set_buf(cell *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_buf(cell *c, const char *fmt, ...) {
    jp_text t = jp_text_make(c->buf, sizeof c->buf); /* a cut ends in "..." on a whole character */
    va_list ap;
    va_start(ap, fmt);
    jp_text_vprintf(&t, fmt, ap);
    va_end(ap);
    set_str(c, c->buf);
}

/* Fixed-width text columns are right-aligned by the table module; padding a short word to the
 * column's width keeps words (change, category, match) left-aligned like a name column. */
static void set_left(cell *c, const char *s, int width) {
    if (strlen(s) >= (size_t)width || (size_t)width >= sizeof c->buf) set_str(c, s);
    else set_buf(c, "%-*s", width, s);
}

const char *jp_diff_verdict(const jp_diff_steps *s) {
    if (!s->significant || s->change_pct == 0) return "unchanged";
    return s->change_pct > 0 ? "slower" : "faster";
}

/* ---- op and scope rows: JSON and CSV --------------------------------------------------------------- */

/* The diff's columns: key, header, width; its cell functions give the cells. */
#define COL(KEY, HEADER, WIDTH) {.key = KEY, .header = HEADER, .width = WIDTH}

/* The JSON and CSV rows' columns (columns.c). */
#define ROW_COLS (jp_table_defs[JP_TABLE_DIFF_ROWS])

/* The rule a paired op is judged by, said in the text output (after its table) and the JSON's
 * options. Keep in step with classify() in compare/diff.c and docs/design.md "Compare". */
static void put_op_rule(const jp_diff *d, FILE *out) {
    fprintf(out, "an op is slower or faster when its self time per step moved by more than %g%% of itself, by at least "
                 "%g%% of the base step, and by more than its noise: 2 standard errors of the change, from the op's "
                 "time per step across the steps of each run (per execution with fewer than %d steps)",
            d->options.min_change_pct, d->options.min_share_pct, JP_NOISE_MIN_STEPS);
}

/* ---- op and scope rows: text ------------------------------------------------------------------------ */

/* Headers of word columns are padded to their width, like their cells (set_left), so both line up
 * on the left. */

static const column OP_TEXT_COLS[] = {
    COL("change", "change   ", 9), COL("delta", "delta/step", 10), COL("delta_pct", "delta%", 8), COL("base", "base", 9),
    COL("new", "new", 9), COL("count", "count/step", 11), COL("name", "op", 0), COL("category", "category     ", 13),
    COL("scope", "scope             ", 18), COL("match", "match  ", 7), COL("noise", "noise", 9),
};

static const column SCOPE_TEXT_COLS[] = {
    COL("change", "change   ", 9), COL("delta", "delta/step", 10), COL("delta_pct", "delta%", 8), COL("base", "self base", 9),
    COL("new", "self new", 9), COL("base_total", "total base", 10), COL("new_total", "total new", 9),
    COL("count", "count/step", 11), COL("name", "scope", 0), COL("category", "kind  ", 6), COL("match", "match  ", 7),
};

static int is_one_sided(const jp_diff_row *r) { return r->change == JP_CHANGE_ADDED || r->change == JP_CHANGE_REMOVED; }

/* "+1.20 ms": a signed time, so a glance tells slower from faster. */
static void set_delta(cell *c, double ps) {
    char t[32];
    jp_format_time(t, sizeof t, ps);
    set_buf(c, "%s%s", ps > 0 ? "+" : "", t);
}

static void set_row_time(cell *c, const jp_diff_row *r, double ps) {
    if (ps == 0 && is_one_sided(r)) set_str(c, "-");
    else set_time(c, ps);
}

static void set_delta_pct(cell *c, const jp_diff_row *r) {
    if (r->change == JP_CHANGE_ADDED) set_str(c, "new");
    else if (r->change == JP_CHANGE_REMOVED) set_str(c, "gone");
    else set_buf(c, "%+.1f%%", r->delta_pct);
}

static void set_count(cell *c, const jp_diff_row *r) {
    if (r->base_count == r->new_count) set_buf(c, "%.3g", r->new_count);
    else set_buf(c, "%.3g->%.3g", r->base_count, r->new_count);
}

/* Appends s, or when it is longer than max bytes "..." and its tail on a whole character: names
 * say the most specific thing last, and the table cuts them the same way. */
static void put_tail(jp_text *t, const char *s, size_t max) {
    size_t n = strlen(s);
    if (n <= max || max < 4) {
        jp_text_puts(t, s);
        return;
    }
    size_t from = n - (max - 3);
    while (from < n && ((unsigned char)s[from] & 0xC0) == 0x80) from++; /* not inside a character */
    jp_text_puts(t, "...");
    jp_text_put(t, s + from, n - from);
}

/* The row's name, and what the base run called it when renumbered: an op by XLA, a scope by a
 * layer inserted before it (Flax's Dense_2 -> Dense_3). Both in the cell's buffer: past it, each
 * keeps its tail, so the "(was ...)" is never lost. */
static void set_row_name(cell *c, const jp_diff_row *r) {
    const char *base = r->base_name ? r->base_name : "";
    if (!*base || strcmp(base, r->name) == 0) {
        set_str(c, r->name);
        return;
    }
    jp_text t = jp_text_make(c->buf, sizeof c->buf);
    size_t each = (sizeof c->buf - 1 - strlen(" (was )")) / 2;
    put_tail(&t, r->name, each);
    jp_text_puts(&t, " (was ");
    put_tail(&t, base, each);
    jp_text_puts(&t, ")");
    set_str(c, c->buf);
}

/* Columns shared by both text tables: change, delta, delta%, base, new (0-4). */
static void common_text_cell(const jp_diff_row *r, size_t col, cell *c) {
    switch (col) {
    case 0: set_left(c, jp_change_name(r->change), OP_TEXT_COLS[0].width); break;
    case 1: set_delta(c, r->delta_ps); break;
    case 2: set_delta_pct(c, r); break;
    case 3: set_row_time(c, r, r->base_ps); break;
    default: set_row_time(c, r, r->new_ps); break;
    }
}

static void op_text_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const jp_diff_row *r = row;
    (void)a;
    if (col < 5) common_text_cell(r, col, c);
    else if (col == 5) set_count(c, r);
    else if (col == 6) set_row_name(c, r);
    else if (col == 7) set_left(c, r->category, OP_TEXT_COLS[7].width);
    else if (col == 8) set_left(c, r->scope, OP_TEXT_COLS[8].width);
    else if (col == 9) set_left(c, jp_match_name(r->match), OP_TEXT_COLS[9].width);
    else if (r->noise_basis == JP_NOISE_NONE || is_one_sided(r)) set_str(c, "-");
    else {
        char t[32];
        jp_format_time(t, sizeof t, r->noise_ps);
        set_buf(c, "\xC2\xB1%s", t);
    }
}

static void scope_text_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const jp_diff_row *r = row;
    (void)a;
    if (col < 5) common_text_cell(r, col, c);
    else if (col == 5) set_row_time(c, r, r->base_total_ps);
    else if (col == 6) set_row_time(c, r, r->new_total_ps);
    else if (col == 7) set_count(c, r);
    else if (col == 8) set_row_name(c, r);
    else if (col == 9) set_left(c, r->category, SCOPE_TEXT_COLS[9].width);
    else set_left(c, jp_match_name(r->match), SCOPE_TEXT_COLS[10].width);
}

/* ---- breakdown and findings tables ---------------------------------------------------------------- */

typedef diff_part_row part_row;
#define PART_COLS (jp_table_defs[JP_TABLE_DIFF_BREAKDOWN])

static void part_text_cell(const jp_analysis *a, const void *row, size_t col, cell *c) {
    const part_row *p = row;
    if (col == 3) set_delta(c, p->new_ps - p->base_ps);
    else PART_COLS.cols[col].get(a, row, c);
}

#define TABLE(NAME, COLS, ROWS, TYPE, N, FN) \
    ((table){.name = NAME, .cols = COLS, .n_cols = sizeof COLS / sizeof COLS[0], .rows = ROWS, .row_size = sizeof(TYPE), \
             .n_rows = N, .cell = FN})
/* A table of columns.c's (its columns' getters give the cells). */
#define DEF_TABLE(NAME, DEF, ROWS, TYPE, N, FN) \
    ((table){.name = NAME, .cols = DEF.cols, .n_cols = DEF.n_cols, .rows = ROWS, .row_size = sizeof(TYPE), .n_rows = N, \
             .cell = FN})

static void fill_parts(const jp_diff *d, part_row parts[JP_PART_COUNT]) {
    for (int p = 0; p < JP_PART_COUNT; p++)
        parts[p] = (part_row){p, d->steps.base_part_ps[p], d->steps.new_part_ps[p]};
}

/* ---- row selection ---------------------------------------------------------------------------------- */

static int row_matches(const jp_diff_row *r, const regex_t *re) {
    const char *names[] = {r->name, r->base_name, r->module, r->scope};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i] && regexec(re, names[i], 0, NULL, 0) == 0) return 1;
    return 0;
}

/* Indices of the rows that pass the filter (re may be NULL), in the diff's order, at most `top`
 * (0: all). *order is malloc'd. */
static int select_rows(const jp_diff_row *rows, size_t n_rows, const regex_t *re, size_t top, size_t **order,
                       size_t *n, jp_error *err) {
    size_t *idx = malloc((n_rows ? n_rows : 1) * sizeof *idx);
    if (!idx) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n_rows && (!top || k < top); i++)
        if (!re || row_matches(&rows[i], re)) idx[k++] = i;
    *order = idx;
    *n = k;
    return JP_OK;
}

/* How rows are picked for every table of one rendering. */
typedef struct picker {
    const regex_t *re; /* view.filter compiled, or NULL */
    size_t top;        /* rows per table, 0 = all */
    int width;         /* text width */
} picker;

/* ---- JSON ----------------------------------------------------------------------------------------- */

static int json_rows(const jp_diff_row *rows, size_t n_rows, const char *name, const picker *pk, FILE *out,
                     jp_error *err) {
    size_t *order, n;
    int rc = select_rows(rows, n_rows, pk->re, pk->top, &order, &n, err);
    if (rc) return rc;
    table t = DEF_TABLE(name, ROW_COLS, rows, jp_diff_row, n_rows, NULL);
    fputc(',', out);
    jp_table_json(NO_ANALYSIS, &t, order, n, out);
    free(order);
    return JP_OK;
}

/* All rows of a small table (breakdown, findings) in their own order. */
static int json_all(const table *t, FILE *out, jp_error *err) {
    size_t *order = malloc((t->n_rows ? t->n_rows : 1) * sizeof *order);
    if (!order) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    for (size_t i = 0; i < t->n_rows; i++) order[i] = i;
    fputc(',', out);
    jp_table_json(NO_ANALYSIS, t, order, t->n_rows, out);
    free(order);
    return JP_OK;
}

static void json_steps(const jp_diff_steps *s, FILE *out) {
    fprintf(out, ",\n\"steps\":{\"base_n\":%zu,\"new_n\":%zu,\"base_mean_ms\":%.6f,\"new_mean_ms\":%.6f,"
                 "\"base_median_ms\":%.6f,\"new_median_ms\":%.6f,\"base_p90_ms\":%.6f,\"new_p90_ms\":%.6f,"
                 "\"change_pct\":%.6g,\"noise_pct\":%.6g,\"significant\":%s,\"verdict\":\"%s\"}",
            s->base_n, s->new_n, s->base_mean_ps / 1e9, s->new_mean_ps / 1e9, s->base_median_ps / 1e9,
            s->new_median_ps / 1e9, s->base_p90_ps / 1e9, s->new_p90_ps / 1e9,
            isfinite(s->change_pct) ? s->change_pct : 0.0, isfinite(s->noise_pct) ? s->noise_pct : 0.0,
            s->significant ? "true" : "false", jp_diff_verdict(s));
}

static void json_counts(const char *name, const size_t *counts, int n, const char *(*label)(int), FILE *out) {
    fprintf(out, "\"%s\":{", name);
    for (int i = 0; i < n; i++) fprintf(out, "%s\"%s\":%zu", i ? "," : "", label(i), counts[i]);
    fputc('}', out);
}

static void json_summary(const jp_diff *d, FILE *out) {
    fputs(",\n\"summary\":{", out);
    json_counts("ops", d->op_changes, JP_CHANGE_COUNT, jp_change_name, out);
    fputc(',', out);
    json_counts("scopes", d->scope_changes, JP_CHANGE_COUNT, jp_change_name, out);
    fputc(',', out);
    json_counts("matched", d->op_matches, JP_MATCH_COUNT, jp_match_name, out);
    fputc('}', out);
}

/* The gate member: its limits (null when off), whether it tripped and jp_diff_check's paragraph. */
static void json_limit(const char *key, double pct, FILE *out) {
    if (pct < 0) fprintf(out, "\"%s\":null,", key);
    else fprintf(out, "\"%s\":%.6g,", key, pct);
}

static void json_gate(const jp_diff *d, const jp_diff_gate *gate, FILE *out) {
    char why[JP_DIFF_WHY_MAX] = "";
    int tripped = jp_diff_check(d, gate, why, sizeof why);
    fputs(",\n\"gate\":{", out);
    json_limit("max_step_slowdown_pct", gate->max_step_slowdown_pct, out);
    json_limit("max_op_slowdown_pct", gate->max_op_slowdown_pct, out);
    fprintf(out, "\"tripped\":%s,\"explanation\":", tripped ? "true" : "false");
    jp_json_fput_cstr(out, why);
    fputc('}', out);
}

static int render_json(const jp_diff *d, const jp_diff_gate *gate, const picker *pk, FILE *out, jp_error *err) {
    fprintf(out, "{\"schema_version\":%d,\"kind\":\"diff\",\"base\":{\"path\":", JP_JSON_SCHEMA_VERSION);
    jp_json_fput_cstr(out, d->base_path);
    fputs("},\"new\":{\"path\":", out);
    jp_json_fput_cstr(out, d->new_path);
    fputc('}', out);
    json_steps(&d->steps, out);
    part_row parts[JP_PART_COUNT];
    fill_parts(d, parts);
    table bt = DEF_TABLE("breakdown", PART_COLS, parts, part_row, JP_PART_COUNT, NULL);
    table ft = DEF_TABLE("findings", jp_table_defs[JP_TABLE_DIFF_FINDINGS], d->findings, jp_diff_finding, d->n_findings, NULL);
    int rc = json_all(&bt, out, err);
    if (!rc) rc = json_rows(d->ops, d->n_ops, "ops", pk, out, err);
    if (!rc) rc = json_rows(d->scopes, d->n_scopes, "scopes", pk, out, err);
    if (rc) return rc;
    json_summary(d, out);
    if ((rc = json_all(&ft, out, err))) return rc;
    fprintf(out, ",\n\"options\":{\"min_change_pct\":%.6g,\"min_share_pct\":%.6g}", d->options.min_change_pct,
            d->options.min_share_pct);
    fputs(",\n\"op_rule\":\"", out);
    put_op_rule(d, out); /* plain ASCII: no escaping needed */
    fputc('"', out);
    if (gate) json_gate(d, gate, out);
    fputs("}\n", out);
    return JP_OK;
}

/* ---- text ----------------------------------------------------------------------------------------- */

static void text_steps(const jp_diff_steps *s, FILE *out) {
    char b[6][32];
    jp_format_time(b[0], 32, s->base_mean_ps);
    jp_format_time(b[1], 32, s->new_mean_ps);
    jp_format_time(b[2], 32, s->base_median_ps);
    jp_format_time(b[3], 32, s->new_median_ps);
    jp_format_time(b[4], 32, s->base_p90_ps);
    jp_format_time(b[5], 32, s->new_p90_ps);
    fprintf(out, "\nStep time: mean %s → %s (%+.1f%% ± %.1f%% noise): %s\n", b[0], b[1], s->change_pct, s->noise_pct,
            jp_diff_verdict(s));
    fprintf(out, "  median %s → %s, p90 %s → %s; steps %zu → %zu%s\n", b[2], b[3], b[4], b[5], s->base_n, s->new_n,
            s->base_n < 2 || s->new_n < 2 ? " (noise unknown: fewer than 2 steps on a side)" : "");
}

static void text_breakdown(const jp_diff *d, FILE *out) {
    part_row parts[JP_PART_COUNT];
    size_t order[JP_PART_COUNT], n = 0;
    fill_parts(d, parts);
    for (int p = 0; p < JP_PART_COUNT; p++)
        if (parts[p].base_ps != 0 || parts[p].new_ps != 0 || p == JP_PART_COMPUTE || p == JP_PART_IDLE) order[n++] = (size_t)p;
    table t = DEF_TABLE("breakdown", PART_COLS, parts, part_row, JP_PART_COUNT, part_text_cell);
    fputs("\nBreakdown per step\n", out);
    jp_table_text(NO_ANALYSIS, &t, order, n, BREAKDOWN_WIDTH, out);
}

static int text_rows(const table *t, const char *title, const picker *pk, FILE *out, jp_error *err) {
    size_t *order, n;
    int rc = select_rows(t->rows, t->n_rows, pk->re, pk->top, &order, &n, err);
    if (rc) return rc;
    size_t shown_of = t->n_rows;
    if (pk->re) {
        size_t *all, n_all;
        if ((rc = select_rows(t->rows, t->n_rows, pk->re, 0, &all, &n_all, err))) {
            free(order);
            return rc;
        }
        free(all);
        shown_of = n_all;
    }
    fprintf(out, "\n%s (%zu of %zu%s)\n", title, n, shown_of, pk->re ? " matching the filter" : "");
    jp_table_text(NO_ANALYSIS, t, order, n, pk->width, out);
    free(order);
    return JP_OK;
}

static void text_findings(const jp_diff *d, FILE *out) {
    fprintf(out, "\nFindings that changed (%zu)\n", d->n_findings);
    if (!d->n_findings) fputs("  none: the same findings in both runs\n", out);
    for (size_t i = 0; i < d->n_findings; i++) {
        const jp_diff_finding *f = &d->findings[i];
        fprintf(out, "  %s [%s] %s (%s)%s\n", f->appeared ? "+" : "−", jp_rating_name(f->severity), f->title, f->id,
                f->appeared ? " appeared" : " disappeared");
    }
}

static void text_counts(const char *what, const size_t *counts, FILE *out) {
    fprintf(out, "%s", what);
    for (int c = 0; c < JP_CHANGE_COUNT; c++) fprintf(out, "%s%zu %s", c ? ", " : " ", counts[c], jp_change_name(c));
}

static void text_summary(const jp_diff *d, FILE *out) {
    fputs("\nSummary: ", out);
    text_counts("ops", d->op_changes, out);
    text_counts("; scopes", d->scope_changes, out);
    fputs("; ops matched by", out);
    for (int m = 0; m < JP_MATCH_COUNT; m++)
        fprintf(out, "%s %s %zu", m ? "," : "", jp_match_name(m), d->op_matches[m]);
    fputc('\n', out);
}

static int render_text(const jp_diff *d, const picker *pk, FILE *out, jp_error *err) {
    fprintf(out, "jaxprof diff: %s → %s\n", d->base_path ? d->base_path : "", d->new_path ? d->new_path : "");
    text_steps(&d->steps, out);
    text_breakdown(d, out);
    table ot = TABLE("ops", OP_TEXT_COLS, d->ops, jp_diff_row, d->n_ops, op_text_cell);
    table st = TABLE("scopes", SCOPE_TEXT_COLS, d->scopes, jp_diff_row, d->n_scopes, scope_text_cell);
    int rc = text_rows(&ot, "Ops by change in self time per step", pk, out, err);
    if (!rc) {
        fputs("Rule: ", out);
        put_op_rule(d, out);
        fputs(".\n", out);
    }
    if (!rc) rc = text_rows(&st, "Scopes by change in self time per step", pk, out, err);
    if (rc) return rc;
    text_findings(d, out);
    text_summary(d, out);
    return JP_OK;
}

/* ---- entry point ---------------------------------------------------------------------------------- */

int jp_diff_render(const jp_diff *d, int format, const jp_view *view, FILE *out, jp_error *err) {
    return jp_diff_render_gated(d, NULL, format, view, out, err);
}

int jp_diff_render_gated(const jp_diff *d, const jp_diff_gate *gate, int format, const jp_view *view, FILE *out,
                         jp_error *err) {
    jp_error_clear(err);
    if (!d || !out) return jp_error_set(err, JP_ERR_ARG, 0, "diff render: no diff or no output");
    if (format != JP_FORMAT_TEXT && format != JP_FORMAT_JSON && format != JP_FORMAT_CSV)
        return jp_error_set(err, JP_ERR_ARG, 0, "diff render: unknown format %d", format);
    regex_t re;
    int filtering = view && view->filter && *view->filter;
    if (filtering && regcomp(&re, view->filter, REG_EXTENDED | REG_NOSUB) != 0)
        return jp_error_set(err, JP_ERR_ARG, 0, "bad filter regex '%s'", view->filter);
    picker pk = {filtering ? &re : NULL, view ? view->top : 0, view && view->width ? view->width : TEXT_WIDTH};
    if (format == JP_FORMAT_TEXT && !pk.top) pk.top = TEXT_TOP;
    int rc;
    if (format == JP_FORMAT_JSON) {
        rc = render_json(d, gate, &pk, out, err);
    } else if (format == JP_FORMAT_CSV) {
        size_t *order, n;
        rc = select_rows(d->ops, d->n_ops, pk.re, pk.top, &order, &n, err);
        table t = DEF_TABLE("ops", ROW_COLS, d->ops, jp_diff_row, d->n_ops, NULL);
        if (!rc) jp_table_csv(NO_ANALYSIS, &t, order, n, out), free(order);
    } else { /* every byte through the control-character filter (names are anyone's bytes) */
        FILE *safe = jp_safe_text_open(out);
        rc = render_text(d, &pk, safe ? safe : out, err);
        if (safe && fclose(safe) != 0 && rc == JP_OK) rc = jp_error_set(err, JP_ERR_IO, 0, "write failed");
    }
    if (filtering) regfree(&re);
    if (rc == JP_OK && (fflush(out) != 0 || ferror(out))) rc = jp_error_set(err, JP_ERR_IO, 0, "write failed");
    return rc;
}
