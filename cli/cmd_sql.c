/* cmd_sql.c - `jaxprof sql PATH [QUERY]`: SQL over a profile (its analysis tables and events, in
 * memory) or over a database `jaxprof export --format sqlite` wrote; the query from the command
 * line, a file (-f), standard input, or an interactive prompt on a terminal. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "options.h"
#include "jaxprof/jaxprof.h"

typedef struct sql_args {
    const char *pos[2]; /* PATH, QUERY */
    const char *file;   /* -f FILE */
    int format, width;
    jp_load_options load;
} sql_args;

#define S(field) offsetof(sql_args, field)

static const cli_opt SQL_OPTS[] = {
    {"--file", "-f", NULL, "FILE", cli_set_string, S(file), 1, -1, 0, "read the query from FILE ('-': standard input)"},
    {"--json", NULL, NULL, NULL, cli_set_flag, S(format), JP_FORMAT_JSON, -1, 0, "each result as a JSON array of row objects"},
    {"--csv", NULL, NULL, NULL, cli_set_flag, S(format), JP_FORMAT_CSV, -1, 0, "each result as CSV with a header line"},
    {"--width", NULL, NULL, "N", cli_set_width, S(width), 0, -1, 0, "the widest a text column gets (default 60)"},
    {"--host", NULL, NULL, "NAME", cli_set_string, S(load.host), 0, -1, 0, "only hosts whose name contains NAME"},
    {"--device", NULL, NULL, "NAME|N", cli_set_string, S(load.device), 0, -1, 0,
     "only devices whose name contains NAME, or device number N (the analysis tables)"},
    {"--threads", NULL, NULL, "N", cli_set_threads, S(load.threads), 0, -1, 0, "as for report"},
    {NULL},
};

const cli_command CLI_SQL = {
    .name = "sql", .args = "[PATH] [QUERY]", .synopsis = "[-f FILE] [--json|--csv] [--host NAME]",
    .summary = "SQL over a profile: every analysis table and every event (SQLite)\n",
    .text = "Runs SQL on a profile: its analysis tables (ops, steps, scopes, kernels, ... with the --json\n"
            "columns) and its events (events, event_stats, threads, planes, event_metadata). PATH is a\n"
            "profile or a database written by `jaxprof export --format sqlite`. Without QUERY or -f the\n"
            "query is read from standard input, or typed at a prompt on a terminal (end each statement\n"
            "with ';'; .tables lists the tables; Ctrl-D ends). Schema and examples: docs/sql.md.\n",
    .opts = SQL_OPTS, .pos_off = S(pos), .max_pos = 2,
};

/* All of f, NUL-terminated (malloc'd), or NULL. */
static char *read_all(FILE *f) {
    size_t n = 0, cap = 4096;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (cap - n - 1 == 0) {
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger) free(buf);
            buf = bigger;
        }
    }
    if (buf) buf[n] = '\0';
    return buf;
}

static char *read_query_file(const char *path) {
    if (strcmp(path, "-") == 0) return read_all(stdin);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *text = read_all(f);
    fclose(f);
    return text;
}

static int run(jp_sql *q, const char *sql, const sql_args *a) {
    jp_error err;
    if (jp_sql_run(q, sql, a->format, a->width, stdout, &err) == JP_OK) return 0;
    cli_error(err.msg);
    return EXIT_USAGE;
}

static const char TABLES_QUERY[] =
    "SELECT name, type FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name;";

/* The prompt: statements run as each ends with ';'; an error is shown and the prompt goes on. */
static int interactive(jp_sql *q, const sql_args *a) {
    char line[4096];
    size_t n = 0, cap = 4096;
    char *text = malloc(cap);
    if (!text) return EXIT_USAGE;
    text[0] = '\0';
    fputs("jaxprof sql: end statements with ';', .tables lists the tables, Ctrl-D quits\n", stderr);
    for (;;) {
        fputs(n ? "   ...> " : "jaxprof> ", stderr);
        if (!fgets(line, sizeof line, stdin)) break;
        if (!n && strncmp(line, ".tables", 7) == 0) {
            run(q, TABLES_QUERY, a);
            continue;
        }
        size_t len = strlen(line);
        if (n + len + 1 > cap) {
            char *bigger = realloc(text, cap = (n + len + 1) * 2);
            if (!bigger) break;
            text = bigger;
        }
        memcpy(text + n, line, len + 1);
        n += len;
        if (!jp_sql_complete(text)) continue;
        run(q, text, a);
        n = 0, text[0] = '\0';
    }
    fputc('\n', stderr);
    free(text);
    return 0;
}

int cmd_sql(int argc, char **argv) {
    sql_args a = {.pos = {CLI_DEFAULT_DIR, NULL}, .format = JP_FORMAT_TEXT};
    a.load.max_inflate = cli_max_inflate();
    a.load.threads = cli_env_threads();
    if (cli_parse(&CLI_SQL, -1, argc, argv, &a) < 0) return EXIT_USAGE;
    if (a.pos[1] && a.file) {
        cli_error("sql takes a QUERY or -f FILE, not both");
        return EXIT_USAGE;
    }
    char *text = NULL;
    if (a.file && !(text = read_query_file(a.file))) {
        fprintf(stderr, "jaxprof: cannot read %s\n", a.file);
        return EXIT_USAGE;
    }
    int prompt = !a.pos[1] && !a.file && isatty(STDIN_FILENO);
    if (!a.pos[1] && !a.file && !prompt && !(text = read_all(stdin))) {
        cli_error("cannot read the query from standard input");
        return EXIT_USAGE;
    }
    jp_sql *q;
    jp_error err;
    if (jp_sql_open(&q, a.pos[0], &a.load, &err) != JP_OK) {
        cli_error(err.msg);
        free(text);
        return EXIT_USAGE;
    }
    int rc = prompt ? interactive(q, &a) : run(q, a.pos[1] ? a.pos[1] : text, &a);
    jp_sql_close(q);
    free(text);
    return rc;
}
