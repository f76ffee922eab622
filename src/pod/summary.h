/* summary.h - a host's summary: what the multi-host analyses need of one host's capture, written
 * beside its .xplane.pb by `jaxprof summarize` (or by each process of a jax.distributed job), so a
 * pod's hosts are merged from a few kB each instead of their raw files. The document is versioned
 * JSON (docs/summary-schema.md); reading validates every field and names the file and the field at
 * fault. Internal to libjaxprof. */
#ifndef JP_POD_SUMMARY_H
#define JP_POD_SUMMARY_H

#include <stdio.h>

#include "analyses/analyses.h"
#include "base/arena.h"

#define JP_SUMMARY_VERSION 1
#define JP_SUMMARY_SUFFIX ".jaxprof-summary.json" /* <host>.jaxprof-summary.json beside <host>.xplane.pb, as jp_summary_host_len reads it */
enum { JP_SUMMARY_TOP_OPS = 50 }; /* op rows kept: the host's top ones by self time */
enum { JP_SUMMARY_MAX_BYTES = 64 << 20 }; /* larger is not a summary */

typedef struct jp_host_summary {
    jp_host_input in;           /* what the merge reads; ops' device indexes devices below */
    const char *path;           /* where it was read from ("" when made in memory) */
    const char *file;           /* the capture file it summarises (base name) */
    uint64_t file_bytes;        /* that file's size when summarised */
    int platform;               /* jp_platform */
    uint64_t n_events;
    int64_t first_ps, span_ps;  /* its first event and first to last, on its own clock */
    jp_device *devices;         /* name, platform, busy and activity, peaks */
    size_t n_devices;
    size_t n_ops_total;         /* op rows of the host, kept or not */
    jp_finding *findings;
    size_t n_findings;
    jp_health *health;
    size_t n_health;
} jp_host_summary;

/* Writes the summary of a one-host analysis (the file as jp_profile_load read it) as JSON. JP_ERR_ARG
 * for an analysis of several hosts or a step window; JP_ERR_IO when the stream fails. */
int jp_summary_write(const jp_analysis *a, const char *file, uint64_t file_bytes, FILE *out, jp_error *err);
/* The summary of a one-host analysis in memory, as jp_summary_read would return it after a write
 * (the op rows cut to the top ones; strings and arrays still the analysis's). */
int jp_summary_of(const jp_analysis *a, const char *file, uint64_t file_bytes, jp_arena *arena, jp_host_summary *out,
                  jp_error *err);
/* Reads and validates a summary file into arena. JP_ERR_CORRUPT naming the file and the field (a
 * newer or older schema version says so), JP_ERR_IO when it cannot be read. */
int jp_summary_read(jp_arena *arena, const char *path, jp_host_summary *out, jp_error *err);
/* The same from len bytes of text (path names them in errors). */
int jp_summary_parse(jp_arena *arena, const char *text, size_t len, const char *path, jp_host_summary *out,
                     jp_error *err);


#endif
