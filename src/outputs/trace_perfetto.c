/* trace_perfetto.c - being written. */
#include "jaxprof/jaxprof.h"
