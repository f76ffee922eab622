/* sql.h - building a profile's SQLite database (sql.c) for jaxprof sql and export (internal). */
#ifndef JP_EXPORT_SQL_H
#define JP_EXPORT_SQL_H

#include <sqlite3.h>

#include "jaxprof/jaxprof.h"

/* Runs statements that return no rows; an error names SQLite's message. */
int jp_sql_exec(sqlite3 *db, const char *sql, jp_error *err);
/* The analysis's tables (every table of columns.c a profile has, the header as `profile`,
 * `step_summary`, `capture_health`), in one transaction. */
int jp_sql_write_analysis(sqlite3 *db, const jp_analysis *a, jp_error *err);
/* The events' tables (planes, threads, event_metadata, metadata_stats, events, event_stats and the
 * event_args view) from the files at path that opt's host filter keeps, in one transaction; times
 * on a's shared axis, each event's step from a's steps. */
int jp_sql_write_events(sqlite3 *db, const char *path, const jp_load_options *opt, const jp_analysis *a,
                        jp_error *err);
/* The names jp_sql_write_events creates: a query that names one of them loads the events. */
extern const char *const JP_SQL_EVENT_TABLES[];
/* The handle's database, and its events loaded once (a database file has all it has already). */
sqlite3 *jp_sql_db(jp_sql *q);
int jp_sql_load_events(jp_sql *q, jp_error *err);

#endif
