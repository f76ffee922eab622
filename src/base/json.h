/* json.h - the one JSON string encoder of jaxprof: any bytes in, a valid JSON string out, written
 * into a caller's buffer so a stdio stream and the trace exporter's own buffered sink share it
 * (internal to libjaxprof; the FILE* form, jp_json_fput_str, is public in jaxprof.h).
 *
 * The rules, the same in every JSON output (the --json documents, the viewer API, Chrome traces,
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

/* The most bytes one input character becomes (\u00xx, \ufffd): a destination with this much room
 * always takes the next one. */
enum { JP_JSON_UNIT_MAX = 6 };

/* 1 for a byte that goes out as it is, with no escape and no UTF-8 check: printable ASCII but the
 * quote and the backslash. Inline, so a writer's hot loop can copy such a run without a call. */
static inline int jp_json_plain(unsigned char c) { return c >= 0x20 && c < 0x7F && c != '"' && c != '\\'; }

/* Length of the run of jp_json_plain bytes that starts s[0, len): bytes the encoder copies as they are. */
static inline size_t jp_json_plain_len(const char *s, size_t len) {
    size_t i = 0;
    while (i < len && jp_json_plain((unsigned char)s[i])) i++;
    return i;
}

/* Writes the escaped form of s[*pos, len) into dst[0, cap): the inside of a JSON string, without
 * its quotes. Stops at the end of s or where the next character might not fit whole (fewer than
 * JP_JSON_UNIT_MAX bytes left, or a run of plain bytes cut at cap); advances *pos past what it
 * took and returns the bytes written. Writers call it into their own buffers (a stack buffer for a
 * FILE*, the trace exporter's sink): one copy, no callback. */
size_t jp_json_escape(char *dst, size_t cap, const char *s, size_t len, size_t *pos);

/* jp_json_fput_str for a NUL-terminated string; NULL is written as "". */
void jp_json_fput_cstr(FILE *out, const char *s);
/* Writes ps picoseconds as milliseconds with 6 decimals, the bytes printf("%.6f", ps / 1e9) writes:
 * the outputs' every time. Digits from the integer where that rounds alike (a time under 1,000 s
 * whose last 3 digits are not 499-501: the double's error there is under 0.001 ps), else printf. */
void jp_json_fput_ms(FILE *out, int64_t ps);
/* The same bytes into buf, NUL-terminated; returns their count. */
enum { JP_JSON_MS_MAX = 40 };
size_t jp_json_format_ms(char buf[JP_JSON_MS_MAX], int64_t ps);

#endif
