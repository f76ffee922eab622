/* fuzz_xspace.c - fuzz target for the XSpace decoder: decode the bytes, then walk every plane,
 * line, event and stat through the public accessors so the lazy paths (stat iteration, references,
 * compressed stats) run too. */
#include <stddef.h>
#include <stdint.h>

#include "jaxprof/jaxprof_xspace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Iterates one message's stats, resolving every string-valued one. */
static void walk_stats(jp_xspace *xs, const jp_plane *plane, jp_stats_iter it) {
    jp_stat st;
    jp_error err;
    while (jp_stats_next(&it, &st, &err) == 1) {
        jp_str s;
        (void)jp_plane_stat_meta_view(plane, st.metadata_id);
        (void)jp_stat_int(&st);
        if (st.kind == JP_STAT_STR || st.kind == JP_STAT_REF || st.kind == JP_STAT_COMPRESSED)
            (void)jp_stat_str(xs, plane, &st, &s, &err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    jp_xspace *xs;
    jp_error err;
    if (jp_xspace_parse(&xs, data, size, "fuzz", &err) != JP_OK) return 0;
    size_t n_planes, n_hosts;
    const jp_plane *planes = jp_xspace_planes(xs, &n_planes);
    (void)jp_xspace_hostnames(xs, &n_hosts);
    (void)jp_xspace_event_count(xs);
    for (size_t p = 0; p < n_planes; p++) {
        const jp_plane *plane = &planes[p];
        walk_stats(xs, plane, jp_stats_of_plane(xs, plane));
        for (size_t m = 0; m < plane->n_event_meta; m++)
            walk_stats(xs, plane, jp_stats_of_event_meta(xs, &plane->event_meta[m]));
        for (size_t l = 0; l < plane->n_lines; l++) {
            const jp_line *line = &plane->lines[l];
            for (size_t e = 0; e < line->n_events; e++) {
                const jp_event *ev = &line->events[e];
                (void)jp_plane_event_meta_view(plane, ev->metadata_id);
                walk_stats(xs, plane, jp_stats_of_event(xs, ev));
            }
        }
    }
    jp_xspace_close(xs);
    return 0;
}
