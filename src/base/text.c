/* text.c - the bounded text builder: appends into a fixed buffer, cuts with "..." (see text.h). */
#include "base/text.h"

#include <stdio.h>
#include <string.h>

jp_text jp_text_make(char *buf, size_t cap) {
    jp_text t = {buf, cap, 0, cap == 0};
    if (cap) buf[0] = '\0';
    return t;
}

/* Bytes of the UTF-8 sequence a byte starts: 0 for a continuation byte, 1 for ASCII and for bytes
 * that start nothing (F8-FF). */
static size_t lead_len(unsigned char c) {
    if (c < 0x80) return 1;
    if (c < 0xC0) return 0;
    if (c < 0xE0) return 2;
    if (c < 0xF0) return 3;
    return c < 0xF8 ? 4 : 1;
}

size_t jp_text_utf8_floor(const char *s, size_t n) {
    /* A sequence is at most 4 bytes, so only a lead byte among the last 3 can run past n. */
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        size_t len = lead_len((unsigned char)s[n - back]);
        if (len == 0) continue; /* a continuation byte: its lead is further back */
        return len > back ? n - back : n;
    }
    return n;
}

/* Cuts t, whose buffer holds `have` bytes of text (have < cap): keeps what fits before the marker,
 * ends on a whole character, appends as much of "..." as the capacity takes, ignores all later
 * appends. */
static void cut(jp_text *t, size_t have) {
    size_t mark = sizeof JP_TEXT_CUT_MARK - 1;
    if (mark > t->cap - 1) mark = t->cap - 1;
    size_t keep = t->cap - 1 - mark;
    if (keep > have) keep = have;
    keep = jp_text_utf8_floor(t->buf, keep);
    memcpy(t->buf + keep, JP_TEXT_CUT_MARK, mark);
    t->len = keep + mark;
    t->buf[t->len] = '\0';
    t->cut = 1;
}

void jp_text_put(jp_text *t, const char *p, size_t n) {
    if (t->cut || n == 0) return;
    size_t room = t->cap - 1 - t->len; /* cap > len when not cut */
    if (n <= room) {
        memcpy(t->buf + t->len, p, n);
        t->len += n;
        t->buf[t->len] = '\0';
        return;
    }
    memcpy(t->buf + t->len, p, room); /* the part that fits, for cut() to keep what it can of it */
    cut(t, t->len + room);
}

void jp_text_puts(jp_text *t, const char *s) {
    if (s) jp_text_put(t, s, strlen(s));
}

void jp_text_put_clipped(jp_text *t, const char *p, size_t n, size_t max) {
    if (n <= max) {
        jp_text_put(t, p, n);
        return;
    }
    size_t mark = sizeof JP_TEXT_CUT_MARK - 1;
    if (mark > max) mark = max;
    jp_text_put(t, p, jp_text_utf8_floor(p, max - mark));
    jp_text_put(t, JP_TEXT_CUT_MARK, mark);
}

void jp_text_putc(jp_text *t, char c) { jp_text_put(t, &c, 1); }

void jp_text_vprintf(jp_text *t, const char *fmt, va_list ap) {
    if (t->cut) return;
    size_t room = t->cap - t->len; /* the NUL included: vsnprintf's size */
    int r = vsnprintf(t->buf + t->len, room, fmt, ap);
    if (r < 0) {
        t->buf[t->len] = '\0'; /* a format error: nothing appended */
        return;
    }
    if ((size_t)r < room) {
        t->len += (size_t)r;
        return;
    }
    cut(t, t->cap - 1); /* vsnprintf wrote what fits, up to the last byte */
}

void jp_text_printf(jp_text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    jp_text_vprintf(t, fmt, ap);
    va_end(ap);
}
