/* runs.c - a run as `jaxprof list`, the viewer's /api/runs and Python describe it: its summary
 * (files, steps, span) and the one JSON schema they share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/arena.h"
#include "jaxprof/jaxprof_results.h"
#include "base/error.h"
#include "base/json.h"
#include "find/runs.h"

/* The run's files while they are listed: a heap array, copied into the summary's arena. */
typedef struct file_list {
    jp_run_summary *s; /* names go to its arena */
    jp_run_file *items;
    size_t count, cap;
} file_list;

static int add_run_file(void *ctx, const char *name, const struct stat *st) {
    file_list *l = ctx;
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        jp_run_file *items = realloc(l->items, cap * sizeof *items);
        if (!items) return JP_ERR_NOMEM;
        l->items = items, l->cap = cap;
    }
    const char *copy = jp_arena_strndup(&l->s->arena, name, strlen(name));
    if (!copy) return JP_ERR_NOMEM;
    l->items[l->count++] = (jp_run_file){copy, (uint64_t)st->st_size};
    return JP_OK;
}

static int by_file_name(const void *a, const void *b) {
    return strcmp(((const jp_run_file *)a)->name, ((const jp_run_file *)b)->name);
}

/* Every regular file of the run, sorted by name, into s->files. */
static int list_files(jp_run_summary *s, const char *dir, jp_error *err) {
    file_list l = {s, NULL, 0, 0};
    int rc = jp_run_dir_each(dir, add_run_file, &l, err);
    if (rc == JP_OK && l.count) {
        qsort(l.items, l.count, sizeof *l.items, by_file_name);
        s->files = jp_arena_alloc(&s->arena, l.count * sizeof *s->files);
        if (!s->files) rc = JP_ERR_NOMEM;
    }
    for (size_t i = 0; rc == JP_OK && i < l.count; i++) s->files[i] = l.items[i], s->bytes += l.items[i].bytes;
    if (rc == JP_OK) s->n_files = l.count;
    free(l.items);
    return rc;
}

/* The steps of a run merged from summaries (no steps of its own): the first and last step number
 * over the hosts, and the most steps a host has. */
static void host_steps(jp_run_summary *s, const jp_analysis *a) {
    for (size_t h = 0; h < a->n_host_stats; h++) {
        const jp_host_stat *hs = &a->host_stats[h];
        if (!hs->n_steps) continue;
        int64_t first = hs->steps[0].step_num, last = hs->steps[hs->n_steps - 1].step_num;
        if (!s->n_steps || first < s->first_step) s->first_step = first;
        if (!s->n_steps || last > s->last_step) s->last_step = last;
        if (hs->n_steps > s->n_steps) s->n_steps = hs->n_steps;
    }
}

/* Loads the run for its steps and span (a run of summaries alone from them); a failure is kept as
 * text, its file names relative to the run (the run is named beside it). */
static void load_steps(jp_run_summary *s, const jp_run *run, const jp_load_options *opt) {
    jp_profile *p;
    jp_error err;
    jp_load_options pod = opt ? *opt : (jp_load_options){0};
    pod.use_summaries = !run->n_files;
    if (jp_profile_load(&p, run->path, &pod, &err) != JP_OK) {
        size_t n = strlen(run->path);
        const char *msg = strncmp(err.msg, run->path, n) == 0 && err.msg[n] == '/' ? err.msg + n + 1 : err.msg;
        snprintf(s->error, sizeof s->error, "%s", msg);
        return;
    }
    const jp_analysis *a = jp_profile_analysis(p);
    s->loaded = 1;
    s->n_steps = a->n_steps;
    if (a->n_steps > 0) {
        s->first_step = a->steps[0].step_num;
        s->last_step = a->steps[a->n_steps - 1].step_num;
    } else if (a->n_summarized) {
        host_steps(s, a);
    }
    s->duration_ms = (double)a->span_ps / 1e9;
    jp_profile_free(p);
}

int jp_run_summarize(jp_run_summary *out, const jp_run *run, const struct jp_load_options *opt, jp_error *err) {
    jp_error_clear(err);
    memset(out, 0, sizeof *out);
    jp_arena_init(&out->arena, 0);
    jp_error listing;
    int rc = list_files(out, run->path, &listing);
    if (rc == JP_ERR_NOMEM) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory listing %s", run->path);
    if (rc != JP_OK) snprintf(out->error, sizeof out->error, "cannot read directory");
    else load_steps(out, run, opt);
    return JP_OK;
}

void jp_run_summary_deinit(jp_run_summary *s) {
    jp_arena_deinit(&s->arena);
    s->files = NULL;
    s->n_files = 0;
}

/* The summary's members: files, steps, duration_ms, error. */
static void write_summary(FILE *out, const jp_run_summary *s) {
    fputs(",\"files\":[", out);
    for (size_t i = 0; i < s->n_files; i++) {
        fputs(i ? ",{\"name\":" : "{\"name\":", out);
        jp_json_fput_cstr(out, s->files[i].name);
        fprintf(out, ",\"bytes\":%llu}", (unsigned long long)s->files[i].bytes);
    }
    fputs("],\"steps\":", out);
    if (!s->loaded) fputs("null", out);
    else if (s->n_steps == 0) fputs("{\"count\":0,\"first\":null,\"last\":null}", out);
    else fprintf(out, "{\"count\":%zu,\"first\":%lld,\"last\":%lld}", s->n_steps, (long long)s->first_step,
                 (long long)s->last_step);
    if (s->loaded) fprintf(out, ",\"duration_ms\":%.6f,\"error\":null", s->duration_ms);
    else fputs(",\"duration_ms\":null,\"error\":", out), jp_json_fput_cstr(out, s->error);
}

void jp_run_write_json(FILE *out, const jp_run *run, const char *path, const jp_run_summary *summary) {
    fputs("\"name\":", out);
    jp_json_fput_cstr(out, run->name);
    fputs(",\"path\":", out);
    jp_json_fput_cstr(out, path);
    fputs(",\"hosts\":[", out);
    for (uint32_t i = 0; i < run->n_files; i++) {
        if (i) fputc(',', out);
        jp_json_fput_cstr(out, run->hosts[i]);
    }
    fputs("],\"summarized_hosts\":[", out); /* hosts here only as a summary (a pod's run on process 0) */
    for (uint32_t i = 0; i < run->n_summarized; i++) {
        if (i) fputc(',', out);
        jp_json_fput_cstr(out, run->summarized[i]);
    }
    fprintf(out, "],\"bytes\":%llu,\"mtime_ms\":%lld", (unsigned long long)run->bytes, (long long)(run->mtime_ns / 1000000));
    if (summary) write_summary(out, summary);
}
