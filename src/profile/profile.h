/* profile.h - the loading pipeline's internal entry points: the host files a profile path names,
 * opening them, and analysing XSpaces already open (internal; jp_profile_load is public). Outputs
 * that read a profile's files themselves (export, the timeline) include this, not the analyses or
 * the model. */
#ifndef JP_PROFILE_PROFILE_H
#define JP_PROFILE_PROFILE_H

#include "base/arena.h"
#include "base/vec.h"
#include "decode/xspace.h"

/* One host file a profile path names. */
typedef struct jp_profile_file {
    char *path;    /* heap */
    int listed;    /* found by listing a directory (not named by the caller): id is what was seen */
    jp_file_id id; /* device and inode the listing saw (listed files only) */
} jp_profile_file;

/* The host files a profile path names (a file, a run directory, or a log directory's newest run),
 * sorted by name, as jp_profile_file; jp_profile_files_free releases them. */
int jp_profile_files(const char *path, jp_vec *files, jp_error *err);
void jp_profile_files_free(jp_vec *files);
/* The run directory of a directory path whose files (jp_profile_files) are files: their directory;
 * where there are none, the newest run under path (a run of host summaries alone: path itself or
 * below it), else path. Heap; NULL when out of memory. */
char *jp_profile_run_dir(const char *path, const jp_vec *files);
/* Opens one of them (lazy: as jp_xspace_open_lazy; max_inflate as jp_load_options.max_inflate); a
 * listed file must still be what the listing saw (jp_xspace_open_listed). */
int jp_profile_file_open(const jp_profile_file *f, int lazy, uint64_t max_inflate, jp_xspace **out, jp_error *err);
/* Host name of an xplane file (base name without .xplane.pb[.gz]), copied into a; NULL when out of
 * memory. */
const char *jp_profile_host_of(jp_arena *a, const char *file);
/* Analyses XSpaces the caller already opened, xs[i] read from files[i] (one per host; the file
 * names the host and prefixes errors). The XSpaces stay open. */
int jp_profile_from_xspaces(jp_profile **out, jp_xspace *const *xs, const char *const *files, size_t n,
                            const char *path, const jp_load_options *opt, jp_error *err);

/* A profile for an analysis filled by its caller (pod.c): empty, on a fresh arena; NULL when out
 * of memory. */
jp_profile *jp_profile_empty(void);
jp_arena *jp_profile_arena(jp_profile *p);
jp_analysis *jp_profile_results(jp_profile *p);
/* Frees child, keeping what its arena holds (its analysis's strings and rows) alive in p's. */
void jp_profile_adopt(jp_profile *p, jp_profile *child);

/* A run directory whose hosts have summaries, read from those (jp_load_options.use_summaries):
 * *out, or *out NULL when path names no run with a summary (the caller reads the files). */
int jp_pod_load(jp_profile **out, const char *path, const jp_load_options *opt, jp_error *err);
/* The analysis of hosts side by side from their summaries alone (s[i] as jp_summary_read made
 * them; the merge moves their steps and ops' devices), path naming it. */
struct jp_host_summary;
int jp_pod_from_summaries(jp_profile **out, struct jp_host_summary *s, size_t n, const char *path, jp_error *err);
/* How many hosts of the run directory are only a summary, with no capture file beside it (0 also
 * when it cannot be listed): the hosts a read of the files alone would miss. */
size_t jp_pod_summary_only(const char *run_dir);

#endif
