/* trace_chrome.c - being written. */
#include "jaxprof/jaxprof.h"
