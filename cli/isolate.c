/* isolate.c - runs a command's work in a forked child, so that a crash in the analysis (a bug
 * reached by some input) is exit 2 with a message, never a death by signal: `jaxprof diff` gates
 * CI on 0, 1 or 2, and every other command keeps the same promise. Signals that come from outside
 * (Ctrl-C, kill, a closed pipe) still end the command by that signal, as before. */
#include "commands.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

static const int FORWARDED[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM};

/* A signal handler reaches only storage of static duration: the child to pass signals on to. */
static volatile sig_atomic_t child_pid;

static void forward(int sig) {
    int saved = errno;
    if (child_pid > 0) kill((pid_t)child_pid, sig);
    errno = saved;
}

/* Passes HUP, INT, QUIT and TERM on to the child (unless ignored: they stay ignored, in both). */
static void forward_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof FORWARDED / sizeof *FORWARDED; i++) {
        struct sigaction old;
        if (sigaction(FORWARDED[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(FORWARDED[i], &sa, NULL);
    }
}

/* A signal someone sent (or a reader that went away): the command ends by it, as a shell expects. */
static int from_outside(int sig) {
    for (size_t i = 0; i < sizeof FORWARDED / sizeof *FORWARDED; i++)
        if (FORWARDED[i] == sig) return 1;
    return sig == SIGPIPE;
}

static const char *signal_name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL, out of memory?";
    case SIGXCPU: return "SIGXCPU, CPU time limit";
    case SIGXFSZ: return "SIGXFSZ, file size limit";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    default: return "signal";
    }
}

/* Ends this process by sig, with the default action (its status is then the child's). */
static int die_by(int sig) {
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    return 128 + sig; /* not reached: the default action of every signal passed here ends us */
}

/* In the child: end with the parent (a SIGKILL to `jaxprof`, a time limit) rather than run on alone. */
static void die_with(pid_t parent) {
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != parent) _exit(EXIT_USAGE); /* it died before prctl took effect */
}

int cli_isolated(int (*work)(int, char **), int argc, char **argv) {
    fflush(NULL); /* nothing buffered is written twice */
    /* The forwarded signals wait (blocked) from before the fork until the parent passes them on: a
     * signal in between would end the parent at once and the child by its death signal, before the
     * child's own handler removed its temporary file (seen under load: the output's .tmp left). */
    sigset_t forwarded, old_mask;
    sigemptyset(&forwarded);
    for (size_t i = 0; i < sizeof FORWARDED / sizeof *FORWARDED; i++) sigaddset(&forwarded, FORWARDED[i]);
    sigprocmask(SIG_BLOCK, &forwarded, &old_mask);
    pid_t parent = getpid(), pid = fork();
    if (pid <= 0) sigprocmask(SIG_SETMASK, &old_mask, NULL);
    if (pid < 0) return work(argc, argv); /* no process to spare: run it here, unprotected */
    if (pid == 0) {
        die_with(parent);
        exit(work(argc, argv));
    }
    child_pid = pid;
    forward_signals();
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "jaxprof: internal error: lost the worker process: %s\n", strerror(errno));
            return EXIT_USAGE;
        }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    int sig = WTERMSIG(status);
    if (from_outside(sig)) return die_by(sig);
    fputs("jaxprof: internal error: `jaxprof", stderr);
    for (int i = 0; i < argc; i++) fprintf(stderr, " %.*s", 512, argv[i]);
    fprintf(stderr, "` was killed by signal %d (%s); this is a bug in jaxprof, please report it with the "
            "command and its input\n", sig, signal_name(sig));
    return EXIT_USAGE;
}
