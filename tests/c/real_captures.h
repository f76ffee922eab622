/* The real captures written by others live beside the project, never in it: JAXPROF_REAL_CAPTURES,
 * else JP_REAL_CAPTURES (../shared/captures, set by meson.build). Without them a test is skipped
 * and says why (a user's fresh clone); under CI it fails, so CI never skips them. */
#ifndef JP_TEST_REAL_CAPTURES_H
#define JP_TEST_REAL_CAPTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static inline const char *real_captures_dir(void) {
    const char *dir = getenv("JAXPROF_REAL_CAPTURES");
    return dir && *dir ? dir : JP_REAL_CAPTURES;
}

/* Call first in a test that reads them: skips (or fails under CI) when the folder is missing. */
#define REQUIRE_REAL_CAPTURES()                                                                          \
    do {                                                                                                 \
        struct stat st_;                                                                                 \
        if (stat(real_captures_dir(), &st_) != 0 || !S_ISDIR(st_.st_mode)) {                            \
            const char *ci_ = getenv("CI");                                                              \
            fprintf(stderr, "no real captures at %s (set JAXPROF_REAL_CAPTURES)\n", real_captures_dir()); \
            if (ci_ && *ci_ && strcmp(ci_, "0") != 0 && strcmp(ci_, "false") != 0) fail();               \
            skip();                                                                                      \
        }                                                                                                \
    } while (0)

/* buf = the real capture called name. */
static inline const char *real_capture(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", real_captures_dir(), name);
    return buf;
}

#endif
