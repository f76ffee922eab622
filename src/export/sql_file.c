/* sql_file.c - telling an SQLite database file by its header, with or without SQLite built in:
 * jaxprof sql takes one as PATH, and a build without SQLite still says what the file is. */
#include <stdio.h>
#include <string.h>

#include "jaxprof/jaxprof.h"

int jp_sql_is_database(const char *path) {
    static const char MAGIC[16] = "SQLite format 3";
    char head[16];
    FILE *f = fopen(path, "rb");
    int yes = f && fread(head, 1, sizeof head, f) == sizeof head && memcmp(head, MAGIC, sizeof head) == 0;
    if (f) fclose(f);
    return yes;
}
