/* json.c - the one JSON string encoder: escapes, well-formed UTF-8 checks, U+FFFD for the rest (see json.h). */
#include "base/json.h"

#include <string.h>

/* JSON's two-character escapes of control characters, by character; 0: written as \u00xx. */
static const char SHORT_ESCAPE[0x20] = {['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', ['\f'] = 'f', ['\r'] = 'r'};

/* A lead byte's sequence length and the range its second byte must fall in: the narrowed ranges
 * are what exclude overlong forms (E0, F0), surrogates (ED) and code points past U+10FFFF (F4). */
typedef struct utf8_lead {
    unsigned char first, last; /* lead bytes this row covers */
    unsigned char len;         /* bytes in the whole sequence */
    unsigned char lo, hi;      /* allowed second byte; later bytes are any continuation 80-BF */
} utf8_lead;

static const utf8_lead UTF8_LEADS[] = {
    {0xC2, 0xDF, 2, 0x80, 0xBF}, {0xE0, 0xE0, 3, 0xA0, 0xBF}, {0xE1, 0xEC, 3, 0x80, 0xBF},
    {0xED, 0xED, 3, 0x80, 0x9F}, {0xEE, 0xEF, 3, 0x80, 0xBF}, {0xF0, 0xF0, 4, 0x90, 0xBF},
    {0xF1, 0xF3, 4, 0x80, 0xBF}, {0xF4, 0xF4, 4, 0x80, 0x8F},
};

_Static_assert(sizeof SHORT_ESCAPE == 0x20, "one entry per C0 control character");
_Static_assert(sizeof UTF8_LEADS / sizeof UTF8_LEADS[0] == 8, "Unicode table 3-7 has eight lead rows");

/* Length of the well-formed UTF-8 sequence at s (n >= 1 bytes there, s[0] >= 0x80), or 0 when the
 * byte at s does not start one. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    for (size_t r = 0; r < sizeof UTF8_LEADS / sizeof UTF8_LEADS[0]; r++) {
        const utf8_lead *l = &UTF8_LEADS[r];
        if (s[0] < l->first || s[0] > l->last) continue;
        if (n < l->len || s[1] < l->lo || s[1] > l->hi) return 0;
        for (size_t i = 2; i < l->len; i++)
            if ((s[i] & 0xC0) != 0x80) return 0;
        return l->len;
    }
    return 0; /* 80-C1 (continuation or overlong lead) and F5-FF never start a sequence */
}

/* The escape for byte c (a quote, a backslash or a control character) into esc; its length. */
static size_t escape(unsigned char c, char esc[6]) {
    static const char hex[] = "0123456789abcdef";
    esc[0] = '\\';
    if (c == '"' || c == '\\') return esc[1] = (char)c, 2;
    if (c < 0x20 && SHORT_ESCAPE[c]) return esc[1] = SHORT_ESCAPE[c], 2;
    memcpy(esc + 1, "u00", 3);
    esc[4] = hex[c >> 4];
    esc[5] = hex[c & 15];
    return 6;
}

void jp_json_put_str(jp_json_put_fn put, void *ctx, const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s;
    size_t run = 0; /* start of the bytes copied as they are, not yet handed to put */
    put(ctx, "\"", 1);
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
            i++;
            continue;
        }
        size_t k = c >= 0x80 ? utf8_len(p + i, len - i) : 0;
        if (k) {
            i += k;
            continue;
        }
        if (i > run) put(ctx, s + run, i - run);
        char esc[6];
        if (c >= 0x80) put(ctx, "\\ufffd", 6); /* one per byte that is not UTF-8 */
        else put(ctx, esc, escape(c, esc));
        run = ++i;
    }
    if (len > run) put(ctx, s + run, len - run);
    put(ctx, "\"", 1);
}

static void put_file(void *ctx, const char *p, size_t n) { fwrite(p, 1, n, (FILE *)ctx); }

void jp_json_fput_str(FILE *out, const char *s, size_t len) { jp_json_put_str(put_file, out, s, len); }

void jp_json_fput_cstr(FILE *out, const char *s) { jp_json_fput_str(out, s ? s : "", s ? strlen(s) : 0); }
