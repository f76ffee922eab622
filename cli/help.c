/* help.c - `jaxprof CMD --help`, `jaxprof CMD -h` and `jaxprof help CMD`: one command's usage and
 * options. The commands run by Python (demo, capture, calibrate, run) print argparse's own help. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

/* The options every analysis command (report and the tables) takes. */
static const char ANALYSIS_OPTIONS[] =
    "PATH is an .xplane.pb[.gz] file, a run directory, or a log directory (its newest run);\n"
    "default ./profiles.\n"
    "\n"
    "options:\n"
    "  --top N            rows per table (report default 10, tables all)\n"
    "  --sort KEY[:asc|:desc]\n"
    "                     column to sort by: total, self, count, avg, name, ... (the --json keys);\n"
    "                     numbers sort largest first, names A to Z, unless :asc or :desc says\n"
    "  --filter REGEX     keep rows where a name matches (POSIX extended regex)\n"
    "  --columns A,B,...  the columns to show, by their --json keys (e.g. name,self_ms,scope,source);\n"
    "                     for one table (not report or hosts)\n"
    "  --step N | --steps A:B\n"
    "                     only what ran in step N, or steps A to B (inclusive, either end open)\n"
    "  --host NAME        only hosts whose name contains NAME\n"
    "  --device NAME|N    only devices whose name contains NAME, or device number N\n"
    "                     (without it, an op's row sums every device it ran on)\n"
    "  --json | --csv     machine-readable output (JSON schema in docs/design.md)\n"
    "  --width N          text width in columns (default: the terminal's, else 100)\n"
    "  --threads 1|2      parse on one thread, or ahead on a second (default: 2 for GPU/TPU\n"
    "                     profiles of 500k events or more on 2+ CPUs; env JAXPROF_THREADS)\n"
    "  --library-frames REGEX\n"
    "                     frames whose file matches are library code, skipped to find an op's\n"
    "                     source line (default: site-packages, the standard library, JAX/Flax/\n"
    "                     Optax trees; \"\" makes every frame count)\n"
    "  --peak-tflops X, --peak-gbps X\n"
    "                     device peaks for the roofline and MFU (CPU profiles record none;\n"
    "                     GPU/TPU peaks come from the profile unless given)\n"
    "  -h, --help         this help\n";

typedef struct cmd_help {
    const char *name;
    const char *usage;  /* the synopsis after "usage: jaxprof " */
    const char *text;   /* what it does, then its own options */
    int analysis;       /* 1: ANALYSIS_OPTIONS follow */
} cmd_help;

static const cmd_help HELP[] = {
    {"export", "export [PATH] [options]",
     "Writes the whole timeline, with no event cap, for Perfetto UI, chrome://tracing or\n"
     "TensorBoard; prints the file written.\n"
     "\n"
     "options:\n"
     "  -o, --output FILE  where (default: perfetto_trace.json.gz in the run directory)\n"
     "  --format chrome|perfetto\n"
     "                     Chrome JSON (default) or Perfetto's protobuf trace\n"
     "  --window A_MS:B_MS only events inside this window (ms from the capture's start)\n"
     "  --steps A:B | N    only these steps (inclusive, either end open)\n"
     "  --min-duration-us N\n"
     "                     drop slices shorter than N microseconds\n"
     "  --host NAME        only hosts whose name contains NAME\n"
     "  --gzip-level 0-9   gzip level (default: 1 when FILE ends in .gz, else none)\n"
     "  -h, --help         this help\n", 0},
    {"diff", "diff BASE NEW [options]",
     "Compares two profiles: step time (with noise), breakdown, ops and scopes added/removed/\n"
     "slower/faster per step, findings. A --fail-if limit exits 1 when the step time (beyond\n"
     "noise) or an op got slower by more than PCT, for CI.\n"
     "\n"
     "options:\n"
     "  --json | --csv     machine-readable output\n"
     "  --html FILE        the comparison as one HTML page\n"
     "  --top N            rows per table\n"
     "  --filter REGEX     keep ops and scopes whose name matches\n"
     "  --host NAME        only hosts whose name contains NAME\n"
     "  --min-change PCT   changes below this are \"unchanged\" (default 5)\n"
     "  --min-share PCT    ignore ops below this share of step time (default 0.5)\n"
     "  --fail-if-slower PCT\n"
     "  --fail-if-op-slower PCT\n"
     "  --width N, --threads 1|2\n"
     "  -h, --help         this help\n", 0},
    {"list", "list [DIR] [--json]",
     "Every run under DIR (default .), newest last: hosts, files, steps, duration.\n", 0},
    {"latest", "latest [DIR]", "Prints the newest run directory under DIR (default .); exit 1 when there is none.\n", 0},
    {"extract", "extract [DIR] [-o OUT] [--run NAME] [--force]",
     "Decompresses the trace files of the newest run, or of the run NAME names (a name that\n"
     "matches several runs is refused and they are listed). An output that exists with the same\n"
     "bytes is kept; one with other bytes is refused (exit 2) unless --force.\n"
     "\n"
     "  -o, --out OUT      where to write them (default: beside the originals)\n"
     "  --run NAME         the run whose directory name contains NAME\n"
     "  --force            replace outputs that exist with other contents\n", 0},
    {"view", "view [DIR] [--ui builtin|perfetto|tensorboard] [--port N] [--host ADDR] [--no-browser]",
     "Serves the runs under DIR (default ./profiles) in a viewer until Ctrl-C: the built-in one\n"
     "(default, offline) on 127.0.0.1; --host 0.0.0.0 shares it, guarded by a token.\n"
     "\n"
     "  --ui builtin|perfetto|tensorboard\n"
     "  --port N           port (default: a free one; Perfetto needs 9001)\n"
     "  --host ADDR        address to listen on (built-in viewer only)\n"
     "  --no-browser       print the link, open nothing\n"
     "  --workers N        analysis processes at once (built-in viewer; default 4): each run is\n"
     "                     analysed in a process of its own, so a crash fails only that run\n"
     "  --time-limit S     seconds one analysis request may take before its process is stopped\n"
     "                     (default 120)\n"
     "  --connections N    connections at once (default 1024)\n", 0},
    {"version", "version", "Prints the version.\n", 0},
    {"help", "help [CMD]", "The list of commands, or one command's usage and options.\n", 0},
};

/* What a section command takes beyond ANALYSIS_OPTIONS: its synopsis and its options. */
typedef struct section_extra {
    int section;          /* jp_section */
    const char *synopsis; /* after "NAME [PATH] [options]" */
    const char *options;  /* its own options' help */
} section_extra;

static const section_extra EXTRAS[] = {
    {JP_SECTION_REPORT, " [--html FILE]",
     "  --html FILE        write it as one self-contained HTML page (charts, no scripts)\n"},
    {JP_SECTION_MEMORY, " [--module NAME]",
     "  --module NAME      one module in detail: its peak, what lives all along, temporaries,\n"
     "                     totals, and every buffer at the peak (--json adds its timeline); NAME\n"
     "                     is the module's key (\"jit_step(6)\") or its name (\"jit_step\")\n"},
    {JP_SECTION_FLAME, " [--folded [-o FILE]] [--pprof FILE]",
     "  --folded           \"frame;frame;op nanoseconds\" lines\n"
     "  -o FILE            write the folded stacks there (default: stdout)\n"
     "  --pprof FILE       write a gzip'd pprof profile there\n"},
};

const char *cli_section_synopsis(int section) {
    for (size_t i = 0; i < sizeof EXTRAS / sizeof EXTRAS[0]; i++)
        if (EXTRAS[i].section == section) return EXTRAS[i].synopsis;
    return "";
}

/* A section command's help: the registry's text, its own options, then the shared ones. */
static void section_help(const jp_section_def *d, FILE *out) {
    fprintf(out, "usage: jaxprof %s [PATH] [options]%s\n\n%s", d->name, cli_section_synopsis(d->id), d->help);
    for (size_t i = 0; i < sizeof EXTRAS / sizeof EXTRAS[0]; i++)
        if (EXTRAS[i].section == d->id) fprintf(out, "\n%s", EXTRAS[i].options);
    fprintf(out, "\n%s", ANALYSIS_OPTIONS);
}

static const cmd_help *find_help(const char *cmd) {
    for (size_t i = 0; i < sizeof HELP / sizeof HELP[0]; i++)
        if (strcmp(HELP[i].name, cmd) == 0) return &HELP[i];
    return NULL;
}

int cli_help(const char *cmd, FILE *out) {
    int section = jp_section_from_name(cmd);
    if (section >= 0) {
        section_help(jp_section_get(section), out);
        return 0;
    }
    const cmd_help *h = find_help(cmd);
    if (!h) return -1;
    fprintf(out, "usage: jaxprof %s\n\n%s", h->usage, h->text);
    if (h->analysis) fprintf(out, "\n%s", ANALYSIS_OPTIONS);
    return 0;
}

int cli_wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
    return 0;
}
