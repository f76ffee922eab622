/* testfault.c - the test-only fault of testfault.h: lets the tests prove that a crash, an abort, a
 * hang or running out of memory while analysing a capture never stops a training process (the
 * analysis runs in a child) and makes the CLI exit 2, never die by a signal. */
#define _GNU_SOURCE /* memmem */
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

/* Whether entry [p, end) ("kind" or "kind:PATH_PART") names kind and applies to path. */
static int entry_is(const char *p, const char *end, const char *kind, const char *path) {
    size_t k = strlen(kind);
    if ((size_t)(end - p) < k || memcmp(p, kind, k) != 0) return 0;
    if (p + k == end) return 1;
    if (p[k] != ':') return 0;
    size_t part_len = (size_t)(end - p) - k - 1;
    return memmem(path, strlen(path), p + k + 1, part_len) != NULL;
}

/* Does what entry [p, end) says when it applies to path. */
static int fire(const char *p, const char *end, const char *path, jp_error *err) {
    if (entry_is(p, end, "segv", path)) die_by(SIGSEGV);
    if (entry_is(p, end, "abort", path)) die_by(SIGABRT);
    if (entry_is(p, end, "kill", path)) die_by(SIGKILL);
    if (entry_is(p, end, "hang", path))
        for (;;) pause();
    if (entry_is(p, end, "oom", path)) return exhaust_memory(path, err);
    if (entry_is(p, end, "slow", path)) sleep(3);
    return JP_OK;
}

int jp_test_fault(const char *path, jp_error *err) {
    const char *spec = getenv("JAXPROF_TEST_FAULT");
    for (const char *p = spec; p && *p;) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        int rc = fire(p, end, path, err);
        if (rc) return rc;
        p = *end ? end + 1 : end;
    }
    return JP_OK;
}
