/* outfile.c - output files created under a fresh random name beside their destination, fsync'd and
 * renamed into place (see outfile.h). */
#include "base/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"

enum {
    NAME_KEEP = 200, /* bytes of the destination's name kept in the temporary one (NAME_MAX is 255) */
    TRIES = 64       /* names tried before giving up on EEXIST */
};

static void tell(const jp_outfile *f, const char *path) {
    if (f->hook.on_temp) f->hook.on_temp(f->hook.ctx, path);
}

/* 64 unpredictable bits from getrandom(2). Only where the kernel has none to give (ENOSYS, before
 * Linux 3.17) a mix of the clock, the process id and a counter: O_EXCL|O_NOFOLLOW still keep the
 * write off any planted file; the randomness only keeps others from guessing the name. */
static uint64_t random_bits(unsigned attempt) {
    uint64_t r;
    ssize_t n;
    do n = getrandom(&r, sizeof r, 0);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof r) return r;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    r = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15u ^ (uint64_t)ts.tv_sec << 32 ^ (uint64_t)getpid() << 16 ^ attempt;
    return r ^ r >> 29;
}

/* Writes "<dir>/.<name>.<16 hex>.tmp" for out_path into buf (cap bytes, enough for it). */
static void temp_name(char *buf, size_t cap, const char *out_path, unsigned attempt) {
    const char *slash = strrchr(out_path, '/');
    const char *name = slash ? slash + 1 : out_path;
    int dir_len = (int)(name - out_path);
    size_t name_len = strlen(name);
    snprintf(buf, cap, "%.*s.%.*s.%016llx.tmp", dir_len, out_path, (int)(name_len > NAME_KEEP ? NAME_KEEP : name_len),
             name, (unsigned long long)random_bits(attempt));
}

static int is_stream(mode_t mode) { return S_ISFIFO(mode) || S_ISCHR(mode); }

static const char *kind_of(mode_t mode) {
    return S_ISDIR(mode) ? "a directory" : S_ISBLK(mode) ? "a block device" : S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

/* out_path exists and is not a regular file (lstat: st). A FIFO or character device, named or at
 * the end of a symbolic link, is opened in place: writing a stream into it is what its owner made
 * it for (a reader on a pipe, /dev/stdout, /dev/null); renaming a file over it would destroy it.
 * Any other link is refused rather than followed (a link at an output's name in a shared directory
 * may have been planted to aim the write at another file; naming the target says what is meant)
 * or replaced (that would silently break the link). Directories, block devices and sockets are
 * refused. */
static int open_in_place(jp_outfile *f, const struct stat *st, jp_error *err) {
    struct stat end = *st;
    if (S_ISLNK(st->st_mode) && (stat(f->out_path, &end) != 0 || !is_stream(end.st_mode)))
        return jp_error_set(err, JP_ERR_ARG, 0,
                            "%s: is a symbolic link; refusing to replace it or write through it (name the file it "
                            "points to, or remove the link)", f->out_path);
    if (!is_stream(end.st_mode))
        return jp_error_set(err, JP_ERR_ARG, 0, "%s: is %s; refusing to write over it", f->out_path, kind_of(end.st_mode));
    f->fd = open(f->out_path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (f->fd < 0) return jp_error_create(err, f->out_path, errno);
    struct stat got;
    if (fstat(f->fd, &got) != 0 || !is_stream(got.st_mode)) { /* replaced since the lstat: nothing written */
        close(f->fd);
        f->fd = -1;
        return jp_error_set(err, JP_ERR_IO, 0, "%s: changed while it was opened; not written", f->out_path);
    }
    f->stream = 1;
    return JP_OK;
}

int jp_outfile_open(jp_outfile *f, const char *out_path, const jp_temp_hook *hook, jp_error *err) {
    *f = (jp_outfile){.out_path = out_path, .fd = -1};
    if (hook) f->hook = *hook;
    struct stat st;
    if (lstat(out_path, &st) == 0 && !S_ISREG(st.st_mode)) return open_in_place(f, &st, err);
    size_t cap = strlen(out_path) + 24; /* '.', '.', 16 hex digits, ".tmp", NUL */
    if (!(f->tmp_path = malloc(cap))) return jp_error_set(err, JP_ERR_NOMEM, 0, "%s: out of memory", out_path);
    int saved = EEXIST;
    for (unsigned attempt = 0; attempt < TRIES && saved == EEXIST; attempt++) {
        temp_name(f->tmp_path, cap, out_path, attempt);
        tell(f, f->tmp_path); /* before the file exists: a signal handler never misses one */
        f->fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        saved = f->fd < 0 ? errno : 0;
    }
    if (f->fd >= 0) return JP_OK;
    free(f->tmp_path);
    f->tmp_path = NULL;
    tell(f, NULL);
    return jp_error_create(err, out_path, saved);
}

int jp_outfile_dup(const jp_outfile *f) { return fcntl(f->fd, F_DUPFD_CLOEXEC, 0); }

FILE *jp_outfile_stdio(const jp_outfile *f) {
    int fd = jp_outfile_dup(f);
    FILE *s = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!s && fd >= 0) close(fd);
    return s;
}

/* fsync, where the file system can: EINVAL and ENOTSUP say it cannot, not that data was lost. */
static int sync_file(int fd) {
    return fsync(fd) == 0 || errno == EINVAL || errno == ENOTSUP ? 0 : -1;
}

/* Streaming: closes the descriptor; its error is the write's. */
static int commit_stream(jp_outfile *f, jp_error *err) {
    int rc = close(f->fd) == 0 ? JP_OK : jp_error_set(err, JP_ERR_IO, 0, "%s: write failed: %s", f->out_path, strerror(errno));
    f->fd = -1;
    f->stream = 0;
    return rc;
}

int jp_outfile_commit(jp_outfile *f, jp_error *err) {
    if (f->stream) return commit_stream(f, err);
    if (!f->tmp_path) return jp_error_set(err, JP_ERR_IO, 0, "%s: cannot write", f->out_path);
    int rc = JP_OK, failed = sync_file(f->fd), saved = errno;
    if (close(f->fd) != 0 && !failed) failed = -1, saved = errno;
    f->fd = -1;
    if (failed) rc = jp_error_set(err, JP_ERR_IO, 0, "%s: write failed: %s", f->out_path, strerror(saved));
    if (rc == JP_OK && rename(f->tmp_path, f->out_path) != 0)
        rc = jp_error_set(err, JP_ERR_IO, 0, "%s: cannot rename into place: %s", f->out_path, strerror(errno));
    if (rc == JP_OK) {
        free(f->tmp_path);
        f->tmp_path = NULL;
        tell(f, NULL);
    }
    jp_outfile_abort(f);
    return rc;
}

void jp_outfile_abort(jp_outfile *f) {
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    f->stream = 0;
    if (!f->tmp_path) return;
    unlink(f->tmp_path);
    free(f->tmp_path);
    f->tmp_path = NULL;
    tell(f, NULL);
}

int jp_outfile_write(const char *out_path, const jp_temp_hook *hook,
                     int (*write_fn)(const void *obj, FILE *out, jp_error *err), const void *obj, jp_error *err) {
    jp_outfile f;
    int rc = jp_outfile_open(&f, out_path, hook, err);
    if (rc != JP_OK) return rc;
    FILE *s = jp_outfile_stdio(&f);
    if (!s) rc = jp_error_create(err, out_path, errno);
    if (s) {
        rc = jp_error_prefix(err, write_fn(obj, s, err), out_path);
        if (fclose(s) != 0 && rc == JP_OK)
            rc = jp_error_set(err, JP_ERR_IO, 0, "%s: write failed: %s", out_path, strerror(errno));
    }
    if (rc == JP_OK) return jp_outfile_commit(&f, err);
    jp_outfile_abort(&f);
    return rc;
}
