/* result_names.h - names of the result enums of jaxprof_results.h and the straggler lookup, for
 * the renderers and analyses (internal: no client of the library calls them). */
#ifndef JP_ANALYSES_RESULT_NAMES_H
#define JP_ANALYSES_RESULT_NAMES_H

#include "jaxprof/jaxprof_results.h"

/* The platform's one spelling in every output (text, CSV, JSON, HTML, the viewer): "cpu", "gpu" or
 * "tpu", as JAX's Device.platform writes it; "?" for a value outside jp_platform. Thread-safe. */
const char *jp_platform_name(int platform);

const char *jp_part_name(int part); /* "compute", "collective", ... (steps.c) */

/* "parameter", "output", "constant", "temporary", "small"; "?" out of range. */
const char *jp_buffer_kind_name(int kind);

const char *jp_rating_name(int rating);

/* The straggler of step number step_num in a multi-host analysis, or NULL (binary search). */
const jp_straggler *jp_analysis_straggler(const jp_analysis *a, int64_t step_num);

const char *jp_change_name(int change); /* "unchanged", "slower", "faster", "added", "removed" */
const char *jp_match_name(int match); /* "none", "name", "op_name", "shape" */
const char *jp_noise_basis_name(int basis); /* "none", "executions", "steps" */

#endif
