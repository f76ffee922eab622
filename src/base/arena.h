/* arena.h - the arena allocator (internal): one per loaded object, many small allocations, one
 * free. The struct is in jaxprof.h because jp_runs and jp_run_summary hold one. Not thread-safe. */
#ifndef JP_BASE_ARENA_H
#define JP_BASE_ARENA_H

#include "jaxprof/jaxprof.h"

/* Prepares caller storage; block_size 0 picks a default. Allocates nothing yet. */
void jp_arena_init(jp_arena *a, size_t block_size);
/* Frees every block; the arena may be reused after jp_arena_init. */
void jp_arena_deinit(jp_arena *a);
/* Returns size bytes aligned for any type, or NULL on overflow/out of memory. */
void *jp_arena_alloc(jp_arena *a, size_t size);
/* Moves every block of src into dst (src is left empty and may be reused after jp_arena_init):
 * what was allocated from src lives as long as dst. dst's head keeps serving small requests. */
void jp_arena_adopt(jp_arena *dst, jp_arena *src);
/* Copies len bytes of s plus a NUL terminator into the arena. */
char *jp_arena_strndup(jp_arena *a, const char *s, size_t len);

#endif
