/* analyses.h - one function per analysis, each filling its part of a jp_analysis from the model
 * (internal). They run in this order; later ones read earlier results. */
#ifndef JP_ANALYSES_H
#define JP_ANALYSES_H

#include "decode/xspace.h"
#include "model/model.h"

/* Copies a model vector into the arena (the analysis outlives the model's heap vectors). */
void *jp_analysis_copy(jp_arena *a, const jp_vec *v, size_t elem);
/* Formats into the arena; NULL when out of memory. */
const char *jp_analysis_printf(jp_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Multi-host: each host alone, clock alignment (shifts m's hosts), stragglers. First of all. */
int jp_hosts_analyze(jp_model *m, jp_arena *arena, jp_analysis *a);
int jp_ops_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);       /* devices, ops */
int jp_lines_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);     /* source lines, flame */
int jp_steps_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);     /* steps + breakdown */
/* The step summary (mean, median, p90, std, min, max, parts, total) and the outlier marks of
 * a->steps, added onto a->step_summary (zero it first; its method is left as it is). */
void jp_steps_summarize(jp_analysis *a);
int jp_roofline_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);  /* after steps */
int jp_scopes_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);
int jp_compiles_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);
int jp_transfers_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);
int jp_kernels_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);
int jp_memory_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);
int jp_findings_analyze(const jp_model *m, jp_arena *arena, jp_analysis *a);  /* KPIs, findings */

/* One host file a profile path names. */
typedef struct jp_profile_file {
    char *path;    /* heap */
    int listed;    /* found by listing a directory (not named by the caller): id is what was seen */
    jp_file_id id;
} jp_profile_file;

/* The host files a profile path names (a file, a run directory, or a log directory's newest run),
 * sorted by name, as jp_profile_file; jp_profile_files_free releases them. */
int jp_profile_files(const char *path, jp_vec *files, jp_error *err);
void jp_profile_files_free(jp_vec *files);
/* Opens one of them (lazy: as jp_xspace_open_lazy); a listed file must still be what the listing
 * saw (jp_xspace_open_listed). */
int jp_profile_file_open(const jp_profile_file *f, int lazy, jp_xspace **out, jp_error *err);
/* Host name of an xplane file (base name without .xplane.pb[.gz]), copied into a. */
const char *jp_profile_host_of(jp_arena *a, const char *file);
/* Analyses XSpaces the caller already opened, xs[i] read from files[i] (one per host; the file
 * names the host and prefixes errors). The XSpaces stay open. */
int jp_profile_from_xspaces(jp_profile **out, jp_xspace *const *xs, const char *const *files, size_t n,
                            const char *path, const jp_load_options *opt, jp_error *err);

/* Index of the step containing t (start <= t < end), or -1. Steps are sorted by start. */
long jp_step_at(const jp_analysis *a, int64_t t);

#endif
