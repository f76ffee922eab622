/* floor.c - the floor any reader of an XSpace pays (issue 34): read the file (inflate it when gzip),
 * then walk every plane, line, event, metadata entry and stat with bounds-checked varint and length
 * decoding, counting as it goes. It builds no model and keeps nothing, so `jaxprof report` can be
 * measured against it in ns per event. Standalone on purpose: it must not share the library's
 * decoder, or the library's costs would be in the floor.
 *
 *     floor FILE.xplane.pb[.gz]  ->  {"events":N,"stats":N,"bytes":N,"seconds":S,...}
 *
 * Exit 0 when the file walks cleanly, 1 when it cannot be read, 2 when it is malformed (stderr names
 * the byte offset in the serialized XSpace). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

/* The decoding primitives are inlined into each message's loop, as a tuned reader's would be. */
#if defined(__GNUC__)
#define HOT inline __attribute__((always_inline))
#else
#define HOT inline
#endif

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5 };

typedef struct {
    const uint8_t *base; /* start of the serialized XSpace: offsets in errors are from here */
    uint64_t planes, lines, events, stats, metadata;
    uint64_t sum;        /* a checksum of the values read, so the compiler cannot drop the reads */
    size_t bad_at;       /* offset of the first malformed byte */
    const char *bad_what;
} walk;

typedef struct {
    uint32_t number, wire;
    uint64_t u;          /* VARINT, I64, I32 */
    const uint8_t *data; /* LEN */
    const uint8_t *start; /* the field's tag: where errors about it point */
    size_t len;
} field;

typedef struct {
    const uint8_t *p, *end;
} cursor;

static int fail(walk *w, const uint8_t *at, const char *what) {
    w->bad_at = (size_t)(at - w->base);
    w->bad_what = what;
    return -1;
}

/* A varint of at most 10 bytes that ends before `end`. One-byte varints (most tags, ids and small
 * values) take the inlined fast path; the loop is the general case. */
static int varint_slow(walk *w, cursor *c, uint64_t *out) {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (c->p >= c->end) return fail(w, c->p, "truncated varint");
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return fail(w, c->p, "varint longer than 10 bytes");
}

/* With 8 bytes at hand, a varint of up to 9 bytes is found and packed in one 64-bit word, as the
 * library's reader does (jp_pb_varint9), so that the floor is no slower at this than jaxprof. */
static HOT int varint(walk *w, cursor *c, uint64_t *out) {
    if (c->p < c->end && *c->p < 0x80) {
        *out = *c->p++;
        return 0;
    }
    if (c->end - c->p >= 9) {
        uint64_t x;
        memcpy(&x, c->p, sizeof x);
        uint64_t stops = ~x & UINT64_C(0x8080808080808080);
        if (stops || c->p[8] < 0x80) {
            size_t n = stops ? (size_t)__builtin_ctzll(stops) / 8 + 1 : 8;
            if (n < 8) x &= (UINT64_C(1) << (8 * n)) - 1;
            x &= UINT64_C(0x7f7f7f7f7f7f7f7f);
            x = (x & UINT64_C(0x007f007f007f007f)) | ((x & UINT64_C(0x7f007f007f007f00)) >> 1);
            x = (x & UINT64_C(0x00003fff00003fff)) | ((x & UINT64_C(0x3fff00003fff0000)) >> 2);
            x = (x & UINT64_C(0x000000000fffffff)) | ((x & UINT64_C(0x0fffffff00000000)) >> 4);
            if (!stops) x |= (uint64_t)c->p[8] << 56, n = 9;
            *out = x;
            c->p += n;
            return 0;
        }
    }
    return varint_slow(w, c, out);
}

static uint64_t fixed(const uint8_t *p, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Reads the next field; returns 1 for a field, 0 at the end of the message, -1 when malformed. */
static HOT int next(walk *w, cursor *c, field *f) {
    if (c->p >= c->end) return 0;
    const uint8_t *start = f->start = c->p;
    uint64_t tag;
    if (varint(w, c, &tag)) return -1;
    f->number = (uint32_t)(tag >> 3);
    f->wire = (uint32_t)(tag & 7);
    if (f->number == 0 || tag >> 32) return fail(w, start, "invalid field number");
    size_t left;
    switch (f->wire) {
    case WIRE_VARINT: return varint(w, c, &f->u) ? -1 : 1;
    case WIRE_I64:
    case WIRE_I32: {
        unsigned n = f->wire == WIRE_I64 ? 8 : 4;
        if ((size_t)(c->end - c->p) < n) return fail(w, c->p, "truncated fixed-width value");
        f->u = fixed(c->p, n);
        c->p += n;
        return 1;
    }
    case WIRE_LEN:
        if (varint(w, c, &f->u)) return -1;
        left = (size_t)(c->end - c->p);
        if (f->u > left) return fail(w, start, "length past the end of its message");
        f->data = c->p;
        f->len = (size_t)f->u;
        c->p += f->len;
        return 1;
    default: return fail(w, start, "unknown wire type");
    }
}

static int want(walk *w, const field *f, uint32_t wire) {
    return f->wire == wire ? 0 : fail(w, f->start, "field has the wrong wire type");
}

/* A submessage's bytes as a cursor. */
static cursor sub(const field *f) {
    return (cursor){f->data, f->data + f->len};
}

/* Walks a message whose fields are all scalars or strings: counted into the checksum. */
static int walk_flat(walk *w, cursor c) {
    field f;
    int r;
    while ((r = next(w, &c, &f)) > 0) w->sum += f.wire == WIRE_LEN ? f.len : f.u;
    return r;
}

/* XStat: metadata_id = 1; double = 2 (fixed64); uint64 = 3; int64 = 4; str = 5; bytes = 6;
 * ref = 7; compressed_str = 8. */
static int walk_stat(walk *w, cursor c) {
    field f;
    int r;
    w->stats++;
    while ((r = next(w, &c, &f)) > 0) {
        switch (f.number) {
        case 1: case 3: case 4: case 7:
            if (want(w, &f, WIRE_VARINT)) return -1;
            w->sum += f.u;
            break;
        case 2:
            if (want(w, &f, WIRE_I64)) return -1;
            w->sum += f.u;
            break;
        case 5: case 6: case 8:
            if (want(w, &f, WIRE_LEN)) return -1;
            w->sum += f.len;
            break;
        default: break; /* unknown fields are skipped, as protobuf does */
        }
    }
    return r;
}

/* XEvent: metadata_id = 1; offset_ps = 2; duration_ps = 3; stats = 4; num_occurrences = 5. */
static int walk_event(walk *w, cursor c) {
    field f;
    int r;
    w->events++;
    while ((r = next(w, &c, &f)) > 0) {
        switch (f.number) {
        case 1: case 2: case 3: case 5:
            if (want(w, &f, WIRE_VARINT)) return -1;
            w->sum += f.u;
            break;
        case 4:
            if (want(w, &f, WIRE_LEN) || walk_stat(w, sub(&f))) return -1;
            break;
        default: break;
        }
    }
    return r;
}

/* XLine: id = 1; name = 2; timestamp_ns = 3; events = 4; duration_ps = 9; display_id = 10;
 * display_name = 11. */
static int walk_line(walk *w, cursor c) {
    field f;
    int r;
    w->lines++;
    while ((r = next(w, &c, &f)) > 0) {
        if (f.number == 4) {
            if (want(w, &f, WIRE_LEN) || walk_event(w, sub(&f))) return -1;
        } else {
            w->sum += f.wire == WIRE_LEN ? f.len : f.u;
        }
    }
    return r;
}

/* XEventMetadata: id = 1; name = 2; metadata = 3; display_name = 4; stats = 5; child_id = 6. */
static int walk_event_meta(walk *w, cursor c) {
    field f;
    int r;
    w->metadata++;
    while ((r = next(w, &c, &f)) > 0) {
        if (f.number == 5) {
            if (want(w, &f, WIRE_LEN) || walk_stat(w, sub(&f))) return -1;
        } else {
            w->sum += f.wire == WIRE_LEN ? f.len : f.u;
        }
    }
    return r;
}

/* A map entry: key = 1 (int64), value = 2 (the message, walked by `value`). */
static int walk_entry(walk *w, cursor c, int (*value)(walk *, cursor)) {
    field f;
    int r;
    while ((r = next(w, &c, &f)) > 0) {
        if (f.number == 1) {
            if (want(w, &f, WIRE_VARINT)) return -1;
            w->sum += f.u;
        } else if (f.number == 2) {
            if (want(w, &f, WIRE_LEN) || value(w, sub(&f))) return -1;
        }
    }
    return r;
}

/* XStatMetadata: id = 1; name = 2; description = 3. */
static int walk_stat_meta(walk *w, cursor c) {
    w->metadata++;
    return walk_flat(w, c);
}

/* XPlane: id = 1; name = 2; lines = 3; event_metadata = 4; stat_metadata = 5; stats = 6. */
static int walk_plane(walk *w, cursor c) {
    field f;
    int r;
    w->planes++;
    while ((r = next(w, &c, &f)) > 0) {
        int bad = 0;
        switch (f.number) {
        case 3: bad = want(w, &f, WIRE_LEN) || walk_line(w, sub(&f)); break;
        case 4: bad = want(w, &f, WIRE_LEN) || walk_entry(w, sub(&f), walk_event_meta); break;
        case 5: bad = want(w, &f, WIRE_LEN) || walk_entry(w, sub(&f), walk_stat_meta); break;
        case 6: bad = want(w, &f, WIRE_LEN) || walk_stat(w, sub(&f)); break;
        default: w->sum += f.wire == WIRE_LEN ? f.len : f.u; break;
        }
        if (bad) return -1;
    }
    return r;
}

/* XSpace: planes = 1; errors = 2, warnings = 3, hostnames = 4 (strings). */
static int walk_space(walk *w, cursor c) {
    field f;
    int r;
    while ((r = next(w, &c, &f)) > 0) {
        if (f.number == 1) {
            if (want(w, &f, WIRE_LEN) || walk_plane(w, sub(&f))) return -1;
        } else {
            w->sum += f.wire == WIRE_LEN ? f.len : f.u;
        }
    }
    return r;
}

/* The whole file into one heap buffer. */
static uint8_t *read_file(const char *path, size_t *size) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    uint8_t *buf = NULL;
    if (fseek(fp, 0, SEEK_END) == 0) {
        long n = ftell(fp);
        if (n >= 0 && fseek(fp, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL) {
            *size = fread(buf, 1, (size_t)n, fp);
            if (*size != (size_t)n) {
                free(buf);
                buf = NULL;
            }
        }
    }
    fclose(fp);
    return buf;
}

/* Inflates a gzip file (every member); NULL when it is not valid gzip or memory runs out. */
static uint8_t *gunzip(const uint8_t *in, size_t in_len, size_t *out_len) {
    size_t cap = in_len * 4 + 4096, len = 0;
    uint8_t *out = malloc(cap);
    z_stream z;
    memset(&z, 0, sizeof z);
    if (!out || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
        free(out);
        return NULL;
    }
    z.next_in = (Bytef *)(uintptr_t)in;
    int rc = Z_OK;
    size_t fed = 0;
    while (1) {
        if (len == cap) {
            uint8_t *bigger = cap > SIZE_MAX / 2 ? NULL : realloc(out, cap * 2);
            if (!bigger) break;
            out = bigger;
            cap *= 2;
        }
        size_t in_step = in_len - fed > UINT32_MAX ? UINT32_MAX : in_len - fed;
        size_t out_step = cap - len > UINT32_MAX ? UINT32_MAX : cap - len;
        z.next_in = (Bytef *)(uintptr_t)(in + fed);
        z.avail_in = (uInt)in_step;
        z.next_out = out + len;
        z.avail_out = (uInt)out_step;
        rc = inflate(&z, Z_NO_FLUSH);
        fed += in_step - z.avail_in;
        len += out_step - z.avail_out;
        if (rc == Z_STREAM_END) {
            if (fed == in_len) break;
            if (inflateReset(&z) != Z_OK) break; /* another member follows */
            rc = Z_OK;
        } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && z.avail_out == 0)) {
            break;
        } else if (fed == in_len && z.avail_out != 0) {
            rc = Z_DATA_ERROR; /* the input ended inside a member */
            break;
        }
    }
    inflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    *out_len = len;
    return out;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: floor FILE.xplane.pb[.gz]\n");
        return 1;
    }
    double t0 = now();
    size_t size = 0, bytes;
    uint8_t *file = read_file(argv[1], &size), *data = file;
    if (!file) {
        fprintf(stderr, "floor: %s: cannot read\n", argv[1]);
        return 1;
    }
    bytes = size;
    if (size >= 2 && file[0] == 0x1f && file[1] == 0x8b) {
        data = gunzip(file, size, &size);
        if (!data) {
            fprintf(stderr, "floor: %s: malformed gzip at byte 0\n", argv[1]);
            free(file);
            return 2;
        }
    }
    walk w;
    memset(&w, 0, sizeof w);
    w.base = data;
    int r = walk_space(&w, (cursor){data, data + size});
    double seconds = now() - t0;
    if (data != file) free(data);
    free(file);
    if (r < 0) {
        fprintf(stderr, "floor: %s: malformed at byte %zu: %s\n", argv[1], w.bad_at, w.bad_what);
        return 2;
    }
    printf("{\"events\":%llu,\"stats\":%llu,\"bytes\":%zu,\"seconds\":%.6f,\"planes\":%llu,\"lines\":%llu,"
           "\"metadata\":%llu,\"checksum\":%llu}\n",
           (unsigned long long)w.events, (unsigned long long)w.stats, bytes, seconds, (unsigned long long)w.planes,
           (unsigned long long)w.lines, (unsigned long long)w.metadata, (unsigned long long)w.sum);
    return 0;
}
