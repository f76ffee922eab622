/* memory_render.h - memory at the peak (jp_analysis.modules) as text, JSON and CSV (internal). */
#ifndef JP_OUTPUTS_MEMORY_RENDER_H
#define JP_OUTPUTS_MEMORY_RENDER_H

#include <stdio.h>

#include "analyses/result_names.h"
#include "jaxprof/jaxprof_results.h"

/* The module entries a view shows, into *out (malloc'd, NULL when n is 0), largest peak first:
 * without v->module the modules that ran (every module when none ran); with it, the entries of
 * that one module (one per host). JP_ERR_ARG, naming the known modules, when v->module names none
 * or several; JP_ERR_NOMEM. */
int jp_memory_pick(const jp_analysis *a, const jp_view *v, const jp_module_memory ***out, size_t *n, jp_error *err);

/* The modules part of `jaxprof memory` as text (the allocator part follows it, in render.c). */
int jp_memory_text(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err);
/* ,"modules":[...] as docs/json-schema.md gives it; the timeline only with v->module. */
int jp_memory_json(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err);
/* One row per buffer at the peak, the module's columns first. */
int jp_memory_csv(const jp_analysis *a, const jp_view *v, FILE *out, jp_error *err);

#endif
