/* peak_rss: runs a command and writes its wall time and peak RSS, for the benchmarks (issue 34, goal 3).
 *
 *     peak_rss RESULT_FILE CMD [ARG...]
 *
 * Writes "WALL_SECONDS MAXRSS_KIB EXIT_CODE CPU_SECONDS\n" to RESULT_FILE (CPU: user + system) (a negative exit code: the signal
 * that ended CMD) and exits 0, or 127 when CMD could not be started. MAXRSS_KIB is ru_maxrss from
 * wait4 on CMD: Linux folds into it the peak of every descendant CMD waited for (the worker that
 * `jaxprof` forks, cli/isolate.c), and the RSS CMD's process had before its exec, which is this
 * small program's (about 1 MB), not a Python parent's 50 MB. That is why this is C: a Python
 * wrapper's own RSS would be the floor of every small file's number.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fputs("usage: peak_rss RESULT_FILE CMD [ARG...]\n", stderr);
        return 2;
    }
    double start = now();
    pid_t pid = fork();
    if (pid < 0) {
        perror("peak_rss: fork");
        return 127;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror("peak_rss: exec");
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("peak_rss: wait4");
        return 127;
    }
    double wall = now() - start;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    FILE *out = fopen(argv[1], "w");
    if (!out) {
        perror("peak_rss: result file");
        return 127;
    }
    double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
    fprintf(out, "%.9f %ld %d %.6f\n", wall, ru.ru_maxrss, code, cpu);
    return fclose(out) == 0 ? 0 : 127;
}
