/* text.h - the one bounded text builder of jaxprof: appends into a caller-owned fixed buffer and
 * cuts safely when the buffer is full (internal to libjaxprof).
 *
 * Every fixed-size text in the library (an HLO instruction's line, a shape, a finding's sentence,
 * a path, an HTTP head) is built through it, so that truncation is safe by construction:
 *   - the text is always NUL-terminated inside its buffer (cap >= 1);
 *   - once something does not fit, the text is cut: it ends in "..." inside the capacity (as much of
 *     "..." as fits when cap < 4), and every later append is ignored, so nothing after a cut can
 *     make the text look whole;
 *   - a cut never splits a UTF-8 sequence: a multi-byte character that does not fit whole is
 *     dropped whole;
 *   - no size arithmetic can wrap: len < cap always holds, and room is computed as cap - 1 - len.
 * Callers that must not accept a shortened text (a path, a header) check jp_text.cut.
 *
 * Use:  char buf[256]; jp_text t = jp_text_make(buf, sizeof buf);
 *       jp_text_puts(&t, "name: "); jp_text_printf(&t, "%d", n);  ... t.buf, t.len, t.cut
 * A jp_text is a plain value on the caller's storage; not thread-safe, distinct ones independent. */
#ifndef JP_BASE_TEXT_H
#define JP_BASE_TEXT_H

#include <stdarg.h>
#include <stddef.h>

typedef struct jp_text {
    char *buf;  /* the caller's storage, cap bytes; holds the text and its NUL */
    size_t cap; /* bytes of buf, the NUL included */
    size_t len; /* bytes of text before the NUL; len < cap whenever cap > 0 */
    int cut;    /* 1 once an append did not fit: the text ends in "..." and takes nothing more */
} jp_text;

/* The marker a cut text ends with. */
#define JP_TEXT_CUT_MARK "..."

/* An empty text on buf[0, cap) (buf[0] set to NUL). cap 0 holds nothing, not even the NUL: such a
 * text is cut from the start and buf is never touched (it may be NULL). */
jp_text jp_text_make(char *buf, size_t cap);

/* Appends p[0, n); cuts the text when it does not fit whole. */
void jp_text_put(jp_text *t, const char *p, size_t n);

/* Appends the NUL-terminated s (NULL appends nothing). */
void jp_text_puts(jp_text *t, const char *s);

/* Appends p[0, n) when n <= max; else as much of it as fits in max - 3 bytes on a whole character,
 * then "...": a piece of a text (a file name before its ":line") that is cut while the text goes on.
 * max < 3 appends only as much of the marker. The text itself is cut as by jp_text_put when even
 * that does not fit. */
void jp_text_put_clipped(jp_text *t, const char *p, size_t n, size_t max);

/* Appends one byte. */
void jp_text_putc(jp_text *t, char c);

/* Appends printf(fmt, ...); cuts the text when the whole output does not fit. A format error
 * (vsnprintf < 0) appends nothing. */
void jp_text_printf(jp_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void jp_text_vprintf(jp_text *t, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* The largest k <= n at which s[0, k) does not end inside a multi-byte UTF-8 sequence: where
 * text is cut. Bytes that are not UTF-8 count as characters of their own. */
size_t jp_text_utf8_floor(const char *s, size_t n);

#endif
