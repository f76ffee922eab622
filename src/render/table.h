/* table.h - one description of each result table, rendered as text, CSV or JSON rows (internal). */
#ifndef JP_OUTPUTS_TABLE_H
#define JP_OUTPUTS_TABLE_H

#include <stdio.h>

#include "analyses/result_names.h"
#include "jaxprof/jaxprof_results.h"

/* CELL_NONE: a number not computed (JSON null, CSV empty, text "-"; sorts below every number).
 * CELL_PROGRAM_STR: a string (s) of one compiled program (i, its id): JSON and CSV write the
 * string, text adds " (program i)" so that rows of one op name in several programs differ. */
enum cell_type {
    CELL_STR, CELL_INT, CELL_TIME, CELL_PCT, CELL_NUM, CELL_BOOL, CELL_FRAMES, CELL_BYTES, CELL_NONE, CELL_PROGRAM_STR
};

typedef struct cell {
    int type;        /* cell_type */
    const char *s;   /* CELL_STR */
    int64_t i;       /* CELL_INT, CELL_BOOL; CELL_TIME in picoseconds; CELL_BYTES in bytes (text: "64.0 MiB") */
    double d;        /* CELL_PCT (0-100), CELL_NUM */
    char buf[48];    /* storage for short formatted strings (s may point here) */
    const jp_source_frame *frames; /* CELL_FRAMES: a Python stack, innermost first (JSON: an array) */
    uint32_t n_frames;
} cell;

/* The cell of one row's column. */
typedef void (*column_get)(const jp_analysis *a, const void *row, cell *out);

/* One column, declared once (src/render/columns.c): text, CSV and JSON read it, and so do the
 * generated docs/json-schema.md, Python result classes and viewer column lists (jaxprof-columns). */
typedef struct column {
    const char *key;    /* JSON/CSV name: "total_ms"; --sort accepts it or its stem "total" */
    const char *header; /* text header; NULL hides the column in text */
    int width;          /* text width; 0 = takes the remaining width (one per table) */
    int type;           /* the cell_type its getter sets (CELL_NONE too where nullable) */
    int nullable;       /* 1: a row may have no value (CELL_NONE: JSON null) */
    const char *unit;   /* "ms", "%", "bytes", "GFLOP/s", ...; NULL: none (or ms/%/bytes by type) */
    column_get get;     /* its cell; NULL where the table's own cell function gives every cell */
    const char *doc;    /* one line: what the value is */
    int view;           /* the viewer's column menu: 0 not in it, 1 offered, 2 shown by default */
    const char *label;  /* the viewer's heading; NULL: the header (else the key) with its unit */
} column;

enum { TABLE_MAX_COLS = 48 }; /* the ops have 34 */

typedef struct table {
    const char *name;          /* JSON array name: "ops" */
    const column *cols;
    size_t n_cols;
    const void *rows;
    size_t row_size;
    size_t n_rows;
    const char *default_sort;  /* a column key, or NULL to keep the analysis order */
    /* a cell by column index, for tables whose columns have no getter (the diff's) or that
     * show some cells differently as text; NULL: each column's get */
    void (*cell)(const jp_analysis *a, const void *row, size_t col, cell *out);
    int compact;               /* JSON: the rows on one line (the stragglers) */
    int (*keep)(const void *row); /* rows shown: those it returns 1 for; NULL: all */
    size_t pick[TABLE_MAX_COLS]; /* the columns --columns asked for, in its order; n_pick 0: the */
    size_t n_pick;               /* table's own (text: those with a header; CSV, JSON: all) */
} table;

/* The cell of row's column col: t->cell, else the column's getter. */
void jp_table_cell(const jp_analysis *a, const table *t, const void *row, size_t col, cell *out);
/* Row order after --filter and --sort, at most --top rows; also reads --columns into t->pick.
 * *order is malloc'd. */
int jp_table_select(const jp_analysis *a, table *t, const jp_view *v, size_t **order, size_t *n, jp_error *err);
/* Columns as wide as their widest cell; past `width`, the widest names give way (the row's main
 * name first, then other long texts), while numbers and short labels (a category) are never cut. */
void jp_table_text(const jp_analysis *a, const table *t, const size_t *order, size_t n, int width, FILE *out);
void jp_table_csv(const jp_analysis *a, const table *t, const size_t *order, size_t n, FILE *out);
/* "name": [ {...}, ... ] */
void jp_table_json(const jp_analysis *a, const table *t, const size_t *order, size_t n, FILE *out);
/* "key":value of the row's columns [from, to), a comma before each but the very first when first. */
void jp_table_json_fields(const jp_analysis *a, const table *t, const void *row, size_t from, size_t to, int first,
                          FILE *out);
/* The same array without its name. */
void jp_table_json_rows(const jp_analysis *a, const table *t, const size_t *order, size_t n, FILE *out);

/* One cell's JSON value, as jp_table_json writes it. */
void jp_table_cell_json(FILE *out, const cell *v);

/* "12.3 ms", "450.0 µs", "1.20 s": µs in every human-readable time (JSON keys keep _us, _ms) */
void jp_format_time(char *buf, size_t len, double ps);
/* "768 B", "16.0 KiB", "64.0 MiB", "5.00 GiB": powers of 1024, as XLA and XProf count memory. */
void jp_format_bytes(char *buf, size_t len, int64_t bytes);

#endif
