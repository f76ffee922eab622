/* testfault.h - a deliberate fault in the loading of a profile, for the crash-isolation tests only
 * (internal). Nothing happens unless the environment variable JAXPROF_TEST_FAULT names a fault.
 * The library's only getenv, on purpose: it is no configuration (every other setting comes in
 * jp_load_options), and as an option it would put "crash this process" into the API that every
 * client (CLI, Python, viewer) would have to carry to reach the tests that set it. */
#ifndef JP_PROFILE_TESTFAULT_H
#define JP_PROFILE_TESTFAULT_H

#include "jaxprof/jaxprof.h"

/* JAXPROF_TEST_FAULT=ENTRY[,ENTRY...] (test-only), each ENTRY KIND or KIND:PART (with PART, only
 * paths containing PART); the entries that apply to path act in turn. KIND: segv, abort and kill end
 * the process by that signal (default disposition, so no sanitizer or handler turns them into an
 * exit code; kill is what the kernel's OOM killer does), hang waits forever, slow sleeps 3 s and
 * goes on, oom allocates and touches memory until malloc fails (at most 1 GiB) and returns
 * JP_ERR_NOMEM naming how far it got. Any other value, or none, returns JP_OK at once. */
int jp_test_fault(const char *path, jp_error *err);

#endif
