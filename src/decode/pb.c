/* pb.c - protobuf wire decoding: varints, tags, and length-delimited payloads, all bounds-checked. */
#include "decode/pb.h"

#include <string.h>

#include "base/error.h"

size_t jp_pb_varint_slow(const uint8_t *p, const uint8_t *end, uint64_t *out) {
    uint64_t v = 0;
    for (size_t i = 0; i < 10; i++) {
        if (p + i >= end) return 0;
        uint8_t b = p[i];
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            if (i == 9 && b > 1) return 0; /* more than 64 bits */
            *out = v;
            return i + 1;
        }
    }
    return 0;
}

static uint64_t read_le(const uint8_t *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Why jp_pb_varint read nothing at p: the bytes ran out (0), or they are no varint (1): ten bytes
 * with the continuation bit set, or a tenth byte carrying bits past the 64th. */
static int varint_malformed(const uint8_t *p, const uint8_t *end) {
    size_t avail = (size_t)(end - p);
    for (size_t i = 0; i < 10 && i < avail; i++)
        if (!(p[i] & 0x80)) return i == 9 && p[i] > 1;
    return avail >= 10;
}

/* The error for a varint that could not be read at offset: malformed (JP_ERR_CORRUPT), or cut
 * short by the end of the message (JP_ERR_TRUNCATED, `expected` says what was being read). */
static int bad_varint(jp_error *err, const uint8_t *p, const uint8_t *end, uint64_t offset, const char *what,
                      const char *expected) {
    if (varint_malformed(p, end))
        return jp_error_set(err, JP_ERR_CORRUPT, offset,
                            "malformed varint at byte %llu in %s: %s (a varint holds at most 10 bytes, 64 bits)",
                            (unsigned long long)offset, what,
                            end - p >= 10 && (p[9] & 0x80) ? "more than 10 bytes" : "its 10th byte sets bits past 64");
    return jp_error_set(err, JP_ERR_TRUNCATED, offset, "truncated %s at byte %llu: expected %s", what,
                        (unsigned long long)offset, expected);
}

static int truncated(jp_error *err, uint64_t offset, const char *what, const char *expected) {
    return jp_error_set(err, JP_ERR_TRUNCATED, offset, "truncated %s at byte %llu: expected %s", what,
                        (unsigned long long)offset, expected);
}

int jp_pb_next_slow(jp_pb *c, jp_pb_field *f, const char *what, jp_error *err) {
    uint64_t tag;
    f->offset = jp_pb_offset(c);
    size_t n = jp_pb_varint(c->p, c->end, &tag);
    if (!n) return bad_varint(err, c->p, c->end, f->offset, what, "a field tag");
    c->p += n;
    f->number = (uint32_t)(tag >> 3);
    f->wire = (uint32_t)(tag & 7);
    if (f->number == 0 || tag >> 3 > 536870911u) {
        return jp_error_set(err, JP_ERR_CORRUPT, f->offset, "corrupt %s at byte %llu: invalid field number %llu",
                            what, (unsigned long long)f->offset, (unsigned long long)(tag >> 3));
    }
    size_t left = (size_t)(c->end - c->p);
    switch (f->wire) {
    case JP_PB_VARINT:
        n = jp_pb_varint(c->p, c->end, &f->u);
        if (!n) return bad_varint(err, c->p, c->end, jp_pb_offset(c), what, "a varint value");
        c->p += n;
        return JP_OK;
    case JP_PB_I64:
        if (left < 8) return truncated(err, jp_pb_offset(c), what, "8 bytes of a fixed64");
        f->u = read_le(c->p, 8);
        c->p += 8;
        return JP_OK;
    case JP_PB_I32:
        if (left < 4) return truncated(err, jp_pb_offset(c), what, "4 bytes of a fixed32");
        f->u = read_le(c->p, 4);
        c->p += 4;
        return JP_OK;
    case JP_PB_LEN: {
        uint64_t len;
        n = jp_pb_varint(c->p, c->end, &len);
        if (!n) return bad_varint(err, c->p, c->end, jp_pb_offset(c), what, "a length");
        c->p += n;
        if (len > (uint64_t)(c->end - c->p)) {
            return jp_error_set(err, JP_ERR_TRUNCATED, f->offset,
                                "truncated %s at byte %llu: field %u claims %llu bytes, %llu remain", what,
                                (unsigned long long)f->offset, f->number, (unsigned long long)len,
                                (unsigned long long)(c->end - c->p));
        }
        f->data = c->p;
        f->len = (size_t)len;
        c->p += len;
        return JP_OK;
    }
    default:
        return jp_error_set(err, JP_ERR_CORRUPT, f->offset, "corrupt %s at byte %llu: unsupported wire type %u",
                            what, (unsigned long long)f->offset, f->wire);
    }
}
