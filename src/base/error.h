/* error.h - filling caller-owned jp_error structs (internal to libjaxprof). */
#ifndef JP_BASE_ERROR_H
#define JP_BASE_ERROR_H

#include "jaxprof/jaxprof.h"

/* Records code, offset and a printf-style message in err (if not NULL) and returns code, so a
 * failing path reads `return jp_error_set(err, JP_ERR_IO, 0, "%s: ...", path);`. */
int jp_error_set(jp_error *err, int code, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Prepends "prefix: " to err's message when rc is an error; returns rc. */
int jp_error_prefix(jp_error *err, int rc, const char *prefix);

/* JP_ERR_IO for an output that could not be created (errno_value from the failed open): names
 * out_path, the file the user asked for (not the ".tmp" beside it that is written first), and says
 * when its directory is missing. */
int jp_error_create(jp_error *err, const char *out_path, int errno_value);

/* Resets err to JP_OK with an empty message (if not NULL). */
void jp_error_clear(jp_error *err);

#endif
