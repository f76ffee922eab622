/* pb.h - a bounds-checked protobuf wire-format cursor over borrowed bytes (internal). */
#ifndef JP_DECODE_PB_H
#define JP_DECODE_PB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "jaxprof/jaxprof_xspace.h"

enum jp_pb_wire { JP_PB_VARINT = 0, JP_PB_I64 = 1, JP_PB_LEN = 2, JP_PB_I32 = 5 };

/* A read position inside one message. Offsets in errors are relative to `origin`, the start of
 * the whole input, so a message nested anywhere reports its absolute byte offset. */
typedef struct jp_pb {
    const uint8_t *p;      /* next byte to read */
    const uint8_t *end;    /* one past the last byte of this message */
    const uint8_t *origin; /* start of the whole input, for offsets */
} jp_pb;

/* One decoded field header plus its value: varint/fixed values in `u`, LEN payloads in `sub`. */
typedef struct jp_pb_field {
    uint32_t number;  /* field number */
    uint32_t wire;    /* jp_pb_wire */
    uint64_t u;       /* VARINT, I64 or I32 value */
    const uint8_t *data; /* LEN payload start */
    size_t len;       /* LEN payload length */
    uint64_t offset;  /* absolute offset of the field's tag */
} jp_pb_field;

static inline jp_pb jp_pb_make(const uint8_t *data, size_t len, const uint8_t *origin) {
    jp_pb c = {data, data + len, origin};
    return c;
}

static inline int jp_pb_done(const jp_pb *c) { return c->p >= c->end; }

static inline uint64_t jp_pb_offset(const jp_pb *c) { return (uint64_t)(c->p - c->origin); }

/* The multi-byte case of jp_pb_varint. */
size_t jp_pb_varint_slow(const uint8_t *p, const uint8_t *end, uint64_t *out);

/* Reads a varint at *p (< end) into *out; returns bytes consumed, 0 when truncated or > 10 bytes. */
static inline size_t jp_pb_varint(const uint8_t *p, const uint8_t *end, uint64_t *out) {
    if (p < end && *p < 0x80) {
        *out = *p;
        return 1;
    }
    return jp_pb_varint_slow(p, end, out);
}

/* Reads a varint of 1 to 9 bytes (63 bits) from p[0..avail) into *out; returns the bytes it took,
 * or 0 when it is longer or cut short (the caller's general path then decides). With 8 bytes at
 * hand the varint is found and packed in one 64-bit word, without a branch per byte: offsets,
 * durations and ids are varints of 3 to 9 bytes, read once or more for every event. */
static inline size_t jp_pb_varint9(const uint8_t *p, size_t avail, uint64_t *out) {
    if (avail < 8) {
        uint64_t v = 0;
        for (size_t i = 0; i < avail; i++) {
            v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
            if (p[i] < 0x80) {
                *out = v;
                return i + 1;
            }
        }
        return 0;
    }
    uint64_t x;
    memcpy(&x, p, sizeof x);
    uint64_t stops = ~x & UINT64_C(0x8080808080808080); /* the top bit of each byte that ends it */
    size_t n = stops ? (size_t)__builtin_ctzll(stops) / 8 + 1 : 8;
    if (n < 8) x &= (UINT64_C(1) << (8 * n)) - 1;
    x &= UINT64_C(0x7f7f7f7f7f7f7f7f); /* 7 bits a byte, packed in three steps */
    x = (x & UINT64_C(0x007f007f007f007f)) | ((x & UINT64_C(0x7f007f007f007f00)) >> 1);
    x = (x & UINT64_C(0x00003fff00003fff)) | ((x & UINT64_C(0x3fff00003fff0000)) >> 2);
    x = (x & UINT64_C(0x000000000fffffff)) | ((x & UINT64_C(0x0fffffff00000000)) >> 4);
    if (!stops) { /* eight continuation bytes: a ninth must end it */
        if (avail < 9 || p[8] >= 0x80) return 0;
        x |= (uint64_t)p[8] << 56;
        n = 9;
    }
    *out = x;
    return n;
}

/* The general field reader behind jp_pb_next: every wire type, every error. */
int jp_pb_next_slow(jp_pb *c, jp_pb_field *f, const char *what, jp_error *err);

/* Reads the next field. Returns JP_OK, or JP_ERR_TRUNCATED / JP_ERR_CORRUPT with err->offset set
 * (the message names `what`, e.g. "XPlane").
 *
 * Fast path: most fields of an XSpace are a one-byte tag followed by a varint of up to 9 bytes
 * (ids, offsets, durations) or a one-byte length (events, stats). Those are decoded inline when
 * all their bytes lie inside the message; anything else, and every error, goes through
 * jp_pb_next_slow, which gives the same results for the fast cases. */
static inline int jp_pb_next(jp_pb *c, jp_pb_field *f, const char *what, jp_error *err) {
    const uint8_t *p = c->p;
    if (c->end - p >= 2 && p[0] < 0x80 && p[0] >= 8) {
        uint32_t wire = p[0] & 7u;
        if (wire == JP_PB_VARINT) {
            uint64_t v;
            size_t n = jp_pb_varint9(p + 1, (size_t)(c->end - p - 1), &v);
            if (n) {
                f->offset = (uint64_t)(p - c->origin);
                f->number = p[0] >> 3;
                f->wire = wire;
                f->u = v;
                c->p = p + 1 + n;
                return JP_OK;
            }
        } else if (wire == JP_PB_LEN && p[1] < 0x80 && (size_t)(c->end - p - 2) >= p[1]) {
            f->offset = (uint64_t)(p - c->origin);
            f->number = p[0] >> 3;
            f->wire = wire;
            f->data = p + 2;
            f->len = p[1];
            c->p = p + 2 + p[1];
            return JP_OK;
        }
    }
    return jp_pb_next_slow(c, f, what, err);
}

/* A cursor over a LEN field's payload. */
static inline jp_pb jp_pb_sub(const jp_pb *c, const jp_pb_field *f) {
    return jp_pb_make(f->data, f->len, c->origin);
}


#endif
