/* table.c - selecting (filter, sort, top) and printing result tables as text, CSV and JSON. */
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/json.h"
#include "base/text.h"
#include "render/table.h"

void jp_format_time(char *buf, size_t len, double ps) {
    double a = fabs(ps);
    if (a >= 1e12) snprintf(buf, len, "%.2f s", ps / 1e12);
    else if (a >= 1e9) snprintf(buf, len, "%.2f ms", ps / 1e9);
    else if (a >= 1e6) snprintf(buf, len, "%.1f \xC2\xB5s", ps / 1e6); /* µs */
    else if (a > 0) snprintf(buf, len, "%.0f ns", ps / 1e3);
    else snprintf(buf, len, "0");
}

void jp_format_bytes(char *buf, size_t len, int64_t bytes) {
    double b = (double)bytes;
    if (bytes < 1024 && bytes > -1024) snprintf(buf, len, "%lld B", (long long)bytes);
    else if (fabs(b) < 1024.0 * 1024) snprintf(buf, len, "%.1f KiB", b / 1024);
    else if (fabs(b) < 1024.0 * 1024 * 1024) snprintf(buf, len, "%.1f MiB", b / (1024.0 * 1024));
    else snprintf(buf, len, "%.2f GiB", b / (1024.0 * 1024 * 1024));
}

void jp_table_cell(const jp_analysis *a, const table *t, const void *row, size_t col, cell *out) {
    if (t->cell) t->cell(a, row, col, out);
    else t->cols[col].get(a, row, out);
}

/* ---- selection ------------------------------------------------------------------------------ */

typedef struct sort_ctx {
    const jp_analysis *a;
    const table *t;
    size_t col;
    int dir; /* 0: names ascending, numbers descending; 1: all ascending; -1: all descending */
} sort_ctx;

static int is_str(const cell *c) { return c->type == CELL_STR || c->type == CELL_PROGRAM_STR; }

static double numeric(const cell *c) {
    switch (c->type) {
    case CELL_INT: case CELL_TIME: case CELL_BOOL: case CELL_BYTES: return (double)c->i;
    case CELL_FRAMES: return c->n_frames;
    case CELL_NONE: return -HUGE_VAL;
    default: return c->d;
    }
}

static int compare_rows(const sort_ctx *s, size_t x, size_t y) {
    cell cx, cy;
    const char *base = s->t->rows;
    jp_table_cell(s->a, s->t, base + x * s->t->row_size, s->col, &cx);
    jp_table_cell(s->a, s->t, base + y * s->t->row_size, s->col, &cy);
    int c = 0; /* ascending */
    if (is_str(&cx)) c = strcmp(cx.s, cy.s);
    else c = (numeric(&cx) > numeric(&cy)) - (numeric(&cx) < numeric(&cy));
    if (s->dir < 0 || (s->dir == 0 && !is_str(&cx))) c = -c; /* numbers: largest first */
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

/* The column whose key is key[0..n) or has it as its stem ("total" for "total_ms"), or -1. */
static int find_column(const table *t, const char *key, size_t n) {
    for (size_t i = 0; i < t->n_cols; i++) {
        const char *k = t->cols[i].key;
        if (strncmp(k, key, n) == 0 && (k[n] == '\0' || k[n] == '_')) return (int)i;
    }
    return -1;
}

static int unknown_column(const table *t, const char *what, const char *key, size_t n, jp_error *err) {
    char keys[1024];
    size_t len = 0;
    for (size_t i = 0; i < t->n_cols && len + 1 < sizeof keys; i++) {
        int w = snprintf(keys + len, sizeof keys - len, "%s%s", i ? ", " : "", t->cols[i].key);
        len = w < 0 ? len : len + (size_t)w < sizeof keys ? len + (size_t)w : sizeof keys - 1;
    }
    return jp_error_set(err, JP_ERR_ARG, 0, "%s: %s has no column '%.*s' (columns: %s)", what, t->name,
                        (int)(n > 64 ? 64 : n), key, keys);
}

/* --columns "a,b,c" into t->pick. */
static int pick_columns(table *t, const char *list, jp_error *err) {
    t->n_pick = 0;
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, ",");
        int col = n ? find_column(t, p, n) : -1;
        if (col < 0) return unknown_column(t, "columns", p, n, err);
        if (t->n_pick == TABLE_MAX_COLS) return jp_error_set(err, JP_ERR_ARG, 0, "columns: too many columns");
        t->pick[t->n_pick++] = (size_t)col;
        p += n + (p[n] == ',');
    }
    return JP_OK;
}

/* --sort KEY[:asc|:desc] into the column and direction. */
static int sort_column(const table *t, const char *key, int *col, int *dir, jp_error *err) {
    const char *colon = strchr(key, ':');
    size_t n = colon ? (size_t)(colon - key) : strlen(key);
    *dir = !colon ? 0 : strcmp(colon, ":asc") == 0 ? 1 : strcmp(colon, ":desc") == 0 ? -1 : 2;
    if (*dir == 2) return jp_error_set(err, JP_ERR_ARG, 0, "sort %s: the direction is :asc or :desc", key);
    *col = find_column(t, key, n);
    return *col < 0 ? unknown_column(t, "sort", key, n, err) : JP_OK;
}

static int row_matches(const jp_analysis *a, const table *t, const void *row, const regex_t *re) {
    for (size_t c = 0; c < t->n_cols; c++) {
        cell v;
        jp_table_cell(a, t, row, c, &v);
        if (is_str(&v) && regexec(re, v.s, 0, NULL, 0) == 0) return 1;
    }
    return 0;
}

int jp_table_select(const jp_analysis *a, table *t, const jp_view *v, size_t **order, size_t *n, jp_error *err) {
    const char *key = v && v->sort ? v->sort : t->default_sort;
    int col = -1, dir = 0, rc = key ? sort_column(t, key, &col, &dir, err) : JP_OK;
    if (rc == JP_OK && v && v->columns) rc = pick_columns(t, v->columns, err);
    if (rc) return rc;
    regex_t re;
    int filtering = v && v->filter && *v->filter;
    if (filtering && regcomp(&re, v->filter, REG_EXTENDED | REG_NOSUB) != 0)
        return jp_error_set(err, JP_ERR_ARG, 0, "bad filter regex '%s'", v->filter);
    size_t *idx = malloc((t->n_rows ? t->n_rows : 1) * sizeof *idx), *tmp = malloc((t->n_rows ? t->n_rows : 1) * sizeof *tmp);
    if (!idx || !tmp) {
        free(idx);
        free(tmp);
        if (filtering) regfree(&re);
        return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < t->n_rows; i++)
        if ((!t->keep || t->keep((const char *)t->rows + i * t->row_size)) &&
            (!filtering || row_matches(a, t, (const char *)t->rows + i * t->row_size, &re)))
            idx[k++] = i;
    if (filtering) regfree(&re);
    if (col >= 0) {
        sort_ctx s = {a, t, (size_t)col, dir};
        merge_sort(&s, idx, tmp, k);
    }
    free(tmp);
    *order = idx;
    *n = v && v->top && v->top < k ? v->top : k;
    return JP_OK;
}

/* ---- text ------------------------------------------------------------------------------------- */

/* A text cell. A string longer than buf keeps its tail behind "...", as fit() cuts it, and never
 * starts inside a UTF-8 character: a 1,000-character name shows its end, not a piece from its
 * middle. A newline or tab inside a name would break the table's rows and columns: '?' as any
 * other control character (the stream jp_render writes through neutralises the rest). */
static void cell_str(char *buf, size_t len, const char *s) {
    size_t n = strlen(s);
    jp_text t = jp_text_make(buf, len);
    if (n >= len && len >= 4) {
        const char *from = s + n - (len - 4);
        while (*from && ((unsigned char)*from & 0xC0) == 0x80) from++;
        jp_text_puts(&t, "...");
        s = from;
    }
    jp_text_puts(&t, s);
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7F) *p = '?';
}

/* "custom-call.1 (program 21)": the name cut as cell_str cuts it, the program always whole. */
static void program_str(char *buf, size_t len, const char *s, int64_t program) {
    char suffix[40];
    int k = snprintf(suffix, sizeof suffix, " (program %lld)", (long long)program);
    size_t n = k > 0 ? (size_t)k : 0;
    cell_str(buf, len > n + 8 ? len - n : len, s);
    size_t used = strlen(buf);
    if (used + n < len) memcpy(buf + used, suffix, n + 1);
}

static void cell_text(const cell *c, char *buf, size_t len) {
    switch (c->type) {
    case CELL_STR: cell_str(buf, len, c->s); break;
    case CELL_PROGRAM_STR: program_str(buf, len, c->s, c->i); break;
    case CELL_INT: snprintf(buf, len, "%lld", (long long)c->i); break;
    case CELL_BOOL: snprintf(buf, len, "%s", c->i ? "yes" : ""); break;
    case CELL_TIME: jp_format_time(buf, len, (double)c->i); break;
    case CELL_BYTES: jp_format_bytes(buf, len, c->i); break;
    case CELL_PCT: snprintf(buf, len, "%.1f%%", c->d); break;
    case CELL_FRAMES: snprintf(buf, len, "%u frames", c->n_frames); break;
    case CELL_NONE: snprintf(buf, len, "-"); break;
    default: snprintf(buf, len, c->d == 0 ? "-" : fabs(c->d) >= 100 ? "%.0f" : "%.2f", c->d); break;
    }
}

/* Columns a cell takes on a terminal: one per UTF-8 character (continuation bytes take none),
 * so a name like "数据 1" is as wide as it shows, not as its bytes. */
static size_t text_width(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* Long names keep their tail, where op and scope names say the most specific thing: the last
 * width - 3 characters, never a cut inside one (the text stays valid UTF-8). */
static void fit(char *s, size_t width) {
    size_t n = strlen(s), keep = 0, from = n;
    if (text_width(s) <= width || width < 4) return;
    while (from > 0 && keep < width - 3)
        if (((unsigned char)s[--from] & 0xC0) != 0x80) keep++;
    memmove(s + 3, s + from, n - from + 1);
    memcpy(s, "...", 3);
}

/* The columns shown as text: --columns, else those with a header. */
static size_t text_columns(const table *t, size_t *cols) {
    size_t k = 0;
    if (t->n_pick) {
        memcpy(cols, t->pick, t->n_pick * sizeof *cols);
        return t->n_pick;
    }
    for (size_t c = 0; c < t->n_cols && k < TABLE_MAX_COLS; c++)
        if (t->cols[c].header) cols[k++] = c;
    return k;
}

static const char *header_of(const column *col) { return col->header ? col->header : col->key; }

typedef struct text_col {
    size_t col;
    int width, min; /* as laid out; the narrowest it may be cut to */
    int text;       /* its cells are text (left-aligned, may be cut) */
} text_col;

enum { MAX_CELL = 400 };

/* Each column's natural width (its widest cell or header), then cuts past `width`: always the
 * widest column that still may give. */
static void lay_out(const jp_analysis *a, const table *t, const size_t *order, size_t n, int width, text_col *tc,
                    size_t k) {
    for (size_t i = 0; i < k; i++) {
        const column *col = &t->cols[tc[i].col];
        tc[i].width = (int)strlen(header_of(col));
        tc[i].text = 1;
        for (size_t r = 0; r < n; r++) {
            cell v;
            char buf[MAX_CELL + 1];
            jp_table_cell(a, t, (const char *)t->rows + order[r] * t->row_size, tc[i].col, &v);
            cell_text(&v, buf, sizeof buf);
            int len = (int)text_width(buf);
            if (len > tc[i].width) tc[i].width = len;
            tc[i].text = is_str(&v);
        }
        /* a short label (a declared width) stays whole up to 40; the main name gives way to 12 */
        int label = col->width && col->header, floor = !col->header ? 16 : label ? 40 : 12;
        tc[i].min = !tc[i].text ? tc[i].width : tc[i].width < floor ? tc[i].width : floor;
    }
    int total = 0;
    for (size_t i = 0; i < k; i++) total += tc[i].width + 2;
    for (int primary = 0; primary < 2; primary++) /* the other texts first, then the row's name */
        while (total - 2 > width) {
            size_t widest = k;
            for (size_t i = 0; i < k; i++) {
                const column *col = &t->cols[tc[i].col];
                int is_primary = col->header && !col->width;
                if (is_primary <= primary && tc[i].width > tc[i].min && (widest == k || tc[i].width > tc[widest].width))
                    widest = i;
            }
            if (widest == k) break; /* nothing (more) may give */
            tc[widest].width--, total--;
        }
}

/* Appends one cell padded to width characters (at most cap bytes); returns the new length. */
static size_t put_cell(char *line, size_t len, size_t cap, const char *text, int width, int left) {
    int pad = width - (int)text_width(text);
    pad = pad > 0 ? pad : 0;
    int n = left ? snprintf(line + len, cap - len, "%s%*s  ", text, pad, "")
                 : snprintf(line + len, cap - len, "%*s%s  ", pad, "", text);
    return n < 0 ? len : len + (size_t)n < cap ? len + (size_t)n : cap - 1;
}

/* Writes line without trailing blanks, then a newline. */
static void put_line(FILE *out, char *line, size_t len) {
    while (len && line[len - 1] == ' ') len--;
    fwrite(line, 1, len, out);
    fputc('\n', out);
}

void jp_table_text(const jp_analysis *a, const table *t, const size_t *order, size_t n, int width, FILE *out) {
    size_t cols[TABLE_MAX_COLS], k = text_columns(t, cols);
    text_col tc[TABLE_MAX_COLS];
    for (size_t i = 0; i < k; i++) tc[i] = (text_col){.col = cols[i]};
    lay_out(a, t, order, n, width, tc, k);
    char line[4096];
    size_t len = 0;
    for (size_t i = 0; i < k; i++)
        len = put_cell(line, len, sizeof line, header_of(&t->cols[tc[i].col]), tc[i].width, tc[i].text);
    put_line(out, line, len);
    for (size_t r = 0; r < n; r++) {
        const void *row = (const char *)t->rows + order[r] * t->row_size;
        len = 0;
        for (size_t i = 0; i < k; i++) {
            cell v;
            char buf[MAX_CELL + 1];
            jp_table_cell(a, t, row, tc[i].col, &v);
            cell_text(&v, buf, sizeof buf);
            fit(buf, (size_t)tc[i].width);
            len = put_cell(line, len, sizeof line, buf, tc[i].width, tc[i].text);
        }
        put_line(out, line, len);
    }
    if (!n) fprintf(out, "  (none)\n");
}

/* ---- CSV and JSON ------------------------------------------------------------------------------ */

/* 1 when s is a plain decimal number as a spreadsheet reads one: [+-]digits[.digits][e[+-]digits]
 * (at least one digit before the exponent). Such a cell is data, never a formula. */
static int is_plain_number(const char *s) {
    const char *p = s + (*s == '+' || *s == '-');
    size_t digits = strspn(p, "0123456789");
    p += digits;
    if (*p == '.') {
        size_t frac = strspn(p + 1, "0123456789");
        digits += frac;
        p += 1 + frac;
    }
    if (!digits) return 0;
    if (*p == 'e' || *p == 'E') {
        p += 1 + (p[1] == '+' || p[1] == '-');
        size_t exp = strspn(p, "0123456789");
        if (!exp) return 0;
        p += exp;
    }
    return *p == '\0';
}

/* CSV (formula) injection, as OWASP advises: a text cell that starts with = + - @, a tab or a
 * carriage return is one a spreadsheet may run as a formula, so it gets a leading single quote;
 * except a plain number (-1.5 stays a number). Numeric cells are written by printf and never
 * reach here. */
static int csv_needs_quote_mark(const char *s) { return strchr("=+-@\t\r", s[0]) && s[0] && !is_plain_number(s); }

static void csv_str(FILE *out, const char *s) {
    const char *mark = csv_needs_quote_mark(s) ? "'" : "";
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(mark, out);
        fputs(s, out);
        return;
    }
    fputc('"', out);
    fputs(mark, out);
    for (; *s; s++) {
        if (*s == '"') fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

/* JSON: [{"file","line","function","library"}, ...]; CSV: "file:line function;..." */
static void frames_raw(FILE *out, const cell *v, int json) {
    if (!json) fputs(v->n_frames && csv_needs_quote_mark(v->frames[0].file) ? "\"'" : "\"", out);
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
        jp_json_fput_cstr(out, f->file);
        fprintf(out, ",\"line\":%u,\"function\":", f->line);
        jp_json_fput_cstr(out, f->function);
        fprintf(out, ",\"library\":%s}", f->library ? "true" : "false");
    }
    fputs(json ? (v->n_frames ? "]" : "[]") : "\"", out);
}

static void cell_raw(FILE *out, const cell *v, int json) {
    switch (v->type) {
    case CELL_FRAMES: frames_raw(out, v, json); break;
    case CELL_STR: case CELL_PROGRAM_STR: json ? jp_json_fput_cstr(out, v->s) : csv_str(out, v->s); break;
    case CELL_INT: case CELL_BYTES: fprintf(out, "%lld", (long long)v->i); break;
    case CELL_BOOL: fputs(v->i ? "true" : "false", out); break;
    case CELL_NONE: if (json) fputs("null", out); break;
    case CELL_TIME: jp_json_fput_ms(out, v->i); break; /* milliseconds, ns precision */
    case CELL_NUM: fprintf(out, "%.12g", isfinite(v->d) ? v->d : 0.0); break; /* FLOPs, bytes: exact */
    default: fprintf(out, "%.6g", isfinite(v->d) ? v->d : 0.0); break;
    }
}

void jp_table_cell_json(FILE *out, const cell *v) { cell_raw(out, v, 1); }

/* The columns of CSV and JSON rows: --columns, else all. */
static size_t raw_columns(const table *t, size_t *cols) {
    if (t->n_pick) memcpy(cols, t->pick, t->n_pick * sizeof *cols);
    for (size_t c = 0; !t->n_pick && c < t->n_cols && c < TABLE_MAX_COLS; c++) cols[c] = c;
    return t->n_pick ? t->n_pick : t->n_cols < TABLE_MAX_COLS ? t->n_cols : TABLE_MAX_COLS;
}

void jp_table_csv(const jp_analysis *a, const table *t, const size_t *order, size_t n, FILE *out) {
    size_t cols[TABLE_MAX_COLS], k = raw_columns(t, cols);
    for (size_t i = 0; i < k; i++) fprintf(out, "%s%s", i ? "," : "", t->cols[cols[i]].key);
    fputc('\n', out);
    for (size_t r = 0; r < n; r++) {
        const void *row = (const char *)t->rows + order[r] * t->row_size;
        for (size_t i = 0; i < k; i++) {
            cell v;
            jp_table_cell(a, t, row, cols[i], &v);
            if (i) fputc(',', out);
            cell_raw(out, &v, 0);
        }
        fputc('\n', out);
    }
}

void jp_table_json(const jp_analysis *a, const table *t, const size_t *order, size_t n, FILE *out) {
    fprintf(out, "\"%s\":", t->name);
    jp_table_json_rows(a, t, order, n, out);
}

void jp_table_json_fields(const jp_analysis *a, const table *t, const void *row, size_t from, size_t to, int first,
                          FILE *out) {
    for (size_t i = from; i < to && i < t->n_cols; i++) {
        cell v;
        jp_table_cell(a, t, row, i, &v);
        fprintf(out, "%s\"%s\":", first && i == from ? "" : ",", t->cols[i].key);
        cell_raw(out, &v, 1);
    }
}

void jp_table_json_rows(const jp_analysis *a, const table *t, const size_t *order, size_t n, FILE *out) {
    size_t cols[TABLE_MAX_COLS], k = raw_columns(t, cols);
    fputc('[', out);
    for (size_t r = 0; r < n; r++) {
        const void *row = (const char *)t->rows + order[r] * t->row_size;
        fputs(r ? (t->compact ? ",{" : ",\n{") : (t->compact ? "{" : "\n{"), out);
        for (size_t i = 0; i < k; i++) {
            cell v;
            jp_table_cell(a, t, row, cols[i], &v);
            fprintf(out, "%s\"%s\":", i ? "," : "", t->cols[cols[i]].key);
            cell_raw(out, &v, 1);
        }
        fputc('}', out);
    }
    fputs("]", out);
}
