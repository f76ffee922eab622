/* cmd_runs.c - `jaxprof list` and `jaxprof extract`: the runs under a directory, thin clients of
 * jp_runs_find, jp_run_summarize (which lists and loads a run), jp_run_write_json and
 * jp_runs_extract. */
#include "jaxprof/jaxprof.h"
#include "commands.h"
#include "options.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TEXT_WIDTH = 100, NAME_MAX_COLS = 32, HOSTS_MAX_COLS = 40 };
enum { ROW_FIXED_COLS = 2 + 18 + 1 + 10 + 1 + 10 + 2 }; /* a row's columns between the name and the last */
_Static_assert(TEXT_WIDTH > NAME_MAX_COLS + ROW_FIXED_COLS, "the last column's width never wraps below zero");

/* What `list` shows about one run. */
typedef struct run_info {
    const jp_run *run;      /* borrowed from the jp_runs */
    jp_run_summary summary; /* its files, steps and span, or why it did not load */
} run_info;

static void free_infos(run_info *infos, size_t n) {
    for (size_t i = 0; i < n; i++) jp_run_summary_deinit(&infos[i].summary);
    free(infos);
}

/* ---- text ------------------------------------------------------------------------------------- */

static void human_ms(char *buf, size_t cap, double ms) {
    if (ms >= 1000) snprintf(buf, cap, "%.2f s", ms / 1000);
    else if (ms >= 1) snprintf(buf, cap, "%.2f ms", ms);
    else snprintf(buf, cap, "%.1f \xC2\xB5s", ms * 1000);
}

/* Writes s, cut with "..." to at most width bytes, never inside a UTF-8 character. */
static void put_fit(const char *s, size_t width) {
    size_t n = strlen(s);
    size_t keep = n <= width ? n : width > 3 ? width - 3 : width;
    while (keep < n && keep > 0 && ((unsigned char)s[keep] & 0xC0) == 0x80) keep--; /* s[keep] starts the cut part */
    jp_text_fput_safe(stdout, s, keep, 0); /* names from disk */
    if (n > width && width > 3) fputs("...", stdout);
}

/* "hostA, hostB" for the HOSTS column, then "+ summaries of hostC, hostD" (hosts here only as
 * their summary: a pod's run as process 0 keeps it). */
static void host_list(const jp_run *run, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < run->n_files + run->n_summarized && len + 1 < cap; i++) {
        const char *lead = i == run->n_files ? (len ? " + summaries of " : "summaries of ") : len ? ", " : "";
        int w = snprintf(buf + len, cap - len, "%s%s", lead, i < run->n_files ? run->hosts[i] : run->summarized[i - run->n_files]);
        if (w < 0) break;
        len += (size_t)w < cap - len ? (size_t)w : cap - len - 1;
    }
}

static size_t name_width(const run_info *infos, size_t n) {
    size_t w = strlen("RUN");
    for (size_t i = 0; i < n; i++)
        if (strlen(infos[i].run->name) > w) w = strlen(infos[i].run->name);
    return w > NAME_MAX_COLS ? NAME_MAX_COLS : w;
}

/* One table row: name, steps, duration, size, then hosts or the load error in the last column. */
static void text_row(const run_info *info, size_t name_w) {
    const jp_run_summary *s = &info->summary;
    char steps[64] = "-", dur[32] = "-", size[32], last[JP_ERROR_MSG_MAX + 8];
    if (s->loaded && s->n_steps > 0)
        snprintf(steps, sizeof steps, "%lld-%lld (%zu)", (long long)s->first_step, (long long)s->last_step, s->n_steps);
    else if (s->loaded)
        snprintf(steps, sizeof steps, "0");
    if (s->loaded) human_ms(dur, sizeof dur, s->duration_ms);
    cli_human_size(size, sizeof size, s->bytes);
    char words[2 * JP_ERROR_MSG_MAX];
    if (s->loaded) host_list(info->run, last, sizeof last);
    else snprintf(last, sizeof last, "error: %s", cli_flag_words(s->error, words, sizeof words));
    put_fit(info->run->name, name_w);
    size_t used = strlen(info->run->name) < name_w ? strlen(info->run->name) : name_w;
    int dur_w = 10 + (strstr(dur, "\xC2\xB5") != NULL); /* "µ" is two bytes in one column */
    printf("%*s  %-18.18s %*s %10s  ", (int)(name_w - used), "", steps, dur_w, dur, size);
    put_fit(last, TEXT_WIDTH - (name_w + ROW_FIXED_COLS));
    fputc('\n', stdout);
}

/* Detail lines under a run: where it is (relative to DIR) and each file with its size. */
static void text_details(const run_info *info, const char *dir) {
    const jp_run_summary *s = &info->summary;
    size_t n = strlen(dir), w = 0;
    const char *where = info->run->path;
    if (strncmp(where, dir, n) == 0 && where[n] == '/') where += n + 1;
    printf("    in ");
    put_fit(where, TEXT_WIDTH - 7);
    fputc('\n', stdout);
    for (size_t i = 0; i < s->n_files; i++)
        if (strlen(s->files[i].name) > w) w = strlen(s->files[i].name);
    if (w > TEXT_WIDTH - 16) w = TEXT_WIDTH - 16; /* 4 indent + name + 2 + 10 size */
    for (size_t i = 0; i < s->n_files; i++) {
        char size[32];
        size_t len = strlen(s->files[i].name);
        cli_human_size(size, sizeof size, s->files[i].bytes);
        printf("    ");
        put_fit(s->files[i].name, w);
        printf("%*s  %10s\n", (int)(w - (len < w ? len : w)), "", size);
    }
}

static void print_text(const char *dir, const run_info *infos, size_t n) {
    size_t name_w = name_width(infos, n);
    printf("%-*s  %-18s %10s %10s  %s\n", (int)name_w, "RUN", "STEPS", "DURATION", "SIZE", "HOSTS");
    for (size_t i = 0; i < n; i++) {
        text_row(&infos[i], name_w);
        text_details(&infos[i], dir);
    }
}

/* ---- JSON ------------------------------------------------------------------------------------- */

static void print_json(const char *dir, const run_info *infos, size_t n) {
    printf("{\"schema_version\":%d,\"dir\":", JP_JSON_SCHEMA_VERSION);
    jp_json_fput_str(stdout, dir, strlen(dir));
    fputs(",\"runs\":[\n", stdout);
    for (size_t i = 0; i < n; i++) {
        fputs("  ", stdout);
        fputc('{', stdout);
        jp_run_write_json(stdout, infos[i].run, infos[i].run->path, &infos[i].summary);
        fputc('}', stdout);
        fputs(i + 1 < n ? ",\n" : "\n", stdout);
    }
    fputs("]}\n", stdout);
}

/* ---- commands --------------------------------------------------------------------------------- */

/* Finds the runs under dir; prints the error and returns the exit code when there are none. */
static int find_runs(jp_runs *runs, const char *dir) {
    jp_error err;
    if (jp_runs_find(runs, dir, &err) != JP_OK) {
        cli_error(err.msg);
        return EXIT_USAGE;
    }
    if (runs->count == 0) {
        fprintf(stderr, "jaxprof: no profile (*.xplane.pb) under %s\n", dir);
        jp_runs_deinit(runs);
        return 1;
    }
    return 0;
}

typedef struct list_args {
    const char *dir[1]; /* DIR */
    int json;           /* --json */
} list_args;

static const cli_opt LIST_OPTS[] = {
    {"--json", NULL, NULL, NULL, cli_set_flag, offsetof(list_args, json), 1, -1, 0, "machine-readable output"},
    {NULL},
};

const cli_command CLI_LIST = {
    .name = "list", .args = "[DIR]", .synopsis = "[--json]",
    .summary = "every run under DIR, newest last: hosts, files, steps, duration",
    .text = "Every run under DIR (default ./profiles), newest last: hosts, files, steps, duration.\n",
    .opts = LIST_OPTS, .pos_off = offsetof(list_args, dir), .max_pos = 1,
};

int cmd_list(int argc, char **argv) {
    list_args a = {{CLI_DEFAULT_DIR}, 0};
    if (cli_parse(&CLI_LIST, -1, argc, argv, &a) < 0) return EXIT_USAGE;
    const char *dir = a.dir[0];
    int json = a.json;
    jp_runs runs;
    int rc = find_runs(&runs, dir);
    if (rc != 0) return rc;
    run_info *infos = calloc(runs.count, sizeof *infos);
    jp_error err;
    for (size_t i = 0; infos && i < runs.count; i++) {
        infos[i].run = &runs.runs[i];
        if (jp_run_summarize(&infos[i].summary, infos[i].run, &(jp_load_options){.max_inflate = cli_max_inflate()},
                             &err) != JP_OK) {
            free_infos(infos, i + 1);
            infos = NULL;
        }
    }
    if (!infos) {
        fprintf(stderr, "jaxprof: out of memory\n");
        rc = EXIT_USAGE;
    } else if (json) print_json(dir, infos, runs.count);
    else print_text(dir, infos, runs.count);
    free_infos(infos, infos ? runs.count : 0);
    jp_runs_deinit(&runs);
    return rc;
}

/* 1 when the run is the one --run named: its name, its path, or a tail of its path. */
static int run_matches(const jp_run *run, const char *want) {
    size_t n = strlen(want), p = strlen(run->path);
    while (n > 1 && want[n - 1] == '/') n--;
    if (strlen(run->name) == n && strncmp(run->name, want, n) == 0) return 1;
    if (p < n || strncmp(run->path + p - n, want, n) != 0) return 0;
    return p == n || run->path[p - n - 1] == '/' || want[0] == '/';
}

/* The run --run NAME means: the one it names exactly (its name, or the end of its path), else
 * the one whose name contains it. None, or several, is an error that lists the candidates. */
static const jp_run *pick_run(const jp_runs *runs, const char *want, const char *dir) {
    const jp_run *exact = NULL, *partial = NULL;
    size_t n_exact = 0, n_partial = 0;
    for (size_t i = 0; i < runs->count; i++) {
        const jp_run *r = &runs->runs[i];
        if (run_matches(r, want)) exact = r, n_exact++;
        else if (strstr(r->name, want)) partial = r, n_partial++;
    }
    if (n_exact == 1 || (!n_exact && n_partial == 1)) return n_exact ? exact : partial;
    if (!n_exact && !n_partial) {
        fprintf(stderr, "jaxprof: no run named '%s' under %s (see jaxprof list %s)\n", want, dir, dir);
        return NULL;
    }
    fprintf(stderr, "jaxprof: %zu runs under %s match '%s'; name one of them:\n", n_exact ? n_exact : n_partial, dir, want);
    for (size_t i = 0; i < runs->count; i++)
        if (n_exact ? run_matches(&runs->runs[i], want) : strstr(runs->runs[i].name, want) != NULL) {
            fputs("  ", stderr);
            jp_text_fput_safe(stderr, runs->runs[i].path, strlen(runs->runs[i].path), 0);
            fputc('\n', stderr);
        }
    return NULL;
}

static void print_path(void *ctx, const char *path) {
    (void)ctx;
    cli_put_name(path);
}

typedef struct extract_args {
    const char *dir[1];          /* DIR */
    const char *out, *want;      /* --out, --run */
    int force;                   /* --force */
} extract_args;

#define X(field) offsetof(extract_args, field)

static const cli_opt EXTRACT_OPTS[] = {
    {"--out", NULL, "-o", "DIR", cli_set_string, X(out), 1, -1, 0, "where to write them (default: beside the originals)"},
    {"--run", NULL, NULL, "NAME", cli_set_string, X(want), 0, -1, 0, "the run whose directory name contains NAME"},
    {"--force", NULL, NULL, NULL, cli_set_flag, X(force), 1, -1, 0, "replace outputs that exist with other contents"},
    {NULL},
};

const cli_command CLI_EXTRACT = {
    .name = "extract", .args = "[DIR]", .synopsis = "[--out DIR] [--run NAME] [--force]",
    .summary = "decompress the trace files of the newest (or named) run",
    .text = "Decompresses the trace files of the newest run under DIR (default ./profiles), or of the\n"
            "run NAME names (a name that matches several runs is refused and they are listed). An output\n"
            "that exists with the same bytes is kept; one with other bytes is refused (exit 2) unless\n"
            "--force.\n",
    .opts = EXTRACT_OPTS, .pos_off = X(dir), .max_pos = 1,
};

int cmd_extract(int argc, char **argv) {
    extract_args a = {{CLI_DEFAULT_DIR}, NULL, NULL, 0};
    if (cli_parse(&CLI_EXTRACT, -1, argc, argv, &a) < 0) return EXIT_USAGE;
    const char *dir = a.dir[0], *out = a.out, *want = a.want;
    jp_extract_options opt = {.force = a.force};
    jp_runs runs;
    int rc = find_runs(&runs, dir);
    if (rc != 0) return rc;
    const jp_run *run = want ? pick_run(&runs, want, dir) : jp_runs_latest_view(&runs);
    jp_error err;
    if (!run) {
        rc = EXIT_USAGE;
    } else if (opt.temp = cli_cleanup_on_signal(), jp_runs_extract(run->path, out, &opt, print_path, NULL, &err) != JP_OK) {
        cli_error(err.msg);
        rc = EXIT_USAGE;
    }
    jp_runs_deinit(&runs);
    return rc;
}
