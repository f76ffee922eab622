/* help.c - `jaxprof help`, `jaxprof CMD --help`, `jaxprof CMD -h` and `jaxprof help CMD`: every
 * command's synopsis and help, printed from the tables its parser reads (options.h) and from the
 * section registry. The commands run by Python (demo, capture, calibrate, run) print argparse's
 * own help (their options are written there, once); only what they do, for the list of commands,
 * lives here. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "options.h"

/* A command that Python runs: what jaxprof help lists about it. */
typedef struct python_command {
    const char *name, *args, *synopsis, *summary;
} python_command;

static const python_command PYTHON_COMMANDS[] = {
    {"demo", "", "[options]",
     "train a small MLP on MNIST-shaped data and profile it"},
    {"capture", "ADDR", "[options]",
     "trace a running JAX process that called\n"
     "jax.profiler.start_server(PORT) (ADDR: HOST:PORT or PORT), then\n"
     "print the report; needs the xprof package for the gRPC client"},
    {"calibrate", "", "",
     "measure this machine's CPU peaks (f32 matmul FLOP/s, memory GB/s) as\n"
     "XLA:CPU reaches them; CPU profiles of this host then get a roofline\n"
     "and MFU (cached in ~/.cache/jaxprof/cpu_peaks)"},
    {"run", "", "[options] -- PROGRAM ...",
     "run PROGRAM (e.g. python train.py) unchanged and profile every\n"
     "Python process of it that imports JAX: steps A to B (inclusive) of its\n"
     "step function (default: 4 from call 10, once 2 steps in a row compile\n"
     "nothing), or a time window; report to stderr"},
};

/* The C commands other than the sections, in the order jaxprof help lists them after the sections. */
static const cli_command *const COMMANDS[] = {&CLI_EXPORT, &CLI_SQL, &CLI_SUMMARIZE, &CLI_DIFF, &CLI_LIST, &CLI_EXTRACT, &CLI_VIEW};

int cli_is_python_command(const char *cmd) {
    for (size_t i = 0; i < sizeof PYTHON_COMMANDS / sizeof PYTHON_COMMANDS[0]; i++)
        if (strcmp(PYTHON_COMMANDS[i].name, cmd) == 0) return 1;
    return 0;
}

static const cli_command *find_command(const char *cmd) {
    if (strcmp(cmd, CLI_LATEST.name) == 0) return &CLI_LATEST;
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (strcmp(COMMANDS[i]->name, cmd) == 0) return COMMANDS[i];
    return NULL;
}

void cli_usage(FILE *out) {
    fputs("usage: jaxprof <command> [options]\n\ncommands:\n", out);
    for (size_t i = 0; i < sizeof PYTHON_COMMANDS / sizeof PYTHON_COMMANDS[0]; i++) {
        const python_command *p = &PYTHON_COMMANDS[i];
        cli_print_summary(p->name, p->args, p->synopsis, p->summary, out);
    }
    cli_print_summary(CLI_LATEST.name, CLI_LATEST.args, CLI_LATEST.synopsis, CLI_LATEST.summary, out);
    for (int s = 0; s < JP_SECTION_COUNT; s++) {
        const jp_section_def *d = jp_section_get(s);
        char synopsis[256];
        cli_section_synopsis(s, synopsis, sizeof synopsis);
        cli_print_summary(d->name, "[PATH]", synopsis, d->summary, out);
    }
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        cli_print_summary(COMMANDS[i]->name, COMMANDS[i]->args, COMMANDS[i]->synopsis, COMMANDS[i]->summary, out);
    cli_print_summary("version", "", "", "print the version", out);
    cli_print_summary("help", "[CMD]", "", "this message, or CMD's usage and options (as jaxprof CMD --help)", out);
    fputs("\n"
          "PATH is an .xplane.pb[.gz] file, a run directory, or a log directory (its newest run);\n"
          "DIR is a log directory. Both default to ./profiles, where run, demo and capture write.\n"
          "Report and the tables share options (--top, --sort, --filter, --columns, --step/--steps,\n"
          "--host, --device, --json/--csv, --width, ...): see jaxprof ops --help. Durations take a\n"
          "unit (500us, 10ms, 2s). Every command takes --max-inflate SIZE (e.g. 20G): how far a gzip\n"
          "input may inflate (default 64x its size, at least 256M; env JAXPROF_MAX_INFLATE).\n",
          out);
}

int cli_help(const char *cmd, FILE *out) {
    int section = jp_section_from_name(cmd);
    const cli_command *c = find_command(cmd);
    if (section >= 0) cli_section_help(section, out);
    else if (c) cli_print_help(c, -1, out);
    else if (strcmp(cmd, "version") == 0) fputs("usage: jaxprof version\n\nPrints the version.\n", out);
    else if (strcmp(cmd, "help") == 0)
        fputs("usage: jaxprof help [CMD]\n\nThe list of commands, or one command's usage and options.\n", out);
    else return -1;
    return 0;
}

int cli_wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
    return 0;
}
