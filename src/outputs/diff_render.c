/* diff_render.c - a diff as text, JSON or CSV (jp_diff_render): being written. */
#include "jaxprof/jaxprof.h"
