/* timeline_int.h - the layout of the viewer's timeline index, shared by its builder (timeline.c),
 * its window and range queries (timeline_query.c) and its event details (timeline_event.c)
 * (internal to timeline/). */
#ifndef JP_TIMELINE_TIMELINE_INT_H
#define JP_TIMELINE_TIMELINE_INT_H

#include <regex.h>

#include "base/vec.h"
#include "decode/hlo.h"
#include "timeline/layout.h"
#include "timeline/timeline.h"

enum {
    TL_NAME_MAX_LEN = 200 /* bytes of a line or plane name kept in a track name */
};

/* The events of one depth of one track: disjoint and sorted by start, hence sorted by end too. */
typedef struct tl_level {
    int64_t *start_ns;     /* start in trace time */
    int64_t *dur_ns;       /* duration; 0 for instants */
    int64_t *busy_before;  /* n + 1 entries: busy_before[i] sums dur_ns[0..i), for busy time in O(log n) */
    uint32_t *name;        /* index into jp_timeline.names */
    uint32_t *src;         /* index into the line's events, or into the derived row's records */
    size_t n;              /* events at this depth */
    size_t first;          /* track-wide index of the first of them (depth-major numbering) */
} tl_level;

/* One thread of the layout: a line, one of its overlap lanes, or a derived row. */
typedef struct tl_track {
    const char *process;   /* plane name; "host: plane" when there are several hosts */
    const char *thread;    /* line name, with " (overlap N)" for lanes past the first */
    jp_xspace *xs;         /* the xplane its events come from */
    const jp_plane *plane; /* their plane, for metadata and stats */
    const jp_line *line;   /* their line; NULL for a derived row */
    const jp_layout_record *recs; /* a derived row's records (arena; a step's copied too), else NULL */
    int kind;              /* jp_layout_row_kind: a line (or one of its overlap lanes) or a derived row */
    uint32_t host;         /* index into jp_timeline.hosts */
    tl_level *levels;      /* by depth, 0 outermost */
    uint32_t n_levels;     /* depths used */
    size_t n_events;       /* over all levels */
} tl_track;

/* A flow whose both ends were indexed: an arrow from the end of one event to the start of another. */
typedef struct tl_flow {
    int64_t from_ns, to_ns;          /* where the arrow leaves (start event's end) and arrives (end event's start) */
    uint32_t from_track, from_index; /* the start event: track and track-wide index */
    uint32_t to_track, to_index;     /* the end event */
} tl_flow;

/* An HLO module decoded for the event details, on first need. */
typedef struct tl_hlo {
    const jp_xspace *xs;  /* the xplane whose metadata plane holds it */
    int64_t meta_id;      /* its event metadata on that plane */
    uint64_t program_id;  /* its program id (libtpu's are unsigned 64-bit hashes) */
    int has_program_id;   /* 0: the metadata names none */
    jp_hlo_module module; /* decoded into jp_timeline.hlo_arena */
} tl_hlo;

struct jp_timeline {
    jp_arena arena;        /* track names, levels, flows, records, host names, derived names */
    jp_intern intern;      /* derived row names, so equal names share one name index */
    jp_vec xs;             /* jp_xspace *: the open xplanes, one per host kept */
    jp_vec hosts;          /* const char *: host name of each xplane (in the arena) */
    tl_flow *flows;        /* complete flows sorted by from_ns */
    uint32_t *flows_by_to; /* indexes into flows, sorted by to_ns */
    size_t n_flows;        /* complete flows */
    jp_vec tracks;         /* tl_track, in the exporter's thread order */
    jp_vec names;          /* jp_str: one per (plane, event metadata) seen, then derived names */
    uint64_t n_events;     /* events indexed, derived ones included */
    uint64_t n_derived;    /* of those, events of derived rows */
    uint64_t n_analysis;   /* of those, events of the analysis rows (exposed communication, launch
                            * delay): the viewer's own, which the exporter does not write */
    int64_t end_ns;        /* latest event end in trace time, 0 when empty */
    int64_t base_ps;       /* profile time of the trace's time 0 */
    jp_arena hlo_arena;    /* HLO modules decoded for event details, and their strings */
    jp_intern hlo_intern;  /* their interned names */
    jp_vec hlo;            /* tl_hlo, decoded so far */
    regex_t library;       /* the default library-frame rule, compiled on first need */
    int have_library;      /* 1 once `library` is compiled */
};

/* Self time of event i of level d of t: its duration minus its children's (level d + 1 inside it). */
int64_t jp_timeline_self_ns(const tl_track *t, uint32_t d, size_t i);
/* The depth of a track's event, from its track-wide index (depth-major numbering). */
uint32_t jp_timeline_depth_of(const tl_track *t, size_t index);

#endif
