/* intern.h - an interning string table: equal text, one pointer (internal). */
#ifndef JP_BASE_INTERN_H
#define JP_BASE_INTERN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "jaxprof/jaxprof_xspace.h"

/* Interned strings: equal text gives the same NUL-terminated pointer, so the analyses compare
 * names by pointer. Strings live in the given arena; the table itself is on the heap. Not
 * thread-safe; jp_intern_lookup alone may run on a table no one grows.
 * A front (jp_intern_init_front) stands before a table that several threads share: it holds no
 * strings of its own, only the shared table's pointers it has been given, so every thread gets
 * the one pointer of a text; a miss takes the shared table's lock (the model of one host, built
 * on a worker thread, interns so: src/profile/profile.c). */
typedef struct jp_intern {
    const char **slots; /* open addressing, power-of-two size */
    uint32_t *lens;     /* length of each slot's string */
    size_t cap;         /* slots allocated (0 before the first string) */
    size_t n;           /* strings held */
    jp_arena *arena;    /* owns the strings; NULL in a front */
    struct jp_intern *shared;  /* a front's shared table, else NULL */
    pthread_mutex_t *lock;     /* guards *shared (its table and its arena) */
} jp_intern;

void jp_intern_init(jp_intern *t, jp_arena *arena);
/* A front of `shared`, every use of which takes `lock` (see above). */
void jp_intern_init_front(jp_intern *t, jp_intern *shared, pthread_mutex_t *lock);
void jp_intern_deinit(jp_intern *t);
/* The interned copy of s[0..len), or NULL when out of memory. */
const char *jp_intern_str(jp_intern *t, const char *s, size_t len);
/* The interned copy of s[0..len) when there is one, else NULL; never adds (safe on a shared table). */
const char *jp_intern_lookup(const jp_intern *t, const char *s, size_t len);
static inline const char *jp_intern_view(jp_intern *t, jp_str s) { return jp_intern_str(t, s.ptr, s.len); }

#endif
