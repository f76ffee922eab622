/* sql_query.c - jp_sql_run: each statement of a query run on a profile's database (sql.c), its rows
 * written as an aligned table, CSV or JSON. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/json.h"
#include "base/text.h"
#include "export/sql.h"

enum { CELL_CAP = 60 }; /* the widest a text column gets, in characters */

/* One value of a result, as text (NULL for SQL NULL). */
typedef struct value {
    const char *s;
    size_t len;
    int type; /* SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB, SQLITE_NULL */
} value;

typedef struct result {
    jp_arena arena;
    size_t n_cols;
    const char **names;
    value *cells; /* rows x n_cols */
    size_t n_rows, cap_rows;
} result;

/* A real with the fewest digits that read back as the same double. */
static int format_real(char *buf, size_t cap, double d) {
    int n = snprintf(buf, cap, "%.15g", d);
    if (strtod(buf, NULL) != d) n = snprintf(buf, cap, "%.17g", d);
    return n;
}

static int keep_value(result *r, sqlite3_stmt *st, int col, value *v) {
    char buf[40];
    const char *s = NULL;
    int n = 0;
    v->type = sqlite3_column_type(st, col);
    switch (v->type) {
    case SQLITE_NULL: v->s = NULL, v->len = 0; return JP_OK;
    case SQLITE_INTEGER: n = snprintf(buf, sizeof buf, "%lld", (long long)sqlite3_column_int64(st, col)), s = buf; break;
    case SQLITE_FLOAT: n = format_real(buf, sizeof buf, sqlite3_column_double(st, col)), s = buf; break;
    case SQLITE_BLOB: n = snprintf(buf, sizeof buf, "<%d bytes>", sqlite3_column_bytes(st, col)), s = buf; break;
    default: s = (const char *)sqlite3_column_text(st, col), n = sqlite3_column_bytes(st, col); break;
    }
    if (!s) return JP_ERR_NOMEM;
    char *copy = jp_arena_alloc(&r->arena, (size_t)n + 1);
    if (!copy) return JP_ERR_NOMEM;
    memcpy(copy, s, (size_t)n);
    copy[n] = '\0';
    v->s = copy, v->len = (size_t)n;
    return JP_OK;
}

static int keep_row(result *r, sqlite3_stmt *st) {
    if (r->n_rows == r->cap_rows) {
        size_t cap = r->cap_rows ? r->cap_rows * 2 : 64;
        value *cells = realloc(r->cells, cap * (r->n_cols ? r->n_cols : 1) * sizeof *cells);
        if (!cells) return JP_ERR_NOMEM;
        r->cells = cells, r->cap_rows = cap;
    }
    value *row = &r->cells[r->n_rows++ * r->n_cols];
    for (size_t c = 0; c < r->n_cols; c++)
        if (keep_value(r, st, (int)c, &row[c]) != JP_OK) return JP_ERR_NOMEM;
    return JP_OK;
}

/* Steps st to its end, keeping every row. */
static int collect(sqlite3 *db, sqlite3_stmt *st, result *r, jp_error *err) {
    r->n_cols = (size_t)sqlite3_column_count(st);
    r->names = jp_arena_alloc(&r->arena, (r->n_cols ? r->n_cols : 1) * sizeof *r->names);
    if (!r->names) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    for (size_t c = 0; c < r->n_cols; c++) {
        const char *name = sqlite3_column_name(st, (int)c);
        r->names[c] = name ? jp_arena_strndup(&r->arena, name, strlen(name)) : "?";
        if (!r->names[c]) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (keep_row(r, st) != JP_OK) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    return rc == SQLITE_DONE ? JP_OK : jp_error_set(err, JP_ERR_ARG, 0, "SQL: %s", sqlite3_errmsg(db));
}

/* ---- writing a result ------------------------------------------------------------------------------- */

static int is_number(const value *v) { return v->type == SQLITE_INTEGER || v->type == SQLITE_FLOAT; }

/* Characters in s's first len bytes (UTF-8), each continuation byte not counted. */
static size_t chars(const char *s, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

/* The first bytes of s that hold at most max characters. */
static size_t bytes_of_chars(const char *s, size_t len, size_t max) {
    size_t n = 0, i = 0;
    for (; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80 && n++ == max) break;
    return i;
}

/* s in a column `width` characters wide: numbers to the right, text to the left, a longer text cut
 * with an ellipsis. */
static void put_cell(FILE *out, const char *s, size_t len, size_t width, int right) {
    size_t w = chars(s, len);
    int cut = w > width;
    if (cut) len = bytes_of_chars(s, len, width - 1), w = width;
    if (right) fprintf(out, "%*s", (int)(width - w), "");
    jp_text_fput_safe(out, s, len, 0);
    if (cut) fputs("\xe2\x80\xa6", out); /* an ellipsis */
    if (!right) fprintf(out, "%*s", (int)(width - w), "");
}

static void write_text(const result *r, int width, FILE *out) {
    size_t *w = calloc(r->n_cols ? r->n_cols : 1, sizeof *w);
    if (!w) return;
    size_t cap = width > 20 ? (size_t)width : CELL_CAP;
    if (cap > CELL_CAP) cap = CELL_CAP;
    for (size_t c = 0; c < r->n_cols; c++) w[c] = chars(r->names[c], strlen(r->names[c]));
    for (size_t i = 0; i < r->n_rows * r->n_cols; i++) {
        size_t c = i % r->n_cols, n = r->cells[i].s ? chars(r->cells[i].s, r->cells[i].len) : 4;
        if (n > w[c]) w[c] = n;
    }
    for (size_t c = 0; c < r->n_cols; c++) w[c] = w[c] > cap ? cap : w[c];
    for (size_t c = 0; c < r->n_cols; c++) {
        if (c) fputs("  ", out);
        put_cell(out, r->names[c], strlen(r->names[c]), w[c], 0);
    }
    fputc('\n', out);
    for (size_t c = 0; c < r->n_cols; c++) {
        if (c) fputs("  ", out);
        for (size_t k = 0; k < w[c]; k++) fputc('-', out);
    }
    fputc('\n', out);
    for (size_t row = 0; row < r->n_rows; row++) {
        const value *v = &r->cells[row * r->n_cols];
        for (size_t c = 0; c < r->n_cols; c++) {
            if (c) fputs("  ", out);
            if (v[c].s) put_cell(out, v[c].s, v[c].len, w[c], is_number(&v[c]));
            else put_cell(out, "NULL", 4, w[c], 1);
        }
        fputc('\n', out);
    }
    fprintf(out, "(%zu row%s)\n", r->n_rows, r->n_rows == 1 ? "" : "s");
    free(w);
}

static void csv_field(FILE *out, const char *s, size_t len) {
    if (!s) return;
    if (!memchr(s, ',', len) && !memchr(s, '"', len) && !memchr(s, '\n', len) && !memchr(s, '\r', len)) {
        fwrite(s, 1, len, out);
        return;
    }
    fputc('"', out);
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"') fputc('"', out);
        fputc(s[i], out);
    }
    fputc('"', out);
}

static void write_csv(const result *r, FILE *out) {
    for (size_t c = 0; c < r->n_cols; c++) {
        if (c) fputc(',', out);
        csv_field(out, r->names[c], strlen(r->names[c]));
    }
    fputc('\n', out);
    for (size_t i = 0; i < r->n_rows * r->n_cols; i++) {
        if (i % r->n_cols) fputc(',', out);
        csv_field(out, r->cells[i].s, r->cells[i].len);
        if (i % r->n_cols == r->n_cols - 1) fputc('\n', out);
    }
}

static void write_json(const result *r, FILE *out) {
    fputc('[', out);
    for (size_t row = 0; row < r->n_rows; row++) {
        const value *v = &r->cells[row * r->n_cols];
        fputs(row ? ",\n{" : "\n{", out);
        for (size_t c = 0; c < r->n_cols; c++) {
            if (c) fputc(',', out);
            jp_json_fput_cstr(out, r->names[c]);
            fputc(':', out);
            if (!v[c].s) fputs("null", out);
            else if (is_number(&v[c]) && strcmp(v[c].s, "inf") && strcmp(v[c].s, "-inf") && strcmp(v[c].s, "nan"))
                fwrite(v[c].s, 1, v[c].len, out);
            else if (is_number(&v[c])) fputs("null", out);
            else jp_json_fput_str(out, v[c].s, v[c].len);
        }
        fputc('}', out);
    }
    fputs(r->n_rows ? "\n]\n" : "]\n", out);
}

/* ---- running statements ----------------------------------------------------------------------------- */

/* 1 when SQLite's error names one of the event tables, not loaded yet. */
static int wants_events(sqlite3 *db) {
    static const char PREFIX[] = "no such table: ";
    const char *msg = sqlite3_errmsg(db);
    if (strncmp(msg, PREFIX, sizeof PREFIX - 1) != 0) return 0;
    const char *name = msg + sizeof PREFIX - 1, *dot = strchr(name, '.');
    if (dot) name = dot + 1; /* main.events */
    for (size_t i = 0; JP_SQL_EVENT_TABLES[i]; i++)
        if (strcmp(name, JP_SQL_EVENT_TABLES[i]) == 0) return 1;
    return 0;
}

/* Prepares the statement at *sql, loading the events first when it names them; *st is NULL at
 * the end of the text. */
static int prepare_next(jp_sql *q, const char **sql, sqlite3_stmt **st, jp_error *err) {
    sqlite3 *db = jp_sql_db(q);
    const char *tail;
    int rc = sqlite3_prepare_v2(db, *sql, -1, st, &tail);
    if (rc != SQLITE_OK && wants_events(db)) {
        int loaded = jp_sql_load_events(q, err);
        if (loaded != JP_OK) return loaded;
        rc = sqlite3_prepare_v2(db, *sql, -1, st, &tail);
    }
    if (rc != SQLITE_OK) return jp_error_set(err, JP_ERR_ARG, 0, "SQL: %s", sqlite3_errmsg(db));
    *sql = tail;
    return JP_OK;
}

static void write_result(const result *r, int format, int width, FILE *out) {
    if (format == JP_FORMAT_CSV) write_csv(r, out);
    else if (format == JP_FORMAT_JSON) write_json(r, out);
    else write_text(r, width, out);
}

int jp_sql_run(jp_sql *q, const char *sql, int format, int width, FILE *out, jp_error *err) {
    jp_error_clear(err);
    int rc = JP_OK, results = 0;
    while (rc == JP_OK && sql && *sql) {
        sqlite3_stmt *st = NULL;
        rc = prepare_next(q, &sql, &st, err);
        if (rc != JP_OK || !st) break; /* an error, or only white space and comments left */
        result r = {.n_cols = 0};
        jp_arena_init(&r.arena, 0);
        rc = collect(jp_sql_db(q), st, &r, err);
        if (rc == JP_OK && r.n_cols) {
            if (results++ && format == JP_FORMAT_TEXT) fputc('\n', out);
            write_result(&r, format, width, out);
        }
        sqlite3_finalize(st);
        free(r.cells);
        jp_arena_deinit(&r.arena);
    }
    if (rc == JP_OK && (fflush(out) != 0 || ferror(out))) rc = jp_error_set(err, JP_ERR_IO, 0, "cannot write the result");
    return rc;
}

int jp_sql_complete(const char *sql) { return sqlite3_complete(sql); }
