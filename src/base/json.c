/* json.c - the one JSON string encoder: escapes, well-formed UTF-8 checks, U+FFFD for the rest (see json.h). */
#include "base/json.h"

#include <stdio.h>
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

/* The escape of c (a quote, a backslash or a control character) at dst; its length. */
static size_t escape(unsigned char c, char *dst) {
    static const char hex[] = "0123456789abcdef";
    dst[0] = '\\';
    if (c == '"' || c == '\\') return dst[1] = (char)c, 2;
    if (c < 0x20 && SHORT_ESCAPE[c]) return dst[1] = SHORT_ESCAPE[c], 2;
    memcpy(dst + 1, "u00", 3);
    dst[4] = hex[c >> 4];
    dst[5] = hex[c & 15];
    return 6;
}

size_t jp_json_escape(char *dst, size_t cap, const char *s, size_t len, size_t *pos) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = *pos, o = 0;
    while (i < len) {
        /* The plain run is scanned only as far as there is room for it: scanning the whole rest of
         * the string on every call made a long name quadratic (a 4 MB name through a 256-byte
         * stdio buffer was 16,000 scans of up to 4 MB). */
        size_t left = len - i, room = cap - o;
        size_t k = jp_json_plain_len(s + i, left < room ? left : room); /* copied in one go */
        memcpy(dst + o, s + i, k);
        o += k, i += k;
        if (i == len || cap - o < JP_JSON_UNIT_MAX) break; /* else s[i] is not plain: room for it */
        size_t u = p[i] >= 0x80 ? utf8_len(p + i, len - i) : 0;
        if (u) memcpy(dst + o, s + i, u), o += u, i += u; /* well-formed UTF-8, as it is */
        else if (p[i] >= 0x80) memcpy(dst + o, "\\ufffd", 6), o += 6, i++; /* one per byte that is not UTF-8 */
        else o += escape(p[i++], dst + o);
    }
    *pos = i;
    return o;
}

void jp_json_fput_str(FILE *out, const char *s, size_t len) {
    char buf[256];
    size_t n = 1, pos = 0;
    buf[0] = '"';
    for (;;) { /* a short string is one fwrite, quotes included */
        n += jp_json_escape(buf + n, sizeof buf - 1 - n, s, len, &pos);
        if (pos == len) break;
        fwrite(buf, 1, n, out);
        n = 0;
    }
    buf[n++] = '"';
    fwrite(buf, 1, n, out);
}

void jp_json_fput_cstr(FILE *out, const char *s) { jp_json_fput_str(out, s ? s : "", s ? strlen(s) : 0); }

size_t jp_json_format_ms(char buf[JP_JSON_MS_MAX], int64_t ps) {
    int64_t r = ps % 1000;
    if (ps < 0 || ps >= 1000000000000000 || (r >= 499 && r <= 501)) {
        int n = snprintf(buf, JP_JSON_MS_MAX, "%.6f", (double)ps / 1e9);
        return n > 0 && n < JP_JSON_MS_MAX ? (size_t)n : 0;
    }
    uint64_t ns = (uint64_t)(ps / 1000) + (r > 500);
    char tmp[32], *p = tmp + sizeof tmp;
    for (int i = 0; i < 6; i++, ns /= 10) *--p = (char)('0' + ns % 10);
    *--p = '.';
    do *--p = (char)('0' + ns % 10); while (ns /= 10);
    size_t n = (size_t)(tmp + sizeof tmp - p);
    memcpy(buf, p, n);
    buf[n] = '\0';
    return n;
}

void jp_json_fput_ms(FILE *out, int64_t ps) {
    char buf[JP_JSON_MS_MAX];
    fwrite(buf, 1, jp_json_format_ms(buf, ps), out);
}
