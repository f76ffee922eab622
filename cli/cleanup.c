/* cleanup.c - removes the temporary file of an output being written when SIGINT, SIGTERM or SIGHUP
 * ends the CLI, then dies of that signal, so an interrupted export leaves nothing behind and the
 * shell still sees the signal. */
#include "commands.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the signal handler needs a lock-free atomic int");

static const int CLEANUP_SIGNALS[] = {SIGHUP, SIGINT, SIGTERM};

/* A signal handler can only reach storage of static duration, so the path being written lives
 * here, in the CLI (the library keeps no state). Two slots: the writer fills the one the handler
 * is not pointed at, then publishes it with one atomic store, so a handler (on any thread) never
 * reads a half-copied path. */
static char temp_paths[2][PATH_MAX];
static atomic_int temp_slot = -1; /* the slot holding the file to remove, or -1: none */
static int last_slot;             /* the slot filled last (touched by the writing thread only) */

static void on_fatal_signal(int sig) {
    int saved = errno;
    int slot = atomic_load_explicit(&temp_slot, memory_order_acquire);
    if (slot >= 0) unlink(temp_paths[slot]);
    /* SA_RESETHAND made the disposition the default again: this delivers sig for real once the
     * handler returns (it is blocked until then), and the process ends as if never caught. */
    raise(sig);
    errno = saved;
}

/* jp_temp_hook.on_temp: records the path (NULL: nothing to remove). */
static void track_temp(void *ctx, const char *path) {
    (void)ctx;
    size_t n = path ? strlen(path) : 0;
    if (!path || n >= PATH_MAX) { /* a longer path cannot have been created */
        atomic_store_explicit(&temp_slot, -1, memory_order_release);
        return;
    }
    last_slot = !last_slot;
    memcpy(temp_paths[last_slot], path, n + 1);
    atomic_store_explicit(&temp_slot, last_slot, memory_order_release);
}

/* Catches each cleanup signal unless it is ignored (nohup, a background job of a script): an
 * ignored signal stays ignored. Installing twice is harmless. */
static void install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = (int)SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof CLEANUP_SIGNALS / sizeof *CLEANUP_SIGNALS; i++)
        sigaddset(&sa.sa_mask, CLEANUP_SIGNALS[i]); /* one handler at a time finishes its unlink */
    for (size_t i = 0; i < sizeof CLEANUP_SIGNALS / sizeof *CLEANUP_SIGNALS; i++) {
        struct sigaction old;
        if (sigaction(CLEANUP_SIGNALS[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(CLEANUP_SIGNALS[i], &sa, NULL);
    }
}

jp_temp_hook cli_cleanup_on_signal(void) {
    install();
    return (jp_temp_hook){.on_temp = track_temp, .ctx = NULL};
}
