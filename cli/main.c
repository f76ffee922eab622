/* main.c - the `jaxprof` command: a thin client of libjaxprof. Commands that need JAX or its
 * profiler client (demo, capture) are handed to the Python package, run by the interpreter
 * installed beside this executable. */
#include "jaxprof/jaxprof.h"
#include "commands.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#ifndef JP_BUILD_PYTHON
#define JP_BUILD_PYTHON "python3"
#endif

/* "  NAME [PATH]...  summary" for every section in the registry. */
static void section_usage(FILE *out) {
    for (int s = 0; s < JP_SECTION_COUNT; s++) {
        const jp_section_def *d = jp_section_get(s);
        char head[128];
        int n = snprintf(head, sizeof head, "  %s [PATH]%s", d->name, cli_section_synopsis(s));
        if (n >= 0 && n < 21) fprintf(out, "%-21s%s\n", head, d->summary);
        else fprintf(out, "%s\n%21s%s\n", head, "", d->summary);
    }
}

static void usage(FILE *out) {
    fputs("usage: jaxprof <command> [options]\n"
          "\n"
          "commands:\n"
          "  demo [--steps N] [--out DIR] [--data MNIST_DIR]\n"
          "                     train a small MLP on MNIST-shaped data and profile it\n"
          "  capture ADDR [--duration-ms N] [--out DIR] [--no-report]\n"
          "                     trace a running JAX process that called\n"
          "                     jax.profiler.start_server(PORT) (ADDR: HOST:PORT or PORT), then\n"
          "                     print the report; needs the xprof package for the gRPC client\n"
          "  calibrate          measure this machine's CPU peaks (f32 matmul FLOP/s, memory GB/s) as\n"
          "                     XLA:CPU reaches them; CPU profiles of this host then get a roofline\n"
          "                     and MFU (cached in ~/.cache/jaxprof/cpu_peaks)\n"
          "  run [--out DIR] [--steps A:B | --delay S --duration S] [--no-report] -- PROGRAM ...\n"
          "                     run PROGRAM (e.g. python train.py) unchanged and profile every\n"
          "                     Python process of it that imports JAX: steps A..B-1 of its step\n"
          "                     function (default: 4 from call 10, once 2 steps in a row compile\n"
          "                     nothing), or a time window; report to stderr\n"
          "  latest [DIR]       print the newest profile run under DIR (default: .)\n",
          out);
    section_usage(out);
    fputs(          "  export [PATH] [-o FILE] [--format chrome|perfetto] [--window A_MS:B_MS]\n"
          "         [--steps A:B] [--min-duration-us N] [--host NAME]\n"
          "                     write the whole timeline for Perfetto UI / chrome://tracing /\n"
          "                     TensorBoard (default: perfetto_trace.json.gz in the run directory)\n"
          "  diff BASE NEW [--json|--csv] [--top N] [--filter REGEX] [--host NAME] [--html FILE]\n"
          "       [--min-change PCT] [--min-share PCT] [--fail-if-slower PCT] [--fail-if-op-slower PCT]\n"
          "                     compare two profiles: step time (with noise), breakdown, ops and scopes\n"
          "                     added/removed/slower/faster per step, findings; a --fail-if limit exits 1\n"
          "                     when the step time (beyond noise) or an op got slower by more than PCT\n"
          "  list [DIR] [--json]  every run under DIR, newest last: hosts, files, steps, duration\n"
          "  extract [DIR] [-o OUT] [--run NAME] [--force]\n"
          "                     decompress the trace files of the newest (or named) run\n"
          "  view [DIR] [--ui builtin|perfetto|tensorboard] [--port N] [--host ADDR] [--no-browser]\n"
          "                     serve the runs in a viewer until Ctrl-C: the built-in one (default,\n"
          "                     offline) on 127.0.0.1; --host 0.0.0.0 shares it, guarded by a token\n"
          "  version            print the version\n"
          "  help [CMD]         this message, or CMD's usage and options (as jaxprof CMD --help)\n"
          "\n"
          "PATH is an .xplane.pb[.gz] file, a run directory, or a log directory (its newest run);\n"
          "default ./profiles. Report and the tables share options (--top, --sort, --filter,\n"
          "--columns, --step/--steps, --host, --device, --json/--csv, --width, ...): see\n"
          "jaxprof ops --help. Every command takes --max-inflate SIZE (e.g. 20G): how far a gzip\n"
          "input may inflate (default 64x its size, at least 256M; env JAXPROF_MAX_INFLATE).\n",
          out);
}

/* Prints the newest run's directory; exit 1 when DIR holds no run, 2 on error. */
static int cmd_latest(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : ".";
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

typedef struct analysis_args {
    const char *path;
    jp_load_options load;
    jp_view view;
    int format;
    const char *html; /* --html FILE: write the report as an HTML page there (report only) */
    int folded;       /* flame --folded: folded stacks instead of the tree table */
    const char *pprof; /* flame --pprof FILE: a gzip'd pprof profile there */
    const char *out;  /* -o FILE for --folded (default stdout) */
    char peaks_path[PATH_MAX]; /* storage for load.cpu_peaks_file */
} analysis_args;

/* --peak-tflops X / --peak-gbps X: a positive number. */
static int parse_peak(const char *flag, const char *v, double *out) {
    char *end;
    double d = v && *v ? strtod(v, &end) : 0;
    if (!v || !*v || *end || !(d > 0) || d > 1e9) {
        fprintf(stderr, "jaxprof: %s needs a positive number\n", flag);
        return -1;
    }
    *out = d;
    return 0;
}

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

/* --threads N: 1 or 2 (more threads than two gain nothing: one parses, one builds). */
int cli_parse_threads(const char *flag, const char *v, int *out) {
    size_t n;
    if (cli_parse_count(flag, v, &n) != 0) return -1;
    if (n < 1 || n > 2) {
        fprintf(stderr, "jaxprof: %s takes 1 or 2\n", flag);
        return -1;
    }
    *out = (int)n;
    return 0;
}

/* JAXPROF_THREADS, the default of --threads; unset or not 1/2 leaves the library's choice. */
int cli_env_threads(void) {
    const char *v = getenv("JAXPROF_THREADS");
    return v && (strcmp(v, "1") == 0 || strcmp(v, "2") == 0) ? v[0] - '0' : 0;
}

/* The file `jaxprof calibrate` writes (python/jaxprof/calibrate.py: the same rule):
 * $JAXPROF_CACHE_DIR/cpu_peaks, else $XDG_CACHE_HOME/jaxprof/cpu_peaks, else ~/.cache/jaxprof/cpu_peaks. */
const char *cli_cpu_peaks_file(char *buf, size_t cap) {
    const char *dir = getenv("JAXPROF_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n = dir && *dir ? snprintf(buf, cap, "%s/cpu_peaks", dir)
            : xdg && *xdg ? snprintf(buf, cap, "%s/jaxprof/cpu_peaks", xdg)
            : home && *home ? snprintf(buf, cap, "%s/.cache/jaxprof/cpu_peaks", home) : -1;
    return n > 0 && (size_t)n < cap ? buf : NULL;
}

/* --step N (one step) or --steps A:B (inclusive, either end open) into the load options. */
static int parse_step_range(const char *flag, const char *v, jp_load_options *load) {
    jp_error err;
    if (strcmp(flag, "--step") == 0 && strchr(v, ':')) {
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

static int parse_analysis_args(int argc, char **argv, analysis_args *a) {
    memset(a, 0, sizeof *a);
    a->load.cpu_peaks_file = cli_cpu_peaks_file(a->peaks_path, sizeof a->peaks_path);
    a->path = "profiles";
    a->load.threads = cli_env_threads();
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        size_t n;
        if (strcmp(arg, "--json") == 0) a->format = JP_FORMAT_JSON;
        else if (strcmp(arg, "--csv") == 0) a->format = JP_FORMAT_CSV;
        else if (strcmp(arg, "--top") == 0 && !cli_parse_count(arg, next, &a->view.top)) i++;
        else if (strcmp(arg, "--width") == 0 && !cli_parse_count(arg, next, &n)) a->view.width = (int)(n > 400 ? 400 : n), i++;
        else if (strcmp(arg, "--sort") == 0 && next) a->view.sort = next, i++;
        else if (strcmp(arg, "--filter") == 0 && next) a->view.filter = next, i++;
        else if (strcmp(arg, "--columns") == 0 && next && *next) a->view.columns = next, i++;
        else if (strcmp(arg, "--module") == 0 && next && *next) a->view.module = next, i++;
        else if (strcmp(arg, "--host") == 0 && next) a->load.host = next, i++;
        else if (strcmp(arg, "--device") == 0 && next) a->load.device = next, i++;
        else if ((strcmp(arg, "--step") == 0 || strcmp(arg, "--steps") == 0) && next) {
            if (parse_step_range(arg, next, &a->load) != 0) return -1;
            i++;
        }
        else if (strcmp(arg, "--threads") == 0 && !cli_parse_threads(arg, next, &a->load.threads)) i++;
        else if (strcmp(arg, "--html") == 0 && next && *next) a->html = next, i++;
        else if (strcmp(arg, "--library-frames") == 0 && next) a->load.library_frames = next, i++;
        else if (strcmp(arg, "--peak-tflops") == 0 && !parse_peak(arg, next, &a->load.peak_tflops)) i++;
        else if (strcmp(arg, "--peak-gbps") == 0 && !parse_peak(arg, next, &a->load.peak_gbps)) i++;
        else if (strcmp(arg, "--folded") == 0) a->folded = 1;
        else if (strcmp(arg, "--pprof") == 0 && next && *next) a->pprof = next, i++;
        else if (strcmp(arg, "-o") == 0 && next && *next) a->out = next, i++;
        else if (arg[0] != '-' && a->path == (const char *)"profiles") a->path = arg;
        else {
            fprintf(stderr, "jaxprof: bad option '%s' (see jaxprof %s --help)\n", arg, argv[0]);
            return -1;
        }
    }
    return 0;
}

void cli_error(const char *msg) {
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
    static const char *const units[] = {"kB", "MB", "GB", "TB", "PB"};
    if (bytes < 1000) {
        snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
        return;
    }
    double v = (double)bytes / 1000;
    size_t u = 0;
    while (v >= 999.95 && u + 1 < sizeof units / sizeof *units) v /= 1000, u++;
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
    if (bytes >= (64u << 20)) fprintf(stderr, "jaxprof: reading %s (%.0f MB)...\r", file, (double)bytes / 1e6);
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
    if (parse_analysis_args(argc, argv, &args) != 0) return EXIT_USAGE;
    if (args.html && (section != JP_SECTION_REPORT || args.format != JP_FORMAT_TEXT)) {
        fprintf(stderr, "jaxprof: --html goes only with report, without --json or --csv\n");
        return EXIT_USAGE;
    }
    const jp_section_def *def = jp_section_get(section);
    if (args.view.module && !(def->flags & JP_SECTION_TAKES_MODULE)) {
        fputs("jaxprof: --module goes only with", stderr);
        for (int s = 0; s < JP_SECTION_COUNT; s++)
            if (jp_section_get(s)->flags & JP_SECTION_TAKES_MODULE) fprintf(stderr, " %s", jp_section_name(s));
        fputc('\n', stderr);
        return EXIT_USAGE;
    }
    if ((args.folded || args.pprof || args.out) && section != JP_SECTION_FLAME) {
        fprintf(stderr, "jaxprof: --folded, --pprof and -o go only with flame\n");
        return EXIT_USAGE;
    }
    if (args.load.has_steps && (def->flags & JP_SECTION_WHOLE_RUN)) { /* before loading: jp_render refuses it too */
        fprintf(stderr, "jaxprof: %s cannot take --step/--steps: %s\n", def->name, def->whole_run_why);
        return EXIT_USAGE;
    }
    const char *outputs[] = {args.html, args.pprof, args.out};
    for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++) {
        jp_error clash;
        if (outputs[i] && jp_profile_output_check(args.path, outputs[i], &clash) != JP_OK) {
            cli_error(clash.msg);
            return EXIT_USAGE;
        }
    }
    if (isatty(STDERR_FILENO)) args.load.on_file = cli_show_progress;
    if (!args.view.width) args.view.width = cli_text_width();
    jp_profile *p;
    jp_error err;
    if (jp_profile_load(&p, args.path, &args.load, &err) != JP_OK) {
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

static int is_python_command(const char *cmd) {
    return strcmp(cmd, "demo") == 0 || strcmp(cmd, "capture") == 0 || strcmp(cmd, "calibrate") == 0 ||
           strcmp(cmd, "run") == 0;
}

/* `jaxprof help CMD`: the command's own help, as `jaxprof CMD --help` prints it. */
static int command_help(const char *cmd) {
    if (is_python_command(cmd)) return run_python_command(2, (char *[]){(char *)cmd, "--help", NULL});
    if (cli_help(cmd, stdout) == 0) return 0;
    fprintf(stderr, "jaxprof: unknown command '%s' (see jaxprof help)\n", cmd);
    return EXIT_USAGE;
}

/* --max-inflate SIZE, an option of every command: the gzip limit (jp_size_parse), passed to the
 * library as JAXPROF_MAX_INFLATE, and taken out of argv. 0, or EXIT_USAGE with the reason said. */
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
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
        return argc > 2 ? command_help(argv[2]) : (usage(stdout), 0);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("jaxprof %s\n", JP_VERSION);
        return 0;
    }
    if (is_python_command(cmd)) return run_python_command(argc - 1, argv + 1);
    if (cli_wants_help(argc - 1, argv + 1) && cli_help(cmd, stdout) == 0) return 0;
    if (strcmp(cmd, "view") == 0) return cmd_view(argc - 1, argv + 1); /* a server: guards its own requests */
    /* Every other command works in a child: a crash is exit 2 with a message, never a signal. */
    if (strcmp(cmd, "latest") == 0) return cli_isolated(cmd_latest, argc - 1, argv + 1);
    if (strcmp(cmd, "export") == 0) return cli_isolated(cmd_export, argc - 1, argv + 1);
    if (strcmp(cmd, "list") == 0) return cli_isolated(cmd_list, argc - 1, argv + 1);
    if (strcmp(cmd, "extract") == 0) return cli_isolated(cmd_extract, argc - 1, argv + 1);
    if (strcmp(cmd, "diff") == 0) return cli_isolated(cmd_diff, argc - 1, argv + 1);
    if (jp_section_from_name(cmd) >= 0) return cli_isolated(cmd_section, argc - 1, argv + 1);
    fprintf(stderr, "jaxprof: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
