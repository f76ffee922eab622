/* safe_text.c - neutralising control characters in text output: C0 (but newline and tab), DEL,
 * C1 (U+0080..U+009F as UTF-8, or as stray bytes), and any other byte that cannot start or
 * continue a UTF-8 sequence, each written as '?' (as ls(1) shows such names on a terminal). */
#define _GNU_SOURCE
#include "render/safe_text.h"

#include <stdlib.h>
#include <string.h>

#include "jaxprof/jaxprof.h"

/* The filter's state between two writes: a 0xC2 lead byte not yet judged, continuation bytes due. */
typedef struct safe_state {
    FILE *out;        /* where the filtered bytes go (borrowed) */
    unsigned pending; /* 0xC2 when the last byte was one (C1 or not depends on the next); else 0 */
    unsigned need;    /* continuation bytes still due in a multi-byte sequence */
    int keep_layout;  /* 1: newline and tab pass */
} safe_state;

/* Continuation bytes after a lead byte b (0xC3..0xF4); 0 for a byte that cannot lead. */
static unsigned continuations(unsigned char b) {
    return b >= 0xC3 && b <= 0xDF ? 1 : b >= 0xE0 && b <= 0xEF ? 2 : b >= 0xF0 && b <= 0xF4 ? 3 : 0;
}

static void put_byte(safe_state *st, unsigned char b) {
    if (st->pending) { /* 0xC2 then 0x80..0x9F is a C1 control; 0xC2 then 0xA0..0xBF is text */
        st->pending = 0;
        if (b >= 0x80 && b <= 0x9F) {
            fputc('?', st->out);
            return;
        }
        if (b >= 0xA0 && b <= 0xBF) {
            fputc(0xC2, st->out);
            fputc(b, st->out);
            return;
        }
        fputc('?', st->out); /* a lead byte with no continuation */
    }
    if (st->need) {
        if ((b & 0xC0) == 0x80) {
            st->need--;
            fputc(b, st->out);
            return;
        }
        st->need = 0; /* the sequence was cut short: b starts afresh */
    }
    if (b == 0x7F || (b < 0x20 && !(st->keep_layout && (b == '\n' || b == '\t')))) fputc('?', st->out);
    else if (b < 0x80) fputc(b, st->out);
    else if (b == 0xC2) st->pending = 0xC2;
    else if ((st->need = continuations(b)) != 0) fputc(b, st->out);
    else fputc('?', st->out); /* a stray continuation byte (8-bit C1 included) or a byte UTF-8 never uses */
}

/* A lead byte still pending at the end had no continuation. */
static void finish(safe_state *st) {
    if (st->pending) fputc('?', st->out);
    st->pending = 0;
    st->need = 0;
}

/* Printable ASCII and newline pass in runs (one fwrite each: most of any table); the rest byte by
 * byte through put_byte. */
static void put_bytes(safe_state *st, const char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        size_t run = i;
        if (!st->pending && !st->need)
            while (run < len && ((s[run] >= 0x20 && s[run] < 0x7F) || s[run] == '\n')) run++;
        if (run > i) {
            fwrite(s + i, 1, run - i, st->out);
            i = run;
        } else {
            put_byte(st, (unsigned char)s[i++]);
        }
    }
}

void jp_text_fput_safe(FILE *out, const char *s, size_t len, int keep_layout) {
    safe_state st = {.out = out, .keep_layout = keep_layout};
    if (keep_layout) put_bytes(&st, s, len);
    else
        for (size_t i = 0; i < len; i++) put_byte(&st, (unsigned char)s[i]);
    finish(&st);
}

static ssize_t cookie_write(void *ctx, const char *buf, size_t size) {
    safe_state *st = ctx;
    put_bytes(st, buf, size);
    return ferror(st->out) ? -1 : (ssize_t)size;
}

static int cookie_close(void *ctx) {
    safe_state *st = ctx;
    finish(st);
    int rc = ferror(st->out) ? EOF : 0;
    free(st);
    return rc;
}

FILE *jp_safe_text_open(FILE *out) {
    safe_state *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    st->out = out;
    st->keep_layout = 1;
    FILE *f = fopencookie(st, "w", (cookie_io_functions_t){.write = cookie_write, .close = cookie_close});
    if (!f) free(st);
    return f;
}
