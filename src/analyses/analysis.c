/* analysis.c - helpers every analysis shares: copying model vectors, Python stacks and formatting
 * text into the analysis' arena. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "analyses/analyses.h"
#include "base/sort.h"

void *jp_analysis_copy(jp_arena *a, const jp_vec *v, size_t elem) {
    void *p = jp_arena_alloc(a, (v->n ? v->n : 1) * elem);
    if (p && v->n) memcpy(p, v->data, v->n * elem);
    return p;
}

const char *jp_analysis_printf(jp_arena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? jp_arena_alloc(a, (size_t)n + 1) : NULL;
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

int jp_analysis_stack(jp_arena *a, const jp_hlo_frame *f, const jp_source_frame **stack, uint32_t *n_stack) {
    uint32_t n = 0;
    for (const jp_hlo_frame *p = f; p && n < JP_HLO_MAX_STACK; p = p->parent) n++;
    if (!n) return JP_OK;
    jp_source_frame *s = jp_arena_alloc(a, n * sizeof *s);
    if (!s) return JP_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++, f = f->parent) s[i] = (jp_source_frame){f->file, f->function, f->line, f->library};
    *stack = s;
    *n_stack = n;
    return JP_OK;
}

