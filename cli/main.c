/* main.c - the `jaxprof` command: a thin client of libjaxprof. Commands that need JAX or its
 * profiler client (demo, capture) are handed to the Python package, run by the interpreter
 * installed beside this executable. */
#include "jaxprof/jaxprof.h"
#include "commands.h"
#include "options.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#ifndef JP_BUILD_PYTHON
#define JP_BUILD_PYTHON "python3"
#endif

typedef struct latest_args {
    const char *dir[1]; /* DIR */
} latest_args;

static const cli_opt LATEST_OPTS[] = {{NULL}};

const cli_command CLI_LATEST = {
    .name = "latest", .args = "[DIR]", .synopsis = "", .summary = "print the newest profile run under DIR",
    .text = "Prints the newest run directory under DIR (default ./profiles); exit 1 when there is none.\n",
    .opts = LATEST_OPTS, .pos_off = offsetof(latest_args, dir), .max_pos = 1,
};

/* Prints the newest run's directory; exit 1 when DIR holds no run, 2 on error. */
static int cmd_latest(int argc, char **argv) {
    latest_args a = {{CLI_DEFAULT_DIR}};
    if (cli_parse(&CLI_LATEST, -1, argc, argv, &a) < 0) return EXIT_USAGE;
    const char *dir = a.dir[0];
    jp_runs runs;
    jp_error err;
    if (jp_runs_find(&runs, dir, &err) != JP_OK) {
        cli_error(err.msg);
        return EXIT_USAGE;
    }
    const jp_run *run = jp_runs_latest_view(&runs);
    int rc = 0;
    if (run) {
        cli_put_name(run->path);
    } else {
        fprintf(stderr, "jaxprof: no profile (*.xplane.pb) under %s\n", dir);
        rc = 1;
    }
    jp_runs_deinit(&runs);
    return rc;
}

/* Reads all of standard input (malloc'd into *data), for PATH "-". */
static int read_stdin(char **data, size_t *n) {
    size_t cap = 1 << 20;
    *n = 0;
    *data = malloc(cap);
    for (size_t got; *data && (got = fread(*data + *n, 1, cap - *n, stdin)) > 0;) {
        *n += got;
        if (*n == cap) {
            char *bigger = cap <= SIZE_MAX / 2 ? realloc(*data, cap *= 2) : NULL;
            if (!bigger) free(*data);
            *data = bigger;
        }
    }
    return *data && !ferror(stdin) ? 0 : -1;
}

/* PATH as jp_profile_load reads it; "-": one serialized XSpace (or its gzip) on standard input, as
 * jaxprof.profile() hands an in-memory capture to its analysis process (the host: the one the
 * XSpace names). */
static int load_profile(jp_profile **p, const char *path, const jp_load_options *opt, jp_error *err) {
    if (strcmp(path, "-") != 0) return jp_profile_load(p, path, opt, err);
    char *data;
    size_t n;
    if (read_stdin(&data, &n) != 0) {
        free(data);
        snprintf(err->msg, sizeof err->msg, "cannot read the profile from standard input");
        err->offset = 0;
        return err->code = JP_ERR_IO;
    }
    int rc = jp_profile_parse(p, data, n, NULL, opt, err);
    free(data);
    return rc;
}

typedef struct analysis_args {
    const char *path[1]; /* PATH (default ./profiles) */
    jp_load_options load;
    jp_view view;
    int format;
    const char *html; /* --html FILE: write the report as an HTML page there (report only) */
    int folded;       /* flame --folded: folded stacks instead of the tree table */
    const char *pprof; /* flame --pprof FILE: a gzip'd pprof profile there */
    const char *out;  /* flame -o/--output FILE for --folded (default stdout) */
    int full;         /* --full: read every host's file, summaries or not */
    char peaks_path[PATH_MAX]; /* storage for load.cpu_peaks_file */
} analysis_args;

int cli_parse_count(const char *flag, const char *v, size_t *out) {
    char *end;
    errno = 0;
    unsigned long long n = v ? strtoull(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || v[0] == '-') {
        fprintf(stderr, "jaxprof: %s needs a non-negative number\n", flag);
        return -1;
    }
    *out = (size_t)n;
    return 0;
}

/* --threads N: 1 (everything on one thread) to JP_LOAD_THREADS_MAX (hosts read at once). */
int cli_parse_threads(const char *flag, const char *v, int *out) {
    size_t n;
    if (cli_parse_count(flag, v, &n) != 0) return -1;
    if (n < 1 || n > JP_LOAD_THREADS_MAX) {
        fprintf(stderr, "jaxprof: %s takes 1 to %d\n", flag, JP_LOAD_THREADS_MAX);
        return -1;
    }
    *out = (int)n;
    return 0;
}

/* JAXPROF_THREADS, the default of --threads; unset or not a count --threads takes leaves the
 * library's choice. */
int cli_env_threads(void) {
    const char *v = getenv("JAXPROF_THREADS");
    char *end;
    long n = v && *v >= '1' && *v <= '9' ? strtol(v, &end, 10) : 0;
    return n >= 1 && n <= JP_LOAD_THREADS_MAX && !*end ? (int)n : 0;
}

/* --max-inflate, else JAXPROF_MAX_INFLATE, as a jp_load_options.max_inflate value (0: the library's
 * defaults, also for a value jp_size_parse refuses, as the library did when it read the variable). */
uint64_t cli_max_inflate(void) {
    const char *v = getenv("JAXPROF_MAX_INFLATE"); /* take_max_inflate put --max-inflate there */
    uint64_t size;
    return v && jp_size_parse(v, &size) == 0 ? size : 0;
}

/* The file `jaxprof calibrate` writes, by the library's rule (jp_cpu_peaks_path) from this
 * environment; NULL when there is none. */
const char *cli_cpu_peaks_file(char *buf, size_t cap) {
    return jp_cpu_peaks_path(getenv("JAXPROF_CACHE_DIR"), getenv("XDG_CACHE_HOME"), getenv("HOME"), buf, cap, NULL) == JP_OK
               ? buf
               : NULL;
}

/* --step N (one step, aux 1) or --steps A:B (inclusive, either end open) into the load options. */
static int set_steps(const cli_opt *o, const char *flag, const char *v, void *args) {
    jp_load_options *load = &((analysis_args *)args)->load;
    jp_error err;
    if (o->aux && strchr(v, ':')) {
        fprintf(stderr, "jaxprof: --step takes one step number (--steps A:B for a range)\n");
        return -1;
    }
    if (jp_steps_parse(v, &load->first_step, &load->last_step, &err) != JP_OK) {
        char msg[JP_ERROR_MSG_MAX + 64];
        snprintf(msg, sizeof msg, "%s: %s", flag, err.msg);
        cli_error(msg);
        return -1;
    }
    load->has_steps = 1;
    return 0;
}

#define A(field) offsetof(analysis_args, field)
#define ANY -1, 0

/* The options of report and every table, in their --help order. */
static const cli_opt ANALYSIS_OPTS[] = {
    {"--top", NULL, NULL, "N", cli_set_count, A(view.top), 0, ANY, "rows per table (report default 10, tables all)"},
    {"--sort", NULL, NULL, "KEY[:asc|:desc]", cli_set_string, A(view.sort), 0, ANY,
     "column to sort by: total, self, count, avg, name, ... (the --json keys);\n"
     "numbers sort largest first, names A to Z, unless :asc or :desc says"},
    {"--filter", NULL, NULL, "REGEX", cli_set_string, A(view.filter), 0, ANY,
     "keep rows where a name matches (POSIX extended regex)"},
    {"--columns", NULL, NULL, "A,B,...", cli_set_string, A(view.columns), 1, ANY,
     "the columns to show, by their --json keys (e.g. name,self_ms,scope,source);\n"
     "for one table (not report or hosts)"},
    {"--step", NULL, NULL, "N", set_steps, A(load), 1, ANY, "only what ran in step N"},
    {"--steps", NULL, NULL, "A:B", set_steps, A(load), 0, ANY,
     "only what ran in steps A to B (inclusive, either end open: A: or :B)"},
    {"--host", NULL, NULL, "NAME", cli_set_string, A(load.host), 0, ANY, "only hosts whose name contains NAME"},
    {"--device", NULL, NULL, "NAME|N", cli_set_string, A(load.device), 0, ANY,
     "only devices whose name contains NAME, or device number N\n"
     "(without it, an op's row sums every device it ran on)"},
    {"--json", NULL, NULL, NULL, cli_set_flag, A(format), JP_FORMAT_JSON, ANY,
     "machine-readable output (JSON schema in docs/json-schema.md)"},
    {"--csv", NULL, NULL, NULL, cli_set_flag, A(format), JP_FORMAT_CSV, ANY, "one table as CSV"},
    {"--summary", NULL, NULL, NULL, cli_set_flag, A(format), JP_FORMAT_SUMMARY, JP_SECTION_REPORT, 0,
     "a compact JSON of what matters (step time and breakdown, KPIs, findings\n"
     "with evidence, top ops and scopes), for scripts and assistants"},
    {"--width", NULL, NULL, "N", cli_set_width, A(view.width), 0, ANY,
     "text width in columns (default: the terminal's, else 100)"},
    {"--threads", NULL, NULL, "N", cli_set_threads, A(load.threads), 0, ANY,
     "1: read on one thread; N: read up to N host files at once, one file\n"
     "parsed ahead on a second thread (default: a file per CPU; one file:\n"
     "2 for GPU/TPU profiles of 500k events or more; env JAXPROF_THREADS)"},
    {"--library-frames", NULL, NULL, "REGEX", cli_set_string, A(load.library_frames), 0, ANY,
     "frames whose file matches are library code, skipped to find an op's\n"
     "source line (default: site-packages, the standard library, JAX/Flax/\n"
     "Optax trees; \"\" makes every frame count)"},
    {"--peak-tflops", NULL, NULL, "X", cli_set_positive, A(load.peak_tflops), 0, ANY,
     "device peak TFLOP/s for the roofline and MFU (CPU profiles record none;\n"
     "GPU/TPU peaks come from the profile unless given)"},
    {"--peak-gbps", NULL, NULL, "X", cli_set_positive, A(load.peak_gbps), 0, ANY, "device peak memory GB/s, likewise"},
    {"--full", NULL, NULL, NULL, cli_set_flag, A(full), 1, -1, JP_SECTION_SUMMARIES,
     "read every host's file, also where its summary (jaxprof summarize) is\n"
     "beside it: a run with summaries is otherwise merged from them"},
    /* options of one section (or of the sections with a registry flag) */
    {"--group", NULL, NULL, "category|module|scope|source", cli_set_string, A(view.group), 1, JP_SECTION_OPS, 0,
     "one row per category, module, scope or source line: its ops summed\n"
     "(the key is the row's name; --filter picks the ops first)"},
    {"--table", NULL, NULL, "NAME", cli_set_string, A(view.table), 1, -1, JP_SECTION_SECOND_TABLE,
     "the section's other table alone, the view applying to it (comm:\n"
     "comm_instances; launch: launch_streams), as text, CSV or JSON"},
    {"--html", NULL, NULL, "FILE", cli_set_string, A(html), 1, JP_SECTION_REPORT, 0,
     "write it as one self-contained HTML page (charts, no scripts)"},
    {"--module", NULL, NULL, "NAME", cli_set_string, A(view.module), 1, -1, JP_SECTION_TAKES_MODULE,
     "one module in detail: its peak, what lives all along, temporaries,\n"
     "totals, and every buffer at the peak (--json adds its timeline); NAME\n"
     "is the module's key (\"jit_step(6)\") or its name (\"jit_step\")"},
    {"--folded", NULL, NULL, NULL, cli_set_flag, A(folded), 1, JP_SECTION_FLAME, 0,
     "\"frame;frame;op nanoseconds\" lines"},
    {"--output", "-o", NULL, "FILE", cli_set_string, A(out), 1, JP_SECTION_FLAME, 0,
     "write the folded stacks there (default: stdout)"},
    {"--pprof", NULL, NULL, "FILE", cli_set_string, A(pprof), 1, JP_SECTION_FLAME, 0, "write a gzip'd pprof profile there"},
    {NULL},
};

static const char PATH_HELP[] =
    "PATH is an .xplane.pb[.gz] file, a run directory, or a log directory (its newest run);\n"
    "default ./profiles.\n";

void cli_section_synopsis(int section, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = '\0';
    for (const cli_opt *o = ANALYSIS_OPTS; o->name && len < cap; o++) {
        int own = o->only_section == section ||
                  (o->only_flags && (jp_section_get(section)->flags & o->only_flags) == o->only_flags);
        if (!own) continue;
        int n = snprintf(buf + len, cap - len, "%s[%s%s%s]", len ? " " : "", o->alias ? o->alias : o->name,
                         o->metavar ? " " : "", o->metavar ? o->metavar : "");
        if (n < 0) break;
        len += (size_t)n;
    }
}

/* A section command: its name, summary and help from the registry, its options from ANALYSIS_OPTS. */
static cli_command section_command(int section) {
    const jp_section_def *d = jp_section_get(section);
    return (cli_command){.name = d->name, .args = "[PATH]", .synopsis = "",
                         .summary = d->summary, .text = d->help, .opts = ANALYSIS_OPTS, .shared_head = PATH_HELP,
                         .pos_off = A(path), .max_pos = 1};
}

void cli_section_help(int section, FILE *out) {
    cli_command c = section_command(section);
    cli_print_help(&c, section, out);
}

static int parse_analysis_args(int section, int argc, char **argv, analysis_args *a) {
    memset(a, 0, sizeof *a);
    a->load.cpu_peaks_file = cli_cpu_peaks_file(a->peaks_path, sizeof a->peaks_path);
    a->path[0] = CLI_DEFAULT_DIR;
    a->load.threads = cli_env_threads();
    a->load.max_inflate = cli_max_inflate();
    cli_command c = section_command(section);
    return cli_parse(&c, section, argc, argv, a) < 0 ? -1 : 0;
}

void cli_error(const char *msg) {
    char words[2 * JP_ERROR_MSG_MAX];
    msg = cli_flag_words(msg, words, sizeof words); /* the library's option names as this CLI's flags */
    fputs("jaxprof: ", stderr);
    jp_text_fput_safe(stderr, msg, strlen(msg), 1);
    fputc('\n', stderr);
}

void cli_put_name(const char *name) {
    if (isatty(STDOUT_FILENO)) jp_text_fput_safe(stdout, name, strlen(name), 0);
    else fputs(name, stdout);
    fputc('\n', stdout);
}

void cli_human_size(char *buf, size_t cap, uint64_t bytes) {
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) {
        snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
        return;
    }
    double v = (double)bytes / 1024;
    size_t u = 0;
    while (v >= 1023.95 && u + 1 < sizeof units / sizeof *units) v /= 1024, u++;
    snprintf(buf, cap, "%.1f %s", v, units[u]);
}

/* Text width: the terminal's when stdout is one, else 100 (pipes and files stay stable). */
int cli_text_width(void) {
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 60)
        return ws.ws_col > 400 ? 400 : ws.ws_col;
    return 100;
}

/* A progress line for big files, only when someone watches stderr. */
void cli_show_progress(void *ctx, const char *file, uint64_t bytes) {
    (void)ctx;
    if (bytes >= (64u << 20)) fprintf(stderr, "jaxprof: reading %s (%.0f MiB)...\r", file, (double)bytes / 1048576.0);
}

/* flame --pprof FILE and/or --folded [-o FILE]. */
static int flame_export(const jp_analysis *a, const analysis_args *args, const jp_temp_hook *temp, jp_error *err) {
    int rc = args->pprof ? jp_flame_pprof_write(a, args->pprof, temp, err) : JP_OK;
    if (rc || !args->folded) return rc;
    return args->out ? jp_flame_folded_write(a, args->out, temp, err) : jp_flame_folded(a, stdout, err);
}

/* report and the table commands: load, analyse, render. Exit 2 on bad input or options. */
static int cmd_analysis(int section, int argc, char **argv) {
    analysis_args args;
    if (parse_analysis_args(section, argc, argv, &args) != 0) return EXIT_USAGE;
    if (args.html && args.format != JP_FORMAT_TEXT) { /* (the parser keeps --html to report) */
        fprintf(stderr, "jaxprof: --html goes only with report, without --json or --csv\n");
        return EXIT_USAGE;
    }
    const jp_section_def *def = jp_section_get(section);
    if (args.load.has_steps && (def->flags & JP_SECTION_WHOLE_RUN)) { /* before loading: jp_render refuses it too */
        fprintf(stderr, "jaxprof: %s cannot take --step/--steps: %s\n", def->name, def->whole_run_why);
        return EXIT_USAGE;
    }
    const char *outputs[] = {args.html, args.pprof, args.out};
    for (size_t i = 0; strcmp(args.path[0], "-") != 0 && i < sizeof outputs / sizeof outputs[0]; i++) {
        jp_error clash;
        if (outputs[i] && jp_profile_output_check(args.path[0], outputs[i], &clash) != JP_OK) {
            cli_error(clash.msg);
            return EXIT_USAGE;
        }
    }
    if (isatty(STDERR_FILENO)) args.load.on_file = cli_show_progress;
    args.load.use_summaries = (def->flags & JP_SECTION_SUMMARIES) && !args.full && !args.load.has_steps;
    if (!args.view.width) args.view.width = cli_text_width();
    jp_profile *p;
    jp_error err;
    if (load_profile(&p, args.path[0], &args.load, &err) != JP_OK) {
        cli_error(err.msg);
        return EXIT_USAGE;
    }
    if (args.load.on_file) fputs("\033[K", stderr); /* clear the progress line */
    jp_temp_hook temp = args.html || args.pprof || args.out ? cli_cleanup_on_signal() : (jp_temp_hook){0};
    int rc = args.html ? jp_html_write(jp_profile_analysis(p), args.html, &temp, &err)
             : args.pprof || args.folded ? flame_export(jp_profile_analysis(p), &args, &temp, &err)
                                         : jp_render(jp_profile_analysis(p), section, args.format, &args.view, stdout, &err);
    if (rc != JP_OK) cli_error(err.msg);
    jp_profile_free(p);
    return rc == JP_OK ? 0 : EXIT_USAGE;
}

/* report and the tables, named by argv[0] (the signature cli_isolated runs). */
static int cmd_section(int argc, char **argv) {
    return cmd_analysis(jp_section_from_name(argv[0]), argc, argv);
}

/* Finds the Python to hand a command to: $JAXPROF_PYTHON, else python3 beside this executable
 * (the virtual environment pip installed us into), else the build's interpreter, else PATH. */
static const char *find_python(char *buf, size_t cap) {
    const char *env = getenv("JAXPROF_PYTHON");
    if (env && *env) return env;
    ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
    if (n > 0) {
        buf[n] = '\0';
        char *slash = strrchr(buf, '/');
        const char *name = "python3";
        if (slash && (size_t)(slash - buf) + 1 + strlen(name) < cap) {
            memcpy(slash + 1, name, strlen(name) + 1); /* fits: checked above */
            if (access(buf, X_OK) == 0) return buf;
        }
    }
    if (access(JP_BUILD_PYTHON, X_OK) == 0) return JP_BUILD_PYTHON;
    return "python3";
}

/* Replaces this process with `python -m jaxprof <argv...>`. Returns only on failure. */
static int run_python_command(int argc, char **argv) {
    char buf[PATH_MAX];
    const char *python = find_python(buf, sizeof buf);
    char *args[argc + 4];
    args[0] = (char *)python;
    args[1] = "-m";
    args[2] = "jaxprof";
    for (int i = 0; i < argc; i++) args[3 + i] = argv[i];
    args[3 + argc] = NULL;
    execvp(python, args);
    fprintf(stderr, "jaxprof: cannot run %s: %s (set JAXPROF_PYTHON to the Python that has jaxprof installed)\n",
            python, strerror(errno));
    return EXIT_USAGE;
}

/* `jaxprof help CMD`: the command's own help, as `jaxprof CMD --help` prints it. */
static int command_help(const char *cmd) {
    if (cli_is_python_command(cmd)) return run_python_command(2, (char *[]){(char *)cmd, "--help", NULL});
    if (cli_help(cmd, stdout) == 0) return 0;
    fprintf(stderr, "jaxprof: unknown command '%s' (see jaxprof help)\n", cmd);
    return EXIT_USAGE;
}

/* --max-inflate SIZE, an option of every command: the gzip limit (jp_size_parse), taken out of argv
 * and kept in JAXPROF_MAX_INFLATE (before any thread starts): the commands here read it back into
 * their load options (cli_max_inflate), the Python commands this runs inherit it. The library
 * itself reads no environment. 0, or EXIT_USAGE with the reason said. */
static int take_max_inflate(int *argc, char **argv) {
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--") == 0) break; /* what follows is another program's (jaxprof run) */
        if (strcmp(argv[i], "--max-inflate") != 0) continue;
        uint64_t size;
        if (i + 1 >= *argc || jp_size_parse(argv[i + 1], &size) != 0) {
            fprintf(stderr, "jaxprof: --max-inflate needs a size in bytes, with an optional K, M, G or T suffix\n");
            return EXIT_USAGE;
        }
        setenv("JAXPROF_MAX_INFLATE", argv[i + 1], 1);
        memmove(argv + i, argv + i + 2, (size_t)(*argc - i - 2 + 1) * sizeof *argv); /* with the final NULL */
        *argc -= 2;
        i--;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (take_max_inflate(&argc, argv) != 0) return EXIT_USAGE;
    if (argc < 2) {
        cli_usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
        return argc > 2 ? command_help(argv[2]) : (cli_usage(stdout), 0);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("jaxprof %s\n", JP_VERSION);
        return 0;
    }
    if (cli_is_python_command(cmd)) return run_python_command(argc - 1, argv + 1);
    if (cli_wants_help(argc - 1, argv + 1) && cli_help(cmd, stdout) == 0) return 0;
    if (strcmp(cmd, "view") == 0) return cmd_view(argc - 1, argv + 1); /* a server: guards its own requests */
    /* Every other command works in a child: a crash is exit 2 with a message, never a signal. */
    if (strcmp(cmd, "latest") == 0) return cli_isolated(cmd_latest, argc - 1, argv + 1);
    if (strcmp(cmd, "export") == 0) return cli_isolated(cmd_export, argc - 1, argv + 1);
    if (strcmp(cmd, "sql") == 0) return cli_isolated(cmd_sql, argc - 1, argv + 1);
    if (strcmp(cmd, "summarize") == 0) return cli_isolated(cmd_summarize, argc - 1, argv + 1);
    if (strcmp(cmd, "list") == 0) return cli_isolated(cmd_list, argc - 1, argv + 1);
    if (strcmp(cmd, "extract") == 0) return cli_isolated(cmd_extract, argc - 1, argv + 1);
    if (strcmp(cmd, "diff") == 0) return cli_isolated(cmd_diff, argc - 1, argv + 1);
    if (jp_section_from_name(cmd) >= 0) return cli_isolated(cmd_section, argc - 1, argv + 1);
    fprintf(stderr, "jaxprof: unknown command '%s'\n\n", cmd);
    cli_usage(stderr);
    return EXIT_USAGE;
}
