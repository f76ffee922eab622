/* pbwrite.h - a tiny protobuf writer for building test inputs (tests only). */
#ifndef JP_TESTS_PBWRITE_H
#define JP_TESTS_PBWRITE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct pbw {
    uint8_t *buf;
    size_t len, cap;
} pbw;

static inline void pbw_raw(pbw *w, const void *p, size_t n) {
    if (n == 0) return; /* an empty message's buffer is NULL: memcpy must not see it */
    if (w->len + n > w->cap) {
        w->cap = (w->len + n) * 2 + 64;
        w->buf = realloc(w->buf, w->cap);
    }
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

static inline void pbw_varint(pbw *w, uint64_t v) {
    uint8_t b[10];
    size_t n = 0;
    do {
        b[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) b[n] |= 0x80;
        n++;
    } while (v);
    pbw_raw(w, b, n);
}

static inline void pbw_uint(pbw *w, uint32_t field, uint64_t v) {
    pbw_varint(w, (uint64_t)field << 3);
    pbw_varint(w, v);
}

static inline void pbw_double(pbw *w, uint32_t field, double d) {
    uint64_t u;
    uint8_t b[8];
    memcpy(&u, &d, 8);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(u >> (8 * i));
    pbw_varint(w, (uint64_t)field << 3 | 1);
    pbw_raw(w, b, 8);
}

static inline void pbw_bytes(pbw *w, uint32_t field, const void *p, size_t n) {
    pbw_varint(w, (uint64_t)field << 3 | 2);
    pbw_varint(w, n);
    pbw_raw(w, p, n);
}

static inline void pbw_str(pbw *w, uint32_t field, const char *s) { pbw_bytes(w, field, s, strlen(s)); }

/* Appends sub as a length-delimited field and frees it. */
static inline void pbw_msg(pbw *w, uint32_t field, pbw *sub) {
    pbw_bytes(w, field, sub->buf, sub->len);
    free(sub->buf);
    memset(sub, 0, sizeof *sub);
}

/* One XPlane.stat_metadata entry (field 5): id -> XStatMetadata {id, name}. */
static inline void pbw_stat_meta(pbw *plane, uint64_t id, const char *name) {
    pbw meta = {0}, entry = {0};
    pbw_uint(&meta, 1, id);
    pbw_str(&meta, 2, name);
    pbw_uint(&entry, 1, id);
    pbw_msg(&entry, 2, &meta);
    pbw_msg(plane, 5, &entry);
}

/* One XPlane.event_metadata entry (field 4): id -> XEventMetadata {id, name, stats}; stats (NULL:
 * none) are the metadata's encoded XStat fields, consumed. */
static inline void pbw_event_meta(pbw *plane, uint64_t id, const char *name, pbw *stats) {
    pbw meta = {0}, entry = {0};
    pbw_uint(&meta, 1, id);
    pbw_str(&meta, 2, name);
    if (stats && stats->len) pbw_raw(&meta, stats->buf, stats->len);
    if (stats) free(stats->buf), memset(stats, 0, sizeof *stats);
    pbw_uint(&entry, 1, id);
    pbw_msg(&entry, 2, &meta);
    pbw_msg(plane, 4, &entry);
}

/* data as one gzip member (level 9), in a new buffer; aborts if zlib fails (tests only). */
static inline uint8_t *pbw_gzip(const void *data, size_t n, size_t *out_len) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
    size_t cap = deflateBound(&z, (uLong)n) + 64;
    uint8_t *out = malloc(cap);
    if (!out) abort();
    z.next_in = (Bytef *)(uintptr_t)data;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) abort();
    *out_len = z.total_out;
    deflateEnd(&z);
    return out;
}

#endif
