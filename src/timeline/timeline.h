/* timeline.h - a per-run index of every event by track and nesting depth, and of every flow by
 * time, answering time-window queries at a given pixel resolution with short events merged
 * (internal; used by viewer.c). */
#ifndef JP_TIMELINE_TIMELINE_H
#define JP_TIMELINE_TIMELINE_H

#include <stdio.h>

#include "jaxprof/jaxprof.h"

/* An index over the events of a profile's xplanes, which it keeps open. Not thread-safe
 * (jp_timeline_event may inflate compressed stats into the xplane's arena and decodes HLO). */
typedef struct jp_timeline jp_timeline;

/* Decodes the host files of path (a run directory, as jp_profile_load; host filters like
 * jp_load_options.host, NULL keeps all) and indexes every event. The track layout is the trace
 * exporter's: a process per plane (devices, then /host:CPU, then the rest), a thread per line,
 * partial overlaps moved to extra "(overlap N)" threads, and the derived rows it adds (Steps on
 * the devices, or on /host:CPU when there is none; XLA Ops and XLA Modules on a GPU whose plane
 * has no derived line). Times are the exporter's too, and so are flows (jp_layout_event_flows): a
 * CUDA launch to its kernel or copy, an XLA:CPU async op to its "end:" event; only flows whose
 * both ends are indexed are kept, the first event seen at each end standing for it. a is the
 * analysis of the same files (steps, hosts' clock offsets), borrowed for the call only; NULL
 * analyses them here. max_inflate as jp_load_options.max_inflate (0: the default limits). */
int jp_timeline_new(jp_timeline **out, const char *path, const char *host, uint64_t max_inflate, const jp_analysis *a,
                    jp_error *err);
void jp_timeline_free(jp_timeline *tl);

/* Events indexed (equal to the exporter's events_out + derived + jp_timeline_analysis_count when
 * nothing is cut). */
uint64_t jp_timeline_event_count(const jp_timeline *tl);
/* Of those, the events of the viewer's analysis rows, which the exporter does not write: per
 * device, "Exposed communication" (jp_analysis.comm_exposed) and "Launch delay" (each launch
 * call's start to its work's start, from the correlation flows: at most 8 rows of one launch a
 * slice, the launches of a deeper queue merged into a ninth whose slices count them). */
uint64_t jp_timeline_analysis_count(const jp_timeline *tl);
/* Number of tracks (threads). */
size_t jp_timeline_track_count(const jp_timeline *tl);
/* The latest event end in trace time (ns), 0 for an empty profile. */
int64_t jp_timeline_end_ns(const jp_timeline *tl);

typedef struct jp_timeline_query {
    int64_t start_ns;  /* window start, trace time (0: the capture's start) */
    int64_t end_ns;    /* window end (exclusive); <= start_ns selects nothing */
    uint32_t px;       /* window width in pixels: events shorter than (end-start)/px merge */
    size_t cap;        /* most entries in the answer; 0 means 20000 */
    const char *host;  /* answer only the tracks of hosts whose name contains this; NULL or "": all */
} jp_timeline_query;

/* Writes the JSON answer for one window to out:
 * {"start_ms","end_ms","px_ns","hosts":[every host indexed],"tracks":[{"id","host","process",
 * "thread","kind","levels","events":[[start_us,dur_us,name_index,depth,index]...]}],"names":[...],
 * "flows":[[from_track,from_index,from_depth,from_us,to_track,to_index,to_depth,to_us]...],
 * "flows_truncated","total_events","returned_events","aggregated","entries","truncated",
 * "analysis_events"}: analysis_events is jp_timeline_analysis_count (the whole profile's);
 * index is the event's number on its track for jp_timeline_event; kind is "source", "steps",
 * "xla_ops", "xla_modules", "exposed_comm" or "launch_delay"; levels the track's depth over the whole profile. A merged run of
 * short events is [start_us,dur_us,-1,depth,count,busy_us,first_bucket,"density"] instead: busy_us
 * sums its events' durations, and density has one hex digit per bucket of px_ns from
 * first_bucket on (bucket k starts at start_ms + k * px_ns): 0 idle, else 1 + the busy
 * fraction * 15 rounded down, at most f. When the entries exceed cap at the asked resolution it
 * is coarsened until they fit. A flow is an arrow from the end of one event (from_us) to the start
 * of another (to_us); those departing or arriving inside the window are answered, at most 5000
 * (spread evenly over the window when there are more: flows_truncated). Tracks are in id order:
 * those with entries, and those only a flow touches (no events). Track ids do not depend on
 * q->host; a host filter matching no host is JP_ERR_NOT_FOUND. */
int jp_timeline_window(const jp_timeline *tl, const jp_timeline_query *q, FILE *out, jp_error *err);

/* A time range over some tracks, for jp_timeline_aggregate. */
typedef struct jp_timeline_range {
    int64_t start_ns;       /* range start, trace time */
    int64_t end_ns;         /* range end (exclusive); must be > start_ns */
    const uint32_t *tracks; /* the track ids to sum over; NULL: every track of the hosts picked */
    size_t n_tracks;        /* entries in tracks */
    const char *host;       /* with tracks NULL: as jp_timeline_query.host */
} jp_timeline_range;

/* Writes the exact totals of the slices in a range, by name, to out: {"start_us","end_us",
 * "tracks":[ids summed],"slices","total_ns","self_ns","in_range_ns","self_in_range_ns",
 * "rows":[{"name","count","total_ns","self_ns","in_range_ns","self_in_range_ns"}...],
 * "rows_truncated"}. A slice counts when it overlaps the range (an instant when it lies in it), as
 * Perfetto's area selection counts them: total and self are its whole wall and self time, however
 * little of it the range holds; in_range and self_in_range are the same clipped to the range, so
 * they add up to the time the range holds. Self time is a slice's duration minus its children's
 * (the next depth of its track, inside it). Every event is read, none merged: the totals are
 * exact, in nanoseconds. Rows are by total_ns, at most 10000 (the overall totals still count every
 * slice). A track id out of range is JP_ERR_NOT_FOUND. */
int jp_timeline_aggregate(const jp_timeline *tl, const jp_timeline_range *r, FILE *out, jp_error *err);

/* Writes one event's details as JSON: {"track","index","process","thread","name","start_us",
 * "dur_us","self_us","depth","args":{...},"flows":[{"dir":"out"|"in","track","index","us","name",
 * "thread"}...],"hlo":{...}|null}: args are its metadata's and its own stats (a derived event's:
 * what the exporter writes, and a step's breakdown); flows the arrows leaving or reaching it,
 * with the event at their other end; hlo the HLO instruction its hlo_module / hlo_op stats name,
 * when the profile's metadata plane holds that module: {"module","program_id","name","opcode",
 * "category","op_name","scope","source","function","stack":[{"file","line","function","library"}],
 * "flops","bytes","transcendentals"} (stack innermost frame first; per execution). JP_ERR_NOT_FOUND
 * for a track or index out of range. index counts the track's events in (depth, start) order. The
 * modules decoded are kept for the next call, hence tl is not const. */
int jp_timeline_event(jp_timeline *tl, size_t track, size_t index, FILE *out, jp_error *err);

#endif
