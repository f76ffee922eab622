/* cmd_export.c - `jaxprof export`: writes a profile's whole timeline as a Chrome JSON or Perfetto
 * trace and says how many events went in and out. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "jaxprof/jaxprof.h"

/* Parses "A:B" of two non-negative decimals (either may be empty: open end) scaled by `unit`. */
static int parse_range(const char *flag, const char *v, double unit, int64_t *lo, int64_t *hi) {
    const char *colon = v ? strchr(v, ':') : NULL;
    if (!colon) goto bad;
    char *end;
    errno = 0;
    double a = colon == v ? 0 : strtod(v, &end);
    if (colon != v && (end != colon || a < 0)) goto bad;
    double b = colon[1] ? strtod(colon + 1, &end) : 0;
    if (colon[1] && (*end || b < 0)) goto bad;
    if (errno || a * unit > 9e18 || b * unit > 9e18) goto bad;
    *lo = (int64_t)(a * unit);
    *hi = colon[1] ? (int64_t)(b * unit) : INT64_MAX;
    if (*hi <= *lo) goto bad;
    return 0;
bad:
    fprintf(stderr, "jaxprof: %s needs START:END with START < END (got '%s')\n", flag, v ? v : "");
    return -1;
}

/* "A:B" (inclusive, either end open) or "N": step numbers. */
static int parse_steps(const char *v, jp_trace_options *o) {
    const char *colon = v ? strchr(v, ':') : NULL;
    char *end;
    if (!v || !*v) return -1;
    if (!colon) {
        long long n = strtoll(v, &end, 10);
        if (*end || n < 0) return -1;
        o->first_step = o->last_step = n;
        return 0;
    }
    long long a = colon == v ? 0 : strtoll(v, &end, 10);
    if (colon != v && (end != colon || a < 0)) return -1;
    long long b = colon[1] ? strtoll(colon + 1, &end, 10) : LLONG_MAX;
    if ((colon[1] && *end) || b < a) return -1;
    o->first_step = a;
    o->last_step = b;
    return 0;
}

typedef struct export_args {
    const char *path, *out;
    jp_trace_options opt;
} export_args;

static int parse_export_args(int argc, char **argv, export_args *a) {
    a->path = "profiles";
    a->out = NULL;
    a->opt = jp_trace_options_default();
    a->opt.max_inflate = cli_max_inflate();
    int have_path = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        size_t n;
        int rc = 0;
        if ((strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0) && next) a->out = next, i++;
        else if (strcmp(arg, "--format") == 0 && next && strcmp(next, "chrome") == 0) a->opt.format = JP_TRACE_CHROME, i++;
        else if (strcmp(arg, "--format") == 0 && next && strcmp(next, "perfetto") == 0) a->opt.format = JP_TRACE_PERFETTO, i++;
        else if (strcmp(arg, "--window") == 0) rc = parse_range(arg, next, 1e9, &a->opt.window_start_ps, &a->opt.window_end_ps), i++;
        else if (strcmp(arg, "--steps") == 0) rc = parse_steps(next, &a->opt), i++;
        else if (strcmp(arg, "--min-duration-us") == 0 && !(rc = cli_parse_count(arg, next, &n))) a->opt.min_duration_ps = (int64_t)n * 1000000, i++;
        else if (strcmp(arg, "--gzip-level") == 0 && !(rc = cli_parse_count(arg, next, &n)) && n <= 9) a->opt.gzip_level = (int)n, i++;
        else if (strcmp(arg, "--host") == 0 && next) a->opt.host = next, i++;
        else if (arg[0] != '-' && !have_path) a->path = arg, have_path = 1;
        else rc = -1, fprintf(stderr, "jaxprof: bad option '%s' for export (see jaxprof export --help)\n", arg);
        if (rc) {
            if (strcmp(arg, "--steps") == 0) fprintf(stderr, "jaxprof: --steps needs A:B or N (step numbers)\n");
            return -1;
        }
    }
    return 0;
}

int cmd_export(int argc, char **argv) {
    export_args args;
    if (parse_export_args(argc, argv, &args) != 0) return EXIT_USAGE;
    jp_error err;
    char out[PATH_MAX];
    if (!args.out) {
        if (jp_trace_default_path(args.path, args.opt.format, out, sizeof out, &err) != JP_OK) {
            cli_error(err.msg);
            return EXIT_USAGE;
        }
        args.out = out;
    }
    jp_trace_stats st;
    args.opt.temp = cli_cleanup_on_signal();
    if (jp_profile_output_check(args.path, args.out, &err) != JP_OK ||
        jp_trace_export(args.path, args.out, &args.opt, &st, &err) != JP_OK) {
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
