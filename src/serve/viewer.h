/* viewer.h - the built-in viewer's JSON API over jp_http: runs under a log directory, their
 * analyses, a level-of-detail timeline and the diff of two runs, each run decoded once and cached
 * (internal). */
#ifndef JP_OUTPUTS_VIEWER_H
#define JP_OUTPUTS_VIEWER_H

#include "jaxprof/jaxprof.h"

/* The API's state: the log directory, the runs found there and a small LRU cache of decoded runs.
 * Not thread-safe: one jp_http server thread calls jp_viewer_handle. */
typedef struct jp_viewer jp_viewer;

/* Lists the runs under log_dir (copied); JP_ERR_IO when it cannot be read. */
int jp_viewer_new(jp_viewer **out, const char *log_dir, jp_error *err);
void jp_viewer_free(jp_viewer *v);
/* The CPU calibration file runs are analysed with (jp_load_options.cpu_peaks_file; copied; NULL
 * for none). JP_ERR_NOMEM when the copy fails. */
int jp_viewer_set_cpu_peaks_file(jp_viewer *v, const char *path);

/* Answers one request of the API (a jp_http_handler body; v is the viewer):
 *   /                              {"api": [the endpoints]}
 *   /api/runs                      [{id, then jp_run_write_json's members: name, path, hosts (names),
 *                                  bytes, mtime_ms}] (path relative to log_dir)
 *   /api/run/<id>/<section>        jp_render(section, JSON); section: overview (= report), ops, steps,
 *                                  scopes, transfers, kernels, memory, compiles, findings
 *   /api/run/<id>/timeline         ?start_ms=&end_ms=&px=: jp_timeline_window
 *   /api/run/<id>/timeline/aggregate ?start_us=&end_us=[&tracks=3,5,8-12]: jp_timeline_aggregate
 *   /api/run/<id>/event            ?track=&index=: jp_timeline_event
 *   /api/diff                      ?base=<id>&new=<id>: jp_diff_render(JSON) of jp_diff_new over both
 *                                  cached analyses (the same id twice is allowed); the last answer
 *                                  is kept, as bytes, and sent again when asked the same
 * Every run endpoint and the diff take ?host=NAME (as jp_load_options.host). Ids are the hex of a
 * run's path relative to log_dir and only name runs jp_runs_find listed. Errors are {"error": "..."}
 * with 400, 404 or 500. Responses about a run carry "X-Jaxprof-Cache: hit" or "miss" (the diff: hit
 * when it is the kept answer). */
int jp_viewer_handle(jp_viewer *v, const jp_http_request *req, jp_http_response *resp);

#endif
