/* cmd_diff.c - `jaxprof diff BASE NEW`: compares two profiles (step time, breakdown, ops, scopes,
 * findings) and, given a limit, gates on regressions: exit 1 with an explanation when tripped. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "jaxprof/jaxprof.h"


typedef struct diff_args {
    const char *paths[2];  /* BASE, NEW */
    size_t n_paths;
    jp_load_options load;  /* --host applies to both runs */
    jp_view view;
    int format;            /* jp_format */
    const char *html;      /* --html FILE, or NULL */
    jp_diff_options opt;
    jp_diff_gate gate;     /* limits < 0 are off */
} diff_args;

/* A non-negative finite percentage for `flag`; prints the error and returns -1 when bad. */
static int parse_pct(const char *flag, const char *v, double *out) {
    char *end;
    errno = 0;
    double d = v && *v ? strtod(v, &end) : -1;
    if (!v || !*v || *end || errno || !isfinite(d) || d < 0) {
        fprintf(stderr, "jaxprof: %s needs a non-negative percentage\n", flag);
        return -1;
    }
    *out = d;
    return 0;
}

/* One option at argv[*i] (advancing *i past its value); 0 ok, -1 bad (already reported). */
static int parse_option(int argc, char **argv, int *i, diff_args *a) {
    const char *arg = argv[*i], *next = *i + 1 < argc ? argv[*i + 1] : NULL;
    size_t n;
    int rc = 0, takes_value = 1;
    if (strcmp(arg, "--json") == 0) a->format = JP_FORMAT_JSON, takes_value = 0;
    else if (strcmp(arg, "--csv") == 0) a->format = JP_FORMAT_CSV, takes_value = 0;
    else if (strcmp(arg, "--top") == 0) rc = cli_parse_count(arg, next, &a->view.top);
    else if (strcmp(arg, "--width") == 0 && !(rc = cli_parse_count(arg, next, &n))) a->view.width = (int)(n > 400 ? 400 : n);
    else if (strcmp(arg, "--filter") == 0 && next) a->view.filter = next;
    else if (strcmp(arg, "--host") == 0 && next) a->load.host = next;
    else if (strcmp(arg, "--threads") == 0) rc = cli_parse_threads(arg, next, &a->load.threads);
    else if (strcmp(arg, "--html") == 0 && next && *next) a->html = next;
    else if (strcmp(arg, "--min-change") == 0) rc = parse_pct(arg, next, &a->opt.min_change_pct);
    else if (strcmp(arg, "--min-share") == 0) rc = parse_pct(arg, next, &a->opt.min_share_pct);
    else if (strcmp(arg, "--fail-if-slower") == 0) rc = parse_pct(arg, next, &a->gate.max_step_slowdown_pct);
    else if (strcmp(arg, "--fail-if-op-slower") == 0) rc = parse_pct(arg, next, &a->gate.max_op_slowdown_pct);
    else {
        fprintf(stderr, "jaxprof: bad option '%s' for diff (see jaxprof diff --help)\n", arg);
        return -1;
    }
    if (takes_value) (*i)++;
    return rc;
}

static int parse_diff_args(int argc, char **argv, diff_args *a) {
    memset(a, 0, sizeof *a);
    a->gate.max_step_slowdown_pct = a->gate.max_op_slowdown_pct = -1;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] != '-') {
            if (a->n_paths == 2) {
                fprintf(stderr, "jaxprof: diff takes two profiles, BASE and NEW (got a third: '%s')\n", argv[i]);
                return -1;
            }
            a->paths[a->n_paths++] = argv[i];
        } else if (parse_option(argc, argv, &i, a) != 0) {
            return -1;
        }
    }
    if (a->n_paths != 2) {
        fprintf(stderr, "jaxprof: usage: jaxprof diff BASE NEW [options] (see jaxprof diff --help)\n");
        return -1;
    }
    return 0;
}

/* Fills err for a failure of the command itself (not the library's); returns code. */
static int fail(jp_error *err, int code, const char *msg) {
    err->code = code;
    err->offset = 0;
    snprintf(err->msg, sizeof err->msg, "%s", msg);
    return code;
}

static int gate_given(const jp_diff_gate *g) { return g->max_step_slowdown_pct >= 0 || g->max_op_slowdown_pct >= 0; }

/* Loads one side; prints the error (naming the file and byte) and returns NULL when it fails. */
static jp_profile *load_side(const char *path, const jp_load_options *load) {
    jp_profile *p;
    jp_error err;
    if (jp_profile_load(&p, path, load, &err) != JP_OK) {
        cli_error(err.msg);
        return NULL;
    }
    if (load->on_file) fputs("\033[K", stderr); /* clear the progress line */
    return p;
}

/* Renders, writes the page, checks the gate. Returns the exit code. */
static int report_diff(const jp_diff *d, const diff_args *a) {
    jp_error err;
    char why[JP_DIFF_WHY_MAX] = "";
    int tripped = gate_given(&a->gate) ? jp_diff_check(d, &a->gate, why, sizeof why) : 0;
    jp_temp_hook temp = a->html ? cli_cleanup_on_signal() : (jp_temp_hook){0};
    if (a->html && jp_html_diff_write(d, a->html, &temp, &err) != JP_OK) {
        cli_error(err.msg);
        return EXIT_USAGE;
    }
    int rc = jp_diff_render_gated(d, gate_given(&a->gate) ? &a->gate : NULL, a->format, &a->view, stdout, &err);
    if (rc == JP_OK && fflush(stdout) != 0) rc = fail(&err, JP_ERR_IO, "write failed");
    if (rc != JP_OK) {
        cli_error(err.msg);
        return EXIT_USAGE;
    }
    if (gate_given(&a->gate) && a->format != JP_FORMAT_JSON)
        fprintf(stderr, "jaxprof: %s%s\n", tripped ? "regression: " : "", why);
    return tripped ? 1 : 0;
}

int cmd_diff(int argc, char **argv) {
    diff_args a;
    if (parse_diff_args(argc, argv, &a) != 0) return EXIT_USAGE;
    if (!a.load.threads) a.load.threads = cli_env_threads();
    a.load.max_inflate = cli_max_inflate();
    a.load.op_spread = 1; /* each op's noise comes from its spread across the steps */
    if (isatty(STDERR_FILENO)) a.load.on_file = cli_show_progress;
    jp_profile *base = load_side(a.paths[0], &a.load);
    jp_profile *new_run = base ? load_side(a.paths[1], &a.load) : NULL;
    if (!new_run) {
        jp_profile_free(base);
        return EXIT_USAGE;
    }
    jp_diff *d;
    jp_error err;
    int code;
    if (jp_diff_new(&d, jp_profile_analysis(base), jp_profile_analysis(new_run), &a.opt, &err) != JP_OK) {
        fprintf(stderr, "jaxprof: diff %s %s: ", a.paths[0], a.paths[1]);
        jp_text_fput_safe(stderr, err.msg, strlen(err.msg), 1);
        fputc('\n', stderr);
        code = EXIT_USAGE;
    } else {
        code = report_diff(d, &a);
        jp_diff_free(d);
    }
    jp_profile_free(new_run);
    jp_profile_free(base);
    return code;
}
