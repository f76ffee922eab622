/* columns.h - every result table's columns, declared once (internal). columns.c holds each
 * column's key, text header, unit, type, getter and doc line; the text, CSV and JSON writers
 * (table.c) read them, and jaxprof-columns (tools/gen_columns.c) generates docs/json-schema.md,
 * python/jaxprof/results.py and src/serve/assets/columns.js from them. */
#ifndef JP_RENDER_COLUMNS_H
#define JP_RENDER_COLUMNS_H

#include "render/table.h"

/* The tables, in the order the schema page lists them. */
enum jp_table_id {
    JP_TABLE_DEVICES, JP_TABLE_KPIS, JP_TABLE_OPS, JP_TABLE_STEPS, JP_TABLE_SCOPES, JP_TABLE_KERNELS,
    JP_TABLE_MEMORY, JP_TABLE_TRANSFERS, JP_TABLE_COMPILES, JP_TABLE_FINDINGS, JP_TABLE_LINES, JP_TABLE_FLAME,
    JP_TABLE_HOST_STATS, JP_TABLE_HOST_STEPS, JP_TABLE_STRAGGLERS, JP_TABLE_MODULES, JP_TABLE_BUFFERS,
    JP_TABLE_DIFF_ROWS, JP_TABLE_DIFF_BREAKDOWN, JP_TABLE_DIFF_FINDINGS, /* jaxprof diff's document */
    JP_TABLE_PRECISION,
    JP_TABLE_LAUNCHES,
    JP_TABLE_COMM,
    JP_TABLE_COMM_INSTANCES,
    JP_TABLE_LAUNCH_STREAMS,
    JP_TABLE_COUNT
};

/* Where an analysis keeps a table's rows: the first (NULL or anything when none), their count in *n. */
typedef const void *(*jp_table_rows_fn)(const jp_analysis *a, size_t *n);

/* One table, declared once: its columns, and where its rows are. */
typedef struct jp_table_def {
    const char *name;     /* the JSON array's key: "ops" (the diff's tables: "diff_rows", ...) */
    const char *py_class; /* the Python result class of a row: "Op" */
    const char *doc;      /* one line: what a row is */
    const char *where;    /* the sections (commands) whose JSON has it */
    const column *cols;
    size_t n_cols;
    size_t json_from;     /* JSON and Python rows: cols[json_from..]; the columns before it are
                           * the CSV's only (buffers: their module's) */
    jp_table_rows_fn rows; /* its rows in a jp_analysis; NULL for rows a renderer builds (host_steps,
                            * buffers, the diff's) */
    size_t row_size;       /* one row's size: the element type of what rows returns, else the built row's */
    const char *default_sort; /* --sort when none is given (a column key), or NULL: the analysis's order */
} jp_table_def;

extern const jp_table_def jp_table_defs[JP_TABLE_COUNT];

/* The table id (a jp_table_id) over the rows the analysis keeps for it: jp_table_defs[id].rows, none
 * for a table without that getter; an id that is no table's: a table of no columns and no rows. */
table jp_table_of(const jp_analysis *a, int id);
/* The table id over n rows a renderer built (of jp_table_defs[id].row_size each). */
table jp_table_over(int id, const void *rows, size_t n);

/* One host's step, a row of the long (step, host) table. */
typedef struct host_step_row {
    const jp_step *step;
    uint32_t host;           /* index into jp_analysis.host_stats */
    const jp_straggler *lag; /* the step's straggler when it is this host */
} host_step_row;

/* Every host's steps, by step number then host; *rows is malloc'd (NULL with n 0 is fine). */
int jp_host_step_rows(const jp_analysis *a, host_step_row **rows, size_t *n);

/* A buffer with the module it belongs to: a row of the buffer tables. */
typedef struct buffer_row {
    const jp_module_memory *m; /* the module, for the CSV's module columns */
    const jp_buffer *b;        /* the buffer */
} buffer_row;

/* One part of the step breakdown in a diff, a row of its breakdown table. */
typedef struct diff_part_row {
    int part;               /* jp_part */
    double base_ps, new_ps; /* per step */
} diff_part_row;

/* modules[]: kind_bytes{} comes after this column (always_live_bytes). */
enum { JP_MODULE_KIND_BYTES_AFTER = 8 };

/* The buffers table's first buffer column (those before it are the module's, CSV only). */
enum { JP_BUFFER_FIRST_COL = 5 };

/* A column's unit: its declared one, else ms for times, % for percentages, bytes for sizes; ""
 * for none. */
const char *jp_column_unit(const column *c);

#endif
