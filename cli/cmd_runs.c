/* cmd_runs.c - `jaxprof list` and `jaxprof extract`: the runs under a directory, thin clients of
 * jp_runs_find, jp_profile_load and jp_runs_extract. */
#include "jaxprof/jaxprof.h"
#include "commands.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { TEXT_WIDTH = 100, NAME_MAX_COLS = 32, HOSTS_MAX_COLS = 40 };

/* One regular file of a run directory. */
typedef struct run_file {
    char *name;     /* heap copy of the file name */
    uint64_t bytes; /* its size (lstat) */
} run_file;

/* What `list` shows about one run. */
typedef struct run_info {
    const jp_run *run;             /* borrowed from the jp_runs */
    run_file *files;               /* every regular file directly in the run, by name */
    size_t n_files;
    uint64_t bytes;                /* sum of the files' sizes */
    int loaded;                    /* 1 when jp_profile_load succeeded */
    size_t n_steps;                /* steps the analysis found */
    int64_t first_step, last_step; /* their step numbers, when n_steps > 0 */
    double duration_ms;            /* span of the profile */
    char error[JP_ERROR_MSG_MAX];  /* why loading failed, "" when loaded */
} run_info;

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* Length of the host name in an xplane file name, or 0 when name is not an xplane file. */
static size_t host_len(const char *name) {
    size_t n = strlen(name);
    if (ends_with(name, ".xplane.pb")) return n - strlen(".xplane.pb");
    if (ends_with(name, ".xplane.pb.gz")) return n - strlen(".xplane.pb.gz");
    return 0;
}

/* ---- gathering -------------------------------------------------------------------------------- */

static int only_visible(const struct dirent *de) {
    return strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
}

/* Fills info->files with the regular files of the run directory (links are not followed). */
static int collect_files(run_info *info) {
    struct dirent **names = NULL;
    int n = scandir(info->run->path, &names, only_visible, alphasort);
    if (n < 0) return -1;
    info->files = calloc((size_t)n + 1, sizeof *info->files);
    int dfd = open(info->run->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (info->files && dfd >= 0 && fstatat(dfd, names[i]->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode)) {
            run_file *f = &info->files[info->n_files];
            f->name = strdup(names[i]->d_name);
            f->bytes = (uint64_t)st.st_size;
            if (f->name) info->n_files++, info->bytes += f->bytes;
        }
        free(names[i]);
    }
    free(names);
    if (dfd >= 0) close(dfd);
    return info->files ? 0 : -1;
}

/* Loads the run to read its steps and span; a failure is kept as text, not fatal. */
static void load_steps(run_info *info) {
    jp_profile *p;
    jp_error err;
    if (jp_profile_load(&p, info->run->path, NULL, &err) != JP_OK) {
        size_t n = strlen(info->run->path); /* the message names files by path: keep it short */
        const char *msg = strncmp(err.msg, info->run->path, n) == 0 && err.msg[n] == '/' ? err.msg + n + 1 : err.msg;
        snprintf(info->error, sizeof info->error, "%s", msg);
        return;
    }
    const jp_analysis *a = jp_profile_analysis(p);
    info->loaded = 1;
    info->n_steps = a->n_steps;
    if (a->n_steps > 0) {
        info->first_step = a->steps[0].step_num;
        info->last_step = a->steps[a->n_steps - 1].step_num;
    }
    info->duration_ms = (double)a->span_ps / 1e9;
    jp_profile_free(p);
}

static void free_infos(run_info *infos, size_t n) {
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < infos[i].n_files; j++) free(infos[i].files[j].name);
        free(infos[i].files);
    }
    free(infos);
}

/* ---- text ------------------------------------------------------------------------------------- */

static void human_ms(char *buf, size_t cap, double ms) {
    if (ms >= 1000) snprintf(buf, cap, "%.2f s", ms / 1000);
    else if (ms >= 1) snprintf(buf, cap, "%.2f ms", ms);
    else snprintf(buf, cap, "%.1f us", ms * 1000);
}

/* Writes s, cut with "..." to at most width columns (bytes). */
static void put_fit(const char *s, size_t width) {
    size_t n = strlen(s);
    if (n <= width) fputs(s, stdout);
    else if (width > 3) printf("%.*s...", (int)(width - 3), s);
    else printf("%.*s", (int)width, s);
}

/* "hostA, hostB" for the HOSTS column. */
static void host_list(const run_info *info, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < info->n_files && len + 1 < cap; i++) {
        size_t h = host_len(info->files[i].name);
        if (h == 0) continue;
        int w = snprintf(buf + len, cap - len, "%s%.*s", len ? ", " : "", (int)h, info->files[i].name);
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
    char steps[64] = "-", dur[32] = "-", size[32], last[JP_ERROR_MSG_MAX + 8];
    if (info->loaded && info->n_steps > 0)
        snprintf(steps, sizeof steps, "%lld-%lld (%zu)", (long long)info->first_step, (long long)info->last_step,
                 info->n_steps);
    else if (info->loaded)
        snprintf(steps, sizeof steps, "0");
    if (info->loaded) human_ms(dur, sizeof dur, info->duration_ms);
    cli_human_size(size, sizeof size, info->bytes);
    if (info->loaded) host_list(info, last, sizeof last);
    else snprintf(last, sizeof last, "error: %s", info->error);
    put_fit(info->run->name, name_w);
    size_t used = strlen(info->run->name) < name_w ? strlen(info->run->name) : name_w;
    printf("%*s  %-18.18s %10s %10s  ", (int)(name_w - used), "", steps, dur, size);
    put_fit(last, TEXT_WIDTH - (name_w + 2 + 18 + 1 + 10 + 1 + 10 + 2));
    fputc('\n', stdout);
}

/* Detail lines under a run: where it is (relative to DIR) and each file with its size. */
static void text_details(const run_info *info, const char *dir) {
    size_t n = strlen(dir), w = 0;
    const char *where = info->run->path;
    if (strncmp(where, dir, n) == 0 && where[n] == '/') where += n + 1;
    printf("    in ");
    put_fit(where, TEXT_WIDTH - 7);
    fputc('\n', stdout);
    for (size_t i = 0; i < info->n_files; i++)
        if (strlen(info->files[i].name) > w) w = strlen(info->files[i].name);
    if (w > TEXT_WIDTH - 16) w = TEXT_WIDTH - 16; /* 4 indent + name + 2 + 10 size */
    for (size_t i = 0; i < info->n_files; i++) {
        char size[32];
        size_t len = strlen(info->files[i].name);
        cli_human_size(size, sizeof size, info->files[i].bytes);
        printf("    ");
        put_fit(info->files[i].name, w);
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

/* A JSON string by the library's one encoder (bytes that are not UTF-8, as file names may hold,
 * become U+FFFD). */
static void json_str(const char *s) { jp_json_fput_str(stdout, s, strlen(s)); }

static void json_run(const run_info *info) {
    fputs("{\"name\":", stdout);
    json_str(info->run->name);
    fputs(",\"path\":", stdout);
    json_str(info->run->path);
    fputs(",\"hosts\":[", stdout);
    for (size_t i = 0, k = 0; i < info->n_files; i++) {
        size_t h = host_len(info->files[i].name);
        if (h == 0) continue;
        char host[1024];
        snprintf(host, sizeof host, "%.*s", (int)h, info->files[i].name);
        fputs(k++ ? "," : "", stdout);
        json_str(host);
    }
    fputs("],\"files\":[", stdout);
    for (size_t i = 0; i < info->n_files; i++) {
        fputs(i ? ",{\"name\":" : "{\"name\":", stdout);
        json_str(info->files[i].name);
        printf(",\"bytes\":%llu}", (unsigned long long)info->files[i].bytes);
    }
    fputs("],\"steps\":", stdout);
    if (!info->loaded) fputs("null", stdout);
    else if (info->n_steps == 0) fputs("{\"count\":0,\"first\":null,\"last\":null}", stdout);
    else printf("{\"count\":%zu,\"first\":%lld,\"last\":%lld}", info->n_steps, (long long)info->first_step,
                (long long)info->last_step);
    if (info->loaded) printf(",\"duration_ms\":%.6f,\"error\":null}", info->duration_ms);
    else fputs(",\"duration_ms\":null,\"error\":", stdout), json_str(info->error), fputc('}', stdout);
}

static void print_json(const char *dir, const run_info *infos, size_t n) {
    printf("{\"schema_version\":%d,\"dir\":", JP_JSON_SCHEMA_VERSION);
    json_str(dir);
    fputs(",\"runs\":[\n", stdout);
    for (size_t i = 0; i < n; i++) {
        fputs("  ", stdout);
        json_run(&infos[i]);
        fputs(i + 1 < n ? ",\n" : "\n", stdout);
    }
    fputs("]}\n", stdout);
}

/* ---- commands --------------------------------------------------------------------------------- */

/* Finds the runs under dir; prints the error and returns the exit code when there are none. */
static int find_runs(jp_runs *runs, const char *dir) {
    jp_error err;
    if (jp_runs_find(runs, dir, &err) != JP_OK) {
        fprintf(stderr, "jaxprof: %s\n", err.msg);
        return EXIT_USAGE;
    }
    if (runs->count == 0) {
        fprintf(stderr, "jaxprof: no profile (*.xplane.pb) under %s\n", dir);
        jp_runs_deinit(runs);
        return 1;
    }
    return 0;
}

int cmd_list(int argc, char **argv) {
    const char *dir = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (argv[i][0] != '-' && !dir) dir = argv[i];
        else return fprintf(stderr, "jaxprof: list: bad option '%s' (see jaxprof list --help)\n", argv[i]), EXIT_USAGE;
    }
    dir = dir ? dir : ".";
    jp_runs runs;
    int rc = find_runs(&runs, dir);
    if (rc != 0) return rc;
    run_info *infos = calloc(runs.count, sizeof *infos);
    for (size_t i = 0; infos && i < runs.count; i++) {
        infos[i].run = &runs.runs[i];
        if (collect_files(&infos[i]) != 0) snprintf(infos[i].error, sizeof infos[i].error, "cannot read directory");
        else load_steps(&infos[i]);
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
        if (n_exact ? run_matches(&runs->runs[i], want) : strstr(runs->runs[i].name, want) != NULL)
            fprintf(stderr, "  %s\n", runs->runs[i].path);
    return NULL;
}

static void print_path(void *ctx, const char *path) {
    (void)ctx;
    printf("%s\n", path);
}

int cmd_extract(int argc, char **argv) {
    const char *dir = NULL, *out = NULL, *want = NULL;
    for (int i = 1; i < argc; i++) {
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--out") == 0) && next) out = next, i++;
        else if (strcmp(argv[i], "--run") == 0 && next) want = next, i++;
        else if (argv[i][0] != '-' && !dir) dir = argv[i];
        else return fprintf(stderr, "jaxprof: extract: bad option '%s' (see jaxprof extract --help)\n", argv[i]), EXIT_USAGE;
    }
    dir = dir ? dir : ".";
    jp_runs runs;
    int rc = find_runs(&runs, dir);
    if (rc != 0) return rc;
    const jp_run *run = want ? pick_run(&runs, want, dir) : jp_runs_latest_view(&runs);
    jp_error err;
    if (!run) {
        rc = EXIT_USAGE;
    } else if (jp_runs_extract(run->path, out, print_path, NULL, &err) != JP_OK) {
        fprintf(stderr, "jaxprof: %s\n", err.msg);
        rc = EXIT_USAGE;
    }
    jp_runs_deinit(&runs);
    return rc;
}
