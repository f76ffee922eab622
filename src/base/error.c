/* error.c - status names and the one way errors are reported to callers. */
#include "base/error.h"

#include "base/text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

const char *jp_status_str(int status) {
    switch (status) {
    case JP_OK: return "ok";
    case JP_ERR_IO: return "i/o error";
    case JP_ERR_NOMEM: return "out of memory";
    case JP_ERR_TRUNCATED: return "truncated input";
    case JP_ERR_CORRUPT: return "corrupt input";
    case JP_ERR_ARG: return "invalid argument";
    case JP_ERR_NOT_FOUND: return "not found";
    case JP_ERR_LIMIT: return "limit exceeded";
    default: return "unknown status";
    }
}

int jp_error_set(jp_error *err, int code, uint64_t offset, const char *fmt, ...) {
    if (err) {
        va_list ap;
        err->code = code;
        err->offset = offset;
        jp_text msg = jp_text_make(err->msg, sizeof err->msg); /* a long path: cut with "...", whole characters */
        va_start(ap, fmt);
        jp_text_vprintf(&msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void jp_error_clear(jp_error *err) {
    if (err) {
        err->code = JP_OK;
        err->offset = 0;
        err->msg[0] = '\0';
    }
}

int jp_error_prefix(jp_error *err, int rc, const char *prefix) {
    if (err && rc != JP_OK) {
        char msg[JP_ERROR_MSG_MAX];
        memcpy(msg, err->msg, sizeof msg); /* NUL-terminated: jp_error_set writes it through jp_text */
        msg[sizeof msg - 1] = '\0';
        jp_error_set(err, rc, err->offset, "%s: %s", prefix, msg);
    }
    return rc;
}

int jp_error_create(jp_error *err, const char *out_path, int errno_value) {
    const char *slash = strrchr(out_path, '/');
    char dir[4096];
    jp_text d = jp_text_make(dir, sizeof dir);
    struct stat st;
    if (slash) jp_text_put(&d, out_path, slash == out_path ? 1 : (size_t)(slash - out_path));
    if (errno_value == ENOENT && slash && !d.cut && stat(dir, &st) != 0)
        return jp_error_set(err, JP_ERR_IO, 0, "%s: cannot write: the directory %s does not exist", out_path, dir);
    return jp_error_set(err, JP_ERR_IO, 0, "%s: cannot write: %s", out_path, strerror(errno_value));
}
