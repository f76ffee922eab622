/* http.c - being written. */
#include "jaxprof/jaxprof.h"
