/* cmd_export.c - `jaxprof export`: writes a profile's whole timeline as a Chrome JSON or Perfetto
 * trace and says how many events went in and out. */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "options.h"
#include "jaxprof/jaxprof.h"

typedef struct export_args {
    const char *path[1], *out;
    jp_trace_options opt;
    int64_t min_duration_ps; /* --min-duration */
    size_t gzip_level;       /* --gzip-level, or SIZE_MAX: the default */
    int sqlite;              /* --format sqlite: the database (jp_sql_export), not a trace */
} export_args;

/* --window A:B: two durations from the capture's start (bare numbers in ms), either end open. */
static int set_window(const cli_opt *o, const char *flag, const char *v, void *args) {
    (void)o;
    jp_trace_options *opt = &((export_args *)args)->opt;
    const char *colon = strchr(v, ':');
    char lo[64];
    int64_t a = 0, b = INT64_MAX;
    int ok = colon && (size_t)(colon - v) < sizeof lo;
    if (ok) {
        memcpy(lo, v, (size_t)(colon - v));
        lo[colon - v] = '\0';
        ok = (!lo[0] || jp_duration_parse(lo, PS_PER_MS, &a) == 0) &&
             (!colon[1] || jp_duration_parse(colon + 1, PS_PER_MS, &b) == 0) && b > a;
    }
    if (!ok) {
        fprintf(stderr, "jaxprof: %s needs START:END with START < END (durations; bare numbers are ms) (got '%s')\n", flag, v);
        return -1;
    }
    opt->window_start_ps = a, opt->window_end_ps = b;
    return 0;
}

/* --steps A:B | N: step numbers, inclusive, either end open (jp_steps_parse, as every command). */
static int set_steps(const cli_opt *o, const char *flag, const char *v, void *args) {
    (void)o;
    jp_trace_options *opt = &((export_args *)args)->opt;
    jp_error err;
    int64_t a, b;
    if (jp_steps_parse(v, &a, &b, &err) != JP_OK) {
        char msg[JP_ERROR_MSG_MAX + 64];
        snprintf(msg, sizeof msg, "%s: %s", flag, err.msg);
        cli_error(msg);
        return -1;
    }
    opt->first_step = a == INT64_MIN ? 0 : a; /* the trace options' open ends */
    opt->last_step = b == INT64_MAX ? LLONG_MAX : b;
    return 0;
}

static int set_format(const cli_opt *o, const char *flag, const char *v, void *args) {
    (void)o;
    export_args *a = args;
    a->sqlite = strcmp(v, "sqlite") == 0;
    if (strcmp(v, "chrome") == 0) a->opt.format = JP_TRACE_CHROME;
    else if (strcmp(v, "perfetto") == 0) a->opt.format = JP_TRACE_PERFETTO;
    else if (!a->sqlite) return fprintf(stderr, "jaxprof: %s needs chrome, perfetto or sqlite\n", flag), -1;
    return 0;
}

#define E(field) offsetof(export_args, field)

static const cli_opt EXPORT_OPTS[] = {
    {"--output", "-o", NULL, "FILE", cli_set_string, E(out), 1, -1, 0,
     "where (default: perfetto_trace.json.gz in the run directory)"},
    {"--format", NULL, NULL, "chrome|perfetto|sqlite", set_format, 0, 0, -1, 0,
     "Chrome JSON (default), Perfetto's protobuf trace, or an SQLite database\n"
     "of every analysis table and event (default file: profile.db; docs/sql.md)"},
    {"--window", NULL, NULL, "A:B", set_window, 0, 0, -1, 0,
     "only events inside this window, from the capture's start (durations:\n"
     "10ms, 2s; bare numbers are ms; either end open)"},
    {"--steps", NULL, NULL, "A:B", set_steps, 0, 0, -1, 0, "only these steps (N, or A:B inclusive, either end open)"},
    {"--min-duration", NULL, "--min-duration-us", "DUR", cli_set_duration, E(min_duration_ps), PS_PER_US, -1, 0,
     "drop slices shorter than DUR (500us, 1ms; bare numbers are us)"},
    {"--host", NULL, NULL, "NAME", cli_set_string, E(opt.host), 0, -1, 0, "only hosts whose name contains NAME"},
    {"--gzip-level", NULL, NULL, "0-9", cli_set_count, E(gzip_level), 9, -1, 0,
     "gzip level (default: 1 when FILE ends in .gz, else none)"},
    {NULL},
};

const cli_command CLI_EXPORT = {
    .name = "export", .args = "[PATH]", .synopsis = "[-o FILE] [--format chrome|perfetto|sqlite] [--window A:B]\n[--steps A:B] [--min-duration DUR] [--host NAME]",
    .summary = "write the whole timeline for Perfetto UI / chrome://tracing /\n"
               "TensorBoard (default: perfetto_trace.json.gz in the run directory)",
    .text = "Writes the whole timeline, with no event cap, for Perfetto UI, chrome://tracing or\n"
            "TensorBoard; prints the file written.\n",
    .opts = EXPORT_OPTS, .pos_off = E(path), .max_pos = 1,
};

static int parse_export_args(int argc, char **argv, export_args *a) {
    memset(a, 0, sizeof *a);
    a->path[0] = CLI_DEFAULT_DIR;
    a->opt = jp_trace_options_default();
    a->opt.max_inflate = cli_max_inflate();
    a->gzip_level = SIZE_MAX;
    if (cli_parse(&CLI_EXPORT, -1, argc, argv, a) < 0) return -1;
    if (a->sqlite && (a->opt.window_end_ps || a->opt.last_step >= a->opt.first_step || a->min_duration_ps ||
                      a->gzip_level != SIZE_MAX)) {
        cli_error("--window, --steps, --min-duration and --gzip-level are for traces: --format sqlite writes every "
                  "event (select a window or steps with SQL)");
        return -1;
    }
    a->opt.min_duration_ps = a->min_duration_ps;
    if (a->gzip_level != SIZE_MAX) a->opt.gzip_level = (int)a->gzip_level;
    return 0;
}

/* The database's default home: profile.db beside the trace export's default. */
static int default_db_path(const char *path, char *out, size_t cap, jp_error *err) {
    if (jp_trace_default_path(path, JP_TRACE_CHROME, out, cap, err) != JP_OK) return -1;
    char *slash = strrchr(out, '/');
    size_t dir = slash ? (size_t)(slash - out + 1) : 0;
    if (dir + sizeof "profile.db" > cap) return -1;
    memcpy(out + dir, "profile.db", sizeof "profile.db");
    return 0;
}

static int export_sqlite(export_args *a) {
    jp_error err;
    char out[PATH_MAX];
    if (!a->out && default_db_path(a->path[0], out, sizeof out, &err) != 0) {
        cli_error(err.msg);
        return EXIT_USAGE;
    }
    if (!a->out) a->out = out;
    jp_load_options load = {.host = a->opt.host, .max_inflate = a->opt.max_inflate, .threads = cli_env_threads()};
    jp_temp_hook temp = cli_cleanup_on_signal();
    if (jp_sql_export(a->path[0], a->out, &load, &temp, &err) != JP_OK) {
        cli_error(err.msg);
        return EXIT_USAGE;
    }
    struct stat written;
    if (stat(a->out, &written) == 0 && S_ISREG(written.st_mode)) printf("%s\n", a->out);
    return 0;
}

int cmd_export(int argc, char **argv) {
    export_args args;
    if (parse_export_args(argc, argv, &args) != 0) return EXIT_USAGE;
    if (args.sqlite) return export_sqlite(&args);
    jp_error err;
    char out[PATH_MAX];
    if (!args.out) {
        if (jp_trace_default_path(args.path[0], args.opt.format, out, sizeof out, &err) != JP_OK) {
            cli_error(err.msg);
            return EXIT_USAGE;
        }
        args.out = out;
    }
    jp_trace_stats st;
    args.opt.temp = cli_cleanup_on_signal();
    if (jp_profile_output_check(args.path[0], args.out, &err) != JP_OK ||
        jp_trace_export(args.path[0], args.out, &args.opt, &st, &err) != JP_OK) {
        cli_error(err.msg);
        return EXIT_USAGE;
    }
    struct stat written;
    if (stat(args.out, &written) == 0 && S_ISREG(written.st_mode)) /* not when streamed (-o /dev/stdout) */
        printf("%s\n", args.out);
    char size[32];
    cli_human_size(size, sizeof size, st.bytes);
    fprintf(stderr,
            "jaxprof: exported %llu of %llu events (%llu cut by the options), %llu derived, %llu flows, "
            "%llu overlap threads, %s\n",
            (unsigned long long)st.events_out, (unsigned long long)st.events_in, (unsigned long long)st.events_cut,
            (unsigned long long)st.derived, (unsigned long long)st.flows, (unsigned long long)st.overlap_tracks, size);
    return 0;
}
