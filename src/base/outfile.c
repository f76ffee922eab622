/* outfile.c - output files created under a fresh random name beside their destination, fsync'd and
 * renamed into place (see outfile.h). */
#include "base/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
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

int jp_outfile_open(jp_outfile *f, const char *out_path, const jp_temp_hook *hook, jp_error *err) {
    *f = (jp_outfile){.out_path = out_path, .fd = -1};
    if (hook) f->hook = *hook;
    size_t cap = strlen(out_path) + 24; /* '.', '.', 16 hex digits, ".tmp", NUL */
    if (!(f->tmp_path = malloc(cap))) return jp_error_set(err, JP_ERR_NOMEM, 0, "%s: out of memory", out_path);
    int saved = EEXIST;
    for (unsigned attempt = 0; attempt < TRIES && saved == EEXIST; attempt++) {
        temp_name(f->tmp_path, cap, out_path, attempt);
        tell(f, f->tmp_path); /* before the file exists: a signal handler never misses one */
        f->fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
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

int jp_outfile_commit(jp_outfile *f, jp_error *err) {
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
