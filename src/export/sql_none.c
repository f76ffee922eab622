/* sql_none.c - the SQL entry points of a build without SQLite's headers (meson -Dsqlite, found
 * missing): every one says what to install, and nothing else changes. */
#include <stdio.h>
#include <string.h>

#include "jaxprof/jaxprof.h"

static int no_sqlite(jp_error *err) {
    if (err) {
        snprintf(err->msg, sizeof err->msg,
                 "this jaxprof was built without SQLite: install its headers (Debian/Ubuntu: libsqlite3-dev; "
                 "Fedora: sqlite-devel) and build again");
        err->offset = 0;
        err->code = JP_ERR_ARG;
    }
    return JP_ERR_ARG;
}

int jp_sql_open(jp_sql **out, const char *path, const jp_load_options *opt, jp_error *err) {
    (void)path, (void)opt;
    *out = NULL;
    return no_sqlite(err);
}

int jp_sql_run(jp_sql *q, const char *sql, int format, int width, FILE *out, jp_error *err) {
    (void)q, (void)sql, (void)format, (void)width, (void)out;
    return no_sqlite(err);
}

void jp_sql_close(jp_sql *q) { (void)q; }

int jp_sql_export(const char *path, const char *out_path, const jp_load_options *opt, const jp_temp_hook *temp,
                  jp_error *err) {
    (void)path, (void)out_path, (void)opt, (void)temp;
    return no_sqlite(err);
}

int jp_sql_complete(const char *sql) { return sql && strchr(sql, ';') != NULL; }
