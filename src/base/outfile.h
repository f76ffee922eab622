/* outfile.h - output files written under a fresh random name beside their destination, then
 * renamed over it: a reader never sees half a file under the final name, and nothing is ever
 * written through a name someone else could have planted (internal to libjaxprof). Only a regular
 * file (or nothing) at the destination is replaced: a FIFO or a character device there (a pipe,
 * /dev/stdout, /dev/null), also named through a symbolic link, is written in place as a stream;
 * anything else there (a symbolic link to anything else, a directory, a block device, a socket)
 * is refused, never replaced.
 *
 * Use: jp_outfile_open; write through a stream on a copy of the descriptor (jp_outfile_stdio, or
 * gzdopen(jp_outfile_dup(f))); close the stream; then jp_outfile_commit, or jp_outfile_abort on
 * any failure. The jp_outfile keeps its own descriptor until then, for the fsync. Not
 * thread-safe per jp_outfile; distinct ones are independent. */
#ifndef JP_BASE_OUTFILE_H
#define JP_BASE_OUTFILE_H

#include <stdio.h>

#include "jaxprof/jaxprof.h"

typedef struct jp_outfile {
    const char *out_path; /* the destination (borrowed from the caller) */
    char *tmp_path;       /* "<dir>/.<name>.<16 hex digits>.tmp" (heap), NULL once renamed or removed */
    int fd;               /* open on tmp_path (or, streaming, on out_path) until commit or abort, else -1 */
    int stream;           /* 1: out_path is a FIFO or character device written in place (no temp, no rename) */
    jp_temp_hook hook;    /* told of tmp_path; a zero hook tells nobody */
} jp_outfile;

/* Creates the temporary file beside out_path with open(O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC,
 * 0644 less the umask): never an existing file, never through a link. The name ends in 64 bits
 * from getrandom(2); a name that exists is retried with new ones. hook (NULL: none) hears the
 * name just before each create. When out_path is a FIFO or character device (itself or the end of
 * its links) it is opened for writing instead (f->stream; a FIFO waits for its reader, as a shell's
 * `>` does); any other non-regular file there is refused (JP_ERR_ARG). On failure nothing is left
 * and err names out_path (JP_ERR_IO). */
int jp_outfile_open(jp_outfile *f, const char *out_path, const jp_temp_hook *hook, jp_error *err);

/* A copy of f->fd for a stream to own and close (gzdopen); -1 when the process has none left. */
int jp_outfile_dup(const jp_outfile *f);

/* A stdio stream ("wb") on a copy of f->fd, which the caller fcloses; NULL when out of
 * descriptors or memory. */
FILE *jp_outfile_stdio(const jp_outfile *f);

/* Once the caller has closed its stream without error: fsync(2)s the file (so a crash cannot
 * leave an empty or short file under out_path, and a delayed write error is seen here), closes
 * it and renames it over out_path. On failure removes it; err names out_path. Always releases f.
 * Streaming, only closes the descriptor (what was written is gone already). */
int jp_outfile_commit(jp_outfile *f, jp_error *err);

/* Closes the descriptor, removes the temporary file and releases f. Safe on a jp_outfile that
 * failed to open or was already committed or aborted. */
void jp_outfile_abort(jp_outfile *f);

/* The whole sequence for a stdio writer: opens out_path's temporary file, runs
 * write_fn(obj, stream, err), closes the stream, commits; on any failure removes the file. err's
 * messages name out_path. */
int jp_outfile_write(const char *out_path, const jp_temp_hook *hook,
                     int (*write_fn)(const void *obj, FILE *out, jp_error *err), const void *obj, jp_error *err);

#endif
