/* cmd_summarize.c - `jaxprof summarize PATH [-o FILE]`: each host file's summary written beside it,
 * so a pod's hosts can be merged from a few kB each (docs/design.md "Pods"). */
#include <stddef.h>
#include <stdio.h>

#include "commands.h"
#include "options.h"
#include "jaxprof/jaxprof.h"

typedef struct summarize_args {
    const char *path[1];
    const char *out;
    jp_load_options load;
} summarize_args;

#define M(field) offsetof(summarize_args, field)

static const cli_opt SUMMARIZE_OPTS[] = {
    {"--output", "-o", NULL, "FILE", cli_set_string, M(out), 1, -1, 0,
     "write the summary there (PATH one host file; default: beside it,\n"
     "as <host>.jaxprof-summary.json)"},
    {"--host", NULL, NULL, "NAME", cli_set_string, M(load.host), 0, -1, 0, "only hosts whose name contains NAME"},
    {"--threads", NULL, NULL, "N", cli_set_threads, M(load.threads), 0, -1, 0, "as for report"},
    {NULL},
};

const cli_command CLI_SUMMARIZE = {
    .name = "summarize", .args = "[PATH]", .synopsis = "[-o FILE]",
    .summary = "write each host file's summary beside it (pods: merge those, not the files)\n",
    .text = "Reads each host file of PATH alone and writes its summary beside it as\n"
            "<host>.jaxprof-summary.json: steps and their breakdown, collective ends, top ops, findings,\n"
            "devices and the capture's start (a few kB; schema in docs/summary-schema.md). report, hosts\n"
            "and findings on a run directory then read the summaries instead of the files (--full reads\n"
            "the files), so the summaries alone can be copied from a pod's machines and merged on one.\n"
            "Processes of a jax.distributed job under jaxprof.Profiler write theirs after each capture.\n",
    .opts = SUMMARIZE_OPTS, .pos_off = M(path), .max_pos = 1,
};

static void say_written(void *ctx, const char *path) {
    (void)ctx;
    cli_put_name(path);
}

int cmd_summarize(int argc, char **argv) {
    summarize_args a = {{CLI_DEFAULT_DIR}, NULL, {0}};
    a.load.threads = cli_env_threads();
    a.load.max_inflate = cli_max_inflate();
    char peaks[4096];
    a.load.cpu_peaks_file = cli_cpu_peaks_file(peaks, sizeof peaks);
    if (cli_parse(&CLI_SUMMARIZE, -1, argc, argv, &a) < 0) return EXIT_USAGE;
    jp_temp_hook temp = cli_cleanup_on_signal();
    jp_error err;
    if (jp_summarize(a.path[0], a.out, &a.load, &temp, say_written, NULL, &err) == JP_OK) return 0;
    cli_error(err.msg);
    return EXIT_USAGE;
}
