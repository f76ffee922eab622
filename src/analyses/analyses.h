/* analyses.h - one function per analysis, each filling its part of a jp_analysis from the model
 * (internal). They run in this order; later ones read earlier results. */
#ifndef JP_ANALYSES_H
#define JP_ANALYSES_H

#include "base/interval.h"
#include "model/model.h"

/* Copies a model vector into the arena (the analysis outlives the model's heap vectors). */
void *jp_analysis_copy(jp_arena *a, const jp_vec *v, size_t elem);
/* Frame f and its callers as an array, innermost first, into the arena (at most JP_HLO_MAX_STACK;
 * *stack and *n_stack untouched when f is NULL). JP_ERR_NOMEM or JP_OK. */
int jp_analysis_stack(jp_arena *a, const jp_hlo_frame *f, const jp_source_frame **stack, uint32_t *n_stack);
/* Formats into the arena; NULL when out of memory. */
const char *jp_analysis_printf(jp_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Multi-host: each host alone (up to `threads` hosts at once, the results the same), clock
 * alignment (shifts m's hosts), stragglers. First of all. */
int jp_hosts_analyze(jp_model *m, jp_arena *arena, jp_analysis *a, size_t threads);

/* One host as the cross-host analysis reads it: what its analysis alone found, on its own clock.
 * Built from the model (jp_hosts_analyze) or read from the host's summary (pod/summary.h): both
 * feed jp_hosts_merge, so a merge from summaries equals the merge from the raw files. */
typedef struct jp_host_input {
    const char *name;
    int64_t start_ns;              /* capture start on its wall clock, 0 unknown */
    jp_step *steps;                /* its steps (with sync_ps); shifted onto the shared axis by the merge */
    size_t n_steps;
    jp_step_summary step_summary;
    jp_op_stat *ops;               /* its op rows (a summary keeps the top ones by self time) */
    size_t n_ops;
    int64_t op_self_ps;            /* every op's self time, kept ones or not */
} jp_host_input;

/* The input of a host's analysis alone (ops and steps filled). */
jp_host_input jp_host_input_of(const jp_analysis *alone, const char *name, int64_t start_ns);
/* Aligns the hosts' clocks and finds the stragglers: a->host_stats (pointing into in's steps and
 * ops, shifted), a->clock_method, a->stragglers. A run's files call it with 2 hosts or more; a
 * pod's summaries with 1 too (one host kept by --host), which gets its row and no alignment. */
int jp_hosts_merge(jp_host_input *in, size_t n, jp_arena *arena, jp_analysis *a);
int jp_ops_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);       /* devices, ops */
int jp_lines_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);     /* source lines, flame */
int jp_steps_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);     /* steps + breakdown */
/* The step summary (mean, median, p90, std, min, max, parts, total) and the outlier marks of
 * a->steps, added onto a->step_summary (zero it first; its method is left as it is). */
void jp_steps_summarize(jp_analysis *a);
/* Each op's spread of self time per step (jp_op_stat.step_sd_ps), for the diff's noise: after steps. */
int jp_ops_spread_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);
int jp_roofline_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);  /* after steps */
/* 1 for an asynchronous start half ("copy-start.4"), 2 for a done half ("all-gather-done"), else 0. */
int jp_op_async_half(const char *name);
int jp_scopes_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);
int jp_compiles_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);
int jp_transfers_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);
int jp_kernels_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);
int jp_memory_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);
/* Memory at the peak of every module with a buffer assignment (a->modules), largest peak first. */
int jp_buffers_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);
/* One module's memory at the peak from its buffer assignment (memory colour 0, as XProf's memory
 * viewer): every field of *out but name, host and runs. JP_ERR_NOMEM or JP_OK. */
int jp_buffers_module(const jp_hlo_memory *mem, jp_arena *arena, jp_module_memory *out);
/* What the capture lacks (a->health): XSpace errors and warnings, empty device planes, modules
 * without HLO. After ops (reads a->devices), before findings. */
int jp_health_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);
/* Launch statistics per (device, kernel) and each device's idle causes and launch queue: before findings. */
int jp_launch_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);
/* Collectives: hidden/exposed per op, device and step, bus bandwidth, waits (a->comms). After steps. */
int jp_comm_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);
int jp_findings_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);  /* KPIs, findings */
/* The findings of the hosts side by side alone (a pod merged from summaries: host_stats and
 * stragglers filled, no model): a->findings anew, holding the straggler finding when there is one,
 * with room for JP_FINDINGS_MAX in all. step_total: the summed step time the waits are a share of. */
int jp_findings_hosts_analyze(jp_arena *arena, jp_analysis *a, double step_total);
enum { JP_FINDINGS_MAX = 32 }; /* the room a->findings has */

/* Index of the step containing t (start <= t < end), or -1. Steps are sorted by start. */
long jp_step_at(const jp_analysis *a, int64_t t);
/* jp_step_at(a, t) where `hint` is the step of an earlier, nearby t (or -1): events walked in time
 * order mostly stay in the hint's step, and then no search is made. */
long jp_step_at_hint(const jp_analysis *a, long hint, int64_t t);
/* The step a host event at t belongs to: the step whose marker (or dispatch) holds t, as the host
 * was then doing that step's work even when the step's device-ended span began later (the host
 * runs ahead of an asynchronous device); else the step whose span holds t (jp_step_at); else -1. */
long jp_step_issued_at(const jp_analysis *a, int64_t t);
/* jp_step_issued_at for times walked in order: *hint (0 at first) carries where the last one was
 * found, so that a host thread's events in time order cost a comparison or two each. */
long jp_step_issued_at_from(const jp_analysis *a, int64_t t, size_t *hint);

#endif
