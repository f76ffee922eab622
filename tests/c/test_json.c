/* test_json.c - the JSON string encoder: exact bytes for each rule, and for every byte value, every
 * code point and every two-byte start of a multi-byte sequence, output that the vendored yyjson
 * (a strict parser) accepts and decodes to the code points the input stands for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "yyjson.h"

enum {
    OUT_MAX = 1 << 16,   /* bytes of encoder output one check holds */
    IN_MAX = 4096,       /* bytes of input one check encodes (6 out per byte at most, plus quotes) */
    BATCH_CPS = 1000,    /* code points encoded per string in the every-code-point check */
    RANDOM_STRINGS = 200000
};
_Static_assert(6 * IN_MAX + 2 <= OUT_MAX, "the worst case (every byte escaped) fits");

/* The encoder's output for one input, the quotes included. */
typedef struct sink {
    char *data;   /* OUT_MAX bytes */
    size_t n;     /* bytes written */
} sink;

/* Encodes in[0, n) as the writers do: quote, jp_json_escape into room of at most `room` bytes at
 * a time until the input is used up, quote. */
static void encode_in_pieces(sink *s, const void *in, size_t n, size_t room) {
    size_t pos = 0;
    s->data[0] = '"';
    s->n = 1;
    do {
        size_t cap = OUT_MAX - 1 - s->n < room ? OUT_MAX - 1 - s->n : room;
        size_t before = pos, wrote = jp_json_escape(s->data + s->n, cap, in, n, &pos);
        assert_true(wrote <= cap);
        assert_true(pos > before || pos == n); /* room for JP_JSON_UNIT_MAX bytes always moves on */
        s->n += wrote;
    } while (pos < n);
    s->data[s->n++] = '"';
}

static void encode(sink *s, const void *in, size_t n) { encode_in_pieces(s, in, n, OUT_MAX); }

/* ---- the reference: UTF-8 by its definition ------------------------------------------------------ */

/* The code points of s[0, n), read by the definition of UTF-8 rather than by json.c's table of lead
 * bytes: a lead byte's leading ones give the length, the continuation bytes' payload bits are put
 * together, and the result counts only when it is the shortest form of a code point that is neither
 * a surrogate nor past U+10FFFF. Each byte of anything else is one U+FFFD. Returns the count; *bad
 * gets the number of U+FFFD that stand for bad bytes. */
static size_t ref_decode(const unsigned char *s, size_t n, uint32_t *cps, size_t *bad) {
    static const uint32_t SHORTEST[5] = {0, 0, 0x80, 0x800, 0x10000}; /* least code point per length */
    size_t k = 0;
    *bad = 0;
    for (size_t i = 0; i < n;) {
        unsigned char b = s[i];
        size_t len = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
        uint32_t cp = len == 1 ? b : len == 2 ? b & 0x1Fu : len == 3 ? b & 0x0Fu : b & 0x07u;
        int ok = len != 0 && i + len <= n;
        for (size_t j = 1; ok && j < len; j++) {
            ok = (s[i + j] & 0xC0) == 0x80;
            cp = cp << 6 | (s[i + j] & 0x3Fu);
        }
        if (ok && len > 1) ok = cp >= SHORTEST[len] && (cp < 0xD800 || cp > 0xDFFF) && cp <= 0x10FFFF;
        if (!ok) {
            cps[k++] = 0xFFFD, (*bad)++, i++;
            continue;
        }
        cps[k++] = cp;
        i += len;
    }
    return k;
}

static size_t utf8_encode(uint32_t cp, unsigned char *out) {
    if (cp < 0x80) return out[0] = (unsigned char)cp, 1;
    if (cp < 0x800) return out[0] = (unsigned char)(0xC0 | cp >> 6), out[1] = (unsigned char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | cp >> 12), out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | cp >> 18), out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)), out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Encodes in[0, n), has yyjson parse the output strictly (no invalid UTF-8, no raw control
 * characters) and checks the string it holds is exactly the code points ref_decode reads in the
 * input. Returns how many input bytes were not UTF-8. */
static size_t check_round_trip(sink *s, const unsigned char *in, size_t n) {
    static uint32_t want[IN_MAX], got[IN_MAX];
    assert_true(n <= IN_MAX);
    encode(s, in, n);
    yyjson_read_err e;
    yyjson_doc *doc = yyjson_read_opts(s->data, s->n, 0, NULL, &e);
    if (!doc) {
        char hex[3 * 16 + 1] = "";
        for (size_t i = 0; i < n && i < 16; i++) snprintf(hex + 3 * i, 4, "%02x ", in[i]);
        fail_msg("input %s(%zu bytes): %.*s does not parse: %s at byte %zu", hex, n, (int)s->n, s->data, e.msg, e.pos);
    }
    yyjson_val *v = yyjson_doc_get_root(doc);
    assert_true(yyjson_is_str(v));
    size_t bad_in, bad_out;
    size_t n_want = ref_decode(in, n, want, &bad_in);
    size_t n_got = ref_decode((const unsigned char *)yyjson_get_str(v), yyjson_get_len(v), got, &bad_out);
    assert_int_equal(bad_out, 0); /* yyjson's own check, restated */
    assert_int_equal(n_got, n_want);
    assert_memory_equal(got, want, n_want * sizeof want[0]);
    yyjson_doc_free(doc);
    return bad_in;
}

static int setup(void **state) {
    sink *s = calloc(1, sizeof *s);
    if (!s || !(s->data = malloc(OUT_MAX))) return free(s), -1;
    *state = s;
    return 0;
}

static int teardown(void **state) {
    sink *s = *state;
    free(s->data);
    free(s);
    return 0;
}

/* ---- exact bytes ---------------------------------------------------------------------------------- */

static const struct {
    const char *in;   /* input bytes */
    size_t len;       /* their count (inputs may hold NUL) */
    const char *want; /* the exact output */
} EXACT[] = {
    {"", 0, "\"\""},
    {"plain text", 10, "\"plain text\""},
    {"dot\xff\xfe", 5, "\"dot\\ufffd\\ufffd\""},                          /* issue 22's op name */
    {"a\"b\\c/", 6, "\"a\\\"b\\\\c/\""},                                 /* / needs no escape */
    {"\b\f\n\r\t", 5, "\"\\b\\f\\n\\r\\t\""},                            /* JSON's short forms */
    {"\x00\x01\x1f\x7f", 4, "\"\\u0000\\u0001\\u001f\\u007f\""},           /* others, DEL too */
    {"\x0b\x1b", 2, "\"\\u000b\\u001b\""},                                 /* lower-case hex */
    {"\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e", 9, "\"\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e\""}, /* copied */
    {"\xc2\x80\xdf\xbf", 4, "\"\xc2\x80\xdf\xbf\""},                       /* C1 controls are UTF-8 */
    {"\xef\xbf\xbd", 3, "\"\xef\xbf\xbd\""},                               /* U+FFFD itself, copied */
    {"\xf4\x8f\xbf\xbf", 4, "\"\xf4\x8f\xbf\xbf\""},                       /* U+10FFFF, the last */
    {"\xc0\xaf", 2, "\"\\ufffd\\ufffd\""},                                 /* overlong '/' */
    {"\xe0\x80\xaf", 3, "\"\\ufffd\\ufffd\\ufffd\""},                       /* overlong, 3 bytes */
    {"\xf0\x80\x80\xaf", 4, "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},             /* overlong, 4 bytes */
    {"\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\""},                       /* surrogate U+D800 */
    {"\xf4\x90\x80\x80", 4, "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},             /* U+110000 */
    {"\xe2\x82x", 3, "\"\\ufffd\\ufffdx\""},                              /* cut short */
    {"ab\xe2\x82", 4, "\"ab\\ufffd\\ufffd\""},                             /* cut short by the end */
    {"\x80\xbf", 2, "\"\\ufffd\\ufffd\""},                                 /* stray continuations */
};

static void every_rule_writes_exact_bytes(void **state) {
    sink *s = *state;
    for (size_t i = 0; i < sizeof EXACT / sizeof EXACT[0]; i++) {
        encode(s, EXACT[i].in, EXACT[i].len);
        s->data[s->n] = '\0';
        assert_string_equal(s->data, EXACT[i].want);
    }
}

/* Any room from JP_JSON_UNIT_MAX up gives the same bytes as one call: no character or escape is
 * ever cut in two. */
static void pieces_join_to_the_whole(void **state) {
    sink *s = *state;
    char *whole = malloc(OUT_MAX);
    assert_non_null(whole);
    for (size_t i = 0; i < sizeof EXACT / sizeof EXACT[0]; i++)
        for (size_t room = JP_JSON_UNIT_MAX; room < 16; room++) {
            encode_in_pieces(s, EXACT[i].in, EXACT[i].len, room);
            assert_int_equal(s->n, strlen(EXACT[i].want));
            assert_memory_equal(s->data, EXACT[i].want, s->n);
        }
    unsigned char mixed[300]; /* plain runs longer than the room, between every kind of unit */
    static const char UNITS[][5] = {"\n", "\"", "\xc3\xa9", "\xf0\x9d\x84\x9e", "\xff", "\x01"};
    for (size_t i = 0, u = 0; i < sizeof mixed; u++) {
        for (size_t j = 0; j < u % 23 && i < sizeof mixed; j++) mixed[i++] = 'a';
        for (const char *c = UNITS[u % 6]; *c && i < sizeof mixed; c++) mixed[i++] = (unsigned char)*c;
    }
    encode(s, mixed, sizeof mixed);
    size_t n = s->n;
    memcpy(whole, s->data, n);
    for (size_t room = JP_JSON_UNIT_MAX; room < 64; room++) {
        encode_in_pieces(s, mixed, sizeof mixed, room);
        assert_int_equal(s->n, n);
        assert_memory_equal(s->data, whole, n);
    }
    free(whole);
    /* with less room than a unit it may stop before one, but never writes past cap */
    char small[4];
    size_t pos = 0;
    assert_int_equal(jp_json_escape(small, sizeof small, "ab\n", 3, &pos), 2);
    assert_int_equal(pos, 2);
    pos = 0;
    assert_int_equal(jp_json_escape(small, 0, "ab", 2, &pos), 0);
    assert_int_equal(pos, 0);
}

static void file_forms_write_the_same(void **state) {
    sink *s = *state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    jp_json_fput_str(f, "op\xff\"", 4);
    jp_json_fput_str(f, NULL, 0);
    jp_json_fput_cstr(f, NULL);
    jp_json_fput_cstr(f, "x\ty");
    assert_int_equal(fclose(f), 0);
    assert_string_equal(text, "\"op\\ufffd\\\"\"" "\"\"" "\"\"" "\"x\\ty\"");
    free(text);
    /* longer than the FILE form's own buffer, with escapes across its edges */
    char in[2000];
    for (size_t i = 0; i < sizeof in; i++) in[i] = i % 7 == 0 ? '\n' : i % 11 == 0 ? '\xff' : 'x';
    f = open_memstream(&text, &len);
    assert_non_null(f);
    jp_json_fput_str(f, in, sizeof in);
    assert_int_equal(fclose(f), 0);
    encode(s, in, sizeof in);
    assert_int_equal(len, s->n);
    assert_memory_equal(text, s->data, len);
    free(text);
}

/* A 4 MB name (issue 30: `ops --json` on one took 19.6 s, the rest of the string scanned again
 * every 255 bytes): its first MB has a quote, a newline, an e-acute or a bad byte every 25,013
 * bytes, its last 3 MB are one plain run (minutes for the old encoder). The FILE form and 300-byte
 * pieces write exactly the expected bytes, built here byte by byte, not by the encoder. */
static void multi_megabyte_string_is_written_exactly(void **state) {
    (void)state;
    enum { BIG = 4 << 20, EVERY = 25013, MIXED = 1 << 20 };
    static const char *const SPECIAL_IN[4] = {"\"", "\n", "\xc3\xa9", "\xff"};
    static const char *const SPECIAL_OUT[4] = {"\\\"", "\\n", "\xc3\xa9", "\\ufffd"};
    char *in = malloc(BIG), *want = malloc(2 * (size_t)BIG);
    assert_non_null(in);
    assert_non_null(want);
    size_t n = 0, w = 0, k = 0;
    want[w++] = '"';
    while (n < BIG - 8) {
        if (n < MIXED && n % EVERY == EVERY - 1) {
            const char *a = SPECIAL_IN[k % 4], *b = SPECIAL_OUT[k % 4];
            k++;
            memcpy(in + n, a, strlen(a)), n += strlen(a);
            memcpy(want + w, b, strlen(b)), w += strlen(b);
            continue;
        }
        in[n] = want[w] = (char)('a' + n % 26);
        n++, w++;
    }
    want[w++] = '"';
    assert_true(k > 40);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    jp_json_fput_str(f, in, n);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(len, w);
    assert_memory_equal(text, want, w);
    free(text);
    char piece[300];
    size_t pos = 0, o = 1;
    while (pos < n) {
        size_t got = jp_json_escape(piece, sizeof piece, in, n, &pos);
        assert_true(got > 0 && got <= sizeof piece);
        assert_memory_equal(piece, want + o, got);
        o += got;
    }
    assert_int_equal(o, w - 1);
    free(in);
    free(want);
}

/* ---- every input ---------------------------------------------------------------------------------- */

static void every_byte_alone(void **state) {
    sink *s = *state;
    size_t bad = 0;
    for (unsigned b = 0; b < 256; b++) {
        unsigned char in[3] = {'<', (unsigned char)b, '>'};
        bad += check_round_trip(s, in + 1, 1);
        bad += check_round_trip(s, in, 3);
    }
    assert_int_equal(bad, 2 * 128); /* alone, no byte from 0x80 up is UTF-8 */
}

static void every_code_point(void **state) {
    sink *s = *state;
    unsigned char in[IN_MAX];
    size_t n = 0, k = 0, count = 0;
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        n += utf8_encode(cp, in + n);
        count++;
        if (++k == BATCH_CPS || cp == 0x10FFFF) {
            assert_int_equal(check_round_trip(s, in, n), 0);
            n = k = 0;
        }
    }
    assert_int_equal(count, 0x110000 - 0x800);
}

/* Every lead byte from 0x80 up with every second byte, then each of these tails: the complete,
 * the cut-short and the broken forms of every sequence length. */
static const unsigned char TAILS[][3] = {
    {0}, {0x80}, {0x80, 0x80}, {0xBF, 0xBF}, {0x80, 0x41}, {0x41}, {0xC0}, {0xFF, 0x80}, {0x9F, 0xBF, 0x80},
};
static const size_t TAIL_LEN[] = {0, 1, 2, 2, 2, 1, 1, 2, 3};
_Static_assert(sizeof TAILS / sizeof TAILS[0] == sizeof TAIL_LEN / sizeof TAIL_LEN[0], "a length per tail");

static void every_two_byte_start_with_each_tail(void **state) {
    sink *s = *state;
    size_t valid = 0;
    for (unsigned b1 = 0x80; b1 < 256; b1++)
        for (unsigned b2 = 0; b2 < 256; b2++)
            for (size_t t = 0; t < sizeof TAILS / sizeof TAILS[0]; t++) {
                unsigned char in[5] = {(unsigned char)b1, (unsigned char)b2};
                memcpy(in + 2, TAILS[t], TAIL_LEN[t]);
                valid += check_round_trip(s, in, 2 + TAIL_LEN[t]) == 0;
            }
    /* Inputs that are wholly UTF-8, counted by hand from Unicode's table 3-7: a two-byte character
     * (C2-DF, then 80-BF: 30 * 64 = 1920) with no tail or with tail {41}; a three-byte one (E0 A0-BF,
     * E1-EC 80-BF, ED 80-9F, EE-EF 80-BF: 32 + 768 + 32 + 128 = 960) closed by tail {80} or {80 41};
     * a four-byte one (F0 90-BF, F1-F3 80-BF, F4 80-8F: 48 + 192 + 16 = 256) closed by {80 80} or
     * {BF BF}. Every other input holds a byte that is not UTF-8. */
    assert_int_equal(valid, 1920 + 1920 + 960 + 960 + 256 + 256);
}

static void random_strings(void **state) {
    sink *s = *state;
    /* bytes drawn mostly from where the rules change, so sequences form and break often */
    static const unsigned char PICK[] = {0x00, 0x09, 0x0a, 0x1f, 0x20, '"', '\\', 'a', 0x7f, 0x80, 0x8f,
                                         0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xed,
                                         0xee, 0xef, 0xf0, 0xf1, 0xf4, 0xf5, 0xff};
    uint64_t x = 0x9E3779B97F4A7C15u; /* a fixed seed: the same strings every run */
    unsigned char in[24];
    for (size_t i = 0; i < RANDOM_STRINGS; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        size_t n = (size_t)(x >> 59) % sizeof in;
        for (size_t j = 0; j < n; j++) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            unsigned r = (unsigned)(x >> 33);
            in[j] = r & 1 ? PICK[(r >> 1) % sizeof PICK] : (unsigned char)(r >> 8);
        }
        check_round_trip(s, in, n);
        char whole[6 * sizeof in + 2];
        size_t n_whole = s->n;
        memcpy(whole, s->data, n_whole);
        encode_in_pieces(s, in, n, JP_JSON_UNIT_MAX + i % 8);
        assert_int_equal(s->n, n_whole);
        assert_memory_equal(s->data, whole, n_whole);
    }
}

/* jp_json_fput_ms writes the bytes printf("%.6f", ps / 1e9) writes: every rounding case (the last
 * three digits 0-999 around many magnitudes), random times up to 1,000 s and past it, negatives. */
static void milliseconds_write_as_printf_does(void **state) {
    (void)state;
    char *got = NULL, want[64];
    size_t len = 0;
    uint64_t x = 2463534242u; /* xorshift64 */
    for (int i = 0; i < 400000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int64_t ps;
        if (i < 200000) ps = (int64_t)(x % 1000000000000000) / 1000 * 1000 + i % 1000; /* each last-3 */
        else if (i < 300000) ps = (int64_t)(x % 2000000000000000); /* also past 1,000 s */
        else if (i < 399990) ps = (int64_t)(x % 200000) - 100000; /* around zero, negatives */
        else ps = (int64_t[]){0, 1, 499, 500, 501, 999999999999499, 999999999999500, 999999999999501,
                              999999999999999, 1000000000000000}[i - 399990];
        FILE *out = open_memstream(&got, &len);
        assert_non_null(out);
        jp_json_fput_ms(out, ps);
        fclose(out);
        snprintf(want, sizeof want, "%.6f", (double)ps / 1e9);
        if (strcmp(got, want) != 0) fail_msg("%lld ps: wrote %s, printf writes %s", (long long)ps, got, want);
        free(got);
        got = NULL;
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(milliseconds_write_as_printf_does),
        cmocka_unit_test_setup_teardown(every_rule_writes_exact_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(pieces_join_to_the_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(file_forms_write_the_same, setup, teardown),
        cmocka_unit_test(multi_megabyte_string_is_written_exactly),
        cmocka_unit_test_setup_teardown(every_byte_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(every_code_point, setup, teardown),
        cmocka_unit_test_setup_teardown(every_two_byte_start_with_each_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(random_strings, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
