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

typedef struct column {
    const char *key;    /* JSON/CSV name: "total_ms"; --sort accepts it or its stem "total" */
    const char *header; /* text header; NULL hides the column in text */
    int width;          /* text width; 0 = takes the remaining width (one per table) */
} column;

enum { TABLE_MAX_COLS = 32 };

typedef struct table {
    const char *name;          /* JSON array name: "ops" */
    const column *cols;
    size_t n_cols;
    const void *rows;
    size_t row_size;
    size_t n_rows;
    const char *default_sort;  /* a column key, or NULL to keep the analysis order */
    void (*cell)(const jp_analysis *a, const void *row, size_t col, cell *out);
    int (*keep)(const void *row); /* rows shown: those it returns 1 for; NULL: all */
    size_t pick[TABLE_MAX_COLS]; /* the columns --columns asked for, in its order; n_pick 0: the */
    size_t n_pick;               /* table's own (text: those with a header; CSV, JSON: all) */
} table;

/* Row order after --filter and --sort, at most --top rows; also reads --columns into t->pick.
 * *order is malloc'd. */
int jp_table_select(const jp_analysis *a, table *t, const jp_view *v, size_t **order, size_t *n, jp_error *err);
/* Columns as wide as their widest cell; past `width`, the widest names give way (the row's main
 * name first, then other long texts), while numbers and short labels (a category) are never cut. */
void jp_table_text(const jp_analysis *a, const table *t, const size_t *order, size_t n, int width, FILE *out);
void jp_table_csv(const jp_analysis *a, const table *t, const size_t *order, size_t n, FILE *out);
/* "name": [ {...}, ... ] */
void jp_table_json(const jp_analysis *a, const table *t, const size_t *order, size_t n, FILE *out);
/* The same array without its name. */
void jp_table_json_rows(const jp_analysis *a, const table *t, const size_t *order, size_t n, FILE *out);

/* "12.3 ms", "450.0 µs", "1.20 s": µs in every human-readable time (JSON keys keep _us, _ms) */
void jp_format_time(char *buf, size_t len, double ps);
/* "768 B", "16.0 KiB", "64.0 MiB", "5.00 GiB": powers of 1024, as XLA and XProf count memory. */
void jp_format_bytes(char *buf, size_t len, int64_t bytes);

#endif
