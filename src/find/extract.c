/* extract.c - unpacking a run's gzip-compressed trace files for tools that cannot read gzip. */
#include "base/error.h"
#include "base/outfile.h"
#include "base/vec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

enum { PATH_CAP = 4096, CHUNK = 1 << 16 };
static const uint64_t MAX_OUTPUT = (uint64_t)64 << 30; /* refuse gzip bombs beyond 64 GiB per file */

/* The usable files directly inside a run directory, each list sorted by name. */
typedef struct listing {
    jp_vec gz;    /* char *: heap copies of the names of regular *.gz files */
    jp_vec plain; /* char *: names of regular uncompressed trace files */
} listing;

/* One file being decompressed: source and temporary output, zlib state and its buffers. */
typedef struct unpack {
    const char *src;    /* the source path, for messages */
    const char *dst;    /* the final output path, for messages */
    int in_fd;          /* the .gz file, opened without following links */
    int out_fd;         /* a copy of the jp_outfile's descriptor (its temporary file), written here */
    int old_fd;         /* the regular file already at dst, compared as we go; -1: none */
    int differs;        /* 1 once the output is known to differ from old_fd's contents */
    int force;          /* 1: a differing old file is replaced; 0: refused */
    z_stream z;         /* inflate state, reset at each gzip member */
    uint64_t pos;       /* compressed bytes consumed so far: the offset reported in errors */
    uint64_t written;   /* decompressed bytes written so far */
    uint8_t in[CHUNK];  /* compressed bytes read from in_fd */
    uint8_t out[CHUNK]; /* decompressed bytes waiting to be written */
    uint8_t old[CHUNK]; /* old_fd's bytes, compared with out */
} unpack;

/* Where the outputs go and where the inputs come from. */
typedef struct dirs {
    const char *run;  /* run_dir as given */
    const char *out;  /* out_dir as given, or run_dir */
    int run_fd;       /* run_dir, opened as a directory */
    int out_fd;       /* out_dir, opened as a directory (created when missing) */
    int same;         /* 1 when both name the same directory: outputs land beside their sources */
} dirs;

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

static int is_plain_trace(const char *name) {
    return ends_with(name, ".xplane.pb") || ends_with(name, ".trace.json") || ends_with(name, ".json") ||
           ends_with(name, ".pftrace");
}

/* Writes "<dir>/<name>" into buf (no doubled slash); JP_ERR_LIMIT when it does not fit. */
static int join(char *buf, size_t cap, const char *dir, const char *name, jp_error *err) {
    size_t n = strlen(dir);
    const char *sep = n > 0 && dir[n - 1] == '/' ? "" : "/";
    size_t need = n + strlen(sep) + strlen(name);
    if (need >= cap) return jp_error_set(err, JP_ERR_LIMIT, 0, "%s/%s: path too long", dir, name);
    memcpy(buf, dir, n);
    memcpy(buf + n, sep, strlen(sep));
    memcpy(buf + n + strlen(sep), name, strlen(name) + 1);
    return JP_OK;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int push_name(jp_vec *v, const char *name, jp_error *err) {
    char *copy = strdup(name);
    char **slot = copy ? jp_vec_push(v, sizeof(char *)) : NULL;
    if (!slot) {
        free(copy);
        return jp_error_set(err, JP_ERR_NOMEM, 0, "out of memory listing %s", name);
    }
    *slot = copy;
    return JP_OK;
}

static void listing_free(listing *l) {
    for (size_t i = 0; i < l->gz.n; i++) free(JP_VEC_AT(&l->gz, char *, i));
    for (size_t i = 0; i < l->plain.n; i++) free(JP_VEC_AT(&l->plain, char *, i));
    jp_vec_free(&l->gz);
    jp_vec_free(&l->plain);
}

static int listed(const jp_vec *v, const char *name) {
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(JP_VEC_AT(v, char *, i), name) == 0) return 1;
    return 0;
}

/* Collects the regular files directly inside the run directory; links and subdirectories are
 * skipped (lstat semantics), so nothing outside the run is ever read. */
static int list_run(const dirs *d, listing *l, jp_error *err) {
    int fd = dup(d->run_fd);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dir) {
        if (fd >= 0) close(fd);
        return jp_error_set(err, JP_ERR_IO, 0, "%s: cannot read directory: %s", d->run, strerror(errno));
    }
    int rc = JP_OK;
    struct dirent *de;
    while (rc == JP_OK && (de = readdir(dir)) != NULL) {
        struct stat st;
        if (fstatat(d->run_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        if (ends_with(de->d_name, ".gz") && strlen(de->d_name) > 3) rc = push_name(&l->gz, de->d_name, err);
        else if (is_plain_trace(de->d_name)) rc = push_name(&l->plain, de->d_name, err);
    }
    closedir(dir);
    if (l->gz.n) qsort(l->gz.data, l->gz.n, sizeof(char *), cmp_name);
    if (l->plain.n) qsort(l->plain.data, l->plain.n, sizeof(char *), cmp_name);
    return rc;
}

/* Creates every missing component of path (like mkdir -p). Errors surface when it is opened. */
static void make_dirs(const char *path) {
    char buf[PATH_CAP];
    size_t n = strlen(path);
    if (n >= sizeof buf) return;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i < n; i++) {
        if (buf[i] != '/') continue;
        buf[i] = '\0';
        mkdir(buf, 0755);
        buf[i] = '/';
    }
    mkdir(buf, 0755);
}

static int open_dir(const char *path, int *fd, jp_error *err) {
    *fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*fd < 0)
        return jp_error_set(err, errno == ENOENT ? JP_ERR_NOT_FOUND : JP_ERR_IO, 0, "%s: cannot open directory: %s",
                            path, strerror(errno));
    return JP_OK;
}

static int same_dir(int a, int b) {
    struct stat sa, sb;
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int open_dirs(dirs *d, const char *run_dir, const char *out_dir, jp_error *err) {
    d->run = run_dir;
    d->out = out_dir ? out_dir : run_dir;
    int rc = open_dir(run_dir, &d->run_fd, err);
    if (rc != JP_OK) return rc;
    if (out_dir) make_dirs(out_dir);
    rc = open_dir(d->out, &d->out_fd, err);
    if (rc != JP_OK) {
        close(d->run_fd);
        return rc;
    }
    d->same = same_dir(d->run_fd, d->out_fd);
    return JP_OK;
}

/* Reads up to len bytes of the old file into u->old; returns how many (short only at its end). */
static size_t read_old(unpack *u, size_t len) {
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(u->old_fd, u->old + got, len - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    return got;
}

static int refuse_different(const unpack *u, jp_error *err) {
    return jp_error_set(err, JP_ERR_ARG, 0,
                        "%s: exists and differs from what %s decompresses to; not replaced (remove it, or extract "
                        "with the force option)", u->dst, u->src);
}

/* Compares the next len output bytes with the old file's; a difference is refused unless forced. */
static int compare_old(unpack *u, size_t len, jp_error *err) {
    if (u->old_fd < 0 || u->differs || len == 0) return JP_OK;
    u->differs = read_old(u, len) != len || memcmp(u->old, u->out, len) != 0;
    return u->differs && !u->force ? refuse_different(u, err) : JP_OK;
}

/* At the end of the output: an old file with more bytes differs too. */
static int compare_old_end(unpack *u, jp_error *err) {
    if (u->old_fd < 0 || u->differs) return JP_OK;
    u->differs = read_old(u, 1) != 0;
    return u->differs && !u->force ? refuse_different(u, err) : JP_OK;
}

static int write_all(unpack *u, size_t len, jp_error *err) {
    int rc = compare_old(u, len, err);
    if (rc != JP_OK) return rc;
    if (u->written + len > MAX_OUTPUT)
        return jp_error_set(err, JP_ERR_LIMIT, u->pos, "%s: gzip data at byte %llu inflates beyond %llu bytes",
                            u->src, (unsigned long long)u->pos, (unsigned long long)MAX_OUTPUT);
    for (size_t done = 0; done < len;) {
        ssize_t n = write(u->out_fd, u->out + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return jp_error_set(err, JP_ERR_IO, 0, "%s: cannot write: %s", u->dst, strerror(errno));
        done += (size_t)n;
    }
    u->written += len;
    return JP_OK;
}

/* Inflates what is buffered in z.next_in and writes the output. Sets *member_end when a gzip
 * member's trailer has been checked. */
static int inflate_buffered(unpack *u, int *member_end, jp_error *err) {
    for (;;) {
        uInt before = u->z.avail_in;
        u->z.next_out = u->out;
        u->z.avail_out = CHUNK;
        int zr = inflate(&u->z, Z_NO_FLUSH);
        u->pos += before - u->z.avail_in;
        int rc = write_all(u, CHUNK - u->z.avail_out, err);
        if (rc != JP_OK) return rc;
        if (zr == Z_STREAM_END) {
            *member_end = 1;
            return JP_OK;
        }
        if (zr == Z_MEM_ERROR) return jp_error_set(err, JP_ERR_NOMEM, 0, "%s: out of memory inflating", u->src);
        if (zr != Z_OK && zr != Z_BUF_ERROR)
            return jp_error_set(err, JP_ERR_CORRUPT, u->pos, "%s: corrupt gzip data at byte %llu: %s", u->src,
                                (unsigned long long)u->pos, u->z.msg ? u->z.msg : "inflate failed");
        if (u->z.avail_in == 0 && u->z.avail_out != 0) return JP_OK; /* needs more input */
    }
}

/* Reads the next chunk; returns the byte count (0 at end of file) or a negative status. */
static int fill(unpack *u, size_t *got, jp_error *err) {
    ssize_t n;
    do n = read(u->in_fd, u->in, CHUNK);
    while (n < 0 && errno == EINTR);
    if (n < 0) return jp_error_set(err, JP_ERR_IO, u->pos, "%s: cannot read: %s", u->src, strerror(errno));
    u->z.next_in = u->in;
    u->z.avail_in = (uInt)n;
    *got = (size_t)n;
    return JP_OK;
}

/* Skips the NUL padding some writers leave after a gzip member; when more data follows, the
 * next member starts there (concatenated members decompress to the concatenation, as gzip -d). */
static void skip_padding(unpack *u) {
    while (u->z.avail_in > 0 && *u->z.next_in == 0) {
        u->z.next_in++;
        u->z.avail_in--;
        u->pos++;
    }
}

/* Streams the whole .gz into the temporary output, member after member. */
static int inflate_file(unpack *u, jp_error *err) {
    int member_end = 0, rc = JP_OK;
    for (;;) {
        size_t got = 1;
        if (u->z.avail_in == 0 && (rc = fill(u, &got, err)) != JP_OK) return rc;
        if (got == 0) break;
        if (member_end) {
            skip_padding(u);
            if (u->z.avail_in == 0) continue;
            if (inflateReset(&u->z) != Z_OK) return jp_error_set(err, JP_ERR_NOMEM, 0, "%s: zlib reset failed", u->src);
            member_end = 0;
        }
        if ((rc = inflate_buffered(u, &member_end, err)) != JP_OK) return rc;
    }
    if (!member_end)
        return jp_error_set(err, JP_ERR_TRUNCATED, u->pos, "%s: truncated gzip data at byte %llu%s", u->src,
                            (unsigned long long)u->pos, u->pos == 0 ? " (empty file)" : "");
    return compare_old_end(u, err);
}

/* Opens the source without following links and checks it is still a regular file. */
static int open_source(const dirs *d, const char *name, const char *src, int *fd, jp_error *err) {
    *fd = openat(d->run_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0 && errno == ELOOP) return jp_error_set(err, JP_ERR_IO, 0, "%s: symbolic link refused", src);
    if (*fd < 0) return jp_error_set(err, JP_ERR_IO, 0, "%s: cannot open: %s", src, strerror(errno));
    struct stat st;
    if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(*fd);
        *fd = -1;
        return jp_error_set(err, JP_ERR_IO, 0, "%s: not a regular file", src);
    }
    return JP_OK;
}

/* The regular file already at out_name, to compare the output with (a FIFO or device there is
 * never read: O_NONBLOCK keeps a FIFO from waiting for a writer); -1 when there is none. */
static int open_old(const dirs *d, const char *out_name) {
    int fd = openat(d->out_fd, out_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) close(fd), fd = -1;
    return fd;
}

/* Decompresses name into dst through a jp_outfile (a random temporary name beside it, renamed
 * into place; opt->temp hears it, so a signal handler can remove it). A file already at dst is
 * compared as the output is made: identical, it is left as it is; different, it is replaced only
 * with opt->force, else refused (JP_ERR_ARG) before anything changes. */
static int unpack_one(const dirs *d, const char *name, const char *out_name, const char *src, const char *dst,
                      const jp_extract_options *opt, jp_error *err) {
    unpack *u = calloc(1, sizeof *u);
    if (!u) return jp_error_set(err, JP_ERR_NOMEM, 0, "%s: out of memory", src);
    u->src = src, u->dst = dst, u->force = opt && opt->force;
    u->in_fd = u->out_fd = u->old_fd = -1;
    jp_outfile of = {.fd = -1};
    int rc = open_source(d, name, src, &u->in_fd, err);
    if (rc == JP_OK && inflateInit2(&u->z, 16 + MAX_WBITS) != Z_OK)
        rc = jp_error_set(err, JP_ERR_NOMEM, 0, "%s: zlib init failed", src);
    else if (rc == JP_OK) {
        u->old_fd = open_old(d, out_name);
        rc = jp_outfile_open(&of, dst, opt ? &opt->temp : NULL, err);
        if (rc == JP_OK && (u->out_fd = jp_outfile_dup(&of)) < 0)
            rc = jp_error_set(err, JP_ERR_IO, 0, "%s: cannot write: %s", dst, strerror(errno));
        if (rc == JP_OK) rc = inflate_file(u, err);
        inflateEnd(&u->z);
    }
    if (u->out_fd >= 0 && close(u->out_fd) != 0 && rc == JP_OK)
        rc = jp_error_set(err, JP_ERR_IO, 0, "%s: cannot write: %s", dst, strerror(errno));
    if (rc == JP_OK && u->old_fd >= 0 && !u->differs) jp_outfile_abort(&of); /* the same bytes: kept as they are */
    else if (rc == JP_OK) rc = jp_outfile_commit(&of, err);
    else jp_outfile_abort(&of);
    if (u->in_fd >= 0) close(u->in_fd);
    if (u->old_fd >= 0) close(u->old_fd);
    free(u);
    return rc;
}

/* Decompresses every listed .gz, reporting each output path. */
static int unpack_all(const dirs *d, const listing *l, const jp_extract_options *opt,
                      void (*on_file)(void *, const char *), void *ctx, jp_error *err) {
    char src[PATH_CAP], dst[PATH_CAP], out_name[PATH_CAP];
    for (size_t i = 0; i < l->gz.n; i++) {
        const char *name = JP_VEC_AT(&l->gz, char *, i);
        size_t n = strlen(name) - 3;
        memcpy(out_name, name, n);
        out_name[n] = '\0';
        int rc = join(src, sizeof src, d->run, name, err);
        if (rc == JP_OK) rc = join(dst, sizeof dst, d->out, out_name, err);
        if (rc == JP_OK && d->same && listed(&l->gz, out_name))
            rc = jp_error_set(err, JP_ERR_ARG, 0, "%s: would overwrite the compressed file %s", src, dst);
        if (rc == JP_OK) rc = unpack_one(d, name, out_name, src, dst, opt, err);
        if (rc != JP_OK) return rc;
        if (on_file) on_file(ctx, dst);
    }
    return JP_OK;
}

/* Reports the uncompressed trace files already in the run, except those just rewritten from
 * their .gz beside them (reported once, above). */
static int report_plain(const dirs *d, const listing *l, void (*on_file)(void *, const char *), void *ctx,
                        jp_error *err) {
    char path[PATH_CAP], gz_name[PATH_CAP];
    for (size_t i = 0; i < l->plain.n; i++) {
        const char *name = JP_VEC_AT(&l->plain, char *, i);
        int rc = join(path, sizeof path, d->run, name, err);
        if (rc != JP_OK) return rc;
        if (strlen(name) + 4 > sizeof gz_name) continue;
        memcpy(gz_name, name, strlen(name));
        memcpy(gz_name + strlen(name), ".gz", 4);
        if (d->same && listed(&l->gz, gz_name)) continue;
        if (on_file) on_file(ctx, path);
    }
    return JP_OK;
}

int jp_runs_extract(const char *run_dir, const char *out_dir, const jp_extract_options *opt,
                    void (*on_file)(void *ctx, const char *path), void *ctx, jp_error *err) {
    jp_error_clear(err);
    if (!run_dir || !*run_dir) return jp_error_set(err, JP_ERR_ARG, 0, "empty run directory");
    if (out_dir && !*out_dir) return jp_error_set(err, JP_ERR_ARG, 0, "empty output directory");
    dirs d;
    int rc = open_dirs(&d, run_dir, out_dir, err);
    if (rc != JP_OK) return rc;
    listing l;
    memset(&l, 0, sizeof l);
    rc = list_run(&d, &l, err);
    if (rc == JP_OK) rc = unpack_all(&d, &l, opt, on_file, ctx, err);
    if (rc == JP_OK) rc = report_plain(&d, &l, on_file, ctx, err);
    listing_free(&l);
    close(d.run_fd);
    close(d.out_fd);
    return rc;
}
