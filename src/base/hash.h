/* hash.h - the 64-bit hashes the interning table and the map share (internal, header only). */
#ifndef JP_BASE_HASH_H
#define JP_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A finaliser that spreads every input bit over the low bits the tables mask with. */
static inline uint64_t jp_hash_mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* Eight bytes per step, each word folded in by a multiply: kernel details and op names run to
 * hundreds of bytes and are hashed once per event. No seed needed (inputs are not adversarial to a
 * hash table that only slows down, never fails, on collisions). */
static inline uint64_t jp_hash_bytes(const char *s, size_t len) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ len, w;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    if (i < len) {
        w = 0;
        memcpy(&w, s + i, len - i);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
    }
    return jp_hash_mix(h);
}

#endif
