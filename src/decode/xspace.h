/* xspace.h - the decoder's entry points for the library's own loaders, beyond jaxprof.h's. */
#ifndef JP_DECODE_XSPACE_H
#define JP_DECODE_XSPACE_H

#include <stdint.h>

#include "jaxprof/jaxprof_xspace.h"

/* Which file a directory listing saw: what is opened later must still be it. */
typedef struct jp_file_id {
    uint64_t dev; /* st_dev */
    uint64_t ino; /* st_ino */
} jp_file_id;

/* Opens a file that a directory listing found (lazy: as jp_xspace_open_lazy). The file is opened
 * without following a symbolic link and must still be the regular file `id` names: anyone who can
 * write to the directory could otherwise swap it, between the listing and the open, for a link out
 * of the log directory or a FIFO. id NULL: a file the caller named, opened as jp_xspace_open does.
 * max_inflate: the most bytes gzip input, and all compressed stats together, may inflate to
 * (jp_load_options.max_inflate); 0: the default limits (jaxprof_xspace.h). */
int jp_xspace_open_listed(jp_xspace **out, const char *path, const jp_file_id *id, int lazy, uint64_t max_inflate,
                          jp_error *err);
/* jp_xspace_parse (lazy: jp_xspace_parse_lazy) with the caller's inflate limit, as above. */
int jp_xspace_parse_limited(jp_xspace **out, const void *data, size_t len, const char *name, int lazy,
                            uint64_t max_inflate, jp_error *err);

/* The name errors give the input: the path it was opened from, or parse's `name`. */
const char *jp_xspace_name(const jp_xspace *xs);

/* Whether the input was gzip: byte offsets are then offsets in the decompressed data. */
int jp_xspace_inflated(const jp_xspace *xs);

/* What decoding doubts though the input decoded, one sentence (e.g. that the file looks cut short
 * after its last plane), or NULL. */
const char *jp_xspace_warning(const jp_xspace *xs);

struct jp_stat;
typedef void (*jp_stat_visitor)(void *ctx, const struct jp_stat *stat);
/* The stat metadata ids a visitor is handed: those below n with wanted[id] zero are checked and
 * passed over (most stats name nothing their reader looks at); every id >= n is handed over. */
typedef struct jp_stat_filter {
    const uint32_t *wanted;
    size_t n;
} jp_stat_filter;
/* Decodes the next event as jp_event_reader_next does, decoding the event's stats in the same walk:
 * each that `filter` passes goes to visit(ctx, stat) in order, and a corrupt one is an error, as
 * jp_stats_next would report it (the stats before it were visited). */
int jp_event_reader_next_stats(jp_event_reader *r, jp_event *ev, jp_stat_filter filter, jp_stat_visitor visit,
                               void *ctx, jp_error *err);

#endif
