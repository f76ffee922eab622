/* cmd_diff.c - `jaxprof diff BASE NEW`: compares two profiles (step time, breakdown, ops, scopes,
 * findings) and, given a limit, gates on regressions: exit 1 with an explanation when tripped. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "options.h"
#include "jaxprof/jaxprof.h"


typedef struct diff_args {
    const char *paths[2];  /* BASE, NEW */
    jp_load_options load;  /* --host applies to both runs */
    jp_view view;
    int format;            /* jp_format */
    const char *html;      /* --html FILE, or NULL */
    jp_diff_options opt;
    jp_diff_gate gate;     /* limits < 0 are off */
} diff_args;

#define D(field) offsetof(diff_args, field)

static const cli_opt DIFF_OPTS[] = {
    {"--json", NULL, NULL, NULL, cli_set_flag, D(format), JP_FORMAT_JSON, -1, 0, "machine-readable output"},
    {"--csv", NULL, NULL, NULL, cli_set_flag, D(format), JP_FORMAT_CSV, -1, 0, "the op and scope changes as CSV"},
    {"--html", NULL, NULL, "FILE", cli_set_string, D(html), 1, -1, 0, "the comparison as one HTML page"},
    {"--top", NULL, NULL, "N", cli_set_count, D(view.top), 0, -1, 0, "rows per table"},
    {"--filter", NULL, NULL, "REGEX", cli_set_string, D(view.filter), 0, -1, 0, "keep ops and scopes whose name matches"},
    {"--host", NULL, NULL, "NAME", cli_set_string, D(load.host), 0, -1, 0, "only hosts whose name contains NAME"},
    {"--min-change", NULL, NULL, "PCT", cli_set_percent, D(opt.min_change_pct), 0, -1, 0,
     "changes below this are \"unchanged\" (default 5)"},
    {"--min-share", NULL, NULL, "PCT", cli_set_percent, D(opt.min_share_pct), 0, -1, 0,
     "ignore ops below this share of step time (default 0.5)"},
    {"--fail-if-slower", NULL, NULL, "PCT", cli_set_percent, D(gate.max_step_slowdown_pct), 0, -1, 0,
     "exit 1 when the step time got slower than this, beyond noise"},
    {"--fail-if-op-slower", NULL, NULL, "PCT", cli_set_percent, D(gate.max_op_slowdown_pct), 0, -1, 0,
     "exit 1 when an op got slower than this"},
    {"--width", NULL, NULL, "N", cli_set_width, D(view.width), 0, -1, 0, "text width in columns"},
    {"--threads", NULL, NULL, "N", cli_set_threads, D(load.threads), 0, -1, 0, "read threads (as jaxprof ops)"},
    {NULL},
};

const cli_command CLI_DIFF = {
    .name = "diff", .args = "BASE NEW",
    .synopsis = "[--json|--csv] [--top N] [--filter REGEX] [--host NAME] [--html FILE]\n"
                "[--min-change PCT] [--min-share PCT] [--fail-if-slower PCT] [--fail-if-op-slower PCT]",
    .summary = "compare two profiles: step time (with noise), breakdown, ops and scopes\n"
               "added/removed/slower/faster per step, findings; a --fail-if limit exits 1\n"
               "when the step time (beyond noise) or an op got slower by more than PCT",
    .text = "Compares two profiles: step time (with noise), breakdown, ops and scopes added/removed/\n"
            "slower/faster per step, findings. A --fail-if limit exits 1 when the step time (beyond\n"
            "noise) or an op got slower by more than PCT, for CI.\n",
    .opts = DIFF_OPTS, .pos_off = D(paths), .max_pos = 2, .min_pos = 2,
};

static int parse_diff_args(int argc, char **argv, diff_args *a) {
    memset(a, 0, sizeof *a);
    a->gate.max_step_slowdown_pct = a->gate.max_op_slowdown_pct = -1;
    return cli_parse(&CLI_DIFF, -1, argc, argv, a) < 0 ? -1 : 0;
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
