/* arena.c - bump allocator: a profile's many small objects freed with one call. */
#include "base/arena.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

struct jp_arena_block {
    jp_arena_block *next; /* older block */
    size_t cap;           /* usable bytes in data[] */
    size_t used;          /* bytes handed out from data[] */
    alignas(max_align_t) unsigned char data[];
};

enum { DEFAULT_BLOCK = 64 * 1024, ALIGN = alignof(max_align_t) };

void jp_arena_init(jp_arena *a, size_t block_size) {
    a->head = NULL;
    a->block_size = block_size ? block_size : DEFAULT_BLOCK;
    a->total = 0;
}

void jp_arena_deinit(jp_arena *a) {
    jp_arena_block *b = a->head;
    while (b) {
        jp_arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->total = 0;
}

/* A request larger than a block gets a block of its own, linked behind the head so the head's
 * free tail keeps serving small requests. */
static jp_arena_block *grow(jp_arena *a, size_t size) {
    int oversized = size > a->block_size;
    size_t cap = oversized ? size : a->block_size;
    if (cap > SIZE_MAX - sizeof(jp_arena_block)) return NULL;
    jp_arena_block *b = malloc(sizeof(jp_arena_block) + cap);
    if (!b) return NULL;
    b->cap = cap;
    b->used = 0;
    if (oversized && a->head) {
        b->next = a->head->next;
        a->head->next = b;
    } else {
        b->next = a->head;
        a->head = b;
    }
    a->total += sizeof(jp_arena_block) + cap;
    return b;
}

void *jp_arena_alloc(jp_arena *a, size_t size) {
    if (size > SIZE_MAX - ALIGN) return NULL;
    size_t rounded = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (rounded == 0) rounded = ALIGN;
    jp_arena_block *b = a->head;
    if (!b || b->cap - b->used < rounded) {
        b = grow(a, rounded);
        if (!b) return NULL;
    }
    void *p = b->data + b->used;
    b->used += rounded;
    return p;
}

char *jp_arena_strndup(jp_arena *a, const char *s, size_t len) {
    if (len == SIZE_MAX) return NULL;
    char *p = jp_arena_alloc(a, len + 1);
    if (!p) return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

void jp_arena_adopt(jp_arena *dst, jp_arena *src) {
    jp_arena_block *tail = src->head;
    if (!tail) return;
    while (tail->next) tail = tail->next;
    if (dst->head) { /* behind dst's head, whose free tail stays first in line */
        tail->next = dst->head->next;
        dst->head->next = src->head;
    } else {
        dst->head = src->head;
    }
    dst->total += src->total;
    src->head = NULL;
    src->total = 0;
}
