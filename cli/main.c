/* main.c - the `jaxprof` command: a thin client of libjaxprof. Commands that need JAX (demo) are
 * handed to the Python package, run by the interpreter installed beside this executable. */
#include "jaxprof/jaxprof.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef JP_BUILD_PYTHON
#define JP_BUILD_PYTHON "python3"
#endif

enum { EXIT_USAGE = 2 };

static void usage(FILE *out) {
    fputs("usage: jaxprof <command> [options]\n"
          "\n"
          "commands:\n"
          "  demo [--steps N] [--out DIR] [--data MNIST_DIR]\n"
          "                     train a small MLP on MNIST-shaped data and profile it\n"
          "  latest [DIR]       print the newest profile run under DIR (default: .)\n"
          "  version            print the version\n"
          "  help               show this message\n",
          out);
}

/* Prints the newest run's directory; exit 1 when DIR holds no run, 2 on error. */
static int cmd_latest(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : ".";
    jp_runs runs;
    jp_error err;
    if (jp_runs_find(&runs, dir, &err) != JP_OK) {
        fprintf(stderr, "jaxprof: %s\n", err.msg);
        return EXIT_USAGE;
    }
    const jp_run *run = jp_runs_latest_view(&runs);
    int rc = 0;
    if (run) {
        printf("%s\n", run->path);
    } else {
        fprintf(stderr, "jaxprof: no profile (*.xplane.pb) under %s\n", dir);
        rc = 1;
    }
    jp_runs_deinit(&runs);
    return rc;
}

/* Finds the Python to hand a command to: $JAXPROF_PYTHON, else python3 beside this executable
 * (the virtual environment pip installed us into), else the build's interpreter, else PATH. */
static const char *find_python(char *buf, size_t cap) {
    const char *env = getenv("JAXPROF_PYTHON");
    if (env && *env) return env;
    ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
    if (n > 0) {
        buf[n] = '\0';
        char *slash = strrchr(buf, '/');
        const char *name = "python3";
        if (slash && (size_t)(slash - buf) + 1 + strlen(name) < cap) {
            strcpy(slash + 1, name);
            if (access(buf, X_OK) == 0) return buf;
        }
    }
    if (access(JP_BUILD_PYTHON, X_OK) == 0) return JP_BUILD_PYTHON;
    return "python3";
}

/* Replaces this process with `python -m jaxprof <argv...>`. Returns only on failure. */
static int run_python_command(int argc, char **argv) {
    char buf[PATH_MAX];
    const char *python = find_python(buf, sizeof buf);
    char *args[argc + 4];
    args[0] = (char *)python;
    args[1] = "-m";
    args[2] = "jaxprof";
    for (int i = 0; i < argc; i++) args[3 + i] = argv[i];
    args[3 + argc] = NULL;
    execvp(python, args);
    fprintf(stderr, "jaxprof: cannot run %s: %s (set JAXPROF_PYTHON to the Python that has jaxprof installed)\n",
            python, strerror(errno));
    return EXIT_USAGE;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("jaxprof %s\n", JP_VERSION);
        return 0;
    }
    if (strcmp(cmd, "latest") == 0) return cmd_latest(argc - 1, argv + 1);
    if (strcmp(cmd, "demo") == 0) return run_python_command(argc - 1, argv + 1);
    fprintf(stderr, "jaxprof: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
