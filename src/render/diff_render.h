/* diff_render.h - what the diff's text, JSON and HTML renderings share (internal). */
#ifndef JP_OUTPUTS_DIFF_RENDER_H
#define JP_OUTPUTS_DIFF_RENDER_H

#include "analyses/result_names.h"
#include "jaxprof/jaxprof_results.h"

/* "slower", "faster" or "unchanged": the step time's direction when the change exceeds the noise. */
const char *jp_diff_verdict(const jp_diff_steps *s);

#endif
