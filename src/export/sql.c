/* sql.c - a profile as an SQLite database (docs/sql.md): every analysis table with the columns
 * and the values of --json (columns.c), and every event of the XSpaces with its stats. `jaxprof sql`
 * queries it in memory, loading the events only when a query names them; `jaxprof export --format
 * sqlite` writes all of it to a file (sql_query.c runs the queries and writes their results). */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/error.h"
#include "base/json.h"
#include "base/outfile.h"
#include "base/vec.h"
#include "export/sql.h"
#include "profile/profile.h"
#include "render/columns.h"
#include "timeline/layout.h"

/* ---- statements ---------------------------------------------------------------------------------- */

static int sql_failed(sqlite3 *db, const char *what, jp_error *err) {
    return jp_error_set(err, JP_ERR_IO, 0, "SQLite: %s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
}

int jp_sql_exec(sqlite3 *db, const char *sql, jp_error *err) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK) return JP_OK;
    int rc = jp_error_set(err, JP_ERR_IO, 0, "SQLite: %s", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return rc;
}

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, jp_error *err) {
    return sqlite3_prepare_v2(db, sql, -1, st, NULL) == SQLITE_OK ? JP_OK : sql_failed(db, sql, err);
}

/* Runs a bound insert and resets it for the next row. */
static int step_insert(sqlite3 *db, sqlite3_stmt *st, jp_error *err) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? JP_OK : sql_failed(db, "insert", err);
}

/* ---- analysis tables ------------------------------------------------------------------------------ */

static const char *column_type(int cell_type) {
    switch (cell_type) {
    case CELL_INT: case CELL_BOOL: case CELL_BYTES: return "INTEGER";
    case CELL_TIME: case CELL_PCT: case CELL_NUM: return "REAL";
    default: return "TEXT";
    }
}

/* The number JSON writes for a cell, read back: SQL and --json agree to the last digit. */
static double json_number(const cell *v) {
    char buf[64];
    if (v->type == CELL_TIME) jp_json_format_ms(buf, v->i);
    else snprintf(buf, sizeof buf, v->type == CELL_NUM ? "%.12g" : "%.6g", isfinite(v->d) ? v->d : 0.0);
    return strtod(buf, NULL);
}

/* A Python stack as the JSON array --json writes. */
static int bind_frames(sqlite3_stmt *st, int i, const cell *v) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return SQLITE_NOMEM;
    jp_table_cell_json(f, v);
    if (fclose(f) != 0) {
        free(text);
        return SQLITE_NOMEM;
    }
    return sqlite3_bind_text(st, i, text, (int)len, free);
}

static int bind_cell(sqlite3_stmt *st, int i, const cell *v) {
    switch (v->type) {
    case CELL_STR: case CELL_PROGRAM_STR: return sqlite3_bind_text(st, i, v->s ? v->s : "", -1, SQLITE_TRANSIENT);
    case CELL_INT: case CELL_BOOL: case CELL_BYTES: return sqlite3_bind_int64(st, i, v->i);
    case CELL_NONE: return sqlite3_bind_null(st, i);
    case CELL_FRAMES: return bind_frames(st, i, v);
    default: return sqlite3_bind_double(st, i, json_number(v));
    }
}

/* CREATE TABLE and its INSERT for columns [from, n_cols) of t (sqlite3_free them); 0 when out of
 * memory. */
static int table_statements(const table *t, size_t from, char **create, char **insert) {
    sqlite3_str *c = sqlite3_str_new(NULL), *in = sqlite3_str_new(NULL);
    sqlite3_str_appendf(c, "CREATE TABLE \"%w\" (", t->name);
    sqlite3_str_appendf(in, "INSERT INTO \"%w\" VALUES (", t->name);
    for (size_t k = from; k < t->n_cols; k++) {
        sqlite3_str_appendf(c, "%s\"%w\" %s", k > from ? ", " : "", t->cols[k].key, column_type(t->cols[k].type));
        sqlite3_str_appendf(in, "%s?", k > from ? ", " : "");
    }
    sqlite3_str_appendall(c, ")");
    sqlite3_str_appendall(in, ")");
    *create = sqlite3_str_finish(c);
    *insert = sqlite3_str_finish(in);
    return *create && *insert;
}

/* Table t (columns from `from` on) with every row, in the order --json writes them. */
static int write_table(sqlite3 *db, const jp_analysis *a, table *t, size_t from, jp_error *err) {
    char *create, *insert;
    sqlite3_stmt *st = NULL;
    size_t *order = NULL, n = 0;
    jp_view all = {0};
    int rc = table_statements(t, from, &create, &insert) ? JP_OK : jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    if (rc == JP_OK) rc = jp_sql_exec(db, create, err);
    if (rc == JP_OK) rc = prepare(db, insert, &st, err);
    if (rc == JP_OK) rc = jp_table_select(a, t, &all, &order, &n, err);
    for (size_t r = 0; rc == JP_OK && r < n; r++) {
        const void *row = (const char *)t->rows + order[r] * t->row_size;
        for (size_t k = from; rc == JP_OK && k < t->n_cols; k++) {
            cell v;
            jp_table_cell(a, t, row, k, &v);
            if (bind_cell(st, (int)(k - from + 1), &v) != SQLITE_OK) rc = sql_failed(db, t->name, err);
        }
        if (rc == JP_OK) rc = step_insert(db, st, err);
    }
    sqlite3_finalize(st);
    free(order);
    sqlite3_free(create), sqlite3_free(insert);
    return rc;
}

/* Every buffer at every module's peak, with its module's columns (as memory --csv writes them). */
static int write_buffers(sqlite3 *db, const jp_analysis *a, jp_error *err) {
    size_t total = 0, k = 0;
    for (size_t i = 0; i < a->n_modules; i++) total += a->modules[i].n_buffers;
    buffer_row *rows = malloc((total ? total : 1) * sizeof *rows);
    if (!rows) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    for (size_t i = 0; i < a->n_modules; i++)
        for (size_t b = 0; b < a->modules[i].n_buffers; b++) rows[k++] = (buffer_row){&a->modules[i], &a->modules[i].buffers[b]};
    table t = jp_table_over(JP_TABLE_BUFFERS, rows, total);
    int rc = write_table(db, a, &t, 0, err);
    free(rows);
    return rc;
}

static int write_host_steps(sqlite3 *db, const jp_analysis *a, jp_error *err) {
    host_step_row *rows;
    size_t n;
    if (jp_host_step_rows(a, &rows, &n) != JP_OK) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    table t = jp_table_over(JP_TABLE_HOST_STEPS, rows, n);
    int rc = write_table(db, a, &t, 0, err);
    free(rows);
    return rc;
}

/* The tables of `jaxprof diff` compare two runs: a profile has none of them. */
static int is_diff_table(int id) {
    return id == JP_TABLE_DIFF_ROWS || id == JP_TABLE_DIFF_BREAKDOWN || id == JP_TABLE_DIFF_FINDINGS;
}

/* A number as the --json header writes it (printf's format, read back): SQLite's own printf rounds
 * some halves the other way. */
static double printed(const char *fmt, double d) {
    char buf[64];
    snprintf(buf, sizeof buf, fmt, d);
    return strtod(buf, NULL);
}

/* Binds values to st's parameters in order: 'i' int64, 'r' a double as printed with "%.6f", 'g'
 * with "%.12g", 'm' with "%.6g", 'p' with "%.4f", 't' text, 'n' NULL (then the value is skipped). */
static void bind_row(sqlite3_stmt *st, const char *kinds, const int64_t *ints, const double *reals,
                     const char *const *texts) {
    for (int i = 0; kinds[i]; i++) {
        switch (kinds[i]) {
        case 'i': sqlite3_bind_int64(st, i + 1, *ints++); break;
        case 'r': sqlite3_bind_double(st, i + 1, printed("%.6f", *reals++)); break;
        case 'g': sqlite3_bind_double(st, i + 1, printed("%.12g", *reals++)); break;
        case 'm': sqlite3_bind_double(st, i + 1, printed("%.6g", *reals++)); break;
        case 'p': sqlite3_bind_double(st, i + 1, printed("%.4f", *reals++)); break;
        case 't': sqlite3_bind_text(st, i + 1, *texts++, -1, SQLITE_STATIC); break;
        default: sqlite3_bind_null(st, i + 1); reals++; break;
        }
    }
}

static int insert_one(sqlite3 *db, const char *sql, const char *kinds, const int64_t *ints, const double *reals,
                      const char *const *texts, jp_error *err) {
    sqlite3_stmt *st;
    int rc = prepare(db, sql, &st, err);
    if (rc != JP_OK) return rc;
    bind_row(st, kinds, ints, reals, texts);
    rc = step_insert(db, st, err);
    sqlite3_finalize(st);
    return rc;
}

/* The header of every --json document and its step_summary, as one row each. */
static int write_summary(sqlite3 *db, const jp_analysis *a, jp_error *err) {
    static const char CREATE[] =
        "CREATE TABLE profile (path TEXT, platform TEXT, hosts INTEGER, events INTEGER, span_ms REAL, "
        "device_busy_ms REAL, device_idle_pct REAL, clock_method TEXT, schema_version INTEGER, jaxprof_version TEXT);"
        "CREATE TABLE step_summary (method TEXT, count INTEGER, flops_per_step REAL, mfu_pct REAL, mean_ms REAL, "
        "median_ms REAL, p90_ms REAL, std_ms REAL, min_ms REAL, max_ms REAL, total_ms REAL, no_device_work_steps INTEGER, "
        "gap_ms REAL);"
        "CREATE TABLE capture_health (kind TEXT, host TEXT, text TEXT)";
    const jp_step_summary *s = &a->step_summary;
    const char *head_texts[] = {a->path, jp_platform_name(a->platform), a->clock_method ? a->clock_method : "", JP_VERSION};
    int64_t head_ints[] = {(int64_t)a->n_hosts, (int64_t)a->n_events, JP_JSON_SCHEMA_VERSION};
    double head_reals[] = {(double)a->span_ps / 1e9, (double)a->op_busy_ps / 1e9, a->device_idle_pct};
    const char *step_texts[] = {s->method};
    int64_t step_ints[] = {(int64_t)a->n_steps, (int64_t)s->n_no_device};
    double step_reals[] = {a->step_flops, a->mfu_pct, s->mean_ps / 1e9, s->median_ps / 1e9, s->p90_ps / 1e9,
                           s->std_ps / 1e9, s->min_ps / 1e9, s->max_ps / 1e9, (double)s->total_ps / 1e9,
                           (double)s->gap_ps / 1e9};
    int rc = jp_sql_exec(db, CREATE, err);
    if (rc == JP_OK)
        rc = insert_one(db, "INSERT INTO profile VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", "ttiirrptit", head_ints,
                        head_reals, head_texts, err);
    if (rc == JP_OK)
        rc = insert_one(db, "INSERT INTO step_summary VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        a->mfu_pct >= 0 ? "tigmrrrrrrrir" : "tignrrrrrrrir", step_ints, step_reals, step_texts, err);
    sqlite3_stmt *st = NULL;
    if (rc == JP_OK) rc = prepare(db, "INSERT INTO capture_health VALUES (?, ?, ?)", &st, err);
    for (size_t i = 0; rc == JP_OK && i < a->n_health; i++) {
        const char *texts[] = {a->health[i].kind, a->health[i].host, a->health[i].text};
        bind_row(st, "ttt", NULL, NULL, texts);
        rc = step_insert(db, st, err);
    }
    sqlite3_finalize(st);
    return rc;
}

int jp_sql_write_analysis(sqlite3 *db, const jp_analysis *a, jp_error *err) {
    int rc = jp_sql_exec(db, "BEGIN", err);
    if (rc == JP_OK) rc = write_summary(db, a, err);
    for (int id = 0; rc == JP_OK && id < JP_TABLE_COUNT; id++) {
        if (is_diff_table(id)) continue;
        if (id == JP_TABLE_BUFFERS) rc = write_buffers(db, a, err);
        else if (id == JP_TABLE_HOST_STEPS) rc = write_host_steps(db, a, err);
        else {
            table t = jp_table_of(a, id);
            rc = write_table(db, a, &t, jp_table_defs[id].json_from, err);
        }
    }
    if (rc == JP_OK) rc = jp_sql_exec(db, "COMMIT", err);
    return rc;
}

/* ---- events ----------------------------------------------------------------------------------------- */

/* Stats become columns of events and event_metadata, one per distinct stat name of the files
 * (SQLite's limit is 2,000 columns a table); names past this many go to event_stats as
 * (event_id, name, value) rows. */
enum { STAT_COLUMNS_MAX = 1000 };

static const char *const EVENT_COLS[] = {"event_id", "host", "plane", "thread", "name", "start_ps", "dur_ps",
                                         "step", "plane_id", "thread_id", "metadata_id", "end_ps", "start_ms",
                                         "dur_ms", "device", "display_name"};
enum { N_EVENT_FIXED = 11 }; /* bound columns before the stats (the rest are generated or metadata's) */

static const char FIXED_TABLES[] =
    "CREATE TABLE planes (plane_id INTEGER PRIMARY KEY, host TEXT, name TEXT, xplane_id INTEGER);"
    "CREATE TABLE threads (thread_id INTEGER PRIMARY KEY, plane_id INTEGER, xline_id INTEGER, name TEXT, "
    "display_name TEXT);"
    "CREATE TABLE event_stats (event_id INTEGER, name TEXT, value);";

/* One stat column: the stat's name and the column's (the name, unless SQL would take it for
 * another column: names are case-insensitive there). */
typedef struct stat_column {
    jp_str stat;
    char *column;
} stat_column;

enum { INS_PLANE, INS_THREAD, INS_META, INS_EVENT, INS_STAT, N_INSERTS };

typedef struct step_window {
    int64_t start_ps, end_ps, num;
} step_window;

typedef struct event_writer {
    sqlite3 *db;
    sqlite3_stmt *ins[N_INSERTS];
    stat_column *cols;  /* by stat name (memcmp order) */
    size_t n_cols;
    int32_t *col_of;    /* the current plane's stat metadata (by index) -> column, -1: event_stats */
    jp_xspace *xs;
    const jp_plane *plane;
    const char *host;
    int64_t shift_ps;
    int64_t plane_id, thread_id, event_id;
    step_window *steps; /* the analysis's steps by start, for each event's step */
    size_t n_steps;
    jp_error *err;
} event_writer;

static int cmp_jp_str(jp_str a, jp_str b) {
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.ptr, b.ptr, n) : 0;
    return c ? c : (a.len > b.len) - (a.len < b.len);
}

static int cmp_stat_column(const void *x, const void *y) {
    return cmp_jp_str(((const stat_column *)x)->stat, ((const stat_column *)y)->stat);
}

static int column_taken(const event_writer *w, size_t upto, const char *name) {
    for (size_t i = 0; i < sizeof EVENT_COLS / sizeof *EVENT_COLS; i++)
        if (sqlite3_stricmp(EVENT_COLS[i], name) == 0) return 1;
    for (size_t i = 0; i < upto; i++)
        if (sqlite3_stricmp(w->cols[i].column, name) == 0) return 1;
    return 0;
}

/* Marks in used[] (by stat metadata index) the stats one message names as keys. Stat metadata
 * doubles as the plane's string table (a reference stat's value is one's name): only keys become
 * columns. */
static int mark_keys(const jp_plane *pl, jp_stats_iter it, uint8_t *used, jp_error *err) {
    jp_stat s;
    int rc;
    while ((rc = jp_stats_next(&it, &s, err)) == 1) {
        const jp_stat_meta *sm = jp_plane_stat_meta_view(pl, s.metadata_id);
        if (sm) used[sm - pl->stat_meta] = 1;
    }
    return rc;
}

/* The names the plane's events and event metadata use as stat keys, appended to names. */
static int plane_stat_keys(jp_xspace *xs, const jp_plane *pl, jp_vec *names, jp_error *err) {
    uint8_t *used = calloc(pl->n_stat_meta ? pl->n_stat_meta : 1, 1);
    if (!used) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    int rc = JP_OK;
    for (size_t i = 0; rc == JP_OK && i < pl->n_event_meta; i++)
        rc = mark_keys(pl, jp_stats_of_event_meta(xs, &pl->event_meta[i]), used, err);
    for (size_t l = 0; rc == JP_OK && l < pl->n_lines; l++) {
        jp_event_reader r = jp_line_event_reader(xs, &pl->lines[l]);
        jp_event ev;
        while ((rc = jp_event_reader_next(&r, &ev, err)) == 1 && (rc = mark_keys(pl, jp_stats_of_event(xs, &ev), used, err)) >= 0) {
        }
        rc = rc < 0 ? rc : JP_OK;
    }
    for (size_t i = 0; rc == JP_OK && i < pl->n_stat_meta; i++) {
        if (!used[i]) continue;
        stat_column *c = jp_vec_push(names, sizeof *c);
        if (!c) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
        else *c = (stat_column){pl->stat_meta[i].name, NULL};
    }
    free(used);
    return rc;
}

/* Every distinct stat key of the files, sorted, each with a column name no other column has. */
static int find_stat_columns(event_writer *w, jp_xspace *const *xs, size_t n_hosts) {
    jp_vec names = {0};
    int rc = JP_OK;
    for (size_t h = 0; rc == JP_OK && h < n_hosts; h++) {
        size_t n_planes;
        const jp_plane *planes = jp_xspace_planes(xs[h], &n_planes);
        for (size_t p = 0; rc == JP_OK && p < n_planes; p++) rc = plane_stat_keys(xs[h], &planes[p], &names, w->err);
    }
    if (rc != JP_OK) return jp_vec_free(&names), rc;
    qsort(names.data, names.n, sizeof(stat_column), cmp_stat_column);
    w->cols = names.data;
    w->n_cols = 0;
    for (size_t i = 0; i < names.n; i++) { /* distinct non-empty names, up to the cap */
        stat_column c = JP_VEC_AT(&names, stat_column, i);
        if (!c.stat.len || (w->n_cols && cmp_jp_str(w->cols[w->n_cols - 1].stat, c.stat) == 0)) continue;
        if (w->n_cols == STAT_COLUMNS_MAX) break;
        w->cols[w->n_cols++] = c;
    }
    for (size_t i = 0; i < w->n_cols; i++) {
        jp_str s = w->cols[i].stat;
        char *name = sqlite3_mprintf("%.*s", (int)s.len, s.ptr);
        for (int k = 1; name && column_taken(w, i, name); k++) {
            sqlite3_free(name);
            name = sqlite3_mprintf(k == 1 ? "stat_%.*s" : "stat_%.*s_%d", (int)s.len, s.ptr, k);
        }
        if (!(w->cols[i].column = name)) return jp_error_set(w->err, JP_ERR_NOMEM, 0, "out of memory");
    }
    return JP_OK;
}

/* CREATE TABLE events and event_metadata with a column per stat, and their inserts. */
static int create_event_tables(event_writer *w) {
    sqlite3_str *c = sqlite3_str_new(NULL), *ev = sqlite3_str_new(NULL), *meta = sqlite3_str_new(NULL);
    sqlite3_str_appendall(c, FIXED_TABLES);
    sqlite3_str_appendall(c, "CREATE TABLE events (event_id INTEGER PRIMARY KEY, host TEXT, plane TEXT, thread TEXT, "
                             "name TEXT, start_ps INTEGER, dur_ps INTEGER, step INTEGER, plane_id INTEGER, "
                             "thread_id INTEGER, metadata_id INTEGER, "
                             "end_ps INTEGER GENERATED ALWAYS AS (start_ps + dur_ps) VIRTUAL, "
                             "start_ms REAL GENERATED ALWAYS AS (start_ps / 1e9) VIRTUAL, "
                             "dur_ms REAL GENERATED ALWAYS AS (dur_ps / 1e9) VIRTUAL, "
                             "device TEXT GENERATED ALWAYS AS (CASE WHEN plane LIKE '/device:%' THEN plane END) VIRTUAL");
    sqlite3_str_appendall(ev, "INSERT INTO events (event_id, host, plane, thread, name, start_ps, dur_ps, step, "
                              "plane_id, thread_id, metadata_id");
    sqlite3_str_appendall(meta, "INSERT INTO event_metadata VALUES (?, ?, ?, ?");
    for (size_t i = 0; i < w->n_cols; i++) {
        sqlite3_str_appendf(c, ", \"%w\"", w->cols[i].column);
        sqlite3_str_appendf(ev, ", \"%w\"", w->cols[i].column);
        sqlite3_str_appendall(meta, ", ?");
    }
    sqlite3_str_appendall(c, "); CREATE TABLE event_metadata (plane_id INTEGER, metadata_id INTEGER, name TEXT, "
                             "display_name TEXT");
    for (size_t i = 0; i < w->n_cols; i++) sqlite3_str_appendf(c, ", \"%w\"", w->cols[i].column);
    sqlite3_str_appendall(c, ", PRIMARY KEY (plane_id, metadata_id)) WITHOUT ROWID");
    sqlite3_str_appendall(ev, ") VALUES (?");
    for (size_t i = 1; i < N_EVENT_FIXED + w->n_cols; i++) sqlite3_str_appendall(ev, ", ?");
    sqlite3_str_appendall(ev, ")");
    sqlite3_str_appendall(meta, ")");
    char *create = sqlite3_str_finish(c), *insert_ev = sqlite3_str_finish(ev), *insert_meta = sqlite3_str_finish(meta);
    int rc = create && insert_ev && insert_meta ? jp_sql_exec(w->db, create, w->err) : jp_error_set(w->err, JP_ERR_NOMEM, 0, "out of memory");
    if (rc == JP_OK) rc = prepare(w->db, "INSERT INTO planes VALUES (?, ?, ?, ?)", &w->ins[INS_PLANE], w->err);
    if (rc == JP_OK) rc = prepare(w->db, "INSERT INTO threads VALUES (?, ?, ?, ?, ?)", &w->ins[INS_THREAD], w->err);
    if (rc == JP_OK) rc = prepare(w->db, insert_meta, &w->ins[INS_META], w->err);
    if (rc == JP_OK) rc = prepare(w->db, insert_ev, &w->ins[INS_EVENT], w->err);
    if (rc == JP_OK) rc = prepare(w->db, "INSERT INTO event_stats VALUES (?, ?, ?)", &w->ins[INS_STAT], w->err);
    sqlite3_free(create), sqlite3_free(insert_ev), sqlite3_free(insert_meta);
    return rc;
}

static int bind_str(sqlite3_stmt *st, int i, jp_str s) {
    return s.len ? sqlite3_bind_text(st, i, s.ptr, (int)s.len, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

/* A stat's value: integers as integers (a uint past INT64_MAX as a real), strings as text, bytes
 * as a blob; a reference's string and a compressed one's inflated text. */
static int bind_stat_value(event_writer *w, sqlite3_stmt *st, int i, const jp_stat *s) {
    jp_str text;
    int rc;
    switch (s->kind) {
    case JP_STAT_DOUBLE: rc = sqlite3_bind_double(st, i, s->v.d); break;
    case JP_STAT_INT: rc = sqlite3_bind_int64(st, i, s->v.i); break;
    case JP_STAT_UINT:
        rc = s->v.u <= INT64_MAX ? sqlite3_bind_int64(st, i, (int64_t)s->v.u) : sqlite3_bind_double(st, i, (double)s->v.u);
        break;
    case JP_STAT_BYTES: rc = sqlite3_bind_blob(st, i, s->v.s.ptr, (int)s->v.s.len, SQLITE_STATIC); break;
    default:
        if ((rc = jp_stat_str(w->xs, w->plane, s, &text, w->err)) < 0) return rc;
        rc = sqlite3_bind_text(st, i, text.ptr, (int)text.len, SQLITE_TRANSIENT);
    }
    return rc == SQLITE_OK ? JP_OK : sql_failed(w->db, "stat", w->err);
}

/* The column of each of the plane's stat metadata, into w->col_of. */
static int map_plane_stats(event_writer *w) {
    const jp_plane *pl = w->plane;
    free(w->col_of);
    if (!(w->col_of = malloc((pl->n_stat_meta ? pl->n_stat_meta : 1) * sizeof *w->col_of))) return JP_ERR_NOMEM;
    for (size_t i = 0; i < pl->n_stat_meta; i++) {
        stat_column key = {pl->stat_meta[i].name, NULL};
        const stat_column *c = w->n_cols ? bsearch(&key, w->cols, w->n_cols, sizeof key, cmp_stat_column) : NULL;
        w->col_of[i] = c ? (int32_t)(c - w->cols) : -1;
    }
    return JP_OK;
}

/* A stat that has no column: a row of event_stats. */
static int write_stat_row(event_writer *w, int64_t event_id, const jp_stat *s) {
    sqlite3_stmt *st = w->ins[INS_STAT];
    const jp_stat_meta *sm = jp_plane_stat_meta_view(w->plane, s->metadata_id);
    sqlite3_bind_int64(st, 1, event_id);
    bind_str(st, 2, sm ? sm->name : (jp_str){"", 0});
    int rc = bind_stat_value(w, st, 3, s);
    return rc == JP_OK ? step_insert(w->db, st, w->err) : rc;
}

/* Binds each stat of a message to its column of st (the first column at `first`); event_id > 0:
 * one with no column goes to event_stats. */
static int bind_stats(event_writer *w, sqlite3_stmt *st, int first, jp_stats_iter it, int64_t event_id) {
    jp_stat s;
    int rc;
    while ((rc = jp_stats_next(&it, &s, w->err)) == 1) {
        const jp_stat_meta *sm = jp_plane_stat_meta_view(w->plane, s.metadata_id);
        int32_t col = sm ? w->col_of[sm - w->plane->stat_meta] : -1;
        if (col >= 0) rc = bind_stat_value(w, st, first + col, &s);
        else if (event_id > 0) rc = write_stat_row(w, event_id, &s);
        else rc = JP_OK; /* a metadata stat past the column cap: left out */
        if (rc != JP_OK) return rc;
    }
    return rc;
}

static int write_metadata(event_writer *w) {
    sqlite3_stmt *m = w->ins[INS_META];
    int rc = JP_OK;
    for (size_t i = 0; rc == JP_OK && i < w->plane->n_event_meta; i++) {
        const jp_event_meta *em = &w->plane->event_meta[i];
        sqlite3_clear_bindings(m);
        sqlite3_bind_int64(m, 1, w->plane_id), sqlite3_bind_int64(m, 2, em->id);
        bind_str(m, 3, em->name), bind_str(m, 4, em->display_name);
        rc = bind_stats(w, m, 5, jp_stats_of_event_meta(w->xs, em), 0);
        if (rc == JP_OK) rc = step_insert(w->db, m, w->err);
    }
    return rc;
}

/* The step whose window holds t (its number), or -1. */
static int64_t step_at(const event_writer *w, int64_t t) {
    size_t lo = 0, hi = w->n_steps; /* the first step starting after t */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->steps[mid].start_ps <= t) lo = mid + 1;
        else hi = mid;
    }
    return lo > 0 && t < w->steps[lo - 1].end_ps ? w->steps[lo - 1].num : -1;
}

static int write_event(event_writer *w, const jp_line *ln, const jp_event *ev) {
    int64_t start, dur;
    int rc = jp_layout_event_span(w->xs, ln, ev, &start, &dur, w->err);
    if (rc != JP_OK) return rc;
    start += w->shift_ps;
    const jp_event_meta *em = jp_plane_event_meta_view(w->plane, ev->metadata_id);
    sqlite3_stmt *st = w->ins[INS_EVENT];
    int64_t id = ++w->event_id, step = step_at(w, start);
    sqlite3_clear_bindings(st);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, w->host, -1, SQLITE_STATIC);
    bind_str(st, 3, w->plane->name);
    bind_str(st, 4, ln->display_name.len ? ln->display_name : ln->name);
    bind_str(st, 5, em ? em->name : (jp_str){"", 0});
    sqlite3_bind_int64(st, 6, start), sqlite3_bind_int64(st, 7, dur);
    if (step >= 0) sqlite3_bind_int64(st, 8, step);
    sqlite3_bind_int64(st, 9, w->plane_id), sqlite3_bind_int64(st, 10, w->thread_id);
    sqlite3_bind_int64(st, 11, (int64_t)ev->metadata_id);
    rc = bind_stats(w, st, N_EVENT_FIXED + 1, jp_stats_of_event(w->xs, ev), id);
    return rc == JP_OK ? step_insert(w->db, st, w->err) : rc;
}

static int write_line(event_writer *w, const jp_line *ln) {
    sqlite3_stmt *t = w->ins[INS_THREAD];
    sqlite3_bind_int64(t, 1, ++w->thread_id), sqlite3_bind_int64(t, 2, w->plane_id), sqlite3_bind_int64(t, 3, ln->id);
    bind_str(t, 4, ln->name), bind_str(t, 5, ln->display_name);
    int rc = step_insert(w->db, t, w->err);
    jp_event_reader r = jp_line_event_reader(w->xs, ln);
    jp_event ev;
    while (rc == JP_OK && (rc = jp_event_reader_next(&r, &ev, w->err)) == 1) rc = write_event(w, ln, &ev);
    return rc < 0 ? rc : JP_OK;
}

static int write_plane(event_writer *w, const jp_plane *pl) {
    w->plane = pl;
    if (map_plane_stats(w) != JP_OK) return jp_error_set(w->err, JP_ERR_NOMEM, 0, "out of memory");
    sqlite3_stmt *p = w->ins[INS_PLANE];
    sqlite3_bind_int64(p, 1, ++w->plane_id);
    sqlite3_bind_text(p, 2, w->host, -1, SQLITE_STATIC);
    bind_str(p, 3, pl->name), sqlite3_bind_int64(p, 4, pl->id);
    int rc = step_insert(w->db, p, w->err);
    if (rc == JP_OK) rc = write_metadata(w);
    for (size_t i = 0; rc == JP_OK && i < pl->n_lines; i++) rc = write_line(w, &pl->lines[i]);
    return rc;
}

static int cmp_step_window(const void *x, const void *y) {
    const step_window *a = x, *b = y;
    return (a->start_ps > b->start_ps) - (a->start_ps < b->start_ps);
}

static int write_hosts(event_writer *w, jp_xspace *const *xs, const char *const *hosts, const int64_t *shift, size_t n) {
    int rc = find_stat_columns(w, xs, n);
    if (rc == JP_OK) rc = create_event_tables(w);
    for (size_t h = 0; rc == JP_OK && h < n; h++) {
        size_t n_planes;
        const jp_plane *planes = jp_xspace_planes(xs[h], &n_planes);
        w->xs = xs[h], w->host = hosts[h], w->shift_ps = shift[h];
        for (size_t p = 0; rc == JP_OK && p < n_planes; p++) rc = write_plane(w, &planes[p]);
    }
    return rc;
}

static int step_windows(event_writer *w, const jp_analysis *a) {
    if (!(w->steps = malloc((a->n_steps ? a->n_steps : 1) * sizeof *w->steps))) return JP_ERR_NOMEM;
    for (size_t i = 0; i < a->n_steps; i++)
        w->steps[i] = (step_window){a->steps[i].start_ps, a->steps[i].start_ps + a->steps[i].dur_ps, a->steps[i].step_num};
    qsort(w->steps, a->n_steps, sizeof *w->steps, cmp_step_window);
    w->n_steps = a->n_steps;
    return JP_OK;
}

static void writer_free(event_writer *w) {
    for (int i = 0; i < N_INSERTS; i++) sqlite3_finalize(w->ins[i]);
    for (size_t i = 0; i < w->n_cols; i++) sqlite3_free(w->cols[i].column);
    free(w->cols), free(w->col_of), free(w->steps);
}

int jp_sql_write_events(sqlite3 *db, const char *path, const jp_load_options *opt, const jp_analysis *a, jp_error *err) {
    jp_arena arena;
    jp_arena_init(&arena, 0);
    jp_vec xs = {0}, files = {0}, hosts = {0};
    int64_t *shift = NULL;
    event_writer w = {.db = db, .err = err};
    int rc = jp_layout_open_hosts(path, opt ? opt->host : NULL, opt ? opt->max_inflate : 0, &arena, &xs, &files, &hosts, err);
    if (rc == JP_OK) rc = jp_layout_host_shifts(xs.data, files.data, xs.n, a, &arena, &shift, err);
    if (rc == JP_OK && step_windows(&w, a) != JP_OK) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    if (rc == JP_OK) rc = jp_sql_exec(db, "BEGIN", err);
    if (rc == JP_OK) rc = write_hosts(&w, xs.data, hosts.data, shift, xs.n);
    writer_free(&w);
    if (rc == JP_OK) rc = jp_sql_exec(db, "COMMIT", err);
    else sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    for (size_t i = 0; i < xs.n; i++) jp_xspace_close(JP_VEC_AT(&xs, jp_xspace *, i));
    jp_vec_free(&xs), jp_vec_free(&files), jp_vec_free(&hosts);
    jp_arena_deinit(&arena);
    return rc;
}

/* ---- the database: in memory for queries, a file for export ----------------------------------------- */

const char *const JP_SQL_EVENT_TABLES[] = {"planes", "threads", "event_metadata", "events", "event_stats", NULL};

struct jp_sql {
    sqlite3 *db;
    jp_profile *prof;     /* the analysis; NULL for a database file */
    char *path;           /* the profile, read again for its events */
    jp_load_options opt;  /* its host filter and inflate limit (strings borrowed from the caller) */
    int events_loaded;
};

/* Nothing a database or query can do reaches outside it: no extension loading, no triggers or
 * views run from an untrusted schema, no writes to the schema table. */
static void harden(sqlite3 *db) {
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
}

/* A fresh database for building: no journal, no syncs (the file is renamed into place only once
 * it is whole, and fsync'd then). */
static int open_for_build(const char *name, sqlite3 **db, jp_error *err) {
    if (sqlite3_open_v2(name, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        int rc = sql_failed(*db, name, err);
        sqlite3_close(*db);
        *db = NULL;
        return rc;
    }
    harden(*db);
    return jp_sql_exec(*db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
                            "PRAGMA cache_size=-65536", err);
}

static int open_database_file(jp_sql *q, const char *path, jp_error *err) {
    if (sqlite3_open_v2(path, &q->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) return sql_failed(q->db, path, err);
    harden(q->db);
    q->events_loaded = 1; /* what the file holds is all there is */
    return JP_OK;
}

static int open_profile(jp_sql *q, const char *path, const jp_load_options *opt, jp_error *err) {
    int rc = jp_profile_load(&q->prof, path, opt, err);
    if (rc == JP_OK && !(q->path = strdup(path))) rc = jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    if (rc == JP_OK) rc = open_for_build(":memory:", &q->db, err);
    if (rc == JP_OK) rc = jp_sql_write_analysis(q->db, jp_profile_analysis(q->prof), err);
    if (opt) q->opt = *opt;
    return rc;
}

int jp_sql_open(jp_sql **out, const char *path, const jp_load_options *opt, jp_error *err) {
    jp_error_clear(err);
    *out = NULL;
    jp_sql *q = calloc(1, sizeof *q);
    if (!q) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    int rc = jp_sql_is_database(path) ? open_database_file(q, path, err) : open_profile(q, path, opt, err);
    if (rc != JP_OK) {
        jp_sql_close(q);
        return rc;
    }
    *out = q;
    return JP_OK;
}

void jp_sql_close(jp_sql *q) {
    if (!q) return;
    sqlite3_close(q->db);
    jp_profile_free(q->prof);
    free(q->path);
    free(q);
}

sqlite3 *jp_sql_db(jp_sql *q) { return q->db; }

int jp_sql_load_events(jp_sql *q, jp_error *err) {
    if (q->events_loaded) return JP_OK;
    q->events_loaded = 1;
    return jp_sql_write_events(q->db, q->path, &q->opt, jp_profile_analysis(q->prof), err);
}

/* The database into a stream output (a pipe, /dev/stdout): built in memory, then written out. */
static int export_to_stream(sqlite3 *db, const jp_outfile *of, jp_error *err) {
    sqlite3_int64 size = 0;
    unsigned char *bytes = sqlite3_serialize(db, "main", &size, 0);
    FILE *f = bytes ? jp_outfile_stdio(of) : NULL;
    int ok = f && fwrite(bytes, 1, (size_t)size, f) == (size_t)size;
    if (f && fclose(f) != 0) ok = 0;
    sqlite3_free(bytes);
    return ok ? JP_OK : jp_error_set(err, JP_ERR_IO, 0, "%s: cannot write the database", of->out_path);
}

int jp_sql_export(const char *path, const char *out_path, const jp_load_options *opt, const jp_temp_hook *temp,
                  jp_error *err) {
    jp_error_clear(err);
    if (!path || !out_path || !*out_path) return jp_error_set(err, JP_ERR_ARG, 0, "export needs a profile and an output path");
    int rc = jp_profile_output_check(path, out_path, err);
    jp_profile *prof = NULL;
    if (rc == JP_OK) rc = jp_profile_load(&prof, path, opt, err);
    jp_outfile of;
    if (rc == JP_OK) rc = jp_outfile_open(&of, out_path, temp, err);
    if (rc != JP_OK) {
        jp_profile_free(prof);
        return rc;
    }
    sqlite3 *db = NULL;
    rc = open_for_build(of.stream ? ":memory:" : of.tmp_path, &db, err);
    if (rc == JP_OK) rc = jp_sql_write_analysis(db, jp_profile_analysis(prof), err);
    if (rc == JP_OK) rc = jp_sql_write_events(db, path, opt, jp_profile_analysis(prof), err);
    if (rc == JP_OK && of.stream) rc = export_to_stream(db, &of, err);
    if (sqlite3_close(db) != SQLITE_OK && rc == JP_OK) rc = jp_error_set(err, JP_ERR_IO, 0, "%s: cannot close the database", out_path);
    jp_profile_free(prof);
    if (rc == JP_OK) return jp_outfile_commit(&of, err);
    jp_outfile_abort(&of);
    return rc;
}
