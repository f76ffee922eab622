/* summary_write.c - a one-host analysis as its summary (summary.h): in memory for a merge, or as
 * the versioned JSON document that `jaxprof summarize` writes. Times are integer picoseconds and
 * other numbers are written with 17 significant digits, so a read summary holds the very values the
 * analysis had and a merge from summaries equals the merge from the raw files. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/result_names.h"
#include "base/error.h"
#include "base/json.h"
#include "pod/summary.h"

typedef struct ranked {
    int64_t self_ps;
    size_t index;
} ranked;

static int by_self_desc(const void *x, const void *y) {
    const ranked *a = x, *b = y;
    if (a->self_ps != b->self_ps) return a->self_ps > b->self_ps ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

static int by_index(const void *x, const void *y) {
    const ranked *a = x, *b = y;
    return (a->index > b->index) - (a->index < b->index);
}

/* The host's top JP_SUMMARY_TOP_OPS op rows by self time, in the analysis's order. */
static jp_op_stat *top_ops(const jp_analysis *a, jp_arena *arena, size_t *n) {
    ranked *r = malloc((a->n_ops ? a->n_ops : 1) * sizeof *r);
    *n = a->n_ops < JP_SUMMARY_TOP_OPS ? a->n_ops : JP_SUMMARY_TOP_OPS;
    jp_op_stat *ops = jp_arena_alloc(arena, (*n ? *n : 1) * sizeof *ops);
    if (r && ops) {
        for (size_t i = 0; i < a->n_ops; i++) r[i] = (ranked){a->ops[i].self_ps, i};
        qsort(r, a->n_ops, sizeof *r, by_self_desc);
        qsort(r, *n, sizeof *r, by_index);
        for (size_t i = 0; i < *n; i++) ops[i] = a->ops[r[i].index];
    }
    free(r);
    return r ? ops : NULL;
}

int jp_summary_of(const jp_analysis *a, const char *file, uint64_t file_bytes, jp_arena *arena, jp_host_summary *out,
                  jp_error *err) {
    memset(out, 0, sizeof *out);
    if (a->n_hosts != 1 || a->step_window)
        return jp_error_set(err, JP_ERR_ARG, 0, "a summary is of one host's whole capture (this analysis has %zu hosts%s)",
                            a->n_hosts, a->step_window ? ", a step window" : "");
    jp_step *steps = jp_arena_alloc(arena, (a->n_steps ? a->n_steps : 1) * sizeof *steps);
    size_t n_ops;
    jp_op_stat *ops = top_ops(a, arena, &n_ops);
    if (!steps || !ops) return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory");
    if (a->n_steps) memcpy(steps, a->steps, a->n_steps * sizeof *steps); /* the merge shifts them */
    jp_analysis own = *a;
    own.steps = steps, own.ops = ops, own.n_ops = n_ops;
    out->in = jp_host_input_of(&own, a->hosts[0], a->host_start_ns ? a->host_start_ns[0] : 0);
    out->path = "";
    out->file = file;
    out->file_bytes = file_bytes;
    out->platform = a->platform;
    out->n_events = a->n_events;
    out->first_ps = a->first_ps, out->span_ps = a->span_ps;
    out->devices = a->devices, out->n_devices = a->n_devices;
    out->n_ops_total = a->n_ops;
    out->findings = a->findings, out->n_findings = a->n_findings;
    out->health = a->health, out->n_health = a->n_health;
    return JP_OK;
}

/* ---- JSON ------------------------------------------------------------------------------------- */

static void put_num(FILE *out, const char *key, double v) {
    if (isfinite(v)) fprintf(out, ",\"%s\":%.17g", key, v);
    else fprintf(out, ",\"%s\":null", key);
}

static void put_int(FILE *out, const char *key, int64_t v) { fprintf(out, ",\"%s\":%" PRId64, key, v); }

static void put_str(FILE *out, const char *key, const char *v) {
    fprintf(out, ",\"%s\":", key);
    jp_json_fput_cstr(out, v);
}

static void put_parts(FILE *out, const char *key, const int64_t *part_ps) {
    fprintf(out, ",\"%s\":{", key);
    for (int p = 0; p < JP_PART_COUNT; p++) fprintf(out, "%s\"%s\":%" PRId64, p ? "," : "", jp_part_name(p), part_ps[p]);
    fputc('}', out);
}

static void put_step(FILE *out, const jp_step *s) {
    fprintf(out, "{\"step\":%" PRId64, s->step_num);
    put_int(out, "start_ps", s->start_ps);
    put_int(out, "dur_ps", s->dur_ps);
    put_parts(out, "parts_ps", s->part_ps);
    put_int(out, "ops", (int64_t)s->n_ops);
    put_int(out, "compiles", s->n_compiles);
    put_num(out, "flops", s->flops);
    put_int(out, "outlier", s->outlier);
    put_int(out, "host_start_ps", s->host_start_ps);
    put_int(out, "host_dur_ps", s->host_dur_ps);
    put_int(out, "no_device_work", s->no_device_work);
    put_int(out, "gap_ps", s->gap_ps);
    put_num(out, "bytes", s->bytes);
    put_num(out, "roof_pct", s->roof_pct);
    put_int(out, "comm_hidden_ps", s->comm_hidden_ps);
    put_int(out, "comm_exposed_ps", s->comm_exposed_ps);
    if (s->sync_ps == INT64_MIN) fputs(",\"sync_ps\":null}", out);
    else fprintf(out, ",\"sync_ps\":%" PRId64 "}", s->sync_ps);
}

static void put_step_summary(FILE *out, const jp_step_summary *s) {
    fputs(",\"step_summary\":{\"method\":", out);
    jp_json_fput_cstr(out, s->method ? s->method : "none");
    put_num(out, "mean_ps", s->mean_ps);
    put_num(out, "median_ps", s->median_ps);
    put_num(out, "p90_ps", s->p90_ps);
    put_num(out, "std_ps", s->std_ps);
    put_num(out, "min_ps", s->min_ps);
    put_num(out, "max_ps", s->max_ps);
    put_parts(out, "parts_ps", s->part_ps);
    put_int(out, "total_ps", s->total_ps);
    put_int(out, "no_device_steps", (int64_t)s->n_no_device);
    put_int(out, "gap_ps", s->gap_ps);
    put_parts(out, "part_median_ps", s->part_median_ps);
    fputc('}', out);
}

static void put_device(FILE *out, const jp_device *d) {
    fputs("{\"name\":", out);
    jp_json_fput_cstr(out, d->name);
    put_str(out, "platform", jp_platform_name(d->platform));
    put_int(out, "busy_ps", d->busy_ps);
    put_int(out, "first_ps", d->first_ps);
    put_int(out, "last_ps", d->last_ps);
    put_int(out, "ops", (int64_t)d->n_ops);
    put_num(out, "peak_flops", d->peak_flops);
    put_num(out, "peak_bw", d->peak_bw);
    put_str(out, "peak_source", d->peak_source ? d->peak_source : "");
    put_num(out, "bytes_accessed", d->bytes_accessed);
    put_int(out, "idle_host_ps", d->idle_host_ps);
    put_int(out, "idle_kernel_ps", d->idle_kernel_ps);
    put_int(out, "idle_other_ps", d->idle_other_ps);
    put_int(out, "launched", (int64_t)d->n_launched);
    put_int(out, "short", (int64_t)d->n_short);
    put_int(out, "queue_max", d->queue_max);
    put_num(out, "queue_mean", d->queue_mean);
    put_int(out, "comm_ps", d->comm_ps);
    put_int(out, "comm_hidden_ps", d->comm_hidden_ps);
    put_num(out, "comm_overlap_pct", d->comm_overlap_pct);
    put_int(out, "comm_wait_ps", d->comm_wait_ps);
    fputc('}', out);
}

static void put_op(FILE *out, const jp_op_stat *o) {
    fputs("{\"name\":", out);
    jp_json_fput_cstr(out, o->name);
    put_str(out, "module", o->module);
    put_str(out, "category", o->category);
    put_str(out, "op_name", o->op_name);
    put_str(out, "scope", o->scope);
    put_str(out, "source", o->source);
    put_str(out, "function", o->function);
    put_str(out, "dtype", o->dtype ? o->dtype : "");
    put_int(out, "device", o->device);
    put_int(out, "devices", o->n_devices);
    put_int(out, "count", (int64_t)o->count);
    put_int(out, "total_ps", o->total_ps);
    put_int(out, "self_ps", o->self_ps);
    put_int(out, "min_ps", o->min_ps);
    put_int(out, "max_ps", o->max_ps);
    put_num(out, "flops", o->flops);
    put_num(out, "bytes", o->bytes);
    put_num(out, "hlo_flops", o->hlo_flops);
    put_num(out, "xla_flops", o->xla_flops);
    put_num(out, "transcendentals", o->transcendentals);
    put_num(out, "self_sumsq", o->self_sumsq);
    put_num(out, "step_sd_ps", o->step_sd_ps);
    put_int(out, "bound", o->bound);
    put_num(out, "roof_pct", o->roof_pct);
    put_int(out, "program_id", o->program_id);
    put_int(out, "no_xla_op", o->no_xla_op);
    put_int(out, "autotuning", o->autotuning);
    put_int(out, "no_rate", o->no_rate);
    put_int(out, "remat", o->remat);
    put_int(out, "wasted_ps", o->wasted_ps);
    fputs(",\"stack\":[", out); /* [file, line, function, library], innermost first */
    for (uint32_t i = 0; i < o->n_stack; i++) {
        const jp_source_frame *f = &o->stack[i];
        fputs(i ? ",[" : "[", out);
        jp_json_fput_cstr(out, f->file);
        fprintf(out, ",%u,", f->line);
        jp_json_fput_cstr(out, f->function);
        fprintf(out, ",%d]", f->library != 0);
    }
    fputs("]}", out);
}

static void put_finding(FILE *out, const jp_finding *f) {
    fputs("{\"id\":", out);
    jp_json_fput_cstr(out, f->id);
    put_str(out, "severity", jp_rating_name(f->severity));
    put_str(out, "title", f->title);
    put_str(out, "evidence", f->evidence);
    put_str(out, "fix", f->fix);
    fputc('}', out);
}

static void put_health(FILE *out, const jp_health *h) {
    fputs("{\"kind\":", out);
    jp_json_fput_cstr(out, h->kind);
    put_str(out, "host", h->host);
    put_str(out, "text", h->text);
    fputc('}', out);
}

#define PUT_ARRAY(out, key, items, n, put)                                                                  \
    do {                                                                                                   \
        fprintf(out, ",\n\"%s\":[", key);                                                                  \
        for (size_t i_ = 0; i_ < (n); i_++) fputs(i_ ? ",\n" : "\n", out), put(out, &(items)[i_]);         \
        fputc(']', out);                                                                                   \
    } while (0)

int jp_summary_write(const jp_analysis *a, const char *file, uint64_t file_bytes, FILE *out, jp_error *err) {
    jp_arena arena;
    jp_arena_init(&arena, 0);
    jp_host_summary s;
    int rc = jp_summary_of(a, file, file_bytes, &arena, &s, err);
    if (rc == JP_OK) {
        fprintf(out, "{\"jaxprof_host_summary\":%d,\"jaxprof_version\":\"%s\"", JP_SUMMARY_VERSION, JP_VERSION);
        put_str(out, "host", s.in.name);
        put_str(out, "file", s.file);
        put_int(out, "file_bytes", (int64_t)s.file_bytes);
        put_int(out, "capture_start_ns", s.in.start_ns);
        put_str(out, "platform", jp_platform_name(s.platform));
        put_int(out, "events", (int64_t)s.n_events);
        put_int(out, "first_ps", s.first_ps);
        put_int(out, "span_ps", s.span_ps);
        put_int(out, "op_self_ps", s.in.op_self_ps);
        put_int(out, "ops_total", (int64_t)s.n_ops_total);
        put_step_summary(out, &s.in.step_summary);
        PUT_ARRAY(out, "devices", s.devices, s.n_devices, put_device);
        PUT_ARRAY(out, "steps", s.in.steps, s.in.n_steps, put_step);
        PUT_ARRAY(out, "ops", s.in.ops, s.in.n_ops, put_op);
        PUT_ARRAY(out, "findings", s.findings, s.n_findings, put_finding);
        PUT_ARRAY(out, "capture_health", s.health, s.n_health, put_health);
        fputs("}\n", out);
        if (fflush(out) != 0 || ferror(out)) rc = jp_error_set(err, JP_ERR_IO, 0, "writing the summary failed");
    }
    jp_arena_deinit(&arena);
    return rc;
}
