/* table.c - selecting (filter, sort, top) and printing result tables as text, CSV and JSON. */
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "outputs/table.h"

void jp_format_time(char *buf, size_t len, double ps) {
    double a = fabs(ps);
    if (a >= 1e12) snprintf(buf, len, "%.2f s", ps / 1e12);
    else if (a >= 1e9) snprintf(buf, len, "%.2f ms", ps / 1e9);
    else if (a >= 1e6) snprintf(buf, len, "%.1f us", ps / 1e6);
    else if (a > 0) snprintf(buf, len, "%.0f ns", ps / 1e3);
    else snprintf(buf, len, "0");
}

void jp_json_str(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(out, "\\%c", *p);
        else if (*p == '\n') fputs("\\n", out);
        else if (*p == '\t') fputs("\\t", out);
        else if (*p < 0x20) fprintf(out, "\\u%04x", *p);
        else fputc(*p, out);
    }
    fputc('"', out);
}

/* ---- selection ------------------------------------------------------------------------------ */

typedef struct sort_ctx {
    const jp_analysis *a;
    const table *t;
    size_t col;
} sort_ctx;

static double numeric(const cell *c) {
    switch (c->type) {
    case CELL_INT: case CELL_TIME: case CELL_BOOL: return (double)c->i;
    case CELL_FRAMES: return c->n_frames;
    default: return c->d;
    }
}

static int compare_rows(const sort_ctx *s, size_t x, size_t y) {
    cell cx, cy;
    const char *base = s->t->rows;
    s->t->cell(s->a, base + x * s->t->row_size, s->col, &cx);
    s->t->cell(s->a, base + y * s->t->row_size, s->col, &cy);
    int c = 0;
    if (cx.type == CELL_STR) c = strcmp(cx.s, cy.s); /* names ascending */
    else c = (numeric(&cx) < numeric(&cy)) - (numeric(&cx) > numeric(&cy)); /* numbers descending */
    return c ? c : (x > y) - (x < y); /* stable */
}

/* qsort has no context argument in C11; a merge sort with one keeps this reentrant. */
static void merge_sort(const sort_ctx *s, size_t *v, size_t *tmp, size_t n) {
    if (n < 2) return;
    size_t h = n / 2, i = 0, j = h, k = 0;
    merge_sort(s, v, tmp, h);
    merge_sort(s, v + h, tmp, n - h);
    while (i < h && j < n) tmp[k++] = compare_rows(s, v[i], v[j]) <= 0 ? v[i++] : v[j++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

static int find_column(const table *t, const char *key) {
    size_t n = strlen(key);
    for (size_t i = 0; i < t->n_cols; i++) {
        const char *k = t->cols[i].key;
        if (strcmp(k, key) == 0 || (strncmp(k, key, n) == 0 && k[n] == '_')) return (int)i;
    }
    return -1;
}

static int row_matches(const jp_analysis *a, const table *t, const void *row, const regex_t *re) {
    for (size_t c = 0; c < t->n_cols; c++) {
        cell v;
        t->cell(a, row, c, &v);
        if (v.type == CELL_STR && regexec(re, v.s, 0, NULL, 0) == 0) return 1;
    }
    return 0;
}

int jp_table_select(const jp_analysis *a, const table *t, const jp_view *v, size_t **order, size_t *n,
                    jp_error *err) {
    const char *key = v && v->sort ? v->sort : t->default_sort;
    int col = key ? find_column(t, key) : -1;
    if (key && col < 0) return jp_error_set(err, JP_ERR_ARG, 0, "cannot sort %s by '%s'", t->name, key);
    regex_t re;
    int filtering = v && v->filter && *v->filter;
    if (filtering && regcomp(&re, v->filter, REG_EXTENDED | REG_NOSUB) != 0)
        return jp_error_set(err, JP_ERR_ARG, 0, "bad --filter regex '%s'", v->filter);
    size_t *idx = malloc((t->n_rows ? t->n_rows : 1) * sizeof *idx), *tmp = malloc((t->n_rows ? t->n_rows : 1) * sizeof *tmp);
    if (!idx || !tmp) {
        free(idx);
        free(tmp);
        if (filtering) regfree(&re);
        return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < t->n_rows; i++)
        if (!filtering || row_matches(a, t, (const char *)t->rows + i * t->row_size, &re)) idx[k++] = i;
    if (filtering) regfree(&re);
    if (col >= 0) {
        sort_ctx s = {a, t, (size_t)col};
        merge_sort(&s, idx, tmp, k);
    }
    free(tmp);
    *order = idx;
    *n = v && v->top && v->top < k ? v->top : k;
    return JP_OK;
}

/* ---- text ------------------------------------------------------------------------------------- */

static void cell_text(const cell *c, char *buf, size_t len) {
    switch (c->type) {
    case CELL_STR: snprintf(buf, len, "%s", c->s); break;
    case CELL_INT: snprintf(buf, len, "%lld", (long long)c->i); break;
    case CELL_BOOL: snprintf(buf, len, "%s", c->i ? "yes" : ""); break;
    case CELL_TIME: jp_format_time(buf, len, (double)c->i); break;
    case CELL_PCT: snprintf(buf, len, "%.1f%%", c->d); break;
    case CELL_FRAMES: snprintf(buf, len, "%u frames", c->n_frames); break;
    default: snprintf(buf, len, c->d == 0 ? "-" : fabs(c->d) >= 100 ? "%.0f" : "%.2f", c->d); break;
    }
}

/* Long names keep their tail, where op and scope names say the most specific thing. */
static void fit(char *s, size_t width) {
    size_t n = strlen(s);
    if (n <= width || width < 4) return;
    memmove(s + 3, s + n - (width - 3), width - 3 + 1);
    memcpy(s, "...", 3);
}

static int flex_width(const table *t, int width) {
    int used = 0;
    for (size_t c = 0; c < t->n_cols; c++)
        if (t->cols[c].header) used += t->cols[c].width + 2;
    return width - used > 12 ? width - used : 12;
}

/* Appends one padded cell to line (at most cap bytes); returns the new length. */
static size_t put_cell(char *line, size_t len, size_t cap, const char *text, int width, int left) {
    int n = snprintf(line + len, cap - len, left ? "%-*s  " : "%*s  ", width, text);
    return n < 0 ? len : len + (size_t)n < cap ? len + (size_t)n : cap - 1;
}

/* Writes line without trailing blanks, then a newline. */
static void put_line(FILE *out, char *line, size_t len) {
    while (len && line[len - 1] == ' ') len--;
    fwrite(line, 1, len, out);
    fputc('\n', out);
}

void jp_table_text(const jp_analysis *a, const table *t, const size_t *order, size_t n, int width, FILE *out) {
    int flex = flex_width(t, width);
    char line[2048];
    size_t len = 0;
    for (size_t c = 0; c < t->n_cols; c++)
        if (t->cols[c].header)
            len = put_cell(line, len, sizeof line, t->cols[c].header, t->cols[c].width ? t->cols[c].width : flex,
                           !t->cols[c].width);
    put_line(out, line, len);
    for (size_t r = 0; r < n; r++) {
        const void *row = (const char *)t->rows + order[r] * t->row_size;
        len = 0;
        for (size_t c = 0; c < t->n_cols; c++) {
            if (!t->cols[c].header) continue;
            cell v;
            char buf[512];
            t->cell(a, row, c, &v);
            cell_text(&v, buf, sizeof buf);
            int w = t->cols[c].width ? t->cols[c].width : flex;
            fit(buf, (size_t)w);
            len = put_cell(line, len, sizeof line, buf, w, v.type == CELL_STR && !t->cols[c].width);
        }
        put_line(out, line, len);
    }
    if (!n) fprintf(out, "  (none)\n");
}

/* ---- CSV and JSON ------------------------------------------------------------------------------ */

static void csv_str(FILE *out, const char *s) {
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"') fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

/* JSON: [{"file","line","function","library"}, ...]; CSV: "file:line function;..." */
static void frames_raw(FILE *out, const cell *v, int json) {
    if (!json) fputc('"', out);
    for (uint32_t i = 0; i < v->n_frames; i++) {
        const jp_source_frame *f = &v->frames[i];
        if (!json) {
            for (const char *s = f->file; *s; s++) fputs(*s == '"' ? "\"\"" : (char[2]){*s, 0}, out);
            fprintf(out, ":%u ", f->line);
            for (const char *s = f->function; *s; s++) fputs(*s == '"' ? "\"\"" : (char[2]){*s, 0}, out);
            if (i + 1 < v->n_frames) fputc(';', out);
            continue;
        }
        fputs(i ? ",{\"file\":" : "[{\"file\":", out);
        jp_json_str(out, f->file);
        fprintf(out, ",\"line\":%u,\"function\":", f->line);
        jp_json_str(out, f->function);
        fprintf(out, ",\"library\":%s}", f->library ? "true" : "false");
    }
    fputs(json ? (v->n_frames ? "]" : "[]") : "\"", out);
}

static void cell_raw(FILE *out, const cell *v, int json) {
    switch (v->type) {
    case CELL_FRAMES: frames_raw(out, v, json); break;
    case CELL_STR: json ? jp_json_str(out, v->s) : csv_str(out, v->s); break;
    case CELL_INT: fprintf(out, "%lld", (long long)v->i); break;
    case CELL_BOOL: fputs(v->i ? "true" : "false", out); break;
    case CELL_TIME: fprintf(out, "%.6f", (double)v->i / 1e9); break; /* milliseconds, ns precision */
    case CELL_NUM: fprintf(out, "%.12g", isfinite(v->d) ? v->d : 0.0); break; /* FLOPs, bytes: exact */
    default: fprintf(out, "%.6g", isfinite(v->d) ? v->d : 0.0); break;
    }
}

void jp_table_csv(const jp_analysis *a, const table *t, const size_t *order, size_t n, FILE *out) {
    for (size_t c = 0; c < t->n_cols; c++) fprintf(out, "%s%s", c ? "," : "", t->cols[c].key);
    fputc('\n', out);
    for (size_t r = 0; r < n; r++) {
        const void *row = (const char *)t->rows + order[r] * t->row_size;
        for (size_t c = 0; c < t->n_cols; c++) {
            cell v;
            t->cell(a, row, c, &v);
            if (c) fputc(',', out);
            cell_raw(out, &v, 0);
        }
        fputc('\n', out);
    }
}

void jp_table_json(const jp_analysis *a, const table *t, const size_t *order, size_t n, FILE *out) {
    fprintf(out, "\"%s\":", t->name);
    jp_table_json_rows(a, t, order, n, out);
}

void jp_table_json_rows(const jp_analysis *a, const table *t, const size_t *order, size_t n, FILE *out) {
    fputc('[', out);
    for (size_t r = 0; r < n; r++) {
        const void *row = (const char *)t->rows + order[r] * t->row_size;
        fputs(r ? ",\n{" : "\n{", out);
        for (size_t c = 0; c < t->n_cols; c++) {
            cell v;
            t->cell(a, row, c, &v);
            fprintf(out, "%s\"%s\":", c ? "," : "", t->cols[c].key);
            cell_raw(out, &v, 1);
        }
        fputc('}', out);
    }
    fputs("]", out);
}
