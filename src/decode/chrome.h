/* chrome.h - Chrome-trace JSON read as the XSpace it describes (chrome.c) (internal). */
#ifndef JP_DECODE_CHROME_H
#define JP_DECODE_CHROME_H

#include <stddef.h>
#include <stdint.h>

#include "jaxprof/jaxprof.h"

/* How the XSpace's own warning about the JSON begins (health.c: such a host lacks its HloProtos by
 * the format, not by an option, and is not told to set one). */
#define JP_CHROME_NOTE_PREFIX "read from a Chrome trace"

/* Rewrites the Chrome trace json[0..len) as a serialized XSpace into
 * *out (malloc'd, *out_len bytes): a plane per process (its process_name), a line per thread (its
 * thread_name), an event per X slice, paired B/E or instant, by start, with its args as stats, and
 * a warning saying what the JSON lacks. Invalid JSON is JP_ERR_CORRUPT (cut short: JP_ERR_TRUNCATED)
 * at its byte offset. */
int jp_chrome_to_xspace(const uint8_t *json, size_t len, uint8_t **out, size_t *out_len, jp_error *err);

#endif
