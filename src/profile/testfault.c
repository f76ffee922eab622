/* testfault.c - the test-only fault of testfault.h: lets the tests prove that a crash, an abort, a
 * hang or running out of memory while analysing a capture never stops a training process (the
 * analysis runs in a child) and makes the CLI exit 2, never die by a signal. */
#include "profile/testfault.h"
#include "base/error.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { CHUNK = 16u << 20, MAX_CHUNKS = 64 }; /* oom gives up after 1 GiB: never the machine's memory */

static void die_by(int sig) {
    signal(sig, SIG_DFL); /* ASan catches SIGSEGV, a test harness may catch SIGABRT: not this time */
    raise(sig);
    _exit(128 + sig);     /* raise returned: blocked signal; still a failure the tests can see */
}

/* Allocates and touches memory until malloc fails, frees it, and says how far it got. */
static int exhaust_memory(const char *path, jp_error *err) {
    void *chunks[MAX_CHUNKS];
    size_t n = 0;
    while (n < MAX_CHUNKS && (chunks[n] = malloc(CHUNK)) != NULL) memset(chunks[n++], 0xA5, CHUNK);
    for (size_t i = 0; i < n; i++) free(chunks[i]);
    return jp_error_set(err, JP_ERR_NOMEM, 0, "%s: out of memory after %zu MiB (JAXPROF_TEST_FAULT=oom)", path,
                        n * (CHUNK >> 20));
}

int jp_test_fault(const char *path, jp_error *err) {
    const char *spec = getenv("JAXPROF_TEST_FAULT");
    if (!spec || !*spec) return JP_OK;
    const char *colon = strchr(spec, ':');
    size_t kind_len = colon ? (size_t)(colon - spec) : strlen(spec);
    if (colon && !strstr(path, colon + 1)) return JP_OK;
    if (kind_len == 4 && memcmp(spec, "segv", 4) == 0) die_by(SIGSEGV);
    if (kind_len == 5 && memcmp(spec, "abort", 5) == 0) die_by(SIGABRT);
    if (kind_len == 4 && memcmp(spec, "hang", 4) == 0)
        for (;;) pause();
    if (kind_len == 3 && memcmp(spec, "oom", 3) == 0) return exhaust_memory(path, err);
    return JP_OK;
}
