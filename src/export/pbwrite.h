/* pbwrite.h - a growable protobuf wire-format writer for the outputs that write protobuf
 * (Perfetto traces, pprof profiles) (internal). */
#ifndef JP_OUTPUTS_PBWRITE_H
#define JP_OUTPUTS_PBWRITE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { JP_PBW_MAX_DEPTH = 64 };

/* A message under construction; nested messages get a 4-byte length patched when they close
 * (a redundant varint, as Perfetto's own protozero writes, so no second pass is needed). */
typedef struct jp_pbw {
    uint8_t *p;
    size_t n, cap;
    size_t open[JP_PBW_MAX_DEPTH]; /* offsets of the length fields of open messages */
    int depth;
    int failed;             /* out of memory */
} jp_pbw;

static inline void jp_pbw_grow(jp_pbw *b, size_t need) {
    if (b->n + need <= b->cap || b->failed) return;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->n + need) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return;
    }
    b->p = p;
    b->cap = cap;
}

static inline void jp_pbw_varint(jp_pbw *b, uint64_t v) {
    jp_pbw_grow(b, 10);
    if (b->failed) return;
    while (v >= 0x80) {
        b->p[b->n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->p[b->n++] = (uint8_t)v;
}

static inline void jp_pbw_tag(jp_pbw *b, uint32_t field, uint32_t wire) { jp_pbw_varint(b, (uint64_t)field << 3 | wire); }
static inline void jp_pbw_uint(jp_pbw *b, uint32_t field, uint64_t v) { jp_pbw_tag(b, field, 0), jp_pbw_varint(b, v); }

static inline void jp_pbw_fixed64(jp_pbw *b, uint32_t field, uint64_t v) {
    jp_pbw_tag(b, field, 1);
    jp_pbw_grow(b, 8);
    if (b->failed) return;
    for (int i = 0; i < 8; i++) b->p[b->n++] = (uint8_t)(v >> (8 * i));
}

static inline void jp_pbw_bytes(jp_pbw *b, uint32_t field, const void *p, size_t len) {
    jp_pbw_tag(b, field, 2);
    jp_pbw_varint(b, len);
    jp_pbw_grow(b, len);
    if (b->failed || !len) return; /* an empty name may be {NULL, 0}: memcpy must not see NULL */
    memcpy(b->p + b->n, p, len);
    b->n += len;
}

static inline void jp_pbw_open(jp_pbw *b, uint32_t field) {
    jp_pbw_tag(b, field, 2);
    jp_pbw_grow(b, 4);
    if (b->failed || b->depth == JP_PBW_MAX_DEPTH) {
        b->failed = 1;
        return;
    }
    b->open[b->depth++] = b->n;
    b->n += 4;
}

static inline void jp_pbw_close(jp_pbw *b) {
    if (b->failed) return;
    size_t at = b->open[--b->depth], len = b->n - at - 4;
    if (len >> 28) { /* past what the 4-byte length holds: fail rather than write a wrong length */
        b->failed = 1;
        return;
    }
    for (int i = 0; i < 4; i++) b->p[at + (size_t)i] = (uint8_t)(((len >> (7 * i)) & 0x7f) | (i < 3 ? 0x80 : 0));
}


#endif
