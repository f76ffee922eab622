/* json.h - the one JSON string encoder of jaxprof: any bytes in, a valid JSON string out, written
 * through a callback so a stdio stream and the trace exporter's own buffered sink share it
 * (internal to libjaxprof; the FILE* form, jp_json_fput_str, is public in jaxprof.h).
 *
 * The rules, the same in every output (JSON tables, HTML data, the viewer API, Chrome traces,
 * `jaxprof list --json`):
 *   - `"` and `\` are escaped as \" and \\;
 *   - control characters U+0000-U+001F and U+007F are escaped: \b \f \n \r \t where JSON has a
 *     short form, else \u00xx (lower-case hex);
 *   - well-formed UTF-8 (Unicode 15, table 3-7) is copied as it is;
 *   - every byte that is not part of a well-formed sequence (a stray continuation byte, C0/C1/F5-FF,
 *     an overlong form, a UTF-16 surrogate, a code point past U+10FFFF, a sequence cut short) is
 *     written as \ufffd, one per byte: names in an xplane are bytes, JSON must be UTF-8.
 * Stateless and thread-safe. */
#ifndef JP_BASE_JSON_H
#define JP_BASE_JSON_H

#include <stddef.h>

#include "jaxprof/jaxprof.h"

/* Receives the next piece of output (n > 0 bytes at p, valid only during the call). */
typedef void (*jp_json_put_fn)(void *ctx, const char *p, size_t n);

/* Writes s[0, len) as one quoted JSON string through put(ctx, ...): runs of bytes that need no
 * escape go out in one call each. s may be NULL when len is 0. */
void jp_json_put_str(jp_json_put_fn put, void *ctx, const char *s, size_t len);

/* jp_json_fput_str for a NUL-terminated string; NULL is written as "". */
void jp_json_fput_cstr(FILE *out, const char *s);

#endif
