/* diff.c - comparing two analyses (jp_diff_new, jp_diff_check): being written. */
#include "jaxprof/jaxprof.h"
